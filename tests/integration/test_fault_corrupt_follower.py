"""A follower with a corrupt log: three nodes, one partition at RF=3. A
follower is stopped, a bit is flipped in the middle of its active segment
and its recovery-point checkpoint removed (so the restart scans the
segment, as after a crash). It comes back, cuts its log at the bad batch
(saying so), fetches the rest again from the leader and rejoins the ISR;
its segment files are then byte for byte the leader's, since a follower
keeps the leader's batches as they are."""
import os

from confluent_kafka import Producer
from rncluster import create_topic, wait_state
from rntest import Cluster, Tap, TempDir, wait_for

t = Tap()
N = 5000
PROPS = {"min.insync.replicas": "2", "replica.lag.time.max.ms": "4000",
         "broker.session.timeout.ms": "6000"}


def produce(bootstrap, tag, n):
    acked = []
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                  "enable.idempotence": True, "linger.ms": 2})
    for i in range(n):
        p.produce("cf", value=b"%s%06d" % (tag, i) * 10, partition=0,
                  on_delivery=lambda e, m: acked.append(m.offset())
                  if e is None else None)
        p.poll(0)
    p.flush(60)
    return acked


def segments(node):
    d = os.path.join(node.logdir, "cf-0")
    return {f: open(os.path.join(d, f), "rb").read()
            for f in sorted(os.listdir(d)) if f.endswith(".log")}


with TempDir() as tmp:
    cl = Cluster(tmp, 3, props=PROPS)
    cl.start()
    t.ok(cl.wait_running(), "three nodes are up")
    create_topic(cl.bootstrap, "cf", 1, 3)
    st = wait_state(cl.bootstrap, "cf", lambda l, r, i: l > 0 and len(i) == 3)
    t.ok(st is not None, "cf-0 at RF=3 with its whole ISR: %s" % (st,))
    leader = cl.node(st[0])
    follower = cl.node([r for r in st[1] if r != st[0]][0])
    t.eq(len(produce(cl.bootstrap, b"a", N)), N, "%d records acknowledged" % N)
    t.ok(wait_for(lambda: segments(follower) == segments(leader), 30),
         "the follower's segments are the leader's")

    follower.stop()
    seg = os.path.join(follower.logdir, "cf-0", sorted(segments(follower))[-1])
    size = os.path.getsize(seg)
    with open(seg, "r+b") as f:
        f.seek(size // 2)
        b = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([b[0] ^ 0x10]))
    os.unlink(os.path.join(follower.logdir, "recovery-point-offset-checkpoint"))
    t.ok(segments(follower) != segments(leader),
         "a bit flipped in the middle of node %d's active segment (%d bytes)"
         % (follower.node_id, size))
    follower.start()
    t.ok(follower.wait_running(20) is not None, "the follower runs again")
    t.ok(wait_for(lambda: "invalid data from byte" in follower.logtext(), 20),
         "it says where it cut its log")
    more = produce(cl.bootstrap, b"b", 1000)
    t.eq(len(more), 1000, "1000 more acknowledged meanwhile")
    back = wait_state(cl.bootstrap, "cf", lambda l, r, i: len(i) == 3, 60)
    t.ok(back is not None, "the ISR is whole with it: %s" % (back,))
    t.ok(wait_for(lambda: segments(follower) == segments(leader), 30),
         "its segments are byte for byte the leader's again (re-fetched "
         "from the bad batch on)")
    t.eq(cl.crashes(), [], "no worker crashed")
    cl.kill()

t.done()
