#!/usr/bin/python3
"""The Python package against a pure-Python Bloom filter and ctypes calls into libbloomkit.so.

    PYTHONPATH=build/python /usr/bin/python3 bench/python_bench.py [--lib build/libbloomkit.so] [-n 100000]

Prints figures only (it never fails on a figure). Each row is the best of --repeat rounds over the same
keys, on one core; the rounds run every case in turn, and the ratios are taken within this one run. The filters are sized for n keys at 1%:
the blocked filter for n = 100,000 is 128 KiB, in cache. Half the queried keys are present.

Rows:
  key in set        the same loop on a Python set of the inserted keys: the speed `in` is held to
  key in f          a Python loop `for k in keys: if k in f` over short str keys (10-16 characters)
  contains_many     one call on a list of bytes keys, and on a numpy uint64 array (int keys)
  pure Python       a minimal Bloom filter written here (bytearray bits, blake2b, double hashing: what
                    pure-Python packages do), same keys, same loop
  ctypes            the same library through ctypes: one bk_blocked_contains call per key, as a new user
                    would write it; and one bk_blocked_contains_many call on ctypes arrays built from the
                    list (an informed user), the array building included
"""
import argparse
import ctypes
import hashlib
import math
import os
import sys
import time

import bloomkit

try:
    import numpy as np
except ImportError:  # the numpy rows are left out
    np = None

HERE = os.path.dirname(os.path.abspath(__file__))


class PurePythonBloom:
    """A minimal pure-Python Bloom filter: m bits in a bytearray, k probes by double hashing of a
    128-bit blake2b digest."""

    def __init__(self, capacity, error_rate):
        self.m = int(math.ceil(-capacity * math.log(error_rate) / math.log(2) ** 2))
        self.k = max(1, int(round(self.m / capacity * math.log(2))))
        self.bits = bytearray((self.m + 7) // 8)

    def _probes(self, key):
        if isinstance(key, str):
            key = key.encode()
        d = hashlib.blake2b(key, digest_size=16).digest()
        h1 = int.from_bytes(d[:8], "little")
        h2 = int.from_bytes(d[8:], "little") | 1
        m = self.m
        return [(h1 + i * h2) % m for i in range(self.k)]

    def add(self, key):
        for p in self._probes(key):
            self.bits[p >> 3] |= 1 << (p & 7)

    def __contains__(self, key):
        bits = self.bits
        return all(bits[p >> 3] & (1 << (p & 7)) for p in self._probes(key))


def loop_in(f, keys):
    def run():
        hits = 0
        for k in keys:
            if k in f:
                hits += 1
        return hits
    return run


def ctypes_lib(path):
    lib = ctypes.CDLL(path)
    lib.bk_blocked_new.argtypes = [ctypes.c_uint64, ctypes.c_double, ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)]
    lib.bk_blocked_new.restype = ctypes.c_int
    lib.bk_blocked_add.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.bk_blocked_add.restype = ctypes.c_int
    lib.bk_blocked_contains.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t]
    lib.bk_blocked_contains.restype = ctypes.c_bool
    lib.bk_blocked_contains_many.argtypes = [ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p),
                                             ctypes.POINTER(ctypes.c_size_t), ctypes.c_size_t,
                                             ctypes.POINTER(ctypes.c_uint8), ctypes.POINTER(ctypes.c_size_t)]
    lib.bk_blocked_contains_many.restype = ctypes.c_int
    lib.bk_blocked_free.argtypes = [ctypes.c_void_p]
    return lib


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-n", type=int, default=100_000, help="keys inserted (and the filters' capacity)")
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--lib", default=os.path.join(os.path.dirname(HERE), "build", "libbloomkit.so"))
    a = ap.parse_args()
    n = a.n
    inserted = ["user:%08d" % i for i in range(n)]                     # 13 characters
    queries = inserted[: n // 2] + ["item:%09d" % i for i in range(n // 2)]
    qbytes = [k.encode() for k in queries]
    pure_queries = queries[:: max(1, len(queries) // 20000)]         # the slow one gets fewer keys

    blocked = bloomkit.Blocked(n, 0.01)
    blocked.add_many(inserted)
    bloom = bloomkit.Bloom(n, 0.01)
    bloom.add_many(inserted)
    pure = PurePythonBloom(n, 0.01)
    for k in inserted:
        pure.add(k)

    cases = []

    def row(name, fn, count):
        cases.append((name, fn, count))

    exact = set(inserted)
    row("key in set (str keys, Python loop)", loop_in(exact, queries), len(queries))
    row("key in f, Blocked (str keys, Python loop)", loop_in(blocked, queries), len(queries))
    row("key in f, Bloom (str keys, Python loop)", loop_in(bloom, queries), len(queries))
    row("contains_many, Blocked, list of bytes", lambda: blocked.contains_many(qbytes), len(qbytes))
    row("contains_many, Blocked, list of str", lambda: blocked.contains_many(queries), len(queries))
    if np is not None:
        ints = np.arange(n, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
        iblocked = bloomkit.Blocked(n, 0.01)
        iblocked.add_many(ints[: n // 2])
        out = np.empty(n, dtype=bool)
        row("contains_many, Blocked, numpy uint64 array", lambda: iblocked.contains_many(ints, out=out), n)
        row("contains_many, Bloom, numpy uint64 array",
            lambda: bloom.contains_many(ints, out=out), n)

    have_ctypes = os.path.exists(a.lib)
    if have_ctypes:
        lib = ctypes_lib(a.lib)
        h = ctypes.c_void_p()
        if lib.bk_blocked_new(n, 0.01, None, ctypes.byref(h)) != 0:
            sys.exit("bk_blocked_new failed")
        for k in inserted:
            b = k.encode()
            lib.bk_blocked_add(h, b, len(b))
        contains = lib.bk_blocked_contains

        def ctypes_loop():
            hits = 0
            for k in queries:
                b = k.encode()
                if contains(h, b, len(b)):
                    hits += 1
            return hits

        row("ctypes, bk_blocked_contains per key (str keys)", ctypes_loop, len(queries))

        def ctypes_batch():
            m = len(qbytes)
            keys = (ctypes.c_char_p * m)(*qbytes)
            lens = (ctypes.c_size_t * m)(*map(len, qbytes))
            res = (ctypes.c_uint8 * m)()
            hits = ctypes.c_size_t(0)
            lib.bk_blocked_contains_many(h, keys, lens, m, res, ctypes.byref(hits))
            return hits.value

        row("ctypes, bk_blocked_contains_many (arrays built)", ctypes_batch, len(qbytes))
        assert ctypes_loop() == blocked.contains_many(queries).count(1)

    # The pure-Python filter last in each round: its run churns the allocator and the caches, which
    # otherwise shows in whichever case follows it.
    row("pure-Python Bloom, key in f (Python loop)", loop_in(pure, pure_queries), len(pure_queries))

    # Round robin: every case once per round, the best time of each kept, so a burst of load on the
    # machine hits all of them alike.
    times = {name: float("inf") for name, _, _ in cases}
    for _ in range(a.repeat):
        for name, fn, _ in cases:
            t0 = time.perf_counter()
            fn()
            times[name] = min(times[name], time.perf_counter() - t0)
    rows = [(name, count / times[name]) for name, _, count in cases]
    if have_ctypes:
        lib.bk_blocked_free(h)

    with open("/proc/loadavg") as fh:
        load = fh.read().split()[:3]
    print(f"bloomkit Python package, n = {n:,} keys at 1% (blocked filter {blocked.memory_bytes // 1024} KiB), "
          f"best of {a.repeat}; load average {' '.join(load)}")
    print(f"{'operation':52s} {'keys/s':>14s}")
    for name, rate in rows:
        print(f"{name:52s} {rate:14,.0f}")
    d = dict(rows)
    pure_rate = d["pure-Python Bloom, key in f (Python loop)"]
    print()
    print("ratios (same run):")
    set_rate = d["key in set (str keys, Python loop)"]
    for name in [r[0] for r in rows if r[0].startswith(("key in f", "contains_many"))]:
        line = f"  {name:50s} {d[name] / pure_rate:8.1f}x pure Python"
        if name.startswith("key in f"):
            line += f"  time {set_rate / d[name]:5.2f}x a set's"
        if have_ctypes:
            line += f"  {d[name] / d['ctypes, bk_blocked_contains per key (str keys)']:7.1f}x ctypes per key"
            line += f"  {d[name] / d['ctypes, bk_blocked_contains_many (arrays built)']:6.1f}x ctypes batch"
        print(line)


if __name__ == "__main__":
    main()
