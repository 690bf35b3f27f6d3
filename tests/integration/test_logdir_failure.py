"""Issue 12, directory failure: a 3-broker cluster where broker 2 has two log dirs, the
second a small tmpfs in a private mount namespace. An acks=all producer (RF=3,
min.insync.replicas=2) fills it until ENOSPC:
- broker 2 takes that dir offline and says so in its log (the dir and the error);
- within seconds the controller moves leadership of the partitions on it away and drops
  broker 2 from their ISR; Metadata lists broker 2 as their offline replica;
- the producer goes on (few or no errors), broker 2's replicas on its other dir stay in
  the ISR and the ones it leads there are consumed from it;
- a partition whose only replica is on the failed dir answers KAFKA_STORAGE_ERROR (56),
  one on the healthy dir answers;
- every acknowledged record is read back.
Then log.dir.failure.timeout.ms: a broker-only node whose controller is gone fills its
tmpfs dir; unable to report the failure, it stops after the timeout, saying why."""
import os
import re
import subprocess
import threading
import time

from confluent_kafka import Producer

from confluent_kafka.admin import NewTopic

from rncluster import admin, create_topic, partition_state, read_all
from rntest import BUILDDIR, Cluster, Tap, TempDir, wait_for

t = Tap()
TOPIC = "jbod"
NPART = 8
FAILING = 2
PROPS = {"broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "300",
         "replica.lag.time.max.ms": "3000", "log.segment.bytes": "1048576"}
VALUE_PAD = b"x" * 8000
OFFLINE_RE = re.compile(r"log dir (\S+) is offline: (.*) failed: (.*);")


def node_tmpfs(n, size="10m"):
    """n's second log dir: a tmpfs only n's processes see."""
    d2 = os.path.join(n.dir, "data2")
    os.makedirs(d2, exist_ok=True)
    n.props["log.dirs"] = "%s,%s" % (n.logdir, d2)
    n.write_config()
    n.exec_prefix = ["unshare", "-m", "--propagation", "private", "sh", "-c",
                     'mount -t tmpfs -o size=%s tmpfs "$0" && exec "$@"' % size, d2]
    return d2


def placed(n, d2, topic, count):
    """(partitions in n's first dir, in its tmpfs) once n opened all count of them;
    the tmpfs is read through /proc/PID/root, in n's mount namespace."""
    def both():
        d1 = {int(e.rsplit("-", 1)[1]) for e in os.listdir(n.logdir)
              if e.startswith(topic + "-")}
        try:
            ns = os.listdir("/proc/%d/root%s" % (n.proc.pid, d2))
        except OSError:
            return None
        d2s = {int(e.rsplit("-", 1)[1]) for e in ns if e.startswith(topic + "-")}
        return (d1, d2s) if len(d1 | d2s) == count else None
    return wait_for(both, 30, 0.2) or (set(), set())


def list_offsets_errors(n, topic, parts):
    """ListOffsets (v1, latest) straight to node n: {partition: error code}."""
    from kafka.client_async import KafkaClient
    from kafka.protocol.offset import OffsetRequest
    cl = KafkaClient(bootstrap_servers=n.bootstrap, api_version=(2, 0))
    try:
        cl.poll(future=cl.cluster.request_update(), timeout_ms=10000)
        deadline = time.time() + 20
        while not cl.ready(n.node_id) and time.time() < deadline:
            cl.poll(timeout_ms=200)
        fut = cl.send(n.node_id, OffsetRequest[1](
            replica_id=-1, topics=[(topic, [(p, -1) for p in parts])]))
        cl.poll(future=fut, timeout_ms=10000)
        return {e[0]: e[1] for e in fut.value.topics[0][1]}
    finally:
        cl.close()


class Load:
    """One acks=all producer writing unique values round-robin over the partitions."""

    def __init__(self, bootstrap):
        self.p = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                           "enable.idempotence": True, "linger.ms": 5,
                           "message.timeout.ms": 60000, "queue.buffering.max.kbytes": 8192})
        self.acked = {p: set() for p in range(NPART)}
        self.acked_ids = set()
        self.errors = []
        self.sent = 0
        self.stop = threading.Event()
        self.lock = threading.Lock()

    def _cb(self, err, msg):
        with self.lock:
            if err is not None:
                self.errors.append((time.monotonic(), err.name()))
            else:
                self.acked[msg.partition()].add(msg.value()[:12])
                self.acked_ids.add(int(msg.value()[1:12]))

    def send(self, k):
        v = b"v%011d" % k + VALUE_PAD
        while True:
            try:
                self.p.produce(TOPIC, v, partition=k % NPART, on_delivery=self._cb)
                break
            except BufferError:
                self.p.poll(0.05)
        self.sent += 1
        self.p.poll(0)

    def n_acked(self):
        with self.lock:
            return sum(len(s) for s in self.acked.values())


def offline_in_describe(bootstrap, parts):
    """Partitions of parts whose runnel-topics --describe line names FAILING offline."""
    r = subprocess.run([os.path.join(BUILDDIR, "runnel-topics"), "--bootstrap-server",
                        bootstrap, "--describe", "--topic", TOPIC],
                       capture_output=True, text=True, timeout=30)
    got = set()
    for line in r.stdout.splitlines():
        m = re.search(r"Partition: (\d+)\b.*Offline: ([\d,]+)", line)
        if m and str(FAILING) in m.group(2).split(",") and int(m.group(1)) in parts:
            got.add(int(m.group(1)))
    return got


with TempDir() as tmp:
    c = Cluster(tmp, 3, props=PROPS)
    n2 = c.node(FAILING)
    d2 = node_tmpfs(n2)
    c.start()
    try:
        up = c.wait_running(60)
        t.ok(up, "three nodes are up, broker 2 with a tmpfs second log dir")
        if not up:
            for n in c.nodes:
                t.diag("node %d (%s): %s" % (n.node_id, "running" if n.proc and
                       n.proc.poll() is None else "exited",
                       " | ".join(n.logtext().splitlines()[-8:])))
        create_topic(c.bootstrap, TOPIC, NPART, 3, {"min.insync.replicas": "2"})
        ok = wait_for(lambda: all((lambda s: s and s[0] > 0 and len(s[2]) == 3)(
            partition_state(c.bootstrap, TOPIC, p)) for p in range(NPART)), 60, 0.2)
        t.ok(ok, "%d partitions, RF=3, every replica in sync" % NPART)
        on_d1, on_d2 = placed(n2, d2, TOPIC, NPART)
        # a topic only broker 2 holds, one partition on each of its dirs
        a = admin(c)  # the client must outlive its futures
        a.create_topics([NewTopic("solo", 2, replica_assignment=[[FAILING], [FAILING]])])[
            "solo"].result(30)
        w = Producer({"bootstrap.servers": c.bootstrap, "acks": "1"})
        for q in range(2):  # a leader alone opens its log on first use
            w.produce("solo", b"warm-up", partition=q)
        w.flush(30)
        solo_d1, solo_d2 = placed(n2, d2, "solo", 2)
        t.diag("broker 2: partitions %s on its first dir, %s on the tmpfs" %
               (sorted(on_d1), sorted(on_d2)))
        t.ok(on_d1 and on_d2, "broker 2's replicas are on both of its dirs")
        t.eq(os.listdir(d2), [], "the tmpfs is private to broker 2's processes")

        load = Load(c.bootstrap)
        k, t0 = 0, time.monotonic()
        m = None
        while time.monotonic() - t0 < 120 and k < 12000:
            load.send(k)
            k += 1
            if k % 200 == 0:
                m = OFFLINE_RE.search(n2.logtext())
                if m:
                    break
        t_fail = time.monotonic()
        t.ok(m is not None, "broker 2 took a dir offline after %d records (%.1f s)" %
             (k, t_fail - t0))
        t.ok(m is not None and m.group(1) == d2 and "No space left" in m.group(3),
             "its log line names the tmpfs dir and ENOSPC: %s" %
             (m.group(0) if m else None))

        def moved():
            for p in on_d2:
                s = partition_state(c.bootstrap, TOPIC, p)
                if not s or s[0] in (-1, FAILING) or FAILING in s[2]:
                    return False
            return True
        # keep producing while leadership moves
        while not moved() and time.monotonic() - t_fail < 30:
            for _ in range(20):
                load.send(k)
                k += 1
            load.p.poll(0.1)
        t_moved = time.monotonic() - t_fail
        t.ok(moved(), "leadership of the tmpfs partitions moved off broker 2 and it left "
             "their ISR, %.1f s after the failure" % t_moved)
        t.ok(t_moved < 15, "within seconds (%.1f s)" % t_moved)
        off = wait_for(lambda: (lambda g: g if g == on_d2 else None)(
            offline_in_describe(c.node(1).bootstrap, on_d2)), 15, 0.5)
        t.ok(off is not None, "Metadata lists broker 2 as an offline replica of them")
        if len(solo_d1) == 1 and len(solo_d2) == 1:
            (sd1,), (sd2,) = solo_d1, solo_d2
            errs = list_offsets_errors(n2, "solo", [sd1, sd2])
            t.diag("solo-%d on the failed dir: (leader, replicas, isr) %s" % (
                sd2, partition_state(c.bootstrap, "solo", sd2)))
            t.eq((errs.get(sd2), errs.get(sd1)), (56, 0), "ListOffsets to broker 2: "
                 "KAFKA_STORAGE_ERROR for its partition alone on the failed dir, none for "
                 "the one on its healthy dir")
        else:
            t.ok(False, "solo's two partitions were not placed one on each dir: %s %s"
                 % (solo_d1, solo_d2))

        errs_before = len(load.errors)
        k_after = k
        for _ in range(1500):
            load.send(k)
            k += 1
        t.eq(load.p.flush(90), 0, "the producer's queue drains")
        after = sum(1 for i in load.acked_ids if i >= k_after)
        errs_after = len(load.errors) - errs_before
        t.diag("%d records sent, %d acknowledged, %d errors (%s)" %
               (k, load.n_acked(), len(load.errors),
                sorted({e for _, e in load.errors})))
        t.ok(after >= (k - k_after) * 0.98 and errs_after <= (k - k_after) * 0.02,
             "the producer goes on after the failure: %d of %d acknowledged, %d errors" %
             (after, k - k_after, errs_after))
        t.ok(len(load.errors) <= k * 0.05, "few errors overall: %d of %d" %
             (len(load.errors), k))

        in_isr = [p for p in on_d1
                  if FAILING in (partition_state(c.bootstrap, TOPIC, p) or (0, [], []))[2]]
        t.eq(sorted(in_isr), sorted(on_d1), "broker 2's replicas on its healthy dir stay in "
             "the ISR")
        led = [p for p in on_d1
               if (partition_state(c.bootstrap, TOPIC, p) or (0,))[0] == FAILING]
        t.diag("broker 2 still leads %s on its healthy dir" % led)
        served = True
        for p in led:
            vals = {v[:12] for v in read_all(n2.bootstrap, TOPIC, p)}
            served = served and load.acked[p] <= vals and len(vals) > 0
        t.ok(served, "what broker 2 leads on its healthy dir is consumed from it (%d "
             "partitions)" % len(led))

        lost, total = 0, 0
        for p in range(NPART):
            vals = read_all(c.bootstrap, TOPIC, p)
            got = {v[:12] for v in vals}
            total += len(load.acked[p])
            lost += len(load.acked[p] - got)
            if any(v[12:] != VALUE_PAD for v in vals):
                lost += 1
        t.eq(lost, 0, "no acknowledged record is lost or altered (%d acknowledged)" % total)
        t.eq(c.crashes(), [], "no worker died of a crash (SIGSEGV, SIGBUS, ...)")
        t.ok(n2.proc.poll() is None, "broker 2 is still running")
    finally:
        c.kill()


def timeout_case():
    """The failure cannot be reported: the broker stops after the timeout."""
    with TempDir() as tmp:
        c = Cluster(tmp, 2, roles={1: "controller", 2: "broker"}, voters=[1],
                    props=dict(PROPS, **{"log.dir.failure.timeout.ms": "3000"}))
        b = c.node(2)
        bd2 = node_tmpfs(b, "4m")
        c.start()
        try:
            t.ok(c.wait_running(60), "a controller and a broker with a tmpfs dir are up")
            create_topic(c.bootstrap, "lonely", 2, 1)
            ok = wait_for(lambda: all((lambda s: s and s[0] == 2)(
                partition_state(c.bootstrap, "lonely", p)) for p in range(2)), 30, 0.2)
            w = Producer({"bootstrap.servers": b.bootstrap, "acks": "1"})
            for q in range(2):  # a leader alone opens its log on first use
                w.produce("lonely", b"warm-up", partition=q)
            w.flush(20)
            on_d1, on_d2 = placed(b, bd2, "lonely", 2)
            t.ok(ok and len(on_d1) == 1 and len(on_d2) == 1,
                 "one partition on each of the broker's dirs")
            c.node(1).kill()
            p = Producer({"bootstrap.servers": b.bootstrap, "acks": "1",
                          "linger.ms": 5, "message.timeout.ms": 10000})
            part = min(on_d2 or {0})
            t0 = looked = time.monotonic()
            m = None
            while m is None and time.monotonic() - t0 < 60:
                try:
                    p.produce("lonely", VALUE_PAD, partition=part)
                except BufferError:
                    p.poll(0.1)
                p.poll(0)
                # the log looked at by the clock, not every n sends: a
                # full queue (sanitizer builds) made that seconds late,
                # after the broker had already stopped
                if time.monotonic() - looked >= 0.05:
                    looked = time.monotonic()
                    if OFFLINE_RE.search(b.logtext()):
                        m = looked
            t.ok(m is not None, "with the controller gone, the tmpfs dir fails after "
                 "%.1f s of produce" % ((m or time.monotonic()) - t0))
            try:
                b.proc.wait(30)
            except subprocess.TimeoutExpired:
                pass
            t_exit = time.monotonic() - (m or 0)
            line = "did not learn of the offline log dir" in b.logtext()
            t.ok(b.proc.poll() is not None and line, "the broker stopped, saying the "
                 "controller did not learn of the failure in time")
            t.ok(2.0 <= t_exit <= 25, "after the timeout, not before (%.1f s after the "
                 "failure; timeout 3 s)" % t_exit)
            t.eq(c.crashes(), [], "no worker died of a crash")
        finally:
            c.kill()


timeout_case()
t.done()
