"""Seed 004, experiment 1: RF=3, min.insync.replicas=2, acks=all. 30 records, then a
20,000-record stream; the leader's whole node is SIGKILLed mid-stream. A new leader
comes from the ISR, the ISR shrinks, every acknowledged record reads back; the killed
node restarts, catches up and rejoins the ISR. Failover time is reported."""
import threading
import time

from confluent_kafka import Producer

from rncluster import create_topic, read_all, wait_state
from rntest import Cluster, Tap, TempDir, wait_for

t = Tap()
PROPS = {"broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "300",
         "replica.lag.time.max.ms": "3000", "num.network.threads": "2"}


with TempDir() as tmp:
    c = Cluster(tmp, 3, props=PROPS)
    c.start()
    try:
        t.ok(c.wait_running(), "three combined nodes are up")
        create_topic(c.bootstrap, "durable", 1, 3, {"min.insync.replicas": "2"})
        st = wait_state(c.bootstrap, "durable", lambda l, r, i: l > 0 and len(i) == 3)
        t.ok(st is not None, "RF=3 topic with a full ISR: %s" % (st,))
        leader = st[0] if st else 1

        # idempotent: retries across the failover must not duplicate
        p = Producer({"bootstrap.servers": c.bootstrap, "acks": "all",
                      "enable.idempotence": True,
                      "linger.ms": 1, "message.timeout.ms": 60000, "retries": 1000000,
                      "reconnect.backoff.ms": 50, "retry.backoff.ms": 50})
        acked, failed = set(), []

        def cb(err, msg):
            if err is None:
                acked.add(msg.value())
            else:
                failed.append(err)

        for i in range(30):
            p.produce("durable", b"first-%02d" % i, on_delivery=cb)
        p.flush(30)
        t.eq(len(acked), 30, "the first 30 records are acknowledged with acks=all")

        first_ok_after_kill = []
        kill_time = []

        def stream():
            for i in range(20000):
                while True:
                    try:
                        p.produce("durable", b"stream-%05d" % i, on_delivery=cb)
                        break
                    except BufferError:
                        p.poll(0.05)
                if i % 50 == 0:
                    p.poll(0)
                    time.sleep(0.002)
            p.flush(120)

        th = threading.Thread(target=stream)
        th.start()
        wait_for(lambda: len(acked) > 3000, 60)
        before = len(acked)
        kill_time.append(time.monotonic())
        c.node(leader).kill()
        # failover time: leader killed -> first acks=all write acknowledged after it
        got = wait_for(lambda: len(acked) > before + 200, 60, 0.01)
        failover = time.monotonic() - kill_time[0]
        th.join(180)
        t.ok(got, "writes succeed again after the leader is killed")
        t.diag("failover: leader killed to acks=all writes acknowledged again: %.2f s" % failover)

        st = wait_state(c.bootstrap, "durable",
                        lambda l, r, i: l > 0 and l != leader and leader not in i, 30)
        t.ok(st is not None, "a new leader from the ISR, the dead node out of the ISR: %s" % (st,))
        t.eq(len(failed), 0, "no send failed")
        t.eq(len(acked), 20030, "every record was acknowledged")

        vals = read_all(c.bootstrap, "durable")
        got = set(vals)
        t.ok(acked <= got, "every acknowledged record reads back after failover (%d of %d)"
             % (len(acked & got), len(acked)))
        t.eq(len(vals) - len(got), 0,
             "each acknowledged record reads back exactly once (idempotent producer)")

        c.node(leader).start()
        st = wait_state(c.bootstrap, "durable", lambda l, r, i: len(i) == 3, 60)
        t.ok(st is not None, "the killed node restarts, catches up and rejoins the ISR: %s" % (st,))
        # its copy holds everything too: make it the only one left to read from
        t.ok(set(read_all(c.bootstrap, "durable")) >= acked, "reads still complete")
        t.eq(c.crashes(), [], "no worker died of a crash (SIGSEGV, SIGABRT, ...)")
    finally:
        c.kill()

t.done()
