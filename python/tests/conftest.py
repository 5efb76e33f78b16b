"""Fixtures of the Python package's tests.

Environment (set by python/CMakeLists.txt for `ctest -R python`; defaults for a manual run from the
repository after `make`, with PYTHONPATH=build/python):
  BK_CLI             the bloomkit command            (default: build/src/cli/bloomkit)
  BK_LIBBLOOMKIT     libbloomkit.so, for the ctypes cross-check (default: build/libbloomkit.so)
  BK_REDIS_MODULE    the Redis module, BK_REDIS_SERVER redis-server (BK.EXPORT / BK.IMPORT interchange)
  BK_REDIS_PRELOAD   a sanitizer runtime to preload into redis-server
  BK_SANITIZED       set in sanitizer builds (the slow loops then run fewer rounds)
A test whose tool is missing skips and says which one.
"""
import os
import shutil

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SANITIZED = bool(os.environ.get("BK_SANITIZED"))


def _find(env, *default):
    p = os.environ.get(env) or os.path.join(ROOT, *default)
    return p if os.path.exists(p) else None


@pytest.fixture(scope="session")
def cli():
    p = _find("BK_CLI", "build", "src", "cli", "bloomkit")
    if not p:
        pytest.skip("the bloomkit command is not built (set BK_CLI)")
    return p


@pytest.fixture(scope="session")
def libbloomkit():
    p = _find("BK_LIBBLOOMKIT", "build", "libbloomkit.so")
    if not p:
        pytest.skip("libbloomkit.so is not built (set BK_LIBBLOOMKIT)")
    return p


@pytest.fixture(scope="session")
def redis_bits():
    module = _find("BK_REDIS_MODULE", "build", "redis", "bloomkit.so")
    server = os.environ.get("BK_REDIS_SERVER") or shutil.which("redis-server")
    if not module or not server:
        pytest.skip("the Redis module or redis-server is missing (set BK_REDIS_MODULE, BK_REDIS_SERVER)")
    try:
        import redis  # noqa: F401
    except ImportError:
        pytest.skip("python3-redis is not installed (scripts/deps.sh)")
    return module, server, os.environ.get("BK_REDIS_PRELOAD", "")


def keys_of(kind, n, salt=0):
    """n distinct keys of one kind (str, unicode, bytes, bytearray, memoryview, int, negint, bigint)."""
    if kind == "str":
        return [f"key-{salt}-{i}" for i in range(n)]
    if kind == "unicode":
        return [f"клю\u00e7-{salt}-{i}-\u2603" for i in range(n)]
    if kind == "bytes":
        return [b"b\x00\xff-%d-%d" % (salt, i) for i in range(n)]
    if kind == "bytearray":
        return [bytearray(b"ba-%d-%d" % (salt, i)) for i in range(n)]
    if kind == "memoryview":
        return [memoryview(b"mv-%d-%d" % (salt, i)) for i in range(n)]
    if kind == "int":
        return [salt * 10_000_000 + i for i in range(n)]
    if kind == "negint":
        return [-(salt * 10_000_000 + i) - 1 for i in range(n)]
    if kind == "bigint":
        return [2**64 - 1 - salt * 10_000_000 - i for i in range(n)]
    raise ValueError(kind)


KEY_KINDS = ["str", "unicode", "bytes", "bytearray", "memoryview", "int", "negint", "bigint"]
