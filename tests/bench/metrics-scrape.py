"""Produce throughput with and without /metrics scraped 100 times a second.
Usage: PYTHONPATH=tests/lib RUNNEL_BUILDDIR=$PWD/build python3 tests/bench/metrics-scrape.py [RECORDS] [ROUNDS] [PATH]
Runs are interleaved (off, on, off, on, ...) so drift hits both; prints each
run and the medians."""
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
# another path (a 404 that collects nothing) isolates the client's share
PATH = sys.argv[3] if len(sys.argv) > 3 else "/metrics"


def scraper(port, stop, count):
    url = "http://127.0.0.1:%d%s" % (port, PATH)
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
        res = {False: [], True: []}
        for r in range(ROUNDS):
            for scrape in (False, True):
                stop, count = threading.Event(), [0]
                th = threading.Thread(target=scraper, args=(mport, stop, count))
                if scrape:
                    th.start()
                t0 = time.monotonic()
                rps = produce(n, "bench")
                dt = time.monotonic() - t0
                stop.set()
                if scrape:
                    th.join()
                res[scrape].append(rps)
                print("round %d scrape=%s: %.0f records/s (%d scrapes, %.0f/s)"
                      % (r, scrape, rps, count[0], count[0] / dt), flush=True)
        off, on = statistics.median(res[False]), statistics.median(res[True])
        print("median: %.0f records/s without, %.0f with scraping: %+.2f%%"
              % (off, on, 100.0 * (on - off) / off))
    finally:
        n.stop()
