/*
 * bloomkit: Bitcoin BIP 37 filters, the Bloom filters a light client sends in a `filterload` message.
 *
 * A BIP 37 filter is a classic Bloom filter with Bitcoin's own fixed rules, so that a filter made
 * here is the filter Bitcoin Core (CBloomFilter) makes and reads:
 *   - bit i of the filter is bit (i & 7) of byte i >> 3;
 *   - probe j (0 <= j < nHashFuncs) of a key is MurmurHash3 (x86, 32-bit) of the key's bytes with the
 *     seed j * 0xFBA4C795 + nTweak (mod 2^32), taken modulo the filter's bits (nFilterBytes * 8);
 *   - sizing for n elements at rate p is Bitcoin Core's: nFilterBytes = min(floor(-n ln p / ln(2)^2),
 *     288,000) / 8 (whole bytes, rounded down), nHashFuncs = min(floor((nFilterBytes * 8 / n) ln 2),
 *     50), with the division nFilterBytes * 8 / n in integers as Core does it;
 *   - the limits of the protocol: at most 36,000 bytes (BK_BIP37_MAX_BYTES) and 50 hash functions
 *     (BK_BIP37_MAX_HASH_FUNCS); larger filters are refused with BK_ETOOBIG;
 *   - the serialized form is the `filterload` payload: a compact-size length, the filter's bytes,
 *     nHashFuncs (u32 little-endian), nTweak (u32 little-endian), nFlags (one byte: 0 update none,
 *     1 update all, 2 update P2PUBKEY only; kept as given, it only matters to a full node).
 *   - an empty filter (0 bytes) matches every key, as in Bitcoin Core.
 *
 * The hash is Bitcoin's, not bloomkit's XXH3: these filters are not bk_filter types and are not
 * stored in bloomkit's file format; they exist to make, read and answer for BIP 37 messages.
 *
 * Thread-safety: see the legend in common.h.
 */
#ifndef BLOOMKIT_BIP37_H
#define BLOOMKIT_BIP37_H

#include "common.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bk_bip37 bk_bip37;

/* The protocol's limits (Bitcoin Core's MAX_BLOOM_FILTER_SIZE and MAX_HASH_FUNCS). */
#define BK_BIP37_MAX_BYTES 36000u
#define BK_BIP37_MAX_HASH_FUNCS 50u
/* nFlags values. */
#define BK_BIP37_UPDATE_NONE 0u
#define BK_BIP37_UPDATE_ALL 1u
#define BK_BIP37_UPDATE_P2PUBKEY_ONLY 2u

/* ---- making and freeing ---- */

/* [any] A filter sized for n elements at false-positive rate p (0 < p < 1) by Bitcoin Core's rules
 * (above), with nTweak `tweak` and nFlags `flags`. n = 0 or p out of range: BK_EINVAL. Where Core's
 * rules give 0 hash functions (p near 1) the filter still has 0: it then matches every key. alloc:
 * NULL for the default; kept by the filter (common.h, "Allocator"). */
BK_API bk_status bk_bip37_new(uint32_t n, double p, uint32_t tweak, uint8_t flags, const bk_allocator *alloc,
                              bk_bip37 **out);
/* [any] A filter of exactly `bytes` bytes and `hash_funcs` hash functions, all bits clear. Over the
 * limits: BK_ETOOBIG. */
BK_API bk_status bk_bip37_new_sized(size_t bytes, uint32_t hash_funcs, uint32_t tweak, uint8_t flags,
                                    const bk_allocator *alloc, bk_bip37 **out);
/* [excl] NULL is a no-op. */
BK_API void bk_bip37_free(bk_bip37 *f);

/* ---- keys ---- */

/* [excl] Sets the key's bits (an empty filter is left unchanged, as Core leaves it). */
BK_API bk_status bk_bip37_add(bk_bip37 *f, const void *key, size_t len);
/* [query] true when every bit of the key is set (probably present), or the filter is empty. */
BK_API bool bk_bip37_contains(const bk_bip37 *f, const void *key, size_t len);
/* [excl] Clears every bit. */
BK_API void bk_bip37_clear(bk_bip37 *f);

/* ---- the filterload payload ---- */

/* [query] Bytes of the serialized form. */
BK_API size_t bk_bip37_serialized_size(const bk_bip37 *f);
/* [query] Writes the serialized form into buf (cap bytes); *written its size. A buffer smaller than
 * bk_bip37_serialized_size: BK_EBUFSIZE, *written the size needed, nothing written. */
BK_API bk_status bk_bip37_serialize(const bk_bip37 *f, void *buf, size_t cap, size_t *written);
/* [any] Reads a serialized filter, strictly: the compact-size length must be minimal and its bytes,
 * the two u32 and the flags byte must fill `len` exactly (else BK_ETRUNCATED when data is missing,
 * BK_ECORRUPT when a length is not minimal or bytes are left over); a filter over 36,000 bytes or 50
 * hash functions is BK_ETOOBIG. bk_bip37_parse_problem names what was wrong in words. */
BK_API bk_status bk_bip37_parse(const void *buf, size_t len, const bk_allocator *alloc, bk_bip37 **out);
/* [any] What bk_bip37_parse would refuse in buf, in words ("the filter has 40000 bytes: BIP 37 allows
 * at most 36,000"), written NUL-terminated into msg (cap bytes, truncated to fit); the status it
 * would return. BK_OK (and an empty msg) for a payload it accepts. */
BK_API bk_status bk_bip37_parse_problem(const void *buf, size_t len, char *msg, size_t cap);

/* ---- accessors. [query] ---- */

BK_API size_t bk_bip37_bytes(const bk_bip37 *f);      /* nFilterBytes */
BK_API uint32_t bk_bip37_hash_funcs(const bk_bip37 *f);
BK_API uint32_t bk_bip37_tweak(const bk_bip37 *f);
BK_API uint8_t bk_bip37_flags(const bk_bip37 *f);
/* The filter's bytes (bk_bip37_bytes of them); NULL for an empty filter. */
BK_API const uint8_t *bk_bip37_data(const bk_bip37 *f);
/* Bits set. */
BK_API uint64_t bk_bip37_popcount(const bk_bip37 *f);

/* [any] MurmurHash3 x86 32-bit of len bytes with a seed: the hash BIP 37 probes with. */
BK_API uint32_t bk_murmur3_32(const void *key, size_t len, uint32_t seed);

#ifdef __cplusplus
}
#endif

#endif
