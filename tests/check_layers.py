#!/usr/bin/env python3
"""Each layer of the library uses only the layers below it (ARCHITECTURE.md, "Layers"), and the programs
use only the public headers.

Two kinds of edge are checked:
- includes: every quoted #include in src/ names a private header by its path from src/ ("core/base.h"),
  or a header of its own folder by its bare name; its layer may not be above the including file's.
  The programs (src/cli/, redis/, python/ext/, examples/) include only public headers
  ("bloomkit/...") and their own folder's.
- calls: in the static library, every symbol an object file uses from another is defined in a layer
  at or below the user's (nm of each member; static functions and inline helpers are the file's own).
Usage: check_layers.py REPO_ROOT STATIC_LIBRARY
"""
import os
import re
import subprocess
import sys

# From the bottom up; a file's layer is its folder's (src/filter.c, the generic handle, at the top).
LAYERS = ["core", "filters", "registry", "persist", "generic"]
PROGRAMS = ["src/cli", "redis", "python/ext", "examples"]
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
NM_LINE = re.compile(r"^.*:([^:/]+\.o):\s*[0-9a-fA-F]*\s+(\S)\s+(\S+)$")


def layer_of(rel):
    """The layer of a path relative to src/, or None outside the library."""
    if rel == "filter.c":
        return "generic"
    top = rel.split("/")[0]
    return top if top in LAYERS else None


def sources(root, top, exts=(".c", ".h")):
    for d, _, files in os.walk(os.path.join(root, top)):
        for f in sorted(files):
            if f.endswith(exts):
                yield os.path.join(d, f)


def check_includes(root, problems):
    src = os.path.join(root, "src")
    for path in sources(root, "src"):
        rel = os.path.relpath(path, src)
        mine = layer_of(rel)
        if mine is None:
            continue  # the programs, below
        with open(path, encoding="utf-8") as f:
            text = f.read()
        for name in INCLUDE.findall(text):
            if name.startswith("bloomkit/"):
                continue
            if "/" not in name:
                if not os.path.exists(os.path.join(os.path.dirname(path), name)):
                    problems.append(f"{rel}: \"{name}\" is not in its folder: name a private header by its path from src/")
                continue
            if not os.path.exists(os.path.join(src, name)):
                problems.append(f"{rel}: \"{name}\" is not a header under src/")
                continue
            theirs = layer_of(name)
            if theirs is None or LAYERS.index(theirs) > LAYERS.index(mine):
                problems.append(f"{rel} ({mine}) includes {name} ({theirs}): a layer above its own")
    for prog in PROGRAMS:
        for path in sources(root, prog):
            with open(path, encoding="utf-8") as f:
                text = f.read()
            for name in INCLUDE.findall(text):
                here = os.path.join(os.path.dirname(path), name)
                if name.startswith("bloomkit/") or ("/" not in name and os.path.exists(here)):
                    continue
                if name == "redismodule.h" and prog == "redis":
                    continue  # the Redis module API, found on the include path
                problems.append(f"{os.path.relpath(path, root)} includes \"{name}\": a program uses only the public "
                                "headers and its own folder's")


def nm(lib, *flags):
    out = subprocess.run(["nm", "-A", *flags, lib], check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        # "lib.a:member.o:[address] T name"
        m = NM_LINE.match(line)
        if m:
            yield m.group(1), m.group(2), m.group(3)


def check_calls(root, lib, problems):
    src = os.path.join(root, "src")
    by_object = {}
    for path in sources(root, "src", (".c",)):
        rel = os.path.relpath(path, src)
        if layer_of(rel) is None:
            continue
        obj = os.path.basename(rel) + ".o"
        if obj in by_object:
            problems.append(f"two library sources make {obj} ({by_object[obj]}, {rel}): the call check needs one")
        by_object[obj] = rel
    defined = {}
    for member, kind, name in nm(lib, "--defined-only"):
        if kind.isupper() and member in by_object:
            defined[name] = by_object[member]
    used = 0
    for member, kind, name in nm(lib, "--undefined-only"):
        if member not in by_object or name not in defined:
            continue  # libc, libm, xxHash's, the compiler's
        used += 1
        user, owner = by_object[member], defined[name]
        lu, lo = layer_of(user), layer_of(owner)
        if LAYERS.index(lo) > LAYERS.index(lu):
            problems.append(f"{user} ({lu}) calls {name} of {owner} ({lo}): a layer above its own")
    if used == 0:
        problems.append(f"no call between the library's objects found in {lib}: is it the static library?")
    return len(by_object), used


def main():
    root, lib = sys.argv[1], sys.argv[2]
    problems = []
    check_includes(root, problems)
    objects, calls = check_calls(root, lib, problems)
    if problems:
        print("FAIL: edges outside the layer order " + " < ".join(LAYERS) + ":")
        for p in problems:
            print("  " + p)
        return 1
    print(f"layers hold: includes of src/ and the programs, {calls} cross-object references in {objects} objects")
    return 0


if __name__ == "__main__":
    sys.exit(main())
