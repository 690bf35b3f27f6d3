"""Realistic sizes against one runneld: a topic with 1,000 partitions and
1,000 topics of 4 partitions are listed by every client with leaders and
ISRs, read back through one consumer, described, offset-listed, elected
and shown by the tools; 100 consumers long-poll one partition through
100,000 appends with no connection dropped and flat broker memory; admin
requests with 100-8,000 topics (2 MB, far beyond a ring frame) go through in
one request each; retention passes never create the idle partitions' logs;
no worker hangs, crashes or restarts throughout."""
import os
import re
import socket
import struct
import subprocess
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaAdminClient, KafkaConsumer
from kafka.admin import ConfigResource, ConfigResourceType
from kafka.admin import NewTopic as KNewTopic

from rntest import BUILDDIR, Node, Tap, TempDir, rss_bound_kib, wait_for

t = Tap()
BIG = 1000          # partitions of one topic
MANY = 1000         # topics of 4 partitions
TOPICS_TOOL = os.path.join(BUILDDIR, "runnel-topics")
CONFIGS_TOOL = os.path.join(BUILDDIR, "runnel-configs")
ELECT_TOOL = os.path.join(BUILDDIR, "runnel-leader-election")



def closes(node):
    return [l for l in node.logtext().splitlines()
            if "closing" in l or "failed:" in l]


def want_layout():
    want = {"big": BIG}
    want.update({"t%04d" % i: 4 for i in range(MANY)})
    return want


# -- raw requests for APIs these client versions do not send ----------------

def uvarint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])


def compact_str(s):
    b = s.encode()
    return uvarint(len(b) + 1) + b


class Reader:
    def __init__(self, b):
        self.b, self.o = b, 0

    def take(self, fmt):
        v = struct.unpack_from(fmt, self.b, self.o)
        self.o += struct.calcsize(fmt)
        return v[0] if len(v) == 1 else v

    def uvarint(self):
        shift = n = 0
        while True:
            c = self.b[self.o]
            self.o += 1
            n |= (c & 0x7F) << shift
            if not c & 0x80:
                return n
            shift += 7

    def cstr(self):
        n = self.uvarint() - 1
        if n < 0:
            return None
        s = self.b[self.o:self.o + n].decode()
        self.o += n
        return s

    def tags(self):
        for _ in range(self.uvarint()):
            self.uvarint()
            self.o += self.uvarint()


def roundtrip(node, key, ver, body, flexible, timeout=60):
    """One request on its own connection (header v2 if flexible, else v1):
    a Reader positioned after the response's correlation id, or None."""
    hdr = struct.pack(">hhih", key, ver, 77, 4) + b"test"
    if flexible:
        hdr += b"\x00"
    s = socket.create_connection(("127.0.0.1", node.port), timeout=timeout)
    try:
        s.sendall(struct.pack(">i", len(hdr) + len(body)) + hdr + body)
        buf = b""
        while len(buf) < 4 or len(buf) < 4 + struct.unpack(">i", buf[:4])[0]:
            c = s.recv(1 << 20)
            if not c:
                return None
            buf += c
    finally:
        s.close()
    r = Reader(buf[4:])
    return r if r.take(">i") == 77 else None


def call(node, key, ver, body, timeout=60):
    """One flexible-version request; the response body after its
    correlation id and tagged fields."""
    r = roundtrip(node, key, ver, body, True, timeout)
    if r is None:
        return None
    r.tags()
    return r


def describe_cluster(node):
    r = call(node, 60, 0, b"\x00\x00")  # no authorized ops, no tags
    if r is None:
        return None
    r.take(">i")
    err = r.take(">h")
    r.cstr()
    cluster = r.cstr()
    controller = r.take(">i")
    brokers = []
    for _ in range(r.uvarint() - 1):
        bid = r.take(">i")
        host = r.cstr()
        port = r.take(">i")
        r.cstr()
        r.tags()
        brokers.append((bid, host, port))
    return err, cluster, controller, brokers


def elect_leaders(node, parts):
    """ElectLeaders v2 PREFERRED for {topic: [partitions]} in one request:
    {(topic, partition): error code}, and the top-level error code."""
    body = b"\x00" + uvarint(len(parts) + 1)
    for topic, ps in parts.items():
        body += compact_str(topic) + uvarint(len(ps) + 1)
        body += b"".join(struct.pack(">i", p) for p in ps) + b"\x00"
    body += struct.pack(">i", 30000) + b"\x00"
    r = call(node, 43, 2, body)
    if r is None:
        return None, None
    r.take(">i")
    top = r.take(">h")
    out = {}
    for _ in range(r.uvarint() - 1):
        topic = r.cstr()
        for _ in range(r.uvarint() - 1):
            p, err = r.take(">ih")
            r.cstr()
            r.tags()
            out[(topic, p)] = err
        r.tags()
    return top, out


def create_topics_v1(node, names, validate_only):
    """CreateTopics v1 (header v1) of names with 1 partition each, as sent:
    the error code of each entry of the response, in order."""
    body = struct.pack(">i", len(names))
    for nm in names:
        body += struct.pack(">h", len(nm)) + nm.encode() + struct.pack(">ihii", 1, 1, 0, 0)
    body += struct.pack(">i?", 30000, validate_only)
    r = roundtrip(node, 19, 1, body, False)
    if r is None:
        return None
    codes = []
    for _ in range(r.take(">i")):
        ln = r.take(">h")
        r.o += ln
        codes.append(r.take(">h"))
        ln = r.take(">h")
        r.o += max(ln, 0)
    return codes


def parse_describe(out):
    """{topic: {partition: (leader, isr)}} from runnel-topics --describe."""
    res = {}
    for line in out.splitlines():
        if not line.startswith("\t"):
            continue
        f = dict(re.findall(r"(\w[\w ]*?): ([^\t]*)", line))
        if "Partition" in f:
            res.setdefault(f["Topic"], {})[int(f["Partition"])] = (
                f.get("Leader"), f.get("Isr"))
    return res


def run_tool(*args, timeout=60):
    return subprocess.run(list(args), capture_output=True, text=True,
                          timeout=timeout)


def check_listing(n):
    want = want_layout()

    def complete(parts):
        return all(len(parts.get(tp, {})) == c for tp, c in want.items())

    # kcat
    t0 = time.monotonic()
    r = run_tool("kcat", "-b", n.bootstrap, "-L", "-m", "30")
    took = time.monotonic() - t0
    kc = {}
    topic = None
    for line in r.stdout.splitlines():
        m = re.match(r'\s*topic "([^"]+)" with (\d+) partitions', line)
        if m:
            topic = m.group(1)
            kc[topic] = {}
            continue
        m = re.match(r"\s*partition (\d+), leader (-?\d+), replicas: ([\d,]*), "
                     r"isrs: ([\d,]*)", line)
        if m and topic:
            kc[topic][int(m.group(1))] = (int(m.group(2)), m.group(4))
    t.ok(r.returncode == 0 and complete(kc),
         "kcat -L lists all %d partitions (%.2fs)" % (BIG + 4 * MANY, took))
    if r.returncode:
        t.diag(r.stderr[-2000:])
    t.ok(complete(kc) and all(v == (1, "1") for tp in want
                              for v in kc[tp].values()),
         "kcat: every partition has leader 1 and ISR [1]")

    # confluent-kafka
    t0 = time.monotonic()
    md = AdminClient({"bootstrap.servers": n.bootstrap}).list_topics(timeout=30)
    took = time.monotonic() - t0
    ck = {name: {p.id: (p.leader, p.isrs, p.error) for p in tm.partitions.values()}
          for name, tm in md.topics.items()}
    t.ok(complete(ck), "confluent-kafka list_topics() lists all partitions "
         "(%.2fs)" % took)
    t.ok(complete(ck) and all(v == (1, [1], None) for tp in want
                              for v in ck[tp].values()),
         "confluent-kafka: every partition has leader 1, ISR [1], no error")

    # kafka-python: the consumer's view, and the admin's topic metadata
    t0 = time.monotonic()
    kcons = KafkaConsumer(bootstrap_servers=n.bootstrap,
                          request_timeout_ms=30000, api_version_auto_timeout_ms=10000)
    try:
        names = kcons.topics()
        kp = {tp: kcons.partitions_for_topic(tp) or set() for tp in want}
        took = time.monotonic() - t0
        t.ok(set(want) <= names and all(kp[tp] == set(range(c))
                                        for tp, c in want.items()),
             "kafka-python topics()/partitions_for_topic() list all "
             "partitions (%.2fs)" % took)
    finally:
        kcons.close()
    ka = KafkaAdminClient(bootstrap_servers=n.bootstrap, request_timeout_ms=30000)
    try:
        desc = ka.describe_topics(list(want))
        kd = {d["topic"]: {p["partition"]: (p["leader"], p["isr"], p["error_code"])
                           for p in d["partitions"]} for d in desc}
        t.ok(complete(kd) and all(v == (1, [1], 0) for tp in want
                                  for v in kd[tp].values()),
             "kafka-python describe_topics(): leader 1 and ISR [1] everywhere")
    finally:
        ka.close()


def check_big_fetch(n):
    """10 records in each of the 1,000 partitions, read by one consumer."""
    p = Producer({"bootstrap.servers": n.bootstrap, "linger.ms": 20,
                  "queue.buffering.max.messages": 100000})
    for part in range(BIG):
        for i in range(10):
            p.produce("big", value=b"v%d-%d" % (part, i), partition=part)
    left = p.flush(60)
    t.eq(left, 0, "10 records produced to each of %d partitions" % BIG)

    c = Consumer({"bootstrap.servers": n.bootstrap, "group.id": "unused",
                  "enable.auto.commit": False, "fetch.wait.max.ms": 100,
                  "fetch.message.max.bytes": 1024})
    c.assign([TopicPartition("big", i, 0) for i in range(BIG)])
    got = {}
    t0 = time.monotonic()
    deadline = t0 + 60
    while sum(len(v) for v in got.values()) < 10 * BIG and \
            time.monotonic() < deadline:
        for m in c.consume(10000, 1.0):
            if m.error() is None:
                got.setdefault(m.partition(), []).append(m.value())
    took = time.monotonic() - t0
    c.close()
    t.ok(len(got) == BIG and all(
        got[i] == [b"v%d-%d" % (i, k) for k in range(10)] for i in range(BIG)),
        "one consumer assigned all %d partitions reads 10 records from each "
        "in order (%.2fs)" % (BIG, took))


def hw_checkpoint(n):
    """The node's replication-offset-checkpoint: its count line and entries."""
    try:
        with open(os.path.join(n.logdir, "replication-offset-checkpoint")) as f:
            lines = f.read().split("\n")
    except OSError:
        return -1, {}
    rows = [l.split() for l in lines[2:] if l.strip()]
    return int(lines[1]), {(r[0], int(r[1])): int(r[2]) for r in rows}


def check_hw_checkpoint(n):
    """The storage duty writes the high-watermark checkpoint a step per
    loop turn; whole, it still lists every partition with its high
    watermark (Kafka's every 5 s)."""
    def whole():
        count, rows = hw_checkpoint(n)
        return count == len(rows) and all(
            rows.get(("big", i)) == 10 for i in range(BIG))
    t.ok(wait_for(whole, 20, 0.5),
         "replication-offset-checkpoint lists all %d partitions of big at "
         "high watermark 10, its count line matching its entries" % BIG)


def check_long_poll(n, tmp):
    """100 long-polling consumers of one partition while 100,000 records land."""
    CONS, RECORDS = 100, 100000
    a = AdminClient({"bootstrap.servers": n.bootstrap})
    a.create_topics([NewTopic("lp", 1, 1)])["lp"].result()
    # warm every path once so the "before" figure is the steady state
    p = Producer({"bootstrap.servers": n.bootstrap, "linger.ms": 1,
                  "batch.num.messages": 100, "queue.buffering.max.messages": 200000})
    p.produce("lp", b"x", partition=0)
    p.flush(10)
    before = n.rss_kib()
    outs = []
    procs = []
    for i in range(CONS):
        path = os.path.join(tmp, "lp%d.out" % i)
        outs.append(path)
        procs.append(subprocess.Popen(
            ["kcat", "-C", "-b", n.bootstrap, "-t", "lp", "-p", "0", "-o", "1",
             "-c", str(RECORDS), "-f", "%o\n", "-q",
             "-X", "fetch.wait.max.ms=500"],
            stdout=open(path, "w"), stderr=subprocess.DEVNULL))
    # every consumer has connected and parked its first fetch
    time.sleep(3)
    t0 = time.monotonic()
    for i in range(RECORDS):
        while True:
            try:
                p.produce("lp", b"r%d" % i, partition=0)
                break
            except BufferError:
                p.poll(0.05)
        if i % 100 == 99:
            p.poll(0)
    t.eq(p.flush(60), 0, "%d records appended in small batches" % RECORDS)
    prod_s = time.monotonic() - t0
    deadline = time.monotonic() + 60
    for pr in procs:
        try:
            pr.wait(max(1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            pr.kill()
            pr.wait()
    took = time.monotonic() - t0
    full = 0
    for path in outs:
        with open(path) as f:
            offs = f.read().split()
        if offs == [str(o) for o in range(1, RECORDS + 1)]:
            full += 1
    t.eq(full, CONS, "each of %d long-polling consumers read all %d records "
         "in order (produce %.1fs, all read %.1fs)" % (CONS, RECORDS, prod_s, took))
    time.sleep(1)
    after = n.rss_kib()
    t.diag("node RSS before %d KiB, after %d KiB" % (before, after))
    t.ok(after - before < rss_bound_kib(24 * 1024),
         "broker memory stays flat: RSS %d -> %d KiB" % (before, after))


def check_admin(n):
    ka = KafkaAdminClient(bootstrap_servers=n.bootstrap, request_timeout_ms=60000)
    try:
        # DescribeConfigs with synonyms for 300 topics in one request
        names = ["t%04d" % i for i in range(300)]
        resps = ka.describe_configs(
            [ConfigResource(ConfigResourceType.TOPIC, nm) for nm in names],
            include_synonyms=True)
        res = {}
        for resp in resps:
            for err, _msg, _rt, rname, entries in resp.resources:
                res[rname] = (err, {e[0]: e for e in entries})
        ok = set(res) == set(names) and all(
            e == 0 and "retention.ms" in cfg and "cleanup.policy" in cfg
            for e, cfg in res.values())
        t.ok(ok and len(resps) == 1,
             "DescribeConfigs of 300 topics in one request: every topic's "
             "configs, no error")
        syn = all(len(cfg["retention.ms"][-1]) >= 1 for _e, cfg in res.values()) \
            if ok else False
        t.ok(syn, "with synonyms for each config")
    finally:
        ka.close()

    # ListOffsets for 1,000 partitions, earliest and latest, one request each
    kc = KafkaConsumer(bootstrap_servers=n.bootstrap, request_timeout_ms=30000)
    try:
        from kafka import TopicPartition as KTP
        tps = [KTP("big", i) for i in range(BIG)]
        first = kc.beginning_offsets(tps)
        last = kc.end_offsets(tps)
        t.ok(all(first.get(tp) == 0 for tp in tps),
             "ListOffsets earliest of %d partitions: 0 everywhere" % BIG)
        t.ok(all(last.get(tp) == 10 for tp in tps),
             "ListOffsets latest of %d partitions: 10 everywhere" % BIG)
    finally:
        kc.close()

    # CreateTopics with 100 topics in one request, DeleteTopics of all of them
    ka = KafkaAdminClient(bootstrap_servers=n.bootstrap, request_timeout_ms=60000)
    try:
        new = ["c%03d" % i for i in range(100)]
        r = ka.create_topics([KNewTopic(nm, 3, 1) for nm in new], timeout_ms=30000)
        errs = {e[0]: e[1] for e in r.topic_errors}
        t.ok(set(errs) == set(new) and not any(errs.values()),
             "CreateTopics of 100 topics in one request: each created")
        md = AdminClient({"bootstrap.servers": n.bootstrap}).list_topics(timeout=30)
        t.ok(all(nm in md.topics and len(md.topics[nm].partitions) == 3
                 for nm in new), "all 100 are listed with 3 partitions")
        r = ka.delete_topics(new, timeout_ms=30000)
        errs = {e[0]: e[1] for e in r.topic_error_codes}
        t.ok(set(errs) == set(new) and not any(errs.values()),
             "DeleteTopics of the 100 in one request: each deleted")

        def gone():
            md = AdminClient({"bootstrap.servers": n.bootstrap}).list_topics(timeout=30)
            return not any(nm in md.topics for nm in new)
        t.ok(wait_for(gone, 20), "and none is listed any more")
    finally:
        ka.close()

    # requests and replies far larger than a ring frame (and than the
    # ring itself) between the network worker and the controller
    ka = KafkaAdminClient(bootstrap_servers=n.bootstrap, request_timeout_ms=60000)
    try:
        long = ["v%04d-%s" % (i, "x" * 240) for i in range(8000)]
        t0 = time.monotonic()
        r = ka.create_topics([KNewTopic(nm, 1, 1) for nm in long],
                             timeout_ms=30000, validate_only=True)
        errs = {e[0]: e[1] for e in r.topic_errors}
        t.ok(set(errs) == set(long) and not any(errs.values()),
             "CreateTopics validate_only of 8,000 topics with 245-byte names "
             "(2 MB each way) answered for each (%.2fs)" % (time.monotonic() - t0))
        md = AdminClient({"bootstrap.servers": n.bootstrap}).list_topics(timeout=30)
        t.ok(not any(nm in md.topics for nm in long), "and none was created")
        # duplicates and '.'/'_' collisions inside one large request
        names = ["d.%04d" % i for i in range(3000)] + ["d.0042", "d_0042"]
        codes = create_topics_v1(n, names, validate_only=True)
        t.eq((len(codes), set(codes[:3000]), codes[3000:]), (3002, {0}, [42, 17]),
             "in one request of 3,002: a repeated name gets INVALID_REQUEST, "
             "a colliding one INVALID_TOPIC_EXCEPTION, the rest are valid")
    finally:
        ka.close()

    # ElectLeaders for every partition, one request
    want = want_layout()
    top, res = elect_leaders(n, {tp: list(range(c)) for tp, c in want.items()})
    total = sum(want.values())
    t.ok(top == 0 and res is not None and len(res) == total and
         set(res.values()) == {84},
         "ElectLeaders PREFERRED for all %d partitions in one request: "
         "ELECTION_NOT_NEEDED for each" % total)
    r = run_tool(ELECT_TOOL, "--bootstrap-server", n.bootstrap,
                 "--election-type", "PREFERRED", "--all-topic-partitions")
    # all partitions (a null list): as Kafka, only elections that ran
    # or failed are reported, none on a single node
    t.ok(r.returncode == 0 and "No partitions needed a leader election" in r.stdout,
         "runnel-leader-election --all-topic-partitions: nothing to elect")
    if r.returncode:
        t.diag(r.stderr[-1000:])

    d = describe_cluster(n)
    t.ok(d is not None and d[0] == 0 and d[2] == 1 and
         [b[0] for b in d[3]] == [1] and d[3][0][2] == n.port,
         "DescribeCluster: no error, controller 1, broker 1 on its port")

    # the tools, for everything
    t0 = time.monotonic()
    r = run_tool(TOPICS_TOOL, "--bootstrap-server", n.bootstrap, "--describe",
                 "--timeout-ms", "60000", timeout=120)
    took = time.monotonic() - t0
    d = parse_describe(r.stdout)
    t.ok(r.returncode == 0 and all(
        sorted(d.get(tp, {})) == list(range(c)) and
        all(v == ("1", "1") for v in d[tp].values()) for tp, c in want.items()),
        "runnel-topics --describe shows every partition with leader and ISR "
        "(%.2fs)" % took)
    if r.returncode:
        t.diag(r.stderr[-1000:])
    t0 = time.monotonic()
    r = run_tool(CONFIGS_TOOL, "--bootstrap-server", n.bootstrap, "--describe",
                 "--entity-type", "topics", "--all", "--timeout-ms", "60000",
                 timeout=120)
    took = time.monotonic() - t0
    shown = set(re.findall(r"^All configs for topic (\S+) are:", r.stdout, re.M))
    t.ok(r.returncode == 0 and set(want) <= shown,
         "runnel-configs --describe --all shows every topic (%.2fs)" % took)
    if r.returncode or not set(want) <= shown:
        t.diag(r.stdout[:500] + r.stderr[-1000:])


def check_retention(n):
    """Retention passes (every second here) walk every local partition in
    steps: a busy topic gets its old segments deleted, and the thousands of
    partitions nobody used are not created on disk for it."""
    a = AdminClient({"bootstrap.servers": n.bootstrap})
    a.create_topics([NewTopic("ret", 1, 1, config={
        "segment.bytes": "1024", "retention.ms": "1500"})])["ret"].result()
    p = Producer({"bootstrap.servers": n.bootstrap, "linger.ms": 0})
    for i in range(60):
        p.produce("ret", b"r" * 100, partition=0)
        p.flush(10)
    kc = KafkaConsumer(bootstrap_servers=n.bootstrap, request_timeout_ms=30000)
    try:
        from kafka import TopicPartition as KTP
        tp = KTP("ret", 0)
        start = wait_for(lambda: kc.beginning_offsets([tp])[tp] > 0 and
                         kc.beginning_offsets([tp])[tp], 20, 0.5)
        t.ok(start, "retention deleted the old segments of a busy topic "
             "(log start offset %s)" % start)
    finally:
        kc.close()
    idle = [d for d in os.listdir(n.logdir) if d.startswith("t0")]
    t.eq(len(idle), 0, "no log was created for the %d partitions nobody used"
         % (4 * MANY))


with TempDir() as tmp:
    n = Node(tmp, props={"num.partitions": "1",
                         "log.retention.check.interval.ms": "1000"})
    n.start()
    try:
        st = n.wait_running()
        t.ok(st is not None, "node is up")
        pids = {w["name"]: w["pid"] for w in st["workers"]}
        start_rss = n.rss_kib()
        t.diag("node RSS after start: %d KiB" % start_rss)
        a = AdminClient({"bootstrap.servers": n.bootstrap})

        def controller_known():
            try:
                return a.list_topics(timeout=2).controller_id == 1
            except Exception:
                return False
        # librdkafka's admin client waits for a controller it already
        # knows: ask once the node's controller is active
        t.ok(wait_for(controller_known, 30, 0.2), "the controller is active")
        t0 = time.monotonic()
        fs = a.create_topics([NewTopic("big", BIG, 1)] +
                             [NewTopic("t%04d" % i, 4, 1) for i in range(MANY)],
                             request_timeout=60)
        bad = {}
        for name, f in fs.items():
            try:
                f.result()
            except Exception as e:
                bad[name] = e
        t.ok(not bad, "one topic of %d partitions and %d topics of 4 created "
             "(%.2fs)" % (BIG, MANY, time.monotonic() - t0))
        for name in list(bad)[:3]:
            t.diag("%s: %s" % (name, bad[name]))
        check_listing(n)
        # the high-watermark checkpoint (every 5 s) has run over them all
        time.sleep(5.5)
        listed_rss = n.rss_kib()
        t.ok(listed_rss - start_rss < rss_bound_kib(32 * 1024),
             "5,000 partitions created and listed cost the node %d KiB of "
             "RSS (bound %d MiB)" % (listed_rss - start_rss,
                                      rss_bound_kib(32 * 1024) // 1024))
        check_big_fetch(n)
        check_hw_checkpoint(n)
        check_admin(n)
        check_long_poll(n, tmp)
        check_retention(n)
        t.eq(closes(n), [], "the broker closed no connection and failed no request")
        t.eq({w["name"]: w["pid"] for w in n.status()["workers"]}, pids,
             "no worker was restarted (none hung or crashed)")
        t.eq(n.crashes(), [], "no worker died of a crash")
    finally:
        n.kill()

t.done()
