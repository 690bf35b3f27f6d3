"""Produce throughput without scraping, with /metrics scraped 100 times a
second, and with a path that collects nothing (a 404) scraped as often.
Usage: PYTHONPATH=tests/lib RUNNEL_BUILDDIR=$PWD/build python3 tests/bench/metrics-scrape.py [RECORDS] [ROUNDS]
Runs are interleaved (off, /metrics, 404, off, ...) so drift hits all
three; prints each run and the medians. On a small machine the scraping
client (Python, 100 requests a second) takes CPU from the producer too:
the 404 runs pay the client and the HTTP exchange but no collection, so
/metrics against 404 is what collecting costs the broker's throughput,
and 404 against off is the client's share."""
import json
import os
import statistics
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

from confluent_kafka.admin import AdminClient, NewTopic

from rntest import Node, TempDir, free_port

BUILD = os.environ.get("RUNNEL_BUILDDIR", "build")
RECORDS = int(sys.argv[1]) if len(sys.argv) > 1 else 1000000
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 3


def scraper(port, path, stop, count):
    url = "http://127.0.0.1:%d%s" % (port, path)
    nxt = time.monotonic()
    while not stop.is_set():
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                r.read()
        except urllib.error.HTTPError:
            pass
        count[0] += 1
        nxt += 0.01
        time.sleep(max(0, nxt - time.monotonic()))


def cpu_seconds(pid):
    """utime + stime of one process."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def produce(n, topic):
    out = subprocess.run([os.path.join(BUILD, "runnel-perf"), "producer",
                          "--bootstrap-server", n.bootstrap, "--topic", topic,
                          "--num-records", str(RECORDS), "--record-size", "100",
                          "--acks", "1", "--throughput", "-1", "--print-json"],
                         capture_output=True, text=True, timeout=600).stdout
    return json.loads(out.strip().splitlines()[-1])["records_per_sec"]


with TempDir() as tmp:
    mport = free_port()
    n = Node(tmp, props={"metrics.listener": "http://127.0.0.1:%d" % mport})
    n.start()
    try:
        n.wait_running()
        admin = AdminClient({"bootstrap.servers": n.bootstrap})
        admin.create_topics([NewTopic("bench", 3, 1)])["bench"].result(20)
        modes = (None, "/metrics", "/nothing-here")
        res = {m: [] for m in modes}
        sv_cpu = []
        for r in range(ROUNDS):
            for path in modes:
                stop, count = threading.Event(), [0]
                th = threading.Thread(target=scraper,
                                      args=(mport, path, stop, count))
                if path:
                    th.start()
                t0 = time.monotonic()
                c0 = cpu_seconds(n.proc.pid)
                rps = produce(n, "bench")
                dt = time.monotonic() - t0
                stop.set()
                if path:
                    th.join()
                sv = cpu_seconds(n.proc.pid) - c0
                res[path].append(rps)
                if path == "/metrics":
                    sv_cpu.append((sv, count[0], dt))
                print("round %d scrape=%s: %.0f records/s (%d scrapes, %.0f/s; "
                      "supervisor %.0f ms of CPU)"
                      % (r, path, rps, count[0], count[0] / dt, sv * 1000),
                      flush=True)
        off, on, nothing = (statistics.median(res[m]) for m in modes)
        print("median: %.0f records/s without scraping, %.0f with /metrics, "
              "%.0f with a 404" % (off, on, nothing))
        cpu = sum(c for c, _, _ in sv_cpu)
        scrapes = sum(k for _, k, _ in sv_cpu) or 1
        secs = sum(d for _, _, d in sv_cpu) or 1
        print("the supervisor's CPU while scraped: %.3f ms per scrape, %.2f%% "
              "of one core at the rate scraped" % (cpu * 1000 / scrapes,
                                                   100.0 * cpu / secs))
        print("collection (/metrics against 404): %+.2f%%; the scraping "
              "client (404 against none): %+.2f%%; both (/metrics against "
              "none): %+.2f%%" % (100.0 * (on - nothing) / nothing,
                                  100.0 * (nothing - off) / off,
                                  100.0 * (on - off) / off))
    finally:
        n.stop()
