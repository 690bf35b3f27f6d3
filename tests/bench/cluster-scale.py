#!/usr/bin/python3
"""Replication at benchmark size: three runneld nodes on 127.0.0.1 with
BENCH_SCALE_PARTITIONS (3000) partitions at RF=3, in topics of 100
partitions. Prints figures; never fails (exit 0). Not run by make check.

Phases and figures:
  create      CreateTopics of everything; seconds until every ISR is full
  produce     acks=all, BENCH_SCALE_RECORDS (20) records of 100 B to every
              partition: records/s and MB/s
  catch-up    node 3 stopped (SIGTERM), the same again to the other two,
              node 3 started: seconds from its start until it is back in
              every ISR (it asks OffsetForLeaderEpoch and fetches for the
              partitions it follows), and until its broker registration
  steady      acks=all rounds for replica.lag.time.max.ms + 5 s: ISRs that
              are short at the end, ISR shrinks asked for
  logs        per node: follower fetch errors, ENOMEM, reconnects, warnings
  failover    the node of the active controller SIGKILLed: seconds until
              another controller is active and every partition is led by
              a live node, an acks=all round after, and its catch-up
  memory      RSS of each node's process tree (supervisor and workers)

    RUNNEL_BUILDDIR=./build tests/bench/cluster-scale.py
    (or: make bench-scale)

Environment: BENCH_SCALE_PARTITIONS, BENCH_SCALE_RECORDS,
BENCH_SCALE_LAG_MS (replica.lag.time.max.ms, 10000), BENCH_SCALE_FETCHERS
(num.replica.fetchers, 1), BENCH_SCALE_NETWORK (num.network.threads, 2),
BENCH_KEEP=1.
"""
import os
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "lib"))
os.environ.setdefault("RUNNEL_BUILDDIR", os.path.abspath("build"))

from confluent_kafka.admin import AdminClient  # noqa: E402

import rntest  # noqa: E402
from rnscale import (create_topics, isr_shrinks, isr_state, log_trouble,  # noqa: E402
                     not_full, produce_all, wait_isr_full)

PARTS = int(os.environ.get("BENCH_SCALE_PARTITIONS", "3000"))
RECORDS = int(os.environ.get("BENCH_SCALE_RECORDS", "20"))
LAG_MS = int(os.environ.get("BENCH_SCALE_LAG_MS", "10000"))
FETCHERS = int(os.environ.get("BENCH_SCALE_FETCHERS", "1"))
NETWORK = int(os.environ.get("BENCH_SCALE_NETWORK", "2"))
PER_TOPIC = 100 if PARTS >= 100 else PARTS
TOPICS = (PARTS + PER_TOPIC - 1) // PER_TOPIC


def say(msg):
    print(msg, flush=True)


def tail(node, mark):
    class Tail:
        def logtext(self):
            return node.logtext()[mark:]
    return Tail()


def failover(c, names, parts):
    """SIGKILL of the node with the active controller: seconds until another
    controller is active, until every partition is led by a live node, and
    the first acks=all round to every partition after; then its restart
    until it is back in every ISR."""
    md = AdminClient({"bootstrap.servers": c.bootstrap}).list_topics(timeout=20)
    ctl = md.controller_id
    victim = c.node(ctl)
    others = [x for x in c.nodes if x is not victim]
    live = ",".join(x.bootstrap for x in others)
    alive = [x.node_id for x in others]
    t0 = time.monotonic()
    victim.kill()

    def new_controller():
        try:
            m = AdminClient({"bootstrap.servers": live}).list_topics(timeout=5)
            return m.controller_id in alive
        except Exception:  # noqa: BLE001 - asked again
            return False
    got = rntest.wait_for(new_controller, 60, 0.1)
    t_ctl = time.monotonic() - t0

    def led_by_live():
        m = isr_state(live, names, 20)
        return m and len(m) == len(names) * parts and all(
            st[0] in alive for st in m.values())
    led = rntest.wait_for(led_by_live, 120, 0.5)
    t_led = time.monotonic() - t0
    n, e, s = produce_all(live, names, parts, 1, tag=b"f")
    say("  failover: node %d (active controller) SIGKILLed; another controller "
        "%s, every partition led by a live node %s; then acks=all to every "
        "partition: %d acknowledged in %.1f s, %d errors %s"
        % (ctl, "in %.1f s" % t_ctl if got else "NOT within 60 s",
           "in %.1f s" % t_led if led else "NOT within 120 s", n, s, len(e),
           e[:2]))
    victim.start()
    t0 = time.monotonic()
    secs, bad = wait_isr_full(c.bootstrap, names, parts, 300)
    say("  failover: node %d restarted; back in every ISR %s" % (
        ctl, "%.1f s after its start" % (time.monotonic() - t0)
        if secs is not None else "NOT within 300 s (%d short)" % len(bad)))


def run(tmp):
    if not os.access(rntest.RUNNELD, os.X_OK):
        say("bench-scale: %s missing; build first" % rntest.RUNNELD)
        return
    names = ["bscale-%03d" % i for i in range(TOPICS)]
    parts = PER_TOPIC
    n_parts = TOPICS * parts
    props = {"replica.lag.time.max.ms": str(LAG_MS),
             "broker.session.timeout.ms": "3000",
             "broker.heartbeat.interval.ms": "300",
             # each process keeps the logs its open-files limit allows:
             # more fetchers share the followed replicas between them
             "num.replica.fetchers": str(FETCHERS),
             "num.network.threads": str(NETWORK)}
    c = rntest.Cluster(tmp, 3, props=props)
    c.start()
    try:
        if not c.wait_running(60):
            say("bench-scale: the cluster did not come up; no figures")
            return
        say("cluster-scale: 3 nodes, %d topics x %d partitions = %d at RF=3, "
            "min.insync.replicas=2, replica.lag.time.max.ms=%d"
            % (TOPICS, parts, n_parts, LAG_MS))
        say("  RSS per node before the topics (MiB): %s"
            % " ".join("%.0f" % (n.rss_kib() / 1024.0) for n in c.nodes))
        t0 = time.monotonic()
        errs = create_topics(c.bootstrap, names, parts, 3, {"min.insync.replicas": "2"})
        t_create = time.monotonic() - t0
        if errs:
            say("  CreateTopics failed for %d topics: %s" % (len(errs), list(errs.items())[:2]))
        secs, bad = wait_isr_full(c.bootstrap, names, parts, 120)
        say("  create: CreateTopics %.2f s; every ISR full %s after the request"
            % (t_create, "%.2f s" % (time.monotonic() - t0) if secs is not None
               else "NOT within 120 s (%d short)" % len(bad)))

        n, e, s = produce_all(c.bootstrap, names, parts, RECORDS, tag=b"a")
        say("  produce acks=all: %d of %d acknowledged in %.1f s: %.0f records/s, "
            "%.2f MB/s (100 B records, %d per partition), %d errors %s"
            % (n, n_parts * RECORDS, s, n / s if s else 0,
               n * 100 / s / 2 ** 20 if s else 0, RECORDS, len(e), e[:2]))

        away = c.node(3)
        away.stop()
        live = ",".join(c.node(i).bootstrap for i in (1, 2))
        rntest.wait_for(lambda: (lambda m: m and all(st[0] in (1, 2) for st in
                                                    m.values()))(
            isr_state(live, names, 20)), 60, 0.5)
        n, e, s = produce_all(live, names, parts, RECORDS, tag=b"b")
        say("  node 3 stopped; produce acks=all to nodes 1, 2: %d acknowledged in "
            "%.1f s (%.0f records/s), %d errors %s" % (n, s, n / s if s else 0,
                                                       len(e), e[:2]))
        marks = {x.node_id: len(x.logtext()) for x in c.nodes}
        away.start()
        t0 = time.monotonic()
        def registered():
            try:
                return 3 in AdminClient({"bootstrap.servers": live}).list_topics(
                    timeout=5).brokers
            except Exception:  # noqa: BLE001 - asked again
                return False
        reg = rntest.wait_for(registered, 60, 0.2)
        t_reg = time.monotonic() - t0
        secs, bad = wait_isr_full(c.bootstrap, names, parts, 180)
        say("  catch-up: node 3 registered %s after its start; back in every ISR %s"
            % ("%.1f s" % t_reg if reg else "NOT within 60 s",
               "%.1f s after its start" % (time.monotonic() - t0) if secs is not None
               else "NOT within 180 s (%d short, e.g. %s)" % (len(bad), bad[:2])))
        full_at = time.monotonic()
        smarks = {x.node_id: len(x.logtext()) for x in c.nodes}

        acked = rounds = 0
        errs = []
        t1 = time.monotonic()
        while time.monotonic() - full_at < LAG_MS / 1000.0 + 5:
            n, e, s = produce_all(c.bootstrap, names, parts, 2, tag=b"c%d" % rounds)
            acked += n
            errs += e
            rounds += 1
        s = time.monotonic() - t1
        bad = not_full(isr_state(c.bootstrap, names, 20), names, parts)
        shrinks = sum(len(isr_shrinks(tail(x, smarks[x.node_id]))) for x in c.nodes)
        say("  steady: %d rounds of acks=all to every partition over %.0f s (%.0f records/s, "
            "%d errors); ISRs short at the end: %d; ISR shrinks asked for: %d"
            % (rounds, s, acked / s if s else 0, len(errs), len(bad), shrinks))
        failover(c, names, parts)
        for x in c.nodes:
            warn, fetch = log_trouble(x)
            warn2, fetch2 = log_trouble(tail(x, marks[x.node_id]))
            enomem = sum("Cannot allocate memory" in l for l in x.logtext().splitlines())
            say("  node %d: fetch errors/reconnects %d (%d since node 3's restart), "
                "ENOMEM %d, warnings %d, RSS %.0f MiB"
                % (x.node_id, len(fetch), len(fetch2), enomem, len(warn),
                   x.rss_kib() / 1024.0))
            for l in (fetch2 or warn2)[:3]:
                say("      %s" % l[:160])
        crashes = c.crashes()
        if crashes:
            say("  worker crashes: %s" % crashes[:3])
    finally:
        c.kill()


if __name__ == "__main__":
    with rntest.TempDir() as tmp:
        if os.environ.get("BENCH_KEEP") == "1":
            os.environ["RUNNEL_KEEP_TEST_DIRS"] = "1"
        run(tmp)
    sys.exit(0)
