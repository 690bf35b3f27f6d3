"""Compaction on three nodes: every replica of a compacted RF=3 topic, the
leader's and the followers', is cleaned by its own node's log cleaner while
the followers keep fetching; after the leader's node is SIGKILLed, the new
leader (a follower that compacted on its own) serves exactly the latest
value of each key at its original offset."""
import os
import time

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition

from rncluster import create_topic, wait_state
from rntest import Cluster, Tap, TempDir, wait_for

TOPIC = "ccompact"
KEYS = 500
UPDATES = 30000
PROPS = {"broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "300",
         "replica.lag.time.max.ms": "5000", "log.cleaner.backoff.ms": "200",
         # the readers' group coordinator outlives the killed node
         "offsets.topic.replication.factor": "3"}

t = Tap()


def read_check(bootstrap, expect):
    """None when a read from offset 0 to the end finds each key of expect
    once, with its latest value at its original offset; else what is
    wrong. The end is the partition's EOF event: librdkafka 2.0.2's
    watermark query was seen to wait past its own timeout, until the
    test was killed, while the partition's leader had just moved."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused",
                  "enable.auto.commit": False, "enable.partition.eof": True})
    try:
        c.assign([TopicPartition(TOPIC, 0, 0)])
        seen, deadline = {}, time.time() + 20
        while time.time() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    break
                continue
            k = m.key().decode()
            if k in seen and k != "marker":
                return "key %s twice" % k
            seen[k] = (m.offset(), m.value())
        else:
            return "no end of the partition within 20 s"
        for k, want in expect.items():
            if seen.get(k) != want:
                return "key %s: want %r, read %r" % (k, want, seen.get(k))
        return None
    except Exception as e:
        return "read failed: %s" % e
    finally:
        c.close()


def log_bytes(node):
    d = os.path.join(node.logdir, TOPIC + "-0")
    try:
        return sum(os.path.getsize(os.path.join(d, f)) for f in os.listdir(d)
                   if f.endswith(".log"))
    except OSError:
        return -1


with TempDir() as tmp:
    c = Cluster(tmp, 3, props=PROPS)
    c.start()
    try:
        t.ok(c.wait_running(), "three nodes are up, each with its log cleaner")
        create_topic(c.bootstrap, TOPIC, 1, 3, {
            "cleanup.policy": "compact", "segment.bytes": "65536", "segment.ms": "2000",
            "min.cleanable.dirty.ratio": "0.01", "min.insync.replicas": "2"})
        st = wait_state(c.bootstrap, TOPIC, lambda l, r, i: l > 0 and len(i) == 3)
        t.ok(st is not None, "RF=3 compacted topic with a full ISR")
        leader = st[0] if st else 1

        p = Producer({"bootstrap.servers": c.bootstrap, "acks": "all", "linger.ms": 5,
                      "batch.size": 32768, "compression.type": "zstd"})
        expect, errors = {}, []

        def dr(err, msg):
            if err is not None:
                errors.append(err)
                return
            k = msg.key().decode()
            if k not in expect or expect[k][0] < msg.offset():
                expect[k] = (msg.offset(), msg.value())
        for i in range(UPDATES):
            while True:
                try:
                    p.produce(TOPIC, key=b"k%03d" % (i % KEYS), value=b"v%d" % i, on_delivery=dr)
                    break
                except BufferError:
                    p.poll(0.05)
        p.flush(60)
        t.eq(errors, [], "%d updates acknowledged with acks=all" % UPDATES)
        raw = max(log_bytes(n) for n in c.nodes)
        time.sleep(2.5)
        p.produce(TOPIC, key=b"marker", value=b"roll", on_delivery=dr)
        p.flush(30)

        small = wait_for(lambda: all(0 <= log_bytes(n) < raw / 4 for n in c.nodes), 40, 0.5)
        t.ok(small, "every replica was compacted by its own node: %s bytes (from %d)"
             % ([log_bytes(n) for n in c.nodes], raw))
        why = [None]

        def right(bootstrap):
            why[0] = read_check(bootstrap, expect)
            return why[0] is None
        t.ok(wait_for(lambda: right(c.bootstrap), 30, 1.0),
             "the leader serves each key once, latest value, original offset (%s)" % why[0])

        c.node(leader).kill()
        st2 = wait_state(c.nodes[leader % 3].bootstrap, TOPIC,
                         lambda l, r, i: l > 0 and l != leader, timeout=30)
        t.ok(st2 is not None, "a follower takes over after the leader's node is killed")
        alive = ",".join(n.bootstrap for n in c.nodes if n.node_id != leader)
        t.ok(wait_for(lambda: right(alive), 30, 1.0),
             "the new leader, compacted on its own, serves the same (%s)" % why[0])
        t.eq(c.crashes(), [], "no worker crashed")
    finally:
        for n in c.nodes:
            n.stop()
t.done()
