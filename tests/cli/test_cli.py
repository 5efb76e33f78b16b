#!/usr/bin/python3
"""Tests of the bloomkit command: the BUILT binary run on real files in a temporary directory.

Usage: test_cli.py BLOOMKIT GROUP   (CTest runs one GROUP per test; GROUP "all" runs every group)

Every key set is generated deterministically (fixed formulas and seeds), so FPR measurements are
reproducible; the tolerances are stated where they are asserted.
"""
import json
import math
import os
import pty
import random
import resource
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

BIN = None
GROUPS = {}


def group(fn):
    GROUPS[fn.__name__.replace("test_", "", 1)] = fn
    return fn


class Failure(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Failure(msg)


def run(args, input=None, stdin=None, expect=None, env=None):
    """Runs bloomkit with args (bytes or str items); returns (rc, stdout bytes, stderr str)."""
    p = subprocess.run([BIN] + [a if isinstance(a, bytes) else str(a) for a in args], input=input,
                       stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=600)
    err = p.stderr.decode("utf-8", "replace")
    if expect is not None and p.returncode != expect:
        raise Failure("bloomkit %s: exit %d, expected %d\nstderr: %s" % (
            " ".join(a if isinstance(a, str) else repr(a) for a in args), p.returncode, expect, err))
    return p.returncode, p.stdout, err


def write(path, data):
    with open(path, "wb") as f:
        f.write(data)


def read(path):
    with open(path, "rb") as f:
        return f.read()


def urls(n, host="www.example-crawl.test", start=0):
    """n distinct made-up URLs, as a list of bytes."""
    return [("https://%s/a/%d/p%d.html" % (host, i, (i * 7919) % 100003)).encode() for i in range(start, start + n)]


def lines(keys):
    return b"".join(k + b"\n" for k in keys)


def info(path):
    rc, out, err = run(["info", path, "--json"], expect=0)
    return json.loads(out)


# Types built once from their whole key set (bloomkit build only).
STATIC_TYPES = ("fuse", "ribbon")


def addable_types():
    """Types the build knows, from calc --json, minus the static ones."""
    rc, out, err = run(["calc", "-n", "1000", "-p", "0.01", "--json"], expect=0)
    return [t["type"] for t in json.loads(out)["types"] if t["type"] not in STATIC_TYPES]


def all_types():
    rc, out, err = run(["calc", "-n", "1000", "-p", "0.01", "--json"], expect=0)
    return [t["type"] for t in json.loads(out)["types"]]


def buildable_types():
    """Types bloomkit build makes (an aging filter is created empty and fed as a stream)."""
    return [t for t in all_types() if t != "aging"]


# ---------------------------------------------------------------------------------------------
@group
def test_help():
    rc, out, err = run(["--help"], expect=0)
    for cmd in ("calc", "create", "build", "add", "query", "filter", "remove", "info", "merge", "verify"):
        check(b"  " + cmd.encode() in out, "overview lists " + cmd)
        rc, out2, err = run([cmd, "--help"], expect=0)
        check(out2.startswith(("Usage: bloomkit " + cmd).encode()), cmd + " --help starts with its usage")
        rc, out3, err = run(["help", cmd], expect=0)
        check(out3 == out2, "help %s equals %s --help" % (cmd, cmd))
        rc, out4, err = run([cmd, "-h"], expect=0)
        check(out4 == out2, cmd + " -h")
    check(b"--null" in out and b"carriage return" in out, "overview documents the key rules")
    rc, out, err = run(["--version"], expect=0)
    check(out.startswith(b"bloomkit ") and b"format" in out, "--version: " + out.decode())
    rc, out, err = run([], expect=2)
    check("Usage" in err, "no arguments: usage on stderr")
    rc, out, err = run(["frobnicate"], expect=2)
    check("unknown command 'frobnicate'" in err and "did you mean" not in err, err)
    # a mistyped command: the nearest one is suggested (a transposition, a missing or an extra letter)
    for typo, meant in (("biuld", "build"), ("creat", "create"), ("qurey", "query"), ("infoo", "info"),
                        ("verfiy", "verify")):
        rc, out, err = run([typo], expect=2)
        check("unknown command '%s'; did you mean %s?" % (typo, meant) in err, err)
        rc, out, err = run(["help", typo], expect=2)
        check("did you mean %s?" % meant in err, err)
    rc, out, err = run(["help", "frobnicate"], expect=2)


@group
def test_args():
    def n_of(arg):
        # one cheap type: sizing every type for 10^18 keys would allocate address space for nothing
        rc, out, err = run(["calc", "-n", arg, "-p", "0.01", "--json", "--type", "partitioned"])
        check(rc == 0 or "cannot size" in err, "-n %s: %s" % (arg, err))
        return json.loads(out)["n"]

    def p_of(arg):
        rc, out, err = run(["calc", "-n", "1000", "-p", arg, "--json", "--type", "bloom"], expect=0)
        return json.loads(out)["p"]

    for arg, want in [("1000000", 10**6), ("1,000,000", 10**6), ("1_000_000", 10**6), ("10M", 10**7),
                      ("10m", 10**7), ("1e7", 10**7), ("1E7", 10**7), ("2.5k", 2500), ("1.5M", 1500000),
                      ("1G", 10**9), ("1Ki", 1024), ("1Mi", 1 << 20), ("1.5Ki", 1536), ("0.5k", 500),
                      ("12", 12), ("007", 7), ("1e0", 1), ("1000000000000000000", 10**18)]:
        check(n_of(arg) == want, "-n %s gave %r, want %d" % (arg, n_of(arg), want))
    rc, out, err = run(["calc", "-n", "18446744073709551615", "-p", "0.01", "--type", "bloom"], expect=2)
    check("too large" in out.decode() + err and "-n:" not in err, "2^64-1 parses, then is too large to size")
    for arg in ["10MB", "", "-5", "0", "1.5", "1,00", "1,0000", "10,00,000", "1__000", "abc", "1e", "1e7x", "0x10",
                "1e30", "18446744073709551616", " 10", "10 ", "1.2.3", "k", "1,000_000"]:
        rc, out, err = run(["calc", "-n", arg, "-p", "0.01"], expect=2)
        check(err.startswith("bloomkit calc: -n: '%s'" % arg), "bad -n %r: %s" % (arg, err))
    for arg, want in [("0.01", 0.01), ("1%", 0.01), ("0.5%", 0.005), ("1e-3", 0.001), ("1/1000", 0.001),
                      (".2", 0.2), ("99.9%", 0.999), ("1e-9", 1e-9)]:
        got = p_of(arg)
        check(abs(got - want) <= 1e-15 * want, "-p %s gave %r, want %r" % (arg, got, want))
    for arg, frag in [("1", "for one percent write 1%"), ("0", "greater than 0"), ("100%", "less than 1"),
                      ("150%", "less than 1"), ("-0.1", "greater than 0"), ("abc", "not a probability"),
                      ("1/0", "not a probability"), ("nan", "not a probability"), ("inf", "not a probability"),
                      ("0x1p-3", "not a probability"), ("", "not a probability"), ("1%%", "not a probability"),
                      ("1e-400", "greater than 0")]:
        rc, out, err = run(["calc", "-n", "1000", "-p", arg], expect=2)
        check(err.startswith("bloomkit calc: -p: '%s'" % arg) and frag in err, "bad -p %r: %s" % (arg, err))
    # option syntax: --name=value, grouped and attached short options, -- ends options
    rc, out, err = run(["calc", "--keys=2k", "--fpr=1%", "--json"], expect=0)
    check(json.loads(out)["n"] == 2000, "--keys=2k")
    rc, out, err = run(["calc", "-n2k", "-p1%", "--json"], expect=0)
    check(json.loads(out)["n"] == 2000, "-n2k")
    rc, out, err = run(["calc", "-n", "1k", "-p", "1%", "--bogus"], expect=2)
    check("unknown option --bogus" in err and "calc --help" in err, err)
    rc, out, err = run(["calc", "-n", "1k", "-p", "1%", "-Z"], expect=2)
    check("unknown option -Z" in err, err)
    rc, out, err = run(["calc", "-n"], expect=2)
    check("needs a value" in err, err)
    rc, out, err = run(["calc", "-n", "1k"], expect=2)
    check("needs -n N and -p P" in err, err)
    rc, out, err = run(["calc", "-n", "1k", "-p", "1%", "--json=yes"], expect=2)
    check("takes no value" in err, err)
    rc, out, err = run(["calc", "-n", "1k", "-p", "1%", "--type", "nosuch"], expect=2)
    check("unknown filter type 'nosuch'" in err and "bloom" in err, err)
    rc, out, err = run(["create", "x.bf", "-n", "1k", "-p", "1%", "--growth", "2"], expect=2)
    check("--growth does not apply to bloom" in err, err)
    check(not os.path.exists("x.bf"), "nothing created on a bad option")
    rc, out, err = run(["create", "x.bf", "-n", "1k", "-p", "1%", "--seed", "12x"], expect=2)
    check("--seed" in err, err)
    rc, out, err = run(["create", "x.bf", "-n", "1k", "-p", "1%", "--seed", "0xDEADbeef", "-q"], expect=0)
    check(info("x.bf")["seed"] == 0xDEADBEEF, "hex seed")
    # "--" lets a key start with '-'
    run(["add", "x.bf", "--", "-dash", "--double"], expect=0)
    rc, out, err = run(["query", "x.bf", "--", "-dash", "--double"], expect=0)
    check(out == b"-dash\tpresent\n--double\tpresent\n", out)


@group
def test_calc():
    rc, out, err = run(["calc", "-n", "1M", "-p", "1%", "--json"], expect=0)
    j = json.loads(out)
    check(j["n"] == 10**6 and j["p"] == 0.01, "calc echoes n and p")
    names = [t["type"] for t in j["types"]]
    check("bloom" in names and "partitioned" in names, names)
    b = [t for t in j["types"] if t["type"] == "bloom"][0]
    # the classic formula: m = ceil(-n ln p / ln(2)^2) = 9,585,059 bits, k = 7, exact FPR 1.0039%
    check(b["bits"] == 9585059 and b["k"] == 7, b)
    check(abs(b["fpr"] - 0.010039) < 2e-6, b)
    check(b["bytes"] == (9585059 + 511) // 512 * 64, b)
    for t in j["types"]:
        if "error" in t:
            continue
        check(t["fpr"] <= 0.0105 or t["type"] == "fuse", "%s: real FPR %g near the 1%% target" % (t["type"], t["fpr"]))
        check(t["bits_per_key"] > 0 and t["bytes"] > 0, t)
    rc, out, err = run(["calc", "-n", "1M", "-p", "1%"], expect=0)
    for name in names:
        check(("\n" + name + " ").encode() in out, "text table lists " + name)
    rc, out, err = run(["calc", "-n", "1T", "-p", "1e-12", "--type", "bloom"], expect=2)
    check("too large" in out.decode() + err, err)


@group
def test_create():
    run(["create", "c.bf", "-n", "10k", "-p", "0.1%", "-q"], expect=0)
    i = info("c.bf")
    check(i["type"] == "bloom" and i["capacity"] == 10000 and i["count"] == 0 and i["fpr_target"] == 0.001, i)
    before = read("c.bf")
    rc, out, err = run(["create", "c.bf", "-n", "20k", "-p", "1%"], expect=2)
    check("c.bf: already exists" in err and "--force" in err, err)
    check(read("c.bf") == before, "a refused create leaves the file as it was")
    rc, out, err = run(["create", "c.bf", "-n", "20k", "-p", "1%", "--force"], expect=0)
    check("created c.bf" in err, "summary on stderr: " + err)
    check(info("c.bf")["capacity"] == 20000, "--force replaced it")
    rc, out, err = run(["create", "-q", "--type=partitioned", "p.bf", "-n", "5k", "-p", "1%"], expect=0)
    check(err == "", "-q: nothing on stderr")
    check(info("p.bf")["type"] == "partitioned", "partitioned type is kept in the file")
    for st in STATIC_TYPES:
        if st not in all_types():
            continue
        rc, out, err = run(["create", "f.bf", "-n", "10", "-p", "1%", "--type", st], expect=2)
        check("bloomkit build" in err, err)
        run(["build", "-q", "f.bf", "--type", st], input=b"a\nb\n", expect=0)
        before = read("f.bf")
        rc, out, err = run(["add", "f.bf", "c"], expect=2)
        check("%s filters cannot take new keys" % st in err and "build" in err, err)
        check(read("f.bf") == before, "a refused add changes nothing")
        rc, out, err = run(["merge", "g.bf", "f.bf", "f.bf"], expect=2)
        check("%s filters cannot be merged" % st in err, err)
        rc, out, err = run(["remove", "f.bf", "a"], expect=2)
        check("%s filters cannot remove keys" % st in err, err)
    # scalable: --growth 1 grows by same-size sub-filters, --nonscaling never grows
    run(["create", "-q", "g1.bf", "-n", "100", "-p", "1%", "--type", "scalable", "--growth", "1"], expect=0)
    run(["add", "-q", "g1.bf"], input=b"".join(b"k%d\n" % i for i in range(300)), expect=0)
    check(info("g1.bf")["subfilters"] == 3, info("g1.bf"))
    run(["create", "-q", "ns.bf", "-n", "100", "-p", "1%", "--type", "scalable", "--nonscaling"], expect=0)
    rc, out, err = run(["add", "-q", "ns.bf"], input=b"".join(b"k%d\n" % i for i in range(300)), expect=2)
    check("full" in err, err)
    rc, out, err = run(["create", "x.bf", "-n", "10", "-p", "1%", "--nonscaling"], expect=2)
    check("--nonscaling does not apply to bloom" in err, err)
    # scalable sub-filters: blocked by default, classic with --classic-layers; both hold every key, the
    # two kinds never merge
    keys = b"".join(b"s%d\n" % i for i in range(5000))
    for name, extra in (("sb.bf", []), ("sc.bf", ["--classic-layers"])):
        run(["create", "-q", name, "-n", "1000", "-p", "1%", "--type", "scalable"] + extra, expect=0)
        run(["add", "-q", name], input=keys, expect=0)
        rc, out, err = run(["query", "-q", name], input=keys, expect=0)
        j = info(name)
        check(j["subfilter_kind"] == ("classic" if extra else "blocked"), j)
        check(j["subfilters"] == 3 and j["count"] >= 4950, j)
        rc, out, err = run(["info", name], expect=0)
        check((b"classic" if extra else b"blocked") in out, out)
    check(info("sc.bf")["memory_bytes"] < info("sb.bf")["memory_bytes"], "classic sub-filters are smaller")
    rc, out, err = run(["merge", "m.bf", "sb.bf", "sc.bf"], expect=2)
    check("different sub-filter kinds" in err, err)
    # a compact chain (as the Redis module's BF keys are, exported with BK.EXPORT): a small classic first
    # sub-filter before blocked ones, shown as such; it never merges with a chain of the other schedule
    golden = os.path.join(TOP, "tests", "golden")
    shutil.copy(os.path.join(golden, "scalable-compact-v1.0.bkf"), "compact.bf")
    shutil.copy(os.path.join(golden, "scalable-blocked-v1.0.bkf"), "plain.bf")
    j = info("compact.bf")
    check(j["compact"] is True and j["first_subfilter_kind"] == "classic" and j["subfilter_kind"] == "blocked", j)
    check("compact" not in info("plain.bf"), info("plain.bf"))
    rc, out, err = run(["info", "compact.bf"], expect=0)
    check(b"blocked, the first classic" in out, out)
    rc, out, err = run(["merge", "m.bf", "compact.bf", "plain.bf"], expect=2)
    check("different error schedules" in err and not os.path.exists("m.bf"), err)
    rc, out, err = run(["create", "x.bf", "-n", "10", "-p", "1%", "--classic-layers"], expect=2)
    check("--classic-layers does not apply to bloom" in err, err)
    rc, out, err = run(["create", "-n", "10", "-p", "1%"], expect=2)
    check("needs a FILE" in err, err)
    rc, out, err = run(["create", "nodir/x.bf", "-n", "10", "-p", "1%"], expect=2)
    check("nodir/x.bf" in err, err)
    leftovers = [f for f in os.listdir(".") if f.startswith(".")]
    check(not leftovers, "no temporary files left: %r" % leftovers)


@group
def test_build_query():
    keys = urls(50000)
    dup = keys + keys[::2]                       # 75,000 lines, 50,000 distinct
    random.Random(7).shuffle(dup)
    write("keys.txt", lines(dup))
    rc, out, err = run(["build", "b.bf", "keys.txt", "-p", "1%"], expect=0)
    check("built b.bf" in err and "75,000 keys" in err, "summary: " + err)
    i = info("b.bf")
    # sized for the distinct count (HyperLogLog, 0.41% standard error, +1.2% margin)
    check(50000 <= i["capacity"] <= 50000 * 1.03, "capacity %d for 50,000 distinct keys" % i["capacity"])
    # duplicates are not counted again: the count is the sketch's estimate of distinct keys, whose
    # noise is a few tenths of a percent either way, and never above the capacity sized from it
    check(49000 <= i["count"] <= 50500, "count %d: distinct keys added" % i["count"])
    check(i["count"] <= i["capacity"], i)
    check(abs(i["est_cardinality"] - 50000) < 1500, i)
    check(not i["saturated"], "a built filter is not saturated")
    # all-distinct inputs: the capacity is capped at the keys read, and the recorded count must not
    # pass it from estimation noise (a fill-based count did, for about half of these inputs)
    for t in ("bloom", "blocked"):
        for s in range(4):
            write("d.txt", lines(urls(20000, host="d%d.example.test" % s)))
            run(["build", "d.bf", "d.txt", "--type", t, "-q"], expect=0)
            j = info("d.bf")
            check(j["capacity"] == 20000 and j["count"] <= 20000 and not j["saturated"],
                  "%s, distinct input %d: %r" % (t, s, j))
    rc, out, err = run(["query", "b.bf"], input=lines(keys), expect=0)
    check(out == b"".join(k + b"\tpresent\n" for k in keys), "every built key present, in input order")
    rc, out, err = run(["query", "b.bf", keys[0], "definitely-not-a-key-0", keys[1]])
    check(rc == 1, "exit 1 when a key is absent (or a 1%% false positive: fixed key, checked) rc=%d" % rc)
    check(out.split(b"\n")[1] == b"definitely-not-a-key-0\tabsent", out)
    rc, out, err = run(["query", "-q", "b.bf"], input=lines(keys), expect=0)
    check(out == b"", "query -q prints nothing")
    rc, out, err = run(["query", "b.bf", "--null"], input=b"".join(k + b"\0" for k in keys[:3]), expect=0)
    check(out == b"".join(k + b"\tpresent\0" for k in keys[:3]), "query --null: NUL-terminated records")
    # the same keys from stdin, from "-" and split over two files give the same file
    run(["build", "-q", "s.bf"], input=lines(dup), expect=0)
    write("k1.txt", lines(dup[:30000]))
    write("k2.txt", lines(dup[30000:]))
    run(["build", "-q", "two.bf", "k1.txt", "-", "k2.txt"], input=b"", expect=0)
    check(read("s.bf") == read("b.bf") == read("two.bf"), "stdin, one file and two files build identical files")
    # -n overrides the estimate
    run(["build", "-q", "n.bf", "keys.txt", "-n", "200k"], expect=0)
    check(info("n.bf")["capacity"] == 200000, "-n sets the capacity")
    # every type that exists: build then query, every key present
    for t in buildable_types():
        run(["build", "-q", "t-%s.bf" % t, "keys.txt", "--type", t, "-p", "1%"], expect=0)
        rc, out, err = run(["query", "-q", "t-%s.bf" % t], input=lines(keys), expect=0)
        check(info("t-%s.bf" % t)["type"] == t, "type " + t)
    # the distinct-count sketch at small and medium sizes, each key given three times
    for n in (1, 2, 10, 1000, 20000):
        ks = urls(n, host="hll%d.test" % n)
        run(["build", "-q", "h.bf"], input=lines(ks * 3), expect=0)
        cap = info("h.bf")["capacity"]
        check(n <= cap <= n * 1.03 + 1, "%d distinct keys (x3): capacity %d" % (n, cap))
    # empty input: a valid, empty filter
    run(["build", "-q", "empty.bf"], input=b"", expect=0)
    check(info("empty.bf")["count"] == 0, "empty build")
    # more keys than the in-memory spool holds (1,048,576): the temporary spool file is used
    big = urls(1200000, host="big.test")
    run(["build", "-q", "big.bf", "-p", "1%"], input=lines(big), expect=0)
    rc, out, err = run(["query", "-q", "big.bf"], input=lines(big), expect=0)
    i = info("big.bf")
    check(1200000 <= i["capacity"] <= 1200000 * 1.03, i)
    leftovers = [f for f in os.listdir(".") if f.startswith(".")]
    check(not leftovers, "no temporary files left: %r" % leftovers)


class Mix:
    """A shuffled mix of inserted and absent keys, as filter input (built once, used per filter)."""

    def __init__(self, inserted, absent, seed):
        mix = inserted + absent
        random.Random(seed).shuffle(mix)
        self.data = lines(mix)
        self.inserted, self.absent = set(inserted), absent

    def measure(self, path):
        """filter --absent: (inserted lines kept, fraction of absent lines dropped)."""
        rc, out, err = run(["filter", path], input=self.data, expect=0)
        check(out.endswith(b"\n") or out == b"", "output ends with a newline")
        kept = out.split(b"\n")[:-1]
        wrong = sum(1 for k in kept if k in self.inserted)
        dropped = len(self.absent) - (len(kept) - wrong)
        return wrong, dropped / len(self.absent)


@group
def test_fpr():
    inserted = urls(100000)
    absent = urls(500000, host="never-seen.test")
    write("in.txt", lines(inserted))
    mix = Mix(inserted, absent, seed=11)
    for p in (0.01, 0.001):
        for t in ("bloom", "partitioned", "blocked", "counting"):
            if t not in all_types():
                continue
            f = "%s-%g.bf" % (t, p)
            run(["build", "-q", f, "in.txt", "-p", repr(p), "--type", t], expect=0)
            wrong, rate = mix.measure(f)
            check(wrong == 0, "%s p=%g: %d inserted lines passed filter --absent" % (t, p, wrong))
            # +-20% of the configured p: the sizing gives an exact FPR within 1% of p, and the binomial
            # noise at these counts is under 5% (p = 0.1%: 500 expected events, sd 22)
            check(abs(rate - p) <= 0.2 * p, "%s p=%g: %.5f of absent lines wrongly dropped" % (t, p, rate))
            print("  %-12s p=%-6g measured FPR %.5f" % (t, p, rate))
    # --present keeps exactly the inserted ones plus the false positives
    rc, out, err = run(["filter", "--present", "bloom-0.01.bf"], input=lines(inserted + absent[:20000]), expect=0)
    kept = out.split(b"\n")[:-1]
    check(kept[:100000] == inserted, "--present keeps every inserted line, in order")
    check(len(kept) - 100000 < 20000 * 0.02, "--present false positives")
    # the types whose FPR is not set by -p alone: measured against their own expected rate
    for t in buildable_types():
        if t in ("bloom", "partitioned", "blocked", "counting"):
            continue
        f = "%s.bf" % t
        run(["build", "-q", f, "in.txt", "-p", "1%", "--type", t], expect=0)
        wrong, rate = mix.measure(f)
        check(wrong == 0, "%s: %d inserted lines passed filter --absent" % (t, wrong))
        check(rate <= 0.012, "%s: FPR %.5f at most the 1%% target (+20%%)" % (t, rate))
        print("  %-12s p=1%%    measured FPR %.5f" % (t, rate))


@group
def test_keys():
    run(["create", "-q", "k.bf", "-n", "10k", "-p", "0.01%"], expect=0)
    long_key = random.Random(3).randbytes(1 << 20).replace(b"\n", b"x")
    data = (b"crlf\r\n" + b"plain\n" + b"\n" + b"nul\0inside\n" + b"tab\tkey\n" + long_key + b"\n" +
            b"\xff\xfe invalid utf8\n" + b"two\r\r\n" + b"no-final-newline")
    run(["add", "k.bf"], input=data, expect=0)
    q = lambda *ks: run(["query", "k.bf", "--"] + list(ks))
    # the documented rules: one trailing \r stripped, empty line = empty key, NUL and tab are key bytes,
    # 1 MiB keys work, the last line needs no newline
    rc, out, err = run(["query", "k.bf"], input=b"crlf\nplain\n\nnul\0inside\ntab\tkey\n" + long_key +
                        b"\n\xff\xfe invalid utf8\ntwo\r\r\nno-final-newline\n", expect=0)
    check(out.count(b"\tpresent\n") == 9, out[:300])
    rc, out, err = run(["query", "k.bf"], input=b"nul\nnul\0\ntwo\n" + long_key[:-1] + b"\n", expect=1)
    check(out.count(b"\tabsent\n") == 4, "prefixes and the doubly-stripped \\r are other keys: %r" % out[:200])
    rc, out, err = q("")
    check(rc == 0, "the empty key (an empty line) was added")
    rc, out, err = run(["query", "k.bf", "--keep-cr"], input=b"crlf\r\n", expect=1)
    check(out == b"crlf\r\tabsent\n", "--keep-cr: crlf\\r is another key")
    # --null: keys may hold newlines; nothing is stripped
    run(["add", "k.bf", "--null"], input=b"multi\nline\0cr\r\0last-unterminated", expect=0)
    rc, out, err = q("multi\nline", "cr\r", "last-unterminated")
    check(rc == 0, "--null keys: %r" % out)
    rc, out, err = q("multi", "cr")
    check(rc == 1, "--null keys are not split at newlines nor stripped")
    # keys never continue from one input file into the next
    write("f1", b"alpha")
    write("f2", b"beta\n")
    run(["build", "-q", "j.bf", "f1", "f2"], expect=0)
    rc, out, err = run(["query", "j.bf", "alpha", "beta"], expect=0)
    rc, out, err = run(["query", "j.bf", "alphabeta"], expect=1)
    # filter copies lines exactly (CRLF kept), and ends an unterminated last line with a newline
    rc, out, err = run(["filter", "--present", "k.bf"], input=b"crlf\r\nzzz-absent\nno-final-newline", expect=0)
    check(out == b"crlf\r\nno-final-newline\n", "filter output: %r" % out)
    rc, out, err = run(["filter", "--null", "--present", "k.bf"], input=b"cr\r\0nope\0last-unterminated", expect=0)
    check(out == b"cr\r\0last-unterminated\0", "filter --null output: %r" % out)
    # a 1 MiB key through filter and build as well
    rc, out, err = run(["filter", "--present", "k.bf"], input=long_key + b"\n", expect=0)
    check(out == long_key + b"\n", "1 MiB line through filter")
    run(["build", "-q", "long.bf"], input=long_key * 3 + b"\n" + long_key, expect=0)
    rc, out, err = run(["query", "-q", "long.bf"], input=long_key + b"\n" + long_key * 3, expect=0)


@group
def test_keys_readahead():
    """The same rules through the read-ahead thread (used by default for inputs of 16 MiB or more),
    with keys longer than its 2 MiB blocks, and many keys spanning block boundaries."""
    os.environ["BLOOMKIT_READAHEAD"] = "1"
    try:
        test_keys()
        huge = random.Random(5).randbytes(3 << 20).replace(b"\n", b"y")
        keys = urls(300000, host="ra.test")
        write("ra.txt", lines(keys[:100000]) + huge + b"\n" + lines(keys[100000:]) + b"tail-unterminated")
        run(["build", "-q", "ra.bf", "ra.txt", "-p", "0.1%"], expect=0)
        os.environ["BLOOMKIT_READAHEAD"] = "0"
        run(["build", "-q", "plain.bf", "ra.txt", "-p", "0.1%"], expect=0)
        check(read("ra.bf") == read("plain.bf"), "read-ahead and plain reading build the same filter")
        rc, out, err = run(["query", "-q", "ra.bf"], input=huge + b"\ntail-unterminated\n", expect=0)
        os.environ["BLOOMKIT_READAHEAD"] = "1"
        rc, out, err = run(["filter", "--present", "ra.bf", "ra.txt"], expect=0)
        check(out == read("ra.txt") + b"\n", "filter --present through read-ahead copies every line")
    finally:
        del os.environ["BLOOMKIT_READAHEAD"]


@group
def test_build_threads():
    """build fills blocked filters (and, when BLOOMKIT_THREADS asks for threads, classic ones) on
    several threads, each setting the bits of its own part of the filter, and keeps its hash spool in memory up to a bound, then in a temporary file:
    every thread count and every spool placement must give the very same file (the fill and the
    partition order are deterministic), and no key may go missing."""
    # 1.1 million short keys, some repeated: more than one 4096-hash chunk in every spool partition
    keys = [b"k%d" % (i * 7) for i in range(1100000)]
    write("keys.txt", lines(keys) + lines(keys[::97]))
    write("few.txt", lines(keys[:50]))

    def build(out, src, opts, **env):
        run(["build", "-q", out, src] + opts, expect=0, env=dict(os.environ, **env))
        return read(out)

    for t in ["bloom", "partitioned", "blocked", "blocked --block-bits 256"]:
        opts = ["--type"] + t.split() + ["-p", "1%"]
        ref = build("ref.bf", "keys.txt", opts, BLOOMKIT_THREADS="1")
        for n in ["2", "3"]:
            check(build("t.bf", "keys.txt", opts, BLOOMKIT_THREADS=n) == ref,
                  "%s: %s fill threads build the same file as one" % (t, n))
        check(build("t.bf", "keys.txt", opts, BLOOMKIT_THREADS="2", BLOOMKIT_SPOOL_MEM="0") == ref,
              "%s: a spool in the temporary file builds the same file" % t)
        with open("keys.txt", "rb") as f:
            rc, out, err = run(["query", "-q", "t.bf"], stdin=f)
        check(rc == 0, "%s: every key present after a threaded fill (exit %d)" % (t, rc))
        # a filter of a few lines, cut into more parts than it has (or some parts with none)
        small = build("s1.bf", "few.txt", opts, BLOOMKIT_THREADS="1")
        check(build("s8.bf", "few.txt", opts, BLOOMKIT_THREADS="8") == small, "%s: 8 threads, 50 keys" % t)
    # pass 1 on several threads, each reading whole 1 MiB blocks: keys across block boundaries, keys
    # longer than the 4 KiB read before a block (and than a block), a key ending on a block's last
    # byte, CRLF, empty lines, an unterminated last key, several inputs, a positioned standard input
    rng = random.Random(11)
    parts = []
    for i in range(60000):
        c = rng.random()
        if c < 0.002:
            parts.append(b"L%d" % i + b"x" * rng.choice([4093, 4096, 4100, 9000, 70000, (1 << 20) + 5]) + b"\n")
        elif c < 0.02:
            parts.append(b"crlf%d\r\n" % i if c < 0.01 else b"\n")
        else:
            parts.append(b"https://blocks.test/%d/%d\n" % (i, rng.randrange(10 ** 9)))
    data = b"".join(parts)
    write("p1.txt", data + b"unterminated\r")
    write("p2.txt", b"q" * ((1 << 20) - 1) + b"\n" + b"z" * (1 << 20))  # a key ends on a block's last byte
    write("p3.txt", b"")
    write("p4.txt", data[: len(data) // 2] + b"no-newline")
    # (the workers sink their blocks into the spool as they finish them for every type but fuse,
    # which keeps input order: either way the file must be the one plain reading builds)
    for inputs in (["p1.txt"], ["p2.txt"], ["p4.txt", "p3.txt", "p2.txt", "p1.txt"]):
        for t in ["bloom", "scalable", "cuckoo", "fuse"]:
            args = inputs[1:] + ["--type", t]
            ref = build("ref.bf", inputs[0], args, BLOOMKIT_READAHEAD="0")
            for n in ["1", "2", "3"]:
                check(build("t.bf", inputs[0], args, BLOOMKIT_READAHEAD="1", BLOOMKIT_THREADS=n) == ref,
                      "%s %s: pass 1 on %s worker threads builds what plain reading does"
                      % (t, " ".join(inputs), n))
    # a failure in the middle of the threaded pass 1 (the spool's temporary file may not grow past
    # 1 MiB: RLIMIT_FSIZE, SIGXFSZ ignored) stops every worker: exit 2, the error named, and the
    # filter that was there is left as it was
    write("t.bf", read("ref.bf"))

    def small_files():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))

    for n in ["1", "2", "3"]:
        p = subprocess.run([BIN, "build", "-q", "t.bf", "keys.txt"], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, preexec_fn=small_files, timeout=600,
                           env=dict(os.environ, BLOOMKIT_READAHEAD="1", BLOOMKIT_THREADS=n, BLOOMKIT_SPOOL_MEM="0"))
        err = p.stderr.decode("utf-8", "replace")
        check(p.returncode == 2 and "temporary spool file" in err,
              "%s workers, the spool cannot grow: exit %d, %r" % (n, p.returncode, err))
        check(read("t.bf") == read("ref.bf"), "%s workers, failed build: the old filter is untouched" % n)
    with open("p1.txt", "rb") as f:
        f.seek(12345)
        run(["build", "-q", "ref.bf"], stdin=f, expect=0, env=dict(os.environ, BLOOMKIT_READAHEAD="0"))
        f.seek(12345)
        run(["build", "-q", "t.bf"], stdin=f, expect=0, env=dict(os.environ, BLOOMKIT_READAHEAD="1",
                                                                   BLOOMKIT_THREADS="2"))
    check(read("t.bf") == read("ref.bf"), "standard input from its current position, on two threads")
    # every type: the spool in memory, in the file, or both, gives the same hashes in the same order
    for t in buildable_types():
        ref = build("ref.bf", "keys.txt", ["--type", t], BLOOMKIT_SPOOL_MEM="0")
        check(build("m.bf", "keys.txt", ["--type", t]) == ref, "%s: spool in memory = in the file" % t)
        check(build("x.bf", "keys.txt", ["--type", t], BLOOMKIT_SPOOL_MEM="100") == ref,
              "%s: spool partly in memory = in the file" % t)


# The files build made for a fixed input before its reading, counting and filling were reworked for
# speed (x86-64; XXH3 and the sizing arithmetic are the same everywhere, but the digests were
# recorded there): any later change of the build path must keep making exactly these files.
BUILD_DIGESTS = [
    ("bloom", [], "f26c39144a64cd2641c5b2638f4b041b65413676353628daa7eaf3f7e018ccc8"),
    ("bloom", ["-p", "0.1%", "--seed", "7"], "ac2f7f123477826cb28aac259b7e47d93ead447fbbe3a4baf3a8198d5ab3d986"),
    ("bloom", ["-n", "500000"], "1b5c23d684ef25ced9a33da545b50c09b863f4e23cfca396d3e161f3b27ac0eb"),
    ("partitioned", [], "6c79cd62ada2baeecdf1cb8b87590aa50539f618232edbd5edc5405d8656ac93"),
    ("partitioned", ["-n", "300000"], "640b95a0b4eca6e49e1a56af5585c06bc98d5354f32948a6a2504741261d1fae"),
    ("blocked", [], "2d59a9fc4657198cf25e99054e93c277086240c170c0dd2a6943da40300a8a4a"),
    ("blocked", ["--block-bits", "256", "-p", "0.5%"], "f5f78a92dbec6e507e12571553973319d63d7134e6cc27b2ca108977de41b00d"),
    ("blocked", ["-n", "500000", "--seed", "7"], "7832432080e8cb0d8827a6e83c4da9f262d6b6b5862020e2a441d5b501fc88b5"),
    ("blocked", ["--block-bits", "256", "-n", "250000"], "565ce081cb64714260645173b1016afc60373c9e70b9fad6c7cdf97a27cece3f"),
    ("counting", [], "d5b875f25668e71a16100474d48aa0db657dd397f2c9e24d07a9b5ecb416b23d"),
    ("cuckoo", [], "8e9ffb1808d45473862ad359da40205a1871de7e3b93cce8f192ce4403c225e4"),
    ("scalable", [], "2be77df10f2055ba55b4d8103ffe1989d8cbc202fe6ba0dfab179246378e7453"),
    ("fuse", [], "8e9ca0fc157179ac5856ec9c4182f48b4c72da6c619f4d4fc51e8332c08dd215"),
    # the Ribbon filter as new builds make it: body 3, the bumped Ribbon of width 64 (docs/FORMAT.md 6.9)
    ("ribbon", [], "c66d41225455c05c0418b3459177ec2499ff2c97245768d76456ca37627584a3"),
]


@group
def test_build_same_file():
    """build makes the same file for the same input and options whatever its reading and filling
    paths (threads, spool in memory or in its file, SIMD path; with -n, a bit-setting type filled as
    it reads, with no spool), and the very file it made before
    those paths were reworked: 240,000 keys (11 MiB, so several 1 MiB read blocks) of URLs, repeats,
    CRLF lines and a few keys longer than the 4 KiB read before a block."""
    import platform
    rng = random.Random(20261205)
    out = []
    for i in range(240000):
        c = rng.random()
        if c < 0.1 and out:
            out.append(out[rng.randrange(len(out))])  # a repeated key
        elif c < 0.12:
            out.append(b"crlf-%d\r" % i)
        elif c < 0.1205:
            out.append(b"long-%d-" % i + b"y" * rng.randrange(5000, 9000))
        else:
            out.append(b"https://host%d.example.net/p/%d/%06x" % (rng.randrange(100000), i, rng.randrange(1 << 24)))
    write("keys.txt", lines(out))
    golden = platform.machine() in ("x86_64", "AMD64")
    for t, opts, digest in BUILD_DIGESTS:
        got = set()
        for env in ({"BLOOMKIT_THREADS": "1"}, {"BLOOMKIT_THREADS": "2"}, {"BLOOMKIT_THREADS": "3"},
                    {"BLOOMKIT_THREADS": "2", "BLOOMKIT_SPOOL_MEM": "0"}, {"BLOOMKIT_READAHEAD": "0"},
                    {"BLOOMKIT_THREADS": "2", "BK_SIMD": "scalar"}):
            run(["build", "-q", "o.bf", "keys.txt", "--type", t] + opts, expect=0, env=dict(os.environ, **env))
            got.add(sha("o.bf"))
        # standard input (a pipe: read on one thread, batch by batch)
        with open("keys.txt", "rb") as f:
            run(["build", "-q", "o.bf", "--type", t] + opts, stdin=f, expect=0)
        got.add(sha("o.bf"))
        check(len(got) == 1, "%s %s: every reading and filling path makes the same file" % (t, " ".join(opts)))
        if golden:
            check(got == {digest}, "%s %s: the file build made before (%s), not %s" % (t, " ".join(opts), digest, got))
        with open("keys.txt", "rb") as f:
            rc, _, err = run(["query", "-q", "o.bf"], stdin=f)
        check(rc == 0, "%s %s: every key present (%s)" % (t, " ".join(opts), err))
        print("  %-12s %-28s same file on every path%s" % (t, " ".join(opts), ", = the recorded digest" if golden else ""))


@group
def test_merge():
    keys = urls(60000)
    a, b = keys[:30000], keys[30000:]
    write("a.txt", lines(a))
    write("b.txt", lines(b))
    write("all.txt", lines(keys))
    for t in buildable_types():
        if t in STATIC_TYPES:
            continue
        run(["build", "-q", "A.bf", "a.txt", "-n", "60000", "--type", t], expect=0)
        run(["build", "-q", "B.bf", "b.txt", "-n", "60000", "--type", t], expect=0)
        run(["build", "-q", "W.bf", "all.txt", "-n", "60000", "--type", t], expect=0)
        rc, out, err = run(["merge", "M.bf", "A.bf", "B.bf"])
        if rc == 2 and "cannot be merged" in err:
            print("  %s: merge not supported: %s" % (t, err.strip()))
            continue
        check(rc == 0, "merge %s: %s" % (t, err))
        probe = lines(keys + urls(100000, host="other.test"))
        rc1, out1, err1 = run(["query", "M.bf"], input=probe)
        rc2, out2, err2 = run(["query", "W.bf"], input=probe)
        check(out1 == out2, "%s: merged halves answer like the whole" % t)
        check(out1.count(b"\tpresent\n") >= 60000, "every key present after merge")
        mi, wi = info("M.bf"), info("W.bf")
        check(mi["fill_ratio"] == wi["fill_ratio"], "%s: same fill" % t)
        check(abs(mi["count"] - 60000) < 60000 * 0.05, "%s: merged count estimate %d" % (t, mi["count"]))
        print("  %-12s merge of halves == whole" % t)
    # OUT may be an input
    run(["build", "-q", "A.bf", "a.txt", "-n", "60000"], expect=0)
    run(["build", "-q", "B.bf", "b.txt", "-n", "60000"], expect=0)
    run(["merge", "-q", "A.bf", "A.bf", "B.bf"], expect=0)
    rc, out, err = run(["query", "-q", "A.bf"], input=lines(keys), expect=0)
    # incompatible inputs: a clear message and nothing written
    run(["build", "-q", "small.bf", "a.txt", "-n", "1000"], expect=0)
    rc, out, err = run(["merge", "X.bf", "B.bf", "small.bf"], expect=2)
    check("small.bf: cannot be merged with B.bf: different geometry" in err, err)
    check(not os.path.exists("X.bf"), "nothing written")
    run(["build", "-q", "seed.bf", "a.txt", "-n", "60000", "--seed", "5"], expect=0)
    rc, out, err = run(["merge", "X.bf", "B.bf", "seed.bf"], expect=2)
    check("different seeds" in err, err)
    run(["build", "-q", "part.bf", "a.txt", "-n", "60000", "--type", "partitioned"], expect=0)
    rc, out, err = run(["merge", "X.bf", "B.bf", "part.bf"], expect=2)
    check("different types (bloom and partitioned)" in err, err)
    check(not os.path.exists("X.bf"), "nothing written")
    rc, out, err = run(["merge", "X.bf"], expect=2)
    check("at least one IN" in err, err)


def damage(src, dst, offset, xor=0x01, truncate=None):
    data = bytearray(read(src))
    if truncate is not None:
        data = data[:truncate]
    else:
        data[offset] ^= xor
    write(dst, bytes(data))


@group
def test_errors():
    write("k.txt", lines(urls(2000)))
    run(["build", "-q", "ok.bf", "k.txt"], expect=0)
    # missing files: exit 2, message naming the file
    for args in (["query", "gone.bf", "x"], ["info", "gone.bf"], ["add", "gone.bf", "x"], ["remove", "gone.bf", "x"],
                 ["filter", "gone.bf"], ["merge", "o.bf", "gone.bf"], ["verify", "gone.bf"],
                 ["build", "o.bf", "gone.txt"], ["filter", "ok.bf", "gone.txt"]):
        rc, out, err = run(args, input=b"")
        check(rc == 2 and "gone." in err and "No such file" in err, "%r: rc %d, %s" % (args, rc, err))
        check(err.startswith("bloomkit %s: " % args[0]) and err.count("\n") == 1, "one line: %r" % err)
    check(not os.path.exists("o.bf"), "nothing written")
    # unreadable input: a directory
    os.mkdir("adir")
    rc, out, err = run(["build", "o.bf", "adir"], expect=2)
    check("adir" in err and "directory" in err, err)
    rc, out, err = run(["query", "adir", "x"], expect=2)
    check("adir" in err, err)
    # not a filter
    rc, out, err = run(["info", "k.txt"], expect=2)
    check("k.txt: not a bloomkit filter file" in err, err)
    rc, out, err = run(["verify", "k.txt"], expect=1)
    check(b"k.txt: not a bloomkit filter file" in out, out)
    # damaged files: query/info/filter exit 2, verify exit 1, each naming the problem
    size = len(read("ok.bf"))
    cases = {"payload.bf": dict(offset=size - 100), "header.bf": dict(offset=40), "magic.bf": dict(offset=1),
             "trunc.bf": dict(offset=0, truncate=size - 64), "short.bf": dict(offset=0, truncate=30),
             "params.bf": dict(offset=64 + 8)}
    for name, how in cases.items():
        damage("ok.bf", name, **how)
        for args in (["query", name, "x"], ["info", name], ["filter", name], ["add", name, "x"]):
            rc, out, err = run(args, input=b"x\n")
            check(rc == 2 and name in err, "%r on a damaged file: rc %d %s" % (args, rc, err))
        rc, out, err = run(["verify", name], expect=1)
        check(out.startswith(name.encode() + b": ") and b"ok" not in out, out)
        print("  %-10s %s" % (name, out.decode().strip()))
    rc, out, err = run(["verify", "ok.bf"], expect=0)
    check(out.startswith(b"ok.bf: ok (bloom, "), out)
    rc, out, err = run(["verify", "ok.bf", "payload.bf", "gone.bf"], expect=2)
    check(out.count(b"\n") == 2 and "gone.bf" in err, "verify goes on after a bad file")
    rc, out, err = run(["verify", "-q", "ok.bf", "payload.bf"], expect=1)
    check(not out.startswith(b"ok.bf"), "-q prints only damaged files")
    # remove on a type that cannot
    rc, out, err = run(["remove", "ok.bf", "x"], expect=2)
    check("bloom filters cannot remove keys" in err, err)
    # a failed write leaves the old file as it was and no temporary file
    before = read("ok.bf")
    rc, out, err = run(["build", "ok.bf", "gone.txt"], expect=2)
    rc, out, err = run(["build", "ok.bf", "-p", "2"], input=b"x\n", expect=2)
    check(read("ok.bf") == before, "failed builds leave the file alone")
    os.chmod(".", 0o555)
    try:
        if os.geteuid() != 0:
            rc, out, err = run(["build", "ok.bf", "k.txt"], expect=2)
            check("cannot save" in err or "temporary" in err, err)
    finally:
        os.chmod(".", 0o755)
    # typos that would destroy an input: an output that is an input, or an existing non-filter file
    text = read("k.txt")
    rc, out, err = run(["build", "k.txt", "k.txt"], expect=2)
    check("k.txt: is also an input" in err, err)
    with open("k.txt", "rb") as f:
        rc, out, err = run(["build", "k.txt"], stdin=f, expect=2)
    check("k.txt: is also an input" in err, err)
    rc, out, err = run(["build", "k.txt", "ok.bf"], input=b"", expect=2)
    check("k.txt: exists and is not a bloomkit filter" in err and "--force" in err, err)
    rc, out, err = run(["merge", "k.txt", "ok.bf"], expect=2)
    check("k.txt: exists and is not a bloomkit filter" in err, err)
    check(read("k.txt") == text, "the text file is untouched")
    run(["merge", "-q", "--force", "k2.txt", "ok.bf"], expect=0)
    # a build with -n below the keys says the filter is saturated
    rc, out, err = run(["build", "sat.bf", "k.txt", "-n", "100"], expect=0)
    check("warning: the filter is saturated" in err, err)
    leftovers = [f for f in os.listdir(".") if f.startswith(".")]
    check(not leftovers, "no temporary files left: %r" % leftovers)


@group
def test_concurrent_add():
    """Two `bloomkit add` processes started together on one file, each with half of 200,000 keys:
    every key is present afterwards (in-place atomic inserts, or writers taking turns under a lock)."""
    keys = urls(200000, host="conc.test")
    h1, h2 = lines(keys[:100000]), lines(keys[100000:])
    for t in addable_types():
        f = "conc-%s.bf" % t
        run(["create", "-q", f, "-n", "200k", "-p", "1%", "--type", t], expect=0)
        procs = [subprocess.Popen([BIN, "add", f], stdin=subprocess.PIPE, stderr=subprocess.PIPE) for _ in range(2)]
        # one feeder thread per process, in chunks, so both run at the same time when they can (in
        # place), and a writer waiting for the lock does not stall the other's input (load-save)
        def feed(p, data):
            for i in range(0, len(data), 1 << 16):
                p.stdin.write(data[i:i + (1 << 16)])
            p.stdin.close()
        feeders = [threading.Thread(target=feed, args=(p, d)) for p, d in zip(procs, (h1, h2))]
        for th in feeders:
            th.start()
        for th in feeders:
            th.join()
        for p in procs:
            check(p.wait() == 0, "%s: add failed: %s" % (t, p.stderr.read().decode()))
        rc, out, err = run(["query", f], input=lines(keys))
        missing = out.count(b"\tabsent\n")
        check(rc == 0 and missing == 0, "%s: %d of 200,000 keys lost by concurrent adds" % (t, missing))
        i = info(f)
        # bit-setting types do not count keys that test present when added (false positives)
        check(199000 <= i["count"] <= 200000, "%s: count %d after concurrent adds" % (t, i["count"]))
        check(i["checksum"] == "ok", "%s: the last writer out leaves a current checksum" % t)
        run(["verify", f], expect=0)
        print("  %-12s 2 x 100,000 concurrent adds: all present" % t)
    # a writer killed while it holds the shared mapping: the file stays usable, says its checksum is
    # not current, and the next writer to close recomputes it
    f = "killed.bf"
    run(["create", "-q", f, "-n", "10k", "-p", "1%"], expect=0)
    p = subprocess.Popen([BIN, "add", f], stdin=subprocess.PIPE)
    p.stdin.write(lines(keys[:1000]))
    p.stdin.flush()
    # kill it once it is writing: the file marked stale and the last key it was given already in
    deadline = time.time() + 60
    while info(f)["checksum"] != "stale" or run(["query", f, keys[999]])[0] != 0:
        check(time.time() < deadline, "the in-place writer did not start writing in 60 s")
        time.sleep(0.02)
    p.kill()
    p.wait()
    p.stdin.close()
    check(info(f)["checksum"] == "stale", "a killed in-place writer leaves the checksum marked stale")
    rc, out, err = run(["verify", f], expect=0)
    check(b"structure only" in out, out)
    run(["add", f, "one-more-key"], expect=0)
    check(info(f)["checksum"] == "ok", "the next writer's close makes the checksum current again")
    rc, out, err = run(["query", f, "one-more-key"], expect=0)
    # many short writers on one file, keys as arguments
    t = "bloom"
    f = "many.bf"
    run(["create", "-q", f, "-n", "10k", "-p", "1%", "--type", t], expect=0)
    procs = []
    for w in range(8):
        ks = [k.decode() for k in keys[w * 500:(w + 1) * 500]]
        procs.append(subprocess.Popen([BIN, "add", f] + ks))
    for p in procs:
        check(p.wait() == 0, "writer failed")
    rc, out, err = run(["query", "-q", f], input=lines(keys[:4000]), expect=0)


@group
def test_info():
    run(["create", "-q", "i.bf", "-n", "1000", "-p", "1%"], expect=0)
    rc, out, err = run(["info", "i.bf"], expect=0)
    for field in (b"type:", b"capacity:", b"count:", b"fill ratio:", b"FPR target:", b"FPR now", b"memory:",
                  b"distinct (est.):", b"status:"):
        check(field in out, "info shows %r" % field)
    j = info("i.bf")
    check(j["saturated"] is False and j["warning"] is None and j["fill_ratio"] == 0, j)
    run(["add", "i.bf"], input=lines(urls(900)), expect=0)
    j = info("i.bf")
    check(not j["saturated"], "at 90%% of capacity, a correctly sized filter is not saturated: %r" % j)
    check(0.005 < j["fpr_now"] < 0.01, "FPR now below the target before capacity: %g" % j["fpr_now"])
    run(["add", "i.bf"], input=lines(urls(1600, start=900)), expect=0)
    j = info("i.bf")
    check(j["saturated"] is True and "past its capacity" in j["warning"] and "past 50%" in j["warning"], j)
    check("scalable" in j["warning"] and "Rebuild" in j["warning"], j["warning"])
    rc, out, err = run(["info", "i.bf"], expect=0)
    check(b"WARNING:" in out and b"past its capacity of 1,000" in out, out)
    # an empty filter has no bits per inserted key: info gives the bits per key at capacity instead
    run(["create", "-q", "e.bf", "-n", "10", "-p", "1%"], expect=0)
    rc, out, err = run(["info", "e.bf"], expect=0)
    check(b"per inserted key" not in out and b"bits per key at capacity (no keys inserted yet)" in out, out)
    check(info("e.bf")["bits_per_key"] is None, "JSON bits_per_key of an empty filter: null")
    rc, out, err = run(["info", "i.bf", "other.bf"], expect=2)


@group
def test_progress():
    """The bar appears only on a terminal, and not with --quiet."""
    run(["create", "-q", "p.bf", "-n", "1000", "-p", "1%"], expect=0)

    def slow_filter(extra, want_bar):
        """Keys arrive one every 0.2 s on a pipe, stderr is a pty: runs until the bar shows (or, when
        no bar is wanted, for 1.6 s, well past the half second before a first draw)."""
        master, slave = pty.openpty()
        p = subprocess.Popen([BIN, "filter", "p.bf"] + extra, stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                             stderr=slave)
        os.close(slave)
        got = b""
        t0 = time.time()
        i = 0
        while time.time() - t0 < (20 if want_bar else 1.6) and not (want_bar and b"keys/s" in got):
            p.stdin.write(b"key%d\n" % i)
            p.stdin.flush()
            i += 1
            r, _, _ = select.select([master], [], [], 0.2)
            if r:
                got += os.read(master, 4096)
        p.stdin.close()
        while True:
            r, _, _ = select.select([master], [], [], 5)
            if not r:
                break
            try:
                chunk = os.read(master, 4096)
            except OSError:
                break
            if not chunk:
                break
            got += chunk
        check(p.wait() == 0, "filter on a tty")
        os.close(master)
        return got

    got = slow_filter([], True)
    check(b"keys/s" in got and b"\r" in got, "progress bar on a terminal: %r" % got)
    check(got.endswith(b"\r\x1b[K"), "the bar is erased at the end: %r" % got[-20:])
    got = slow_filter(["-q"], False)
    check(got == b"", "--quiet: no bar: %r" % got)
    rc, out, err = run(["filter", "p.bf"], input=b"a\nb\n", expect=0)
    check(err == "", "stderr not a terminal: nothing")


@group
def test_remove():
    types = [t for t in all_types() if t in ("counting", "cuckoo")]
    if not types:
        print("  no type with deletion in this build yet")
    for t in types:
        f = "r-%s.bf" % t
        keys = urls(5000, host="rm.test")
        run(["create", "-q", f, "-n", "10k", "-p", "0.1%", "--type", t], expect=0)
        run(["add", f], input=lines(keys), expect=0)
        run(["remove", f], input=lines(keys[:2500]), expect=0)
        rc, out, err = run(["query", "-q", f], input=lines(keys[2500:]), expect=0)
        rc, out, err = run(["query", f], input=lines(keys[:2500]), expect=1)
        check(out.count(b"\tabsent\n") > 2400, "%s: removed keys absent (but false positives)" % t)
        rc, out, err = run(["remove", f, "never-added-key-1"], expect=1)
        check(out == b"never-added-key-1\tabsent\n", out)
        check(info(f)["count"] == 2500, "%s: count after removes" % t)
    # the types that cannot delete say which can, quotient filters included
    run(["create", "-q", "nr.bf", "-n", "100", "-p", "1%"], expect=0)
    rc, out, err = run(["remove", "nr.bf", "k"], expect=2)
    check("only counting, cuckoo and quotient filters can" in err, err)
    rc, out, err = run(["remove", "--help"], expect=0)
    check(b"counting,\ncuckoo or quotient filter" in out, out)


@group
def test_aging():
    """Aging filters: --window by count or by time, the window's guarantee through add and query, the
    window in info, and the refusals (an ambiguous unit, --window on another type, merging count windows)."""
    run(["create", "-q", "w.bf", "--type", "aging", "--window", "10M", "-p", "1%"], expect=0)
    i = info("w.bf")
    check(i["type"] == "aging" and i["window"] == 10**7 and i["window_unit"] == "insertions", i)
    check(i["capacity"] == 10**7 and i["generations"] == 4 and i["fpr_now"] == 0, i)
    check(i["memory_bytes"] * 8 / 10**7 < 2 * 11.03, "less memory than two rotating classic filters: %r" % i)
    run(["create", "-q", "t.bf", "--type", "aging", "--window", "1h", "-n", "1M", "-p", "0.1%"], expect=0)
    i = info("t.bf")
    # below p = 1% the generations are the sizing's choice; the slack is one period, T / (g - 1)
    g = i["generations"]
    check(i["window"] == 3600 * 1000 and i["window_unit"] == "ms" and 3 <= g <= 16
          and i["slack"] == -(-3600 * 1000 // (g - 1)), i)
    check(i["capacity"] == 10**6 and i["fpr_target"] == 0.001, i)
    for w, unit in (("90s", 90000), ("30min", 1800000), ("1.5h", 5400000), ("2d", 172800000), ("250ms", 250)):
        run(["create", "-q", "--force", "d.bf", "--type", "aging", "--window", w, "-n", "1000", "-p", "1%"], expect=0)
        check(info("d.bf")["window"] == unit, "--window %s" % w)
    rc, out, err = run(["create", "x.bf", "--type", "aging", "--window", "30m", "-p", "1%"], expect=2)
    check("ambiguous" in err and "30min" in err, err)
    for bad in ("1x", "1hour", "5 min"):
        for args in (["create", "x.bf", "--type", "aging", "--window", bad, "-p", "1%"],
                     ["filter", "--add", "--window", bad]):
            rc, out, err = run(args, input=b"", expect=2)
            check("--window: '%s' is neither a number of insertions" % bad in err and "90s, 30min, 1h, 7d" in err, err)
    # info counts an aging filter's insertions, repeats included, and calls none of them distinct
    run(["create", "-q", "rep.bf", "--type", "aging", "--window", "10k", "-p", "1%"], expect=0)
    rep = [b"r%d" % i for i in range(1000)]
    run(["add", "-q", "rep.bf"], input=lines(rep), expect=0)
    run(["add", "-q", "rep.bf"], input=lines(rep), expect=0)
    rc, out, err = run(["info", "rep.bf"], expect=0)
    check(b"2,000 insertions held (every add counts, repeats too)" in out and b"distinct" not in out, out)
    rc, out, err = run(["create", "x.bf", "--window", "1h", "-n", "10", "-p", "1%"], expect=2)
    check("--window does not apply to bloom" in err, err)
    rc, out, err = run(["create", "x.bf", "--type", "aging", "--window", "1h", "-p", "1%"], expect=2)
    check("needs -n N" in err, err)
    check(not os.path.exists("x.bf"), "nothing written")
    rc, out, err = run(["build", "b.bf", "--type", "aging", "--window", "1h"], input=b"a\n", expect=2)
    check("bloomkit add" in err and not os.path.exists("b.bf"), err)
    # a count window of 3000 insertions: the last 3000 of 6000 keys are all present, the first 1000
    # (5000 insertions ago, past the window and its slack of 1000) are forgotten but for false positives
    run(["create", "-q", "s.bf", "--type", "aging", "--window", "3000", "-p", "1%"], expect=0)
    keys = [b"k%d" % i for i in range(6000)]
    run(["add", "-q", "s.bf"], input=lines(keys[:2500]), expect=0)
    run(["add", "-q", "s.bf"], input=lines(keys[2500:]), expect=0)
    run(["query", "-q", "s.bf"], input=lines(keys[3000:]), expect=0)
    rc, out, err = run(["query", "s.bf"], input=lines(keys[:1000]))
    old = out.count(b"\tpresent\n")
    check(old <= 30, "forgotten keys still reported: %d of 1000" % old)
    i = info("s.bf")
    check(i["inserted"] == 6000 and i["covered"] >= 3000, i)
    rc, out, err = run(["info", "s.bf"], expect=0)
    check(b"window:             the last 3,000 insertions" in out, out)
    # count windows cannot be merged (their generations are not aligned in time)
    run(["create", "-q", "s2.bf", "--type", "aging", "--window", "3000", "-p", "1%"], expect=0)
    rc, out, err = run(["merge", "m.bf", "s.bf", "s2.bf"], expect=2)
    check("cannot be merged" in err, err)
    # a time window holds what was just added
    run(["add", "-q", "t.bf"], input=lines(keys[:2000]), expect=0)
    run(["query", "-q", "t.bf"], input=lines(keys[:2000]), expect=0)
    check(info("t.bf")["count"] == 2000, info("t.bf"))
    # streaming dedup in constant memory: filter --add --window drops a line whose key was seen within
    # the window, and lets it through again once it aged out
    stream = [b"x", b"y", b"x"] + [b"k%d" % i for i in range(6)] + [b"x"]
    rc, out, err = run(["filter", "--add", "--window", "3", "-q"], input=lines(stream), expect=0)
    check(out == lines([b"x", b"y"] + [b"k%d" % i for i in range(6)] + [b"x"]), out)
    events = [b"e%d" % (i % 5000) for i in range(20000)]  # every key four times, 5000 lines apart
    rc, out, err = run(["filter", "--add", "--window", "1h", "-n", "10k", "-q"], input=lines(events), expect=0)
    check(out == lines(events[:5000]), "a one-hour window passes each key once: %d lines" % out.count(b"\n"))
    rc, out, err = run(["filter", "--add", "--window", "4000", "-q"], input=lines(events), expect=0)
    check(out.count(b"\n") >= 15000, "a 4000-line window (slack 1334) forgets keys seen 5000 lines ago")
    rc, out, err = run(["filter", "--add", "--window", "6000", "-q"], input=lines(events), expect=0)
    check(out == lines(events[:5000]), "a 6000-line window holds keys seen 5000 lines ago")
    # an aging FILE keeps its window across runs
    run(["create", "-q", "dd.bf", "--type", "aging", "--window", "1h", "-n", "10k", "-p", "1%"], expect=0)
    rc, out, err = run(["filter", "--add", "dd.bf", "-q"], input=b"a\nb\na\n", expect=0)
    check(out == b"a\nb\n", out)
    rc, out, err = run(["filter", "--add", "dd.bf", "-q"], input=b"a\nz\n", expect=0)
    check(out == b"z\n", out)
    rc, out, err = run(["filter", "--add", "dd.bf", "--window", "1h"], input=b"a\n", expect=2)
    check("has its own window" in err, err)


def run_fd1(args, fd1, input=b"", ignore_sigpipe=False):
    """Runs bloomkit with standard output set up by fd1: "full" (/dev/full), "closed" (>&-) or
    "broken" (a pipe whose reader has gone, SIGPIPE ignored as a shell's `trap '' PIPE` leaves it)."""
    argv = [BIN] + [str(a) for a in args]
    if fd1 == "full":
        with open("/dev/full", "wb") as out:
            p = subprocess.run(argv, input=input, stdout=out, stderr=subprocess.PIPE, timeout=60)
    elif fd1 == "closed":
        p = subprocess.run(["/bin/sh", "-c", 'exec "$0" "$@" >&-'] + argv, input=input, stderr=subprocess.PIPE,
                           timeout=60)
    else:
        r, w = os.pipe()
        os.close(r)
        try:
            p = subprocess.run(argv, input=input, stdout=w, stderr=subprocess.PIPE, timeout=60,
                               preexec_fn=lambda: signal.signal(signal.SIGPIPE, signal.SIG_IGN))
        finally:
            os.close(w)
    return p.returncode, p.stderr.decode("utf-8", "replace")


@group
def test_stdout_errors():
    # Like coreutils: output that cannot be written is an error (exit 2 and a message) for every
    # command that writes to stdout, whatever its exit status would have been.
    write("k.txt", lines(urls(300)))
    run(["build", "-q", "ok.bf", "k.txt"], expect=0)
    cmds = [["calc", "-n", "1M", "-p", "1%"], ["calc", "-n", "1M", "-p", "1%", "--json"], ["info", "ok.bf"],
            ["info", "ok.bf", "--json"], ["verify", "ok.bf"], ["query", "ok.bf", urls(1)[0].decode(), "nope"],
            ["filter", "ok.bf"], ["filter", "ok.bf", "--present"], ["--help"], ["--version"], ["help", "add"]]
    rc, out, err = run(["--help"], expect=0)
    for name in [l.split()[0] for l in out.decode().split("Commands:\n")[1].split("\n\n")[0].splitlines()]:
        cmds.append([name, "--help"])
    for args in cmds:
        for fd1 in ("full", "closed", "broken"):
            rc, err = run_fd1(args, fd1, input=lines(urls(150) + urls(150, host="new.test")))
            check(rc == 2, "%r with stdout %s: exit %d, expected 2 (%s)" % (args, fd1, rc, err))
            check("standard output" in err and err.count("\n") == 1 and err.startswith("bloomkit"),
                  "%r with stdout %s: message %r" % (args, fd1, err))
    # Commands with nothing to print still succeed, and a closed stdout never becomes the filter file's
    # descriptor (their output would land in the file).
    before = read("ok.bf")
    for args in (["add", "ok.bf", "x1"], ["create", "-q", "--force", "c.bf", "-n", "100", "-p", "1%"],
                 ["merge", "-q", "m.bf", "ok.bf"]):
        rc, err = run_fd1(args, "closed")
        check(rc == 0 and err == "", "%r with stdout closed: exit %d, %r" % (args, rc, err))
    run(["verify", "ok.bf"], expect=0)
    run(["query", "ok.bf", "x1"], expect=0)
    check(len(read("ok.bf")) == len(before), "the file kept its size")


def xxh3(data):
    import ctypes
    lib = ctypes.CDLL("libxxhash.so.0")
    lib.XXH3_64bits.restype = ctypes.c_uint64
    lib.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    return lib.XXH3_64bits(data, len(data))


@group
def test_faults():
    write("k.txt", lines(urls(1000)))
    run(["build", "-q", "ok.bf", "k.txt"], expect=0)
    run(["create", "-q", "cnt.bf", "-n", "1000", "-p", "1%", "--type", "counting"], expect=0)
    # A FIFO as the filter file: refused at once ("not a regular file"), never a hang.
    os.mkfifo("fifo.bf")
    for args in (["info", "fifo.bf"], ["verify", "fifo.bf"], ["query", "fifo.bf", "x"], ["filter", "fifo.bf"],
                 ["add", "fifo.bf", "x"], ["remove", "fifo.bf", "x"], ["merge", "o.bf", "fifo.bf"],
                 ["merge", "o.bf", "ok.bf", "fifo.bf"], ["merge", "fifo.bf", "ok.bf"],
                 ["build", "fifo.bf", "k.txt"], ["create", "fifo.bf", "-n", "10", "-p", "1%"]):
        try:
            rc, out, err = run(args, input=b"")
        except subprocess.TimeoutExpired:
            raise Failure("%r hangs" % args)
        check(rc == 2 and "fifo.bf" in err and err.count("\n") == 1, "%r: rc %d, %r" % (args, rc, err))
    check(not os.path.exists("o.bf"), "nothing written")
    # A header claiming a body over 256 GiB (checksum made right): the file is damaged.
    h = bytearray(read("ok.bf")[:64])
    h[40:48] = (300 << 30).to_bytes(8, "little")
    h[56:64] = bytes(8)
    h[56:64] = xxh3(bytes(h)).to_bytes(8, "little")
    write("big.bf", bytes(h) + read("ok.bf")[64:])
    for args in (["info", "big.bf"], ["query", "big.bf", "x"], ["add", "big.bf", "x"], ["merge", "o.bf", "big.bf"]):
        rc, out, err = run(args)
        check(rc == 2 and "damaged" in err and "-p" not in err, "%r: rc %d, %r" % (args, rc, err))
    rc, out, err = run(["verify", "big.bf"])
    check(rc == 1 and "damaged" in out.decode() + err, "verify: rc %d %r %r" % (rc, out, err))


@group
def test_symlinks():
    # One rule for every type and command: through a symbolic link the target is changed (replaced)
    # and the link stays a link (sed -i --follow-symlinks).
    keys = urls(400)
    write("a.txt", lines(keys[:200]))
    write("b.txt", lines(keys[200:]))
    os.mkdir("store")
    for t in addable_types():
        tgt = "store/%s.bf" % t
        run(["create", "-q", tgt, "-n", "1000", "-p", "1%", "--type", t], expect=0)
        os.symlink(tgt, "link-%s.bf" % t)
        os.symlink("link-%s.bf" % t, "chain-%s.bf" % t)  # a link to a link
        run(["add", "-q", "link-%s.bf" % t], input=read("a.txt"), expect=0)
        run(["add", "-q", "chain-%s.bf" % t], input=read("b.txt"), expect=0)
        check(os.path.islink("link-%s.bf" % t) and os.path.islink("chain-%s.bf" % t), "%s: links kept" % t)
        rc, out, err = run(["query", tgt], input=lines(keys), expect=0)
        check(out.count(b"\tpresent") == 400, "%s: the target got every key" % t)
        if t in ("counting", "cuckoo"):
            run(["remove", "-q", "link-%s.bf" % t, keys[0].decode()], expect=0)
            check(os.path.islink("link-%s.bf" % t), "%s: link kept by remove" % t)
            rc, out, err = run(["query", tgt, keys[0].decode()])
            check(rc == 1 or t == "counting" and rc in (0, 1), "%s: removed from the target" % t)
    # commands that replace the whole file
    run(["build", "-q", "link-bloom.bf", "a.txt"], expect=0)
    check(os.path.islink("link-bloom.bf"), "build keeps the link")
    run(["query", "store/bloom.bf"], input=read("a.txt"), expect=0)
    run(["merge", "-q", "chain-bloom.bf", "store/bloom.bf", "store/bloom.bf"], expect=0)
    check(os.path.islink("chain-bloom.bf") and os.path.islink("link-bloom.bf"), "merge keeps the links")
    run(["create", "-q", "--force", "link-blocked.bf", "-n", "10", "-p", "1%"], expect=0)
    check(os.path.islink("link-blocked.bf") and info("store/blocked.bf")["count"] == 0, "create --force: target")
    # a dangling link: the file it names is created
    os.symlink("store/new.bf", "dangling.bf")
    run(["create", "-q", "dangling.bf", "-n", "10", "-p", "1%"], expect=0)
    check(os.path.islink("dangling.bf") and os.path.isfile("store/new.bf"), "create through a dangling link")
    # no temporary files left behind
    check(not [n for n in os.listdir("store") + os.listdir(".") if ".tmp." in n], "no temporary files")


@group
def test_capacity():
    # add warns on stderr when it takes a filter past its capacity (exit 0); --strict makes it exit 2.
    # (A cuckoo filter refuses keys when full, or grows with --expansion: it never passes its capacity.)
    keys = urls(1300)
    for t in ("bloom", "partitioned", "blocked", "counting"):
        f = "%s.bf" % t
        run(["create", "-q", f, "-n", "1000", "-p", "1%", "--type", t], expect=0)
        rc, out, err = run(["add", "-q", f], input=lines(keys[:900]), expect=0)
        check(err == "", "%s: no warning below the capacity: %r" % (t, err))
        rc, out, err = run(["add", "-q", f], input=lines(keys[900:1200]), expect=0)
        check("warning" in err and "capacity" in err and err.count("\n") == 1, "%s: warning %r" % (t, err))
        rc, out, err = run(["add", "-q", f, "--strict"], input=lines(keys[1200:]))
        check(rc == 2 and "error" in err and "capacity" in err, "%s --strict: rc %d %r" % (t, rc, err))
        rc, out, err = run(["query", f], input=lines(keys), expect=0)  # --strict still added them
        if t != "counting":  # types that only set bits do not count present keys again
            rc, out, err = run(["add", "-q", f, "--strict"], input=lines(keys[:10]))
            check(rc == 0 and err == "", "%s: re-adding present keys changes nothing: rc %d %r" % (t, rc, err))
    run(["create", "-q", "s.bf", "-n", "100", "-p", "1%", "--type", "scalable"], expect=0)
    rc, out, err = run(["add", "-q", "s.bf", "--strict"], input=lines(keys), expect=0)
    check(err == "", "a scalable filter grows: no warning: %r" % err)


@group
def test_merge_saturation():
    # Two halves merged at exactly the designed load and one filter given all the keys: the same
    # verdict (not saturated), for several sizes and seeds.
    for t in ("bloom", "blocked", "partitioned"):
        for n, seed in ((1000, 1), (5000, 2), (20000, 3), (20000, 4)):
            keys = urls(n, host="h%d.test" % seed)
            args = ["-n", n, "-p", "1%", "--type", t, "--seed", seed]
            for f in ("a.bf", "b.bf", "all.bf"):
                run(["create", "-q", "--force", f] + args, expect=0)
            run(["add", "-q", "a.bf"], input=lines(keys[: n // 2]), expect=0)
            run(["add", "-q", "b.bf"], input=lines(keys[n // 2:]), expect=0)
            run(["add", "-q", "all.bf"], input=lines(keys), expect=0)
            run(["merge", "-q", "m.bf", "a.bf", "b.bf"], expect=0)
            im, ia = info("m.bf"), info("all.bf")
            check(not im["saturated"] and not ia["saturated"],
                  "%s n=%d: merged %s (count %d), direct %s (count %d)" % (t, n, im["saturated"], im["count"],
                                                                       ia["saturated"], ia["count"]))
            check(im["count"] <= n and abs(im["fill_ratio"] - ia["fill_ratio"]) < 1e-9, "%s n=%d: same bits" % (t, n))
            os.remove("m.bf")



class Skip(Exception):
    pass


class Mount:
    """A file system mounted in a temporary directory for the test: tmpfs of a given size, or a loop
    image (btrfs, xfs, ext4) made with mkfs. Unmounted (and the image removed) on exit. Raises Skip
    with the reason when the machine cannot mount it."""

    def __init__(self, fstype, size_mib):
        self.fstype, self.size = fstype, size_mib
        self.dir = tempfile.mkdtemp(prefix="bloomkit-%s-" % fstype)
        self.mnt = os.path.join(self.dir, "mnt")
        os.mkdir(self.mnt)

    def __enter__(self):
        try:
            if os.geteuid() != 0:
                raise Skip("mounting needs root")
            if self.fstype == "tmpfs":
                cmd = ["mount", "-t", "tmpfs", "-o", "size=%dm" % self.size, "tmpfs", self.mnt]
            else:
                img = os.path.join(self.dir, "fs.img")
                with open(img, "wb") as f:
                    f.truncate(self.size << 20)
                mkfs = {"btrfs": ["mkfs.btrfs", "-q", "-f"], "xfs": ["mkfs.xfs", "-q", "-f"],
                        "ext4": ["mkfs.ext4", "-q", "-F"]}[self.fstype]
                p = subprocess.run(mkfs + [img], capture_output=True)
                if p.returncode != 0:
                    raise Skip("%s failed: %s" % (mkfs[0], p.stderr.decode(errors="replace").strip()[:200]))
                cmd = ["mount", "-o", "loop", img, self.mnt]
            p = subprocess.run(cmd, capture_output=True)
            if p.returncode != 0:
                raise Skip("cannot mount %s: %s" % (self.fstype, p.stderr.decode(errors="replace").strip()[:200]))
        except (Skip, FileNotFoundError) as e:
            self.cleanup(mounted=False)
            raise Skip(str(e))
        return self.mnt

    def cleanup(self, mounted=True):
        if mounted:
            subprocess.run(["umount", self.mnt], capture_output=True)
        subprocess.run(["rm", "-rf", self.dir])

    def __exit__(self, *exc):
        self.cleanup()
        return False


def fill_up(d):
    """Fills the file system of directory d until writes fail with ENOSPC."""
    import errno
    with open(os.path.join(d, "filler"), "wb", buffering=0) as f:
        for chunk in (1 << 20, 1 << 12, 1 << 9):
            for _ in range(1 << 20):
                try:
                    f.write(b"\xa5" * chunk)
                except OSError as e:
                    check(e.errno == errno.ENOSPC, "filling: %s" % e)
                    break
            try:
                os.fsync(f.fileno())
            except OSError:
                pass
    os.sync()


def no_signal(args, rc, err):
    check(rc >= 0, "bloomkit %s: killed by signal %d (%s)" % (" ".join(map(str, args)), -rc, err))


def run_any(args, input=b""):
    rc, out, err = run(args, input=input)
    no_signal(args, rc, err)
    return rc, out, err


def sha(path):
    import hashlib
    return hashlib.sha256(read(path)).hexdigest()


@group
def test_filesystems():
    # Full and copy-on-write file systems on real mounts: no command dies of a signal (SIGBUS from a
    # write, or a read, through a mapping); a full disk is "No space left on device" (exit 2) and the
    # file stays as it was; btrfs gets the keys (load, change, save instead of a mapping).
    keys = urls(3000)
    types = addable_types()
    skipped = []

    def part(fstype, size, fn):
        try:
            with Mount(fstype, size) as mnt:
                fn(mnt)
        except Skip as e:
            print("SKIP filesystems/%s: %s" % (fstype, e))
            skipped.append(fstype)

    def sparse_tmpfs(mnt):
        # A sparse filter file on a full tmpfs: reading a hole through a mapping would allocate.
        for t in ("bloom", "counting"):
            run(["create", "-q", "--force", "src.bf", "-n", "200000", "-p", "1%", "--type", t], expect=0)
            run(["add", "-q", "src.bf"], input=lines(keys[:10]), expect=0)  # for remove; most pages stay zero
            subprocess.run(["cp", "--sparse=always", "src.bf", os.path.join(mnt, t + ".bf")], check=True)
        st = os.stat(os.path.join(mnt, "bloom.bf"))
        check(st.st_blocks * 512 < st.st_size, "the copy is sparse")
        fill_up(mnt)
        for t in ("bloom", "counting"):
            f = os.path.join(mnt, t + ".bf")
            h = sha(f)
            rc, out, err = run_any(["info", f])
            check(rc == 0 and b"count" in out, "info %s: %d %s" % (t, rc, err))
            run_any(["verify", f])
            rc, out, err = run_any(["query", f, "x"])
            check(rc == 1, "query %s: %d %s" % (t, rc, err))
            rc, out, err = run_any(["filter", f], input=lines(keys[:20]))
            check(rc == 0 and out == lines(keys[10:20]), "filter %s: %d %s" % (t, rc, err))
            for cmd in ("add", "remove") if t == "counting" else ("add",):
                rc, out, err = run_any([cmd, "-q", f], input=lines(keys[:10] if cmd == "remove" else keys))
                check(rc == 2 and "No space left" in err and err.count("\n") == 1, "%s %s: %d %r" % (cmd, t, rc, err))
                check(sha(f) == h, "%s %s: the file is unchanged" % (cmd, t))

    def btrfs(mnt):
        nocow = os.path.join(mnt, "nocow")
        os.mkdir(nocow)
        have_nocow = subprocess.run(["chattr", "+C", nocow], capture_output=True).returncode == 0
        if not have_nocow:
            print("SKIP filesystems/btrfs chattr +C: chattr failed")
        for d in [mnt] + ([nocow] if have_nocow else []):
            for t in types:
                f = os.path.join(d, t + ".bf")
                run(["create", "-q", f, "-n", "10000", "-p", "1%", "--type", t], expect=0)
                run_any(["add", "-q", f], input=lines(keys[:2000]))
                rc, out, err = run_any(["query", f], input=lines(keys[:2000]))
                check(rc == 0, "btrfs %s (%s): every key present" % (t, d))
        fill_up(mnt)
        for t in types:
            f = os.path.join(mnt, t + ".bf")
            h = sha(f)
            rc, out, err = run_any(["add", "-q", f], input=lines(keys[2000:]))
            check(rc == 2 and "No space left" in err, "full btrfs, add %s: %d %r" % (t, rc, err))
            check(sha(f) == h, "full btrfs, add %s: the file is unchanged" % t)
            run(["verify", f], expect=0)

    def xfs(mnt):
        # A reflink copy shares its blocks: writing it needs new ones, reserved (unshared) first.
        a, b, c = (os.path.join(mnt, n) for n in ("a.bf", "b.bf", "c.bf"))
        run(["create", "-q", a, "-n", "100000", "-p", "1%", "--type", "counting"], expect=0)
        run(["create", "-q", c, "-n", "1000", "-p", "1%"], expect=0)
        p = subprocess.run(["cp", "--reflink=always", a, b], capture_output=True)
        if p.returncode != 0:
            print("SKIP filesystems/xfs reflink: %s" % p.stderr.decode(errors="replace").strip())
            return
        fill_up(mnt)
        h = sha(b)
        rc, out, err = run_any(["add", "-q", b], input=lines(keys))
        check(rc == 2 and "No space left" in err, "full xfs, add to a reflink copy: %d %r" % (rc, err))
        check(sha(b) == h, "the reflink copy is unchanged")
        rc, out, err = run_any(["add", "-q", c], input=lines(keys[:500]))  # its own blocks: in place
        check(rc == 0, "full xfs, add to a file with its own blocks: %d %r" % (rc, err))
        run(["query", c], input=lines(keys[:500]), expect=0)

    part("tmpfs", 4, sparse_tmpfs)
    part("btrfs", 256, btrfs)
    part("xfs", 320, xfs)
    if len(skipped) == 3:
        raise Skip("no file system could be mounted")



def first_occurrences(keys):
    seen, out = set(), []
    for k in keys:
        if k not in seen:
            seen.add(k)
            out.append(k)
    return out


@group
def test_dedup():
    # filter --add: each line not seen before is printed and added; a repeat in the same stream or a
    # later run is dropped; lines keep their bytes (CRLF, no final newline, NUL mode).
    rng = random.Random(20)
    pool = urls(4000)
    stream = [pool[rng.randrange(len(pool))] for _ in range(20000)]
    want = first_occurrences(stream)
    # in memory (a scalable filter at p = 0.01%: at most a handful of 4000 new lines dropped wrongly)
    rc, out, err = run(["filter", "--add"], input=lines(stream), expect=0)
    got = out.splitlines()
    check(len(set(got)) == len(got), "no line printed twice")
    check(got == [k for k in want if k in set(got)], "printed in the order of first occurrence")
    check(len(want) - len(got) <= 5, "dropped wrongly: %d of %d" % (len(want) - len(got), len(want)))
    rc, out2, err = run(["filter", "--add", "-n", "100", "-p", "1e-6"], input=lines(stream), expect=0)
    check(out2.splitlines() == want, "a small filter that grows, p = 1e-6: exactly awk's output")
    # into a file, every type that takes keys; a second run prints only what is new
    for t in addable_types():
        if t == "aging":  # a window forgets by design: its dedup is tested in test_aging
            continue
        f = t + ".bf"
        run(["create", "-q", f, "-n", "10000", "-p", "0.01%", "--type", t], expect=0)
        rc, out, err = run(["filter", "--add", f], input=lines(stream[:10000]), expect=0)
        first = out.splitlines()
        check(len(set(first)) == len(first) and set(first) <= set(want), "%s: first run" % t)
        rc, out, err = run(["filter", "-a", f], input=lines(stream), expect=0)
        second = out.splitlines()
        check(not set(second) & set(first) and len(set(second)) == len(second), "%s: second run prints only new" % t)
        check(len(want) - len(first) - len(second) <= 5, "%s: dropped wrongly %d" % (t, len(want) - len(first) - len(second)))
        rc, out, err = run(["query", f], input=lines(first + second), expect=0)  # every printed line was added
        rc, out, err = run(["filter", "--add", f], input=lines(stream), expect=0)
        check(out == b"", "%s: third run: nothing new" % t)
        run(["verify", f], expect=0)
    # bytes kept as read
    rc, out, err = run(["filter", "--add"], input=b"a\r\nb\na\r\nb\nc", expect=0)
    check(out == b"a\r\nb\nc\n", "CRLF kept, last line ended: %r" % out)
    rc, out, err = run(["filter", "--add", "-0"], input=b"x\ny\0z\0x\ny\0", expect=0)
    check(out == b"x\ny\0z\0", "NUL mode: %r" % out)
    # input files after FILE
    write("in1.txt", lines(stream[:100]))
    write("in2.txt", lines(stream[100:300]))
    run(["create", "-q", "two.bf", "-n", "1000", "-p", "0.01%"], expect=0)
    rc, out, err = run(["filter", "--add", "two.bf", "in1.txt", "in2.txt"], expect=0)
    check(out.splitlines() == first_occurrences(stream[:300]), "INPUT files in order")
    # misuse
    for args in (["filter", "--add", "--present", "two.bf"], ["filter", "--add", "two.bf", "-n", "10"],
                 ["filter", "two.bf", "-p", "1%"], ["filter"]):
        rc, out, err = run(args, input=b"")
        check(rc == 2 and err.count("\n") == 1, "%r: rc %d %r" % (args, rc, err))
    run(["build", "-q", "--type", "fuse", "fuse.bf"], input=lines(pool[:100]), expect=0)
    rc, out, err = run(["filter", "--add", "fuse.bf"], input=b"x\n")
    check(rc == 2 and "cannot take new keys" in err, "fuse: %r" % err)


@group
def test_dedup_capacity():
    # filter --add into a file sized for 1000 keys, fed 5000 new lines: a warning on stderr the moment
    # the filter passes its capacity, with the FPR now; --strict stops there with exit 2, having printed
    # exactly the first 1000 new lines; -v sums the run up on stderr.
    keys = urls(5000, host="cap.example.test")
    for t in ("bloom", "partitioned", "blocked", "counting", "cuckoo"):
        f = "cap-%s.bf" % t
        run(["create", "-q", f, "-n", "1000", "-p", "1%", "--type", t], expect=0)
        rc, out, err = run(["filter", "--add", f], input=lines(keys[:900]), expect=0)
        check(err == "", "%s: below the capacity, no warning: %r" % (t, err))
        rc, out, err = run(["filter", "--add", "-v", f], input=lines(keys[:2000]))
        warn = [l for l in err.splitlines() if "capacity" in l and "warning" in l]
        check(len(warn) == 1 and "1,001 keys for 1,000" in warn[0] and "FPR now about" in warn[0],
              "%s: one warning at key 1001: %r" % (t, err))
        check(rc == (2 if t == "cuckoo" else 0), "%s: rc %d %r" % (t, rc, err))  # a full cuckoo table refuses
        summary = [l for l in err.splitlines() if "read 2,000 keys" in l or (t == "cuckoo" and "read " in l)]
        check(len(summary) == 1 and "printed {:,}".format(len(out.splitlines())) in summary[0]
              and "fill" in summary[0] and "FPR now" in summary[0], "%s: -v summary: %r" % (t, err))
        # --strict: nothing printed past the capacity, and what was printed is exactly the new lines
        g = "strict-%s.bf" % t
        run(["create", "-q", g, "-n", "1000", "-p", "1%", "--type", t], expect=0)
        rc, out, err = run(["filter", "--add", "--strict", g], input=lines(keys))
        check(rc == 2 and "error" in err and "capacity" in err and err.count("\n") == 1, "%s --strict: rc %d %r" % (t, rc, err))
        check(out.splitlines() == keys[:1000], "%s --strict: the first 1000 new lines, then nothing: %d"
              % (t, len(out.splitlines())))
        rc, out, err = run(["filter", "--add", "--strict", g], input=lines(keys[:10] + keys[-10:]))
        check(rc == 2 and out == b"", "%s --strict at capacity: no line printed: %r %r" % (t, out, err))
        rc, out, err = run(["query", g], input=lines(keys[:1000]), expect=0)
    # already past its capacity: the warning comes before the first line
    rc, out, err = run(["filter", "--add", "cap-bloom.bf"], input=lines(keys[3000:3010]), expect=0)
    check("is still past its capacity" in err, "past its capacity before the run: %r" % err)
    # growing filters do not warn
    run(["create", "-q", "cap-s.bf", "-n", "100", "-p", "1%", "--type", "scalable"], expect=0)
    rc, out, err = run(["filter", "--add", "--strict", "cap-s.bf"], input=lines(keys), expect=0)
    # a key dropped wrongly is a false positive of the chain at the time, each under p = 1%: the read's
    # batch boundaries (pipe reads) decide when the chain grows, so the count varies from run to run
    check(err == "" and len(out.splitlines()) >= 4950, "scalable grows: %d of 5000 %r" % (len(out.splitlines()), err))
    run(["create", "-q", "cap-c.bf", "-n", "1000", "-p", "1%", "--type", "cuckoo", "--expansion", "2"], expect=0)
    rc, out, err = run(["filter", "--add", "--strict", "cap-c.bf"], input=lines(keys), expect=0)
    check(err == "" and len(out.splitlines()) >= 4900, "cuckoo with expansion grows: %r" % err)
    rc, out, err = run(["filter", "--add", "--strict", "-n", "100"], input=lines(keys), expect=0)
    check(err == "" and len(out.splitlines()) >= 4999, "in memory: grows, keeps p: %d %r" % (len(out.splitlines()), err))
    # an in-memory time window sized for -n keys a window, fed 1000 distinct keys (each once) and then
    # the same again: it grows, so every key is printed once and every repeat dropped, with -p kept
    # (before, -n 10, 100 and 500 printed 77, 435 and 976 of the 1000)
    stream = keys[:1000] + keys[:1000]
    for n in (10, 100, 500):
        rc, out, err = run(["filter", "--add", "-v", "--window", "1h", "-n", n], input=lines(stream), expect=0)
        check(out.splitlines() == keys[:1000], "window -n %d: %d lines" % (n, len(out.splitlines())))
        check("grew" in err and "warning" not in err, "window -n %d: %r" % (n, err))
    rc, out, err = run(["filter", "--add", "--window", "1h", "-n", "100", "-p", "1%"], input=lines(keys * 2), expect=0)
    check(len(keys) - len(out.splitlines()) <= 50 and set(out.splitlines()) <= set(keys),
          "window grown 4x twice at 1%%: dropped wrongly %d of %d" % (len(keys) - len(out.splitlines()), len(keys)))
    rc, out, err = run(["filter", "--add", "-v", "--window", "1h"], input=lines(keys), expect=0)
    check(len(out.splitlines()) == len(keys) and "grew" not in err, "the default -n of a window (1M) holds 5000")
    # an aging FILE cannot grow: a time window over its -n says so at once; --strict stops there
    run(["create", "-q", "win.bf", "--type", "aging", "--window", "1h", "-n", "100", "-p", "1%"], expect=0)
    rc, out, err = run(["filter", "--add", "win.bf"], input=lines(keys[:1000]), expect=0)
    check("more keys came within the window" in err and "FPR now" in err and err.count("\n") == 1, "aging FILE: %r" % err)
    run(["create", "-q", "win2.bf", "--type", "aging", "--window", "1h", "-n", "100", "-p", "1%"], expect=0)
    rc, out, err = run(["filter", "--add", "--strict", "win2.bf"], input=lines(keys[:1000]))
    got = out.splitlines()
    check(rc == 2 and "error" in err and len(got) < 100 and got == keys[:len(got)], "aging FILE --strict: %d %r" % (len(got), err))
    rc, out, err = run(["filter", "--strict", "cap-bloom.bf"], input=b"")
    check(rc == 2 and "--strict goes with --add" in err, "--strict without --add: %r" % err)
    rc, out, err = run(["filter", "--help"], expect=0)
    h = out.decode()
    check("--strict" in h and "--verbose" in h and "-n keys a window (default 1M) that grows" in h, "help")


@group
def test_streaming():
    # Lines come out while the input is still open: on a terminal, and with --line-buffered on a pipe.
    run(["create", "-q", "s.bf", "-n", "1000", "-p", "1%"], expect=0)
    run(["add", "-q", "s.bf", "old"], expect=0)

    n = [0]

    def first_line_arrives(args, tty):
        n[0] += 1
        new = b"new%d" % n[0]  # a key no earlier run has added
        master = slave = None
        if tty:
            master, slave = pty.openpty()
            p = subprocess.Popen([BIN] + args, stdin=subprocess.PIPE, stdout=slave, stderr=subprocess.DEVNULL)
            os.close(slave)
            rfd = master
        else:
            p = subprocess.Popen([BIN] + args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
            rfd = p.stdout.fileno()
        try:
            p.stdin.write(b"old\n" + new + b"\n" + new + b"\n")
            p.stdin.flush()
            got = b""
            t0 = time.time()
            while new not in got and time.time() - t0 < (10 if "--line-buffered" in args or tty else 2):
                r, _, _ = select.select([rfd], [], [], 0.5)
                if r:
                    got += os.read(rfd, 4096)
            arrived = new in got
            p.stdin.close()
            p.wait(timeout=30)
            return arrived, got
        finally:
            if p.poll() is None:
                p.kill()
            if master is not None:
                os.close(master)
            elif p.stdout:
                p.stdout.close()

    for extra in ([], ["--add"]):
        ok, got = first_line_arrives(["filter", "s.bf"] + extra + ["--line-buffered"], False)
        check(ok and b"old" not in got, "--line-buffered on a pipe %r: %r" % (extra, got))
        ok, got = first_line_arrives(["filter", "s.bf"] + extra, True)
        check(ok, "on a terminal %r: %r" % (extra, got))
    ok, got = first_line_arrives(["filter", "--add", "--line-buffered"], False)
    check(ok and got.count(b"new") == 1, "in memory, --line-buffered: %r" % got)
    # without --line-buffered a pipe gets whole blocks: nothing before the input ends
    ok, got = first_line_arrives(["filter", "s.bf"], False)
    check(not ok, "a pipe without --line-buffered is block-buffered")



TOP = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def help_options(cmd):
    """The options a subcommand's --help prints (its option lines: "  -x, --name ...")."""
    rc, out, err = run([cmd, "--help"], expect=0)
    import re
    opts = set()
    for line in out.decode().splitlines():
        if re.match(r"^ +-", line):
            opts.update(re.findall(r"(?:^|[ ,])(--?[A-Za-z0-9][A-Za-z0-9-]*)", line))
    return {o for o in opts if o not in ("-",)}


def commands():
    rc, out, err = run(["--help"], expect=0)
    block = out.decode().split("Commands:\n")[1].split("\n\n")[0]
    return [l.split()[0] for l in block.splitlines()]


def types():
    rc, out, err = run(["--help"], expect=0)
    line = [l for l in out.decode().splitlines() if l.startswith("Filter types (--type): ")][0]
    return line.split(": ", 1)[1].split(" (default")[0].split(", ")


@group
def test_manual():
    # docs/bloomkit.1: clean for mandoc -Tlint, and it covers every command, every option each
    # --help prints, every filter type, every environment variable the command reads.
    import re
    page = os.path.join(TOP, "docs", "bloomkit.1")
    if not shutil_which("mandoc"):
        raise Skip("mandoc is not installed (scripts/deps.sh installs it)")
    p = subprocess.run(["mandoc", "-Tlint", "-Wwarning", page], capture_output=True, text=True)
    lint = [l for l in (p.stdout + p.stderr).splitlines() if "mandoc.db" not in l]  # the system's index
    check(not lint, "mandoc -Tlint: %s" % "\n".join(lint))
    text = subprocess.run(["mandoc", "-Tascii", page], capture_output=True, check=True).stdout.decode()
    text = re.sub(r".\x08", "", text)  # overstrike (bold, underline)
    words = set(re.findall(r"--?[A-Za-z0-9][A-Za-z0-9-]*", text))
    for cmd in commands():
        check(re.search(r"\bbloomkit %s\b" % cmd, text), "the manual shows the command %s" % cmd)
        missing = help_options(cmd) - words
        check(not missing, "options of %s --help missing from the manual: %s" % (cmd, sorted(missing)))
    for t in types():
        check(re.search(r"\b%s\b" % t, text), "the manual names the type %s" % t)
    env = set()
    for root, dirs, files in os.walk(os.path.join(TOP, "src", "cli")):
        for f in files:
            if f.endswith(".c"):
                env.update(re.findall(r'getenv\("([A-Z_]+)"\)', open(os.path.join(root, f)).read()))
    check(env, "found the environment variables")
    for e in env:
        check(e in text, "the manual documents %s" % e)
    for status in ("0", "1", "2"):
        check(re.search(r"EXIT STATUS(.|\n)*\n +%s\b" % status, text), "exit status %s" % status)


@group
def test_docs():
    """README.md, docs/CLI.md, docs/GUIDE.md, docs/PYTHON.md, docs/REDIS.md, the manual and the Python
    stub describe the product the binary is: every type and command, and the defaults the code uses
    (read from what the command makes, not from the text)."""
    import re
    import struct

    def doc(*path):
        return open(os.path.join(TOP, *path), encoding="utf-8").read()

    all_t = types()
    check(len(all_t) >= 9, all_t)
    readme = doc("README.md")
    first = readme.split("\n\n", 2)[1]        # the paragraph under the title
    for t in all_t:
        check(re.search(r"\b%s\b" % t, first, re.I), "README's first paragraph names the type %s" % t)
    check("Python" in first and "## Python" in readme and "python3-bloomkit" in readme, "README: Python")
    cli = doc("docs", "CLI.md")
    listing = cli.split("```", 2)[1]
    for cmd in commands():
        check(re.search(r"^bloomkit %s\b" % cmd, listing, re.M), "CLI.md's command list shows %s" % cmd)
    table = cli.split("## Filter types", 1)[1].split("\n## ", 1)[0]
    for t in all_t:
        check("| `%s`" % t in table, "CLI.md's type table has %s" % t)
    check("--window" in cli and "## Aging filters" in cli and "bloomkit grow" in cli, "CLI.md: aging, grow")
    guide = doc("docs", "GUIDE.md")
    which = guide.split("## 1. Which filter?", 1)[1].split("\n## ", 1)[0]
    rows = [l for l in which.splitlines() if l.startswith("| `")]
    for t in all_t:
        check(any(r.startswith("| `%s`" % t) for r in rows), "GUIDE's Which filter? table has %s" % t)
    check("Python class" in which, "GUIDE's table names the Python class of each type")
    check(not re.search(r"keep two filters", guide), "GUIDE advises an aging filter for time windows")
    # the types that delete, as remove --help, the refusal, CLI.md and the manual say
    overview_line = [l for l in run(["--help"], expect=0)[1].decode().splitlines() if l.startswith("  remove ")]
    listing_line = [l for l in listing.splitlines() if l.startswith("bloomkit remove ")]
    remove_help = re.sub(r"\s+", " ", run(["remove", "--help"], expect=0)[1].decode())
    check(len(overview_line) == 1 and "quotient" in overview_line[0], "--help: %r" % overview_line)
    check(len(listing_line) == 1 and "quotient" in listing_line[0], "CLI.md: %r" % listing_line)
    check("from a counting, cuckoo or quotient filter" in remove_help, remove_help)

    # defaults: a scalable filter made without options, read back from its file (format 6.4: the
    # body starts at 64; r is the f64 at body offset 16, growth the u32 at 32)
    run(["create", "-q", "s.bf", "-n", "1000", "-p", "1%", "--type", "scalable"], expect=0)
    data = read("s.bf")
    r = struct.unpack_from("<d", data, 64 + 16)[0]
    growth = struct.unpack_from("<I", data, 64 + 32)[0]
    check(0 < r < 1 and 1 <= growth <= 16, "read r %r, growth %r" % (r, growth))
    rs = "%g" % r
    gs = "%d" % growth
    create_help = re.sub(r"\s+", " ", run(["create", "--help"], expect=0)[1].decode())
    check(re.search(r"--ratio R .*?default %s\)" % re.escape(rs), create_help), "create --help: ratio default")
    check(re.search(r"--growth G .*?default %s\)" % gs, create_help), "create --help: growth default")
    if shutil_which("mandoc"):
        man = re.sub(r".\x08", "", subprocess.run(["mandoc", "-Tascii", os.path.join(TOP, "docs", "bloomkit.1")],
                                                  capture_output=True, check=True).stdout.decode())
        man = re.sub(r"\s+", " ", man)
        check(re.search(r"--ratio R .*?default %s\)" % re.escape(rs), man), "manual: ratio default")
        check(re.search(r"--growth G .*?default %s\)" % gs, man), "manual: growth default")
        check(re.search(r"remove FILE.{0,80}counting, cuckoo or quotient", man), "manual: quotient removes")
    check("`--ratio R` (default %s)" % rs in table and "`--growth G` (default %s;" % gs in table,
          "CLI.md's type table: scalable defaults")
    stated = {
        "docs/GUIDE.md": re.findall(r"\br = ([0-9.]+) by default", guide),
        "docs/REDIS.md": re.findall(r"`BF_TIGHTENING_RATIO r` \(ours\) \| ([0-9.]+)", doc("docs", "REDIS.md")),
        "docs/PYTHON.md": re.findall(r"Scalable\(.*?tightening=([0-9.]+)", doc("docs", "PYTHON.md")),
        "python/bloomkit/__init__.pyi": re.findall(r"tightening: float = ([0-9.]+)",
                                                   doc("python", "bloomkit", "__init__.pyi")),
    }
    for where, values in stated.items():
        check(values and all(v == rs for v in values), "%s states the tightening default %r, the code's is %s"
              % (where, values, rs))
    check(re.findall(r"Scalable\(.*?growth=([0-9]+)", doc("docs", "PYTHON.md")) == [gs], "PYTHON.md: growth")
    # the default type and build's default -p, as --help says
    check("(default: bloom)" in run(["--help"], expect=0)[1].decode(), "--help names the default type")
    check(info("s.bf")["type"] == "scalable", "explicit type")
    run(["create", "-q", "d.bf", "-n", "1000", "-p", "1%"], expect=0)
    check(info("d.bf")["type"] == "bloom", "create without --type makes a bloom filter")
    run(["build", "-q", "b.bf"], input=b"a\nb\n", expect=0)
    build_help = run(["build", "--help"], expect=0)[1].decode()
    m = re.search(r"-p, --fpr P +target false-positive rate \(default ([0-9.]+)%\)", build_help)
    check(m and abs(info("b.bf")["fpr_target"] - float(m.group(1)) / 100) < 1e-12, "build's default -p")


@group
def test_demo():
    """scripts/demo.sh (make demo) on a smaller crawl: it shows the commands as the reader can type them
    (the binary's real path when bloomkit is not on the PATH, "bloomkit" when it is), finds no false
    negative, and ends by saying where the command is and three things to try, which work as printed."""
    import re
    real = os.path.realpath(BIN)
    os.makedirs("b/src/cli")
    os.symlink(real, "b/src/cli/bloomkit")
    env = dict(os.environ, BK_DEMO_SEEN="20000", BK_DEMO_UNSEEN="10000",
               PATH=":".join(d for d in os.environ.get("PATH", "/usr/bin:/bin").split(":")
                             if not os.path.exists(os.path.join(d, "bloomkit"))))
    demo = os.path.join(TOP, "scripts", "demo.sh")
    p = subprocess.run(["sh", demo, "b"], capture_output=True, text=True, env=env, timeout=600)
    check(p.returncode == 0, "demo: %s\n%s" % (p.stdout[-2000:], p.stderr))
    out = p.stdout
    shown = re.findall(r"^\$ (\S+) (build|info|filter) ", out, re.M)
    check(len(shown) == 4 and all(cmd == real for cmd, _ in shown), "commands shown with the real path: %r" % shown)
    check(not re.search(r"^\$ bloomkit ", out, re.M), "no '$ bloomkit' when it is not on the PATH")
    check("false negatives: must be 0" in out and re.search(r"seen URLs kept by filter: +0 ", out), out)
    tail = out.rsplit("\nThe bloomkit command is ", 1)
    check(len(tail) == 2 and tail[1].startswith(real + ";") and "not on your PATH" in tail[1], out[-1500:])
    tries = re.findall(r"^ {7}(.+)$", tail[1], re.M)
    check("Three things to try:" in tail[1] and len(tries) == 3, tail[1])
    for t in tries:    # each works as printed (from the directory the demo ran in)
        q = subprocess.run(["sh", "-c", t], capture_output=True, text=True, env=env, timeout=600)
        check(q.returncode == 0 and q.stdout.strip(), "%s: %s %s" % (t, q.stdout[-300:], q.stderr))
    # with the binary's folder on the PATH, the commands are shown as plain bloomkit
    env["PATH"] = os.path.dirname(real) + ":" + env["PATH"]
    p = subprocess.run(["sh", demo, "b"], capture_output=True, text=True, env=env, timeout=600)
    check(p.returncode == 0 and len(re.findall(r"^\$ bloomkit (build|info|filter) ", p.stdout, re.M)) == 4,
          p.stdout[-1500:])
    check("(on your PATH)" in p.stdout, p.stdout[-600:])


def shutil_which(name):
    import shutil
    return shutil.which(name)


@group
def test_completions():
    # bash: source the script, set COMP_WORDS, call the function; zsh: syntax, and its list helpers.
    bash_script = os.path.join(TOP, "completions", "bloomkit.bash")
    zsh_script = os.path.join(TOP, "completions", "_bloomkit")
    if not shutil_which("bash"):
        raise Skip("bash is not installed")

    def complete(words, cword):
        sh = 'source "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=%d; _bloomkit; printf "%%s\\n" "${COMPREPLY[@]}"' % cword
        p = subprocess.run(["bash", "-c", sh, "bash", bash_script, BIN] + words, capture_output=True, text=True,
                           timeout=60)
        check(p.returncode == 0 and p.stderr == "", "completion %r: %s" % (words, p.stderr))
        return set(l for l in p.stdout.splitlines() if l)

    cmds = commands()
    check(complete([""], 1) >= set(cmds) | {"--help", "--version"}, "every command")
    check(complete(["fi"], 1) == {"filter"}, "a command's prefix")
    check(complete(["help", "me"], 2) == {"merge"}, "help COMMAND")
    for cmd in cmds:
        got = complete([cmd, "-"], 2)
        check(got >= help_options(cmd), "%s: options %s" % (cmd, sorted(help_options(cmd) - got)))
    check(complete(["create", "x.bf", "--type", ""], 4) == set(types()), "every type after --type")
    check(complete(["build", "x.bf", "-t", "c"], 4) == {t for t in types() if t.startswith("c")}, "type prefix")
    check(complete(["create", "x.bf", "-n", ""], 4) == set(), "no files where a number goes")
    write("seen.bf", b"")
    check("seen.bf" in complete(["info", "se"], 2), "file names for operands")
    check(complete(["add", "seen.bf", "--", "-"], 4) == set(), "operands only after --")
    if not shutil_which("zsh"):
        print("SKIP completions/zsh: zsh is not installed")
        return
    p = subprocess.run(["zsh", "-n", zsh_script], capture_output=True, text=True)
    check(p.returncode == 0 and not p.stderr, "zsh -n: %s" % p.stderr)
    # the helpers the completion function calls, in zsh, without the completion system
    prog = 'eval "$(sed "/^_bloomkit \\"\\$@\\"$/d" "$1")"; words=("$2" filter); ' \
           'print -l -- "${(f)$(_bloomkit_commands)}" = "${(f)$(_bloomkit_types)}" = "${(f)$(_bloomkit_options filter)}"'
    # LeakSanitizer's exit-time thread stop stalls when zsh runs a sanitizer build of the command in a
    # command substitution; the other groups check the same binary for leaks.
    env = dict(os.environ, ASAN_OPTIONS=os.environ.get("ASAN_OPTIONS", "") + ":detect_leaks=0")
    p = subprocess.run(["zsh", "-fc", prog, "zsh", zsh_script, BIN], capture_output=True, text=True, timeout=60,
                       env=env)
    check(p.returncode == 0, "zsh helpers: %s" % p.stderr)
    c, t, o = (set(x.split("\n")) - {""} for x in p.stdout.split("\n=\n"))
    check(c == set(cmds) and t == set(types()) and o >= help_options("filter"), "zsh lists: %r" % p.stdout)


@group
def test_readme_c():
    # README's first C example compiles as written (inside a main function, with the library's headers).
    import re
    readme = open(os.path.join(TOP, "README.md")).read()
    block = re.findall(r"```c\n(.*?)```", readme, re.S)[0]
    includes = [l for l in block.splitlines() if l.startswith("#include")]
    body = [l for l in block.splitlines() if not l.startswith("#include")]
    src = "\n".join(includes) + "\nint main(void)\n{\n" + "\n".join(body) + "\n    return 0;\n}\n"
    write("readme.c", src.encode())
    cc = shutil_which("cc") or shutil_which("gcc")
    if not cc:
        raise Skip("no C compiler")
    p = subprocess.run([cc, "-std=c11", "-Wall", "-Wextra", "-Werror", "-Wno-unused-variable", "-c", "-I",
                        os.path.join(TOP, "include"), "readme.c", "-o", "readme.o"], capture_output=True, text=True)
    check(p.returncode == 0, "README's first C example:\n%s\n%s" % (src, p.stderr))


def main():
    global BIN
    if len(sys.argv) != 3:
        sys.exit("usage: test_cli.py BLOOMKIT GROUP")
    BIN = os.path.abspath(sys.argv[1])
    names = list(GROUPS) if sys.argv[2] == "all" else [sys.argv[2]]
    failed = skipped = 0
    for name in names:
        if name not in GROUPS:
            sys.exit("unknown group " + name)
        with tempfile.TemporaryDirectory(prefix="bloomkit-cli-") as d:
            os.chdir(d)
            t0 = time.time()
            try:
                GROUPS[name]()
                print("PASS %s (%.1f s)" % (name, time.time() - t0))
            except Failure as e:
                print("FAIL %s: %s" % (name, e))
                failed += 1
            except Skip as e:
                print("SKIP %s: %s" % (name, e))
                skipped += 1
            finally:
                os.chdir("/")
    sys.exit(1 if failed else 77 if skipped == len(names) else 0)  # 77: CTest's SKIP_RETURN_CODE


# ---------------------------------------------------------------------------------------------
@group
def test_ribbon():
    # build at rates that are not powers of two: every key found, the FPR measured on absent keys
    # near the p asked for, the size near log2(1/p) bits per key; duplicates change nothing
    keys = urls(100000)
    write("k.txt", lines(keys))
    write("dup.txt", lines(keys[50000:] + keys + keys[:1000]))
    absent = urls(200000, host="absent.test")
    write("absent.txt", lines(absent))
    for p in (0.1, 0.01, 0.0037, 0.001):
        run(["build", "-q", "r.bf", "k.txt", "--type", "ribbon", "-p", repr(p)], expect=0)
        i = info("r.bf")
        check(i["type"] == "ribbon" and i["count"] == 100000, i)
        check(i["fpr_target"] <= p and i["fpr_target"] > 0.99 * p, i)
        bound = math.log2(1 / p)
        check(i["bits_per_key"] <= 1.07 * bound, "p=%g: %.3f bits/key vs bound %.3f" % (p, i["bits_per_key"], bound))
        rc, out, err = run(["query", "r.bf"], input=read("k.txt"), expect=0)
        check(out.count(b"\tabsent\n") == 0, "p=%g: a key of the set answered absent" % p)
        rc, out, err = run(["query", "r.bf"], input=read("absent.txt"))
        fp = out.count(b"\tpresent\n")
        sigma = math.sqrt(200000 * p)
        check(abs(fp - 200000 * i["fpr_target"]) <= 4 * sigma + 1, "p=%g: %d false positives of 200,000" % (p, fp))
        # input with duplicates, in another order: the very same file
        run(["build", "-q", "d.bf", "dup.txt", "--type", "ribbon", "-p", repr(p)], expect=0)
        check(read("d.bf") == read("r.bf"), "p=%g: duplicates and order change no byte" % p)
    # the text info names the geometry; calc has a ribbon line
    rc, out, err = run(["info", "r.bf"], expect=0)
    check(b"type:               ribbon" in out and b"9 or 10 fingerprint bits" in out, out)
    rc, out, err = run(["calc", "-n", "1M", "-p", "0.1%", "--type", "ribbon", "--json"], expect=0)
    t = json.loads(out)["types"][0]
    check(t["type"] == "ribbon" and t["bits_per_key"] < 10.5 and t["fpr"] <= 0.001, t)
    # bad p: a clear message, nothing written
    for bad in ("0", "1", "2", "-0.5", "1e-10"):
        rc, out, err = run(["build", "x.bf", "k.txt", "--type", "ribbon", "-p", bad], expect=2)
        check(err.strip() and not os.path.exists("x.bf"), "-p %s: %r" % (bad, err))
    # an empty key set builds the empty filter: every key absent
    write("empty.txt", b"")
    run(["build", "-q", "e.bf", "empty.txt", "--type", "ribbon"], expect=0)
    check(info("e.bf")["count"] == 0, "empty")
    rc, out, err = run(["query", "e.bf"], input=read("k.txt"), expect=1)
    check(out.count(b"\tpresent\n") == 0, "the empty filter answers absent")


# ---------------------------------------------------------------------------------------------
@group
def test_quotient_expanding():
    # An expanding quotient filter (the library's bk_xquotient_new; its golden file, body 5): grown
    # by the default `bloomkit grow` in place at its error rate, filled through `bloomkit add` (which
    # doubles it when full), every key present, the bound within p; removal and growth that spends
    # the error rate refused, the file unchanged.
    import shutil
    shutil.copy(os.path.join(TOP, "tests", "golden", "quotient-expanding-v1.0.bkf"), "x.bf")
    i0 = info("x.bf")
    check(i0["type"] == "quotient", "an expanding filter is a quotient filter: %r" % i0)
    rc, out, err = run(["grow", "x.bf", "--times", "3"])
    check(rc == 0 and "above" not in err, "grow x3 at the error rate: %s" % err)
    i1 = info("x.bf")
    check(i1["capacity"] == 8 * i0["capacity"], "capacity x8: %r -> %r" % (i0["capacity"], i1["capacity"]))
    keys = urls(60000)
    run(["add", "-q", "x.bf"], input=lines(keys), expect=0)
    rc, out, err = run(["query", "x.bf"], input=lines(keys))
    check(rc == 0 and out.count(b"\tpresent\n") == 60000, "every key present after growth and adds")
    i2 = info("x.bf")
    check(i2["capacity"] > i1["capacity"] and i2["fpr_now"] <= 0.01, "doubled by the adds, bound within p: %r" % i2)
    absent = urls(100000, host="absent.example")
    rc, out, err = run(["query", "x.bf"], input=lines(absent))
    fpr = out.count(b"\tpresent\n") / 100000.0
    check(fpr <= 0.011, "FPR on absent keys within 1.1 p: %g" % fpr)
    before = open("x.bf", "rb").read()
    rc, out, err = run(["remove", "-q", "x.bf"], input=lines(keys[:10]))
    check(rc == 2, "removal refused: %s" % err)
    for opt in ("--spend-fpr", "--in-place"):
        rc, out, err = run(["grow", "x.bf", opt])
        check(rc == 2 and "nothing was written" in err, "grow %s refused: %s" % (opt, err))
    write("o.txt", lines(keys[:100]))
    run(["build", "-q", "--force", "o.bf", "o.txt", "-n", "1000", "--type", "quotient"], expect=0)
    rc, out, err = run(["merge", "x.bf", "x.bf", "o.bf"])
    check(rc == 2, "merge refused: %s" % err)
    check(open("x.bf", "rb").read() == before, "refused commands leave the file unchanged")

    # bloomkit create --type quotient --expanding: made for 2,000 keys, fed 120,000 (past six
    # doublings) in four `add` runs; no key lost, the FPR measured on 200,000 absent keys within
    # 1.1 p, and info names what it is: expanding, its doublings, slot width and FPR bound.
    rc, out, err = run(["create", "e.bf", "-n", "2000", "-p", "1%", "--type", "quotient", "--expanding",
                        "--seed", "7"])
    check(rc == 0 and "expanding quotient filter" in err and "slot bits 11" in err, "create --expanding: %s" % err)
    e0 = info("e.bf")
    check(e0["expanding"] is True and e0["doublings"] == 0 and e0["slot_bits"] == 11 and e0["seed"] == 7,
          "a new expanding filter: %r" % e0)
    keys = urls(120000, host="expanding.example")
    for part in range(4):
        run(["add", "-q", "e.bf"], input=lines(keys[part * 30000:(part + 1) * 30000]), expect=0)
    rc, out, err = run(["query", "e.bf"], input=lines(keys))
    check(rc == 0 and out.count(b"\tpresent\n") == 120000, "no false negative after the doublings")
    e1 = info("e.bf")
    check(e1["expanding"] is True and e1["doublings"] >= 6 and e1["count"] == 120000, "doubled by the adds: %r" % e1)
    check(e1["slot_bits"] >= 11 and e1["fpr_target"] == 0.01 and 0 < e1["fpr_bound"] <= 0.01
          and not e1["saturated"], "slot width and bound within p: %r" % e1)
    absent = urls(200000, host="absent-expanding.example")
    rc, out, err = run(["query", "e.bf"], input=lines(absent))
    fpr = out.count(b"\tpresent\n") / 200000.0
    check(fpr <= 0.011, "FPR on absent keys within 1.1 p: %g (bound %g)" % (fpr, e1["fpr_bound"]))
    rc, out, err = run(["info", "e.bf"], expect=0)
    text = out.decode()
    check("expanding:          yes: %d doublings so far" % e1["doublings"] in text
          and "%d-bit slots" % e1["slot_bits"] in text and "FPR bound:" in text and "within the 1% target" in text,
          "info shows expanding, doublings, slot width, bound vs target:\n%s" % text)
    check(info("o.bf")["expanding"] is False, "a plain quotient filter is not expanding")
    # build makes one the same way (same seed and keys: it answers as the created one)
    write("e.txt", lines(keys))
    run(["build", "-q", "b.bf", "e.txt", "-n", "2000", "--type", "quotient", "--expanding", "--seed", "7"], expect=0)
    eb = info("b.bf")
    check(eb["expanding"] is True and eb["doublings"] == e1["doublings"] and eb["count"] == 120000,
          "build --expanding: %r" % eb)
    rc, out2, err = run(["query", "b.bf"], input=lines(absent))
    fpr_b = out2.count(b"\tpresent\n") / 200000.0
    check(fpr_b <= 0.011, "the built filter's FPR on absent keys within 1.1 p: %g" % fpr_b)
    rc, out, err = run(["calc", "-n", "1M", "-p", "1%", "--type", "quotient", "--expanding"])
    check(rc == 0 and b"expanding" in out, "calc --expanding: %r" % out)
    # calc states the table create makes (it repeats the library's first-width rule): same slots,
    # slot width and bytes for a spread of n and p
    for n, p in (("1000", "10%"), ("2000", "1%"), ("100000", "0.1%"), ("77777", "0.01%"), ("3000000", "1e-6")):
        rc, out, err = run(["calc", "-n", n, "-p", p, "--type", "quotient", "--expanding", "--json"], expect=0)
        c = json.loads(out)["types"][0]
        run(["create", "--force", "w.bf", "-n", n, "-p", p, "--type", "quotient", "--expanding"], expect=0)
        w = info("w.bf")
        check(c["fingerprint_bits"] == w["slot_bits"] and ("%d slots" % w["slots"]) in c["note"],
              "calc --expanding at n=%s p=%s states the created table: %r vs %r" % (n, p, c, w))
    rc, out, err = run(["calc", "-n", "1M", "-p", "1%", "--expanding", "--doublings", "1"])
    check(rc == 2 and "--doublings does not apply to an expanding filter" in err, "calc refuses both: %s" % err)
    # refused: another type, --doublings with it; nothing written, an existing file kept
    for args, words in ((["--expanding"], "--expanding does not apply to bloom filters"),
                        (["--type", "cuckoo", "--expanding"], "--expanding does not apply to cuckoo filters"),
                        (["--type", "quotient", "--expanding", "--doublings", "2"],
                         "--doublings does not apply to an expanding filter")):
        rc, out, err = run(["create", "n.bf", "-n", "1000", "-p", "1%"] + args)
        check(rc == 2 and words in err and not os.path.exists("n.bf"), "create %s refused: %s" % (args, err))
        rc, out, err = run(["build", "n.bf", "e.txt", "-n", "1000", "-p", "1%"] + args)
        check(rc == 2 and words in err and not os.path.exists("n.bf"), "build %s refused: %s" % (args, err))
    kept = read("e.bf")
    rc, out, err = run(["create", "--force", "e.bf", "-n", "1000", "-p", "1%", "--type", "fuse", "--expanding"])
    check(rc == 2 and "--expanding does not apply to fuse" in err and read("e.bf") == kept,
          "a refused --force leaves the file: %s" % err)


# ---------------------------------------------------------------------------------------------
@group
def test_quotient():
    # A quotient filter built, grown twice without its keys, merged with a filter it grew from, and
    # a union too large for its target refused with the file unchanged.
    keys = urls(40000)
    write("q1.txt", lines(keys[:20000]))
    write("q2.txt", lines(keys[20000:]))
    # --doublings 2: two remainder bits of room, so two doublings keep the 1% error rate
    run(["build", "-q", "--force", "q1.bf", "q1.txt", "-n", "20000", "--type", "quotient", "--seed", "5",
         "--doublings", "2"], expect=0)
    run(["build", "-q", "--force", "q2.bf", "q2.txt", "-n", "20000", "--type", "quotient", "--seed", "5",
         "--doublings", "2"], expect=0)
    check(info("q1.bf")["type"] == "quotient", "type quotient")
    before = open("q1.bf", "rb").read()
    rc, out, err = run(["merge", "q1.bf", "q1.bf", "q2.bf"])
    check(rc == 2 and "grow it first" in err, "a union over the size is refused: %s" % err)
    check(open("q1.bf", "rb").read() == before, "refused merge leaves the file unchanged")
    rc, out, err = run(["grow", "q1.bf", "--times", "2"])
    check(rc == 0 and "error rate at capacity" in err and "above" not in err, "grow x2 within the target: %s" % err)
    i1 = info("q1.bf")
    check(i1["capacity"] == 80000, "capacity doubled twice: %d" % i1["capacity"])
    # with no room, --in-place refuses (the file unchanged); --spend-fpr grows anyway; by default a
    # stage is added: every key stays present, the error rate at capacity within 1.1 p, merge refused
    run(["build", "-q", "--force", "q4.bf", "q2.txt", "-n", "20000", "--type", "quotient"], expect=0)
    before4 = open("q4.bf", "rb").read()
    rc, out, err = run(["grow", "q4.bf", "--in-place"])
    check(rc == 2 and "error rate at capacity" in err and "nothing was written" in err, "grow past p: %s" % err)
    check(open("q4.bf", "rb").read() == before4, "refused growth leaves the file unchanged")
    rc, out, err = run(["grow", "q4.bf", "--in-place", "--spend-fpr"], expect=2)
    run(["build", "-q", "--force", "q6.bf", "q2.txt", "-n", "20000", "--type", "quotient"], expect=0)
    rc, out, err = run(["grow", "q4.bf", "--spend-fpr"])
    check(rc == 0 and "above the target" in err, "--spend-fpr grows and says the cost: %s" % err)
    rc, out, err = run(["grow", "q6.bf", "--times", "3"])
    check(rc == 0 and "above" not in err and "stages 1 -> 4" in err, "grow by stages: %s" % err)
    i6 = info("q6.bf")
    check(i6["capacity"] == 160000 and i6["fpr_now"] <= 0.011, "capacity x8 by stages at p: %r" % i6)
    run(["add", "-q", "q6.bf"], input=lines(keys[:20000]), expect=0)
    rc, out, err = run(["query", "q6.bf"], input=lines(keys))
    check(rc == 0 and out.count(b"\tpresent\n") == 40000, "every key present across the stages")
    rc, out, err = run(["merge", "q6.bf", "q6.bf", "q2.bf"])
    check(rc == 2 and "grown by stages" in err, "a filter of stages is not merged: %s" % err)
    rc, out, err = run(["build", "-q", "--force", "q5.bf", "q2.txt", "-n", "100", "--doublings", "1"])
    check(rc == 2 and "--doublings does not apply to bloom" in err, "--doublings is quotient's: %s" % err)
    run(["merge", "-q", "q1.bf", "q1.bf", "q2.bf"], expect=0)
    rc, out, err = run(["query", "q1.bf"], input=lines(keys))
    check(rc == 0 and out.count(b"\tpresent\n") == 40000, "every key present after growth and merge")
    # the grown filter cannot be merged into the ungrown one (a remainder bit is gone)
    rc, out, err = run(["merge", "q3.bf", "q2.bf", "q1.bf"])
    check(rc == 2 and "cannot be merged" in err, "grown into ungrown refused: %s" % err)
    # remove through the CLI, and grow refuses other types and the remainder limit
    rc, out, err = run(["remove", "-q", "q1.bf"], input=lines(keys[:100]))
    check(rc == 0, "remove: %s" % err)
    run(["build", "-q", "--force", "b.bf", "q2.txt", "-n", "20000"], expect=0)
    rc, out, err = run(["grow", "b.bf"])
    check(rc == 2 and "cannot grow" in err, "grow of a bloom filter refused: %s" % err)
    rc, out, err = run(["grow", "q2.bf", "--times", "24", "--spend-fpr"])
    check(rc == 2 and "nothing was written" in err, "growth past 2 remainder bits refused: %s" % err)
    # a full quotient filter says how to make room: bloomkit grow, with the file's name
    run(["create", "-q", "full.bf", "-n", "100", "-p", "1%", "--type", "quotient"], expect=0)
    many = lines([b"f%d" % i for i in range(1000)])
    for cmd in (["add", "full.bf"], ["filter", "--add", "full.bf"]):
        rc, out, err = run(cmd, input=many, expect=2)
        check("the filter is full" in err and "bloomkit grow full.bf" in err, err)
    print("  quotient: build, grow x2, merge, remove, refusals, full")


def _changed_while_running(cmd, change, first_lines, wait_output):
    """Runs bloomkit cmd reading stdin; after the first keys (and, with wait_output, their output), calls
    change() on the file, then sends many more keys. Returns (rc, stdout, stderr)."""
    p = subprocess.Popen([BIN] + cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    out = b""
    try:
        p.stdin.write(b"".join(b"first-%d\n" % i for i in range(first_lines)))
        p.stdin.flush()
        deadline = time.monotonic() + 60
        target = os.path.realpath(cmd[-1])
        writer = cmd[0] == "add" or "--add" in cmd
        while time.monotonic() < deadline:  # the command has the file mapped (and marked, if it writes)
            with open("/proc/%d/maps" % p.pid) as m:
                if target in m.read() and (not writer or read(target)[16] & 1):
                    break
            time.sleep(0.01)
        while wait_output and out.count(b"\n") < first_lines and time.monotonic() < deadline:
            ready, _, _ = select.select([p.stdout], [], [], 1)
            if ready:
                got = os.read(p.stdout.fileno(), 1 << 20)
                if not got:
                    break
                out += got
        change()
        try:
            p.stdin.write(b"".join(b"second-%d\n" % i for i in range(300000)))
            p.stdin.close()
        except BrokenPipeError:
            pass
        p.stdin = None
        rest, err = p.communicate(timeout=120)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    return p.returncode, out + rest, err.decode("utf-8", "replace")


@group
def test_changed_underneath():
    # A mapped filter file truncated, or copied over in place (cp writes into the same inode), while
    # filter / add use it: exit 2 with a message naming the file, the complete lines already produced
    # written out, never a bare SIGBUS. Replacing the file by rename is safe: the command keeps the old
    # file's contents.
    run(["create", "big.bf", "-n", "20M", "-p", "1%"], expect=0)
    run(["create", "other.bf", "-n", "20M", "-p", "1%", "--seed", "9"], expect=0)
    write("small.txt", lines(urls(100)))
    run(["build", "-q", "small.bf", "small.txt", "-n", "100"], expect=0)
    shutil.copyfile("big.bf", "big0.bf")
    small = read("small.bf")
    changes = {
        "truncate": lambda: os.truncate("big.bf", 0),
        "cp": lambda: shutil.copyfile("small.bf", "big.bf"),
    }
    sent = set(b"first-%d" % i for i in range(1000)) | set(b"second-%d" % i for i in range(300000))
    for cmd in (["filter", "--line-buffered", "big.bf"], ["filter", "big.bf"], ["filter", "--add", "big.bf"],
                ["add", "big.bf"]):
        for how, change in changes.items():
            shutil.copyfile("big0.bf", "big.bf")
            waited = "--line-buffered" in cmd
            rc, out, err = _changed_while_running(cmd, change, 1000, waited)
            what = "%s, %s" % (" ".join(cmd), how)
            check(rc == 2, "%s: exit %d, expected 2 (stderr: %s)" % (what, rc, err))
            check("big.bf: the file changed while in use" in err and "renaming" in err, "%s: message: %s" % (what, err))
            check(out == b"" or out.endswith(b"\n"), "%s: a partial line was written" % what)
            printed = out.split(b"\n")[:-1]
            check(all(k in sent for k in printed), "%s: a line that was not sent" % what)
            if waited:
                check(len(printed) >= 1000, "%s: the lines printed before the change are kept (%d)" % (what, len(printed)))
            if how == "cp":
                check(read("big.bf") == small, "%s: the file copied over is left as it was copied" % what)
    # a file of the same size written over an in-place add without truncating it (dd conv=notrunc): no
    # SIGBUS, but the close sees the change and leaves the new file as it is (its checksum is not
    # recomputed over the add's writes)
    shutil.copyfile("big0.bf", "big.bf")
    header = read("other.bf")[:64]

    def overwrite():
        with open("big.bf", "r+b") as f:
            f.write(read("other.bf"))
    rc, out, err = _changed_while_running(["add", "big.bf"], overwrite, 1000, False)
    check(rc == 2 and "the file changed while in use" in err and "without this command's keys" in err,
          "same-size copy over an add: exit %d: %s" % (rc, err))
    check(read("big.bf")[:64] == header, "the copied file's header is not rewritten")
    # replacing by rename while a query runs is safe: the command keeps answering from the old file
    shutil.copyfile("big0.bf", "big.bf")
    run(["add", "-q", "big.bf", "kept-key"], expect=0)

    def rename_over():
        shutil.copyfile("small.bf", "new.bf")
        os.rename("new.bf", "big.bf")
    rc, out, err = _changed_while_running(["filter", "--present", "big.bf"], rename_over, 10, False)
    check(rc == 0 and err == "", "rename over a running filter: exit %d: %s" % (rc, err))
    print("  changed underneath: filter, filter --add, add x truncate, cp; same-size cp; rename is safe")
@group
def test_sketches():
    # top: the k most frequent lines, as sort | uniq -c | sort -rn | head, on a skewed stream
    rng = random.Random(7)
    words = [b"w%d" % min(int(rng.paretovariate(1.0)), 100000) for _ in range(100000)]
    write("words.txt", lines(words))
    counts = {}
    for w in words:
        counts[w] = counts.get(w, 0) + 1
    truth = sorted(counts.items(), key=lambda kv: -kv[1])[:10]
    rc, out, err = run(["top", "-q", "-k", "10", "words.txt"], expect=0)
    got = [l.split(None, 1) for l in out.splitlines()]
    check(len(got) == 10, "ten lines: %r" % out)
    check({w for _, w in got} == {w for w, _ in truth}, "the true top 10: %r vs %r" % (got, truth))
    for n, w in got:
        check(int(n) <= counts[w] and int(n) >= counts[w] * 0.95, "count of %r: %s vs %d" % (w, n, counts[w]))
    check(out.splitlines()[0] == b"%7d %s" % (truth[0][1], truth[0][0]), "uniq -c's format: %r" % out.splitlines()[0])
    rc, out2, err = run(["top", "-q", "-k", "10"], input=lines(words), expect=0)
    check(out2 == out, "stdin as the file, and the same answer twice")
    rc, out, err = run(["top", "-q", "-k", "2", "--null"], input=b"a\0b\0a\0", expect=0)
    check(out == b"      2 a\0      1 b\0", "NUL-delimited: %r" % out)
    run(["top", "-k", "0"], expect=2)
    run(["top", "--decay", "2"], expect=2)
    # count: a count-min sketch file made by --add, asked per key, merged, verified, damage refused
    run(["count", "-q", "--add", "hits.bkf", "words.txt"], expect=0)
    rc, out, err = run(["count", "hits.bkf", "w1", "w2", "nothere"], expect=0)
    est = [l.split(b"\t") for l in out.splitlines()]
    check([k for _, k in est] == [b"w1", b"w2", b"nothere"], "keys echoed: %r" % out)
    for n, k in est:
        true = counts.get(k, 0)
        check(true <= int(n) <= true + 0.001 * len(words), "estimate of %r: %s vs %d" % (k, n, true))
    rc, out, err = run(["count", "hits.bkf"], input=b"w1\nw3\n", expect=0)
    check(out == b"%d\tw1\n%d\tw3\n" % (int(est[0][0]), counts[b"w3"]) or out.startswith(b"%d\tw1\n" % int(est[0][0])),
          "keys from stdin: %r" % out)
    run(["count", "-q", "--add", "hits.bkf", "words.txt"], expect=0)  # again: counts double
    rc, out, err = run(["count", "hits.bkf", "w1"], expect=0)
    check(int(out.split(b"\t")[0]) == 2 * int(est[0][0]), "counts add up over runs: %r" % out)
    run(["count", "-q", "--add", "--width", "100", "--depth", "3", "--conservative", "small.bkf", "words.txt"], expect=0)
    i = info("small.bkf")
    check(i["type"] == "cms" and (i["width"], i["depth"], i["conservative"]) == (100, 3, True)
          and i["count"] == len(words) and "fpr_now" not in i and "capacity" not in i, "info --json of a sketch: %r" % i)
    rc, out, err = run(["info", "small.bkf"], expect=0)
    check(b"count-min sketch" in out and b"100 x 3 counters (conservative update)" in out and b"FPR" not in out
          and b"capacity" not in out, "info of a sketch says what it is, not a filter's fields: %r" % out)
    run(["verify", "hits.bkf"], expect=0)
    # merge: sketches of the same width, depth and seed add up
    run(["count", "-q", "--add", "h1.bkf", "words.txt"], expect=0)
    rc, out, err = run(["merge", "sum.bkf", "h1.bkf", "hits.bkf"], expect=0)
    check(b"cms sketch, 2000 x 7 counters, total count 300,000" in err.encode() or "total count 300,000" in err,
          "merge summary: %s" % err)
    rc, out, err = run(["count", "sum.bkf", "w1"], expect=0)
    check(int(out.split(b"\t")[0]) == 3 * int(est[0][0]), "merged counts add up: %r" % out)
    rc, out, err = run(["merge", "x.bkf", "hits.bkf", "small.bkf"])
    check(rc == 2, "sketches of other dimensions do not merge: %s" % err)
    data = bytearray(read("hits.bkf"))
    data[200] ^= 1
    write("bad.bkf", bytes(data))
    rc, out, err = run(["count", "bad.bkf", "w1"])
    check(rc == 2 and "bad.bkf" in err, "a damaged sketch is refused: %s" % err)
    write("f.txt", b"x\n")
    run(["build", "-q", "f.bf", "f.txt", "-n", "10"], expect=0)
    rc, out, err = run(["count", "f.bf", "x"])
    check(rc == 2 and "not a count-min sketch" in err, "a filter is not a sketch: %s" % err)
    rc, out, err = run(["count", "--add", "--width", "10", "x.bkf"], input=b"")
    check(rc == 2 and "together" in err, "--width needs --depth: %s" % err)
    print("  sketches: top = sort | uniq -c | sort -rn | head on 100,000 lines; count --add, query, errors")


if __name__ == "__main__":
    main()
