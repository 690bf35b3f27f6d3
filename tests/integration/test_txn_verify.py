"""KIP-890 part 1: a partition leader takes a transactional write only
when the transactional id's coordinator says the partition is in the
producer's transaction. Over a raw socket (tests/lib/rntxn.py) a
transactional batch for a partition never added with AddPartitionsToTxn is
refused with INVALID_TXN_STATE and nothing is written (the high watermark
stays, DescribeProducers shows no open transaction); once added, the same
batch is taken; a new transaction needs adding again. AddPartitionsToTxn
v4 VerifyOnly answers per partition and changes nothing
(DescribeTransactions before and after). With
transaction.partition.verification.enable=false the unverified batch is
taken, as before KIP-890. On three nodes, with the coordinator on another
node than the partition leader (the leader asks it with v4), the same."""
import time

from confluent_kafka import Consumer, TopicPartition

from rncluster import create_topic, wait_state
from rntest import Cluster, Node, Tap, TempDir, wait_for
from rntxn import Conn, record_batch

t = Tap()
NONE, INVALID_TXN_STATE = 0, 48
# what a client retries: timed out, loading, not available, not the
# coordinator, NOT_ENOUGH_REPLICAS (a verification not done yet), concurrent
RETRY = (7, 14, 15, 16, 19, 51)
TOPIC = "tv"
SINGLE = {"transaction.state.log.replication.factor": "1",
          "transaction.state.log.min.isr": "1",
          "transaction.state.log.num.partitions": "5"}


def high_watermark(bootstrap, p):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "tv"})
    try:
        return c.get_watermark_offsets(TopicPartition(TOPIC, p), timeout=10,
                                       cached=False)[1]
    finally:
        c.close()


def retry(fn, timeout=30):
    """fn() -> tuple whose first item is an error code: asked again while
    it is one a client retries."""
    deadline = time.time() + timeout
    while True:
        out = fn()
        if out[0] not in RETRY or time.time() > deadline:
            return out
        time.sleep(0.3)


def open_txns(conn, p):
    err, prods = conn.describe_producers(TOPIC, [p])[p]
    return [x for x in prods if x[5] >= 0]


def node_port(nodes, node_id):
    return [n for n in nodes if n.node_id == node_id][0].port


def init(coord, tid):
    # as a client does: FindCoordinator first (it creates the state topic)
    retry(lambda: coord.find_coordinator(tid))
    err, pid, epoch = retry(lambda: coord.init_txn_producer(tid))
    t.eq(err, NONE, "%s: InitProducerId at the coordinator" % tid)
    return pid, epoch


def checks(label, bootstrap, leader, leader1, coord, tid):
    """leader, leader1: connections to partition 0's and 1's leaders;
    coord: to tid's coordinator."""
    pid, epoch = init(coord, tid)
    hw0 = high_watermark(bootstrap, 0)
    batch = record_batch([b"early"], pid, epoch, 0, True)
    err, _ = retry(lambda: leader.produce(TOPIC, 0, batch, txn_id=tid))
    t.eq(err, INVALID_TXN_STATE, "%s: a transactional batch for a partition "
         "never added is refused with INVALID_TXN_STATE" % label)
    t.eq(high_watermark(bootstrap, 0), hw0,
         "%s: nothing appended (high watermark unchanged)" % label)
    t.eq(open_txns(leader, 0), [], "%s: DescribeProducers shows no open "
         "transaction" % label)

    # v4 VerifyOnly straight to the coordinator: answers, changes nothing
    before = coord.describe_transactions([tid])[tid]
    err, res = coord.add_partitions_v4([(tid, pid, epoch, True,
                                         {TOPIC: [0, 1]})])
    t.eq((err, res.get(tid)), (NONE, {(TOPIC, 0): INVALID_TXN_STATE,
                                      (TOPIC, 1): INVALID_TXN_STATE}),
         "%s: v4 VerifyOnly: neither partition is in the transaction" % label)
    t.eq(coord.describe_transactions([tid])[tid], before,
         "%s: v4 VerifyOnly changed nothing (DescribeTransactions)" % label)

    t.eq(coord.add_partitions(tid, pid, epoch, {TOPIC: [0]}),
         {(TOPIC, 0): NONE}, "%s: AddPartitionsToTxn partition 0" % label)
    before = coord.describe_transactions([tid])[tid]
    err, res = coord.add_partitions_v4([(tid, pid, epoch, True,
                                         {TOPIC: [0, 1]})])
    t.eq((err, res.get(tid)), (NONE, {(TOPIC, 0): NONE,
                                      (TOPIC, 1): INVALID_TXN_STATE}),
         "%s: v4 VerifyOnly answers per partition" % label)
    t.eq(coord.describe_transactions([tid])[tid], before,
         "%s: state unchanged by the verification" % label)
    err, res = coord.add_partitions_v4([(tid, pid, epoch + 1, True,
                                         {TOPIC: [0]})])
    t.eq(res.get(tid), {(TOPIC, 0): 90}, "%s: v4 VerifyOnly with another "
         "epoch: PRODUCER_FENCED" % label)

    err, base = retry(lambda: leader.produce(TOPIC, 0, batch, txn_id=tid))
    t.eq((err, base), (NONE, hw0), "%s: after AddPartitionsToTxn the same "
         "batch is taken" % label)
    t.eq([x[0] for x in open_txns(leader, 0)], [pid],
         "%s: its transaction is open on the partition" % label)
    err, _ = retry(lambda: leader.produce(
        TOPIC, 0, record_batch([b"more"], pid, epoch, 1, True), txn_id=tid))
    t.eq(err, NONE, "%s: the next batch of the open transaction" % label)
    hw1 = high_watermark(bootstrap, 1)
    err, _ = retry(lambda: leader1.produce(
        TOPIC, 1, record_batch([b"stray"], pid, epoch, 0, True), txn_id=tid))
    t.eq(err, INVALID_TXN_STATE, "%s: partition 1, not added, still "
         "refused" % label)
    t.eq(high_watermark(bootstrap, 1), hw1, "%s: nothing on partition 1"
         % label)

    err = retry(lambda: (coord.end_txn(tid, pid, epoch, True),))[0]
    t.eq(err, NONE, "%s: EndTxn commit" % label)
    t.ok(wait_for(lambda: open_txns(leader, 0) == [], 20),
         "%s: the commit marker closed it on the partition" % label)
    err, _ = retry(lambda: leader.produce(
        TOPIC, 0, record_batch([b"late"], pid, epoch, 2, True), txn_id=tid))
    t.eq(err, INVALID_TXN_STATE, "%s: a write after the commit, not added "
         "to a new transaction, is refused (no hanging transaction)" % label)
    t.eq(open_txns(leader, 0), [], "%s: and opens nothing" % label)
    return pid, epoch


def single():
    with TempDir() as tmp:
        n = Node(tmp, props=SINGLE)
        n.start()
        try:
            t.ok(n.wait_running(30), "one node running")
            create_topic(n.bootstrap, TOPIC, 2, 1)
            wait_state(n.bootstrap, TOPIC, lambda l, r, i: l > 0, p=1)
            conn = Conn(n.port)
            t.eq(conn.api_versions()[1].get(24), (0, 4),
                 "ApiVersions advertises AddPartitionsToTxn 0-4")
            checks("one node", n.bootstrap, conn, conn, conn, "verify-1")
            conn.close()
            t.eq(n.crashes(), [], "one node: no worker crashed")
        finally:
            n.stop()
    with TempDir() as tmp:
        props = dict(SINGLE)
        props["transaction.partition.verification.enable"] = "false"
        n = Node(tmp, props=props)
        n.start()
        try:
            t.ok(n.wait_running(30), "one node running, verification off")
            create_topic(n.bootstrap, TOPIC, 2, 1)
            wait_state(n.bootstrap, TOPIC, lambda l, r, i: l > 0, p=1)
            conn = Conn(n.port)
            pid, epoch = init(conn, "verify-off")
            err, base = retry(lambda: conn.produce(
                TOPIC, 0, record_batch([b"x"], pid, epoch, 0, True),
                txn_id="verify-off"))
            t.eq((err, base), (NONE, 0), "verification off: the unverified "
                 "batch is taken (the old behaviour)")
            t.eq([x[0] for x in open_txns(conn, 0)], [pid],
                 "verification off: it opened a transaction")
            conn.close()
        finally:
            n.stop()


def cluster():
    with TempDir() as tmp:
        c = Cluster(tmp, 3, props={"transaction.state.log.num.partitions":
                                   "5"})
        c.start()
        try:
            t.ok(c.wait_running(60), "three nodes running")
            create_topic(c.bootstrap, TOPIC, 2, 3)
            st = wait_state(c.bootstrap, TOPIC, lambda l, r, i: l > 0 and
                            len(i) == 3, p=0)
            st1 = wait_state(c.bootstrap, TOPIC, lambda l, r, i: l > 0 and
                             len(i) == 3, p=1)
            leader_id = st[0]
            any_conn = Conn(node_port(c.nodes, leader_id))
            tid, coord_id = None, None
            for i in range(200):
                cand = "remote-%d" % i
                err, node = retry(lambda: any_conn.find_coordinator(cand))
                if err == NONE and node != leader_id:
                    tid, coord_id = cand, node
                    break
            t.ok(tid is not None, "a transactional id coordinated on another "
                 "node than the partition leader (%s on %s, leader %s)"
                 % (tid, coord_id, leader_id))
            leader = Conn(node_port(c.nodes, leader_id))
            leader1 = Conn(node_port(c.nodes, st1[0]))
            coord = Conn(node_port(c.nodes, coord_id))
            checks("3 nodes", c.bootstrap, leader, leader1, coord, tid)
            t.eq(c.crashes(), [], "3 nodes: no worker crashed")
        finally:
            c.kill()


single()
cluster()
t.done()
