"""bloomkit: approximate membership filters (Bloom, blocked, counting, scalable, cuckoo, binary fuse,
aging, quotient and Ribbon filters).

A filter answers "is this key in the set?" with "certainly not" (always right) or "probably yes"
(wrong at the rate you chose), in a fraction of the memory of the set itself::

    import bloomkit
    seen = bloomkit.Bloom(capacity=1_000_000, error_rate=0.01)
    seen.add("https://example.org/")
    "https://example.org/" in seen          # True
    seen.contains_many(["a", "b"])           # bytearray(b'\\x00\\x00')
    seen.save("seen.bf")                     # the file format of the bloomkit command and the C library
    again = bloomkit.load("seen.bf")

Keys are str (UTF-8), bytes, bytearray, memoryview or int (8 bytes, little-endian, two's complement
for negatives): the same key gives the same answer here, in C and in the bloomkit command on the
same file. docs/PYTHON.md in the source tree is the guide.
"""

from ._bloomkit import (  # noqa: F401
    Filter,
    Bloom,
    Blocked,
    Counting,
    Scalable,
    Cuckoo,
    Fuse,
    Aging,
    Quotient,
    Ribbon,
    CountMinSketch,
    TopK,
    Error,
    FileFormatError,
    DamagedFileError,
    UnsupportedFileError,
    FullError,
    IncompatibleError,
    UnsupportedOperation,
    load,
    open,
    from_bytes,
    hash64,
    file_info,
    library_version,
)

__version__ = library_version

# `from bloomkit import *` leaves out bloomkit.open, which would shadow the builtin open(); call it as
# bloomkit.open(path).
__all__ = [
    "Filter",
    "Bloom",
    "Blocked",
    "Counting",
    "Scalable",
    "Cuckoo",
    "Fuse",
    "Aging",
    "Quotient",
    "Ribbon",
    "CountMinSketch",
    "TopK",
    "Error",
    "FileFormatError",
    "DamagedFileError",
    "UnsupportedFileError",
    "FullError",
    "IncompatibleError",
    "UnsupportedOperation",
    "load",
    "from_bytes",
    "hash64",
    "file_info",
]
