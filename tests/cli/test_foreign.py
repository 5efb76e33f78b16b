#!/usr/bin/python3
"""The bloomkit command on filters other systems made: `bloomkit bip37` against Bitcoin Core's published
vectors and the filters of the npm package bloom-filter (tests/foreign/bip37_bloom_filter.json), and its
refusals of bad payloads; `bloomkit parquet` on a file DuckDB wrote (tests/foreign/parquet-duckdb/), and its
export compared byte for byte with DuckDB's filters; `bloomkit convert`'s refusals, each with its reason.
Usage: test_foreign.py BLOOMKIT GROUP"""
import json
import os
import subprocess
import sys
import tempfile

TOP = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(TOP, "tests", "foreign")
BIN = None


class Failure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def run(args, input=None, expect=None):
    p = subprocess.run([BIN] + [str(a) for a in args], input=input, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=300)
    err = p.stderr.decode("utf-8", "replace")
    if expect is not None and p.returncode != expect:
        raise Failure("bloomkit %s: exit %d, expected %d\nstderr: %s" % (" ".join(map(str, args)), p.returncode,
                                                                         expect, err))
    check(p.returncode in (0, 1, 2), "bloomkit %s: exit %d (a signal?)\n%s" % (args, p.returncode, err))
    return p.returncode, p.stdout, err


def read(path):
    with open(path, "rb") as f:
        return f.read()


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


CORE = ["99108ad8ed9bb6274d3980bab5a85c048f0950c8", "b5a2c786d9ef4658287ced5914b37a1b4aa32eee",
        "b9300670b4c5366e95b2699e8b18bc75e5f729c5"]


def test_bip37():
    # Bitcoin Core's bloom_tests: three elements at 0.01, tweak 0 and 2147483649, flags "all".
    for tweak, want in ((0, "03614e9b050000000000000001"), (2147483649, "03ce4299050000000100008001")):
        run(["bip37", "create", "core.bip37", "-n", "3", "-p", "0.01", "--tweak", tweak, "--flags", "all", "-f"],
            expect=0)
        run(["bip37", "add", "core.bip37", "--hex"], input="\n".join(CORE).encode() + b"\n", expect=0)
        check(read("core.bip37").hex() == want, "tweak %d: %s, want %s" % (tweak, read("core.bip37").hex(), want))
        rc, out, err = run(["bip37", "query", "core.bip37", "-x", CORE[0], "19108ad8ed9bb6274d3980bab5a85c048f0950c8"],
                           expect=1)
        check(out.decode() == CORE[0] + "\tpresent\n19108ad8ed9bb6274d3980bab5a85c048f0950c8\tabsent\n", out)
        run(["bip37", "query", "core.bip37", "-q", "--hex"] + CORE, expect=0)
    rc, out, err = run(["bip37", "info", "core.bip37", "--json"], expect=0)
    info = json.loads(out)
    check((info["bytes"], info["hash_funcs"], info["tweak"], info["flags_name"]) == (3, 5, 2147483649, "all"), info)
    # create refuses to replace a file without --force, and a file it refused is unchanged
    before = read("core.bip37")
    rc, out, err = run(["bip37", "create", "core.bip37", "-n", "10", "-p", "0.1"], expect=2)
    check("exists" in err and read("core.bip37") == before, err)

    # the independent implementation's filters: rebuilt byte for byte, the same answers for absent keys
    with open(os.path.join(FIXTURES, "bip37_bloom_filter.json")) as f:
        cases = json.load(f)["cases"]
    for c in cases:
        if c["bytes"] > 1000:
            continue  # the C test covers the 36,000-byte case; keep the command-line runs short
        run(["bip37", "create", "ind.bip37", "--bytes", c["bytes"], "--hash-funcs", c["hash_funcs"],
             "--tweak", c["tweak"], "--flags", c["flags"], "--force"], expect=0)
        run(["bip37", "add", "ind.bip37", "--hex"], input="".join(k + "\n" for k in c["added"]).encode(), expect=0)
        check(read("ind.bip37").hex() == c["serialized"], "case %r: bytes differ" % c["bytes"])
        keys = "".join(k + "\n" for k, _ in c["queried"]).encode()
        rc, out, err = run(["bip37", "query", "ind.bip37", "--hex"], input=keys)
        got = [l.split("\t")[1] == "present" for l in out.decode().splitlines()]
        check(got == [a for _, a in c["queried"]], "case %r: answers differ" % c["bytes"])
        check(rc == (1 if not all(got) else 0), "exit status follows the answers")

    # raw keys (not --hex): the bytes of each line, as the other commands read them
    run(["bip37", "create", "raw.bip37", "-n", "1000", "-p", "0.001"], expect=0)
    keys = b"".join(b"key-%d\n" % i for i in range(1000))
    run(["bip37", "add", "raw.bip37"], input=keys, expect=0)
    run(["bip37", "query", "raw.bip37", "-q"], input=keys, expect=0)
    rc, out, err = run(["bip37", "query", "raw.bip37"], input=b"".join(b"other-%d\n" % i for i in range(5000)))
    fp = out.count(b"\tpresent")
    check(fp < 5000 * 0.004, "false positives %d of 5000 at p = 0.001" % fp)


def refused(data, words, action="info"):
    write("bad.bip37", data)
    before = read("bad.bip37")
    args = ["bip37", action, "bad.bip37"] + (["x"] if action != "info" else [])
    rc, out, err = run(args, expect=2)
    check(words in err and "bad.bip37" in err, "%r: %s" % (data[:16], err))
    check(read("bad.bip37") == before, "a refused file is left as it was")


def test_bip37_errors():
    good = bytes.fromhex("03614e9b050000000000000001")
    refused(b"", "empty")
    refused(good[:-1], "need 13 bytes")
    refused(good + b"\0", "1 bytes follow")
    refused(good[:-1], "need 13 bytes", "add")
    refused(good[:-1], "need 13 bytes", "query")
    refused(bytes.fromhex("fd0300") + good[1:], "shortest form")
    refused(bytes.fromhex("fda18c") + bytes(36001) + bytes(9), "at most 36,000")
    refused(bytes.fromhex("03614e9b33000000000000000001")[:13], "at most 50")
    refused(os.urandom(50000), "")  # whatever it is, a clear refusal, never a crash
    for i in range(200):  # random damage of a valid payload: exit 0 or 2, never a signal
        b = bytearray(good)
        b[i % len(b)] ^= 1 + (i * 37) % 255
        write("rand.bip37", bytes(b[: 13 - (i % 3)]))
        run(["bip37", "info", "rand.bip37"])
    write("good.bip37", good)
    for args, words in ((["bip37"], "needs an action"), (["bip37", "frob", "x"], "unknown action"),
                        (["bip37", "info"], "needs a FILE"), (["bip37", "info", "good.bip37", "k"], "takes no keys"),
                        (["bip37", "info", "good.bip37", "--hex"], "--hex is not an option of info"),
                        (["bip37", "create", "n.bip37", "-n", "5"], "needs -n N and -p P"),
                        (["bip37", "create", "n.bip37", "--bytes", "36001", "--hash-funcs", "3"], "--bytes"),
                        (["bip37", "create", "n.bip37", "--bytes", "10", "--hash-funcs", "51"], "--hash-funcs"),
                        (["bip37", "create", "n.bip37", "-n", "5", "-p", "0.1", "--tweak", "4294967296"], "32 bits"),
                        (["bip37", "create", "n.bip37", "-n", "5", "-p", "0.1", "--flags", "256"], "over 255"),
                        (["bip37", "query", "good.bip37", "--hex", "abc"], "odd number of hex digits"),
                        (["bip37", "add", "good.bip37", "--hex", "zz"], "not hexadecimal"),
                        (["bip37", "info", "missing.bip37"], "missing.bip37")):
        rc, out, err = run(args, expect=2)
        check(words in err, "%s: %s" % (args, err))
    check(read("good.bip37") == good, "a refused add leaves the file as it was")
    check(not os.path.exists("n.bip37"), "refused creates write nothing")
    rc, out, err = run(["bip37", "--help"], expect=0)
    check(out.startswith(b"Usage: bloomkit bip37"), out[:40])


PARQUET = os.path.join(FIXTURES, "parquet-duckdb", "data.parquet")


def test_parquet():
    import hashlib
    with open(os.path.join(FIXTURES, "parquet-duckdb", "duckdb_answers.json")) as f:
        answers = json.load(f)["columns"]
    for col, kind, tlen in (("url", "BYTE_ARRAY", 0), ("id", "INT64", 0), ("n32", "INT32", 0), ("d", "DOUBLE", 0),
                            ("f", "FLOAT", 0), ("b", "BYTE_ARRAY", 0), ("u", "FIXED_LEN_BYTE_ARRAY", 16)):
        rc, out, err = run(["parquet", "info", PARQUET, "--column", col, "--json"], expect=0)
        info = json.loads(out)
        check((info["physical_type"], info["type_length"], info["row_groups"], info["filters"]) == (kind, tlen, 2, 2),
              info)
    rc, out, err = run(["parquet", "info", PARQUET, "-c", "url"], expect=0)
    check(b"row group 1:" in out and b"BYTE_ARRAY" in out, out)

    def absent_answers(col):
        a = answers[col]
        hit = set(a["not_excluded"][0]) | set(a["not_excluded"][1])
        return [j in hit for j in range(a["absent_values"])]

    keys = {
        "url": ([b"https://example.com/page/%d" % i for i in range(1000)],
                [b"https://example.com/absent/%d" % j for j in range(answers["url"]["absent_values"])]),
        "id": ([b"%d" % i for i in range(700)], [b"%d" % (1000000 + j) for j in range(10000)]),
        "n32": ([b"%d" % i for i in range(900)], [b"%d" % (-1000 - j) for j in range(10000)]),
        "d": ([repr(i * 0.5).encode() for i in range(800)], [repr(1000000 + j * 0.5).encode() for j in range(10000)]),
        "f": ([repr(i * 0.25).encode() for i in range(600)], [repr(100000 + j * 0.25).encode() for j in range(10000)]),
        "b": ([hashlib.md5(b"%d" % i).hexdigest().encode() for i in range(500)],
              [hashlib.md5(b"absent-%d" % j).hexdigest().encode() for j in range(10000)]),
        "u": ([b"00000000-0000-4000-8000-%012d" % i for i in range(400)], []),
    }
    for col, (written, absent) in keys.items():
        hexopt = ["--hex"] if col == "b" else []
        run(["parquet", "query", PARQUET, "-c", col, "-q"] + hexopt, input=b"\n".join(written) + b"\n", expect=0)
        if not absent:
            continue
        rc, out, err = run(["parquet", "query", PARQUET, "-c", col] + hexopt, input=b"\n".join(absent) + b"\n")
        got = [l.split(b"\t")[1] == b"present" for l in out.splitlines()]
        check(len(got) == len(absent), "%s: one answer per key" % col)
        if col == "b":  # DuckDB's probe of a BLOB value does not hash its bytes (tests/foreign/README.md)
            check(sum(got) < len(got) * 0.01, "b: %d of %d absent values present" % (sum(got), len(got)))
        else:
            check(got == absent_answers(col), "%s: answers for absent values differ from DuckDB's" % col)
        check(rc == 1 and 0 < sum(got) < len(got), "%s: exit %d, %d present" % (col, rc, sum(got)))
    rc, out, err = run(["parquet", "query", PARQUET, "-c", "url", "https://example.com/page/7"], expect=0)
    check(out == b"https://example.com/page/7\tpresent\n", out)
    # `bloomkit query FILE --column C` is parquet query
    for col in (["--column", "url"], ["--column=url"], ["-c", "url"]):
        rc, out, err = run(["query", PARQUET] + col + ["https://example.com/page/7", "https://example.com/absent/0"],
                           expect=1)
        check(out == b"https://example.com/page/7\tpresent\nhttps://example.com/absent/0\tabsent\n", out)
    rc, out, err = run(["query", PARQUET, "-c", "uniq", "x"], expect=2)
    check("no Bloom filter" in err, err)


def test_parquet_errors():
    with open(PARQUET, "rb") as f:
        data = f.read()
    for name, blob, words in (("empty.parquet", b"", "not a Parquet file"),
                              ("text.parquet", b"hello, world\n" * 10, "not a Parquet file"),
                              ("cut.parquet", data[:-1], "no PAR1 magic at the end"),
                              ("head.parquet", data[:100], "no PAR1 magic at the end"),
                              ("foot.parquet", data[:-8] + b"\xff\xff\xff\x7fPAR1", "past the file's start"),
                              ("enc.parquet", data[:-4] + b"PARE", "encrypted")):
        write(name, blob)
        rc, out, err = run(["parquet", "query", name, "-c", "url", "x"], expect=2)
        check(words in err and name in err, "%s: %s" % (name, err))
    flen = int.from_bytes(data[-8:-4], "little")
    for i in range(300):  # damaged footers: a clear message or an answer, never a signal
        b = bytearray(data)
        b[len(b) - 8 - flen + (i * 7919) % flen] ^= 1 + i % 255
        write("damaged.parquet", bytes(b))
        rc, out, err = run(["parquet", "query", "damaged.parquet", "-c", "url", "x"])
        check(rc in (0, 1) or "damaged.parquet" in err, err)
    for args, words in ((["parquet", "query", PARQUET, "-c", "uniq", "x"], "no Bloom filter"),
                        (["parquet", "query", PARQUET, "-c", "nope", "x"], "no column 'nope'"),
                        (["parquet", "query", PARQUET, "x"], "needs --column"),
                        (["parquet", "query", PARQUET, "-c", "id", "12x"], "not a 64-bit integer"),
                        (["parquet", "query", PARQUET, "-c", "n32", "4294967296"], "not a 32-bit integer"),
                        (["parquet", "query", PARQUET, "-c", "d", "abc"], "not a number"),
                        (["parquet", "query", PARQUET, "-c", "u", "abcd"], "the column's values have 16"),
                        (["parquet", "query", PARQUET, "-c", "b", "--hex", "zz"], "not hexadecimal"),
                        (["parquet", "info", PARQUET, "-c", "url", "k"], "takes no keys"),
                        (["parquet", "frob", PARQUET], "unknown action"),
                        (["parquet", "info", "missing.parquet", "-c", "url"], "missing.parquet")):
        rc, out, err = run(args, expect=2)
        check(words in err, "%s: %s" % (args, err))
    rc, out, err = run(["parquet", "--help"], expect=0)
    check(out.startswith(b"Usage: bloomkit parquet"), out[:40])


WRITTEN = {  # each column's distinct values as the CLI reads them, and the --type export takes
    "url": ("BYTE_ARRAY", [b"https://example.com/page/%d" % i for i in range(1000)]),
    "id": ("INT64", [b"%d" % i for i in range(700)]),
    "n32": ("int32", [b"%d" % i for i in range(900)]),
    "d": ("DOUBLE", [repr(i * 0.5).encode() for i in range(800)]),
    "f": ("FLOAT", [repr(i * 0.25).encode() for i in range(600)]),
    "b": ("BYTE_ARRAY", None),
    "u": ("FIXED_LEN_BYTE_ARRAY:16", [b"00000000-0000-4000-8000-%012d" % i for i in range(400)]),
}


def test_parquet_export():
    import hashlib
    data = read(PARQUET)
    WRITTEN["b"] = ("BYTE_ARRAY", [hashlib.md5(b"%d" % i).hexdigest().encode() for i in range(500)])
    for col, (kind, values) in WRITTEN.items():
        hexopt = ["--hex"] if col == "b" else []
        # sized as Parquet's writers size a filter (distinct values at 0.01): DuckDB's filter byte for
        # byte, header included, once per row group
        rc, blob, err = run(["parquet", "export", "-", "--type", kind] + hexopt, input=b"\n".join(values) + b"\n",
                            expect=0)
        check(data.count(blob) == 2, "%s: the export (%d bytes) is not DuckDB's filter: %s" % (col, len(blob), err))
        check(("%d distinct values" % len(values)) in err, err)
        # sized up front (-n: the keys go straight into the filter, unkept): the same bytes
        rc, same, err = run(["parquet", "export", "-", "--type", kind, "-n", len(values)] + hexopt,
                            input=b"\n".join(values + values[:7]) + b"\n", expect=0)
        check(same == blob and ("%d values" % (len(values) + 7)) in err, "%s: -n: %s" % (col, err))
        # the same bytes written to a file, read back as a blob: every value present
        run(["parquet", "export", col + ".sbbf", "-t", kind] + hexopt, input=b"\n".join(values) + b"\n", expect=0)
        check(read(col + ".sbbf") == blob, "%s: the file and standard output differ" % col)
        run(["parquet", "query", col + ".sbbf", "--type", kind, "-q"] + hexopt, input=b"\n".join(values) + b"\n",
            expect=0)
        rc, out, err = run(["parquet", "info", col + ".sbbf", "--json"], expect=0)
        info = json.loads(out)
        nbytes = info["filter"]["bytes"]
        check(info["blob"] and info["header_bytes"] + nbytes == len(blob), info)
        # --bits-only: the bitset alone, the tail of the blob
        rc, bits, err = run(["parquet", "export", "-", "-t", kind, "--bits-only"] + hexopt,
                            input=b"\n".join(values) + b"\n", expect=0)
        check(bits == blob[-nbytes:] and len(bits) == nbytes, "%s: --bits-only" % col)
        # the column's info: each row group's estimates near the truth
        rc, out, err = run(["info", PARQUET, "--column", col, "--json"], expect=0)
        for st in json.loads(out)["row_group_filters"]:
            check(st["bytes"] == nbytes and abs(st["est_values"] - len(values)) < 0.1 * len(values), (col, st))
            check(0 < st["fpr"] < 0.05 and 0 < st["fill"] < 0.6, (col, st))
    # larger filters (512 and 256 blocks; numBytes in three bytes of the header), one row group
    large = os.path.join(FIXTURES, "parquet-duckdb", "large-filters.parquet")
    for col, kind, values, nbytes in (("k", "INT64", [b"%d" % i for i in range(10000)], 16384),
                                      ("s", "BYTE_ARRAY", [b"key-%d" % i for i in range(6000)], 8192)):
        rc, blob, err = run(["parquet", "export", "-", "-t", kind], input=b"\n".join(values) + b"\n", expect=0)
        check(len(blob) > nbytes and read(large).count(blob) == 1, "%s: not DuckDB's filter: %s" % (col, err))
        rc, out, err = run(["info", large, "-c", col, "--json"], expect=0)
        st = json.loads(out)["row_group_filters"][0]
        check(st["bytes"] == nbytes and abs(st["est_values"] - len(values)) < 0.05 * len(values), (col, st))
    # values never written: few answer present; the estimated rate is near the measured one
    absent = [b"https://example.com/absent/%d" % j for j in range(20000)]
    rc, out, err = run(["parquet", "query", "url.sbbf", "-t", "BYTE_ARRAY"], input=b"\n".join(absent) + b"\n",
                       expect=1)
    present = sum(l.endswith(b"\tpresent") for l in out.splitlines())
    rc, out, err = run(["parquet", "info", "url.sbbf", "--json"], expect=0)
    fpr = json.loads(out)["filter"]["fpr"]
    check(0 < present < 0.01 * len(absent) and 0.5 * fpr < present / len(absent) < 2 * fpr, (present, fpr))
    rc, out, err = run(["parquet", "info", "url.sbbf"], expect=0)
    check(b"header and bitset" in out and b"2048 bytes (64 blocks)" in out, out)
    rc, out, err = run(["info", PARQUET, "-c", "url"], expect=0)
    check(b"row group 1:" in out and b"distinct values" in out and b"false-positive rate" in out, out)
    # sizes: -n and -p as Parquet's rule has them, --bytes exactly
    for args, nbytes in ((["-n", "1000"], 2048), (["-n", "1000", "-p", "0.001"], 2048), (["-n", "1000", "-p", "0.0001"], 4096), (["--bytes", "96"], 96),
                         (["-n", "1"], 32)):
        run(["parquet", "export", "sized.sbbf", "-f", "-t", "INT64"] + args, input=b"1\n2\n3\n", expect=0)
        rc, out, err = run(["parquet", "info", "sized.sbbf", "--json"], expect=0)
        check(json.loads(out)["filter"]["bytes"] == nbytes, (args, out))
        run(["parquet", "query", "sized.sbbf", "-t", "INT64", "1", "2", "3"], expect=0)
    # keys from the arguments
    run(["parquet", "export", "args.sbbf", "-t", "DOUBLE", "--", "0.5", "-0.0", "1e300"], expect=0)
    run(["parquet", "query", "args.sbbf", "-t", "DOUBLE", "-q", "--", "0.5", "-0.0", "1e300"], expect=0)
    # refusals: exit 2, a clear message, nothing written
    write("keep.sbbf", b"keep")
    for args, inp, words in ((["parquet", "export", "keep.sbbf", "-t", "INT64"], b"1\n", "refusing to replace"),
                             (["parquet", "export", "x.sbbf"], b"1\n", "needs --type"),
                             (["parquet", "export", "x.sbbf", "-t", "INT96"], b"1\n", "unknown --type 'INT96'"),
                             (["parquet", "export", "x.sbbf", "-t", "FIXED_LEN_BYTE_ARRAY"], b"1\n", "needs its length"),
                             (["parquet", "export", "x.sbbf", "-t", "FIXED_LEN_BYTE_ARRAY:4"], b"abc\n",
                              "the column's values have 4"),
                             (["parquet", "export", "x.sbbf", "-t", "INT32"], b"1\n99999999999\n", "key 2"),
                             (["parquet", "export", "x.sbbf", "-t", "INT32", "--bytes", "33"], b"1\n", "multiple of 32"),
                             (["parquet", "export", "x.sbbf", "-t", "INT32", "--bytes", "64", "-p", "0.1"], b"1\n",
                              "--bytes gives the size"),
                             (["parquet", "export", "x.sbbf", "-t", "INT32", "-c", "url"], b"1\n", "not --column"),
                             (["parquet", "info", PARQUET, "-c", "url", "--bytes", "64"], b"", "options of export"),
                             (["parquet", "query", "url.sbbf", "x"], b"", "or --type T"),
                             (["parquet", "query", PARQUET, "-c", "url", "-t", "INT32", "x"], b"", "a column's type"),
                             (["parquet", "info", PARQUET], b"", "name the column with --column"),
                             (["parquet", "info", "keep.sbbf"], b"", "nor a Parquet filter blob")):
        rc, out, err = run(args, input=inp, expect=2)
        check(words in err, "%s: %s" % (args, err))
        check(not os.path.exists("x.sbbf") and read("keep.sbbf") == b"keep", args)
    # damaged blobs: a clear message (exit 2) or an answer, never a signal
    blob = read("url.sbbf")
    for name, b, words in (("cut.sbbf", blob[:-1], "run past the end"), ("long.sbbf", blob + b"\0", "1 bytes follow"),
                           ("head.sbbf", blob[:5], "damaged"), ("empty.sbbf", b"", "damaged")):
        write(name, b)
        rc, out, err = run(["parquet", "info", name], expect=2)
        check(words in err and name in err, "%s: %s" % (name, err))
    for i in range(200):
        b = bytearray(blob)
        b[i % 16] ^= 1 + i % 255
        write("flip.sbbf", bytes(b))
        rc, out, err = run(["parquet", "query", "flip.sbbf", "-t", "BYTE_ARRAY", "x"])
        check(rc in (0, 1) or "flip.sbbf" in err, err)


def test_convert():
    rc, out, err = run(["parquet", "export", "url.sbbf", "-t", "BYTE_ARRAY"], input=b"a\nb\n", expect=0)
    run(["bip37", "create", "w.bip37", "-n", "10", "-p", "0.01"], expect=0)
    run(["create", "native.bkf", "-n", "100", "-p", "0.01"], expect=0)
    py = os.path.join(FIXTURES, "pybloom_live-4.0.0")
    for args, words in (([PARQUET, "--column", "url"], ["XXH64", "XXH3-64 only", "bloomkit build out.bf",
                                                         "bloomkit parquet query"]),
                        (["url.sbbf"], ["Parquet split-block filter", "XXH3-64 only", "bloomkit build out.bf"]),
                        (["w.bip37"], ["BIP 37", "MurmurHash3", "bloomkit build out.bf", "bloomkit bip37 query"]),
                        ([os.path.join(py, "bf-1000-0.01.bin")], ["pybloom_live", "to_bloomkit(keys)"]),
                        ([os.path.join(py, "sbf-small.bin")], ["pybloom_live", "to_bloomkit"]),
                        ([os.path.join(py, "sbf-large.bin"), "--from", "pybloom_live"], ["pybloom_live"]),
                        ([os.path.join(py, "sbf-empty.bin")], ["pybloom_live"]),
                        (["w.bip37", "--from", "pybloom_live"], ["not a pybloom_live file"]),
                        ([os.path.join(FIXTURES, "pybloom_live-3.1.0", "bf-empty.bin")], ["pybloom_live"]),
                        (["native.bkf"], ["already a bloomkit filter"]),
                        ([PARQUET], ["name the column with --column"]),
                        ([PARQUET, "-c", "uniq"], ["no Bloom filter"]),
                        ([PARQUET, "-c", "nope"], ["no column 'nope'"]),
                        ([os.path.join(py, "answers.json")], ["not a format convert knows", "--from"]),
                        (["url.sbbf", "--from", "bip37"], ["not a valid BIP 37 filter"]),
                        (["native.bkf", "-c", "url"], ["--column is for a Parquet file"]),
                        (["w.bip37", "--from", "orc"], ["unknown --from 'orc'"]),
                        (["missing.bin"], ["missing.bin"])):
        rc, out, err = run(["convert"] + args + ["-o", "out.bf"], expect=2)
        for w in words:
            check(w in err, "convert %s: %r not in %s" % (args, w, err))
        check(not os.path.exists("out.bf"), "convert %s wrote out.bf" % args)
    data = read(PARQUET)
    write("cut.parquet", data[:-1])
    rc, out, err = run(["convert", "cut.parquet", "-c", "url"], expect=2)
    check("cut.parquet" in err and "no PAR1 magic at the end" in err, err)
    rc, out, err = run(["convert", "--help"], expect=0)
    check(out.startswith(b"Usage: bloomkit convert"), out[:40])


GROUPS = {"bip37": test_bip37, "bip37_errors": test_bip37_errors, "parquet": test_parquet,
          "parquet_errors": test_parquet_errors, "parquet_export": test_parquet_export, "convert": test_convert}


def main():
    global BIN
    BIN = os.path.abspath(sys.argv[1])
    names = list(GROUPS) if sys.argv[2] == "all" else [sys.argv[2]]
    with tempfile.TemporaryDirectory() as d:
        os.chdir(d)
        for name in names:
            try:
                GROUPS[name]()
            except Failure as e:
                print("FAIL %s: %s" % (name, e))
                return 1
            print("ok %s" % name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
