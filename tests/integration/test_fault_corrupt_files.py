"""Corrupt files on a stopped node: garbage in an offset index, a time
index, the leader-epoch and the checkpoint files, the newest producer
snapshot (the idempotent producer goes on without a sequence error or a
duplicate), then a bit flipped in the middle of a segment. Each time the node comes back, never serves a
record whose CRC fails (librdkafka checks every CRC), serves contiguous
offsets, and says in its log what it threw away; a broken
meta.properties stops the node with a message naming the file instead
of a crash loop."""
import os
import random
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from rntest import Node, Tap, TempDir, wait_for

t = Tap()
N = 3000
rng = random.Random(7)


def produce(n):
    acked = {}

    def report(err, m):
        if err is None:
            acked[m.offset()] = m.value()
    p = Producer({"bootstrap.servers": n.bootstrap, "acks": "all",
                  "enable.idempotence": True,
                  "batch.size": 16384, "linger.ms": 2})
    for i in range(N):
        p.produce("c", value=b"%06d" % i * 20, partition=0, on_delivery=report)
        p.poll(0)
    p.flush(30)
    return acked


def read_all(n):
    """(high watermark, {offset: value}, errors), CRCs checked."""
    c = Consumer({"bootstrap.servers": n.bootstrap, "group.id": "x",
                  "check.crcs": True, "enable.auto.commit": False})
    hi = wait_for(lambda: _hw(c), 30)
    c.assign([TopicPartition("c", 0, 0)])
    got, errors = {}, []
    deadline = time.monotonic() + 30
    while len(got) < hi and time.monotonic() < deadline and len(errors) < 10:
        m = c.poll(1)
        if m is None:
            continue
        if m.error():
            errors.append(str(m.error()))
        else:
            got[m.offset()] = m.value()
    c.close()
    return hi, got, errors


def _hw(c):
    try:
        return c.get_watermark_offsets(TopicPartition("c", 0), timeout=3)[1] or None
    except Exception:
        return None


def garble(path, offset=None, length=64):
    size = os.path.getsize(path)
    with open(path, "r+b") as f:
        at = offset if offset is not None else rng.randrange(max(1, size - length))
        f.seek(at)
        f.write(bytes(rng.randrange(256) for _ in range(min(length, size - at))))


def restart_and_check(n, acked, what, want_all=True):
    n.start()
    t.ok(n.wait_running(20) is not None, "%s: node runs" % what)
    hi, got, errors = read_all(n)
    t.eq(errors, [], "%s: no read error, no bad CRC" % what)
    t.ok(sorted(got) == list(range(hi)), "%s: offsets 0..%d without a hole"
         % (what, hi))
    t.ok(all(acked.get(o) == v for o, v in got.items()),
         "%s: each record is the one acknowledged at its offset" % what)
    if want_all:
        t.eq(hi, N, "%s: nothing lost (rebuilt from the segments)" % what)
    n.stop()
    return hi


with TempDir() as tmp:
    n = Node(tmp, props={"log.segment.bytes": "100000"})
    n.start()
    t.ok(n.wait_running() is not None, "node up")
    acked = produce(n)
    t.eq(len(acked), N, "%d records acknowledged over several segments" % N)
    hwfile = os.path.join(n.logdir, "replication-offset-checkpoint")
    t.ok(wait_for(lambda: os.path.exists(hwfile), 15),
         "the high-watermark checkpoint is written")
    n.stop()
    pdir = os.path.join(n.logdir, "c-0")
    segs = sorted(f for f in os.listdir(pdir) if f.endswith(".log"))
    t.ok(len(segs) >= 3, "%d segments" % len(segs))

    garble(os.path.join(pdir, segs[1][:-4] + ".index"), 0, 40)
    restart_and_check(n, acked, "garbage offset index")
    garble(os.path.join(pdir, segs[1][:-4] + ".timeindex"), 0, 24)
    restart_and_check(n, acked, "garbage time index")
    garble(os.path.join(pdir, "leader-epoch-checkpoint"), 0, 8)
    restart_and_check(n, acked, "garbage leader-epoch checkpoint")
    garble(hwfile, 0, 16)
    restart_and_check(n, acked, "garbage high-watermark checkpoint")

    # the newest producer snapshot, written at the clean stop: an older
    # one and a replay of the batch headers after it give the producer
    # back, so one idempotent producer goes on across the restart
    n.start()
    t.ok(n.wait_running(20) is not None, "node runs")
    errs = []
    keep = Producer({"bootstrap.servers": n.bootstrap, "acks": "all",
                     "enable.idempotence": True, "linger.ms": 2})

    def send(tag, k):
        for i in range(k):
            keep.produce("c", value=b"%s%03d" % (tag, i), partition=0,
                         on_delivery=lambda e, m: errs.append(e) if e else None)
        keep.flush(60)
    send(b"before", 10)
    n.stop()
    snaps = sorted(f for f in os.listdir(pdir) if f.endswith(".snapshot"))
    t.ok(len(snaps) >= 2, "producer snapshots at the rolls and the stop (%d)"
         % len(snaps))
    garble(os.path.join(pdir, snaps[-1]), 0, 32)
    n.start()
    t.ok(n.wait_running(20) is not None, "garbage producer snapshot: node runs")
    send(b"after", 100)
    t.eq(errs, [], "the idempotent producer goes on across it: no sequence "
         "error")
    hi, got, errors = read_all(n)
    t.eq(errors, [], "garbage producer snapshot: no read error, no bad CRC")
    t.ok(hi == N + 110 and sorted(got) == list(range(hi)) and
         sorted(v for v in got.values() if v.startswith(b"after")) ==
         [b"after%03d" % i for i in range(100)],
         "each of its 110 records is there once, offsets without a hole "
         "(%s records)" % hi)
    t.ok("trying an older one" in n.logtext(),
         "the log says the snapshot was set aside")
    n.stop()
    acked.update({o: v for o, v in got.items() if o >= N})

    # a flipped bit in the middle of the second segment: what follows the
    # bad batch cannot be trusted and is dropped, with a log line. As in
    # Kafka, a segment below the checkpointed recovery point is trusted
    # as it is: without recovery-point-offset-checkpoint (lost, or a crash
    # before its first write) every segment is scanned
    os.unlink(os.path.join(n.logdir, "recovery-point-offset-checkpoint"))
    seg = os.path.join(pdir, segs[1])
    with open(seg, "r+b") as f:
        f.seek(os.path.getsize(seg) // 2)
        b = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([b[0] ^ 0x08]))
    n.start()  # no recovery point: recovery scans the segments
    t.ok(n.wait_running(20) is not None, "flipped bit: node runs")
    n.kill()
    hi = restart_and_check(n, acked, "flipped bit", want_all=False)
    t.ok(0 < hi < len(acked), "flipped bit: the log ends before the bad "
         "batch (%d of %d records kept)" % (hi, len(acked)))
    t.ok("invalid data from byte" in n.logtext() and segs[1] in n.logtext(),
         "flipped bit: the log names the segment and where it was cut")

    with open(os.path.join(n.logdir, "meta.properties"), "w") as f:
        f.write("node.id=banana\nversion=9\n")
    n.start()
    try:
        rc = n.proc.wait(20)
    except Exception:
        rc = None
    t.ok(rc not in (None, 0), "broken meta.properties: runneld stops "
         "(exit %s) instead of looping" % rc)
    t.ok("meta.properties" in n.logtext().splitlines()[-1] if n.logtext()
         else False, "broken meta.properties: the last log line names the "
         "file")
    t.eq(n.crashes(), [], "no worker crashed")

t.done()
