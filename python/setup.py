"""Builds the bloomkit Python package from a bloomkit source tree.

    pip install --no-build-isolation ./python   (offline, with the installed setuptools; Debian: in a
                                                 venv, or add --break-system-packages)
    python3 -m build --wheel --no-isolation python

pyproject.toml names setuptools as the build backend; this file holds the extension and the metadata.

The extension (bloomkit._bloomkit) is compiled together with the library's own sources, found under
../src (every .c file except the command-line tool's, in whatever folders they live), so the wheel
needs no libbloomkit.so at run time. A linker version script keeps every symbol but the module's
init function local, so the library inside cannot clash with another copy loaded in the same process.
Run-time dependencies: none beyond the standard library (numpy is optional).
"""

import os
import re
import sys

from setuptools import Extension, setup

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.environ.get("BLOOMKIT_SOURCE_DIR") or os.path.dirname(HERE)
SRC = os.path.join(ROOT, "src")
INCLUDE = os.path.join(ROOT, "include")

if not os.path.isfile(os.path.join(INCLUDE, "bloomkit", "bloomkit.h")):
    sys.exit("bloomkit: the library's sources are not at %s (build from a bloomkit checkout, or set "
             "BLOOMKIT_SOURCE_DIR to one)" % ROOT)


def library_sources():
    """Every library source: src/**/*.c except the command-line tool (src/cli)."""
    sources, include_dirs = [], {SRC}
    for dirpath, dirnames, filenames in os.walk(SRC):
        rel = os.path.relpath(dirpath, SRC)
        if rel == "cli" or rel.startswith("cli" + os.sep):
            dirnames[:] = []
            continue
        dirnames.sort()
        for name in sorted(filenames):
            if name.endswith(".c"):
                sources.append(os.path.relpath(os.path.join(dirpath, name), HERE))
            if name.endswith(".h"):
                include_dirs.add(dirpath)
    return sources, sorted(include_dirs)


def library_version():
    """The library's version, from the BK_VERSION_* macros of its header."""
    text = open(os.path.join(INCLUDE, "bloomkit", "common.h"), encoding="utf-8").read()
    parts = [re.search(r"#define BK_VERSION_%s (\d+)" % p, text).group(1) for p in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(parts)


lib_sources, lib_includes = library_sources()

ext = Extension(
    "bloomkit._bloomkit",
    sources=["ext/_bloomkit.c", "ext/keys.c", "ext/filter.c", "ext/filter_ops.c", "ext/filter_io.c", "ext/sketch.c", "ext/parquet.c"] + lib_sources,
    include_dirs=[INCLUDE] + lib_includes,
    define_macros=[("_DEFAULT_SOURCE", None), ("_GNU_SOURCE", None), ("BK_STATIC_LINKING_ONLY", None)],
    extra_compile_args=["-std=c11", "-O2", "-fvisibility=hidden"],
    extra_link_args=["-Wl,--version-script=" + os.path.join(HERE, "ext", "exports.map"), "-lm", "-pthread"],
    depends=[os.path.join(INCLUDE, "bloomkit", h) for h in os.listdir(os.path.join(INCLUDE, "bloomkit"))]
    + [os.path.join(HERE, "ext", "bkpy.h")],
)

setup(
    name="bloomkit",
    version=library_version(),
    description="Bloom, blocked, counting, scalable, cuckoo and binary fuse filters at C speed",
    long_description=__doc__,
    packages=["bloomkit"],
    package_data={"bloomkit": ["py.typed", "*.pyi"]},
    ext_modules=[ext],
    python_requires=">=3.8",
    zip_safe=False,
)
