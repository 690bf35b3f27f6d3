"""Transactions on the partition side, as a transaction coordinator and a
transactional producer drive them: transactional batches from idempotent
producer ids (tests/lib/rntxn.py), WriteTxnMarkers commits and aborts, then
real clients check what Kafka's partition leaders give them: a
read_committed consumer (confluent-kafka) sees exactly the committed
records and stops at the last stable offset while a transaction is open,
read_uncommitted sees everything, kcat reads the topic, ListOffsets
answers the last stable offset for read_committed. The last stable offset
and the aborted-transaction index (.txnindex, Kafka's layout) survive a
SIGKILL, and on three nodes a new leader keeps them. With the authorizer
on, only CLUSTER_ACTION (or a super user) may write markers."""
import glob
import os
import subprocess
import time

from confluent_kafka import Consumer, TopicPartition

from rncluster import create_topic, partition_state, wait_state
from rntest import BUILDDIR, Cluster, Node, Tap, TempDir, wait_for
from rntxn import Conn, read_txnindex, record_batch

t = Tap()
NONE, UNKNOWN_TOPIC, INVALID_EPOCH, COORD_FENCED = 0, 3, 47, 52


def consume(bootstrap, topic, isolation, want=None, timeout=20):
    """Values of partition 0 from offset 0, until the end (or `want` values)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "txn",
                  "enable.auto.commit": False, "enable.partition.eof": True,
                  "isolation.level": isolation})
    c.assign([TopicPartition(topic, 0, 0)])
    vals, deadline = [], time.time() + timeout
    while time.time() < deadline:
        m = c.poll(0.3)
        if m is None:
            continue
        if m.error():
            if m.error().code() == -191 and (want is None or len(vals) >= want):
                break
            continue
        vals.append(m.value())
    c.close()
    return vals


def latest(bootstrap, topic, committed):
    """The latest offset by ListOffsets as librdkafka asks it (with the
    consumer's isolation level; confluent-kafka 1.7 has no list_offsets)."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "txn",
                  "isolation.level": "read_committed" if committed
                  else "read_uncommitted"})
    deadline = time.time() + 20
    try:
        while True:
            try:
                return c.get_watermark_offsets(TopicPartition(topic, 0),
                                               timeout=10, cached=False)[1]
            except Exception:
                # metadata not there yet: the client asks again
                if time.time() > deadline:
                    raise
                time.sleep(0.3)
    finally:
        c.close()


def port_of(cluster_or_node, node_id):
    nodes = getattr(cluster_or_node, "nodes", [cluster_or_node])
    return [n for n in nodes if n.node_id == node_id][0].port


def txn(conn, topic, pid, seq, values):
    err, base = conn.produce_retry(topic, 0, record_batch(values, pid, 0, seq, True))
    return err, base


def scenario(conn, topic):
    """Committed A, aborted B, a plain record, A open again, another plain.
    Returns (pid A, pid B, offset where A's open transaction starts)."""
    _, pa, _ = conn.init_producer_id()
    _, pb, _ = conn.init_producer_id()
    got = [txn(conn, topic, pa, 0, [b"a0", b"a1", b"a2"])[0],
           txn(conn, topic, pb, 0, [b"b0", b"b1"])[0],
           conn.write_txn_markers([(pa, 0, True, {topic: [0]}, 5)]).get((pa, topic, 0)),
           conn.produce(topic, 0, record_batch([b"p0"]))[0],
           conn.write_txn_markers([(pb, 0, False, {topic: [0]}, 5)]).get((pb, topic, 0))]
    err, open_at = txn(conn, topic, pa, 3, [b"a3"])
    got += [err, conn.produce(topic, 0, record_batch([b"p1"]))[0]]
    ok = got == [NONE] * 7
    if not ok:
        t.diag("errors: %r" % got)
    t.ok(ok, "transactional batches and markers written (%s)" % topic)
    return pa, pb, open_at


COMMITTED_OPEN = [b"a0", b"a1", b"a2", b"p0"]
ALL = [b"a0", b"a1", b"a2", b"b0", b"b1", b"p0", b"a3", b"p1"]
COMMITTED_DONE = [b"a0", b"a1", b"a2", b"p0", b"a3", b"p1"]


def check_open(bootstrap, topic, open_at, what, ask=None):
    """ask(committed): the latest offset; librdkafka's by default."""
    ask = ask or (lambda committed: latest(bootstrap, topic, committed))
    t.eq(ask(True), open_at,
         "%s: ListOffsets read_committed answers the LSO (A's open txn)" % what)
    t.eq(ask(False), 10,
         "%s: read_uncommitted latest is the high watermark" % what)
    t.eq(consume(bootstrap, topic, "read_committed"), COMMITTED_OPEN,
         "%s: read_committed stops at the LSO, B's abort left out" % what)
    t.eq(consume(bootstrap, topic, "read_uncommitted"), ALL,
         "%s: read_uncommitted sees every data record" % what)


def single_node(tmp):
    n = Node(tmp)
    n.start()
    try:
        t.ok(n.wait_running(), "node running")
        create_topic(n.bootstrap, "txn", 1, 1)
        wait_state(n.bootstrap, "txn", lambda l, r, i: l == 1)
        conn = Conn(n.port)
        err, keys = conn.api_versions()
        t.eq(keys.get(27), (0, 1), "ApiVersions advertises WriteTxnMarkers 0-1")
        t.eq(keys.get(61), (0, 0), "ApiVersions advertises DescribeProducers 0")
        t.ok(keys.get(24) == (0, 4) and
             all(keys.get(k) == (0, 3) for k in (25, 26, 28)),
             "the transaction coordinator's APIs are advertised "
             "(AddPartitionsToTxn 0-4, AddOffsetsToTxn, EndTxn, "
             "TxnOffsetCommit 0-3)")
        pa, pb, open_at = scenario(conn, "txn")
        t.eq(open_at, 8, "A's second transaction begins after both markers")
        check_open(n.bootstrap, "txn", open_at, "one node")

        # Kafka's layout: version 0, pid, first offset, last offset, LSO
        idx = glob.glob(os.path.join(n.logdir, "txn-0", "*.txnindex"))
        entries = [e for f in idx for e in read_txnindex(f)]
        t.eq(entries, [(0, pb, 3, 7, 8)],
             "the abort is in the segment's .txnindex (B: 3..marker 7, LSO 8)")
        dp = conn.describe_producers("txn", [0, 9])
        prods = {p[0]: p for p in dp[0][1]}
        t.ok(dp[0][0] == NONE and prods.get(pa, ())[5:] == (open_at,) and
             prods.get(pb, ())[4:] == (5, -1),
             "DescribeProducers: A's open transaction from %d, B's last marker "
             "of coordinator epoch 5 and none open" % open_at)
        t.eq(dp[9][0], UNKNOWN_TOPIC, "DescribeProducers: an unknown partition")

        # errors as Kafka gives them
        r = conn.write_txn_markers([(pa, 0, True, {"nosuch": [0]}, 5)])
        t.eq(r, {(pa, "nosuch", 0): UNKNOWN_TOPIC}, "unknown topic")
        r = conn.write_txn_markers([(pa, 0, True, {"txn": [7]}, 5)])
        t.eq(r, {(pa, "txn", 7): UNKNOWN_TOPIC}, "unknown partition")
        _, pc, _ = conn.init_producer_id()
        r = conn.write_txn_markers([(pc, 1, False, {"txn": [0]}, 5)])
        t.eq(r, {(pc, "txn", 0): NONE}, "a marker at epoch 1 fences epoch 0")
        r = conn.write_txn_markers([(pc, 0, False, {"txn": [0]}, 5)])
        t.eq(r, {(pc, "txn", 0): INVALID_EPOCH}, "an older epoch: INVALID_PRODUCER_EPOCH")
        r = conn.write_txn_markers([(pc, 1, False, {"txn": [0]}, 4)])
        t.eq(r, {(pc, "txn", 0): COORD_FENCED},
             "an older coordinator epoch: TRANSACTION_COORDINATOR_FENCED")
        err, _ = conn.produce("txn", 0, record_batch([b"x"], pa, 0, 4, False))
        t.eq(err, 48, "a plain batch inside an open transaction: INVALID_TXN_STATE")
        # the fenced abort of C indexed too (first = last = its marker)
        t.eq(latest(n.bootstrap, "txn", False), 11, "the fencing marker took offset 10")

        # SIGKILL: the LSO comes back from the snapshot and the replay
        n.kill()
        n.start()
        t.ok(n.wait_running(), "node running again after SIGKILL")
        wait_state(n.bootstrap, "txn", lambda l, r, i: l == 1)
        t.eq(latest(n.bootstrap, "txn", True), open_at,
             "after SIGKILL: ListOffsets read_committed still answers the LSO")
        t.eq(consume(n.bootstrap, "txn", "read_committed"), COMMITTED_OPEN,
             "after SIGKILL: read_committed stops there, the abort still left out")
        entries = [e for f in glob.glob(os.path.join(n.logdir, "txn-0", "*.txnindex"))
                   for e in read_txnindex(f)]
        t.eq(entries, [(0, pb, 3, 7, 8), (0, pc, 10, 10, 8)],
             "after SIGKILL: the aborted index has each abort once")

        conn = Conn(n.port)
        t.eq(conn.write_txn_markers([(pa, 0, True, {"txn": [0]}, 6)]),
             {(pa, "txn", 0): NONE}, "A's second transaction committed")
        t.eq(latest(n.bootstrap, "txn", True), 12, "LSO = high watermark again")
        t.eq(consume(n.bootstrap, "txn", "read_committed"), COMMITTED_DONE,
             "read_committed: every committed record, B's aborted ones left out")
        kc = subprocess.run(["kcat", "-b", n.bootstrap, "-C", "-t", "txn", "-p", "0",
                             "-o", "beginning", "-e", "-q", "-f", "%s\\n",
                             "-X", "isolation.level=read_committed"],
                            capture_output=True, timeout=30)
        t.eq(kc.stdout.split(), COMMITTED_DONE, "kcat (read_committed) reads the topic")
        kc = subprocess.run(["kcat", "-b", n.bootstrap, "-C", "-t", "txn", "-p", "0",
                             "-o", "beginning", "-e", "-q", "-f", "%s\\n",
                             "-X", "isolation.level=read_uncommitted"],
                            capture_output=True, timeout=30)
        t.eq(kc.stdout.split(), ALL,
             "kcat (read_uncommitted) sees every data record")
        figures(n, conn)
        conn.close()
        t.eq(n.crashes(), [], "no worker crashed")
    finally:
        n.stop()


def figures(n, conn):
    """Produce with and without the transactional bit, fetch both ways."""
    create_topic(n.bootstrap, "perf", 1, 1)
    wait_state(n.bootstrap, "perf", lambda l, r, i: l == 1)
    vals = [b"v" * 100] * 100
    reqs = 300
    for label, tr in (("plain idempotent", False), ("transactional", True)):
        _, pid, _ = conn.init_producer_id()
        t0 = time.time()
        for i in range(reqs):
            conn.produce("perf", 0, record_batch(vals, pid, 0, i * 100, tr))
            if tr and i % 10 == 9:
                conn.write_txn_markers([(pid, 0, True, {"perf": [0]}, 1)])
        dt = time.time() - t0
        t.diag("figure: produce %s acks=all, 100 x 100 B per batch: %.0f records/s"
               % (label, reqs * 100 / dt))
    for iso in ("read_uncommitted", "read_committed"):
        t0 = time.time()
        got = consume(n.bootstrap, "perf", iso, want=2 * reqs * 100)
        t.diag("figure: fetch %s: %d records in %.2f s" % (iso, len(got), time.time() - t0))
        # every transaction was committed (the last at request 300)
        t.eq(len(got), 2 * reqs * 100, "%s reads all of both runs" % iso)


def cluster(tmp):
    # the readers' group coordinator must outlive the killed node: with
    # __consumer_offsets at RF=1 on it, a consumer's close() waits for
    # a coordinator that never comes back
    c = Cluster(tmp, 3, props={"replica.lag.time.max.ms": "3000",
                               "min.insync.replicas": "2",
                               "offsets.topic.replication.factor": "3"})
    c.start()
    try:
        t.ok(c.wait_running(60), "three nodes running")
        create_topic(c.bootstrap, "rtxn", 1, 3)
        st = wait_state(c.bootstrap, "rtxn", lambda l, r, i: l > 0 and len(i) == 3)
        t.ok(st, "rtxn has its three replicas in the ISR")
        leader = st[0]
        conn = Conn(port_of(c, leader))
        pa, pb, open_at = scenario(conn, "rtxn")
        conn.close()
        check_open(c.bootstrap, "rtxn", open_at, "RF=3")
        old = c.node(leader)
        old.kill()
        # the clients from here on bootstrap from the live nodes, and the
        # latest offsets are asked of the new leader with a raw
        # ListOffsets: librdkafka 2.0.2's query_watermark_offsets() was
        # seen to wait for good, past its own timeout, right after the
        # leader moved (the nodes kept answering everything else)
        live = ",".join(nd.bootstrap for nd in c.nodes if nd is not old)
        st = wait_state(live, "rtxn", lambda l, r, i: l > 0 and l != leader, 60)
        t.ok(st, "a new leader took over")
        new = st[0]
        lconn = Conn(port_of(c, new))

        def leader_latest(committed):
            err, off = lconn.list_offsets("rtxn", 0, committed)
            return off if err == NONE else None
        t.ok(wait_for(lambda: leader_latest(False) == 10, 30, 0.2),
             "the new leader's high watermark covers everything")
        check_open(live, "rtxn", open_at, "new leader", leader_latest)
        conn = Conn(port_of(c, new))
        t.eq(conn.write_txn_markers([(pa, 0, True, {"rtxn": [0]}, 7)]),
             {(pa, "rtxn", 0): NONE}, "the new leader commits A's transaction")
        conn.close()
        t.eq(leader_latest(True), 11, "new leader: LSO = high watermark")
        lconn.close()
        t.eq(consume(live, "rtxn", "read_committed"), COMMITTED_DONE,
             "new leader: read_committed sees the committed records only")
        t.eq(c.crashes(), [], "no worker crashed in the cluster")
    finally:
        for nd in c.nodes:
            nd.stop()


def authorizer(tmp):
    """With the authorizer on, WriteTxnMarkers needs CLUSTER_ACTION on the
    cluster (a super user has it)."""
    base = {"authorizer.class.name":
            "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "allow.everyone.if.no.acl.found": "false"}
    for name, extra, want, what in (
            ("denied", {}, 31, "no CLUSTER_ACTION: CLUSTER_AUTHORIZATION_FAILED"),
            ("super", {"super.users": "User:ANONYMOUS"}, UNKNOWN_TOPIC,
             "a super user gets past the check (then UNKNOWN_TOPIC_OR_PARTITION)")):
        n = Node(os.path.join(tmp, name), props=dict(base, **extra))
        n.start()
        try:
            t.ok(n.wait_running(), "authorizer node (%s) running" % name)
            conn = Conn(n.port)
            t.eq(conn.write_txn_markers([(5, 0, True, {"t": [0, 1]}, 1)]),
                 {(5, "t", 0): want, (5, "t", 1): want}, what)
            dp = conn.describe_producers("t", [0])
            t.eq(dp.get(0, (None,))[0], 29 if name == "denied" else UNKNOWN_TOPIC,
                 "DescribeProducers: TOPIC_AUTHORIZATION_FAILED without READ"
                 if name == "denied" else
                 "DescribeProducers: a super user reads (UNKNOWN_TOPIC_OR_PARTITION)")
            conn.close()
        finally:
            n.stop()


with TempDir() as tmp:
    single_node(os.path.join(tmp, "one"))
    authorizer(os.path.join(tmp, "authz"))
    cluster(os.path.join(tmp, "three"))
t.done()
