"""add_many / contains_many: every source (list, tuple, iterator, buffers of any integer width and byte
order, fixed-width bytes), the same answers as one key at a time, and clean errors."""
import array

import numpy as np
import pytest

import bloomkit
from conftest import keys_of
from factories import ALL, MUTABLE, STATIC, make


@pytest.mark.parametrize("kind", MUTABLE)
def test_batches_agree_with_single_calls(kind):
    inserted = keys_of("str", 2000) + keys_of("bytes", 500) + list(range(500))
    probe = inserted[::3] + keys_of("str", 3000, salt=9) + keys_of("int", 1000, salt=9)
    a, b = make(kind, 4000), make(kind, 4000)
    a.add_many(inserted)
    for k in inserted:
        b.add(k)
    assert bytes(a) == bytes(b)                 # the same filter, bit for bit
    expect = bytearray(1 if k in a else 0 for k in probe)
    assert a.contains_many(probe) == expect
    assert a.contains_many(tuple(probe)) == expect
    assert a.contains_many(iter(probe)) == expect
    assert a.contains_many(k for k in probe) == expect
    assert a.contains_many([]) == bytearray()


def test_mixed_and_buffer_items_in_a_list():
    f = bloomkit.Bloom(1000)
    keys = ["s", b"b", bytearray(b"ba"), memoryview(b"mv"), 5, -5, 2**64 - 1]
    f.add_many(keys)
    assert f.contains_many(keys) == bytearray([1] * len(keys))
    assert f.contains_many([b"s", "b", b"ba", "mv", (5).to_bytes(8, "little"), -1]) == bytearray([1] * 6)


INT_DTYPES = ["int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64"]


@pytest.mark.parametrize("dtype", INT_DTYPES)
@pytest.mark.parametrize("order", ["<", ">"])
def test_integer_arrays_are_int_keys(dtype, order):
    info = np.iinfo(dtype)
    values = [v for v in (0, 1, 2, 100, -1, -100, info.min, info.max) if info.min <= v <= info.max]
    arr = np.array(values, dtype=np.dtype(dtype).newbyteorder(order))
    f = bloomkit.Bloom(1000)
    f.add_many(values)                          # Python ints
    assert f.contains_many(arr) == bytearray([1] * len(values))
    g = bloomkit.Blocked(1000)
    g.add_many(arr)                             # the array's items
    assert all(v in g for v in values)


def test_numpy_uint64_large_batch_and_out():
    keys = np.arange(0, 200_000, dtype=np.uint64) * np.uint64(2654435761)
    f = bloomkit.Blocked(len(keys), 0.01)
    f.add_many(keys)
    r = f.contains_many(keys)
    assert isinstance(r, bytearray) and len(r) == len(keys) and r.count(1) == len(keys)
    out = np.zeros(len(keys), dtype=bool)
    assert f.contains_many(keys, out=out) is out and out.all()
    absent = keys + np.uint64(1)
    hits = np.frombuffer(f.contains_many(absent), dtype=bool)
    assert hits.sum() < 0.02 * len(absent)
    assert list(hits[:1000]) == [int(k) in f for k in absent[:1000]]
    with pytest.raises(ValueError):
        f.contains_many(keys, out=np.zeros(10, dtype=bool))
    with pytest.raises(ValueError):
        f.contains_many(keys, out=np.zeros(len(keys), dtype=np.int32))


def test_array_module_and_strided_and_2d():
    f = bloomkit.Bloom(1000)
    f.add_many(array.array("q", [1, 2, 3]))
    assert f.contains_many(array.array("i", [1, 2, 3, 4])) == bytearray([1, 1, 1, 0])
    a = np.arange(20, dtype=np.int64)
    with pytest.raises((BufferError, ValueError)):
        f.contains_many(a[::2])                # not contiguous: say so rather than copy silently
    assert f.contains_many(np.ascontiguousarray(a[::2]))[:3] == bytearray([0, 1, 0])
    assert f.contains_many(np.array([[1, 2], [3, 4]], dtype=np.int64)) == bytearray([1, 1, 1, 0])


def test_fixed_width_bytes_arrays():
    keys = [b"alpha---", b"beta----", b"gamma---"]
    arr = np.array(keys, dtype="S8")
    f = bloomkit.Cuckoo(1000)
    f.add_many(arr)
    assert all(k in f for k in keys)
    assert f.contains_many(keys) == bytearray([1, 1, 1])
    rec = np.array([1.5, 2.5])
    f.add_many(rec.view("S8"))                  # any dtype, as its raw bytes
    assert rec.tobytes()[:8] in f


def test_batch_errors():
    f = bloomkit.Bloom(1000)
    for one_key in ("abc", b"abc", bytearray(b"abc")):
        with pytest.raises(TypeError):
            f.add_many(one_key)
        with pytest.raises(TypeError):
            f.contains_many(one_key)
    with pytest.raises(ValueError):
        f.add_many(np.array([1.0, 2.0]))
    with pytest.raises(ValueError):
        f.contains_many(np.array(["a", "b"]))   # numpy unicode: pass a list of str
    with pytest.raises(TypeError):
        f.add_many(["a", 1.5, "b"])
    with pytest.raises(TypeError):
        f.add_many(5)
    with pytest.raises(ZeroDivisionError):
        f.add_many(1 // (i - 3) for i in range(10))
    assert f.count == 0                         # the failing step was not inserted


def test_fuse_from_buffers_and_iterables_match():
    n = 5000
    a = bloomkit.Fuse(np.arange(n, dtype=np.uint64))
    b = bloomkit.Fuse(list(range(n)))
    c = bloomkit.Fuse(np.arange(n, dtype=np.int32))
    d = bloomkit.Fuse(iter(range(n)))
    assert bytes(a) == bytes(b) == bytes(c) == bytes(d)
    assert a.contains_many(np.arange(n, dtype=np.int16)).count(1) == n


def test_ribbon_from_buffers_and_iterables_match():
    n = 5000
    a = bloomkit.Ribbon(np.arange(n, dtype=np.uint64), 0.001)
    b = bloomkit.Ribbon(list(range(n)), 0.001)
    c = bloomkit.Ribbon(np.arange(n, dtype=np.int32), 0.001)
    assert bytes(a) == bytes(b) == bytes(c)
    assert a.contains_many(np.arange(n, dtype=np.int16)).count(1) == n


@pytest.mark.parametrize("kind", ALL)
def test_long_iterator_in_steps(kind):
    """More keys than one step (16384) from a generator: every step inserted, results in order."""
    n = 40000
    keys = keys_of("str", n)
    f = make(kind, n, keys=keys)
    if kind not in STATIC:
        f.update(k for k in keys)
    r = f.contains_many(k for k in keys)
    assert len(r) == n and r.count(1) == n
