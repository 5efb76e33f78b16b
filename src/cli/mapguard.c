/* A filter file changed underneath its mapping. The query and in-place commands use their filter file
 * through a mapping; when someone truncates that file or copies another one over it in place (cp
 * writes into the same inode), touching a page past the file's new end raises SIGBUS, whose default
 * action kills the process without a word. This handler turns it into a message naming the file and
 * exit status 2, after writing out the complete lines the command had already produced (the pending
 * cli_out buffer: a batch's lines are put only after its queries, which are where the mapping is
 * read). Everything here is async-signal-safe: write(2) and _exit(2). The library installs no
 * handler; this is the program's. */
#include "cli.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

static const char *volatile guard_path; /* the mapped file the message names */
static volatile int guard_paths;        /* how many were mapped (merge maps several) */
static cli_out *volatile guard_out;     /* output to write out before exiting */

static void put(int fd, const char *s, size_t n)
{
    while (n) {
        ssize_t w = write(fd, s, n);
        if (w <= 0) return;
        s += w;
        n -= (size_t)w;
    }
}

static void puts_(int fd, const char *s) { put(fd, s, strlen(s)); }

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)si;
    (void)uc;
    cli_out *o = guard_out;
    if (o && o->buf && !o->failed) put(o->fd, (const char *)o->buf, o->len);
    puts_(2, "bloomkit ");
    puts_(2, cli_cmd ? cli_cmd : "");
    puts_(2, ": ");
    const char *p = guard_path;
    if (p && guard_paths == 1) {
        puts_(2, p);
        puts_(2, ": the file changed while in use");
    } else {
        puts_(2, "a mapped filter file changed while in use");
    }
    puts_(2, " (truncated, or another file copied over it in place); the command stopped there. "
             "Replace a filter file by renaming a new one over it (as bloomkit does), never by writing "
             "into it\n");
    _exit(CLI_EXIT_ERR);
}

void cli_mapguard_file(const char *path)
{
    static int installed;
    guard_path = path;
    guard_paths++;
    if (installed) return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    installed = sigaction(SIGBUS, &sa, NULL) == 0;
}

void cli_mapguard_output(cli_out *out) { guard_out = out; }
