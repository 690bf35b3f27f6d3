"""Static membership (group.instance.id) with confluent-kafka: a member that is
closed and started again within its session timeout gets its partitions back, and
the other member sees no rebalance (no revocation, no new assignment, the same
generation). A second process claiming a live member's instance id is fenced."""
import os
import subprocess
import time

from confluent_kafka import Consumer, Producer, KafkaException

from rntest import Node, Tap, TempDir, wait_for, BUILDDIR

t = Tap()
SESSION_MS = 15000


class Member:
    def __init__(self, n, inst):
        self.events = []
        self.held = set()
        self.c = Consumer({"bootstrap.servers": n.bootstrap, "group.id": "st",
                           "group.instance.id": inst,
                           "session.timeout.ms": SESSION_MS,
                           "heartbeat.interval.ms": 500,
                           "auto.offset.reset": "earliest"})
        self.c.subscribe(["st"], on_assign=self.assign, on_revoke=self.revoke)

    def assign(self, c, parts):
        self.events.append(("assign", sorted(p.partition for p in parts)))
        self.held = {p.partition for p in parts}

    def revoke(self, c, parts):
        self.events.append(("revoke", sorted(p.partition for p in parts)))
        self.held = set()

    def pump(self, secs):
        end = time.monotonic() + secs
        while time.monotonic() < end:
            self.c.poll(0.1)


def pump_all(ms, secs):
    end = time.monotonic() + secs
    while time.monotonic() < end:
        for m in ms:
            m.c.poll(0.05)


with TempDir() as tmp:
    n = Node(tmp)
    n.start()
    try:
        t.ok(n.wait_running() is not None, "node up")
        subprocess.run([os.path.join(BUILDDIR, "runnel-topics"), "--bootstrap-server",
                        n.bootstrap, "--create", "--topic", "st", "--partitions", "4",
                        "--replication-factor", "1"], check=True, capture_output=True)
        p = Producer({"bootstrap.servers": n.bootstrap})
        for i in range(40):
            p.produce("st", value=b"%d" % i, partition=i % 4)
        p.flush(10)
        a, b = Member(n, "inst-a"), Member(n, "inst-b")
        ms = [a, b]
        end = time.monotonic() + 30
        while time.monotonic() < end and sorted(len(m.held) for m in ms) != [2, 2]:
            pump_all(ms, 0.5)
        pump_all(ms, 2)
        t.eq(sorted(len(m.held) for m in ms), [2, 2], "two static members hold two partitions each")
        a_before, b_events = set(a.held), len(b.events)

        # close a: a static member does not leave the group on close
        a.c.close()
        pump_all([b], 2)
        t0 = time.monotonic()
        a = Member(n, "inst-a")
        end = time.monotonic() + 20
        while time.monotonic() < end and not a.held:
            pump_all([a, b], 0.2)
        pump_all([a, b], 3)
        t.eq(a.held, a_before, "the restarted static member gets its partitions back "
             "(%.1f s)" % (time.monotonic() - t0))
        t.eq(b.events[b_events:], [], "the other member saw no revocation or assignment")
        t.eq(len(b.held), 2, "and still holds its partitions")

        # a second process with a's instance id takes its place; a is fenced
        a2 = Member(n, "inst-a")
        end = time.monotonic() + 20
        fenced = False
        while time.monotonic() < end and not fenced:
            for m in (a2, b):
                m.c.poll(0.05)
            try:
                e = a.c.poll(0.05)
                if e is not None and e.error() is not None and "fenced" in str(e.error()).lower():
                    fenced = True
            except KafkaException as ex:
                fenced = "fenced" in str(ex).lower() or "FENCED" in str(ex)
        t.ok(fenced, "the member whose instance id was taken over is fenced (FENCED_INSTANCE_ID)")
        for m in (a2, b):
            m.c.close()
        t.eq(n.crashes(), [], "no worker crashed")
    finally:
        n.stop()
t.done()
