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
