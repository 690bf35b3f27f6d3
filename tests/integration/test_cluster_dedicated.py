"""Dedicated roles: three controller-only voters and two broker-only nodes. The
brokers register with the active controller and get the metadata from it; topics
replicate across them; a controller voter can be lost and the cluster still
changes metadata and serves."""
import time

from confluent_kafka import Producer

from rncluster import admin, create_topic, read_all, wait_state
from rntest import Cluster, Tap, TempDir

t = Tap()
ROLES = {1: "controller", 2: "controller", 3: "controller", 4: "broker", 5: "broker"}

with TempDir() as tmp:
    c = Cluster(tmp, 5, roles=ROLES, voters=[1, 2, 3],
                props={"broker.session.timeout.ms": "3000",
                       "broker.heartbeat.interval.ms": "300"})
    c.start()
    try:
        t.ok(c.wait_running(), "three controllers and two brokers are up")
        md = admin(c.bootstrap).list_topics(timeout=10)
        t.eq(sorted(md.brokers), [4, 5], "Metadata lists only the two brokers")
        # as in KRaft, clients are pointed at a broker, which forwards
        t.ok(md.controller_id in (4, 5), "clients are given a broker as controller (%d)"
             % md.controller_id)
        create_topic(c.bootstrap, "dedicated", 2, 2)
        st = wait_state(c.bootstrap, "dedicated",
                        lambda l, r, i: sorted(r) == [4, 5] and len(i) == 2)
        t.ok(st is not None, "RF=2 across the two brokers, both in sync: %s" % (st,))
        res = []
        p = Producer({"bootstrap.servers": c.bootstrap, "acks": "all"})
        for i in range(200):
            p.produce("dedicated", b"d-%03d" % i, partition=0,
                      on_delivery=lambda e, m: res.append(e))
        p.flush(30)
        t.ok(len(res) == 200 and all(e is None for e in res), "acks=all produce succeeds")
        t.eq(len(read_all(c.bootstrap, "dedicated")), 200, "and reads back")

        # one voter lost, the active one: a majority remains
        r = __import__("subprocess").run(
            [__import__("os").path.join(__import__("rntest").BUILDDIR, "runnel-metadata-quorum"),
             "--bootstrap-server", c.bootstrap, "describe", "--status"],
            capture_output=True, text=True, timeout=30)
        ctl = int([l.split()[-1] for l in r.stdout.splitlines() if l.startswith("LeaderId:")][0])
        t.ok(ctl in (1, 2, 3), "the active controller is a controller-only voter (%d)" % ctl)
        c.node(ctl).kill()
        t0 = time.monotonic()
        try:
            create_topic(c.bootstrap, "after-voter-loss", 1, 2, timeout=40)
        except Exception as e:
            t.diag("create during the controller change: %s" % e)
        ok = wait_state(c.bootstrap, "after-voter-loss", lambda l, r, i: l in (4, 5), 30)
        t.ok(ok, "after the active controller's node dies, metadata changes still commit "
             "(topic led by %s after %.1f s)" % (ok and ok[0], time.monotonic() - t0))
        r = __import__("subprocess").run(
            [__import__("os").path.join(__import__("rntest").BUILDDIR, "runnel-metadata-quorum"),
             "--bootstrap-server", c.bootstrap, "describe", "--status"],
            capture_output=True, text=True, timeout=30)
        new = [l.split()[-1] for l in r.stdout.splitlines() if l.startswith("LeaderId:")]
        t.ok(new and int(new[0]) in (1, 2, 3) and int(new[0]) != ctl,
             "another voter leads the quorum (%s)" % (new,))
        # the brokers took the state once, then the log entries after it
        for b in (4, 5):
            t.ok("following the metadata log from offset" in c.node(b).logtext(),
                 "broker %d follows the metadata log by offset after its first "
                 "state" % b)
        t.eq(c.crashes(), [], "no worker died of a crash (SIGSEGV, SIGABRT, ...)")
    finally:
        c.kill()

t.done()
