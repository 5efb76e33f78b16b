#!/usr/bin/python3
"""Memory per key of many small filters, next to their false-positive rates. Figures only.

Three workloads of KEYS keys each (default 10,000), each in a fresh redis-server with bloomkit.so:
  BF.ADD k:i item            a Bloom filter created by its first add (INITIAL_SIZE 100, ERROR_RATE 1%)
  CF.RESERVE k:i 100         an empty cuckoo filter reserved for 100 items
  CF.ADD k:i item            a cuckoo filter created by its first add (capacity 1024)
Per key: (used_memory after - before) / KEYS, which includes Redis's own key overhead, and the mean
MEMORY USAGE. FPR: the design bound of each filter, and the share of KEYS absent items (one per key)
answered present.

Then the same three kinds of key loaded with ITEMS items each (default 100: the capacity of the first two;
BF.MADD, CF.RESERVE + CF.INSERT, CF.INSERT), each key queried for ITEMS absent items (BF.MEXISTS,
CF.MEXISTS): bytes per key and the measured FPR over KEYS x ITEMS absent items, beside the FPR RedisBloom's
sizing gives the same commands (its first Bloom sub-filter: a classic filter for 100 items at ERROR_RATE x
0.5, m = n ln(1/p') / ln(2)^2 bits, k = ceil(ln(2) m / n); its cuckoo filter: 2 slots of 8-bit
fingerprints per bucket, buckets rounded up to a power of two: 1 - (1 - 1/255)^(2 b load)). Items and
absent items are fixed strings: the figures repeat run to run. A plain string key (SET k:i x) is measured
the same way: used_memory per key minus MEMORY USAGE is Redis's own key overhead MEMORY USAGE leaves out,
the same for a filter key when MEMORY USAGE is honest.

usage: bench/redis_keymem.py [path/to/bloomkit.so]     env: KEYS=10000 ITEMS=100
"""
import math
import os
import socket
import subprocess
import sys
import tempfile
import time

import redis

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODULE = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "redis", "bloomkit.so"))
KEYS = int(os.environ.get("KEYS", "10000"))
ITEMS = int(os.environ.get("ITEMS", "100"))


def start():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    d = tempfile.mkdtemp(prefix="bk-keymem-")
    p = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--dir", d, "--save", "",
                          "--appendonly", "no", "--logfile", os.path.join(d, "log"), "--loadmodule", MODULE])
    c = redis.Redis(port=port)
    for _ in range(100):
        try:
            c.ping()
            return p, c
        except redis.ConnectionError:
            time.sleep(0.05)
    raise RuntimeError("redis-server did not start")


def fill(c, make):
    """make(pipe, i) for every key i: used_memory per key and the mean MEMORY USAGE of every tenth key."""
    before = c.info("memory")["used_memory"]
    pipe = c.pipeline(transaction=False)
    for i in range(KEYS):
        make(pipe, i)
        if i % 500 == 499:
            pipe.execute()
    pipe.execute()
    after = c.info("memory")["used_memory"]
    pipe = c.pipeline(transaction=False)
    for i in range(0, KEYS, 10):
        pipe.memory_usage(f"k:{i}")
    usage = pipe.execute()
    return (after - before) / KEYS, sum(usage) / len(usage)


def positives(c, query):
    """query(pipe, i) for every key i: how many answers (single or lists of them) said present."""
    fp = 0
    pipe = c.pipeline(transaction=False)
    for i in range(KEYS):
        query(pipe, i)
        if i % 500 == 499:
            fp += sum(sum(1 for x in r if x) if isinstance(r, list) else bool(r) for r in pipe.execute())
    return fp + sum(sum(1 for x in r if x) if isinstance(r, list) else bool(r) for r in pipe.execute())


def with_server(work):
    p, c = start()
    try:
        return work(c)
    finally:
        c.shutdown(nosave=True)
        p.wait()


def run(name, make, query, bound):
    def work(c):
        used, usage = fill(c, lambda pipe, i: make(pipe, f"k:{i}", f"item:{i}"))
        fp = positives(c, lambda pipe, i: query(pipe, f"k:{i}", f"absent:{i}"))
        print(f"  {name:<22} {used:10.0f} {usage:12.0f} {bound:>14} {fp / KEYS:12.4%}")
    with_server(work)


def run_loaded(name, make, query, rb_fpr):
    """KEYS keys of ITEMS items each; ITEMS absent items queried per key."""
    def work(c):
        used, usage = fill(c, lambda pipe, i: make(pipe, f"k:{i}", [f"item:{i}:{j}" for j in range(ITEMS)]))
        fp = positives(c, lambda pipe, i: query(pipe, f"k:{i}", [f"absent:{i}:{j}" for j in range(ITEMS)]))
        print(f"  {name:<30} {used:10.0f} {usage:12.0f} {fp / (KEYS * ITEMS):12.4%} {rb_fpr:>14.4%}")
    with_server(work)


def string_overhead():
    """used_memory per key minus MEMORY USAGE of KEYS plain string keys: Redis's own overhead."""
    def work(c):
        used, usage = fill(c, lambda pipe, i: pipe.set(f"k:{i}", "x"))
        return used - usage
    return with_server(work)


def rb_bloom_fpr(n, p):
    bits = math.ceil(n * math.log(1 / p) / math.log(2) ** 2)
    k = math.ceil(math.log(2) * bits / n)
    return (1 - math.exp(-k * n / bits)) ** k


def rb_cuckoo_fpr(n, capacity, b=2):
    buckets = 1 << max(0, math.ceil(math.log2(max(1, capacity // b))))
    return 1 - (1 - 1 / 255) ** (2 * b * n / (buckets * b))


print(f"bloomkit.so, {KEYS} keys per workload; load {' '.join(open('/proc/loadavg').read().split()[:3])}")
print(f"  {'workload':<22} {'B/key used':>10} {'MEMORY USAGE':>12} {'FPR bound':>14} {'FPR measured':>12}")
run("BF.ADD (1 item)", lambda p, k, i: p.execute_command("BF.ADD", k, i),
    lambda p, k, i: p.execute_command("BF.EXISTS", k, i), "1% (ERROR_RATE)")
run("CF.RESERVE 100 (empty)", lambda p, k, i: p.execute_command("CF.RESERVE", k, 100),
    lambda p, k, i: p.execute_command("CF.EXISTS", k, i), "1.6% full (b=2)")
run("CF.ADD (1 item)", lambda p, k, i: p.execute_command("CF.ADD", k, i),
    lambda p, k, i: p.execute_command("CF.EXISTS", k, i), "1.6% full (b=2)")
print("RedisBloom 2.4 on the same three workloads (its CF.ADD filters: capacity 1024): 343, 277 and 1,173 "
      "bytes per key.")
print(f"Redis's own overhead of a plain string key (used_memory per key - MEMORY USAGE): {string_overhead():.0f} B")
print()
print(f"loaded: {ITEMS} items per key, {ITEMS} absent items queried per key; "
      f"load {' '.join(open('/proc/loadavg').read().split()[:3])}")
print(f"  {'workload':<30} {'B/key used':>10} {'MEMORY USAGE':>12} {'FPR measured':>12} {'RedisBloom FPR':>14}")
run_loaded(f"BF.MADD ({ITEMS} items)", lambda p, k, it: p.execute_command("BF.MADD", k, *it),
           lambda p, k, it: p.execute_command("BF.MEXISTS", k, *it), rb_bloom_fpr(min(ITEMS, 100), 0.005))
run_loaded(f"CF.RESERVE 100 + {ITEMS} items",
           lambda p, k, it: (p.execute_command("CF.RESERVE", k, 100), p.execute_command("CF.INSERT", k, "ITEMS", *it)),
           lambda p, k, it: p.execute_command("CF.MEXISTS", k, *it), rb_cuckoo_fpr(ITEMS, 100))
run_loaded(f"CF.INSERT ({ITEMS} items)", lambda p, k, it: p.execute_command("CF.INSERT", k, "ITEMS", *it),
           lambda p, k, it: p.execute_command("CF.MEXISTS", k, *it), rb_cuckoo_fpr(ITEMS, 1024))
