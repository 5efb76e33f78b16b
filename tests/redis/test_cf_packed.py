"""Small CF keys in the packed form (docs/REDIS.md, "Memory per key"): memory per key at or below
RedisBloom's, and every path -- commands, growth, RDB, DEBUG RELOAD, SCANDUMP / LOADCHUNK, COPY, BK.EXPORT
-- answering and saving exactly as the ordinary form does (a server started with CF_PACKED no keeps
every filter ordinary: the same commands there must give the same replies and the same bytes).
"""
import redis

# RedisBloom 2.4 on the same workloads (bench/redis_keymem.py, 10,000 keys): bytes per key of used_memory,
# and the FPR of its filters with 100 items.
RB_RESERVE_100 = 277
RB_ADD = 1173
RB_FPR_RESERVE_100 = 0.012204
RB_FPR_ADD = 0.001534
KEYS = 10000


def used(c):
    return c.info("memory")["used_memory"]


def fill(c, make, n=KEYS):
    """make(pipe, i) for i < n: used_memory growth per key, and the mean MEMORY USAGE of every tenth key."""
    before = used(c)
    pipe = c.pipeline(transaction=False)
    for i in range(n):
        make(pipe, i)
        if i % 1000 == 999:
            pipe.execute()
    pipe.execute()
    per_key = (used(c) - before) / n
    pipe = c.pipeline(transaction=False)
    for i in range(0, n, 10):
        pipe.memory_usage(f"k:{i}")
    usage = pipe.execute()
    return per_key, sum(usage) / len(usage)


def positives(c, n, items):
    """CF.MEXISTS of `items` fixed absent items on each of n keys: the answers said present."""
    fp = 0
    pipe = c.pipeline(transaction=False)
    for i in range(n):
        pipe.execute_command("CF.MEXISTS", f"k:{i}", *[f"absent:{i}:{j}" for j in range(items)])
        if i % 500 == 499:
            fp += sum(sum(r) for r in pipe.execute())
    return fp + sum(sum(r) for r in pipe.execute())


def test_memory_per_key_and_fpr(servers):
    """The workloads of bench/redis_keymem.py: the ordinary form (CF_PACKED no) exceeds RedisBloom's
    memory per key, the packed form does not, and both answer the same fixed absent items alike, at or
    below RedisBloom's FPR."""
    figures = {}
    for packed in (True, False):
        s = servers(module_args=[] if packed else ["CF_PACKED", "no"])
        c = s.client()
        reserve = fill(c, lambda p, i: p.execute_command("CF.RESERVE", f"k:{i}", 100))
        c.flushall()
        add = fill(c, lambda p, i: p.execute_command("CF.ADD", f"k:{i}", f"item:{i}"))
        c.flushall()
        figures[packed] = (reserve, add)
        if not packed:
            break
        # 100 items per key: CF.RESERVE 100 + CF.INSERT, and CF.INSERT (capacity 1024); the same fixed
        # items as bench/redis_keymem.py (the answers are the ordinary form's: see the tests below)
        loaded = fill(c, lambda p, i: (p.execute_command("CF.RESERVE", f"k:{i}", 100),
                                       p.execute_command("CF.INSERT", f"k:{i}", "ITEMS",
                                                         *[f"item:{i}:{j}" for j in range(100)])))
        fp_reserve = positives(c, KEYS, 100) / (KEYS * 100)
        c.flushall()
        inserted = fill(c, lambda p, i: p.execute_command("CF.INSERT", f"k:{i}", "ITEMS",
                                                          *[f"item:{i}:{j}" for j in range(100)]))
        fp_add = positives(c, KEYS, 100) / (KEYS * 100)
        figures["loaded"] = (loaded, inserted, fp_reserve, fp_add)
        s.stop()
    (reserve, add), (loaded, inserted, fp_reserve, fp_add) = figures[True], figures["loaded"]
    for per_key, usage in (reserve, loaded):
        assert per_key <= RB_RESERVE_100 and usage <= RB_RESERVE_100, figures
    for per_key, usage in (add, inserted):
        assert per_key <= RB_ADD and usage <= RB_ADD, figures
    # MEMORY USAGE is honest: used_memory per key minus it is Redis's own key overhead (tens of bytes)
    for per_key, usage in (reserve, add):
        assert 0 < per_key - usage < 64, figures
    assert fp_reserve <= RB_FPR_RESERVE_100 and fp_add <= RB_FPR_ADD, figures
    # the ordinary form takes more than RedisBloom
    old = figures[False]
    assert old[0][0] > RB_RESERVE_100 and old[1][0] > RB_ADD, figures


def twin_servers(servers):
    return servers().client(), servers(module_args=["CF_PACKED", "no"]).client()


def both(a, b, *cmd):
    """Run cmd on the packed server a and the ordinary server b: the replies (or errors) must match."""
    out = []
    for c in (a, b):
        try:
            out.append(c.execute_command(*cmd))
        except redis.ResponseError as e:
            out.append(("error", str(e)))
    assert out[0] == out[1], (cmd, out)
    return out[0]


def export(c, key):
    return c.execute_command("BK.EXPORT", key)


def scandump(c, key):
    chunks, it = [], 0
    while True:
        it, data = c.execute_command("CF.SCANDUMP", key, it)
        if it == 0:
            return chunks
        chunks.append((it, data))


def same_state(a, b, keys, items):
    for k in keys:
        assert export(a, k) == export(b, k), k
        assert scandump(a, k) == scandump(b, k), k
        assert a.execute_command("CF.MEXISTS", k, *items) == b.execute_command("CF.MEXISTS", k, *items), k
        info_a = a.execute_command("CF.INFO", k)
        info_b = b.execute_command("CF.INFO", k)
        assert info_a[2:] == info_b[2:], (k, info_a, info_b)  # all but Size (the packed form is smaller)


def test_commands_growth_and_saves_match_ordinary_form(servers):
    """The same command stream on a packed and an ordinary server: the same replies, the same BK.EXPORT
    and SCANDUMP bytes, through adds, duplicates, deletes, counts, many copies of one item, a full filter
    without expansion, and growth to a second table (the key then converts to the ordinary form)."""
    a, b = twin_servers(servers)
    both(a, b, "CF.RESERVE", "r", 100)
    both(a, b, "CF.RESERVE", "small", 8, "BUCKETSIZE", 2, "MAXITERATIONS", 5, "EXPANSION", 2)
    both(a, b, "CF.RESERVE", "fixed", 16, "EXPANSION", 0)
    both(a, b, "CF.RESERVE", "b4", 500, "BUCKETSIZE", 4, "MAXITERATIONS", 50)
    items = [f"item:{j}" for j in range(400)]
    for j, it in enumerate(items):
        for k in ("r", "small", "fixed", "b4", "auto"):
            both(a, b, "CF.ADD" if j % 3 else "CF.ADDNX", k, it)
        if j % 7 == 0:
            both(a, b, "CF.ADD", "r", items[0])  # copies of one item
        if j % 5 == 4:
            for k in ("r", "small", "b4", "auto"):
                both(a, b, "CF.DEL", k, items[j - 2])
                both(a, b, "CF.COUNT", k, items[j - 3])
        if j % 50 == 0:
            same_state(a, b, ["r", "small", "fixed", "b4", "auto"], items[:60] + ["absent"])
    both(a, b, "CF.INSERT", "ins", "CAPACITY", 1000, "ITEMS", *items)
    both(a, b, "CF.INSERTNX", "ins", "ITEMS", *items[:50], "new1", "new2")
    keys = ["r", "small", "fixed", "b4", "auto", "ins"]
    same_state(a, b, keys, items + ["absent:1", "absent:2"])
    assert a.execute_command("CF.INFO", "small")[5] > 1  # it grew a chain
    # the packed keys take less memory than the ordinary ones; those grown to a chain the same
    for k in keys:
        if a.execute_command("CF.INFO", k)[5] == 1:
            assert a.memory_usage(k) < b.memory_usage(k), k
        else:
            assert a.memory_usage(k) == b.memory_usage(k), k
    assert a.execute_command("CF.INFO", "b4")[5] == 1
    # no false negatives for what stayed in
    kept = [it for j, it in enumerate(items) if (j + 2) % 5 != 4 and j > 0]
    for k in ("r", "b4", "auto"):
        assert all(a.execute_command("CF.MEXISTS", k, *kept)), k


def test_rdb_reload_loadchunk_copy(servers):
    """Packed keys through DEBUG RELOAD, a restart from the RDB, SCANDUMP / LOADCHUNK into the other
    server (the other form) and back, COPY, and a digest: answers and bytes unchanged."""
    a, b = twin_servers(servers)
    srv_a = servers.servers[0]
    items = [f"x{j}" for j in range(150)]
    for i in range(50):
        both(a, b, "CF.RESERVE", f"k{i}", 100 + 10 * i)
        both(a, b, "CF.INSERT", f"k{i}", "ITEMS", *items[: 2 * i + 1])
    keys = [f"k{i}" for i in range(50)]
    before = {k: (export(a, k), a.execute_command("CF.MEXISTS", k, *items)) for k in keys}
    usage = {k: a.memory_usage(k) for k in keys}
    digest = a.execute_command("DEBUG", "DIGEST")
    assert a.execute_command("DEBUG", "RELOAD")
    assert a.execute_command("DEBUG", "DIGEST") == digest
    for k in keys:
        assert (export(a, k), a.execute_command("CF.MEXISTS", k, *items)) == before[k], k
        assert a.memory_usage(k) == usage[k], k
    a.save()
    srv_a.restart()
    a = srv_a.client()
    for k in keys:
        assert (export(a, k), a.execute_command("CF.MEXISTS", k, *items)) == before[k], k
        assert a.memory_usage(k) == usage[k], k
    same_state(a, b, keys, items)
    # SCANDUMP from the packed server, LOADCHUNK into the ordinary one, and back
    for src, dst in ((a, b), (b, a)):
        for k in keys[:10]:
            dst.delete(k)
            for it, data in scandump(src, k):
                assert dst.execute_command("CF.LOADCHUNK", k, it, data)
            assert export(dst, k) == before[k][0]
            assert dst.execute_command("CF.MEXISTS", k, *items) == before[k][1]
            assert dst is b or dst.memory_usage(k) == usage[k]  # packed again
    both(a, b, "CF.ADD", "k3", "after")
    assert a.memory_usage("k3") == usage["k3"]
    # COPY: the copy is packed too, and independent
    assert a.copy("k7", "k7c")
    assert export(a, "k7c") == export(a, "k7")
    assert a.execute_command("CF.INFO", "k7c")[1] == a.execute_command("CF.INFO", "k7")[1]  # Size
    a.execute_command("CF.ADD", "k7c", "only-in-copy")
    assert a.execute_command("CF.EXISTS", "k7c", "only-in-copy") == 1
    assert export(a, "k7") == before["k7"][0]


def test_expiry_kept_when_key_converts(servers):
    """A packed key that grows past the packed form converts in place: its TTL stays."""
    c = servers().client()
    c.execute_command("CF.RESERVE", "t", 8, "EXPANSION", 1)
    c.expire("t", 1000)
    small = c.memory_usage("t")
    for j in range(40):
        c.execute_command("CF.ADD", "t", f"i{j}")
    assert c.execute_command("CF.INFO", "t")[5] > 1
    assert c.memory_usage("t") > small
    assert 0 < c.ttl("t") <= 1000
    assert all(c.execute_command("CF.MEXISTS", "t", *[f"i{j}" for j in range(40)]))


def test_replica_follows_packed_keys(servers):
    """A replica that connects after the keys were made (a full sync: the RDB encoding carries each key's
    kick generator state) then applies the replication stream to packed keys, conversions on growth
    included: the same digest, the same bytes and the same memory per key as its master."""
    m, s = servers(), servers()
    cm, cs = m.client(), s.client()
    for i in range(20):
        cm.execute_command("CF.RESERVE", f"k{i}", 64 + 16 * i)
        cm.execute_command("CF.INSERT", f"k{i}", "ITEMS", *[f"a{i}:{j}" for j in range((64 + 16 * i) * 3 // 4)])  # kicks
    s.replicate(m.port)
    for i in range(20):
        cm.execute_command("CF.INSERT", f"k{i}", "ITEMS", *[f"b{i}:{j}" for j in range(25 * i + 1)])  # some grow
        cm.execute_command("CF.DEL", f"k{i}", f"a{i}:0")
    cm.execute_command("CF.ADD", "new", "x")
    assert cm.execute_command("WAIT", 1, 10000) == 1
    assert cm.execute_command("DEBUG", "DIGEST") == cs.execute_command("DEBUG", "DIGEST")
    grown = 0
    for i in range(20):
        k = f"k{i}"
        assert export(cm, k) == export(cs, k), k
        assert cm.memory_usage(k) == cs.memory_usage(k), k
        grown += cm.execute_command("CF.INFO", k)[5] > 1
    assert 0 < grown < 20  # both forms on the replica
