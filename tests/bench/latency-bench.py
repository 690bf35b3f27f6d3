#!/usr/bin/python3
"""Produce latency at a fixed third of peak, runnel beside librdkafka's
mock broker in the same run (prints figures; never fails, exit 0; not run
by make check).

One runneld node and the mock (built from ../shared/peers/rdk_mock_broker.c
into a temporary directory) are started; runnel's peak is measured with
runnel-perf (100 B, linger 5 ms, batch 1 MB, acks=1); then each latency
line runs at a third of it (--throughput) for BENCH_LAT_SECS against
runnel and against the mock, acks=1 and acks=all, and prints p50, p99,
p99.9 and max (produce call to delivery report), the client's CPU
(cores busy) and run-queue wait, the broker's network workers' run-queue
wait (/proc/<pid>/task/*/schedstat: time runnable but not running, per
wall second), and the load average before each line.

BENCH_STAGES=1 also prints, for each runnel line, the broker's stage
histograms (runnel_request_stage_seconds from /metrics, the difference
of the buckets before and after the line): count, and the upper bounds
of the buckets holding p50, p99, p99.9 and the largest sample.

    RUNNEL_BUILDDIR=./build tests/bench/latency-bench.py
    (or: make bench-latency)

Environment: BENCH_LAT_SECS (10), BENCH_LAT_PEAK_RECORDS (2000000: the
peak run), BENCH_LAT_RATE (a fixed rate instead of a third of the peak),
BENCH_LAT_REPEAT (1: rounds of the latency lines), BENCH_LAT_ACKS ("1 all":
the lines run), BENCH_STAGES=1,
RUNNEL_PEERS_DIR, BENCH_KEEP=1 (keep the work dir).
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "lib"))
os.environ.setdefault("RUNNEL_BUILDDIR", os.path.abspath("build"))

import rntest  # noqa: E402
from rnpeers import start_mock  # noqa: E402
from rnproc import schedstat_ns  # noqa: E402

BUILD = os.environ["RUNNEL_BUILDDIR"]
PERF = os.path.join(BUILD, "runnel-perf")
SECS = float(os.environ.get("BENCH_LAT_SECS", "10"))
PEAK_N = int(os.environ.get("BENCH_LAT_PEAK_RECORDS", "2000000"))
RATE = int(os.environ.get("BENCH_LAT_RATE", "0"))
REPEAT = int(os.environ.get("BENCH_LAT_REPEAT", "1"))
STAGES = os.environ.get("BENCH_STAGES", "0") == "1"
ACKS = os.environ.get("BENCH_LAT_ACKS", "1 all").split()
COMMON = ["--linger-ms", "5", "--batch-size", "1048576", "--record-size",
          "100", "--print-json", "--reporting-interval", "3600000"]


def load():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def network_pids(node):
    """The node's network workers (their comm says so)."""
    out = []
    for pid in node.pids():
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                if b"network" in f.read():
                    out.append(pid)
        except OSError:
            pass
    return out


def perf(bootstrap, topic, args):
    """runnel-perf producer; its JSON line, with the client's run-queue
    wait (sampled while it runs: it cannot be read once it exited)."""
    p = subprocess.Popen([PERF, "producer", "--bootstrap-server", bootstrap,
                          "--topic", topic] + COMMON + args,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         text=True)
    last = [(0, 0)]

    def sample():
        while p.poll() is None:
            s = schedstat_ns([p.pid])
            if s != (0, 0):
                last[0] = s
            time.sleep(0.2)
    th = threading.Thread(target=sample)
    th.start()
    out, _ = p.communicate()
    th.join()
    r = None
    for line in out.splitlines():
        if line.startswith("{"):
            r = json.loads(line)
    if r is not None:
        r["cli_wait_s"] = last[0][1] / 1e9
    return r


# ---- stage histograms (runnel_request_stage_seconds) ----

BUCKET = re.compile(r'^runnel_request_stage_seconds_bucket\{stage="([^"]+)",'
                    r'le="([^"]+)"\} (\d+)$', re.M)


def scrape(mport):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % mport,
                                timeout=5) as r:
        text = r.read().decode()
    h = {}
    for stage, le, v in BUCKET.findall(text):
        h.setdefault(stage, []).append((float(le), int(v)))
    return h


def quantile_bound(buckets, q):
    """The upper bound (s) of the bucket holding quantile q."""
    total = buckets[-1][1]
    if total == 0:
        return None
    for le, c in buckets:
        if c >= q * total:
            return le
    return float("inf")


def fmt_s(s):
    if s is None:
        return "-"
    if s == float("inf"):
        return "+Inf"
    return "%.3gms" % (s * 1e3) if s >= 1e-3 else "%.3gus" % (s * 1e6)


def print_stages(before, after):
    print("    stage histograms (bucket upper bounds; counts over the line):")
    for stage in after:
        a = after[stage]
        b = dict(before.get(stage, []))
        d = [(le, c - b.get(le, 0)) for le, c in a]
        n = d[-1][1]
        top = None
        for i, (le, c) in enumerate(d):
            if c == n:
                top = le
                break
        print("      %-12s n=%-8d p50<=%-9s p99<=%-9s p99.9<=%-9s max<=%s" % (
            stage, n, fmt_s(quantile_bound(d, 0.5)),
            fmt_s(quantile_bound(d, 0.99)), fmt_s(quantile_bound(d, 0.999)),
            fmt_s(top) if n else "-"))


# ---- runnel ----

def start_runnel(tmp):
    mport = rntest.free_port()
    node = rntest.Node(tmp, props={
        "metrics.listener": "http://127.0.0.1:%d" % mport})
    node.start()
    node.wait_running(30)
    for _ in range(30):
        r = subprocess.run([os.path.join(BUILD, "runnel-topics"),
                            "--bootstrap-server", node.bootstrap, "--create",
                            "--topic", "lat", "--partitions", "1",
                            "--replication-factor", "1", "--if-not-exists"],
                           capture_output=True)
        if r.returncode == 0:
            break
        time.sleep(1)
    return node, mport


def line(label, r, extra=""):
    if r is None:
        print("  %-22s no result" % label)
        return
    el = r.get("elapsed_s") or 1
    print("  %-22s %9.0f rec/s  p50 %7.2f  p99 %7.2f  p99.9 %7.2f  max "
          "%7.2f ms  cli %.2f (rq wait %.2f)%s" % (
              label, r["records_per_sec"], r["p50_ms"], r["p99_ms"],
              r["p999_ms"], r["max_ms"],
              (r["cpu_user_s"] + r["cpu_sys_s"]) / el, r["cli_wait_s"] / el,
              extra))


def main():
    tmp = tempfile.mkdtemp(prefix="runnel-latbench-")
    mock, mock_bs = start_mock(tmp, ["lat:1:1"])
    node, mport = start_runnel(tmp)
    try:
        print("load before: %s" % load())
        peak = perf(node.bootstrap, "lat", ["--num-records", str(PEAK_N),
                                            "--acks", "1"])
        if peak is None:
            print("bench: no peak from runnel; see %s" % node.logfile)
            return
        rate = RATE or int(peak["records_per_sec"] / 3)
        print("runnel peak (100 B, acks=1, linger 5 ms): %.0f records/s "
              "(load %s); fixed rate %d/s for %.0f s per line" % (
                  peak["records_per_sec"], load(), rate, SECS))
        peers = [("runnel", node.bootstrap)]
        if mock_bs:
            peers.append(("mock", mock_bs))
        for rnd in range(REPEAT):
            for acks in ACKS:
                for name, bs in peers:
                    args = ["--num-records", str(int(rate * SECS)),
                            "--acks", acks, "--throughput", str(rate)]
                    ld = load()
                    nets = network_pids(node) if name == "runnel" else []
                    h0 = scrape(mport) if STAGES and name == "runnel" else None
                    w0 = schedstat_ns(nets)
                    t0 = time.monotonic()
                    r = perf(bs, "lat", args)
                    el = time.monotonic() - t0
                    w1 = schedstat_ns(nets)
                    extra = "  load %s" % ld
                    if nets:
                        extra += "  brk %.2f (rq wait %.2f)" % (
                            (w1[0] - w0[0]) / 1e9 / el,
                            (w1[1] - w0[1]) / 1e9 / el)
                    line("%s acks=%s" % (name, acks), r, extra)
                    if h0 is not None:
                        print_stages(h0, scrape(mport))
        print("load after: %s" % load())
        print("latency: produce call to delivery report; cli: runnel-perf's "
              "CPU per wall second; brk: the network workers' CPU per wall "
              "second; rq wait: time runnable but waiting for a CPU, per "
              "wall second (%d cores)" % os.cpu_count())
    finally:
        node.stop()
        if mock:
            mock.terminate()
            mock.wait()
        if os.environ.get("BENCH_KEEP") == "1":
            print("bench: kept %s" % tmp, file=sys.stderr)
        else:
            subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    main()
