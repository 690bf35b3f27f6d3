"""The metrics endpoint: Prometheus text parsed by prometheus_client, counters
that follow real produce and fetch traffic and survive a worker's SIGKILL,
request latency histograms per API, log sizes, raft, shared-memory and ring
gauges, bad requests refused, scrapes kept alive on one connection, and
runnelctl metrics --json agreeing with /metrics."""
import json
import os
import re
import signal
import socket
import time
import urllib.request

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from prometheus_client.parser import text_string_to_metric_families

from rntest import Node, Tap, TempDir, free_port, wait_for

BTM = "kafka_server_brokertopicmetrics_"
RM = "kafka_server_replicamanager_"
KC = "kafka_controller_kafkacontroller_"
TOPIC = "orders"
N = 10000
PAYLOAD = 100

t = Tap()


def scrape(port):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port,
                                timeout=5) as r:
        return r.status, r.headers.get("Content-Type"), r.read().decode()


def samples(text):
    """{(name, ((label, value), ...)): value} and {family: type}."""
    out, types = {}, {}
    for fam in text_string_to_metric_families(text):
        types[fam.name] = fam.type
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out, types


def get(port, name, **labels):
    return samples(scrape(port)[2])[0].get((name, tuple(sorted(labels.items()))))


def response(f):
    """One whole response read off f (a socket's buffered reader): (status
    line, {header: value} with lower-case names, body), or None if the
    peer closed first."""
    lines = []
    while True:
        ln = f.readline()
        if not ln.endswith(b"\n"):
            return None
        if ln == b"\r\n":
            break
        lines.append(ln.decode().rstrip("\r\n"))
    headers = {k.strip().lower(): v.strip()
               for k, v in (ln.split(":", 1) for ln in lines[1:])}
    body = f.read(int(headers.get("content-length", 0)))
    return lines[0], headers, body


def raw(port, data):
    """Send bytes, return the status line (or None if the peer hung up)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    try:
        s.sendall(data)
        r = response(s.makefile("rb"))
    except (ConnectionResetError, BrokenPipeError):
        r = None
    finally:
        s.close()
    return r[0] if r else None


def closed(f):
    """Whether the peer closed after what it sent (f: a buffered reader)."""
    try:
        return f.read(1) == b""
    except ConnectionResetError:
        return True


def check_keepalive(mport):
    """Scrapes follow one another on one connection, as Prometheus sends
    them; pipelined requests are answered in order; Connection: close,
    and HTTP/1.0 without keep-alive, get their answer and the close."""
    get_ = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"
    s = socket.create_connection(("127.0.0.1", mport), timeout=5)
    f = s.makefile("rb")
    try:
        got = [(s.sendall(get_), response(f))[1] for _ in range(3)]
        t.ok(all(r and r[0] == "HTTP/1.1 200 OK" and
                 r[1].get("connection") == "keep-alive" and
                 samples(r[2].decode())[0] for r in got),
             "three scrapes on one connection, each whole and kept alive")
        s.sendall(get_ + b"GET /nope HTTP/1.1\r\n\r\n" + get_)
        got = [response(f) for _ in range(3)]
        t.eq([r and r[0] for r in got], ["HTTP/1.1 200 OK", "HTTP/1.1 404 Not Found",
                                         "HTTP/1.1 200 OK"],
             "pipelined requests are answered in order")
        s.sendall(b"GET /metrics HTTP/1.1\r\nConnection: close\r\n\r\n")
        r = response(f)
        t.ok(r and r[0] == "HTTP/1.1 200 OK" and r[1].get("connection") == "close" and
             closed(f), "Connection: close gets the answer, then the close")
    finally:
        s.close()
    # idle kept connections never lock a scraper out: a full table (8)
    # gives up its longest idle one
    held, served = [], 0
    try:
        for _ in range(10):
            s = socket.create_connection(("127.0.0.1", mport), timeout=5)
            held.append(s)
            s.sendall(get_)
            r = response(s.makefile("rb"))
            served += bool(r and r[0] == "HTTP/1.1 200 OK")
        t.eq(served, 10, "ten kept-alive connections, two more than the table "
             "holds, are each served")
    finally:
        for s in held:
            s.close()
    for req, keep in ((b"GET /metrics HTTP/1.0\r\n\r\n", False),
                      (b"GET /metrics HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", True)):
        s = socket.create_connection(("127.0.0.1", mport), timeout=5)
        f = s.makefile("rb")
        try:
            s.sendall(req)
            r = response(f)
            if keep:
                s.sendall(req)
                r2 = response(f)
            t.ok(r and r[0] == "HTTP/1.1 200 OK" and
                 (r2 and r2[0] == "HTTP/1.1 200 OK" if keep else closed(f)),
                 "HTTP/1.0 %s" % ("with keep-alive: the connection stays" if keep
                                  else "without keep-alive: the connection closes"))
        finally:
            s.close()


STAGE = "runnel_request_stage_seconds"
REQUEST_STAGES = ("queued", "decode", "append", "send", "total")
LOOP_STAGES = ("loop_wait", "loop_turn")
SENDS = 20


def stage_hist(got, stage):
    """[(le, cumulative count)] in le order, _sum and _count of a stage."""
    b = sorted((float(dict(k[1])["le"]), v) for k, v in got.items()
               if k[0] == STAGE + "_bucket" and dict(k[1]).get("stage") == stage)
    return (b, got.get((STAGE + "_sum", (("stage", stage),))),
            got.get((STAGE + "_count", (("stage", stage),))))


def check_stages(mport, n):
    """SENDS produce requests, one at a time: every request stage counts
    them all, and each histogram is cumulative, monotonic, its +Inf bucket
    its _count."""
    before, types = samples(scrape(mport)[2])
    t.eq(types.get(STAGE), "histogram", "%s is a histogram" % STAGE)
    p = Producer({"bootstrap.servers": n.bootstrap, "linger.ms": 0})
    for i in range(SENDS):
        p.produce(TOPIC, value=b"s%d" % i, partition=0)
        p.flush(10)
    # a response's last stages are counted just after its bytes are
    # written, so a moment after the client has them
    wait_for(lambda: all((stage_hist(samples(scrape(mport)[2])[0], st)[2] or 0) -
                         (stage_hist(before, st)[2] or 0) >= SENDS
                         for st in REQUEST_STAGES), 2)
    after, _ = samples(scrape(mport)[2])
    for stage in REQUEST_STAGES + LOOP_STAGES:
        b0, _, c0 = stage_hist(before, stage)
        b1, s1, c1 = stage_hist(after, stage)
        les = [le for le, _ in b1]
        counts = [v for _, v in b1]
        t.ok(len(b1) == 26 and les[-1] == float("inf") and
             all(a < b for a, b in zip(les, les[1:])),
             "%s: 26 buckets in increasing le order, the last +Inf" % stage)
        t.ok(all(a <= b for a, b in zip(counts, counts[1:])),
             "%s: the buckets are cumulative (never decrease)" % stage)
        t.ok(c1 is not None and counts and counts[-1] == c1,
             "%s: the +Inf bucket is the _count" % stage)
        t.ok(s1 is not None and s1 >= 0, "%s: _sum is there" % stage)
        if stage in REQUEST_STAGES:
            t.ok(c1 is not None and c0 is not None and c1 - c0 >= SENDS,
                 "%s counts the %d produce requests (%s -> %s)" % (
                     stage, SENDS, c0, c1))
        else:
            t.ok(c1 is not None and c1 > 0, "%s has samples" % stage)
    r = n.ctl("metrics", "--json")
    js = {(m["name"], tuple(sorted(m["labels"].items()))): m["value"]
          for m in json.loads(r.stdout)}
    k = (STAGE + "_bucket", (("le", "+Inf"), ("stage", "loop_wait")))
    t.ok(js.get(k) is not None, "runnelctl metrics --json has the stage buckets")


REQ = "kafka_network_requestmetrics_request_seconds"
RQ_STAGES = ("total", "queue", "local", "remote", "responsesend")
LOG_SIZE = "kafka_log_log_size"
RAFT = "kafka_server_raftmetrics_"


def req_hist(got, api, stage):
    """[(le, cumulative count)], _sum and _count of one API's stage."""
    lab = {"request": api, "stage": stage}
    b = sorted((float(dict(k[1])["le"]), v) for k, v in got.items()
               if k[0] == REQ + "_bucket" and
               {x: y for x, y in k[1] if x != "le"} == lab)
    key = tuple(sorted(lab.items()))
    return b, got.get((REQ + "_sum", key)), got.get((REQ + "_count", key))


def check_request_times(got, types):
    """Per API: the five stages' histograms well formed and counting the
    same requests, whose stage times add up to their total exactly (all
    are whole microseconds); Produce timed once per request answered."""
    t.eq(types.get(REQ), "histogram", "%s is a histogram" % REQ)
    for api in ("Produce", "Fetch", "Metadata", "ApiVersions", "InitProducerId"):
        hs = {st: req_hist(got, api, st) for st in RQ_STAGES}
        counts = {st: h[2] for st, h in hs.items()}
        t.ok(all(len(h[0]) == 26 and h[0][-1][0] == float("inf") and
                 h[0][-1][1] == h[2] and
                 all(a[1] <= b[1] for a, b in zip(h[0], h[0][1:]))
                 for h in hs.values()),
             "%s: 5 stage histograms of 26 cumulative buckets, +Inf the _count" % api)
        t.ok(counts["total"] > 0 and len(set(counts.values())) == 1,
             "%s: every stage counts the same %s requests (%s)" % (
                 api, counts["total"], counts))
        parts = sum(hs[st][1] for st in RQ_STAGES[1:])
        t.ok(abs(hs["total"][1] - parts) < 5e-6 * counts["total"] + 1e-9,
             "%s: queue + local + remote + responsesend = total (%.6f s, %.6f s)" % (
                 api, parts, hs["total"][1]))
    rq = "kafka_network_requestmetrics_requests_total"
    produce = got.get((rq, (("request", "Produce"),)))
    fetch = got.get((rq, (("request", "Fetch"),)))
    t.eq(req_hist(got, "Produce", "total")[2], produce,
         "Produce: every request counted by requests_total (%s) was timed" % produce)
    fc = req_hist(got, "Fetch", "total")[2]
    t.ok(fc is not None and fetch is not None and fetch - 5 <= fc <= fetch,
         "Fetch: timed %s of %s requests (long polls still parked are not)" % (fc, fetch))
    t.ok(req_hist(got, "Fetch", "remote")[1] > 0,
         "Fetch: parked fetches show as remote time (%s s)" % req_hist(got, "Fetch", "remote")[1])
    hb = got.get((rq, (("request", "Heartbeat"),)))
    t.ok(hb == 0 and not any(k[0].startswith(REQ) and ("request", "Heartbeat") in k[1]
                             for k in got),
         "an API never asked (Heartbeat: %s requests, no group here) adds no "
         "histograms to the scrape" % hb)


def check_dashboard(got):
    """Every family contrib/grafana/runnel.json queries is served."""
    path = os.path.join(os.environ.get("RUNNEL_SRCDIR", "."), "contrib", "grafana",
                        "runnel.json")
    with open(path) as f:
        dash = json.load(f)
    exprs = [tg["expr"] for p in dash["panels"] for tg in p.get("targets", [])]
    names = {re.sub(r"_(bucket|sum|count)$", "", m)
             for e in exprs for m in re.findall(r"\b(?:kafka|runnel)_[a-zA-Z0-9_]+", e)}
    served = {re.sub(r"_(bucket|sum|count)$", "", k[0]) for k in got}
    t.ok(len(exprs) >= 20 and names and names <= served,
         "the dashboard's %d queries name only served families (missing: %s)" % (
             len(exprs), sorted(names - served)))


def log_sizes(port):
    return {int(dict(k[1])["partition"]): v for k, v in samples(scrape(port)[2])[0].items()
            if k[0] == LOG_SIZE and dict(k[1]).get("topic") == TOPIC}


def check_node_gauges(got, types, node_id):
    """Raft, fetcher, shared memory, rings and locks on a single node."""
    t.eq(got.get((RAFT + "current_leader", ())), node_id,
         "raft current_leader is this node (%d)" % node_id)
    t.ok((got.get((RAFT + "current_epoch", ())) or 0) >= 1, "raft current_epoch >= 1")
    t.ok((got.get((RAFT + "high_watermark", ())) or 0) > 0,
         "raft high_watermark > 0 (%s)" % got.get((RAFT + "high_watermark", ())))
    t.ok((got.get(("runnel_raft_commit_seconds_count", ())) or 0) > 0 and
         got.get(("runnel_raft_commit_seconds_sum", ())) > 0,
         "runnel_raft_commit_seconds counts the commits of the topic creations (%s)" %
         got.get(("runnel_raft_commit_seconds_count", ())))
    avg = got.get((RAFT + "commit_latency_avg", ()))
    t.ok(avg is not None and abs(avg - 1000 * got[("runnel_raft_commit_seconds_sum", ())] /
                                 got[("runnel_raft_commit_seconds_count", ())]) < 0.01,
         "commit_latency_avg is the histogram's mean in ms (%s)" % avg)
    t.eq(got.get(("kafka_server_replicafetchermanager_maxlag", (("clientid", "Replica"),))),
         0, "maxlag{clientid=Replica} is 0: nothing followed")
    t.eq(got.get((RM + "nummismatchingreplicatologdirassignments", ())), 0,
         "no replica in another log dir than recorded")
    t.eq(types.get("runnel_ring_used_bytes"), "gauge", "ring depth is a gauge")
    rings = {dict(k[1])["ring"]: v for k, v in got.items() if k[0] == "runnel_ring_used_bytes"}
    t.eq(sorted(rings), sorted(["to_controller", "from_controller", "to_coordinator",
                                "from_coordinator"]), "the four ring directions")
    cap = got.get(("runnel_ring_capacity_bytes", ()))
    t.ok(cap and cap >= 4096 and all(0 <= v <= cap * 200 for v in rings.values()),
         "ring depths within their capacity (%s of %s each)" % (rings, cap))
    t.eq(got.get(("runnel_ring_dropped_bytes_total", ())), 0, "no ring bytes dropped")
    regions = {dict(k[1])["region"]: v for k, v in got.items()
               if k[0] == "runnel_shm_region_bytes"}
    backed = got.get(("runnel_shm_backed_bytes", ()))
    t.ok(regions.get("metrics", 0) > 0 and regions.get("partitions", 0) > 0 and
         backed is not None and 0 < backed <= sum(regions.values()),
         "shm: regions %s, %s bytes backed" % (regions, backed))
    t.ok((got.get(("runnel_shm_partition_slots_used", ())) or 0) >= 3,
         "shm: the topic's 3 partition slots are in use (%s)" %
         got.get(("runnel_shm_partition_slots_used", ())))
    md = got.get(("runnel_metadata_image_bytes", ())) or 0
    t.ok(0 < md < 1 << 20, "the metadata image's bytes: %s" % md)
    t.eq(got.get(("runnel_rlock_repairs_total", ())), 0, "no lock needed repair")


with TempDir() as tmp:
    mport = free_port()
    n = Node(tmp, props={"metrics.listener": "http://127.0.0.1:%d" % mport})
    n.start()
    try:
        t.ok(n.wait_running() is not None, "node is up")
        a = AdminClient({"bootstrap.servers": n.bootstrap})
        a.create_topics([NewTopic(TOPIC, 3, 1)])[TOPIC].result(20)
        t.ok(wait_for(lambda: get(mport, RM + "partitioncount") == 3, 10),
             "partitioncount is the topic's 3 partitions")

        status, ctype, text = scrape(mport)
        t.eq(status, 200, "GET /metrics answers 200")
        t.ok(ctype.startswith("text/plain; version=0.0.4"),
             "Content-Type is the text exposition 0.0.4 (%s)" % ctype)
        got, types = samples(text)
        t.ok("# HELP " + BTM + "messagesin_total" in text and
             "# TYPE " + BTM + "messagesin_total counter" in text,
             "HELP and TYPE lines precede the samples")
        for fam, typ in [(BTM + "messagesin", "counter"), (BTM + "bytesin", "counter"),
                         (BTM + "bytesout", "counter"), (RM + "partitioncount", "gauge"),
                         (RM + "leadercount", "gauge"),
                         (RM + "underreplicatedpartitions", "gauge"),
                         (RM + "offlinereplicacount", "gauge"),
                         (KC + "activecontrollercount", "gauge"),
                         (KC + "fencedbrokercount", "gauge"),
                         ("kafka_log_logmanager_offlinelogdirectorycount", "gauge"),
                         ("kafka_network_requestmetrics_requests", "counter"),
                         ("runnel_worker_restarts", "counter")]:
            t.eq(types.get(fam), typ, "%s is a %s" % (fam, typ))
        t.eq(got.get((RM + "leadercount", ())), 3, "this node leads all 3")
        t.eq(got.get((RM + "underreplicatedpartitions", ())), 0,
             "nothing under-replicated")
        t.eq(got.get((KC + "activecontrollercount", ())), 1,
             "the single node is the active controller")
        t.eq(got.get((KC + "fencedbrokercount", ())), 0, "no fenced broker")
        t.eq(got.get(("kafka_log_logmanager_offlinelogdirectorycount", ())), 0,
             "no log dir offline")

        key = (BTM + "messagesin_total", (("topic", TOPIC),))
        in0 = got.get(key, 0)
        bin0 = got.get((BTM + "bytesin_total", (("topic", TOPIC),)), 0)
        p = Producer({"bootstrap.servers": n.bootstrap, "linger.ms": 5,
                      "enable.idempotence": True})
        for i in range(N):
            p.produce(TOPIC, value=b"x" * PAYLOAD, partition=i % 3)
            if i % 1000 == 0:
                p.poll(0)
        t.eq(p.flush(30), 0, "%d records delivered" % N)
        got, _ = samples(scrape(mport)[2])
        t.eq(got.get(key, 0) - in0, N, "messagesin_total{topic} rose by exactly %d" % N)
        t.eq(got.get((BTM + "messagesin_total", ())), got.get(key),
             "the total equals the only topic's figure")
        bin1 = got.get((BTM + "bytesin_total", (("topic", TOPIC),)), 0)
        t.ok(bin1 - bin0 >= N * PAYLOAD,
             "bytesin_total{topic} rose by at least the payload (%d)" % (bin1 - bin0))
        t.ok(got.get(("kafka_network_requestmetrics_requests_total",
                      (("request", "Produce"),)), 0) > 0, "requests_total{Produce} > 0")

        check_stages(mport, n)

        out0 = got.get((BTM + "bytesout_total", (("topic", TOPIC),)), 0)
        c = Consumer({"bootstrap.servers": n.bootstrap, "group.id": "m",
                      "enable.auto.commit": False})
        c.assign([TopicPartition(TOPIC, i, 0) for i in range(3)])
        seen, deadline = 0, time.monotonic() + 30
        while seen < N and time.monotonic() < deadline:
            m = c.poll(1)
            if m is not None and not m.error():
                seen += 1
        # then to the end of the log, where long polls wait (remote time)
        for _ in range(100):
            if c.poll(1.5) is None:
                break
        c.close()
        t.eq(seen, N, "the consumer read all %d" % N)
        got, types = samples(scrape(mport)[2])
        check_request_times(got, types)
        check_node_gauges(got, types, n.node_id)
        check_dashboard(got)

        # the log's size: each partition's, growing with what is appended
        sizes = log_sizes(mport)
        t.eq(sorted(sizes), [0, 1, 2], "kafka_log_log_size for the 3 partitions")
        t.ok(all(v > 0 for v in sizes.values()) and
             sum(sizes.values()) >= N * PAYLOAD,
             "their sizes hold the %d records (%s)" % (N, sizes))
        disk = sum(os.path.getsize(os.path.join(dp, f))
                   for dp, _, fs in os.walk(n.dir) if os.path.basename(dp) == TOPIC + "-0"
                   for f in fs if f.endswith(".log"))
        t.eq(sizes[0], disk, "partition 0's size is its segments' bytes on disk (%d)" % disk)
        p = Producer({"bootstrap.servers": n.bootstrap, "linger.ms": 5})
        for i in range(1000):
            p.produce(TOPIC, value=b"y" * PAYLOAD, partition=0)
        t.eq(p.flush(30), 0, "1000 more records to partition 0")
        grown = log_sizes(mport)
        t.ok(grown[0] - sizes[0] >= 1000 * PAYLOAD and grown[1] == sizes[1],
             "partition 0 grew by at least their payload (%d), the others not" %
             (grown[0] - sizes[0]))
        out1 = get(mport, BTM + "bytesout_total", topic=TOPIC) or 0
        t.ok(out1 - out0 >= N * PAYLOAD,
             "bytesout_total{topic} rose by at least the payload (%d)" % (out1 - out0))

        # a worker's SIGKILL: its slot keeps what it counted
        rkey = ("runnel_worker_restarts_total", (("role", "network"),))
        before, _ = samples(scrape(mport)[2])
        old = n.workers()["network-0"]
        os.kill(old["pid"], signal.SIGKILL)
        t.ok(wait_for(lambda: (lambda w: w.get("state") == "running" and
                               w["pid"] != old["pid"])(n.workers().get("network-0", {})), 10),
             "network-0 is back after SIGKILL")
        after, _ = samples(scrape(mport)[2])
        t.eq(after.get(rkey, 0) - before.get(rkey, 0), 1,
             "runnel_worker_restarts_total{role=network} rose by 1")
        t.ok(after.get(key, 0) >= before.get(key, 0) and
             after.get((BTM + "messagesin_total", ()), 0) >=
             before.get((BTM + "messagesin_total", ()), 0),
             "messagesin_total did not drop across the restart")

        # bad requests get their status; the endpoint keeps serving
        t.eq(raw(mport, b"POST /metrics HTTP/1.1\r\nHost: x\r\n\r\n"),
             "HTTP/1.1 405 Method Not Allowed", "POST gets 405")
        t.eq(raw(mport, b"GET /nope HTTP/1.1\r\nHost: x\r\n\r\n"),
             "HTTP/1.1 404 Not Found", "another path gets 404")
        t.eq(raw(mport, b"GET /metrics HTTP/1.1\r\nX-Big: " + b"a" * 9000 + b"\r\n\r\n"),
             "HTTP/1.1 431 Request Header Fields Too Large",
             "a head over 8 KiB gets 431")
        t.eq(raw(mport, b"garbage\r\n\r\n"), "HTTP/1.1 400 Bad Request",
             "a malformed request line gets 400")
        t.eq(scrape(mport)[0], 200, "the endpoint still serves after them")
        check_keepalive(mport)
        s = socket.create_connection(("127.0.0.1", n.port), timeout=5)
        s.sendall(b"GET /metrics HTTP/1.1\r\n\r\n")
        s.settimeout(5)
        try:
            kdata = s.recv(4096)
        except (ConnectionResetError, socket.timeout):
            kdata = b""
        s.close()
        t.ok(b"HTTP/1.1 200" not in kdata, "the Kafka listener does not serve /metrics")

        # runnelctl metrics agrees (counters are quiet now: nothing produces)
        r = n.ctl("metrics", "--json")
        t.eq(r.returncode, 0, "runnelctl metrics --json succeeds")
        js = {(m["name"], tuple(sorted(m["labels"].items()))): m["value"]
              for m in json.loads(r.stdout)}
        prom, _ = samples(scrape(mport)[2])
        for k in [key, (BTM + "bytesin_total", (("topic", TOPIC),)),
                  (BTM + "bytesout_total", (("topic", TOPIC),)), rkey,
                  (RM + "partitioncount", ()), (RM + "leadercount", ()),
                  (KC + "activecontrollercount", ())]:
            t.eq(js.get(k), prom.get(k), "runnelctl and /metrics agree on %s%s" % k)
        r = n.ctl("metrics")
        t.ok(r.returncode == 0 and "# TYPE " + BTM + "messagesin_total counter" in r.stdout,
             "runnelctl metrics prints the exposition")
        # a deleted topic's slot reused by a new one starts from zero
        rkey2 = (BTM + "messagesin_total", (("topic", "recycled"),))
        for round_, count in ((1, 7), (2, 3)):
            a.create_topics([NewTopic("recycled", 1, 1)])["recycled"].result(20)
            if round_ == 2:
                t.ok(wait_for(lambda: rkey2 in samples(scrape(mport)[2])[0], 10),
                     "the recreated topic is in /metrics")
                t.eq(samples(scrape(mport)[2])[0].get(rkey2), 0,
                     "the recreated topic's messagesin starts at 0")
            p = Producer({"bootstrap.servers": n.bootstrap})
            for i in range(count):
                p.produce("recycled", b"r")
            t.eq(p.flush(20), 0, "%d records to recycled" % count)
            t.ok(wait_for(lambda: samples(scrape(mport)[2])[0].get(rkey2) == count, 5),
                 "messagesin_total{topic=recycled} is %d" % count)
            if round_ == 1:
                a.delete_topics(["recycled"])["recycled"].result(20)
                t.ok(wait_for(lambda: rkey2 not in samples(scrape(mport)[2])[0], 10),
                     "a deleted topic leaves /metrics")
                t.ok(not any(k[0] == LOG_SIZE and dict(k[1]).get("topic") == "recycled"
                             for k in samples(scrape(mport)[2])[0]),
                     "and its log size with it")
        t.eq(n.crashes(), [], "no worker crashed")
    finally:
        n.stop()

    # never on a Kafka listener: such a config is refused at start
    b = Node(tmp, name="bad", props={})
    b.props["metrics.listener"] = "http://127.0.0.1:%d" % b.port
    b.write_config()
    b.start()
    try:
        rc = b.proc.wait(15)
    except Exception:
        rc = None
        b.stop()
    t.ok(rc not in (None, 0) and "metrics.listener" in b.logtext(),
         "metrics.listener on a Kafka listener's port stops runneld at start (%s)" % rc)
t.done()
