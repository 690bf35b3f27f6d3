"""__consumer_offsets under a million commits to one group (prints, never
fails): one node with the log cleaner on and 1 MiB offsets segments;
BENCH_COMMITS (1,000,000) asynchronous OffsetCommits from one standalone
consumer over 10 partitions; prints the commit rate, the size of the
group's __consumer_offsets partition before and after the cleaner had
its turn, and whether the last committed offsets read back."""
import os
import re
import sys
import time

from confluent_kafka import Consumer, TopicPartition

from rntest import Node, TempDir, wait_for

COMMITS = int(os.environ.get("BENCH_COMMITS", "1000000"))
PARTS = 10


def dir_bytes(path):
    return sum(os.path.getsize(os.path.join(d, f))
               for d, _, fs in os.walk(path) for f in fs
               if f.endswith(".log"))


def offsets_dirs(n):
    return [os.path.join(n.logdir, d) for d in os.listdir(n.logdir)
            if d.startswith("__consumer_offsets-")]


with TempDir() as tmp:
    n = Node(tmp, props={"offsets.topic.segment.bytes": "1048576",
                         "offsets.topic.num.partitions": "1",
                         "log.cleaner.backoff.ms": "1000"})
    n.start()
    if n.wait_running() is None:
        sys.exit("node did not start")
    c = Consumer({"bootstrap.servers": n.bootstrap, "group.id": "growth",
                  "enable.auto.commit": False})
    done = [0]

    def on_commit(err, parts):
        done[0] += 1
    c2 = Consumer({"bootstrap.servers": n.bootstrap, "group.id": "growth",
                   "enable.auto.commit": False, "on_commit": on_commit})
    t0 = time.monotonic()
    for i in range(COMMITS):
        while True:
            try:
                c2.commit(offsets=[TopicPartition("growth-t", i % PARTS,
                                                  i // PARTS + 1)],
                          asynchronous=True)
                break
            except Exception:
                c2.poll(0.01)
        if i % 1000 == 0:
            c2.poll(0)
    while done[0] < COMMITS and time.monotonic() - t0 < 3600:
        c2.poll(0.1)
    took = time.monotonic() - t0
    print("offsets-growth: %d OffsetCommits (async, one client) in %.1f s: "
          "%.0f commits/s" % (done[0], took, done[0] / took))
    # The cleaner works while the commits arrive, so the size on disk
    # at the end is already compacted: what the commits wrote is the
    # sum of the bytes each cleaning read from its dirty segments plus
    # what is still uncleaned, as the cleaner's own log lines count it.
    size = sum(dir_bytes(d) for d in offsets_dirs(n))
    print("offsets-growth: __consumer_offsets log bytes right after: %d"
          % size)
    time.sleep(5)  # one more turn of the cleaner
    after = sum(dir_bytes(d) for d in offsets_dirs(n))
    cleaned = [l for l in n.logtext().splitlines()
               if "__consumer_offsets" in l and "cleaned up to" in l]
    read = sum(int(re.search(r"(\d+) bytes read", l).group(1))
               for l in cleaned)
    print("offsets-growth: %d bytes after the cleaner's last turn; %d "
          "cleanings read %d bytes (mostly the dirty segments the "
          "commits wrote)" % (after, len(cleaned), read))
    got = c.committed([TopicPartition("growth-t", p) for p in range(PARTS)],
                      timeout=10)
    want = {p: max(i // PARTS + 1 for i in range(COMMITS - PARTS, COMMITS)
                   if i % PARTS == p) for p in range(PARTS)}
    ok = all(tp.offset == want[tp.partition] for tp in got)
    print("offsets-growth: last committed offsets read back: %s"
          % ("yes" if ok else "NO: %r" % [(tp.partition, tp.offset)
                                          for tp in got]))
    c.close()
    c2.close()
    n.stop()
    print("\n".join(l for l in n.logtext().splitlines()
                    if "__consumer_offsets" in l and "cleaned" in l)[-600:])
