/*
 * The in-memory time window of filter --add --window T: aging filters of the same window that grow.
 *
 * An aging filter sized for n keys a window keeps its FPR only while no more than n keys come within
 * a window; past that its FPR rises without bound. So the window starts as one aging filter for -n
 * keys at p / 2, and when the newest one reports itself saturated (a generation holds more keys than
 * its share), a new one for 4 times the keys takes the inserts, sized for half of what the live
 * filters leave of p: their sizes' sum stays under p, and so does the FPR, whatever the rate. A key is
 * seen when any live filter holds it; it is inserted into the newest (its window restarts there, as
 * in one filter). An older filter takes no more keys, so a window (and its slack) after the newest
 * took over it holds nothing live: it is freed, and its share of p goes back to the budget.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

#define GROWTH 4

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* The newest filter's bookkeeping: look at its statistics after every eighth of a generation. */
static bk_status add_member(cli_window *w, uint64_t keys, double p)
{
    if (w->n == CLI_WINDOW_MAX) return BK_ETOOBIG;
    bk_aging_options o = BK_AGING_OPTIONS_INIT;
    bk_aging *a;
    bk_status s = bk_aging_new_time(w->window_ms, keys, p, &o, &a);
    if (s != BK_OK) return s;
    bk_aging_info in;
    if ((s = bk_aging_get_info(a, &in)) != BK_OK) {
        bk_aging_free(a);
        return s;
    }
    cli_window_member *m = &w->m[w->n++];
    m->f = a;
    m->p = p;
    m->keys = keys;
    m->retired_ms = 0;
    m->slack_ms = in.slack;
    w->every = in.gen_capacity / 8 ? in.gen_capacity / 8 : 1;
    w->since = 0;
    return BK_OK;
}

bk_status cli_window_new(cli_window *w, uint64_t window_ms, uint64_t keys, double p)
{
    memset(w, 0, sizeof *w);
    w->window_ms = window_ms;
    w->p = p;
    return add_member(w, keys, p / 2);
}

void cli_window_free(cli_window *w)
{
    for (uint32_t i = 0; i < w->n; i++) bk_aging_free(w->m[i].f);
    w->n = 0;
}

/* Frees the older filters whose keys have all aged out. */
static void drop_expired(cli_window *w, uint64_t now)
{
    uint32_t j = 0;
    for (uint32_t i = 0; i < w->n; i++) {
        cli_window_member *m = &w->m[i];
        if (i + 1 < w->n && now > m->retired_ms + w->window_ms + m->slack_ms) {
            bk_aging_free(m->f);
            continue;
        }
        w->m[j++] = *m;
    }
    w->n = j;
}

/* The newest filter is saturated: a larger one takes over (if it cannot be made, the newest goes on,
 * saturated, and the caller is told by the return value). */
static bool grow(cli_window *w, uint64_t now)
{
    double used = 0;
    for (uint32_t i = 0; i < w->n; i++) used += w->m[i].p;
    cli_window_member *last = &w->m[w->n - 1];
    uint64_t keys = last->keys > UINT64_MAX / GROWTH ? UINT64_MAX : last->keys * GROWTH;
    if (add_member(w, keys, (w->p - used) / 2) != BK_OK) return false;
    w->m[w->n - 2].retired_ms = now;
    w->grown++;
    return true;
}

bk_status cli_window_add_new(cli_window *w, const uint64_t *h, size_t n, uint8_t *is_new, uint64_t *added)
{
    uint8_t res[CLI_BATCH];
    uint64_t a = 0;
    for (size_t i = 0; i < n;) {
        size_t c = n - i < CLI_BATCH ? n - i : CLI_BATCH;
        if (c > w->every - w->since) c = (size_t)(w->every - w->since); /* up to the next look */
        const uint64_t now = now_ms();
        if (w->n > 1) drop_expired(w, now);
        memset(is_new + i, 1, c);
        for (uint32_t j = 0; j + 1 < w->n; j++) {
            bk_aging_contains_hashes(w->m[j].f, h + i, c, res, NULL);
            for (size_t k = 0; k < c; k++) is_new[i + k] &= (uint8_t)!res[k];
        }
        bk_status s = bk_aging_add_if_absent_hashes(w->m[w->n - 1].f, h + i, c, res, NULL);
        if (s != BK_OK) return s;
        for (size_t k = 0; k < c; k++) a += is_new[i + k] &= (uint8_t)!res[k];
        if ((w->since += c) >= w->every) {
            w->since = 0;
            bk_stats st;
            bk_aging_stats(w->m[w->n - 1].f, &st);
            if (st.saturated && !w->stuck && !grow(w, now)) w->stuck = true;
        }
        i += c;
    }
    *added = a;
    return BK_OK;
}

void cli_window_stats(const cli_window *w, bk_stats *out)
{
    double pass = 1.0;
    bk_stats st;
    memset(out, 0, sizeof *out);
    for (uint32_t i = 0; i < w->n; i++) {
        bk_aging_stats(w->m[i].f, &st);
        pass *= 1.0 - st.fpr_now;
        out->count += st.count;
        out->memory_bytes += st.memory_bytes;
    }
    out->type = BK_TYPE_AGING;
    out->capacity = st.capacity;
    out->fill_ratio = st.fill_ratio; /* the newest's */
    out->fpr_now = 1.0 - pass;
    out->fpr_target = w->p;
    out->saturated = st.saturated;
    out->subfilters = w->n;
}
