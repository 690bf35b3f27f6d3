"""runnel-transactions against a real runneld: a transaction left open by a
producer whose coordinator never ends it (tests/lib/rntxn.py) holds back
read_committed readers at its first offset; describe-producers shows the
producer with that start offset (Kafka's columns), find-hanging reports it
once it is older than --max-transaction-timeout, `abort --start-offset`
writes its abort marker, and then read_committed readers (confluent-kafka,
kcat) move past it and find-hanging finds none. The other form of abort,
bad usage and an unknown partition are checked too.

With the transaction coordinator: a confluent-kafka transactional producer
with an open transaction shows in `list` (Ongoing) and `describe` (its
partition); find-hanging, even with a 0 minute timeout, does not report it
(its coordinator holds the partition), but does report a batch written
under that producer id on a partition the coordinator never added; after
the commit `describe` shows CompleteCommit and `list` still lists it; an
unknown transactional id is Kafka's error."""
import os
import subprocess
import time

from confluent_kafka import Consumer, Producer, TopicPartition

from rncluster import create_topic, wait_state
from rntest import BUILDDIR, Node, Tap, TempDir, wait_for
from rntxn import Conn, record_batch

TOOL = os.path.join(BUILDDIR, "runnel-transactions")
TOPIC = "hung"
TXT = "txt"       # the confluent-kafka transactional producer's topic
STRAY = "stray"   # its producer id written there without the coordinator
TXN_ID = "tool-open"
t = Tap()


def run(node, *args):
    return subprocess.run([TOOL, "--bootstrap-server", node.bootstrap] + list(args),
                          capture_output=True, text=True, timeout=60)


def committed_values(bootstrap, timeout=15):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "tt",
                  "enable.auto.commit": False, "enable.partition.eof": True,
                  "isolation.level": "read_committed"})
    c.assign([TopicPartition(TOPIC, 0, 0)])
    vals, deadline = [], time.time() + timeout
    while time.time() < deadline:
        m = c.poll(0.3)
        if m is None:
            continue
        if m.error():
            if m.error().code() == -191:
                break
            continue
        vals.append(m.value())
    c.close()
    return vals


def kcat_committed(bootstrap):
    r = subprocess.run(["kcat", "-b", bootstrap, "-C", "-t", TOPIC, "-p", "0",
                        "-o", "beginning", "-e", "-q", "-f", "%s\\n",
                        "-X", "isolation.level=read_committed"],
                       capture_output=True, timeout=60)
    return r.stdout.decode().split()


def rows(out):
    """The data lines of a column output, split (the header left out)."""
    lines = out.strip().splitlines()
    return [ln.split() for ln in lines[1:]]


with TempDir() as tmp:
    n = Node(tmp, props={"transaction.state.log.num.partitions": "3",
                         "transaction.state.log.replication.factor": "1",
                         "transaction.state.log.min.isr": "1"})
    n.start()
    try:
        t.ok(n.wait_running(), "node running")
        create_topic(n.bootstrap, TOPIC, 1, 1)
        wait_state(n.bootstrap, TOPIC, lambda l, r, i: l == 1)
        conn = Conn(n.port)
        _, pa, _ = conn.init_producer_id()
        _, pb, _ = conn.init_producer_id()
        errs = [conn.produce_retry(TOPIC, 0, record_batch([b"c0", b"c1"]))[0],  # 0-1
                conn.produce(TOPIC, 0, record_batch([b"h0"], pa, 0, 0, True))[0],  # 2
                conn.produce(TOPIC, 0, record_batch([b"p0"]))[0],                 # 3
                conn.produce(TOPIC, 0, record_batch([b"b0"], pb, 0, 0, True))[0],  # 4
                conn.write_txn_markers([(pb, 0, True, {TOPIC: [0]}, 3)])
                .get((pb, TOPIC, 0)),                                          # 5
                conn.produce(TOPIC, 0, record_batch([b"p1"]))[0]]                 # 6
        t.eq(errs, [0] * 6, "A's transaction left open at offset 2; B committed")
        t.eq(committed_values(n.bootstrap), [b"c0", b"c1"],
             "read_committed stops at A's open transaction")

        r = run(n, "describe-producers", "--topic", TOPIC, "--partition", "0")
        t.eq(r.returncode, 0, "describe-producers exits 0")
        t.ok(r.stdout.split("\n")[0].split() == [
            "ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch",
            "LastSequence", "LastTimestamp", "CurrentTransactionStartOffset"],
            "describe-producers prints Kafka's columns")
        got = {int(row[0]): row for row in rows(r.stdout)}
        t.ok(pa in got and got[pa][1] == "0" and got[pa][2] == "-1" and
             got[pa][3] == "0" and got[pa][5] == "2",
             "A: epoch 0, no marker yet, last sequence 0, transaction from offset 2")
        t.ok(pb in got and got[pb][2] == "3" and got[pb][5] == "None",
             "B: coordinator epoch 3 from its marker, no open transaction")
        now_ms = int(time.time() * 1000)
        t.ok(pa in got and abs(int(got[pa][4]) - now_ms) < 60000,
             "A's last timestamp is its last write's time")
        r = run(n, "describe-producers", "--topic", TOPIC, "--partition", "0",
                "--broker-id", "1")
        t.eq(sorted(int(row[0]) for row in rows(r.stdout)), sorted([pa, pb]),
             "describe-producers --broker-id asks that broker")

        # a real transactional producer, its transaction left open
        for name in (TXT, STRAY):
            create_topic(n.bootstrap, name, 1, 1)
            wait_state(n.bootstrap, name, lambda l, r, i: l == 1)
        tp = Producer({"bootstrap.servers": n.bootstrap,
                       "transactional.id": TXN_ID,
                       "transaction.timeout.ms": 60000})
        tp.init_transactions(30)
        tp.begin_transaction()
        tp.produce(TXT, b"open", partition=0)
        t.eq(tp.flush(30), 0, "confluent-kafka: a transaction open on txt-0")

        r = run(n, "list")
        t.ok(r.returncode == 0 and r.stdout.split("\n")[0].split() == [
            "TransactionalId", "Coordinator", "ProducerId", "TransactionState"],
            "list prints Kafka's columns")
        listed = {row[0]: row for row in rows(r.stdout)}
        t.ok(TXN_ID in listed and listed[TXN_ID][1] == "1" and
             listed[TXN_ID][3] == "Ongoing",
             "list: the open transaction, coordinator 1, Ongoing")
        if TXN_ID not in listed:
            t.diag(r.stdout + r.stderr)
        tpid = int(listed[TXN_ID][2]) if TXN_ID in listed else -1
        r = run(n, "describe", "--transactional-id", TXN_ID)
        t.ok(r.returncode == 0 and r.stdout.split("\n")[0].split() == [
            "CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch",
            "TransactionState", "TransactionTimeoutMs",
            "CurrentTransactionStartTimeMs", "TransactionDurationMs",
            "TopicPartitions"], "describe prints Kafka's columns")
        d = rows(r.stdout)
        t.ok(len(d) == 1 and d[0][:3] == ["1", TXN_ID, str(tpid)] and
             d[0][4] == "Ongoing" and d[0][5] == "60000" and
             d[0][8] == TXT + "-0",
             "describe: coordinator 1, its producer id, Ongoing, 60000 ms, txt-0")
        t.ok(len(d) == 1 and abs(int(d[0][6]) - time.time() * 1000) < 60000 and
             0 <= int(d[0][7]) < 60000,
             "describe: the start time is now, the duration under a minute")
        if len(d) != 1:
            t.diag(r.stdout + r.stderr)
        tepoch = int(d[0][3]) if len(d) == 1 else 0
        r = run(n, "describe-producers", "--topic", TXT, "--partition", "0")
        t.ok([row[5] for row in rows(r.stdout) if int(row[0]) == tpid] == ["0"],
             "DescribeProducers shows its open transaction on txt-0 at offset 0")
        # the same producer id and epoch on a partition the coordinator
        # never added: nothing will end that one
        t.eq(conn.produce(STRAY, 0, record_batch([b"s"], tpid, tepoch, 0, True))[0],
             0, "a transactional batch of that producer on stray-0, no AddPartitionsToTxn")

        r = run(n, "find-hanging", "--broker-id", "1")
        t.ok(r.returncode == 0 and "No hanging transactions found" in r.stdout,
             "find-hanging: a fresh open transaction is not hanging (15 min default)")
        time.sleep(1.1)
        r = run(n, "find-hanging", "--topic", TOPIC, "--max-transaction-timeout", "0")
        hung = rows(r.stdout)
        t.ok(r.returncode == 0 and len(hung) == 1 and hung[0][0] == TOPIC and
             hung[0][1] == "0" and int(hung[0][2]) == pa and hung[0][5] == "2",
             "find-hanging --topic with a 0 minute timeout reports A's transaction")
        r = run(n, "find-hanging", "--broker-id", "1", "--max-transaction-timeout", "0")
        t.eq(sorted((row[0], int(row[2])) for row in rows(r.stdout)),
             sorted([(TOPIC, pa), (STRAY, tpid)]),
             "find-hanging --broker-id reports it and the stray batch, not the "
             "open transaction its coordinator holds")
        if r.returncode != 0:
            t.diag(r.stderr)
        r = run(n, "find-hanging", "--topic", TXT, "--max-transaction-timeout", "0")
        t.ok(r.returncode == 0 and "No hanging transactions found" in r.stdout,
             "find-hanging --topic txt: the coordinator's open transaction is not hanging")
        r = run(n, "list", "--duration-filter", "0")
        t.ok(TXN_ID in [row[0] for row in rows(r.stdout)],
             "list --duration-filter 0 lists it")
        r = run(n, "list", "--duration-filter", "3600000")
        t.ok(r.returncode == 0 and TXN_ID not in [row[0] for row in rows(r.stdout)],
             "list --duration-filter 3600000 leaves it out")

        tp.commit_transaction(30)
        # EndTxn answers once PrepareCommit is stored; the markers follow

        def described():
            return rows(run(n, "describe", "--transactional-id", TXN_ID).stdout)
        t.ok(wait_for(lambda: [row[4] for row in described()] ==
                      ["CompleteCommit"], 15, 0.3),
             "after the commit describe shows CompleteCommit")
        d = described()
        t.ok(len(d) == 1 and len(d[0]) == 8 and d[0][2] == str(tpid),
             "its producer id, and no partitions left")
        if len(d) != 1 or len(d[0]) != 8:
            t.diag(r.stdout + r.stderr)
        r = run(n, "list")
        t.ok([row[3] for row in rows(r.stdout) if row[0] == TXN_ID] ==
             ["CompleteCommit"], "list still lists it, CompleteCommit")
        r = run(n, "find-hanging", "--topic", STRAY, "--max-transaction-timeout", "0")
        t.eq([int(row[2]) for row in rows(r.stdout)], [tpid],
             "the stray batch still hangs after the commit")
        r = run(n, "describe", "--transactional-id", "nosuch")
        t.ok(r.returncode == 1 and "Failed to describe transaction state of "
             "transactional-id `nosuch`: The transactionalId could not be found"
             in r.stderr, "describe of an unknown id: Kafka's error, exit 1")
        r = run(n, "describe")
        t.eq(r.returncode, 2, "describe without --transactional-id: usage, exit 2")
        tp = None

        r = run(n, "abort", "--topic", TOPIC, "--partition", "0", "--start-offset", "3")
        t.ok(r.returncode == 1 and "no open transaction starts at offset 3" in r.stderr,
             "abort at an offset where no transaction starts fails (exit 1)")
        r = run(n, "abort", "--topic", TOPIC, "--partition", "0", "--start-offset", "2")
        t.ok(r.returncode == 0 and str(pa) in r.stdout,
             "abort --start-offset 2 aborts A's transaction")
        if r.returncode != 0:
            t.diag(r.stderr)
        t.ok(wait_for(lambda: committed_values(n.bootstrap) ==
                      [b"c0", b"c1", b"p0", b"b0", b"p1"], 15, 0.5),
             "read_committed (confluent-kafka) moves past it, A's record left out")
        t.eq(kcat_committed(n.bootstrap), ["c0", "c1", "p0", "b0", "p1"],
             "kcat read_committed agrees")
        r = run(n, "find-hanging", "--topic", TOPIC, "--partition", "0",
                "--max-transaction-timeout", "0")
        t.ok(r.returncode == 0 and "No hanging transactions found" in r.stdout,
             "find-hanging finds none after the abort")
        r = run(n, "describe-producers", "--topic", TOPIC, "--partition", "0")
        got = {int(row[0]): row for row in rows(r.stdout)}
        t.ok(pa in got and got[pa][5] == "None" and got[pa][2] == "0",
             "A has no open transaction; the tool's marker used coordinator epoch 0")

        # the explicit form
        _, pc, _ = conn.init_producer_id()
        conn.produce(TOPIC, 0, record_batch([b"x"], pc, 0, 0, True))
        r = run(n, "abort", "--topic", TOPIC, "--partition", "0", "--producer-id",
                str(pc), "--producer-epoch", "0", "--coordinator-epoch", "7")
        t.eq(r.returncode, 0, "abort --producer-id --producer-epoch --coordinator-epoch")
        r = run(n, "describe-producers", "--topic", TOPIC, "--partition", "0")
        got = {int(row[0]): row for row in rows(r.stdout)}
        t.ok(pc in got and got[pc][5] == "None" and got[pc][2] == "7",
             "its transaction is ended by a marker of coordinator epoch 7")
        r = run(n, "abort", "--topic", TOPIC, "--partition", "0", "--producer-id",
                str(pc), "--producer-epoch", "0", "--coordinator-epoch", "6")
        t.ok(r.returncode == 1 and "TRANSACTION_COORDINATOR_FENCED" in r.stderr,
             "an older coordinator epoch is refused with Kafka's error")

        # errors and what is not served yet
        r = run(n, "describe-producers", "--topic", TOPIC, "--partition", "5")
        t.ok(r.returncode == 1 and "UNKNOWN_TOPIC_OR_PARTITION" in r.stderr,
             "an unknown partition: UNKNOWN_TOPIC_OR_PARTITION, exit 1")
        r = run(n, "describe-producers", "--topic", TOPIC, "--partition", "0",
                "--broker-id", "9")
        t.eq(r.returncode, 1, "an unknown broker id: exit 1")
        r = run(n, "abort", "--topic", TOPIC)
        t.eq(r.returncode, 2, "abort without its options: usage, exit 2")
        r = subprocess.run([TOOL, "--help"], capture_output=True, text=True)
        t.ok(r.returncode == 0 and "find-hanging" in r.stdout, "--help prints the usage")
    finally:
        n.stop()

t.done()
