"""Fixtures for the Redis module tests: real redis-server processes on free loopback ports.

Every server is started in its own temporary directory with the module loaded and
--enable-debug-command yes, and is stopped by the fixture that started it, also when the test fails.
A server that died during a test (a crash) fails that test, with the tail of its log.

Environment (set by tests/redis/CMakeLists.txt; defaults for a manual run from the repository):
  BK_REDIS_MODULE   path of bloomkit.so            (default: build/redis/bloomkit.so)
  BK_REDIS_SERVER   redis-server                    (default: from PATH)
  BK_REDIS_CLI      redis-cli                       (default: from PATH)
  BK_REDIS_PRELOAD  a sanitizer runtime to LD_PRELOAD into redis-server (sanitizer builds)
"""
import os
import shutil
import socket
import subprocess
import tempfile
import time

import pytest
import redis

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
MODULE = os.path.abspath(os.environ.get("BK_REDIS_MODULE") or os.path.join(ROOT, "build", "redis", "bloomkit.so"))
REDIS_SERVER = os.environ.get("BK_REDIS_SERVER") or shutil.which("redis-server") or "/usr/bin/redis-server"
REDIS_CLI = os.environ.get("BK_REDIS_CLI") or shutil.which("redis-cli") or "/usr/bin/redis-cli"
PRELOAD = os.environ.get("BK_REDIS_PRELOAD", "")

SANITIZER_MARKS = ("ERROR: AddressSanitizer", "runtime error:", "ERROR: LeakSanitizer")


def pytest_configure(config):
    if not os.path.exists(MODULE):
        raise pytest.UsageError(f"module not found: {MODULE} (build it, or set BK_REDIS_MODULE)")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    # A skipped test is a test that did not run: count it as a failure, so that CTest cannot pass
    # without every test having run.
    outcome = yield
    rep = outcome.get_result()
    if rep.skipped:
        rep.outcome = "failed"
        rep.longrepr = f"skipped tests are not allowed here: {rep.longrepr}"


def _port_free(port):
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


_ports_given = set()


def free_port(bus=False):
    """A free loopback port (and port + 10000 free too when bus, for the cluster bus)."""
    for _ in range(200):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port in _ports_given or (bus and (port + 10000 > 65535 or not _port_free(port + 10000))):
            continue
        _ports_given.add(port)
        return port
    raise RuntimeError("no free port")


class Server:
    """One redis-server with the module, in its own directory."""

    def __init__(self, workdir, module_args=(), extra=(), bus=False, wrapper=()):
        self.dir = workdir
        self.wrapper = list(wrapper)  # a command the server runs under, e.g. prlimit --as=...
        self.module_args = list(module_args)
        self.extra = list(extra)
        self.port = free_port(bus=bus)
        self.proc = None
        self.logfile = os.path.join(self.dir, "redis.log")
        self.errfile = os.path.join(self.dir, "stderr.log")

    def argv(self):
        return self.wrapper + ([REDIS_SERVER, "--port", str(self.port), "--bind", "127.0.0.1", "--dir", self.dir,
                 "--logfile", self.logfile, "--daemonize", "no", "--save", "", "--appendonly", "no",
                 "--enable-debug-command", "yes", "--protected-mode", "yes",
                 "--loadmodule", MODULE] + self.module_args + self.extra)

    def start(self, expect_fail=False, timeout=30):
        env = dict(os.environ)
        if PRELOAD:
            env["LD_PRELOAD"] = PRELOAD
            env["ASAN_OPTIONS"] = "detect_leaks=0:abort_on_error=1:handle_segv=0"
            env["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"
        with open(self.errfile, "ab") as err:
            self.proc = subprocess.Popen(self.argv(), stdout=err, stderr=err, cwd=self.dir, env=env)
        deadline = time.time() + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                if expect_fail:
                    return False
                raise RuntimeError(f"redis-server exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                if redis.Redis(port=self.port, socket_timeout=1).ping():
                    if expect_fail:
                        raise RuntimeError("redis-server started although it should not have")
                    return True
            except (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError):
                pass
            time.sleep(0.05)
        raise RuntimeError(f"redis-server did not answer in {timeout} s:\n{self.log_tail()}")

    def client(self, **kw):
        return redis.Redis(port=self.port, socket_timeout=120, **kw)

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def stop(self, save=False):
        """Stop the server (SHUTDOWN SAVE or NOSAVE; kill if it does not go)."""
        if not self.alive():
            return
        try:
            self.client().shutdown(save=save, nosave=not save)
        except (redis.ConnectionError, redis.ResponseError, redis.TimeoutError):
            pass
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def status_bytes(self, field):
        """A size field of the server's /proc/<pid>/status in bytes: VmRSS (resident now), VmHWM (its peak)."""
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) * 1024
        raise KeyError(field)

    def reset_peak(self):
        """Start VmHWM again from the resident size now (/proc/<pid>/clear_refs)."""
        with open(f"/proc/{self.proc.pid}/clear_refs", "w") as f:
            f.write("5")

    def kill(self):
        if self.alive():
            self.proc.kill()
            self.proc.wait()

    def restart(self, save=False, extra=None):
        self.stop(save=save)
        if extra is not None:
            self.extra = list(extra)
        self.start()

    def replicate(self, port, timeout=60):
        """REPLICAOF 127.0.0.1 port, then wait until the link to that master is up (the full sync done)."""
        c = self.client()
        c.execute_command("REPLICAOF", "127.0.0.1", port)
        deadline = time.time() + timeout
        while c.info("replication").get("master_link_status") != "up":
            if time.time() > deadline:
                raise AssertionError(f"replica did not connect to port {port} in {timeout} s:\n{self.log_tail()}")
            time.sleep(0.05)

    def rewrite_aof(self, timeout=300):
        """BGREWRITEAOF, then wait until that rewrite has finished: INFO's aof_rewrites counts each one as
        it starts, so the count past its value before the call, with none running or scheduled, is the
        state change (a rewrite already running when the call came first runs out, then ours runs)."""
        c = self.client()
        before = c.info("persistence")["aof_rewrites"]
        c.bgrewriteaof()
        deadline = time.time() + timeout  # sanitizer builds on a loaded machine are slow
        while True:
            info = c.info("persistence")
            if info["aof_rewrites"] > before and not info["aof_rewrite_in_progress"] \
                    and not info["aof_rewrite_scheduled"]:
                if info["aof_last_bgrewrite_status"] != "ok":
                    raise AssertionError(f"AOF rewrite failed:\n{self.log_tail()}")
                return
            if time.time() > deadline:
                raise AssertionError(f"AOF rewrite did not finish in {timeout} s:\n{self.log_tail()}")
            time.sleep(0.05)

    def cli(self, *args, resp3=False, check=True, stdin=None):
        """Run redis-cli against this server; returns its stdout (text, raw mode when not a tty)."""
        cmd = [REDIS_CLI, "-p", str(self.port)] + (["-3"] if resp3 else []) + [str(a) for a in args]
        r = subprocess.run(cmd, input=stdin, capture_output=True, timeout=120)
        if check and r.returncode != 0:
            raise RuntimeError(f"redis-cli {args} failed: {r.stderr!r}")
        return r.stdout.decode("utf-8", "replace")

    def log_tail(self, n=60):
        out = []
        for path in (self.logfile, self.errfile):
            if os.path.exists(path):
                with open(path, "rb") as f:
                    lines = f.read().decode("utf-8", "replace").splitlines()
                out.append(f"--- {os.path.basename(path)}\n" + "\n".join(lines[-n:]))
        return "\n".join(out)

    def sanitizer_report(self):
        if not os.path.exists(self.errfile):
            return None
        with open(self.errfile, "rb") as f:
            text = f.read().decode("utf-8", "replace")
        return text if any(m in text for m in SANITIZER_MARKS) else None


class ServerFactory:
    def __init__(self):
        self.servers = []
        self.dirs = []

    def __call__(self, module_args=(), extra=(), bus=False, start=True, wrapper=()):
        d = tempfile.mkdtemp(prefix="bk-redis-")
        self.dirs.append(d)
        s = Server(d, module_args, extra, bus=bus, wrapper=wrapper)
        self.servers.append(s)
        if start:
            s.start()
        return s

    def finish(self):
        problems = []
        for s in self.servers:
            if s.proc is not None and s.proc.poll() is not None and s.proc.returncode not in (0, None) \
                    and not getattr(s, "expected_exit", False):
                problems.append(f"redis-server on port {s.port} died (status {s.proc.returncode}):\n"
                                f"{s.log_tail()}")
            elif s.proc is not None and s.alive():
                try:
                    s.client().ping()
                except redis.RedisError as e:
                    problems.append(f"redis-server on port {s.port} stopped answering: {e}\n{s.log_tail()}")
            s.stop()
            rep = s.sanitizer_report()
            if rep:
                problems.append(f"sanitizer report from redis-server on port {s.port}:\n{rep[-6000:]}")
        for d in self.dirs:
            shutil.rmtree(d, ignore_errors=True)
        return problems


@pytest.fixture
def servers():
    """Start any number of servers (servers(module_args=..., extra=...)); all stopped at the end."""
    f = ServerFactory()
    try:
        yield f
    finally:
        problems = f.finish()
    if problems:
        pytest.fail("\n\n".join(problems), pytrace=False)


@pytest.fixture
def server(servers):
    return servers()


@pytest.fixture
def r(server):
    return server.client()
