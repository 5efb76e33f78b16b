"""Migrating RedisBloom 2.x count-min sketches (CMSk-TYPE) and Top-K (TopK-TYPE): RDB files and DUMP
payloads as RedisBloom writes them (made by rbformat.py's model), answered exactly as the model (that
is, as RedisBloom) before and after further writes, and kept through SAVE, DEBUG RELOAD, restart, AOF
rewrite, COPY and DUMP/RESTORE, saved back in RedisBloom's own encoding.
"""
import os

import pytest
import redis

import rbformat as rb


def collision_free(t, candidates, n):
    """n items of candidates whose buckets in t are free or their own (so the model never meets the
    random decay), with room left for later adds of the same items."""
    taken = {}
    out = []
    for item in candidates:
        fp = rb.murmur2_32(item, t.GA)
        cells = [i * t.width + rb.murmur2_32(item, i) % t.width for i in range(t.depth)]
        if any(taken.get(c, fp) != fp or (t.buckets[c][1] and t.buckets[c][0] != fp) for c in cells):
            continue
        for c in cells:
            taken[c] = fp
        out.append(item)
        if len(out) == n:
            break
    assert len(out) == n
    return out


def fixtures():
    cms_small = rb.CMS(20, 5)
    cms_large = rb.CMS(2000, 7)
    words = [b"w%d" % i for i in range(300)]
    for i, w in enumerate(words):
        cms_small.incrby(w, i % 5 + 1)
        cms_large.incrby(w, i % 9 + 1)
    cms_small.incrby(b"big", 2 ** 32 - 5)  # near saturation
    topk = rb.TopK(5, 400, 4, 0.9)
    chosen = collision_free(topk, [b"item:%d" % i for i in range(5000)], 12)
    for j, item in enumerate(chosen):
        for _ in range(j + 1):
            topk.add(item)
    return {b"cms:small": cms_small, b"cms:large": cms_large}, {b"topk": (topk, chosen)}, words


def write_rdb(path, cmss, topks):
    entries = [(k, rb.cms_value(m)) for k, m in cmss.items()]
    entries += [(k, rb.topk_value(m)) for k, (m, _) in topks.items()]
    with open(path, "wb") as f:
        f.write(rb.rdb_file(entries))


def check(r, cmss, topks, words):
    probes = words + [b"absent:%d" % i for i in range(200)] + [b"big"]
    for key, m in cmss.items():
        assert r.execute_command("CMS.QUERY", key, *probes) == [m.query(x) for x in probes], key
        v = r.execute_command("CMS.INFO", key)
        assert v == [b"width", m.width, b"depth", m.depth, b"count", m.total]
    for key, (m, chosen) in topks.items():
        names = chosen + [b"absent:%d" % i for i in range(50)]
        got = r.execute_command("TOPK.LIST", key, "WITHCOUNT")
        assert got == [x for pair in m.list() for x in pair], key
        assert r.execute_command("TOPK.COUNT", key, *names) == [m.count(x) for x in names]
        assert r.execute_command("TOPK.QUERY", key, *names) == [m.query(x) for x in names]
        info = r.execute_command("TOPK.INFO", key)
        assert info[:6] == [b"k", m.k, b"width", m.width, b"depth", m.depth] and float(info[7]) == m.decay


def test_rdb_from_redisbloom(servers):
    cmss, topks, words = fixtures()
    s = servers(start=False, extra=["--rdbcompression", "no"])
    write_rdb(os.path.join(s.dir, "dump.rdb"), cmss, topks)
    s.start()
    r = s.client()
    assert r.type("cms:small") == b"CMSk-TYPE" and r.type("topk") == b"TopK-TYPE"
    check(r, cmss, topks, words)

    # further writes answer as RedisBloom would
    m = cmss[b"cms:small"]
    for w in words[:50] + [b"new"]:
        assert r.execute_command("CMS.INCRBY", "cms:small", w, 3) == [m.incrby(w, 3)]
    res = r.execute_command("CMS.INCRBY", "cms:small", "big", 100)
    m.incrby(b"big", 100)
    assert isinstance(res[0], redis.ResponseError) and "CMS: INCRBY overflow" in str(res[0])
    t, chosen = topks[b"topk"]
    for item in chosen[:6] * 3:
        got = r.execute_command("TOPK.ADD", "topk", item)
        assert got == [t.add(item)]
    check(r, cmss, topks, words)

    # merge among RedisBloom sketches of equal dimensions; never with a bloomkit sketch
    r.execute_command("CMS.INITBYDIM", "native", 20, 5)
    with pytest.raises(redis.ResponseError, match="width/depth is not equal"):
        r.execute_command("CMS.MERGE", "native", 1, "cms:small")
    with pytest.raises(redis.ResponseError, match="width/depth is not equal"):
        r.execute_command("CMS.MERGE", "cms:small", 1, "native")
    with pytest.raises(redis.ResponseError, match="width/depth is not equal"):
        r.execute_command("CMS.MERGE", "cms:small", 1, "cms:large")
    with pytest.raises(redis.ResponseError, match="MERGE overflow"):
        r.execute_command("CMS.MERGE", "cms:small", 2, "cms:small", "cms:small")  # the saturated counters
    r.execute_command("CMS.MERGE", "cms:large", 2, "cms:large", "cms:large", "WEIGHTS", 2, -1)
    check(r, cmss, topks, words)  # 2x - x = x

    # SAVE writes RedisBloom's own encoding, byte for byte (the item pointers RedisBloom saves are zero)
    r.save()
    with open(os.path.join(s.dir, "dump.rdb"), "rb") as f:
        saved = rb.RdbReader(f.read()).module_values()
    for key, model in cmss.items():
        assert saved[key] == ("CMSk-TYPE", 0, rb.cms_value(model)), key
    assert saved[b"topk"] == ("TopK-TYPE", 0, rb.module_value("TopK-TYPE", 0, t.rdb_ops(pointer=0)))

    r.execute_command("DEBUG", "RELOAD")
    check(r, cmss, topks, words)
    s.restart(save=True)
    r = s.client()
    check(r, cmss, topks, words)

    # COPY, and an AOF rewrite (no RDB preamble) replayed on restart
    r.copy("cms:large", "cms:copy")
    assert r.execute_command("CMS.QUERY", "cms:copy", *words[:20]) == [cmss[b"cms:large"].query(w) for w in words[:20]]
    r.copy("topk", "topk:copy")
    assert r.execute_command("TOPK.LIST", "topk:copy") == [x for x, _ in t.list()]
    r.config_set("aof-use-rdb-preamble", "no")
    r.config_set("appendonly", "yes")
    while r.info("persistence")["aof_rewrite_in_progress"] or r.info("persistence")["aof_rewrite_scheduled"]:
        pass
    s.restart(save=False, extra=["--appendonly", "yes", "--aof-use-rdb-preamble", "no"])
    r = s.client()
    check(r, cmss, topks, words)
    assert r.type("topk") == b"TopK-TYPE"


def test_dump_payloads_from_redisbloom(r):
    cmss, topks, words = fixtures()
    for key, m in cmss.items():
        r.restore(key, 0, rb.dump_payload(rb.cms_value(m)))
    for key, (m, _) in topks.items():
        r.restore(key, 0, rb.dump_payload(rb.topk_value(m)))
    check(r, cmss, topks, words)
    # damaged values: refused, the server keeps running
    good_cms = rb.CMS(20, 5).rdb_ops()
    t = rb.TopK(3, 10, 2, 0.9)
    t.add(b"x")
    bad = [
        rb.module_value("CMSk-TYPE", 0, good_cms[:3] + [("s", b"\0" * 399)]),   # short counters
        rb.module_value("CMSk-TYPE", 0, [("u", 0)] + good_cms[1:]),             # width 0
        rb.module_value("CMSk-TYPE", 0, [("u", 1 << 40), ("u", 1 << 40)] + good_cms[2:]),
        rb.module_value("CMSk-TYPE", 0, good_cms[:3]),                          # missing array
        rb.module_value("TopK-TYPE", 0, t.rdb_ops()[:5]),                       # no heap
        rb.module_value("TopK-TYPE", 0, t.rdb_ops()[:4] + [("s", b"\0" * 8)] + t.rdb_ops()[5:]),
        rb.module_value("TopK-TYPE", 0, [("u", 0)] + t.rdb_ops()[1:]),          # k 0
        rb.module_value("TopK-TYPE", 0, t.rdb_ops()[:3] + [("d", 1.5)] + t.rdb_ops()[4:]),
        rb.module_value("TopK-TYPE", 0, t.rdb_ops()[:-1]),                      # an item missing
        rb.module_value("CMSk-TYPE", 1, good_cms),                              # unknown encoding
    ]
    for i, v in enumerate(bad):
        with pytest.raises(redis.ResponseError):
            r.restore(f"bad{i}", 0, rb.dump_payload(v))
        assert r.exists(f"bad{i}") == 0
    assert r.ping()


def test_damaged_values_at_random(r):
    # RESTORE payloads with a valid CRC around damaged values (bytes flipped, cut, repeated) of both
    # encodings, RedisBloom's and bloomkit's: each is refused or loads into a sketch that then answers
    # every command without harm; the server keeps running.
    rng = __import__("random").Random(11)
    cmss, topks, words = fixtures()
    t, chosen = topks[b"topk"]
    values = [rb.cms_value(cmss[b"cms:small"]), rb.topk_value(t)]
    r.execute_command("CMS.INITBYDIM", "src:cms", 50, 3)
    r.execute_command("CMS.INCRBY", "src:cms", "a", 3, "b", 4)
    r.execute_command("TOPK.RESERVE", "src:topk", 4, 20, 3, 0.9)
    r.execute_command("TOPK.ADD", "src:topk", *[f"x{i % 7}" for i in range(60)])
    for k in ("src:cms", "src:topk"):
        values.append(r.dump(k)[:-10])  # the value without the version and the CRC
    loaded = 0
    for n in range(600):
        v = bytearray(values[n % len(values)])
        kind = rng.randrange(3)
        if kind == 0:
            for _ in range(rng.randint(1, 4)):
                i = rng.randrange(len(v))
                v[i] ^= 1 << rng.randrange(8)
        elif kind == 1:
            del v[rng.randrange(1, len(v)):]
        else:
            i = rng.randrange(len(v))
            v[i:i] = v[i:i + rng.randint(1, 16)]
        key = f"d{n}"
        try:
            r.restore(key, 0, rb.dump_payload(bytes(v)))
        except redis.ResponseError:
            continue
        loaded += 1
        typ = r.type(key)
        if typ in (b"CMSk-TYPE", b"bloomkitS"):
            r.execute_command("CMS.QUERY", key, "a", "w1", "")
            r.execute_command("CMS.INFO", key)
            res = r.execute_command("CMS.INCRBY", key, "a", 1)
            assert len(res) == 1
        elif typ in (b"TopK-TYPE", b"bloomkitK"):
            r.execute_command("TOPK.LIST", key, "WITHCOUNT")
            r.execute_command("TOPK.COUNT", key, "a", chosen[0])
            r.execute_command("TOPK.QUERY", key, "a")
            r.execute_command("TOPK.INFO", key)
            r.execute_command("TOPK.INCRBY", key, "a", 100, chosen[1], 5)
            r.execute_command("TOPK.LIST", key)
        r.dump(key)
        r.delete(key)
    assert r.ping()
    print(f"damaged values: {loaded} of 600 loaded (the rest refused)")
