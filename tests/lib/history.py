"""A history of what real clients did against a cluster under faults, and
the checker that judges it.

Writers are confluent-kafka (librdkafka) producers, each in its own
thread, sending unique values "w<writer>-<seq>" (followed by "/" and
`pad` x's when a test needs bulk, e.g. to fill a disk) and recording each send's
outcome from the delivery report: acknowledged (with partition and
offset), failed, or unknown (no report by the end). A tailing reader
records every (partition, offset, value) it sees while the faults run;
after healing, a final read from the beginning records the log again.

check() reports per partition:
  lost          acknowledged, never read in the final read
  duplicated    one value at two offsets (a failure with idempotence on)
  inconsistent  two reads of one offset that returned different values
  reordered     a writer's acknowledged values out of send order
  unexpected    read but never sent
"""
import re
import threading
import time

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition


# what any run's writers send; anything else in the log is unexpected
_VALUE = re.compile(r"^(r\d+/)?w\d+-\d+(/x+)?$")


class Writer(threading.Thread):
    def __init__(self, wid, bootstrap, topic, idempotent=True, acks="all",
                 rate=200, prefix="", pad=0):
        super().__init__(daemon=True)
        self.wid, self.topic, self.rate = wid, topic, rate
        self.prefix = prefix
        self.pad = "/" + "x" * pad if pad else ""
        self.sent = []            # values in send order
        self.acked = {}           # value -> (partition, offset)
        self.failed = {}          # value -> error name
        self.stop_flag = threading.Event()
        self.p = Producer({
            "bootstrap.servers": bootstrap,
            "enable.idempotence": idempotent,
            "acks": acks,
            "linger.ms": 5,
            "message.timeout.ms": 120000,
            "retries": 1000000 if idempotent else 5,
        })

    def _report(self, err, msg):
        v = msg.value().decode()
        if err is None:
            self.acked[v] = (msg.partition(), msg.offset())
        else:
            self.failed[v] = err.name()

    def run(self):
        seq = 0
        gap = 1.0 / self.rate
        while not self.stop_flag.is_set():
            v = "%sw%d-%d%s" % (self.prefix, self.wid, seq, self.pad)
            try:
                self.p.produce(self.topic, value=v.encode(), key=v.encode(),
                               on_delivery=self._report)
                self.sent.append(v)
                seq += 1
            except BufferError:
                pass
            self.p.poll(0)
            time.sleep(gap)

    def finish(self, timeout=120):
        self.stop_flag.set()
        self.join()
        self.p.flush(timeout)


class Tail(threading.Thread):
    """Reads every partition from the start while the faults run (assign(),
    or the consumer a subclass hands in)."""

    def __init__(self, bootstrap, topic, partitions, consumer=None):
        super().__init__(daemon=True)
        self.seen = {}  # (partition, offset) -> value
        self.clashes = []
        self.stop_flag = threading.Event()
        self.c = consumer
        if self.c is None:
            self.c = Consumer({"bootstrap.servers": bootstrap,
                               "group.id": "tail",
                               "check.crcs": True,
                               "enable.auto.commit": False,
                               "auto.offset.reset": "earliest"})
            self.c.assign([TopicPartition(topic, p, 0)
                           for p in range(partitions)])

    def run(self):
        while not self.stop_flag.is_set():
            m = self.c.poll(0.2)
            if m is not None and m.error() is not None and \
                    m.error().code() == KafkaError._BAD_MSG:
                # a record served with a failing CRC: never acceptable
                self.clashes.append(((m.partition(), m.offset()), "CRC",
                                     str(m.error())))
            if m is None or m.error():
                continue
            key, v = (m.partition(), m.offset()), m.value().decode()
            old = self.seen.setdefault(key, v)
            if old != v:
                self.clashes.append((key, old, v))
            self.read_one(m)

    def read_one(self, m):
        """After each record read (a group member commits here)."""

    def finish(self):
        self.stop_flag.set()
        self.join()
        self.c.close()


class GroupTail(Tail):
    """Reads the topic as a member of a consumer group (subscribe, offsets
    committed after each record), so a fault that moves the group
    coordinator or a partition's leader shows as a rebalance and a resume
    from the committed offsets: the group may read a record twice, never
    two values at one offset, and must read every acknowledged one."""

    def __init__(self, bootstrap, topic, group):
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                      "check.crcs": True,
                      "enable.auto.commit": False,
                      "auto.offset.reset": "earliest",
                      "session.timeout.ms": 10000})
        c.subscribe([topic])
        super().__init__(bootstrap, topic, 0, consumer=c)

    def read_one(self, m):
        try:
            self.c.commit(message=m, asynchronous=True)
        except Exception:
            pass  # a rebalance under way: the next record commits


def final_read(bootstrap, topic, partitions, timeout=60):
    """{(partition, offset): value} of the whole log, read after healing."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "final",
                  "enable.auto.commit": False,
                  "auto.offset.reset": "earliest"})
    ends = {}
    deadline = time.monotonic() + timeout
    for p in range(partitions):
        while True:
            try:
                ends[p] = c.get_watermark_offsets(
                    TopicPartition(topic, p), timeout=5)[1]
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    got, done = {}, {p for p, e in ends.items() if e == 0}
    while len(done) < partitions and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is None or m.error():
            continue
        got[(m.partition(), m.offset())] = m.value().decode()
        if m.offset() + 1 >= ends[m.partition()]:
            done.add(m.partition())
    c.close()
    return got, ends


def check(writers, tail, final, idempotent=True, prefix="", group=None):
    """Counts and examples of each anomaly; 'ok' when none that counts.
    Values of earlier runs on the same topic (another prefix) are only
    compared offset by offset. With a GroupTail, what it read counts for
    inconsistency too, and an acknowledged record it never read is
    group_missed."""
    sent = {v: w for w in writers for v in w.sent}
    acked = {v: po for w in writers for v, po in w.acked.items()}
    where = {}
    for (p, o), v in final.items():
        if v.startswith(prefix):
            where.setdefault(v, []).append((p, o))
    lost = sorted(v for v in acked if v not in where)
    duplicated = sorted(v for v, places in where.items() if len(places) > 1)
    unexpected = sorted(v for v in where if v not in sent) + sorted(
        v for v in final.values() if not _VALUE.match(v))
    inconsistent = [(k, v, final[k]) for k, v in tail.seen.items()
                    if k in final and final[k] != v] + tail.clashes
    group_missed = []
    if group is not None:
        inconsistent += [(k, v, final[k]) for k, v in group.seen.items()
                         if k in final and final[k] != v] + group.clashes
        got = set(group.seen.values())
        group_missed = sorted(v for v in acked if v in where and v not in got)
    # offsets the producer was told must hold its value
    misplaced = sorted(v for v, po in acked.items()
                       if v in where and po not in where[v])
    reordered = []
    for w in writers:
        last = {}
        for v in w.sent:
            if v not in acked or v not in where:
                continue
            p, o = where[v][0]
            if o < last.get(p, -1):
                reordered.append(v)
            last[p] = max(o, last.get(p, -1))
    res = {
        "attempted": len(sent),
        "acknowledged": len(acked),
        "failed": sum(len(w.failed) for w in writers),
        "unknown": sum(len(w.sent) - len(w.acked) - len(w.failed)
                       for w in writers),
        "read": sum(len(x) for x in where.values()),
        "lost": lost,
        "duplicated": duplicated,
        "inconsistent": inconsistent,
        "misplaced": misplaced,
        "reordered": reordered,
        "unexpected": unexpected,
        "group_missed": group_missed,
        "grouped": group is not None,
    }
    bad = lost or inconsistent or misplaced or reordered or unexpected or \
        group_missed or (duplicated and idempotent)
    res["ok"] = not bad
    return res


def summary(res):
    return ("attempted %d, acknowledged %d, failed %d, unknown %d, read %d; "
            "lost %d, duplicated %d, inconsistent %d, misplaced %d, "
            "reordered %d, unexpected %d" % (
                res["attempted"], res["acknowledged"], res["failed"],
                res["unknown"], res["read"], len(res["lost"]),
                len(res["duplicated"]), len(res["inconsistent"]),
                len(res["misplaced"]), len(res["reordered"]),
                len(res["unexpected"])))


def leader_of(bootstrap, topic, partition, timeout=20):
    """The partition's leader, asked until one is known; -1 if none."""
    from confluent_kafka.admin import AdminClient
    from rntest import wait_for
    admin = AdminClient({"bootstrap.servers": bootstrap})

    def ask():
        try:
            md = admin.list_topics(topic, timeout=3)
            leader = md.topics[topic].partitions[partition].leader
            return leader if leader >= 0 else None
        except Exception:
            return None
    return wait_for(ask, timeout, 0.2) or -1


def fully_replicated(bootstrap, topic, partitions, rf):
    """Every partition has a leader and all rf replicas in its ISR."""
    from confluent_kafka.admin import AdminClient
    try:
        md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(
            topic, timeout=3)
        ps = md.topics[topic].partitions
        return len(ps) == partitions and all(
            p.leader >= 0 and len(p.isrs) == rf for p in ps.values())
    except Exception:
        return False


_runs = 0


def run(t, cl, topic, partitions, inject, heal, hold=15.0, writers=3,
        idempotent=True, rf=3, acks="all", group=False, writer_opts=None):
    """Writers and a tail run; inject() the fault, hold it, heal() it, then
    wait for full replication, read everything back and check. With group,
    a consumer group member reads too and must have read every record
    before the end. writer_opts go to each Writer (rate, pad). Returns the
    check result (also printed as a diagnostic)."""
    global _runs
    _runs += 1
    prefix = "r%d/" % _runs
    ws = [Writer(i, cl.bootstrap, topic, idempotent=idempotent, acks=acks,
                 prefix=prefix, **(writer_opts or {})) for i in range(writers)]
    tail = Tail(cl.bootstrap, topic, partitions)
    gtail = GroupTail(cl.bootstrap, topic, "hist-%s" % topic) if group \
        else None
    for w in ws:
        w.start()
    tail.start()
    if gtail:
        gtail.start()
    time.sleep(3)
    before = sum(len(w.acked) for w in ws)
    inject()
    time.sleep(hold)
    during = sum(len(w.acked) for w in ws) - before
    heal()
    healed = time.monotonic()
    from rntest import wait_for
    wait_for(lambda: fully_replicated(cl.bootstrap, topic, partitions, rf),
             90, 0.5)
    service = time.monotonic() - healed
    time.sleep(3)
    for w in ws:
        w.finish()
    tail.finish()
    final, _ = final_read(cl.bootstrap, topic, partitions)
    if gtail:
        # the group catches up after healing: give it the time to
        wait_for(lambda: all(k in gtail.seen for k in final), 90, 0.5)
        gtail.finish()
    res = check(ws, tail, final, idempotent, prefix, gtail)
    res["acked_during_fault"] = during
    res["heal_to_full_replication_s"] = service
    t.diag("%s; acknowledged during the fault %d; full replication %.1f s "
           "after healing" % (summary(res), during, service))
    if gtail:
        t.diag("the group read %d records, missed %d"
               % (len(gtail.seen), len(res["group_missed"])))
    for k in ("lost", "duplicated", "inconsistent", "misplaced",
              "reordered", "unexpected", "group_missed"):
        if res[k]:
            t.diag("%s (first 5): %r" % (k, res[k][:5]))
    return res


# what each anomaly means to a user, in the order judge() checks them
ANOMALIES = (("lost", "no acknowledged write lost"),
             ("group_missed", "the consumer group read every acknowledged "
              "write"),
             ("duplicated", "no value at two offsets"),
             ("inconsistent", "no offset read with two values"),
             ("misplaced", "every value at its acknowledged offset"),
             ("reordered", "each writer's values in send order"),
             ("unexpected", "nothing read that was not sent"))


def judge(t, res, what, during=True):
    """The TAP lines of one run: writers were acknowledged (during the
    fault too, unless during is False) and no anomaly."""
    t.ok(res["acknowledged"] > 1000, "%s: writers were acknowledged (%d)"
         % (what, res["acknowledged"]))
    if during:
        t.ok(res["acked_during_fault"] > 0, "%s: writes went on being "
             "acknowledged during the fault (%d)"
             % (what, res["acked_during_fault"]))
    for k, name in ANOMALIES:
        if k == "group_missed" and not res.get("grouped"):
            continue
        t.eq(len(res[k]), 0, "%s: %s" % (what, name))


def create_topics(t, cl, names, partitions, rf=3):
    """Topics created and fully replicated, one TAP line each."""
    from confluent_kafka.admin import AdminClient, NewTopic
    from rntest import wait_for
    admin = AdminClient({"bootstrap.servers": cl.bootstrap})
    for name in names:
        admin.create_topics([NewTopic(name, partitions, rf)])[name].result(30)
        t.ok(wait_for(lambda: fully_replicated(cl.bootstrap, name,
                                               partitions, rf), 30),
             "topic %s: %d partitions, RF %d, fully replicated"
             % (name, partitions, rf))
