"""Partition reassignment (issue 11) on four nodes, with real clients:
- a partition on brokers 1,2,3 moved to 2,3,4 while a confluent-kafka producer writes
  with acks=all: it ends on 2,3,4 with every acknowledged record, a consumer reading
  throughout never sees an offset go backwards, --verify reports completion and
  broker 1's directory for the partition is removed;
- errors as Kafka's: duplicate or unknown brokers, cancelling nothing;
- a cancelled reassignment (the new replica kept from catching up) leaves the
  original replicas, and the would-be new replica's directory goes;
- a throttled reassignment (--throttle) moves a few MB no faster than the rate, and
  --verify removes the throttle configs once it is complete; the leader's side alone
  (a dynamic rate on the current replicas' brokers, "*" on the topic) holds as well;
- --generate proposes replicas on the brokers given."""
import json
import os
import subprocess
import threading
import time

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import ConfigResource, NewTopic

from rncluster import admin, fault, partition_state, read_all, wait_state
from rntest import BUILDDIR, SANITIZED, Cluster, Tap, TempDir, wait_for

TOOL = os.path.join(BUILDDIR, "runnel-reassign-partitions")
SLOW = 3 if SANITIZED else 1
PROPS = {"broker.session.timeout.ms": "6000", "broker.heartbeat.interval.ms": "500",
         "replica.lag.time.max.ms": "5000", "offsets.topic.replication.factor": "3"}

t = Tap()


def tool(c, *args):
    r = subprocess.run([TOOL, "--bootstrap-server", c.node(2).bootstrap] + list(args),
                       capture_output=True, text=True, timeout=120)
    return r.returncode, r.stdout + r.stderr


def plan_file(tmp, name, parts):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        json.dump({"version": 1, "partitions": [
            {"topic": tp, "partition": p, "replicas": r, "log_dirs": ["any"] * len(r)}
            for tp, p, r in parts]}, f)
    return path


def create(c, name, replicas, config=None):
    a = admin(c)
    a.create_topics([NewTopic(name, 1, replica_assignment=[replicas],
                              config=config or {})])[name].result(30)
    return wait_state(c.bootstrap, name, lambda l, r, i: l > 0 and len(i) == len(replicas),
                      30 * SLOW)


def verify_done(c, path, timeout):
    def done():
        rc, out = tool(c, "--verify", "--reassignment-json-file", path)
        return out if rc == 0 and "in progress" not in out and "is completed" in out \
            else None
    return wait_for(done, timeout, 0.5)


def part_dir(node, topic, p=0):
    return os.path.join(node.logdir, "%s-%d" % (topic, p))


class Writer(threading.Thread):
    """acks=all, idempotent: every acknowledged value is remembered."""

    def __init__(self, bootstrap, topic):
        super().__init__(daemon=True)
        self.p = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                           "enable.idempotence": True, "linger.ms": 5,
                           "message.timeout.ms": 60000})
        self.topic, self.acked, self.failed = topic, [], []
        self.stop = threading.Event()

    def cb(self, err, msg):
        (self.failed if err else self.acked).append(msg.value())

    def run(self):
        i = 0
        while not self.stop.is_set():
            try:
                self.p.produce(self.topic, b"v%07d" % i, callback=self.cb)
                i += 1
            except BufferError:
                pass
            self.p.poll(0.002)
        self.p.flush(60)


class Reader(threading.Thread):
    """Reads throughout; notes any offset that is not past the previous one."""

    def __init__(self, bootstrap, topic):
        super().__init__(daemon=True)
        self.c = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader",
                           "enable.auto.commit": False})
        self.c.assign([TopicPartition(topic, 0, 0)])
        self.last, self.backwards, self.count = -1, [], 0
        self.stop = threading.Event()

    def run(self):
        while not self.stop.is_set():
            m = self.c.poll(0.2)
            if m is None or (m.error() and m.error().code() == KafkaError._PARTITION_EOF):
                continue
            if m.error():
                continue
            if m.offset() <= self.last:
                self.backwards.append((self.last, m.offset()))
            self.last = m.offset()
            self.count += 1
        self.c.close()


def move_under_load(c, tmp):
    st = create(c, "moves", [1, 2, 3], {"min.insync.replicas": "2"})
    t.ok(st is not None and st[1] == [1, 2, 3], "topic on brokers 1,2,3: %s" % (st,))
    w, rd = Writer(c.bootstrap, "moves"), Reader(c.bootstrap, "moves")
    w.start()
    rd.start()
    wait_for(lambda: len(w.acked) > 2000, 30 * SLOW)
    path = plan_file(tmp, "moves.json", [("moves", 0, [2, 3, 4])])
    rc, out = tool(c, "--execute", "--reassignment-json-file", path)
    t.ok(rc == 0 and "Successfully started partition reassignments for moves-0" in out,
         "--execute starts the move: %r" % out[-200:])
    t.ok('"replicas":[1,2,3]' in out, "--execute prints the current assignment for rollback")
    out = verify_done(c, path, 60 * SLOW)
    t.ok(out is not None, "--verify reports completion: %r" % (out,))
    st = wait_state(c.bootstrap, "moves", lambda l, r, i: r == [2, 3, 4] and len(i) == 3,
                    30 * SLOW)
    t.ok(st is not None, "the partition is on 2,3,4 with all in sync: %s"
         % (partition_state(c.bootstrap, "moves"),))
    n_at_done = len(w.acked)
    wait_for(lambda: len(w.acked) > n_at_done + 1000, 20 * SLOW)
    w.stop.set()
    w.join(90)
    time.sleep(1)
    rd.stop.set()
    rd.join(30)
    got = read_all(c.bootstrap, "moves")
    lost = set(w.acked) - set(got)
    t.diag("%d records acknowledged (%d failed), %d read back, %d read while moving"
           % (len(w.acked), len(w.failed), len(got), rd.count))
    t.eq(len(lost), 0, "no acknowledged record is lost (%d acknowledged)" % len(w.acked))
    t.eq(len(got), len(set(got)), "no record is stored twice")
    t.eq(rd.backwards, [], "the consumer never saw an offset go backwards (%d read)"
         % rd.count)
    t.ok(wait_for(lambda: not os.path.exists(part_dir(c.node(1), "moves")), 20 * SLOW),
         "broker 1's moves-0 directory is removed")
    t.ok(os.path.isdir(part_dir(c.node(4), "moves")), "broker 4 holds moves-0")


def errors(c, tmp):
    rc, out = tool(c, "--execute", "--reassignment-json-file",
                   plan_file(tmp, "dup.json", [("moves", 0, [2, 2, 3])]))
    t.ok(rc != 0 and "INVALID_REPLICA_ASSIGNMENT" in out,
         "duplicate brokers: INVALID_REPLICA_ASSIGNMENT (%r)" % out[-160:])
    rc, out = tool(c, "--execute", "--reassignment-json-file",
                   plan_file(tmp, "unknown.json", [("moves", 0, [2, 3, 9])]))
    t.ok(rc != 0 and "INVALID_REPLICA_ASSIGNMENT" in out,
         "an unknown broker: INVALID_REPLICA_ASSIGNMENT (%r)" % out[-160:])
    rc, out = tool(c, "--cancel", "--reassignment-json-file",
                   plan_file(tmp, "none.json", [("moves", 0, [2, 3, 4])]))
    t.ok(rc != 0 and "NO_REASSIGNMENT_IN_PROGRESS" in out,
         "cancelling nothing: NO_REASSIGNMENT_IN_PROGRESS (%r)" % out[-160:])


def cancel(c, tmp):
    st = create(c, "stays", [1, 2, 3])
    t.ok(st is not None, "topic stays on 1,2,3")
    p = Producer({"bootstrap.servers": c.bootstrap, "acks": "all"})
    for i in range(200):
        p.produce("stays", b"s%d" % i)
    p.flush(30)
    # broker 4 cannot catch up while its fetches are stalled
    fault(c.node(4), "stall-fetch", "on")
    path = plan_file(tmp, "stays.json", [("stays", 0, [2, 3, 4])])
    rc, out = tool(c, "--execute", "--reassignment-json-file", path)
    t.ok(rc == 0, "the move starts: %r" % out[-160:])
    st = wait_state(c.bootstrap, "stays", lambda l, r, i: sorted(r) == [1, 2, 3, 4], 20 * SLOW)
    t.ok(st is not None, "the replicas are widened to 1,2,3,4 meanwhile: %s" % (st,))
    t.ok(wait_for(lambda: os.path.isdir(part_dir(c.node(4), "stays")), 20 * SLOW),
         "broker 4 created its new replica's directory")
    rc, out = tool(c, "--verify", "--reassignment-json-file", path)
    t.ok("Reassignment of partition stays-0 is still in progress." in out,
         "--verify says it is in progress: %r" % out[-160:])
    rc, out = tool(c, "--cancel", "--reassignment-json-file", path)
    t.ok(rc == 0 and "Successfully cancelled partition reassignments for: stays-0" in out,
         "--cancel: %r" % out[-200:])
    fault(c.node(4), "stall-fetch", "off")
    # as in KRaft, the kept replicas stay in the widened order (2,3,1)
    st = wait_state(c.bootstrap, "stays", lambda l, r, i: sorted(r) == [1, 2, 3] and
                    len(i) == 3, 20 * SLOW)
    t.ok(st is not None, "the original replicas 1,2,3 stay: %s"
         % (partition_state(c.bootstrap, "stays"),))
    t.ok(wait_for(lambda: not os.path.exists(part_dir(c.node(4), "stays")), 20 * SLOW),
         "broker 4 has no stays-0 directory")
    t.eq(len(read_all(c.bootstrap, "stays")), 200, "all 200 records are still there")


def throttled(c, tmp):
    rate = 100 * 1024
    st = create(c, "slow", [1, 2, 3])
    t.ok(st is not None, "topic slow on 1,2,3")
    fill(c, "slow", 1536 if SLOW == 1 else 1024)
    path = plan_file(tmp, "slow.json", [("slow", 0, [2, 3, 4])])
    t0 = time.monotonic()
    rc, out = tool(c, "--execute", "--reassignment-json-file", path, "--throttle", str(rate))
    t.ok(rc == 0 and "The inter-broker throttle limit was set to %d B/s" % rate in out,
         "--execute --throttle %d: %r" % (rate, out[-200:]))
    cfg = describe(c, ConfigResource("topic", "slow"))
    t.eq(cfg.get("follower.replication.throttled.replicas"), "0:4",
         "the new replica is throttled as a follower")
    t.eq(cfg.get("leader.replication.throttled.replicas"), "0:1,0:2,0:3",
         "the current replicas are throttled as leaders")
    out = verify_done(c, path, 120 * SLOW)
    took = time.monotonic() - t0
    size = dir_bytes(part_dir(c.node(4), "slow"))
    t.ok(out is not None, "the throttled move completes")
    t.diag("moved %d bytes in %.1f s: %.1f KB/s (throttle %d KB/s)"
           % (size, took, size / took / 1024, rate // 1024))
    t.ok(size >= 1000 * 1000 and size / took <= rate * 1.15,
         "throttled move of %.2f MB ran at %.1f KB/s, under the %d KB/s throttle"
         % (size / 1e6, size / took / 1024, rate // 1024))
    t.ok(out is not None and "Clearing broker-level throttles" in out and
         "Clearing topic-level throttles on topic slow" in out,
         "--verify clears the throttles once complete")
    cfg = describe(c, ConfigResource("topic", "slow"))
    t.ok(not cfg.get("follower.replication.throttled.replicas") and
         not cfg.get("leader.replication.throttled.replicas"),
         "the topic's throttle configs are gone: %s"
         % {k: v for k, v in cfg.items() if "throttled" in k})
    # The alter was committed by the controller; broker 4 answers from its
    # own image, which follows a moment later (as a Kafka broker does).
    rates = []

    def rate_cleared():
        rates.append(describe(c, ConfigResource("broker", "4"))
                     .get("follower.replication.throttled.rate"))
        return rates[-1] in (None, "9223372036854775807")
    t.ok(wait_for(rate_cleared, 10 * SLOW, 0.2),
         "broker 4's follower rate is back to its default (%s)" % rates[-1])


def leader_side(c, tmp):
    """The leader's quota alone: a dynamic rate on brokers 1-3, "*" on the topic."""
    rate = 100 * 1024
    st = create(c, "slow2", [1, 2, 3], {"leader.replication.throttled.replicas": "*"})
    t.ok(st is not None, "topic slow2 on 1,2,3, every replica throttled as a leader")
    fill(c, "slow2", 1024)
    a = admin(c)
    for b in (1, 2, 3):
        r = ConfigResource("broker", str(b), set_config={
            "leader.replication.throttled.rate": str(rate)})
        list(a.alter_configs([r]).values())[0].result(30)
    # committed is not yet applied: each leader's workers take the rate
    # from their image, which DescribeConfigs of that broker answers from
    t.ok(wait_for(lambda: all(describe(c, ConfigResource("broker", str(b))).get(
        "leader.replication.throttled.rate") == str(rate) for b in (1, 2, 3)),
        30 * SLOW, 0.2), "brokers 1-3 have the leader rate in their images")
    path = plan_file(tmp, "slow2.json", [("slow2", 0, [2, 3, 4])])
    t0 = time.monotonic()
    rc, out = tool(c, "--execute", "--reassignment-json-file", path)
    t.ok(rc == 0, "the move starts without --throttle")
    out = verify_done(c, path, 120 * SLOW)
    took = time.monotonic() - t0
    size = dir_bytes(part_dir(c.node(4), "slow2"))
    t.diag("leader side only: %d bytes in %.1f s: %.1f KB/s" % (size, took,
                                                              size / took / 1024))
    t.ok(out is not None and size >= 900 * 1000 and size / took <= rate * 1.15,
         "a leader-side throttle alone (dynamic broker rate) holds: %.1f KB/s"
         % (size / took / 1024))
    for b in (1, 2, 3):
        r = ConfigResource("broker", str(b), set_config={})
        list(a.alter_configs([r]).values())[0].result(30)


def fill(c, topic, n):
    # 16 KiB batches: a fetch carries at least one whole batch, so a
    # throttle can only pace a log of many
    p = Producer({"bootstrap.servers": c.bootstrap, "acks": "all", "linger.ms": 20,
                  "batch.size": 16384})
    value = os.urandom(1000)
    for i in range(n):
        p.produce(topic, value)
        if i % 500 == 0:
            p.poll(0)
    p.flush(60)


def describe(c, res):
    a = admin(c)
    try:
        r = list(a.describe_configs([res]).values())[0].result(30)
    except Exception as e:
        t.diag("DescribeConfigs %s: %s" % (res, e))
        return {}
    return {k: v.value for k, v in r.items()}


def dir_bytes(path):
    return sum(os.path.getsize(os.path.join(path, f)) for f in os.listdir(path)
               if f.endswith(".log")) if os.path.isdir(path) else 0


def generate(c, tmp):
    path = os.path.join(tmp, "topics.json")
    with open(path, "w") as f:
        json.dump({"version": 1, "topics": [{"topic": "moves"}]}, f)
    rc, out = tool(c, "--generate", "--topics-to-move-json-file", path,
                   "--broker-list", "1,2,4")
    t.ok(rc == 0 and "Proposed partition reassignment configuration" in out,
         "--generate: %r" % out[-200:])
    prop = json.loads(out.strip().splitlines()[-1])
    reps = prop["partitions"][0]["replicas"]
    t.ok(sorted(reps) == [1, 2, 4] and prop["partitions"][0]["log_dirs"] == ["any"] * 3,
         "the proposal puts moves-0 on brokers 1,2,4: %s" % reps)


with TempDir() as tmp:
    c = Cluster(tmp, 4, props=PROPS, voters=[1, 2, 3])
    c.start()
    try:
        t.ok(c.wait_running(60 * SLOW), "four nodes are up (voters 1-3, broker 4)")
        move_under_load(c, tmp)
        errors(c, tmp)
        cancel(c, tmp)
        throttled(c, tmp)
        leader_side(c, tmp)
        generate(c, tmp)
        t.eq(c.crashes(), [], "no worker died of a crash (SIGSEGV, SIGABRT, ...)")
    finally:
        c.kill()

t.done()
