"""Bounded crash recovery and producer-state snapshots, with a real runneld
and real clients:
(a) a few hundred MB in small segments, the whole node SIGKILLed: the
    restart scans only the tail after the checkpointed recovery point, every
    acknowledged record reads back, and the node serves again quickly;
(b) an idempotent producer idle while others write over 10,000 records,
    then the node SIGKILLed: the same confluent-kafka producer instance goes
    on with no error, duplicate or gap, and a raw retry of the last batch of
    another producer id is answered as a duplicate (its state came from the
    snapshot), a gap in its sequence refused;
(c) a clean stop writes .kafka_cleanshutdown and the checkpoints, and the
    next start scans nothing;
(d) a corrupt snapshot is skipped with a log line, for the one before it.
"""
import glob
import os
import re
import socket
import struct
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from kafka.protocol.parser import KafkaProtocol
from kafka.protocol.produce import ProduceRequest
from kafka.record.default_records import DefaultRecordBatchBuilder

from rncluster import create_topic, read_partitions
from rntest import Node, Tap, TempDir, wait_for

t = Tap()
SEG = 4 << 20
RECORD = 1024
BIG_RECORDS = int(os.environ.get("RECOVERY_TEST_MB", "240")) * 1024


def produce(bootstrap, topic, values, idempotent=False, producer=None):
    """Send values, wait for every ack; (acked values, delivery errors)."""
    p = producer or Producer({"bootstrap.servers": bootstrap, "acks": "all",
                              "linger.ms": 5, "enable.idempotence": idempotent,
                              "message.timeout.ms": 60000})
    acked, errors = [], []

    def cb(err, msg):
        if err is None:
            acked.append(msg.value())
        else:
            errors.append(err)
    for i, v in enumerate(values):
        while True:
            try:
                p.produce(topic, value=v, on_delivery=cb)
                break
            except BufferError:
                p.poll(0.05)
        if i % 2000 == 0:
            p.poll(0)
    p.flush(120)
    return acked, errors


def recovered_lines(node, topic, after=0):
    """The node's "<topic>-0: log recovered" lines after byte `after`."""
    pat = re.compile(r"%s-0: log recovered in (\d+) ms \(([^)]*)\): scanned "
                     r"(\d+) of (\d+) segments, (\d+) bytes, from offset (-?\d+); "
                     r"producers: snapshot (-?\d+), (\d+) batches" % topic)
    out = []
    for line in node.logtext()[after:].splitlines():
        m = pat.search(line)
        if m:
            out.append({"ms": int(m.group(1)), "from": m.group(2),
                        "scanned": int(m.group(3)), "segments": int(m.group(4)),
                        "bytes": int(m.group(5)), "snapshot": int(m.group(7)),
                        "replayed": int(m.group(8))})
    return out


def checkpoint(node, name):
    try:
        with open(os.path.join(node.logdir, name)) as f:
            lines = f.read().split("\n")[2:]
    except OSError:
        return {}
    return {(l.split()[0], int(l.split()[1])): int(l.split()[2])
            for l in lines if l.strip()}


def segment_bases(node, topic):
    return sorted(int(os.path.basename(f)[:20]) for f in
                  glob.glob(os.path.join(node.logdir, topic + "-0", "*.log")))


def snapshots(node, topic):
    return sorted(int(os.path.basename(f)[:20]) for f in
                  glob.glob(os.path.join(node.logdir, topic + "-0",
                                         "*.snapshot")))


def serves(node, topic):
    """A produce and a fetch answer (this also opens the log)."""
    try:
        acked, errors = produce(node.bootstrap, topic, [b"probe"])
        if errors or not acked:
            return False
        c = Consumer({"bootstrap.servers": node.bootstrap, "group.id": "probe"})
        lo, hi = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=5)
        c.assign([TopicPartition(topic, 0, hi - 1)])
        m = c.poll(5)
        c.close()
        return m is not None and m.error() is None
    except Exception:
        return False


class RawProducer:
    """Idempotent batches with a chosen producer id and sequence, over the
    wire: what a client retrying across a broker restart sends."""

    def __init__(self, bootstrap, pid):
        host, port = bootstrap.split(":")
        self.addr, self.pid = (host, int(port)), pid

    def send(self, topic, seq, count):
        b = DefaultRecordBatchBuilder(2, 0, False, self.pid, 0, seq, 1 << 20)
        for i in range(count):
            b.append(i, timestamp=int(time.time() * 1000), key=None,
                     value=b"raw-%d" % (seq + i), headers=[])
        req = ProduceRequest[7](transactional_id=None, required_acks=-1,
                                timeout=10000,
                                topics=[(topic, [(0, bytes(b.build()))])])
        proto = KafkaProtocol(client_id="raw")
        proto.send_request(req)
        with socket.create_connection(self.addr, timeout=15) as s:
            s.sendall(proto.send_bytes())
            for _ in range(100):
                got = proto.receive_bytes(s.recv(65536))
                if got:
                    resp = got[0][1]
                    _, parts = resp.topics[0]
                    part = parts[0]
                    return part[1], part[2]  # error code, base offset
        return None, None


with TempDir() as tmp:
    n = Node(tmp, props={"log.flush.offset.checkpoint.interval.ms": "1000",
                         "num.network.threads": "2"})
    n.start()
    try:
        t.ok(n.wait_running() is not None, "node is up")
        create_topic(n.bootstrap, "big", 1, 1, {"segment.bytes": str(SEG)})
        create_topic(n.bootstrap, "idem", 1, 1, {"segment.bytes": str(1 << 20)})

        # (b) first half: the idempotent producer writes, then idles
        p1 = Producer({"bootstrap.servers": n.bootstrap, "acks": "all",
                       "enable.idempotence": True, "linger.ms": 5,
                       "message.timeout.ms": 60000})
        first = [b"p1-%06d" % i for i in range(500)]
        acked, errors = produce(n.bootstrap, "idem", first, producer=p1)
        t.eq(len(acked), 500, "idempotent producer: first 500 acknowledged")
        raw = RawProducer(n.bootstrap, 7 << 40)
        err, raw_off = raw.send("idem", 0, 10)
        t.eq(err, 0, "raw idempotent batch (seq 0-9) written at %s" % raw_off)
        others, errors = produce(n.bootstrap, "idem",
                                 [b"o-%06d" % i + b"." * 100 for i in range(30000)],
                                 idempotent=True)
        t.eq(len(others), 30000, "30,000 records of other producers meanwhile")

        # (a) a few hundred MB in 4 MiB segments
        pad = b"." * (RECORD - 12)
        values = [b"rec-%08d" % i + pad for i in range(BIG_RECORDS)]
        t0 = time.monotonic()
        acked_big, errors = produce(n.bootstrap, "big", values)
        t.diag("wrote %d MB in %.1f s" % (len(values) * RECORD >> 20,
                                            time.monotonic() - t0))
        t.eq(len(acked_big), len(values), "every record of 'big' acknowledged")
        bases = segment_bases(n, "big")
        t.ok(len(bases) >= 40, "'big' rolled into %d segments" % len(bases))
        # the background flush moves the recovery point to the active base
        # and the checkpoint (every 1 s here) records it
        ok = wait_for(lambda: checkpoint(n, "recovery-point-offset-checkpoint")
                      .get(("big", 0), -1) == segment_bases(n, "big")[-1], 30)
        t.ok(ok, "recovery point checkpointed at the active segment's base %d"
             % segment_bases(n, "big")[-1])
        t.ok(len(snapshots(n, "idem")) >= 1 and
             len(snapshots(n, "idem")) <= 4,
             "producer snapshots at rolls, a few kept: %s" % snapshots(n, "idem"))

        mark = len(n.logtext())
        n.kill()
        t.ok(not os.path.exists(os.path.join(n.logdir, ".kafka_cleanshutdown")),
             "no clean-shutdown marker after SIGKILL")
        t0 = time.monotonic()
        n.start()
        up = wait_for(lambda: serves(n, "big"), 30)
        took = time.monotonic() - t0
        t.ok(up and took < 15, "serves again (produce and fetch) %.1f s after "
             "the restart" % took)
        rec = recovered_lines(n, "big", mark)
        t.ok(len(rec) == 1, "one recovery line for big-0: %s" % rec)
        if rec:
            r = rec[0]
            t.ok(r["scanned"] <= 1 and r["segments"] >= 40 and
                 r["bytes"] <= 2 * SEG,
                 "recovery scanned only the tail: %d of %d segments, %d bytes, "
                 "%d ms" % (r["scanned"], r["segments"], r["bytes"], r["ms"]))
        got = read_partitions(n.bootstrap, "big", 1, len(acked_big), 300)
        gotset = set(got)
        t.ok(all(v in gotset for v in acked_big),
             "every acknowledged record of 'big' reads back (%d read)" % len(got))
        t.eq(len(got), len(gotset), "no record of 'big' twice")

        # (b) second half: after the crash, the same producer instance goes on
        second = [b"p1-%06d" % i for i in range(500, 1000)]
        acked, errors = produce(n.bootstrap, "idem", second, producer=p1)
        t.ok(not errors and len(acked) == 500,
             "the idle idempotent producer continues: %d acked, errors %s"
             % (len(acked), errors[:3]))
        rec = recovered_lines(n, "idem", mark)
        t.ok(rec and rec[0]["snapshot"] > 0 and rec[0]["replayed"] < 2000,
             "idem-0 producers loaded from a snapshot, a short replay: %s" % rec)
        err, off = raw.send("idem", 0, 10)
        t.ok(err == 0 and off == raw_off,
             "a retry of the raw producer's last batch is a duplicate, "
             "answered with its first offset %s (got %s, error %s)"
             % (raw_off, off, err))
        err, _ = raw.send("idem", 20, 5)
        t.eq(err, 45, "a gap in its sequence is OUT_OF_ORDER_SEQUENCE_NUMBER")
        err, off = raw.send("idem", 10, 5)
        t.ok(err == 0 and off > raw_off, "its next batch in order is written")
        got = read_partitions(n.bootstrap, "idem", 1, 31015, 120)
        p1got = [v for v in got if v.startswith(b"p1-")]
        t.eq(p1got, first + second,
             "idempotent producer's records: all, once, in order")
        t.eq(sum(1 for v in got if v.startswith(b"raw-")), 15,
             "raw producer's records once each")

        # (c) a clean stop: marker and checkpoints, then nothing scanned
        t.eq(n.stop(), 0, "clean stop")
        t.ok(os.path.exists(os.path.join(n.logdir, ".kafka_cleanshutdown")),
             ".kafka_cleanshutdown written")
        leo_big = segment_bases(n, "big")[-1]
        rp = checkpoint(n, "recovery-point-offset-checkpoint")
        t.ok(rp.get(("big", 0), -1) > leo_big and
             rp.get(("big", 0)) == checkpoint(
                 n, "replication-offset-checkpoint").get(("big", 0)),
             "recovery point checkpointed at the log end: big %s, idem %s"
             % (rp.get(("big", 0)), rp.get(("idem", 0))))
        idem_snaps = snapshots(n, "idem")
        t.eq(idem_snaps[-1] if idem_snaps else None, rp.get(("idem", 0)),
             "a producer snapshot at idem-0's log end")

        # (d) the newest snapshot corrupted: skipped for the one before
        newest = os.path.join(n.logdir, "idem-0", "%020d.snapshot" % idem_snaps[-1])
        with open(newest, "r+b") as f:
            f.seek(12)
            f.write(b"\xff\xff\xff")
        mark = len(n.logtext())
        t0 = time.monotonic()
        n.start()
        t.ok(wait_for(lambda: serves(n, "big") and serves(n, "idem"), 30),
             "serves after the clean restart in %.1f s" % (time.monotonic() - t0))
        rec = recovered_lines(n, "big", mark)
        t.ok(rec and rec[0]["scanned"] == 0 and rec[0]["from"] == "clean shutdown",
             "after a clean stop nothing is scanned: %s" % rec)
        log = n.logtext()[mark:]
        t.ok("%020d.snapshot: corrupt: producer snapshot skipped" % idem_snaps[-1]
             in log, "the corrupt snapshot is skipped with a log line")
        rec = recovered_lines(n, "idem", mark)
        t.ok(rec and 0 < rec[0]["snapshot"] < idem_snaps[-1],
             "the one before it was loaded: %s" % rec)
        err, off = raw.send("idem", 10, 5)
        t.eq(err, 0, "the raw producer's last batch still deduplicated")
        t.ok(not n.crashes(), "no worker crashed")
    finally:
        n.stop()
t.done()
