"""bloomkit.CountMinSketch and bloomkit.TopK: estimates, merge, the saved form, and the files the
bloomkit command writes."""
import os
import random
import subprocess

import pytest

import bloomkit


def zipf_stream(n, distinct, seed):
    rng = random.Random(seed)
    weights = [1.0 / (i + 1) for i in range(distinct)]
    return rng.choices(range(distinct), weights=weights, k=n)


def test_cms_estimates_are_upper_bounds_within_the_error():
    stream = zipf_stream(50000, 2000, 1)
    exact = {}
    for x in stream:
        exact[x] = exact.get(x, 0) + 1
    plain = bloomkit.CountMinSketch(error=0.005, prob=0.01, seed=3)
    cons = bloomkit.CountMinSketch(error=0.005, prob=0.01, seed=3, conservative=True)
    assert (plain.width, plain.depth) == (400, 7)
    plain.update(stream)
    cons.update(stream)
    assert plain.total == cons.total == 50000
    over = 0
    for x in range(2000):
        p, c = plain[x], cons.query(x)
        assert exact.get(x, 0) <= c <= p
        over += p - exact.get(x, 0) > 0.005 * 50000
    assert over <= 0.01 * 2000
    assert plain.incrby("new", 5) >= 5 and plain.add("new") >= 6
    with pytest.raises(ValueError):
        plain.incrby("x", -1)
    assert plain.incrby("big", 2 ** 40) == 2 ** 32 - 1  # saturates, never wraps
    with pytest.raises(TypeError):
        plain.query(1.5)


def test_cms_merge_and_saved_form():
    a = bloomkit.CountMinSketch(300, 4)
    b = bloomkit.CountMinSketch(300, 4)
    both = bloomkit.CountMinSketch(300, 4)
    for i in range(3000):
        (a if i % 2 else b).incrby(i % 500, 2)
        both.incrby(i % 500, 2)
    m = bloomkit.CountMinSketch(300, 4)
    m.merge([a, b])
    assert m.to_bytes() == both.to_bytes()
    m.merge([m, b], weights=[1, -1])
    assert all(m[i] == a[i] for i in range(500)) and m.total == a.total
    with pytest.raises(ValueError):
        m.merge([m, b], weights=[1, -1])  # would go negative: refused
    with pytest.raises(bloomkit.IncompatibleError):
        m.merge([bloomkit.CountMinSketch(301, 4)])
    with pytest.raises(bloomkit.IncompatibleError):
        m.merge([bloomkit.CountMinSketch(300, 4, seed=1)])
    c = bloomkit.CountMinSketch.from_bytes(a.to_bytes())
    assert c.to_bytes() == a.to_bytes() and c[7] == a[7]
    data = bytearray(a.to_bytes())
    data[100] ^= 1
    with pytest.raises(bloomkit.DamagedFileError):
        bloomkit.CountMinSketch.from_bytes(bytes(data))
    with pytest.raises(bloomkit.FileFormatError):
        bloomkit.TopK.from_bytes(a.to_bytes())
    m.clear()
    assert m.total == 0 and m[7] == 0
    with pytest.raises(ValueError):
        bloomkit.CountMinSketch(10)


def test_topk_finds_the_heavy_keys_and_round_trips():
    stream = zipf_stream(100000, 10000, 2)
    exact = {}
    for x in stream:
        exact[x] = exact.get(x, 0) + 1
    truth = sorted(exact, key=lambda x: -exact[x])
    t = bloomkit.TopK(20, seed=5)
    assert (t.k, t.width, t.depth, t.decay) == (20, 60, 5, 0.9)
    t.update(stream)
    got = t.list(withcount=True)
    assert len(got) == 20 and [c for _, c in got] == sorted((c for _, c in got), reverse=True)
    keys = {int.from_bytes(k, "little") for k, _ in got}  # int keys are their 8 little-endian bytes
    assert len(keys & set(truth[:20])) >= 19
    top = truth[0]
    assert top in t and t.query(top) and t.count(top) <= exact[top]
    u = bloomkit.TopK.from_bytes(t.to_bytes())
    assert u.list(True) == got
    for x in stream[:5000]:
        t.add(x)
        u.add(x)
    assert u.to_bytes() == t.to_bytes()  # the same future: the decay generator was saved
    assert t.add("new", 10 ** 6) is not None  # pushes the lightest out
    assert t.list()[0] == b"new"
    with pytest.raises(ValueError):
        bloomkit.TopK(0)
    with pytest.raises(ValueError):
        bloomkit.TopK(3, decay=1.5)
    t.clear()
    assert t.list() == []


def test_files_of_the_command(tmp_path, cli):
    src = tmp_path / "in.txt"
    src.write_bytes(b"a\nb\na\nc\na\n")
    path = tmp_path / "c.bkf"
    subprocess.run([cli, "count", "--add", "-q", str(path), str(src)], check=True)
    c = bloomkit.CountMinSketch.from_bytes(path.read_bytes())
    assert (c["a"], c["b"], c["zz"], c.total) == (3, 1, 0, 5)
