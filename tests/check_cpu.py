#!/usr/bin/env python3
"""The library asks the CPU what it has in one place, the CPU module (ARCHITECTURE.md, "Invariants"),
and counts bits with one popcount.

- source: outside comments, the feature queries (__builtin_cpu_supports, __builtin_cpu_init, cpuid,
  __get_cpuid, xgetbv, getauxval) appear in exactly one file under src/, core/simd.c; the shift-and-mask
  popcount's constants and the inline POPCNT instruction in one header, core/simd.h.
- static library: exactly one object refers to the compiler's CPU model (__cpu_model, __cpu_features2,
  __cpu_indicator_init, what __builtin_cpu_supports and ifunc resolvers read), simd.c.o, so no macro or
  attribute hides a second detection; and no object calls libgcc's popcount (__popcountdi2 and kin: a
  plain __builtin_popcount* outside code built under a popcnt target attribute), which counts bits
  by neither the module's POPCNT nor its inlined shift-and-mask popcount.
Usage: check_cpu.py REPO_ROOT STATIC_LIBRARY
"""
import os
import re
import subprocess
import sys

DETECT = re.compile(r"\b(__builtin_cpu_supports|__builtin_cpu_init|__get_cpuid\w*|__cpuid\w*|cpuid|xgetbv|_xgetbv|getauxval)\b")
SWAR = re.compile(r"0x5555555555555555|0x3333333333333333", re.I)
ASM_POPCNT = re.compile(r"__asm__[^;]*\"popcnt")
CPU_MODEL = {"__cpu_model", "__cpu_features2", "__cpu_indicator_init"}
LIBGCC_POPCOUNT = re.compile(r"^__popcount[sdt]i2$")
NM_LINE = re.compile(r"^.*:([^:/]+\.o):\s*[0-9a-fA-F]*\s+(\S)\s+(\S+)$")
COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)

DETECTION_FILE = "core/simd.c"
POPCOUNT_FILE = "core/simd.h"


def files_matching(src, pattern):
    hits = []
    for d, _, files in os.walk(src):
        for f in sorted(files):
            if not f.endswith((".c", ".h")):
                continue
            path = os.path.join(d, f)
            with open(path, encoding="utf-8") as fh:
                code = COMMENT.sub(" ", fh.read())
            if pattern.search(code):
                hits.append(os.path.relpath(path, src))
    return sorted(hits)


def main():
    root, lib = sys.argv[1], sys.argv[2]
    src = os.path.join(root, "src")
    problems = []
    for what, pattern, home in (("CPU feature queries", DETECT, DETECTION_FILE),
                                ("the shift-and-mask popcount", SWAR, POPCOUNT_FILE),
                                ("the inline POPCNT instruction", ASM_POPCNT, POPCOUNT_FILE)):
        hits = files_matching(src, pattern)
        if hits != [home]:
            problems.append(f"{what} in {', '.join(hits) or 'no file'}: expected in src/{home} only")
    out = subprocess.run(["nm", "-A", "--undefined-only", lib], check=True, capture_output=True, text=True).stdout
    readers, plain_popcount = set(), set()
    for line in out.splitlines():
        m = NM_LINE.match(line)
        if m and m.group(3) in CPU_MODEL:
            readers.add(m.group(1))
        if m and LIBGCC_POPCOUNT.match(m.group(3)):
            plain_popcount.add(m.group(1))
    if readers != {"simd.c.o"}:
        problems.append(f"objects reading the CPU model: {', '.join(sorted(readers)) or 'none'}: expected simd.c.o only")
    if plain_popcount:
        problems.append(f"objects calling libgcc's popcount (a plain __builtin_popcount*): {', '.join(sorted(plain_popcount))}: "
                        f"count bits with bk__popcount64 or bk__popcount_swar (src/{POPCOUNT_FILE})")
    if problems:
        print("FAIL: more than one CPU module:")
        for p in problems:
            print("  " + p)
        return 1
    print(f"one CPU module: detection in src/{DETECTION_FILE} (the only reader of the CPU model in {os.path.basename(lib)}), "
          f"popcount in src/{POPCOUNT_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
