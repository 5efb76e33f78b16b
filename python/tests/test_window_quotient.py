"""The aging (sliding window) and quotient filters."""
import math

import numpy as np
import pytest

import bloomkit
from conftest import KEY_KINDS, keys_of


@pytest.mark.parametrize("key_kind", KEY_KINDS)
def test_no_false_negatives(key_kind):
    keys = keys_of(key_kind, 3000)
    for f in (bloomkit.Aging(3000), bloomkit.Aging(window_ms=3_600_000, capacity=3000), bloomkit.Quotient(3000)):
        f.update(keys)
        assert all(k in f for k in keys), f
        assert f.contains_many(keys).count(1) == len(keys)


@pytest.mark.parametrize("make", [lambda: bloomkit.Aging(20000, 0.01), lambda: bloomkit.Quotient(20000, 0.01)])
def test_fpr_within_bound(make):
    f = make()
    f.add_many(np.arange(20000, dtype=np.uint64))
    trials = 100_000
    measured = sum(f.contains_many(np.arange(10**9, 10**9 + trials, dtype=np.uint64))) / trials
    bound = max(f.fpr_now, f.error_rate)
    assert measured <= bound + 4 * math.sqrt(bound / trials), (measured, bound)


def test_count_window_forgets():
    f = bloomkit.Aging(1000, 0.01)
    assert f.mode == "count" and f.window == 1000 and f.generations == 4
    f.update(range(10000))
    assert all(i in f for i in range(9000, 10000))                  # the last W: always remembered
    old = f.contains_many(range(0, 5000))
    assert old.count(1) < 0.02 * 5000                                # long forgotten (false positives only)
    info = f.info()
    assert info["covered"] >= 1000 and info["inserted"] == 10000 and len(info["gen_count"]) == 4
    assert f.add_if_absent("fresh") is True and f.add_if_absent("fresh") is False
    with pytest.raises(ValueError):
        bloomkit.Aging()
    with pytest.raises(ValueError):
        bloomkit.Aging(100, window_ms=100, capacity=10)
    with pytest.raises(ValueError):
        bloomkit.Aging(window_ms=1000)                               # capacity missing
    t = bloomkit.Aging(window_ms=60_000, capacity=100, generations=3)
    assert t.mode == "time" and t.window == 60_000 and t.generations == 3
    t.add("x")
    t.advance()
    assert "x" in t


def test_quotient_counts_removes_grows_merges():
    q = bloomkit.Quotient(1000, 0.01, remainder_bits=10)
    assert q.remainder_bits == 10
    for _ in range(3):
        q.add("k")
    assert q.count_of("k") == 3 and q.count == 3
    q.remove("k")
    assert q.count_of("k") == 2
    with pytest.raises(KeyError):
        q.remove("never added, certainly absent")
    q.update(range(900))
    with pytest.raises(bloomkit.FullError):
        q.update(range(900, 2000))
    q.grow()
    q.update(range(900, 1800))
    assert all(i in q for i in range(1800)) and q.remainder_bits == 9
    a, b = bloomkit.Quotient(1000, 0.01), bloomkit.Quotient(1000, 0.01)
    a.update(["k"] * 2 + ["only a"])
    b.update(["k", "only b"])
    assert a.compatible(b)
    u = a | b
    assert "only a" in u and "only b" in u and u.count_of("k") >= 3
    assert not a.compatible(bloomkit.Quotient(1000, 0.01, seed=1))


def test_quotient_expand_keeps_error_rate(tmp_path):
    # made for 1,000 at 1% without room, filled to 16,000 expanding whenever full: 5 stages, every
    # key present, FPR on 100,000 absent keys within 1.1 x 1%; saved and loaded alike; no merge
    q = bloomkit.Quotient(1000, 0.01)
    for i in range(16000):
        try:
            q.add(i)
        except bloomkit.FullError:
            q.expand()
            q.add(i)
    assert q.stages == 5 and all(i in q for i in range(16000))
    assert sum(1 for i in range(10**6, 10**6 + 100000) if i in q) <= 1100
    p = tmp_path / "q.bf"
    q.save(str(p))
    r = bloomkit.load(str(p))
    assert r.stages == 5 and all(i in r for i in range(16000))
    assert not q.compatible(bloomkit.Quotient(1000, 0.01))


@pytest.mark.parametrize("make", [lambda: bloomkit.Aging(5000), lambda: bloomkit.Aging(window_ms=3_600_000, capacity=5000),
                                  lambda: bloomkit.Quotient(5000)])
def test_files(make, tmp_path):
    f = make()
    keys = keys_of("str", 4000)
    f.update(keys)
    data = bytes(f)
    f.save(tmp_path / "f.bkf")
    for g in (bloomkit.from_bytes(data), bloomkit.load(tmp_path / "f.bkf"), f.copy()):
        assert type(g) is type(f) and bytes(g) == data
        assert g.contains_many(keys).count(1) == len(keys)
    with bloomkit.open(tmp_path / "f.bkf") as m:
        assert m.contains_many(keys).count(1) == len(keys)
        with pytest.raises(bloomkit.UnsupportedOperation):
            m.add("x")
    for cut in (10, 64, len(data) // 2, len(data) - 1):
        with pytest.raises(bloomkit.DamagedFileError):
            bloomkit.from_bytes(data[:cut])
    bad = bytearray(data)
    bad[len(bad) // 2] ^= 0x10
    with pytest.raises(bloomkit.DamagedFileError):
        bloomkit.from_bytes(bad)


def test_cli_info_of_a_quotient_filter(cli, tmp_path):
    """bloomkit info names a quotient filter's slots and remainder width, and says that a filter whose
    false-positive rate passed its target at a low fill is saturated by that rate, not by its fill."""
    import json
    import subprocess
    q = bloomkit.Quotient(50, 0.01, remainder_bits=2)   # 128 slots of 2-bit remainders
    q.update(range(20))
    path = str(tmp_path / "q.bf")
    q.save(path)
    out = subprocess.run([cli, "info", path], capture_output=True, text=True, check=True).stdout
    assert "128 slots (2^7) of 2-bit remainders: 9-bit fingerprints" in out, out
    warning = [line for line in out.splitlines() if line.startswith("WARNING:")]
    assert warning and "false-positive rate" in warning[0] and "past its target" in warning[0], out
    assert "fill ratio" not in warning[0] and "50%" not in warning[0], out
    js = json.loads(subprocess.run([cli, "info", "--json", path], capture_output=True, text=True,
                                   check=True).stdout)
    assert (js["slots"], js["quotient_bits"], js["remainder_bits"]) == (128, 7, 2), js
    assert js["saturated"] and "past its target" in js["warning"]
