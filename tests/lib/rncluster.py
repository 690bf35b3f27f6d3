"""Helpers for cluster tests: who leads a partition, waiting for ISR changes."""
import subprocess
import time

from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic

from rntest import RUNNELCTL, wait_for


def admin(cluster_or_bootstrap):
    b = getattr(cluster_or_bootstrap, "bootstrap", cluster_or_bootstrap)
    return AdminClient({"bootstrap.servers": b})


def create_topic(bootstrap, name, partitions, rf, config=None, timeout=30):
    a = admin(bootstrap)
    a.create_topics([NewTopic(name, partitions, rf, config=config or {})])[name].result(timeout)


def java_hash(s):
    """Java's String.hashCode: over UTF-16 code units, 32-bit wrap-around."""
    b = s.encode("utf-16-be")
    h = 0
    for i in range(0, len(b), 2):
        h = (31 * h + int.from_bytes(b[i:i + 2], "big")) & 0xffffffff
    return h - (1 << 32) if h >= 1 << 31 else h


def offsets_partition(group, nparts):
    """The __consumer_offsets partition of a group: Kafka's
    Utils.abs(group.hashCode()) % offsets.topic.num.partitions."""
    h = java_hash(group)
    return (0 if h == -(1 << 31) else abs(h)) % nparts


def partition_state(bootstrap, topic, p=0):
    """(leader, replicas, isr) as Metadata reports it, or None."""
    try:
        md = admin(bootstrap).list_topics(topic, timeout=5)
    except Exception:
        return None
    t = md.topics.get(topic)
    if t is None or t.error is not None or p not in t.partitions:
        return None
    pm = t.partitions[p]
    return pm.leader, list(pm.replicas), sorted(pm.isrs)


def wait_state(bootstrap, topic, pred, timeout=30, p=0):
    return wait_for(lambda: (lambda s: s if s and pred(*s) else None)(
        partition_state(bootstrap, topic, p)), timeout, 0.1)


def set_topic_config(bootstrap, topic, key, value, timeout=30):
    r = ConfigResource("topic", topic, set_config={key: value})
    a = admin(bootstrap)  # the client must outlive its futures
    list(a.alter_configs([r]).values())[0].result(timeout)


def fault(node, name, state):
    return subprocess.run([RUNNELCTL, "-s", node.sock, "fault", name, state],
                          capture_output=True, text=True, timeout=10)


def read_all(bootstrap, topic, partition=0, timeout=60):
    """Every record value of one partition, from its start to its end."""
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "x",
                  "enable.auto.commit": False, "enable.partition.eof": True})
    c.assign([TopicPartition(topic, partition, 0)])
    vals, deadline = [], time.time() + timeout
    while time.time() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            if m.error().code() == -191:  # reached the end
                break
            continue
        vals.append(m.value())
    c.close()
    return vals


def read_partitions(bootstrap, topic, parts=1, expect=None, timeout=60,
                    group="x"):
    """Every record value of partitions 0..parts-1, read from their start
    until each is at its end and at least `expect` values were read."""
    from confluent_kafka import Consumer, TopicPartition
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                  "enable.auto.commit": False, "enable.partition.eof": True})
    c.assign([TopicPartition(topic, p, 0) for p in range(parts)])
    vals, eof = [], set()
    deadline = time.time() + timeout
    while time.time() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            if m.error().code() == -191:  # partition EOF
                eof.add(m.partition())
                if len(eof) == parts and (expect is None or
                                          len(vals) >= expect):
                    break
            continue
        eof.discard(m.partition())
        vals.append(m.value())
    c.close()
    return vals
