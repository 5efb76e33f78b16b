#!/usr/bin/python3
"""Peak memory of loading one large filter into redis-server with bloomkit.so. Figures only.

A BF key (BF.RESERVE k 0.01 CAPACITY, ITEMS added) and a CF key (CF.RESERVE c CAPACITY) are loaded
three ways, each into a server whose peak resident size (VmHWM of /proc/<pid>/status) is reset just
before (/proc/<pid>/clear_refs "5"):
  restart     a fresh server started on the RDB file that holds the key
  reload      DEBUG RELOAD on a server holding the key (the key is freed, then loaded back)
  loadchunk   SCANDUMP on the first server, LOADCHUNK of every chunk into a fresh server
Printed: the key's size (MEMORY USAGE), the resident size of an empty server with the module, the
peak, and (peak - empty server) / key size: 1.0x means the load needed nothing beyond the filter.
DEBUG RELOAD holds the key before it reloads it, so its peak is at least the key.

usage: bench/redis_loadpeak.py [path/to/bloomkit.so ...]     env: CAPACITY=160000000 ITEMS=100000
Several modules (e.g. an older build) are measured one after another, same filters, same run.
"""
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

import redis

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MODULES = [os.path.abspath(m) for m in sys.argv[1:]] or [os.path.join(ROOT, "build", "redis", "bloomkit.so")]
CAPACITY = int(os.environ.get("CAPACITY", "160000000"))
ITEMS = int(os.environ.get("ITEMS", "100000"))


def status(pid, field):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1]) * 1024
    raise KeyError(field)


def reset_peak(pid):
    with open(f"/proc/{pid}/clear_refs", "w") as f:
        f.write("5")


class Server:
    def __init__(self, module, d, dbfile="dump.rdb"):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.p = subprocess.Popen(["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--dir", d,
                                   "--dbfilename", dbfile, "--save", "", "--appendonly", "no",
                                   "--enable-debug-command", "yes", "--logfile", os.path.join(d, "log"),
                                   "--loadmodule", module])
        self.c = redis.Redis(port=self.port, socket_timeout=600)
        for _ in range(1200):
            try:
                if self.c.info("persistence")["loading"] == 0:
                    return
            except (redis.ConnectionError, redis.BusyLoadingError):
                pass
            time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    def stop(self):
        self.c.shutdown(nosave=True)
        self.p.wait()


def fill(c):
    c.execute_command("BF.RESERVE", "bf", 0.01, CAPACITY)
    c.execute_command("CF.RESERVE", "cf", CAPACITY)
    pipe = c.pipeline(transaction=False)
    for i in range(ITEMS):
        pipe.execute_command("BF.ADD", "bf", f"item:{i}")
        pipe.execute_command("CF.ADD", "cf", f"item:{i}")
        if i % 10000 == 9999:
            pipe.execute()
    pipe.execute()


def line(how, key, size, base, peak):
    print(f"  {how:<10} {key:<3} {size / 1e6:9.1f} MB {base / 1e6:9.1f} MB {peak / 1e6:9.1f} MB "
          f"{(peak - base) / size:7.2f}x")


def measure(module):
    d = tempfile.mkdtemp(prefix="bk-loadpeak-")
    try:
        print(f"{module}  (load {' '.join(open('/proc/loadavg').read().split()[:3])})")
        print(f"  {'load':<10} {'key':<3} {'key size':>12} {'empty RSS':>12} {'peak RSS':>12} {'x size':>8}")
        src = Server(module, d)
        fill(src.c)
        sizes = {k: src.c.memory_usage(k) for k in ("bf", "cf")}
        src.c.save()
        for key in ("bf", "cf"):
            # one key per RDB file, so that each figure is one filter's
            other = "cf" if key == "bf" else "bf"
            dump = src.c.dump(other)
            src.c.delete(other)
            src.c.save()
            shutil.copy(os.path.join(d, "dump.rdb"), os.path.join(d, f"{key}.rdb"))
            src.c.restore(other, 0, dump)
            # restart
            e = Server(module, d, "none.rdb")
            base = status(e.p.pid, "VmRSS")  # an empty server's
            e.stop()
            s = Server(module, d, f"{key}.rdb")
            assert s.c.exists(key) and not s.c.exists(other)
            line("restart", key, sizes[key], base, status(s.p.pid, "VmHWM"))
            # DEBUG RELOAD: the key is freed, then loaded back
            reset_peak(s.p.pid)
            s.c.execute_command("DEBUG", "RELOAD")
            line("reload", key, sizes[key], base, status(s.p.pid, "VmHWM"))
            s.stop()
            # LOADCHUNK into a fresh server
            t = Server(module, d, "none.rdb")
            reset_peak(t.p.pid)
            it = 0
            cmd = "BF" if key == "bf" else "CF"
            while True:
                it, chunk = src.c.execute_command(f"{cmd}.SCANDUMP", key, it)
                if it == 0:
                    break
                t.c.execute_command(f"{cmd}.LOADCHUNK", key, it, chunk)
                chunk = None
            line("loadchunk", key, sizes[key], base, status(t.p.pid, "VmHWM"))
            t.stop()
        src.stop()
    finally:
        shutil.rmtree(d, ignore_errors=True)


print(f"BF.RESERVE bf 0.01 {CAPACITY} and CF.RESERVE cf {CAPACITY}, {ITEMS} items added to each; "
      "(peak: VmHWM of the loading server)")
for m in MODULES:
    measure(m)
