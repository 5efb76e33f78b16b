"""Threads: batches release the GIL, many threads query one filter at once, and writers never run
alongside them."""
import sys
import threading
import time

import numpy as np

import bloomkit
from conftest import keys_of


def test_batches_release_the_gil():
    """A helper thread that gives the GIL back after every step can only advance while the main
    thread is inside a batch if that batch released the GIL (forced switches are off meanwhile)."""
    f = bloomkit.Blocked(1_000_000)
    keys = np.arange(2_000_000, dtype=np.uint64)
    f.add_many(keys[:1_000_000])
    steps = [0]
    stop = threading.Event()

    def spin():
        while not stop.is_set():
            steps[0] += 1
            time.sleep(0)                       # releases the GIL every step

    old = sys.getswitchinterval()
    sys.setswitchinterval(100)
    t = threading.Thread(target=spin)
    t.start()
    try:
        advanced = []
        for _ in range(20):
            before = steps[0]
            f.contains_many(keys)
            advanced.append(steps[0] - before)
            if max(advanced) > 0:
                break
        assert max(advanced) > 0, advanced
    finally:
        stop.set()
        sys.setswitchinterval(old)
        t.join()


def test_many_readers_and_a_writer():
    present = keys_of("str", 20000)
    f = bloomkit.Scalable(1000, 0.01)          # grows while the readers read: the riskiest type
    f.update(present)
    arr = np.arange(50000, dtype=np.int64)
    f.update(arr)
    errors = []
    go = threading.Barrier(5)

    def reader(i):
        try:
            go.wait()
            for _ in range(15):
                assert f.contains_many(present).count(1) == len(present)
                assert f.contains_many(arr).count(1) == len(arr)
                assert all(k in f for k in present[i::97])
        except Exception as e:                  # noqa: BLE001
            errors.append(e)

    def writer():
        try:
            go.wait()
            for j in range(10):
                f.add_many(keys_of("str", 20000, salt=100 + j))
                f.add_many(np.arange(100000 * (j + 1), 100000 * (j + 1) + 20000, dtype=np.int64))
        except Exception as e:                  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=reader, args=(i,)) for i in range(4)] + [threading.Thread(target=writer)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for j in range(10):
        assert f.contains_many(keys_of("str", 20000, salt=100 + j)).count(1) == 20000


def test_close_while_other_threads_query():
    f = bloomkit.Bloom(100000)
    keys = np.arange(100000, dtype=np.uint64)
    f.add_many(keys)
    outcomes = []
    go = threading.Barrier(4)

    def reader():
        go.wait()
        try:
            for _ in range(50):
                assert f.contains_many(keys).count(1) == len(keys)
            outcomes.append("done")
        except ValueError:                      # closed meanwhile: a clean error, never a crash
            outcomes.append("closed")

    threads = [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    go.wait()
    f.close()
    for t in threads:
        t.join()
    assert len(outcomes) == 3 and f.closed


def test_writer_gets_a_turn_behind_looping_readers():
    """A one-key add behind three threads that loop over query batches waits for the batches then
    running, not for the readers to stop: the lock lets a waiting writer in before new readers. (The
    bound only catches a writer left waiting for the readers to pause; it took seconds when the lock
    preferred readers.)"""
    f = bloomkit.Blocked(2_000_000)
    keys = np.arange(1_000_000, dtype=np.uint64)
    f.add_many(keys)
    stop = threading.Event()

    def reader():
        while not stop.is_set():
            f.contains_many(keys)

    readers = [threading.Thread(target=reader) for _ in range(3)]
    for t in readers:
        t.start()
    try:
        time.sleep(0.2)
        done = []
        for i in range(5):
            w = threading.Thread(target=lambda i=i: done.append(f.add(f"writer-{i}")))
            w.start()
            w.join(5)
            assert not w.is_alive(), f"add {i} waited more than 5 s behind the readers"
    finally:
        stop.set()
        for t in readers:
            t.join()
    assert len(done) == 5 and all(f"writer-{i}" in f for i in range(5))
