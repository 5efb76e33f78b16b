/*
 * crawl_gen: the made-up crawl of the crawler-frontier example (crawler_frontier.sh).
 *
 *   crawl_gen gen   --round R --fresh F [--repeat-share X] [--seed S]
 *   crawl_gen check --round R --fresh F                      < urls
 *
 * gen prints the links a crawler discovers in round R (one URL per line): the F pages first linked
 * in this round (URL ids R*F .. R*F+F-1, each at least once) mixed with links to pages seen before,
 * a share X of all lines: four in five point to pages of earlier rounds, one in five repeat a link of
 * this round. The same arguments always print the same lines.
 *
 * check reads the URLs a frontier kept as new in round R and prints two numbers: how many distinct
 * pages of this round it kept, and how many lines point to pages of earlier rounds (pages already
 * seen: a correct frontier keeps none). Pages of this round that were not kept were skipped wrongly
 * (a false positive of the "seen" filter): F minus the first number.
 */
#define _POSIX_C_SOURCE 200809L
#include "ex_util.h"

static const char *prog = "crawl_gen";

static const char *const sections[] = { "news", "sport", "tech", "blog", "shop", "docs", "video", "forum" };

static void print_url(uint64_t id, FILE *out)
{
    uint64_t h = ex_scramble(id);
    fprintf(out, "https://www.site%03u.example/%s/%04x/item-%" PRIu64 ".html\n", (unsigned)(h % 1000),
            sections[(h >> 10) % 8], (unsigned)((h >> 20) & 0xffff), id);
}

static int usage(void)
{
    fprintf(stderr, "usage: %s gen --round R --fresh F [--repeat-share X] [--seed S]\n"
                    "       %s check --round R --fresh F < urls\n",
            prog, prog);
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 2) return usage();
    int gen = strcmp(argv[1], "gen") == 0;
    if (!gen && strcmp(argv[1], "check") != 0) return usage();
    uint64_t round = 0, fresh = 0, seed = 1;
    double repeat_share = 0.5;
    int have_round = 0;
    for (int i = 2; i < argc; i++) {
        if (EX_ARG("--round")) round = ex_count(prog, argv[i], argv[i + 1]), have_round = 1, i++;
        else if (EX_ARG("--fresh")) fresh = ex_count(prog, argv[i], argv[i + 1]), i++;
        else if (EX_ARG("--repeat-share")) repeat_share = ex_double(prog, argv[i], argv[i + 1]), i++;
        else if (EX_ARG("--seed")) seed = ex_count(prog, argv[i], argv[i + 1]), i++;
        else return usage();
    }
    if (!have_round || fresh == 0 || fresh > 100000000 || !(repeat_share >= 0 && repeat_share < 0.99))
        return usage();
    const uint64_t lo = round * fresh, hi = lo + fresh;

    if (!gen) {
        /* Distinct pages of this round kept, and lines of older pages. */
        uint8_t *kept = ex_xcalloc(prog, (size_t)fresh, 1);
        uint64_t distinct = 0, old = 0, other = 0;
        char line[4096];
        while (fgets(line, sizeof line, stdin)) {
            const char *p = strstr(line, "/item-");
            unsigned long long id;
            if (!p || sscanf(p, "/item-%llu.html", &id) != 1) {
                other++;
                continue;
            }
            if (id < lo) {
                old++;
            } else if (id < hi) {
                distinct += !kept[id - lo];
                kept[id - lo] = 1;
            } else {
                other++;
            }
        }
        free(kept);
        if (other) {
            fprintf(stderr, "%s: %" PRIu64 " lines are not URLs of rounds 0..%" PRIu64 "\n", prog, other, round);
            return 2;
        }
        printf("%" PRIu64 " %" PRIu64 "\n", distinct, old);
        return 0;
    }

    /* The round's lines: every fresh page once, then the repeats, shuffled together. */
    const uint64_t total = (uint64_t)((double)fresh / (1 - repeat_share) + 0.5);
    uint64_t *ids = ex_xmalloc(prog, (size_t)total * sizeof *ids);
    uint64_t rng = ex_scramble(seed) ^ ex_scramble(round + 1000);
    for (uint64_t i = 0; i < total; i++) {
        if (i < fresh)
            ids[i] = lo + i;
        else if (lo > 0 && ex_below(&rng, 5) != 0)
            ids[i] = ex_below(&rng, lo); /* a page of an earlier round */
        else
            ids[i] = lo + ex_below(&rng, fresh); /* a link seen earlier in this round */
    }
    for (uint64_t i = total; i > 1; i--) {
        uint64_t j = ex_below(&rng, i);
        uint64_t t = ids[i - 1];
        ids[i - 1] = ids[j];
        ids[j] = t;
    }
    for (uint64_t i = 0; i < total; i++) print_url(ids[i], stdout);
    free(ids);
    if (fflush(stdout) != 0) {
        fprintf(stderr, "%s: write error: %s\n", prog, strerror(errno));
        return 2;
    }
    return 0;
}
