"""Broker lifecycle in a three-node cluster: registration (DescribeCluster, Metadata),
fencing after broker.session.timeout.ms without heartbeats and unfencing when they
resume, controlled shutdown on SIGTERM (leadership handed over before the node stops,
producers unaffected), preferred leader election, and DescribeQuorum through the tools.
A consumer reading through the failover never sees an offset go backwards."""
import os
import signal
import subprocess
import threading
import time

from confluent_kafka import Consumer, Producer, TopicPartition

from rncluster import admin, create_topic, partition_state, wait_state
from rntest import BUILDDIR, Cluster, Tap, TempDir, wait_for

t = Tap()
PROPS = {"broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "300",
         "replica.lag.time.max.ms": "3000"}


def tool(name, *args):
    return subprocess.run([os.path.join(BUILDDIR, name)] + list(args),
                          capture_output=True, text=True, timeout=60)


with TempDir() as tmp:
    c = Cluster(tmp, 3, props=PROPS)
    c.start()
    try:
        t.ok(c.wait_running(), "three nodes are up and registered")
        md = admin(c.bootstrap).list_topics(timeout=10)
        t.eq(sorted(md.brokers), [1, 2, 3], "Metadata lists the three brokers")
        t.ok(md.controller_id in (1, 2, 3), "and an active controller (%d)" % md.controller_id)

        # fencing: a node that stops heartbeating leaves the live brokers
        create_topic(c.bootstrap, "life", 3, 3, {"min.insync.replicas": "2"})
        wait_state(c.bootstrap, "life", lambda l, r, i: len(i) == 3)
        victim = 3
        pids = c.node(victim).pids()
        for p in pids:
            os.kill(p, signal.SIGSTOP)
        others = ",".join(c.node(i).bootstrap for i in (1, 2))
        gone = wait_for(lambda: sorted(admin(others).list_topics(timeout=3).brokers) == [1, 2], 20)
        t.ok(gone, "a node whose heartbeats stop is fenced and leaves Metadata")
        st = wait_state(others, "life", lambda l, r, i: l in (1, 2) and victim not in i, 20)
        t.ok(st is not None, "and its leaderships and ISR places move: %s" % (st,))
        for p in pids:
            os.kill(p, signal.SIGCONT)
        back = wait_for(lambda: sorted(admin(c.bootstrap).list_topics(timeout=3).brokers) == [1, 2, 3], 30)
        t.ok(back, "heartbeats resume: it is unfenced")
        st = all(wait_state(c.bootstrap, "life", lambda l, r, i: len(i) == 3, 30, p)
                 for p in range(3))
        t.ok(st, "and catches up into every ISR again")

        # preferred leader election puts leadership back on the first replica
        # the preferred replica may still be rejoining an ISR: retry like a user
        for attempt in range(5):
            r = tool("runnel-leader-election", "--bootstrap-server", c.bootstrap,
                     "--election-type", "PREFERRED", "--all-topic-partitions")
            if r.returncode == 0:
                break
            t.diag("election attempt %d: %s" % (attempt + 1, (r.stdout + r.stderr).strip()))
            time.sleep(1)
        t.ok(r.returncode == 0, "runnel-leader-election PREFERRED succeeds: %s"
             % (r.stdout + r.stderr).strip()[-200:])
        ok = wait_for(lambda: all((lambda s: s and s[0] == s[1][0])(partition_state(c.bootstrap, "life", p))
                                  for p in range(3)), 20)
        t.ok(ok, "every partition is led by its preferred replica")

        r = tool("runnel-metadata-quorum", "--bootstrap-server", c.bootstrap, "describe", "--status")
        t.ok(r.returncode == 0 and "LeaderId:" in r.stdout and "CurrentVoters:" in r.stdout,
             "runnel-metadata-quorum describe --status: %s" % r.stdout.strip().replace("\n", " | "))
        r = tool("runnel-metadata-quorum", "--bootstrap-server", c.bootstrap, "describe", "--replication")
        t.ok(r.returncode == 0 and r.stdout.count("\n") >= 4,
             "runnel-metadata-quorum describe --replication lists every voter")

        # controlled shutdown: SIGTERM a leader; a producer and a consumer keep going
        leader = partition_state(c.bootstrap, "life", 0)[0]
        acked, errors = [], []
        stop = threading.Event()
        p = Producer({"bootstrap.servers": c.bootstrap, "acks": "all", "linger.ms": 1,
                      "enable.idempotence": True})

        def produce():
            i = 0
            while not stop.is_set():
                p.produce("life", b"cs-%06d" % i, partition=0,
                          on_delivery=lambda e, m: (errors if e else acked).append(m.offset()))
                p.poll(0.002)
                i += 1
            p.flush(30)

        seen, backwards = [], []

        def consume():
            cons = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "x",
                             "enable.auto.commit": False})
            cons.assign([TopicPartition("life", 0, 0)])
            while not stop.is_set():
                m = cons.poll(0.2)
                if m is None or m.error():
                    continue
                if seen and m.offset() <= seen[-1]:
                    backwards.append((seen[-1], m.offset()))
                seen.append(m.offset())
            cons.close()

        th = [threading.Thread(target=produce), threading.Thread(target=consume)]
        for x in th:
            x.start()
        time.sleep(1.5)
        t0 = time.monotonic()
        c.node(leader).proc.send_signal(signal.SIGTERM)
        rc = c.node(leader).proc.wait(30)
        took = time.monotonic() - t0
        time.sleep(1.5)
        stop.set()
        for x in th:
            x.join(60)
        t.eq(rc, 0, "the leader's node stops on SIGTERM with status 0 (%.1f s)" % took)
        log = c.node(leader).logtext()
        t.ok("leaderships handed over" in log, "after handing its leaderships over")
        st = partition_state(c.bootstrap, "life", 0)
        t.ok(st and st[0] != leader and st[0] > 0, "another replica leads: %s" % (st,))
        t.eq(errors, [], "the producer saw no failed send through the controlled shutdown")
        t.ok(len(acked) > 100, "and kept being acknowledged (%d)" % len(acked))
        t.eq(backwards, [], "the consumer never saw an offset go backwards")
        t.eq(c.crashes(), [], "no worker died of a crash (SIGSEGV, SIGABRT, ...)")
    finally:
        c.kill()

t.done()
