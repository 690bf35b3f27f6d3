"""Asymmetric (one-way) network partitions. acks=all,
min.insync.replicas=2, RF=3, idempotent producers, clean elections:
nothing acknowledged is lost, duplicated or read with two values.

  1. the partition leader can send to the other nodes but hears nothing
     from them (followers' fetches and the controllers' answers vanish);
     the cut is a silent DROP (a blackhole rule in the leader's
     namespace: no refusal, no ICMP), so every connection towards the
     leader has to time out in TCP;
  2. the opposite: the leader hears the others but its own packets to
     them are refused (one-way prohibit routes in its namespace);
  3. one follower can no longer send to the leader (silent), the leader
     still reaches it: the follower leaves the ISR, writes go on.

Clients on the bridge reach every node throughout. Each run prints the
checker's figures and the time from heal to full replication."""
import history
from rnnet import NetCluster
from rntest import Tap, TempDir

t = Tap()
PARTS = 3
PROPS = {"min.insync.replicas": "2", "replica.lag.time.max.ms": "4000",
         "broker.session.timeout.ms": "6000",
         "unclean.leader.election.enable": "false"}
HOLD = 10.0


def others(x):
    return [i for i in (1, 2, 3) if i != x]


with TempDir() as tmp, NetCluster(tmp, 3, props=PROPS) as cl:
    cl.start()
    t.ok(cl.wait_running(), "three nodes in three namespaces are up")
    history.create_topics(t, cl, ("deaf", "mute", "oneway"), PARTS)

    # 1. the leader sends, hears nothing: silent drop of all it receives
    # from the other nodes
    a = history.leader_of(cl.bootstrap, "deaf", 0)

    def deafen():
        for o in others(a):
            cl.drop(o, a)
    res = history.run(t, cl, "deaf", PARTS, inject=deafen, heal=cl.heal,
                      hold=HOLD)
    history.judge(t, res, "leader %d can send, cannot hear (silent drop)" % a)
    t.ok(res["heal_to_full_replication_s"] < 60, "deaf leader: fully "
         "replicated %.1f s after healing" % res["heal_to_full_replication_s"])

    # 2. the leader hears, cannot send: refused one way
    a = history.leader_of(cl.bootstrap, "mute", 0)

    def mute():
        for o in others(a):
            cl.oneway(a, o)
    res = history.run(t, cl, "mute", PARTS, inject=mute, heal=cl.heal,
                      hold=HOLD)
    history.judge(t, res, "leader %d can hear, cannot send (prohibit)" % a)
    t.ok(res["heal_to_full_replication_s"] < 60, "mute leader: fully "
         "replicated %.1f s after healing" % res["heal_to_full_replication_s"])

    # 3. one follower's packets to the leader dropped, the leader's to it
    # delivered
    a = history.leader_of(cl.bootstrap, "oneway", 0)
    f = others(a)[0]
    res = history.run(t, cl, "oneway", PARTS, inject=lambda: cl.drop(f, a),
                      heal=cl.heal, hold=HOLD)
    history.judge(t, res, "follower %d cannot reach leader %d (silent drop)"
                  % (f, a))
    t.ok(res["heal_to_full_replication_s"] < 60, "one-way follower: fully "
         "replicated %.1f s after healing" % res["heal_to_full_replication_s"])
    t.eq(cl.crashes(), [], "no worker crashed")

t.done()
