"""The exactly-once pipeline under faults. A consume-transform-produce loop
(tests/lib/eos_loop.py, its own process: a read_committed group member on
`in` and a transactional producer writing `out` and the group's offsets in
one transaction per batch) processes 100,000 records while a nemesis, at
random (seeded), SIGKILLs the node coordinating the loop's transactional
id (FindCoordinator key_type 1), the node leading a partition of `out`, or
the loop itself, and starts again what it killed after a short pause.
Afterwards `out` read with read_committed holds each input id exactly once
(the ids are counted directly: history.py's checker judges producers'
acknowledgements, not a transform's output), read_uncommitted holds at
least as many records, and no worker crashed but by the nemesis' SIGKILL.

RUNNEL_EOS_SEED picks the nemesis' seed (else one from the clock,
printed)."""
import collections
import os
import random
import signal
import subprocess
import sys
import time

from confluent_kafka import KafkaError, Consumer, Producer, TopicPartition

from rncluster import create_topic, partition_state, wait_state
from rntest import Cluster, Tap, TempDir, wait_for
from rntxn import Conn

t = Tap()
RECORDS = 100000
PARTS = 4
BATCH = 500
PACE = 0.2           # seconds each transaction is held open: faults land in one
ROUNDS = 3           # of the three faults each, then the loop finishes
TXN_ID = "eos-loop"
GROUP = "eos-group"
LOOP = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lib",
                    "eos_loop.py")
DEADLINE = 200       # seconds for the loop to consume everything
PROPS = {"min.insync.replicas": "2",
         "default.replication.factor": "3",
         "offsets.topic.replication.factor": "3",
         "transaction.state.log.replication.factor": "3",
         "transaction.state.log.min.isr": "2",
         "transaction.state.log.num.partitions": "10",
         "offsets.topic.num.partitions": "10",
         "replica.lag.time.max.ms": "4000",
         "broker.session.timeout.ms": "6000",
         "unclean.leader.election.enable": "false",
         "transaction.abort.timed.out.transaction.cleanup.interval.ms":
             "2000"}

seed = int(os.environ.get("RUNNEL_EOS_SEED", int(time.time()) % 100000))
t.diag("nemesis seed %d (RUNNEL_EOS_SEED=%d to replay)" % (seed, seed))
rng = random.Random(seed)


def fill(bootstrap):
    """RECORDS unique ids into `in`, idempotent, acks=all; how many were
    acknowledged."""
    acked = [0]

    def report(err, msg):
        if err is None:
            acked[0] += 1
    p = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": True,
                  "acks": "all", "linger.ms": 20})
    for i in range(RECORDS):
        while True:
            try:
                p.produce("in", value=b"id-%d" % i, partition=i % PARTS,
                          on_delivery=report)
                break
            except BufferError:
                p.poll(0.1)
        if i % 1000 == 0:
            p.poll(0)
    p.flush(120)
    return acked[0]


def alive_bootstrap(c):
    return ",".join(n.bootstrap for n in c.nodes if n.proc and
                    n.proc.poll() is None)


def group_done(c, ends):
    """The group's committed offsets of `in`: their sum (-1 if unknown)."""
    cons = Consumer({"bootstrap.servers": alive_bootstrap(c),
                     "group.id": GROUP, "enable.auto.commit": False,
                     "isolation.level": "read_committed"})
    try:
        got = cons.committed([TopicPartition("in", p) for p in range(PARTS)],
                             timeout=5)
        return sum(max(tp.offset, 0) for tp in got)
    except Exception:
        return -1
    finally:
        cons.close()


def txn_coordinator(c):
    """The node coordinating TXN_ID, by FindCoordinator key_type 1."""
    for n in c.nodes:
        if not (n.proc and n.proc.poll() is None):
            continue
        try:
            conn = Conn(n.port, timeout=5)
            err, node = conn.find_coordinator(TXN_ID)
            conn.close()
            if err == 0 and node > 0:
                return node
        except (OSError, ValueError):
            pass
    return None


def healthy(c, topics):
    """Every partition of topics led and fully in sync."""
    for topic, parts in topics:
        for p in range(parts):
            st = partition_state(c.bootstrap, topic, p)
            if not st or st[0] <= 0 or len(st[2]) != 3:
                return False
    return True


class Loop:
    def __init__(self, c, tmp):
        self.c = c
        self.events = os.path.join(tmp, "loop.events")
        self.out = open(os.path.join(tmp, "loop.out"), "ab")
        self.proc = None
        self.exits = []

    def start(self):
        self.proc = subprocess.Popen(
            [sys.executable, LOOP, self.c.bootstrap, GROUP, TXN_ID, "in",
             "out", self.events, str(BATCH), str(PACE)],
            stdout=self.out, stderr=subprocess.STDOUT,
            env=dict(os.environ, PYTHONPATH=os.path.dirname(LOOP)))

    def check(self):
        """Start the loop again if it exited on its own (a fatal error)."""
        if self.proc.poll() is not None:
            self.exits.append(self.proc.returncode)
            self.start()

    def kill(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def counts(self):
        ev = collections.Counter()
        recs = 0
        try:
            with open(self.events) as f:
                for line in f:
                    w = line.split()
                    if len(w) < 2:
                        continue
                    ev[w[1]] += 1
                    if w[1] == "commit":
                        recs += int(w[2])
        except OSError:
            pass
        return ev, recs


def nemesis(c, loop, ends, faults):
    """ROUNDS rounds of faults (or fewer, if the group has committed every
    input offset first), then the loop left to finish; True if the group
    has committed every input offset before DEADLINE."""
    kinds = ["coordinator", "out-leader", "loop"]
    deadline = time.monotonic() + DEADLINE
    total = sum(ends)
    order = []
    while time.monotonic() < deadline:
        # a random wait, during which the loop gets ahead
        until = time.monotonic() + rng.uniform(3, 7)
        while time.monotonic() < until:
            loop.check()
            time.sleep(0.2)
        if group_done(c, ends) == total:
            return True
        # each kind once per round, in a random order
        if not order:
            if sum(faults.values()) >= 3 * ROUNDS:
                break
            order = rng.sample(kinds, 3)
        kind = order.pop()
        if kind == "loop":
            loop.kill()
            faults[kind] += 1
            t.diag("%.0f s: SIGKILL the loop" % (time.monotonic() - T0))
            time.sleep(rng.uniform(0.5, 2))
            loop.start()
            continue
        if kind == "coordinator":
            node = txn_coordinator(c)
        else:
            st = partition_state(c.bootstrap, "out", rng.randrange(PARTS))
            node = st[0] if st and st[0] > 0 else None
        if node is None:
            t.diag("%.0f s: no %s found, skipped" % (time.monotonic() - T0,
                                                      kind))
            continue
        faults[kind] += 1
        t.diag("%.0f s: SIGKILL node %d (%s)" % (time.monotonic() - T0,
                                                 node, kind))
        c.node(node).kill()
        until = time.monotonic() + rng.uniform(2, 5)
        while time.monotonic() < until:
            loop.check()
            time.sleep(0.2)
        c.node(node).start()
        # back in every ISR before the next fault, so two faults never
        # overlap into a lost quorum (bounded: the run goes on regardless)
        back = wait_for(lambda: (loop.check() or True) and healthy(
            c, [("in", PARTS), ("out", PARTS), ("__transaction_state", 10),
                ("__consumer_offsets", 10)]), 60, 0.5)
        if not back:
            t.diag("node %d not back in every ISR after 60 s" % node)
    return wait_for(lambda: (loop.check() or True) and
                    group_done(c, ends) == total,
                    max(deadline - time.monotonic(), 1), 1)


def read_out(bootstrap, isolation, timeout=90):
    """Every value of `out`, from the start until each partition reports
    its end (librdkafka's partition EOF: at the last stable offset for
    read_committed, the high watermark else); (values, ends, all ended)."""
    cons = Consumer({"bootstrap.servers": bootstrap, "group.id": "checker",
                     "enable.auto.commit": False,
                     "enable.partition.eof": True,
                     "isolation.level": isolation})
    ends = [cons.get_watermark_offsets(TopicPartition("out", p), timeout=15,
                                       cached=False)[1] for p in range(PARTS)]
    cons.assign([TopicPartition("out", p, 0) for p in range(PARTS)])
    vals, eof = [], set()
    deadline = time.time() + timeout
    while time.time() < deadline and len(eof) < PARTS:
        for m in cons.consume(1000, 0.5):
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    eof.add(m.partition())
                continue
            eof.discard(m.partition())
            vals.append(m.value())
    cons.close()
    return vals, ends, len(eof) == PARTS


with TempDir() as tmp:
    c = Cluster(tmp, 3, props=PROPS)
    c.start()
    loop = None
    try:
        if not t.ok(c.wait_running(60), "three nodes running"):
            t.done()
        create_topic(c.bootstrap, "in", PARTS, 3)
        create_topic(c.bootstrap, "out", PARTS, 3)
        t.ok(wait_for(lambda: healthy(c, [("in", PARTS), ("out", PARTS)]),
                      30, 0.3), "in and out: 4 partitions each, RF 3, in sync")
        t.eq(fill(c.bootstrap), RECORDS, "100,000 ids acknowledged into in")
        probe = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "p"})
        ends = [probe.get_watermark_offsets(TopicPartition("in", p),
                                            timeout=15)[1]
                for p in range(PARTS)]
        probe.close()
        t.eq(sum(ends), RECORDS, "in holds them (offsets %r)" % ends)

        loop = Loop(c, tmp)
        T0 = time.monotonic()
        loop.start()
        faults = collections.Counter()
        done = nemesis(c, loop, ends, faults)
        elapsed = time.monotonic() - T0
        t.ok(done, "the loop committed every input offset within %d s "
             "(%.0f s)" % (DEADLINE, elapsed))
        ev, recs = loop.counts()
        t.diag("faults: %d coordinator kills, %d out-leader kills, %d loop "
               "kills; loop exits on its own: %r"
               % (faults["coordinator"], faults["out-leader"],
                  faults["loop"], loop.exits))
        t.diag("loop: %d starts, %d transactions committed (%d records), %d "
               "aborted by the loop (a killed loop's open one is aborted by "
               "its successor's fencing: counted below as read_uncommitted's "
               "surplus), %d fatal, %d retries; %.0f records/s over %.0f s"
               % (ev["start"], ev["commit"], recs, ev["abort"], ev["fatal"],
                  ev["retry"], RECORDS / elapsed, elapsed))
        t.ok(faults["coordinator"] >= 1 and faults["out-leader"] >= 1 and
             faults["loop"] >= 1, "the nemesis killed the coordinator, an "
             "out leader and the loop at least once each")
        loop.kill()

        # the killed loop's last transaction, if any, is aborted by its
        # timeout: wait until nothing in `out` is unstable
        def stable():
            try:
                rc = Consumer({"bootstrap.servers": c.bootstrap,
                               "group.id": "lso",
                               "isolation.level": "read_committed"})
                ru = Consumer({"bootstrap.servers": c.bootstrap,
                               "group.id": "lso"})
                try:
                    return all(
                        rc.get_watermark_offsets(TopicPartition("out", p),
                                                 timeout=5, cached=False) ==
                        ru.get_watermark_offsets(TopicPartition("out", p),
                                                 timeout=5, cached=False)
                        for p in range(PARTS))
                finally:
                    rc.close()
                    ru.close()
            except Exception:
                return False
        t.ok(wait_for(stable, 60, 1), "out: no transaction left open (the "
             "last stable offsets reach the high watermarks)")

        vals, rc_ends, rc_done = read_out(c.bootstrap, "read_committed")
        t.ok(rc_done, "read_committed read out to its last stable offsets "
             "%r" % rc_ends)
        seen = collections.Counter(vals)
        want = {b"out:id-%d" % i for i in range(RECORDS)}
        lost = sorted(v for v in want if v not in seen)
        dup = sorted(v for v, n in seen.items() if n > 1)
        unexpected = sorted(v for v in seen if v not in want)
        t.diag("read_committed: %d records, %d distinct ids, %d lost, %d "
               "duplicated (%d extra copies), %d unexpected"
               % (len(vals), len(seen), len(lost), len(dup),
                  sum(seen[v] - 1 for v in dup), len(unexpected)))
        if not t.eq(len(lost), 0, "read_committed: no input id lost"):
            t.diag("first lost: %r" % lost[:10])
        if not t.eq(len(dup), 0, "read_committed: no input id duplicated"):
            t.diag("first duplicated: %r" % [(v, seen[v]) for v in dup[:10]])
        t.eq(unexpected, [], "read_committed: nothing but transformed ids")
        uvals, ru_ends, ru_done = read_out(c.bootstrap, "read_uncommitted")
        t.ok(ru_done and len(uvals) >= len(vals), "read_uncommitted sees "
             "at least as many (%d, aborted ones included, %d more)"
             % (len(uvals), len(uvals) - len(vals)))
        t.eq(c.crashes(), [], "no worker crashed (SIGKILLs aside)")
    finally:
        if loop is not None and loop.proc is not None:
            loop.kill()
        c.kill()

t.done()
