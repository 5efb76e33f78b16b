"""No reference or memory leaks: 100,000 operations of every kind, then the reference counts of the
objects involved and the memory the interpreter traced must be where they were."""
import gc
import os
import sys
import tracemalloc

import numpy as np
import pytest

import bloomkit
from conftest import SANITIZED

ROUNDS = 20_000 if SANITIZED else 100_000


def _ops(f, g, key_s, key_b, key_i, batch, arr, blob):
    f.add(key_s)
    f.add(key_b)
    f.add(key_i)
    _ = key_s in f, key_b in f, key_i in f, f.contains(key_s)
    f.add_if_absent(key_s)
    try:
        f.add(1.5)
    except TypeError:
        pass
    try:
        bloomkit.from_bytes(blob[:-1])
    except bloomkit.DamagedFileError:
        pass
    try:
        f | g
    except bloomkit.IncompatibleError:
        pass


def _rss_kib():
    with open(f"/proc/{os.getpid()}/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 1024


def test_refcounts_and_traced_memory_are_stable():
    f, g = bloomkit.Bloom(1000), bloomkit.Bloom(2000)
    key_s, key_b, key_i = "a key", b"bytes key", 123456789
    batch = ["k%d" % i for i in range(300)]
    arr = np.arange(300, dtype=np.uint64)
    blob = bytes(f)
    watched = [f, g, key_s, key_b, key_i, batch, arr, blob, batch[7]]
    for _ in range(1000):                        # warm up caches (UTF-8 forms, free lists)
        _ops(f, g, key_s, key_b, key_i, batch, arr, blob)
    gc.collect()
    before = [sys.getrefcount(o) for o in watched]
    tracemalloc.start()
    snap0 = tracemalloc.take_snapshot()
    for i in range(ROUNDS):
        _ops(f, g, key_s, key_b, key_i, batch, arr, blob)
        if i % 100 == 0:
            f.contains_many(batch)
            f.add_many(batch)
            f.contains_many(arr)
            f.add_many(iter(batch))
            bytes(f)
            bloomkit.from_bytes(blob)
            f.copy()
            f.stats()
    gc.collect()
    snap1 = tracemalloc.take_snapshot()
    tracemalloc.stop()
    after = [sys.getrefcount(o) for o in watched]
    assert after == before
    growth = sum(s.size_diff for s in snap1.compare_to(snap0, "filename"))
    assert growth < 64 * 1024, growth


@pytest.mark.skipif(SANITIZED, reason="resident memory is not meaningful under a sanitizer's allocator")
def test_filters_are_freed():
    """The library's memory is not traced by tracemalloc: check the process's resident set instead,
    over 2,000 filters of 1 MiB each made, used and dropped."""
    def churn(n):
        for i in range(n):
            f = bloomkit.Blocked(800_000, 0.01) if i % 2 else bloomkit.Cuckoo(500_000, 0.01)
            f.add_many(["x", "y"])
            g = bloomkit.from_bytes(bytes(f))
            del f, g

    churn(50)
    start = _rss_kib()
    churn(2000)
    assert _rss_kib() - start < 50 * 1024       # 2,000 leaked filters would be 4 GiB
