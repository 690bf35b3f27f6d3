"""The producer and coordinator side of Kafka transactions over one plain
socket to a node, for what the installed clients do not offer: RecordBatch
v2 with the transactional bit, InitProducerId v1 (no transactional id),
Produce v8, WriteTxnMarkers v0, and the coordinator's ListTransactions v0
and DescribeTransactions v0 (flexible versions); and a transactional
producer's own calls (InitProducerId with a transactional id,
AddPartitionsToTxn v1, EndTxn v1, Produce with its transactional id) and
the brokers' AddPartitionsToTxn v4 (KIP-890's VerifyOnly)."""
import socket
import struct
import time

from kafka.record.util import calc_crc32c

from rnwire import Reader
from rnwire import compact_string as _cstr
from rnwire import string as _str
from rnwire import uvarint as _uvarint

ATTR_TRANSACTIONAL = 0x10
ATTR_CONTROL = 0x20


def _varint(v):
    v = (v << 1) ^ (v >> 63)  # zigzag
    out = b""
    while v >= 0x80:
        out += bytes([(v & 0x7F) | 0x80])
        v >>= 7
    return out + bytes([v])


def _bytes_v(b):
    return _varint(-1) if b is None else _varint(len(b)) + b


def record_batch(values, pid=-1, epoch=-1, seq=-1, transactional=False,
                 ts=None, keys=None):
    """One uncompressed v2 batch of values (bytes), offsets from 0; keys
    (bytes, one per value) for a compacted topic, else none."""
    ts = int(time.time() * 1000) if ts is None else ts
    recs = b""
    for i, v in enumerate(values):
        k = keys[i] if keys is not None else None
        body = b"\x00" + _varint(0) + _varint(i) + _bytes_v(k) + \
            _bytes_v(v) + _varint(0)
        recs += _varint(len(body)) + body
    attrs = ATTR_TRANSACTIONAL if transactional else 0
    after_crc = struct.pack(">hiqqqhii", attrs, len(values) - 1, ts, ts,
                            pid, epoch, seq, len(values)) + recs
    crc = calc_crc32c(after_crc)
    head = struct.pack(">ibI", -1, 2, crc)  # leader epoch, magic, crc
    batch = head + after_crc
    return struct.pack(">qi", 0, len(batch)) + batch


class Conn:
    """One connection to a node's Kafka listener (non-flexible headers)."""

    def __init__(self, port, host="127.0.0.1", timeout=30):
        self.s = socket.create_connection((host, port), timeout=timeout)
        self.corr = 0

    def close(self):
        self.s.close()

    def call(self, key, ver, body):
        self.corr += 1
        msg = struct.pack(">hhi", key, ver, self.corr) + _str("rntxn") + body
        self.s.sendall(struct.pack(">i", len(msg)) + msg)
        buf = b""
        while len(buf) < 4 or len(buf) < 4 + struct.unpack(">i", buf[:4])[0]:
            c = self.s.recv(1 << 20)
            if not c:
                raise ConnectionError("closed by the broker")
            buf += c
        r = Reader(buf[4:])
        if r.take(">i") != self.corr:
            raise ValueError("correlation id mismatch")
        return r

    def call_flex(self, key, ver, body):
        """A flexible version: request header v2, response header v1."""
        self.corr += 1
        msg = struct.pack(">hhi", key, ver, self.corr) + _str("rntxn") + \
            b"\x00" + body
        self.s.sendall(struct.pack(">i", len(msg)) + msg)
        buf = b""
        while len(buf) < 4 or len(buf) < 4 + struct.unpack(">i", buf[:4])[0]:
            c = self.s.recv(1 << 20)
            if not c:
                raise ConnectionError("closed by the broker")
            buf += c
        r = Reader(buf[4:])
        if r.take(">i") != self.corr:
            raise ValueError("correlation id mismatch")
        r.tags(True)
        return r

    def list_offsets(self, topic, partition, committed):
        """ListOffsets v2 for the latest offset with an isolation level
        (read_committed: the last stable offset): (error, offset)."""
        body = struct.pack(">ib", -1, 1 if committed else 0) + \
            struct.pack(">i", 1) + _str(topic) + \
            struct.pack(">iiq", 1, partition, -1)
        r = self.call(2, 2, body)
        r.take(">i")  # throttle
        r.take(">i")  # topics
        r.string()
        r.take(">i")  # partitions
        r.take(">i")  # partition index
        err = r.take(">h")
        r.take(">q")  # timestamp
        return err, r.take(">q")

    def find_coordinator(self, key, key_type=1):
        """FindCoordinator v1 (key_type 1: a transactional id):
        (error, node id)."""
        r = self.call(10, 1, _str(key) + struct.pack(">b", key_type))
        r.take(">i")  # throttle
        err = r.take(">h")
        r.string()  # error message
        return err, r.take(">i")

    def describe_transactions(self, ids):
        """{id: (error, state, timeout ms, producer id, epoch,
        {topic: [partitions]})}"""
        body = bytes([len(ids) + 1]) + b"".join(
            bytes([len(i) + 1]) + i.encode() for i in ids) + b"\x00"
        r = self.call_flex(65, 0, body)
        r.take(">i")
        out = {}
        for _ in range(r.count(True)):
            err, tid, state = r.take(">h"), r.string(True), r.string(True)
            tmo = r.take(">i")
            r.take(">q")  # start time
            pid, epoch = r.take(">q"), r.take(">h")
            topics = {}
            for _ in range(r.count(True)):
                name = r.string(True)
                topics[name] = sorted(r.take(">i")
                                      for _ in range(r.count(True)))
                r.tags(True)
            r.tags(True)
            out[tid] = (err, state, tmo, pid, epoch, topics)
        return out

    def list_transactions(self, states=()):
        """(error, {id: (producer id, state)}) of this coordinator."""
        body = bytes([len(states) + 1]) + b"".join(
            bytes([len(st) + 1]) + st.encode() for st in states) + \
            b"\x01\x00"
        r = self.call_flex(66, 0, body)
        r.take(">i")
        err = r.take(">h")
        for _ in range(r.count(True)):
            r.string(True)
        out = {}
        for _ in range(r.count(True)):
            tid, pid, state = r.string(True), r.take(">q"), r.string(True)
            r.tags(True)
            out[tid] = (pid, state)
        return err, out

    def init_producer_id(self):
        """(error, producer id, epoch) for an idempotent producer."""
        r = self.call(22, 1, _str(None) + struct.pack(">i", 60000))
        r.take(">i")
        return r.take(">h"), r.take(">q"), r.take(">h")

    def init_txn_producer(self, txn_id, timeout_ms=60000):
        """InitProducerId v1 for a transactional id: (error, pid, epoch)."""
        r = self.call(22, 1, _str(txn_id) + struct.pack(">i", timeout_ms))
        r.take(">i")
        return r.take(">h"), r.take(">q"), r.take(">h")

    def add_partitions(self, txn_id, pid, epoch, topics):
        """AddPartitionsToTxn v1: {(topic, partition): error code}."""
        body = _str(txn_id) + struct.pack(">qh", pid, epoch) + \
            struct.pack(">i", len(topics))
        for tp, parts in topics.items():
            body += _str(tp) + struct.pack(">i", len(parts)) + \
                b"".join(struct.pack(">i", p) for p in parts)
        r = self.call(24, 1, body)
        r.take(">i")
        out = {}
        for _ in range(r.take(">i")):
            tp = r.string()
            for _ in range(r.take(">i")):
                p = r.take(">i")
                out[(tp, p)] = r.take(">h")
        return out

    def add_partitions_v4(self, txns):
        """AddPartitionsToTxn v4, the brokers' form: txns [(id, pid, epoch,
        verify only, {topic: [partitions]})] -> (top-level error,
        {id: {(topic, partition): error code}})."""
        body = _uvarint(len(txns) + 1)
        for tid, pid, epoch, verify, topics in txns:
            body += _cstr(tid) + struct.pack(">qhb", pid, epoch,
                                             1 if verify else 0)
            body += _uvarint(len(topics) + 1)
            for tp, parts in topics.items():
                body += _cstr(tp) + _uvarint(len(parts) + 1) + \
                    b"".join(struct.pack(">i", p) for p in parts) + b"\0"
            body += b"\0"
        body += b"\0"
        r = self.call_flex(24, 4, body)
        r.take(">i")
        err = r.take(">h")
        out = {}
        for _ in range(r.count(True)):
            tid = r.string(True)
            res = {}
            for _ in range(r.count(True)):
                tp = r.string(True)
                for _ in range(r.count(True)):
                    p = r.take(">i")
                    res[(tp, p)] = r.take(">h")
                    r.tags(True)
                r.tags(True)
            r.tags(True)
            out[tid] = res
        return err, out

    def end_txn(self, txn_id, pid, epoch, commit):
        """EndTxn v1: error code."""
        r = self.call(26, 1, _str(txn_id) + struct.pack(
            ">qhb", pid, epoch, 1 if commit else 0))
        r.take(">i")
        return r.take(">h")

    def produce(self, topic, partition, batch, acks=-1, txn_id=None):
        """(error, base offset) of one batch."""
        body = _str(txn_id) + struct.pack(">hi", acks, 30000) + \
            struct.pack(">i", 1) + _str(topic) + struct.pack(">i", 1) + \
            struct.pack(">ii", partition, len(batch)) + batch
        r = self.call(0, 8, body)
        r.take(">i")  # topics
        r.string()
        r.take(">i")  # partitions
        r.take(">i")
        return r.take(">h"), r.take(">q")

    def produce_retry(self, topic, partition, batch, timeout=15):
        """produce, asked again on the errors a producer retries (a topic,
        leader or ISR this broker's image does not show yet), as a client
        would."""
        deadline = time.time() + timeout
        while True:
            err, base = self.produce(topic, partition, batch)
            if err not in (3, 5, 6, 19, 20) or time.time() > deadline:
                return err, base
            time.sleep(0.2)

    def write_txn_markers(self, markers):
        """markers [(pid, epoch, commit, {topic: [partitions]}, coordinator
        epoch)] -> {(pid, topic, partition): error code}"""
        body = struct.pack(">i", len(markers))
        for pid, epoch, commit, topics, cepoch in markers:
            body += struct.pack(">qhb", pid, epoch, 1 if commit else 0)
            body += struct.pack(">i", len(topics))
            for t, parts in topics.items():
                body += _str(t) + struct.pack(">i", len(parts)) + \
                    b"".join(struct.pack(">i", p) for p in parts)
            body += struct.pack(">i", cepoch)
        r = self.call(27, 0, body)
        out = {}
        for _ in range(r.take(">i")):
            pid = r.take(">q")
            for _ in range(r.take(">i")):
                t = r.string()
                for _ in range(r.take(">i")):
                    p = r.take(">i")
                    out[(pid, t, p)] = r.take(">h")
        return out

    def describe_producers(self, topic, partitions):
        """DescribeProducers v0 (flexible) -> {partition: (error code,
        [(pid, epoch, last seq, last timestamp, coordinator epoch,
        txn start offset)])}"""
        self.corr += 1
        t = topic.encode()
        body = bytes([2]) + bytes([len(t) + 1]) + t + \
            bytes([len(partitions) + 1]) + \
            b"".join(struct.pack(">i", p) for p in partitions) + b"\0" + b"\0"
        msg = struct.pack(">hhi", 61, 0, self.corr) + _str("rntxn") + b"\0" + body
        self.s.sendall(struct.pack(">i", len(msg)) + msg)
        buf = b""
        while len(buf) < 4 or len(buf) < 4 + struct.unpack(">i", buf[:4])[0]:
            c = self.s.recv(1 << 20)
            if not c:
                raise ConnectionError("closed by the broker")
            buf += c
        r = Reader(buf[4:])
        if r.take(">i") != self.corr:
            raise ValueError("correlation id mismatch")
        r.tags(True)
        r.take(">i")  # throttle
        out = {}
        for _ in range(r.count(True)):
            r.string(True)
            for _ in range(r.count(True)):
                p, err = r.take(">i"), r.take(">h")
                r.string(True)  # error message
                prods = []
                for _ in range(r.count(True)):
                    prods.append((r.take(">q"), r.take(">i"), r.take(">i"),
                                  r.take(">q"), r.take(">i"), r.take(">q")))
                    r.tags(True)
                r.tags(True)
                out[p] = (err, prods)
            r.tags(True)
        return out

    def api_versions(self):
        r = self.call(18, 0, b"")
        err = r.take(">h")
        keys = {}
        for _ in range(r.take(">i")):
            k, lo, hi = r.take(">h"), r.take(">h"), r.take(">h")
            keys[k] = (lo, hi)
        return err, keys


def read_txnindex(path):
    """The entries of a .txnindex file: [(version, pid, first, last, lso)]."""
    with open(path, "rb") as f:
        data = f.read()
    return [struct.unpack_from(">hqqqq", data, i)
            for i in range(0, len(data) - len(data) % 34, 34)]
