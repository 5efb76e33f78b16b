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
from factories import ALL, CLI_TYPE, MUTABLE, STATIC, make


def _filled(kind, n=3000, salt=0, spare=0):
    keys = keys_of("str", n, salt=salt) + keys_of("int", 200, salt=salt)
    f = make(kind, n + 200 + spare, keys=keys)
    if kind not in STATIC:
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
        if kind not in STATIC:
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
    if kind in STATIC:
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


def _xxh3(data):
    import ctypes
    lib = ctypes.CDLL("libxxhash.so.0")
    lib.XXH3_64bits.restype = ctypes.c_uint64
    lib.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    return lib.XXH3_64bits(bytes(data), len(data))


def test_unknown_hash_id_is_named(tmp_path):
    # A header naming a hash function this build does not know (its header checksum made right): the
    # error says so, as the bloomkit command does, on every way in.
    data = bytearray(bytes(bloomkit.Blocked(1000)))
    data[20:24] = (7).to_bytes(4, "little")
    data[56:64] = bytes(8)
    data[56:64] = _xxh3(data[:64]).to_bytes(8, "little")
    path = str(tmp_path / "h.bf")
    with open(path, "wb") as f:
        f.write(data)
    for call in (lambda: bloomkit.from_bytes(bytes(data)), lambda: bloomkit.load(path),
                 lambda: bloomkit.open(path), lambda: bloomkit.open(path, writable=True)):
        with pytest.raises(bloomkit.UnsupportedFileError, match="a hash function this build of bloomkit does not know"):
            call()


def test_open_writable_of_a_type_without_atomic_inserts(tmp_path):
    path = str(tmp_path / "s.bf")
    bloomkit.Scalable(1000).save(path)
    with pytest.raises(bloomkit.UnsupportedOperation, match="this filter type has no atomic insert"):
        bloomkit.open(path, writable=True)


def _mount_btrfs(tmp_path):
    """A loop btrfs mounted under tmp_path (skips, saying why, where the machine cannot)."""
    import shutil
    if os.geteuid() != 0:
        pytest.skip("mounting a btrfs image needs root")
    if not shutil.which("mkfs.btrfs"):
        pytest.skip("mkfs.btrfs (btrfs-progs) is not installed")
    img, mnt = tmp_path / "fs.img", tmp_path / "mnt"
    mnt.mkdir()
    with open(img, "wb") as f:
        f.truncate(256 << 20)
    p = subprocess.run(["mkfs.btrfs", "-q", "-f", str(img)], capture_output=True)
    if p.returncode != 0:
        pytest.skip("mkfs.btrfs failed: %s" % p.stderr.decode(errors="replace")[:200])
    p = subprocess.run(["mount", "-o", "loop", str(img), str(mnt)], capture_output=True)
    if p.returncode != 0:
        pytest.skip("cannot mount a btrfs image: %s" % p.stderr.decode(errors="replace")[:200])
    return mnt


def test_open_writable_on_btrfs_names_the_file_system(tmp_path):
    mnt = _mount_btrfs(tmp_path)
    try:
        path = str(mnt / "b.bf")
        f = bloomkit.Blocked(10000)
        f.add("x")
        f.save(path)
        with pytest.raises(bloomkit.UnsupportedOperation) as e:
            bloomkit.open(path, writable=True)
        assert "btrfs" in str(e.value) and "filter type" not in str(e.value), str(e.value)
        g = bloomkit.load(path)              # what the message says to do works
        g.add("y")
        g.save(path)
        assert "x" in bloomkit.open(path) and "y" in bloomkit.open(path)
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


def test_mapped_file_changed_underneath(tmp_path):
    # A mapped filter's file truncated, or another copied over it in place, while it is open: the call
    # that touches a lost page raises OSError (not a bus error that kills the interpreter), so does every
    # later call, and close() works. Replacing the file by rename is safe: the mapping keeps the old one.
    import shutil
    big, small = str(tmp_path / "big.bf"), str(tmp_path / "small.bf")
    f = bloomkit.Blocked(2_000_000, 0.01)
    f.update(range(1000))
    f.save(str(tmp_path / "big0.bf"))
    bloomkit.Blocked(100).save(small)
    keys = list(range(100000))
    changes = {"truncate": lambda: os.truncate(big, 0), "cp": lambda: shutil.copyfile(small, big)}
    for writable in (False, True):
        for how, change in changes.items():
            shutil.copyfile(str(tmp_path / "big0.bf"), big)
            g = bloomkit.open(big, writable=writable)
            assert all(g.contains_many(range(1000)))
            change()
            with pytest.raises(OSError, match="changed while in use"):
                if writable:
                    g.add_many(keys)
                else:
                    g.contains_many(keys)
            with pytest.raises(OSError, match="changed while in use"):
                5 in g  # noqa: B015
            with pytest.raises(OSError, match="changed while in use"):
                len(g)
            g.close()
            if how == "cp" and not writable:  # (a writer's inserts before the fault may land in the new bytes)
                assert open(big, "rb").read() == open(small, "rb").read(), (writable, how)
    # one-key queries meet it too
    shutil.copyfile(str(tmp_path / "big0.bf"), big)
    g = bloomkit.open(big)
    os.truncate(big, 0)
    with pytest.raises(OSError, match="changed while in use"):
        for k in keys:
            k in g  # noqa: B015
    g.close()
    # rename over an open file: the mapping keeps answering from the old one
    shutil.copyfile(str(tmp_path / "big0.bf"), big)
    g = bloomkit.open(big)
    shutil.copyfile(small, str(tmp_path / "new.bf"))
    os.rename(str(tmp_path / "new.bf"), big)
    assert all(g.contains_many(range(1000))) and 5 in g
    g.close()
