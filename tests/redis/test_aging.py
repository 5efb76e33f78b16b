"""BK.AGING.*: aging filters (the last W insertions or T ms) in a real redis-server."""
import os
import time

import pytest
import redis


def err(r, *args):
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command(*args)
    return str(e.value)


def info(r, key):
    raw = r.execute_command("BK.AGING.INFO", key)
    if isinstance(raw, dict):
        return {k.decode() if isinstance(k, bytes) else k: v for k, v in raw.items()}
    return {raw[i].decode(): raw[i + 1] for i in range(0, len(raw), 2)}


def add(r, key, items, cmd="BK.AGING.ADD"):
    out = []
    for s in range(0, len(items), 1000):
        res = r.execute_command(cmd, key, *items[s:s + 1000])
        out.extend(res if isinstance(res, list) else [res])
    return out


def exists(r, key, items):
    out = []
    for s in range(0, len(items), 1000):
        out.extend(r.execute_command("BK.AGING.EXISTS", key, *items[s:s + 1000]))
    return out


def server_ms(r):
    sec, usec = r.time()
    return sec * 1000 + usec // 1000


def test_count_window(r):
    assert r.execute_command("BK.AGING.RESERVE", "w", "ERROR", 0.01, "COUNT", 3000) in (b"OK", True)
    items = [f"k{i}" for i in range(6000)]
    assert add(r, "w", items) == [1000] * 6
    # the last 3000 insertions: all present; the first 1000 (5000 insertions ago, past the window and
    # its slack of 1000): forgotten but for false positives
    assert all(exists(r, "w", items[3000:]))
    assert sum(exists(r, "w", items[:1000])) <= 30
    i = info(r, "w")
    assert i["Mode"] in (b"count", "count") and i["Window"] == 3000 and i["Generations"] == 4
    assert i["Generation capacity"] == 1000 and i["Slack"] == 999 and i["Inserted"] == 6000
    assert i["Covered"] >= 3000 and 0 < float(i["Error rate now"]) <= 0.01
    # ADDIFABSENT: 1 for an item new in the window, 0 for one seen in it (a repeat inside one call too)
    assert r.execute_command("BK.AGING.ADDIFABSENT", "w", "k5999", "fresh", "fresh") == [0, 1, 0]
    # a missing key: EXISTS answers 0, writes refuse
    assert r.execute_command("BK.AGING.EXISTS", "nokey", "a", "b") == [0, 0]
    assert "not found" in err(r, "BK.AGING.ADD", "nokey", "a")


def test_errors(r):
    r.execute_command("BK.AGING.RESERVE", "e", "ERROR", 0.01, "COUNT", 10)
    assert "item exists" in err(r, "BK.AGING.RESERVE", "e", "ERROR", 0.01, "COUNT", 10)
    assert "one window" in err(r, "BK.AGING.RESERVE", "x", "ERROR", 0.01, "COUNT", 10, "TIME", 10)
    assert "CAPACITY" in err(r, "BK.AGING.RESERVE", "x", "ERROR", 0.01, "TIME", 1000)
    # AT (the creation time replicas receive) belongs to time windows; a count window refuses it
    assert err(r, "BK.AGING.RESERVE", "x", "ERROR", 0.01, "COUNT", 10, "AT", 5) == "AT is for TIME windows"
    assert "CAPACITY is for TIME" in err(r, "BK.AGING.RESERVE", "x", "ERROR", 0.01, "COUNT", 10, "CAPACITY", 5)
    assert "error rate" in err(r, "BK.AGING.RESERVE", "x", "ERROR", 2, "COUNT", 10)
    assert "GENERATIONS" in err(r, "BK.AGING.RESERVE", "x", "ERROR", 0.01, "COUNT", 10, "GENERATIONS", 1)
    assert "unknown argument" in err(r, "BK.AGING.RESERVE", "x", "ERROR", 0.01, "COUNT", 10, "FOO", 1)
    assert "wrong number" in err(r, "BK.AGING.RESERVE", "x", "ERROR", 0.01).lower()
    assert "ADD or ADDIFABSENT" in err(r, "BK.AGING.APPLY", "e", 5, "DEL", "a")
    r.bf().add("plain", "a")
    assert "WRONGTYPE" in err(r, "BK.AGING.ADD", "plain", "a")
    r.set("str", "v")
    assert "WRONGTYPE" in err(r, "BK.AGING.EXISTS", "str", "a")
    assert not r.exists("x")


def test_time_window_forgets(r):
    """A time window turns by the server's clock: keys inserted (through APPLY) 100 s ago, in a 1 s
    window, are gone after the next insert; the new ones are present."""
    now = server_ms(r)
    assert r.execute_command("BK.AGING.RESERVE", "t", "ERROR", 0.01, "TIME", 1000, "CAPACITY", 10000,
                             "AT", now - 100000) in (b"OK", True)
    old = [f"old{i}" for i in range(2000)]
    for s in range(0, 2000, 500):
        assert r.execute_command("BK.AGING.APPLY", "t", now - 100000, "ADD", *old[s:s + 500]) == 500
    i = info(r, "t")
    assert i["Mode"] in (b"time", "time") and i["Window"] == 1000 and i["Slack"] == 334
    assert i["Live generations"] == 0  # by the server's clock, every generation has aged out
    assert sum(exists(r, "t", old)) == 0
    new = [f"new{i}" for i in range(2000)]
    assert add(r, "t", new, "BK.AGING.ADDIFABSENT") == [1] * 2000
    assert all(exists(r, "t", new))
    assert sum(exists(r, "t", old)) == 0
    assert info(r, "t")["Items in window"] == 2000


def populate(c):
    c.execute_command("BK.AGING.RESERVE", "cw", "ERROR", 0.01, "COUNT", 5000)
    c.execute_command("BK.AGING.RESERVE", "tw", "ERROR", 0.001, "TIME", 3600000, "CAPACITY", 100000)
    items = [f"p{i}" for i in range(7000)]
    add(c, "cw", items)
    add(c, "tw", items, "BK.AGING.ADDIFABSENT")
    return items


def snapshot(c, items):
    return (exists(c, "cw", items), exists(c, "tw", items), c.execute_command("BK.EXPORT", "cw"),
            c.execute_command("BK.EXPORT", "tw"))


def test_debug_reload_and_rdb(server):
    c = server.client()
    items = populate(c)
    before = snapshot(c, items)
    assert all(before[0][2000:]) and all(before[1])
    assert c.execute_command("DEBUG", "RELOAD") in (b"OK", True)
    assert snapshot(c, items) == before
    c.save()
    server.restart(save=False)
    c = server.client()
    assert snapshot(c, items) == before
    # and it keeps counting where it was: 1000 more insertions turn the ring once more
    assert add(c, "cw", [f"q{i}" for i in range(1000)]) == [1000]
    assert info(c, "cw")["Inserted"] == 8000


def test_restart_from_rewritten_aof(servers):
    extra = ["--appendonly", "yes", "--aof-use-rdb-preamble", "no", "--appendfsync", "no"]
    s = servers(extra=extra)
    c = s.client()
    items = populate(c)
    s.rewrite_aof()
    before = snapshot(c, items)
    # writes after the rewrite are in the AOF as BK.AGING.APPLY with their time
    c.execute_command("BK.AGING.ADD", "tw", "after-rewrite")
    c.execute_command("BK.AGING.ADDIFABSENT", "cw", "after-rewrite")
    after = snapshot(c, items + ["after-rewrite"])
    aofdir = os.path.join(s.dir, "appendonlydir")
    text = b"".join(open(os.path.join(aofdir, f), "rb").read() for f in os.listdir(aofdir) if f.endswith(".aof"))
    assert b"BF.LOADCHUNK" in text and b"BK.AGING.APPLY" in text
    s.restart(save=False, extra=extra)
    c = s.client()
    assert snapshot(c, items + ["after-rewrite"]) == after
    assert before[2] != after[2] and before[3] != after[3]


def test_replication(servers):
    """The replica ends with the master's bytes: RESERVE of a time window carries the master's time
    (AT), writes go as BK.AGING.APPLY with the time the master used."""
    m, s = servers(), servers()
    cm, cs = m.client(), s.client()
    cm.execute_command("BK.AGING.RESERVE", "before", "ERROR", 0.01, "COUNT", 1000)
    add(cm, "before", [f"b{i}" for i in range(1500)])
    s.replicate(m.port)
    time.sleep(0.05)  # the replica's clock would differ from the master's by then
    cm.execute_command("BK.AGING.RESERVE", "tw", "ERROR", 0.01, "TIME", 50, "CAPACITY", 10000)
    for round_ in range(6):  # a 50 ms window: the ring turns between rounds
        add(cm, "tw", [f"t{round_}-{i}" for i in range(300)])
        add(cm, "tw", [f"t{round_}-{i}" for i in range(250, 350)], "BK.AGING.ADDIFABSENT")
        add(cm, "before", [f"c{round_}-{i}" for i in range(200)], "BK.AGING.ADDIFABSENT")
        time.sleep(0.03)
    cm.execute_command("BK.AGING.APPLY", "tw", server_ms(cm) + 10, "ADD", "explicit")
    assert cm.execute_command("WAIT", 1, 10000) == 1
    for k in ("before", "tw"):
        assert cm.execute_command("BK.EXPORT", k) == cs.execute_command("BK.EXPORT", k), k
    assert cm.execute_command("DEBUG", "DIGEST") == cs.execute_command("DEBUG", "DIGEST")
