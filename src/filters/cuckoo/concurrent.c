/* Cuckoo filter: the concurrent mode (one writer lock, lock-free readers validated by striped sequence
 * numbers). */
#include <sched.h>
#include "filters/cuckoo/cuckoo_impl.h"

/* ---- concurrency ----
 *
 * Design: one writer at a time (the cf_conc's lock), readers without locks, validated by per-stripe sequence
 * numbers (a seqlock split into CF_STRIPES stripes; bucket i belongs to stripe i mod CF_STRIPES).
 *
 * Why a single writer lock: a kick chain touches an unbounded, data-dependent sequence of buckets,
 * so striped writer locks would need lock ordering and retries along the path. On the small core
 * counts this library targets, one writer lock costs little next to the memory misses of the kicks.
 *
 * What readers need: a key is lost for a moment only while its fingerprint is "homeless" inside a
 * kick chain -- evicted from bucket i and not yet written into its other bucket i' (or the stash
 * slot). Placing a new fingerprint into a free slot, or removing one, never moves anybody else's
 * fingerprint, so those need no sequence bump. A fingerprint is only ever evicted from one of its two
 * buckets and only ever placed into the other, so the two buckets a homeless fingerprint can belong
 * to are exactly the two buckets its key's queries read. The writer therefore makes the stripes of
 * BOTH of those buckets odd before it overwrites the slot, and makes them even again (release) only
 * after the fingerprint is back in a bucket or in the stash.
 *
 * A reader of a key with buckets i1, i2: loads the two stripes' numbers (acquire); if either is odd
 * it waits; it reads both buckets and the stash; a hit is returned at once (a hit is never a
 * false negative); a miss is returned only if both numbers, loaded again, are unchanged. Ordering:
 * slot and stash words are written with release stores and read with acquire loads; the writer
 * stores the odd number before the eviction's slot store, so a reader that sees a slot after an
 * eviction also sees the odd number (or a later one) when it loads the stripe again -- that load
 * comes after the acquire loads of the slots, so it cannot be satisfied earlier; and a reader that
 * starts from the even number stored on closing sees every slot store made before it.
 * If the key's fingerprint was homeless at any moment of the read, the reader either read its old
 * slot after the eviction (then the stripe it re-reads is odd or has moved on) or found it; either
 * way a miss is not returned from that attempt. Each stripe only grows, so "unchanged" cannot be an
 * ABA coincidence in practice (2^63 writes). Hence a key whose insert completed before the query
 * began is never reported absent. Slot words are written with atomic stores, so a reader sees every word
 * either before or after a write; a 12-bit slot that spans two words may be seen half-written, which
 * can only produce a transient false positive for the key being written, never a false negative for
 * another key (their lanes do not change).
 *
 * The chain of tables grows under the writer lock: the new table is complete before the count of
 * tables is published (release), and readers load that count with acquire.
 */

BK_HIDDEN bk_status bk__cf_set_concurrent(bk_cuckoo *F, bool on)
{
    if (on && !F->stripes) {
        cf_conc *c = bk__calloc(F->alloc, 1, sizeof *c);
        if (!c) return BK_ENOMEM;
        /* writer sections are short: spin a little before sleeping where the C library can */
        pthread_mutexattr_t attr;
        pthread_mutexattr_init(&attr);
#if defined(PTHREAD_ADAPTIVE_MUTEX_INITIALIZER_NP)
        pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
#endif
        int rc = pthread_mutex_init(&c->lock, &attr);
        pthread_mutexattr_destroy(&attr);
        if (rc != 0) {
            bk__free(F->alloc, c);
            return BK_ENOMEM;
        }
        F->stripes = c->stripes;
    } else if (!on && F->stripes) {
        cf_conc *c = cf_conc_of(F);
        pthread_mutex_destroy(&c->lock);
        bk__free(F->alloc, c);
        F->stripes = NULL;
    }
    if (F->vec) bk__cf_update_solo(F);
    return BK_OK;
}


bk_status bk_cuckoo_set_concurrent(bk_cuckoo *F, bool on)
{
    if (!F) return BK_EINVAL;
    return bk__cf_set_concurrent(F, on);
}


BK_HIDDEN void bk__cf_seq_open(bk_cuckoo *F, uint64_t bucket)
{
    uint64_t *s = stripe_of(F, bucket);
    uint64_t v = LD(s);
    if (!(v & 1)) ST(s, v + 1); /* ordered before the slot stores that follow: they are release stores */
}

BK_HIDDEN void bk__cf_seq_close(bk_cuckoo *F, uint64_t bucket)
{
    uint64_t *s = stripe_of(F, bucket);
    uint64_t v = LD(s);
    if (v & 1) __atomic_store_n(s, v + 1, __ATOMIC_RELEASE);
}

/* Out of line: it keeps the plain query's registers free. */
BK_HIDDEN void bk__cf_semi_store(bk_cuckoo *F, cf_table *T, uint64_t bucket, uint64_t x)
{
    uint64_t *st = F->stripes ? stripe_of(F, bucket) : NULL;
    bool opened = st && !(LD(st) & 1);
    if (opened) bk__cf_seq_open(F, bucket);
    bits_set(T, bucket * F->bucket_bits, F->bucket_bits, (UINT64_C(1) << F->bucket_bits) - 1, x);
    if (opened) bk__cf_seq_close(F, bucket);
}

BK_HIDDEN bool bk__cf_table_has_concurrent(const bk_cuckoo *F, const cf_table *T, uint32_t fp,
                                                           uint64_t i1, uint64_t i2)
{
    const uint64_t *s1 = stripe_of(F, i1), *s2 = stripe_of(F, i2);
    for (unsigned spins = 0;; spins++) {
        uint64_t v1 = __atomic_load_n(s1, __ATOMIC_ACQUIRE), v2 = __atomic_load_n(s2, __ATOMIC_ACQUIRE);
        if (!((v1 | v2) & 1)) {
            if (table_has(F, T, fp, i1, i2, true)) return true;
            /* the slot loads were acquire loads: these loads cannot move above them */
            if (LD(s1) == v1 && LD(s2) == v2) return false;
        }
        if (spins >= 16) sched_yield(); /* the writer may be descheduled in the middle of a chain */
    }
}


/* The same validation for counts: a count taken while a copy was homeless is retaken. */
BK_HIDDEN uint64_t bk__cf_table_count_concurrent(const bk_cuckoo *F, const cf_table *T, uint32_t fp, uint64_t i1, uint64_t i2)
{
    const uint64_t *s1 = stripe_of(F, i1), *s2 = stripe_of(F, i2);
    for (unsigned spins = 0;; spins++) {
        uint64_t v1 = __atomic_load_n(s1, __ATOMIC_ACQUIRE), v2 = __atomic_load_n(s2, __ATOMIC_ACQUIRE);
        if (!((v1 | v2) & 1)) {
            uint64_t ct = table_count(F, T, fp, i1, i2, true);
            if (LD(s1) == v1 && LD(s2) == v2) return ct;
        }
        if (spins >= 16) sched_yield();
    }
}
