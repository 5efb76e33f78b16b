"""BK.QF.*: the quotient filter in Redis: counts, deletes, automatic and explicit growth, merge, errors,
and persistence (DEBUG RELOAD, restart from RDB, DUMP/RESTORE) with no false negatives."""
import pytest
import redis


def err(r, *args):
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command(*args)
    return str(e.value)


def info(r, key):
    v = r.execute_command("BK.QF.INFO", key)
    return {v[i].decode() if isinstance(v[i], bytes) else v[i]: v[i + 1] for i in range(0, len(v), 2)}


def test_add_count_del(r):
    assert r.execute_command("BK.QF.RESERVE", "q", 1000, 0.01) in (b"OK", True, "OK")
    assert r.execute_command("BK.QF.ADD", "q", "a") == 1
    assert r.execute_command("BK.QF.ADD", "q", "a") == 2
    assert r.execute_command("BK.QF.ADD", "q", "hot", "COUNT", 1000000) == 1000000
    assert r.execute_command("BK.QF.COUNT", "q", "hot") == 1000000
    assert r.execute_command("BK.QF.EXISTS", "q", "a") == 1
    assert r.execute_command("BK.QF.EXISTS", "q", "zz") == 0
    assert r.execute_command("BK.QF.DEL", "q", "a") == 1
    assert r.execute_command("BK.QF.COUNT", "q", "a") == 1
    assert r.execute_command("BK.QF.DEL", "q", "a", "COUNT", 2) == 0  # only one left: nothing removed
    assert r.execute_command("BK.QF.DEL", "q", "a") == 1
    assert r.execute_command("BK.QF.EXISTS", "q", "a") == 0
    i = info(r, "q")
    assert i["Number of items inserted"] == 1000000
    assert i["Slots used"] <= 7  # a million occurrences in a few slots
    assert r.execute_command("BK.QF.EXISTS", "missing", "a") == 0


def test_counts_saturate_never_wrap(r):
    # Counts past 2^63 - 1 (the largest integer reply) saturate there in every reply and INFO; they
    # never come back negative. The library keeps a count saturated (sticky) at 2^64 - 1.
    big = 2**63 - 1
    r.execute_command("BK.QF.RESERVE", "q", 1000, 0.01)
    assert r.execute_command("BK.QF.ADD", "q", "x", "COUNT", 5) == 5
    assert r.execute_command("BK.QF.ADD", "q", "x", "COUNT", big) == big
    assert r.execute_command("BK.QF.ADD", "q", "x", "COUNT", big) == big
    assert r.execute_command("BK.QF.ADD", "q", "x") == big
    assert r.execute_command("BK.QF.COUNT", "q", "x") == big
    assert r.execute_command("BK.QF.ADD", "q", "y", "COUNT", big) == big
    assert info(r, "q")["Number of items inserted"] == big
    bk = r.execute_command("BK.INFO", "q")
    bk = {bk[i].decode(): bk[i + 1] for i in range(0, len(bk), 2)}
    assert bk["items"] == big
    assert "COUNT n" in err(r, "BK.QF.ADD", "q", "x", "COUNT", 2**63)  # past a signed 64-bit integer


def test_growth_keeps_every_item(r):
    # 16 remainder bits where 0.1% needs 10: room for six doublings at the error rate
    r.execute_command("BK.QF.RESERVE", "g", 200, 0.001, "REMAINDER", 16)
    items = ["item-%d" % i for i in range(5000)]
    for it in items:
        r.execute_command("BK.QF.ADD", "g", it)  # fills and doubles several times
    i = info(r, "g")
    assert i["Quotient bits"] > 8 and i["Number of items inserted"] == 5000
    assert float(i["Error rate target"]) == 0.001 and float(i["Error rate at capacity"]) <= 0.0011
    assert all(r.execute_command("BK.QF.EXISTS", "g", it) == 1 for it in items)
    qb = i["Quotient bits"]
    assert r.execute_command("BK.QF.GROW", "g") in (b"OK", True, "OK")
    assert info(r, "g")["Quotient bits"] == qb + 1
    assert all(r.execute_command("BK.QF.COUNT", "g", it) >= 1 for it in items)


def absent_fpr(r, key, n):
    p = r.pipeline(transaction=False)
    for i in range(n):
        p.execute_command("BK.QF.EXISTS", key, "absent-%d" % i)
    return sum(p.execute()) / n


def test_growth_keeps_the_error_rate(r):
    # A key BK.QF.ADD creates (INITIAL_SIZE 100, ERROR_RATE 1%) doubles six times at its error rate:
    # 6,000 items, then its FPR measured on absent items is still within 1.1 x 1%.
    p = r.pipeline(transaction=False)
    for i in range(6000):
        p.execute_command("BK.QF.ADD", "imp", "i%d" % i)
    p.execute()
    i = info(r, "imp")
    assert i["Number of items inserted"] == 6000
    assert float(i["Error rate target"]) == 0.01
    assert float(i["Error rate now"]) <= 0.011 and float(i["Error rate at capacity"]) <= 0.011
    assert absent_fpr(r, "imp", 40000) <= 0.011
    assert all(r.execute_command("BK.QF.EXISTS", "imp", "i%d" % k) == 1 for k in range(0, 6000, 7))
    # A reserved key without room, added to with INPLACE (the older rule): full, the add that would
    # need a doubling past the error rate is refused with a clear error, and nothing is lost or changed.
    r.execute_command("BK.QF.RESERVE", "tight", 1000, 0.01)
    added, refusal = 0, None
    for k in range(2000):
        try:
            r.execute_command("BK.QF.ADD", "tight", "t%d" % k, "INPLACE")
            added += 1
        except redis.ResponseError as e:
            refusal = str(e)
            break
    assert refusal is not None and "error rate" in refusal and "INPLACE" in refusal, refusal
    assert 1000 <= added < 1100
    i = info(r, "tight")
    assert i["Number of items inserted"] == added
    assert float(i["Error rate now"]) <= 0.01
    assert all(r.execute_command("BK.QF.EXISTS", "tight", "t%d" % k) == 1 for k in range(added))
    # BK.QF.GROW is the named old growth: it doubles anyway, and INFO shows what that costs
    assert r.execute_command("BK.QF.GROW", "tight") in (b"OK", True, "OK")
    i = info(r, "tight")
    assert float(i["Error rate target"]) == 0.01 and float(i["Error rate at capacity"]) > 0.011
    assert i["Slots"] == 2 * 1053  # ceil(1000 / 0.95) doubled
    assert r.execute_command("BK.QF.ADD", "tight", "after-grow") == 1


def test_growth_by_stages_keeps_the_error_rate(r):
    # Without INPLACE, a key without room grows by stages: 1,000 items reserved, 16,000 added (four
    # stages past the first table), every item present, the error rate at capacity and the FPR
    # measured on 40,000 absent items within 1.1 x 1%; DEBUG RELOAD keeps it; merge is refused.
    r.execute_command("BK.QF.RESERVE", "st", 1000, 0.01)
    p = r.pipeline(transaction=False)
    for i in range(16000):
        p.execute_command("BK.QF.ADD", "st", "s%d" % i)
    assert all(c >= 1 for c in p.execute())  # above 1 where an earlier item shares the fingerprint
    i = info(r, "st")
    assert i["Stages"] == 5 and i["Capacity"] == 16000, i
    assert float(i["Error rate at capacity"]) <= 0.011 and float(i["Error rate now"]) <= 0.011
    assert absent_fpr(r, "st", 40000) <= 0.011
    p = r.pipeline(transaction=False)
    for k in range(16000):
        p.execute_command("BK.QF.EXISTS", "st", "s%d" % k)
    assert all(x == 1 for x in p.execute())
    c5 = r.execute_command("BK.QF.COUNT", "st", "s5")
    assert r.execute_command("BK.QF.ADD", "st", "s5", "COUNT", 2) == c5 + 2  # counts add over the stages
    assert r.execute_command("BK.QF.DEL", "st", "s5", "COUNT", c5 + 3) == 0  # fewer present: nothing removed
    assert r.execute_command("BK.QF.DEL", "st", "s5", "COUNT", c5 + 2) == 1
    assert r.execute_command("BK.QF.EXISTS", "st", "s5") == 0
    stages = info(r, "st")["Stages"]  # 5, or 6 when the counter's slots filled the newest stage
    assert r.execute_command("DEBUG", "RELOAD") in (b"OK", True)
    assert info(r, "st")["Stages"] == stages
    assert r.execute_command("BK.QF.EXISTS", "st", "s15999") == 1
    r.execute_command("BK.QF.RESERVE", "other", 1000, 0.01)
    assert "stages" in err(r, "BK.QF.MERGE", "other", "st")
    assert "syntax" in err(r, "BK.QF.ADD", "st", "x", "INPLACE", "COUNT", 2)


def test_merge(r):
    r.execute_command("BK.QF.RESERVE", "a", 10000, 0.01)
    r.execute_command("BK.QF.RESERVE", "b", 10000, 0.01)
    for i in range(3000):
        r.execute_command("BK.QF.ADD", "a", "x%d" % i)
        r.execute_command("BK.QF.ADD", "b", "x%d" % (i + 1500))
    r.execute_command("BK.QF.GROW", "a")
    assert r.execute_command("BK.QF.MERGE", "a", "b") in (b"OK", True, "OK")
    assert all(r.execute_command("BK.QF.EXISTS", "a", "x%d" % i) == 1 for i in range(4500))
    assert r.execute_command("BK.QF.COUNT", "a", "x2000") >= 2
    # the ungrown filter cannot take the grown one's fingerprints
    assert "incompatible" in err(r, "BK.QF.MERGE", "b", "a")


def test_errors(r):
    assert "capacity" in err(r, "BK.QF.RESERVE", "e", 0, 0.01)
    assert "error rate" in err(r, "BK.QF.RESERVE", "e", 100, 1.5)
    assert "REMAINDER" in err(r, "BK.QF.RESERVE", "e", 100, 0.01, "REMAINDER", 1)
    r.execute_command("BK.QF.RESERVE", "e", 100, 0.01)
    assert "exists" in err(r, "BK.QF.RESERVE", "e", 100, 0.01)
    assert "not found" in err(r, "BK.QF.GROW", "nokey")
    r.set("s", "string")
    assert "WRONGTYPE" in err(r, "BK.QF.ADD", "s", "a")
    r.execute_command("BF.ADD", "bf", "a")
    assert "WRONGTYPE" in err(r, "BK.QF.ADD", "bf", "a")
    r.execute_command("BK.QF.RESERVE", "tiny", 100, 0.01, "REMAINDER", 3)
    r.execute_command("BK.QF.GROW", "tiny")
    assert "cannot grow" in err(r, "BK.QF.GROW", "tiny")  # 2 remainder bits left
    assert "syntax" in err(r, "BK.QF.ADD", "e", "a", "COUNT", 0)


def test_expanding(r):
    # BK.QF.RESERVE ... EXPANDING: one table that doubles in place whenever an add finds it full:
    # 1,000 items reserved, 20,000 added (five doublings), every item present, the error rate now, at
    # capacity and measured on 40,000 absent items within 1.1 x 1%, one stage; BK.QF.GROW doubles it
    # at its error rate; DEL and MERGE refused; DEBUG RELOAD keeps it.
    assert r.execute_command("BK.QF.RESERVE", "ex", 1000, 0.01, "EXPANDING") in (b"OK", True, "OK")
    size0 = info(r, "ex")["Size"]
    p = r.pipeline(transaction=False)
    for i in range(20000):
        p.execute_command("BK.QF.ADD", "ex", "e%d" % i)
    assert all(c >= 1 for c in p.execute())
    i = info(r, "ex")
    assert i["Number of items inserted"] == 20000 and i["Stages"] == 1, i
    assert i["Capacity"] >= 20000 and i["Size"] > 16 * size0, i
    assert float(i["Error rate now"]) <= 0.011 and float(i["Error rate at capacity"]) <= 0.011
    assert absent_fpr(r, "ex", 40000) <= 0.011
    p = r.pipeline(transaction=False)
    for k in range(20000):
        p.execute_command("BK.QF.EXISTS", "ex", "e%d" % k)
    assert all(x == 1 for x in p.execute())
    assert r.execute_command("BK.QF.ADD", "ex", "e5", "COUNT", 3) >= 4
    cap = i["Capacity"]
    assert r.execute_command("BK.QF.GROW", "ex") in (b"OK", True, "OK")
    i = info(r, "ex")
    assert i["Capacity"] == 2 * cap and float(i["Error rate at capacity"]) <= 0.011, i
    assert "expanding filter cannot remove" in err(r, "BK.QF.DEL", "ex", "e1")
    assert r.execute_command("BK.QF.EXISTS", "ex", "e1") == 1
    r.execute_command("BK.QF.RESERVE", "other2", 1000, 0.01)
    assert "expanding" in err(r, "BK.QF.MERGE", "other2", "ex")
    assert "unknown argument" in err(r, "BK.QF.RESERVE", "ex2", 1000, 0.01, "EXPANDED")
    assert r.execute_command("DEBUG", "RELOAD") in (b"OK", True)
    assert info(r, "ex")["Number of items inserted"] == 20003
    assert r.execute_command("BK.QF.EXISTS", "ex", "e19999") == 1
    assert r.execute_command("BK.QF.ADD", "ex", "after-reload") == 1


def test_persistence(server):
    c = server.client()
    c.execute_command("BK.QF.RESERVE", "p", 2000, 0.01, "REMAINDER", 9)  # counts take slots: room to double
    for i in range(1500):
        c.execute_command("BK.QF.ADD", "p", "k%d" % i, "COUNT", 1 + i % 5)
    want = [c.execute_command("BK.QF.COUNT", "p", "k%d" % i) for i in range(1500)]
    assert all(w >= 1 + i % 5 for i, w in enumerate(want))
    assert c.execute_command("DEBUG", "RELOAD") in (b"OK", True)
    assert [c.execute_command("BK.QF.COUNT", "p", "k%d" % i) for i in range(1500)] == want
    dump = c.dump("p")
    c.restore("p2", 0, dump)
    assert c.execute_command("BK.QF.COUNT", "p2", "k7") == want[7]
    c.save()
    server.restart(save=False)
    c = server.client()
    assert [c.execute_command("BK.QF.COUNT", "p", "k%d" % i) for i in range(1500)] == want
    assert c.execute_command("BK.QF.ADD", "p", "after-restart") == 1
