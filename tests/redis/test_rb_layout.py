"""REDISBLOOM_LAYOUT yes: new BF/CF keys made in RedisBloom's own layout and hashing, for a live switch.

A master started in the mode and a real replica (REPLICAOF) answer identically for keys made after the
sync, an AOF written in the mode replays into a fresh server with the same answers, and the keys are saved
in RedisBloom's encoding (checked byte for byte against rbformat.py, the from-spec model of RedisBloom's
filters, which test_rb_migrate.py pins to RedisBloom's own recorded figures). BK.CONVERT then moves such
keys to bloomkit's filters without losing an item.
"""
import os
import shutil

import pytest
import redis

import rbformat as rb

LAYOUT = ["REDISBLOOM_LAYOUT", "yes"]
PLAIN = ["--rdbcompression", "no"]  # DUMP payloads without LZF, to compare with the model's bytes


def items(prefix, n):
    return [f"{prefix}:{i}".encode() for i in range(n)]


ABSENT = [b"absent:%d" % i for i in range(3000)]


def info(r, cmd, key):
    v = r.execute_command(cmd, key)
    return dict(zip([x.decode() for x in v[0::2]], v[1::2]))


def populate(r):
    """The same commands on a server and on the model: every key made by a command that creates one.
    Returns {key: (model, items added)}; asserts every reply equals the model's (RedisBloom's)."""
    out = {}
    xs = items("bf", 1000)

    def bf_key(key, model, create, step=100):
        if create:
            assert r.execute_command(*create) == b"OK"
        for i in range(0, len(xs), step):
            got = [int(v) for v in r.execute_command("BF.MADD", key, *xs[i:i + step])]
            assert got == [int(model.add(x)) for x in xs[i:i + step]], key
        out[key] = (model, xs)

    bf_key(b"bf:reserve", rb.Chain(200, 0.01), ("BF.RESERVE", "bf:reserve", 0.01, 200))
    bf_key(b"bf:exp4", rb.Chain(50, 0.001, growth=4), ("BF.RESERVE", "bf:exp4", 0.001, 50, "EXPANSION", 4))
    bf_key(b"bf:implicit", rb.Chain(100, 0.01), None)  # BF.MADD on a missing key: INITIAL_SIZE, ERROR_RATE
    m = rb.Chain(100, 0.01)
    assert r.execute_command("BF.ADD", "bf:add", xs[0]) == int(m.add(xs[0]))
    out[b"bf:add"] = (m, xs[:1])
    m = rb.Chain(300, 0.005, growth=3)
    got = [int(v) for v in r.execute_command("BF.INSERT", "bf:insert", "CAPACITY", 300, "ERROR", 0.005,
                                             "EXPANSION", 3, "ITEMS", *xs)]
    assert got == [int(m.add(x)) for x in xs]
    out[b"bf:insert"] = (m, xs)
    m = rb.Chain(2000, 0.02, options=rb.FORCE64 | rb.NOROUND | rb.NO_SCALING)
    assert r.execute_command("BF.RESERVE", "bf:fixed", 0.02, 2000, "NONSCALING") == b"OK"
    got = [int(v) for v in r.execute_command("BF.MADD", "bf:fixed", *xs)]
    assert got == [int(m.add(x)) for x in xs]
    out[b"bf:fixed"] = (m, xs)

    cs = items("cf", 1000)
    dups = cs[:200]  # added again: CF.COUNT counts the copies

    def cf_key(key, model, create):
        if create:
            assert r.execute_command(*create) == b"OK"
        for i in range(0, len(cs), 100):
            got = [int(v) for v in r.execute_command("CF.INSERT", key, "ITEMS", *cs[i:i + 100])]
            assert got == [int(model.add(x)) for x in cs[i:i + 100]], key
        for x in dups:
            assert r.execute_command("CF.ADD", key, x) == int(model.add(x))
        for x in dups[:20] + [b"nx-new"]:
            assert r.execute_command("CF.ADDNX", key, x) == int(model.add(x, nx=True))
        for x in cs[500:520]:
            assert r.execute_command("CF.DEL", key, x) == int(model.delete(x))
        out[key] = (model, cs[:500] + cs[520:] + [b"nx-new"])

    cf_key(b"cf:reserve", rb.Cuckoo(1000), ("CF.RESERVE", "cf:reserve", 1000))
    cf_key(b"cf:bs4", rb.Cuckoo(256, bucket_size=4, max_iterations=50, expansion=2),
           ("CF.RESERVE", "cf:bs4", 256, "BUCKETSIZE", 4, "MAXITERATIONS", 50, "EXPANSION", 2))
    cf_key(b"cf:implicit", rb.Cuckoo(1024), None)  # CF.INSERT on a missing key: capacity 1024
    m = rb.Cuckoo(600)
    got = [int(v) for v in r.execute_command("CF.INSERTNX", "cf:insertnx", "CAPACITY", 600, "ITEMS", *cs)]
    assert got == [int(m.add(x, nx=True)) for x in cs]
    out[b"cf:insertnx"] = (m, cs)
    m = rb.Cuckoo(1024)
    assert r.execute_command("CF.ADD", "cf:add", cs[0]) == int(m.add(cs[0]))
    assert r.execute_command("CF.ADD", "cf:add", cs[0]) == int(m.add(cs[0]))
    out[b"cf:add"] = (m, cs[:1])
    return out


def mexists(r, cmd, key, xs, step=1000):
    res = []
    for i in range(0, len(xs), step):
        res += [int(v) for v in r.execute_command(cmd, key, *xs[i:i + step])]
    return res


def scandump(r, key):
    cmd = "CF.SCANDUMP" if key.startswith(b"cf") else "BF.SCANDUMP"
    it, out = 0, []
    while True:
        it, data = r.execute_command(cmd, key, it)
        if it == 0:
            return out
        out.append((it, data))


def answers(r, keys):
    """Everything a client can ask of the keys: the property compared between servers."""
    out = {}
    for key, (model, xs) in keys.items():
        if key.startswith(b"bf"):
            out[key] = (r.type(key), mexists(r, "BF.MEXISTS", key, xs + ABSENT), info(r, "BF.INFO", key),
                        r.execute_command("BF.CARD", key), r.dump(key), scandump(r, key))
        else:
            counts = [r.execute_command("CF.COUNT", key, x) for x in xs[:300] + ABSENT[:300]]
            out[key] = (r.type(key), mexists(r, "CF.MEXISTS", key, xs + ABSENT), counts, info(r, "CF.INFO", key),
                        r.dump(key), scandump(r, key))
    return out


def check_model(r, keys):
    """The keys are RedisBloom's: type, answers, INFO, SCANDUMP and DUMP bytes as the model gives them."""
    for key, (model, xs) in keys.items():
        if key.startswith(b"bf"):
            assert r.type(key) == b"MBbloom--"
            assert mexists(r, "BF.MEXISTS", key, xs + ABSENT) == [1] * len(xs) + [int(model.contains(x))
                                                                                 for x in ABSENT]
            inf = info(r, "BF.INFO", key)
            assert (inf["Capacity"], inf["Number of filters"], inf["Number of items inserted"]) == \
                (model.capacity(), len(model.links), model.size)
            assert inf["Size"] == 32 + sum(64 + l.nbytes for l in model.links)  # RedisBloom's own figure
            assert scandump(r, key) == model.chunks()
            assert r.dump(key) == rb.dump_payload(rb.bloom_value(model))
        else:
            assert r.type(key) == b"MBbloomCF"
            assert mexists(r, "CF.MEXISTS", key, xs + ABSENT) == [1] * len(xs) + [int(model.contains(x))
                                                                                 for x in ABSENT]
            for x in xs[:300] + ABSENT[:300]:
                assert r.execute_command("CF.COUNT", key, x) == model.count(x)
            inf = info(r, "CF.INFO", key)
            assert (inf["Number of buckets"], inf["Number of filters"], inf["Number of items inserted"],
                    inf["Number of items deleted"], inf["Bucket size"], inf["Expansion rate"],
                    inf["Max iterations"]) == (model.nbuckets, len(model.tables), model.items, model.deletes,
                                               model.bucket_size, model.expansion, model.max_iterations)
            assert scandump(r, key) == model.chunks()
            assert r.dump(key) == rb.dump_payload(rb.cuckoo_value(model))


def test_default_mode_makes_bloomkit_keys(servers):
    r = servers().client()
    r.execute_command("BF.ADD", "b", "x")
    r.execute_command("CF.ADD", "c", "x")
    assert (r.type("b"), r.type("c")) == (b"bloomkitB", b"bloomkitC")
    r = servers(module_args=["REDISBLOOM_LAYOUT", "no"]).client()
    r.execute_command("BF.RESERVE", "b", 0.01, 100)
    assert r.type("b") == b"bloomkitB"
    s = servers(module_args=["REDISBLOOM_LAYOUT", "maybe"], start=False)
    s.expected_exit = True
    assert s.start(expect_fail=True) is False
    assert "REDISBLOOM_LAYOUT must be no or yes" in s.log_tail()


def test_new_keys_are_redisbloom_keys(servers):
    s = servers(module_args=LAYOUT, extra=PLAIN)
    r = s.client()
    keys = populate(r)
    check_model(r, keys)

    # RedisBloom's argument rules and replies for what it refuses or accepts
    for cmd, err in ((("BF.RESERVE", "e", 0.01, 0), "capacity should be larger than 0"),
                     (("BF.RESERVE", "e", 2, 10), "error rate range"),
                     (("BF.RESERVE", "e", 0.01, 10, "NONSCALING", "EXPANSION", 2), "Nonscaling filters cannot"),
                     (("BF.INSERT", "e", "ERROR", 1.5, "ITEMS", "x"), "Bad argument received"),
                     (("BF.INSERT", "e", "NOCREATE", "ITEMS", "x"), "not found"),
                     (("CF.RESERVE", "e", 3), r"Capacity must be at least \(BucketSize \* 2\)"),
                     (("CF.RESERVE", "e", 100, "BUCKETSIZE", 256), "BUCKETSIZE: value must be"),
                     (("CF.INSERT", "e", "CAPACITY", 3, "ITEMS", "x"), "Capacity must be at least"),
                     (("CF.INSERT", "e", "NOCREATE", "ITEMS", "x"), "not found"),
                     (("BF.RESERVE", "bf:reserve", 0.01, 10), "item exists"),
                     (("CF.RESERVE", "cf:reserve", 100), "item exists")):
        with pytest.raises(redis.ResponseError, match=err):
            r.execute_command(*cmd)
    assert r.exists("e") == 0
    # accepted as RedisBloom accepts them: extra words in BF.RESERVE, options by their first letters, an
    # EXPANSION above bloomkit's 16
    assert r.execute_command("BF.RESERVE", "x1", 0.01, 100, "whatever") == b"OK"
    assert r.execute_command("BF.INSERT", "x2", "CAP", 500, "ERR", 0.001, "EXP", 20, "I", "a", "b") == [1, 1]
    assert info(r, "BF.INFO", "x2")["Expansion rate"] == 20 and info(r, "BF.INFO", "x2")["Capacity"] == 500
    with pytest.raises(redis.ResponseError, match="not found"):  # any word starting with N is NOCREATE
        r.execute_command("CF.INSERT", "x3", "C", 100, "NOPE", "ITEMS", "a")
    assert r.exists("x3") == 0
    assert r.execute_command("CF.INSERT", "x4", "C", 100, "I", "a") == [1]
    assert info(r, "CF.INFO", "x4")["Number of buckets"] == 64
    # keys of the other layout and families are left as they are
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        r.execute_command("CF.ADD", "bf:reserve", "x")

    # (c) saved in RedisBloom's encoding: RDB values and DUMP payloads byte for byte the model's
    r.save()
    with open(os.path.join(s.dir, "dump.rdb"), "rb") as f:
        saved = rb.RdbReader(f.read()).module_values()
    for key, (model, _) in keys.items():
        if key.startswith(b"bf"):
            assert saved[key] == ("MBbloom--", 4, rb.bloom_value(model, 4)), key
        else:
            assert saved[key] == ("MBbloomCF", 4, rb.cuckoo_value(model, 4)), key
    before = answers(r, keys)
    s.restart(save=True)
    assert answers(s.client(), keys) == before


def wait_replica(master, replica, n=1):
    assert master.execute_command("WAIT", n, 30000) == n


def test_replica_of_master_in_redisbloom_layout(servers):
    master = servers(module_args=LAYOUT, extra=PLAIN)
    replica = servers(module_args=LAYOUT, extra=PLAIN)
    plain = servers(extra=PLAIN)  # a replica without the setting: the stream says which layout a key has
    m = master.client()
    m.execute_command("BF.RESERVE", "before-sync", 0.01, 100)
    replica.replicate(master.port)
    plain.replicate(master.port)
    keys = populate(m)  # made after the sync: they reach the replica as commands
    for x in items("late", 300):  # single adds too, some growing the chains
        m.execute_command("BF.ADD", "bf:implicit", x)
        m.execute_command("CF.ADD", "cf:implicit", x)
        keys[b"bf:implicit"][0].add(x)
        keys[b"cf:implicit"][0].add(x)
    keys[b"bf:implicit"] = (keys[b"bf:implicit"][0], keys[b"bf:implicit"][1] + items("late", 300))
    keys[b"cf:implicit"] = (keys[b"cf:implicit"][0], keys[b"cf:implicit"][1] + items("late", 300))
    wait_replica(m, replica, 2)
    got_master = answers(m, keys)
    for rep in (replica, plain):
        got_replica = answers(rep.client(), keys)
        for key in keys:
            assert got_replica[key] == got_master[key], key  # TYPE, answers, counts, INFO, DUMP, SCANDUMP
        check_model(rep.client(), keys)
    assert replica.client().type("before-sync") == b"MBbloom--"

    # BK.CONVERT replicates as itself
    m.execute_command("BF.RESERVE", "empty", 0.01, 1000)
    assert m.execute_command("BK.CONVERT", "empty") == b"OK"
    wait_replica(m, replica, 2)
    assert replica.client().type("empty") == b"bloomkitB"
    assert replica.client().dump("empty") == m.dump("empty")


def test_aof_written_in_the_mode_replays(servers):
    s = servers(module_args=LAYOUT, extra=PLAIN + ["--appendonly", "yes", "--aof-use-rdb-preamble", "no"])
    r = s.client()
    keys = populate(r)
    before = answers(r, keys)
    s.stop()
    aof_dir = os.path.join(s.dir, "appendonlydir")
    incr = [f for f in os.listdir(aof_dir) if f.endswith(".incr.aof")]
    assert incr
    with open(os.path.join(aof_dir, incr[0]), "rb") as f:
        text = f.read()
    # the commands, each new key first as its RedisBloom SCANDUMP header
    assert text.count(b"BF.MADD") == 31 and b"CF.INSERT" in text
    assert text.count(b"BF.LOADCHUNK") == 6 and text.count(b"CF.LOADCHUNK") == 5

    # the same AOF in fresh servers, in the mode and without it: the same keys, the same answers
    for args in (LAYOUT, []):
        fresh = servers(module_args=args, extra=PLAIN + ["--appendonly", "yes", "--aof-use-rdb-preamble", "no"],
                        start=False)
        shutil.copytree(aof_dir, os.path.join(fresh.dir, "appendonlydir"))
        fresh.start()
        assert answers(fresh.client(), keys) == before
        check_model(fresh.client(), keys)


# ---------------------------------------------------------------- BK.CONVERT


def test_convert(servers):
    s = servers(module_args=LAYOUT)
    r = s.client()
    # an empty filter converts, with its parameters; the key keeps its expiry
    r.execute_command("BF.RESERVE", "e1", 0.001, 5000, "EXPANSION", 4)
    r.execute_command("CF.RESERVE", "e2", 4096, "BUCKETSIZE", 4, "MAXITERATIONS", 100, "EXPANSION", 2)
    r.execute_command("BF.RESERVE", "e3", 0.01, 100, "NONSCALING")
    r.pexpire("e1", 500000)
    for k in ("e1", "e2", "e3"):
        assert r.execute_command("BK.CONVERT", k) == b"OK"
    assert (r.type("e1"), r.type("e2"), r.type("e3")) == (b"bloomkitB", b"bloomkitC", b"bloomkitB")
    assert 0 < r.pttl("e1") <= 500000 and r.pttl("e2") == -1
    inf = info(r, "BF.INFO", "e1")
    assert (inf["Capacity"], inf["Expansion rate"], inf["Number of items inserted"]) == (5000, 4, 0)
    assert info(r, "BF.INFO", "e3")["Expansion rate"] is None
    inf = info(r, "CF.INFO", "e2")
    assert (inf["Bucket size"], inf["Max iterations"], inf["Expansion rate"]) == (4, 100, 2)
    assert inf["Number of buckets"] * 4 >= 4096

    # a filter holding items cannot be rehashed: refused, nothing changed
    xs = items("conv", 2000)
    r.execute_command("BF.MADD", "b", *xs)
    r.execute_command("CF.INSERT", "c", "ITEMS", *xs)
    r.execute_command("CF.INSERT", "c", "ITEMS", *xs[:100])  # repeated items: two copies each
    assert set(r.scan_iter(_type="MBbloom--")) == {b"b"} and set(r.scan_iter(_type="MBbloomCF")) == {b"c"}
    dump_b, dump_c = r.dump("b"), r.dump("c")
    for k in ("b", "c"):
        with pytest.raises(redis.ResponseError, match="cannot be rehashed without them"):
            r.execute_command("BK.CONVERT", k)
    assert r.dump("b") == dump_b and r.dump("c") == dump_c
    with pytest.raises(redis.ResponseError, match="bloomkit filter already"):
        r.execute_command("BK.CONVERT", "e1")
    with pytest.raises(redis.ResponseError, match="not found"):
        r.execute_command("BK.CONVERT", "nosuchkey")
    r.set("str", "x")
    with pytest.raises(redis.ResponseError, match="WRONGTYPE"):
        r.execute_command("BK.CONVERT", "str")

    # staged: a bloomkit filter with the key's parameters, filled with the items, then moved over the key
    for k, fam in (("b", "BF"), ("c", "CF")):
        assert r.execute_command("BK.CONVERT", k, "STAGE", k + ":new") == b"OK"
        assert r.type(k + ":new") == (b"bloomkitB" if fam == "BF" else b"bloomkitC")
        with pytest.raises(redis.ResponseError, match="exists already"):
            r.execute_command("BK.CONVERT", k, "STAGE", k + ":new")
        add = "BF.MADD" if fam == "BF" else "CF.INSERT"
        pre = () if fam == "BF" else ("ITEMS",)
        r.execute_command(add, k + ":new", *pre, *xs[:1500])
        with pytest.raises(redis.ResponseError, match="fewer than the"):  # a batch missing
            r.execute_command("BK.CONVERT", k, "FROM", k + ":new")
        assert r.dump(k) == (dump_b if fam == "BF" else dump_c)
        r.execute_command(add, k + ":new", *pre, *xs[1500:])
        if fam == "CF":
            r.execute_command(add, k + ":new", *pre, *xs[:100])
        r.expire(k, 1000)
        assert r.execute_command("BK.CONVERT", k, "FROM", k + ":new") == b"OK"
        assert r.exists(k + ":new") == 0 and 0 < r.ttl(k) <= 1000
        assert r.type(k) == (b"bloomkitB" if fam == "BF" else b"bloomkitC")
        # (d) every item added is present after the conversion
        assert mexists(r, fam + ".MEXISTS", k, xs) == [1] * len(xs)
    assert all(r.execute_command("CF.COUNT", "c", x) >= 2 for x in xs[:100])  # (or more: fingerprint matches)
    r.execute_command("DEBUG", "RELOAD")
    assert mexists(r, "BF.MEXISTS", "b", xs) == [1] * len(xs) and mexists(r, "CF.MEXISTS", "c", xs) == [1] * len(xs)
    # a Bloom staging key given every item counts fewer than the chain when it takes some for present (its
    # false positives): the allowance lets the complete one through
    ys = items("fp", 3000)
    r.execute_command("BF.RESERVE", "hi", 0.4, 3000, "NONSCALING")
    r.execute_command("BF.MADD", "hi", *ys)
    r.execute_command("BK.CONVERT", "hi", "STAGE", "hi:new")
    r.execute_command("BF.MADD", "hi:new", *ys)
    have, want = r.execute_command("BF.CARD", "hi:new"), r.execute_command("BF.CARD", "hi")
    assert have < want, (have, want)
    assert r.execute_command("BK.CONVERT", "hi", "FROM", "hi:new") == b"OK"
    assert mexists(r, "BF.MEXISTS", "hi", ys) == [1] * len(ys)
    with pytest.raises(redis.ResponseError, match="syntax error"):
        r.execute_command("BK.CONVERT", "e1", "INTO", "x")
    r.execute_command("BF.ADD", "rb2", "x")
    r.execute_command("CF.ADD", "cfnew", "x")
    with pytest.raises(redis.ResponseError, match="must hold a bloomkit scalable Bloom filter"):
        r.execute_command("BK.CONVERT", "rb2", "FROM", "cfnew")


# ---------------------------------------------------------------- a cluster in the mode, resharded


def test_cluster_in_the_mode_reshards(servers):
    from redis.cluster import RedisCluster
    from conftest import REDIS_CLI
    from resp import Conn
    import subprocess
    import time

    extra = ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000"]
    nodes = [servers(module_args=LAYOUT, extra=extra + PLAIN, bus=True) for _ in range(3)]
    run = subprocess.run([REDIS_CLI, "--cluster", "create"] + [f"127.0.0.1:{n.port}" for n in nodes] +
                         ["--cluster-replicas", "0", "--cluster-yes"], capture_output=True, timeout=120)
    assert run.returncode == 0, run.stdout.decode() + run.stderr.decode()

    def wait_ok():
        deadline = time.time() + 60
        while time.time() < deadline:
            infos = [n.client().cluster("info") for n in nodes]
            if all(i["cluster_state"] == "ok" and int(i["cluster_slots_ok"]) == 16384 for i in infos):
                return
            time.sleep(0.2)
        pytest.fail("cluster did not become ok")

    wait_ok()
    rc = RedisCluster(host="127.0.0.1", port=nodes[0].port)
    try:
        models = {}
        for i in range(60):
            xs = items(f"k{i}", 150)
            if i % 2:
                m = rb.Chain(100, 0.01)  # BF.MADD on a missing key: INITIAL_SIZE 100, ERROR_RATE 0.01
                assert [int(v) for v in rc.execute_command("BF.MADD", f"bf:{i}", *xs)] == [int(m.add(x)) for x in xs]
            else:
                m = rb.Cuckoo(100, expansion=2)
                rc.execute_command("CF.RESERVE", f"cf:{i}", 100, "EXPANSION", 2)
                assert [int(v) for v in rc.execute_command("CF.INSERT", f"cf:{i}", "ITEMS", *xs)] == \
                    [int(m.add(x)) for x in xs]
            models[i] = (m, xs)
        dumps = {i: rc.dump(f"bf:{i}" if i % 2 else f"cf:{i}") for i in models}
        # move a third of the slots (and their keys, by MIGRATE) from the first node to the second
        ids = [n.client().execute_command("CLUSTER", "MYID").decode() for n in nodes]
        before = [n.client().dbsize() for n in nodes]
        run = subprocess.run([REDIS_CLI, "--cluster", "reshard", f"127.0.0.1:{nodes[0].port}", "--cluster-from",
                              ids[0], "--cluster-to", ids[1], "--cluster-slots", "5000", "--cluster-yes"],
                             capture_output=True, timeout=300)
        assert run.returncode == 0, run.stdout.decode()[-3000:] + run.stderr.decode()
        wait_ok()
        after = [n.client().dbsize() for n in nodes]
        assert after[0] < before[0] and after[1] > before[1] and sum(after) == sum(before) == 60
        rc.close()
        rc = RedisCluster(host="127.0.0.1", port=nodes[2].port)
        for i, (m, xs) in models.items():
            key = f"bf:{i}" if i % 2 else f"cf:{i}"
            assert rc.type(key) == (b"MBbloom--" if i % 2 else b"MBbloomCF")
            assert rc.dump(key) == dumps[i]
            probe = xs + ABSENT[:500]
            assert [int(v) for v in rc.execute_command("BF.MEXISTS" if i % 2 else "CF.MEXISTS", key, *probe)] == \
                [int(m.contains(x)) for x in probe]
        # BK.CONVERT's keys are routed: the staging key is a key of the command
        c = Conn(nodes[0].port)
        assert c.call("COMMAND", "GETKEYS", "BK.CONVERT", "a", "STAGE", "b") == [b"a", b"b"]
        assert c.call("COMMAND", "GETKEYS", "BK.CONVERT", "a", "from", "b") == [b"a", b"b"]
        assert c.call("COMMAND", "GETKEYS", "BK.CONVERT", "a") == [b"a"]
        with pytest.raises(redis.ResponseError, match="CROSSSLOT"):
            nodes[0].client().execute_command("BK.CONVERT", "x1", "STAGE", "x2")
        c.close()
        rc.execute_command("BF.RESERVE", "{t}e", 0.01, 100)
        assert rc.execute_command("BK.CONVERT", "{t}e") == b"OK" and rc.type("{t}e") == b"bloomkitB"
    finally:
        rc.close()
