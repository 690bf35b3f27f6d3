"""EndTxn while the previous transaction's markers are still going out:
three nodes, a transactional id driven over a plain socket (the
coordinator's node), a partition on RF 3. Each round adds the partition,
commits (EndTxn answered once PrepareCommit is stored) and at once sends
EndTxn(abort) for a next transaction: Kafka answers CONCURRENT_TRANSACTIONS
while a transition is pending (the markers, then CompleteCommit), never
INVALID_TXN_STATE, which librdkafka treats as fatal (librdkafka's test 0098
"rapid abort / committing" met it). Once the markers are written the
abort is INVALID_TXN_STATE (nothing to abort) and a commit retried is
answered NONE, as Kafka does."""
import struct
import time

from rncluster import create_topic
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
            create_topic(cl.bootstrap, "out", 1, 3)
            any_conn = Conn(cl.nodes[0].port)
            coord = wait_for(lambda: (lambda e, n: n if e == 0 else None)(
                *any_conn.find_coordinator(TXN)), 30, 0.2)
            any_conn.close()
            c = Conn(cl.node(coord).port)
            pid, epoch = init_pid(c)
            answers = []
            for _ in range(10):
                err = CONCURRENT
                while err == CONCURRENT:  # the last round's markers
                    err = add_partition(c, pid, epoch, "out")
                    if err == CONCURRENT:
                        time.sleep(0.01)
                if err != 0:
                    t.ok(False, "AddPartitionsToTxn answered %d" % err)
                    break
                if end_txn(c, pid, epoch, 1) != 0:
                    t.ok(False, "EndTxn(commit) failed")
                    break
                answers.append(end_txn(c, pid, epoch, 0))
            t.eq([a for a in answers if a != CONCURRENT], [],
                 "EndTxn(abort) right after a commit, its markers going "
                 "out: CONCURRENT_TRANSACTIONS each time (%d rounds)" %
                 len(answers))
            # once the markers are written: Kafka's answers to a late end
            wait_for(lambda: end_txn(c, pid, epoch, 0) != CONCURRENT, 30, 0.05)
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
