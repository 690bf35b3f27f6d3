"""runnelctl upgrade: the supervisor re-executes a binary under load.

One node; an idempotent acks=all producer and a consumer run at full speed,
and a loop makes raw TCP connects to the Kafka port all along. First the
upgrades that must fail, each leaving the node to the old supervisor: a
binary of another shared-memory layout (tests/runneld-newlayout, refused
before it touches anything), a script that exits 1, one that never reports
(killed after the 10 s handshake), and a new supervisor SIGKILLed halfway
through replacing the workers (the old one takes them back). Then three
upgrades to a copy of the freshly built runneld: each answers ok, the new
supervisor runs the copy, every worker has a new pid, and the test
NOTIFY_SOCKET gets MAINPID=<new pid> with READY=1. At the end: no refused
connection (librdkafka's callbacks and log lines, and the raw connects), no
acknowledged record lost, none duplicated. The durations and the throughput
dip are printed.
"""
import ctypes
import errno
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time

from confluent_kafka.admin import AdminClient, NewTopic

from rncluster import read_partitions
from rnload import ClientErrors, Load, rate
from rntest import BUILDDIR, RUNNELCTL, Node, Tap, TempDir, wait_for, _alive

t = Tap()
errors = ClientErrors()
TOPIC, PARTS = "upg", 4

# the supervisors an upgrade leaves behind are reparented to this process
PR_SET_CHILD_SUBREAPER = 36
ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


class Connects:
    """Raw TCP connects to the Kafka port, one every few ms, all along:
    what a client that just arrives sees."""

    def __init__(self, port):
        self.port = port
        self.ok = self.refused = self.other = 0
        self.stop = threading.Event()
        self.th = threading.Thread(target=self.run, daemon=True)

    def run(self):
        while not self.stop.is_set():
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.settimeout(5)
            try:
                s.connect(("127.0.0.1", self.port))
                self.ok += 1
            except ConnectionRefusedError:
                self.refused += 1
            except OSError as e:
                if e.errno == errno.ECONNREFUSED:
                    self.refused += 1
                else:
                    self.other += 1
            finally:
                s.close()
            time.sleep(0.005)


class Notify:
    """The test NOTIFY_SOCKET, read all along (a full queue blocks)."""

    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.sock.bind(path)
        self.sock.settimeout(0.2)
        self.msgs = []
        self.stop = threading.Event()
        self.th = threading.Thread(target=self.run, daemon=True)
        self.th.start()

    def run(self):
        while not self.stop.is_set():
            try:
                self.msgs.append((time.monotonic(), self.sock.recv(4096).decode()))
            except socket.timeout:
                pass

    def since(self, t0):
        return [m for ts, m in list(self.msgs) if ts >= t0]


def upgrade(node, binary=None, timeout=120):
    args = [RUNNELCTL, "-s", node.sock, "upgrade", "--json"]
    if binary:
        args += ["--binary", binary]
    t0 = time.monotonic()
    r = subprocess.run(args, capture_output=True, text=True, timeout=timeout)
    t1 = time.monotonic()
    try:
        js = json.loads(r.stdout)
    except ValueError:
        js = None
    return r, js, t0, t1


def sv_pid(node):
    st = node.status()
    return st["node"]["pid"] if st else None


def worker_pids(node):
    return {k: w["pid"] for k, w in node.workers().items()}


def healthy(node):
    st = node.wait_running(20)
    return st is not None and all(w["pid"] for w in st["workers"])


def kill_tree(root):
    """SIGKILL a supervisor and its workers (they die with it anyway)."""
    pids = [root]
    for p in os.listdir("/proc"):
        if p.isdigit():
            try:
                with open("/proc/%s/stat" % p) as f:
                    if int(f.read().rsplit(")", 1)[1].split()[1]) == root:
                        pids.append(int(p))
            except (OSError, IndexError, ValueError):
                pass
    for p in pids:
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass
    wait_for(lambda: not any(_alive(p) for p in pids), 10)


with TempDir() as tmp:
    notify = Notify(os.path.join(tmp, "notify.sock"))
    n = Node(tmp, props={"num.network.threads": "2",
                         "log.cleaner.enable": "true"})
    n.start(env={"NOTIFY_SOCKET": notify.sock.getsockname()})
    current = n.proc.pid
    load = None
    try:
        t.ok(n.wait_running() is not None, "node is up")
        t.ok(wait_for(lambda: any("READY=1" in m for m in notify.since(0)), 10),
             "READY=1 at start")
        admin = AdminClient({"bootstrap.servers": n.bootstrap})
        admin.create_topics([NewTopic(TOPIC, PARTS, 1)])[TOPIC].result(30)

        r = n.ctl("upgrade", "--binary", "relative/runneld")
        t.ok(r.returncode != 0 and "absolute path" in r.stderr,
             "a relative binary is refused: %s" % r.stderr.strip())
        r = n.ctl("upgrade", "--binary", "/nonexistent/runneld")
        t.ok(r.returncode != 0 and "cannot execute" in r.stderr,
             "a missing binary is refused: %s" % r.stderr.strip())
        r = n.ctl("status", "--binary", "/x")
        t.eq(r.returncode, 2, "--binary is for upgrade only")

        errors.capture(os.path.join(tmp, "clients.log"))
        conns = Connects(n.port)
        conns.th.start()
        load = Load(n.bootstrap, errors, TOPIC, PARTS, "upg-reader")
        load.start()
        wait_for(lambda: len(load.acked) > 20000, 60)
        b0 = time.monotonic()
        time.sleep(4)
        b1 = time.monotonic()
        base_p, base_c = rate(load.ack_t, b0, b1), rate(load.seen_t, b0, b1)
        t.diag("before: %.0f records/s acknowledged, %.0f records/s consumed"
               % (base_p, base_c))

        def still_serving(what):
            seen = len(load.acked)
            t.ok(wait_for(lambda: len(load.acked) > seen + 1000, 20),
                 "%s: the producer's records are acknowledged still" % what)

        # a binary of another layout: refused before it touches anything
        before = worker_pids(n)
        r, js, t0, t1 = upgrade(n, os.path.join(BUILDDIR, "tests",
                                                "runneld-newlayout"))
        t.ok(r.returncode != 0 and js and not js["ok"] and
             "layout version 999" in js.get("error", "") and
             "restart" in js.get("error", ""),
             "an upgrade to a binary of another layout is refused: %s"
             % (js and js.get("error")))
        t.ok(sv_pid(n) == current and worker_pids(n) == before,
             "the node is undisturbed: same supervisor, same workers")
        still_serving("refused layout")

        # a binary that exits at once
        bad = os.path.join(tmp, "runneld-exits")
        with open(bad, "w") as f:
            f.write("#!/bin/sh\nexit 1\n")
        os.chmod(bad, 0o755)
        r, js, t0, t1 = upgrade(n, bad)
        t.ok(r.returncode != 0 and js and "exited with status 1" in js["error"],
             "a new binary that exits 1 fails the upgrade: %s"
             % (js and js.get("error")))
        t.ok(sv_pid(n) == current and worker_pids(n) == before,
             "and the old supervisor keeps the node, workers untouched")
        still_serving("exit 1")

        # one that never reports: killed after the handshake timeout
        mute = os.path.join(tmp, "runneld-mute")
        with open(mute, "w") as f:
            f.write("#!/bin/sh\nexec sleep 60\n")
        os.chmod(mute, 0o755)
        r, js, t0, t1 = upgrade(n, mute)
        t.ok(r.returncode != 0 and js and "did not adopt" in js["error"],
             "a new binary that never reports is killed: %s (%.1f s)"
             % (js and js.get("error"), t1 - t0))
        t.ok(sv_pid(n) == current and worker_pids(n) == before,
             "and the old supervisor keeps the node")
        still_serving("mute binary")

        # a new supervisor killed halfway: the old one takes the node back
        logpos = os.path.getsize(n.logfile)
        res = {}
        th = threading.Thread(target=lambda: res.update(
            zip(("r", "js", "t0", "t1"), upgrade(n))))
        th.start()

        def replaced_one():
            text = n.logtext()[logpos:]
            m = re.search(r"upgrade: \S+ is pid (\d+)'s now", text)
            return int(m.group(1)) if m else None
        newpid = wait_for(replaced_one, 30, 0.005)
        if newpid:
            os.kill(newpid, signal.SIGKILL)
        th.join(60)
        js = res.get("js")
        t.ok(newpid and js and not js["ok"] and "signal 9" in js["error"],
             "a new supervisor SIGKILLed after %s replaced worker(s) fails "
             "the upgrade: %s" % (js and len(js["workers"]), js and js["error"]))
        t.ok(sv_pid(n) == current and healthy(n),
             "the old supervisor took the node back, every worker running")
        still_serving("killed halfway")

        # three real upgrades, each to a copy of the fresh binary
        durations = []
        for rnd in range(1, 4):
            nxt = os.path.join(tmp, "runneld-next-%d" % rnd)
            shutil.copy2(os.path.join(BUILDDIR, "runneld"), nxt)
            before = worker_pids(n)
            r, js, t0, t1 = upgrade(n, nxt)
            ok = r.returncode == 0 and js and js.get("ok")
            t.ok(ok, "upgrade %d succeeds%s" % (rnd, "" if ok else
                                                 ": " + r.stderr.strip()))
            if not ok:
                break
            new = js["pid"]
            t.ok(new != current and sv_pid(n) == new and
                 os.readlink("/proc/%d/exe" % new) == nxt,
                 "upgrade %d: supervisor pid %d -> %d runs %s"
                 % (rnd, current, new, os.path.basename(nxt)))
            t.ok(wait_for(lambda: not _alive(current), 10),
                 "upgrade %d: the old supervisor has left" % rnd)
            current = new
            after = worker_pids(n)
            t.ok(set(after) == set(before) and
                 all(after[k] and after[k] != before[k] for k in before),
                 "upgrade %d: every worker has a new pid" % rnd)
            msgs = notify.since(t0)
            t.ok(any("MAINPID=%d" % new in m and "READY=1" in m for m in msgs),
                 "upgrade %d: MAINPID=%d and READY=1 sent" % (rnd, new))
            dp, dc = rate(load.ack_t, t0, t1), rate(load.seen_t, t0, t1)
            durations.append(t1 - t0)
            t.diag("upgrade %d: %.2f s (supervisor: %s ms; %s); during it %.0f "
                   "acks/s (%.0f%% of before), %.0f consumed/s (%.0f%% of "
                   "before)" % (rnd, t1 - t0, js.get("duration_ms"),
                                ", ".join("%s %d ms" % (w["name"], w["ms"])
                                          for w in js["workers"]),
                                dp, 100 * dp / max(base_p, 1), dc,
                                100 * dc / max(base_c, 1)))
            still_serving("upgrade %d" % rnd)
            time.sleep(1)

        conns.stop.set()
        conns.th.join(10)
        load.finish()
        failed, acked = load.failed, load.acked
        load = None
        refused_log = errors.log_refused()
        errors.release()
        t.diag("raw connects: %d ok, %d refused, %d other errors"
               % (conns.ok, conns.refused, conns.other))
        t.ok(conns.ok > 1000, "the raw connect loop ran all along")
        t.eq((conns.refused, conns.other), (0, 0),
             "no raw connect was refused or failed")
        t.eq(failed, 0, "no delivery failed")
        t.eq((errors.refused, len(refused_log)), (0, 0),
             "no client saw a refused connection (callbacks, log lines)")
        for l in refused_log[:10]:
            t.diag(l)
        vals = read_partitions(n.bootstrap, TOPIC, PARTS, len(acked), 120,
                               group="upg-check")
        got = set(vals)
        lost = len(set(acked) - got)
        dup = len(vals) - len(got)
        t.diag("%d records acknowledged, %d read: lost=%d dup=%d"
               % (len(acked), len(vals), lost, dup))
        t.eq(lost, 0, "no acknowledged record is lost")
        t.eq(dup, 0, "no record is duplicated")
        t.eq(n.crashes(), [], "no worker died of a crash")

        # the last supervisor stops as any: SIGTERM, exit 0
        os.kill(current, signal.SIGTERM)
        deadline = time.monotonic() + 30
        rc = None
        while time.monotonic() < deadline:
            pid, status = os.waitpid(current, os.WNOHANG)
            if pid:
                rc = os.waitstatus_to_exitcode(status)
                break
            time.sleep(0.1)
        t.eq(rc, 0, "the upgraded supervisor stops cleanly on SIGTERM")
        t.ok(not os.path.exists(n.sock), "and removes its control socket")
    finally:
        if load is not None:
            load.finish()
        errors.release()
        if _alive(current):
            kill_tree(current)
        n.kill()
        notify.stop.set()

t.done()
