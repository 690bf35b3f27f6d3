"""Clock skew: of three nodes one runs ten minutes ahead and one ten
minutes behind (libfaketime on the wall clock only; the monotonic clock
that times leases and timeouts is left alone). Leader elections under
the skew lose nothing acknowledged, and ListOffsets by time answers from
the records' timestamps whichever node leads."""

import history
from confluent_kafka import Consumer, Producer, TopicPartition
from rnnet import NetCluster
from rntest import Tap, TempDir, wait_for

t = Tap()
PARTS = 3
LIB = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"
PROPS = {"min.insync.replicas": "2", "replica.lag.time.max.ms": "4000",
         "broker.session.timeout.ms": "6000",
         "unclean.leader.election.enable": "false"}
SKEW = {2: "+600s", 3: "-600s"}


def skewed_env(offset):
    return {"LD_PRELOAD": LIB, "FAKETIME": offset,
            "FAKETIME_DONT_FAKE_MONOTONIC": "1", "FAKETIME_NO_CACHE": "1"}


def offsets_by_time(bootstrap, topic, ts):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "ts"})
    try:
        got = c.offsets_for_times([TopicPartition(topic, p, ts)
                                   for p in range(PARTS)], timeout=10)
        return [tp.offset for tp in got]
    finally:
        c.close()


with TempDir() as tmp, NetCluster(tmp, 3, props=PROPS) as cl:
    for n in cl.nodes:
        n.start(env=skewed_env(SKEW[n.node_id]) if n.node_id in SKEW
                else None)
    t.ok(cl.wait_running(), "three nodes up, two with skewed wall clocks "
         "(+10 min, -10 min)")
    history.create_topics(t, cl, ("skew", "times"), PARTS)

    # records stamped by the client at 1,000,000 ms steps, 10 per partition
    p = Producer({"bootstrap.servers": cl.bootstrap, "acks": "all"})
    base = 1_700_000_000_000
    for part in range(PARTS):
        for i in range(10):
            p.produce("times", value=b"x", partition=part,
                      timestamp=base + i * 1_000_000)
    t.eq(p.flush(20), 0, "30 records with client timestamps acknowledged")
    want = [5] * PARTS
    t.eq(offsets_by_time(cl.bootstrap, "times", base + 4_500_000), want,
         "ListOffsets by time finds the first record at or after the time")

    # leadership moves at each pause, so the skewed nodes get their turn
    for _ in range(3):
        leader = history.leader_of(cl.bootstrap, "skew", 0)
        res = history.run(t, cl, "skew", PARTS,
                          inject=lambda: cl.pause(leader),
                          heal=lambda: cl.resume(leader), hold=10.0)
        for k in ("lost", "duplicated", "inconsistent", "misplaced",
                  "reordered", "unexpected"):
            t.eq(len(res[k]), 0, "leader %d (clock %s) paused: %s 0"
                 % (leader, SKEW.get(leader, "true"), k))
        t.ok(wait_for(lambda: offsets_by_time(
            cl.bootstrap, "times", base + 4_500_000) == want, 20),
            "ListOffsets by time still right after leader %d was paused"
            % leader)
    t.eq(cl.crashes(), [], "no worker crashed")

t.done()
