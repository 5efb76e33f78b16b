/* The bloomkit command: dispatch to the subcommands, the overview help and --version. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

static const cli_command *const commands[] = {
    &cli_cmd_calc, &cli_cmd_create, &cli_cmd_build, &cli_cmd_add,   &cli_cmd_query,
    &cli_cmd_filter, &cli_cmd_remove, &cli_cmd_info, &cli_cmd_merge, &cli_cmd_verify,
    &cli_cmd_grow,
    &cli_cmd_count, &cli_cmd_top,
    &cli_cmd_bip37, &cli_cmd_parquet, &cli_cmd_convert,
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

const char cli_keys_help[] =
    "Keys are raw bytes. Read from files or standard input, a key is the bytes before each newline;\n"
    "one trailing carriage return (of CRLF files) is removed unless --keep-cr. An empty line is the\n"
    "empty key (a valid key). The last key needs no final newline, and keys never continue from one\n"
    "input file into the next. Every other byte (NUL, tab, invalid UTF-8) is part of the key.\n"
    "With --null (-0) keys end at NUL bytes instead (for keys containing newlines, e.g. from\n"
    "find -print0) and nothing is removed. Keys may be up to 1 GiB long. Input is streamed in large\n"
    "blocks: memory does not grow with the input, only with the longest key.\n";

static void overview(FILE *out)
{
    fprintf(out,
            "bloomkit %s: build, query, inspect and merge Bloom-family filters from the shell.\n"
            "\n"
            "Usage: bloomkit COMMAND [OPTIONS] [ARGUMENTS]\n"
            "\n"
            "Commands:\n",
            BK_VERSION_STRING);
    for (size_t i = 0; i < NCOMMANDS; i++) fprintf(out, "  %-7s %-34s %s\n", commands[i]->name, commands[i]->args, commands[i]->summary);
    fprintf(out, "\nFilter types (--type): ");
    for (size_t i = 0; i < cli_ntypes; i++) fprintf(out, "%s%s", i ? ", " : "", cli_types[i].name);
    fprintf(out,
            " (default: bloom).\n"
            "\n"
            "Numbers: -n takes 1000000, 1,000,000, 10M, 2.5k, 1e7 (k M G T = 10^3.., Ki Mi Gi = 2^10..);\n"
            "-p takes 0.01, 1%%, 0.5%%, 1e-3 or 1/1000.\n"
            "\n"
            "%s"
            "\n"
            "Exit status: 0 success; 1 a negative answer (query: a key is absent; remove: a key was not in\n"
            "the filter; verify: the file is damaged); 2 an error (a message on stderr names the file and\n"
            "the problem). Files are replaced atomically: an error or a crash never leaves a torn file.\n"
            "\n"
            "Run 'bloomkit COMMAND --help' for a command's options; 'bloomkit --version' for versions.\n",
            cli_keys_help);
}

static const cli_command *find_command(const char *name)
{
    for (size_t i = 0; i < NCOMMANDS; i++)
        if (strcmp(commands[i]->name, name) == 0) return commands[i];
    return NULL;
}

/* Edit distance with adjacent transpositions (optimal string alignment), for "did you mean": "biuld"
 * is one edit from "build". Names longer than 31 bytes are never close to a command. */
static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 31 || lb > 31) return SIZE_MAX;
    size_t d[32][32];
    for (size_t i = 0; i <= la; i++) d[i][0] = i;
    for (size_t j = 0; j <= lb; j++) d[0][j] = j;
    for (size_t i = 1; i <= la; i++) {
        for (size_t j = 1; j <= lb; j++) {
            size_t cost = a[i - 1] != b[j - 1];
            size_t v = d[i - 1][j - 1] + cost;
            if (d[i - 1][j] + 1 < v) v = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < v) v = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    }
    return d[la][lb];
}

/* The command a mistyped name most likely meant: the one closest by edit distance, when that is at
 * most 2 edits (1 for names of up to 4 letters) and no other command is as close; else NULL. */
static const char *closest_command(const char *name)
{
    size_t best = SIZE_MAX;
    const char *found = NULL;
    bool tie = false;
    for (size_t i = 0; i < NCOMMANDS; i++) {
        size_t d = edit_distance(name, commands[i]->name);
        if (d < best) best = d, found = commands[i]->name, tie = false;
        else if (d == best) tie = true;
    }
    size_t limit = strlen(name) <= 4 ? 1 : 2;
    return found && !tie && best <= limit ? found : NULL;
}

static int unknown_command(const char *name)
{
    const char *near = closest_command(name);
    if (near) return cli_err("unknown command '%s'; did you mean %s? (see: bloomkit --help)", name, near);
    return cli_err("unknown command '%s' (see: bloomkit --help)", name);
}

int cli_help(const char *name)
{
    const cli_command *c = find_command(name);
    if (!c) {
        overview(stdout);
        return 0;
    }
    fputs(c->help, stdout);
    fflush(stdout);
    return 0;
}

/* A standard descriptor the caller closed (`bloomkit info f >&-`) would otherwise be reused by the
 * next open(): output meant for stdout would go into a filter file. Each gets /dev/null opened the
 * other way round, so that using it fails with EBADF as it would have. */
static void hold_std_fds(void)
{
    for (int fd = 0; fd <= 2; fd++) {
        if (fcntl(fd, F_GETFD) >= 0 || errno != EBADF) continue;
        int n = open("/dev/null", (fd == 0 ? O_WRONLY : O_RDONLY) | O_CLOEXEC);
        if (n >= 0 && n != fd) {
            dup2(n, fd);
            close(n);
        }
    }
}

/* Like coreutils: output that could not be written (a full disk, /dev/full, a closed descriptor, a
 * pipe whose reader left while SIGPIPE is ignored) is an error, for every command. Output written
 * with cli_out has been checked (and reported) already; this checks what went through stdio. */
static int finish(int rc)
{
    int e = 0;
    if (ferror(stdout)) e = errno ? errno : EIO;
    errno = 0;
    if (fflush(stdout) != 0 && !e) e = errno ? errno : EIO;
    if (fclose(stdout) != 0 && !e) e = errno ? errno : EIO;
    if (e) {
        cli_err("standard output: write failed: %s", strerror(e));
        return CLI_EXIT_ERR;
    }
    return rc;
}

static int run(int argc, char **argv)
{
    if (argc < 2) {
        overview(stderr);
        return CLI_EXIT_ERR;
    }
    const char *a = argv[1];
    if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
        overview(stdout);
        return 0;
    }
    if (strcmp(a, "help") == 0) {
        if (argc > 2 && !find_command(argv[2])) return unknown_command(argv[2]);
        return cli_help(argc > 2 ? argv[2] : "");
    }
    if (strcmp(a, "--version") == 0 || strcmp(a, "-V") == 0 || strcmp(a, "version") == 0) {
        printf("bloomkit %s (library %s, file format %d.%d)\n", BK_VERSION_STRING, bk_version_string(),
               BK_FORMAT_VERSION_MAJOR, BK_FORMAT_VERSION_MINOR);
        return 0;
    }
    const cli_command *c = find_command(a);
    if (!c) {
        if (a[0] == '-') return cli_err("unknown option '%s' (see: bloomkit --help)", a);
        return unknown_command(a);
    }
    cli_cmd = c->name;
    return c->run(argc - 1, argv + 1);
}

int main(int argc, char **argv)
{
    hold_std_fds();
    return finish(run(argc, argv));
}
