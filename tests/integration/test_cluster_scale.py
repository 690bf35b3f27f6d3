"""Replication at a realistic size: three nodes, 10 topics x 40 partitions at
RF=3 (400 partitions; each node follows ~267 and leads ~133).
- every replica is in the ISR right after the topics' creation;
- acks=all produce to every partition succeeds (confluent-kafka);
- a node stopped while the others take more acks=all writes catches up
  into every ISR within seconds of its restart (its fetcher asks every
  leader OffsetForLeaderEpoch for ~267 partitions, then fetches them all);
- every ISR is still full after replica.lag.time.max.ms more of producing,
  and no leader asked to shrink one after the catch-up;
- every record reads back from every partition (one consumer assigned to
  all 400), and every follower's log holds the leader's bytes;
- no node logs a fetch failure, `Cannot allocate memory` or a reconnect
  loop; warnings are counted per node."""
import os
import time

from rncluster import admin
from rnscale import (create_topics, describe_isr_short, isr_shrinks, isr_state,
                     log_trouble, not_full, produce_all, read_all,
                     topic_names, wait_isr_full)
from rntest import Cluster, Tap, TempDir, wait_for

t = Tap()
TOPICS, PARTS, RF, LAG_MS = 10, 40, 3, 8000
PROPS = {"replica.lag.time.max.ms": str(LAG_MS), "broker.session.timeout.ms": "3000",
         "broker.heartbeat.interval.ms": "300"}


def partition_bytes(node, topic, p):
    d = os.path.join(node.logdir, "%s-%d" % (topic, p))
    try:
        return sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d)
                   if f.endswith(".log"))
    except OSError:
        return -1


def log_since(node, mark):
    class Tail:
        node_id = node.node_id

        def logtext(self):
            return node.logtext()[mark:]
    return Tail()


with TempDir() as tmp:
    c = Cluster(tmp, 3, props=PROPS)
    c.start()
    try:
        t.ok(c.wait_running(), "three nodes are up and registered")
        names = topic_names(TOPICS)
        n_parts = TOPICS * PARTS
        errs = create_topics(c.bootstrap, names, PARTS, RF, {"min.insync.replicas": "2"})
        t.eq(errs, {}, "%d topics x %d partitions at RF=%d are created" % (TOPICS, PARTS, RF))
        secs, bad = wait_isr_full(c.bootstrap, names, PARTS, 30)
        t.ok(secs is not None, "every replica of the %d partitions is in the ISR (%s)"
             % (n_parts, "after %.1f s" % secs if secs is not None else
                "not within 30 s: %d short, e.g. %s" % (len(bad), bad[:3])))

        n1, e1, s1 = produce_all(c.bootstrap, names, PARTS, 10, tag=b"a")
        t.ok(n1 == n_parts * 10 and not e1,
             "acks=all: 10 records to each of the %d partitions acknowledged "
             "(%d in %.1f s; errors %s)" % (n_parts, n1, s1, e1[:3]))

        # node 3 away: the other two take writes, then it must catch up
        away = c.node(3)
        away.stop()
        live = ",".join(c.node(i).bootstrap for i in (1, 2))
        ok = wait_for(lambda: (lambda st: st and all(s[0] in (1, 2) and s[2] == 2
                                                  for s in st.values()))(
            isr_state(live, names)), 20, 0.3)
        t.ok(ok, "with node 3 stopped, every partition is led by 1 or 2 with an ISR of two")
        n2, e2, s2 = produce_all(live, names, PARTS, 10, tag=b"b",
                                 extra={"message.timeout.ms": 30000})
        t.ok(n2 == n_parts * 10 and not e2,
             "acks=all to every partition goes on without it (%d in %.1f s; errors %s)"
             % (n2, s2, e2[:3]))
        marks = {n.node_id: len(n.logtext()) for n in c.nodes}
        away.start()
        t0 = time.monotonic()
        secs, bad = wait_isr_full(c.bootstrap, names, PARTS, 30)
        t.ok(secs is not None, "restarted, node 3 is back in all %d ISRs within 30 s (%s)"
             % (n_parts, "%.1f s after its start" % (time.monotonic() - t0)
                if secs is not None else "%d short, e.g. %s" % (len(bad), bad[:3])))
        t.diag("ISR full %.1f s after node 3's restart" % (time.monotonic() - t0))
        full_at = time.monotonic()
        shrink_marks = {n.node_id: len(n.logtext()) for n in c.nodes}

        # more writes for longer than replica.lag.time.max.ms: nobody falls out
        total, rounds = n1 + n2, 0
        while time.monotonic() - full_at < LAG_MS / 1000.0 + 2 or rounds < 2:
            n3, e3, s3 = produce_all(c.bootstrap, names, PARTS, 5, tag=b"c%d" % rounds)
            rounds += 1
            total += n3
            if n3 != n_parts * 5 or e3:
                break
            time.sleep(1)
        t.ok(n3 == n_parts * 5 and not e3,
             "%d more rounds of acks=all to every partition over %.0f s all acknowledged "
             "(errors %s)" % (rounds, time.monotonic() - full_at, e3[:3]))
        bad = not_full(isr_state(c.bootstrap, names), names, PARTS, RF)
        t.ok(not bad, "every ISR is still full %.0f s after the catch-up (%d short: %s)"
             % (time.monotonic() - full_at, len(bad), bad[:3]))
        shrinks = [l for n in c.nodes for l in isr_shrinks(log_since(n, shrink_marks[n.node_id]))]
        t.ok(not shrinks, "no leader asked to shrink an ISR since (%d asked: %s)"
             % (len(shrinks), shrinks[:2]))
        rc, short, seen = describe_isr_short(c.bootstrap)
        t.ok(rc == 0 and seen == n_parts and not short,
             "runnel-topics --describe lists %d partitions, none with a short ISR %s"
             % (seen, short[:2]))

        counts, left = read_all(c.bootstrap, names, PARTS)
        per = total // n_parts
        wrong = {k: v for k, v in counts.items() if v != per}
        t.ok(not left and not wrong and sum(counts.values()) == total,
             "every partition reads back its %d records (%d of %d; %d partitions "
             "short, %d not read to the end)" % (per, sum(counts.values()), total,
                                                 len(wrong), len(left)))

        def differ():
            out = []
            for tn in names:
                for p in range(PARTS):
                    b = {partition_bytes(n, tn, p) for n in c.nodes}
                    if len(b) != 1 or b == {0} or -1 in b:
                        out.append((tn, p, b))
            return out
        wait_for(lambda: not differ(), 20, 0.5)
        diff = differ()
        t.ok(not diff, "every replica's log holds the same bytes on all three "
             "nodes (%d differ: %s)" % (len(diff), diff[:3]))

        try:
            brokers = sorted(admin(c.bootstrap).list_topics(timeout=10).brokers)
        except Exception as e:  # noqa: BLE001 - reported below
            brokers = str(e)
        t.eq(brokers, [1, 2, 3], "all three brokers are still registered")
        for n in c.nodes:
            warn, fetch = log_trouble(log_since(n, marks[n.node_id]))
            t.ok(not fetch, "node %d logs no fetch failure, ENOMEM or reconnect since "
                 "node 3's restart (%d such lines: %s)" % (n.node_id, len(fetch), fetch[:2]))
            warn, fetch = log_trouble(n)
            t.ok(len(fetch) < 20 and len(warn) < 40,
                 "node %d: no warning storm over the whole run (%d warnings, %d about "
                 "fetching: %s)" % (n.node_id, len(warn), len(fetch), (fetch or warn)[:2]))
        t.diag("RSS per node (KiB): %s" % [n.rss_kib() for n in c.nodes])
        t.eq(c.crashes(), [], "no worker died of a crash (SIGSEGV, SIGABRT, ...)")
    finally:
        c.kill()

t.done()
