"""Filters move between Python and the Redis module through BK.IMPORT / BK.EXPORT (bloomkit's file
format): a real redis-server on a free loopback port, started and stopped here."""
import os
import socket
import subprocess
import time

import pytest

import bloomkit
from conftest import keys_of
from factories import ALL, STATIC, make


@pytest.fixture(scope="module")
def r(redis_bits, tmp_path_factory):
    import redis
    module, server, preload = redis_bits
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    workdir = tmp_path_factory.mktemp("redis")
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if preload:
        env["LD_PRELOAD"] = preload
        env["ASAN_OPTIONS"] = "detect_leaks=0"
    proc = subprocess.Popen([server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", str(workdir), "--loadmodule", module],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    client = redis.Redis(host="127.0.0.1", port=port)
    try:
        for _ in range(200):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if proc.poll() is not None:
                    pytest.fail("redis-server exited at start")
                time.sleep(0.05)
        yield client
    finally:
        proc.terminate()
        proc.wait(timeout=30)


@pytest.mark.parametrize("kind", ALL)
def test_python_to_redis_and_back(kind, r):
    keys = keys_of("str", 2000) + keys_of("bytes", 100)
    f = make(kind, 4000, keys=keys)
    if kind not in STATIC:
        f.add_many(keys)
    name = "py:" + kind
    assert r.execute_command("BK.IMPORT", name, bytes(f), "REPLACE")
    exists = "CF.EXISTS" if kind == "cuckoo" else "BF.EXISTS"
    probe = keys[::40] + keys_of("str", 100, salt=3)
    assert [bool(r.execute_command(exists, name, k)) for k in probe] == [k in f for k in probe]
    back = bloomkit.from_bytes(r.execute_command("BK.EXPORT", name))
    assert type(back) is type(f)
    assert bytes(back) == bytes(f)               # bit for bit
    assert back.contains_many(keys).count(1) == len(keys)
    assert back.contains_many(probe) == f.contains_many(probe)


def test_redis_to_python(r):
    r.delete("made:in:redis")
    r.execute_command("BF.RESERVE", "made:in:redis", 0.01, 1000)
    for k in ("a", "b", "c"):
        r.execute_command("BF.ADD", "made:in:redis", k)
    f = bloomkit.from_bytes(r.execute_command("BK.EXPORT", "made:in:redis"))
    assert all(k in f for k in "abc") and f.count == 3
    f.add("d")
    r.execute_command("BK.IMPORT", "made:in:redis", bytes(f), "REPLACE")
    assert r.execute_command("BF.EXISTS", "made:in:redis", "d") == 1
