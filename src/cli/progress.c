/* A one-line progress bar on stderr: shown only when stderr is a terminal and --quiet was not given.
 * Nothing is drawn during the first half second, so short runs print nothing at all. */
#include <string.h>
#include <unistd.h>

#include "cli.h"

void cli_progress_start(cli_progress *p, bool quiet, const char *label, uint64_t total_bytes)
{
    memset(p, 0, sizeof *p);
    p->on = !quiet && isatty(2);
    p->label = label;
    p->total = total_bytes;
    p->t0 = cli_now();
    p->next = p->t0 + 0.5;
}

static void fmt_duration(double s, char *buf, size_t len)
{
    if (s < 0 || s > 1e7) {
        snprintf(buf, len, "--:--");
        return;
    }
    unsigned long t = (unsigned long)(s + 0.5);
    if (t >= 3600)
        snprintf(buf, len, "%lu:%02lu:%02lu", t / 3600, t / 60 % 60, t % 60);
    else
        snprintf(buf, len, "%lu:%02lu", t / 60, t % 60);
}

void cli_progress_draw(cli_progress *p, uint64_t bytes, uint64_t items, double now)
{
    char line[256], cnt[32], rate[32], by[32], eta[32];
    double el = now - p->t0;
    if (el <= 0) el = 1e-9;
    cli_human_count((double)items, cnt, sizeof cnt);
    cli_human_count((double)items / el, rate, sizeof rate);
    int n;
    if (p->total) {
        double f = (double)bytes / (double)p->total;
        if (f > 1) f = 1;
        char bar[32];
        int w = 24, full = (int)(f * w);
        for (int i = 0; i < w; i++) bar[i] = i < full ? '#' : '.';
        bar[w] = '\0';
        fmt_duration(f > 0 ? el * (1 - f) / f : -1, eta, sizeof eta);
        n = snprintf(line, sizeof line, "\r%s [%s] %3.0f%%  %s keys  %s keys/s  ETA %s\033[K", p->label, bar,
                     f * 100, cnt, rate, eta);
    } else {
        cli_human_bytes((double)bytes, by, sizeof by);
        n = snprintf(line, sizeof line, "\r%s  %s keys  %s keys/s  %s read\033[K", p->label, cnt, rate, by);
    }
    if (n > 0) {
        ssize_t wr = write(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
        (void)wr;
    }
    p->drawn = true;
    p->next = now + 0.125;
}

void cli_progress_end(cli_progress *p)
{
    if (p->on && p->drawn) {
        ssize_t wr = write(2, "\r\033[K", 4);
        (void)wr;
    }
    p->drawn = false;
}
