"""EndTxn while the previous transaction's markers are still going out:
three nodes, a transactional id driven over a plain socket (the
coordinator's node), its partition on one other node. The partition is
added, that node killed, the transaction committed (EndTxn answered once
PrepareCommit is stored; its markers cannot be written), and EndTxn sent
again, abort and commit: Kafka answers CONCURRENT_TRANSACTIONS while a
transition is pending, never INVALID_TXN_STATE, which librdkafka treats
as fatal (librdkafka's test 0098 "rapid abort / committing" met it). Once the markers are written the
abort is INVALID_TXN_STATE (nothing to abort) and a commit retried is
answered NONE, as Kafka does."""
import struct
import time

from confluent_kafka.admin import AdminClient, NewTopic

from rncluster import wait_state
from rntest import Cluster, Tap, TempDir, wait_for
from rntxn import Conn, _str

t = Tap()
TXN = "end-during-markers"
CONCURRENT, INVALID_TXN_STATE = 51, 48


def init_pid(c):
    for _ in range(200):
        r = c.call(22, 1, _str(TXN) + struct.pack(">i", 60000))
        r.take(">i")
        err, pid, epoch = r.take(">h"), r.take(">q"), r.take(">h")
        if err == 0:
            return pid, epoch
        time.sleep(0.1)
    raise RuntimeError("InitProducerId: error %d" % err)


def add_partition(c, pid, epoch, topic):
    body = _str(TXN) + struct.pack(">qh", pid, epoch) + \
        struct.pack(">i", 1) + _str(topic) + struct.pack(">ii", 1, 0)
    r = c.call(24, 0, body)
    r.take(">i")
    r.take(">i")
    r.string()
    r.take(">i")
    r.take(">i")
    return r.take(">h")


def end_txn(c, pid, epoch, commit):
    r = c.call(26, 0, _str(TXN) + struct.pack(">qhb", pid, epoch, commit))
    r.take(">i")
    return r.take(">h")


def main():
    with TempDir() as tmp:
        cl = Cluster(tmp, 3, props={"offsets.topic.replication.factor": "3"})
        cl.start()
        try:
            t.ok(cl.wait_running(60), "three nodes running")
            any_conn = Conn(cl.nodes[0].port)
            coord = wait_for(lambda: (lambda e, n: n if e == 0 else None)(
                *any_conn.find_coordinator(TXN)), 30, 0.2)
            any_conn.close()
            # "out" lives on one node only, not the coordinator's: while
            # that node is down the commit's markers cannot be written,
            # so the transaction stays in PrepareCommit as long as the
            # test needs (a race of a millisecond otherwise)
            far = next(n for n in cl.nodes if n.node_id != coord)
            admin = AdminClient({"bootstrap.servers": cl.bootstrap})
            admin.create_topics([NewTopic(
                "out", num_partitions=1,
                replica_assignment=[[far.node_id]])])["out"].result(30)
            wait_state(cl.bootstrap, "out", lambda l, r, i: l == far.node_id)
            c = Conn(cl.node(coord).port)
            pid, epoch = init_pid(c)
            # the coordinator's own image may not hold the new topic yet:
            # UNKNOWN_TOPIC_OR_PARTITION, which a producer retries
            added = wait_for(lambda: add_partition(c, pid, epoch, "out") == 0,
                             30, 0.1)
            t.ok(added, "AddPartitionsToTxn of out-0 (on node %d)" %
                 far.node_id)
            far.kill()
            t.eq(end_txn(c, pid, epoch, 1), 0, "with node %d down, "
                 "EndTxn(commit) is answered once PrepareCommit is stored"
                 % far.node_id)
            answers = []
            for _ in range(5):
                answers.append(end_txn(c, pid, epoch, 0))
                time.sleep(0.2)
            t.eq(answers, [CONCURRENT] * 5,
                 "EndTxn(abort) while the commit's markers cannot go out: "
                 "CONCURRENT_TRANSACTIONS each time, never INVALID_TXN_STATE")
            t.eq(end_txn(c, pid, epoch, 1), CONCURRENT,
                 "EndTxn(commit) retried meanwhile: CONCURRENT_TRANSACTIONS")
            far.start()
            t.ok(far.wait_running(60), "node %d back" % far.node_id)
            # the markers written: Kafka's answers to a late end
            t.ok(wait_for(lambda: end_txn(c, pid, epoch, 0) != CONCURRENT,
                          60, 0.1), "the markers went out once it was back")
            t.eq(end_txn(c, pid, epoch, 0), INVALID_TXN_STATE,
                 "EndTxn(abort) after CompleteCommit: INVALID_TXN_STATE")
            t.eq(end_txn(c, pid, epoch, 1), 0,
                 "EndTxn(commit) retried after CompleteCommit: NONE")
            c.close()
            t.eq(cl.crashes(), [], "no worker crashed")
        finally:
            cl.kill()
    t.done()


main()
