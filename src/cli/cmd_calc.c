/* bloomkit calc: the geometry every filter type (or one) needs for n keys at p, and the FPR that
 * geometry really gives. Pure arithmetic: no file is touched. */
#include <string.h>

#include "cli.h"

static const char help[] =
    "Usage: bloomkit calc -n N -p P [--type T] [--json] [type options]\n"
    "\n"
    "Sizing of every filter type (or just --type T) for N keys at false-positive rate P: bits,\n"
    "bytes of memory (a file adds a header of about 128 bytes), probes k (or fingerprint bits),\n"
    "bits per key, and the FPR that geometry really gives at N keys (computed with the exact formula\n"
    "of each layout: rounding k or the block structure can put it a little above or below P).\n"
    "\n"
    "Options:\n"
    "  -n, --keys N       number of keys: 1000000, 1,000,000, 10M, 2.5k, 1e7\n"
    "  -p, --fpr P        target false-positive rate: 0.01, 1%, 1e-3, 1/1000\n"
    "  -t, --type T       only this type\n"
    "      --json         one JSON object: {\"n\":..,\"p\":..,\"types\":[{\"type\":..,\"bits\":..,\"bytes\":..,\n"
    "                     \"k\":..,\"bits_per_key\":..,\"fpr\":..,\"note\":..}, ...]}\n"
    "  type options       as for create (--counter-bits, --growth, --ratio, --fingerprint-bits, ...)\n"
    "  -h, --help         this help\n"
    "\n"
    "Example: bloomkit calc -n 10M -p 0.1%\n";

static const cli_opt opts[] = {
    CLI_OPTS_COMMON,
    { "keys", 'n', true, OPT_N },
    { "fpr", 'p', true, OPT_P },
    { "json", 0, false, OPT_JSON },
    CLI_OPTS_TYPE,
    CLI_OPTS_END,
};

static const char *calc_error(bk_status s)
{
    if (s == BK_EINVAL) return "cannot reach this FPR (its widest fingerprints are not enough): use a larger -p";
    return cli_status_words(s);
}

static int run(int argc, char **argv)
{
    cli_getopt g;
    cli_getopt_init(&g, argc, argv, opts);
    cli_size_args a = { 0 };
    bool json = false;
    const char *val;
    int id;
    while ((id = cli_getopt_next(&g, &val)) != CLI_OPT_END) {
        switch (id) {
        case CLI_OPT_ERROR: return CLI_EXIT_ERR;
        case OPT_HELP: return cli_help("calc");
        case OPT_JSON: json = true; break;
        case CLI_OPT_OPERAND: return cli_err("unexpected argument '%s' (see: bloomkit calc --help)", val);
        default:
            if (cli_size_option(id, val, &a) < 0) return CLI_EXIT_ERR;
        }
    }
    if (!a.have_n || !a.have_p) return cli_err("needs -n N and -p P (see: bloomkit calc --help)");
    const cli_type *only = a.type;
    if (!cli_type_check_opts(only, a.given)) return CLI_EXIT_ERR;
    const uint64_t n = a.n;
    const double p = a.p;

    char b1[32], b2[32], b3[32];
    if (json)
        printf("{\"n\":%llu,\"p\":%.17g,\"types\":[", (unsigned long long)n, p);
    else
        printf("%s keys at a target FPR of %s:\n\n%-12s %16s %12s %7s %9s %11s  %s\n", cli_group(n, b1, sizeof b1),
               cli_percent(p, b2, sizeof b2), "type", "bits", "memory", "k", "bits/key", "real FPR", "");
    int rc = CLI_EXIT_OK;
    bool first = true;
    for (size_t i = 0; i < cli_ntypes; i++) {
        const cli_type *t = &cli_types[i];
        if (only && t != only) continue;
        if (!t->size) continue;
        cli_sizing sz;
        memset(&sz, 0, sizeof sz);
        bk_status s = t->size(n, p, &a.to, &sz);
        if (json) {
            printf("%s{\"type\":\"%s\"", first ? "" : ",", t->name);
            if (s == BK_OK)
                printf(",\"bits\":%llu,\"bytes\":%llu,\"%s\":%u,\"bits_per_key\":%.6g,\"fpr\":%.6g,\"note\":",
                       (unsigned long long)sz.bits, (unsigned long long)sz.bytes,
                       strcmp(sz.k_label, "k") == 0 ? "k" : "fingerprint_bits", sz.k, sz.bits_per_key, sz.fpr);
            else
                printf(",\"error\":");
            cli_json_string(stdout, s == BK_OK ? sz.note : calc_error(s));
            printf("}");
        } else if (s == BK_OK) {
            char kk[24];
            snprintf(kk, sizeof kk, "%s%u", strcmp(sz.k_label, "k") == 0 ? "" : "fp", sz.k);
            printf("%-12s %16s %12s %7s %9.2f %11s  %s\n", t->name, cli_group(sz.bits, b1, sizeof b1),
                   cli_human_bytes((double)sz.bytes, b2, sizeof b2), kk, sz.bits_per_key,
                   cli_percent(sz.fpr, b3, sizeof b3), sz.note);
        } else {
            printf("%-12s %s\n", t->name, calc_error(s));
        }
        if (s != BK_OK && only) rc = CLI_EXIT_ERR;
        first = false;
    }
    if (json)
        printf("]}\n");
    else
        printf("\nk: probes per key; fpN: fingerprint bits. Files add a header of about 128 bytes.\n");
    if (rc != CLI_EXIT_OK) cli_err("%s: cannot size %s keys at %g", only->name, cli_group(n, b1, sizeof b1), p);
    return rc;
}

const cli_command cli_cmd_calc = { "calc", run, "-n N -p P [--type T] [--json]",
                                   "sizing of every type for N keys at FPR P", help };
