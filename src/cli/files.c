/*
 * Filter files for the subcommands: opening (mmap for queries, a copy for load-modify-save), saving
 * (always the library's atomic temp + fsync + rename), and the advisory locks that keep concurrent
 * writers from losing each other's work.
 *
 * Locking protocol (flock on the filter file itself; advisory, local file systems):
 * - a command that REPLACES the file (create --force, build, merge, and add/remove on types that are
 *   loaded, modified and saved) holds an exclusive lock from before it reads the file until after
 *   the rename of the new file over it;
 * - a command that updates the file IN PLACE (add on types with atomic inserts, through a shared
 *   writable mapping) holds a shared lock while it opens the mapping; the library then holds its
 *   own shared lock until the mapping is closed. In-place writers run together; a replacer waits
 *   for all of them, and they wait for it.
 * Taking a lock re-checks, once it is held, that the path still names the locked file: if another
 * writer replaced the file while we waited, we lock the new one instead, so no writer ever works on
 * a file that has already been replaced (which would lose its keys).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

bool cli_lock_path(const char *path, int mode, cli_lock *l, bool *exists)
{
    l->fd = -1;
    for (int attempt = 0;; attempt++) {
        /* O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused below. */
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
        if (fd < 0) {
            if (errno == ENOENT && exists) {
                *exists = false;
                return true;
            }
            cli_err_errno(path, "cannot open");
            return false;
        }
        struct stat a, b;
        if (fstat(fd, &a) != 0 || !S_ISREG(a.st_mode)) {
            if (fstat(fd, &a) != 0) cli_err_errno(path, "cannot stat");
            else cli_err("%s: %s", path, S_ISDIR(a.st_mode) ? "is a directory, not a filter file" : "not a regular file");
            close(fd);
            return false;
        }
        int rc;
        while ((rc = flock(fd, mode)) != 0 && errno == EINTR) {
        }
        if (rc != 0) {
            cli_err_errno(path, "cannot lock");
            close(fd);
            return false;
        }
        if (stat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) {
            l->fd = fd;
            if (exists) *exists = true;
            return true;
        }
        /* replaced (or removed) while we waited: start over on what the path names now */
        close(fd);
        if (attempt > 1000) {
            cli_err("%s: the file keeps being replaced; giving up", path);
            return false;
        }
    }
}

void cli_unlock(cli_lock *l)
{
    if (l->fd >= 0) close(l->fd); /* closing the descriptor releases the flock */
    l->fd = -1;
}

static bool has_magic(const char *path)
{
    static const uint8_t magic[8] = { 0x89, 'B', 'K', 'F', '\r', '\n', 0x1a, '\n' };
    uint8_t b[8];
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return true; /* cannot tell */
    ssize_t n = read(fd, b, 8);
    close(fd);
    return n == 8 && memcmp(b, magic, 8) == 0;
}

const char *cli_file_problem(const char *path, bk_status s)
{
    switch (s) {
    case BK_EIO: return strerror(errno ? errno : EIO);
    case BK_ECORRUPT:
    case BK_ETRUNCATED:
        if (!has_magic(path)) return "not a bloomkit filter file";
        return cli_status_words(s);
    case BK_ETYPE: return "a filter type this build of bloomkit does not know (damaged, or from a newer bloomkit)";
    case BK_ENOTSUP: return "a hash function this build of bloomkit does not know (damaged, or from a newer bloomkit)";
    case BK_EINVAL: return "not a regular file";
    case BK_ETOOBIG:
        /* the header claims a body larger than any filter bloomkit writes (or the file is) */
        return "damaged file: its header (or its size) claims a filter larger than 256 GiB, which bloomkit never writes";
    default: return cli_status_words(s);
    }
}

int cli_file_error(const char *path, bk_status s)
{
    return cli_err("%s: %s", path, cli_file_problem(path, s));
}

bk_filter *cli_open_ro(const char *path)
{
    bk_filter *f = NULL;
    errno = 0;
    cli_mapguard_file(path);
    bk_status s = bk_filter_open_mmap(path, BK_LOAD_DEFAULT, &f);
    if (s != BK_OK) {
        cli_file_error(path, s);
        return NULL;
    }
    return f;
}

bk_filter *cli_load(const char *path)
{
    bk_filter *f = NULL;
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) { /* a FIFO would block the load */
        cli_file_error(path, BK_EINVAL);
        return NULL;
    }
    errno = 0;
    bk_status s = bk_filter_load_path(path, BK_LOAD_DEFAULT, &f);
    if (s != BK_OK) {
        cli_file_error(path, s);
        return NULL;
    }
    return f;
}

bk_filter *cli_load_locked(const cli_lock *l, const char *path)
{
    /* Through the locked descriptor: the library's own loaders take a shared flock on a descriptor
     * of their own, which our exclusive lock would block. */
    bk_filter *f = NULL;
    struct stat st;
    errno = 0;
    if (lseek(l->fd, 0, SEEK_SET) != 0 || fstat(l->fd, &st) != 0) {
        cli_err_errno(path, "cannot read");
        return NULL;
    }
    bk_status s = bk_filter_load_fd(l->fd, BK_LOAD_DEFAULT, &f);
    size_t size;
    if (s == BK_OK && (bk_filter_save_size(f, &size) != BK_OK || (uint64_t)size != (uint64_t)st.st_size)) {
        bk_filter_free(f);
        f = NULL;
        s = BK_ECORRUPT; /* bytes after the filter */
    }
    if (s != BK_OK) {
        cli_file_error(path, s);
        return NULL;
    }
    return f;
}

bool cli_same_file(const cli_lock *l, const char *path)
{
    struct stat a, b;
    return l->fd >= 0 && fstat(l->fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}

/* The file a chain of symbolic links at path ends in (path itself when it is no link; a dangling
 * link gives the name it points to, which a save creates). malloc'd; NULL when out of memory. */
static char *cli_follow_links(const char *path)
{
    char *p = strdup(path);
    for (int depth = 0; p && depth < 40; depth++) {
        struct stat st;
        if (lstat(p, &st) != 0 || !S_ISLNK(st.st_mode)) return p;
        char target[4096];
        ssize_t n = readlink(p, target, sizeof target - 1);
        if (n < 0) return p; /* the save reports what is wrong */
        target[n] = '\0';
        const char *slash = strrchr(p, '/');
        size_t dlen = target[0] == '/' || !slash ? 0 : (size_t)(slash - p) + 1;
        char *q = malloc(dlen + (size_t)n + 1);
        if (q) {
            memcpy(q, p, dlen);
            memcpy(q + dlen, target, (size_t)n + 1);
        }
        free(p);
        p = q;
    }
    if (p) errno = ELOOP;
    return p;
}

bool cli_save(const bk_filter *f, const char *path)
{
    /* Through a symbolic link the target is replaced and the link stays (sed -i --follow-symlinks):
     * the same rule for every type and command. */
    char *real = cli_follow_links(path);
    if (!real) {
        cli_err("out of memory");
        return false;
    }
    errno = 0;
    bk_status s = bk_filter_save_path(f, real);
    free(real);
    if (s != BK_OK) {
        if (s == BK_EIO)
            cli_err("%s: cannot save: %s (the file is unchanged)", path, strerror(errno ? errno : EIO));
        else
            cli_err("%s: cannot save: %s (the file is unchanged)", path, cli_status_words(s));
        return false;
    }
    return true;
}

bool cli_may_replace(const char *path, bool force, char *const *inputs, size_t ninputs)
{
    struct stat out, in;
    if (stat(path, &out) != 0) return true; /* nothing there */
    for (size_t i = 0; i <= ninputs; i++) {
        /* the inputs, and standard input when it is one (no inputs, or "-") */
        bool std = i == ninputs ? ninputs == 0 : strcmp(inputs[i], "-") == 0;
        if (i == ninputs && !std) break;
        if ((std ? fstat(0, &in) : stat(inputs[i], &in)) == 0 && in.st_dev == out.st_dev && in.st_ino == out.st_ino)
            return cli_err("%s: is also an input; refusing to replace it", path), false;
    }
    if (!force && (!S_ISREG(out.st_mode) || !has_magic(path)))
        return cli_err("%s: exists and is not a bloomkit filter; refusing to replace it (use --force)", path), false;
    return true;
}

bool cli_save_locked(const bk_filter *f, const char *path)
{
    cli_lock l;
    bool exists;
    if (!cli_lock_path(path, LOCK_EX, &l, &exists)) return false;
    bool ok = cli_save(f, path);
    cli_unlock(&l);
    return ok;
}

void cli_describe(FILE *out, const char *verb, const char *path, const bk_filter *f)
{
    bk_stats st;
    if (bk_filter_stats(f, &st) != BK_OK) return;
    const cli_type *t = cli_type_of(f);
    char cap[32], pct[32], mem[32];
    if (st.type == BK_TYPE_CMS || st.type == BK_TYPE_TOPK) { /* the sketches (bloomkit count, top) */
        fprintf(out, "bloomkit: %s %s: %s sketch, %llu x %u counters, total count %s, %s\n", verb, path,
                bk_type_name(st.type), (unsigned long long)(st.bits / (st.k ? st.k : 1)), st.k,
                cli_group(st.count, cap, sizeof cap), cli_human_bytes((double)st.memory_bytes, mem, sizeof mem));
        return;
    }
    bool fp = st.type == BK_TYPE_CUCKOO || st.type == BK_TYPE_FUSE || st.type == BK_TYPE_QUOTIENT ||
              st.type == BK_TYPE_RIBBON;
    double bpk = (double)st.memory_bytes * 8.0 / (double)(st.capacity ? st.capacity : 1);
    const bk_quotient *qf = st.type == BK_TYPE_QUOTIENT ? bk_filter_get(f, BK_TYPE_QUOTIENT) : NULL;
    const bool xq = qf && bk_quotient_expanding(qf);
    fprintf(out, "bloomkit: %s %s: %s%s filter for %s keys at %s, %s (%.2f bits/key at capacity), %s %u\n", verb,
            path, xq ? "expanding " : "", t ? t->name : "unknown", cli_group(st.capacity, cap, sizeof cap),
            cli_percent(st.fpr_target, pct, sizeof pct), cli_human_bytes((double)st.memory_bytes, mem, sizeof mem),
            bpk, xq ? "slot bits" : fp ? "fingerprint bits" : "k =", st.k);
}

int cli_close_error(const char *path, bk_status s)
{
    if (s == BK_EIO && errno == ESTALE)
        return cli_err("%s: the file changed while in use (truncated, or another file copied over it in place): it "
                       "is left as it now is, without this command's keys. Replace a filter file by renaming a "
                       "new one over it (as bloomkit does), never by writing into it", path);
    return cli_err("%s: closing the shared mapping failed: %s", path, cli_status_words(s));
}

bool cli_write_fd(int fd, const void *buf, size_t n, const char *what)
{
    const uint8_t *b = buf;
    for (size_t off = 0; off < n;) {
        ssize_t w = write(fd, b + off, n - off);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return cli_err_errno(what, "write failed"), false;
        off += (size_t)w;
    }
    return true;
}

bool cli_write_file(const char *path, const void *buf, size_t n)
{
    size_t plen = strlen(path);
    char *tmp = malloc(plen + 16);
    if (!tmp) return cli_err("out of memory"), false;
    snprintf(tmp, plen + 16, "%s.tmp.XXXXXX", path);
    int fd = mkstemp(tmp);
    if (fd < 0) {
        cli_err_errno(path, "cannot create a temporary file beside it");
        free(tmp);
        return false;
    }
    bool ok = cli_write_fd(fd, buf, n, path);
    if (ok && (fchmod(fd, 0644) != 0 || fsync(fd) != 0)) {
        cli_err_errno(path, "write failed");
        ok = false;
    }
    if (close(fd) != 0 && ok) {
        cli_err_errno(path, "write failed");
        ok = false;
    }
    if (ok && rename(tmp, path) != 0) {
        cli_err_errno(path, "cannot rename the temporary file over it");
        ok = false;
    }
    if (!ok) unlink(tmp);
    free(tmp);
    return ok;
}
