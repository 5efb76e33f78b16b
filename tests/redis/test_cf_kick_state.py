"""A CF key's kick generator state travels with the key (docs/REDIS.md, "Persistence and replication").

An insert that has to evict picks its victims with a generator whose state moves on with every kick. The
saved form does not hold it, so the RDB encoding carries it beside the saved form (kind 2): a replica
after a full sync, a server after DEBUG RELOAD or a restart, a RESTOREd key then kick as the original
does, and their bytes (BK.EXPORT, DEBUG DIGEST) stay equal through later adds. Every key here has seen
kicks before the copy is made: small filters filled to 95%, NONSCALING and growing, packed and ordinary
(CF_PACKED no), and larger ones.
"""
import pytest
import redis

import rbformat as rb

# (key, CF.RESERVE arguments, items filled before the copy)
KEYS = [
    ("ns-small", [64, "EXPANSION", 0], 61),           # packed unless CF_PACKED no; full at the edge
    ("ns-b4", [200, "BUCKETSIZE", 4, "EXPANSION", 0], 190),
    ("grow-small", [32, "BUCKETSIZE", 2, "EXPANSION", 1], 100),  # grew: tables of an ordinary chain
    ("ns-large", [5000, "EXPANSION", 0], 4750),       # too large to pack
    ("grow-large", [3000, "BUCKETSIZE", 4, "EXPANSION", 2], 6000),
]


def run(c, cmds):
    """Pipelined commands; errors (a full NONSCALING filter) are answers too."""
    pipe = c.pipeline(transaction=False)
    for cmd in cmds:
        pipe.execute_command(*cmd)
    return [("error", str(r)) if isinstance(r, redis.ResponseError) else r
            for r in pipe.execute(raise_on_error=False)]


def make_keys(c):
    run(c, [("CF.RESERVE", k, *args) for k, args, _ in KEYS])
    run(c, [("CF.ADD", k, f"{k}:a{i}") for k, _, n in KEYS for i in range(n)])
    return [k for k, _, _ in KEYS]


def churn(c, keys, tag, rounds=60, suffix=""):
    """Removes of the oldest items and adds of new ones (to key k + suffix): near full, most adds kick."""
    cmds = []
    for k, _, n in KEYS:
        if k not in keys:
            continue
        for i in range(rounds):
            cmds.append(("CF.DEL", k + suffix, f"{k}:a{(len(tag) + i) % n}"))
            cmds.append(("CF.ADD", k + suffix, f"{k}:{tag}{i}"))
            cmds.append(("CF.ADD", k + suffix, f"{k}:{tag}{i}x"))
    return run(c, cmds)


def state(c, keys):
    return {k: (c.execute_command("BK.EXPORT", k), c.execute_command("DEBUG", "DIGEST-VALUE", k)[0])
            for k in keys}


def servers_for(servers, packed, n):
    return [servers(module_args=[] if packed else ["CF_PACKED", "no"]) for _ in range(n)]


@pytest.mark.parametrize("packed", [True, False], ids=["packed", "ordinary"])
def test_replica_after_full_sync_keeps_kick_state(servers, packed):
    m, s = servers_for(servers, packed, 2)
    cm, cs = m.client(), s.client()
    keys = make_keys(cm)
    churn(cm, keys, "before")
    s.replicate(m.port)  # full sync: the keys reach the replica through the RDB encoding
    assert state(cm, keys) == state(cs, keys)
    replies = churn(cm, keys, "after")
    # some adds were refused (full NONSCALING filters), some of those after walks of the stash that
    # changed the filter: replicated as well, the replica makes the same attempt
    assert any(isinstance(r, tuple) and "full" in r[1] for r in replies)
    assert cm.execute_command("WAIT", 1, 10000) == 1
    assert state(cm, keys) == state(cs, keys)
    assert cm.execute_command("DEBUG", "DIGEST") == cs.execute_command("DEBUG", "DIGEST")


@pytest.mark.parametrize("packed", [True, False], ids=["packed", "ordinary"])
def test_reload_and_restart_keep_kick_state(servers, packed):
    """DEBUG RELOAD and a restart from RDB on one of two twin servers: the same later adds give the same
    replies and the same bytes on both."""
    a, b = servers_for(servers, packed, 2)
    ca, cb = a.client(), b.client()
    keys = make_keys(ca)
    make_keys(cb)
    assert churn(ca, keys, "x") == churn(cb, keys, "x")
    assert ca.execute_command("DEBUG", "RELOAD") == b"OK"
    assert state(ca, keys) == state(cb, keys)
    assert churn(ca, keys, "y") == churn(cb, keys, "y")
    assert state(ca, keys) == state(cb, keys)
    a.restart(save=True)
    ca = a.client()
    assert sorted(ca.keys()) == sorted(k.encode() for k in keys)
    assert churn(ca, keys, "z") == churn(cb, keys, "z")
    assert state(ca, keys) == state(cb, keys)
    assert ca.execute_command("DEBUG", "DIGEST") == cb.execute_command("DEBUG", "DIGEST")


@pytest.mark.parametrize("packed", [True, False], ids=["packed", "ordinary"])
def test_dump_restore_keeps_kick_state(servers, packed):
    """RESTORE (and so MIGRATE) of a DUMP: the copy kicks as the original does."""
    a, b = servers_for(servers, packed, 2)
    ca, cb = a.client(), b.client()
    keys = make_keys(ca)
    churn(ca, keys, "x")
    for k in keys:
        cb.restore(k, 0, ca.dump(k))
        ca.restore(k + ":copy", 0, ca.dump(k))
    assert state(ca, keys) == state(cb, keys)
    replies = churn(ca, keys, "y")
    assert churn(cb, keys, "y") == replies
    assert churn(ca, keys, "y", suffix=":copy") == replies
    assert state(ca, keys) == state(cb, keys)
    for k in keys:
        assert ca.execute_command("BK.EXPORT", k + ":copy") == ca.execute_command("BK.EXPORT", k), k


def test_digest_covers_kick_state(servers):
    """Two keys with the same saved form but different kick states have different DEBUG DIGEST-VALUEs
    (a digest compare catches a replica whose generator has drifted)."""
    c = servers().client()
    c.execute_command("CF.RESERVE", "k", 64, "EXPANSION", 0)
    run(c, [("CF.ADD", "k", f"a{i}") for i in range(61)])
    saved = c.execute_command("BK.EXPORT", "k")
    c.execute_command("BK.IMPORT", "fresh", saved)  # the saved form only: its generator from the seed
    assert c.execute_command("BK.EXPORT", "fresh") == saved
    assert c.execute_command("DEBUG", "DIGEST-VALUE", "k") != c.execute_command("DEBUG", "DIGEST-VALUE", "fresh")


def test_old_rdb_values_load_and_bad_state_refused(servers):
    """A CF value in the RDB encoding without the state (kind 0, as saved before kind 2 existed) still
    loads, its generator restarting from the seed; a kind 2 value with the invalid state 0 is refused."""
    c = servers().client()
    c.execute_command("CF.RESERVE", "k", 64, "EXPANSION", 0)
    run(c, [("CF.ADD", "k", f"a{i}") for i in range(61)])
    saved = c.execute_command("BK.EXPORT", "k")
    c.execute_command("BK.IMPORT", "fresh", saved)
    old = rb.module_value("bloomkitC", 1, [("u", 0), ("u", len(saved)), ("s", saved)])
    c.restore("old", 0, rb.dump_payload(old))
    assert c.execute_command("BK.EXPORT", "old") == saved
    assert c.execute_command("DEBUG", "DIGEST-VALUE", "old") == c.execute_command("DEBUG", "DIGEST-VALUE", "fresh")
    assert c.execute_command("CF.EXISTS", "old", "a5") == 1
    for state_word in (0,):
        bad = rb.module_value("bloomkitC", 1, [("u", 2), ("u", len(saved)), ("u", state_word), ("s", saved)])
        with pytest.raises(redis.ResponseError):
            c.restore("bad", 0, rb.dump_payload(bad))
    # the state of a kind 2 value is the one set: the same value restored with kick states 1 and 2
    one = rb.module_value("bloomkitC", 1, [("u", 2), ("u", len(saved)), ("u", 1), ("s", saved)])
    two = rb.module_value("bloomkitC", 1, [("u", 2), ("u", len(saved)), ("u", 2), ("s", saved)])
    c.restore("one", 0, rb.dump_payload(one))
    c.restore("two", 0, rb.dump_payload(two))
    assert c.execute_command("DEBUG", "DIGEST-VALUE", "one") != c.execute_command("DEBUG", "DIGEST-VALUE", "two")
    # a BF value never has kind 2
    bf = rb.module_value("bloomkitB", 1, [("u", 2), ("u", len(saved)), ("u", 1), ("s", saved)])
    with pytest.raises(redis.ResponseError):
        c.restore("bf", 0, rb.dump_payload(bf))


def test_aof_rewrite_keeps_kick_state(servers):
    """A restart from a rewritten AOF without RDB preamble (CF.LOADCHUNK commands, then BK.CF.KICKSTATE):
    the same later adds give the same bytes as on a twin server that did not restart."""
    extra = ["--appendonly", "yes", "--aof-use-rdb-preamble", "no", "--appendfsync", "no"]
    a, b = servers(extra=extra), servers()
    ca, cb = a.client(), b.client()
    keys = make_keys(ca)
    make_keys(cb)
    assert churn(ca, keys, "x") == churn(cb, keys, "x")

    a.rewrite_aof()
    a.restart(save=False, extra=extra)
    ca = a.client()
    assert state(ca, keys) == state(cb, keys)
    assert churn(ca, keys, "y") == churn(cb, keys, "y")
    assert state(ca, keys) == state(cb, keys)
