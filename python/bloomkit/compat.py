"""pybloom_live's API on bloomkit filters: change one import line.

    # from pybloom_live import BloomFilter, ScalableBloomFilter
    from bloomkit.compat import BloomFilter, ScalableBloomFilter

BloomFilter(capacity, error_rate=0.001) is a partitioned Bloom filter (one slice per probe, as
pybloom_live's), ScalableBloomFilter(initial_capacity=100, error_rate=0.001, mode=LARGE_SET_GROWTH)
a chain of sub-filters growing `mode` times with tightening ratio 0.9, as pybloom_live's. The methods
and their return values are pybloom_live's: add(key) returns True when the key was (probably) there
already, len() is the number of keys added, a full BloomFilter raises IndexError.

What differs:
- keys: str is hashed as its UTF-8, bytes-like keys as their bytes, int as its 8 little-endian bytes
  (bloomkit's key rules, so the CLI and C programs agree); any other object as str(key) in UTF-8, as
  pybloom_live hashed everything that was not a str.
- files: tofile/fromfile and pickling use bloomkit's file format (readable by the bloomkit command),
  not pybloom_live's. load_pybloom_live reads the files pybloom_live's tofile wrote and answers as
  pybloom_live does; to_bloomkit(keys) rebuilds such a filter as a bloomkit one from its keys.
- there is no .bitarray attribute; `.filter` is the underlying bloomkit filter.

BIP37Filter is a Bitcoin BIP 37 (filterload) filter, byte for byte as Bitcoin Core makes and reads
it, and murmur3_32 the hash it probes with (docs/PYTHON.md, "Bitcoin BIP 37 filters");
ParquetBloomFilters reads the Bloom filters of a Parquet file's column with the library's reader, and
parquet_filter makes one a Parquet writer can embed (docs/PYTHON.md).
"""

import bloomkit

__all__ = ["BloomFilter", "ScalableBloomFilter", "BIP37Filter", "murmur3_32", "load_pybloom_live",
           "PybloomLiveBloomFilter", "PybloomLiveScalableBloomFilter", "ParquetBloomFilters",
           "parquet_filter", "parquet_filter_size"]


def _key(key):
    if isinstance(key, (str, bytes, bytearray, memoryview, int)):
        return key
    return str(key)


def _wrap_as(cls, f, kind):
    """A cls object around the bloomkit filter f, which must be a kind (Bloom or Scalable)."""
    if not isinstance(f, kind):
        raise ValueError("not a %s filter: %s" % (kind.__name__, f.type_name))
    obj = cls.__new__(cls)
    obj.filter = f
    return obj


def _read_filter(f, n=-1):
    """One filter from a binary file object: n bytes, or (n < 0) exactly the filter's own length."""
    if n is not None and n >= 0:
        return bloomkit.from_bytes(f.read(n))
    head = f.read(64)
    info = bloomkit.file_info(head)
    rest = f.read(info["total_size"] - len(head))
    return bloomkit.from_bytes(head + rest)


class _Saved:
    """The file methods and pickling both classes share (bloomkit's file format)."""

    def tofile(self, f):
        """Write the filter to a binary file object (bloomkit's file format)."""
        f.write(bytes(self.filter))

    @classmethod
    def fromfile(cls, f, n=-1):
        """Read a filter written by tofile (or saved by bloomkit) from a binary file object."""
        return cls._wrap(_read_filter(f, n))

    def __reduce__(self):
        return (_restore, (type(self), bytes(self.filter)))


class BloomFilter(_Saved):
    """A Bloom filter of fixed capacity (pybloom_live.BloomFilter's API)."""

    def __init__(self, capacity, error_rate=0.001):
        if not 0 < error_rate < 1:
            raise ValueError("Error_Rate must be between 0 and 1.")
        if not capacity > 0:
            raise ValueError("Capacity must be > 0")
        self.filter = bloomkit.Bloom(capacity, error_rate, layout="partitioned")

    @classmethod
    def _wrap(cls, f):
        return _wrap_as(cls, f, bloomkit.Bloom)

    capacity = property(lambda self: self.filter.capacity)
    error_rate = property(lambda self: self.filter.error_rate)
    count = property(lambda self: self.filter.count)
    num_bits = property(lambda self: self.filter.bits)
    num_slices = property(lambda self: self.filter.k)
    bits_per_slice = property(lambda self: self.filter.bits // max(self.filter.k, 1))

    def __contains__(self, key):
        return _key(key) in self.filter

    def __len__(self):
        return self.filter.count

    def add(self, key, skip_check=False):
        """Add a key; True if it was (probably) present already (then nothing changes)."""
        key = _key(key)
        if not skip_check and key in self.filter:
            return True
        if self.filter.count >= self.filter.capacity:
            raise IndexError("BloomFilter is at capacity")
        self.filter.add(key)
        return False

    def copy(self):
        return self._wrap(self.filter.copy())

    def _check(self, other):
        if self.capacity != other.capacity or self.error_rate != other.error_rate:
            raise ValueError("Unioning filters requires both filters to have both the same capacity and error rate")

    def union(self, other):
        self._check(other)
        return self._wrap(self.filter | other.filter)

    def intersection(self, other):
        self._check(other)
        return self._wrap(self.filter & other.filter)

    __or__ = union
    __and__ = intersection


class ScalableBloomFilter(_Saved):
    """A Bloom filter that grows with its contents (pybloom_live.ScalableBloomFilter's API)."""

    SMALL_SET_GROWTH = 2
    LARGE_SET_GROWTH = 4

    def __init__(self, initial_capacity=100, error_rate=0.001, mode=LARGE_SET_GROWTH):
        if not 0 < error_rate < 1:
            raise ValueError("Error_Rate must be a decimal less than 0.")
        self.filter = bloomkit.Scalable(initial_capacity, error_rate, growth=mode, tightening=0.9)

    @classmethod
    def _wrap(cls, f):
        return _wrap_as(cls, f, bloomkit.Scalable)

    initial_capacity = property(lambda self: self.filter.initial_capacity)
    error_rate = property(lambda self: self.filter.error_rate)
    mode = property(lambda self: self.filter.growth)
    scale = property(lambda self: self.filter.growth)
    ratio = property(lambda self: self.filter.tightening)
    capacity = property(lambda self: self.filter.capacity)
    count = property(lambda self: self.filter.count)

    def __contains__(self, key):
        return _key(key) in self.filter

    def __len__(self):
        return self.filter.count

    def add(self, key):
        """Add a key; True if it was (probably) present already (then nothing changes)."""
        return not self.filter.add_if_absent(_key(key))

    def union(self, other):
        if (self.mode != other.mode or self.initial_capacity != other.initial_capacity
                or self.error_rate != other.error_rate):
            raise ValueError("Unioning two scalable bloom filters requires both filters to have both the same "
                             "mode, initial capacity and error rate")
        return self._wrap(self.filter | other.filter)

    __or__ = union

    def copy(self):
        return self._wrap(self.filter.copy())


def _restore(cls, data):
    return cls._wrap(bloomkit.from_bytes(data))


# ---- Bitcoin BIP 37 (filterload) filters ----

def murmur3_32(data, seed=0):
    """MurmurHash3 x86 32-bit of bytes with a 32-bit seed (the hash BIP 37 probes with)."""
    data = bytes(data)
    c1, c2, mask = 0xcc9e2d51, 0x1b873593, 0xffffffff
    h = seed & mask
    n = len(data) // 4
    for i in range(n):
        k = int.from_bytes(data[4 * i:4 * i + 4], "little")
        k = (k * c1) & mask
        k = ((k << 15) | (k >> 17)) & mask
        k = (k * c2) & mask
        h ^= k
        h = ((h << 13) | (h >> 19)) & mask
        h = (h * 5 + 0xe6546b64) & mask
    tail = data[4 * n:]
    if tail:
        k = int.from_bytes(tail, "little")
        k = (k * c1) & mask
        k = ((k << 15) | (k >> 17)) & mask
        k = (k * c2) & mask
        h ^= k
    h ^= len(data)
    h ^= h >> 16
    h = (h * 0x85ebca6b) & mask
    h ^= h >> 13
    h = (h * 0xc2b2ae35) & mask
    h ^= h >> 16
    return h


class BIP37Filter:
    """A Bitcoin BIP 37 filter, as a light client sends it in a filterload message: the same bits,
    sizing, limits and serialized form as Bitcoin Core's CBloomFilter and the C library's bk_bip37
    (bloomkit/bip37.h). BIP37Filter(elements, fp_rate, tweak=0, flags=UPDATE_NONE) sizes it by Core's
    rules; BIP37Filter.sized(nbytes, hash_funcs, ...) takes the size as given; BIP37Filter.from_bytes
    reads a payload strictly (ValueError naming what is wrong). Keys are bytes-like, or str as UTF-8."""

    MAX_BYTES = 36000
    MAX_HASH_FUNCS = 50
    UPDATE_NONE, UPDATE_ALL, UPDATE_P2PUBKEY_ONLY = 0, 1, 2
    _LN2SQUARED = 0.4804530139182014246671025263266649717305529515945455
    _LN2 = 0.6931471805599453094172321214581765680755001343602552

    def __init__(self, elements, fp_rate, tweak=0, flags=UPDATE_NONE):
        import math
        if not isinstance(elements, int) or not 0 < elements < 2 ** 32:
            raise ValueError("elements must be an integer from 1 to 2^32 - 1")
        if not 0 < fp_rate < 1:
            raise ValueError("fp_rate must be between 0 and 1")
        bits = -1 / self._LN2SQUARED * elements * math.log(fp_rate)
        nbytes = min(int(bits), self.MAX_BYTES * 8) // 8
        hash_funcs = min(int(nbytes * 8 // elements * self._LN2), self.MAX_HASH_FUNCS)
        self._init(nbytes, hash_funcs, tweak, flags)

    def _init(self, nbytes, hash_funcs, tweak, flags):
        if not 0 <= nbytes <= self.MAX_BYTES:
            raise ValueError("the filter has %d bytes: BIP 37 allows at most 36,000" % nbytes)
        if not 0 <= hash_funcs <= self.MAX_HASH_FUNCS:
            raise ValueError("the filter has %d hash functions: BIP 37 allows at most 50" % hash_funcs)
        if not 0 <= tweak < 2 ** 32:
            raise ValueError("tweak must be a 32-bit unsigned integer")
        if not 0 <= flags < 256:
            raise ValueError("flags must be one byte")
        self.data = bytearray(nbytes)
        self.hash_funcs, self.tweak, self.flags = hash_funcs, tweak, flags

    @classmethod
    def sized(cls, nbytes, hash_funcs, tweak=0, flags=UPDATE_NONE):
        """A filter of exactly nbytes bytes and hash_funcs hash functions."""
        obj = cls.__new__(cls)
        obj._init(nbytes, hash_funcs, tweak, flags)
        return obj

    @classmethod
    def from_bytes(cls, payload):
        """Reads a filterload payload; ValueError when its lengths do not add up or it passes a limit."""
        b = bytes(payload)
        if not b:
            raise ValueError("empty input: a BIP 37 filter has at least 10 bytes")
        if b[0] < 0xfd:
            n, hdr = b[0], 1
        else:
            hdr = {0xfd: 3, 0xfe: 5, 0xff: 9}[b[0]]
            if len(b) < hdr:
                raise ValueError("the filter's length field needs %d bytes, the input has %d" % (hdr, len(b)))
            n = int.from_bytes(b[1:hdr], "little")
            if n < {3: 0xfd, 5: 0x10000, 9: 0x100000000}[hdr]:
                raise ValueError("the filter's length %d is not written in its shortest form" % n)
        if n > cls.MAX_BYTES:
            raise ValueError("the filter has %d bytes: BIP 37 allows at most 36,000" % n)
        need = hdr + n + 9
        if len(b) < need:
            raise ValueError("the payload's fields need %d bytes, the input has %d" % (need, len(b)))
        if len(b) > need:
            raise ValueError("%d bytes follow the filter's last field (nFlags)" % (len(b) - need))
        hash_funcs = int.from_bytes(b[hdr + n:hdr + n + 4], "little")
        obj = cls.sized(n, hash_funcs, int.from_bytes(b[hdr + n + 4:hdr + n + 8], "little"), b[-1])
        obj.data[:] = b[hdr:hdr + n]
        return obj

    def __bytes__(self):
        n = len(self.data)
        head = bytes([n]) if n < 0xfd else b"\xfd" + n.to_bytes(2, "little")
        return (head + bytes(self.data) + self.hash_funcs.to_bytes(4, "little") + self.tweak.to_bytes(4, "little")
                + bytes([self.flags]))

    to_bytes = __bytes__

    def _bits(self, key):
        if isinstance(key, str):
            key = key.encode("utf-8")
        m = len(self.data) * 8
        for i in range(self.hash_funcs):
            yield murmur3_32(key, (i * 0xFBA4C795 + self.tweak) & 0xffffffff) % m

    def add(self, key):
        """Sets the key's bits (an empty filter stays empty, as in Bitcoin Core)."""
        if self.data:
            for i in self._bits(key):
                self.data[i >> 3] |= 1 << (i & 7)

    def __contains__(self, key):
        if not self.data:
            return True
        return all(self.data[i >> 3] & (1 << (i & 7)) for i in self._bits(key))

    def clear(self):
        """Clears every bit."""
        self.data[:] = bytes(len(self.data))

    def __eq__(self, other):
        return isinstance(other, BIP37Filter) and bytes(self) == bytes(other)

    __hash__ = None


# ---- files written by pybloom_live ----

_XXH3_128 = None


def _xxh3_128(data):
    """XXH3-128 of data, as the 16-byte canonical (big-endian) digest: from the system's libxxhash (the
    library bloomkit itself hashes with), else from the xxhash module."""
    global _XXH3_128
    if _XXH3_128 is None:
        try:
            import ctypes
            import ctypes.util

            class _H128(ctypes.Structure):
                _fields_ = [("low64", ctypes.c_uint64), ("high64", ctypes.c_uint64)]

            try:
                lib = ctypes.CDLL("libxxhash.so.0")
            except OSError:
                lib = ctypes.CDLL(ctypes.util.find_library("xxhash"))
            fn = lib.XXH3_128bits
            fn.restype = _H128
            fn.argtypes = [ctypes.c_char_p, ctypes.c_size_t]

            def xxh(b):
                r = fn(b, len(b))
                return r.high64.to_bytes(8, "big") + r.low64.to_bytes(8, "big")
            _XXH3_128 = xxh
        except (OSError, TypeError, AttributeError):
            import xxhash
            _XXH3_128 = lambda b: xxhash.xxh3_128(b).digest()  # noqa: E731
    return _XXH3_128(data)


def _pybloom_probes(num_slices, bits_per_slice, version):
    """pybloom_live's make_hashfuncs: a function from a key to its num_slices bit indexes in a slice.
    The digest is picked by the bits needed (SHA-512, -384, -256, SHA-1, else a 128-bit hash: XXH3-128
    from version 4.0, MD5 before); each salt i hashes its own digest of i, and the digests are cut into
    16-, 32- or 64-bit integers (native order: pybloom_live files come from little-endian machines)."""
    import hashlib
    import struct
    code, size = ("Q", 8) if bits_per_slice >= 1 << 31 else ("I", 4) if bits_per_slice >= 1 << 15 else ("H", 2)
    total = 8 * num_slices * size
    if total > 384:
        fn = hashlib.sha512
    elif total > 256:
        fn = hashlib.sha384
    elif total > 160:
        fn = hashlib.sha256
    elif total > 128:
        fn = hashlib.sha1
    elif version >= 4:
        fn = None
    else:
        fn = hashlib.md5
    digest_size = fn().digest_size if fn else 16
    fmt = "<" + code * (digest_size // size)
    per = digest_size // size
    nsalts = -(-num_slices // per)
    if fn:
        salts = [fn(fn(struct.pack("<I", i)).digest()) for i in range(nsalts)]
    else:
        salts = [_xxh3_128(struct.pack("<I", i)) for i in range(nsalts)]

    def probes(key):
        if isinstance(key, str):
            key = key.encode("utf-8")
        elif version < 4 or not isinstance(key, bytes):
            key = str(key).encode("utf-8")
        out = []
        for salt in salts:
            if fn:
                h = salt.copy()
                h.update(key)
                d = h.digest()
            else:
                d = _xxh3_128(salt + key)
            out.extend(v % bits_per_slice for v in struct.unpack(fmt, d))
            if len(out) >= num_slices:
                return out[:num_slices]
        return out
    return probes


class PybloomLiveBloomFilter:
    """A filter read from a file pybloom_live's BloomFilter.tofile wrote (read-only): answers `key in f`
    exactly as pybloom_live does. Made by load_pybloom_live."""

    def __init__(self, header, bits, version):
        import struct
        (self.error_rate, self.num_slices, self.bits_per_slice, self.capacity,
         self.count) = struct.unpack("<dQQQQ", header)
        self.num_bits = self.num_slices * self.bits_per_slice
        self.version = version
        self._bits = bytes(bits)
        self._probes = _pybloom_probes(self.num_slices, self.bits_per_slice, version)

    def __contains__(self, key):
        b, off = self._bits, 0
        for h in self._probes(key):
            i = off + h
            if not b[i >> 3] & (1 << (i & 7)):
                return False
            off += self.bits_per_slice
        return True

    def __len__(self):
        return self.count

    def to_bloomkit(self, keys, strict=True):
        """A bloomkit.compat.BloomFilter of the same capacity and error rate holding keys (the keys this
        filter was made from: bloomkit's hash cannot be derived from these bits). With strict, a key
        this filter says is absent (so never added to it) raises ValueError."""
        out = BloomFilter(self.capacity, self.error_rate)
        for k in keys:
            if strict and k not in self:
                raise ValueError("key %r is not in the pybloom_live filter: it was never added to it" % (k,))
            out.add(k)
        return out


class PybloomLiveScalableBloomFilter:
    """A filter read from a file pybloom_live's ScalableBloomFilter.tofile wrote (read-only): its
    sub-filters (PybloomLiveBloomFilter) in order. Made by load_pybloom_live."""

    def __init__(self, scale, ratio, initial_capacity, error_rate, filters):
        self.scale, self.ratio = scale, ratio
        self.initial_capacity, self.error_rate = initial_capacity, error_rate
        self.filters = filters

    mode = property(lambda self: self.scale)
    capacity = property(lambda self: sum(f.capacity for f in self.filters))
    count = property(lambda self: sum(f.count for f in self.filters))

    def __contains__(self, key):
        return any(key in f for f in reversed(self.filters))

    def __len__(self):
        return self.count

    def to_bloomkit(self, keys, strict=True):
        """A bloomkit.compat.ScalableBloomFilter with the same initial capacity, error rate and growth
        holding keys (see PybloomLiveBloomFilter.to_bloomkit)."""
        out = ScalableBloomFilter(self.initial_capacity, self.error_rate, self.scale)
        for k in keys:
            if strict and k not in self:
                raise ValueError("key %r is not in the pybloom_live filter: it was never added to it" % (k,))
            out.add(k)
        return out


def _pybloom_bloom(b, version, where="the file"):
    import math
    import struct
    if len(b) < 40:
        raise ValueError("%s: %d bytes: a pybloom_live BloomFilter has a 40-byte header" % (where, len(b)))
    error_rate, k, bps, capacity, count = struct.unpack("<dQQQQ", b[:40])
    if not (math.isfinite(error_rate) and 0 < error_rate < 1):
        raise ValueError("%s: error rate %r is not between 0 and 1" % (where, error_rate))
    if k < 1 or bps < 1:
        raise ValueError("%s: %d slices of %d bits: both must be at least 1" % (where, k, bps))
    need = -(-(k * bps) // 8)
    if len(b) - 40 != need:
        raise ValueError("%s: %d slices of %d bits need %d bytes of bits, the file has %d"
                         % (where, k, bps, need, len(b) - 40))
    return PybloomLiveBloomFilter(b[:40], b[40:], version)


def load_pybloom_live(source, version=4):
    """Reads a file written by pybloom_live's BloomFilter.tofile or ScalableBloomFilter.tofile.

    source: bytes-like, a path, or a binary file object (read to its end). version: the major version
    of pybloom_live that wrote it (4: XXH3-128 where a 128-bit hash is enough, bytes keys hashed as
    their bytes; 3 and earlier: MD5, and every key that is not a str hashed as str(key)); the files
    themselves do not say. Which class wrote it is told by the layout. Returns a
    PybloomLiveBloomFilter or PybloomLiveScalableBloomFilter; a truncated or inconsistent file raises
    ValueError saying what does not add up."""
    import math
    import os
    import struct
    if version not in (2, 3, 4):
        raise ValueError("version must be 2, 3 or 4 (pybloom_live's major version)")
    if isinstance(source, (bytes, bytearray, memoryview)):
        b = bytes(source)
    elif isinstance(source, (str, os.PathLike)):
        with open(source, "rb") as fp:
            b = fp.read()
    else:
        b = source.read()
    # A BloomFilter file starts with its error rate, a double in (0, 1), and its lengths add up; a
    # ScalableBloomFilter file: '<idQd' (scale, ratio, initial capacity, error rate), '<l' filters, one
    # '<Q' size each, then each BloomFilter file. The layout whose lengths add up is the one.
    bloom_error = None
    if len(b) >= 8:
        first = struct.unpack("<d", b[:8])[0]
        if math.isfinite(first) and 0 < first < 1:
            try:
                return _pybloom_bloom(b, version)
            except ValueError as e:
                bloom_error = e
    try:
        return _pybloom_scalable(b, version)
    except ValueError:
        if bloom_error is not None:
            raise bloom_error from None
        raise


def _pybloom_scalable(b, version):
    import math
    import struct
    if len(b) < 32:
        raise ValueError("%d bytes: too short for a pybloom_live file (a BloomFilter has 40 bytes of header, a "
                         "ScalableBloomFilter 32)" % len(b))
    scale, ratio, initial, error_rate = struct.unpack("<idQd", b[:28])
    n = struct.unpack("<l", b[28:32])[0]
    if scale < 1 or not (math.isfinite(ratio) and 0 < ratio <= 1) or not (math.isfinite(error_rate) and
                                                                         0 < error_rate < 1):
        raise ValueError("not a pybloom_live file: scale %d, ratio %r, error rate %r" % (scale, ratio, error_rate))
    if n < 0 or 32 + 8 * n > len(b):
        raise ValueError("the file says %d sub-filters; its %d bytes cannot hold their size table" % (n, len(b)))
    sizes = struct.unpack("<%dQ" % n, b[32:32 + 8 * n])
    pos, filters = 32 + 8 * n, []
    for i, size in enumerate(sizes):
        if size > len(b) - pos:
            raise ValueError("sub-filter %d of %d: %d bytes, only %d left in the file" % (i + 1, n, size, len(b) - pos))
        filters.append(_pybloom_bloom(b[pos:pos + size], version, "sub-filter %d of %d" % (i + 1, n)))
        pos += size
    if pos != len(b):
        raise ValueError("%d bytes follow the last sub-filter" % (len(b) - pos))
    return PybloomLiveScalableBloomFilter(scale, ratio, initial, error_rate, filters)


# ---- Parquet split-block Bloom filters ----
# Read, checked and made by the library (bloomkit/parquet.h) through bloomkit._bloomkit._ParquetFilters;
# only a value's PLAIN encoding is made here.

_PQ_TYPES = ("BOOLEAN", "INT32", "INT64", "INT96", "FLOAT", "DOUBLE", "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY")


def _pq_plain(physical_type, type_length, value):
    import struct
    t = physical_type
    if t in ("INT32", "INT64", "FLOAT", "DOUBLE"):
        if isinstance(value, (bytes, bytearray, str)):
            raise TypeError("a %s column takes a number" % t)
        return struct.pack({"INT32": "<i", "INT64": "<q", "FLOAT": "<f", "DOUBLE": "<d"}[t], value)
    if t in ("BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"):
        v = value.encode("utf-8") if isinstance(value, str) else bytes(value)
        if t == "FIXED_LEN_BYTE_ARRAY" and len(v) != type_length:
            raise ValueError("%d bytes; the column's values have %d" % (len(v), type_length))
        return v
    raise TypeError("a %s column has no Bloom filter a value can be checked against" % t)


def _pq_type(physical_type, type_length):
    if physical_type not in _PQ_TYPES or physical_type in ("BOOLEAN", "INT96"):
        raise ValueError("physical_type must be BYTE_ARRAY, INT32, INT64, FLOAT, DOUBLE or FIXED_LEN_BYTE_ARRAY, "
                         "not %r" % (physical_type,))
    if (physical_type == "FIXED_LEN_BYTE_ARRAY") != (type_length > 0):
        raise ValueError("type_length is FIXED_LEN_BYTE_ARRAY's length (and 0 for the other types)")
    return _PQ_TYPES.index(physical_type)


class ParquetBloomFilters:
    """The split-block Bloom filters of one column of a Parquet file, read by the library's reader
    (bloomkit/parquet.h, as `bloomkit parquet` reads them): ParquetBloomFilters(source, column), source
    bytes-like, a path or a binary file object, column its names joined by '.'. `value in f` is False
    when every row group's filter excludes the value (a row group without a filter cannot);
    contains(value, row_group) is one row group's answer (None: no filter). Values: int for INT32/INT64,
    float for FLOAT/DOUBLE, bytes (or str as UTF-8) for the byte-array types. A damaged file raises
    ValueError naming what. from_blob reads one filter blob (a BloomFilterHeader and its bitset, as
    parquet_filter or `bloomkit parquet export` make it)."""

    def __init__(self, source, column):
        import os
        if isinstance(source, (bytes, bytearray, memoryview)):
            b = source
        elif isinstance(source, (str, os.PathLike)):
            with open(source, "rb") as fp:
                b = fp.read()
        else:
            b = source.read()
        self._c = bloomkit._bloomkit._ParquetFilters(b, column)
        self.column = column

    @classmethod
    def from_blob(cls, blob, physical_type, type_length=0):
        """One filter blob (header and bitset) holding values of physical_type."""
        self = cls.__new__(cls)
        self._c = bloomkit._bloomkit._ParquetFilters.from_blob(blob, _pq_type(physical_type, type_length),
                                                                type_length)
        self.column = None
        return self

    physical_type = property(lambda self: self._c.physical_type)
    type_length = property(lambda self: self._c.type_length)
    row_groups = property(lambda self: self._c.row_groups)
    filter_bytes = property(lambda self: self._c.filter_bytes)

    def plain(self, value):
        """The value's PLAIN encoding in this column's physical type (what the filters hash)."""
        return _pq_plain(self._c.physical_type, self._c.type_length, value)

    def contains(self, value, row_group):
        """Row group's answer: True maybe present, False certainly absent, None no filter."""
        return self._c.contains_plain(self.plain(value), row_group)

    def __contains__(self, value):
        return self._c.any_plain(self.plain(value))

    def stats(self, row_group):
        """What row group's filter's bits say (None: no filter): bytes, blocks, bits_set, fill,
        est_values (distinct values estimated from the fill), bits_per_value, fpr (the rate at which a
        value never written answers present)."""
        return self._c.stats(row_group)

    def bits(self, row_group):
        """Row group's bitset as stored (None: no filter)."""
        return self._c.bits(row_group)


def parquet_filter_size(ndv, fpp=0.01):
    """The bytes Parquet's writers (parquet-mr, Arrow, DuckDB) give a filter for ndv distinct values at
    false-positive rate fpp: -8 ndv / ln(1 - fpp**(1/8)) bits, rounded up to a power of two, 32 bytes
    to 128 MiB."""
    return bloomkit._bloomkit._ParquetFilters.size(ndv, fpp)


def parquet_filter(values, physical_type, type_length=0, ndv=None, fpp=0.01, nbytes=None, header=True):
    """A split-block filter blob a Parquet writer can embed (a Thrift BloomFilterHeader, then the bitset;
    with header=False the bitset alone) holding values of physical_type, as `bloomkit parquet export`
    makes it. Sized by parquet_filter_size(ndv, fpp), ndv by default the distinct values given, or
    exactly nbytes (a multiple of 32)."""
    _pq_type(physical_type, type_length)
    plains = [_pq_plain(physical_type, type_length, v) for v in values]
    if nbytes is None:
        nbytes = parquet_filter_size(len(set(plains)) if ndv is None else ndv, fpp)
    return bloomkit._bloomkit._ParquetFilters.make(plains, nbytes, header)
