"""confluent-kafka against a real runneld: AdminClient, Producer with delivery reports, Consumer with assign."""
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic

from rntest import Node, Tap, TempDir

t = Tap()

with TempDir() as tmp:
    n = Node(tmp)
    n.start()
    try:
        t.ok(n.wait_running() is not None, "node is up")
        a = AdminClient({"bootstrap.servers": n.bootstrap})
        fs = a.create_topics([NewTopic("ck-one", 2, 1, config={"segment.bytes": "1048576"})])
        try:
            fs["ck-one"].result(20)
            t.ok(True, "create_topics succeeds")
        except Exception as e:
            t.ok(False, "create_topics succeeds: %s" % e)
        err = None
        try:
            a.create_topics([NewTopic("ck-one", 1, 1)])["ck-one"].result(20)
        except Exception as e:
            err = e.args[0]
        t.ok(err is not None and err.code() == KafkaError.TOPIC_ALREADY_EXISTS,
             "an existing topic gives TOPIC_ALREADY_EXISTS")
        err = None
        try:
            a.create_topics([NewTopic("bad/name", 1, 1)])["bad/name"].result(20)
        except Exception as e:
            err = e.args[0]
        t.ok(err is not None and err.code() == KafkaError.TOPIC_EXCEPTION,
             "an invalid name gives INVALID_TOPIC_EXCEPTION")
        err = None
        try:
            a.create_topics([NewTopic("ck-rf", 1, 3)])["ck-rf"].result(20)
        except Exception as e:
            err = e.args[0]
        t.ok(err is not None and err.code() == KafkaError.INVALID_REPLICATION_FACTOR,
             "replication factor 3 on one broker gives INVALID_REPLICATION_FACTOR")

        res = a.describe_configs([ConfigResource("topic", "ck-one")])
        cfg = list(res.values())[0].result(20)
        t.eq(cfg["segment.bytes"].value, "1048576", "describe_configs shows segment.bytes")
        t.eq(cfg["segment.bytes"].source, 1, "as a DYNAMIC_TOPIC_CONFIG")
        t.eq(cfg["retention.ms"].source, 5, "defaults show as DEFAULT_CONFIG")
        r = ConfigResource("topic", "ck-one", set_config={"retention.ms": "86400000"})
        list(a.alter_configs([r]).values())[0].result(20)
        cfg = list(a.describe_configs([ConfigResource("topic", "ck-one")]).values())[0].result(20)
        t.eq(cfg["retention.ms"].value, "86400000", "alter_configs changes retention.ms")

        list(a.create_partitions([NewPartitions("ck-one", 4)]).values())[0].result(20)
        md = a.list_topics("ck-one", timeout=10)
        t.eq(len(md.topics["ck-one"].partitions), 4, "create_partitions grows the topic to 4")

        # producer with delivery reports
        reports = []
        p = Producer({"bootstrap.servers": n.bootstrap, "linger.ms": 5, "acks": "all"})
        payloads = {}
        for i in range(4000):
            v = (b"%06d:" % i) + bytes([i % 251]) * (i % 300)
            payloads[(i % 4, i // 4)] = v
            p.produce("ck-one", value=v, key=b"%d" % i, partition=i % 4,
                      headers=[("h", b"%d" % i)],
                      on_delivery=lambda e, m: reports.append((e, m)))
        p.flush(60)
        t.eq(len(reports), 4000, "a delivery report for every record")
        t.ok(all(e is None for e, _ in reports), "no delivery errors")
        t.ok(all(m.offset() == int(m.key()) // 4 for _, m in reports),
             "offsets are dense per partition")

        c = Consumer({"bootstrap.servers": n.bootstrap, "group.id": "unused",
                      "enable.auto.commit": False})
        c.assign([TopicPartition("ck-one", i, 0) for i in range(4)])
        got = {}
        import time
        deadline = time.time() + 60
        while len(got) < 4000 and time.time() < deadline:
            m = c.poll(1.0)
            if m is None or m.error():
                continue
            got[(m.partition(), m.offset())] = (m.value(), m.key(), m.headers())
        t.eq(len(got), 4000, "the consumer reads all 4000 records")
        t.ok(all(got[k][0] == v for k, v in payloads.items()),
             "values come back byte-identical")
        t.ok(all(got[(pp, o)][2] == [("h", b"%d" % (o * 4 + pp))] for (pp, o) in got),
             "headers come back")
        lo, hi = c.get_watermark_offsets(TopicPartition("ck-one", 0), timeout=10)
        t.eq((lo, hi), (0, 1000), "watermarks of partition 0")
        c.close()
        t.eq(n.crashes(), [], "no worker died of a crash (SIGSEGV, SIGABRT, ...)")
    finally:
        n.kill()

t.done()
