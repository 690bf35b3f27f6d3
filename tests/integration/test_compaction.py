"""Log compaction on a real runneld: 100,000 updates over 1,000 keys (part of
them compressed with each codec) and tombstones for 100 keys; after cleaning a
full read gives exactly the latest value of each live key at its original
offset, the tombstones go after delete.retention.ms, and a record without a
key is refused."""
import os
import time

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from rntest import Node, Tap, TempDir, wait_for

TOPIC = "compacted"
KEYS = 1000
UPDATES = 100000
DELETED = 100

t = Tap()


def produce(bootstrap, records, compression):
    """Produce (key, value) pairs in order; returns {key: offset} of the last."""
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20,
                  "acks": "all", "compression.type": compression,
                  "batch.num.messages": 500, "batch.size": 65536,
                  "enable.idempotence": True})
    last, errors = {}, []

    def dr(err, msg):
        if err is not None:
            errors.append(err)
        else:
            k = msg.key().decode()
            if last.get(k, -1) < msg.offset():
                last[k] = msg.offset()
    for k, v in records:
        while True:
            try:
                p.produce(TOPIC, key=k.encode(), value=v, on_delivery=dr)
                break
            except BufferError:
                p.poll(0.05)
    p.flush(60)
    return last, errors


def read_all(bootstrap):
    """Every record from the start to the high watermark: [(offset, key, value)]."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused",
                  "enable.auto.commit": False, "enable.partition.eof": True})
    _, hw = c.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=10)
    c.assign([TopicPartition(TOPIC, 0, 0)])
    out, deadline = [], time.time() + 30
    while time.time() < deadline:
        m = c.poll(1.0)
        if m is None:
            continue
        if m.error():
            if m.error().code() == KafkaError._PARTITION_EOF:
                break
            continue
        out.append((m.offset(), m.key().decode() if m.key() else None, m.value()))
        if m.offset() + 1 >= hw:
            break
    c.close()
    return out


with TempDir() as tmp:
    n = Node(tmp, props={"log.cleaner.backoff.ms": "200"})
    n.start()
    try:
        t.ok(n.wait_running() is not None, "node is up with its log cleaner")
        t.ok("log-cleaner-0" in n.workers(), "runnelctl status lists the log-cleaner worker")
        a = AdminClient({"bootstrap.servers": n.bootstrap})
        a.create_topics([NewTopic(TOPIC, 1, 1, config={
            "cleanup.policy": "compact", "segment.bytes": "262144",
            "segment.ms": "2000", "min.cleanable.dirty.ratio": "0.01",
            "delete.retention.ms": "4000"})])[TOPIC].result(20)

        expect = {}     # key -> (offset, value) of its last record
        errors = []
        codecs = ["none", "gzip", "snappy", "lz4", "zstd"]
        per = UPDATES // len(codecs)
        for ci, codec in enumerate(codecs):
            recs = []
            for i in range(ci * per, (ci + 1) * per):
                k = "k%04d" % (i % KEYS)
                recs.append((k, ("%s-%d" % (k, i)).encode()))
            last, errs = produce(n.bootstrap, recs, codec)
            errors += errs
            vals = dict(recs)
            for k, off in last.items():
                expect[k] = (off, vals[k])
        tombs = [("k%04d" % i, None) for i in range(DELETED)]
        last, errs = produce(n.bootstrap, tombs, "none")
        errors += errs
        for k, off in last.items():
            expect[k] = (off, None)
        t.eq(errors, [], "100,000 updates and 100 tombstones acknowledged")

        # a record past segment.ms rolls the segment holding the tail
        time.sleep(2.5)
        last, errs = produce(n.bootstrap, [("marker", b"roll")], "none")
        marker_off = last.get("marker")

        def check(recs, tombstones_gone):
            seen, why = {}, None
            for off, k, v in recs:
                if k == "marker":
                    continue
                if k in seen:
                    return "key %s twice (offsets %d and %d)" % (k, seen[k][0], off)
                seen[k] = (off, v)
            for k, (off, v) in expect.items():
                got = seen.get(k)
                if v is None:
                    if tombstones_gone and got is not None:
                        return "tombstone of %s still there" % k
                    if got is not None and got != (off, None):
                        return "deleted key %s reads %r" % (k, got)
                elif got != (off, v):
                    return "key %s: want %r, read %r" % (k, (off, v), got)
            return why

        state = {}

        def cleaned():
            recs = read_all(n.bootstrap)
            state["recs"] = recs
            state["why"] = check(recs, False)
            return state["why"] is None
        ok = wait_for(cleaned, timeout=40, step=1.0)
        t.ok(ok, "after cleaning, each live key reads once: its latest value at its "
                 "original offset (%s)" % state.get("why"))
        recs = state.get("recs", [])
        t.ok(len(recs) <= KEYS + 1 and len(recs) >= KEYS - DELETED,
             "the full read holds %d records (from %d written)" % (len(recs), UPDATES + DELETED + 1))
        t.ok(marker_off is not None and recs and recs[-1][0] == marker_off,
             "the active segment's record is read last, at its offset")

        def tombstones_gone():
            recs = read_all(n.bootstrap)
            state["why"] = check(recs, True)
            return state["why"] is None
        t.ok(wait_for(tombstones_gone, timeout=30, step=1.0),
             "tombstones are gone after delete.retention.ms (%s)" % state.get("why"))

        # kafka-python (no zstd here) over holes and empty batches too
        from kafka import KafkaConsumer, TopicPartition as KTP
        KP = "compacted-kp"
        a.create_topics([NewTopic(KP, 1, 1, config={
            "cleanup.policy": "compact", "segment.bytes": "16384",
            "segment.ms": "2000", "min.cleanable.dirty.ratio": "0.01"})])[KP].result(20)
        p = Producer({"bootstrap.servers": n.bootstrap, "linger.ms": 5,
                      "batch.size": 8192, "compression.type": "gzip"})
        for i in range(5000):
            p.produce(KP, key=b"k%02d" % (i % 100), value=b"%d" % i)
            if i % 1000 == 0:
                p.flush(10)
        p.flush(30)
        time.sleep(2.5)
        p.produce(KP, key=b"zz", value=b"roll")
        p.flush(10)

        def kp_read():
            kc = KafkaConsumer(bootstrap_servers=n.bootstrap, group_id=None,
                               enable_auto_commit=False, consumer_timeout_ms=3000)
            kc.assign([KTP(KP, 0)])
            kc.seek_to_beginning()
            out = [(m.offset, m.key, m.value) for m in kc]
            kc.close()
            return out
        got = {}

        def kp_compacted():
            got["r"] = kp_read()
            want = {b"k%02d" % (i % 100): b"%d" % i for i in range(4900, 5000)}
            want[b"zz"] = b"roll"
            # every key once, with its latest value
            return len(got["r"]) == 101 and {k: v for _, k, v in got["r"]} == want
        t.ok(wait_for(kp_compacted, timeout=30, step=1.0),
             "kafka-python reads a compacted gzip log: latest values, holes skipped "
             "(%d records)" % len(got.get("r", [])))

        p = Producer({"bootstrap.servers": n.bootstrap, "retries": 0})
        res = []
        p.produce(TOPIC, value=b"no key", on_delivery=lambda e, m: res.append(e))
        p.flush(20)
        t.ok(res and res[0] is not None and res[0].code() == KafkaError.INVALID_RECORD,
             "a record without a key is refused with INVALID_RECORD (%s)" % (res[0] if res else None))
        p = Producer({"bootstrap.servers": n.bootstrap, "retries": 0,
                      "compression.type": "gzip", "linger.ms": 500})
        # connected and the partition known first: otherwise a slow
        # metadata answer (sanitizer builds) can outlast the linger and
        # the two records leave in separate batches
        p.produce(TOPIC, key=b"warm", value=b"up")
        p.flush(20)
        res = []
        p.produce(TOPIC, key=b"with-key", value=b"a", on_delivery=lambda e, m: res.append(e))
        p.produce(TOPIC, value=b"no key", on_delivery=lambda e, m: res.append(e))
        p.flush(20)
        t.ok(len(res) == 2 and all(e is not None and e.code() == KafkaError.INVALID_RECORD
                                   for e in res),
             "a gzip batch holding a record without a key is refused whole (%s)" % res)
        t.ok("cleaned up to offset" in n.logtext(), "the cleaner logs its cleanings")
        t.eq(n.crashes(), [], "no worker crashed")
    finally:
        n.stop()
t.done()
