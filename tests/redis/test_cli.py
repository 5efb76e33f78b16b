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
