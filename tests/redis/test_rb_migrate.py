"""Migrating RedisBloom 2.x data: RDB files, DUMP payloads, SCANDUMP chunks and a replica of a
RedisBloom master. The data is made by rbformat.py, a from-spec model of RedisBloom's filters, which is
first checked against figures RedisBloom's own test-suite records. A migrated key must answer exactly as
the model (that is, as RedisBloom) for every item, inserted or not, before and after further adds, and
survive SAVE/restart, DEBUG RELOAD, AOF rewrite and SCANDUMP/LOADCHUNK.
"""
import os
import random
import socket
import threading
import time

import pytest
import redis

import rbformat as rb


def items(prefix, n):
    return [f"{prefix}:{i}".encode() for i in range(n)]


def probes(n, seed):
    rng = random.Random(seed)
    return [b"absent:%d" % rng.getrandbits(48) for _ in range(n)]


def mexists(r, cmd, key, xs, step=2000):
    out = []
    for i in range(0, len(xs), step):
        out += [int(v) for v in r.execute_command(cmd, key, *xs[i:i + step])]
    return out


def info(r, cmd, key):
    v = r.execute_command(cmd, key)
    return dict(zip([x.decode() for x in v[0::2]], v[1::2]))


# ---------------------------------------------------------------- the model against RedisBloom's figures


def test_model_reproduces_redisbloom_figures():
    # Figures recorded by RedisBloom 2.4's own flow tests (BF.DEBUG / CF.DEBUG outputs after adding the
    # items "0", "1", ...). They depend on the exact hashes, sizing and insertion order, so they pin the
    # model (and with it the fixtures below) to RedisBloom's behaviour.
    c = rb.Chain(10, 0.01)
    for i in range(100):
        c.add(str(i).encode())
    assert c.size == 99  # one false positive among 100 distinct items
    assert [(l.nbytes, l.nbits, l.hashes, l.entries, l.size) for l in c.links] == [
        (16, 128, 8, 10, 10), (32, 256, 9, 20, 20), (72, 576, 10, 40, 40), (160, 1280, 11, 80, 29)]
    c = rb.Chain(100, 0.001)
    for i in range(4000):
        c.add(str(i).encode())
    assert c.size == 3997
    assert [(l.nbytes, l.hashes, l.entries, l.size) for l in c.links][-1] == (9216, 16, 3200, 897)
    for growth, links in ((1, 23), (2, 5), (4, 4)):
        c = rb.Chain(4, 0.01, growth=growth)
        for i in range(100):
            c.add(str(i).encode())
        assert len(c.links) == links
    l0 = rb.Chain(50000, 0.001).links[0]
    assert (l0.nbytes, l0.nbits, l0.hashes) == (98880, 791040, 11)
    for cap, bs, it, ex, buckets, tables in ((64, 1, 20, 1, 64, 18), (64, 2, 20, 1, 32, 17), (256, 4, 500, 1, 64, 4),
                                             (64, 2, 20, 2, 32, 5), (64, 2, 500, 4, 32, 3)):
        cf = rb.Cuckoo(cap, bs, it, ex)
        for i in range(1000):
            cf.add(str(i).encode())
        assert (cf.nbuckets, len(cf.tables), cf.items) == (buckets, tables, 1000)
    assert rb.crc64(b"123456789") == 0xE9C6D914C4B8D9CA


def test_module_reproduces_redisbloom_figures(r):
    # The module's own RedisBloom-layout code, given empty filters (header-only SCANDUMPs) and the same
    # adds as RedisBloom's tests: the same false positive, links and tables.
    r.execute_command("BF.LOADCHUNK", "b1", 1, rb.Chain(10, 0.01).header())
    added = [r.execute_command("BF.ADD", "b1", str(i)) for i in range(100)]
    assert sum(added) == 99 and r.execute_command("BF.CARD", "b1") == 99
    assert info(r, "BF.INFO", "b1")["Number of filters"] == 4
    assert info(r, "BF.INFO", "b1")["Capacity"] == 150
    r.execute_command("BF.LOADCHUNK", "b2", 1, rb.Chain(100, 0.001).header())
    r.execute_command("BF.MADD", "b2", *[str(i) for i in range(4000)])
    assert r.execute_command("BF.CARD", "b2") == 3997
    assert info(r, "BF.INFO", "b2")["Number of filters"] == 6
    for growth, links in ((1, 23), (2, 5), (4, 4)):
        r.execute_command("BF.LOADCHUNK", f"e{growth}", 1, rb.Chain(4, 0.01, growth=growth).header())
        for i in range(100):
            r.execute_command("BF.ADD", f"e{growth}", str(i))
        assert r.execute_command("BF.INFO", f"e{growth}", "FILTERS") == [links]
        assert r.execute_command("BF.INFO", f"e{growth}", "EXPANSION") == [growth]
    for cap, bs, it, ex, tables in ((64, 1, 20, 1, 18), (64, 2, 20, 1, 17), (256, 4, 500, 1, 4), (64, 2, 20, 2, 5),
                                    (64, 2, 500, 4, 3)):
        key = f"c{cap}-{bs}-{it}-{ex}"
        r.execute_command("CF.LOADCHUNK", key, 1, rb.Cuckoo(cap, bs, it, ex).header())
        for i in range(1000):
            assert r.execute_command("CF.ADD", key, str(i)) == 1
        assert mexists(r, "CF.MEXISTS", key, [str(i).encode() for i in range(1000)]) == [1] * 1000
        got = info(r, "CF.INFO", key)
        assert (got["Number of filters"], got["Number of items inserted"], got["Bucket size"]) == (tables, 1000, bs)
    assert r.type("b1") == b"MBbloom--" and r.type("c64-2-20-1") == b"MBbloomCF"


# ---------------------------------------------------------------- fixtures


def bloom_fixtures():
    """(key, model, items added, RDB encoding version, FPR bound for 20,000 absent probes)."""
    out = []
    c = rb.Chain(1000, 0.01)  # BF.RESERVE k 0.01 1000, grown to 3 links
    xs = items("scaling", 5000)
    for x in xs:
        c.add(x)
    out.append((b"bf:scaling", c, xs, 4, 0.01))
    c = rb.Chain(2000, 0.001, options=rb.FORCE64 | rb.NOROUND | rb.NO_SCALING, growth=2)
    xs = items("nonscaling", 2000)
    for x in xs:
        c.add(x)
    out.append((b"bf:nonscaling", c, xs, 4, 0.002))
    c = rb.Chain(1000, 0.01, options=0, growth=2)  # 32-bit hashes, power-of-two links (older filters)
    xs = items("legacy32", 3000)
    for x in xs:
        c.add(x)
    out.append((b"bf:legacy32", c, xs, 2, 0.01))
    c = rb.Chain(500, 0.01, options=0, growth=2)  # encoding 1: no options, no growth
    xs = items("enc1", 800)
    for x in xs:
        c.add(x)
    out.append((b"bf:enc1", c, xs, 1, 0.01))
    return out


def cuckoo_fixtures():
    out = []
    cf = rb.Cuckoo(1000)  # CF.RESERVE k 1000: bucket size 2, expansion 1
    xs = items("cf", 3000)
    for x in xs:
        cf.add(x)
    for x in xs[:50]:  # repeated items: stored again
        cf.add(x)
    out.append((b"cf:default", cf, xs, 4, None))
    cf = rb.Cuckoo(4096, bucket_size=4, max_iterations=500, expansion=2)
    xs = items("cf4", 10000)
    for x in xs:
        cf.add(x)
    out.append((b"cf:bs4", cf, xs, 4, None))
    cf = rb.Cuckoo(1024)  # encoding 2 (before expansion was stored): bucket size 2, 20 kicks, expansion 1
    xs = items("cfold", 1500)
    for x in xs:
        cf.add(x)
    out.append((b"cf:old", cf, xs, 2, None))
    return out


def write_rdb(path, blooms, cuckoos):
    entries = [(k, rb.bloom_value(m, enc)) for k, m, _, enc, _ in blooms]
    entries += [(k, rb.cuckoo_value(m, enc)) for k, m, _, enc, _ in cuckoos]
    with open(path, "wb") as f:
        f.write(rb.rdb_file(entries))


_expected = {}


def expected(model, absent):
    """The model's answers for the probes, computed once per state of the model."""
    state = (id(model), id(absent), model.size if isinstance(model, rb.Chain) else (model.items, model.deletes))
    if state not in _expected:  # holding model and probes, so their ids stay theirs
        _expected[state] = (model, absent, [int(model.contains(p)) for p in absent])
    return _expected[state][2]


def check_bloom(r, key, model, xs, bound, absent):
    assert r.type(key) == b"MBbloom--"
    assert mexists(r, "BF.MEXISTS", key, xs) == [1] * len(xs)
    got = mexists(r, "BF.MEXISTS", key, absent)
    assert got == expected(model, absent)
    fpr = sum(got) / len(absent)
    assert fpr <= bound, (key, fpr)
    inf = info(r, "BF.INFO", key)
    assert inf["Capacity"] == model.capacity()
    assert inf["Number of filters"] == len(model.links)
    assert inf["Number of items inserted"] == model.size
    assert inf["Expansion rate"] == (None if model.options & rb.NO_SCALING else model.growth)
    assert inf["Size"] >= sum(l.nbytes for l in model.links)
    assert r.execute_command("BF.CARD", key) == model.size
    return fpr


def check_cuckoo(r, key, model, xs, bound, absent):
    assert r.type(key) == b"MBbloomCF"
    assert mexists(r, "CF.MEXISTS", key, xs) == [1] * len(xs)
    got = mexists(r, "CF.MEXISTS", key, absent)
    assert got == expected(model, absent)
    fpr = sum(got) / len(absent)
    # an absent item matches an occupied slot of its two buckets with chance 1/255 per slot: the
    # expected FPR is the sum over tables of 2 * (occupied slots / buckets) / 255
    fpr_expected = sum(2 * sum(1 for v in t if v) / nb for nb, t in model.tables) / 255
    assert fpr <= fpr_expected * 1.15 + 0.003, (key, fpr, fpr_expected)
    for x in xs[:100] + absent[:100]:
        assert r.execute_command("CF.COUNT", key, x) == model.count(x)
    inf = info(r, "CF.INFO", key)
    assert (inf["Number of buckets"], inf["Number of filters"], inf["Number of items inserted"],
            inf["Number of items deleted"], inf["Bucket size"], inf["Expansion rate"], inf["Max iterations"]) == \
        (model.nbuckets, len(model.tables), model.items, model.deletes, model.bucket_size, model.expansion,
         model.max_iterations)
    assert inf["Size"] >= sum(len(t) for _, t in model.tables)
    return fpr


def check_all(r, blooms, cuckoos, absent):
    fprs = {}
    for k, m, xs, _, bound in blooms:
        fprs[k] = check_bloom(r, k, m, xs, bound, absent)
    for k, m, xs, _, bound in cuckoos:
        fprs[k] = check_cuckoo(r, k, m, xs, bound, absent)
    return fprs


def add_more(r, blooms, cuckoos):
    """Further adds on the server and on the model: the same replies (RedisBloom's hashing is kept)."""
    for k, m, xs, _, _ in blooms:
        new = items(k.decode() + ":more", 1500)
        if m.options & rb.NO_SCALING:
            with pytest.raises(redis.ResponseError, match="non scaling filter is full"):
                r.execute_command("BF.ADD", k, b"one more")
            continue
        got = [int(v) for v in r.execute_command("BF.MADD", k, *new)]
        assert got == [int(m.add(x)) for x in new]
        xs.extend(new)
    for k, m, xs, _, _ in cuckoos:
        new = items(k.decode() + ":more", 1500)
        got = [int(v) for v in r.execute_command("CF.INSERT", k, "ITEMS", *new)]
        assert got == [int(m.add(x)) for x in new]
        got = [int(r.execute_command("CF.ADDNX", k, x)) for x in new[:20] + [b"nx-new"]]
        assert got == [int(m.add(x, nx=True)) for x in new[:20] + [b"nx-new"]]
        xs.extend(new)
        xs.append(b"nx-new")


# ---------------------------------------------------------------- RDB


def test_rdb_from_redisbloom_loads_and_round_trips(servers):
    blooms, cuckoos = bloom_fixtures(), cuckoo_fixtures()
    s = servers(start=False, extra=["--rdbcompression", "no"])
    write_rdb(os.path.join(s.dir, "dump.rdb"), blooms, cuckoos)
    s.start()
    r = s.client()
    absent = probes(20000, seed=1)
    fprs = check_all(r, blooms, cuckoos, absent)
    print("FPR on 20,000 absent items after RDB load:", {k.decode(): v for k, v in fprs.items()})

    # other keys keep working beside migrated ones; families do not mix
    assert r.execute_command("BF.ADD", "native", "x") == 1 and r.execute_command("BF.EXISTS", "native", "x") == 1
    assert r.execute_command("CF.ADD", "nativecf", "x") == 1 and r.type("native") == b"bloomkitB"
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        r.execute_command("CF.EXISTS", "bf:scaling", "x")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        r.execute_command("BF.ADD", "cf:default", "x")
    with pytest.raises(redis.ResponseError, match="item exists"):
        r.execute_command("BF.RESERVE", "bf:scaling", 0.01, 100)
    with pytest.raises(redis.ResponseError, match="item exists"):
        r.execute_command("CF.RESERVE", "cf:default", 100)

    add_more(r, blooms, cuckoos)
    check_all(r, blooms, cuckoos, absent)

    # deletes: one copy of an item goes, every other item stays
    k, m, xs, _, _ = cuckoos[0]
    for x in (xs[0], xs[1], b"never added"):
        assert r.execute_command("CF.DEL", k, x) == int(m.delete(x))
        assert r.execute_command("CF.COUNT", k, x) == m.count(x)
    assert r.execute_command("CF.ADD", k, xs[0]) == int(m.add(xs[0]))
    assert r.execute_command("CF.COUNT", k, xs[0]) == m.count(xs[0]) >= 1
    check_all(r, blooms, cuckoos, absent)

    # DEBUG RELOAD, then SAVE: what is saved is RedisBloom's own encoding (version 4) of the same
    # filters, byte for byte, so RedisBloom can load it back (rollback) and replicas of either kind can
    # sync from this server.
    r.execute_command("DEBUG", "RELOAD")
    check_all(r, blooms, cuckoos, absent)
    r.save()
    with open(os.path.join(s.dir, "dump.rdb"), "rb") as f:
        saved = rb.RdbReader(f.read()).module_values()
    for key, model, _, _, _ in blooms:
        assert saved[key] == ("MBbloom--", 4, rb.bloom_value(model, 4)), key
    for key, model, _, _, _ in cuckoos:
        assert saved[key] == ("MBbloomCF", 4, rb.cuckoo_value(model, 4)), key

    s.restart(save=True)
    r = s.client()
    check_all(r, blooms, cuckoos, absent)
    assert r.dbsize() == len(blooms) + len(cuckoos) + 2


def test_damaged_redisbloom_rdb_values_are_refused(servers):
    # RESTORE of RedisBloom DUMP payloads (what MIGRATE sends): good ones load, damaged ones are refused
    # with Redis's error and the server keeps running.
    c = rb.Chain(100, 0.01)
    for x in items("d", 150):
        c.add(x)
    cf = rb.Cuckoo(256)
    for x in items("d", 300):
        cf.add(x)
    r = servers().client()
    r.execute_command("RESTORE", "b", 0, rb.dump_payload(rb.bloom_value(c)))
    r.execute_command("RESTORE", "c", 0, rb.dump_payload(rb.cuckoo_value(cf)))
    assert mexists(r, "BF.MEXISTS", "b", items("d", 150)) == [1] * 150
    assert mexists(r, "CF.MEXISTS", "c", items("d", 300)) == [1] * 300
    # DUMP of a migrated key is a RedisBloom payload again
    assert r.dump("b") == rb.dump_payload(rb.bloom_value(c))
    # COPY, MEMORY USAGE and DEBUG DIGEST-VALUE of migrated keys
    assert r.execute_command("COPY", "b", "b2") == 1 and r.execute_command("COPY", "c", "c2") == 1
    assert r.dump("b2") == r.dump("b") and r.dump("c2") == r.dump("c")
    assert r.execute_command("DEBUG", "DIGEST-VALUE", "b") == r.execute_command("DEBUG", "DIGEST-VALUE", "b2")
    assert r.execute_command("BF.ADD", "b2", "only in the copy") == 1
    assert r.execute_command("BF.EXISTS", "b", "only in the copy") == int(c.contains(b"only in the copy"))
    assert r.memory_usage("b") >= sum(l.nbytes for l in c.links)
    assert r.memory_usage("c") >= sum(len(t) for _, t in cf.tables)
    r.delete("b2", "c2")

    bad = []
    ops = c.rdb_ops()
    bad.append(rb.module_value("MBbloom--", 4, [("u", 0), ("u", 0), ("u", 4), ("u", 2)]))  # no links
    short = list(ops)
    short[-2] = ("s", short[-2][1][:-8])  # array shorter than its bits
    bad.append(rb.module_value("MBbloom--", 4, short))
    wrong_hashes = list(ops)
    wrong_hashes[6] = ("u", 99)
    bad.append(rb.module_value("MBbloom--", 4, wrong_hashes))
    bad.append(rb.module_value("MBbloom--", 5, ops))  # unknown encoding version
    cops = cf.rdb_ops()
    cshort = list(cops)
    cshort[-1] = ("s", cshort[-1][1][:-1])
    bad.append(rb.module_value("MBbloomCF", 4, cshort))
    nobuckets = list(cops)
    nobuckets[4] = ("u", 0)  # bucket size 0
    bad.append(rb.module_value("MBbloomCF", 4, nobuckets))
    for i, v in enumerate(bad):
        with pytest.raises(redis.ResponseError, match="Bad data format"):
            r.execute_command("RESTORE", f"bad{i}", 0, rb.dump_payload(v))
    assert r.ping() and r.dbsize() == 2


# ---------------------------------------------------------------- SCANDUMP / LOADCHUNK


def test_loadchunk_of_redisbloom_scandump(servers):
    blooms, cuckoos = bloom_fixtures()[:2], cuckoo_fixtures()[:2]
    s = servers()
    r = s.client()
    absent = probes(20000, seed=2)
    # as a live migration sends them: SCANDUMP's (iterator, chunk) pairs in order; small chunks here so
    # links and tables span several
    for k, m, _, _, _ in blooms:
        for it, data in m.chunks(max_chunk=1000):
            assert r.execute_command("BF.LOADCHUNK", k, it, data) == b"OK"
    for k, m, _, _, _ in cuckoos:
        for it, data in m.chunks(max_chunk=1000):
            assert r.execute_command("CF.LOADCHUNK", k, it, data) == b"OK"
    check_all(r, blooms, cuckoos, absent)

    # SCANDUMP of a migrated key is RedisBloom's SCANDUMP, chunk for chunk
    for k, m, _, _, _ in blooms + cuckoos:
        cmd = "BF.SCANDUMP" if k.startswith(b"bf") else "CF.SCANDUMP"
        it, got = 0, []
        while True:
            it, data = r.execute_command(cmd, k, it)
            if it == 0:
                break
            got.append((it, data))
        assert got == m.chunks(), k
        # ...which loads again, here on a second server
        other = servers().client()
        for it, data in got:
            other.execute_command(cmd.replace("SCANDUMP", "LOADCHUNK"), k, it, data)
        absent_small = absent[:5000]
        if k.startswith(b"bf"):
            assert mexists(other, "BF.MEXISTS", k, absent_small) == [int(m.contains(p)) for p in absent_small]
        else:
            assert mexists(other, "CF.MEXISTS", k, absent_small) == [int(m.contains(p)) for p in absent_small]

    add_more(r, blooms, cuckoos)
    check_all(r, blooms, cuckoos, absent)

    # errors: RedisBloom's texts; the log names what is wrong
    r.config_set("loglevel", "verbose")
    c = rb.Chain(100, 0.01)

    def refused(*args):
        with pytest.raises(redis.ResponseError) as e:
            r.execute_command(*args)
        return str(e.value)
    assert refused("BF.LOADCHUNK", "x", 1, c.header()[:-1]) == "received bad data"
    assert refused("BF.LOADCHUNK", "x", 500, b"\0" * 100) == "received bad data"
    r.execute_command("BF.LOADCHUNK", "x", 1, c.header())
    assert refused("BF.LOADCHUNK", "x", 1 + 2000, b"\0" * 2000) == "invalid chunk - Too big for current filter"
    assert refused("BF.LOADCHUNK", "x", 1, c.header()) == "received bad data"
    log = open(s.logfile, encoding="utf-8", errors="replace").read()
    assert "no restore in progress" in log and "already holds a filter" in log
    with pytest.raises(redis.ResponseError, match="Invalid header"):
        r.execute_command("CF.LOADCHUNK", "y", 1, rb.Cuckoo(100).header()[:-2])
    bad = bytearray(rb.Cuckoo(100).header())
    bad[8:16] = (3).to_bytes(8, "little")  # bucket count not a power of two
    with pytest.raises(redis.ResponseError, match="^Couldn't create filter!$"):
        r.execute_command("CF.LOADCHUNK", "y", 1, bytes(bad))
    assert r.exists("y") == 0


def test_aof_rewrite_of_migrated_keys(servers):
    blooms, cuckoos = bloom_fixtures()[:1], cuckoo_fixtures()[:1]
    s = servers(start=False)
    write_rdb(os.path.join(s.dir, "dump.rdb"), blooms, cuckoos)
    s.start()
    r = s.client()
    r.config_set("appendonly", "yes")  # rewrites the AOF from the dataset: LOADCHUNK commands
    deadline = time.time() + 60
    while time.time() < deadline:
        inf = r.info("persistence")
        if not inf["aof_rewrite_in_progress"] and not inf["aof_rewrite_scheduled"] and inf["aof_enabled"]:
            break
        time.sleep(0.05)
    absent = probes(5000, seed=3)
    s.stop()
    os.remove(os.path.join(s.dir, "dump.rdb"))
    s.extra = ["--appendonly", "yes", "--aof-use-rdb-preamble", "no"]
    s.start()
    check_all(s.client(), blooms, cuckoos, absent)


# ---------------------------------------------------------------- a replica of a RedisBloom master


class FakeMaster:
    """Plays a RedisBloom master for one replica: answers the handshake, sends an RDB for the full sync,
    then streams commands."""

    def __init__(self, rdb):
        self.rdb = rdb
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        self.port = self.sock.getsockname()[1]
        self.conn = None
        self.synced = threading.Event()
        self.error = None
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        try:
            self.sock.settimeout(60)
            self.conn, _ = self.sock.accept()
            self.conn.settimeout(60)
            buf = b""
            while not self.synced.is_set():
                data = self.conn.recv(65536)
                if not data:
                    return
                buf += data
                while b"\r\n" in buf:
                    cmd, buf = self.read_command(buf)
                    if cmd is None:
                        break
                    name = cmd[0].upper()
                    if name == b"PING":
                        self.conn.sendall(b"+PONG\r\n")
                    elif name == b"REPLCONF":
                        self.conn.sendall(b"+OK\r\n")
                    elif name in (b"PSYNC", b"SYNC"):
                        self.conn.sendall(b"+FULLRESYNC " + b"0" * 40 + b" 0\r\n")
                        self.conn.sendall(b"$%d\r\n" % len(self.rdb) + self.rdb)
                        self.synced.set()
                        break
                    else:
                        self.conn.sendall(b"-ERR unexpected\r\n")
            self.conn.settimeout(None)
            while self.conn.recv(65536):  # REPLCONF ACKs from the replica
                pass
        except OSError as e:  # closed at the end of the test
            self.error = e

    @staticmethod
    def read_command(buf):
        if not buf.startswith(b"*"):  # inline command
            line, rest = buf.split(b"\r\n", 1)
            return line.split(), rest
        try:
            head, rest = buf.split(b"\r\n", 1)
            args = []
            for _ in range(int(head[1:])):
                ln, rest = rest.split(b"\r\n", 1)
                n = int(ln[1:])
                if len(rest) < n + 2:
                    return None, buf
                args.append(rest[:n])
                rest = rest[n + 2:]
            return args, rest
        except ValueError:
            return None, buf

    def propagate(self, *args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out += b"$%d\r\n" % len(a) + a + b"\r\n"
        self.conn.sendall(out)

    def close(self):
        for s in (self.conn, self.sock):
            if s:
                s.close()


def test_replica_of_redisbloom_master(servers):
    blooms, cuckoos = bloom_fixtures()[:1], cuckoo_fixtures()[:1]
    master = FakeMaster(rb.rdb_file([(k, rb.bloom_value(m)) for k, m, _, _, _ in blooms] +
                                    [(k, rb.cuckoo_value(m)) for k, m, _, _, _ in cuckoos]))
    try:
        s = servers()
        r = s.client()
        s.replicate(master.port)
        assert master.synced.wait(60)
        absent = probes(5000, seed=4)
        check_all(r, blooms, cuckoos, absent)
        # the master's writes after the sync, in RedisBloom's hashing
        k, m, xs, _, _ = blooms[0]
        new = items("from-master", 300)
        master.propagate("BF.MADD", k, *new)
        for x in new:
            m.add(x)
        ck, cm, cxs, _, _ = cuckoos[0]
        master.propagate("CF.ADD", ck, b"from-master")
        cm.add(b"from-master")
        master.propagate("CF.DEL", ck, cxs[1])
        deadline = time.time() + 30
        while r.execute_command("BF.CARD", k) != m.size and time.time() < deadline:
            time.sleep(0.05)
        xs.extend(new)
        cxs.append(b"from-master")
        assert r.execute_command("CF.COUNT", ck, cxs[1]) == cm.count(cxs[1]) - 1
        check_bloom(r, k, m, xs, 0.01, absent)
        assert r.execute_command("CF.EXISTS", ck, b"from-master") == 1
        assert s.alive()
    finally:
        master.close()


# ---------------------------------------------------------------- damaged data, at random


def mutate(rng, ops):
    """A damaged copy of a value's fields: a changed number, a cut or grown string, a dropped or
    repeated field, or flipped bits in an array."""
    ops = list(ops)
    i = rng.randrange(len(ops))
    kind, v = ops[i]
    choice = rng.randrange(6)
    if choice == 0 and kind == "u":
        ops[i] = ("u", rng.choice([0, 1, v + 1, max(v - 1, 0), v * 2, v ^ (1 << rng.randrange(64)), (1 << 64) - 1]))
    elif choice == 1 and kind == "d":
        ops[i] = ("d", rng.choice([0.0, -v, v * 2, 1.0, 1e-300, float("inf")]))
    elif choice == 2 and kind == "s":
        ops[i] = ("s", v[:rng.randrange(len(v) + 1)] if rng.random() < 0.5 else v + b"\0" * rng.randrange(1, 64))
    elif choice == 3:
        del ops[i]
    elif choice == 4:
        ops.insert(i, ops[i])
    elif kind == "s" and v:
        b = bytearray(v)
        for _ in range(rng.randrange(1, 8)):
            b[rng.randrange(len(b))] ^= 1 << rng.randrange(8)
        ops[i] = ("s", bytes(b))
    else:
        ops[i] = ("u", rng.getrandbits(16))
    return ops


def test_damaged_values_at_random(servers):
    # 1,500 damaged RDB values (as RESTORE payloads with a valid checksum) and 1,500 damaged SCANDUMP
    # headers: each is refused cleanly or loads into a filter that then answers every command; the server
    # never stops. MAX_FILTER_SIZE keeps what a damaged size may allocate small.
    rng = random.Random(7)
    c = rb.Chain(100, 0.01)
    for x in items("m", 400):
        c.add(x)
    c32 = rb.Chain(64, 0.05, options=0)
    for x in items("m", 100):
        c32.add(x)
    cf = rb.Cuckoo(64, bucket_size=2, expansion=2)
    for x in items("m", 300):
        cf.add(x)
    s = servers(module_args=["MAX_FILTER_SIZE", "1048576"])
    r = s.client()
    sources = [("MBbloom--", 4, c.rdb_ops(4)), ("MBbloom--", 2, c32.rdb_ops(2)), ("MBbloomCF", 4, cf.rdb_ops(4)),
               ("MBbloomCF", 2, rb.Cuckoo(256).rdb_ops(2))]
    loaded = 0
    for n in range(1500):
        name, enc, ops = rng.choice(sources)
        for _ in range(rng.randrange(1, 4)):
            ops = mutate(rng, ops)
        key = f"k{n}"
        try:
            r.execute_command("RESTORE", key, 0, rb.dump_payload(rb.module_value(name, enc, ops)))
        except redis.ResponseError as e:
            assert "Bad data format" in str(e), e
            continue
        loaded += 1
        fam = "BF" if name == "MBbloom--" else "CF"
        r.execute_command(f"{fam}.EXISTS", key, "m:1")
        r.execute_command(f"{fam}.INFO", key)
        try:
            r.execute_command(f"{fam}.ADD", key, f"new{n}")
        except redis.ResponseError as e:
            assert "full" in str(e) or "grow" in str(e) or "Maximum expansions" in str(e), e
        it, _ = r.execute_command(f"{fam}.SCANDUMP", key, 0)
        assert it == 1
        r.execute_command("DEL", key)
    headers = [("BF", c.header()), ("CF", cf.header())]
    for n in range(1500):
        fam, h = rng.choice(headers)
        b = bytearray(h)
        for _ in range(rng.randrange(1, 4)):
            b[rng.randrange(len(b))] = rng.getrandbits(8)
        try:
            r.execute_command(f"{fam}.LOADCHUNK", "h", 1, bytes(b))
        except redis.ResponseError:
            continue
        r.execute_command(f"{fam}.EXISTS", "h", "m:1")
        r.execute_command(f"{fam}.INFO", "h")
        r.execute_command("DEL", "h")
    assert r.ping() and loaded > 0
    print(f"damaged RDB values that still loaded: {loaded} of 1500")
