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
"""

import bloomkit

__all__ = ["BloomFilter", "ScalableBloomFilter"]


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
