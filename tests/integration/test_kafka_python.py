"""kafka-python 2.0.2 against a real runneld: admin, producer acks 0/1/all, consumer without a group."""
import time

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic
from kafka.errors import TopicAlreadyExistsError

from rntest import Node, Tap, TempDir

t = Tap()

with TempDir() as tmp:
    n = Node(tmp)
    n.start()
    try:
        t.ok(n.wait_running() is not None, "node is up")
        admin = KafkaAdminClient(bootstrap_servers=n.bootstrap, client_id="test-admin",
                                 request_timeout_ms=20000)
        admin.create_topics([NewTopic("kp-one", num_partitions=3, replication_factor=1),
                             NewTopic("kp-cfg", num_partitions=1, replication_factor=1,
                                      topic_configs={"retention.ms": "3600000"})])
        t.ok({"kp-one", "kp-cfg"} <= set(admin.list_topics()), "KafkaAdminClient creates topics")
        try:
            admin.create_topics([NewTopic("kp-one", num_partitions=1, replication_factor=1)])
            t.ok(False, "creating an existing topic fails")
        except TopicAlreadyExistsError:
            t.ok(True, "creating an existing topic raises TopicAlreadyExistsError")

        res = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "kp-cfg")])
        entries = {e[0]: e for e in res[0].resources[0][4]}
        t.eq(entries.get("retention.ms", (None, None))[1], "3600000",
             "describe_configs shows the topic's retention.ms")
        admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, "kp-cfg",
                                            configs={"retention.ms": "7200000"})])
        res = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "kp-cfg")])
        entries = {e[0]: e for e in res[0].resources[0][4]}
        t.eq(entries["retention.ms"][1], "7200000", "alter_configs changes it")

        # producers with every acks setting
        sent = {}
        for acks in (0, 1, "all"):
            p = KafkaProducer(bootstrap_servers=n.bootstrap, acks=acks, linger_ms=5)
            futs = []
            for i in range(300):
                key = ("k%d" % i).encode()
                val = ("acks=%s record %d " % (acks, i)).encode() * (1 + i % 7)
                futs.append(p.send("kp-one", key=key, value=val, partition=i % 3))
                sent.setdefault(i % 3, []).append((key, val))
            p.flush(30)
            if acks != 0:
                md = [f.get(timeout=30) for f in futs]
                t.ok(all(m.offset >= 0 for m in md), "acks=%s: every send acknowledged with an offset" % acks)
            else:
                t.ok(all(f.is_done for f in futs), "acks=0: every send completes")
            p.close()

        # a consumer without a group reads everything back, in order per partition
        c = KafkaConsumer(bootstrap_servers=n.bootstrap, group_id=None,
                          enable_auto_commit=False, consumer_timeout_ms=10000)
        tps = [TopicPartition("kp-one", i) for i in range(3)]
        c.assign(tps)
        c.seek_to_beginning(*tps)
        got = {0: [], 1: [], 2: []}
        deadline = time.time() + 60
        while sum(len(v) for v in got.values()) < 900 and time.time() < deadline:
            for tp, msgs in c.poll(timeout_ms=1000).items():
                got[tp.partition].extend((m.key, m.value) for m in msgs)
        t.eq(sum(len(v) for v in got.values()), 900, "the consumer reads all 900 records")
        t.ok(all(got[i] == sent[i] for i in range(3)),
             "per partition, records come back byte-identical and in order")
        end = c.end_offsets(tps)
        t.eq(sorted(end.values()), [300, 300, 300], "end_offsets are 300 per partition")
        c.close()

        admin.delete_topics(["kp-cfg"])
        time.sleep(0.5)
        t.ok("kp-cfg" not in admin.list_topics(), "delete_topics removes the topic")
        admin.close()
        t.eq(n.crashes(), [], "no worker died of a crash (SIGSEGV, SIGABRT, ...)")
    finally:
        n.kill()

t.done()
