"""Union and intersection: operators, in-place forms, and refusals."""
import pytest

import bloomkit
from conftest import keys_of
from factories import MUTABLE, make


@pytest.mark.parametrize("kind", [k for k in MUTABLE if k != "cuckoo"])
def test_union(kind):
    a, b = make(kind, 4000), make(kind, 4000)
    ka, kb = keys_of("str", 1500, salt=1), keys_of("str", 1500, salt=2)
    a.update(ka)
    b.update(kb)
    assert a.compatible(b)
    u = a | b
    assert type(u) is type(a) and u is not a
    assert all(k in u for k in ka + kb)
    assert a.union(b).contains_many(ka + kb).count(1) == 3000
    before = bytes(a)
    a |= b
    assert bytes(a) != before and all(k in a for k in kb)
    assert bytes(a) == bytes(u)


@pytest.mark.parametrize("kind", ["bloom", "partitioned", "blocked", "blocked512"])
def test_intersection(kind):
    a, b = make(kind, 4000), make(kind, 4000)
    common, only_a, only_b = (keys_of("str", 1000, salt=s) for s in (1, 2, 3))
    a.update(common + only_a)
    b.update(common + only_b)
    i = a & b
    assert all(k in i for k in common)          # no false negatives for the common keys
    assert sum(i.contains_many(only_a + only_b)) < 0.2 * len(only_a + only_b)
    assert bytes(a.intersection(b)) == bytes(i)
    a &= b
    assert bytes(a) == bytes(i)


def test_refusals():
    a = bloomkit.Bloom(1000)
    with pytest.raises(bloomkit.IncompatibleError):
        a | bloomkit.Bloom(2000)
    with pytest.raises(bloomkit.IncompatibleError):
        a | bloomkit.Bloom(1000, seed=1)
    with pytest.raises(bloomkit.IncompatibleError):
        a | bloomkit.Blocked(1000)
    with pytest.raises(ValueError):             # IncompatibleError is a ValueError too
        a |= bloomkit.Bloom(1000, layout="partitioned")
    assert not a.compatible(bloomkit.Bloom(2000))
    with pytest.raises(bloomkit.UnsupportedOperation):
        bloomkit.Counting(100) & bloomkit.Counting(100)
    with pytest.raises(bloomkit.UnsupportedOperation):
        bloomkit.Fuse(["a"]) | bloomkit.Fuse(["b"])
    with pytest.raises(bloomkit.UnsupportedOperation):   # fingerprints cannot be merged without the keys
        bloomkit.Cuckoo(100) | bloomkit.Cuckoo(100)
    assert not bloomkit.Cuckoo(100).compatible(bloomkit.Cuckoo(100))
    with pytest.raises(TypeError):
        a | {"a"}
    with pytest.raises(TypeError):
        a & 5


def test_union_with_itself_and_mapped(tmp_path):
    a = bloomkit.Counting(1000)
    a.add("x")
    a |= a                                      # counts double
    a.remove("x")
    assert "x" in a
    b = bloomkit.Bloom(1000)
    b.add("y")
    b.save(tmp_path / "b.bkf")
    with bloomkit.open(tmp_path / "b.bkf") as m:
        u = m | bloomkit.Bloom(1000)            # a new in-memory filter
        assert "y" in u and u.backing == "memory"
        with pytest.raises(bloomkit.UnsupportedOperation):
            m |= bloomkit.Bloom(1000)
