"""Files cut short at random places on a stopped single node: a segment
in the middle, the active segment, an offset index, a time index, the
leader-epoch, high-watermark and recovery-point checkpoints and
the producer snapshots, one kind per round in a seeded order, then several
at once. After each cut the node comes back (for meta.properties, which it
cannot do without, it may instead stop with a message naming the file),
and a reader checking every CRC reads offsets without a hole from the log
start to the high watermark, each holding the value acknowledged there;
when records were lost, the log says which segment was cut and where the
log now ends. The seed is printed; RUNNEL_TEST_SEED replays a run."""
import os
import random
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from rntest import Node, Tap, TempDir, wait_for

t = Tap()
SEED = int(os.environ.get("RUNNEL_TEST_SEED") or random.randrange(1 << 30))
t.diag("seed %d (RUNNEL_TEST_SEED=%d replays this run)" % (SEED, SEED))
rng = random.Random(SEED)
TOPIC = "tr"
batch_no = [0]


def produce(n, k):
    """k new records; {offset: value} of those acknowledged."""
    acked = {}
    batch_no[0] += 1

    def report(err, m):
        if err is None:
            acked[m.offset()] = m.value()
    p = Producer({"bootstrap.servers": n.bootstrap, "acks": "all",
                  "enable.idempotence": True,
                  "batch.size": 16384, "linger.ms": 2})
    for i in range(k):
        p.produce(TOPIC, value=b"%03d-%06d-" % (batch_no[0], i) * 10,
                  partition=0, on_delivery=report)
        p.poll(0)
    p.flush(30)
    return acked


def watermarks(c):
    try:
        return c.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=3)
    except Exception:
        return None


def read_all(n):
    """(log start, high watermark, {offset: value}, errors), CRCs
    checked, read from the log start."""
    c = Consumer({"bootstrap.servers": n.bootstrap, "group.id": "x",
                  "check.crcs": True, "enable.auto.commit": False})
    wm = wait_for(lambda: watermarks(c), 30)
    lo, hi = wm if wm else (-1, -1)
    c.assign([TopicPartition(TOPIC, 0, max(lo, 0))])
    got, errors = {}, []
    deadline = time.monotonic() + 30
    while len(got) < hi - lo and time.monotonic() < deadline and \
            len(errors) < 10:
        m = c.poll(1)
        if m is None:
            continue
        if m.error():
            errors.append(str(m.error()))
        else:
            got[m.offset()] = m.value()
    c.close()
    return lo, hi, got, errors


def cut(path):
    """Truncate path at a random offset; (old size, new size)."""
    size = os.path.getsize(path)
    at = rng.randrange(size) if size > 0 else 0
    os.truncate(path, at)
    return size, at


with TempDir() as tmp:
    n = Node(tmp, props={"log.segment.bytes": "60000"})
    pdir = os.path.join(n.logdir, TOPIC + "-0")

    def files(suffix):
        return sorted(f for f in os.listdir(pdir) if f.endswith(suffix))

    def segs():
        return files(".log")

    # each picks the file(s) a round cuts: [] when there is none
    def mid_segment():
        s = segs()
        return [os.path.join(pdir, rng.choice(s[1:-1]))] if len(s) > 2 \
            else []

    def active_segment():
        return [os.path.join(pdir, segs()[-1])]

    def some(suffix, last=False):
        f = files(suffix)
        if not f:
            return []
        return [os.path.join(pdir, f[-1] if last else rng.choice(f))]

    def ckpt(name, under=None):
        p = os.path.join(under or n.logdir, name)
        return [p] if os.path.exists(p) else []

    KINDS = {
        "middle segment": mid_segment,
        "active segment": active_segment,
        "offset index": lambda: some(".index"),
        "active offset index": lambda: some(".index", True),
        "time index": lambda: some(".timeindex"),
        "leader-epoch checkpoint": lambda: ckpt("leader-epoch-checkpoint",
                                                pdir),
        "high-watermark checkpoint":
            lambda: ckpt("replication-offset-checkpoint"),
        "recovery-point checkpoint":
            lambda: ckpt("recovery-point-offset-checkpoint"),
        "producer snapshot": lambda: some(".snapshot"),
    }
    order = list(KINDS)
    rng.shuffle(order)
    rounds = [[k] for k in order]
    rounds.append(rng.sample(order, 3))
    rounds.append(rng.sample(order, 4))

    n.start()
    t.ok(n.wait_running() is not None, "node up")
    acked = produce(n, 3000)
    t.eq(len(acked), 3000, "3000 records acknowledged")
    t.ok(wait_for(lambda: os.path.exists(os.path.join(
        n.logdir, "replication-offset-checkpoint")), 15),
        "the high-watermark checkpoint is written")
    n.stop()
    t.ok(len(segs()) >= 4, "%d segments" % len(segs()))
    end = 3000
    t0 = time.monotonic()

    for r, kinds in enumerate(rounds, 1):
        what = "round %d (%s)" % (r, ", ".join(kinds))
        done = []
        for k in kinds:
            for p in KINDS[k]():
                old, new = cut(p)
                done.append("%s %d -> %d bytes" % (os.path.relpath(
                    p, n.logdir), old, new))
        t.diag("%s: %s" % (what, "; ".join(done) or "nothing to cut"))
        loglen = len(n.logtext())
        n.start()
        t.ok(n.wait_running(20) is not None, "%s: node runs" % what)
        lo, hi, got, errors = read_all(n)
        said = n.logtext()[loglen:]
        t.eq(errors, [], "%s: no read error, no bad CRC" % what)
        t.ok(lo >= 0 and hi >= lo and sorted(got) == list(range(lo, hi)),
             "%s: offsets %d..%d without a hole, none past the high "
             "watermark" % (what, lo, hi))
        wrong = [o for o, v in got.items() if acked.get(o) != v]
        t.ok(not wrong, "%s: each record is the one acknowledged at its "
             "offset (%d of %d differ)" % (what, len(wrong), len(got)))
        t.ok(lo == 0, "%s: the log still starts at 0" % what)
        if hi < end:
            lost = [l for l in said.splitlines() if "invalid data" in l]
            t.ok(lost and all(".log" in l and "ends at offset" in l
                              for l in lost),
                 "%s: %d records dropped, and the log says from which "
                 "segment and where the log ends now: %s"
                 % (what, end - hi, lost[:1]))
        else:
            t.eq(hi, end, "%s: nothing lost" % what)
        # the lost offsets are written again, so later rounds cut a log
        # as long as before
        for o in range(hi, end):
            acked.pop(o, None)
        more = produce(n, max(600, end - hi))
        t.ok(len(more) >= 600 and min(more) == hi,
             "%s: %d more records acknowledged from offset %d"
             % (what, len(more), hi))
        acked.update(more)
        end = hi + len(more)
        n.stop()
    took = time.monotonic() - t0
    t.diag("%d rounds in %.1f s" % (len(rounds), took))

    # a file the node cannot do without: it stops naming it
    mp = os.path.join(n.logdir, "meta.properties")
    old, new = cut(mp)
    t.diag("meta.properties %d -> %d bytes" % (old, new))
    loglen = len(n.logtext())
    n.start()
    up = n.wait_running(15) is not None
    if up:
        lo, hi, got, errors = read_all(n)
        t.ok(not errors and sorted(got) == list(range(lo, hi)) and hi == end,
             "cut meta.properties: the node runs with its whole log")
        n.stop()
    else:
        try:
            rc = n.proc.wait(20)
        except Exception:
            rc = None
        lines = n.logtext()[loglen:].splitlines()
        t.ok(rc not in (None, 0) and lines and "meta.properties" in lines[-1],
             "cut meta.properties: runneld stops (exit %s) and its last log "
             "line names the file: %s" % (rc, lines[-1:] if lines else None))
    t.eq(n.crashes(), [], "no worker crashed")

t.done()
