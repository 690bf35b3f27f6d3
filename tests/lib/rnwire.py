"""Kafka wire values for the test libraries that speak an API no
installed client offers: written into a request body (the functions),
read out of a response body (Reader)."""
import struct


def uvarint(v):
    """An unsigned varint."""
    out = b""
    while v >= 0x80:
        out += bytes([(v & 0x7F) | 0x80])
        v >>= 7
    return out + bytes([v])


def string(s):
    """A classic string (int16 length); None is the null string."""
    if s is None:
        return struct.pack(">h", -1)
    b = s.encode()
    return struct.pack(">h", len(b)) + b


def compact_string(s):
    """A flexible version's string (uvarint length + 1)."""
    b = s.encode()
    return uvarint(len(b) + 1) + b


class Reader:
    """A cursor over bytes: fixed-size fields, unsigned varints, and the
    counts, strings and tagged fields of classic (flex False) and
    flexible (flex True) versions."""

    def __init__(self, b):
        self.b, self.p = b, 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.b, self.p)
        self.p += struct.calcsize(fmt)
        return v[0]

    def uvarint(self):
        v = s = 0
        while True:
            c = self.b[self.p]
            self.p += 1
            v |= (c & 0x7F) << s
            s += 7
            if c < 0x80:
                return v

    def count(self, flex):
        return self.uvarint() - 1 if flex else self.take(">i")

    def string(self, flex=False):
        """The string, or None for a null one."""
        n = self.uvarint() - 1 if flex else self.take(">h")
        if n < 0:
            return None
        s = self.b[self.p:self.p + n].decode()
        self.p += n
        return s

    def tags(self, flex):
        if flex:
            for _ in range(self.uvarint()):
                self.uvarint()
                self.p += self.uvarint()
