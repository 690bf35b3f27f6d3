"""A partition leader's whole node paused (SIGSTOP of the supervisor and
every worker) for longer than the broker session timeout, then resumed:
it learns it was fenced, follows the new leader, truncates what it must,
and no acknowledged write is lost, duplicated or reordered on either
side. Then the same for the active controller's node. A consumer group
member reads beside the checker's own reader each time and must read
every acknowledged record, never two values at one offset.""" 
import history
from confluent_kafka.admin import AdminClient
from rnnet import NetCluster
from rntest import Tap, TempDir, wait_for

t = Tap()
PARTS = 3
PROPS = {"min.insync.replicas": "2", "replica.lag.time.max.ms": "4000",
         "broker.session.timeout.ms": "6000",
         "unclean.leader.election.enable": "false",
         # the group's offsets replicated like the data (the harness
         # default is 1, which min.insync.replicas=2 would refuse)
         "offsets.topic.replication.factor": "3"}


def active_controller(cl):
    try:
        md = AdminClient({"bootstrap.servers": cl.bootstrap}).list_topics(
            timeout=3)
        return md.controller_id
    except Exception:
        return -1


with TempDir() as tmp, NetCluster(tmp, 3, props=PROPS) as cl:
    cl.start()
    t.ok(cl.wait_running(), "three nodes in three namespaces are up")
    # one topic per scenario, so each history starts empty
    history.create_topics(t, cl, ("leader", "controller"), PARTS)

    leader = history.leader_of(cl.bootstrap, "leader", 0)
    if not t.ok(leader > 0, "partition 0 is led by node %d" % leader):
        t.done()
    res = history.run(t, cl, "leader", PARTS,
                      inject=lambda: cl.pause(leader),
                      heal=lambda: cl.resume(leader), hold=12.0,
                      group=True)
    history.judge(t, res, "leader paused 12 s")

    ctl = wait_for(lambda: active_controller(cl) if active_controller(cl) > 0
                   else None, 20)
    if not t.ok(ctl, "node %s is the active controller" % ctl):
        t.done()
    res = history.run(t, cl, "controller", PARTS,
                      inject=lambda: cl.pause(ctl),
                      heal=lambda: cl.resume(ctl), hold=12.0, group=True)
    history.judge(t, res, "active controller paused 12 s")
    t.ok(wait_for(lambda: active_controller(cl) > 0, 30),
         "a controller is active after the pause")
    t.eq(cl.crashes(), [], "no worker crashed")

t.done()
