"""Network partitions other than a lone zombie: a bridge (node A sees B
and C, B and C do not see each other), a majority/minority split of the
controller quorum with clients on both sides, and partitions that flap
every few seconds. acks=all, min.insync.replicas=2, idempotence, clean
elections: nothing acknowledged is lost, duplicated or reordered."""
import random
import threading

import history
from confluent_kafka.admin import AdminClient
from rnnet import NetCluster
from rntest import Tap, TempDir, wait_for

t = Tap()
PARTS = 3
PROPS = {"min.insync.replicas": "2", "replica.lag.time.max.ms": "4000",
         "broker.session.timeout.ms": "6000",
         "unclean.leader.election.enable": "false"}


class Flapper(threading.Thread):
    """Cuts a random pair of nodes, heals, again, every 2-4 s."""

    def __init__(self, cl):
        super().__init__(daemon=True)
        self.cl, self.stop_flag = cl, threading.Event()
        self.rng = random.Random(1234)
        self.flaps = 0

    def run(self):
        while not self.stop_flag.is_set():
            a, b = self.rng.sample([1, 2, 3], 2)
            self.cl.cut(a, b)
            self.flaps += 1
            self.stop_flag.wait(self.rng.uniform(2, 4))
            self.cl.heal()
            self.stop_flag.wait(self.rng.uniform(1, 2))

    def stop(self):
        self.stop_flag.set()
        self.join()
        self.cl.heal()


with TempDir() as tmp, NetCluster(tmp, 3, props=PROPS) as cl:
    cl.start()
    t.ok(cl.wait_running(), "three nodes in three namespaces are up")
    history.create_topics(t, cl, ("bridge", "split", "flap"), PARTS)

    # the leader of partition 0 keeps one peer; the other two lose each other
    a = history.leader_of(cl.bootstrap, "bridge", 0)
    b, c = [i for i in (1, 2, 3) if i != a]
    res = history.run(t, cl, "bridge", PARTS, inject=lambda: cl.cut(b, c),
                      heal=cl.heal, hold=12.0)
    history.judge(t, res, "bridge through node %d" % a)

    # the active controller alone on one side, the other two on the other
    ctl = AdminClient({"bootstrap.servers": cl.bootstrap}).list_topics(
        timeout=5).controller_id
    res = history.run(t, cl, "split", PARTS, inject=lambda: cl.isolate(ctl),
                      heal=cl.heal, hold=12.0)
    history.judge(t, res, "controller %d in the minority" % ctl)
    t.ok(wait_for(lambda: AdminClient({"bootstrap.servers": cl.bootstrap})
                  .list_topics(timeout=3).controller_id > 0, 30),
         "a controller is active after the split heals")

    flapper = Flapper(cl)
    res = history.run(t, cl, "flap", PARTS, inject=flapper.start,
                      heal=flapper.stop, hold=20.0)
    t.diag("%d cuts while flapping" % flapper.flaps)
    history.judge(t, res, "flapping partitions")
    t.eq(cl.crashes(), [], "no worker crashed")

t.done()
