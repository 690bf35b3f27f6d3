#!/usr/bin/python3
"""Transactions on one runneld node beside librdkafka's mock broker, in the
same run (prints figures; never fails, exit 0; not run by make check).

Two lines per broker, each from one confluent-kafka producer:
  small   BENCH_TXN_COUNT (500) transactions back to back, 10 records of
          100 B each over 2 partitions: transactions/s and the p50/p99 of
          one transaction (begin to commit's return)
  large   BENCH_TXN_RECORDS (200,000) records of 100 B, committed every
          1,000, against the same records from an idempotent producer with
          no transaction: records/s of each and their ratio (the cost of
          transactions at that size)

    RUNNEL_BUILDDIR=./build tests/bench/txn-bench.py   (or: make bench-txn)

BENCH_TXN_VERIFY=false runs runneld with
transaction.partition.verification.enable=false (KIP-890's round trip off).
"""
import os
import sys
import tempfile
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "lib"))
os.environ.setdefault("RUNNEL_BUILDDIR", os.path.abspath("build"))

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

import rntest  # noqa: E402
from rnpeers import start_mock  # noqa: E402

COUNT = int(os.environ.get("BENCH_TXN_COUNT", "500"))
RECORDS = int(os.environ.get("BENCH_TXN_RECORDS", "200000"))
VALUE = b"v" * 100


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(len(v) * q))] if v else float("nan")


def start_runnel(tmp):
    props = {"transaction.state.log.replication.factor": "1",
             "transaction.state.log.min.isr": "1"}
    if os.environ.get("BENCH_TXN_VERIFY", "true") == "false":
        props["transaction.partition.verification.enable"] = "false"
    node = rntest.Node(tmp, props=props)
    node.start()
    node.wait_running(30)
    a = AdminClient({"bootstrap.servers": node.bootstrap})
    for f in a.create_topics([NewTopic("small", 2, 1),
                              NewTopic("large", 1, 1)]).values():
        f.result(30)
    return node


def producer(bs, txn_id=None):
    conf = {"bootstrap.servers": bs, "linger.ms": 5,
            "enable.idempotence": True}
    if txn_id:
        conf["transactional.id"] = txn_id
    p = Producer(conf)
    if txn_id:
        p.init_transactions(30)
    return p


def small(bs, tag):
    p = producer(bs, "small-" + tag)
    each = []
    t0 = time.monotonic()
    for i in range(COUNT):
        s = time.monotonic()
        p.begin_transaction()
        for k in range(10):
            p.produce("small", VALUE, partition=k % 2)
        p.commit_transaction(30)
        each.append((time.monotonic() - s) * 1000)
    el = time.monotonic() - t0
    return COUNT / el, pct(each, 0.5), pct(each, 0.99)


def large(bs, tag, txn):
    p = producer(bs, ("large-" + tag) if txn else None)
    t0 = time.monotonic()
    for i in range(RECORDS):
        if txn and i % 1000 == 0:
            if i:
                p.commit_transaction(30)
            p.begin_transaction()
        while True:
            try:
                p.produce("large", VALUE, partition=0)
                break
            except BufferError:
                p.poll(0.01)
    if txn:
        p.commit_transaction(60)
    else:
        p.flush(60)
    return RECORDS / (time.monotonic() - t0)


def main():
    tmp = tempfile.mkdtemp(prefix="runnel-txnbench-")
    mock, mock_bs = start_mock(tmp, ["small:2:1", "large:1:1"])
    node = start_runnel(tmp)
    peers = [("runnel", node.bootstrap)] + ([("mock", mock_bs)] if mock_bs
                                             else [])
    got = {}
    try:
        print("txn-bench: load %s" % " ".join(open("/proc/loadavg").read()
                                              .split()[:3]))
        for name, bs in peers:
            tps, p50, p99 = small(bs, name)
            print("  %-7s small: %7.1f transactions/s (10 x 100 B each), "
                  "p50 %.2f ms, p99 %.2f ms" % (name, tps, p50, p99))
            got[name] = tps
        for name, bs in peers:
            idem = large(bs, name, False)
            txn = large(bs, name, True)
            print("  %-7s large: idempotent %9.0f records/s, transactional "
                  "(1,000 a transaction) %9.0f records/s: %.2fx"
                  % (name, idem, txn, txn / idem))
        if "mock" in got:
            print("  small transactions/s, runnel / mock: %.2f"
                  % (got["runnel"] / got["mock"]))
        print("  crashes: %s" % (node.crashes() or "none"))
    finally:
        node.stop()
        if mock:
            mock.terminate()


try:
    main()
except Exception as e:  # a benchmark reports, it does not fail
    print("txn-bench: stopped early: %r" % (e,))
sys.exit(0)
