/* bloomkit verify: is each file a complete, undamaged filter? */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const char help[] =
    "Usage: bloomkit verify FILE... [-q]\n"
    "\n"
    "Checks each file completely: the header (magic, version, header checksum), every parameter of\n"
    "the filter and its consistency with the data length, and the checksum of the whole payload.\n"
    "Prints \"FILE: ok (...)\" or \"FILE: <what is wrong>\" (e.g. \"damaged file: checksum mismatch\") for\n"
    "each file, on standard output.\n"
    "\n"
    "A file that is open for shared writing (bloomkit add in progress), or whose writer stopped\n"
    "before closing it, has no current payload checksum: verify then checks its structure only and\n"
    "says so; it is not counted as damaged.\n"
    "\n"
    "Options:\n"
    "  -q, --quiet     print only the damaged files\n"
    "  -h, --help      this help\n"
    "\n"
    "Exit status: 0 every file ok; 1 some file damaged (or not a bloomkit filter); 2 some file missing\n"
    "or unreadable.\n";

static const cli_opt opts[] = {
    CLI_OPTS_COMMON,
    { "quiet", 'q', false, OPT_QUIET },
    CLI_OPTS_END,
};

static bool stale_checksum(const char *path)
{
    uint8_t h[BK_FILE_HEADER_SIZE];
    bk_file_info fi;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return false;
    bool ok = read(fd, h, sizeof h) == (ssize_t)sizeof h && bk_filter_peek_header(h, sizeof h, &fi) == BK_OK;
    close(fd);
    return ok && (fi.flags & BK_FILE_FLAG_CHECKSUM_STALE);
}

static int verify_one(const char *path, bool quiet)
{
    bk_filter *f = NULL;
    errno = 0;
    cli_mapguard_file(path);
    bk_status s = bk_filter_open_mmap(path, BK_LOAD_DEFAULT, &f);
    if (s == BK_EIO) return cli_err("%s: %s", path, strerror(errno ? errno : EIO));
    if (s == BK_EINVAL) return cli_err("%s: not a regular file", path);
    if (s != BK_OK) {
        printf("%s: %s\n", path, cli_file_problem(path, s));
        return CLI_EXIT_NO;
    }
    if (!quiet) {
        bk_stats st;
        bk_filter_stats(f, &st);
        const cli_type *t = cli_type_of(f);
        char n[32], m[32];
        printf("%s: ok (%s, %s keys, %s)%s\n", path, t ? t->name : "?", cli_group(st.count, n, sizeof n),
               cli_human_bytes((double)st.memory_bytes, m, sizeof m),
               stale_checksum(path) ? "; structure only: the payload checksum is not current (open for shared "
                                      "writing, or its writer stopped before closing it)"
                                    : "");
    }
    bk_filter_free(f);
    return CLI_EXIT_OK;
}

static int run(int argc, char **argv)
{
    cli_getopt g;
    cli_getopt_init(&g, argc, argv, opts);
    bool quiet = false;
    const char *val;
    int id, rc = CLI_EXIT_OK, nfiles = 0;
    /* options first, so -q applies to every file whatever its position */
    while ((id = cli_getopt_next(&g, &val)) != CLI_OPT_END) {
        if (id == CLI_OPT_ERROR) return CLI_EXIT_ERR;
        if (id == OPT_HELP) return cli_help("verify");
        if (id == OPT_QUIET) quiet = true;
        if (id == CLI_OPT_OPERAND) nfiles++;
    }
    if (nfiles == 0) return cli_err("needs at least one FILE (see: bloomkit verify --help)");
    cli_getopt_init(&g, argc, argv, opts);
    while ((id = cli_getopt_next(&g, &val)) != CLI_OPT_END) {
        if (id != CLI_OPT_OPERAND) continue;
        int r = verify_one(val, quiet);
        fflush(stdout);
        if (r > rc) rc = r;
    }
    return rc;
}

const cli_command cli_cmd_verify = { "verify", run, "FILE...",
                                     "check structure and checksums (exit 1: damaged)", help };
