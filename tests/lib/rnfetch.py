"""Raw Fetch requests with KIP-227 session fields, for the tests of
incremental fetch sessions: Fetch v11 (classic, topics by name), v12
(flexible, by name) and v13 (flexible, topics by id), their responses
decoded into partitions and the records of uncompressed v2 batches; the
topic ids of Metadata v12; DeleteRecords v1.
The installed clients hide the session id and epoch, so these speak the
wire themselves: one socket per Conn, requests sent and answered apart so
that a test can produce while a long poll is parked."""
import select
import socket
import struct
import uuid

from rnwire import Reader
from rnwire import compact_string as _cstr
from rnwire import string as _str
from rnwire import uvarint as _uv

FETCH_SESSION_ID_NOT_FOUND = 70
INVALID_FETCH_SESSION_EPOCH = 71


def _zigzag(r):
    v = r.uvarint()
    return (v >> 1) ^ -(v & 1)


class Part:
    """One partition of a Fetch response."""

    def __init__(self, index, error, hw, lso, log_start, records):
        self.index, self.error, self.hw = index, error, hw
        self.lso, self.log_start, self.records = lso, log_start, records

    def batches(self):
        """[(base offset, record count)] of the whole v2 batches."""
        out, b, p = [], self.records or b"", 0
        while p + 61 <= len(b):
            base, length = struct.unpack_from(">qi", b, p)
            if p + 12 + length > len(b):
                break  # cut by the byte limit, as Kafka allows
            out.append((base, struct.unpack_from(">i", b, p + 57)[0]))
            p += 12 + length
        return out

    def values(self):
        """[(offset, value)] of the records of whole, uncompressed v2
        batches; a compressed batch raises ValueError."""
        out, b, p = [], self.records or b"", 0
        while p + 61 <= len(b):
            base, length = struct.unpack_from(">qi", b, p)
            end = p + 12 + length
            if end > len(b):
                break
            attrs = struct.unpack_from(">h", b, p + 21)[0]
            if attrs & 7:
                raise ValueError("compressed batch at offset %d" % base)
            count = struct.unpack_from(">i", b, p + 57)[0]
            r = Reader(b[:end])
            r.p = p + 61
            for _ in range(count):
                _zigzag(r)  # record length
                r.p += 1  # attributes
                _zigzag(r)  # timestamp delta
                delta = _zigzag(r)
                klen = _zigzag(r)
                r.p += max(klen, 0)
                vlen = _zigzag(r)
                val = None if vlen < 0 else bytes(b[r.p:r.p + vlen])
                r.p += max(vlen, 0)
                for _ in range(_zigzag(r)):  # headers
                    r.p += max(_zigzag(r), 0)
                    r.p += max(_zigzag(r), 0)
                out.append((base + delta, val))
            p = end
        return out


class Response:
    """A Fetch response: top-level error, session id, {partition: Part}."""

    def __init__(self, error, session_id, parts, elapsed=None):
        self.error, self.session_id, self.parts = error, session_id, parts
        self.elapsed = elapsed

    def __repr__(self):
        return "Fetch(error %d, session %d, partitions %s)" % (
            self.error, self.session_id,
            {p: (x.error, x.hw, x.batches()) for p, x in
             sorted(self.parts.items())})


class Conn:
    """One connection to a node's Kafka listener for raw Fetch calls on one
    topic (by name for v11, by id for v13)."""

    def __init__(self, port, topic, topic_id=None, host="127.0.0.1",
                 timeout=30):
        self.s = socket.create_connection((host, port), timeout=timeout)
        self.topic, self.topic_id = topic, topic_id
        self.corr = 0
        self.buf = b""

    def close(self):
        self.s.close()

    def _send(self, key, ver, body, flex):
        self.corr += 1
        msg = struct.pack(">hhi", key, ver, self.corr) + _str("rnfetch") + \
            (b"\0" if flex else b"") + body
        self.s.sendall(struct.pack(">i", len(msg)) + msg)
        return self.corr

    def ready(self, wait=0.0):
        """True if a response (or the close) is waiting to be read."""
        return bool(self.buf) or bool(select.select([self.s], [], [], wait)[0])

    def _recv(self, corr, flex):
        while len(self.buf) < 4 or \
                len(self.buf) < 4 + struct.unpack(">i", self.buf[:4])[0]:
            c = self.s.recv(1 << 20)
            if not c:
                raise ConnectionError("closed by the broker")
            self.buf += c
        n = struct.unpack(">i", self.buf[:4])[0]
        frame, self.buf = self.buf[4:4 + n], self.buf[4 + n:]
        r = Reader(frame)
        if r.take(">i") != corr:
            raise ValueError("correlation id mismatch")
        r.tags(flex)
        return r

    def topic_ids(self):
        """{name: 16-byte id} of every topic, from Metadata v12."""
        corr = self._send(3, 12, b"\x00" + b"\x00\x00" + b"\x00", True)
        r = self._recv(corr, True)
        r.take(">i")  # throttle
        for _ in range(r.count(True)):  # brokers
            r.take(">i")
            r.string(True)
            r.take(">i")
            r.string(True)
            r.tags(True)
        r.string(True)  # cluster id
        r.take(">i")  # controller
        out = {}
        for _ in range(r.count(True)):
            r.take(">h")
            name = r.string(True)
            tid = r.b[r.p:r.p + 16]
            r.p += 17  # id, is_internal
            for _ in range(r.count(True)):
                r.p += 2 + 4 + 4 + 4
                for _ in range(3):  # replicas, isr, offline
                    r.p += 4 * r.count(True)
                r.tags(True)
            r.take(">i")  # authorized operations
            r.tags(True)
            out[name] = bytes(tid)
        return out

    def delete_records(self, partition, offset):
        """DeleteRecords v1 on this Conn's topic: (error, low watermark)."""
        body = struct.pack(">i", 1) + _str(self.topic) + \
            struct.pack(">iiqi", 1, partition, offset, 10000)
        r = self._recv(self._send(21, 1, body, False), False)
        r.take(">i")  # throttle
        r.take(">i")  # topics
        r.string()
        r.take(">i")  # partitions
        r.take(">i")
        low = r.take(">q")
        return r.take(">h"), low

    def send_fetch(self, ver, session_id, epoch, parts=(), forgotten=(),
                   max_wait_ms=0, min_bytes=0, part_max_bytes=1 << 20):
        """Send Fetch v11 or v13; parts [(partition, fetch offset)] of this
        Conn's topic, forgotten [partition]. Returns what recv_fetch takes."""
        head = struct.pack(">iiiibii", -1, max_wait_ms, min_bytes, 50 << 20,
                           0, session_id, epoch)
        if ver >= 12:
            if ver >= 13:
                tkey = self.topic_id
            else:
                tkey = _cstr(self.topic)
            body = head
            if parts:
                body += _uv(2) + tkey + _uv(len(parts) + 1)
                for p, off in parts:
                    body += struct.pack(">iiqiqi", p, -1, off, -1, -1,
                                        part_max_bytes) + b"\0"
                body += b"\0"
            else:
                body += _uv(1)
            if forgotten:
                body += _uv(2) + tkey + _uv(len(forgotten) + 1) + \
                    b"".join(struct.pack(">i", p) for p in forgotten) + b"\0"
            else:
                body += _uv(1)
            body += _cstr("") + b"\0"
            flex = True
        else:
            body = head
            if parts:
                body += struct.pack(">i", 1) + _str(self.topic) + \
                    struct.pack(">i", len(parts))
                for p, off in parts:
                    body += struct.pack(">iiqqi", p, -1, off, -1,
                                        part_max_bytes)
            else:
                body += struct.pack(">i", 0)
            if forgotten:
                body += struct.pack(">i", 1) + _str(self.topic) + \
                    struct.pack(">i", len(forgotten)) + \
                    b"".join(struct.pack(">i", p) for p in forgotten)
            else:
                body += struct.pack(">i", 0)
            body += _str("")
            flex = False
        return ver, self._send(1, ver, body, flex)

    def recv_fetch(self, sent):
        """The Response to a send_fetch; a topic other than this Conn's
        raises ValueError (a session holds only its one topic here)."""
        ver, corr = sent
        flex = ver >= 12
        r = self._recv(corr, flex)
        r.take(">i")  # throttle
        err, sid = r.take(">h"), r.take(">i")
        parts = {}
        for _ in range(r.count(flex)):
            if ver >= 13:
                tkey = bytes(r.b[r.p:r.p + 16])
                r.p += 16
                if tkey != self.topic_id:
                    raise ValueError("topic id %s in the response" %
                                     uuid.UUID(bytes=tkey))
            else:
                name = r.string(flex)
                if name != self.topic:
                    raise ValueError("topic %r in the response" % name)
            for _ in range(r.count(flex)):
                idx, perr = r.take(">i"), r.take(">h")
                hw, lso, lss = r.take(">q"), r.take(">q"), r.take(">q")
                for _ in range(r.count(flex)):  # aborted transactions
                    r.p += 16
                    r.tags(flex)
                r.take(">i")  # preferred read replica
                n = r.count(flex)
                recs = bytes(r.b[r.p:r.p + n]) if n > 0 else b""
                r.p += max(n, 0)
                r.tags(flex)
                parts[idx] = Part(idx, perr, hw, lso, lss, recs)
            r.tags(flex)
        r.tags(flex)
        return Response(err, sid, parts)

    def fetch(self, ver, session_id, epoch, parts=(), forgotten=(),
              max_wait_ms=0, min_bytes=0):
        """send_fetch and its Response, with .elapsed in seconds."""
        import time
        t0 = time.monotonic()
        resp = self.recv_fetch(self.send_fetch(ver, session_id, epoch, parts,
                                               forgotten, max_wait_ms,
                                               min_bytes))
        resp.elapsed = time.monotonic() - t0
        return resp
