#!/usr/bin/python3
"""Memory per key of many small filters, next to their false-positive rates. Figures only.

Three workloads of KEYS keys each (default 10,000), each in a fresh redis-server with bloomkit.so:
  BF.ADD k:i item            a Bloom filter created by its first add (INITIAL_SIZE 100, ERROR_RATE 1%)
  CF.RESERVE k:i 100         an empty cuckoo filter reserved for 100 items
  CF.ADD k:i item            a cuckoo filter created by its first add (capacity 1016)
Per key: (used_memory after - before) / KEYS, which includes Redis's own key overhead, and the mean
MEMORY USAGE. FPR: the design bound of each filter, and the share of KEYS absent items (one per key)
answered present.

usage: bench/redis_keymem.py [path/to/bloomkit.so]     env: KEYS=10000
"""
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


def run(name, make, query, bound):
    p, c = start()
    try:
        before = c.info("memory")["used_memory"]
        pipe = c.pipeline(transaction=False)
        for i in range(KEYS):
            make(pipe, f"k:{i}", f"item:{i}")
        pipe.execute()
        after = c.info("memory")["used_memory"]
        pipe = c.pipeline(transaction=False)
        for i in range(0, KEYS, 10):
            pipe.memory_usage(f"k:{i}")
        usage = pipe.execute()
        pipe = c.pipeline(transaction=False)
        for i in range(KEYS):
            query(pipe, f"k:{i}", f"absent:{i}")
        fp = sum(1 for x in pipe.execute() if x)
        print(f"  {name:<22} {(after - before) / KEYS:10.0f} {sum(usage) / len(usage):12.0f} "
              f"{bound:>14} {fp / KEYS:12.4%}")
    finally:
        c.shutdown(nosave=True)
        p.wait()


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
