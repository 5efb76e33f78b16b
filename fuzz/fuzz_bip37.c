/*
 * libFuzzer target for the BIP 37 payload parser (bk_bip37_parse). Whatever parses must behave: the
 * refusal and its reason agree (bk_bip37_parse_problem), a parsed filter serializes back to exactly
 * the input, and a key added is then found. A violated property traps.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <bloomkit/bloomkit.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(c)                                                                                    \
    do {                                                                                            \
        if (!(c)) __builtin_trap();                                                                 \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    bk_bip37 *f = NULL;
    bk_status s = bk_bip37_parse(data, size, NULL, &f);
    char why[160];
    CHECK(bk_bip37_parse_problem(data, size, why, sizeof why) == s);
    CHECK((s == BK_OK) == (why[0] == '\0') && (s == BK_OK) == (f != NULL));
    if (!f) return 0;
    CHECK(bk_bip37_bytes(f) <= BK_BIP37_MAX_BYTES && bk_bip37_hash_funcs(f) <= BK_BIP37_MAX_HASH_FUNCS);
    size_t n = bk_bip37_serialized_size(f), w = 0;
    CHECK(n == size);
    uint8_t *out = malloc(n);
    CHECK(out != NULL);
    CHECK(bk_bip37_serialize(f, out, n, &w) == BK_OK && w == n && memcmp(out, data, n) == 0);
    free(out);
    size_t klen = size < 40 ? size : 40;
    CHECK(bk_bip37_add(f, data, klen) == BK_OK);
    CHECK(bk_bip37_contains(f, data, klen));
    bk_bip37_free(f);
    return 0;
}
