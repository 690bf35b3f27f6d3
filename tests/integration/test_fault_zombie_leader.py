"""A partition leader cut off from the other brokers and the controllers,
while clients still reach it (a zombie leader): with acks=all,
min.insync.replicas=2, idempotent producers and clean elections, no
acknowledged write is lost, duplicated or reordered, and no offset is
read with two values. Nodes live in network namespaces; the cut is a
pair of prohibit routes."""
import history
from rnnet import NetCluster
from rntest import Tap, TempDir

t = Tap()
PARTS = 3
PROPS = {"min.insync.replicas": "2", "replica.lag.time.max.ms": "4000",
         "broker.session.timeout.ms": "6000",
         "unclean.leader.election.enable": "false"}

with TempDir() as tmp, NetCluster(tmp, 3, props=PROPS) as cl:
    cl.start()
    t.ok(cl.wait_running(), "three nodes in three namespaces are up")
    history.create_topics(t, cl, ("hist", "acks1"), PARTS)
    zombie = history.leader_of(cl.bootstrap, "hist", 0)
    if not t.ok(zombie > 0, "partition 0 is led by node %d" % zombie):
        t.done()

    res = history.run(t, cl, "hist", PARTS,
                      inject=lambda: cl.isolate(zombie), heal=cl.heal,
                      hold=15.0)
    t.ok(res["acknowledged"] > 1000, "writers were acknowledged (%d)"
         % res["acknowledged"])
    t.ok(res["acked_during_fault"] > 0,
         "writes went on being acknowledged while node %d was cut off (%d)"
         % (zombie, res["acked_during_fault"]))
    t.eq(len(res["lost"]), 0, "no acknowledged write lost")
    t.eq(len(res["duplicated"]), 0, "no value at two offsets")
    t.eq(len(res["inconsistent"]), 0, "no offset read with two values")
    t.eq(len(res["misplaced"]), 0, "every acknowledged value at the offset "
         "it was acknowledged with")
    t.eq(len(res["reordered"]), 0, "each writer's values in send order")
    t.eq(len(res["unexpected"]), 0, "nothing read that was not sent")
    t.ok(res["heal_to_full_replication_s"] < 60, "fully replicated %.1f s "
         "after healing" % res["heal_to_full_replication_s"])
    new = history.leader_of(cl.bootstrap, "hist", 0)
    t.ok(new > 0, "partition 0 has a leader after healing (node %d)" % new)

    # The documented trade-off: acks=1 writes the zombie took alone are
    # gone once the new leader's log wins. The checker must see them.
    zombie = history.leader_of(cl.bootstrap, "acks1", 0)
    res = history.run(t, cl, "acks1", PARTS,
                      inject=lambda: cl.isolate(zombie), heal=cl.heal,
                      hold=15.0, idempotent=False, acks="1")
    t.ok(len(res["lost"]) > 0, "acks=1: the checker reports the writes only "
         "the zombie leader (node %d) took as lost (%d)"
         % (zombie, len(res["lost"])))
    t.eq(len(res["inconsistent"]) + len(res["unexpected"]), 0,
         "acks=1: still no offset read with two values, nothing unexpected")
    t.eq(cl.crashes(), [], "no worker crashed")

t.done()
