#!/usr/bin/python3
"""Produce and consume throughput over SSL beside PLAINTEXT, on one runneld
node with both listeners, with runnel-perf (librdkafka) as the client:
BENCH_TLS_RECORDS (1,000,000) records of BENCH_TLS_SIZE (1024) bytes,
acks=1, linger 5 ms, one partition; then a consumer pass over them. The
two protocols alternate (PLAINTEXT, SSL, PLAINTEXT, SSL) so drift shows.
Beside each rate, the broker's CPU per GB moved: every thread of the
supervisor and the workers (/proc/PID/task/TID/schedstat) over the run,
divided by the records' bytes. Prints figures; never passes or fails; not
part of make check."""
import json
import os
import subprocess
import sys

from rnproc import cpu_ns
from rntest import BUILDDIR, Node, TempDir, free_port
from rntls import Pki

RECORDS = int(os.environ.get("BENCH_TLS_RECORDS", "1000000"))
SIZE = int(os.environ.get("BENCH_TLS_SIZE", "1024"))
PERF = os.path.join(BUILDDIR, "runnel-perf")


def perf(role, bootstrap, topic, extra, node):
    """runnel-perf's figures, with the broker's CPU seconds per GB."""
    pids = node.pids()
    cpu0 = cpu_ns(pids) / 1e9
    res = run_perf(role, bootstrap, topic, extra)
    if res is not None:
        res["cpu_s_per_gb"] = (cpu_ns(pids) / 1e9 - cpu0) / (
            RECORDS * SIZE / 1e9)
    return res


def run_perf(role, bootstrap, topic, extra):
    args = [PERF, role, "--bootstrap-server", bootstrap, "--topic", topic,
            "--num-records", str(RECORDS), "--print-json"] + extra
    if role == "producer":
        args += ["--record-size", str(SIZE), "--acks", "1", "--linger-ms", "5"]
    else:
        args += ["--group", "bench-" + topic, "--timeout-ms", "60000"]
    r = subprocess.run(args, capture_output=True, text=True, timeout=900)
    for line in r.stdout.splitlines()[::-1]:
        if line.startswith("{"):
            return json.loads(line)
    sys.stderr.write(r.stdout[-500:] + r.stderr[-500:])
    return None


with TempDir() as tmp:
    pki = Pki(os.path.join(tmp, "pki"))
    ps = free_port()
    n = Node(tmp, props={"num.partitions": "1"})
    n.props.update({
        "listeners": "PLAINTEXT://127.0.0.1:%d,SSL://127.0.0.1:%d,"
                     "CONTROLLER://127.0.0.1:%d" % (n.port, ps, n.ctl_port),
        "advertised.listeners": "PLAINTEXT://127.0.0.1:%d,SSL://127.0.0.1:%d"
                                % (n.port, ps),
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,"
                                          "CONTROLLER:PLAINTEXT",
        "ssl.keystore.type": "PEM", "ssl.keystore.location": pki.keystore,
    })
    n.write_config()
    n.start()
    try:
        if n.wait_running() is None:
            sys.exit("node did not start")
        sslx = ["-X", "security.protocol=SSL", "-X", "ssl.ca.location=" + pki.ca]
        rows = []
        for rnd in range(2):
            for name, bs, extra in (("PLAINTEXT", n.bootstrap, []),
                                    ("SSL", "127.0.0.1:%d" % ps, sslx)):
                topic = "bench-%s-%d" % (name.lower(), rnd)
                p = perf("producer", bs, topic, extra, n)
                c = perf("consumer", bs, topic, extra, n)
                rows.append((name, rnd, p, c))
        print("# %d records of %d B, acks=1, linger 5 ms, one partition; "
              "TLS %s" % (RECORDS, SIZE, "fallback (no kTLS on this kernel)"
                          if not os.path.exists("/sys/module/tls") else
                          "(kernel tls module present)"))
        print("%-10s %5s %13s %11s %9s %13s %11s %9s" % (
            "protocol", "round", "produce MB/s", "records/s", "CPU s/GB",
            "consume MB/s", "records/s", "CPU s/GB"))
        for name, rnd, p, c in rows:
            def f(d, k, fmt="%.1f"):
                return fmt % d[k] if d and k in d else "-"
            print("%-10s %5d %13s %11s %9s %13s %11s %9s" % (
                name, rnd, f(p, "mb_per_sec"), f(p, "records_per_sec"),
                f(p, "cpu_s_per_gb", "%.2f"), f(c, "mb_per_sec"),
                f(c, "records_per_sec"), f(c, "cpu_s_per_gb", "%.2f")))
    finally:
        n.stop()
