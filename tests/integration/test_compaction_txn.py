"""The log cleaner and transactions on a compacted topic, as Kafka's cleaner
treats them: transactional batches and markers written as a producer and
its coordinator would (tests/lib/rntxn.py). Before cleaning, read_committed
(confluent-kafka, kcat) leaves the aborted records out and read_uncommitted
sees them; after cleaning the aborted records are gone from the log (an
aborted value never shadows a committed one of the same key), committed
ones are compacted as usual and both readers agree. The markers of
transactions with nothing left get a delete horizon and go after
delete.retention.ms, their .txnindex entries with them, while the markers
of transactions with records left stay. A transaction still open is never
cleaned past, and a SIGKILL after cleaning recovers the same log with its
last stable offset at the end."""
import glob
import os
import struct
import subprocess
import time

from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from rntest import Node, Tap, TempDir, wait_for
from rntxn import Conn, read_txnindex, record_batch

TOPIC = "ctxn"
t = Tap()


def read(bootstrap, isolation, timeout=20):
    """[(offset, key, value)] of partition 0 from the start to the end."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "ctxn",
                  "enable.auto.commit": False, "enable.partition.eof": True,
                  "isolation.level": isolation})
    c.assign([TopicPartition(TOPIC, 0, 0)])
    out, deadline = [], time.time() + timeout
    while time.time() < deadline:
        m = c.poll(0.3)
        if m is None:
            continue
        if m.error():
            if m.error().code() == -191:
                break
            continue
        out.append((m.offset(), m.key(), m.value()))
    c.close()
    return out


def kcat_values(bootstrap):
    r = subprocess.run(["kcat", "-b", bootstrap, "-C", "-t", TOPIC, "-p", "0",
                        "-o", "beginning", "-e", "-q", "-f", "%k=%s\\n",
                        "-X", "isolation.level=read_committed"],
                       capture_output=True, timeout=60)
    return sorted(r.stdout.decode().split())


def latest(bootstrap):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "ctxn",
                  "isolation.level": "read_committed"})
    try:
        return c.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=10,
                                       cached=False)
    finally:
        c.close()


def batches(logdir):
    """(base offset, producer id, is control, record count) of every batch
    in the partition's segments, in offset order."""
    out = []
    for f in sorted(glob.glob(os.path.join(logdir, TOPIC + "-0", "*.log"))):
        with open(f, "rb") as fh:
            data = fh.read()
        pos = 0
        while pos + 61 <= len(data):
            base, length = struct.unpack_from(">qi", data, pos)
            attrs = struct.unpack_from(">h", data, pos + 21)[0]
            pid = struct.unpack_from(">q", data, pos + 43)[0]
            count = struct.unpack_from(">i", data, pos + 57)[0]
            out.append((base, pid, bool(attrs & 0x20), count))
            pos += 12 + length
    return sorted(out)


def txnindex(logdir):
    return sorted(e for f in glob.glob(os.path.join(logdir, TOPIC + "-0",
                                                    "*.txnindex"))
                  for e in read_txnindex(f))


def committed_view(recs):
    return {k: v for _, k, v in recs}


with TempDir() as tmp:
    n = Node(tmp, props={"log.cleaner.backoff.ms": "200"})
    n.start()
    try:
        t.ok(n.wait_running(), "node running")
        a = AdminClient({"bootstrap.servers": n.bootstrap})
        a.create_topics([NewTopic(TOPIC, 1, 1, config={
            "cleanup.policy": "compact", "segment.ms": "1500",
            "min.cleanable.dirty.ratio": "0.01",
            "delete.retention.ms": "3000"})])[TOPIC].result(20)
        conn = Conn(n.port)
        _, pa, _ = conn.init_producer_id()
        _, pb, _ = conn.init_producer_id()
        _, pc, _ = conn.init_producer_id()
        ks = [b"k%d" % i for i in range(6)]

        def tx(pid, seq, keys, vals):
            return conn.produce_retry(TOPIC, 0, record_batch(
                vals, pid, 0, seq, True, keys=keys))[0]

        def marker(pid, commit):
            return conn.write_txn_markers([(pid, 0, commit, {TOPIC: [0]}, 1)]) \
                .get((pid, TOPIC, 0))

        errs = [
            tx(pa, 0, ks, [b"a1"] * 6), marker(pa, True),             # 0-5, 6
            tx(pb, 0, ks, [b"b1"] * 6), marker(pb, False),            # 7-12, 13
            tx(pb, 6, [b"x0", b"x1"], [b"b2"] * 2), marker(pb, False),  # 14-15, 16
            tx(pa, 6, ks[3:], [b"a2"] * 3), marker(pa, True),         # 17-19, 20
            tx(pb, 8, [b"y0"], [b"b3"]), marker(pb, True),            # 21, 22
        ]
        t.eq(errs, [0] * 10, "transactions written: A commits, B aborts twice then commits")
        uncommitted_before = read(n.bootstrap, "read_uncommitted")
        committed_before = read(n.bootstrap, "read_committed")
        t.eq([v for _, _, v in uncommitted_before].count(b"b1"), 6,
             "before cleaning: read_uncommitted sees B's aborted records")
        t.eq(committed_before, [(o, k, b"a1") for o, k in zip(range(6), ks)] +
             [(17 + i, ks[3 + i], b"a2") for i in range(3)] + [(21, b"y0", b"b3")],
             "before cleaning: read_committed sees only the committed records")
        t.ok(sorted(kcat_values(n.bootstrap)) == sorted(
             ["k0=a1", "k1=a1", "k2=a1", "k3=a1", "k4=a1", "k5=a1",
              "k3=a2", "k4=a2", "k5=a2", "y0=b3"]),
             "before cleaning: kcat read_committed agrees")
        t.eq(len(txnindex(n.logdir)), 2, "two aborts indexed before cleaning")

        # segment.ms passes: C's transaction opens a new segment at 23 and
        # stays open; the segment after it rolls too, so only C's open
        # transaction keeps its segment from the cleaner
        time.sleep(1.8)
        errs = [tx(pc, 0, [b"k0"], [b"c1"]),                                 # 23
                conn.produce(TOPIC, 0, record_batch([b"p"], keys=[b"z"]))[0]]  # 24
        time.sleep(1.8)
        errs.append(conn.produce(TOPIC, 0, record_batch([b"q"], keys=[b"z"]))[0])  # 25
        t.eq(errs, [0, 0, 0], "C's transaction opened at 23, plain records after it")
        t.ok(wait_for(lambda: "cleaned up to offset" in n.logtext(), 30, 0.2),
             "the cleaner cleaned the first segment")
        time.sleep(0.5)
        recs = batches(n.logdir)
        data = [b for b in recs if not b[2] and b[3] > 0]
        t.ok(all(b[1] != pb or b[0] == 21 for b in data),
             "after cleaning: no record of B's aborted transactions is left in the log")
        t.ok(any(b[0] == 23 and b[1] == pc and b[3] == 1 for b in recs),
             "C's open transaction (offset 23) is untouched")
        after_u = read(n.bootstrap, "read_uncommitted")
        t.eq(committed_view([r for r in after_u if r[0] < 23]),
             {b"k0": b"a1", b"k1": b"a1", b"k2": b"a1", b"k3": b"a2",
              b"k4": b"a2", b"k5": b"a2", b"y0": b"b3"},
             "after cleaning: read_uncommitted below the open transaction sees "
             "each key's last committed value, no aborted value shadows one")
        t.eq([r for r in after_u if r[1] in (b"x0", b"x1")], [],
             "keys written only by aborted transactions are gone")
        t.eq(committed_view(read(n.bootstrap, "read_committed")),
             committed_view([r for r in after_u if r[0] < 23]),
             "after cleaning: read_committed and read_uncommitted agree below the LSO")
        low, high = latest(n.bootstrap)
        t.eq(high, 23, "read_committed's latest offset is still C's first (LSO)")
        ctl = [b for b in recs if b[2]]
        t.ok(sum(1 for b in ctl if b[1] == pa) == 2,
             "A's commit markers stay while its records do")

        # past delete.retention.ms: a later pass drops B's abort markers
        # (no record of theirs left) and their .txnindex entries
        def aborts_gone():
            ids = [b for b in batches(n.logdir) if b[2] and b[1] == pb]
            return [b[0] for b in ids] == [22] and txnindex(n.logdir) == []
        t.ok(wait_for(aborts_gone, 40, 0.5),
             "after the delete horizon: B's abort markers and their .txnindex entries "
             "are gone, its commit marker (a record left) stays")
        t.diag("batches: %r" % [(b[0], b[2], b[3]) for b in batches(n.logdir)])
        t.ok(sum(1 for b in batches(n.logdir) if b[2] and b[1] == pa) == 2,
             "A's commit markers still there")

        # C aborted; restart hard; the log recovers with LSO = end
        t.eq(marker(pc, False), 0, "C aborted")
        expect = committed_view([r for r in read(n.bootstrap, "read_committed")])
        n.kill()
        n.start()
        t.ok(n.wait_running(), "node running again after SIGKILL")
        again = wait_for(lambda: read(n.bootstrap, "read_committed"), 30, 0.5)
        t.eq(committed_view(again), expect,
             "after SIGKILL: read_committed gives the same records")
        t.ok(b"c1" not in [v for _, _, v in again],
             "C's aborted record is left out by read_committed")
        low, high = latest(n.bootstrap)
        conn = Conn(n.port)
        t.eq(conn.produce_retry(TOPIC, 0, record_batch([b"r"], keys=[b"z"]))[0], 0,
             "a new record after the restart")
        t.ok(wait_for(lambda: latest(n.bootstrap)[1] == high + 1, 10, 0.3),
             "after SIGKILL: the last stable offset follows the high watermark (no "
             "transaction left open by the recovery)")
    finally:
        n.stop()

t.done()
