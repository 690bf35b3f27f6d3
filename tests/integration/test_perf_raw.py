"""runnel-perf raw-producer and raw-consumer against a real runneld: what
the raw producer writes reads back with confluent-kafka, the raw consumer
counts exactly what is there, errors exit 1, and a broker answering
garbage ends a run with an error, not a crash."""
import json
import os
import socket
import subprocess
import threading
import time

from confluent_kafka import Consumer, TopicPartition

from rntest import BUILDDIR, Node, Tap, TempDir, recv_frame, run_tool, wait_for

PERF = os.path.join(BUILDDIR, "runnel-perf")
TOPICS = os.path.join(BUILDDIR, "runnel-topics")

t = Tap()
stderrs = []  # of every run, checked for sanitizer reports at the end


def perf(verb, bootstrap, *args):
    """A raw verb's CompletedProcess and its JSON line (None if none)."""
    r = subprocess.run([PERF, verb, "--bootstrap-server", bootstrap,
                        "--print-json", "--timeout-ms", "5000"] + list(args),
                       capture_output=True, text=True, timeout=60)
    stderrs.append(r.stderr)
    lines = [l for l in r.stdout.splitlines() if l.startswith("{")]
    return r, json.loads(lines[-1]) if lines else None


def read_back(bootstrap, topic, want):
    """Every record of partition 0 with confluent-kafka: their values."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused",
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 0)])
    values = []
    deadline = time.time() + 20
    while len(values) < want and time.time() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            values.append(m.value())
    # anything past want would be a duplicate
    m = c.poll(1.0)
    if m is not None and not m.error():
        values.append(m.value())
    c.close()
    return values


class GarbageBroker:
    """Forwards the first `honest` requests to the real broker, then
    answers each request with its correlation id and random bytes."""

    def __init__(self, upstream, honest):
        self.upstream, self.honest = upstream, honest
        self.ls = socket.socket()
        self.ls.bind(("127.0.0.1", 0))
        self.ls.listen(4)
        self.bootstrap = "127.0.0.1:%d" % self.ls.getsockname()[1]
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                c, _ = self.ls.accept()
            except OSError:
                return
            threading.Thread(target=self.one, args=(c,), daemon=True).start()

    def one(self, c):
        host, port = self.upstream.rsplit(":", 1)
        up = socket.create_connection((host, int(port)))
        n = 0
        try:
            while True:
                req = recv_frame(c)
                if req is None:
                    return
                n += 1
                if n <= self.honest:
                    up.sendall(len(req).to_bytes(4, "big") + req)
                    resp = recv_frame(up)
                    c.sendall(len(resp).to_bytes(4, "big") + resp)
                else:
                    body = req[4:8] + os.urandom(64)
                    c.sendall(len(body).to_bytes(4, "big") + body)
        except OSError:
            pass
        finally:
            up.close()
            c.close()

    def close(self):
        self.ls.close()


with TempDir() as tmp:
    n = Node(tmp)
    n.start()
    try:
        t.ok(n.wait_running() is not None, "node is running")
        for topic in ("raw", "rawidem"):
            ok = wait_for(lambda: run_tool(
                TOPICS, n.bootstrap, "--create", "--topic", topic,
                "--partitions", "1", "--replication-factor", "1",
                "--if-not-exists").returncode == 0, 20)
            t.ok(ok, "topic %s created" % topic)

        # 5,000 records of 1 KiB in 50 requests of one 100-record batch,
        # three connections, acks=all
        r, j = perf("raw-producer", n.bootstrap, "--topic", "raw",
                    "--num-records", "5000", "--record-size", "1024",
                    "--batch-records", "100", "--acks", "all",
                    "--connections", "3", "--inflight", "4")
        t.eq(r.returncode, 0, "raw-producer exits 0")
        if r.returncode:
            t.diag(r.stderr)
        t.ok(j is not None and j["records"] == 5000 and j["errors"] == 0,
             "it reports 5000 records acknowledged, no error: %r" % j)
        t.ok(j is not None and j["mb_per_sec"] > 0 and j["p50_ms"] > 0 and
             j["cpu_user_s"] + j["cpu_sys_s"] > 0,
             "with a rate, a request latency and its own CPU")

        values = read_back(n.bootstrap, "raw", 5000)
        t.eq(len(values), 5000, "confluent-kafka reads 5000 records back")
        t.ok(all(len(v) == 1024 for v in values), "each value is 1024 B")
        t.ok(all(v.isalpha() and v.isupper() for v in values[:10]),
             "of capitals, as built")

        r, j = perf("raw-consumer", n.bootstrap, "--topic", "raw",
                    "--num-records", "5000")
        t.eq(r.returncode, 0, "raw-consumer --num-records 5000 exits 0")
        t.ok(j is not None and j["records"] == 5000,
             "and read 5000 records: %r" % j)
        r, j = perf("raw-consumer", n.bootstrap, "--topic", "raw",
                    "--interval-ms", "10", "--fetch-max-bytes", "65536")
        t.ok(r.returncode == 0 and j is not None and j["records"] == 5000,
             "to the log end in 64 KiB fetches: exactly 5000 records: %r" % j)
        r, j = perf("raw-consumer", n.bootstrap, "--topic", "raw",
                    "--from-offset", "1234", "--connections", "3")
        t.ok(r.returncode == 0 and j is not None and j["records"] == 3766,
             "from offset 1234 on 3 connections: 3766 records: %r" % j)
        r, j = perf("raw-consumer", n.bootstrap, "--topic", "raw",
                    "--num-records", "6000")
        t.eq(r.returncode, 1, "asking for more records than there are "
             "exits 1")
        t.ok("read 5000 of 6000" in r.stderr, "saying how many it read: %r"
             % r.stderr.strip())

        # idempotent: a producer id, sequences and CRCs patched per send
        r, j = perf("raw-producer", n.bootstrap, "--topic", "rawidem",
                    "--num-records", "2000", "--batch-records", "50",
                    "--idempotent", "--inflight", "5")
        t.ok(r.returncode == 0 and j is not None and j["records"] == 2000,
             "--idempotent: 2000 records acknowledged: %r %s" %
             (j, r.stderr.strip()))
        t.eq(len(read_back(n.bootstrap, "rawidem", 2000)), 2000,
             "and read back, no duplicate")

        r, j = perf("raw-producer", n.bootstrap, "--topic", "nosuch",
                    "--num-records", "100")
        t.eq(r.returncode, 1, "producing to a missing topic exits 1")
        t.ok(j is not None and j["errors"] > 0 and j["records"] == 0,
             "counting the error: %r" % j)
        t.ok("UNKNOWN_TOPIC_OR_PARTITION" in r.stdout,
             "naming it: %r" % r.stdout.strip())

        g = GarbageBroker(n.bootstrap, honest=1)  # ApiVersions only
        r, _ = perf("raw-producer", g.bootstrap, "--topic", "raw",
                    "--num-records", "1000")
        t.eq(r.returncode, 1, "garbage produce responses: exit 1, no crash")
        t.ok("not the answer" in r.stderr, "saying so: %r" % r.stderr.strip())
        g.close()
        g = GarbageBroker(n.bootstrap, honest=2)  # and the first fetch
        r, _ = perf("raw-consumer", g.bootstrap, "--topic", "raw")
        t.eq(r.returncode, 1, "garbage fetch responses: exit 1, no crash")
        t.ok("not the answer" in r.stderr or "larger than" in r.stderr,
             "saying so: %r" % r.stderr.strip())
        g.close()
        t.eq(n.crashes(), [], "no worker died of a crash")
        reports = [e for e in stderrs
                   if "runtime error" in e or "Sanitizer" in e]
        t.eq(reports, [], "no sanitizer report from runnel-perf")
    finally:
        n.kill()

t.done()
