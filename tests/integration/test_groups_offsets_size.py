"""__consumer_offsets stays small under heavy commits (issue 10: "stays small
under 1,000,000 commits to one group", scaled down; make bench-offsets runs the
million): one node with 64 KiB offsets segments, 50,000 OffsetCommits from one
consumer to one group over 10 partitions. After the log cleaner's turn, the
.log files of the group's __consumer_offsets partition are far below what the
same records take uncompacted; after a restart, which rebuilds the group from
that compacted log, the last committed offsets read back."""
import os
import subprocess
import time

from confluent_kafka import Consumer, TopicPartition

from rncluster import offsets_partition
from rntest import BUILDDIR, Node, Tap, TempDir, wait_for

t = Tap()
COMMITS = 50000
PARTS = 10
CALIBRATE = 300
SEGMENT = 64 * 1024
OFFSETS_PARTS = 50
GROUP = "growth"
TOPIC = "growth-t"


def log_bytes(d):
    """Bytes of the .log files (segments) of one partition directory."""
    if not os.path.isdir(d):
        return 0
    return sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d)
               if f.endswith(".log"))


answers = {"done": 0, "errors": []}


def on_commit(err, parts):
    answers["done"] += 1
    if err is not None or any(tp.error is not None for tp in parts):
        answers["errors"].append(err or [tp.error for tp in parts])


def commit_many(c, first, count):
    """count asynchronous OffsetCommits numbered first.. (commit i sets
    partition i % PARTS to i // PARTS + 1); waits for every answer and
    returns how many came."""
    start = answers["done"]
    for i in range(first, first + count):
        while True:
            try:
                c.commit(offsets=[TopicPartition(TOPIC, i % PARTS, i // PARTS + 1)],
                         asynchronous=True)
                break
            except Exception:
                c.poll(0.01)
        if i % 1000 == 0:
            c.poll(0)
    end = time.monotonic() + 120
    while answers["done"] - start < count and time.monotonic() < end:
        c.poll(0.1)
    return answers["done"] - start


with TempDir() as tmp:
    n = Node(tmp, props={"offsets.topic.segment.bytes": str(SEGMENT),
                         "offsets.topic.num.partitions": str(OFFSETS_PARTS),
                         "log.cleaner.backoff.ms": "500"})
    n.start()
    try:
        t.ok(n.wait_running() is not None, "node up")
        subprocess.run([os.path.join(BUILDDIR, "runnel-topics"), "--bootstrap-server",
                        n.bootstrap, "--create", "--topic", TOPIC, "--partitions",
                        str(PARTS), "--replication-factor", "1"],
                       check=True, capture_output=True, timeout=30)
        part = offsets_partition(GROUP, OFFSETS_PARTS)
        pdir = os.path.join(n.logdir, "__consumer_offsets-%d" % part)
        c = Consumer({"bootstrap.servers": n.bootstrap, "group.id": GROUP,
                      "enable.auto.commit": False, "on_commit": on_commit})
        t0 = time.monotonic()
        # the first commits stay in the active segment, which is never
        # cleaned: their bytes per record give the uncompacted size
        got = commit_many(c, 0, CALIBRATE)
        lo, hi = c.get_watermark_offsets(TopicPartition("__consumer_offsets", part),
                                         timeout=10)
        per_record = log_bytes(pdir) / max(hi - lo, 1)
        t.ok(got == CALIBRATE and hi - lo == CALIBRATE and
             CALIBRATE * per_record < SEGMENT,
             "%d commits: %d records, %.0f bytes each, in __consumer_offsets-%d"
             % (got, hi - lo, per_record, part))
        got += commit_many(c, CALIBRATE, COMMITS - CALIBRATE)
        took = time.monotonic() - t0
        t.ok(got == COMMITS and answers["errors"] == [],
             "%d OffsetCommits answered in %.1f s (%.0f/s), errors: %s"
             % (got, took, got / took, answers["errors"][:3]))
        _, hi = c.get_watermark_offsets(TopicPartition("__consumer_offsets", part),
                                        timeout=10)
        uncompacted = hi * per_record
        right_after = log_bytes(pdir)
        others = sum(log_bytes(os.path.join(n.logdir, d)) for d in os.listdir(n.logdir)
                     if d.startswith("__consumer_offsets-") and
                     d != "__consumer_offsets-%d" % part)
        t.ok(hi >= COMMITS and others == 0,
             "all %d records are in the group's partition %d (others hold %d bytes)"
             % (hi, part, others))
        # Far below: what stays is the active segment (at most SEGMENT
        # bytes, never cleaned) and, in the cleaned segments, about one record
        # per committed partition: about 1.2% of the uncompacted size here.
        # The bound, 5%, is four times that; without compaction it is 100%.
        bound = 0.05 * uncompacted
        t0 = time.monotonic()
        small = wait_for(lambda: log_bytes(pdir) < bound, 60, 0.5)
        after = log_bytes(pdir)
        t.ok(small, "after the cleaner's turn (%.1f s) the partition's segments hold "
             "%d bytes: %.1f%% of the %.0f uncompacted (%d right after the "
             "commits, bound 5%%)" % (time.monotonic() - t0, after,
                                      100.0 * after / uncompacted, uncompacted,
                                      right_after))
        want = {p: max(i // PARTS + 1 for i in range(COMMITS - PARTS, COMMITS)
                       if i % PARTS == p) for p in range(PARTS)}
        r = c.committed([TopicPartition(TOPIC, p) for p in range(PARTS)], timeout=10)
        t.eq({tp.partition: tp.offset for tp in r}, want,
             "the last committed offsets read back")
        c.close()

        # the coordinator rebuilds the group from the compacted log
        n.stop()
        n.start()
        t.ok(n.wait_running() is not None, "node restarted")
        c = Consumer({"bootstrap.servers": n.bootstrap, "group.id": GROUP,
                      "enable.auto.commit": False})
        r = c.committed([TopicPartition(TOPIC, p) for p in range(PARTS)], timeout=20)
        c.close()
        t.eq({tp.partition: tp.offset for tp in r}, want,
             "after a restart, loaded from the compacted partition, they still do")
        t.eq(n.crashes(), [], "no worker crashed")
    finally:
        n.stop()
t.done()
