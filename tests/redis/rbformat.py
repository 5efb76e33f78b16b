"""A from-spec model of RedisBloom 2.x's Bloom chain, cuckoo filter, count-min sketch and Top-K, and writers for the data a
RedisBloom server produces from them: RDB files (module values of types MBbloom-- / MBbloomCF),
DUMP payloads and SCANDUMP chunks. The tests build migration fixtures with it, without RedisBloom.

Everything here follows the format facts in docs/REDIS.md ("Migrating from RedisBloom"); the model
is checked against figures RedisBloom's own test-suite records (test_rb_migrate.py,
test_model_reproduces_redisbloom_figures), so a shared misreading of the format with the module's C
code would show up there.
"""
import functools
import math
import struct

MASK64 = (1 << 64) - 1
M64 = 0xC6A4A7935BD1E995
M32 = 0x5BD1E995

# ---------------------------------------------------------------- hashes


# The tests ask for the same items' hashes again and again (the same probes against every filter, before
# and after adds): remembered.
@functools.lru_cache(maxsize=None)
def murmur2_32(data, seed):
    n = len(data)
    h = (seed ^ n) & 0xFFFFFFFF
    i = 0
    while n - i >= 4:
        k = int.from_bytes(data[i:i + 4], "little")
        k = (k * M32) & 0xFFFFFFFF
        k ^= k >> 24
        k = (k * M32) & 0xFFFFFFFF
        h = ((h * M32) & 0xFFFFFFFF) ^ k
        i += 4
    rest = data[i:]
    if rest:
        h ^= int.from_bytes(rest, "little")
        h = (h * M32) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * M32) & 0xFFFFFFFF
    return h ^ (h >> 15)


@functools.lru_cache(maxsize=None)
def murmur64a(data, seed):
    n = len(data)
    h = (seed ^ (n * M64)) & MASK64
    full = n // 8
    for j in range(full):
        k = int.from_bytes(data[8 * j:8 * j + 8], "little")
        k = (k * M64) & MASK64
        k ^= k >> 47
        k = (k * M64) & MASK64
        h = ((h ^ k) * M64) & MASK64
    rest = data[8 * full:]
    if rest:
        h = ((h ^ int.from_bytes(rest, "little")) * M64) & MASK64
    h ^= h >> 47
    h = (h * M64) & MASK64
    return h ^ (h >> 47)


# ---------------------------------------------------------------- Bloom chain

NOROUND, ENTS_IS_BITS, FORCE64, NO_SCALING = 1, 2, 4, 8
LN2 = 0.693147180559945
LN2_SQ = 0.480453013918201


class Link:
    def __init__(self, entries, error, options):
        self.error = error
        self.entries = entries
        self.bpe = abs(-(math.log(error) / LN2_SQ))
        if options & NOROUND:
            bits = int(entries * self.bpe) or 1
            self.n2 = 0
        else:
            b = entries * self.bpe
            self.n2 = math.frexp(b)[1]  # logb(b) + 1
            bits = 1 << self.n2
            self.entries += int(int(bits - b) / self.bpe)
        self.nbytes = (bits // 64 + 1) * 8 if bits % 64 else bits // 8
        self.nbits = self.nbytes * 8
        self.hashes = math.ceil(LN2 * self.bpe)
        self.bits = bytearray(self.nbytes)
        self.size = 0

    def mod(self):
        return (1 << self.n2) if self.n2 else self.nbits

    def probes(self, a, b):
        m = self.mod()
        return [((a + i * b) & MASK64) % m for i in range(self.hashes)]

    def test(self, a, b):
        return all(self.bits[x >> 3] >> (x & 7) & 1 for x in self.probes(a, b))

    def set(self, a, b):
        for x in self.probes(a, b):
            self.bits[x >> 3] |= 1 << (x & 7)


class Chain:
    """RedisBloom's scalable filter: BF.RESERVE makes options FORCE64 | NOROUND (| NO_SCALING)."""

    def __init__(self, capacity, error, options=FORCE64 | NOROUND, growth=2):
        self.options = options
        self.growth = growth
        self.size = 0
        first = error if options & NO_SCALING else error * 0.5
        self.links = [Link(capacity, first, options)]

    def hash(self, item):
        if self.options & FORCE64:
            a = murmur64a(item, 0xC6A4A7935BD1E995)
            return a, murmur64a(item, a)
        a = murmur2_32(item, 0x9747B28C)
        return a, murmur2_32(item, a)

    def contains(self, item):
        a, b = self.hash(item)
        return any(l.test(a, b) for l in reversed(self.links))

    def add(self, item):
        """True if added, False if (probably) present; raises OverflowError when a non-scaling chain is full."""
        a, b = self.hash(item)
        if any(l.test(a, b) for l in reversed(self.links)):
            return False
        cur = self.links[-1]
        if cur.size >= cur.entries:
            if self.options & NO_SCALING:
                raise OverflowError("non scaling filter is full")
            cur = Link(cur.entries * self.growth, cur.error * 0.5, self.options)
            self.links.append(cur)
        cur.set(a, b)
        cur.size += 1
        self.size += 1
        return True

    def capacity(self):
        return sum(l.entries for l in self.links)

    # SCANDUMP: header (iterator 0 -> 1), then the arrays; iterator = 1 + end offset of the chunk
    def header(self):
        out = struct.pack("<QIII", self.size, len(self.links), self.options, self.growth)
        for l in self.links:
            out += struct.pack("<QQQddIQB", l.nbytes, l.nbits, l.size, l.error, l.bpe, l.hashes, l.entries, l.n2)
        return out

    def chunks(self, max_chunk=16 << 20):
        """The (iterator, data) pairs of a full SCANDUMP, header first."""
        out = [(1, self.header())]
        it = 1
        for l in self.links:
            off = 0
            while off < l.nbytes:
                piece = bytes(l.bits[off:off + max_chunk])
                it += len(piece)
                off += len(piece)
                out.append((it, piece))
        return out

    def rdb_ops(self, encver=4):
        ops = [("u", self.size), ("u", len(self.links))]
        if encver >= 2:
            ops.append(("u", self.options))
        if encver >= 4:
            ops.append(("u", self.growth))
        for l in self.links:
            ops += [("u", l.entries), ("d", l.error), ("u", l.hashes), ("d", l.bpe)]
            if encver >= 1:
                ops += [("u", l.nbits), ("u", l.n2)]
            ops += [("s", bytes(l.bits)), ("u", l.size)]
        return ops


# ---------------------------------------------------------------- cuckoo filter


def next_pow2(n):
    if n == 0:
        return 0
    return 1 << (n - 1).bit_length()


class Cuckoo:
    """RedisBloom's cuckoo filter as CF.RESERVE makes it."""

    def __init__(self, capacity, bucket_size=2, max_iterations=20, expansion=1):
        self.bucket_size = bucket_size
        self.max_iterations = max_iterations
        self.expansion = next_pow2(expansion)
        self.nbuckets = next_pow2(capacity // bucket_size) or 1
        self.items = 0
        self.deletes = 0
        self.tables = []
        self.grow()

    def grow(self):
        nb = self.nbuckets * self.expansion ** len(self.tables)
        self.tables.append((nb, bytearray(nb * self.bucket_size)))

    @staticmethod
    def key(item):
        h = murmur64a(item, 0)
        fp = h % 255 + 1
        return h, (h ^ (fp * M32)) & MASK64, fp

    def slots(self, nb, h):
        start = ((h % nb) * self.bucket_size) & 0xFFFFFFFF
        return range(start, start + self.bucket_size)

    def contains(self, item):
        h1, h2, fp = self.key(item)
        return any(t[s] == fp for nb, t in self.tables for h in (h1, h2) for s in self.slots(nb, h))

    def count(self, item):
        h1, h2, fp = self.key(item)
        return sum(t[s] == fp for nb, t in self.tables for h in (h1, h2) for s in self.slots(nb, h))

    def _free_slot(self, nb, t, h1, h2):
        for h in (h1, h2):
            for s in self.slots(nb, h):
                if t[s] == 0:
                    return s
        return None

    def _kick(self, nb, t, h1, fp):
        b = self.bucket_size
        victim = 0
        i = h1 % nb
        for _ in range(self.max_iterations):
            s = i * b + victim
            t[s], fp = fp, t[s]
            i = ((i ^ (fp * M32)) & MASK64) % nb
            for s2 in range(i * b, i * b + b):
                if t[s2] == 0:
                    t[s2] = fp
                    return True
            victim = (victim + 1) % b
        for _ in range(self.max_iterations):  # undo
            victim = (victim + b - 1) % b
            i = ((i ^ (fp * M32)) & MASK64) % nb
            s = i * b + victim
            t[s], fp = fp, t[s]
        return False

    def add(self, item, nx=False):
        """True if inserted, False if present (nx); raises OverflowError when full and not expanding."""
        h1, h2, fp = self.key(item)
        if nx and self.contains(item):
            return False
        while True:
            for nb, t in reversed(self.tables):
                s = self._free_slot(nb, t, h1, h2)
                if s is not None:
                    t[s] = fp
                    self.items += 1
                    return True
            nb, t = self.tables[-1]
            if self._kick(nb, t, h1, fp):
                self.items += 1
                return True
            if self.expansion == 0:
                raise OverflowError("filter is full")
            self.grow()

    def delete(self, item):
        """One copy out, newest table first (no compaction: only for fewer deletes than a tenth of the items)."""
        h1, h2, fp = self.key(item)
        for nb, t in reversed(self.tables):
            for h in (h1, h2):
                for s in self.slots(nb, h):
                    if t[s] == fp:
                        t[s] = 0
                        self.items -= 1
                        self.deletes += 1
                        assert len(self.tables) == 1 or self.deletes <= self.items * 0.10
                        return True
        return False

    def header(self):
        return struct.pack("<QQQQHHH", self.items, self.nbuckets, self.deletes, len(self.tables),
                           self.bucket_size, self.max_iterations, self.expansion)

    def chunks(self, max_chunk=16 << 20):
        out = [(1, self.header())]
        it = 1
        for nb, t in self.tables:
            off = 0
            while off < len(t):
                piece = bytes(t[off:off + max_chunk])
                it += len(piece)
                off += len(piece)
                out.append((it, piece))
        return out

    def rdb_ops(self, encver=4):
        ops = [("u", len(self.tables)), ("u", self.nbuckets), ("u", self.items)]
        if encver >= 4:
            ops += [("u", self.deletes), ("u", self.bucket_size), ("u", self.max_iterations), ("u", self.expansion)]
        for nb, t in self.tables:
            if encver >= 4:
                ops.append(("u", nb))
            ops.append(("s", bytes(t)))
        return ops


# ---------------------------------------------------------------- count-min sketch and Top-K


class CMS:
    """RedisBloom's count-min sketch: depth rows of width uint32 counters; row i's column is
    MurmurHash2(item, seed i) % width; counters saturate at 2^32 - 1."""

    def __init__(self, width, depth):
        self.width, self.depth, self.total = width, depth, 0
        self.cells = [0] * (width * depth)

    def cols(self, item):
        return [i * self.width + murmur2_32(item, i) % self.width for i in range(self.depth)]

    def incrby(self, item, v):
        for c in self.cols(item):
            self.cells[c] = min(self.cells[c] + v, 0xFFFFFFFF)
        self.total += v
        return self.query(item)

    def query(self, item):
        return min(self.cells[c] for c in self.cols(item))

    def rdb_ops(self):
        return [("u", self.width), ("u", self.depth), ("u", self.total),
                ("s", struct.pack("<%dI" % len(self.cells), *self.cells))]


class TopK:
    """RedisBloom's Top-K (HeavyKeeper) for streams whose items never meet another item's bucket (the
    decay is random in RedisBloom: the fixtures keep clear of it, and add() asserts so): depth rows of
    width (fingerprint, count) buckets, fingerprint MurmurHash2(item, 1919), row i's bucket
    MurmurHash2(item, seed i) % width; a min-heap of k (fingerprint, item, count)."""

    GA = 1919

    def __init__(self, k, width, depth, decay):
        self.k, self.width, self.depth, self.decay = k, width, depth, decay
        self.buckets = [[0, 0] for _ in range(width * depth)]
        self.heap = [[0, 0, None, 0] for _ in range(k)]  # fp, itemlen, item, count

    def _sift(self, start):
        a, n = self.heap, self.k
        if n < 2 or (n - 2) // 2 < start:
            return
        child = 2 * start + 1
        if child + 1 < n and a[child][3] > a[child + 1][3]:
            child += 1
        if a[child][3] > a[start][3]:
            return
        top = a[start]
        while True:
            a[start] = a[child]
            start = child
            if (n - 2) // 2 < child:
                break
            child = 2 * child + 1
            if child + 1 < n and a[child][3] > a[child + 1][3]:
                child += 1
            if not a[child][3] < top[3]:
                break
        a[start] = top

    def _find(self, fp, item):
        for e in reversed(self.heap):
            if e[2] is not None and e[0] == fp and e[2] == item:
                return e
        return None

    def add(self, item, incr=1):
        """Returns the expelled item or None."""
        fp = murmur2_32(item, self.GA)
        heap_min = self.heap[0][3]
        best = 0
        for i in range(self.depth):
            b = self.buckets[i * self.width + murmur2_32(item, i) % self.width]
            assert b[1] == 0 or b[0] == fp, "the fixture met the random decay"
            if b[1] == 0:
                b[0], b[1] = fp, incr
            else:
                b[1] = min(b[1] + incr, 0xFFFFFFFF)
            best = max(best, b[1])
        if best < heap_min:
            return None
        e = self._find(fp, item)
        if e is not None:
            e[3] = best
            self._sift(self.heap.index(e))
            return None
        gone = self.heap[0][2]
        self.heap[0] = [fp, len(item), item, best]
        self._sift(0)
        return gone

    def count(self, item):
        fp = murmur2_32(item, self.GA)
        in_heap = self._find(fp, item) is not None
        heap_min = self.heap[0][3]
        best = 0
        for i in range(self.depth):
            b = self.buckets[i * self.width + murmur2_32(item, i) % self.width]
            if b[0] == fp and (not in_heap or b[1] >= heap_min):
                best = max(best, b[1])
        return best

    def query(self, item):
        return int(self._find(murmur2_32(item, self.GA), item) is not None)

    def list(self):
        """(item, count), heaviest first (stable for equal counts), as TOPK.LIST WITHCOUNT."""
        out = sorted([e for e in self.heap], key=lambda e: -e[3])
        return [(e[2], e[3]) for e in out if e[3]]

    def rdb_ops(self, pointer=0x7F0000001000):
        buckets = b"".join(struct.pack("<II", fp, c) for fp, c in self.buckets)
        heap = b""
        items = []
        for fp, n, item, c in self.heap:
            # RedisBloom's struct as it sits in memory: the item's pointer is saved too (and ignored)
            heap += struct.pack("<IIQI4x", fp, n, pointer if item is not None else 0, c)
            items.append(("s", (item if item is not None else b"") + b"\0"))
        return [("u", self.k), ("u", self.width), ("u", self.depth), ("d", self.decay),
                ("s", buckets), ("s", heap)] + items


# ---------------------------------------------------------------- RDB

MODULE_CHARSET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
RDB_TYPE_MODULE_2 = 7
OP_EOF, OP_UINT, OP_DOUBLE, OP_STRING = 0, 2, 4, 5


def _crc64_table():
    poly = 0x95AC9329AC4BC9B5  # the Jones polynomial (0xad93d23594c935a9), bit-reflected
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ poly if c & 1 else c >> 1
        table.append(c)
    return table


_CRC = _crc64_table()


def crc64(data, crc=0):
    """Redis's CRC-64 (Jones, reflected, no final xor)."""
    for byte in data:
        crc = _CRC[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc


def rdb_len(n):
    if n < 64:
        return bytes([n])
    if n < 16384:
        return bytes([0x40 | (n >> 8), n & 0xFF])
    if n <= 0xFFFFFFFF:
        return b"\x80" + n.to_bytes(4, "big")
    return b"\x81" + n.to_bytes(8, "big")


def rdb_string(b):
    return rdb_len(len(b)) + b


def module_id(name, encver):
    assert len(name) == 9
    mid = 0
    for ch in name:
        mid = (mid << 6) | MODULE_CHARSET.index(ch)
    return (mid << 10) | encver


def module_value(type_name, encver, ops):
    """A module value as Redis writes it: module id, then opcode-tagged fields, then the EOF opcode."""
    out = rdb_len(module_id(type_name, encver))
    for kind, v in ops:
        if kind == "u":
            out += rdb_len(OP_UINT) + rdb_len(v)
        elif kind == "d":
            out += rdb_len(OP_DOUBLE) + struct.pack("<d", v)
        else:
            out += rdb_len(OP_STRING) + rdb_string(v)
    return out + rdb_len(OP_EOF)


def bloom_value(chain, encver=4):
    return module_value("MBbloom--", encver, chain.rdb_ops(encver))


def cuckoo_value(cf, encver=4):
    return module_value("MBbloomCF", encver, cf.rdb_ops(encver))


def cms_value(c):
    return module_value("CMSk-TYPE", 0, c.rdb_ops())


def topk_value(t):
    return module_value("TopK-TYPE", 0, t.rdb_ops())


def rdb_file(entries, version=10):
    """An RDB file with db 0 holding entries: (key bytes, module value bytes). Checksummed."""
    body = b"REDIS%04d" % version
    body += b"\xfa" + rdb_string(b"redis-ver") + rdb_string(b"7.0.15")
    body += b"\xfe" + rdb_len(0)
    body += b"\xfb" + rdb_len(len(entries)) + rdb_len(0)
    for key, value in entries:
        body += bytes([RDB_TYPE_MODULE_2]) + rdb_string(key) + value
    body += b"\xff"
    return body + crc64(body).to_bytes(8, "little")


def dump_payload(value, version=10):
    """A DUMP / RESTORE payload: type, value, RDB version (2 bytes), CRC-64 of all that."""
    body = bytes([RDB_TYPE_MODULE_2]) + value + version.to_bytes(2, "little")
    return body + crc64(body).to_bytes(8, "little")


# ---------------------------------------------------------------- reading an RDB (what the module saved)


class RdbReader:
    """Enough of the RDB format to pull module values out of a file saved with rdbcompression no."""

    def __init__(self, data):
        self.d = data
        self.p = 0

    def byte(self):
        b = self.d[self.p]
        self.p += 1
        return b

    def length(self):
        b = self.byte()
        t = b >> 6
        if t == 0:
            return b & 0x3F, False
        if t == 1:
            return ((b & 0x3F) << 8) | self.byte(), False
        if t == 2:
            if b == 0x80:
                v = int.from_bytes(self.d[self.p:self.p + 4], "big")
                self.p += 4
                return v, False
            v = int.from_bytes(self.d[self.p:self.p + 8], "big")
            self.p += 8
            return v, False
        return b & 0x3F, True  # special encoding

    def string(self):
        n, special = self.length()
        if special:
            if n in (0, 1, 2):
                size = 1 << n
                v = int.from_bytes(self.d[self.p:self.p + size], "little", signed=True)
                self.p += size
                return str(v).encode()
            raise ValueError("compressed string: save with rdbcompression no")
        s = self.d[self.p:self.p + n]
        self.p += n
        return s

    def module_value(self):
        """Returns (type name, encver, bytes of the whole value)."""
        start = self.p
        mid, _ = self.length()
        encver = mid & 1023
        name = ""
        m = mid >> 10
        for _ in range(9):
            name = MODULE_CHARSET[m & 63] + name
            m >>= 6
        while True:
            op, _ = self.length()
            if op == OP_EOF:
                break
            if op == OP_UINT:
                self.length()
            elif op == OP_DOUBLE:
                self.p += 8
            elif op == OP_STRING:
                self.string()
            else:
                raise ValueError(f"opcode {op}")
        return name, encver, self.d[start:self.p]

    def module_values(self):
        """{key: (type name, encver, value bytes)} for the module values of the file."""
        assert self.d[:5] == b"REDIS"
        self.p = 9
        out = {}
        while True:
            op = self.byte()
            if op == 0xFF:
                return out
            if op == 0xFA:
                self.string()
                self.string()
            elif op == 0xFE:
                self.length()
            elif op == 0xFB:
                self.length()
                self.length()
            elif op == 0xF5:  # module aux data: not expected from this module
                raise ValueError("module aux data")
            elif op in (0xFC, 0xFD):
                self.p += 8 if op == 0xFC else 4
            elif op == RDB_TYPE_MODULE_2:
                key = self.string()
                out[key] = self.module_value()
            else:
                raise ValueError(f"RDB type {op} not handled")
