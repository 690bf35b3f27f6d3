"""A thousand idempotent producers on a partition, with a real runneld:
beyond the 24 a partition slot keeps inline, producers live in the node's
shared-memory pool (shm.max.producers), so none is forgotten.

- 1,000 producer ids (InitProducerId each, raw protocol: tests/lib/rntxn.py)
  write to one partition and to each of 10: a retry of every producer's
  last batch is answered with its original offset and the high watermark
  does not move; DescribeProducers lists all of them;
- 50 open transactions beside 1,000 idempotent producers keep the last
  stable offset (ListOffsets read_committed) at the earliest open one
  while the others write, and the markers move it;
- a clean stop and a SIGKILL keep the producers' state: retries are still
  duplicates, the open transactions still hold the last stable offset;
- 50 confluent-kafka idempotent producers in one process writing to the
  same 10 partitions see no error and each record is in the topic once;
- deleting the topics returns all their producers' entries to the pool;
- on three nodes, the followers keep the same state from what they
  replicate: after the leader is killed, the new leader answers every
  retry of 1,000 producers with its original offset, and 30 open
  transactions hold its last stable offset;
- with a pool of 10 (shm.max.producers), 34 producers in open
  transactions fill a partition: a new producer's batch is refused with
  the retriable REQUEST_TIMED_OUT (logged with the partition, counted in
  the metrics) until a transaction ends and its producer gives way, and
  producers idle past producer.id.expiration.ms go while those in a
  transaction stay.
"""
import os
import struct
import time

from confluent_kafka import Consumer, Producer, TopicPartition

from rncluster import admin, create_topic, wait_state
from rntest import Cluster, Node, Tap, TempDir, wait_for
from rntxn import Conn, _str, record_batch

t = Tap()
N = 1000
NONE = 0


def list_offset(conn, topic, partition, committed):
    """ListOffsets v2, latest: the high watermark (read_uncommitted) or
    the last stable offset (read_committed)."""
    body = struct.pack(">ib", -1, 1 if committed else 0) + \
        struct.pack(">i", 1) + _str(topic) + struct.pack(">i", 1) + \
        struct.pack(">iq", partition, -1)
    r = conn.call(2, 2, body)
    r.take(">i")  # throttle
    r.take(">i")
    r.string()
    r.take(">i")
    r.take(">i")  # partition
    err = r.take(">h")
    r.take(">q")  # timestamp
    off = r.take(">q")
    return off if err == NONE else -1000 - err


def init_pids(conn, n):
    pids = []
    for _ in range(n):
        err, pid, epoch = conn.init_producer_id()
        if err != NONE or epoch != 0:
            t.diag("InitProducerId: error %d" % err)
            return None
        pids.append(pid)
    return pids


def write_all(conn, topic, parts, pids, seq, tag):
    """Each producer's batch (seq) to each partition: {(pid, p): offset},
    the errors seen."""
    offs, errs = {}, {}
    for pid in pids:
        for p in parts:
            b = record_batch([b"%s-%d-%d-%d" % (tag, pid, p, seq)], pid, 0,
                             seq)
            err, base = conn.produce_retry(topic, p, b)
            if err != NONE:
                errs[err] = errs.get(err, 0) + 1
            offs[(pid, p)] = base
    return offs, errs


def retry_all(conn, topic, parts, pids, seq, tag, offs):
    """The same batches again: how many were not answered with their
    original offset."""
    wrong = 0
    for pid in pids:
        for p in parts:
            b = record_batch([b"%s-%d-%d-%d" % (tag, pid, p, seq)], pid, 0,
                             seq)
            err, base = conn.produce(topic, p, b)
            if err != NONE or base != offs[(pid, p)]:
                wrong += 1
                if wrong <= 3:
                    t.diag("retry of %d on %s-%d: error %d, offset %d, "
                           "first written at %d" % (pid, topic, p, err,
                                                    base, offs[(pid, p)]))
    return wrong


def hws(conn, topic, parts):
    return [list_offset(conn, topic, p, False) for p in parts]


def check_retries(conn, pids, offs_one, offs_ten, hw_one, hw_ten, what):
    t.eq(retry_all(conn, "one", [0], pids, 1, b"o", offs_one), 0,
         "%s: every one of 1,000 producers' retries on one partition is "
         "answered with its original offset" % what)
    t.eq(retry_all(conn, "ten", range(10), pids, 0, b"t", offs_ten), 0,
         "%s: so is each of their 10,000 retries over 10 partitions" % what)
    t.eq(hws(conn, "one", [0]) + hws(conn, "ten", range(10)),
         hw_one + hw_ten, "%s: no high watermark moved" % what)


def confluent_producers(bootstrap):
    """50 idempotent producers in this process, 200 records each over the
    10 partitions: (delivery errors, values sent)."""
    errors, sent = [], []

    def cb(err, msg):
        if err is not None:
            errors.append(err)

    prods = [Producer({"bootstrap.servers": bootstrap,
                       "enable.idempotence": True, "linger.ms": 5,
                       "message.timeout.ms": 60000})
             for _ in range(50)]
    for i in range(200):
        for k, pr in enumerate(prods):
            v = b"ck-%d-%d" % (k, i)
            pr.produce("ten", v, partition=(i + k) % 10, on_delivery=cb)
            sent.append(v)
        for pr in prods:
            pr.poll(0)
    for pr in prods:
        pr.flush(60)
    return errors, sent


def read_topic(bootstrap, topic, parts, end):
    """Every value of the partitions, up to their ends."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "many",
                  "enable.auto.commit": False, "enable.partition.eof": True})
    c.assign([TopicPartition(topic, p, 0) for p in parts])
    vals, done, deadline = [], set(), time.time() + 60
    while len(done) < len(parts) and time.time() < deadline:
        m = c.poll(0.5)
        if m is None:
            continue
        if m.error():
            if m.error().code() == -191 and m.offset() >= end[m.partition()]:
                done.add(m.partition())
            continue
        vals.append(m.value())
    c.close()
    return vals


def main(tmp):
    n = Node(tmp, props={"num.partitions": "1"})
    n.start()
    try:
        t.ok(n.wait_running(), "node running")
        create_topic(n.bootstrap, "one", 1, 1)
        create_topic(n.bootstrap, "ten", 10, 1)
        wait_state(n.bootstrap, "one", lambda l, r, i: l == 1)
        for p in range(10):
            wait_state(n.bootstrap, "ten", lambda l, r, i: l == 1, p=p)
        conn = Conn(n.port)
        t0 = time.time()
        pids = init_pids(conn, N)
        t.ok(pids is not None and len(set(pids)) == N,
             "1,000 producer ids from InitProducerId")
        _, errs0 = write_all(conn, "one", [0], pids, 0, b"o")
        offs_one, errs1 = write_all(conn, "one", [0], pids, 1, b"o")
        offs_ten, errs2 = write_all(conn, "ten", range(10), pids, 0, b"t")
        t.eq((errs0, errs1, errs2), ({}, {}, {}),
             "each producer's batches to one partition and to 10 written")
        t.diag("1,000 ids, 12,000 batches in %.1f s" % (time.time() - t0))
        hw_one, hw_ten = hws(conn, "one", [0]), hws(conn, "ten", range(10))
        t.eq(hw_one + hw_ten, [2 * N] + [N] * 10,
             "high watermarks: 2,000 on one, 1,000 on each of 10")
        check_retries(conn, pids, offs_one, offs_ten, hw_one, hw_ten,
                      "live")
        dp = conn.describe_producers("one", [0])
        listed = {pr[0]: pr for pr in dp[0][1]}
        t.ok(dp[0][0] == NONE and set(pids) <= set(listed) and
             all(listed[p][2] == 1 for p in pids),
             "DescribeProducers lists all 1,000 (last sequence 1), not 24")

        # 50 open transactions, then 1,000 other idempotent producers
        txp = init_pids(conn, 50)
        first = []
        for i, pid in enumerate(txp):
            err, base = conn.produce("one", 0, record_batch(
                [b"x-%d" % i], pid, 0, 0, True))
            first.append(base if err == NONE else -1)
        t.ok(-1 not in first, "50 transactions opened on one partition")
        lso = list_offset(conn, "one", 0, True)
        t.eq(lso, first[0], "the last stable offset is the earliest open "
             "transaction's first offset")
        more = init_pids(conn, N)
        _, errs = write_all(conn, "one", [0], more, 0, b"m")
        t.eq(errs, {}, "1,000 more idempotent producers write beside them")
        t.eq(list_offset(conn, "one", 0, True), first[0],
             "the last stable offset stays at the earliest open one")
        r = conn.write_txn_markers([(pid, 0, True, {"one": [0]}, 1)
                                    for pid in txp[:40]])
        t.eq(set(r.values()), {NONE}, "40 of them committed (markers)")
        t.eq(list_offset(conn, "one", 0, True), first[40],
             "the last stable offset moves to the earliest still open")
        hw_one = hws(conn, "one", [0])
        conn.close()

        for how in ("clean stop", "SIGKILL"):
            if how == "clean stop":
                n.stop()
            else:
                n.kill()
            n.start()
            t.ok(n.wait_running(), "node running again after a %s" % how)
            wait_state(n.bootstrap, "one", lambda l, r, i: l == 1)
            conn = Conn(n.port)
            check_retries(conn, pids, offs_one, offs_ten, hw_one, hw_ten,
                          "after a " + how)
            t.eq(list_offset(conn, "one", 0, True), first[40],
                 "after a %s: the 10 open transactions hold the last "
                 "stable offset" % how)
            if how == "SIGKILL":
                break
            conn.close()
        r = conn.write_txn_markers([(pid, 0, False, {"one": [0]}, 1)
                                    for pid in txp[40:]])
        t.eq(set(r.values()), {NONE}, "the last 10 aborted")
        t.eq(list_offset(conn, "one", 0, True), hw_one[0] + 10,
             "the last stable offset reaches the high watermark")

        # real clients on the same 10 partitions
        before = hws(conn, "ten", range(10))
        errors, sent = confluent_producers(n.bootstrap)
        t.eq(errors, [], "50 confluent-kafka idempotent producers: no "
             "delivery error")
        after = hws(conn, "ten", range(10))
        t.eq(sum(after) - sum(before), len(sent),
             "the 10 partitions grew by exactly the %d records sent"
             % len(sent))
        vals = [v for v in read_topic(n.bootstrap, "ten", range(10), after)
                if v.startswith(b"ck-")]
        t.ok(len(vals) == len(sent) and set(vals) == set(sent),
             "the topic holds each of their records once (%d read)"
             % len(vals))
        conn.close()

        # a deleted topic's slots give their producers' entries back
        used = metric(n, "runnel_producer_pool_entries_used")
        t.ok(used >= 2 * N, "the pool holds the producers beyond each "
             "partition's 24 (%d)" % used)
        a = admin(n.bootstrap)
        for f in a.delete_topics(["one", "ten"]).values():
            f.result(30)
        del a
        t.ok(wait_for(lambda: metric(
            n, "runnel_producer_pool_entries_used") == 0, 30),
            "deleting the topics returns every entry to the pool")
        t.eq(n.crashes(), [], "no worker crashed")
    finally:
        n.stop()


def metric(n, name):
    for line in n.ctl("metrics").stdout.splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return None


def small_pool(tmp):
    n = Node(tmp, name="small", props={
        "shm.max.producers": "10", "producer.id.expiration.ms": "3000",
        "log.retention.check.interval.ms": "500"})
    n.start()
    try:
        t.ok(n.wait_running(), "small pool: node running")
        create_topic(n.bootstrap, "small", 1, 1)
        wait_state(n.bootstrap, "small", lambda l, r, i: l == 1)
        conn = Conn(n.port)
        txp = init_pids(conn, 34)
        first = [conn.produce_retry("small", 0, record_batch(
            [b"x"], pid, 0, 0, True)) for pid in txp]
        t.eq({e for e, _ in first}, {NONE},
             "34 producers open transactions: 24 inline, 10 in the pool")
        t.eq(metric(n, "runnel_producer_pool_entries_used"), 10,
             "the metrics show the pool's 10 entries used")
        late = init_pids(conn, 1)[0]
        b = record_batch([b"late"], late, 0, 0)
        err, _ = conn.produce("small", 0, b)
        t.eq(err, 7, "a 35th producer's batch is refused with the "
             "retriable REQUEST_TIMED_OUT: no open transaction is evicted")
        t.eq(list_offset(conn, "small", 0, True), first[0][1],
             "the last stable offset still at the earliest transaction")
        t.ok("small-0: the node's producer pool (shm.max.producers) is "
             "full" in n.logtext() and
             metric(n, "runnel_producer_pool_exhausted_total") >= 1,
             "the refusal is logged with the partition and counted")
        r = conn.write_txn_markers([(txp[0], 0, True, {"small": [0]}, 1)])
        t.eq(r, {(txp[0], "small", 0): NONE}, "one transaction committed")
        err, _ = conn.produce("small", 0, b)
        t.eq(err, NONE, "the retry is taken: the committed producer gave "
             "way")
        t.eq(list_offset(conn, "small", 0, True), first[1][1],
             "the last stable offset moved to the next open transaction")
        time.sleep(4.5)  # past producer.id.expiration.ms, and a retention pass
        dp = conn.describe_producers("small", [0])
        listed = {pr[0] for pr in dp[0][1]}
        t.eq(listed, set(txp[1:]), "after producer.id.expiration.ms the "
             "idle producer is gone, the 33 in a transaction stay")
        conn.close()
        t.eq(n.crashes(), [], "small pool: no worker crashed")
    finally:
        n.stop()


def three_nodes(tmp):
    c = Cluster(os.path.join(tmp, "rf3"), 3, props={"replica.lag.time.max.ms": "3000",
                               "min.insync.replicas": "2",
                               "offsets.topic.replication.factor": "3"})
    c.start()
    try:
        t.ok(c.wait_running(60), "three nodes running")
        create_topic(c.bootstrap, "rep", 1, 3)
        st = wait_state(c.bootstrap, "rep",
                        lambda l, r, i: l > 0 and len(i) == 3)
        t.ok(st, "rep has its three replicas in the ISR")
        leader = st[0]
        conn = Conn(c.node(leader).port)
        txp = init_pids(conn, 30)
        first = [conn.produce_retry("rep", 0, record_batch(
            [b"x"], pid, 0, 0, True))[1] for pid in txp]
        pids = init_pids(conn, N)
        offs, errs = write_all(conn, "rep", [0], pids, 0, b"r")
        t.eq(errs, {}, "RF=3: 30 open transactions, then 1,000 producers "
             "write (acks=all)")
        hw = list_offset(conn, "rep", 0, False)
        conn.close()
        c.node(leader).kill()
        st = wait_state(c.bootstrap, "rep",
                        lambda l, r, i: l > 0 and l != leader, 60)
        t.ok(st, "a new leader took over")
        conn = Conn(c.node(st[0]).port)
        t.ok(wait_for(lambda: list_offset(conn, "rep", 0, False) == hw, 30),
             "the new leader's high watermark covers everything")
        t.eq(retry_all(conn, "rep", [0], pids, 0, b"r", offs), 0,
             "the new leader answers every one of 1,000 retries with its "
             "original offset")
        t.eq(list_offset(conn, "rep", 0, False), hw,
             "and its high watermark did not move")
        t.eq(list_offset(conn, "rep", 0, True), first[0],
             "the 30 open transactions hold its last stable offset")
        conn.close()
        t.eq(c.crashes(), [], "no worker crashed in the cluster")
    finally:
        for nd in c.nodes:
            nd.stop()


with TempDir() as tmp:
    main(tmp)
    small_pool(tmp)
    three_nodes(tmp)
t.done()
