/* Concurrency of the blocked sizing: its per-process tables (the in-block terms at whole loads, filled
 * in chunks on first use) start empty in this process, and 4 threads size filters and sum FPR mixtures
 * at once, overlapping on the same chunks. Every answer equals the one the same call gives afterwards
 * on one thread, bit for bit, and the geometry the summed search gives. */
#include "conc.h"
#include <string.h>
#include <bloomkit/bloomkit.h>
#include "core/blocked1024.h"
#include "core/hooks.h"

#define THREADS 4
#define CELLS 48

typedef struct {
    uint64_t n;
    double p;
    int code; /* 0 split, 1 512, 2 the chain's 1024 */
} cell;

typedef struct {
    bk_geometry g;
    bk_status s;
    double fpr; /* bk_blocked_fpr or the 1024 exact FPR at the geometry */
} answer;

static cell g_cells[CELLS];
static answer g_got[THREADS][CELLS];
static tc_line g_line;

static void answer_of(const cell *c, answer *a)
{
    memset(a, 0, sizeof *a);
    if (c->code == 2) {
        a->s = bk__blocked1024_size(c->n, c->p, &a->g);
        if (a->s == BK_OK) a->fpr = bk__blocked1024_fpr_exact(a->g.m, a->g.n, a->g.k);
    } else {
        a->s = bk_blocked_size(c->n, c->p, (bk_blocked_layout)c->code, &a->g);
        if (a->s == BK_OK) a->fpr = bk_blocked_fpr(a->g.m, a->g.n, (bk_blocked_layout)c->code, a->g.k);
    }
}

/* Thread t takes the cells from its own starting point, so the threads meet on the same chunks. */
static void *sizer(void *arg)
{
    const int t = (int)(intptr_t)arg;
    tc_line_wait(&g_line);
    for (int i = 0; i < CELLS; i++) {
        int c = (i + t * (CELLS / THREADS)) % CELLS;
        answer_of(&g_cells[c], &g_got[t][c]);
    }
    return NULL;
}

static void concurrent_first_use(void **state)
{
    (void)state;
    uint64_t s = 11;
    static const double ps[] = { 0.3, 0.01, 1e-4, 1e-6, 1e-9 };
    for (int i = 0; i < CELLS; i++) {
        g_cells[i].n = 1 + tu_splitmix(&s) % (i % 2 ? UINT64_C(1000000000) : 100000);
        g_cells[i].p = ps[i % 5];
        g_cells[i].code = (i / 5) % 3;
    }
    tc_line_init(&g_line, THREADS);
    tc_threads g = { .n = 0 };
    for (int t = 0; t < THREADS; t++) tc_start(&g, sizer, (void *)(intptr_t)t);
    tc_join(&g);
    tc_line_destroy(&g_line);
    for (int i = 0; i < CELLS; i++) {
        answer one;
        answer_of(&g_cells[i], &one);
        bk_geometry summed;
        assert_int_equal(bk__blocked_size_summed(g_cells[i].n, g_cells[i].p, g_cells[i].code, &summed), one.s);
        if (one.s == BK_OK) assert_true(summed.m == one.g.m && summed.k == one.g.k);
        for (int t = 0; t < THREADS; t++) {
            const answer *a = &g_got[t][i];
            assert_int_equal(a->s, one.s);
            assert_true(a->g.m == one.g.m && a->g.k == one.g.k);
            assert_memory_equal(&a->g.fpr, &one.g.fpr, sizeof(double));
            assert_memory_equal(&a->fpr, &one.fpr, sizeof(double));
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(concurrent_first_use),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
