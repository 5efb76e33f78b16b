"""Every type and key kind: no false negatives, FPR within the library's bound, type behaviours."""
import math

import pytest

import bloomkit
from conftest import KEY_KINDS, keys_of
from factories import ALL, MUTABLE, STATIC, make


def _build(kind, keys, n=None):
    n = n or len(keys)
    if kind in STATIC:
        return make(kind, n, keys=keys)
    f = make(kind, n)
    for k in keys:
        f.add(k)
    return f


@pytest.mark.parametrize("kind", ALL)
@pytest.mark.parametrize("key_kind", KEY_KINDS)
def test_no_false_negatives(kind, key_kind):
    keys = keys_of(key_kind, 3000)
    f = _build(kind, keys)
    assert all(k in f for k in keys)
    assert all(f.contains(k) for k in keys)
    assert f.contains_many(keys) == bytearray([1]) * len(keys)


@pytest.mark.parametrize("kind", ALL)
def test_key_kinds_are_the_same_bytes(kind):
    """str is its UTF-8, buffers are their bytes, an int is its 8 little-endian bytes."""
    keys = ["plain", "ünïcødé ☃", b"\x00raw\xff", 12345, -7, 2**63 + 5]
    f = _build(kind, keys, n=100)
    for k in ["plain", b"plain", bytearray(b"plain"), memoryview(b"plain"), "ünïcødé ☃".encode()]:
        assert k in f
    assert memoryview(b"xx\x00raw\xffyy")[2:-2] in f
    assert (12345).to_bytes(8, "little") in f
    assert (-7).to_bytes(8, "little", signed=True) in f
    assert 2**64 - 7 in f                       # the same 8 bytes as -7
    assert (2**63 + 5).to_bytes(8, "little") in f
    assert bloomkit.hash64("plain") == bloomkit.hash64(b"plain")
    assert bloomkit.hash64(-1) == bloomkit.hash64(2**64 - 1) == bloomkit.hash64(b"\xff" * 8)


def test_bad_keys():
    f = bloomkit.Bloom(100)
    for bad in (1.5, None, ("a",), object()):
        with pytest.raises(TypeError):
            f.add(bad)
        with pytest.raises(TypeError):
            bad in f  # noqa: B015
    for big in (2**64, -(2**63) - 1):
        with pytest.raises(OverflowError):
            f.add(big)
    with pytest.raises(UnicodeEncodeError):
        f.add("\ud800")                         # a lone surrogate has no UTF-8
    assert f.count == 0


def _fpr(f, kind_salt, trials):
    absent = keys_of("str", trials, salt=1000 + kind_salt)
    return sum(f.contains_many(absent)) / trials


# Fixed seeds; the bound is the library's expected FPR at the current fill (or the type's stated
# bound), plus 4 standard deviations of a binomial count of that many trials.
@pytest.mark.parametrize("kind", ALL)
@pytest.mark.parametrize("seed", [0, 12345])
def test_fpr_within_bound(kind, seed):
    n, p, trials = 20000, 0.01, 100_000
    keys = keys_of("str", n, salt=seed)
    f = make(kind, n, p, seed=seed, keys=keys)
    if kind not in STATIC:
        f.add_many(keys)
    if kind == "scalable":
        bound = f.error_rate                     # the chain's compound bound p (r^L < 1 tightens it)
    elif kind == "fuse":
        bound = 2.0 ** -f.fingerprint_bits
    elif kind == "cuckoo":
        bound = f.info()["fpr_full"]
    else:
        bound = max(f.fpr_now, f.error_rate)
    measured = _fpr(f, seed, trials)
    slack = 4 * math.sqrt(bound * (1 - bound) / trials)
    assert measured <= bound + slack, (kind, measured, bound)
    if kind not in ("fuse", "scalable", "cuckoo"):
        assert f.fpr_now <= 1.2 * p              # sized for n keys: at n keys it is near p
        assert not f.saturated


@pytest.mark.parametrize("kind", MUTABLE)
def test_add_if_absent_and_count(kind):
    f = make(kind, 1000)
    assert f.add_if_absent("a") is True
    assert f.add_if_absent("a") is False
    assert "a" in f and f.count == 1 and bool(f)
    f.clear()
    assert "a" not in f and f.count == 0 and not f


@pytest.mark.parametrize("kind", ["counting", "cuckoo"])
def test_remove(kind):
    f = make(kind, 1000)
    keys = keys_of("str", 500)
    f.update(keys)
    for k in keys[:250]:
        f.remove(k)
    assert all(k in f for k in keys[250:])
    assert sum(f.contains_many(keys[:250])) < 25
    assert f.count == 250
    with pytest.raises(KeyError):
        f.remove("never added, certainly absent " + "x" * 40)
    assert f.discard(keys[300]) is True
    assert f.count == 249


@pytest.mark.parametrize("kind", ["bloom", "blocked", "scalable", "fuse", "ribbon"])
def test_types_without_remove(kind):
    f = make(kind, 100, keys=["a"])
    assert not hasattr(f, "remove")
    assert not hasattr(f, "discard")


def test_cuckoo_fingerprint_widths():
    for bits in (4, 10, 13, 32):
        c = bloomkit.Cuckoo(1000, fingerprint_bits=bits)
        c.add_many(range(500))
        assert c.fingerprint_bits == bits and all(i in c for i in range(500))
    assert bloomkit.Cuckoo(1000, error_rate=0.01).fingerprint_bits == 10
    assert bloomkit.Cuckoo(1000, error_rate=0.001).fingerprint_bits == 13


def test_fuse_is_immutable_and_built_from_any_iterable():
    f = bloomkit.Fuse(str(i) for i in range(1000))
    assert f.count == 1000 and len(f) == 1000
    assert not hasattr(f, "add")
    g = bloomkit.Fuse([str(i) for i in range(1000)] * 2)     # duplicates are dropped
    assert bytes(g) == bytes(f)
    h = bloomkit.Fuse(range(1000), fingerprint_bits=16)
    assert h.fingerprint_bits == 16 and all(i in h for i in range(1000))
    assert bloomkit.Fuse(["x"], error_rate=1e-4).fingerprint_bits == 16
    assert bloomkit.Fuse(["x"], error_rate=0.01).fingerprint_bits == 8
    with pytest.raises(ValueError):
        bloomkit.Fuse(["x"], error_rate=1e-9)
    empty = bloomkit.Fuse([])
    assert "x" not in empty and len(empty) == 0


def test_ribbon_any_error_rate_from_any_iterable():
    keys = [str(i) for i in range(20000)]
    f = bloomkit.Ribbon(iter(keys), 0.0037)
    assert f.count == 20000 and len(f) == 20000 and f.type_name == "ribbon"
    assert not hasattr(f, "add")
    assert f.contains_many(keys).count(1) == 20000
    assert f.error_rate <= 0.0037 and f.error_rate > 0.0036
    assert bytes(bloomkit.Ribbon(keys[10000:] + keys * 2, 0.0037)) == bytes(f)   # duplicates, order: no change
    absent = ["absent %d" % i for i in range(200000)]
    fp = bloomkit.Ribbon(keys, 0.01).contains_many(absent).count(1)
    assert abs(fp - 2000) < 4 * math.sqrt(2000), fp
    # about 1.04 log2(1/p) bits per key, against 9 for an 8-bit Fuse
    assert f.stats()["bits_per_key"] < 1.1 * math.log2(1 / 0.0037)
    for bad in (0, 1, -0.5, 1.5, 1e-12):
        with pytest.raises(ValueError):
            bloomkit.Ribbon(keys, bad)
    empty = bloomkit.Ribbon([])
    assert "x" not in empty and len(empty) == 0
    r = bloomkit.Ribbon(range(1000), seed=7)
    assert r.seed == 7 and all(i in r for i in range(1000))


def test_ribbon_large_set_in_shards():
    # 150,000 keys: solved in shards, at most 1.05 log2(1/p) bits per key, bytes round-trip
    np = pytest.importorskip("numpy")
    keys = np.arange(150000, dtype=np.uint64) * np.uint64(2654435761)
    for p in (0.1, 0.01):
        f = bloomkit.Ribbon(keys, p)
        assert f.count == 150000
        assert f.contains_many(keys).count(1) == 150000
        assert f.stats()["bits_per_key"] <= 1.05 * math.log2(1 / p)
        g = bloomkit.from_bytes(bytes(f))
        assert bytes(g) == bytes(f) and g.type_name == "ribbon"
        assert g.contains_many(keys).count(1) == 150000


def test_scalable_grows_and_keeps_its_bound():
    f = bloomkit.Scalable(100, 0.01)
    keys = keys_of("str", 20000)
    f.update(keys)
    assert f.subfilters > 5
    assert all(k in f for k in keys)
    assert f.fpr_bound <= f.error_rate
    assert f.growth == 2 and 0 < f.tightening < 1 and not f.nonscaling and not f.classic
    nf = bloomkit.Scalable(100, 0.01, nonscaling=True)
    with pytest.raises(bloomkit.FullError):
        nf.update(keys)
    small = bloomkit.Scalable(100, 0.01, max_bytes=4096)
    with pytest.raises(bloomkit.FullError):
        small.update(keys)
    assert all(k in small for k in keys[: small.count // 2])


def test_cuckoo_full_and_expansion():
    f = bloomkit.Cuckoo(1000, 0.01)
    with pytest.raises(bloomkit.FullError):
        for i in range(100000):
            f.add(i)
    assert all(j in f for j in range(i))        # nothing added before the failure is lost
    g = bloomkit.Cuckoo(1000, 0.01, expansion=2)
    g.update(range(10000))
    assert g.subfilters > 1 and all(j in g for j in range(10000))
    info = g.info()
    assert info["items"] == 10000 and info["tables"] == g.subfilters
    g.add("dup")
    g.add("dup")
    assert g.count_of("dup") >= 2


def test_properties_and_stats():
    f = bloomkit.Bloom(capacity=1000, error_rate=0.02, seed=7)
    assert (f.capacity, f.error_rate, f.seed, f.layout, f.type_name) == (1000, 0.02, 7, "standard", "bloom")
    assert f.fill_ratio == 0.0 and f.k > 0 and f.bits > 0 and f.memory_bytes * 8 >= f.bits
    st = f.stats()
    assert st["type"] == "bloom" and st["capacity"] == 1000 and st["seed"] == 7
    assert bloomkit.Blocked(1000, block_bits=512).block_bits == 512
    assert bloomkit.Counting(1000, counter_bits=8).counter_bits == 8
    assert bloomkit.Bloom(1000, layout="partitioned").layout == "partitioned"
    assert "capacity=1000" in repr(f)
    assert f.backing == "memory"


INT_DTYPES = ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]


@pytest.mark.parametrize("dtype", INT_DTYPES)
def test_numpy_integer_scalars_are_their_value(dtype):
    np = pytest.importorskip("numpy")
    a = np.array([5, 7], dtype=dtype)
    f = bloomkit.Blocked(1000)
    f.add_many(a)                                   # the array's items: int keys of their values
    assert a[0] in f and a[1] in f                  # its scalars answer alike
    assert list(f.contains_many([a[0], a[1], np.array([9], dtype=dtype)[0]])) == [1, 1, 0]
    g = bloomkit.Blocked(1000)
    g.add(a[1])
    g.add_many([a[0]])
    assert 7 in g and 5 in g and (7).to_bytes(8, "little") in g
    assert bloomkit.Blocked(1000, seed=3).contains_many(a) == bytearray(2)


def test_floats_are_refused():
    np = pytest.importorskip("numpy")
    f = bloomkit.Bloom(100)
    for bad in (1.0, np.float16(1), np.float32(1), np.float64(1), np.longdouble(1), 1j):
        with pytest.raises(TypeError, match="float is no exact key"):
            f.add(bad)
        with pytest.raises(TypeError, match="float is no exact key"):
            f.add_many([bad])
        with pytest.raises(TypeError):
            bad in f  # noqa: B015
    assert f.count == 0
    f.add(np.bool_(True))                           # numpy's bool_ stays its one byte
    assert b"\x01" in f


def test_len_of_an_unbelievable_count():
    import struct
    a = bloomkit.Aging(window_ms=10000, capacity=1000)
    a.add("x")
    data = bytearray(bytes(a))
    hsize = struct.unpack_from("<I", data, 24)[0]
    counts = struct.unpack_from("<4Q", data, hsize + 80)  # per slot; the current generation's holds "x"
    struct.pack_into("<Q", data, hsize + 80 + 8 * counts.index(1), 2**63 + 5)
    f = bloomkit.from_bytes(bytes(data), verify_checksum=False)
    assert f.count == 2**63 + 5
    with pytest.raises(OverflowError, match="more than len"):
        len(f)


def test_len_is_the_estimate():
    f = bloomkit.Bloom(100000, 0.01)
    f.update(range(50000))
    f.update(range(50000))                      # the same keys again: count doubles, len does not
    assert f.count == 100000
    assert abs(len(f) - 50000) < 1000


def test_bad_arguments_are_value_errors():
    for make_bad in (
        lambda: bloomkit.Bloom(0),
        lambda: bloomkit.Bloom(10, 0.0),
        lambda: bloomkit.Bloom(10, 1.0),
        lambda: bloomkit.Bloom(10, float("nan")),
        lambda: bloomkit.Bloom(-1),
        lambda: bloomkit.Bloom(10, layout="diagonal"),
        lambda: bloomkit.Blocked(10, block_bits=128),
        lambda: bloomkit.Counting(10, counter_bits=5),
        lambda: bloomkit.Scalable(10, growth=0),
        lambda: bloomkit.Scalable(10, tightening=1.0),
        lambda: bloomkit.Cuckoo(10, fingerprint_bits=33),
        lambda: bloomkit.Cuckoo(10, bucket_size=0),
        lambda: bloomkit.Fuse([], fingerprint_bits=12),
        lambda: bloomkit.Bloom(2**62, 1e-9),    # more than the library's size limit
    ):
        with pytest.raises(ValueError):
            make_bad()
    with pytest.raises(TypeError):
        bloomkit.Filter()
    with pytest.raises(TypeError):
        bloomkit.Bloom("many")


def test_closed_filter():
    f = bloomkit.Bloom(100)
    f.add("a")
    with f:
        assert "a" in f
    assert f.closed and f.backing == "closed"
    for op in (lambda: "a" in f, lambda: f.add("a"), lambda: f.contains_many(["a"]), lambda: bytes(f),
               lambda: f.copy(), lambda: f.fill_ratio, lambda: len(f)):
        with pytest.raises(ValueError):
            op()
    f.close()                                   # twice is fine
    assert "closed" in repr(f)


def test_subclassing_keeps_the_class():
    class Mine(bloomkit.Bloom):
        pass

    m = Mine(100)
    m.add("a")
    assert type(m.copy()) is Mine and "a" in m.copy()
    assert type(m | m) is Mine
