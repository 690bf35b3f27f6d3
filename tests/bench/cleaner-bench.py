"""The log cleaner's rate: a compacted topic gets BENCH_CLEANER_MB MiB of 1 KiB
updates over 10,000 keys (no I/O cap), and the cleaner's own log lines give
the bytes it read and the time it spent; prints one line, never fails."""
import os
import re
import sys
import time

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from rntest import Node, TempDir, wait_for

MB = int(os.environ.get("BENCH_CLEANER_MB", "200"))
KEYS = 10000
line = re.compile(r"cleaned up to offset (\d+): \d+ segment\(s\) swapped, (\d+) of (\d+) "
                  r"records kept, (\d+) bytes read, (\d+) written in (\d+) ms")

with TempDir() as tmp:
    n = Node(tmp, props={"log.cleaner.backoff.ms": "100"})
    n.start()
    try:
        if n.wait_running() is None:
            print("cleaner: node did not start")
            sys.exit(0)
        a = AdminClient({"bootstrap.servers": n.bootstrap})
        a.create_topics([NewTopic("bench", 1, 1, config={
            "cleanup.policy": "compact", "segment.bytes": str(16 << 20),
            "segment.ms": "5000", "min.cleanable.dirty.ratio": "0.01"})])["bench"].result(20)
        p = Producer({"bootstrap.servers": n.bootstrap, "linger.ms": 5,
                      "batch.size": 1 << 20, "acks": "1"})
        val = b"x" * 1000
        total = MB * 1024
        for i in range(total):
            while True:
                try:
                    p.produce("bench", key=b"k%05d" % (i % KEYS), value=val)
                    break
                except BufferError:
                    p.poll(0.01)
        p.flush(120)
        time.sleep(5.5)
        p.produce("bench", key=b"roll", value=b"")
        p.flush(10)

        def done():
            ends = [int(m.group(1)) for m in line.finditer(n.logtext())]
            return ends and max(ends) >= total
        wait_for(done, timeout=300, step=1.0)
        read = written = ms = 0
        for m in line.finditer(n.logtext()):
            read += int(m.group(4))
            written += int(m.group(5))
            ms += int(m.group(6))
        if ms > 0:
            print("cleaner: %.1f MB/s (%.0f MiB read, %.1f MiB written, %.1f s cleaning; "
                  "%d MiB of 1 KiB updates over %d keys)"
                  % (read / 1048576.0 / (ms / 1000.0), read / 1048576.0,
                     written / 1048576.0, ms / 1000.0, MB, KEYS))
        else:
            print("cleaner: no cleaning seen")
    finally:
        n.stop()
