"""Moving a replica between a broker's log dirs (AlterReplicaLogDirs, KIP-113)
on one broker with two log dirs. A partition grown to 1 GiB (256 MiB when
built with the sanitizers; RUNNEL_MOVE_MIB sets it) is moved with
runnel-reassign-partitions (log_dirs in its JSON) while an idempotent
acks=all producer and a consumer run: DescribeLogDirs shows the future
replica (IsFutureKey) while it is copied, then the replica in its new dir;
the metadata records the new dir; the old dir no longer holds it; clients see
no error; every acknowledged record is read back once. A second move
(throttled by --replica-alter-log-dirs-throttle) is cut by a SIGKILL of the
node while its future replica is being copied: after the restart there is
one whole replica, the move resumes and ends, and every acknowledged record
is there. A third has the worker swapping it in killed halfway through the
swap (its current dir already renamed away): the swap is finished by the
next holder of the partition's lock. Two more have the whole node killed in
the swap, once its future replica is marked whole and once it is renamed:
at the restart the marked copy is the replica. A sixth loses its replica
fetcher mid-copy: restarted, it copies again. Then the errors Kafka
answers, a move to the dir it is in, and a move cancelled by moving back."""
import json
import os
import subprocess
import threading
import time

from confluent_kafka import Consumer, Producer, TopicPartition

from rncluster import create_topic
from rnlogdirs import alter_raw, api_versions, describe_json
from rntest import BUILDDIR, SANITIZED, Node, Tap, TempDir, wait_for

t = Tap()
MIB = int(os.environ.get("RUNNEL_MOVE_MIB", "256" if SANITIZED else "1024"))
W = 4 if SANITIZED else 1
TOPIC = "mv"
FILL_VALUE = 1000          # bytes per fill record
LOAD_RATE = 5000           # records/s of the producer under the moves
PAD = os.urandom(FILL_VALUE)


def tool(*args, timeout=120):
    return subprocess.run([os.path.join(BUILDDIR, args[0])] + list(args[1:]),
                          capture_output=True, text=True, timeout=timeout)


def describe(n):
    """{logDir: {partition name: entry}} of broker 1, or None."""
    j = describe_json(n.bootstrap, TOPIC)
    if j is None:
        return None
    return {d["logDir"]: {(p["partition"], p["isFuture"]): p
                          for p in d["partitions"]}
            for d in j["brokers"][0]["logDirs"]}


def where(n):
    """(current dir, future dir or None, future size) of mv-0, or None."""
    d = describe(n)
    if d is None:
        return None
    cur = [k for k, v in d.items() if ("mv-0", False) in v]
    fut = [(k, v[("mv-0", True)]["size"]) for k, v in d.items() if ("mv-0", True) in v]
    return (cur[0] if len(cur) == 1 else None,
            fut[0][0] if fut else None, fut[0][1] if fut else 0)


def plan_file(tmp, name, dirs):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        json.dump({"version": 1, "partitions": [
            {"topic": TOPIC, "partition": 0, "replicas": [1], "log_dirs": dirs}]}, f)
    return path


def on_disk(d):
    """The entries of log dir d naming partition mv-0."""
    return sorted(e for e in os.listdir(d) if e.startswith(TOPIC + "-0"))


def logdirs_of_metadata(n):
    r = tool("runnel-topics", "--bootstrap-server", n.bootstrap, "--describe",
             "--topic", TOPIC, timeout=30)
    for line in r.stdout.splitlines():
        if line.startswith("\t"):
            f = dict(x.split(": ", 1) for x in line.strip().split("\t") if ": " in x)
            return f.get("LogDirs")
    return None


# ---- clients -------------------------------------------------------------

class Load:
    """An idempotent acks=all producer at LOAD_RATE records/s and a consumer
    tailing the partition; what each saw."""

    def __init__(self, n, first, tag):
        self.n, self.tag = n, tag
        self.acked, self.errors, self.sent = {}, [], 0
        self.seen, self.cerrors = set(), []
        self.stop = threading.Event()
        self.start_offset = first
        self.marks = []   # (time, acked count)
        self.tp = threading.Thread(target=self.produce)
        self.tc = threading.Thread(target=self.consume)

    def run(self):
        self.tp.start()
        self.tc.start()

    def produce(self):
        p = Producer({"bootstrap.servers": self.n.bootstrap, "acks": "all",
                      "enable.idempotence": True, "linger.ms": 5,
                      "message.timeout.ms": 180000,
                      "reconnect.backoff.max.ms": 500})

        def cb(err, m):
            if err is None:
                self.acked[m.value()[:12]] = m.offset()
            else:
                self.errors.append(str(err))
        t0 = time.monotonic()
        while not self.stop.is_set():
            want = int((time.monotonic() - t0) * LOAD_RATE)
            while self.sent < want:
                v = b"%s%010d" % (self.tag, self.sent) + PAD[:188]
                try:
                    p.produce(TOPIC, v, partition=0, on_delivery=cb)
                    self.sent += 1
                except BufferError:
                    break
            p.poll(0.005)
        p.flush(180)

    def consume(self):
        # an offset out of range is an error here, not a silent jump
        c = Consumer({"bootstrap.servers": self.n.bootstrap, "group.id": "tail",
                      "enable.auto.commit": False, "fetch.wait.max.ms": 100,
                      "auto.offset.reset": "error",
                      "reconnect.backoff.max.ms": 500})
        c.assign([TopicPartition(TOPIC, 0, self.start_offset)])
        while not self.caught_up():
            for m in c.consume(1000, 0.2):
                if m.error():
                    if m.error().code() != -191:  # _PARTITION_EOF
                        self.cerrors.append(str(m.error()))
                    continue
                if m.value()[:2] == self.tag:
                    self.seen.add(m.value()[:12])
            if self.stop.is_set() and time.monotonic() > self.deadline:
                break
        c.close()

    def caught_up(self):
        # done once the producer has stopped and flushed (its last
        # acknowledgements come during the flush) and every record it had
        # acknowledged was read
        return (self.stop.is_set() and not self.tp.is_alive() and
                set(self.acked) <= self.seen)

    def finish(self, grace=60):
        self.deadline = time.monotonic() + grace * W
        self.stop.set()
        self.tp.join(240)
        self.tc.join(240)

    def mark(self):
        self.marks.append((time.monotonic(), len(self.acked)))


def read_all(n, expect_fill):
    """Read the partition from offset 0: (fill records in order without gap
    or repeat, {load key: count}, offsets contiguous)."""
    c = Consumer({"bootstrap.servers": n.bootstrap, "group.id": "all",
                  "enable.auto.commit": False, "enable.partition.eof": True,
                  "fetch.max.bytes": 52428800,
                  "max.partition.fetch.bytes": 10485760})
    c.assign([TopicPartition(TOPIC, 0, 0)])
    fill_next, fill_ok, counts, nxt, contiguous = 0, True, {}, 0, True
    deadline = time.monotonic() + 300 * W
    eof = False
    while not eof and time.monotonic() < deadline:
        for m in c.consume(10000, 1.0):
            if m.error():
                eof = eof or m.error().code() == -191
                continue
            if m.offset() != nxt:
                contiguous = False
            nxt = m.offset() + 1
            v = m.value()
            if v[:1] == b"f":
                fill_ok = fill_ok and int(v[1:11]) == fill_next
                fill_next += 1
            else:
                k = v[:12]
                counts[k] = counts.get(k, 0) + 1
    c.close()
    return fill_ok and fill_next == expect_fill, counts, contiguous, nxt


def check_records(loads, counts):
    lost = dup = 0
    for ld in loads:
        for k in ld.acked:
            c = counts.get(k, 0)
            lost += c == 0
            dup += c > 1
    return lost, dup


with TempDir() as tmp:
    d1, d2 = os.path.join(tmp, "d1"), os.path.join(tmp, "d2")
    crash_file = os.path.join(tmp, "crash-step")
    n = Node(tmp, props={"log.dirs": "%s,%s" % (d1, d2),
                         "log.segment.bytes": str(128 << 20),
                         "replica.lag.time.max.ms": "10000"})
    n.start(env={"RUNNEL_MOVE_CRASH_FILE": crash_file})
    loads = []
    try:
        t.ok(n.wait_running(30 * W), "one broker with two log dirs is up")
        err, keys = api_versions(n)
        t.eq(keys.get(34), (0, 2), "ApiVersions advertises AlterReplicaLogDirs 0-2")
        create_topic(n.bootstrap, TOPIC, 1, 1)

        # ---- a partition of MIB MiB ------------------------------------
        p = Producer({"bootstrap.servers": n.bootstrap, "acks": "1",
                      "linger.ms": 20, "batch.size": 1000000,
                      "queue.buffering.max.kbytes": 262144})
        nfill = (MIB << 20) // FILL_VALUE
        fill_err = []
        t0 = time.monotonic()
        for i in range(nfill):
            v = b"f%010d" % i + PAD[11:]
            while True:
                try:
                    p.produce(TOPIC, v, partition=0,
                              on_delivery=lambda e, m: e and fill_err.append(e))
                    break
                except BufferError:
                    p.poll(0.01)
        p.flush(300)
        fill_s = time.monotonic() - t0
        t.eq(fill_err[:3], [], "%d MiB produced in %.1f s (%.0f MiB/s)"
             % (MIB, fill_s, MIB / fill_s))
        w = wait_for(lambda: (lambda x: x if x and x[0] else None)(where(n)), 20 * W, 0.2)
        src = w[0] if w else d1
        dst = d2 if src == d1 else d1
        t.diag("mv-0 is in %s; moving it to %s" % (src, dst))

        # ---- move 1, under a produce and consume load ------------------
        load = Load(n, nfill, b"L1")
        loads.append(load)
        load.run()
        time.sleep(2)
        load.mark()
        t0 = time.monotonic()
        r = tool("runnel-reassign-partitions", "--bootstrap-server", n.bootstrap,
                 "--execute", "--reassignment-json-file",
                 plan_file(tmp, "to-dst.json", [dst]))
        t.ok(r.returncode == 0 and
             "Successfully started log directory move for: mv-0-1" in r.stdout,
             "runnel-reassign-partitions --execute starts the move (log_dirs: [%s])"
             % os.path.basename(dst))
        if r.returncode != 0:
            t.diag(r.stdout + r.stderr)
        seen_future = []

        def moved():
            x = where(n)
            if x and x[1] == dst and x[2] > 0:
                seen_future.append(x[2])
            return x if x and x[0] == dst and x[1] is None else None
        done = wait_for(moved, 120 * W, 0.1)
        move_s = time.monotonic() - t0
        load.mark()
        t.ok(done is not None, "the move completes: DescribeLogDirs shows mv-0 in %s "
             "(%.1f s, %.0f MiB/s)" % (os.path.basename(dst), move_s, MIB / move_s))
        t.ok(len(seen_future) > 0, "while it was copied DescribeLogDirs showed its "
             "future replica in %s (IsFutureKey, sizes %s)" %
             (os.path.basename(dst), seen_future[:3]))
        rate = (load.marks[1][1] - load.marks[0][1]) / (load.marks[1][0] - load.marks[0][0])
        t.diag("move 1: %d MiB in %.2f s = %.0f MiB/s; %d acks=all records/s "
               "acknowledged during it" % (MIB, move_s, MIB / move_s, rate))
        line = wait_for(lambda: [l for l in n.logtext().splitlines()
                                 if "moved to" in l and "MB/s" in l], 10, 0.1)
        for l in line or []:
            t.diag("broker: " + l.split("]: ", 1)[-1])
        t.ok(wait_for(lambda: on_disk(src) == [] and on_disk(dst) == ["mv-0"], 10, 0.2),
             "on disk: %s holds no copy of mv-0 (no -future, no -delete), %s holds it"
             % (os.path.basename(src), os.path.basename(dst)))
        t.ok(not os.path.exists(os.path.join(dst, "mv-0", "future.complete")),
             "the swap's marker is gone")
        t.eq(wait_for(lambda: (lambda x: x if x == dst else None)(
            logdirs_of_metadata(n)), 10, 0.2), dst,
             "the metadata records the new dir (runnel-topics --describe LogDirs)")
        r = tool("runnel-reassign-partitions", "--bootstrap-server", n.bootstrap,
                 "--verify", "--reassignment-json-file",
                 plan_file(tmp, "to-dst.json", [dst]))
        t.ok("Reassignment of replica mv-0-1 completed successfully." in r.stdout,
             "--verify: the replica's move completed")
        st = n.status() or {}
        t.eq(st.get("node", {}).get("NumMismatchingReplicaToLogDirAssignments"), 0,
             "no mismatching replica")
        time.sleep(1)
        load.finish()
        t.eq(load.errors[:3] + load.cerrors[:3], [],
             "the producer and the consumer saw no error (%d records acknowledged, "
             "%d consumed)" % (len(load.acked), len(load.seen)))
        t.ok(set(load.acked) <= load.seen, "the consumer got every acknowledged record "
             "(%d missing)" % len(set(load.acked) - load.seen))
        fill_ok, counts, contiguous, leo = read_all(n, nfill)
        lost, dup = check_records(loads, counts)
        t.ok(fill_ok and contiguous, "a full read: the %d fill records in order, offsets "
             "0..%d without a gap" % (nfill, leo - 1))
        t.eq((lost, dup), (0, 0), "no acknowledged record lost or duplicated")

        # ---- move 2, throttled, cut by a SIGKILL of the node ------------
        size = (describe(n) or {}).get(dst, {}).get(("mv-0", False), {}).get("size", MIB << 20)
        thr = max(size // (8 * W), 8 << 20)   # about 8 s of copying
        load = Load(n, leo, b"L2")
        loads.append(load)
        load.run()
        time.sleep(1)
        r = tool("runnel-reassign-partitions", "--bootstrap-server", n.bootstrap,
                 "--execute", "--replica-alter-log-dirs-throttle", str(thr),
                 "--reassignment-json-file", plan_file(tmp, "to-src.json", [src]))
        t.ok(r.returncode == 0 and
             "The replica-alter-dir throttle limit was set to %d B/s" % thr in r.stdout,
             "a second move, back, throttled to %d MB/s" % (thr // 1000000))
        mid = wait_for(lambda: (lambda x: x if x and x[1] == src and
                                size // 5 < x[2] < size // 2 else None)(where(n)),
                       60 * W, 0.1)
        t.ok(mid is not None, "DescribeLogDirs shows its future replica in %s, %s of "
             "%d bytes copied" % (os.path.basename(src), mid and mid[2], size))
        n.kill()
        killed_at = len(load.acked)
        t.ok(on_disk(dst) == ["mv-0"] and len(on_disk(src)) == 1 and
             on_disk(src)[0].endswith("-future"),
             "SIGKILL of the node mid-copy: %s holds mv-0, %s its future replica %s"
             % (os.path.basename(dst), os.path.basename(src), on_disk(src)))
        n.start(env={"RUNNEL_MOVE_CRASH_FILE": crash_file})
        t.ok(n.wait_running(30 * W), "the node restarts")
        one = []

        def resumed():
            x = where(n)
            if x is not None:
                one.append(x[0] is not None)
            return x if x and x[0] == src and x[1] is None else None
        t.ok(wait_for(resumed, 120 * W, 0.2) is not None,
             "the move resumes from its future replica and completes: mv-0 in %s"
             % os.path.basename(src))
        t.ok(all(one), "after the restart DescribeLogDirs showed exactly one current "
             "replica each time it was asked (%d times)" % len(one))
        t.ok(wait_for(lambda: on_disk(src) == ["mv-0"] and on_disk(dst) == [], 10, 0.2),
             "on disk: one copy of mv-0, in %s" % os.path.basename(src))
        r = tool("runnel-reassign-partitions", "--bootstrap-server", n.bootstrap,
                 "--verify", "--reassignment-json-file", plan_file(tmp, "to-src.json", [src]))
        t.ok("Reassignment of replica mv-0-1 completed successfully." in r.stdout and
             "Clearing broker-level throttles" in r.stdout,
             "--verify: completed, and the throttle is cleared")
        time.sleep(1)
        load.finish()
        t.ok(len(load.acked) > killed_at, "the producer went on after the restart "
             "(%d records acknowledged, %d before the kill)" % (len(load.acked), killed_at))
        t.ok(set(load.acked) <= load.seen, "the consumer got every acknowledged record "
             "(%d missing; consumer errors %s)" % (len(set(load.acked) - load.seen),
                                                   load.cerrors[:3]))

        # ---- move 3: the worker swapping it in dies mid-swap --------------
        load = Load(n, load.start_offset, b"L3")
        loads.append(load)
        load.run()
        with open(crash_file, "w") as f:
            f.write("retired\n")
        r = tool("runnel-reassign-partitions", "--bootstrap-server", n.bootstrap,
                 "--execute", "--reassignment-json-file", plan_file(tmp, "to-dst.json", [dst]))
        t.ok(r.returncode == 0, "a third move, with the swap's worker to be killed "
             "once the current replica is renamed away")
        t.ok(wait_for(lambda: "dying at step retired" in n.logtext(), 120 * W, 0.2),
             "the replica fetcher died halfway through the swap")
        t.ok(wait_for(lambda: (lambda x: x if x and x[0] == dst and x[1] is None
                                else None)(where(n)), 60 * W, 0.2) is not None,
             "the next holder of the partition's lock finished the swap: mv-0 in %s"
             % os.path.basename(dst))
        t.ok("finishing the swap" in n.logtext(), "it says so")
        t.ok(wait_for(lambda: on_disk(src) == [] and on_disk(dst) == ["mv-0"], 10, 0.2),
             "on disk: one copy of mv-0, in %s" % os.path.basename(dst))
        t.diag("on disk: %s %s" % (on_disk(src), on_disk(dst)))
        time.sleep(1)
        load.finish()
        t.eq(load.errors[:3], [], "the producer saw no error")

        # ---- moves 4 and 5: the node killed mid-swap ------------------------
        here, there = dst, src
        for step, rule in (("marked", "its marked future replica wins over the "
                            "current one, still whole"),
                           ("renamed", "the marker left in the replica goes")):
            mark = len(n.logtext())
            with open(crash_file, "w") as f:
                f.write("node:%s\n" % step)
            r = tool("runnel-reassign-partitions", "--bootstrap-server", n.bootstrap,
                     "--execute", "--reassignment-json-file",
                     plan_file(tmp, "m.json", [there]))
            died = wait_for(lambda: "dying at step %s, the whole node" % step in
                            n.logtext()[mark:], 120 * W, 0.1)
            wait_for(lambda: n.proc.poll() is not None, 10, 0.1)
            n.kill()
            disk = (on_disk(here), on_disk(there))
            n.start(env={"RUNNEL_MOVE_CRASH_FILE": crash_file})
            ok = n.wait_running(30 * W) and wait_for(
                lambda: (lambda x: x if x and x[0] == there and x[1] is None else None)(
                    where(n)), 60 * W, 0.2) is not None
            if not t.ok(died and ok and "the move cut short by a crash is finished"
                        in n.logtext()[mark:] and wait_for(
                            lambda: on_disk(here) == [] and
                            on_disk(there) == ["mv-0"], 30 * W, 0.2),
                        "the node SIGKILLed at swap step %s (on disk %s): at the "
                        "restart %s; mv-0 in %s alone"
                        % (step, disk, rule, os.path.basename(there))):
                t.diag("%s %s %s %s" % (died, ok, on_disk(here), on_disk(there)))
                for l in n.logtext()[mark:].splitlines():
                    if "mv-0" in l or "dying" in l:
                        t.diag(l)
            here, there = there, here
        # ---- move 6: the replica fetcher copying it SIGKILLed mid-copy ------
        size = (describe(n) or {}).get(here, {}).get(("mv-0", False), {}).get(
            "size", MIB << 20)
        thr = max(size // (6 * W), 8 << 20)
        r = tool("runnel-reassign-partitions", "--bootstrap-server", n.bootstrap,
                 "--execute", "--replica-alter-log-dirs-throttle", str(thr),
                 "--reassignment-json-file", plan_file(tmp, "m6.json", [there]))
        mid = wait_for(lambda: (lambda x: x if x and x[1] == there and
                                size // 5 < x[2] < size // 2 else None)(where(n)),
                       60 * W, 0.1)
        pid = n.workers().get("replica-fetcher-0", {}).get("pid")
        if pid:
            os.kill(pid, 9)
        ok = wait_for(lambda: (lambda x: x if x and x[0] == there and x[1] is None
                               else None)(where(n)), 120 * W, 0.2) is not None
        t.ok(mid is not None and pid and ok and wait_for(
            lambda: on_disk(here) == [] and on_disk(there) == ["mv-0"], 20 * W, 0.2),
             "the replica fetcher SIGKILLed mid-copy (%s of %d bytes): restarted, it "
             "copies again and the move ends, one copy of mv-0, in %s"
             % (mid and mid[2], size, os.path.basename(there)))
        tool("runnel-reassign-partitions", "--bootstrap-server", n.bootstrap,
             "--verify", "--reassignment-json-file", plan_file(tmp, "m6.json", [there]))
        here, there = there, here

        fill_ok, counts, contiguous, leo = read_all(n, nfill)
        lost, dup = check_records(loads, counts)
        t.ok(fill_ok and contiguous, "a full read after the six moves: the fill in "
             "order, offsets 0..%d without a gap" % (leo - 1))
        t.eq((lost, dup), (0, 0), "none of the %d acknowledged records lost or "
             "duplicated" % sum(len(x.acked) for x in loads))

        # ---- errors, a move in place, a cancelled move ----------------------
        dst, src = here, there
        for ver in (0, 1, 2):
            got = alter_raw(n, [("/no/such/dir", TOPIC, 0)], ver)
            t.eq(got, {(TOPIC, 0): 57}, "v%d: an unknown dir: LOG_DIR_NOT_FOUND" % ver)
        got = alter_raw(n, [(src, "nosuch", 0)], 2)
        t.eq(got, {("nosuch", 0): 3}, "an unknown topic: UNKNOWN_TOPIC_OR_PARTITION")
        got = alter_raw(n, [(src, TOPIC, 5)], 1)
        t.eq(got, {(TOPIC, 5): 3}, "an unknown partition: UNKNOWN_TOPIC_OR_PARTITION")
        got = alter_raw(n, [(dst, TOPIC, 0)], 1)
        time.sleep(1)
        t.ok(got == {(TOPIC, 0): 0} and where(n) == (dst, None, 0) and
             on_disk(src) == [], "a move to the dir it is in: NONE, nothing moves")
        r = tool("runnel-configs", "--bootstrap-server", n.bootstrap, "--alter",
                 "--entity-type", "brokers", "--entity-name", "1", "--add-config",
                 "replica.alter.log.dirs.io.max.bytes.per.second=%d" % (4 << 20))
        got = alter_raw(n, [(src, TOPIC, 0)], 2)
        fut = wait_for(lambda: (lambda x: x if x and x[1] == src else None)(where(n)),
                       20, 0.1)
        got2 = alter_raw(n, [(dst, TOPIC, 0)], 2)
        t.ok(got == {(TOPIC, 0): 0} and fut is not None and got2 == {(TOPIC, 0): 0} and
             wait_for(lambda: where(n) == (dst, None, 0) and on_disk(src) == [], 20, 0.2),
             "a slow move cancelled by moving back: the future replica is gone, from "
             "DescribeLogDirs and from disk")
        bad = plan_file(tmp, "bad.json", [src, dst])
        r = tool("runnel-reassign-partitions", "--bootstrap-server", n.bootstrap,
                 "--execute", "--reassignment-json-file", bad)
        t.ok(r.returncode != 0 and "different from size of log dirs list" in r.stderr,
             "a plan with more log dirs than replicas is refused")
        r = tool("runnel-reassign-partitions", "--bootstrap-server", n.bootstrap,
                 "--execute", "--reassignment-json-file",
                 plan_file(tmp, "nodir.json", ["/no/such/dir"]))
        t.ok(r.returncode != 0 and
             "Failed to alter dir for mv-0-1: LOG_DIR_NOT_FOUND" in r.stderr,
             "runnel-reassign-partitions says a dir the broker lacks is LOG_DIR_NOT_FOUND")
        t.eq(n.crashes(), [], "no worker crashed")
    finally:
        for ld in loads:
            ld.stop.set()
            ld.deadline = 0
        n.kill()
t.done()
