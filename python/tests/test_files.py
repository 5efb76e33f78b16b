"""Files: save / load / open / bytes / pickle round trips, the bloomkit command on the same files in
both directions, and damaged or truncated data, which must raise and never crash."""
import copy
import os
import pickle
import random
import subprocess

import pytest

import bloomkit
from conftest import keys_of
from factories import ALL, CLI_TYPE, MUTABLE, make


def _filled(kind, n=3000, salt=0, spare=0):
    keys = keys_of("str", n, salt=salt) + keys_of("int", 200, salt=salt)
    f = make(kind, n + 200 + spare, keys=keys)
    if kind != "fuse":
        f.add_many(keys)
    return f, keys


@pytest.mark.parametrize("kind", ALL)
def test_round_trips_are_bit_identical(kind, tmp_path):
    f, keys = _filled(kind)
    data = bytes(f)
    assert data == f.to_bytes()
    path = tmp_path / "f.bkf"
    f.save(path)
    assert path.read_bytes() == data
    info = bloomkit.file_info(data)
    assert info["type"] == f.type_name and info["total_size"] == len(data)
    for g in (bloomkit.load(path), bloomkit.load(str(path)), bloomkit.from_bytes(data),
              bloomkit.from_bytes(bytearray(data)), bloomkit.from_bytes(memoryview(data)),
              pickle.loads(pickle.dumps(f)), copy.copy(f), copy.deepcopy(f), f.copy()):
        assert type(g) is type(f)
        assert bytes(g) == data
        assert g.contains_many(keys).count(1) == len(keys)
    with bloomkit.open(path) as m:
        assert type(m) is type(f) and m.backing == "mmap"
        assert bytes(m) == data
        assert all(k in m for k in keys)
        assert m.contains_many(keys).count(1) == len(keys)
        if kind != "fuse":
            with pytest.raises(bloomkit.UnsupportedOperation):
                m.add("x")
            c = m.copy()                        # a copy of a mapping is an ordinary filter
            assert c.backing == "memory"
            c.add("new key")
            assert "new key" in c
    assert m.closed


def test_open_writable_shares_inserts(tmp_path):
    path = tmp_path / "shared.bkf"
    bloomkit.Blocked(10000).save(path)
    with bloomkit.open(path, writable=True) as w, bloomkit.open(path) as r:
        assert w.backing == "mmap-shared"
        w.add_many(keys_of("str", 1000))
        assert r.contains_many(keys_of("str", 1000)).count(1) == 1000
    assert bloomkit.load(path).contains_many(keys_of("str", 1000)).count(1) == 1000
    bloomkit.Cuckoo(100).save(tmp_path / "c.bkf")
    with pytest.raises(bloomkit.UnsupportedOperation):
        bloomkit.open(tmp_path / "c.bkf", writable=True)


def test_missing_and_unwritable_paths(tmp_path):
    with pytest.raises(FileNotFoundError):
        bloomkit.load(tmp_path / "nope")
    with pytest.raises(FileNotFoundError):
        bloomkit.open(tmp_path / "nope")
    with pytest.raises(OSError):
        bloomkit.Bloom(10).save(tmp_path / "no-such-dir" / "f.bkf")
    with pytest.raises(TypeError):
        bloomkit.Bloom(10).save(42)


@pytest.mark.parametrize("kind", ALL)
def test_python_to_cli_to_python(kind, cli, tmp_path):
    """A file saved here is read by the bloomkit command (same answers), which adds to it (where the
    type can), and the result loads here again with every key."""
    f, keys = _filled(kind, spare=1000)
    path = tmp_path / "py.bkf"
    f.save(path)
    probe = keys_of("str", 300) + keys_of("str", 300, salt=77)
    out = subprocess.run([cli, "query", str(path)], input="\n".join(probe) + "\n", capture_output=True,
                         text=True, check=False)
    assert out.returncode in (0, 1), out.stderr
    answers = [line.split("\t")[1] == "present" for line in out.stdout.splitlines()]
    assert answers == [k in f for k in probe]
    if kind == "fuse":
        return
    more = keys_of("str", 300, salt=5)
    subprocess.run([cli, "add", str(path)], input="\n".join(more) + "\n", text=True, check=True,
                   capture_output=True)
    g = bloomkit.load(path)
    assert all(k in g for k in more + keys)


@pytest.mark.parametrize("kind", ALL)
def test_cli_to_python(kind, cli, tmp_path):
    keys = keys_of("str", 2000) + keys_of("unicode", 200)
    src = tmp_path / "keys.txt"
    src.write_text("\n".join(keys) + "\n", encoding="utf-8")
    path = tmp_path / "cli.bkf"
    subprocess.run([cli, "build", str(path), str(src), "-p", "1%", "-q"] + CLI_TYPE[kind], check=True,
                   capture_output=True)
    f = bloomkit.load(path)
    assert f.type_name == {"partitioned": "bloom", "blocked512": "blocked"}.get(kind, kind)
    assert all(k in f for k in keys)
    assert f.contains_many([k.encode() for k in keys]).count(1) == len(keys)
    with bloomkit.open(path) as m:
        assert m.contains_many(keys).count(1) == len(keys)


# ---- damaged data ------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ALL)
def test_every_bit_flip_and_truncation_raises(kind, tmp_path):
    f, _ = _filled(kind, n=300)
    data = bytes(f)
    rng = random.Random(kind)
    positions = list(range(min(len(data), 128))) + rng.sample(range(len(data)), min(len(data), 200))
    for pos in positions:
        bad = bytearray(data)
        bad[pos] ^= 1 << rng.randrange(8)
        with pytest.raises(bloomkit.FileFormatError) as e:
            bloomkit.from_bytes(bad)
        assert e.value.status in (7, 8, 9, 10, 12, 13, 3), e.value
    for cut in sorted(set([0, 1, 8, 63, 64, 65, len(data) // 2, len(data) - 1] + rng.sample(range(len(data)), 50))):
        with pytest.raises(bloomkit.FileFormatError):
            bloomkit.from_bytes(data[:cut])
    with pytest.raises(bloomkit.DamagedFileError):
        bloomkit.from_bytes(data + b"\x00")     # trailing bytes
    path = tmp_path / "cut.bkf"
    path.write_bytes(data[: len(data) - 7])
    with pytest.raises(bloomkit.DamagedFileError):
        bloomkit.load(path)
    with pytest.raises(bloomkit.DamagedFileError):
        bloomkit.open(path)
    path.write_bytes(b"not a filter at all" * 10)
    with pytest.raises(bloomkit.DamagedFileError):
        bloomkit.load(path)


def test_not_a_filter_file_says_so(tmp_path):
    """A file that is not a filter at all (no magic) is named as such, as the bloomkit command does,
    not as a damaged filter; a damaged filter keeps its own words."""
    path = tmp_path / "notes.txt"
    for data in (b"hello, this is text\n" * 20, b"", b"abc"):
        path.write_bytes(data)
        for call in (bloomkit.load, bloomkit.open):
            with pytest.raises(bloomkit.DamagedFileError) as e:
                call(path)
            assert str(e.value) == "%s: not a bloomkit filter file" % path, e.value
            assert e.value.status in (7, 12, 13), e.value.status
        if data:
            with pytest.raises(bloomkit.DamagedFileError) as e:
                bloomkit.from_bytes(data)
            assert str(e.value) == "from_bytes: not a bloomkit filter file", e.value
    good = bytes(bloomkit.Bloom(100))
    path.write_bytes(good[:-7])
    with pytest.raises(bloomkit.DamagedFileError) as e:
        bloomkit.load(path)
    assert "not a bloomkit filter file" not in str(e.value), e.value


@pytest.mark.parametrize("kind", ALL)
def test_garbage_without_checksums_never_crashes(kind):
    """With the payload checksum off, only the structural validation stands between random bodies and
    the query code: every outcome must be an exception or a filter that answers queries."""
    f, keys = _filled(kind, n=300)
    data = bytes(f)
    rng = random.Random(1 + len(kind))
    for _ in range(300):
        bad = bytearray(data)
        for _ in range(rng.randrange(1, 8)):
            pos = rng.randrange(64, len(bad))
            bad[pos] = rng.randrange(256)
        try:
            g = bloomkit.from_bytes(bad, verify_checksum=False)
        except bloomkit.FileFormatError:
            continue
        g.contains_many(keys[:50])
        g.stats()
        g.copy()


def test_unknown_type_or_version_is_unsupported():
    data = bytearray(bytes(bloomkit.Bloom(100)))
    info = bloomkit.file_info(data)
    assert info["type_id"] == 1
    # A file of a type this library does not know, with a correct header checksum, cannot be forged
    # without the checksum code; a wrong-type header is caught as damage either way.
    data[8] = 99
    with pytest.raises(bloomkit.FileFormatError):
        bloomkit.from_bytes(data)


@pytest.mark.parametrize("kind", MUTABLE)
def test_pickle_protocols(kind):
    f, keys = _filled(kind, n=500)
    for proto in range(2, pickle.HIGHEST_PROTOCOL + 1):
        g = pickle.loads(pickle.dumps(f, protocol=proto))
        assert bytes(g) == bytes(f)
        g.add("after")
        assert "after" in g
