/* Scalable Bloom filter: query and insert, one key and in batches, for classic and blocked chains.
 * The query and insert paths share the chain's growth lock and its prefetch policy. */
#include "scalable_chain.h"

/* ---- query ---- */

/* Probes past the first two that a query prefetches in each big layer. */
#define PREFETCH_DEPTH 2

/* Rounds (probes) tested breadth first before the layers still alive test the rest at once. */
#define BREADTH_ROUNDS 4

/* Probes t .. k-1 of one layer, p being the probe iterator at probe t: all loads issued, no early
 * exit. */
BK_INLINE bool layer_rest(const layer *L, uint32_t t, bk__probe p)
{
    const uint64_t *w = L->words;
    uint64_t all = 1;
    for (; t < L->k; t++) {
        uint64_t bit = bk__probe_at(&p, L->m);
        all &= __atomic_load_n(&w[bit >> 6], __ATOMIC_RELAXED) >> (bit & 63);
        bk__probe_next(&p, t);
    }
    return all & 1;
}

/*
 * The chain. Every layer probes with the same sequence x_0, x_1, ... (it depends only on h), mapped to
 * each layer's own m. An absent key is rejected by about two probes per layer, so phase 1 tests
 * probes 0 and 1 of every layer with a fixed amount of work and no branch on the data: all those
 * loads are independent and their cache misses overlap; it also prefetches the next probes of the big
 * layers. Phase 2 then goes on breadth first over the few layers still alive (round t tests probe t of
 * each), with one unpredictable branch per round rather than per probe. A layer whose k probes all hit
 * holds the key. After BREADTH_ROUNDS probes, the layers still alive (rare for an absent key, the
 * layer holding a present one) test all their remaining probes with independent loads. n <= 64, so a
 * 64-bit mask holds the live layers.
 */
static bool classic_has(const bk_scalable *f, uint32_t n, uint64_t h)
{
    layer *const *layers = sc_layers(f);
    bk__probe p = bk__probe_start(h);
    const uint64_t x0 = p.x;
    bk__probe_next(&p, 0);
    const uint64_t x1 = p.x;
    bk__probe_next(&p, 1); /* p: probe 2 */
    uint64_t alive = 0, done = 0;
    for (uint32_t l = n; l-- > 0;) { /* largest first: their misses start earliest */
        const layer *L = layers[l];
        const uint64_t *w = L->words;
        uint64_t b0 = bk__range64(x0, L->m), b1 = bk__range64(x1, L->m);
        if (L->bytes >= BIG_LAYER_BYTES) {
            bk__probe q = p;
            for (uint32_t t = 2; t < 2 + PREFETCH_DEPTH; t++) {
                BK_PREFETCH(&w[bk__probe_at(&q, L->m) >> 6]);
                bk__probe_next(&q, t);
            }
        }
        /* (a layer with k = 1 ignores probe 1) */
        uint64_t hit = (__atomic_load_n(&w[b0 >> 6], __ATOMIC_RELAXED) >> (b0 & 63)) &
                       ((__atomic_load_n(&w[b1 >> 6], __ATOMIC_RELAXED) >> (b1 & 63)) | (L->k < 2)) & 1;
        alive |= hit << l;
        done |= (uint64_t)(hit & (L->k <= 2)) << l;
    }
    if (!alive) return false;
    if (done) return true;
    uint32_t t = 2;
    for (; alive && t < BREADTH_ROUNDS; t++) {
        uint64_t next = 0;
        for (uint64_t a = alive; a; a &= a - 1) {
            unsigned l = (unsigned)__builtin_ctzll(a);
            const layer *L = layers[l];
            uint64_t bit = bk__probe_at(&p, L->m);
            uint64_t hit = (__atomic_load_n(&L->words[bit >> 6], __ATOMIC_RELAXED) >> (bit & 63)) & 1;
            next |= hit << l;
            done |= (uint64_t)(hit & (L->k == t + 1)) << l;
        }
        if (done) return true;
        alive = next;
        bk__probe_next(&p, t);
    }
    /* Phase 3: the few layers still alive (one in 16 for an absent key; the one holding a present
     * key) test all their remaining probes with independent loads, so those misses overlap too. */
    for (uint64_t a = alive; a; a &= a - 1) {
        if (layer_rest(layers[__builtin_ctzll(a)], t, p)) return true;
    }
    return false;
}

/* A blocked chain: every layer is one block test with no branch on the data, so an absent key costs
 * one block (two lines) per layer, all loads independent (the engine's bk__b1024_any; oldest layers
 * first: k grows along the chain, so the mask is mostly extended, not rebuilt). */
static bool blocked_has(const bk_scalable *f, uint32_t n, uint64_t h)
{
    const uint64_t *blocks[BK_SCALABLE_MAX_FILTERS];
    uint32_t ks[BK_SCALABLE_MAX_FILTERS];
    for (uint32_t l = 0; l < n; l++) {
        blocks[l] = b1024_block(sc_layers(f)[l], h);
        ks[l] = sc_layers(f)[l]->k;
    }
    return bk__b1024_any((bk_simd)f->simd, blocks, ks, n, (uint32_t)h);
}

static bool chain_has(const bk_scalable *f, uint32_t n, uint64_t h)
{
    return f->classic ? classic_has(f, n, h) : blocked_has(f, n, h);
}

bool bk_scalable_contains_hash(const bk_scalable *f, uint64_t h)
{
    return chain_has(f, __atomic_load_n(&f->n, __ATOMIC_ACQUIRE), h);
}

bool bk_scalable_contains(const bk_scalable *f, const void *key, size_t len)
{
    return bk_scalable_contains_hash(f, bk__hash(key, len, f->seed));
}

/* ---- insert ---- */

/* Append a layer if the chain still has n layers (another thread may have done it). [under grow_lock] */
static bk_status grow_locked(bk_scalable *f, uint32_t n)
{
    if (__atomic_load_n(&f->n, __ATOMIC_RELAXED) != n) return BK_OK;
    if (f->growth == 0) return BK_EFULL;
    if (n >= BK_SCALABLE_MAX_FILTERS) return BK_ETOOBIG;
    layer *L;
    bk_status s = bk__sc_reserve(f, n + 1);
    if (s != BK_OK) return s;
    s = bk__sc_make_layer(f, n, __atomic_load_n(&f->bytes, __ATOMIC_RELAXED), bk__sc_spent(f, n), &L);
    if (s != BK_OK) return s;
    sc_layers(f)[n] = L;
    __atomic_store_n(&f->bytes, f->bytes + L->bytes, __ATOMIC_RELAXED);
    __atomic_store_n(&f->n, n + 1, __ATOMIC_RELEASE);
    return BK_OK;
}

/* Sets the k bits of x in a 1024-bit block. */
BK_INLINE void b1024_set(uint64_t *w, uint32_t x, uint32_t k)
{
    for (uint32_t i = 0; i < k; i++) {
        uint32_t b = bk__b1024_bit(x, i);
        w[b >> 6] |= UINT64_C(1) << (b & 63);
    }
}

/* Inserts h into the newest layer L of n (growing the chain first when L is full), without testing
 * whether L holds it: the tail of the two add paths below. [excl] */
BK_INLINE bk_status insert_newest(bk_scalable *f, uint32_t n, layer *L, uint64_t h)
{
    if (BK_UNLIKELY(L->fill >= L->capacity)) {
        bk_status s = grow_locked(f, n); /* [excl]: nobody else holds the lock */
        if (s != BK_OK) return s;
        L = sc_layers(f)[n];
    }
    L->fill++;
    if (L->bf) return bk_bloom_add_hash(L->bf, h);
    b1024_set(b1024_block(L, h), (uint32_t)h, L->k);
    return BK_OK;
}

bk_status bk_scalable_add_if_absent_hash(bk_scalable *f, uint64_t h)
{
    if (BK_UNLIKELY(!f)) return BK_EINVAL;
    uint32_t n = f->n;
    if (chain_has(f, n, h)) return BK_EEXISTS;
    layer *L = sc_layers(f)[n - 1];
    return insert_newest(f, n, L, h);
}

bk_status bk_scalable_add_if_absent(bk_scalable *f, const void *key, size_t len)
{
    if (BK_UNLIKELY(!f || (!key && len))) return BK_EINVAL;
    return bk_scalable_add_if_absent_hash(f, bk__hash(key, len, f->seed));
}

/* A plain add: into the newest layer unless that layer already holds the key (tested on its own
 * block, the lines the insert touches anyway); older layers are not tested, so an add costs one
 * layer's probe however long the chain. BK_EEXISTS: the newest layer had it (nothing changed). [excl] */
static bk_status add_newest(bk_scalable *f, uint64_t h)
{
    uint32_t n = f->n;
    layer *L = sc_layers(f)[n - 1];
    if (L->bf) {
        if (bk_bloom_contains_hash(L->bf, h)) return BK_EEXISTS;
    } else {
        const uint32_t x = (uint32_t)h;
        uint64_t *w = b1024_block(L, h), miss = 0;
        if (BK_LIKELY(L->fill < L->capacity)) {
            /* room: test and set in one pass (setting a bit already set changes nothing, so a key
             * the layer already holds leaves it as it was) */
            for (uint32_t i = 0; i < L->k; i++) {
                uint32_t b = bk__b1024_bit(x, i);
                uint64_t bit = UINT64_C(1) << (b & 63), old = w[b >> 6];
                miss |= ~old & bit;
                w[b >> 6] = old | bit;
            }
            if (miss == 0) return BK_EEXISTS;
            L->fill++;
            return BK_OK;
        }
        for (uint32_t i = 0; i < L->k; i++) {
            uint32_t b = bk__b1024_bit(x, i);
            miss |= ~w[b >> 6] & (UINT64_C(1) << (b & 63));
        }
        if (miss == 0) return BK_EEXISTS;
    }
    return insert_newest(f, n, L, h);
}

bk_status bk_scalable_add_hash(bk_scalable *f, uint64_t h)
{
    if (BK_UNLIKELY(!f)) return BK_EINVAL;
    bk_status s = add_newest(f, h);
    return s == BK_EEXISTS ? BK_OK : s;
}

bk_status bk_scalable_add(bk_scalable *f, const void *key, size_t len)
{
    if (BK_UNLIKELY(!f || (!key && len))) return BK_EINVAL;
    return bk_scalable_add_hash(f, bk__hash(key, len, f->seed));
}

bk_status bk_scalable_add_if_absent_u64(bk_scalable *f, uint64_t key)
{
    if (BK_UNLIKELY(!f)) return BK_EINVAL;
    return bk_scalable_add_if_absent_hash(f, bk__hash_u64(key, f->seed));
}

bk_status bk_scalable_add_u64(bk_scalable *f, uint64_t key)
{
    if (BK_UNLIKELY(!f)) return BK_EINVAL;
    return bk_scalable_add_hash(f, bk__hash_u64(key, f->seed));
}

bool bk_scalable_contains_u64(const bk_scalable *f, uint64_t key)
{
    return bk_scalable_contains_hash(f, bk__hash_u64(key, f->seed));
}

/* Claim a slot in the newest layer with a CAS on its fill (so a layer never takes more than its
 * capacity, however many threads add), then set the bits with the classic filter's atomic OR. Only
 * a full newest layer takes the lock, to append the next one. */
bk_status bk_scalable_add_hash_atomic(bk_scalable *f, uint64_t h)
{
    if (BK_UNLIKELY(!f)) return BK_EINVAL;
    uint32_t n = __atomic_load_n(&f->n, __ATOMIC_ACQUIRE);
    if (chain_has(f, n, h)) return BK_EEXISTS;
    for (;;) {
        layer *L = sc_layers(f)[n - 1];
        uint64_t c = __atomic_load_n(&L->fill, __ATOMIC_RELAXED);
        while (c < L->capacity &&
               !__atomic_compare_exchange_n(&L->fill, &c, c + 1, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
        }
        if (c < L->capacity) {
            if (L->bf) return bk_bloom_add_hash_atomic(L->bf, h);
            uint64_t *w = b1024_block(L, h);
            for (uint32_t i = 0; i < L->k; i++) {
                uint32_t b = bk__b1024_bit((uint32_t)h, i);
                __atomic_fetch_or(&w[b >> 6], UINT64_C(1) << (b & 63), __ATOMIC_RELAXED);
            }
            return BK_OK;
        }
        sc_grow_lock(&f->grow_lock);
        bk_status s = grow_locked(f, n);
        sc_grow_unlock(&f->grow_lock);
        if (s != BK_OK) return s;
        n = __atomic_load_n(&f->n, __ATOMIC_ACQUIRE);
    }
}

bk_status bk_scalable_add_atomic(bk_scalable *f, const void *key, size_t len)
{
    if (BK_UNLIKELY(!f || (!key && len))) return BK_EINVAL;
    return bk_scalable_add_hash_atomic(f, bk__hash(key, len, f->seed));
}

/* ---- batches ---- */


#define ADD_LOOKAHEAD 16
/* Keys hashed per chunk by add_many (the prefetch pipeline restarts at each chunk). */
#define ADD_CHUNK 256

/* The newest layer's lines for h: a blocked layer's block, a classic layer's first two probe lines.
 * Always inlined: as a function of its own, holding nothing but prefetches, the compiler takes it
 * for one without effects and drops its calls. */
BK_INLINE void prefetch_newest(const bk_scalable *f, uint64_t h)
{
    const layer *L = sc_layers(f)[f->n - 1];
    if (L->bytes < BIG_LAYER_BYTES) return;
    if (!L->bf) {
        const uint64_t *b = b1024_block(L, h);
        BK_PREFETCH_W(b);
        BK_PREFETCH_W(b + 8);
        return;
    }
    bk__probe p = bk__probe_start(h); /* probes 0 and 1 */
    BK_PREFETCH_W(&L->words[bk__probe_at(&p, L->m) >> 6]);
    bk__probe_next(&p, 0);
    BK_PREFETCH_W(&L->words[bk__probe_at(&p, L->m) >> 6]);
}

bk_status bk_scalable_add_hashes(bk_scalable *f, const uint64_t *hashes, size_t n, size_t *done)
{
    if (!f || (!hashes && n)) return bk__batch_refused(done);
    for (size_t i = 0; i < n && i < ADD_LOOKAHEAD; i++) prefetch_newest(f, hashes[i]);
    for (size_t i = 0; i < n; i++) {
        /* a few keys ahead, fetch the newest layer's lines (a growth mid-batch only makes a few of
         * these prefetches useless); keys are added in order, so a key repeated within the batch is
         * found in the newest layer by its second add */
        if (i + ADD_LOOKAHEAD < n) prefetch_newest(f, hashes[i + ADD_LOOKAHEAD]);
        bk_status s = add_newest(f, hashes[i]);
        if (s != BK_OK && s != BK_EEXISTS) {
            if (done) *done = i;
            return s;
        }
    }
    return bk__batch_done(done, n);
}

bk_status bk_scalable_add_many(bk_scalable *f, const void *const *keys, const size_t *lens, size_t n,
                               size_t *done)
{
    if (!f || !bk__keys_valid(keys, lens, n)) return bk__batch_refused(done);
    uint64_t h[ADD_CHUNK];
    for (size_t i = 0, c = 0; i < n; i += c) {
        size_t d = 0;
        c = bk__hash_chunk(h, ADD_CHUNK, keys, lens, i, n, f->seed);
        bk_status s = bk_scalable_add_hashes(f, h, c, &d);
        if (s != BK_OK) {
            if (done) *done = i + d;
            return s;
        }
    }
    return bk__batch_done(done, n);
}


/*
 * A batch runs the breadth-first walk of chain_has for a block of keys in lock step: round t tests
 * probe t of every (key, layer) pair still alive, then prefetches probe t + 1 of the big layers still
 * alive, and the rest of the block's work hides those misses. Every line fetched is one the walk
 * needs (about two per layer for an absent key), so a batch runs near the memory system's throughput.
 */
/* Keys ahead whose blocks a blocked chain's batch prefetches: each key fetches two lines per big layer,
 * so a few keys already keep the memory system busy. */
#define BLOCKED_PF 6

/* The big layers of a blocked chain of nl layers (newest first); returns how many. */
static uint32_t big_layers(const bk_scalable *f, uint32_t nl, const layer **big)
{
    uint32_t nbig = 0;
    for (uint32_t l = nl; l-- > 0;)
        if (sc_layers(f)[l]->bytes >= BIG_LAYER_BYTES) big[nbig++] = sc_layers(f)[l];
    return nbig;
}

BK_INLINE void prefetch_blocks(const layer *const *big, uint32_t nbig, uint64_t h)
{
    for (uint32_t j = 0; j < nbig; j++) {
        const uint64_t *b = b1024_block(big[j], h);
        BK_PREFETCH(b);
        BK_PREFETCH(b + 8);
    }
}

/* A blocked chain's batch: while key i is tested, the blocks of key i + BLOCKED_PF in the big layers
 * are fetched. */
static size_t blocked_contains_hashes(const bk_scalable *f, const uint64_t *hashes, size_t n, uint8_t *results)
{
    const uint32_t nl = __atomic_load_n(&f->n, __ATOMIC_ACQUIRE);
    const layer *big[BK_SCALABLE_MAX_FILTERS];
    const uint32_t nbig = big_layers(f, nl, big);
    size_t present = 0;
    for (size_t i = 0; i < n && i < BLOCKED_PF; i++) prefetch_blocks(big, nbig, hashes[i]);
    for (size_t i = 0; i < n; i++) {
        if (i + BLOCKED_PF < n) prefetch_blocks(big, nbig, hashes[i + BLOCKED_PF]);
        bool r = blocked_has(f, nl, hashes[i]);
        if (results) results[i] = r;
        present += r;
    }
    return present;
}

/* The bytes form: key i + BLOCKED_PF is hashed into a small ring and its blocks fetched while key i is
 * tested, so hashing overlaps the misses too. */
static size_t blocked_contains_many(const bk_scalable *f, const void *const *keys, const size_t *lens, size_t n,
                                    uint8_t *results)
{
    const uint32_t nl = __atomic_load_n(&f->n, __ATOMIC_ACQUIRE);
    const layer *big[BK_SCALABLE_MAX_FILTERS];
    const uint32_t nbig = big_layers(f, nl, big);
    uint64_t ring[BLOCKED_PF];
    size_t present = 0;
    for (size_t i = 0; i < n && i < BLOCKED_PF; i++) {
        ring[i] = bk__hash(keys[i], lens[i], f->seed);
        prefetch_blocks(big, nbig, ring[i]);
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t h = ring[i % BLOCKED_PF];
        if (i + BLOCKED_PF < n) {
            uint64_t g = bk__hash(keys[i + BLOCKED_PF], lens[i + BLOCKED_PF], f->seed);
            ring[i % BLOCKED_PF] = g;
            prefetch_blocks(big, nbig, g);
        }
        bool r = blocked_has(f, nl, h);
        if (results) results[i] = r;
        present += r;
    }
    return present;
}

static size_t classic_contains_hashes(const bk_scalable *f, const uint64_t *hashes, size_t n, uint8_t *results)
{
    enum { STEP = 16 };
    layer *const *layers = sc_layers(f);
    const uint32_t nl = __atomic_load_n(&f->n, __ATOMIC_ACQUIRE);
    const uint64_t all = nl == 64 ? ~UINT64_C(0) : (UINT64_C(1) << nl) - 1;
    uint64_t bigmask = 0;
    for (uint32_t l = 0; l < nl; l++)
        if (layers[l]->bytes >= BIG_LAYER_BYTES) bigmask |= UINT64_C(1) << l;
    size_t present = 0;
    for (size_t i = 0; i < n; i += STEP) {
        const size_t cnt = n - i < STEP ? n - i : STEP;
        bk__probe pr[STEP];
        uint64_t alive[STEP];
        uint8_t found[STEP];
        for (size_t j = 0; j < cnt; j++) {
            pr[j] = bk__probe_start(hashes[i + j]);
            alive[j] = all;
            found[j] = 0;
            for (uint64_t a = bigmask; a; a &= a - 1) {
                const layer *L = layers[__builtin_ctzll(a)];
                BK_PREFETCH(&L->words[bk__probe_at(&pr[j], L->m) >> 6]);
            }
        }
        uint64_t any = cnt ? 1 : 0;
        uint32_t t = 0;
        for (; any && t < BREADTH_ROUNDS; t++) {
            any = 0;
            for (size_t j = 0; j < cnt; j++) {
                if (!alive[j]) continue;
                uint64_t next = 0, done = 0;
                for (uint64_t a = alive[j]; a; a &= a - 1) {
                    unsigned l = (unsigned)__builtin_ctzll(a);
                    const layer *L = layers[l];
                    uint64_t bit = bk__probe_at(&pr[j], L->m);
                    uint64_t hit = (__atomic_load_n(&L->words[bit >> 6], __ATOMIC_RELAXED) >> (bit & 63)) & 1;
                    next |= hit << l;
                    done |= (uint64_t)(hit & (L->k == t + 1)) << l;
                }
                bk__probe_next(&pr[j], t);
                if (done) {
                    found[j] = 1;
                    next = 0;
                }
                alive[j] = next;
                any |= next;
                for (uint64_t a = next & bigmask; a; a &= a - 1) {
                    const layer *L = layers[__builtin_ctzll(a)];
                    BK_PREFETCH(&L->words[bk__probe_at(&pr[j], L->m) >> 6]);
                }
            }
        }
        /* the few (key, layer) pairs still alive: prefetch all their remaining probes, then test them */
        if (any) {
            for (size_t j = 0; j < cnt; j++)
                for (uint64_t a = alive[j] & bigmask; a; a &= a - 1) {
                    const layer *L = layers[__builtin_ctzll(a)];
                    bk__probe q = pr[j];
                    for (uint32_t u = t; u < L->k; u++) {
                        BK_PREFETCH(&L->words[bk__probe_at(&q, L->m) >> 6]);
                        bk__probe_next(&q, u);
                    }
                }
            for (size_t j = 0; j < cnt; j++)
                for (uint64_t a = alive[j]; a && !found[j]; a &= a - 1)
                    found[j] = layer_rest(layers[__builtin_ctzll(a)], t, pr[j]);
        }
        for (size_t j = 0; j < cnt; j++) {
            if (results) results[i + j] = found[j];
            present += found[j];
        }
    }
    return present;
}

bk_status bk_scalable_contains_hashes(const bk_scalable *f, const uint64_t *hashes, size_t n, uint8_t *results,
                                      size_t *hits)
{
    if (!f || (!hashes && n)) return bk__batch_refused(hits);
    return bk__batch_done(hits, f->classic ? classic_contains_hashes(f, hashes, n, results)
                                           : blocked_contains_hashes(f, hashes, n, results));
}

bk_status bk_scalable_contains_many(const bk_scalable *f, const void *const *keys, const size_t *lens, size_t n,
                                    uint8_t *results, size_t *hits)
{
    if (!f || !bk__keys_valid(keys, lens, n)) return bk__batch_refused(hits);
    if (!f->classic) return bk__batch_done(hits, blocked_contains_many(f, keys, lens, n, results));
    uint64_t h[BK_BATCH];
    size_t present = 0;
    for (size_t i = 0, c = 0; i < n; i += c) {
        c = bk__hash_chunk(h, BK_BATCH, keys, lens, i, n, f->seed);
        present += classic_contains_hashes(f, h, c, results ? results + i : NULL);
    }
    return bk__batch_done(hits, present);
}

