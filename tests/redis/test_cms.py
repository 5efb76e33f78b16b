"""CMS.*: the count-min sketch in a real redis-server, with RedisBloom 2.4's replies."""
import os
import random

import pytest
import redis


def err(r, *args):
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command(*args)
    return str(e.value)


def info(r, key):
    raw = r.execute_command("CMS.INFO", key)
    return [x.decode() if isinstance(x, bytes) else x for x in raw]


def test_create_query_info(r):
    assert r.execute_command("CMS.INITBYDIM", "cms1", 20, 5) in (b"OK", True)
    assert r.execute_command("CMS.INCRBY", "cms1", "a", 5) == [5]
    assert r.execute_command("CMS.QUERY", "cms1", "a") == [5]
    assert info(r, "cms1") == ["width", 20, "depth", 5, "count", 5]
    # RedisBloom's sizing: 0.001 / 0.01 -> 2000 x 7
    assert r.execute_command("CMS.INITBYPROB", "cms2", 0.001, 0.01) in (b"OK", True)
    assert r.execute_command("CMS.INCRBY", "cms2", "a", 5) == [5]
    assert info(r, "cms2") == ["width", 2000, "depth", 7, "count", 5]
    r.execute_command("CMS.INITBYPROB", "cms3", 0.1, 0.125)
    assert info(r, "cms3")[:4] == ["width", 20, "depth", 3]
    assert r.execute_command("CMS.QUERY", "cms1", "nothing", "a") == [0, 5]
    assert r.type("cms1") == b"bloomkitS"
    assert 500 < r.memory_usage("cms2") < 60000


def test_validation(r):
    for args in ((), ("foo",), ("foo", "0.1"), ("foo", "0.1", "blah"), ("foo", "10"), ("foo", "10", "blah"),
                 ("foo", "blah", "10"), ("foo", "0", "0"), ("foo", "0", "100"), ("foo", "100", "0"),
                 ("foo", "8589934592", "8589934592"), ("foo", "4611686018427388100", "1"),
                 ("foo", "2", "2611686018427388100")):
        err(r, "CMS.INITBYDIM", *args)
    for args in ((), ("foo",), ("foo", "1000"), ("foo", "0.1"), ("foo", "1000", "0.1"), ("foo", "1000", "blah"),
                 ("foo", "1000", "10"), ("foo", "0.1", "blah"), ("foo", "10", "blah"), ("foo", "blah", "10"),
                 ("foo", "0", "0"), ("foo", "1000", "0"), ("foo", "0", "100"), ("foo", "0.9", "0.9999999999999999"),
                 ("foo", "0.0000000000000000001", "0.9")):
        err(r, "CMS.INITBYPROB", *args)
    assert r.exists("foo") == 0
    assert err(r, "CMS.INITBYDIM", "x", "abc", "5") == "CMS: invalid width"
    assert err(r, "CMS.INITBYDIM", "x", "5", "-1") == "CMS: invalid depth"
    assert err(r, "CMS.INITBYPROB", "x", "2", "0.1") == "CMS: invalid overestimation value"
    assert err(r, "CMS.INITBYPROB", "x", "0.1", "1") == "CMS: invalid prob value"
    assert err(r, "CMS.INITBYPROB", "x", "0.9", "0.9999999999999999") == "CMS: invalid init arguments"
    r.execute_command("CMS.INITBYDIM", "testDim", 100, 5)
    r.execute_command("CMS.INITBYPROB", "testProb", 0.1, 0.1)
    assert err(r, "CMS.INITBYDIM", "testDim", 100, 5) == "CMS: key already exists"
    for cmd in ("CMS.INCRBY", "CMS.QUERY", "CMS.MERGE", "CMS.INFO"):
        for args in ((), ("test",)):
            e = err(r, cmd, *args)
            assert "wrong number of arguments" in e or (cmd == "CMS.INFO" and e == "CMS: key does not exist")


def test_incrby_query_errors(r):
    r.set("A", "B")
    r.execute_command("CMS.INITBYDIM", "cms", 1000, 5)
    assert r.execute_command("CMS.INCRBY", "cms", "bar", 5, "baz", 42) == [5, 42]
    assert r.execute_command("CMS.QUERY", "cms", "foo", "bar", "baz") == [0, 5, 42]
    assert err(r, "CMS.INCRBY", "noexist", "bar", 5) == "CMS: key does not exist"
    assert err(r, "CMS.QUERY", "noexist", "bar") == "CMS: key does not exist"
    assert "WRONGTYPE" in err(r, "CMS.INCRBY", "A", "bar", 5)
    assert "WRONGTYPE" in err(r, "CMS.INFO", "A")
    assert "wrong number of arguments" in err(r, "CMS.INCRBY", "cms", "bar", 5, "baz")
    assert err(r, "CMS.INCRBY", "cms", "item", "foo") == "CMS: Cannot parse number"
    assert err(r, "CMS.INCRBY", "cms", "item", "-1") == "CMS: Number cannot be negative"
    # a bad pair refuses the whole command: nothing before it was applied
    assert err(r, "CMS.INCRBY", "cms", "bar", 1, "baz", "x") == "CMS: Cannot parse number"
    assert r.execute_command("CMS.QUERY", "cms", "foo", "bar", "baz") == [0, 5, 42]
    assert err(r, "CMS.INITBYDIM", "A", 2000, 10) == "CMS: key already exists"
    r.execute_command("CMS.INITBYDIM", "t", 1000, 5)
    assert r.execute_command("CMS.INCRBY", "t", "foo", 1) == [1]
    assert r.execute_command("CMS.INCRBY", "t", "foo", 1, "bar", 1) == [2, 1]
    # increment 0 answers the estimate
    assert r.execute_command("CMS.INCRBY", "t", "foo", 0, "bar", 0) == [2, 1]
    # binary items
    assert r.execute_command("CMS.INCRBY", "t", b"\x00\xff\r\n", 7) == [7]
    assert r.execute_command("CMS.QUERY", "t", b"\x00\xff\r\n") == [7]


def test_saturation(r):
    large = 2 ** 31 - 1
    r.execute_command("CMS.INITBYDIM", "cms", 5, 2)
    assert r.execute_command("CMS.INCRBY", "cms", "a", large) == [large]
    assert r.execute_command("CMS.INCRBY", "cms", "a", large) == [2 * large]
    # past UINT32_MAX: the counters stay at UINT32_MAX (no wrap), the reply is RedisBloom's error
    res = r.execute_command("CMS.INCRBY", "cms", "a", large, "zz", 0)
    assert isinstance(res[0], redis.ResponseError) and "CMS: INCRBY overflow" in str(res[0])
    assert r.execute_command("CMS.QUERY", "cms", "a") == [2 ** 32 - 1]
    res = r.execute_command("CMS.INCRBY", "cms", "a", 2 ** 40)
    assert isinstance(res[0], redis.ResponseError)
    assert r.execute_command("CMS.QUERY", "cms", "a") == [2 ** 32 - 1]
    # one increment counts at most 2^32 - 1 in the total (docs/REDIS.md)
    assert info(r, "cms")[5] == 3 * large + 2 ** 32 - 1


def test_smallset(r):
    r.execute_command("CMS.INITBYDIM", "cms1", 2, 2)
    got = r.execute_command("CMS.INCRBY", "cms1", "foo", 10, "bar", 42)
    assert got[0] >= 10 and got[1] >= 42
    assert info(r, "cms1") == ["width", 2, "depth", 2, "count", 52]


def test_merge(r):
    for k in ("small_1", "small_2", "small_3"):
        r.execute_command("CMS.INITBYDIM", k, 20, 5)
    for k in ("large_4", "large_5", "large_6"):
        r.execute_command("CMS.INITBYDIM", k, 2000, 10)
    assert r.execute_command("CMS.MERGE", "small_3", 2, "small_1", "small_2") in (b"OK", True)
    assert info(r, "small_3") == ["width", 20, "depth", 5, "count", 0]
    r.execute_command("CMS.INCRBY", "small_1", "a", 21)
    r.execute_command("CMS.INCRBY", "small_2", "a", 21)
    r.execute_command("CMS.MERGE", "small_3", 2, "small_1", "small_2")
    assert r.execute_command("CMS.QUERY", "small_3", "a") == [42]
    r.execute_command("CMS.INCRBY", "large_4", "a", 21)
    r.execute_command("CMS.INCRBY", "large_5", "a", 21)
    r.execute_command("CMS.MERGE", "large_6", 2, "large_4", "large_5")
    assert r.execute_command("CMS.QUERY", "large_6", "a") == [42]
    # mismatched dimensions are refused, the destination unchanged
    assert err(r, "CMS.MERGE", "small_3", 2, "small_2", "large_5") == "CMS: width/depth is not equal"
    assert r.execute_command("CMS.QUERY", "small_3", "a") == [42]
    # weights, and a subtraction that would go negative
    for k in ("c1{t}", "c2{t}", "c3{t}", "c4{t}", "c5{t}", "c6{t}"):
        r.execute_command("CMS.INITBYDIM", k, 1000, 5)
    for i in range(100):
        r.execute_command("CMS.INCRBY", "c1{t}", f"foo{i}", 1)
        r.execute_command("CMS.INCRBY", "c2{t}", f"bar{i}", 1)
        r.execute_command("CMS.INCRBY", "c3{t}", f"baz{i}", 1)
    r.execute_command("CMS.MERGE", "c5{t}", 3, "c1{t}", "c2{t}", "c3{t}", "WEIGHTS", 1, 1, 1)
    r.execute_command("CMS.MERGE", "c6{t}", 2, "c5{t}", "c3{t}", "weights", 1, -1)
    assert info(r, "c6{t}") == ["width", 1000, "depth", 5, "count", 200]
    for i in range(100):
        assert r.execute_command("CMS.QUERY", "c6{t}", f"foo{i}", f"bar{i}", f"baz{i}") == [1, 1, 0]
    r.execute_command("CMS.MERGE", "c6{t}", 2, "c3{t}", "c5{t}", "WEIGHTS", -1, 1)
    assert info(r, "c6{t}")[5] == 200
    assert err(r, "CMS.MERGE", "c6{t}", 2, "c6{t}", "c3{t}", "WEIGHTS", 1, -1) == "CMS: MERGE overflow"
    assert err(r, "CMS.MERGE", "c6{t}", 2, "c3{t}", "c6{t}", "WEIGHTS", -1, 1) == "CMS: MERGE overflow"
    # the destination may be a source (doubling)
    r.execute_command("CMS.MERGE", "c1{t}", 2, "c1{t}", "c1{t}")
    assert r.execute_command("CMS.QUERY", "c1{t}", "foo3") == [2]


def test_merge_errors(r):
    r.set("A", "2000")
    for k in ("foo", "bar", "baz"):
        r.execute_command("CMS.INITBYDIM", k, 2000, 10)
    assert err(r, "CMS.MERGE", "foo", 2, "foo") == "CMS: wrong number of keys"
    assert err(r, "CMS.MERGE", "foo", "B", 3, "foo") == "CMS: invalid numkeys"
    assert err(r, "CMS.MERGE", "foo", 1, "bar", "weights", "B") == "CMS: invalid weight value"
    assert err(r, "CMS.MERGE", "foo", 3, "foo", "weights", "B") == "CMS: wrong number of keys/weights"
    assert err(r, "CMS.MERGE", "foo", "A", "foo", "weights", 1) == "CMS: invalid numkeys"
    err(r, "CMS.MERGE", "foo", 3, "bar", "baz" "weights", 1, "a")
    assert "wrong number" in err(r, "CMS.MERGE", "foo", "0")
    assert err(r, "CMS.MERGE", "foo", "0", "weights") == "CMS: Number of keys must be positive"
    assert err(r, "CMS.MERGE", "foo", "-1", "foo", "bar") == "CMS: Number of keys must be positive"
    assert err(r, "CMS.MERGE", "nokey", 1, "foo") == "CMS: key does not exist"
    assert err(r, "CMS.MERGE", "foo", 1, "nokey") == "CMS: key does not exist"
    assert "WRONGTYPE" in err(r, "CMS.MERGE", "foo", 1, "A")


def test_merge_extensive(r):
    for k in ("A{x}", "B{x}", "C{x}"):
        r.execute_command("CMS.INITBYDIM", k, 2000, 10)
    rnd = random.Random(5)
    a = [rnd.randint(0, 100) for _ in range(3000)]
    b = [rnd.randint(0, 100) for _ in range(3000)]
    p = r.pipeline(transaction=False)
    for i in range(3000):
        p.execute_command("CMS.INCRBY", "A{x}", str(i), a[i])
        p.execute_command("CMS.INCRBY", "B{x}", str(i), b[i])
    p.execute()
    r.execute_command("CMS.MERGE", "C{x}", 2, "A{x}", "B{x}")
    got = r.execute_command("CMS.QUERY", "C{x}", *[str(i) for i in range(3000)])
    # never below the true sum; the error bound 2/width * N with probability 1 - 2^-depth per item
    total = sum(a) + sum(b)
    assert all(g >= a[i] + b[i] for i, g in enumerate(got))
    assert sum(g - a[i] - b[i] > 2 / 2000 * total for i, g in enumerate(got)) <= 3


def test_persistence(servers):
    s = servers(extra=["--appendonly", "yes", "--appendfsync", "always", "--aof-use-rdb-preamble", "no"])
    r = s.client()
    r.execute_command("CMS.INITBYDIM", "c", 500, 4)
    r.execute_command("CMS.INITBYPROB", "p", 0.01, 0.01)
    items = [f"item{i}" for i in range(400)]
    for i, x in enumerate(items):
        r.execute_command("CMS.INCRBY", "c", x, i % 7 + 1)
        r.execute_command("CMS.INCRBY", "p", x, 1)
    want_c = r.execute_command("CMS.QUERY", "c", *items)
    want_p = r.execute_command("CMS.QUERY", "p", *items)
    want_info = info(r, "c")

    def check(r):
        assert r.execute_command("CMS.QUERY", "c", *items) == want_c
        assert r.execute_command("CMS.QUERY", "p", *items) == want_p
        assert info(r, "c") == want_info

    r.execute_command("DEBUG", "RELOAD")
    check(r)
    # DUMP / RESTORE (and COPY)
    dump = r.dump("c")
    r.restore("c2", 0, dump)
    assert r.execute_command("CMS.QUERY", "c2", *items) == want_c
    r.copy("c", "c3")
    r.execute_command("CMS.INCRBY", "c3", "item1", 1000)
    assert r.execute_command("CMS.QUERY", "c", "item1") == [want_c[1]]
    # a damaged payload is refused
    with pytest.raises(redis.ResponseError):
        r.restore("bad", 0, dump[:20] + bytes([dump[20] ^ 1]) + dump[21:])
    with pytest.raises(redis.ResponseError):
        r.restore("bad", 0, dump[:-12] + dump[-10:])
    # AOF rewrite, then a restart from the AOF alone
    r.bgrewriteaof()
    while r.info("persistence")["aof_rewrite_in_progress"] or r.info("persistence")["aof_rewrite_scheduled"]:
        pass
    base = [f for f in os.listdir(os.path.join(s.dir, "appendonlydir")) if ".base." in f]
    with open(os.path.join(s.dir, "appendonlydir", base[0]), "rb") as f:
        assert f.read().count(b"BK.SKETCH.LOAD") == 4  # c, p, c2, c3
    r.execute_command("CMS.INCRBY", "c", "late", 3)
    want_c = r.execute_command("CMS.QUERY", "c", *items)
    want_info = info(r, "c")
    s.restart(save=False)
    r = s.client()
    check(r)
    assert r.execute_command("CMS.QUERY", "c", "late")[0] >= 3
    # RDB restart
    r.save()
    s.restart(save=False, extra=["--appendonly", "no"])
    check(s.client())


def test_replication(servers):
    m = servers()
    rep = servers()
    rm = m.client()
    rm.execute_command("CMS.INITBYDIM", "c", 300, 5)
    rm.execute_command("CMS.INCRBY", "c", "a", 5, "b", 7)
    rep.replicate(m.port)
    rm.execute_command("CMS.INCRBY", "c", "a", 1)
    rm.execute_command("CMS.INITBYDIM", "d", 300, 5)
    rm.execute_command("CMS.INCRBY", "d", "a", 2)
    rm.execute_command("CMS.MERGE", "c", 2, "c", "d", "WEIGHTS", 1, 3)
    rm.execute_command("WAIT", 1, 5000)
    rr = rep.client()
    assert rr.execute_command("CMS.QUERY", "c", "a", "b", "z") == rm.execute_command("CMS.QUERY", "c", "a", "b", "z")
    assert rr.execute_command("CMS.QUERY", "c", "a") == [12]
    assert info(rr, "c") == info(rm, "c")


def test_memory_guard(servers):
    s = servers(extra=["--maxmemory", "20mb"])
    r = s.client()
    # 100M counters (400 MB) under a 20 MB maxmemory: refused cleanly, nothing made
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command("CMS.INITBYDIM", "huge", 10000000, 10)
    assert "OOM" in str(e.value) or str(e.value) == "Insufficient memory to create filter"
    assert r.exists("huge") == 0
    with pytest.raises(redis.ResponseError):
        r.execute_command("CMS.INITBYPROB", "huge", 0.0000001, 0.01)
    assert r.execute_command("CMS.INITBYDIM", "ok", 1000, 5) in (b"OK", True)
    # past MAX_FILTER_SIZE (the module's size limit): refused with RedisBloom's text
    s2 = servers(module_args=["MAX_FILTER_SIZE", "65536"])
    with pytest.raises(redis.ResponseError, match="^Insufficient memory to create filter$"):
        s2.client().execute_command("CMS.INITBYDIM", "big", 100000, 5)


def test_node_redis_like_calls(r):
    # what node-redis's cms helpers send: INITBYDIM / INITBYPROB, INCRBY with several pairs, QUERY with
    # several items, MERGE with and without WEIGHTS, INFO answered as a flat array
    assert r.execute_command("CMS.INITBYDIM", "{n}a", "1000", "5") == b"OK"
    assert r.execute_command("CMS.INITBYPROB", "{n}b", "0.001", "0.01") == b"OK"
    assert r.execute_command("CMS.INCRBY", "{n}a", "x", "1", "y", "2") == [1, 2]
    assert r.execute_command("CMS.QUERY", "{n}a", "x", "y") == [1, 2]
    r.execute_command("CMS.INITBYDIM", "{n}c", "1000", "5")
    assert r.execute_command("CMS.MERGE", "{n}c", "1", "{n}a") == b"OK"
    assert r.execute_command("CMS.MERGE", "{n}c", "1", "{n}a", "WEIGHTS", "3") == b"OK"
    assert r.execute_command("CMS.QUERY", "{n}c", "y") == [6]
    raw = r.execute_command("CMS.INFO", "{n}c")
    assert raw == [b"width", 1000, b"depth", 5, b"count", 9]
