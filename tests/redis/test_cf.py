"""CF.* through redis-py (r.cf() and raw commands): happy paths, error paths, reply shapes."""
import pytest
import redis

import rbformat
from resp import Bool, Conn, Map, Simple


def err(r, *args):
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command(*args)
    return str(e.value)


def test_reserve_add_count_del(r):
    cf = r.cf()
    assert cf.create("c", 1000)
    assert cf.add("c", "a") == 1
    assert cf.add("c", "a") == 1  # duplicates are stored again
    assert cf.count("c", "a") == 2
    assert cf.addnx("c", "a") == 0
    assert cf.addnx("c", "b") == 1
    assert cf.exists("c", "a") == 1 and cf.exists("c", "zz") == 0
    assert cf.mexists("c", "a", "b", "zz") == [1, 1, 0]
    assert cf.delete("c", "a") == 1
    assert cf.count("c", "a") == 1
    assert cf.delete("c", "a") == 1
    assert cf.exists("c", "a") == 0 and cf.count("c", "a") == 0
    assert cf.delete("c", "a") == 0
    info = cf.info("c")
    assert info.filterNum == 1 and info.insertedNum == 1 and info.deletedNum == 2
    assert info.bucketSize == 2 and info.expansionRate == 1 and info.maxIteration == 20
    assert info.bucketNum >= 1000 // 2 and info.size > 0


def test_small_reserve_holds_its_capacity(r):
    # A small table is rounded up to a power of two of buckets, as RedisBloom rounds every table:
    # CF.RESERVE k 100 gets 64 buckets of 2 slots, so 100 items stay in the first table, and the
    # measured false-positive rate is RedisBloom's for the same commands, 1 - (1 - 1/255)^(4 * 100/128)
    # = 1.22% (50 buckets would grow a second table at about 84 items and answer about 1.6%). Fixed
    # item names: 20 keys of 100 items, 1,000 absent items queried per key (20,000 in all).
    keys, items, absent = 20, 100, 1000
    bound = 1 - (1 - 1 / 255) ** (2 * 2 * items / 128)
    pipe = r.pipeline(transaction=False)
    for k in range(keys):
        pipe.execute_command("CF.RESERVE", f"s{k}", items)
        for i in range(items):
            pipe.execute_command("CF.ADD", f"s{k}", f"item:{k}:{i}")
    assert all(pipe.execute())
    fp = 0
    for k in range(keys):
        info = r.cf().info(f"s{k}")
        assert (info.bucketNum, info.filterNum, info.insertedNum) == (64, 1, items)
        assert r.execute_command("CF.MEXISTS", f"s{k}", *[f"item:{k}:{i}" for i in range(items)]) == [1] * items
        fp += sum(r.execute_command("CF.MEXISTS", f"s{k}", *[f"absent:{k}:{i}" for i in range(absent)]))
    rate = fp / (keys * absent)
    assert rate <= 1.1 * bound, (rate, bound)
    # Rounding stops at 256 buckets (CF.ADD's default capacity, 1024, makes 512 as in RedisBloom).
    assert r.cf().create("big", 1000)
    assert r.cf().info("big").bucketNum == 500


def test_options_any_order(r):
    assert r.cf().create("c", 5000, expansion=2, bucket_size=4, max_iterations=50)
    info = r.cf().info("c")
    assert (info.bucketSize, info.expansionRate, info.maxIteration) == (4, 2, 50)
    assert r.execute_command("CF.RESERVE", "d", 100, "MAXITERATIONS", 5, "BUCKETSIZE", 1, "EXPANSION", 0)
    info = r.cf().info("d")
    assert (info.bucketSize, info.expansionRate, info.maxIteration) == (1, 0, 5)


def test_any_bucket_size(r):
    # RedisBloom takes 1 .. 255 slots per bucket
    for b in (3, 5, 7, 16, 100, 255):
        key = f"bs{b}"
        assert r.cf().create(key, 4000, bucket_size=b, expansion=2)
        assert r.cf().info(key).bucketSize == b
        items = [f"{key}-{i}" for i in range(5000)]
        for i in range(0, len(items), 500):
            assert r.execute_command("CF.INSERT", key, "ITEMS", *items[i:i + 500]) == [1] * 500
        assert all(r.cf().mexists(key, *items))
        assert r.cf().count(key, items[0]) >= 1
        assert r.cf().delete(key, items[0]) == 1
        assert all(r.cf().mexists(key, *items[1:]))
    r.execute_command("DEBUG", "RELOAD")
    assert r.cf().info("bs255").bucketSize == 255
    assert all(r.cf().mexists("bs7", *[f"bs7-{i}" for i in range(1, 5000)]))


def test_add_creates_default(r):
    assert r.cf().add("auto", "x") == 1
    info = r.cf().info("auto")
    assert info.bucketSize == 2 and info.expansionRate == 1 and info.maxIteration == 20
    assert r.cf().insert("auto2", ["a", "b"], capacity=4000) == [1, 1]
    assert r.cf().info("auto2").bucketNum > r.cf().info("auto").bucketNum


def test_reserve_errors(r):
    assert err(r, "CF.RESERVE", "c", "x") == "Bad capacity"
    assert err(r, "CF.RESERVE", "c", 100, "MAXITERATIONS", "x") == "Couldn't parse MAXITERATIONS"
    assert err(r, "CF.RESERVE", "c", 100, "MAXITERATIONS", 0) == \
        "MAXITERATIONS: value must be an integer between 1 and 65535, inclusive."
    assert err(r, "CF.RESERVE", "c", 100, "MAXITERATIONS", 65536).startswith("MAXITERATIONS")
    assert err(r, "CF.RESERVE", "c", 100, "BUCKETSIZE", "x") == "Couldn't parse BUCKETSIZE"
    assert err(r, "CF.RESERVE", "c", 100, "BUCKETSIZE", 0) == \
        "BUCKETSIZE: value must be an integer between 1 and 255, inclusive."
    assert err(r, "CF.RESERVE", "c", 1000, "BUCKETSIZE", 256).startswith("BUCKETSIZE")
    assert err(r, "CF.RESERVE", "c", 100, "EXPANSION", "x") == "Couldn't parse EXPANSION"
    assert err(r, "CF.RESERVE", "c", 100, "EXPANSION", -1) == \
        "EXPANSION: value must be an integer between 0 and 32768, inclusive."
    assert err(r, "CF.RESERVE", "c", 3) == "Capacity must be at least (BucketSize * 2)"
    assert err(r, "CF.RESERVE", "c", 15, "BUCKETSIZE", 8) == "Capacity must be at least (BucketSize * 2)"
    assert err(r, "CF.RESERVE", "c", 100, "FOO", 1).startswith("unknown argument")
    assert "wrong number of arguments" in err(r, "CF.RESERVE", "c", 100, "BUCKETSIZE")
    assert "wrong number of arguments" in err(r, "CF.RESERVE", "c")
    assert r.exists("c") == 0
    assert r.cf().create("c", 100)
    assert err(r, "CF.RESERVE", "c", 100) == "item exists"


def test_absurd_size_refused(r):
    assert err(r, "CF.RESERVE", "huge", 10**15) == "Insufficient memory to create filter"
    assert err(r, "CF.INSERT", "huge", "CAPACITY", 10**15, "ITEMS", "a") == "Insufficient memory to create filter"
    assert err(r, "CF.RESERVE", "huge", 2**63 - 1) == "Insufficient memory to create filter"
    assert r.exists("huge") == 0


def test_fill_until_full(r):
    assert r.cf().create("s", 64, expansion=0)
    added = []
    for i in range(1000):
        try:
            assert r.cf().add("s", f"k{i}") == 1
            added.append(f"k{i}")
        except redis.ResponseError as e:
            assert str(e) == "Filter is full"
            break
    else:
        pytest.fail("never full")
    assert len(added) >= 40
    assert all(r.cf().mexists("s", *added))
    # Once the victim slot is taken, a key still goes into a free slot of its buckets; only a key that
    # would need an eviction walk is refused.
    more = [f"more{i}" for i in range(64)]
    res = r.cf().insert("s", more)
    assert -1 in res and set(res) <= {1, -1}
    added += [m for m, x in zip(more, res) if x == 1]
    assert r.cf().insertnx("s", [added[0]]) == [0]
    assert all(r.cf().mexists("s", *added))


def test_delete_exact_in_one_table(r):
    # In one table a key's fingerprint and buckets decide each other, so deleting keys that were added
    # never removes another key's evidence: every delete succeeds and every other key stays.
    assert r.cf().create("t", 4000, expansion=0, bucket_size=4)
    items = [f"item:{i}" for i in range(3000)]
    assert r.cf().insert("t", items) == [1] * 3000
    assert r.cf().info("t").filterNum == 1
    for it in items[:1500]:
        assert r.cf().delete("t", it) == 1
    assert all(r.cf().mexists("t", *items[1500:]))
    assert r.cf().info("t").insertedNum == 1500 and r.cf().info("t").deletedNum == 1500


def test_expansion_chain(r):
    assert r.cf().create("e", 100, expansion=2)
    items = [f"item:{i}" for i in range(3000)]
    for k in range(0, len(items), 500):
        assert r.cf().insert("e", items[k:k + 500]) == [1] * 500
    info = r.cf().info("e")
    assert info.filterNum > 1 and info.insertedNum == 3000
    assert all(r.cf().mexists("e", *items))
    # Deleting added keys stays exact across the tables of the chain: every delete finds a copy, and
    # every key not deleted is still found.
    for it in items[:1000]:
        assert r.cf().delete("e", it) == 1, it
    assert all(r.cf().mexists("e", *items[1000:]))
    assert r.cf().info("e").insertedNum == 2000 and r.cf().info("e").deletedNum == 1000


def test_expansion_rounded_to_power_of_two(r):
    # as RedisBloom: EXPANSION is rounded up to a power of two
    r.cf().create("p", 100, expansion=3)
    assert r.cf().info("p").expansionRate == 4


def test_max_expansions(servers):
    s = servers(module_args=["CF_MAX_EXPANSIONS", "2"])
    c = s.client()
    c.cf().create("m", 64, expansion=1)
    with pytest.raises(redis.ResponseError) as e:
        for i in range(100000):
            c.cf().add("m", f"x{i}")
    assert str(e.value) == "Maximum expansions reached"
    assert c.cf().info("m").filterNum == 2
    assert c.cf().exists("m", "x0") == 1


def test_insert_errors(r):
    assert "wrong number of arguments" in err(r, "CF.INSERT", "k", "ITEMS")
    assert "wrong number of arguments" in err(r, "CF.INSERT", "k", "CAPACITY")
    assert err(r, "CF.INSERT", "k", "CAPACITY", "x", "ITEMS", "a") == "Bad capacity"
    assert err(r, "CF.INSERT", "k", "CAPACITY", 3, "ITEMS", "a") == "Capacity must be at least (BucketSize * 2)"
    assert err(r, "CF.INSERT", "k", "BLAH", "ITEMS", "a") == "Unknown argument received"
    assert err(r, "CF.INSERT", "k", "NOCREATE", "ITEMS", "a") == "not found"
    assert err(r, "CF.INSERTNX", "k", "NOCREATE", "ITEMS", "a") == "not found"
    assert r.exists("k") == 0
    # positional: items may be spelled like options
    assert r.execute_command("CF.INSERT", "k", "ITEMS", "NOCREATE", "CAPACITY") == [1, 1]
    assert r.cf().exists("k", "NOCREATE") == 1


def test_missing_and_wrongtype(r):
    assert r.cf().exists("nokey", "a") == 0
    assert r.cf().mexists("nokey", "a", "b") == [0, 0]
    assert r.cf().count("nokey", "a") == 0
    assert err(r, "CF.DEL", "nokey", "a") == "Not found"
    assert err(r, "CF.INFO", "nokey") == "not found"
    assert err(r, "CF.SCANDUMP", "nokey", 0) == "not found"
    r.set("str", "v")
    r.bf().create("bloom", 0.01, 100)
    for key in ("str", "bloom"):
        for cmd in (["CF.EXISTS", key, "a"], ["CF.MEXISTS", key, "a"], ["CF.COUNT", key, "a"],
                    ["CF.ADD", key, "a"], ["CF.ADDNX", key, "a"], ["CF.INSERT", key, "ITEMS", "a"],
                    ["CF.INSERTNX", key, "ITEMS", "a"], ["CF.DEL", key, "a"], ["CF.INFO", key],
                    ["CF.RESERVE", key, 100], ["CF.SCANDUMP", key, 0], ["CF.LOADCHUNK", key, 1, b"x"]):
            assert err(r, *cmd).startswith("WRONGTYPE"), cmd


def test_scandump_positions(r):
    r.cf().create("c", 100)
    assert err(r, "CF.SCANDUMP", "c", "x") == "Invalid position"
    assert err(r, "CF.SCANDUMP", "c", -1) == "Invalid position"
    assert err(r, "CF.LOADCHUNK", "c", 0, b"x") == "Invalid position"
    assert err(r, "CF.LOADCHUNK", "c", "x", b"x") == "Invalid position"


def test_info_order(server, r):
    r.cf().create("c", 1000)
    c = Conn(server.port)  # raw replies (redis-py's cf() installs a parser for CF.INFO)
    full = c.call("CF.INFO", "c")
    assert [full[i] for i in range(0, len(full), 2)] == [
        "Size", "Number of buckets", "Number of filters", "Number of items inserted",
        "Number of items deleted", "Bucket size", "Expansion rate", "Max iterations"]
    assert full[11] == 2 and full[13] == 1 and full[15] == 20
    c.close()


def test_resp3_shapes(server):
    c = Conn(server.port, resp=3)
    assert c.call("CF.RESERVE", "c", 64, "EXPANSION", 0) == Simple("OK")
    assert c.call("CF.ADD", "c", "a") == Bool(True)
    assert c.call("CF.ADDNX", "c", "a") == Bool(False)
    assert c.call("CF.EXISTS", "c", "a") == Bool(True)
    assert c.call("CF.MEXISTS", "c", "a", "zz") == [Bool(True), Bool(False)]
    assert c.call("CF.COUNT", "c", "a") == 1
    assert c.call("CF.INSERT", "c", "ITEMS", "b") == [Bool(True)]
    assert c.call("CF.INSERTNX", "c", "ITEMS", "b", "q") == [0, 1]
    assert c.call("CF.DEL", "c", "b") == Bool(True)
    assert c.call("CF.DEL", "c", "b") == Bool(False)
    info = c.call("CF.INFO", "c")
    assert isinstance(info, Map) and [k for k, _ in info][0] == "Size"
    c.close()


def test_fingerprint_bits_argument(servers):
    for bits in (8, 16):
        s = servers(module_args=["CF_FINGERPRINT_BITS", str(bits)])
        c = s.client()
        c.cf().create("c", 10000)
        size = c.cf().info("c").size
        if bits == 8:
            size8 = size
        else:
            assert size > 1.8 * size8
        items = [f"i{i}" for i in range(5000)]
        c.cf().insert("c", items)
        absent = [f"a{i}" for i in range(20000)]
        fp = c.cf().mexists("c", *absent).count(1) / len(absent)
        assert fp <= (0.02 if bits == 8 else 0.0005), (bits, fp)


def cf_tables(r, key):
    return r.cf().info(key).filterNum


def redisbloom_tables(capacity, items, bucket_size=2):
    """Tables RedisBloom's cuckoo filter ends with for these adds (rbformat's model of its insert: a free
    slot in the newest table, then in the older ones, then a 20-kick walk in the newest, undone when
    it fails, then a new table)."""
    model = rbformat.Cuckoo(capacity, bucket_size=bucket_size)
    for it in items:
        model.add(it.encode())
    return len(model.tables)


def test_distinct_items_are_never_refused(r):
    # Distinct items that share a fingerprint (8 bits, so often in a small filter) are not copies:
    # every one is accepted, as RedisBloom accepts them, and the chain grows no longer than RedisBloom's.
    r.execute_command("CF.RESERVE", "a", 64, "BUCKETSIZE", 1)
    items = [str(i) for i in range(3000)]
    assert r.execute_command("CF.INSERT", "a", "ITEMS", *items) == [1] * 3000
    assert all(r.cf().mexists("a", *items))
    assert cf_tables(r, "a") <= redisbloom_tables(64, items, bucket_size=1)
    # a key CF.INSERT creates (capacity 1024): 40,000 distinct items in one command, all accepted
    many = [f"u{i}" for i in range(40000)]
    assert r.execute_command("CF.INSERT", "imp", "ITEMS", *many) == [1] * 40000
    assert all(r.cf().mexists("imp", *many))
    assert r.cf().info("imp").insertedNum == 40000


@pytest.mark.parametrize("capacity,adds,values,bucket_size", [
    (1000, 3000, 2000, 2), (20000, 12000, 10000, 2), (1024, 5000, 3000, 4), (64, 400, 100, 1)])
def test_repeated_items_grow_no_more_tables_than_redisbloom(r, capacity, adds, values, bucket_size):
    # Random adds with repeats, one CF.ADD each (the same command stream RedisBloom's model gets): every
    # add is accepted, the chain is no longer than RedisBloom's, and every copy is there.
    import random
    rng = random.Random(7)
    draws = [str(rng.randrange(values)) for _ in range(adds)]
    r.execute_command("CF.RESERVE", "k", capacity, "BUCKETSIZE", bucket_size)
    pipe = r.pipeline(transaction=False)
    for d in draws:
        pipe.execute_command("CF.ADD", "k", d)
    assert pipe.execute() == [1] * adds
    tables = cf_tables(r, "k")
    assert tables <= redisbloom_tables(capacity, draws, bucket_size), tables
    copies = {}
    for d in draws:
        copies[d] = copies.get(d, 0) + 1
    keys = list(copies)
    assert all(r.cf().count("k", k) >= copies[k] for k in keys)  # no copy lost
    for k in keys[:50]:  # every copy can be deleted again, and the others stay
        for _ in range(copies[k]):
            assert r.cf().delete("k", k) == 1
    assert all(r.cf().mexists("k", *keys[50:]))


def test_many_copies_of_one_item(servers):
    # By default there is no copy limit (RedisBloom's behaviour): copies fill the item's two buckets
    # table after table (and the victim stash), so the chain is no longer than RedisBloom's, which needs
    # a table per 2 * BUCKETSIZE copies. CF_MAX_COPIES n sets a limit, counted in matching fingerprints
    # (CF.COUNT).
    s = servers()
    c = s.client()
    c.cf().create("k", 1000, bucket_size=4)
    for _ in range(20):
        assert c.cf().add("k", "x") == 1
    assert c.cf().count("k", "x") == 20
    assert c.cf().info("k").filterNum <= redisbloom_tables(1000, ["x"] * 20, bucket_size=4) == 3
    assert c.cf().addnx("k", "x") == 0
    u = servers(module_args=["CF_MAX_COPIES", "3"])
    c = u.client()
    for _ in range(3):
        assert c.cf().add("k", "x") == 1
    with pytest.raises(redis.ResponseError, match="at most 3 copies .*the module argument CF_MAX_COPIES"):
        c.cf().add("k", "x")
    got = c.execute_command("CF.INSERT", "k", "ITEMS", "x", "y")
    assert isinstance(got[0], redis.ResponseError) and got[1] == 1
    assert c.cf().count("k", "x") == 3
    b = servers(module_args=["CF_MAX_COPIES", "-1"], start=False)
    b.expected_exit = True
    assert b.start(expect_fail=True) is False


def test_replica_of_a_normal_workload_logs_no_error(servers):
    # A replica applies every write its master replicates; a write that errors on the replica makes
    # Redis log "== CRITICAL == This replica is sending an error to its master". Repeats, distinct items
    # with shared fingerprints, deletes and Bloom adds are a normal workload: nothing of that kind.
    import random
    m, rep = servers(), servers()
    rep.replicate(m.port)
    c = m.client()
    rng = random.Random(3)
    c.execute_command("CF.RESERVE", "small", 64, "BUCKETSIZE", 1)
    c.execute_command("CF.INSERT", "small", "ITEMS", *[str(i) for i in range(3000)])
    for _ in range(20):
        draws = [f"r{rng.randrange(500)}" for _ in range(500)]
        c.execute_command("CF.INSERT", "rep", "ITEMS", *draws)
        c.execute_command("CF.INSERTNX", "nx", "ITEMS", *draws)
        for d in draws[:50]:
            c.execute_command("CF.ADD", "one", d)
            c.execute_command("CF.ADDNX", "one", d + "x")
        c.execute_command("CF.DEL", "rep", draws[0])
        c.execute_command("BF.MADD", "b", *draws)
        c.execute_command("BF.INSERT", "b2", "ERROR", 0.001, "ITEMS", *draws)
    assert c.execute_command("WAIT", 1, 10000) == 1
    rc = rep.client()
    probe = [f"r{i}" for i in range(500)] + [str(i) for i in range(3000)]
    for k in ("small", "rep", "nx", "one"):
        assert rc.cf().mexists(k, *probe) == c.cf().mexists(k, *probe), k
    assert rc.bf().mexists("b", *probe) == c.bf().mexists("b", *probe)
    with open(rep.logfile, encoding="utf-8", errors="replace") as f:
        log = f.read()
    assert "CRITICAL" not in log, log[-3000:]
