"""A minimal RESP2/RESP3 client that keeps the reply types (for checking reply shapes exactly).

Replies become Python values tagged by type: Bool, Null, Map (a list of pairs, order kept), Err,
Simple (simple string), int, float (RESP3 double), bytes (bulk string), list (array).
"""
import socket


class Err(str):
    pass


class Simple(str):
    pass


class Map(list):
    pass


class Null:
    def __repr__(self):
        return "Null"

    def __eq__(self, other):
        return isinstance(other, Null)


class Bool:
    def __init__(self, v):
        self.v = v

    def __repr__(self):
        return f"Bool({self.v})"

    def __eq__(self, other):
        return isinstance(other, Bool) and other.v == self.v


def encode(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        if not isinstance(a, (bytes, bytearray)):
            a = str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


class Conn:
    def __init__(self, port, resp=2):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=60)
        self.buf = b""
        if resp == 3:
            hello = self.call("HELLO", 3)
            assert isinstance(hello, Map), hello

    def close(self):
        self.sock.close()

    def _fill(self):
        data = self.sock.recv(1 << 16)
        if not data:
            raise ConnectionError("connection closed")
        self.buf += data

    def _line(self):
        while b"\r\n" not in self.buf:
            self._fill()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n):
        while len(self.buf) < n + 2:
            self._fill()
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def read(self):
        line = self._line()
        t, rest = line[:1], line[1:]
        if t == b"+":
            return Simple(rest.decode("utf-8", "replace"))
        if t == b"-":
            return Err(rest.decode("utf-8", "replace"))
        if t == b":":
            return int(rest)
        if t == b",":
            return float(rest)
        if t == b"#":
            return Bool(rest == b"t")
        if t == b"_":
            return Null()
        if t == b"$":
            n = int(rest)
            return Null() if n < 0 else self._exact(n)
        if t in (b"*", b"~", b">"):
            n = int(rest)
            return Null() if n < 0 else [self.read() for _ in range(n)]
        if t == b"%":
            n = int(rest)
            return Map((self.read(), self.read()) for _ in range(n))
        raise ValueError(f"unknown reply type {line!r}")

    def call(self, *args):
        self.sock.sendall(encode(*args))
        return self.read()

    def pipeline(self, cmds):
        self.sock.sendall(b"".join(encode(*c) for c in cmds))
        return [self.read() for _ in cmds]
