"""A partition leader's whole node paused (SIGSTOP of the supervisor and
every worker) for longer than the broker session timeout, then resumed:
it learns it was fenced, follows the new leader, truncates what it must,
and no acknowledged write is lost, duplicated or reordered on either
side. Then the same for the active controller's node."""
import history
from confluent_kafka.admin import AdminClient, NewTopic
from rnnet import NetCluster
from rntest import Tap, TempDir, wait_for

t = Tap()
PARTS = 3
PROPS = {"min.insync.replicas": "2", "replica.lag.time.max.ms": "4000",
         "broker.session.timeout.ms": "6000",
         "unclean.leader.election.enable": "false"}


def active_controller(cl):
    try:
        md = AdminClient({"bootstrap.servers": cl.bootstrap}).list_topics(
            timeout=3)
        return md.controller_id
    except Exception:
        return -1


def judge(res, what):
    t.ok(res["acknowledged"] > 1000, "%s: writers were acknowledged (%d)"
         % (what, res["acknowledged"]))
    t.ok(res["acked_during_fault"] > 0, "%s: writes went on being "
         "acknowledged during the pause (%d)"
         % (what, res["acked_during_fault"]))
    for k, name in (("lost", "no acknowledged write lost"),
                    ("duplicated", "no value at two offsets"),
                    ("inconsistent", "no offset read with two values"),
                    ("misplaced", "every value at its acknowledged offset"),
                    ("reordered", "each writer's values in send order"),
                    ("unexpected", "nothing read that was not sent")):
        t.eq(len(res[k]), 0, "%s: %s" % (what, name))


with TempDir() as tmp, NetCluster(tmp, 3, props=PROPS) as cl:
    cl.start()
    t.ok(cl.wait_running(), "three nodes in three namespaces are up")
    admin = AdminClient({"bootstrap.servers": cl.bootstrap})
    # one topic per scenario, so each history starts empty
    for name in ("leader", "controller"):
        admin.create_topics([NewTopic(name, PARTS, 3)])[name].result(30)
        t.ok(wait_for(lambda: history.fully_replicated(
            cl.bootstrap, name, PARTS, 3), 30),
            "topic %s: 3 partitions, RF 3, fully replicated" % name)

    leader = history.leader_of(cl.bootstrap, "leader", 0)
    if not t.ok(leader > 0, "partition 0 is led by node %d" % leader):
        t.done()
    res = history.run(t, cl, "leader", PARTS,
                      inject=lambda: cl.pause(leader),
                      heal=lambda: cl.resume(leader), hold=12.0)
    judge(res, "leader paused 12 s")

    ctl = wait_for(lambda: active_controller(cl) if active_controller(cl) > 0
                   else None, 20)
    if not t.ok(ctl, "node %s is the active controller" % ctl):
        t.done()
    res = history.run(t, cl, "controller", PARTS,
                      inject=lambda: cl.pause(ctl),
                      heal=lambda: cl.resume(ctl), hold=12.0)
    judge(res, "active controller paused 12 s")
    t.ok(wait_for(lambda: active_controller(cl) > 0, 30),
         "a controller is active after the pause")
    t.eq(cl.crashes(), [], "no worker crashed")

t.done()
