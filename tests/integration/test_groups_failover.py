"""Group coordinator failover on three nodes (__consumer_offsets with RF=3): a busy
group commits every few records while the whole node coordinating it is SIGKILLed;
a new coordinator answers within a few seconds and every commit acknowledged before
the kill is there. Then only the group-coordinator worker of the new coordinating
node is SIGKILLed: the supervisor restarts it, it reloads the group from the log,
and again no acknowledged offset is lost."""
import os
import signal
import time

from confluent_kafka import Consumer, Producer, TopicPartition, KafkaException

from rncluster import create_topic, partition_state, wait_state
from rntest import Cluster, Tap, TempDir, wait_for

t = Tap()
OFFSETS_PARTS = 6
PROPS = {"broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "300",
         "replica.lag.time.max.ms": "3000", "num.network.threads": "2",
         "offsets.topic.replication.factor": "3",
         "offsets.topic.num.partitions": str(OFFSETS_PARTS)}
GROUP = "busy"


def java_hash(s):
    """Java's String.hashCode: over UTF-16 code units, 32-bit wrap-around."""
    b = s.encode("utf-16-be")
    h = 0
    for i in range(0, len(b), 2):
        h = (31 * h + int.from_bytes(b[i:i + 2], "big")) & 0xffffffff
    return h - (1 << 32) if h >= 1 << 31 else h


def coordinator(c):
    """The node leading the group's __consumer_offsets partition."""
    h = java_hash(GROUP)
    p = (0 if h == -(1 << 31) else abs(h)) % OFFSETS_PARTS
    st = partition_state(c.bootstrap, "__consumer_offsets", p)
    return (st[0] if st else None), p


class Committer:
    """A subscribed member committing synchronously all the time."""

    def __init__(self, c):
        self.c = Consumer({"bootstrap.servers": c.bootstrap, "group.id": GROUP,
                           "auto.offset.reset": "earliest", "enable.auto.commit": False,
                           "session.timeout.ms": 10000, "heartbeat.interval.ms": 500,
                           "reconnect.backoff.ms": 50})
        self.c.subscribe(["busy"])
        self.acked = {}
        self.ok_times = []
        self.n = 0
        self.last = 0.0

    def step(self):
        """Read a little; commit every 10 records, and at least every 100 ms
        (explicit offsets: a real round trip even when nothing new came)."""
        m = self.c.poll(0.05)
        if m is not None and m.error() is None:
            self.n += 1
        now = time.monotonic()
        if self.n % 10 and now - self.last < 0.1:
            return
        self.last = now
        try:
            pos = [tp for tp in self.c.position(self.c.assignment()) if tp.offset >= 0]
            if not pos:
                return
            res = self.c.commit(offsets=pos, asynchronous=False)
        except KafkaException:
            return
        for tp in res or []:
            if tp.error is None and tp.offset >= 0:
                self.acked[tp.partition] = max(self.acked.get(tp.partition, -1), tp.offset)
        self.ok_times.append(time.monotonic())

    def run(self, secs):
        end = time.monotonic() + secs
        while time.monotonic() < end:
            self.step()


def committed(c):
    x = Consumer({"bootstrap.servers": c.bootstrap, "group.id": GROUP})
    try:
        r = x.committed([TopicPartition("busy", q) for q in range(3)], timeout=15)
        return {tp.partition: tp.offset for tp in r}
    finally:
        x.close()


def first_commit_after(m, since, limit):
    end = time.monotonic() + limit
    while time.monotonic() < end:
        m.step()
        if m.ok_times and m.ok_times[-1] > since:
            return m.ok_times[-1] - since
    return None


with TempDir() as tmp:
    c = Cluster(tmp, 3, props=PROPS)
    c.start()
    try:
        t.ok(c.wait_running(), "three combined nodes are up")
        create_topic(c.bootstrap, "busy", 3, 3)
        p = Producer({"bootstrap.servers": c.bootstrap, "acks": "all"})
        for i in range(30000):
            p.produce("busy", b"r%d" % i, partition=i % 3)
            if i % 1000 == 0:
                p.poll(0)
        t.eq(p.flush(60), 0, "30,000 records produced")
        m = Committer(c)
        m.run(8)
        t.ok(len(m.ok_times) > 5, "the group commits (%d commits)" % len(m.ok_times))
        lead, part = coordinator(c)
        st = wait_state(c.bootstrap, "__consumer_offsets",
                        lambda l, r, i: len(i) == 3, p=part)
        t.ok(st is not None and len(st[1]) == 3,
             "__consumer_offsets-%d has three replicas in sync: %s" % (part, st))
        t.ok(lead is not None, "node %s coordinates the group" % lead)

        # 1. the coordinating node dies whole
        before = dict(m.acked)
        victim = c.node(lead)
        killed = time.monotonic()
        victim.kill()
        took = first_commit_after(m, killed, 40)
        t.ok(took is not None and took < 15,
             "a commit succeeds %.1f s after the coordinator's node was killed"
             % (took if took is not None else -1))
        new_lead, _ = coordinator(c)
        t.ok(new_lead not in (None, lead), "node %s coordinates the group now" % new_lead)
        got = committed(c)
        t.ok(all(got.get(q, -1) >= v for q, v in before.items()),
             "every offset acknowledged before the kill is there: %s >= %s" % (got, before))

        # 2. only the new coordinator's group-coordinator worker dies
        m.run(3)
        before = dict(m.acked)
        node = c.node(new_lead)
        w = node.workers().get("group-coordinator", {})
        pid = w.get("pid")
        os.kill(pid, signal.SIGKILL)
        killed = time.monotonic()
        took = first_commit_after(m, killed, 40)
        t.ok(took is not None and took < 10,
             "a commit succeeds %.1f s after the group-coordinator worker was killed"
             % (took if took is not None else -1))
        w2 = node.workers().get("group-coordinator", {})
        t.ok(w2.get("pid") not in (None, pid) and w2.get("restarts") == 1,
             "the supervisor restarted the worker (pid %s -> %s)" % (pid, w2.get("pid")))
        got = committed(c)
        t.ok(all(got.get(q, -1) >= v for q, v in before.items()),
             "every offset acknowledged before the worker kill is there: %s >= %s"
             % (got, before))
        m.run(2)
        m.c.close()
        t.eq(c.crashes(), [], "no worker crashed")
    finally:
        for n in c.nodes:
            n.stop()
t.done()
