"""fork(): a child never finalizes its parent's writable mapping, a filter used in a child works or
raises a clear error, a fork while other threads run batches does not deadlock the child, and a
fork-based multiprocessing Pool works with a filter the parent shares."""
import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import bloomkit

# Every wait below is bounded: a child that deadlocks is killed and the test fails, it never hangs.
WAIT = 60


def wait_child(pid, deadline):
    """The exit status of child pid, or None (and the child killed) when it did not end by deadline."""
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.01)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return None


WRITER = textwrap.dedent("""
    import os, sys
    import numpy as np
    import bloomkit
    path = sys.argv[1]
    g = bloomkit.open(path, writable=True)
    g.add_many(np.arange(0, 50000, dtype=np.uint64))
    for how in ("close", "exit"):
        pid = os.fork()
        if pid == 0:
            # a child reads through the mapping, may not write, and leaves the file to its parent
            ok = 123 in g and 60000 not in g
            try:
                g.add(7)
                ok = False
            except bloomkit.UnsupportedOperation as e:
                ok = ok and "open() the file again in the child" in str(e)
            if how == "close":
                g.close()
                os._exit(0 if ok else 1)
            sys.exit(0 if ok else 1)  # interpreter exit: the handle is deallocated
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0, how
    g.add_many(np.arange(50000, 100000, dtype=np.uint64))
    print("ready", flush=True)
    sys.stdin.readline()
    os.kill(os.getpid(), 9)  # dies without closing: the file keeps its stale flag
""")


def test_child_never_finalizes_the_parents_mapping(tmp_path):
    path = str(tmp_path / "w.bkf")
    bloomkit.Blocked(200000, 0.01).save(path)
    p = subprocess.Popen([sys.executable, "-c", WRITER, path], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    try:
        line = p.stdout.readline()
        assert line == b"ready\n", (line, p.stderr.read() if p.poll() is not None else b"")
        # while the parent still has the file open for writing, a loader is not kept waiting (a child
        # that finalized would have left the exclusive lock on the shared open file description)
        got = []
        t = threading.Thread(target=lambda: got.append(bloomkit.load(path)), daemon=True)
        t.start()
        t.join(WAIT)
        assert got, "loading the file blocked while the writer lives"
        p.stdin.write(b"\n")
        p.stdin.flush()
        p.wait(WAIT)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == -signal.SIGKILL
    # every key of both batches is there and the file loads (no checksum mismatch: the stale flag set
    # by the writer that died was not cleared by its children)
    f = bloomkit.load(path)
    assert all(f.contains_many(np.arange(0, 100000, dtype=np.uint64)))


def _forks_during_batches(make_child_check, n_children):
    """Fork n_children while one thread adds batches to `w` and another queries batches of `r`;
    returns the children's exit codes (None: deadlocked)."""
    keys = np.arange(200000, dtype=np.uint64)
    w = bloomkit.Blocked(1_000_000, 0.01)
    r = bloomkit.Blocked(1_000_000, 0.01)
    r.add_many(keys)
    stop = threading.Event()

    def writer():
        i = 0
        while not stop.is_set():
            w.add_many(keys + np.uint64(i))
            i += 1

    def reader():
        while not stop.is_set():
            r.contains_many(keys)

    threads = [threading.Thread(target=writer), threading.Thread(target=reader)]
    for t in threads:
        t.start()
    codes = []
    try:
        for _ in range(n_children):
            time.sleep(0.005)
            pid = os.fork()
            if pid == 0:
                try:
                    code = make_child_check(w, r, keys)
                except BaseException:
                    code = 9
                os._exit(code)
            codes.append(pid)
    finally:
        stop.set()
        for t in threads:
            t.join()
    deadline = time.monotonic() + WAIT
    return [wait_child(pid, deadline) for pid in codes]


def _child_check(w, r, keys):
    # the filter only read at the fork works fully, writes included
    if not all(r.contains_many(keys)) or 5 not in r:
        return 2
    r.add_many(np.arange(10**9, 10**9 + 1000, dtype=np.uint64))
    r.add(b"child")
    if b"child" not in r or not all(r.contains_many(keys)):
        return 3
    # the filter being changed at the fork either works or raises a clear error
    try:
        w.add_many(keys)
        ok = all(w.contains_many(keys)) and w.add(b"x") is None
        return 0 if ok else 4
    except RuntimeError as e:
        return 1 if "being changed by another thread when the process forked" in str(e) else 5


def test_fork_while_threads_run_batches():
    codes = _forks_during_batches(_child_check, 30)
    print("children's exit codes (0: worked, 1: clear error):", codes)
    assert None not in codes, f"children deadlocked: {codes}"
    assert all(c in (0, 1) for c in codes), codes
    # close and deallocation of a half-changed copy are fine too
    codes = _forks_during_batches(lambda w, r, keys: (w.close(), 0)[1], 5)
    assert codes == [0] * 5, codes


SHARED = None


def _pool_check(lo):
    f = SHARED
    keys = np.arange(lo, lo + 10000, dtype=np.uint64)
    present = bool(all(f.contains_many(keys)))
    f.add(b"worker")  # a worker's own copy takes writes
    return present and b"worker" in f and int(lo) in f


def test_fork_pool_with_shared_filter():
    global SHARED
    SHARED = bloomkit.Blocked(1_000_000, 0.01)
    SHARED.add_many(np.arange(100000, dtype=np.uint64))
    stop = threading.Event()
    keys = np.arange(100000, dtype=np.uint64)

    def reader():
        while not stop.is_set():
            SHARED.contains_many(keys)

    t = threading.Thread(target=reader)
    t.start()
    try:
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(4) as pool:
            got = pool.map_async(_pool_check, range(0, 100000, 10000)).get(timeout=WAIT)
    finally:
        stop.set()
        t.join()
    assert got == [True] * 10
