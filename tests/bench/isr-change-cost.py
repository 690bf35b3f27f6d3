#!/usr/bin/python3
"""What one ISR change costs, in a cluster of 30 partitions and in one of
30,000: three runneld nodes on 127.0.0.1; a topic "probe" of 30
partitions at RF=3 whose ISRs change, and (in the large run) 29,970 idle
partitions at RF=1 beside it, so only the size of the metadata differs.

Each run: the ISRs full; node 3's fetches stalled until every probe
partition it follows has left the ISR; then resumed until all are full
again. From the three nodes' /metrics before and after:
  changes     isrshrinks_total + isrexpands_total (led partitions)
  published   runnel_metadata_image_published_bytes_total: bytes the
              controller workers put into shared memory, whole (body)
              and as deltas, and their count
  taken in    runnel_request_stage_seconds{stage="metadata"}: time the
              network and fetcher workers spent taking the new images in
              (deltas applied or bodies parsed, and what follows)
and prints them per ISR change, and the ratio of the two runs. Prints
figures; never fails (exit 0). Not run by make check.

    RUNNEL_BUILDDIR=./build tests/bench/isr-change-cost.py
    (or: make bench-metadata)

Environment: BENCH_MD_LARGE (30000), BENCH_MD_SMALL (30).
"""
import os
import sys
import time
import urllib.request

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, "..", "lib"))
os.environ.setdefault("RUNNEL_BUILDDIR", os.path.abspath("build"))

from prometheus_client.parser import text_string_to_metric_families  # noqa: E402

import rntest  # noqa: E402
from rncluster import fault  # noqa: E402
from rnscale import create_topics, isr_state  # noqa: E402

LARGE = int(os.environ.get("BENCH_MD_LARGE", "30000"))
SMALL = int(os.environ.get("BENCH_MD_SMALL", "30"))
PROBE = 30
PROPS = {"broker.session.timeout.ms": "6000",
         "broker.heartbeat.interval.ms": "500",
         "replica.lag.time.max.ms": "3000"}


def say(msg):
    print(msg, flush=True)


def scrape(port):
    """{(name, frozenset(labels)): value} of one node's /metrics."""
    with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port,
                                timeout=30) as r:
        text = r.read().decode()
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, frozenset(s.labels.items()))] = s.value
    return out


def figures(ports):
    """The sums over the nodes that the run compares."""
    f = {"changes": 0.0, "body_bytes": 0.0, "delta_bytes": 0.0,
         "bodies": 0.0, "deltas": 0.0, "md_seconds": 0.0, "md_count": 0.0}
    for port in ports:
        m = scrape(port)
        f["changes"] += m.get(("kafka_server_replicamanager_isrshrinks_total",
                               frozenset()), 0)
        f["changes"] += m.get(("kafka_server_replicamanager_isrexpands_total",
                               frozenset()), 0)
        for kind, count in (("body", "bodies"), ("delta", "deltas")):
            lab = frozenset({("kind", kind)})
            f[kind + "_bytes"] += m.get(
                ("runnel_metadata_image_published_bytes_total", lab), 0)
            f[count] += m.get(
                ("runnel_metadata_images_published_total", lab), 0)
        lab = frozenset({("stage", "metadata")})
        f["md_seconds"] += m.get(("runnel_request_stage_seconds_sum", lab), 0)
        f["md_count"] += m.get(("runnel_request_stage_seconds_count", lab), 0)
    return f


def probe_isrs(bootstrap):
    st = isr_state(bootstrap, ["probe"], timeout=30)
    return [st.get(("probe", p)) for p in range(PROBE)]


def wait_probe(bootstrap, pred, timeout):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        s = probe_isrs(bootstrap)
        if all(x is not None and pred(x) for x in s):
            return True
        time.sleep(0.3)
    return False


def run(total):
    """One cluster with total partitions; the figures of one shrink and
    expand of the probe ISRs, or None."""
    with rntest.TempDir() as tmp:
        c = rntest.Cluster(tmp, 3, props=PROPS)
        ports = []
        for n in c.nodes:
            ports.append(rntest.free_port())
            n.props["metrics.listener"] = "http://127.0.0.1:%d" % ports[-1]
            n.write_config()
        c.start()
        try:
            if not c.wait_running():
                say("  %d: the nodes did not come up" % total)
                return None
            t0 = time.monotonic()
            errs = create_topics(c.bootstrap, ["probe"], PROBE, rf=3)
            idle = total - PROBE
            names = ["idle-%04d" % i for i in range((idle + 99) // 100)]
            if names:
                errs.update(create_topics(c.bootstrap, names, 100, rf=1))
            if errs:
                say("  %d: CreateTopics failed: %s" % (total,
                                                      list(errs.items())[:2]))
                return None
            if not wait_probe(c.bootstrap, lambda x: x[2] == 3, 120):
                say("  %d: the probe ISRs never filled" % total)
                return None
            say("  %d partitions: created and in sync in %.1f s" %
                (total, time.monotonic() - t0))
            time.sleep(2)
            before = figures(ports)
            fault(c.node(3), "stall-fetch", "on")
            # node 3 follows 20 of the 30 probe partitions
            shrunk = wait_probe(c.bootstrap, lambda x: x[2] == 2 or x[0] == 3,
                                60)
            fault(c.node(3), "stall-fetch", "off")
            full = wait_probe(c.bootstrap, lambda x: x[2] == 3, 60)
            time.sleep(2)
            after = figures(ports)
            if not shrunk or not full:
                say("  %d: the ISRs did not shrink and grow back" % total)
                return None
            return {k: after[k] - before[k] for k in after}
        finally:
            for n in c.nodes:
                n.stop()


def show(total, d):
    ch = d["changes"] or 1
    say("  %6d partitions: %d ISR changes; published %d deltas (%d B) and "
        "%d bodies (%d B): %.0f B per change; workers took images in %d "
        "times, %.1f us per change" %
        (total, d["changes"], d["deltas"], d["delta_bytes"], d["bodies"],
         d["body_bytes"], (d["delta_bytes"] + d["body_bytes"]) / ch,
         d["md_count"], d["md_seconds"] * 1e6 / ch))


say("isr-change-cost: 3 nodes; %d probe partitions at RF=3 shrink and expand "
    "their ISRs; %d and %d partitions in all" % (PROBE, SMALL, LARGE))
res = {}
for total in (SMALL, LARGE):
    d = run(total)
    if d is not None:
        show(total, d)
        res[total] = d
if SMALL in res and LARGE in res:
    s, g = res[SMALL], res[LARGE]

    def per(d, k):
        return d[k] / (d["changes"] or 1)
    bs = per(s, "delta_bytes") + per(s, "body_bytes")
    bg = per(g, "delta_bytes") + per(g, "body_bytes")
    ts, tg = per(s, "md_seconds"), per(g, "md_seconds")
    say("  ratio %d/%d partitions: bytes per change %.2f, worker time per "
        "change %.2f" % (LARGE, SMALL, bg / bs if bs else 0,
                         tg / ts if ts else 0))
