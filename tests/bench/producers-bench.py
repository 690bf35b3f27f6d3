#!/usr/bin/python3
"""Issue 13's "1,000 producers with 10 partitions each": produce throughput
and latency on one runneld node with 1,000 idempotent producer ids each
writing to all 10 partitions of a topic (10,000 producer states, 976 of
each partition's in the node's shared-memory producer pool) beside 10
producer ids on the same 10 partitions (all inline), in the same run
(prints figures; never fails, exit 0; not run by make check).

The load is raw protocol (tests/lib/rntxn.py): BENCH_PROD_PROCS (4)
processes, each one connection with one Produce request in flight (acks=1,
one batch of 10 records of 100 B), walking its share of the (producer id,
partition) pairs round robin with each pair's next sequence. Every pair
writes once before the clock starts. Rounds alternate 10 / 1,000 ids,
BENCH_PROD_ROUNDS (2) each of BENCH_PROD_SECONDS (8) s, each round on a
topic of its own (its producer tables start empty): records/s and
the p50/p99 of a request's round trip per side, and the ratios of the
medians.

    RUNNEL_BUILDDIR=./build tests/bench/producers-bench.py
    (or: make bench-producers)
"""
import multiprocessing as mp
import os
import statistics
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "lib"))
os.environ.setdefault("RUNNEL_BUILDDIR", os.path.abspath("build"))

import rntest  # noqa: E402
from rncluster import create_topic, wait_state  # noqa: E402
from rntxn import Conn, record_batch  # noqa: E402

PROCS = int(os.environ.get("BENCH_PROD_PROCS", "4"))
ROUNDS = int(os.environ.get("BENCH_PROD_ROUNDS", "2"))
SECONDS = float(os.environ.get("BENCH_PROD_SECONDS", "8"))
PARTS = 10
RECORDS = 10
VALUES = [b"v" * 100] * RECORDS


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * q))] if v else float("nan")


def worker(port, topic, pairs, seqs, seconds, out):
    """Write the pairs round robin: (records, [latency ms]) into out."""
    conn = Conn(port)
    lat, n, i = [], 0, 0
    start = None
    # every pair once first: its state exists before the clock starts
    for k, (pid, p) in enumerate(pairs):
        b = record_batch(VALUES, pid, 0, seqs[k])
        err, _ = conn.produce(topic, p, b, acks=1)
        seqs[k] += RECORDS
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        k = i % len(pairs)
        pid, p = pairs[k]
        b = record_batch(VALUES, pid, 0, seqs[k])
        t0 = time.perf_counter()
        err, _ = conn.produce(topic, p, b, acks=1)
        lat.append((time.perf_counter() - t0) * 1000)
        if err == 0:
            n += RECORDS
        seqs[k] += RECORDS
        i += 1
    out.put((n, time.perf_counter() - start, lat))
    conn.close()


def run_round(port, topic, pids, seqs):
    """One timed round over pids x 10 partitions: (records/s, p50, p99)."""
    pairs = [(pid, p) for pid in pids for p in range(PARTS)]
    q, procs = mp.Queue(), []
    for w in range(PROCS):
        mine = pairs[w::PROCS]
        s = [seqs[pr] for pr in mine]
        procs.append(mp.Process(target=worker,
                                args=(port, topic, mine, s, SECONDS, q)))
    for pr in procs:
        pr.start()
    res = [q.get() for _ in procs]
    for pr in procs:
        pr.join()
    recs = sum(r[0] for r in res)
    secs = max(r[1] for r in res)
    lat = [x for r in res for x in r[2]]
    return recs / secs, pct(lat, 0.5), pct(lat, 0.99)


def main():
    with tempfile.TemporaryDirectory(prefix="runnel-bench-prod-") as tmp:
        node = rntest.Node(tmp)
        node.start()
        node.wait_running(30)
        # a topic per round: each starts with empty producer tables
        for r in range(ROUNDS):
            for n in (10, 1000):
                topic = "bench-%d-%d" % (r, n)
                create_topic(node.bootstrap, topic, PARTS, 1)
                for p in range(PARTS):
                    wait_state(node.bootstrap, topic,
                               lambda l, r, i: l == 1, p=p)
        conn = Conn(node.port)
        figures = {10: [], 1000: []}
        try:
            for r in range(ROUNDS):
                for n in (10, 1000):
                    # fresh ids each round: every sequence starts at 0
                    pids = [conn.init_producer_id()[1] for _ in range(n)]
                    seqs = {(pid, p): 0 for pid in pids
                            for p in range(PARTS)}
                    f = run_round(node.port, "bench-%d-%d" % (r, n), pids,
                                  seqs)
                    figures[n].append(f)
                    print("round %d, %4d producer ids x %d partitions: "
                          "%8.0f records/s, p50 %.2f ms, p99 %.2f ms"
                          % (r + 1, n, PARTS, f[0], f[1], f[2]),
                          flush=True)
        finally:
            conn.close()
            node.stop()
    med = {n: [statistics.median(f[i] for f in figures[n]) for i in range(3)]
           for n in figures}
    print("1,000 producers with 10 partitions each: %.0f records/s, p99 "
          "%.2f ms" % (med[1000][0], med[1000][2]))
    print("10 producers on the same 10 partitions:  %.0f records/s, p99 "
          "%.2f ms" % (med[10][0], med[10][2]))
    print("ratio 1,000 / 10: throughput %.2f, p99 latency %.2f"
          % (med[1000][0] / med[10][0], med[1000][2] / med[10][2]))


if __name__ == "__main__":
    main()
