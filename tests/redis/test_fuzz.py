"""Random garbage: a few thousand random commands with random arguments never crash the server, and
what they leave behind still saves, reloads and answers."""
import random

from resp import Conn, Err  # noqa: F401

COMMANDS = ["BF.RESERVE", "BF.ADD", "BF.MADD", "BF.INSERT", "BF.EXISTS", "BF.MEXISTS", "BF.INFO", "BF.CARD",
            "BF.SCANDUMP", "BF.LOADCHUNK", "CF.RESERVE", "CF.ADD", "CF.ADDNX", "CF.INSERT", "CF.INSERTNX",
            "CF.EXISTS", "CF.MEXISTS", "CF.DEL", "CF.COUNT", "CF.INFO", "CF.SCANDUMP", "CF.LOADCHUNK",
            "BK.MERGE", "BK.INFO", "BK.IMPORT", "BK.EXPORT", "COPY", "DEL", "DUMP", "MEMORY"]
WORDS = ["ITEMS", "CAPACITY", "ERROR", "EXPANSION", "NONSCALING", "NOCREATE", "BUCKETSIZE", "MAXITERATIONS",
         "REPLACE", "items", "Capacity", "SIZE", "FILTERS", "EXPANSION", "USAGE"]
NUMBERS = ["0", "1", "-1", "2", "3", "4", "7", "8", "16", "17", "100", "1024", "65535", "65536", "32768",
           "9223372036854775807", "-9223372036854775808", "18446744073709551616", "1e308", "-1e308", "inf",
           "-inf", "nan", "0.5", "0.01", "1e-300", "0.999999", "1.0", "0x10", " 1", "1 ", "", "1e12", "1e9"]


def test_random_commands_never_crash(server):
    rng = random.Random(20240611)
    c = Conn(server.port)
    # some real filters and real payloads to mutate
    c.pipeline([["BF.RESERVE", "b0", 0.01, 100], ["BF.MADD", "b0"] + [f"x{i}" for i in range(300)],
                ["CF.RESERVE", "c0", 200, "EXPANSION", 2], ["CF.INSERT", "c0", "ITEMS"] + [f"x{i}" for i in range(300)],
                ["SET", "s0", "v"], ["LPUSH", "l0", "v"],
                ["BF.MADD", "keep:b"] + [f"x{i}" for i in range(300)],
                ["CF.INSERT", "keep:c", "ITEMS"] + [f"x{i}" for i in range(300)]])
    payloads = [c.call("BK.EXPORT", "b0"), c.call("BK.EXPORT", "c0"),
                c.call("BF.SCANDUMP", "b0", 0)[1], c.call("CF.SCANDUMP", "c0", 0)[1]]
    assert all(isinstance(p, bytes) and len(p) > 64 for p in payloads)
    keys = ["b0", "c0", "s0", "l0", "k1", "k2", "k3", "{t}a", "{t}b", "nonscaling", "ITEMS"]

    def arg():
        x = rng.random()
        if x < 0.25:
            return rng.choice(keys)
        if x < 0.45:
            return rng.choice(NUMBERS)
        if x < 0.65:
            return rng.choice(WORDS)
        if x < 0.80:
            return bytes(rng.randrange(256) for _ in range(rng.randrange(0, 40)))
        p = bytearray(rng.choice(payloads))
        if rng.random() < 0.5:
            p = p[:rng.randrange(0, len(p) + 1)]
        for _ in range(rng.randrange(0, 4)):
            if p:
                p[rng.randrange(len(p))] = rng.randrange(256)
        return bytes(p)

    sent = 0
    for batch in range(40):
        cmds = []
        for _ in range(100):
            name = rng.choice(COMMANDS)
            if rng.random() < 0.1:
                name = name.lower()
            args = [arg() for _ in range(rng.choice([0, 1, 2, 2, 3, 3, 4, 5, 6, 8, 12]))]
            if name.endswith("LOADCHUNK") and args and rng.random() < 0.5:
                args[1:2] = [str(rng.choice([1, 65, 100, len(payloads[0]) + 1, 2**40]))]
            cmds.append([name] + args)
        replies = c.pipeline(cmds)
        assert len(replies) == len(cmds)
        sent += len(cmds)
        assert c.call("PING") == "PONG"
    assert sent >= 4000
    # whatever the garbage created still persists, reloads and answers
    assert c.call("DEBUG", "RELOAD") == "OK"
    for k in keys:
        t = c.call("TYPE", k)
        if t in ("bloomkitB", "bloomkitC"):
            fam = "BF" if t == "bloomkitB" else "CF"
            res = c.call(f"{fam}.EXISTS", k, "x1")
            assert isinstance(res, int) or (isinstance(res, Err) and "LOADCHUNK" in res), res
    assert c.call("PING") == "PONG"
    # the keys the garbage could not name are intact
    assert c.call("BF.MEXISTS", "keep:b", *[f"x{i}" for i in range(300)]) == [1] * 300
    assert c.call("CF.MEXISTS", "keep:c", *[f"x{i}" for i in range(300)]) == [1] * 300
    c.close()
