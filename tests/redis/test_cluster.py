"""A 3-master Redis Cluster on loopback (redis-cli --cluster create), driven by redis-py's RedisCluster:
filters on many keys spread over the nodes, every answer right; key specs route every command."""
import subprocess
import time

import pytest
import redis
from redis.cluster import RedisCluster

from conftest import REDIS_CLI
from resp import Conn


@pytest.fixture
def cluster(servers):
    extra = ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", "5000"]
    nodes = [servers(extra=extra, bus=True) for _ in range(3)]
    r = subprocess.run([REDIS_CLI, "--cluster", "create"] + [f"127.0.0.1:{n.port}" for n in nodes] +
                       ["--cluster-replicas", "0", "--cluster-yes"], capture_output=True, timeout=120)
    assert r.returncode == 0, r.stdout.decode() + r.stderr.decode()
    deadline = time.time() + 60
    while time.time() < deadline:
        infos = [n.client().cluster("info") for n in nodes]
        if all(i["cluster_state"] == "ok" and int(i["cluster_slots_ok"]) == 16384 for i in infos):
            break
        time.sleep(0.2)
    else:
        pytest.fail("cluster did not become ok")
    rc = RedisCluster(host="127.0.0.1", port=nodes[0].port)
    try:
        yield nodes, rc
    finally:
        rc.close()


def test_cluster_filters_on_many_keys(cluster):
    nodes, rc = cluster
    nkeys = 300
    for i in range(nkeys):
        if i % 2:
            rc.bf().create(f"bf:{i}", 0.01, 50)
            res = rc.bf().madd(f"bf:{i}", *[f"{i}-{j}" for j in range(120)])
            assert len(res) == 120 and sum(res) >= 117  # a 0 is a (rare) false positive
        else:
            rc.cf().create(f"cf:{i}", 100, expansion=2)
            assert rc.cf().insert(f"cf:{i}", [f"{i}-{j}" for j in range(120)]) == [1] * 120
    # the keys really are spread: every node holds some
    sizes = [n.client().dbsize() for n in nodes]
    assert all(s > nkeys // 10 for s in sizes), sizes
    assert sum(sizes) == nkeys
    for i in range(nkeys):
        items = [f"{i}-{j}" for j in range(120)]
        if i % 2:
            assert rc.bf().mexists(f"bf:{i}", *items) == [1] * 120
            assert rc.execute_command("BF.CARD", f"bf:{i}") >= 118
            assert rc.bf().info(f"bf:{i}").filterNum >= 2
        else:
            assert rc.cf().mexists(f"cf:{i}", *items) == [1] * 120
            assert rc.cf().count(f"cf:{i}", items[0]) >= 1  # more when another item's fingerprint collides
            assert rc.cf().delete(f"cf:{i}", items[0]) == 1
            assert rc.cf().info(f"cf:{i}").insertedNum == 119
    # read-only commands and BK.* are routed by key too
    for i in range(0, nkeys, 7):
        key = f"bf:{i}" if i % 2 else f"cf:{i}"
        assert rc.execute_command("BK.INFO", key)
        payload = rc.execute_command("BK.EXPORT", key)
        assert rc.execute_command("BK.IMPORT", key + ":copy", payload)
        assert rc.execute_command("BK.EXPORT", key + ":copy") == payload


def test_cluster_merge_needs_one_slot(cluster):
    nodes, rc = cluster
    for s in ("{t}a", "{t}b"):
        rc.bf().create(s, 0.01, 100, expansion=2)
        rc.bf().madd(s, *[f"{s}-{j}" for j in range(50)])
    assert rc.execute_command("BK.MERGE", "{t}dest", "{t}a", "{t}b")
    assert all(rc.bf().mexists("{t}dest", *[f"{s}-{j}" for s in ("{t}a", "{t}b") for j in range(50)]))
    # keys in different slots: the cluster refuses (CROSSSLOT), as for any multi-key command
    node = nodes[0].client()
    with pytest.raises(redis.ResponseError, match="CROSSSLOT"):
        node.execute_command("BK.MERGE", "x1", "x2", "x3")


def test_key_specs(cluster):
    nodes, rc = cluster
    c = Conn(nodes[0].port)
    for cmd, args in (("BF.ADD", ["k", "i"]), ("BF.EXISTS", ["k", "i"]), ("CF.INSERT", ["k", "ITEMS", "i"]),
                      ("BF.LOADCHUNK", ["k", 1, "x"]), ("CF.DEL", ["k", "i"]), ("BK.EXPORT", ["k"])):
        assert c.call("COMMAND", "GETKEYS", cmd, *args) == [b"k"]
    assert c.call("COMMAND", "GETKEYS", "BK.MERGE", "d", "s1", "s2") == [b"d", b"s1", b"s2"]
    c.close()
    # a node that does not own the key redirects instead of answering
    slot = rc.keyslot("somekey")
    owner = rc.get_node_from_key("somekey")
    other = [n for n in nodes if n.port != owner.port][0].client()
    with pytest.raises(redis.ResponseError, match="MOVED"):
        other.execute_command("BF.EXISTS", "somekey", "x")
    assert slot >= 0
