"""BF.* through redis-py (r.bf() and raw commands): happy paths, error paths, reply shapes."""
import pytest
import redis

import rbformat
from resp import Bool, Conn, Err, Map, Null, Simple


def err(r, *args):
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command(*args)
    return str(e.value)


def test_reserve_add_exists(r):
    bf = r.bf()
    assert bf.create("f", 0.01, 1000)
    assert bf.add("f", "a") == 1
    assert bf.add("f", "a") == 0
    assert bf.exists("f", "a") == 1
    assert bf.exists("f", "b") == 0
    assert bf.madd("f", "b", "c", "a") == [1, 1, 0]
    assert bf.mexists("f", "a", "b", "c", "zz") == [1, 1, 1, 0]
    assert r.execute_command("BF.CARD", "f") == 3
    info = bf.info("f")
    assert info.capacity == 1000 and info.filterNum == 1 and info.insertedNum == 3
    assert info.expansionRate == 2 and info.size > 1000 * 9 / 8 * 0.9


def test_add_creates_with_defaults(r):
    assert r.bf().add("auto", "x") == 1
    info = r.bf().info("auto")
    assert (info.capacity, info.filterNum, info.insertedNum, info.expansionRate) == (100, 1, 1, 2)
    assert r.execute_command("BF.MADD", "auto2", "x", "y") == [1, 1]
    assert r.bf().info("auto2").capacity == 100


def test_missing_keys(r):
    assert r.bf().exists("nokey", "a") == 0
    assert r.bf().mexists("nokey", "a", "b") == [0, 0]
    assert r.execute_command("BF.CARD", "nokey") == 0
    assert err(r, "BF.INFO", "nokey") == "not found"  # redis-py strips the ERR prefix
    assert err(r, "BF.SCANDUMP", "nokey", 0) == "not found"
    assert err(r, "BF.INSERT", "nokey", "NOCREATE", "ITEMS", "a") == "not found"
    assert r.exists("nokey") == 0


def test_reserve_errors(r):
    assert err(r, "BF.RESERVE", "f", "x", 100) == "bad error rate"
    assert err(r, "BF.RESERVE", "f", "0", 100) == "(0 < error rate range < 1) "
    assert err(r, "BF.RESERVE", "f", "1", 100) == "(0 < error rate range < 1) "
    assert err(r, "BF.RESERVE", "f", "nan", 100) in ("bad error rate", "(0 < error rate range < 1) ")
    assert err(r, "BF.RESERVE", "f", 0.01, "x") == "bad capacity"
    assert err(r, "BF.RESERVE", "f", 0.01, 0) == "(capacity should be larger than 0)"
    assert err(r, "BF.RESERVE", "f", 0.01, -5) == "(capacity should be larger than 0)"
    assert err(r, "BF.RESERVE", "f", 0.01, 100, "EXPANSION") == "no expansion"
    assert err(r, "BF.RESERVE", "f", 0.01, 100, "EXPANSION", "x") == "bad expansion"
    assert err(r, "BF.RESERVE", "f", 0.01, 100, "EXPANSION", 0) == "expansion should be greater or equal to 1"
    assert err(r, "BF.RESERVE", "f", 0.01, 100, "EXPANSION", 17).startswith("expansion should be at most 16")
    assert err(r, "BF.RESERVE", "f", 0.01, 100, "NONSCALING", "EXPANSION", 2) == "Nonscaling filters cannot expand"
    assert err(r, "BF.RESERVE", "f", 0.01, 100, "BOGUS").startswith("unknown argument")
    assert "wrong number of arguments" in err(r, "BF.RESERVE", "f", 0.01)
    assert "wrong number of arguments" in err(r, "BF.RESERVE", "f", 0.01, 100, 1, 2, 3, 4)
    assert r.exists("f") == 0  # nothing half-made
    assert r.bf().create("f", 0.01, 100)
    assert err(r, "BF.RESERVE", "f", 0.01, 100) == "item exists"


def test_absurd_size_refused(server, r):
    # RedisBloom's text; the log says which limit (MAX_FILTER_SIZE)
    assert err(r, "BF.RESERVE", "huge", "1e-9", 10**12) == "Insufficient memory to create filter"
    e = err(r, "BF.INSERT", "huge", "CAPACITY", 10**15, "ERROR", "1e-12", "ITEMS", "a")
    assert e == "Insufficient memory to create filter"
    assert r.exists("huge") == 0
    assert r.ping()


def test_nonscaling_fills_up(r):
    assert r.bf().create("ns", 0.01, 50, noScale=True)
    info = r.bf().info("ns")
    assert info.expansionRate is None
    added, i = 0, 0
    while True:
        i += 1
        try:
            added += r.bf().add("ns", f"item-{i}")
        except redis.ResponseError as e:
            assert str(e) == "non scaling filter is full"
            break
        assert i < 1000
    assert added == 50 and r.execute_command("BF.CARD", "ns") == 50
    # MADD: the error takes the failing item's place and ends the array
    res = r.execute_command("BF.MADD", "ns", "item-1", "new-1", "new-2")
    assert res[0] == 0 and isinstance(res[1], redis.ResponseError) and len(res) == 2
    assert str(res[1]) == "non scaling filter is full"
    for j in range(1, i):
        assert r.bf().exists("ns", f"item-{j}") == 1


def test_expansion_one_adds_same_size_filters(server, r):
    # RedisBloom: EXPANSION 1 is legal and grows by same-size sub-filters; NONSCALING is separate.
    assert r.execute_command("BF.RESERVE", "e1", 0.01, 100, "EXPANSION", 1) in (b"OK", "OK", True)
    assert r.bf().info("e1").expansionRate == 1
    c = Conn(server.port)  # raw replies (redis-py's bf() installs a parser for BF.INFO)
    assert c.call("BF.INFO", "e1", "EXPANSION") == [1]
    items = [f"e1-{i}" for i in range(1000)]
    added = sum(r.bf().madd("e1", *items))
    info = r.bf().info("e1")
    assert info.filterNum >= 10 and info.capacity == 100 * info.filterNum
    assert info.insertedNum == added and added > 990
    assert all(r.bf().mexists("e1", *items))
    assert r.bf().insert("e2", ["a"], capacity=50, expansion=1) == [1]
    assert r.bf().info("e2").expansionRate == 1
    # NONSCALING reports nil, EXPANSION 2 reports 2
    assert r.execute_command("BF.RESERVE", "ns1", 0.01, 100, "NONSCALING")
    assert c.call("BF.INFO", "ns1", "EXPANSION") == [Null()]
    c.close()
    # survives a reload as the same kind of filter
    r.execute_command("DEBUG", "RELOAD")
    assert r.bf().info("e1").expansionRate == 1 and r.bf().info("ns1").expansionRate is None
    assert all(r.bf().mexists("e1", *items))


def test_scaling_grows_without_false_negatives(r):
    assert r.bf().create("g", 0.01, 100, expansion=2)
    items = [f"key:{i}" for i in range(3000)]
    for k in range(0, len(items), 500):
        r.bf().madd("g", *items[k:k + 500])
    info = r.bf().info("g")
    assert info.filterNum >= 5  # 100 + 200 + 400 + 800 + 1600 >= 3000
    assert info.capacity == sum(100 * 2**i for i in range(info.filterNum))
    # an add that meets a false positive is not counted; the chain's FPR stays under 1% while it fills,
    # so fewer than 30 of the 3,000 (about 11 expected)
    assert info.insertedNum <= 3000 and info.insertedNum >= 2970
    assert all(x == 1 for x in r.bf().mexists("g", *items))
    absent = [f"absent:{i}" for i in range(20000)]
    fp = sum(r.bf().mexists("g", *absent[k:k + 1000]).count(1) for k in range(0, len(absent), 1000))
    assert fp / len(absent) <= 0.015  # target 0.01; the chain's compound bound keeps it under


def test_insert_options(r):
    bf = r.bf()
    assert bf.insert("i1", ["a", "b"], capacity=500, error=0.001, expansion=4) == [1, 1]
    info = bf.info("i1")
    assert (info.capacity, info.expansionRate, info.insertedNum) == (500, 4, 2)
    assert bf.insert("i2", ["a"], noScale=True, capacity=10) == [1]
    assert bf.info("i2").expansionRate is None
    assert bf.insert("i1", ["a", "c"], noCreate=True) == [0, 1]
    # options are read positionally: everything after ITEMS is an item
    assert r.execute_command("BF.INSERT", "i3", "ITEMS", "NONSCALING", "CAPACITY", "NOCREATE") == [1, 1, 1]
    assert bf.info("i3").expansionRate == 2 and bf.info("i3").capacity == 100
    assert bf.exists("i3", "NONSCALING") == 1


def test_insert_errors(r):
    assert "wrong number of arguments" in err(r, "BF.INSERT", "k", "ITEMS")
    assert "wrong number of arguments" in err(r, "BF.INSERT", "k", "CAPACITY", 10, "ITEMS")
    assert "wrong number of arguments" in err(r, "BF.INSERT", "k", "CAPACITY")
    assert "wrong number of arguments" in err(r, "BF.INSERT", "k", "NOCREATE", "NONSCALING")
    assert err(r, "BF.INSERT", "k", "CAPACITY", "x", "ITEMS", "a") == "Bad capacity"
    assert err(r, "BF.INSERT", "k", "ERROR", "x", "ITEMS", "a") == "Bad error rate"
    assert err(r, "BF.INSERT", "k", "EXPANSION", "x", "ITEMS", "a") == "Bad expansion"
    assert err(r, "BF.INSERT", "k", "FOO", "ITEMS", "a") == "Unknown argument received"
    assert err(r, "BF.INSERT", "k", "ERROR", 2, "ITEMS", "a") == "Bad argument received"
    assert err(r, "BF.INSERT", "k", "CAPACITY", 0, "ITEMS", "a") == "Bad argument received"
    assert err(r, "BF.INSERT", "k", "EXPANSION", 0, "ITEMS", "a") == "Bad argument received"
    assert err(r, "BF.INSERT", "k", "NONSCALING", "EXPANSION", 0, "ITEMS", "a") == "Bad argument received"
    assert err(r, "BF.INSERT", "k", "NONSCALING", "EXPANSION", 17, "ITEMS", "a") == "ERR expansion should be at most 16"[4:]
    assert r.exists("k") == 0


def test_insert_nonscaling_with_expansion(r):
    # RedisBloom 2.4 accepts EXPANSION beside NONSCALING in BF.INSERT (the expansion has no effect), and
    # redis-py's insert(expansion=..., noScale=True) sends exactly that.
    assert r.bf().insert("k", ["a", "b"], capacity=10, error=0.01, expansion=4, noScale=True) == [1, 1]
    info = r.bf().info("k")
    assert info.expansionRate is None and info.capacity == 10 and info.filterNum == 1
    assert r.execute_command("BF.INSERT", "k2", "EXPANSION", 2, "NONSCALING", "ITEMS", "x") == [1]
    assert r.bf().info("k2").expansionRate is None
    # full: no growth
    r.bf().insert("n", [f"i{i}" for i in range(5)], capacity=5, expansion=2, noScale=True)
    got = r.execute_command("BF.INSERT", "n", "NONSCALING", "EXPANSION", 2, "ITEMS",
                            *[f"j{i}" for i in range(200)])
    assert isinstance(got[-1], redis.ResponseError) and "non scaling filter is full" in str(got[-1])
    assert r.bf().info("n").filterNum == 1


def test_expansion_one_adds_equal_layers(r):
    # EXPANSION 1: growth by sub-filters of the same capacity (RedisBloom accepts it too).
    r.execute_command("BF.INSERT", "e1", "CAPACITY", 100, "EXPANSION", 1, "ITEMS", *[f"a{i}" for i in range(1000)])
    info = r.bf().info("e1")
    assert info.expansionRate == 1 and info.filterNum >= 10
    assert info.capacity == 100 * info.filterNum
    assert all(r.bf().mexists("e1", *[f"a{i}" for i in range(1000)]))
    r.bf().create("e2", 0.01, 50, expansion=1)
    r.bf().madd("e2", *[f"b{i}" for i in range(300)])
    assert r.bf().info("e2").capacity == 50 * r.bf().info("e2").filterNum
    r.cf().create("c1", 100, expansion=1)
    r.cf().insert("c1", [f"c{i}" for i in range(1000)])
    assert r.cf().info("c1").filterNum > 1 and all(r.cf().mexists("c1", *[f"c{i}" for i in range(1000)]))


def test_key_named_like_an_option(r):
    # RedisBloom scans every argument for NONSCALING / EXPANSION; here the key is just a key.
    assert r.execute_command("BF.RESERVE", "NONSCALING", 0.01, 100) in (b"OK", "OK", True)
    assert r.bf().info("NONSCALING").expansionRate == 2
    assert r.execute_command("BF.RESERVE", "EXPANSION", 0.01, 100, "EXPANSION", 4)
    assert r.bf().info("EXPANSION").expansionRate == 4


def test_wrongtype(r):
    r.set("str", "v")
    r.cf().create("cuckoo", 1000)
    for key in ("str", "cuckoo"):
        for cmd in (["BF.EXISTS", key, "a"], ["BF.MEXISTS", key, "a"], ["BF.ADD", key, "a"],
                    ["BF.MADD", key, "a"], ["BF.INSERT", key, "ITEMS", "a"], ["BF.INFO", key],
                    ["BF.CARD", key], ["BF.RESERVE", key, 0.01, 10], ["BF.SCANDUMP", key, 0],
                    ["BF.LOADCHUNK", key, 1, b"x"]):
            assert err(r, *cmd).startswith("WRONGTYPE"), cmd
    assert r.get("str") == b"v"


def test_info_fields(server, r):
    r.bf().create("f", 0.01, 1000, expansion=3)
    r.bf().madd("f", "a", "b")
    c = Conn(server.port)  # raw replies (redis-py's bf() installs a parser for BF.INFO)
    full = c.call("BF.INFO", "f")
    names = [full[i] for i in range(0, len(full), 2)]
    assert names == ["Capacity", "Size", "Number of filters", "Number of items inserted", "Expansion rate"]
    assert all(isinstance(n, Simple) for n in names)
    assert full[1] == 1000 and full[5] == 1 and full[7] == 2 and full[9] == 3
    assert c.call("BF.INFO", "f", "CAPACITY") == [1000]
    assert c.call("BF.INFO", "f", "items") == [2]
    assert c.call("BF.INFO", "f", "FILTERS") == [1]
    assert c.call("BF.INFO", "f", "EXPANSION") == [3]
    assert c.call("BF.INFO", "f", "SIZE") == [full[3]]
    assert c.call("BF.INFO", "f", "BOGUS") == "Invalid information value"
    r.bf().create("ns", 0.01, 10, noScale=True)
    assert c.call("BF.INFO", "ns", "EXPANSION") == [Null()]
    c.close()


def test_resp3_shapes(server):
    c = Conn(server.port, resp=3)
    assert c.call("BF.RESERVE", "f", 0.01, 100) == Simple("OK")
    assert c.call("BF.ADD", "f", "a") == Bool(True)
    assert c.call("BF.ADD", "f", "a") == Bool(False)
    assert c.call("BF.EXISTS", "f", "a") == Bool(True)
    assert c.call("BF.EXISTS", "nokey", "a") == Bool(False)
    assert c.call("BF.MADD", "f", "a", "b") == [Bool(False), Bool(True)]
    assert c.call("BF.MEXISTS", "f", "a", "zz") == [Bool(True), Bool(False)]
    assert c.call("BF.INSERT", "f", "ITEMS", "c") == [Bool(True)]
    info = c.call("BF.INFO", "f")
    assert isinstance(info, Map)
    assert [k for k, _ in info] == ["Capacity", "Size", "Number of filters", "Number of items inserted",
                                    "Expansion rate"]
    assert dict(info)["Capacity"] == 100 and dict(info)["Expansion rate"] == 2
    assert c.call("BF.INFO", "f", "CAPACITY") == Map([("Capacity", 100)])
    assert c.call("BF.CARD", "f") == 3
    c.call("BF.RESERVE", "ns", 0.01, 100, "NONSCALING")
    assert dict(c.call("BF.INFO", "ns"))["Expansion rate"] == Null()
    c.close()
    # RESP2: integers, flat arrays, null bulk
    c2 = Conn(server.port, resp=2)
    assert c2.call("BF.ADD", "f", "zz") == 1
    assert c2.call("BF.EXISTS", "f", "zz") == 1
    info2 = c2.call("BF.INFO", "ns")
    assert isinstance(info2, list) and len(info2) == 10 and info2[9] == Null()
    assert c2.call("BF.INFO", "f", "CAPACITY") == [100]
    c2.close()


def test_binary_and_empty_items(r):
    items = [b"", b"\x00", b"\x00\x01\xff", bytes(range(256)), b"x" * 100000]
    assert r.execute_command("BF.MADD", "b", *items) == [1] * len(items)
    assert r.execute_command("BF.MEXISTS", "b", *items) == [1] * len(items)


def test_tightening_ratio_argument(servers):
    # A reserved scaling filter that never grows: its one sub-filter is sized at p / 2, as RedisBloom's,
    # whatever r (compact chains): about 11 bits per key at 1%. The later sub-filters share the other
    # p / 2 by r: with r = 0.5 (RedisBloom's) the second gets p / 4, with the default r less, so it is
    # larger.
    reserved, grown = {}, {}
    for r_arg in (None, "0.5"):
        s = servers(module_args=[] if r_arg is None else ["BF_TIGHTENING_RATIO", r_arg])
        c = s.client()
        c.bf().create("f", 0.01, 1_000_000)
        reserved[r_arg] = c.bf().info("f").size
        c.bf().create("g", 0.01, 1000)
        c.execute_command("BF.MADD", "g", *[f"item:{i}" for i in range(1500)])
        assert c.bf().info("g").filterNum == 2
        grown[r_arg] = c.bf().info("g").size
    # about 1.38 MB of bits, reported as the allocator's size class that holds them (1.5 MiB)
    assert 1_400_000 < reserved["0.5"] < 1_600_000, reserved
    assert reserved[None] == reserved["0.5"]
    assert grown[None] > grown["0.5"], grown


def test_subfilters_argument(servers):
    # New Bloom filters have blocked sub-filters; BF_SUBFILTERS classic makes classic ones (smaller, the
    # same answers for added items). BK.INFO's bits per item tells them apart.
    bpi = {}
    items = ["i%d" % i for i in range(20000)]
    for arg in ("blocked", "classic"):
        s = servers(module_args=["BF_SUBFILTERS", arg])
        c = s.client()
        c.execute_command("BF.MADD", "f", *items)
        assert c.execute_command("BF.MEXISTS", "f", *items) == [1] * len(items)
        info = c.execute_command("BK.INFO", "f")
        info = dict(zip(info[0::2], info[1::2])) if isinstance(info, list) else info
        key = b"bits_per_item" if b"bits_per_item" in info else "bits_per_item"
        bpi[arg] = float(info[key])
    assert bpi["classic"] < bpi["blocked"] < 1.15 * bpi["classic"], bpi


def allocator_size(n):
    """The block jemalloc (Redis's allocator) hands out for n bytes: four size classes per doubling."""
    spacing = 1 << max((n - 1).bit_length() - 3, 4)
    return -(-n // spacing) * spacing


@pytest.mark.parametrize("error", [0.1, 0.01, 0.001, 2e-4, 1e-4, 1e-6, 1e-9, 1e-12, 1e-20, 1e-30])
def test_reserve_takes_no_more_memory_than_redisbloom(r, error):
    # BF.RESERVE's MEMORY USAGE within 1.1x of what RedisBloom's allocator holds for the same reservation:
    # its first sub-filter's array (rbformat's model of RedisBloom's sizing) in jemalloc's size class, plus
    # 512 bytes for its structs. Below 0.001 the sub-filters are classic (blocked ones would take 1.09x
    # at 1e-4 up to thousands of times at 1e-30); the filter keeps every item and its error rate.
    caps = (1000000,) if error >= 0.001 else (10000, 1000000)
    for cap in caps:
        assert r.execute_command("BF.RESERVE", "k", error, cap) in (b"OK", True, "OK")
        redisbloom = allocator_size(rbformat.Chain(cap, error).links[0].nbytes) + 512
        assert r.memory_usage("k") <= 1.1 * redisbloom, (cap, r.memory_usage("k"), redisbloom)
        items = [f"i{i}" for i in range(2000)]
        r.bf().madd("k", *items)
        assert r.bf().mexists("k", *items) == [1] * len(items)
        absent = [f"a{i}" for i in range(20000)]
        assert sum(r.bf().mexists("k", *absent)) <= max(20000 * error * 3, 3)
        r.delete("k")


def test_module_arguments(servers):
    s = servers(module_args=["ERROR_RATE", "0.001", "INITIAL_SIZE", "400", "CF_MAX_EXPANSIONS", "4"])
    c = s.client()
    c.bf().add("f", "a")
    assert c.bf().info("f").capacity == 400
    # a bad argument makes the module (and the server) refuse to start
    for bad in (["ERROR_RATE", "2"], ["INITIAL_SIZE", "0"], ["CF_MAX_EXPANSIONS", "0"], ["BOGUS", "1"],
                ["ERROR_RATE"], ["CF_FINGERPRINT_BITS", "9"], ["BF_TIGHTENING_RATIO", "1"],
                ["BF_SUBFILTERS", "fast"], ["CF_PACKED", "maybe"]):
        b = servers(module_args=bad, start=False)
        b.expected_exit = True
        assert b.start(expect_fail=True) is False, bad


def test_empty_module_argument(servers):
    # `--loadmodule bloomkit.so ""` (one empty argument) starts with the defaults; empty strings between
    # real arguments are skipped too.
    s = servers(module_args=[""])
    s.client().bf().add("f", "a")
    assert s.client().bf().info("f").capacity == 100
    t = servers(module_args=["", "INITIAL_SIZE", "", "300"])
    t.client().bf().add("f", "a")
    assert t.client().bf().info("f").capacity == 300
