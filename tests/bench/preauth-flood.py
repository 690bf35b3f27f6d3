#!/usr/bin/python3
"""What an unauthenticated flood costs an authenticated producer, and the
broker's memory through it (issue 15). Prints figures; never passes or
fails; not part of make check.

One runneld node with a SASL_PLAINTEXT listener (PLAIN). A producer
(runnel-perf, C: records of BENCH_PREAUTH_RECORD_SIZE (100) bytes, acks=1,
no throttle, logged in as alice; 1 KiB records write a GB/s to a disk
others share)
writes for BENCH_PREAUTH_SECS (180) to a topic that keeps only its last
32 MiB (segments of 8 MiB, retention looked at every second), so that
the log does not grow through the run. It reports its rate from its
delivery reports every BENCH_PREAUTH_WINDOW_MS (2500). A flooder (this
script with --flood, another process, at nice 19 and, where a cgroup can
be made, held to BENCH_PREAUTH_FLOOD_CPU (0.3) of a core) is switched on
and off window by window in the order off, on, on, off, ...; while on it
keeps up
  - BENCH_PREAUTH_CONNS (1,000) connections that each announce a 100 MiB
    request (a size prefix and 4 bytes, then nothing): the broker closes
    them, the flooder opens them again every 0.5 s;
  - as many that announce 500,000 bytes (just under
    sasl.server.max.receive.size) and stall;
  - 4 threads of failed PLAIN logins, one after another;
and while off it holds none of them.

First, before the producer, the flood alone is switched on for 5 s and
off for 3 s three times: each process's resident memory (VmRSS, RssAnon,
RssShmem) before, at its peak and after, with anonymous RSS after minus
before (the figure: what the flood leaves behind), and the whole
broker's anonymous RSS after each cycle (does it grow flood after
flood?).

Then printed: the median of the paired ratios (flood window / neighbouring
quiet window - 1) with a 95% bootstrap interval; the rate of the quiet
windows at the start and at the end of the run (a drift?); the flood's
rates (connections opened per second, failed logins per second) and its
own CPU; the broker's CPU (all processes, all threads; schedstat) in
flood and in quiet windows; the broker's anonymous RSS at the end of each
quiet window (the producer's network worker holds its read buffer, some
MiB, so these are compared with each other, not with the idle node).

    make bench-preauth   (or RUNNEL_BUILDDIR=build tests/bench/preauth-flood.py)

Environment: BENCH_PREAUTH_SECS (180), BENCH_PREAUTH_RECORD_SIZE (100),
BENCH_PREAUTH_PRODUCER_PROPS (librdkafka k=v,k=v for the producer: e.g.
linger.ms=0,batch.num.messages=10 makes many small requests, so the
broker's loop, not the client, is what is busy), BENCH_PREAUTH_WINDOW_MS (2500),
BENCH_PREAUTH_CONNS (1000), BENCH_PREAUTH_FLOOD_CPU (0.3; 0: no cgroup,
nice 19 alone), BENCH_PREAUTH_CONTROL=1 (the flooder is never switched
on: an A/A run, what the method reads when nothing differs),
BENCH_PREAUTH_WINDOWS=FILE (each window as a JSON line),
BENCH_PREAUTH_KINDS (big,near,login: which parts of the flood run),
BENCH_PREAUTH_MEM_CYCLES (3: flood-alone cycles), BENCH_PREAUTH_SHM (1: the
node's log.dirs in /dev/shm, removed after; 0: in the test dir).
"""
import json
import os
import re
import resource
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "lib"))

from rnproc import cpu_ns  # noqa: E402
from rnstats import PATTERN, median_ci, pair_windows, ratio_ci  # noqa: E402

SECS = float(os.environ.get("BENCH_PREAUTH_SECS", "180"))
WINDOW_MS = int(os.environ.get("BENCH_PREAUTH_WINDOW_MS", "2500"))
FLOOD = int(os.environ.get("BENCH_PREAUTH_CONNS", "1000"))
RECORD = int(os.environ.get("BENCH_PREAUTH_RECORD_SIZE", "100"))
# librdkafka properties for the producer, k=v,k=v (e.g. linger.ms=0,
# batch.num.messages=10: many small requests, the broker's loop busy)
PROPS = [kv for kv in os.environ.get("BENCH_PREAUTH_PRODUCER_PROPS",
                                     "").split(",") if kv]
FLOOD_CPU = float(os.environ.get("BENCH_PREAUTH_FLOOD_CPU", "0.3"))
CONTROL = os.environ.get("BENCH_PREAUTH_CONTROL") == "1"
KINDS = os.environ.get("BENCH_PREAUTH_KINDS", "big,near,login").split(",")
DUMP = os.environ.get("BENCH_PREAUTH_WINDOWS")
SHM = os.environ.get("BENCH_PREAUTH_SHM", "1") == "1"
TOPIC = "flood-bench"
TOPIC_CONFIG = {"retention.bytes": str(32 << 20),
                "segment.bytes": str(8 << 20)}
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'user_alice="alice-secret";')
# the flood comes from several loopback addresses: each has its own
# ports, and the broker closes first (its side keeps the TIME_WAITs)
SOURCES = ["127.0.0.%d" % i for i in range(2, 18)]


def raise_nofile():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


# ---- the flooder (its own process: --flood PORT) ----

def frame(body):
    return struct.pack(">i", len(body)) + body


def header(key, ver, corr, client=b"flood"):
    return struct.pack(">hhih", key, ver, corr, len(client)) + client


def recv_exact(s, k):
    buf = b""
    while len(buf) < k:
        got = s.recv(k - len(buf))
        if not got:
            return None
        buf += got
    return buf


def recv_frame(s):
    hdr = recv_exact(s, 4)
    return None if hdr is None else recv_exact(s, struct.unpack(">i", hdr)[0])


class Flooder:
    def __init__(self, port):
        self.port = port
        self.on = threading.Event()
        self.quit = False
        self.k = 0
        self.stats = {"opened_100mib": 0, "opened_500kb": 0,
                      "failed_logins": 0, "connect_errors": 0,
                      "on_secs": 0.0}

    def connect(self, timeout=2):
        self.k += 1
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(timeout)
        s.bind((SOURCES[self.k % len(SOURCES)], 0))
        s.connect(("127.0.0.1", self.port))
        return s

    def failed_login(self):
        """SaslHandshake v1 PLAIN, then SaslAuthenticate v0 with a wrong
        password: the broker answers after its failure delay."""
        try:
            s = self.connect(5)
        except OSError:
            self.stats["connect_errors"] += 1
            time.sleep(0.01)
            return
        try:
            mech = b"PLAIN"
            s.sendall(frame(header(17, 1, 1) + struct.pack(">h", len(mech)) +
                            mech))
            if recv_frame(s) is None:
                return
            tok = b"\0alice\0wrong-password"
            s.sendall(frame(header(36, 0, 2) + struct.pack(">i", len(tok)) +
                            tok))
            if recv_frame(s) is not None:
                self.stats["failed_logins"] += 1
        except OSError:
            pass
        finally:
            s.close()

    def logins(self):
        while not self.quit:
            if self.on.wait(0.2):
                self.failed_login()

    def opener(self, payload, key):
        conns = []
        while not self.quit:
            if not self.on.is_set():
                for s in conns:
                    s.close()
                conns = []
                self.on.wait(0.2)
                continue
            alive = []
            for s in conns:
                try:
                    if s.recv(1) == b"":
                        s.close()
                        continue
                except BlockingIOError:
                    pass
                except OSError:
                    s.close()
                    continue
                alive.append(s)
            conns = alive
            while len(conns) < FLOOD and self.on.is_set():
                try:
                    s = self.connect()
                    s.sendall(payload)
                    s.setblocking(False)
                    conns.append(s)
                    self.stats[key] += 1
                except OSError:
                    self.stats["connect_errors"] += 1
                    break
            time.sleep(1.0)
        for s in conns:
            s.close()

    def run(self):
        big = struct.pack(">i", 100 * 1024 * 1024) + b"abcd"
        near = struct.pack(">i", 500000) + b"abcd"
        threads = []
        if "big" in KINDS:
            threads.append(threading.Thread(target=self.opener,
                                            args=(big, "opened_100mib")))
        if "near" in KINDS:
            threads.append(threading.Thread(target=self.opener,
                                            args=(near, "opened_500kb")))
        if "login" in KINDS:
            threads += [threading.Thread(target=self.logins) for _ in range(4)]
        for th in threads:
            th.start()
        since = None
        for line in sys.stdin:
            cmd = line.strip()
            if cmd == "on" and since is None:
                since = time.monotonic()
                self.on.set()
            elif cmd == "off" and since is not None:
                self.on.clear()
                self.stats["on_secs"] += time.monotonic() - since
                since = None
            elif cmd == "quit":
                break
        if since is not None:
            self.stats["on_secs"] += time.monotonic() - since
        self.on.clear()
        self.quit = True
        for th in threads:
            th.join()
        ru = resource.getrusage(resource.RUSAGE_SELF)
        self.stats["cpu_s"] = ru.ru_utime + ru.ru_stime
        print(json.dumps(self.stats), flush=True)


# ---- the bench ----

class CpuCap:
    """A cgroup holding the flooder to a share of a core (v2 cpu.max or
    v1 cpu.cfs_quota_us), where one can be made; else nothing."""

    def __init__(self, share):
        self.path = None
        self.kind = "none"
        if share <= 0:
            return
        name = "runnel-preauth-bench-%d" % os.getpid()
        period = 100000
        for root, kind in (("/sys/fs/cgroup", "v2"),
                           ("/sys/fs/cgroup/cpu", "v1")):
            try:
                if kind == "v2":
                    with open(os.path.join(root, "cgroup.controllers")) as f:
                        if "cpu" not in f.read().split():
                            continue
                elif not os.path.exists(os.path.join(root, "cpu.cfs_quota_us")):
                    continue
                path = os.path.join(root, name)
                os.mkdir(path)
            except OSError:
                continue
            try:
                if kind == "v2":
                    with open(os.path.join(path, "cpu.max"), "w") as f:
                        f.write("%d %d" % (int(share * period), period))
                else:
                    with open(os.path.join(path, "cpu.cfs_period_us"), "w") as f:
                        f.write(str(period))
                    with open(os.path.join(path, "cpu.cfs_quota_us"), "w") as f:
                        f.write(str(int(share * period)))
            except OSError:
                os.rmdir(path)
                continue
            self.path, self.kind = path, "%s %s" % (kind, path)
            return

    def add(self, pid):
        if self.path:
            with open(os.path.join(self.path, "cgroup.procs"), "w") as f:
                f.write(str(pid))

    def throttled_s(self):
        if not self.path:
            return 0.0
        try:
            with open(os.path.join(self.path, "cpu.stat")) as f:
                for line in f:
                    k, v = line.split()
                    if k == "throttled_usec":
                        return int(v) / 1e6
                    if k == "throttled_time":
                        return int(v) / 1e9
        except OSError:
            pass
        return 0.0

    def remove(self):
        if self.path:
            for _ in range(50):
                try:
                    os.rmdir(self.path)
                    return
                except OSError:
                    time.sleep(0.1)


def proc_name(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            name = f.read().replace(b"\0", b" ").decode().strip()
        return re.sub(r"^-?runneld: ", "", name).rstrip(" .") or str(pid)
    except OSError:
        return str(pid)


def memory(pids):
    """{pid: (name, VmRSS, RssAnon, RssShmem)} in KiB."""
    out = {}
    for pid in pids:
        try:
            with open("/proc/%d/status" % pid) as f:
                v = dict(line.split(":", 1) for line in f if ":" in line)
        except OSError:
            continue
        kib = [int(v.get(k, "0 kB").split()[0])
               for k in ("VmRSS", "RssAnon", "RssShmem")]
        out[pid] = (proc_name(pid),) + tuple(kib)
    return out


def load():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def perf_cmd(build, port, records):
    return [os.path.join(build, "runnel-perf"), "producer",
            "--bootstrap-server", "127.0.0.1:%d" % port, "--topic", TOPIC,
            "--num-records", str(records), "--record-size", str(RECORD),
            "--acks", "1", "--throughput", "-1",
            "-X", "security.protocol=SASL_PLAINTEXT",
            "-X", "sasl.mechanisms=PLAIN", "-X", "sasl.username=alice",
            "-X", "sasl.password=alice-secret"] + \
        [a for kv in PROPS for a in ("-X", kv)]


def windows(build, port, pids, flooder, fpid, deadline, mem):
    """One producer run to the deadline: per window (flood on, records/s,
    broker ns, flooder ns, seconds); mem gets a sample per window."""
    prod = subprocess.Popen(perf_cmd(build, port, 10 ** 9) +
                            ["--reporting-interval", str(WINDOW_MS)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    timer = threading.Timer(deadline - time.monotonic() + 10,
                            prod.send_signal, (signal.SIGTERM,))
    timer.start()
    wins, k = [], 0
    last = (cpu_ns(pids), cpu_ns([fpid]), time.monotonic())
    try:
        for line in prod.stderr:
            m = re.match(r"\d+ records, ([\d.]+) records/s", line)
            if not m:
                continue
            now = (cpu_ns(pids), cpu_ns([fpid]), time.monotonic())
            on = PATTERN[k % 4]
            wins.append((on, float(m.group(1)), now[0] - last[0],
                         now[1] - last[1], now[2] - last[2]))
            mem.append((on, memory(pids)))
            last = now
            k += 1
            if now[2] >= deadline:
                prod.send_signal(signal.SIGTERM)
            nxt = PATTERN[k % 4] and not CONTROL
            flooder.stdin.write("on\n" if nxt else "off\n")
            flooder.stdin.flush()
            # the measure starts from here, not from the line's arrival
            last = (cpu_ns(pids), cpu_ns([fpid]), time.monotonic())
    finally:
        timer.cancel()
        prod.wait()
        flooder.stdin.write("off\n")
        flooder.stdin.flush()
    return wins


def print_memory(before, peak, after):
    print("  resident memory per process, KiB (before -> peak -> after; "
          "anonymous after - before):")
    tot = [0, 0, 0, 0]
    for pid in sorted(before):
        if pid not in after:
            print("    %-18s gone (restarted?)" % before[pid][0])
            continue
        name, rss0, anon0, shm0 = before[pid]
        _, rss1, anon1, shm1 = after[pid]
        pk = peak.get(pid, (0, 0, 0, 0))
        print("    %-18s VmRSS %6d -> %6d -> %6d  RssAnon %6d -> %6d -> %6d "
              "(%+d)  RssShmem %6d -> %6d"
              % (name[:18], rss0, pk[1], rss1, anon0, pk[2], anon1,
                 anon1 - anon0, shm0, shm1))
        tot[0] += rss0
        tot[1] += rss1
        tot[2] += anon1 - anon0
        tot[3] += shm1 - shm0
    print("    all: VmRSS %d -> %d KiB; anonymous RSS after - before: %+d KiB; "
          "shared: %+d KiB" % (tot[0], tot[1], tot[2], tot[3]))


def flood_memory(n, flooder, on_s=5.0, off_s=3.0):
    """The flood alone (no producer), switched on and off a few times:
    each process's memory before, at its peak, and after each cycle."""
    cycles = int(os.environ.get("BENCH_PREAUTH_MEM_CYCLES", "3"))
    pids = n.pids()
    before = memory(pids)
    peak, ends = {}, []
    for _ in range(cycles):
        flooder.stdin.write("on\n")
        flooder.stdin.flush()
        t_end = time.monotonic() + on_s
        while time.monotonic() < t_end:
            for pid, v in memory(pids).items():
                if pid not in peak or v[1] > peak[pid][1]:
                    peak[pid] = v
            time.sleep(0.25)
        flooder.stdin.write("off\n")
        flooder.stdin.flush()
        time.sleep(off_s)
        ends.append(memory(pids))
    print("the flood alone, %d times %.0f s on and %.0f s off (no producer):"
          % (cycles, on_s, off_s))
    print_memory(before, peak, ends[-1])
    print("  anonymous RSS of all processes after each cycle: %s KiB "
          "(before: %d)" % (", ".join(str(sum(v[2] for v in m.values()))
                                      for m in ends),
                            sum(v[2] for v in before.values())), flush=True)


def bench(n, sp):
    build = os.environ["RUNNEL_BUILDDIR"]
    from confluent_kafka.admin import AdminClient, NewTopic
    admin = AdminClient({"bootstrap.servers": n.bootstrap})
    admin.create_topics([NewTopic(TOPIC, 1, 1, config=TOPIC_CONFIG)]
                        )[TOPIC].result(30)
    # a first run: the client's and the log's start outside the figures
    warm = subprocess.run(perf_cmd(build, sp, 200000) + ["--print-json"],
                          capture_output=True, text=True, timeout=300)
    try:
        rps = json.loads(warm.stdout.strip().splitlines()[-1])["records_per_sec"]
    except (ValueError, IndexError, KeyError):
        print("warm-up failed: %s" % warm.stderr[-500:])
        return
    print("load %s; warm-up %.0f records/s" % (load(), rps), flush=True)

    cap = CpuCap(FLOOD_CPU)
    flooder = subprocess.Popen(["nice", "-n", "19", sys.executable,
                                os.path.abspath(__file__), "--flood", str(sp)],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               text=True)
    cap.add(flooder.pid)
    pids = n.pids()
    mem = []
    try:
        flood_memory(n, flooder)
        print("\nproduce %d-byte records%s for %.0f s in windows of %d ms, "
              "flood switched on in the order off, on, on, off, ...%s; "
              "flooder at nice 19, cgroup: %s%s"
              % (RECORD, " (%s)" % ",".join(PROPS) if PROPS else "", SECS,
                 WINDOW_MS, " (CONTROL: never on)" if CONTROL else "",
                 cap.kind, " (%.2f of a core)" % FLOOD_CPU if cap.path
                 else ""), flush=True)
        wins = windows(build, sp, pids, flooder, flooder.pid,
                       time.monotonic() + SECS, mem)
    finally:
        try:
            flooder.stdin.write("quit\n")
            flooder.stdin.flush()
        except OSError:
            pass
        out, _ = flooder.communicate(timeout=60)
        throttled = cap.throttled_s()
        cap.remove()
    st = json.loads(out.strip().splitlines()[-1])
    if DUMP:
        with open(DUMP, "w") as f:
            for w in wins:
                f.write(json.dumps(w) + "\n")

    print_windows(wins, st, throttled)
    print_memory_windows(mem)
    log = n.logtext()
    print("broker log: %d lines; %d pre-auth size closes logged, %d failed "
          "logins logged, %d authentication timeouts logged"
          % (log.count("\n"), log.count("sasl.server.max.receive.size"),
             log.count("authentication failed"), log.count("not done in")))


def print_windows(wins, st, throttled):
    """The figures of the windows: paired ratios, drift, CPU, the flood."""
    # the last window is cut short by the producer's end
    pairs = pair_windows(wins, short=0.5 * WINDOW_MS / 1000)
    ratios = [on[1] / off[1] for off, on in pairs if off[1] > 0]
    if len(ratios) < 4:
        print("too few windows reported (%d)" % len(wins))
        return
    med, lo, hi = median_ci(ratios)
    q = statistics.quantiles(ratios, n=4)
    print("throughput under flood / quiet, %d pairs of windows: median %.3f "
          "(95%% bootstrap interval %.3f .. %.3f; quartiles %.3f .. %.3f, "
          "min-max %.3f .. %.3f)"
          % (len(ratios), med, lo, hi, q[0], q[2], min(ratios), max(ratios)))
    tot, tlo, thi = ratio_ci(pairs)
    print("all flood windows' records over all quiet ones: %+.2f%% (95%% "
          "interval %+.2f%% .. %+.2f%%)" % (tot, tlo, thi))
    quiet = [w[1] for w in wins[4:] if not w[0]]
    k = max(1, len(quiet) // 4)
    print("quiet windows: median %.0f records/s; first quarter of the run "
          "%.0f, last quarter %.0f (drift over the run)"
          % (statistics.median(quiet), statistics.median(quiet[:k]),
             statistics.median(quiet[-k:])))
    ons = [w for w in wins[4:] if w[0]]
    offs = [w for w in wins[4:] if not w[0]]
    on_s, off_s = sum(w[4] for w in ons), sum(w[4] for w in offs)
    bon = sum(w[2] for w in ons) / 1e9 / on_s
    boff = sum(w[2] for w in offs) / 1e9 / off_s
    print("broker CPU (every process and thread): %.2f cores in flood "
          "windows, %.2f in quiet ones; per record %.2f us and %.2f us"
          % (bon, boff, 1e6 * bon / statistics.median(w[1] for w in ons),
             1e6 * boff / statistics.median(w[1] for w in offs)))
    fon = sum(w[3] for w in ons) / 1e9 / on_s
    if st is None:
        print("flooder CPU %.2f of a core in flood windows" % fon)
        return
    print("flooder: on %.0f s; %.0f connections/s opened announcing 100 MiB, "
          "%.0f/s announcing 500,000 bytes (%d in all), %.1f failed logins/s "
          "(%d), %d connect errors; its CPU %.2f of a core while on (%.1f s in "
          "all, %.1f s throttled by its cgroup); load %s"
          % (st["on_secs"], st["opened_100mib"] / max(st["on_secs"], 1e-9),
             st["opened_500kb"] / max(st["on_secs"], 1e-9),
             st["opened_100mib"] + st["opened_500kb"],
             st["failed_logins"] / max(st["on_secs"], 1e-9),
             st["failed_logins"], st["connect_errors"], fon, st["cpu_s"],
             throttled, load()))


def print_memory_windows(mem):
    # at the end of each quiet window, the producer connected (its
    # network worker holds its read buffer): does anonymous memory grow
    # flood after flood?
    anon = [sum(v[2] for v in m.values()) for on, m in mem if not on]
    if len(anon) >= 4:
        print("anonymous RSS of all processes at the end of quiet windows, "
              "the producer connected: first %d KiB, second %d, last %d "
              "(%+d KiB from the second to the last; peak %d)"
              % (anon[0], anon[1], anon[-1], anon[-1] - anon[1],
                 max(sum(v[2] for v in m.values()) for _, m in mem)))


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--windows":
        # the figures again from a BENCH_PREAUTH_WINDOWS file
        with open(sys.argv[2]) as f:
            wins = [tuple(json.loads(line)) for line in f]
        print_windows(wins, None, 0.0)
        return
    if len(sys.argv) == 3 and sys.argv[1] == "--flood":
        raise_nofile()
        Flooder(int(sys.argv[2])).run()
        return
    os.environ.setdefault("RUNNEL_BUILDDIR", os.path.abspath("build"))
    import rntest
    hard = raise_nofile()
    # the log in memory: hundreds of MB/s for minutes would be written
    # to a disk others share (and the bench is not about the disk)
    shm = tempfile.mkdtemp(prefix="runnel-preauth-", dir="/dev/shm") \
        if SHM and os.path.isdir("/dev/shm") else None
    with rntest.TempDir() as tmp:
        sp = rntest.free_port()
        n = rntest.Node(tmp)
        if shm:
            n.props["log.dirs"] = shm
        n.props.update({
            "listeners": "PLAINTEXT://127.0.0.1:%d,SASL_PLAINTEXT://127.0.0.1:%d,"
                         "CONTROLLER://127.0.0.1:%d" % (n.port, sp, n.ctl_port),
            "advertised.listeners": "PLAINTEXT://127.0.0.1:%d,"
                                    "SASL_PLAINTEXT://127.0.0.1:%d" % (n.port, sp),
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,"
                "SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
            "sasl.enabled.mechanisms": "PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
            "log.retention.check.interval.ms": "1000",
        })
        n.write_config()
        n.start()
        try:
            if n.wait_running(30) is None:
                print("node did not start")
                return
            print("open files limit: %d; log dir %s" % (
                hard, n.props["log.dirs"]))
            bench(n, sp)
        finally:
            n.stop()
            if shm:
                shutil.rmtree(shm, ignore_errors=True)


if __name__ == "__main__":
    main()
