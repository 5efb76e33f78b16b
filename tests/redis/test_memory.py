"""Memory limits: maxmemory, MAX_FILTER_SIZE and an address-space limit, with real redis-servers.

Filters that would not fit are refused before anything is allocated, with Redis's own OOM error (or
the module's size-limit error), and the server keeps running; what fits is counted by INFO memory and
MEMORY USAGE from the moment it is created; loads (DEBUG RELOAD, restart) are never refused.
"""
import os
import shutil
import time

import pytest
import redis

OOM = "command not allowed when used memory > 'maxmemory'"


def used(c):
    return c.info("memory")["used_memory"]


def test_reservations_over_maxmemory_refused(servers):
    s = servers(extra=["--maxmemory", "100mb"])
    c = s.client()
    before = used(c)
    for cmd in (["CF.RESERVE", "c", 4294967296], ["CF.RESERVE", "c", 120000000], ["CF.RESERVE", "c", 476000000],
                ["BF.RESERVE", "b", 0.01, 100000000], ["BF.RESERVE", "b", 0.001, 60000000],
                ["BF.INSERT", "b", "CAPACITY", 100000000, "ITEMS", "x"],
                ["CF.INSERT", "c", "CAPACITY", 200000000, "ITEMS", "x"]):
        with pytest.raises(redis.ResponseError, match=OOM):
            c.execute_command(*cmd)
    assert c.exists("b", "c") == 0
    assert used(c) < before + (1 << 20)
    # what fits is accepted and counted at once (the pages are not touched yet)
    assert c.execute_command("CF.RESERVE", "c", 40000000)  # 40 MB
    grown = used(c) - before
    assert abs(c.memory_usage("c") - grown) < 0.03 * grown, (c.memory_usage("c"), grown)
    # now 40 MB more would pass the limit
    with pytest.raises(redis.ResponseError):
        c.execute_command("CF.RESERVE", "d", 70000000)
    # BK.EXPORT of the 40 MB filter needs its saved form and the reply's copy: 80 MB more
    with pytest.raises(redis.ResponseError):
        c.execute_command("BK.EXPORT", "c")
    c.cf().add("c", "x")
    assert c.cf().exists("c", "x")


def test_growth_over_maxmemory_refused(servers):
    s = servers(extra=["--maxmemory", "24mb"])
    c = s.client()
    c.execute_command("BF.RESERVE", "g", 0.01, 100000, "EXPANSION", 16)
    added, refused = 0, None
    for batch in range(200):
        items = [f"g{batch}-{i}" for i in range(20000)]
        got = c.execute_command("BF.MADD", "g", *items)
        if isinstance(got[-1], redis.ResponseError):
            refused = str(got[-1])
            added += len(got) - 1
            break
        added += len(got)
    assert refused is not None and OOM in refused, refused
    assert c.bf().info("g").filterNum == 2  # the third sub-filter (about 50 MB) was refused
    assert all(c.bf().mexists("g", *[f"g0-{i}" for i in range(20000)]))
    assert used(c) < 24 << 20
    # a LOADCHUNK restore whose header declares more than fits is refused at its first chunk
    t = servers()
    tc = t.client()
    tc.execute_command("CF.RESERVE", "big", 16000000)
    it, data = tc.execute_command("CF.SCANDUMP", "big", 0)
    with pytest.raises(redis.ResponseError):
        c.execute_command("CF.LOADCHUNK", "big", it, data)
    assert c.exists("big") == 0


def test_loads_never_refused(servers):
    # DEBUG RELOAD and a restart load what the RDB holds even past maxmemory (as Redis does for its own
    # types); the module's guard only applies to clients' commands.
    s = servers(extra=["--maxmemory", "64mb"])
    c = s.client()
    c.execute_command("BF.RESERVE", "f", 0.001, 2000000)
    c.bf().madd("f", *[f"x{i}" for i in range(5000)])
    c.execute_command("CF.RESERVE", "c", 4000000)
    c.cf().insert("c", [f"y{i}" for i in range(5000)])
    c.execute_command("DEBUG", "RELOAD")
    c.config_set("maxmemory", "2mb")
    c.execute_command("DEBUG", "RELOAD")
    assert all(c.bf().mexists("f", *[f"x{i}" for i in range(5000)]))
    s.restart(save=True, extra=["--maxmemory", "2mb"])
    c = s.client()
    assert all(c.cf().mexists("c", *[f"y{i}" for i in range(5000)]))
    with pytest.raises(redis.ResponseError):
        c.execute_command("CF.RESERVE", "d", 1000000)


def test_max_filter_size(servers):
    s = servers(module_args=["MAX_FILTER_SIZE", str(1 << 20)])
    c = s.client()
    c.config_set("loglevel", "verbose")
    with pytest.raises(redis.ResponseError, match=r"^Insufficient memory to create filter$"):
        c.execute_command("CF.RESERVE", "c", 2000000)
    with pytest.raises(redis.ResponseError, match=r"^Insufficient memory to create filter$"):
        c.execute_command("BF.RESERVE", "b", 0.01, 1000000)
    with open(s.logfile, encoding="utf-8", errors="replace") as f:
        assert "filter too large: it would exceed the size limit (MAX_FILTER_SIZE 1048576 bytes)" in f.read()
    c.execute_command("BF.RESERVE", "b", 0.01, 100000, "EXPANSION", 4)
    got = None
    for batch in range(20):
        got = c.execute_command("BF.MADD", "b", *[f"b{batch}-{i}" for i in range(50000)])
        if isinstance(got[-1], redis.ResponseError):
            break
    assert "cannot grow" in str(got[-1]) and "MAX_FILTER_SIZE 1048576" in str(got[-1])
    # the limit is on the sub-filters' arrays; Size is what the allocator gave for them and the structs,
    # whose size classes round a large array up by less than a quarter
    assert c.bf().info("b").size < (1 << 20) * 1.25
    for bad in (["MAX_FILTER_SIZE", "100"], ["MAX_FILTER_SIZE", "x"]):
        b = servers(module_args=bad, start=False)
        b.expected_exit = True
        assert b.start(expect_fail=True) is False


def test_memory_usage_matches_used_memory(r):
    base = used(r)
    r.execute_command("BF.RESERVE", "b", 0.01, 5000000)
    r.execute_command("CF.RESERVE", "c", 10000000)
    r.bf().madd("b", *[f"i{i}" for i in range(10000)])
    r.cf().insert("c", [f"i{i}" for i in range(10000)])
    grown = used(r) - base
    reported = r.memory_usage("b") + r.memory_usage("c")
    assert abs(reported - grown) < 0.03 * grown, (reported, grown)


@pytest.mark.skipif(shutil.which("prlimit") is None, reason="prlimit (util-linux) is not installed")
def test_address_space_limit(servers):
    # Under an address-space limit (no maxmemory) a reservation the system cannot give is an error
    # reply, not an abort: large blocks are asked for with RedisModule_TryAlloc.
    if os.environ.get("BK_REDIS_PRELOAD"):
        # A sanitizer runtime reserves terabytes of shadow memory, which no address-space limit fits:
        # its allocator's own 2 GiB limit stands in for it.
        limit = ["env", "ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:handle_segv=0:"
                 "allocator_may_return_null=1:max_allocation_size_mb=2048"]
    else:
        limit = ["prlimit", "--as=%d" % (2 << 30), "--"]
    s = servers(wrapper=limit)
    c = s.client()
    with pytest.raises(redis.ResponseError, match="Insufficient memory"):
        c.execute_command("CF.RESERVE", "c", 3000000000)
    with pytest.raises(redis.ResponseError, match="Insufficient memory"):
        c.execute_command("BF.RESERVE", "b", 0.0001, 1000000000)
    c.execute_command("CF.RESERVE", "ok", 100000000)
    c.cf().add("ok", "x")
    assert c.cf().exists("ok", "x") and s.alive()


def test_load_peak(servers):
    # Loading a filter (restart from an RDB, DEBUG RELOAD, a LOADCHUNK sequence) decodes its saved form
    # as the pieces arrive, straight into the filter: the server's peak resident size (VmHWM, reset
    # through /proc/<pid>/clear_refs) stays near what the filters themselves take, where holding the
    # saved form and the decoded filter at once needed about twice that.
    wrap = ()
    bound = 1.3
    if os.environ.get("BK_REDIS_PRELOAD"):
        # A sanitizer runtime keeps freed blocks in quarantine (not reused; off here) and adds a
        # shadow byte for every 8 bytes written.
        wrap = ["env", "ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:handle_segv=0:quarantine_size_mb=0"]
        bound = 1.5
    empty = servers(wrapper=wrap)
    base = empty.status_bytes("VmRSS")  # an empty server with the module
    a = servers(wrapper=wrap)
    c = a.client()
    c.execute_command("BF.RESERVE", "bf", 0.01, 50000000)  # about 72 MB (its first sub-filter at p / 2)
    c.execute_command("CF.RESERVE", "cf", 40000000)
    items = [f"item:{i}" for i in range(20000)]
    c.bf().madd("bf", *items)
    c.cf().insert("cf", items)
    size = c.memory_usage("bf") + c.memory_usage("cf")
    assert size > 100e6, size

    def check(client):
        assert all(client.bf().mexists("bf", *items)) and all(client.cf().mexists("cf", *items))

    # a restart from the RDB
    a.restart(save=True)
    c = a.client()
    check(c)
    peak = a.status_bytes("VmHWM")
    assert peak - base <= bound * size, ("restart", peak, base, size)
    # DEBUG RELOAD: the filters are freed, then loaded back
    held = a.status_bytes("VmRSS")
    a.reset_peak()
    c.execute_command("DEBUG", "RELOAD")
    check(c)
    peak = a.status_bytes("VmHWM")
    assert peak - held <= (bound - 1) * size, ("DEBUG RELOAD", peak, held, size)
    # SCANDUMP into LOADCHUNK on a fresh server
    b = servers(wrapper=wrap)
    d = b.client()
    for key, cmd in (("bf", "BF"), ("cf", "CF")):
        it = 0
        while True:
            it, chunk = c.execute_command(f"{cmd}.SCANDUMP", key, it)
            if it == 0:
                break
            d.execute_command(f"{cmd}.LOADCHUNK", key, it, chunk)
    check(d)
    peak = b.status_bytes("VmHWM")
    assert peak - base <= bound * size, ("LOADCHUNK", peak, base, size)


def test_small_filter_memory(r):
    # Many small filters (bench/redis_keymem.py has the figures): MEMORY USAGE of one small filter of
    # each kind stays within the documented per-key sizes (docs/REDIS.md, "Many small filters": 304,
    # 464 and 1,360 bytes with Redis's jemalloc, Redis's 32-byte object and module value included):
    # 16-byte values without a generic handle, objects that keep a pointer to their allocator, packed
    # structs, no locks outside concurrent mode, small arrays without an alignment line, a Bloom
    # filter's chain and small first sub-filter in one 224-byte block (compact chains), and a small
    # cuckoo filter in one block (its array, table record, struct and first table vector). The handle made for a call (BK.INFO here) is given back.
    r.execute_command("BF.ADD", "b", "item")
    r.execute_command("CF.RESERVE", "c", 100)
    r.execute_command("CF.ADD", "d", "item")
    sizes = [r.memory_usage(k) for k in ("b", "c", "d")]
    assert sizes[0] <= 304, sizes
    assert sizes[1] <= 464, sizes  # 64 buckets (a small table is rounded up to a power of two, as RedisBloom's)
    assert sizes[2] <= 1360, sizes
    assert r.cf().info("d").bucketNum == 512  # capacity 1024, as RedisBloom
    for k in ("b", "c", "d"):
        r.execute_command("BK.INFO", k)
        r.execute_command("BK.EXPORT", k)
    assert [r.memory_usage(k) for k in ("b", "c", "d")] == sizes
    assert r.bf().exists("b", "item") and r.cf().exists("d", "item")


def test_small_filter_memory_usage_honest(r):
    # MEMORY USAGE of a small filter key agrees with what the key adds to used_memory, to within a few
    # bytes of what a plain string key shows (Redis's own dict entry, which MEMORY USAGE leaves out for
    # every type). One key at a time, 21 keys of each kind, the median (a key that makes the keyspace's
    # table grow is an outlier); the items and key names are fixed.
    def gap(kind, make):
        gaps, useds = [], []
        for i in range(21):
            k = f"{kind}:{i:04d}"
            before = r.info("memory")["used_memory"]
            make(k)
            used = r.info("memory")["used_memory"] - before
            gaps.append(used - r.memory_usage(k))
            useds.append(used)
        return sorted(useds)[10], sorted(gaps)[10]

    _, plain = gap("s", lambda k: r.set(k, "x"))
    for kind, make in (("b", lambda k: r.execute_command("BF.ADD", k, "item")),
                       ("c", lambda k: r.execute_command("CF.RESERVE", k, 100)),
                       ("d", lambda k: r.execute_command("CF.ADD", k, "item")),
                       ("m", lambda k: r.execute_command("BF.MADD", k, *[f"i{j}" for j in range(100)]))):
        used, g = gap(kind, make)
        assert abs(g - plain) <= 0.03 * used, (used, g, plain)


@pytest.mark.parametrize("policy", ["allkeys-lru", "noeviction"])
def test_large_reservation_near_the_limit_evicts_under_an_eviction_policy(servers, policy):
    # 55 MB of strings under maxmemory 64mb, then reservations of 14-16 MB: under allkeys-lru they are
    # made and Redis evicts strings to get back under the limit (as it does for RedisBloom's filters);
    # under noeviction they are refused with Redis's OOM error. A filter larger than maxmemory is
    # refused under either policy.
    s = servers(extra=["--maxmemory", "64mb", "--maxmemory-policy", policy])
    c = s.client()
    i = 0
    while used(c) < (64 << 20) - (9 << 20) and i < 700:  # strings until 9 MB are left
        c.set(f"s{i}", os.urandom(100000))
        i += 1
    strings = c.dbsize()
    assert strings >= 400
    time.sleep(2.2)  # LRU idle times count in seconds: the strings are now older than the filters
    for cmd in (["BF.RESERVE", "huge", 0.01, 100000000], ["CF.RESERVE", "huge", 200000000]):
        with pytest.raises(redis.ResponseError, match=OOM):
            c.execute_command(*cmd)  # 70 MB / 100 MB: could never fit
    assert c.exists("huge") == 0
    reservations = (["BF.RESERVE", "bf", 0.01, 10000000], ["CF.RESERVE", "cf", 16000000])  # 14 MB, 16 MB
    for cmd in reservations:
        if policy == "noeviction":
            with pytest.raises(redis.ResponseError, match=OOM):
                c.execute_command(*cmd)
            continue
        info = c.info("memory")
        assert info["used_memory"] + 12000000 > info["maxmemory"]  # it does not fit without eviction
        assert c.execute_command(*cmd) in (b"OK", True, "OK")
        c.ping()  # Redis evicts before it runs a command
        info = c.info("memory")
        assert info["used_memory"] <= info["maxmemory"] * 1.02, info["used_memory"]
    if policy == "noeviction":
        assert c.exists("bf", "cf") == 0 and c.dbsize() == strings
        return
    assert c.exists("bf", "cf") == 2 and c.dbsize() < strings
    c.bf().madd("bf", *[f"x{i}" for i in range(1000)])
    c.cf().insert("cf", [f"x{i}" for i in range(1000)])
    assert c.bf().mexists("bf", *[f"x{i}" for i in range(1000)]) == [1] * 1000
    assert c.cf().mexists("cf", *[f"x{i}" for i in range(1000)]) == [1] * 1000
    assert c.info("stats")["evicted_keys"] > 0
