"""Memory limits for the aging and quotient families, with real redis-servers.

BK.AGING.RESERVE is refused over maxmemory and past MAX_FILTER_SIZE like the BF, CF and QF creations;
aging and quotient keys load from an RDB straight into their own arrays (a peak near the filter's own
size, measured as the server's VmHWM), so a server that held and saved its dataset under an
address-space limit loads it back under the same limit; a RESTORE whose compressed payload expands
past maxmemory is refused and the server keeps what it had.
"""
import os
import shutil

import pytest
import redis

OOM = "command not allowed when used memory > 'maxmemory'"
SANITIZED = bool(os.environ.get("BK_REDIS_PRELOAD"))


def used(c):
    return c.info("memory")["used_memory"]


def test_aging_reserve_over_maxmemory_refused(servers):
    s = servers(extra=["--maxmemory", "100mb"])
    c = s.client()
    before = used(c)
    for cmd in (["BK.AGING.RESERVE", "a", "ERROR", 0.01, "COUNT", 1000000000],  # about 2.7 GB
                ["BK.AGING.RESERVE", "a", "ERROR", 0.01, "COUNT", 60000000],
                ["BK.AGING.RESERVE", "a", "ERROR", 0.001, "TIME", 60000, "CAPACITY", 50000000]):
        with pytest.raises(redis.ResponseError, match=OOM):
            c.execute_command(*cmd)
    assert c.exists("a") == 0
    assert used(c) < before + (1 << 20)
    # what fits is accepted, counted at once, and works
    assert c.execute_command("BK.AGING.RESERVE", "a", "ERROR", 0.01, "COUNT", 10000000)
    grown = used(c) - before
    assert grown > 20e6 and abs(c.memory_usage("a") - grown) < 0.03 * grown, (c.memory_usage("a"), grown)
    c.execute_command("BK.AGING.ADD", "a", "x")
    assert c.execute_command("BK.AGING.EXISTS", "a", "x") == [1]
    # quotient creation too, by BK.QF.RESERVE and by the BK.QF.ADD that creates its key
    with pytest.raises(redis.ResponseError, match=OOM):
        c.execute_command("BK.QF.RESERVE", "q", 200000000, 0.001)
    assert c.exists("q") == 0


def test_aging_reserve_max_filter_size(servers):
    s = servers(module_args=["MAX_FILTER_SIZE", str(1 << 20)])
    c = s.client()
    c.config_set("loglevel", "verbose")  # the reply is RedisBloom's text; the log names the limit
    for cmd in (["BK.AGING.RESERVE", "a", "ERROR", 0.01, "COUNT", 1000000],
                ["BK.AGING.RESERVE", "a", "ERROR", 0.01, "TIME", 1000, "CAPACITY", 1000000, "GENERATIONS", 8]):
        with pytest.raises(redis.ResponseError, match=r"^Insufficient memory to create filter$"):
            c.execute_command(*cmd)
    with pytest.raises(redis.ResponseError, match=r"^Insufficient memory to create filter$"):
        c.execute_command("BK.QF.RESERVE", "q", 2000000, 0.01)
    assert c.exists("a", "q") == 0
    with open(s.logfile, encoding="utf-8", errors="replace") as f:
        assert f.read().count("filter too large: it would exceed the size limit (MAX_FILTER_SIZE 1048576 bytes)") >= 3
    assert c.execute_command("BK.AGING.RESERVE", "a", "ERROR", 0.01, "COUNT", 100000)
    info = c.execute_command("BK.AGING.INFO", "a")
    assert dict(zip(info[::2], info[1::2]))[b"Size"] <= 1 << 20
    # the default limit (4 GiB) with no maxmemory: a 21.5 GB ring is refused, nothing allocated
    d = servers()
    dc = d.client()
    dc.config_set("loglevel", "verbose")
    before = used(dc)
    with pytest.raises(redis.ResponseError, match=r"^Insufficient memory to create filter$"):
        dc.execute_command("BK.AGING.RESERVE", "a", "ERROR", 0.0001, "COUNT", 5000000000)
    assert dc.exists("a") == 0 and used(dc) < before + (1 << 20)
    with open(d.logfile, encoding="utf-8", errors="replace") as f:
        assert "MAX_FILTER_SIZE 4294967296 bytes" in f.read()


def _aging_key(c, key, window):
    c.execute_command("BK.AGING.RESERVE", key, "ERROR", 0.01, "COUNT", window)
    items = [f"{key}:{i}" for i in range(20000)]
    c.execute_command("BK.AGING.ADD", key, *items)
    return items


def _quotient_key(c, key, capacity):
    c.execute_command("BK.QF.RESERVE", key, capacity, 0.01)
    items = [f"{key}:{i}" for i in range(20000)]
    p = c.pipeline(transaction=False)
    for it in items:
        p.execute_command("BK.QF.ADD", key, it)
    p.execute()
    return items


def _check(c, key, items):
    cmd = "BK.AGING.EXISTS" if key.startswith("aging") else None
    if cmd:
        assert all(c.execute_command(cmd, key, *items))
    else:
        p = c.pipeline(transaction=False)
        for it in items:
            p.execute_command("BK.QF.EXISTS", key, it)
        assert all(p.execute())


@pytest.mark.parametrize("family", ["aging", "quotient"])
def test_load_under_address_space_limit(servers, family):
    # A server in a 1.6 GB address space holds one filter of about 0.9 GB and saves it: DEBUG RELOAD and
    # a restart from that RDB load it back in the same space (holding the saved form beside the filter
    # needed about twice the filter and failed). The peak resident size of each load is measured and
    # bounded: at most 1.1 times the filter above the memory held without it.
    if SANITIZED:
        # No address-space limit fits a sanitizer runtime's shadow memory: the peak bound is checked on
        # its own, loosened for the shadow bytes.
        wrap, bound, scale = ["env", "ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:handle_segv=0:"
                              "quarantine_size_mb=0"], 1.5, 0.25
    else:
        assert shutil.which("prlimit"), "prlimit (util-linux) is needed"
        wrap, bound, scale = ["prlimit", "--as=%d" % int(1.6e9), "--"], 1.1, 1.0
    base = servers(wrapper=wrap).status_bytes("VmRSS")  # an empty server with the module
    s = servers(wrapper=wrap)
    c = s.client()
    if family == "aging":
        key, items = "aging", _aging_key(c, "aging", int(330000000 * scale))
    else:
        key, items = "quotient", _quotient_key(c, "quotient", int(500000000 * scale))
    size = c.memory_usage(key)
    assert size > 0.6e9 * scale, size
    held = s.status_bytes("VmRSS")
    s.reset_peak()
    c.execute_command("DEBUG", "RELOAD")
    _check(c, key, items)
    peak = s.status_bytes("VmHWM")
    print(f"{family}: {size} bytes; DEBUG RELOAD peak {peak - held} above the server holding it "
          f"({(peak - held) / size:.3f}x)")
    assert peak - held <= (bound - 1) * size, ("DEBUG RELOAD", peak, held, size)
    s.restart(save=True)
    c = s.client()
    _check(c, key, items)
    peak = s.status_bytes("VmHWM")
    print(f"{family}: restart peak {peak - base} above an empty server ({(peak - base) / size:.3f}x)")
    assert peak - base <= bound * size, ("restart", peak, base, size)


def test_restore_past_maxmemory_refused(servers):
    # DUMP compresses a mostly empty filter to a small payload; RESTORE expands it. Past maxmemory it is
    # refused (Redis's "Bad data format" reply; the module's log says why) and nothing is kept.
    src = servers()
    c = src.client()
    c.execute_command("BK.AGING.RESERVE", "aging", "ERROR", 0.01, "COUNT", 50000000)   # about 130 MB
    c.execute_command("BK.QF.RESERVE", "quotient", 100000000, 0.01)                    # about 160 MB
    c.execute_command("BF.RESERVE", "bf", 0.01, 100000000, "NONSCALING")               # about 120 MB
    c.execute_command("BK.AGING.RESERVE", "small", "ERROR", 0.01, "COUNT", 10000)
    for k in ("aging", "small"):
        c.execute_command("BK.AGING.ADD", k, "x", "y")
    c.execute_command("BK.QF.ADD", "quotient", "x")
    c.execute_command("BF.ADD", "bf", "x")
    dumps = {k: c.dump(k) for k in ("aging", "quotient", "bf", "small")}
    assert all(len(d) < 8e6 for d in dumps.values()), {k: len(d) for k, d in dumps.items()}
    dst = servers(extra=["--maxmemory", "100mb"])
    d = dst.client()
    before = used(d)
    for k in ("aging", "quotient", "bf"):
        with pytest.raises(redis.ResponseError, match="Bad data format"):
            d.restore(k, 0, dumps[k])
        assert d.exists(k) == 0
    assert used(d) < before + (8 << 20)
    with open(dst.logfile) as f:
        assert "RESTORE refused" in f.read()
    d.restore("small", 0, dumps["small"])
    assert d.execute_command("BK.AGING.EXISTS", "small", "x", "y") == [1, 1]
    # without maxmemory the same payloads restore
    e = servers().client()
    for k, v in dumps.items():
        e.restore(k, 0, v)
    assert e.execute_command("BK.AGING.EXISTS", "aging", "x") == [1]
    assert e.execute_command("BK.QF.EXISTS", "quotient", "x") == 1
    assert e.bf().exists("bf", "x")
    # a server's own loads past maxmemory are never refused
    e.config_set("maxmemory", "50mb")
    e.execute_command("DEBUG", "RELOAD")
    assert e.execute_command("BK.AGING.EXISTS", "aging", "x") == [1]
