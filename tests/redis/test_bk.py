"""BK.MERGE, BK.INFO, BK.IMPORT, BK.EXPORT."""
import os
import subprocess

import pytest
import redis

from resp import Bool, Conn, Map, Null


def err(r, *args):
    with pytest.raises(redis.ResponseError) as e:
        r.execute_command(*args)
    return str(e.value)


def test_merge_union(r):
    # The intended use: every host reserves the same filter, sized for the union, and the union is OR.
    for k, rng in (("a", range(0, 3000)), ("b", range(2000, 5000)), ("c", range(4000, 6000))):
        r.bf().create(k, 0.01, 6000, noScale=True)
        for s in range(rng.start, rng.stop, 500):
            r.bf().madd(k, *[f"x{i}" for i in range(s, min(s + 500, rng.stop))])
    assert r.execute_command("BK.MERGE", "u", "a", "b", "c") in (b"OK", True)
    everything = [f"x{i}" for i in range(6000)]
    assert all(r.bf().mexists("u", *everything))
    # the sources are unchanged
    assert r.bf().info("a").insertedNum <= 3000
    assert all(r.bf().mexists("a", *[f"x{i}" for i in range(3000)]))
    # merging into an existing destination
    r.bf().create("d", 0.01, 6000, noScale=True)
    r.bf().add("d", "only-in-d")
    assert r.execute_command("BK.MERGE", "d", "a")
    assert r.bf().exists("d", "only-in-d") == 1 and all(r.bf().mexists("d", *[f"x{i}" for i in range(3000)]))
    absent = [f"absent{i}" for i in range(20000)]
    fp = r.bf().mexists("u", *absent).count(1) / len(absent)
    assert fp < 0.013, fp
    info = dict(zip(*[iter(r.execute_command("BK.INFO", "u"))] * 2))
    assert abs(float(info[b"estimated_cardinality"]) - 6000) < 300


def test_merge_scaling_chains_reports_the_cost(r):
    # Scaling filters merge sub-filter by sub-filter: nothing is lost, but each sub-filter then holds the
    # keys of every source, so the false-positive rate rises; BK.INFO says so.
    for k, rng in (("a", range(0, 3000)), ("b", range(3000, 6000))):
        r.bf().create(k, 0.01, 500, expansion=2)
        r.bf().madd(k, *[f"x{i}" for i in rng])
    assert r.execute_command("BK.MERGE", "u", "a", "b")
    assert all(r.bf().mexists("u", *[f"x{i}" for i in range(6000)]))
    info = dict(zip(*[iter(r.execute_command("BK.INFO", "u"))] * 2))
    assert float(info[b"fpr_now"]) > 0.01 and info[b"warning"]


def test_merge_incompatible_leaves_dest_unchanged(r):
    r.bf().create("a", 0.01, 1000)
    r.bf().create("b", 0.001, 1000)
    r.bf().create("d", 0.01, 1000)
    r.bf().madd("a", "1", "2")
    r.bf().madd("b", "3")
    before = r.execute_command("BK.EXPORT", "d")
    e = err(r, "BK.MERGE", "d", "a", "b")
    assert "incompatible" in e and "'b'" in e
    assert r.execute_command("BK.EXPORT", "d") == before
    assert err(r, "BK.MERGE", "d", "a", "nokey").startswith("not found")
    assert r.execute_command("BK.EXPORT", "d") == before
    r.cf().create("c", 100)
    assert err(r, "BK.MERGE", "d", "c").startswith("WRONGTYPE")
    assert err(r, "BK.MERGE", "c", "a").startswith("WRONGTYPE")
    assert "wrong number of arguments" in err(r, "BK.MERGE", "d")
    assert r.exists("nodest") == 0
    err(r, "BK.MERGE", "nodest", "a", "b")
    assert r.exists("nodest") == 0


def test_info(server, r):
    r.bf().create("f", 0.01, 1000)
    r.bf().madd("f", *[f"i{i}" for i in range(500)])
    c = Conn(server.port, resp=3)
    info = c.call("BK.INFO", "f")
    assert isinstance(info, Map)
    d = dict(info)
    assert d["type"] == "scalable" and d["capacity"] == 1000 and d["items"] == 500
    assert 0 < d["fill_ratio"] < 0.5
    assert abs(d["estimated_cardinality"] - 500) < 50
    assert d["fpr_target"] == 0.01 and d["fpr_now"] < 0.01 and d["fpr_bound"] <= 0.01
    assert d["saturated"] == Bool(False) and d["warning"] == Null()
    assert d["memory_bytes"] > 1000 and d["bits_per_item"] > 0 and d["filters"] == 1
    c.call("BF.RESERVE", "full", 0.01, 100, "NONSCALING")
    for i in range(200):
        c.call("BF.ADD", "full", f"k{i}")
    d = dict(c.call("BK.INFO", "full"))
    assert d["saturated"] == Bool(True) and "capacity" in d["warning"]
    c.call("CF.RESERVE", "c", 1000)
    d = dict(c.call("BK.INFO", "c"))
    assert d["type"] == "cuckoo" and d["items"] == 0
    c.close()
    info2 = r.execute_command("BK.INFO", "f")  # RESP2: flat array, doubles as bulk strings
    assert info2[0] == b"type" and len(info2) == 26
    assert err(r, "BK.INFO", "nokey") == "not found"
    r.set("s", "x")
    assert err(r, "BK.INFO", "s").startswith("WRONGTYPE")


def test_export_import_roundtrip(r):
    r.bf().create("f", 0.001, 2000, expansion=4)
    r.bf().madd("f", *[f"i{i}" for i in range(5000)])
    r.cf().create("c", 2000, bucket_size=4)
    r.cf().insert("c", [f"i{i}" for i in range(1500)])
    for key, fam in (("f", "BF"), ("c", "CF")):
        payload = r.execute_command("BK.EXPORT", key)
        assert payload[:4] != b"\x00\x00\x00\x00"
        assert r.execute_command("BK.IMPORT", key + "2", payload) in (b"OK", True)
        assert r.execute_command("BK.EXPORT", key + "2") == payload
        assert r.type(key + "2") == r.type(key)
        n = 5000 if fam == "BF" else 1500
        assert all(r.execute_command(f"{fam}.MEXISTS", key + "2", *[f"i{i}" for i in range(n)]))
    assert err(r, "BK.IMPORT", "f2", payload) == "item exists"
    assert r.execute_command("BK.IMPORT", "f2", payload, "REPLACE")
    assert r.type("f2") == r.type("c")  # now a cuckoo filter
    r.set("s", "x")
    assert r.execute_command("BK.IMPORT", "s", payload, "REPLACE")
    assert err(r, "BK.EXPORT", "nokey") == "not found"


def test_import_refuses_damage(r):
    r.bf().madd("f", *[f"i{i}" for i in range(300)])
    payload = r.execute_command("BK.EXPORT", "f")
    assert err(r, "BK.IMPORT", "x", b"").startswith("invalid payload")
    assert err(r, "BK.IMPORT", "x", b"hello world").startswith("invalid payload")
    assert err(r, "BK.IMPORT", "x", payload[:-1]).startswith("invalid payload")
    assert err(r, "BK.IMPORT", "x", payload + b"\x00").startswith("invalid payload")
    for pos in range(0, len(payload), max(1, len(payload) // 97)):
        bad = bytearray(payload)
        bad[pos] ^= 0x04
        assert err(r, "BK.IMPORT", "x", bytes(bad)).startswith("invalid payload"), pos
    assert r.exists("x") == 0
    assert err(r, "BK.IMPORT", "x", payload, "BOGUS").startswith("unknown argument")


if os.environ.get("BK_CLI"):
    # Defined only when the CLI is part of the build (tests/redis/CMakeLists.txt passes its path).
    CLI = os.environ["BK_CLI"]

    @pytest.mark.parametrize("ftype", ["bloom", "partitioned", "blocked", "counting", "scalable", "cuckoo",
                                       "fuse", "ribbon"])
    def test_cli_built_filter_imports(r, tmp_path, ftype):
        keys = [f"user:{i}" for i in range(20000)]
        (tmp_path / "keys.txt").write_text("\n".join(keys) + "\n")
        out = tmp_path / "f.bf"
        subprocess.run([CLI, "build", "-q", str(out), str(tmp_path / "keys.txt"), "-p", "1%", "--type", ftype],
                       check=True, capture_output=True, timeout=120)
        payload = out.read_bytes()
        assert r.execute_command("BK.IMPORT", "imp", payload) in (b"OK", True)
        fam = "CF" if ftype == "cuckoo" else "BF"
        for k in range(0, len(keys), 2000):
            assert all(r.execute_command(f"{fam}.MEXISTS", "imp", *keys[k:k + 2000])), ftype
        absent = [f"other:{i}" for i in range(20000)]
        fp = sum(sum(r.execute_command(f"{fam}.MEXISTS", "imp", *absent[k:k + 2000]))
                 for k in range(0, len(absent), 2000)) / len(absent)
        assert fp < 0.03, (ftype, fp)
        # and back: what Redis exports is a file the CLI reads
        assert r.execute_command("BK.EXPORT", "imp") == payload
        back = tmp_path / "back.bf"
        back.write_bytes(r.execute_command("BK.EXPORT", "imp"))
        subprocess.run([CLI, "info", str(back)], check=True, capture_output=True, timeout=60)

    def test_ribbon_import_is_read_only_and_persists(r, tmp_path):
        # a Ribbon file at a p that is no power of two: its keys found, its rate kept, no add, and the
        # key survives a DEBUG RELOAD (RDB) bit for bit
        keys = [f"item:{i}" for i in range(30000)]
        (tmp_path / "keys.txt").write_text("\n".join(keys) + "\n")
        out = tmp_path / "r.bf"
        subprocess.run([CLI, "build", "-q", str(out), str(tmp_path / "keys.txt"), "-p", "0.2%", "--type",
                        "ribbon"], check=True, capture_output=True, timeout=120)
        payload = out.read_bytes()
        assert r.execute_command("BK.IMPORT", "rib", payload) in (b"OK", True)
        assert all(r.execute_command("BF.MEXISTS", "rib", *keys[:5000]))
        assert r.execute_command("BF.EXISTS", "rib", keys[-1]) == 1
        absent = [f"none:{i}" for i in range(50000)]
        fp = sum(sum(r.execute_command("BF.MEXISTS", "rib", *absent[k:k + 5000])) for k in range(0, 50000, 5000))
        assert fp < 50000 * 0.002 * 1.5, fp
        assert "read-only" in err(r, "BF.ADD", "rib", "new item")
        info = r.execute_command("BK.INFO", "rib")
        assert b"ribbon" in bytes(str(info), "utf-8") or "ribbon" in str(info)
        r.execute_command("DEBUG", "RELOAD")
        assert r.execute_command("BK.EXPORT", "rib") == payload
        assert all(r.execute_command("BF.MEXISTS", "rib", *keys[5000:10000]))
