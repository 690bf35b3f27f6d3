#!/usr/bin/python3
"""What scraping /metrics costs: the supervisor's CPU per scrape, and produce
throughput with /metrics scraped 100 times a second against without (prints
figures; never fails, exit 0; not run by make check).

One runneld node (metrics.listener on), scraped by tests/bench/metrics-scraper
(C, one kept-alive connection, as Prometheus scrapes; its own CPU is printed).

1. CPU per scrape. With a topic of 10 partitions, then with one of
   BENCH_SCRAPE_PARTITIONS (1,000) in all (kafka_log_log_size is one line per
   partition), each partition written to: the supervisor's CPU
   (/proc/PID/schedstat, ns) while /metrics is scraped at the rate for
   BENCH_SCRAPE_COST_SECS, less its CPU over as long unscraped, per scrape;
   the same for a 404 path (the HTTP exchange and the loop's wake-up alone);
   and back to back (-r 0: caches warm, the floor).
2. Throughput, on the node as phase 1 left it: BENCH_SCRAPE_SECS (600)
   seconds of produce runs (runnel-perf producer, 100 B, acks=1, the
   10-partition topic; a run ends at its 10^9th record, then the next
   starts), each reporting its rate every BENCH_SCRAPE_WINDOW_MS (2000;
   a window ends at the first delivery report after it), with one scraper at BENCH_SCRAPE_RATE (100/s) let run (SIGCONT)
   and held (SIGSTOP) window by window in the order off, on, on, off, ...:
   each pair of neighbouring windows, one scraped and one not, in both
   orders in turn, shares whatever else the machine was doing then.
   Printed: the median of the pairs' ratios (scraped / unscraped - 1) with
   a 95% bootstrap interval of it, the quartiles and min-max; all scraped
   windows' records over all unscraped ones, with its interval; the
   supervisor's CPU in scraped windows less unscraped ones, as a share of
   one core and of the broker's whole CPU (supervisor and workers, every
   thread) and per scrape; the scraper's own CPU; the load average.
   BENCH_SCRAPE_SECS=0 skips it.

    RUNNEL_BUILDDIR=./build tests/bench/metrics-scrape.py
    (or: make bench-scrape)

Environment: BENCH_SCRAPE_SECS (600), BENCH_SCRAPE_WINDOW_MS (2000),
BENCH_SCRAPE_RATE (100), BENCH_SCRAPE_PARTITIONS (1000),
BENCH_SCRAPE_COST_SECS (10), BENCH_SCRAPE_CONTROL=1 (the scraper is never
let run: an A/A run, what the method reads when nothing differs),
BENCH_SCRAPE_WINDOWS=FILE (each window as a JSON line: run, scraped,
records/s, supervisor ns, broker ns, seconds), RUNNEL_KEEP_TEST_DIRS=1 (keep the
node's dir).
"""
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import threading
import time
import urllib.request

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "lib"))
os.environ.setdefault("RUNNEL_BUILDDIR", os.path.abspath("build"))

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

import rntest  # noqa: E402
from rnproc import cpu_ns  # noqa: E402
from rnstats import PATTERN, median_ci, ratio_ci  # noqa: E402

BUILD = os.environ["RUNNEL_BUILDDIR"]
PERF = os.path.join(BUILD, "runnel-perf")
SCRAPER = os.path.join(BUILD, "tests", "bench", "metrics-scraper")
SECS = float(os.environ.get("BENCH_SCRAPE_SECS", "600"))
WINDOW_MS = int(os.environ.get("BENCH_SCRAPE_WINDOW_MS", "2000"))
RATE = float(os.environ.get("BENCH_SCRAPE_RATE", "100"))
PARTS = int(os.environ.get("BENCH_SCRAPE_PARTITIONS", "1000"))
COST_SECS = float(os.environ.get("BENCH_SCRAPE_COST_SECS", "10"))
# the scraper never let run: an A/A run, what the method reads when the
# two kinds of window do not differ
CONTROL = os.environ.get("BENCH_SCRAPE_CONTROL") == "1"
DUMP = os.environ.get("BENCH_SCRAPE_WINDOWS")
TOPIC, SMALL = "bench", 10
# the run writes 100 GB or more: each partition keeps its last GiB
TOPIC_CONFIG = {"retention.bytes": str(1 << 30),
                "segment.bytes": str(256 << 20)}


def load():
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


def scraper(mport, path, args):
    return subprocess.Popen([SCRAPER, "127.0.0.1", str(mport), path] + args,
                            stdout=subprocess.PIPE, text=True)


def scraper_result(p):
    out, _ = p.communicate(timeout=60)
    return json.loads(out.strip().splitlines()[-1])


def fill(n, topic, parts):
    """A record to every partition: a log opens at its first write."""
    p = Producer({"bootstrap.servers": n.bootstrap})
    for i in range(parts):
        p.produce(topic, b"x" * 100, partition=i)
    p.flush(60)


def log_lines(mport):
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % mport,
                                timeout=10) as r:
        text = r.read().decode()
    return text.count("kafka_log_log_size{"), len(text), text.count("\n")


def cost(n, mport, label):
    """Supervisor us per scrape: at the rate, minus idle; 404; back to back."""
    sv = [n.proc.pid]
    c0 = cpu_ns(sv)
    time.sleep(COST_SECS)
    idle = cpu_ns(sv) - c0
    res = {}
    for path, args in (("/metrics", ["-r", str(RATE), "-d", str(COST_SECS)]),
                       ("/nothing", ["-r", str(RATE), "-d", str(COST_SECS)]),
                       ("/metrics", ["-r", "0", "-n", "2000"])):
        c0 = cpu_ns(sv)
        r = scraper_result(scraper(mport, path, args))
        used = cpu_ns(sv) - c0
        if args[1] != "0":
            used -= idle * r["seconds"] / COST_SECS
        key = path + (" back to back" if args[1] == "0" else "")
        res[key] = (used / 1000 / max(r["requests"], 1), r)
    k, size, lines = log_lines(mport)
    print("%s (%d log_size lines; a scrape is %d lines, %d bytes), load %s:"
          % (label, k, lines, size, load()))
    for key, (us, r) in res.items():
        print("  %-22s %7.1f us of supervisor CPU per scrape (%d requests, "
              "%d connects, scraper %.1f us each)"
              % (key, us, r["requests"], r["connects"],
                 1e6 * r["cpu_seconds"] / max(r["requests"], 1)))
    return res


def produce(n, records):
    out = subprocess.run([PERF, "producer", "--bootstrap-server", n.bootstrap,
                          "--topic", TOPIC, "--num-records", str(records),
                          "--record-size", "100", "--acks", "1",
                          "--throughput", "-1", "--print-json",
                          "--reporting-interval", "3600000"],
                         capture_output=True, text=True, timeout=600).stdout
    return json.loads(out.strip().splitlines()[-1])["records_per_sec"]


def produce_windows(n, sc, sv, pids, deadline):
    """One produce run until deadline (or its records run out: runnel-perf
    takes at most 10^9): per window, (scraped, records/s, supervisor ns,
    broker ns, seconds), the scraper let run or held window by window."""
    # it reports each window's rate on stderr
    prod = subprocess.Popen([PERF, "producer", "--bootstrap-server",
                             n.bootstrap, "--topic", TOPIC, "--num-records",
                             "1000000000", "--record-size", "100", "--acks",
                             "1", "--throughput", "-1", "--reporting-interval",
                             str(WINDOW_MS)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True)
    timer = threading.Timer(deadline - time.monotonic() + 5, prod.send_signal,
                            (signal.SIGTERM,))
    timer.start()
    wins, k = [], 0
    cpu = (cpu_ns(sv), cpu_ns(pids), time.monotonic())
    try:
        for line in prod.stderr:
            m = re.match(r"\d+ records, ([\d.]+) records/s", line)
            if not m:
                continue
            now = (cpu_ns(sv), cpu_ns(pids), time.monotonic())
            wins.append((PATTERN[k % 4], float(m.group(1)), now[0] - cpu[0],
                         now[1] - cpu[1], now[2] - cpu[2]))
            cpu = now
            k += 1
            if now[2] >= deadline:
                prod.send_signal(signal.SIGTERM)
            sc.send_signal(signal.SIGCONT if PATTERN[k % 4] and
                           not CONTROL else signal.SIGSTOP)
    finally:
        timer.cancel()
        prod.wait()
        sc.send_signal(signal.SIGSTOP)
    return wins


def interleaved(n, mport):
    """The windows of produce runs for SECS, a run after another, and the
    scraper's result."""
    pids, sv = n.pids(), [n.proc.pid]
    sc = scraper(mport, "/metrics", ["-r", str(RATE)])
    time.sleep(0.5)  # its SIGTERM handler set: held, it is not lost
    sc.send_signal(signal.SIGSTOP)
    runs, deadline = [], time.monotonic() + SECS
    try:
        while deadline - time.monotonic() > 20:
            runs.append(produce_windows(n, sc, sv, pids, deadline))
    finally:
        sc.send_signal(signal.SIGCONT)
        sc.terminate()
    return runs, scraper_result(sc)


def bench(n, mport):
    n.wait_running()
    admin = AdminClient({"bootstrap.servers": n.bootstrap})
    admin.create_topics([NewTopic(TOPIC, SMALL, 1, config=TOPIC_CONFIG)]
                        )[TOPIC].result(30)
    # a first run fills the Produce, Metadata, ... histograms, as a
    # node that has served clients has them
    rps = produce(n, 2000000)
    fill(n, TOPIC, SMALL)
    print("load %s; warm-up %.0f records/s" % (load(), rps))
    cost(n, mport, "%d partitions" % SMALL)
    if PARTS > SMALL:
        admin.create_topics([NewTopic("wide", PARTS - SMALL, 1)]
                            )["wide"].result(120)
        fill(n, "wide", PARTS - SMALL)
        rntest.wait_for(lambda: log_lines(mport)[0] >= PARTS, 60)
        cost(n, mport, "%d partitions" % PARTS)

    if SECS <= 0:
        return
    print("\nproduce runs for %.0f s, scraped at %.0f/s in alternate "
          "windows of %d ms (off, on, on, off, ...)%s; load %s"
          % (SECS, RATE, WINDOW_MS, ", CONTROL: never scraped" if CONTROL
             else "", load()), flush=True)
    runs, r = interleaved(n, mport)
    every = [w for run in runs for w in run]
    if DUMP:
        with open(DUMP, "w") as f:
            for i, run in enumerate(runs):
                for w in run:
                    f.write(json.dumps((i,) + w) + "\n")
    # the first windows of a run are the client's start; pairs of
    # neighbours after
    wins, pairs = [], []
    for run in runs:
        wins += run[4:]
        pairs += [(a, b) if not a[0] else (b, a)
                  for a, b in zip(run[4::2], run[5::2])]
    ratios = [100.0 * (on[1] / off[1] - 1) for off, on in pairs if off[1] > 0]
    if len(ratios) < 4:
        print("too few windows reported (%d)" % len(every))
        return
    med, lo, hi = median_ci(ratios)
    q = statistics.quantiles(ratios, n=4)
    print("throughput scraped against unscraped, %d pairs of windows: median "
          "%+.2f%% (95%% bootstrap interval of the median %+.2f%% .. %+.2f%%; "
          "quartiles %+.1f%% .. %+.1f%%, min-max %+.1f%% .. %+.1f%%)"
          % (len(ratios), med, lo, hi, q[0], q[2], min(ratios), max(ratios)))
    tot, lo, hi = ratio_ci(pairs)
    print("all scraped windows' records against all unscraped: %+.2f%% (95%% "
          "bootstrap interval %+.2f%% .. %+.2f%%); medians %.0f records/s "
          "unscraped, %.0f scraped"
          % (tot, lo, hi, statistics.median(x[1] for x in wins if not x[0]),
             statistics.median(x[1] for x in wins if x[0])))
    # CPU in each kind of window, every window counted (the scrapes were
    # made in all the scraped ones): ns over seconds -> cores
    offs = [x for x in every if not x[0]]
    ons = [x for x in every if x[0]]
    on_secs = sum(x[4] for x in ons)
    off_secs = sum(x[4] for x in offs)
    sv_off = sum(x[2] for x in offs) / 1e9 / off_secs
    sv_on = sum(x[2] for x in ons) / 1e9 / on_secs
    brk_on = sum(x[3] for x in ons) / 1e9 / on_secs
    brk_off = sum(x[3] for x in offs) / 1e9 / off_secs
    print("supervisor CPU spent scraping: %.2f%% of one core (%.2f%% in "
          "scraped windows, %.2f%% in the others), %.2f%% of the broker's CPU "
          "in scraped windows (%.2f cores; %.2f unscraped); %.0f us per scrape "
          "(%d scrapes, %d late)"
          % (100 * (sv_on - sv_off), 100 * sv_on, 100 * sv_off,
             100 * (sv_on - sv_off) / brk_on, brk_on, brk_off,
             1e6 * (sv_on - sv_off) * on_secs / max(r["requests"], 1),
             r["requests"], r["late"]))
    print("the scraper itself: %.2f%% of one core while it ran; load %s"
          % (100 * r["cpu_seconds"] / on_secs, load()))


def main():
    if not os.access(SCRAPER, os.X_OK):
        print("bench-scrape: %s is missing (make check or make bench-scrape "
              "builds it)" % SCRAPER)
        return
    with rntest.TempDir() as path:
        mport = rntest.free_port()
        n = rntest.Node(path, props={
            "metrics.listener": "http://127.0.0.1:%d" % mport,
            "log.retention.check.interval.ms": "5000"})
        n.start()
        try:
            bench(n, mport)
        finally:
            n.stop()


if __name__ == "__main__":
    main()
