"""Many partitions on a three-node cluster: shared by the integration test
(tests/integration/test_cluster_scale.py, 400 partitions) and the benchmark
(tests/bench/cluster-scale.py, 3,000 partitions)."""
import os
import re
import subprocess
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from rntest import BUILDDIR


def topic_names(n_topics):
    return ["scale-%02d" % i for i in range(n_topics)]


def create_topics(bootstrap, names, partitions, rf=3, config=None, timeout=120):
    """CreateTopics in batches of 10; the errors, by topic (empty: all made)."""
    a = AdminClient({"bootstrap.servers": bootstrap})
    errors = {}
    for k in range(0, len(names), 10):
        fs = a.create_topics([NewTopic(t, partitions, rf, config=config or {})
                              for t in names[k:k + 10]], request_timeout=timeout)
        for t, f in fs.items():
            try:
                f.result(timeout)
            except Exception as e:  # noqa: BLE001 - reported by the caller
                errors[t] = str(e)
    return errors


def isr_state(bootstrap, names, timeout=10):
    """{(topic, p): (leader, n_replicas, n_isr)} from one Metadata of every
    topic; {} when the Metadata request fails (every partition then counts
    as short)."""
    a = AdminClient({"bootstrap.servers": bootstrap})
    try:
        md = a.list_topics(timeout=timeout)
    except Exception:  # noqa: BLE001 - reported as short partitions
        return {}
    out = {}
    for t in names:
        tm = md.topics.get(t)
        if tm is None or tm.error is not None:
            continue
        for p, pm in tm.partitions.items():
            out[(t, p)] = (pm.leader, len(pm.replicas), len(pm.isrs))
    return out


def not_full(state, names, partitions, rf=3):
    """The partitions without a leader or with fewer than rf replicas in the ISR."""
    bad = []
    for t in names:
        for p in range(partitions):
            s = state.get((t, p))
            if s is None or s[0] < 0 or s[1] != rf or s[2] != rf:
                bad.append((t, p, s))
    return bad


def wait_isr_full(bootstrap, names, partitions, timeout, rf=3):
    """Seconds until every partition's ISR holds all rf replicas, or None;
    with the partitions still short at the end."""
    t0 = time.monotonic()
    bad = None
    while time.monotonic() - t0 < timeout:
        bad = not_full(isr_state(bootstrap, names), names, partitions, rf)
        if not bad:
            return time.monotonic() - t0, []
        time.sleep(0.2)
    return None, bad


def produce_all(bootstrap, names, partitions, per_partition, size=100,
                tag=b"", extra=None):
    """acks=all: per_partition records to every partition. Returns
    (acknowledged, errors, seconds); records carry topic/partition/index."""
    conf = {"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5,
            "message.timeout.ms": 60000, "queue.buffering.max.messages": 1000000,
            "enable.idempotence": False}
    conf.update(extra or {})
    p = Producer(conf)
    acked, errors = [0], []

    def dr(err, msg):
        if err is not None:
            errors.append("%s-%d: %s" % (msg.topic(), msg.partition(), err))
        else:
            acked[0] += 1

    t0 = time.monotonic()
    for i in range(per_partition):
        for t in names:
            for q in range(partitions):
                v = b"%s %s %d %d " % (tag, t.encode(), q, i)
                v += b"x" * max(0, size - len(v))
                while True:
                    try:
                        p.produce(t, v, partition=q, on_delivery=dr)
                        break
                    except BufferError:
                        p.poll(0.05)
        p.poll(0)
    p.flush(120)
    return acked[0], errors, time.monotonic() - t0


def read_all(bootstrap, names, partitions, timeout=120):
    """{(topic, p): record count} read from offset 0 to each partition's end
    with one consumer assigned to all of them."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "scale-check",
                  "enable.auto.commit": False, "enable.partition.eof": True,
                  "fetch.wait.max.ms": 100})
    c.assign([TopicPartition(t, q, 0) for t in names for q in range(partitions)])
    counts = {(t, q): 0 for t in names for q in range(partitions)}
    left = set(counts)
    deadline = time.monotonic() + timeout
    while left and time.monotonic() < deadline:
        for m in c.consume(1000, 0.5):
            key = (m.topic(), m.partition())
            if m.error():
                if m.error().code() == -191:  # _PARTITION_EOF
                    left.discard(key)
                continue
            counts[key] += 1
    c.close()
    return counts, left


# A follower that cannot fetch logs one of these; a leader that refuses a
# replica's fetch logs the request as failed.
FETCH_TROUBLE = re.compile(
    r"Cannot allocate memory|Fetch v\d+ from .* failed|fetch error|"
    r"connection to leader \d+ closed|cannot answer a parked fetch|"
    r"malformed fetch response|cannot append fetched records|"
    r"OffsetForLeaderEpoch v\d+ from .* failed")


def log_trouble(node):
    """(warning/error lines, fetch-trouble lines) of a node's log."""
    warn, fetch = [], []
    for line in node.logtext().splitlines():
        if line.startswith("<4>") or line.startswith("<3>") or \
                line.startswith("<2>"):
            warn.append(line)
        if FETCH_TROUBLE.search(line):
            fetch.append(line)
    return warn, fetch


def isr_shrinks(node):
    """Log lines of a leader asking to take a replica out of an ISR."""
    return [l for l in node.logtext().splitlines()
            if "asking to remove it from the ISR" in l]



def describe_isr_short(bootstrap, timeout=60):
    """runnel-topics --describe of everything: (rc, partitions whose Isr
    lists fewer brokers than Replicas, partition lines seen)."""
    r = subprocess.run([os.path.join(BUILDDIR, "runnel-topics"),
                        "--bootstrap-server", bootstrap, "--describe"],
                       capture_output=True, text=True, timeout=timeout)
    short, seen = [], 0
    for line in r.stdout.splitlines():
        m = re.search(r"Replicas:\s*([\d,]+)\s+Isr:\s*([\d,]*)", line)
        if not m:
            continue
        seen += 1
        if len(m.group(2).split(",")) < len(m.group(1).split(",")) or \
                not m.group(2):
            short.append(line.strip())
    return r.returncode, short, seen
