"""Writes files with pybloom_live's own BloomFilter.tofile and ScalableBloomFilter.tofile, and the answers
pybloom_live gives for a fixed set of keys (added and not), for bloomkit.compat's reader to match:
    PYTHONPATH=<pybloom_live source>:<bitarray and xxhash> /usr/bin/python3 make_pybloom_live.py OUT_DIR
OUT_DIR/answers.json lists each file, its class and [key, answer] pairs; a key is ["s", text],
["b", hex bytes] or ["i", integer], so str, bytes and int keys are all covered."""
import json
import os
import random
import sys

import pybloom_live
from pybloom_live import BloomFilter, ScalableBloomFilter

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
rnd = random.Random(20240601)


def key(i, salt):
    kind = i % 3
    if kind == 0:
        return ["s", "%s-key-%d-é" % (salt, i)]
    if kind == 1:
        return ["b", bytes(rnd.randrange(256) for _ in range(rnd.randrange(0, 24))).hex()]
    return ["i", rnd.randrange(-2 ** 40, 2 ** 40)]


def py(k):
    return bytes.fromhex(k[1]) if k[0] == "b" else k[1]


# (name, maker, keys added); the BloomFilter shapes cover each hash pybloom_live picks
shapes = [
    ("bf-1000-0.01", lambda: BloomFilter(1000, 0.01), 1000),        # 7 slices of 16-bit: 128-bit hash
    ("bf-2000-0.001", lambda: BloomFilter(2000, 0.001), 1500),      # 10 slices: SHA-1
    ("bf-300-1e-4", lambda: BloomFilter(300, 1e-4), 300),           # 14 slices: SHA-256
    ("bf-300-1e-6", lambda: BloomFilter(300, 1e-6), 200),           # 20 slices: SHA-384
    ("bf-200-1e-8", lambda: BloomFilter(200, 1e-8), 200),           # 27 slices: SHA-512
    ("bf-100000-0.1", lambda: BloomFilter(100000, 0.1), 20000),     # 4 slices of 32-bit: 128-bit hash
    ("bf-empty", lambda: BloomFilter(50, 0.05), 0),
    ("sbf-small", lambda: ScalableBloomFilter(100, 0.001, ScalableBloomFilter.SMALL_SET_GROWTH), 2000),
    ("sbf-large", lambda: ScalableBloomFilter(50, 0.01, ScalableBloomFilter.LARGE_SET_GROWTH), 3000),
    ("sbf-empty", lambda: ScalableBloomFilter(), 0),
]
files = []
for name, make, n in shapes:
    f = make()
    added = [key(i, name) for i in range(n)]
    for k in added:
        f.add(py(k))
    with open(os.path.join(out, name + ".bin"), "wb") as fp:
        f.tofile(fp)
    queries = rnd.sample(added, min(len(added), 200)) + [key(i, "absent-" + name) for i in range(1000)]
    files.append({"file": name + ".bin", "class": type(f).__name__, "count": len(f),
                  "queries": [[k, py(k) in f] for k in queries]})
json.dump({"made_by": "pybloom_live " + getattr(pybloom_live, "__version__", sys.argv[2] if len(sys.argv) > 2 else ""),
           "files": files}, open(os.path.join(out, "answers.json"), "w"), separators=(",", ":"))
