"""The transaction coordinator, as confluent-kafka's transactional Producer
drives it, on one node and on three: init_transactions, a transaction over
6 partitions of 2 topics with send_offsets_to_transaction for a consumer
group, committed; a second one aborted. A read_committed consumer sees
exactly the committed records, in order; read_uncommitted sees all;
ListOffsets for read_committed answers the last stable offset; the group's
offsets are those of the committed transaction, not the aborted one. A
second producer with the same transactional.id fences the first, whose
next commit fails fatally, and nothing the zombie wrote is visible to
read_committed. A transaction left open past transaction.timeout.ms is
aborted by the coordinator (its records invisible, the last stable offset
moves on, and runnel-transactions find-hanging finds nothing). On three
nodes the coordinator's node is killed mid-transaction: a producer with
the same transactional.id initializes again at the new coordinator and
commits a new transaction, and the old one is aborted."""
import os
import subprocess
import time

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, \
    TopicPartition

from rncluster import create_topic, partition_state, wait_state, java_hash
from rntest import BUILDDIR, Cluster, Node, Tap, TempDir, wait_for
from rntxn import Conn

t = Tap()
TXN_TOOL = os.path.join(BUILDDIR, "runnel-transactions")
PARTS = 3
TOPICS = ("txa", "txb")
FENCED = (KafkaError._FENCED, KafkaError.PRODUCER_FENCED,
          KafkaError.INVALID_PRODUCER_EPOCH)


def txn_partition(txn_id, nparts=50):
    h = java_hash(txn_id)
    return (0 if h == -(1 << 31) else abs(h)) % nparts


def producer(bootstrap, txn_id, **extra):
    conf = {"bootstrap.servers": bootstrap, "transactional.id": txn_id,
            "transaction.timeout.ms": 60000}
    conf.update(extra)
    return Producer(conf)


def read(bootstrap, isolation, tps, timeout=30):
    """Values per (topic, partition) from offset 0 up to the end."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader",
                  "enable.auto.commit": False, "enable.partition.eof": True,
                  "isolation.level": isolation})
    c.assign([TopicPartition(tp[0], tp[1], 0) for tp in tps])
    out = {tp: [] for tp in tps}
    eof, deadline = set(), time.time() + timeout
    while time.time() < deadline and len(eof) < len(tps):
        m = c.poll(0.3)
        if m is None:
            continue
        tp = (m.topic(), m.partition())
        if m.error():
            if m.error().code() == KafkaError._PARTITION_EOF:
                eof.add(tp)
            continue
        eof.discard(tp)
        out[tp].append(m.value().decode())
    c.close()
    return out


def latest(bootstrap, topic, p, committed):
    """ListOffsets' latest as librdkafka asks it with an isolation level."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "lso",
                  "isolation.level": "read_committed" if committed
                  else "read_uncommitted"})
    try:
        for _ in range(40):
            try:
                return c.get_watermark_offsets(TopicPartition(topic, p),
                                               timeout=10, cached=False)[1]
            except KafkaException:
                time.sleep(0.3)
        return None
    finally:
        c.close()


def committed_offset(bootstrap, group, topic):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                  "enable.auto.commit": False})
    try:
        for _ in range(20):
            try:
                return c.committed([TopicPartition(topic, 0)], timeout=10)[0].offset
            except KafkaException:
                time.sleep(0.5)
        return None
    finally:
        c.close()


def unstable(bootstrap, label):
    """KIP-447: a transaction's offsets pending, a consumer asking for
    stable offsets (librdkafka's default) is not given the old committed
    offset; after the commit it gets the transaction's."""
    group = "txu-" + label
    cons = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                     "enable.auto.commit": False})
    cons.commit(offsets=[TopicPartition("src", 0, 2)], asynchronous=False)
    p = producer(bootstrap, "unstable-" + label)
    p.init_transactions(60)
    p.begin_transaction()
    p.produce("txa", b"u", partition=0)
    p.send_offsets_to_transaction([TopicPartition("src", 0, 7)],
                                  cons.consumer_group_metadata(), 30)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                  "enable.auto.commit": False})
    try:
        got = c.committed([TopicPartition("src", 0)], timeout=3)[0].offset
    except KafkaException as e:
        got = e.args[0].code()
    finally:
        c.close()
    t.ok(got != 2 and got != 7, "%s: while the transaction's offset is "
         "pending, a stable OffsetFetch gives neither the old offset nor the "
         "new one (%r)" % (label, got))
    p.commit_transaction(60)
    t.eq(committed_offset(bootstrap, group, "src"), 7,
         "%s: committed, the transaction's offset is the group's" % label)
    cons.close()


def fatal_code(fn):
    """The error code of a fatal KafkaError fn raises, else None."""
    try:
        fn()
    except KafkaException as e:
        err = e.args[0]
        return err.code() if err.fatal() else ("not fatal", err.code())
    return "no error"


def main_flow(bootstrap, label):
    tps = [(tp, p) for tp in TOPICS for p in range(PARTS)]
    group = "txg-" + label
    # the consumer whose group the offsets go to, as a read-process-write app
    cons = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                     "enable.auto.commit": False})
    cons.assign([TopicPartition("src", 0, 0)])
    p = producer(bootstrap, "app-" + label)
    p.init_transactions(60)
    p.begin_transaction()
    for tp in tps:
        for i in range(5):
            p.produce(tp[0], ("c-%s-%d-%d" % (tp[0], tp[1], i)).encode(),
                      partition=tp[1])
    p.send_offsets_to_transaction([TopicPartition("src", 0, 5)],
                                  cons.consumer_group_metadata(), 30)
    p.commit_transaction(60)
    t.ok(True, "%s: a transaction over 6 partitions of 2 topics with a "
         "group's offsets committed" % label)
    t.eq(committed_offset(bootstrap, group, "src"), 5,
         "%s: the group's offset is the committed transaction's" % label)

    p.begin_transaction()
    for tp in tps:
        for i in range(3):
            p.produce(tp[0], ("a-%s-%d-%d" % (tp[0], tp[1], i)).encode(),
                      partition=tp[1])
    p.send_offsets_to_transaction([TopicPartition("src", 0, 9)],
                                  cons.consumer_group_metadata(), 30)
    p.flush()
    p.abort_transaction(60)
    cons.close()
    t.eq(committed_offset(bootstrap, group, "src"), 5,
         "%s: the aborted transaction's offset is not the group's" % label)

    want = {tp: ["c-%s-%d-%d" % (tp[0], tp[1], i) for i in range(5)]
            for tp in tps}
    got = read(bootstrap, "read_committed", tps)
    t.eq(got, want, "%s: read_committed sees exactly the committed records, "
         "in order" % label)
    got = read(bootstrap, "read_uncommitted", tps)
    t.eq(got, {tp: want[tp] + ["a-%s-%d-%d" % (tp[0], tp[1], i)
                               for i in range(3)] for tp in tps},
         "%s: read_uncommitted sees the aborted records too" % label)

    # an open transaction: read_committed's latest stops where it starts.
    # The abort's markers follow EndTxn's answer (as in Kafka): wait until
    # they are in (nothing unstable), so the high watermark read here is
    # where the open transaction will start
    wait_for(lambda: latest(bootstrap, "txa", 0, True) ==
             latest(bootstrap, "txa", 0, False), 30)
    hw = latest(bootstrap, "txa", 0, False)
    p.begin_transaction()
    p.produce("txa", b"open", partition=0)
    p.flush()
    t.eq(latest(bootstrap, "txa", 0, True), hw,
         "%s: ListOffsets read_committed answers the last stable offset "
         "while a transaction is open" % label)
    t.eq(latest(bootstrap, "txa", 0, False), hw + 1,
         "%s: read_uncommitted's latest is past the open record" % label)
    p.commit_transaction(60)
    t.eq(latest(bootstrap, "txa", 0, True), hw + 2,
         "%s: committed, the last stable offset passes its marker" % label)
    return p


def describe(nodes, label):
    """DescribeTransactions and ListTransactions at the coordinator of
    app-<label> (asked of every node: one of them coordinates it)."""
    tid = "app-" + label
    seen = {}

    def ask():
        # EndTxn answers once PrepareCommit is stored; the markers follow
        for n in nodes:
            conn = Conn(n.port)
            d = conn.describe_transactions([tid, "no-such-" + label])
            err, listed = conn.list_transactions(["CompleteCommit"])
            conn.close()
            seen.setdefault("missing", set()).add(d["no-such-" + label][0])
            if d[tid][0] == 0:
                seen.update(describe=d[tid], list=listed, list_err=err)
        return seen.get("describe", (0, ""))[1] == "CompleteCommit"
    wait_for(ask, 15, 0.2)
    d = seen.get("describe")
    t.ok(d is not None and d[1] == "CompleteCommit" and d[2] == 60000 and
         d[3] >= 0 and d[5] == {}, "%s: DescribeTransactions at the "
         "coordinator: CompleteCommit, its timeout and producer id (%r)"
         % (label, d))
    t.ok(seen.get("list_err") == 0 and tid in seen.get("list", {}) and
         seen["list"][tid] == (d[3], "CompleteCommit"),
         "%s: ListTransactions filtered by state lists it" % label)
    t.ok(105 in seen.get("missing", ()) and
         seen["missing"] <= {105, 16}, "%s: an unknown id is "
         "TRANSACTIONAL_ID_NOT_FOUND at its coordinator, NOT_COORDINATOR "
         "elsewhere (%r)" % (label, seen.get("missing")))


def zombie(bootstrap, label):
    tid = "zombie-" + label
    z = producer(bootstrap, tid)
    z.init_transactions(60)
    z.begin_transaction()
    z.produce("txb", b"z-before", partition=1)
    z.flush()
    p2 = producer(bootstrap, tid)
    p2.init_transactions(60)
    t.ok(True, "%s: a second producer with the same transactional.id "
         "initializes (the first one's transaction aborted)" % label)
    z.produce("txb", b"z-after", partition=1)
    code = fatal_code(lambda: z.commit_transaction(30))
    t.ok(code in FENCED, "%s: the zombie's commit fails fatally as fenced "
         "(%s)" % (label, code))
    p2.begin_transaction()
    p2.produce("txb", b"p2", partition=1)
    p2.commit_transaction(60)
    got = read(bootstrap, "read_committed", [("txb", 1)])[("txb", 1)]
    if not t.ok("p2" in got and "z-before" not in got and
                "z-after" not in got, "%s: read_committed has the new "
                "producer's record and nothing of the zombie's" % label):
        t.diag("read_committed txb-1: %r" % got)


def timeout_abort(bootstrap, label):
    p = producer(bootstrap, "slow-" + label, **{"transaction.timeout.ms": 5000})
    p.init_transactions(60)
    hw = latest(bootstrap, "txa", 2, False)
    p.begin_transaction()
    p.produce("txa", b"left-open", partition=2)
    p.flush()
    t.eq(latest(bootstrap, "txa", 2, True), hw,
         "%s: an open transaction holds the last stable offset" % label)
    moved = wait_for(lambda: latest(bootstrap, "txa", 2, True) == hw + 2,
                     30, 0.5)
    t.ok(moved, "%s: past transaction.timeout.ms the coordinator aborts it: "
         "the last stable offset moves past its marker" % label)
    got = read(bootstrap, "read_committed", [("txa", 2)])[("txa", 2)]
    t.ok("left-open" not in got, "%s: its record is invisible to "
         "read_committed" % label)
    # a 0 minute timeout makes every open transaction a candidate: the
    # aborted one must have left none behind on any replica of txa
    r = subprocess.run([TXN_TOOL, "--bootstrap-server", bootstrap,
                        "find-hanging", "--topic", "txa",
                        "--max-transaction-timeout", "0"],
                       capture_output=True, text=True, timeout=60)
    if not t.ok(r.returncode == 0 and
                "No hanging transactions found" in r.stdout,
                "%s: runnel-transactions find-hanging --topic txa reports "
                "none after the abort" % label):
        t.diag(r.stdout + r.stderr)
    code = fatal_code(lambda: p.commit_transaction(30))
    t.ok(code in FENCED, "%s: its producer's commit fails as fenced (%s)"
         % (label, code))


def setup_topics(bootstrap, rf):
    for name in TOPICS:
        create_topic(bootstrap, name, PARTS, rf)
    create_topic(bootstrap, "src", 1, rf)
    for name in TOPICS:
        for p in range(PARTS):
            wait_state(bootstrap, name, lambda l, r, i: l > 0 and
                       len(i) == rf, p=p)


def single():
    with TempDir() as tmp:
        n = Node(tmp, props={
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "transaction.abort.timed.out.transaction.cleanup.interval.ms":
                "1000"})
        n.start()
        try:
            t.ok(n.wait_running(30), "one node running")
            setup_topics(n.bootstrap, 1)
            main_flow(n.bootstrap, "one node")
            unstable(n.bootstrap, "one node")
            describe([n], "one node")
            zombie(n.bootstrap, "one node")
            timeout_abort(n.bootstrap, "one node")
            t.eq(n.crashes(), [], "one node: no worker crashed")
        finally:
            n.stop()


def cluster():
    with TempDir() as tmp:
        c = Cluster(tmp, 3, props={
            "replica.lag.time.max.ms": "3000",
            "offsets.topic.replication.factor": "3",
            "transaction.abort.timed.out.transaction.cleanup.interval.ms":
                "1000"})
        c.start()
        try:
            t.ok(c.wait_running(60), "three nodes running")
            setup_topics(c.bootstrap, 3)
            main_flow(c.bootstrap, "3 nodes")
            describe(c.nodes, "3 nodes")
            zombie(c.bootstrap, "3 nodes")
            timeout_abort(c.bootstrap, "3 nodes")
            failover(c)
            t.eq(c.crashes(), [], "3 nodes: no worker crashed")
        finally:
            c.kill()


def failover(c):
    tid = "failover"
    tps = [(tp, p) for tp in TOPICS for p in range(PARTS)]
    p = producer(c.bootstrap, tid)
    p.init_transactions(60)
    st = partition_state(c.bootstrap, "__transaction_state",
                         txn_partition(tid))
    t.ok(st is not None and st[0] > 0, "the transactional id's coordinator "
         "is known (node %s)" % (st and st[0]))
    coord = st[0]
    p.begin_transaction()
    for tp in tps:
        p.produce(tp[0], ("old-%s-%d" % tp).encode(), partition=tp[1])
    p.flush()
    c.node(coord).kill()
    alive = [n for n in c.nodes if n.node_id != coord]
    boot = ",".join(n.bootstrap for n in alive)
    moved = wait_state(boot, "__transaction_state", lambda l, r, i: l > 0 and
                       l != coord, timeout=60, p=txn_partition(tid))
    t.ok(moved, "the coordinator's partition moved to node %s"
         % (moved and moved[0]))
    p2 = producer(boot, tid)
    p2.init_transactions(90)
    p2.begin_transaction()
    for tp in tps:
        p2.produce(tp[0], ("new-%s-%d" % tp).encode(), partition=tp[1])
    p2.commit_transaction(90)
    t.ok(True, "a producer with the same transactional.id initializes at "
         "the new coordinator and commits")
    got = read(boot, "read_committed", tps, timeout=60)
    t.ok(all(("new-%s-%d" % tp) in got[tp] and ("old-%s-%d" % tp) not in
             got[tp] for tp in tps),
         "read_committed has the new transaction and not the one the dead "
         "coordinator held open")


import sys
if "cluster" not in sys.argv[1:]:
    single()
if "single" not in sys.argv[1:]:
    cluster()
t.done()
