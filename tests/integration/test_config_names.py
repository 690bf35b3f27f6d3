"""Kafka's whole config vocabulary against a real runneld: topic and broker
names accepted, validated by type and range, described with Kafka's sources,
defaults and synonyms (confluent-kafka, kafka-python, a raw
IncrementalAlterConfigs)."""
import socket
import struct

from confluent_kafka import KafkaError
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
from kafka.admin import ConfigResource as KPResource, ConfigResourceType, KafkaAdminClient
from kafka.admin import NewTopic as KPNewTopic

from rntest import Node, Tap, TempDir

t = Tap()

# Kafka 3.x's topic configs (TopicConfig + the throttled-replica lists)
KAFKA_TOPIC_NAMES = {
    "cleanup.policy", "compression.type", "delete.retention.ms",
    "file.delete.delay.ms", "flush.messages", "flush.ms",
    "follower.replication.throttled.replicas", "index.interval.bytes",
    "leader.replication.throttled.replicas", "local.retention.bytes",
    "local.retention.ms", "max.compaction.lag.ms", "max.message.bytes",
    "message.downconversion.enable", "message.format.version",
    "message.timestamp.after.max.ms", "message.timestamp.before.max.ms",
    "message.timestamp.difference.max.ms", "message.timestamp.type",
    "min.cleanable.dirty.ratio", "min.compaction.lag.ms", "min.insync.replicas",
    "preallocate", "remote.storage.enable", "retention.bytes", "retention.ms",
    "segment.bytes", "segment.index.bytes", "segment.jitter.ms", "segment.ms",
    "unclean.leader.election.enable", "compression.gzip.level",
    "compression.lz4.level", "compression.zstd.level", "remote.log.copy.disable",
    "remote.log.delete.on.disable",
}

DYNAMIC_TOPIC, DYNAMIC_BROKER, DYNAMIC_DEFAULT, STATIC, DEFAULT = 1, 2, 3, 4, 5
INVALID_CONFIG, INVALID_REQUEST = 40, 42


def incremental_alter(bootstrap, rtype, rname, changes):
    """IncrementalAlterConfigs v0 by hand (no client here has it):
    changes = [(key, op, value)]; returns [(error_code, message)]."""
    def s(x):
        b = x.encode()
        return struct.pack(">h", len(b)) + b

    def ns(x):
        return struct.pack(">h", -1) if x is None else s(x)
    body = struct.pack(">i", 1) + struct.pack(">b", rtype) + s(rname)
    body += struct.pack(">i", len(changes))
    for k, op, v in changes:
        body += s(k) + struct.pack(">b", op) + ns(v)
    body += struct.pack(">?", False)
    req = struct.pack(">hhi", 44, 0, 7) + s("cfg-test") + body
    host, port = bootstrap.split(":")
    with socket.create_connection((host, int(port)), timeout=20) as c:
        c.sendall(struct.pack(">i", len(req)) + req)
        n = struct.unpack(">i", c.recv(4, socket.MSG_WAITALL))[0]
        r = b""
        while len(r) < n:
            r += c.recv(n - len(r))
    off = 4 + 4  # correlation id, throttle
    count = struct.unpack_from(">i", r, off)[0]
    off += 4
    out = []
    for _ in range(count):
        code, mlen = struct.unpack_from(">hh", r, off)
        off += 4
        msg = None
        if mlen >= 0:
            msg = r[off:off + mlen].decode()
            off += mlen
        off += 1
        nlen = struct.unpack_from(">h", r, off)[0]
        off += 2 + nlen
        out.append((code, msg))
    return out


def describe_names(bootstrap, rtype, rname):
    """DescribeConfigs v0 by hand: the names listed for one resource."""
    name = rname.encode()
    req = struct.pack(">hhi", 32, 0, 8) + struct.pack(">h", 8) + b"cfg-test"
    req += struct.pack(">ib", 1, rtype) + struct.pack(">h", len(name)) + name
    req += struct.pack(">i", -1)
    host, port = bootstrap.split(":")
    with socket.create_connection((host, int(port)), timeout=20) as c:
        c.sendall(struct.pack(">i", len(req)) + req)
        n = struct.unpack(">i", c.recv(4, socket.MSG_WAITALL))[0]
        r = b""
        while len(r) < n:
            r += c.recv(n - len(r))

    def string(off):
        ln = struct.unpack_from(">h", r, off)[0]
        return (None if ln < 0 else r[off + 2:off + 2 + ln].decode()), off + 2 + max(ln, 0)
    off = 4 + 4 + 4 + 2  # correlation id, throttle, count, error code
    _, off = string(off)
    off += 1
    _, off = string(off)
    count = struct.unpack_from(">i", r, off)[0]
    off += 4
    names = []
    for _ in range(count):
        k, off = string(off)
        _, off = string(off)
        off += 3
        names.append(k)
    return names


def kp_entries(resp):
    """{name: (value, read_only, source, sensitive, [(syn, value, source)])}"""
    res = resp.resources[0]
    return {e[0]: (e[1], e[2], e[3], e[4], list(e[5]) if len(e) > 5 else [])
            for e in res[4]}


def create_error(admin, topic, configs):
    try:
        admin.create_topics([NewTopic(topic, 1, 1, config=configs)])[topic].result(20)
        return None
    except Exception as e:
        return e.args[0]


with TempDir() as tmp:
    n = Node(tmp, props={"log.retention.hours": "100", "log.cleaner.threads": "2",
                         "num.io.threads": "8", "sasl.kerberos.ticket.renew.jitter": "0.1",
                         "message.max.bytes": "2000000"})
    n.start()
    try:
        t.ok(n.wait_running() is not None, "node with Kafka keys it does not act on is up")
        t.ok("unknown configuration key" not in n.logtext(),
             "and logs no unknown-key warning for them")
        a = AdminClient({"bootstrap.servers": n.bootstrap})

        compact = {"cleanup.policy": "compact", "delete.retention.ms": "3600000",
                   "min.compaction.lag.ms": "1000", "min.cleanable.dirty.ratio": "0.3",
                   "message.format.version": "2.8", "preallocate": "true",
                   "segment.jitter.ms": "100", "compression.zstd.level": "5"}
        err = create_error(a, "cn-compact", compact)
        t.ok(err is None, "create_topics with Kafka's compaction and format names: %s" % err)
        err = create_error(a, "cn-bad", {"no.such.config": "1"})
        t.ok(err is not None and err.code() == KafkaError.INVALID_CONFIG and
             "Unknown topic config name: no.such.config" in err.str(),
             "a made-up name: INVALID_CONFIG %s" % err)
        err = create_error(a, "cn-bad", {"delete.retention.ms": "-5"})
        t.ok(err is not None and err.code() == KafkaError.INVALID_CONFIG and
             "delete.retention.ms" in err.str() and "-5" in err.str(),
             "delete.retention.ms=-5: INVALID_CONFIG naming key and value (%s)" % err)
        err = create_error(a, "cn-bad", {"message.format.version": "banana"})
        t.ok(err is not None and err.code() == KafkaError.INVALID_CONFIG,
             "message.format.version=banana: INVALID_CONFIG")

        cfg = list(a.describe_configs([ConfigResource("topic", "cn-compact")]).values())[0].result(20)
        t.eq(set(cfg), KAFKA_TOPIC_NAMES, "describe_configs lists every Kafka topic config")
        t.ok(all(cfg[k].value == v and cfg[k].source == DYNAMIC_TOPIC for k, v in compact.items()),
             "the ones set show as DYNAMIC_TOPIC_CONFIG with their values")
        t.eq((cfg["retention.ms"].value, cfg["retention.ms"].source), ("360000000", STATIC),
             "retention.ms from log.retention.hours=100: 360000000, STATIC_BROKER_CONFIG")
        t.eq((cfg["max.message.bytes"].value, cfg["max.message.bytes"].source), ("2000000", STATIC),
             "max.message.bytes from message.max.bytes")
        t.eq((cfg["max.compaction.lag.ms"].value, cfg["max.compaction.lag.ms"].source),
             ("9223372036854775807", DEFAULT), "max.compaction.lag.ms default")
        t.eq((cfg["segment.index.bytes"].value, cfg["file.delete.delay.ms"].value,
              cfg["remote.storage.enable"].value, cfg["message.timestamp.after.max.ms"].value),
             ("10485760", "60000", "false", "9223372036854775807"),
             "Kafka's defaults for names runnel does not act on")
        t.ok(not any(e.is_read_only for e in cfg.values()), "topic configs are not read-only")

        kp = KafkaAdminClient(bootstrap_servers=n.bootstrap, request_timeout_ms=20000)
        e = kp_entries(kp.describe_configs([KPResource(ConfigResourceType.TOPIC, "cn-compact")],
                                           include_synonyms=True)[0])
        t.eq(e["retention.ms"][4], [("log.retention.hours", "100", STATIC),
                                    ("log.retention.hours", "168", DEFAULT)],
             "retention.ms synonyms: the broker keys, static then default")
        t.eq(e["delete.retention.ms"][4], [("delete.retention.ms", "3600000", DYNAMIC_TOPIC),
                                           ("log.cleaner.delete.retention.ms", "86400000", DEFAULT)],
             "delete.retention.ms synonyms: the topic's own, then log.cleaner.delete.retention.ms")

        # legacy AlterConfigs (kafka-python): replaces the set
        r = kp.alter_configs([KPResource(ConfigResourceType.TOPIC, "cn-compact", configs={
            "cleanup.policy": "compact,delete", "message.downconversion.enable": "false",
            "index.interval.bytes": "8192", "leader.replication.throttled.replicas": "0:1"})])
        t.eq(r.resources[0][0], 0, "alter_configs with four more Kafka names: %s" % (r.resources[0],))
        cfg = list(a.describe_configs([ConfigResource("topic", "cn-compact")]).values())[0].result(20)
        t.eq((cfg["cleanup.policy"].value, cfg["index.interval.bytes"].value,
              cfg["leader.replication.throttled.replicas"].value,
              cfg["delete.retention.ms"].source),
             ("compact,delete", "8192", "0:1", DEFAULT), "stored and shown; the old set replaced")
        for key, val in [("min.cleanable.dirty.ratio", "2"), ("segment.bytes", "10"),
                         ("compression.gzip.level", "0"), ("no.such.config", "1"),
                         ("cleanup.policy", "shred")]:
            r = kp.alter_configs([KPResource(ConfigResourceType.TOPIC, "cn-compact",
                                             configs={key: val})])
            t.eq(r.resources[0][0], INVALID_CONFIG, "alter_configs %s=%s: INVALID_CONFIG (%s)"
                 % (key, val, r.resources[0][1]))

        # IncrementalAlterConfigs: list append, then the broker side
        t.eq(incremental_alter(n.bootstrap, 2, "cn-compact",
                               [("cleanup.policy", 3, "compact"),
                                ("message.format.version", 0, "3.0-IV1")]), [(0, None)],
             "incremental SUBTRACT compact, SET message.format.version")
        cfg = list(a.describe_configs([ConfigResource("topic", "cn-compact")]).values())[0].result(20)
        t.eq((cfg["cleanup.policy"].value, cfg["message.format.version"].value),
             ("delete", "3.0-IV1"), "cleanup.policy=delete, message.format.version=3.0-IV1")

        # sasl.kerberos.min.time.before.relogin: dynamic per broker in Kafka
        t.eq(incremental_alter(n.bootstrap, 4, "1",
                               [("sasl.kerberos.min.time.before.relogin", 0, "120000")])[0][0], 0,
             "broker 1: sasl.kerberos.min.time.before.relogin=120000 accepted")
        code, msg = incremental_alter(n.bootstrap, 4, "",
                                      [("sasl.kerberos.min.time.before.relogin", 0, "120000")])[0]
        t.ok(code == INVALID_REQUEST and "broker id must be specified" in (msg or ""),
             "at the cluster default: Kafka's INVALID_REQUEST (%s)" % msg)
        code, msg = incremental_alter(n.bootstrap, 4, "1", [("log.retention.hours", 0, "1")])[0]
        t.ok(code == INVALID_REQUEST and "Cannot update these configs dynamically" in (msg or ""),
             "read-only log.retention.hours: Kafka's INVALID_REQUEST (%s)" % msg)
        code, msg = incremental_alter(n.bootstrap, 4, "", [("no.such.broker.config", 0, "1")])[0]
        t.eq(code, INVALID_CONFIG, "a made-up broker name: INVALID_CONFIG (%s)" % msg)
        code, msg = incremental_alter(n.bootstrap, 4, "", [("log.cleaner.threads", 0, "lots")])[0]
        t.ok(code == INVALID_CONFIG and "lots" in (msg or "") and "log.cleaner.threads" in (msg or ""),
             "log.cleaner.threads=lots: INVALID_CONFIG naming key and value (%s)" % msg)
        t.eq(incremental_alter(n.bootstrap, 4, "", [("num.io.threads", 0, "4"),
                                                    ("log.cleaner.backoff.ms", 0, "20000")])[0][0],
             0, "cluster default num.io.threads, log.cleaner.backoff.ms accepted")

        bcfg = list(a.describe_configs([ConfigResource("broker", "1")]).values())[0].result(20)
        t.ok(len(bcfg) > 300, "describe broker 1 lists Kafka's broker configs (%d)" % len(bcfg))
        sk = bcfg.get("sasl.kerberos.min.time.before.relogin")
        t.ok(sk is not None and (sk.value, sk.source, sk.is_read_only) ==
             ("120000", DYNAMIC_BROKER, False),
             "sasl.kerberos.min.time.before.relogin=120000 DYNAMIC_BROKER_CONFIG")
        ct = bcfg.get("log.cleaner.threads")
        t.ok(ct is not None and (ct.value, ct.source, ct.is_read_only) == ("2", STATIC, False),
             "log.cleaner.threads=2 from the file: STATIC_BROKER_CONFIG, dynamic")
        io = bcfg.get("num.io.threads")
        t.ok(io is not None and (io.value, io.source) == ("4", DYNAMIC_DEFAULT),
             "num.io.threads=4 DYNAMIC_DEFAULT_BROKER_CONFIG")
        rh = bcfg.get("log.retention.hours")
        t.ok(rh is not None and (rh.value, rh.source, rh.is_read_only) == ("100", STATIC, True),
             "log.retention.hours=100 STATIC_BROKER_CONFIG, read-only")
        pw = bcfg.get("ssl.keystore.password")
        t.ok(pw is not None and pw.is_sensitive and pw.value is None,
             "ssl.keystore.password: sensitive, no value")
        t.eq(sorted(describe_names(n.bootstrap, 4, "")), ["log.cleaner.backoff.ms", "num.io.threads"],
             "the cluster-default resource lists what is set there")

        # kafka-python's CreateTopics with configs
        r = kp.create_topics([KPNewTopic("cn-kp", 1, 1, topic_configs={
            "max.compaction.lag.ms": "60000", "segment.index.bytes": "4096"})])
        t.eq(r.topic_errors[0][1], 0, "kafka-python create_topics with Kafka names")
        kp.close()
        t.eq(n.crashes(), [], "no worker crashed")
    finally:
        n.stop()

t.done()
