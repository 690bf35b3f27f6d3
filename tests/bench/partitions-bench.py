#!/usr/bin/python3
"""One node holding BENCH_PART_TOPICS (1,000) topics of 100 partitions at
RF=1, against a node holding only the measured topic, in the same run.
Prints figures; never fails (exit 0). Not run by make check.

Figures:
  create    seconds for CreateTopics of every topic (100 per request)
  metadata  seconds for kcat -L over the whole cluster, and its lines
  memory    RSS of the process tree (supervisor and workers) before the
            topics, after them, and after 1,000 partitions took records:
            KiB per partition
  latency   a 10-partition topic "hot" produced to at BENCH_PART_RATE
            (2,000) records/s of 100 B, acks=1, linger 5 ms, for
            BENCH_PART_SECS (10) s, p50/p99 of produce (runnel-perf:
            call to delivery report) and of fetch (a confluent-kafka
            consumer: the record's create time to its arrival). Both
            nodes carry the same background load, 10,000 records/s from
            one producer: on the big node spread over 1,000 of its
            partitions, on the small one over a second 10-partition
            topic, so the difference is what the partitions cost, not
            what the load costs. The two nodes run side by side and
            their windows alternate, BENCH_PART_ROUNDS (5) of each: the
            change is the median of the rounds' differences, so a minute
            when the machine is busy moves both sides alike

    RUNNEL_BUILDDIR=./build tests/bench/partitions-bench.py
    (or: make bench-partitions)
"""
import json
import os
import subprocess
import sys
import threading
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "lib"))
os.environ.setdefault("RUNNEL_BUILDDIR", os.path.abspath("build"))

from confluent_kafka import Consumer, Producer, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

import rntest  # noqa: E402

TOPICS = int(os.environ.get("BENCH_PART_TOPICS", "1000"))
RATE = int(os.environ.get("BENCH_PART_RATE", "2000"))
SECS = int(os.environ.get("BENCH_PART_SECS", "10"))
ROUNDS = int(os.environ.get("BENCH_PART_ROUNDS", "5"))
PERF = os.path.join(rntest.BUILDDIR, "runnel-perf")


def say(msg):
    print(msg, flush=True)


def pct(v, q):
    if not v:
        return float("nan")
    v = sorted(v)
    return v[min(len(v) - 1, int(q * len(v)))]


def create(node, names, parts):
    a = AdminClient({"bootstrap.servers": node.bootstrap})
    for i in range(0, len(names), 100):
        fs = a.create_topics([NewTopic(n, parts, 1) for n in names[i:i + 100]],
                             request_timeout=300)
        for f in fs.values():
            f.result(timeout=300)


class Side:
    """One node under its background load, with a consumer of "hot" that
    keeps each record's latency while a window is open."""

    def __init__(self, node, label, targets):
        self.node, self.label, self.targets = node, label, targets
        self.stop = threading.Event()
        self.window = None      # the open window's fetch latencies
        self.rounds = []        # (produce p99, fetch p99) per window
        self.threads = [threading.Thread(target=self.background),
                        threading.Thread(target=self.fetch_latency)]
        for th in self.threads:
            th.start()

    def background(self):
        """1,000 records every 0.1 s, one to each of targets (topic,
        partition) taken in turn."""
        p = Producer({"bootstrap.servers": self.node.bootstrap, "linger.ms": 50})
        n = len(self.targets)
        while not self.stop.is_set():
            for i in range(1000):
                t, part = self.targets[i % n]
                p.produce(t, b"b" * 100, partition=part)
            p.poll(0)
            time.sleep(0.1)
        p.flush(30)

    def fetch_latency(self):
        c = Consumer({"bootstrap.servers": self.node.bootstrap, "group.id": "lat",
                      "enable.auto.commit": False, "fetch.wait.max.ms": 100})
        c.assign([TopicPartition("hot", i, -1) for i in range(10)])
        while not self.stop.is_set():
            # one at a time: consume(n, t) waits for n records or t
            m = c.poll(0.1)
            w = self.window
            if m is not None and m.error() is None and w is not None:
                w.append(time.time() * 1000 - m.timestamp()[1])
        c.close()

    def measure(self):
        """One window: SECS s of produce to "hot" at RATE records/s."""
        self.window = fetched = []
        r = subprocess.run([PERF, "producer", "--bootstrap-server", self.node.bootstrap,
                            "--topic", "hot", "--num-records", str(RATE * SECS),
                            "--record-size", "100", "--acks", "1",
                            "--linger-ms", "5", "--throughput", str(RATE),
                            "--print-json"], capture_output=True, text=True,
                           timeout=SECS * 10 + 60)
        time.sleep(0.5)
        self.window = None
        js = [json.loads(l) for l in r.stdout.splitlines() if l.startswith("{")]
        j = js[-1] if js else {}
        self.rounds.append((j.get("p99_ms", float("nan")), pct(fetched, 0.99)))
        say("  %-30s produce p50 %6.2f p99 %6.2f ms | fetch p50 %6.2f p99 %6.2f ms "
            "(%d fetched)" % (self.label, j.get("p50_ms", float("nan")),
                              self.rounds[-1][0], pct(fetched, 0.5),
                              self.rounds[-1][1], len(fetched)))

    def close(self):
        self.stop.set()
        for th in self.threads:
            th.join()


def run(tmp):
    names = ["t%05d" % i for i in range(TOPICS)]
    total = TOPICS * 100
    say("partitions-bench: one node, %d topics x 100 = %d partitions, RF=1"
        % (TOPICS, total))
    big = rntest.Node(tmp, node_id=1, name="big")
    big.start()
    big.wait_running()
    time.sleep(1)
    rss0 = big.rss_kib()
    t0 = time.time()
    create(big, names, 100)
    created = time.time() - t0
    time.sleep(2)
    rss1 = big.rss_kib()
    say("  create     %.2f s for %d partitions (%.0f/s)" % (created, total,
                                                          total / created))
    t0 = time.time()
    r = subprocess.run(["kcat", "-b", big.bootstrap, "-L", "-m", "120"],
                       capture_output=True, text=True, timeout=300)
    say("  metadata   kcat -L %.2f s, exit %d, %d partition lines"
        % (time.time() - t0, r.returncode,
           sum(1 for l in r.stdout.splitlines() if "partition " in l)))
    create(big, ["hot"], 10)

    # the small node runs beside the big one; their windows alternate, so
    # both see the machine as it is at that minute
    small = rntest.Node(tmp, node_id=1, name="small")
    small.start()
    small.wait_running()
    create(small, ["hot", "bg"], 10)
    sides = [Side(small, "10 partitions (+10 busy):", [("bg", p) for p in range(10)]),
             Side(big, "%d partitions, 1,000 busy:" % (total + 10),
                  [("t%05d" % t, p) for t in range(10) for p in range(100)])]
    # the busy partitions' logs are made on their first records (Kafka
    # makes them with the topic): measured after that
    time.sleep(8)
    try:
        for i in range(ROUNDS):
            say("  round %d of %d" % (i + 1, ROUNDS))
            for side in sides:
                side.measure()
    finally:
        for side in sides:
            side.close()
    rss2 = big.rss_kib()
    say("  memory     RSS %.0f MiB before, %.0f MiB with the topics, %.0f MiB "
        "with 1,000 partitions written: %.2f KiB per partition"
        % (rss0 / 1024, rss1 / 1024, rss2 / 1024, (rss2 - rss0) / total))
    base, scaled = sides[0].rounds, sides[1].rounds
    for k, what in ((0, "produce"), (1, "fetch")):
        diffs = [b[k] - a[k] for a, b in zip(base, scaled)]
        say("  p99 %-7s median of %d windows: %.2f ms with 10 partitions, %.2f ms "
            "with %d; median change %+.2f ms (rounds: %s; target: within 2 ms)"
            % (what, len(diffs), pct([a[k] for a in base], 0.5),
               pct([b[k] for b in scaled], 0.5), total + 10, pct(diffs, 0.5),
               " ".join("%+.2f" % d for d in diffs)))
    say("  crashes    %s" % (big.crashes() or small.crashes() or "none"))
    small.stop()
    big.stop()


with rntest.TempDir() as tmp:
    try:
        run(tmp)
    except Exception as e:  # a benchmark reports, it does not fail
        say("partitions-bench: stopped early: %r" % (e,))
sys.exit(0)
