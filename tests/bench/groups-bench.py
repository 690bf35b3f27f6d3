"""Consumer group figures on one local runneld (prints, never fails):
the time for a group of 9 Stable members to be Stable again with 10 after
one more joins, and synchronous OffsetCommit round trips per second from
one client, on one node and on a three-node cluster (RF=3 offsets)."""
import os
import sys
import time

from confluent_kafka import Consumer, Producer, TopicPartition

from rntest import Cluster, Node, TempDir, wait_for

MEMBERS = 10
COMMIT_SECS = 5


def members_to_stable(bootstrap):
    p = Producer({"bootstrap.servers": bootstrap})
    for q in range(MEMBERS * 2):
        p.produce("bench-g", b"x", partition=q % 20)
    p.flush(10)
    held = {}
    cs = []

    def member(i):
        def on_assign(c, parts):
            held[i] = len(parts)

        def on_revoke(c, parts):
            held[i] = 0
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench",
                      "session.timeout.ms": 10000, "heartbeat.interval.ms": 300})
        c.subscribe(["bench-g"], on_assign=on_assign, on_revoke=on_revoke)
        return c

    def pump(until):
        end = time.monotonic() + 30
        while time.monotonic() < end and not until():
            for c in cs:
                c.poll(0.01)

    for i in range(MEMBERS - 1):
        cs.append(member(i))
    pump(lambda: len(held) == MEMBERS - 1 and all(v > 0 for v in held.values()))
    t0 = time.monotonic()
    cs.append(member(MEMBERS - 1))
    pump(lambda: len(held) == MEMBERS and all(v > 0 for v in held.values())
         and sum(held.values()) == 20)
    took = time.monotonic() - t0
    for c in cs:
        c.close()
    return took


def commits_per_s(bootstrap):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-commit"})
    c.assign([TopicPartition("bench-g", 0)])
    n, off = 0, 0
    end = time.monotonic() + COMMIT_SECS
    while time.monotonic() < end:
        off += 1
        c.commit(offsets=[TopicPartition("bench-g", 0, off)], asynchronous=False)
        n += 1
    c.close()
    return n / COMMIT_SECS


def topic(bootstrap, rf):
    from rncluster import create_topic
    create_topic(bootstrap, "bench-g", 20, rf)


with TempDir() as tmp:
    n = Node(tmp, props={"num.network.threads": "2"})
    n.start()
    try:
        n.wait_running()
        topic(n.bootstrap, 1)
        print("one node: %d members Stable %.2f s after the %dth joined"
              % (MEMBERS, members_to_stable(n.bootstrap), MEMBERS))
        print("one node: %.0f OffsetCommit round trips/s (synchronous, one client)"
              % commits_per_s(n.bootstrap))
    finally:
        n.stop()
    c = Cluster(os.path.join(tmp, "c"), 3, props={
        "offsets.topic.replication.factor": "3", "offsets.topic.num.partitions": "6",
        "broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "300"})
    c.start()
    try:
        c.wait_running()
        topic(c.bootstrap, 3)
        print("three nodes: %d members Stable %.2f s after the %dth joined"
              % (MEMBERS, members_to_stable(c.bootstrap), MEMBERS))
        print("three nodes: %.0f OffsetCommit round trips/s (RF=3, acks=all)"
              % commits_per_s(c.bootstrap))
    finally:
        for x in c.nodes:
            x.stop()
sys.exit(0)
