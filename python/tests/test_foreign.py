"""bloomkit.compat's readers of filters other systems made: BIP 37 filters (BIP37Filter) against Bitcoin
Core's published vectors, the npm package bloom-filter's filters (tests/foreign/) and the bloomkit
command's."""
import json
import os
import random
import subprocess

import pytest

from bloomkit.compat import BIP37Filter, murmur3_32

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "tests", "foreign")
CORE = [bytes.fromhex(h) for h in ("99108ad8ed9bb6274d3980bab5a85c048f0950c8",
                                   "b5a2c786d9ef4658287ced5914b37a1b4aa32eee",
                                   "b9300670b4c5366e95b2699e8b18bc75e5f729c5")]


def test_murmur3_core_vectors():
    for want, seed, hx in ((0x00000000, 0, ""), (0x6a396f08, 0xFBA4C795, ""), (0x81f16f39, 0xffffffff, ""),
                           (0x514e28b7, 0, "00"), (0xea3f0b17, 0xFBA4C795, "00"), (0xfd6cf10d, 0, "ff"),
                           (0x16c6b7ab, 0, "0011"), (0x8eb51c3d, 0, "001122"), (0xb4471bf8, 0, "00112233"),
                           (0xe2301fa8, 0, "0011223344"), (0xfc2e4a15, 0, "001122334455"),
                           (0xb074502c, 0, "00112233445566"), (0x8034d2a0, 0, "0011223344556677"),
                           (0xb4698def, 0, "001122334455667788")):
        assert murmur3_32(bytes.fromhex(hx), seed) == want, hx


@pytest.mark.parametrize("tweak,want", [(0, "03614e9b050000000000000001"),
                                        (2147483649, "03ce4299050000000100008001")])
def test_core_vectors(tweak, want):
    f = BIP37Filter(3, 0.01, tweak, BIP37Filter.UPDATE_ALL)
    f.add(CORE[0])
    assert CORE[0] in f
    assert bytes.fromhex("19108ad8ed9bb6274d3980bab5a85c048f0950c8") not in f
    f.add(CORE[1])
    f.add(CORE[2])
    assert bytes(f).hex() == want
    g = BIP37Filter.from_bytes(bytes.fromhex(want))
    assert g == f and all(k in g for k in CORE)
    assert (len(g.data), g.hash_funcs, g.tweak, g.flags) == (3, 5, tweak, 1)
    g.clear()
    assert CORE[0] not in g


def test_bloom_filter_npm_fixture():
    with open(os.path.join(FIXTURES, "bip37_bloom_filter.json")) as fp:
        cases = json.load(fp)["cases"]
    assert len(cases) == 8
    for c in cases:
        f = BIP37Filter.sized(c["bytes"], c["hash_funcs"], c["tweak"], c["flags"])
        for k in c["added"]:
            f.add(bytes.fromhex(k))
        assert bytes(f).hex() == c["serialized"]
        g = BIP37Filter.from_bytes(bytes.fromhex(c["serialized"]))
        assert [bytes.fromhex(k) in g for k, _ in c["queried"]] == [a for _, a in c["queried"]]


@pytest.mark.parametrize("hx,words", [
    ("", "empty"), ("03614e9b0500000000000000", "need 13 bytes"), ("03614e9b05000000000000000100", "1 bytes follow"),
    ("fd0300614e9b050000000000000001", "shortest form"), ("fd", "length field"), ("fe00000100", "at most 36,000"),
    ("03614e9b330000000000000001", "at most 50")])
def test_refusals(hx, words):
    with pytest.raises(ValueError, match=words):
        BIP37Filter.from_bytes(bytes.fromhex(hx))


def test_limits_and_empty():
    with pytest.raises(ValueError, match="at most 36,000"):
        BIP37Filter.sized(36001, 1)
    with pytest.raises(ValueError, match="at most 50"):
        BIP37Filter.sized(10, 51)
    with pytest.raises(ValueError):
        BIP37Filter(0, 0.01)
    with pytest.raises(ValueError):
        BIP37Filter(10, 1.0)
    big = BIP37Filter(1000, 1e-300)
    assert (len(big.data), big.hash_funcs) == (36000, 50)
    empty = BIP37Filter.sized(0, 5)
    empty.add(b"x")
    assert b"y" in empty and bytes(empty) == bytes.fromhex("00050000000000000000")


def test_same_bytes_as_the_command(tmp_path, cli):
    rnd = random.Random(37)
    for n, p, tweak in ((50, 0.01, 0), (700, 0.001, 0xdeadbeef), (5000, 0.02, 7)):
        keys = [bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 40))) for _ in range(n)]
        path = str(tmp_path / ("f%d.bip37" % n))
        subprocess.run([cli, "bip37", "create", path, "-n", str(n), "-p", str(p), "--tweak", str(tweak)], check=True)
        subprocess.run([cli, "bip37", "add", path, "--hex"], input="".join(k.hex() + "\n" for k in keys).encode(),
                       check=True)
        f = BIP37Filter(n, p, tweak)
        for k in keys:
            f.add(k)
        with open(path, "rb") as fp:
            assert fp.read() == bytes(f)


# ---- pybloom_live files (tests/foreign/pybloom_live-*/, made by make_pybloom_live.py) ----

from bloomkit.compat import (PybloomLiveBloomFilter, PybloomLiveScalableBloomFilter,  # noqa: E402
                             load_pybloom_live)
import bloomkit.compat  # noqa: E402


def _key(k):
    return bytes.fromhex(k[1]) if k[0] == "b" else k[1]


def _fixtures(version):
    d = os.path.join(FIXTURES, "pybloom_live-%s" % version)
    with open(os.path.join(d, "answers.json")) as fp:
        answers = json.load(fp)
    assert answers["made_by"] == "pybloom_live " + version
    return d, answers["files"]


@pytest.mark.parametrize("version", ["4.0.0", "3.1.0"])
def test_pybloom_live_answers(version):
    d, files = _fixtures(version)
    assert len(files) == 10
    for entry in files:
        path = os.path.join(d, entry["file"])
        f = load_pybloom_live(path, version=int(version[0]))
        want = PybloomLiveBloomFilter if entry["class"] == "BloomFilter" else PybloomLiveScalableBloomFilter
        assert isinstance(f, want), entry["file"]
        assert len(f) == f.count == entry["count"]
        got = [_key(k) in f for k, _ in entry["queries"]]
        assert got == [a for _, a in entry["queries"]], entry["file"]
        # the other forms of source read the same
        with open(path, "rb") as fp:
            data = fp.read()
        with open(path, "rb") as fp:
            g = load_pybloom_live(fp, version=int(version[0]))
        h = load_pybloom_live(memoryview(data), version=int(version[0]))
        for k, a in entry["queries"][:50]:
            assert (_key(k) in g) == (_key(k) in h) == a


def test_pybloom_live_version_matters():
    # 3.x hashed bytes keys as str(key) and used MD5: a 3.1.0 file read as version 4 answers differently
    d, files = _fixtures("3.1.0")
    entry = [e for e in files if e["file"] == "bf-1000-0.01.bin"][0]
    f = load_pybloom_live(os.path.join(d, entry["file"]), version=4)
    assert [_key(k) in f for k, _ in entry["queries"]] != [a for _, a in entry["queries"]]


def test_pybloom_live_to_bloomkit():
    d, files = _fixtures("4.0.0")
    for name in ("bf-1000-0.01.bin", "sbf-small.bin"):
        entry = [e for e in files if e["file"] == name][0]
        f = load_pybloom_live(os.path.join(d, name))
        keys = [_key(k) for k, a in entry["queries"] if a][:150]
        g = f.to_bloomkit(keys)
        assert isinstance(g, bloomkit.compat.BloomFilter if name.startswith("bf") else
                          bloomkit.compat.ScalableBloomFilter)
        assert all(k in g for k in keys)
        assert g.error_rate == pytest.approx(f.error_rate)
        absent = [_key(k) for k, a in entry["queries"] if not a][0]
        with pytest.raises(ValueError, match="never added"):
            f.to_bloomkit(keys + [absent])
        assert absent in f.to_bloomkit([absent], strict=False)


def test_pybloom_live_bad_files(tmp_path):
    d, _ = _fixtures("4.0.0")
    for name in ("bf-300-1e-4.bin", "sbf-large.bin"):
        with open(os.path.join(d, name), "rb") as fp:
            data = fp.read()
        for cut in list(range(0, 64)) + list(range(len(data) - 64, len(data))):
            with pytest.raises(ValueError):
                load_pybloom_live(data[:cut])
        with pytest.raises(ValueError, match="follow|need"):
            load_pybloom_live(data + b"\0")
        rnd = random.Random(len(data))
        for _ in range(300):  # damage: a clear ValueError, or a filter that answers; nothing else
            b = bytearray(data)
            for _ in range(rnd.randrange(1, 4)):
                b[rnd.randrange(min(len(b), 120))] = rnd.randrange(256)
            try:
                f = load_pybloom_live(bytes(b))
            except ValueError:
                continue
            assert (b"x" in f) in (True, False)
    with pytest.raises(ValueError, match="version"):
        load_pybloom_live(b"", version=5)


# ---- Parquet (tests/foreign/parquet-duckdb/, written by DuckDB; make_parquet.mjs) ----

from bloomkit.compat import ParquetBloomFilters  # noqa: E402

PARQUET = os.path.join(FIXTURES, "parquet-duckdb", "data.parquet")


def _uuid(n):
    return bytes.fromhex("00000000000040008000%012d" % n)


def test_parquet_written_and_absent_values():
    import hashlib
    import struct
    with open(os.path.join(FIXTURES, "parquet-duckdb", "duckdb_answers.json")) as fp:
        answers = json.load(fp)["columns"]
    cols = {
        "url": ("BYTE_ARRAY", lambda i: "https://example.com/page/%d" % i, 1000,
                lambda j: "https://example.com/absent/%d" % j),
        "id": ("INT64", lambda i: i, 700, lambda j: 1000000 + j),
        "n32": ("INT32", lambda i: i, 900, lambda j: -1000 - j),
        "d": ("DOUBLE", lambda i: i * 0.5, 800, lambda j: 1000000 + j * 0.5),
        "f": ("FLOAT", lambda i: i * 0.25, 600, lambda j: 100000 + j * 0.25),
        "b": ("BYTE_ARRAY", lambda i: hashlib.md5(b"%d" % i).digest(), 500,
              lambda j: hashlib.md5(b"absent-%d" % j).digest()),
        "u": ("FIXED_LEN_BYTE_ARRAY", _uuid, 400, lambda j: _uuid(500000 + j)),
    }
    for col, (ptype, written, n, absent) in cols.items():
        f = ParquetBloomFilters(PARQUET, col)
        assert (f.physical_type, f.row_groups) == (ptype, 2)
        assert all(b > 0 and b % 32 == 0 for b in f.filter_bytes)
        for i in range(n):
            assert f.contains(written(i), 0) and f.contains(written(i), 1) and written(i) in f, (col, i)
        a = answers[col]
        if col in ("b", "u"):  # DuckDB's probe does not check these (tests/foreign/README.md)
            hits = sum(absent(j) in f for j in range(a["absent_values"]))
            assert hits < a["absent_values"] * 0.05, (col, hits)  # u: 512 bytes for 400 values
            continue
        for rg in range(2):
            want = set(a["not_excluded"][rg])
            got = [f.contains(absent(j), rg) for j in range(a["absent_values"])]
            assert [j for j, g in enumerate(got) if g] == sorted(want), (col, rg)
    f = ParquetBloomFilters(PARQUET, "n32")
    assert f.plain(5) == struct.pack("<i", 5)
    with pytest.raises(struct.error):
        f.plain(2 ** 31)
    with pytest.raises(TypeError):
        f.plain(b"5")
    with pytest.raises(ValueError, match="16"):
        ParquetBloomFilters(PARQUET, "u").plain(b"short")


def test_parquet_bad_files():
    with open(PARQUET, "rb") as fp:
        data = fp.read()
    with pytest.raises(ValueError, match="no Bloom filter"):
        ParquetBloomFilters(data, "uniq")
    with pytest.raises(ValueError, match="no column 'nope'"):
        ParquetBloomFilters(data, "nope")
    for blob, words in ((b"", "not a Parquet"), (data[:-1], "no PAR1 magic at the end"),
                        (data[:-4] + b"PARE", "encrypted"), (data[:-8] + b"\xff\xff\xff\x7fPAR1", "past")):
        with pytest.raises(ValueError, match=words):
            ParquetBloomFilters(blob, "url")
    flen = int.from_bytes(data[-8:-4], "little")
    rnd = random.Random(7)
    for _ in range(300):  # damaged footers: ValueError or a readable column, nothing else
        b = bytearray(data)
        b[len(b) - 8 - flen + rnd.randrange(flen)] ^= rnd.randrange(1, 256)
        try:
            f = ParquetBloomFilters(bytes(b), "url")
        except ValueError:
            continue
        assert ("x" in f) in (True, False)


def test_parquet_reads_with_the_library():
    # ParquetBloomFilters is the library's reader (bloomkit/parquet.h), not a second parser: the same
    # bits and statistics the bloomkit command reads
    import subprocess
    f = ParquetBloomFilters(PARQUET, "url")
    assert type(f._c).__name__ == "_ParquetFilters"
    with open(PARQUET, "rb") as fp:
        data = fp.read()
    for rg in range(2):
        bits = f.bits(rg)
        assert len(bits) == f.filter_bytes[rg] and data.count(bits) == 2
        st = f.stats(rg)
        assert st["bytes"] == 2048 and st["blocks"] == 64 and 950 < st["est_values"] < 1050
        assert 0 < st["fpr"] < 0.01 and st["bits_set"] == sum(bin(b).count("1") for b in bits)
    cli = os.environ.get("BK_CLI")
    if cli:
        out = subprocess.run([cli, "info", PARQUET, "--column", "url", "--json"], capture_output=True, check=True)
        for rg, st in enumerate(json.loads(out.stdout)["row_group_filters"]):
            mine = f.stats(rg)
            assert st["bits_set"] == mine["bits_set"] and abs(st["fpr"] - mine["fpr"]) < 1e-6 * max(st["fpr"], 1)
        keys = ["https://example.com/absent/%d" % j for j in range(3000)]
        out = subprocess.run([cli, "parquet", "query", PARQUET, "-c", "url"], input="\n".join(keys).encode(),
                             capture_output=True)
        assert [l.endswith(b"\tpresent") for l in out.stdout.splitlines()] == [k in f for k in keys]
    with pytest.raises(IndexError):
        f.contains("x", 2)
    with pytest.raises(IndexError):
        f.stats(5)


def test_parquet_filter_equals_duckdb():
    # parquet_filter makes what a Parquet writer embeds: for the values of a file DuckDB wrote, sized by
    # the same rule, DuckDB's filter byte for byte (header and bitset), found once per row group
    import hashlib
    from bloomkit.compat import parquet_filter, parquet_filter_size
    with open(PARQUET, "rb") as fp:
        data = fp.read()
    cols = {
        "url": ("BYTE_ARRAY", 0, ["https://example.com/page/%d" % i for i in range(1000)]),
        "id": ("INT64", 0, list(range(700))),
        "n32": ("INT32", 0, list(range(900))),
        "d": ("DOUBLE", 0, [i * 0.5 for i in range(800)]),
        "f": ("FLOAT", 0, [i * 0.25 for i in range(600)]),
        "b": ("BYTE_ARRAY", 0, [hashlib.md5(b"%d" % i).digest() for i in range(500)]),
        "u": ("FIXED_LEN_BYTE_ARRAY", 16, [_uuid(i) for i in range(400)]),
    }
    for col, (ptype, tlen, values) in cols.items():
        blob = parquet_filter(values, ptype, tlen)
        assert data.count(blob) == 2, col
        bits = parquet_filter(values + values[:10], ptype, tlen, header=False)  # duplicates change nothing
        assert blob.endswith(bits) and bits == ParquetBloomFilters(PARQUET, col).bits(0), col
        g = ParquetBloomFilters.from_blob(blob, ptype, tlen)
        assert (g.row_groups, g.filter_bytes, g.physical_type) == (1, [len(bits)], ptype)
        assert all(v in g and g.contains(v, 0) for v in values), col
    assert parquet_filter_size(1000) == 2048 and parquet_filter_size(1000, 0.0001) == 4096
    assert parquet_filter_size(0) == 32
    assert len(parquet_filter([1, 2], "INT64", nbytes=96, header=False)) == 96
    assert len(parquet_filter([1, 2], "INT64", ndv=10 ** 6)) > 2 ** 20
    g = ParquetBloomFilters.from_blob(parquet_filter(range(2000), "INT32"), "INT32")
    assert sum(j in g for j in range(10 ** 6, 10 ** 6 + 20000)) < 20000 * 0.02


def test_parquet_blob_refusals():
    from bloomkit.compat import parquet_filter, parquet_filter_size
    blob = parquet_filter([b"a", b"b"], "BYTE_ARRAY")
    for bad, words in ((blob[:-1], "run past the end"), (blob + b"\0", "1 bytes follow"), (b"", "damaged"),
                       (blob[:3], "damaged")):
        with pytest.raises(ValueError, match=words):
            ParquetBloomFilters.from_blob(bad, "BYTE_ARRAY")
    for args, words in ((("BOOLEAN",), "physical_type"), (("FIXED_LEN_BYTE_ARRAY",), "type_length"),
                        (("INT32", 4), "type_length")):
        with pytest.raises(ValueError, match=words):
            ParquetBloomFilters.from_blob(blob, *args)
    with pytest.raises(ValueError, match="multiple of 32"):
        parquet_filter([1], "INT32", nbytes=33)
    with pytest.raises(ValueError, match="fpp"):
        parquet_filter_size(10, 1.5)
    with pytest.raises(ValueError, match="the column's values have 4"):
        parquet_filter([b"abc"], "FIXED_LEN_BYTE_ARRAY", 4)
    with pytest.raises(TypeError):
        parquet_filter([b"abc"], "INT64")
