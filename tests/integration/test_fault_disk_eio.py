"""A failing disk (tests/faults/diskfail.c: files under a node's log dir
fail with EIO while a switch file says so), judged by the history
checker: three nodes, RF=3, min.insync.replicas=2, idempotent acks=all
writers. Writes failing on the leader of a partition take its only log
dir offline, so the node stops as Kafka's broker does when every log dir
failed, naming the dir; its leaderships move, nothing acknowledged is
lost, and with the disk good again and the node restarted it rejoins every
ISR. Then the same with reads failing on a leader (a fetch reads the
batch headers)."""
import os

import history
from rntest import BUILDDIR, Cluster, Tap, TempDir, wait_for

t = Tap()
PARTS = 3
SHIM = os.path.join(BUILDDIR, "tests", "faults", "libdiskfail.so")
PROPS = {"min.insync.replicas": "2", "replica.lag.time.max.ms": "4000",
         "broker.session.timeout.ms": "6000",
         "unclean.leader.election.enable": "false"}


def shim_env(node, switch):
    return {"LD_PRELOAD": SHIM, "DISKFAIL_ROOT": os.path.realpath(node.logdir),
            "DISKFAIL_SWITCH": switch}


def scenario(cl, switches, topic, what):
    victim = cl.node(history.leader_of(cl.bootstrap, topic, 0))
    switch = switches[victim.node_id]
    state = {}

    def bad_disk():
        with open(switch, "w") as f:
            f.write(what + "\n")
        state["stopped"] = wait_for(lambda: victim.proc.poll() is not None, 60)

    def good_disk():
        os.unlink(switch)
        victim.start(env=shim_env(victim, switch))

    res = history.run(t, cl, topic, PARTS, inject=bad_disk, heal=good_disk,
                      hold=3.0)
    log = victim.logtext()
    t.ok(state.get("stopped"), "%s failing on node %d (leader of %s-0): the "
         "node stopped" % (what, victim.node_id, topic))
    t.ok("Input/output error" in log and
         "every log dir is offline" in log,
         "its log names the I/O error and that every log dir is offline")
    history.judge(t, res, "%s failing on the leader" % what)
    t.ok(wait_for(lambda: history.fully_replicated(cl.bootstrap, topic,
                                                   PARTS, 3), 60),
         "with the disk good again node %d is back in every ISR of %s"
         % (victim.node_id, topic))


with TempDir() as tmp:
    cl = Cluster(tmp, 3, props=PROPS)
    switches = {n.node_id: os.path.join(tmp, "disk%d" % n.node_id)
                for n in cl.nodes}
    for n in cl.nodes:
        os.makedirs(n.logdir, exist_ok=True)
        n.start(env=shim_env(n, switches[n.node_id]))
    t.ok(cl.wait_running(), "three nodes up under the failing-disk shim")
    history.create_topics(t, cl, ("eiowrite", "eioread"), PARTS)
    scenario(cl, switches, "eiowrite", "write")
    scenario(cl, switches, "eioread", "read")
    t.eq(cl.crashes(), [], "no worker crashed")
    cl.kill()

t.done()
