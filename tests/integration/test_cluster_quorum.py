"""Seed 004, experiment 3: three combined nodes, two killed. Nothing can change the
metadata (no split brain): topic creation does not succeed, and a produce that needs an
ISR change times out instead of succeeding. The voters come back and the cluster heals
without help."""
import time

from confluent_kafka import KafkaException, Producer
from confluent_kafka.admin import NewTopic

from rncluster import admin, create_topic, wait_state
from rntest import Cluster, Tap, TempDir

t = Tap()
PROPS = {"broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "300",
         "replica.lag.time.max.ms": "3000"}

with TempDir() as tmp:
    c = Cluster(tmp, 3, props=PROPS)
    c.start()
    try:
        t.ok(c.wait_running(), "three nodes are up")
        create_topic(c.bootstrap, "quorum", 1, 3, {"min.insync.replicas": "2"})
        st = wait_state(c.bootstrap, "quorum", lambda l, r, i: l > 0 and len(i) == 3)
        t.ok(st is not None, "RF=3 topic: %s" % (st,))
        survivor = st[0]
        others = [n for n in (1, 2, 3) if n != survivor]
        for o in others:
            c.node(o).kill()
        surv = c.node(survivor).bootstrap

        # no metadata change commits
        err = None
        t0 = time.monotonic()
        a = admin(surv)  # held: the client must outlive its future
        try:
            a.create_topics([NewTopic("never", 1, 1)], request_timeout=8)["never"].result(30)
        except Exception as e:
            err = e.args[0] if e.args else e
        took = time.monotonic() - t0
        t.ok(err is not None and "timed out" in str(err).lower() and took >= 7,
             "creating a topic without a quorum times out (after %.1f s: %s)" % (took, err))
        md = admin(surv).list_topics(timeout=5)
        t.ok("never" not in md.topics, "and the topic does not exist")

        # acks=all needs the ISR to shrink, which needs the controller: a timeout
        res = []
        p = Producer({"bootstrap.servers": surv, "acks": "all", "message.timeout.ms": 6000})
        p.produce("quorum", b"no-quorum", on_delivery=lambda e, m: res.append(e))
        p.flush(20)
        t.ok(len(res) == 1 and res[0] is not None,
             "the producer gets an error, not a success: %s" % (res[0] if res else None))

        # the voters come back: everything resumes on its own
        for o in others:
            c.node(o).start()
        t.ok(c.wait_running(), "the two nodes restart")
        ok = None
        for _ in range(30):
            try:
                create_topic(c.bootstrap, "after", 1, 3, timeout=10)
                ok = True
                break
            except KafkaException:
                time.sleep(1)
        t.ok(ok, "topic creation works again")
        res = []
        p = Producer({"bootstrap.servers": c.bootstrap, "acks": "all",
                      "message.timeout.ms": 30000})
        p.produce("quorum", b"healed", on_delivery=lambda e, m: res.append(e))
        p.flush(40)
        t.ok(res == [None], "acks=all produce succeeds again")
        t.eq(c.crashes(), [], "no worker died of a crash (SIGSEGV, SIGABRT, ...)")
    finally:
        c.kill()

t.done()
