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
  not pybloom_live's; files written by pybloom_live cannot be read: rebuild those filters from the keys.
- there is no .bitarray attribute; `.filter` is the underlying bloomkit filter.

BIP37Filter is a Bitcoin BIP 37 (filterload) filter, byte for byte as Bitcoin Core makes and reads
it, and murmur3_32 the hash it probes with (docs/PYTHON.md, "Bitcoin BIP 37 filters").
"""

import bloomkit

__all__ = ["BloomFilter", "ScalableBloomFilter", "BIP37Filter", "murmur3_32"]


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
