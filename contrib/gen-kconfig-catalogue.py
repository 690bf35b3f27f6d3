#!/usr/bin/env python3
"""Generate common/kconfig_catalogue.c from an Apache Kafka source tree.

    python3 contrib/gen-kconfig-catalogue.py /path/to/kafka > common/kconfig_catalogue.c

It reads the broker and topic ConfigDefs (LogConfig, ServerConfigs,
KafkaConfig's merged definitions, ...) for names, types, defaults and
validators; ServerTopicConfigSynonyms and DynamicBrokerConfig facts are
restated below. Names newer Kafka releases added after the tree read are
taken from a 4.x broker's "KafkaConfig values" listing (KAFKA4_LISTING),
their types inferred from their defaults. Runnel's own marks (what it acts
on, what waits for compaction) are the ACT_* and LATER sets.
"""
import json
import os
import re
import sys


ROOT = sys.argv[1] if len(sys.argv) > 1 else "."
consts = {}   # (cls, name) -> expr
byname = {}   # name -> [cls]
files = {}
for dp, dn, fn in os.walk(ROOT):
    for f in fn:
        if f.endswith(".java"):
            p = os.path.join(dp, f)
            files[f[:-5]] = open(p, encoding="utf-8").read()

def strip_comments(s):
    out = []; i = 0; n = len(s)
    while i < n:
        c = s[i]
        if c == '"':
            j = i + 1
            while s[j] != '"':
                j += 2 if s[j] == '\\' else 1
            out.append(s[i:j+1]); i = j + 1
        elif c == "'":
            j = i + 1
            while s[j] != "'":
                j += 2 if s[j] == '\\' else 1
            out.append(s[i:j+1]); i = j + 1
        elif s.startswith("//", i):
            j = s.find("\n", i); i = n if j < 0 else j
        elif s.startswith("/*", i):
            j = s.find("*/", i); i = j + 2
        else:
            out.append(c); i += 1
    return "".join(out)

def read_expr(s, i, stops=";"):
    depth = 0; j = i; n = len(s)
    while j < n:
        c = s[j]
        if c == '"':
            j += 1
            while s[j] != '"':
                j += 2 if s[j] == '\\' else 1
        elif c == "'":
            j += 1
            while s[j] != "'":
                j += 2 if s[j] == '\\' else 1
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            if depth == 0:
                return s[i:j], j
            depth -= 1
        elif depth == 0 and c in stops:
            return s[i:j], j
        j += 1
    return s[i:j], j

src = {}
for cls, text in files.items():
    t = strip_comments(text)
    src[cls] = t
    for m in re.finditer(r"static\s+final\s+[\w<>\[\], .?]+?\s+(\w+)\s*=", t):
        e, _ = read_expr(t, m.end())
        consts[(cls, m.group(1))] = e.strip()
        byname.setdefault(m.group(1), []).append(cls)

class Unk(Exception):
    pass

SPECIAL = {
    "Long.MAX_VALUE": 2**63-1, "Long.MIN_VALUE": -2**63,
    "Integer.MAX_VALUE": 2**31-1, "Integer.MIN_VALUE": -2**31,
    "Short.MAX_VALUE": 32767, "Double.MAX_VALUE": 1.7976931348623157e308,
    "null": None, "true": True, "false": False,
    "Records.LOG_OVERHEAD": 12, "LegacyRecord.RECORD_OVERHEAD_V0": 14,
    "IBP_3_0_IV1.version()": "3.0-IV1", "MetadataVersion.IBP_3_0_IV1.version()": "3.0-IV1",
    "CompressionType.GZIP.defaultLevel()": -1, "CompressionType.LZ4.defaultLevel()": 9,
    "CompressionType.ZSTD.defaultLevel()": 3,
    "BrokerCompressionType.PRODUCER.name": "producer",
    "ConfigDef.NO_DEFAULT_VALUE": "__NODEFAULT__", "NO_DEFAULT_VALUE": "__NODEFAULT__",
    "Collections.emptyList()": [], "Collections.emptySet()": [], "List.of()": [],
    "SecurityProtocol.PLAINTEXT.toString()": "PLAINTEXT", "SecurityProtocol.PLAINTEXT.name": "PLAINTEXT",
    "SecurityProtocol.PLAINTEXT.name()": "PLAINTEXT",
    "Sensor.RecordingLevel.INFO.toString()": "INFO",
    "SslClientAuth.NONE.name().toLowerCase(Locale.ROOT)": "none",
    "JmxReporter.class.getName()": "org.apache.kafka.common.metrics.JmxReporter",
    "DefaultKafkaPrincipalBuilder.class": "class org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder",
    "DefaultKafkaPrincipalBuilder.class.getName()": "org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder",
    "MetadataVersion.latestProduction().version()": "4.0-IV0",
    "MetadataVersion.LATEST_PRODUCTION.version()": "3.9-IV0",
    "TimestampType.CREATE_TIME.name": "CreateTime",
    "CompressionType.NONE.id": 0,
    "KafkaPrincipal.USER_TYPE": "User",
}

def find_const(cls, name):
    if (cls, name) in consts:
        return cls, consts[(cls, name)]
    cands = byname.get(name, [])
    if len(cands) >= 1:
        return cands[0], consts[(cands[0], name)]
    raise Unk(name)

TOK = re.compile(r'\s*(?:("(?:\\.|[^"\\])*")|(\d[\d_]*\.\d+(?:[eE][-+]?\d+)?[dDfF]?|0[xX][0-9a-fA-F]+[lL]?|\d[\d_]*[lLdDfF]?)|([A-Za-z_][\w.]*(?:\(\))?)|(.))')

def tokens(e):
    out = []
    for m in TOK.finditer(e):
        if m.group(1) is not None: out.append(("s", eval(m.group(1))))
        elif m.group(2) is not None:
            t = m.group(2).replace("_", "")
            if t[-1] in "lL": out.append(("n", int(t[:-1], 0)))
            elif t[-1] in "dDfF" or "." in t: out.append(("n", float(t.rstrip("dDfF"))))
            else: out.append(("n", int(t, 0)))
        elif m.group(3) is not None: out.append(("i", m.group(3)))
        elif m.group(4) is not None and m.group(4).strip(): out.append(("o", m.group(4)))
    return out

def ev(e, cls, depth=0):
    e = e.strip()
    if depth > 30: raise Unk(e)
    if e in SPECIAL: return SPECIAL[e]
    # method-style helpers
    m = re.fullmatch(r"TimeUnit\.(\w+)\.to(\w+)\((.*)\)", e, re.S)
    if m:
        v = ev(m.group(3), cls, depth+1)
        f = {"MILLISECONDS": 1, "MILLIS": 1, "SECONDS": 1000, "MINUTES": 60000, "HOURS": 3600000, "DAYS": 86400000}
        return v * f[m.group(1)] // f[m.group(2).upper()]
    m = re.fullmatch(r"\(\s*(int|long|short|double)\s*\)\s*(.*)", e, re.S)
    if m:
        v = ev(m.group(2), cls, depth+1)
        return float(v) if m.group(1) == "double" else int(v)
    m = re.fullmatch(r"(?:List\.of|Arrays\.asList|Utils\.mkList|asList|Collections\.singletonList|Set\.of)\((.*)\)", e, re.S)
    if m:
        return [ev(a, cls, depth+1) for a in split_args(m.group(1))] if m.group(1).strip() else []
    m = re.fullmatch(r"String\.join\(\s*(.*)\)", e, re.S)
    if m:
        a = split_args(m.group(1))
        sep = ev(a[0], cls, depth+1)
        rest = [ev(x, cls, depth+1) for x in a[1:]]
        if len(rest) == 1 and isinstance(rest[0], list): rest = rest[0]
        return sep.join(rest)
    m = re.fullmatch(r"(?:ServerTopicConfigSynonyms\.)?serverSynonym\((.*)\)", e, re.S)
    if m:
        return SYN[ev(m.group(1), cls, depth+1)][0]
    m = re.fullmatch(r"(\w+)\.class\.getName\(\)", e)
    if m: raise Unk(e)
    # arithmetic / concatenation over tokens
    toks = tokens(e)
    vals = []
    for k, v in toks:
        if k == "i":
            if v in SPECIAL: vals.append(("v", SPECIAL[v])); continue
            parts = v.split(".")
            if v.endswith("()"): raise Unk(v)
            if len(parts) == 1:
                c2, ex = find_const(cls, v)
            else:
                c2, nm = parts[-2], parts[-1]
                if (c2, nm) not in consts:
                    if nm in byname: c2 = byname[nm][0]
                    else: raise Unk(v)
                ex = consts[(c2, nm)]
            vals.append(("v", ev(ex, c2, depth+1)))
        elif k in ("s", "n"):
            vals.append(("v", v))
        else:
            vals.append(("o", v))
    expr = []
    for k, v in vals:
        if k == "v": expr.append(repr(v))
        elif v in "+-*/()": expr.append(v if v != "/" else "//")
        else: raise Unk(e)
    try:
        return eval(" ".join(expr))
    except Exception:
        raise Unk(e)

def split_args(s):
    args = []; i = 0
    while i <= len(s):
        a, j = read_expr(s, i, ",")
        args.append(a.strip()); i = j + 1
        if j >= len(s): break
    return [a for a in args if a != ""] if args != [""] else []

BROKER_DEFS = [
    ("RemoteLogManagerConfig", "configDef()"), ("ZkConfigs", "CONFIG_DEF"), ("ServerConfigs", "CONFIG_DEF"),
    ("KRaftConfigs", "CONFIG_DEF"), ("SocketServerConfigs", "CONFIG_DEF"), ("ReplicationConfigs", "CONFIG_DEF"),
    ("GroupCoordinatorConfig", "GROUP_COORDINATOR_CONFIG_DEF"), ("GroupCoordinatorConfig", "NEW_GROUP_CONFIG_DEF"),
    ("GroupCoordinatorConfig", "OFFSET_MANAGEMENT_CONFIG_DEF"), ("GroupCoordinatorConfig", "CONSUMER_GROUP_CONFIG_DEF"),
    ("GroupCoordinatorConfig", "SHARE_GROUP_CONFIG_DEF"), ("CleanerConfig", "CONFIG_DEF"), ("LogConfig", "SERVER_CONFIG_DEF"),
    ("ShareGroupConfig", "CONFIG_DEF"), ("ShareCoordinatorConfig", "CONFIG_DEF"), ("TransactionLogConfig", "CONFIG_DEF"),
    ("TransactionStateManagerConfig", "CONFIG_DEF"), ("QuorumConfig", "CONFIG_DEF"), ("MetricConfigs", "CONFIG_DEF"),
    ("QuotaConfig", "CONFIG_DEF"), ("BrokerSecurityConfigs", "CONFIG_DEF"), ("DelegationTokenManagerConfigs", "CONFIG_DEF"),
    ("PasswordEncoderConfigs", "CONFIG_DEF"),
]
IMP = re.compile(r"^(?:ConfigDef\.)?(?:Importance\.)?(HIGH|MEDIUM|LOW)$")

def def_body(cls, which):
    t = src[cls]
    if which.endswith("()"):
        i = t.index("ConfigDef " + which[:-2] + "()")
        i = t.index("new ConfigDef()", i)
    elif cls == "LogConfig" and which == "TOPIC":
        i = t.index("CONFIG.\n") + len("CONFIG") if "CONFIG.\n" in t else t.index("CONFIG.") + len("CONFIG")
        e, _ = read_expr(t, i, ";")
        return e
    else:
        i = t.index(which + " =")
        i = t.index("=", i) + 1
    e, _ = read_expr(t, i, ";")
    return e

def parse_defines(body):
    out = []
    for m in re.finditer(r"\.\s*(define|defineInternal)\(", body):
        a, _ = read_expr(body, m.end(), ")")
        out.append((m.group(1), split_args(a)))
    return out

def validator_of(v, cls):
    if v in ("null",): return None
    m = re.fullmatch(r"(?:ConfigDef\.)?(?:Range\.)?atLeast\((.*)\)", v, re.S)
    if m: return ("range", ev(m.group(1), cls), None)
    m = re.fullmatch(r"(?:ConfigDef\.)?(?:Range\.)?between\((.*)\)", v, re.S)
    if m:
        a = split_args(m.group(1)); return ("range", ev(a[0], cls), ev(a[1], cls))
    m = re.fullmatch(r"(?:ConfigDef\.)?(ValidString|ValidList|CaseInsensitiveValidString)?\.?in\((.*)\)", v, re.S)
    if m:
        kind = {"ValidList": "list", "CaseInsensitiveValidString": "ichoice"}.get(m.group(1), "choice")
        args = split_args(m.group(2))
        vals = []
        for x in args:
            try:
                r = ev(x, cls)
            except Unk:
                r = ("?", x)
            if isinstance(r, list): vals += r
            else: vals.append(r)
        return (kind, vals)
    return ("other", v)

def run(defs_list):
    res = []
    for cls, which in defs_list:
        for kind, a in parse_defines(def_body(cls, which)):
            if len(a) == 1:
                res.append({"cls": cls, "raw": a[0], "err": "configkey"}); continue
            try:
                name = ev(a[0], cls)
            except Unk as e:
                res.append({"cls": cls, "raw": a[0], "err": "name %s" % e}); continue
            typ = a[1].split(".")[-1]
            rest = a[2:]
            d = {"name": name, "type": typ, "cls": cls, "internal": kind == "defineInternal"}
            if rest and IMP.match(rest[0]):
                d["default"] = "__NODEFAULT__"; val = None
            else:
                try:
                    d["default"] = ev(rest[0], cls)
                except Unk as e:
                    d["default"] = "__UNK__"; d["default_raw"] = rest[0]
                val = None
                if len(rest) > 1 and not IMP.match(rest[1]):
                    try:
                        val = validator_of(rest[1], cls)
                    except Unk as e:
                        val = ("other", rest[1])
            d["validator"] = val
            res.append(d)
    return res


# ServerTopicConfigSynonyms facts: topic config -> broker keys in precedence order
SYN = {
 "segment.bytes": ["log.segment.bytes"],
 "segment.ms": ["log.roll.ms", "log.roll.hours"],
 "segment.jitter.ms": ["log.roll.jitter.ms", "log.roll.jitter.hours"],
 "segment.index.bytes": ["log.index.size.max.bytes"],
 "flush.messages": ["log.flush.interval.messages"],
 "flush.ms": ["log.flush.interval.ms", "log.flush.scheduler.interval.ms"],
 "retention.bytes": ["log.retention.bytes"],
 "retention.ms": ["log.retention.ms", "log.retention.minutes", "log.retention.hours"],
 "max.message.bytes": ["message.max.bytes"],
 "index.interval.bytes": ["log.index.interval.bytes"],
 "delete.retention.ms": ["log.cleaner.delete.retention.ms"],
 "min.compaction.lag.ms": ["log.cleaner.min.compaction.lag.ms"],
 "max.compaction.lag.ms": ["log.cleaner.max.compaction.lag.ms"],
 "file.delete.delay.ms": ["log.segment.delete.delay.ms"],
 "min.cleanable.dirty.ratio": ["log.cleaner.min.cleanable.ratio"],
 "cleanup.policy": ["log.cleanup.policy"],
 "unclean.leader.election.enable": ["unclean.leader.election.enable"],
 "min.insync.replicas": ["min.insync.replicas"],
 "compression.type": ["compression.type"],
 "compression.gzip.level": ["compression.gzip.level"],
 "compression.lz4.level": ["compression.lz4.level"],
 "compression.zstd.level": ["compression.zstd.level"],
 "preallocate": ["log.preallocate"],
 "message.format.version": ["log.message.format.version"],
 "message.timestamp.type": ["log.message.timestamp.type"],
 "message.timestamp.difference.max.ms": ["log.message.timestamp.difference.max.ms"],
 "message.timestamp.before.max.ms": ["log.message.timestamp.before.max.ms"],
 "message.timestamp.after.max.ms": ["log.message.timestamp.after.max.ms"],
 "message.downconversion.enable": ["log.message.downconversion.enable"],
 "local.retention.ms": ["log.local.retention.ms"],
 "local.retention.bytes": ["log.local.retention.bytes"],
}

KAFKA4_LISTING = '''
add.partitions.to.txn.retry.backoff.max.ms = 100
add.partitions.to.txn.retry.backoff.ms = 20
advertised.listeners = [PLAINTEXT://localhost:9092]
alter.config.policy.class.name = null
alter.log.dirs.replication.quota.window.num = 11
alter.log.dirs.replication.quota.window.size.seconds = 1
authorizer.class.name =
auto.create.topics.enable = true
auto.leader.rebalance.enable = true
background.threads = 10
broker.heartbeat.interval.ms = 2000
broker.id = 2
broker.rack = null
broker.session.timeout.ms = 9000
client.quota.callback.class = null
compression.gzip.level = -1
compression.lz4.level = 9
compression.type = producer
compression.zstd.level = 3
config.providers = []
connection.failed.authentication.delay.ms = 100
connections.max.idle.ms = 600000
connections.max.reauth.ms = 0
controlled.shutdown.enable = true
controller.listener.names = [CONTROLLER]
controller.performance.always.log.threshold.ms = 2000
controller.performance.sample.period.ms = 60000
controller.quorum.append.linger.ms = 25
controller.quorum.auto.join.enable = false
controller.quorum.bootstrap.servers = [localhost:9093]
controller.quorum.election.backoff.max.ms = 1000
controller.quorum.election.timeout.ms = 1000
controller.quorum.fetch.max.bytes = 1048576
controller.quorum.fetch.snapshot.max.bytes = 1048576
controller.quorum.fetch.timeout.ms = 2000
controller.quorum.request.timeout.ms = 2000
controller.quorum.retry.backoff.ms = 20
controller.quorum.voters = [1@localhost:9093]
controller.quota.window.num = 11
controller.quota.window.size.seconds = 1
controller.socket.timeout.ms = 30000
cordoned.log.dirs = []
create.topic.policy.class.name = null
default.replication.factor = 1
delegation.token.expiry.check.interval.ms = 3600000
delegation.token.expiry.time.ms = 86400000
delegation.token.max.lifetime.ms = 604800000
delegation.token.secret.key = null
delete.records.purgatory.purge.interval.requests = 1
delete.topic.enable = true
early.start.listeners = null
fetch.max.bytes = 57671680
fetch.purgatory.purge.interval.requests = 1000
follower.fetch.last.tiered.offset.enable = false
group.consumer.assignment.interval.ms = 1000
group.consumer.assignors = [uniform, range]
group.consumer.heartbeat.interval.ms = 5000
group.consumer.max.assignment.interval.ms = 15000
group.consumer.max.heartbeat.interval.ms = 15000
group.consumer.max.session.timeout.ms = 60000
group.consumer.max.size = 2147483647
group.consumer.migration.policy = bidirectional
group.consumer.min.assignment.interval.ms = 0
group.consumer.min.heartbeat.interval.ms = 5000
group.consumer.min.session.timeout.ms = 45000
group.consumer.regex.refresh.interval.ms = 600000
group.consumer.session.timeout.ms = 45000
group.coordinator.append.linger.ms = -1
group.coordinator.background.threads = 2
group.coordinator.cached.buffer.max.bytes = 1048588
group.coordinator.rebalance.protocols = [classic, consumer, streams]
group.coordinator.threads = 4
group.initial.rebalance.delay.ms = 3000
group.max.session.timeout.ms = 1800000
group.max.size = 2147483647
group.min.session.timeout.ms = 6000
group.share.assignment.interval.ms = 1000
group.share.assignors = [simple]
group.share.delivery.count.limit = 5
group.share.heartbeat.interval.ms = 5000
group.share.initialize.retry.interval.ms = 30000
group.share.max.assignment.interval.ms = 15000
group.share.max.delivery.count.limit = 10
group.share.max.heartbeat.interval.ms = 15000
group.share.max.partition.max.record.locks = 4000
group.share.max.record.lock.duration.ms = 60000
group.share.max.session.timeout.ms = 60000
group.share.max.share.sessions = 2000
group.share.max.size = 200
group.share.min.assignment.interval.ms = 0
group.share.min.delivery.count.limit = 2
group.share.min.heartbeat.interval.ms = 5000
group.share.min.partition.max.record.locks = 100
group.share.min.record.lock.duration.ms = 15000
group.share.min.session.timeout.ms = 45000
group.share.partition.max.record.locks = 2000
group.share.persister.class.name = org.apache.kafka.server.share.persister.DefaultStatePersister
group.share.record.lock.duration.ms = 30000
group.share.session.timeout.ms = 45000
group.streams.assignment.interval.ms = 1000
group.streams.heartbeat.interval.ms = 5000
group.streams.initial.rebalance.delay.ms = 3000
group.streams.max.assignment.interval.ms = 15000
group.streams.max.heartbeat.interval.ms = 15000
group.streams.max.session.timeout.ms = 60000
group.streams.max.size = 2147483647
group.streams.max.standby.replicas = 2
group.streams.min.assignment.interval.ms = 0
group.streams.min.heartbeat.interval.ms = 5000
group.streams.min.session.timeout.ms = 45000
group.streams.num.standby.replicas = 0
group.streams.session.timeout.ms = 45000
initial.broker.registration.timeout.ms = 60000
inter.broker.listener.name = PLAINTEXT
internal.metadata.delete.delay.millis = 60000
internal.metadata.log.segment.bytes = null
internal.metadata.max.batch.size.in.bytes = 8388608
kafka.metrics.polling.interval.secs = 10
kafka.metrics.reporters = []
leader.imbalance.check.interval.seconds = 300
listener.security.protocol.map = CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL
listeners = [PLAINTEXT://localhost:9092]
log.cleaner.backoff.ms = 15000
log.cleaner.dedupe.buffer.size = 134217728
log.cleaner.delete.retention.ms = 86400000
log.cleaner.enable = true
log.cleaner.io.buffer.load.factor = 0.9
log.cleaner.io.buffer.size = 524288
log.cleaner.io.max.bytes.per.second = 1.7976931348623157E308
log.cleaner.max.compaction.lag.ms = 9223372036854775807
log.cleaner.min.cleanable.ratio = 0.5
log.cleaner.min.compaction.lag.ms = 0
log.cleaner.threads = 1
log.cleanup.policy = [delete]
log.dir = [/tmp/kafka-logs]
log.dir.failure.timeout.ms = 30000
log.dirs = [/tmp/kraft-broker-logs]
log.flush.interval.messages = 9223372036854775807
log.flush.interval.ms = null
log.flush.offset.checkpoint.interval.ms = 60000
log.flush.scheduler.interval.ms = 9223372036854775807
log.flush.start.offset.checkpoint.interval.ms = 60000
log.index.interval.bytes = 4096
log.index.size.max.bytes = 10485760
log.initial.task.delay.ms = 30000
log.local.retention.bytes = -2
log.local.retention.ms = -2
log.message.timestamp.after.max.ms = 3600000
log.message.timestamp.before.max.ms = 9223372036854775807
log.message.timestamp.type = CreateTime
log.preallocate = false
log.retention.bytes = -1
log.retention.check.interval.ms = 300000
log.retention.hours = 168
log.retention.minutes = null
log.retention.ms = null
log.roll.hours = 168
log.roll.jitter.hours = 0
log.roll.jitter.ms = null
log.roll.ms = null
log.segment.bytes = 1073741824
log.segment.delete.delay.ms = 60000
max.connection.creation.rate = 2147483647
max.connections = 2147483647
max.connections.per.ip = 2147483647
max.connections.per.ip.overrides =
max.incremental.fetch.session.cache.slots = 1000
max.request.partition.size.limit = 2000
message.max.bytes = 1048588
metadata.log.dir = null
metadata.log.max.record.bytes.between.snapshots = 20971520
metadata.log.max.snapshot.interval.ms = 3600000
metadata.log.segment.bytes = 1073741824
metadata.log.segment.ms = 604800000
metadata.max.idle.interval.ms = 500
metadata.max.retention.bytes = 104857600
metadata.max.retention.ms = 604800000
metric.reporters = [org.apache.kafka.common.metrics.JmxReporter]
metrics.num.samples = 2
metrics.recording.level = INFO
metrics.sample.window.ms = 30000
min.insync.replicas = 1
node.id = 2
num.io.threads = 8
num.network.threads = 3
num.partitions = 1
num.recovery.threads.per.data.dir = 2
num.replica.alter.log.dirs.threads = null
num.replica.fetchers = 1
offset.metadata.max.bytes = 4096
offsets.commit.timeout.ms = 5000
offsets.load.buffer.size = 5242880
offsets.retention.check.interval.ms = 600000
offsets.retention.minutes = 10080
offsets.topic.compression.codec = 0
offsets.topic.num.partitions = 50
offsets.topic.replication.factor = 1
offsets.topic.segment.bytes = 104857600
principal.builder.class = class org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder
process.roles = [broker]
producer.id.expiration.check.interval.ms = 600000
producer.id.expiration.ms = 86400000
producer.purgatory.purge.interval.requests = 1000
queued.max.request.bytes = -1
queued.max.requests = 500
quota.window.num = 11
quota.window.size.seconds = 1
remote.fetch.max.wait.ms = 500
remote.list.offsets.request.timeout.ms = 30000
remote.log.index.file.cache.total.size.bytes = 1073741824
remote.log.index.file.cache.ttl.ms = 900000
remote.log.manager.copier.thread.pool.size = 10
remote.log.manager.copy.max.bytes.per.second = 9223372036854775807
remote.log.manager.copy.quota.window.num = 11
remote.log.manager.copy.quota.window.size.seconds = 1
remote.log.manager.expiration.thread.pool.size = 10
remote.log.manager.fetch.max.bytes.per.second = 9223372036854775807
remote.log.manager.fetch.quota.window.num = 11
remote.log.manager.fetch.quota.window.size.seconds = 1
remote.log.manager.follower.thread.pool.size = 2
remote.log.manager.task.interval.ms = 30000
remote.log.manager.task.retry.backoff.max.ms = 30000
remote.log.manager.task.retry.backoff.ms = 500
remote.log.manager.task.retry.jitter = 0.2
remote.log.manager.thread.pool.size = 2
remote.log.metadata.custom.metadata.max.bytes = 128
remote.log.metadata.manager.class.name = org.apache.kafka.server.log.remote.metadata.storage.TopicBasedRemoteLogMetadataManager
remote.log.metadata.manager.class.path = null
remote.log.metadata.manager.impl.prefix = rlmm.config.
remote.log.metadata.manager.listener.name = null
remote.log.reader.max.pending.tasks = 100
remote.log.reader.threads = 10
remote.log.storage.manager.class.name = null
remote.log.storage.manager.class.path = null
remote.log.storage.manager.impl.prefix = rsm.config.
remote.log.storage.system.enable = false
replica.fetch.backoff.ms = 1000
replica.fetch.max.bytes = 1048576
replica.fetch.min.bytes = 1
replica.fetch.response.max.bytes = 10485760
replica.fetch.wait.max.ms = 500
replica.high.watermark.checkpoint.interval.ms = 5000
replica.lag.time.max.ms = 30000
replica.selector.class = null
replica.socket.receive.buffer.bytes = 65536
replica.socket.timeout.ms = 30000
replication.quota.window.num = 11
replication.quota.window.size.seconds = 1
request.timeout.ms = 30000
sasl.client.callback.handler.class = null
sasl.enabled.mechanisms = [GSSAPI]
sasl.jaas.config = null
sasl.kerberos.kinit.cmd = /usr/bin/kinit
sasl.kerberos.min.time.before.relogin = 60000
sasl.kerberos.principal.to.local.rules = [DEFAULT]
sasl.kerberos.service.name = null
sasl.kerberos.ticket.renew.jitter = 0.05
sasl.kerberos.ticket.renew.window.factor = 0.8
sasl.login.callback.handler.class = null
sasl.login.class = null
sasl.login.connect.timeout.ms = null
sasl.login.read.timeout.ms = null
sasl.login.refresh.buffer.seconds = 300
sasl.login.refresh.min.period.seconds = 60
sasl.login.refresh.window.factor = 0.8
sasl.login.refresh.window.jitter = 0.05
sasl.login.retry.backoff.max.ms = 10000
sasl.login.retry.backoff.ms = 100
sasl.mechanism.controller.protocol = GSSAPI
sasl.mechanism.inter.broker.protocol = GSSAPI
sasl.oauthbearer.assertion.algorithm = RS256
sasl.oauthbearer.assertion.claim.aud = null
sasl.oauthbearer.assertion.claim.exp.seconds = 300
sasl.oauthbearer.assertion.claim.iss = null
sasl.oauthbearer.assertion.claim.jti.include = false
sasl.oauthbearer.assertion.claim.nbf.seconds = 60
sasl.oauthbearer.assertion.claim.sub = null
sasl.oauthbearer.assertion.file = null
sasl.oauthbearer.assertion.private.key.file = null
sasl.oauthbearer.assertion.private.key.passphrase = null
sasl.oauthbearer.assertion.template.file = null
sasl.oauthbearer.client.credentials.client.id = null
sasl.oauthbearer.client.credentials.client.secret = null
sasl.oauthbearer.clock.skew.seconds = 30
sasl.oauthbearer.expected.audience = []
sasl.oauthbearer.expected.issuer = null
sasl.oauthbearer.jwks.endpoint.refresh.ms = 3600000
sasl.oauthbearer.jwks.endpoint.retry.backoff.max.ms = 10000
sasl.oauthbearer.jwks.endpoint.retry.backoff.ms = 100
sasl.oauthbearer.jwks.endpoint.url = null
sasl.oauthbearer.jwt.retriever.class = class org.apache.kafka.common.security.oauthbearer.DefaultJwtRetriever
sasl.oauthbearer.jwt.validator.class = class org.apache.kafka.common.security.oauthbearer.DefaultJwtValidator
sasl.oauthbearer.scope = null
sasl.oauthbearer.scope.claim.name = scope
sasl.oauthbearer.sub.claim.name = sub
sasl.oauthbearer.token.endpoint.url = null
sasl.server.callback.handler.class = null
sasl.server.max.receive.size = 524288
security.inter.broker.protocol = PLAINTEXT
security.providers = null
server.max.startup.time.ms = 9223372036854775807
share.coordinator.append.linger.ms = -1
share.coordinator.cached.buffer.max.bytes = 1048588
share.coordinator.cold.partition.snapshot.interval.ms = 300000
share.coordinator.load.buffer.size = 5242880
share.coordinator.snapshot.update.records.per.snapshot = 500
share.coordinator.state.topic.compression.codec = 0
share.coordinator.state.topic.min.isr = 1
share.coordinator.state.topic.num.partitions = 50
share.coordinator.state.topic.prune.interval.ms = 300000
share.coordinator.state.topic.replication.factor = 1
share.coordinator.state.topic.segment.bytes = 104857600
share.coordinator.threads = 1
share.coordinator.write.timeout.ms = 5000
share.fetch.purgatory.purge.interval.requests = 1000
socket.connection.setup.timeout.max.ms = 30000
socket.connection.setup.timeout.ms = 10000
socket.listen.backlog.size = 50
socket.receive.buffer.bytes = 102400
socket.request.max.bytes = 104857600
socket.send.buffer.bytes = 102400
ssl.allow.dn.changes = false
ssl.allow.san.changes = false
ssl.cipher.suites = []
ssl.client.auth = none
ssl.enabled.protocols = [TLSv1.2, TLSv1.3]
ssl.endpoint.identification.algorithm = https
ssl.engine.factory.class = null
ssl.key.password = null
ssl.keymanager.algorithm = SunX509
ssl.keystore.certificate.chain = null
ssl.keystore.key = null
ssl.keystore.location = null
ssl.keystore.password = null
ssl.keystore.type = JKS
ssl.principal.mapping.rules = DEFAULT
ssl.protocol = TLSv1.3
ssl.provider = null
ssl.secure.random.implementation = null
ssl.trustmanager.algorithm = PKIX
ssl.truststore.certificates = null
ssl.truststore.location = null
ssl.truststore.password = null
ssl.truststore.type = JKS
telemetry.max.bytes = 1048576
transaction.abort.timed.out.transaction.cleanup.interval.ms = 10000
transaction.max.timeout.ms = 900000
transaction.partition.verification.enable = true
transaction.remove.expired.transaction.cleanup.interval.ms = 3600000
transaction.state.log.load.buffer.size = 5242880
transaction.state.log.min.isr = 1
transaction.state.log.num.partitions = 50
transaction.state.log.replication.factor = 1
transaction.state.log.segment.bytes = 104857600
transaction.two.phase.commit.enable = false
transactional.id.expiration.ms = 604800000
unclean.leader.election.enable = false
unclean.leader.election.interval.ms = 300000
unstable.api.versions.enable = false
unstable.feature.versions.enable = false
'''

d = {"broker": run(BROKER_DEFS), "topic": run([("LogConfig", "TOPIC")])}

ENUMS = {
 "BrokerCompressionType.names().toArray(new String[0])": ["uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"],
 "Utils.enumOptions(SecurityProtocol.class)": ["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"],
 "Utils.enumOptions(Group.GroupType.class)": ["classic", "consumer", "share", "streams"],
 "Utils.enumOptions(ConsumerGroupMigrationPolicy.class)": ["bidirectional", "upgrade", "downgrade", "disabled"],
 "Utils.enumOptions(SslClientAuth.class)": ["required", "requested", "none"],
}
FIXED_DEFAULTS = {
 "listener.security.protocol.map": "SASL_SSL:SASL_SSL,PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT",
 "group.coordinator.rebalance.protocols": "classic,consumer",
 "offsets.topic.compression.codec": "0",
 "group.consumer.assignors": "org.apache.kafka.coordinator.group.assignor.UniformAssignor,org.apache.kafka.coordinator.group.assignor.RangeAssignor",
 "group.consumer.migration.policy": "bidirectional",
 "share.coordinator.state.topic.compression.codec": "0",
 "ssl.client.auth": "none",
 "ssl.keymanager.algorithm": "SunX509",
 "ssl.trustmanager.algorithm": "PKIX",
 "inter.broker.protocol.version": "3.9-IV0",
}

THROTTLE_RATES = ["leader.replication.throttled.rate",
  "follower.replication.throttled.rate",
  "replica.alter.log.dirs.io.max.bytes.per.second"]
# what runnel acts on
ACT_TOPIC = {"leader.replication.throttled.replicas",
  "follower.replication.throttled.replicas", "flush.messages", "flush.ms", "max.message.bytes", "message.timestamp.type",
  "min.insync.replicas", "retention.bytes", "retention.ms", "segment.bytes", "segment.ms",
  "unclean.leader.election.enable", "cleanup.policy", "delete.retention.ms",
  "min.compaction.lag.ms", "max.compaction.lag.ms", "min.cleanable.dirty.ratio"}
# what waits for a later part of runnel (nothing now: compaction is there)
LATER = set()
ACT_BROKER = {
  # TLS and SASL/PLAIN on the client listeners
  "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.certificate.chain",
  "ssl.keystore.key", "ssl.key.password", "ssl.truststore.type", "ssl.truststore.location",
  "ssl.truststore.certificates", "ssl.client.auth", "ssl.enabled.protocols", "ssl.cipher.suites",
  "ssl.principal.mapping.rules",
  "sasl.enabled.mechanisms", "sasl.jaas.config", "connection.failed.authentication.delay.ms",
  "sasl.server.max.receive.size", "security.inter.broker.protocol",
  # connection quotas in the network workers
  "max.connections", "max.connections.per.ip", "max.connections.per.ip.overrides",
  "max.connection.creation.rate", "connections.max.idle.ms",
  "connections.max.reauth.ms",
  "node.id", "broker.id", "process.roles", "listeners", "advertised.listeners",
  "controller.listener.names", "controller.quorum.voters", "inter.broker.listener.name",
  "listener.security.protocol.map", "log.dirs", "log.dir", "metadata.log.dir", "broker.rack",
  "num.network.threads", "num.replica.fetchers", "socket.request.max.bytes", "message.max.bytes",
  "num.partitions", "default.replication.factor", "min.insync.replicas", "auto.create.topics.enable",
  "unclean.leader.election.enable", "log.segment.bytes", "log.roll.ms", "log.roll.hours",
  "log.retention.ms", "log.retention.minutes", "log.retention.hours", "log.retention.bytes",
  "log.retention.check.interval.ms", "log.flush.interval.messages", "log.flush.interval.ms",
  "log.flush.offset.checkpoint.interval.ms", "log.flush.scheduler.interval.ms", "log.message.timestamp.type", "replica.lag.time.max.ms",
  "broker.heartbeat.interval.ms", "broker.session.timeout.ms", "log.cleanup.policy",
  "log.cleaner.delete.retention.ms", "log.cleaner.min.compaction.lag.ms",
  "log.cleaner.max.compaction.lag.ms", "log.cleaner.min.cleanable.ratio", "log.cleanup.policy",
  "log.cleaner.enable", "log.cleaner.threads", "log.cleaner.dedupe.buffer.size",
  "log.cleaner.io.max.bytes.per.second", "log.cleaner.backoff.ms",
  "leader.replication.throttled.rate", "follower.replication.throttled.rate",
  "max.incremental.fetch.session.cache.slots"}

SSL_RECONF = {"ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
  "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password",
  "ssl.keystore.certificate.chain", "ssl.keystore.key", "ssl.truststore.certificates"}
LISTENER_DYN = {"advertised.listeners", "listeners", "listener.security.protocol.map",
  "principal.builder.class", "ssl.protocol", "ssl.provider", "ssl.cipher.suites", "ssl.enabled.protocols",
  "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.key.password",
  "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password", "ssl.keymanager.algorithm",
  "ssl.trustmanager.algorithm", "ssl.endpoint.identification.algorithm", "ssl.secure.random.implementation",
  "ssl.client.auth", "ssl.engine.factory.class", "sasl.mechanism.inter.broker.protocol", "sasl.jaas.config",
  "sasl.enabled.mechanisms", "sasl.kerberos.service.name", "sasl.kerberos.kinit.cmd",
  "sasl.kerberos.ticket.renew.window.factor", "sasl.kerberos.ticket.renew.jitter",
  "sasl.kerberos.min.time.before.relogin", "sasl.kerberos.principal.to.local.rules",
  "sasl.login.refresh.window.factor", "sasl.login.refresh.window.jitter",
  "sasl.login.refresh.min.period.seconds", "sasl.login.refresh.buffer.seconds",
  "max.connections", "max.connection.creation.rate", "num.network.threads"}
CLUSTER_LISTENER = {"max.connections", "max.connection.creation.rate", "num.network.threads"}
DYN = (SSL_RECONF | {"log.cleaner.threads", "log.cleaner.dedupe.buffer.size", "log.cleaner.io.buffer.load.factor",
  "log.cleaner.io.buffer.size", "message.max.bytes", "log.cleaner.io.max.bytes.per.second", "log.cleaner.backoff.ms"}
  | {v[0] for k, v in SYN.items() if k != "message.format.version"}
  | {"num.io.threads", "num.replica.fetchers", "num.recovery.threads.per.data.dir", "background.threads"}
  | {"metric.reporters"} | LISTENER_DYN
  | {"max.connections.per.ip", "max.connections.per.ip.overrides", "max.connections", "max.connection.creation.rate"}
  | {"producer.id.expiration.ms", "transaction.partition.verification.enable"}
  | {"remote.log.index.file.cache.total.size.bytes", "remote.fetch.max.wait.ms",
     "remote.log.manager.copy.max.bytes.per.second", "remote.log.manager.fetch.max.bytes.per.second",
     "remote.list.offsets.request.timeout.ms"}
  | set(THROTTLE_RATES))
PER_BROKER = (SSL_RECONF | LISTENER_DYN) - CLUSTER_LISTENER

def jdouble(v):
    r = repr(float(v))
    if "e" in r:
        m, e = r.split("e")
        r = m + "E" + str(int(e))
    return r

def to_str(v, typ):
    if v is None: return None
    if isinstance(v, bool): return "true" if v else "false"
    if isinstance(v, list): return ",".join(to_str(x, "STRING") for x in v)
    if typ == "DOUBLE": return jdouble(v)
    if isinstance(v, float) and v == int(v) and typ != "DOUBLE": return str(int(v))
    s = str(v)
    if typ == "CLASS" and s.startswith("class "): s = s[6:]
    return s

def check_of(x):
    """(check, min, max, choices)"""
    v = x.get("validator"); n = x["name"]
    if n in ("compression.gzip.level",): return ("RANGE_OR_DEFAULT", "1", "9", None)
    if n == "compression.lz4.level": return ("RANGE", "1", "17", None)
    if n == "compression.zstd.level": return ("RANGE", "-131072", "22", None)
    if n.startswith("remote.log.manager.") and n.endswith("thread.pool.size") and v and v[0] == "other":
        return ("RANGE_OR_DEFAULT", "1", None, None)
    if not v: return ("NONE", None, None, None)
    k = v[0]
    if k == "range":
        f = (lambda a: None if a is None else (jdouble(a) if x["type"] == "DOUBLE" and not float(a).is_integer() else str(int(a)) if float(a).is_integer() else jdouble(a)))
        return ("RANGE", f(v[1]), f(v[2]) if len(v) > 2 else None, None)
    if k in ("choice", "ichoice", "list"):
        vals = []
        for c in v[1]:
            if isinstance(c, (list, tuple)) and c and c[0] == "?": vals += ENUMS[c[1]]
            else: vals.append(c)
        return ({"choice": "CHOICE", "ichoice": "ICHOICE", "list": "LIST"}[k], None, None, ",".join(vals))
    o = v[1]
    if "NonEmptyString" in o: return ("NONEMPTY", None, None, None)
    if "MetadataVersionValidator" in o: return ("VERSION", None, None, None)
    if "ThrottledReplicaList" in o: return ("THROTTLED", None, None, None)
    return ("NONE", None, None, None)

def infer(name, val):
    if val == "null": return ("STRING" if not re.search(r"(secret|passphrase|password)$", name) else "PASSWORD"), None
    if val.startswith("["): return "LIST", ",".join(s.strip() for s in val[1:-1].split(",") if s.strip())
    if val in ("true", "false"): return "BOOLEAN", val
    if val.startswith("class "): return "CLASS", val[6:]
    if re.fullmatch(r"-?\d+", val):
        return ("INT" if -2**31 <= int(val) < 2**31 else "LONG"), val
    if re.fullmatch(r"-?\d+\.\d+(E\d+)?", val): return "DOUBLE", val
    return "STRING", val

def cstr(s):
    return "NULL" if s is None else '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'

def rows(entries, topic):
    out = []
    for x in sorted(entries, key=lambda e: e["name"]):
        n = x["name"]; typ = x["type"]
        flags = []
        if x.get("internal"): flags.append("RN_KCFG_INTERNAL")
        if topic:
            if n in ACT_TOPIC: flags.append("RN_KCFG_ACTS")
        else:
            if n in ACT_BROKER: flags.append("RN_KCFG_ACTS")
            if n in DYN: flags.append("RN_KCFG_DYNAMIC")
            if n in PER_BROKER: flags.append("RN_KCFG_PER_BROKER")
            if n in SSL_RECONF: flags.append("RN_KCFG_LISTENER_ONLY")
        if n in LATER: flags.append("RN_KCFG_LATER")
        if x.get("inferred"): flags.append("RN_KCFG_INFERRED")
        dv = x.get("default")
        if dv == "__NODEFAULT__":
            flags.append("RN_KCFG_REQUIRED"); ds = None
        elif n in FIXED_DEFAULTS: ds = FIXED_DEFAULTS[n]
        elif x.get("inferred"): ds = x["dstr"]
        else: ds = to_str(dv, typ)
        if typ == "PASSWORD": ds = None
        chk, mn, mx, ch = check_of(x) if not x.get("inferred") else ("NONE", None, None, None)
        syn = ",".join(SYN[n]) if topic and n in SYN else None
        out.append("\t{ %s, RN_KCFG_%s, RN_KCHK_%s,\n\t    %s, %s, %s, %s,\n\t    %s, %s },"
                   % (cstr(n), typ, chk, " | ".join(flags) or "0", cstr(ds), cstr(mn), cstr(mx), cstr(ch), cstr(syn)))
    return out

broker = [x for x in d["broker"] if "name" in x]
# Kafka's DynamicConfig.Broker quotas: dynamic only, in no ConfigDef read
# above (LONG, Long.MAX_VALUE, at least 0)
for k in THROTTLE_RATES:
    broker.append({"name": k, "type": "LONG", "default": 9223372036854775807,
                   "validator": ("range", 0)})
names = {x["name"] for x in broker}
for l in KAFKA4_LISTING.strip().splitlines():
    k, _, v = l.partition(" =")
    k = k.strip(); v = v.strip()
    if k in names: continue
    typ, ds = infer(k, v)
    broker.append({"name": k, "type": typ, "inferred": True, "dstr": ds,
                   "internal": k.startswith("internal.")})
topic = d["topic"]
# unknown defaults must be fixed by hand
for x in broker + topic:
    if x.get("default") == "__UNK__" and x["name"] not in FIXED_DEFAULTS:
        print("UNFIXED", x["name"], file=sys.stderr)

print("/* Generated by contrib/gen-kconfig-catalogue.py from Apache Kafka's")
print(" * config definitions (names, types, defaults, ranges, synonyms, dynamic")
print(" * update modes); RN_KCFG_ACTS/LATER are runnel's own marks. */")
print('#include "autoconf.h"\n\n#include <stddef.h>\n\n#include "common/kconfig_catalogue.h"\n')
print("const struct rn_kcfg rn_kcfg_topic[] = {")
print("\n".join(rows(topic, True)))
print("};\nconst size_t rn_kcfg_topic_n = sizeof(rn_kcfg_topic) / sizeof(rn_kcfg_topic[0]);\n")
print("const struct rn_kcfg rn_kcfg_broker[] = {")
print("\n".join(rows(broker, False)))
print("};\nconst size_t rn_kcfg_broker_n = sizeof(rn_kcfg_broker) / sizeof(rn_kcfg_broker[0]);")
