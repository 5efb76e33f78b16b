"""bloomkit.compat: pybloom_live's constructors, methods and return values."""
import io
import pickle

import pytest

import bloomkit
from bloomkit.compat import BloomFilter, ScalableBloomFilter


def test_bloomfilter_api():
    f = BloomFilter(capacity=1000, error_rate=0.001)
    assert f.add("a") is False and f.add("a") is True
    assert "a" in f and len(f) == 1 and f.count == 1
    assert f.capacity == 1000 and f.error_rate == 0.001
    assert f.num_slices == f.filter.k and f.num_bits >= f.num_slices * f.bits_per_slice
    assert f.filter.layout == "partitioned"
    assert f.add(("tuple", 1)) is False and ("tuple", 1) in f and "('tuple', 1)" in f
    assert f.add("b", skip_check=True) is False
    g = f.copy()
    g.add("only in g")
    assert "only in g" not in f
    u = f | g
    assert isinstance(u, BloomFilter) and "only in g" in u and "a" in u
    assert "a" in f.intersection(g)
    with pytest.raises(ValueError):
        f.union(BloomFilter(2000, 0.001))
    for bad in ((0, 0.01), (10, 0), (10, 1.5)):
        with pytest.raises(ValueError):
            BloomFilter(*bad)


def test_bloomfilter_at_capacity():
    f = BloomFilter(100, 0.01)
    for i in range(100):
        f.add(i)
    with pytest.raises(IndexError):
        for i in range(100, 200):
            f.add(i)
    assert all(i in f for i in range(100))


def test_files_and_pickle():
    f = BloomFilter(1000, 0.01)
    for i in range(300):
        f.add("k%d" % i)
    s = ScalableBloomFilter(10, 0.01, mode=ScalableBloomFilter.SMALL_SET_GROWTH)
    for i in range(300):
        s.add("k%d" % i)
    buf = io.BytesIO()
    f.tofile(buf)
    s.tofile(buf)                                # two filters back to back
    buf.seek(0)
    f2 = BloomFilter.fromfile(buf)
    s2 = ScalableBloomFilter.fromfile(buf)
    assert bytes(f2.filter) == bytes(f.filter) and bytes(s2.filter) == bytes(s.filter)
    assert all("k%d" % i in f2 and "k%d" % i in s2 for i in range(300))
    for obj in (f, s):
        back = pickle.loads(pickle.dumps(obj))
        assert type(back) is type(obj) and bytes(back.filter) == bytes(obj.filter)
    buf = io.BytesIO()
    s.tofile(buf)
    buf.seek(0)
    with pytest.raises(ValueError):
        BloomFilter.fromfile(buf)                # a scalable file is not a BloomFilter
    with pytest.raises(bloomkit.DamagedFileError):
        BloomFilter.fromfile(io.BytesIO(bytes(f.filter)[:-3]))


def test_scalable_api():
    s = ScalableBloomFilter(initial_capacity=100, error_rate=0.001)
    assert s.mode == ScalableBloomFilter.LARGE_SET_GROWTH and s.ratio == 0.9
    added = [s.add("u%d" % i) for i in range(5000)]
    assert added.count(True) < 10                # True only for (rare) false positives
    assert len(s) == added.count(False) and s.capacity >= len(s)
    assert all("u%d" % i in s for i in range(5000))
    assert s.add("u1") is True
    t = ScalableBloomFilter(initial_capacity=100, error_rate=0.001)
    t.add("other")
    u = s | t
    assert "other" in u and "u7" in u
    with pytest.raises(ValueError):
        s.union(ScalableBloomFilter(200, 0.001))
    measured = sum("absent%d" % i in s for i in range(50000)) / 50000
    assert measured < 0.001 + 4 * (0.001 / 50000) ** 0.5
