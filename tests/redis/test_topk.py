"""TOPK.*: Top-K (HeavyKeeper) in a real redis-server, with RedisBloom 2.4's replies."""
import os

import pytest
import redis

INCR_ERR = ("TopK: increment must be an integer greater or equal to 0" + " " * 28 +
            "and smaller or equal to 100,000")


def err(r, *args):
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command(*args)
    return str(e.value)


def dec(x):
    if isinstance(x, list):
        return [dec(y) for y in x]
    return x.decode() if isinstance(x, bytes) else x


def test_simple(r):
    assert r.execute_command("TOPK.RESERVE", "topk", 20, 50, 5, 0.9) in (b"OK", True)
    assert r.execute_command("TOPK.ADD", "topk", "a") == [None]
    assert r.execute_command("TOPK.ADD", "topk", "a", "b") == [None, None]
    assert r.execute_command("TOPK.QUERY", "topk", "a") == [1]
    assert r.execute_command("TOPK.QUERY", "topk", "c") == [0]
    assert r.type("topk") == b"bloomkitK"


def test_validation(r):
    for args in ((), ("foo",), ("foo", "bar"), ("foo", "bar", "baz"), ("foo", "bar", "baz", "Qux"),
                 ("foo", "bar", "baz", "Qux", "Quux", "xyzzy"), ("foo", "bar", "50", "5", "0.9"),
                 ("foo", "20", "bar", "5", "0.9"), ("foo", "20", "50", "bar", "0.9"), ("foo", "20", "50", "5", "bar"),
                 ("foo", "0.9", "50", "5", "0.9"), ("foo", "20", "0.9", "5", "0.9"), ("foo", "20", "50", "0.9", "0.9"),
                 ("foo", "20", "50", "5", "42")):
        err(r, "TOPK.RESERVE", *args)
    assert r.exists("foo") == 0
    assert err(r, "TOPK.RESERVE", "foo", "0") == "TopK: invalid k"
    assert err(r, "TOPK.RESERVE", "foo", "4294967296") == "TopK: invalid k"
    assert err(r, "TOPK.RESERVE", "foo", "3", "0", "5", "0.9") == "TopK: invalid width"
    assert err(r, "TOPK.RESERVE", "foo", "3", "5", "0", "0.9") == "TopK: invalid depth"
    assert err(r, "TOPK.RESERVE", "foo", "3", "5", "5", "0") == "TopK: invalid decay value. must be '<= 1' & '> 0'"
    for cmd in ("TOPK.ADD", "TOPK.QUERY", "TOPK.COUNT", "TOPK.LIST", "TOPK.INFO"):
        assert "wrong number of arguments" in err(r, cmd)
    for cmd in ("TOPK.ADD", "TOPK.QUERY", "TOPK.COUNT"):
        assert "wrong number of arguments" in err(r, cmd, "topk")
    assert err(r, "TOPK.INFO", "test") == "TopK: key does not exist"
    r.set("king", "kong")
    assert "WRONGTYPE" in err(r, "TOPK.ADD", "king", "kong")
    assert err(r, "TOPK.ADD", "kong", "kong") == "TopK: key does not exist"
    assert err(r, "TOPK.RESERVE", "king", "3") == "TopK: key already exists"


def test_add_query_count(servers):
    s = servers()
    r = s.client()
    r.execute_command("TOPK.RESERVE", "topk", 20, 50, 5, 0.9)
    s.restart(save=True)
    r = s.client()
    r.execute_command("TOPK.ADD", "topk", "bar", "baz", "42")
    assert r.execute_command("TOPK.QUERY", "topk", "foo", "bar", "baz") == [0, 1, 1]
    assert r.execute_command("TOPK.COUNT", "topk", "foo", "bar", "baz") == [0, 1, 1]
    r.execute_command("TOPK.ADD", "topk", "bar", "baz")
    assert r.execute_command("TOPK.COUNT", "topk", "foo", "bar", "baz", "42") == [0, 2, 2, 1]
    assert r.execute_command("TOPK.ADD", "topk", "foo") == [None]
    assert r.execute_command("TOPK.QUERY", "topk", "foo", "xyxxy") == [1, 0]
    assert r.execute_command("TOPK.ADD", "topk", "foo", "1", "bar", "1") == [None] * 4


def test_incrby(r):
    r.execute_command("TOPK.RESERVE", "topk", 3, 10, 3, 1)
    assert r.execute_command("TOPK.INCRBY", "topk", "bar", 3, "baz", 6, "42", 2) == [None, None, None]
    assert dec(r.execute_command("TOPK.INCRBY", "topk", "42", 8, "xyzzy", 4)) == [None, "bar"]
    assert r.execute_command("TOPK.COUNT", "topk", "bar", "baz", "42", "xyzzy", 4) == [3, 6, 10, 4, 0]
    assert "wrong number of arguments" in err(r, "TOPK.INCRBY")
    for bad in (-5, 123456, "x"):
        res = r.execute_command("TOPK.INCRBY", "topk", "foo", bad)
        assert isinstance(res[0], redis.ResponseError) and str(res[0]) == INCR_ERR
    # items before a bad increment are applied, the bad one and those after it are not
    res = r.execute_command("TOPK.INCRBY", "topk", "baz", 1, "foo", -1, "bar", 1)
    assert res[0] is None and isinstance(res[1], redis.ResponseError) and isinstance(res[2], redis.ResponseError)
    assert r.execute_command("TOPK.COUNT", "topk", "baz", "bar") == [7, 3]


def test_lookup_table(r):
    r.execute_command("TOPK.RESERVE", "topk", 1, 3, 3, ".9")
    r.execute_command("TOPK.INCRBY", "topk", "bar", 300, "baz", 600, "42", 200)
    r.execute_command("TOPK.INCRBY", "topk", "42", 80, "xyzzy", 400)
    assert dec(r.execute_command("TOPK.LIST", "topk")) == ["baz"]


def test_list_info(r):
    r.execute_command("TOPK.RESERVE", "topk", 2, 50, 5, 0.9)
    assert err(r, "TOPK.RESERVE", "topk", 2, 50, 5, 0.9) == "TopK: key already exists"
    r.execute_command("TOPK.ADD", "topk", "foo", "bar", "baz", "42", "foo", "bar", "baz")
    r.execute_command("TOPK.ADD", "topk", "foo", "baz", "42", "foo", "baz")
    r.execute_command("TOPK.ADD", "topk", "foo", "bar", "baz", "foo", "baz")
    assert dec(r.execute_command("TOPK.LIST", "topk")) == ["foo", "baz"]
    assert dec(r.execute_command("TOPK.ADD", "topk", "bar", "bar", "bar", "bar", "bar")) == [None, None, "foo", None,
                                                                                            None]
    assert dec(r.execute_command("TOPK.LIST", "topk")) == ["bar", "baz"]
    assert dec(r.execute_command("TOPK.LIST", "topk", "WITHCOUNT")) == ["bar", 8, "baz", 6]
    assert err(r, "TOPK.LIST", "topk", "_topk_") == "WITHCOUNT keyword expected"
    info = dec(r.execute_command("TOPK.INFO", "topk"))
    assert info[:6] == ["k", 2, "width", 50, "depth", 5] and info[6] == "decay"
    assert float(info[7]) == 0.9
    assert "wrong number of arguments" in err(r, "TOPK.INFO", "topk", "_topk_")


def test_time(r):
    r.execute_command("TOPK.RESERVE", "topk", 100, 1000, 5, 0.9)
    p = r.pipeline(transaction=False)
    for _ in range(10):
        for i in range(50):
            p.execute_command("TOPK.ADD", "topk", i * 100)
    for _ in range(5):
        for i in range(5000):
            p.execute_command("TOPK.ADD", "topk", i)
    for _ in range(5):
        for i in range(100):
            p.execute_command("TOPK.ADD", "topk", i * 50)
    p.execute()
    lst = dec(r.execute_command("TOPK.LIST", "topk"))
    assert len(lst) == 100
    assert sum(1 for x in lst if int(x) % 100 == 0) > 45


def test_no_init_params(r):
    r.execute_command("TOPK.RESERVE", "topk", 3)
    r.execute_command("TOPK.ADD", "topk", "foo", "bar", "baz", "42", "foo", "bar", "baz", "foo", "foo", "foo", "foo")
    r.execute_command("TOPK.ADD", "topk", "foo", "baz", "42", "foo", "baz", "foo", "foo", "foo", "foo", "foo")
    r.execute_command("TOPK.ADD", "topk", "foo", "bar", "baz", "foo", "baz", "baz", "baz", "baz")
    assert dec(r.execute_command("TOPK.LIST", "topk")) == ["foo", "baz", "bar"]
    info = dec(r.execute_command("TOPK.INFO", "topk"))
    assert info[:7] == ["k", 3, "width", 8, "depth", 7, "decay"]
    # RESP2 doubles as RedisBloom sends them (%.17g)
    assert info[7] == "0.90000000000000002"


def test_list_with_count_and_binary_items(r):
    r.execute_command("TOPK.RESERVE", "topk", 3)
    r.execute_command("TOPK.ADD", "topk", "foo", "bar", "baz", "42", "foo", "bar", "baz")
    r.execute_command("TOPK.ADD", "topk", "foo", "baz", "42", "foo", "baz")
    r.execute_command("TOPK.ADD", "topk", "foo", "bar", "baz", "foo", "baz")
    # of two equal counts, the one that reached it first comes first
    assert dec(r.execute_command("TOPK.LIST", "topk", "WITHCOUNT")) == ["foo", 6, "baz", 6, "bar", 3]
    r.execute_command("TOPK.RESERVE", "bin", 2, 50, 5, 0.9)
    r.execute_command("TOPK.INCRBY", "bin", b"a\r\nb", 5, b"z\x00z", 3)
    assert r.execute_command("TOPK.LIST", "bin") == [b"a\r\nb", b"z\x00z"]
    assert r.execute_command("TOPK.QUERY", "bin", b"z\x00z", b"z") == [1, 0]


def test_empty_string(r):
    r.execute_command("TOPK.RESERVE", "topk", 3)
    r.execute_command("TOPK.ADD", "topk", "")
    assert r.execute_command("TOPK.LIST", "topk") == [b""]
    assert r.execute_command("TOPK.LIST", "topk", "WITHCOUNT") == [b"", 1]
    assert r.execute_command("TOPK.QUERY", "topk", "") == [1]
    assert r.execute_command("TOPK.COUNT", "topk", "") == [1]
    r.execute_command("TOPK.INCRBY", "topk", "", 100)
    assert r.execute_command("TOPK.LIST", "topk", "WITHCOUNT") == [b"", 101]
    r.execute_command("TOPK.ADD", "topk", "foo", "bar", "baz")
    r.execute_command("TOPK.ADD", "topk", "foo", "bar", "baz", "")
    r.execute_command("TOPK.ADD", "topk", "foo", "bar", "")
    r.execute_command("TOPK.ADD", "topk", "foo", "")
    assert dec(r.execute_command("TOPK.LIST", "topk", "WITHCOUNT")) == ["", 104, "foo", 4, "bar", 3]
    assert r.execute_command("TOPK.QUERY", "topk", "bla", "foo", "") == [0, 1, 1]
    r.execute_command("TOPK.INCRBY", "topk", "foo", 500, "bar", 500, "baz", 500)
    assert dec(r.execute_command("TOPK.LIST", "topk", "WITHCOUNT")) == ["foo", 504, "bar", 503, "baz", 502]


def test_list_no_duplicates(r):
    r.execute_command("TOPK.RESERVE", "topk", 10, 8, 7, 1)
    r.execute_command("TOPK.ADD", "topk", *"j h d j h h j g e g i f g f a j c i a d".split())
    lst = r.execute_command("TOPK.LIST", "topk")
    assert len(set(lst)) == len(lst)


def test_persistence_and_replication(servers):
    m = servers(extra=["--appendonly", "yes", "--aof-use-rdb-preamble", "no"])
    rm = m.client()
    rm.execute_command("TOPK.RESERVE", "t", 10, 100, 5, 0.9)
    p = rm.pipeline(transaction=False)
    for i in range(3000):
        p.execute_command("TOPK.ADD", "t", f"k{i % 37}", f"k{(i * 7) % 101}")
    p.execute()
    rep = servers()
    rep.replicate(m.port)
    # after the full sync, more adds with decay: the replica draws the same decay as its master
    for i in range(2000):
        p.execute_command("TOPK.INCRBY", "t", f"k{(i * 13) % 211}", 1 + i % 5)
    p.execute()
    rm.execute_command("WAIT", 1, 5000)
    rr = rep.client()
    want = rm.execute_command("TOPK.LIST", "t", "WITHCOUNT")
    names = [f"k{i}" for i in range(211)]
    want_counts = rm.execute_command("TOPK.COUNT", "t", *names)
    assert rr.execute_command("TOPK.LIST", "t", "WITHCOUNT") == want
    assert rr.execute_command("TOPK.COUNT", "t", *names) == want_counts
    # DUMP / RESTORE, COPY
    rm.restore("t2", 0, rm.dump("t"))
    assert rm.execute_command("TOPK.LIST", "t2", "WITHCOUNT") == want
    rm.copy("t", "t3")
    assert rm.execute_command("TOPK.COUNT", "t3", *names) == want_counts
    dump = rm.dump("t")
    with pytest.raises(redis.ResponseError):
        rm.restore("bad", 0, dump[:30] + bytes([dump[30] ^ 4]) + dump[31:])
    # AOF rewrite, restart from the AOF, the same state (and the same future)
    rm.bgrewriteaof()
    while rm.info("persistence")["aof_rewrite_in_progress"] or rm.info("persistence")["aof_rewrite_scheduled"]:
        pass
    m.restart(save=False)
    rm = m.client()
    assert rm.execute_command("TOPK.LIST", "t", "WITHCOUNT") == want
    assert rm.execute_command("TOPK.COUNT", "t", *names) == want_counts
    rm.execute_command("TOPK.INCRBY", "t", "k5", 50, "k6", 3)
    rm.execute_command("TOPK.INCRBY", "t2", "k5", 50, "k6", 3)
    assert rm.execute_command("TOPK.LIST", "t", "WITHCOUNT") == rm.execute_command("TOPK.LIST", "t2", "WITHCOUNT")
    rm.execute_command("DEBUG", "RELOAD")
    assert rm.execute_command("TOPK.LIST", "t2", "WITHCOUNT") == rm.execute_command("TOPK.LIST", "t", "WITHCOUNT")


def test_memory_guard(servers):
    s = servers(extra=["--maxmemory", "20mb"])
    r = s.client()
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command("TOPK.RESERVE", "huge", 10, 4000000, 10, 0.9)
    assert "OOM" in str(e.value) or str(e.value) == "Insufficient memory to create filter"
    assert r.exists("huge") == 0
    with pytest.raises(redis.ResponseError):
        r.execute_command("TOPK.RESERVE", "huge", 4000000000)
    assert r.execute_command("TOPK.RESERVE", "ok", 10) in (b"OK", True)


def test_node_redis_like_calls(r):
    # node-redis's topK helpers: RESERVE with and without the options, ADD / INCRBY replies as arrays of
    # nil or bulk names, LIST and LIST WITHCOUNT, INFO as a flat array, QUERY / COUNT as integers
    assert r.execute_command("TOPK.RESERVE", "a", "3") == b"OK"
    assert r.execute_command("TOPK.RESERVE", "b", "3", "50", "4", "0.5") == b"OK"
    assert r.execute_command("TOPK.ADD", "b", "x", "y", "z", "x") == [None] * 4
    assert r.execute_command("TOPK.INCRBY", "b", "w", "10") == [b"y"] or \
        r.execute_command("TOPK.LIST", "b")[0] == b"w"
    assert r.execute_command("TOPK.LIST", "b")[0] == b"w"
    lst = r.execute_command("TOPK.LIST", "b", "WITHCOUNT")
    assert lst[0] == b"w" and lst[1] == 10 and len(lst) == 6
    assert r.execute_command("TOPK.QUERY", "b", "w", "nope") == [1, 0]
    assert r.execute_command("TOPK.COUNT", "b", "w", "x") == [10, 2]
    assert dec(r.execute_command("TOPK.INFO", "b"))[:6] == ["k", 3, "width", 50, "depth", 4]
