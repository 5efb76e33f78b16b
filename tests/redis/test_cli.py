"""The same commands through redis-cli (the shell users' client), in RESP2 and RESP3."""


def lines(out):
    return [l for l in out.splitlines() if l.strip() != ""]


def test_cli_bf_session(server):
    out = server.cli("--no-raw", stdin=b"\n".join([
        b"BF.RESERVE f 0.01 1000",
        b"BF.ADD f apple",
        b"BF.ADD f apple",
        b"BF.EXISTS f apple",
        b"BF.EXISTS f pear",
        b"BF.MADD f pear plum",
        b"BF.CARD f",
        b"BF.INFO f CAPACITY",
        b"BF.RESERVE f 0.01 1000",
        b"BF.RESERVE g 2 1000",
        b"BF.INFO nokey",
        b"SET s v",
        b"BF.EXISTS s x",
    ]) + b"\n")
    assert lines(out) == [
        "OK",
        "(integer) 1",
        "(integer) 0",
        "(integer) 1",
        "(integer) 0",
        "1) (integer) 1",
        "2) (integer) 1",
        "(integer) 3",
        "1) (integer) 1000",
        "(error) ERR item exists",
        "(error) ERR (0 < error rate range < 1) ",
        "(error) ERR not found",
        "OK",
        "(error) WRONGTYPE Operation against a key holding the wrong kind of value",
    ]


def test_cli_cf_session(server):
    out = server.cli("--no-raw", stdin=b"\n".join([
        b"CF.RESERVE c 1000",
        b"CF.ADD c a",
        b"CF.ADDNX c a",
        b"CF.COUNT c a",
        b"CF.DEL c a",
        b"CF.DEL c a",
        b"CF.EXISTS c a",
        b"CF.DEL nokey a",
        b"CF.RESERVE c2 1",
        b"CF.INSERT c3 NOCREATE ITEMS a",
    ]) + b"\n")
    assert lines(out) == [
        "OK",
        "(integer) 1",
        "(integer) 0",
        "(integer) 1",
        "(integer) 1",
        "(integer) 0",
        "(integer) 0",
        "(error) Not found",
        "(error) Capacity must be at least (BucketSize * 2)",
        "(error) ERR not found",
    ]


def test_cli_resp3(server):
    out = server.cli("-3", "--no-raw", stdin=b"\n".join([
        b"BF.ADD f a",
        b"BF.EXISTS f b",
        b"BF.INFO f",
        b"CF.ADD c a",
        b"BF.RESERVE n 0.01 10 NONSCALING",
        b"BF.INFO n EXPANSION",
    ]) + b"\n")
    ls = lines(out)
    assert ls[0] == "(true)" and ls[1] == "(false)"
    assert ls[2] == "1# Capacity => (integer) 100"
    assert ls[3].startswith("2# Size => (integer)")
    assert ls[6] == "5# Expansion rate => (integer) 2"
    assert ls[7] == "(true)"
    assert ls[8] == "OK"
    assert ls[9] == "1# Expansion rate => (nil)"


def test_cli_raw_binary_roundtrip(server):
    # BK.EXPORT in raw mode writes the file-format bytes as they are; -x feeds them back to BK.IMPORT
    server.cli("BF.MADD", "f", "a", "b", "c")
    r = server.client()
    payload = r.execute_command("BK.EXPORT", "f")
    out = server.cli("-x", "BK.IMPORT", "g", stdin=payload)
    assert out.strip() == "OK"
    assert server.cli("BF.MEXISTS", "g", "a", "b", "c", "zz").split() == ["1", "1", "1", "0"]


def test_cli_command_docs(server):
    out = server.cli("--no-raw", "COMMAND", "INFO", "bf.add")
    assert "bf.add" in out and "write" in out and "denyoom" in out
    out = server.cli("--no-raw", "COMMAND", "INFO", "bf.exists")
    assert "readonly" in out and "fast" in out
    out = server.cli("COMMAND", "DOCS", "cf.reserve")
    assert "cuckoo" in out


def test_cli_every_command(server):
    """One happy path and one error path of every command, through redis-cli."""
    script = [
        ("BF.RESERVE b 0.01 100 EXPANSION 4", ["OK"]),
        ("BF.RESERVE b 0.01 100", ["(error) ERR item exists"]),
        ("BF.ADD b x", ["(integer) 1"]),
        ("BF.ADD b", ["(error) ERR wrong number of arguments for 'bf.add' command"]),
        ("BF.MADD b x y", ["1) (integer) 0", "2) (integer) 1"]),
        ("BF.MADD b", ["(error) ERR wrong number of arguments for 'bf.madd' command"]),
        ("BF.INSERT b2 CAPACITY 10 ERROR 0.001 ITEMS p q", ["1) (integer) 1", "2) (integer) 1"]),
        ("BF.INSERT b2 CAPACITY x ITEMS p", ["(error) Bad capacity"]),
        ("BF.EXISTS b y", ["(integer) 1"]),
        ("BF.EXISTS b", ["(error) ERR wrong number of arguments for 'bf.exists' command"]),
        ("BF.MEXISTS b x nope", ["1) (integer) 1", "2) (integer) 0"]),
        ("BF.MEXISTS b", ["(error) ERR wrong number of arguments for 'bf.mexists' command"]),
        ("BF.INFO b EXPANSION", ["1) (integer) 4"]),
        ("BF.INFO b NOPE", ["(error) Invalid information value"]),
        ("BF.CARD b", ["(integer) 2"]),
        ("BF.CARD", ["(error) ERR wrong number of arguments for 'bf.card' command"]),
        ("BF.SCANDUMP b x", ["(error) Second argument must be numeric"]),
        ("BF.LOADCHUNK b x y", ["(error) ERR Second argument must be numeric"]),
        ("BF.LOADCHUNK nob 5 abcd", ["(error) ERR received bad data"]),
        ("CF.RESERVE c 100 BUCKETSIZE 4 MAXITERATIONS 10 EXPANSION 0", ["OK"]),
        ("CF.RESERVE c2 1000 BUCKETSIZE 300", ["(error) BUCKETSIZE: value must be an integer between 1 and 255, inclusive."]),
        ("CF.ADD c x", ["(integer) 1"]),
        ("CF.ADD c", ["(error) ERR wrong number of arguments for 'cf.add' command"]),
        ("CF.ADDNX c x", ["(integer) 0"]),
        ("CF.ADDNX nocf", ["(error) ERR wrong number of arguments for 'cf.addnx' command"]),
        ("CF.INSERT c ITEMS y z", ["1) (integer) 1", "2) (integer) 1"]),
        ("CF.INSERT c FOO ITEMS y", ["(error) Unknown argument received"]),
        ("CF.INSERTNX c ITEMS y w", ["1) (integer) 0", "2) (integer) 1"]),
        ("CF.INSERTNX c CAPACITY 2 ITEMS y", ["(error) Capacity must be at least (BucketSize * 2)"]),
        ("CF.EXISTS c y", ["(integer) 1"]),
        ("CF.EXISTS b y", ["(error) WRONGTYPE Operation against a key holding the wrong kind of value"]),
        ("CF.MEXISTS c y nope", ["1) (integer) 1", "2) (integer) 0"]),
        ("CF.MEXISTS c", ["(error) ERR wrong number of arguments for 'cf.mexists' command"]),
        ("CF.COUNT c y", ["(integer) 1"]),
        ("CF.COUNT b y", ["(error) WRONGTYPE Operation against a key holding the wrong kind of value"]),
        ("CF.DEL c y", ["(integer) 1"]),
        ("CF.DEL nocf y", ["(error) Not found"]),
        ("CF.INFO c", ["1) Size", None, "3) Number of buckets", None, "5) Number of filters", "6) (integer) 1",
                       "7) Number of items inserted", "8) (integer) 3", "9) Number of items deleted",
                       "10) (integer) 1", "11) Bucket size", "12) (integer) 4", "13) Expansion rate",
                       "14) (integer) 0", "15) Max iterations", "16) (integer) 10"]),
        ("CF.INFO nocf", ["(error) ERR not found"]),
        ("CF.SCANDUMP c -1", ["(error) Invalid position"]),
        ("CF.LOADCHUNK c 0 x", ["(error) Invalid position"]),
        ("BK.MERGE m b", ["OK"]),
        ("BK.MERGE m c", ["(error) WRONGTYPE Operation against a key holding the wrong kind of value"]),
        ("BK.INFO m", None),
        ("BK.INFO nokey", ["(error) ERR not found"]),
        ("BK.EXPORT nokey", ["(error) ERR not found"]),
        ("BK.IMPORT i garbage", ["(error) ERR invalid payload: *"]),
        ("BK.CF.KICKSTATE c 12345", ["OK"]),
        ("BK.CF.KICKSTATE c 0", ["(error) ERR invalid kick state"]),
        ("BK.CF.KICKSTATE c 18446744073709551615", ["OK"]),
        ("BK.CF.KICKSTATE c 18446744073709551617", ["(error) ERR invalid kick state"]),
        ("BK.CF.KICKSTATE c -1", ["(error) ERR invalid kick state"]),
        ("BK.CF.KICKSTATE c 12x", ["(error) ERR invalid kick state"]),
    ]
    out = server.cli("--no-raw", stdin=("\n".join(c for c, _ in script) + "\n").encode())
    got = [l.strip() for l in out.splitlines() if l.strip()]
    pos = 0
    for cmd, want in script:
        if want is None:  # BK.INFO: a 26-line map; check its shape only
            assert got[pos] == "1) \"type\"" or got[pos].startswith("1) type"), (cmd, got[pos])
            pos += 26
            continue
        for w in want:
            if w is not None and w.endswith("*"):
                assert got[pos].startswith(w[:-1]), (cmd, got[pos], w)
            elif w is not None:
                assert got[pos] == w, (cmd, got[pos], w)
            pos += 1
    assert pos == len(got)
