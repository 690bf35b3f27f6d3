"""runnelctl status and top as an operator reads them: per worker the CPU
time, resident memory, open client connections, requests answered and how
its last run ended; top shows the rates between two samples. A
confluent-kafka producer runs while top samples, and a network worker is
SIGKILLed to show its last exit."""
import os
import re
import signal
import subprocess
import threading
import time

from confluent_kafka import Producer

from rntest import RUNNELCTL, Node, Tap, TempDir, wait_for

t = Tap()


def produce(bootstrap, stop):
    p = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0,
                  "acks": "1"})
    while not stop.is_set():
        p.produce("top", b"x" * 100)
        p.poll(0)
        # one request per record: requests per second to see
        p.flush(5)
    p.flush(10)


with TempDir() as tmp:
    n = Node(tmp)
    n.start()
    try:
        st = n.wait_running()
        t.ok(st is not None, "node is up")
        ws = st["workers"]
        t.ok(all(w["rss_bytes"] > 1 << 20 and w["cpu_ms"] >= 0 and
                 isinstance(w["connections"], int) and
                 isinstance(w["requests"], int) and w["last_exit"] == ""
                 for w in ws),
             "status --json: every worker has its RSS (> 1 MiB), CPU time, "
             "connections, requests, and no last exit yet")

        stop = threading.Event()
        th = threading.Thread(target=produce, args=(n.bootstrap, stop))
        th.start()
        try:
            conns = wait_for(lambda: sum(w["connections"] for w in n.status()["workers"]
                                         if w["role"] == "network") or None, 10)
            t.ok(conns and conns >= 1,
                 "the producer's connections show on the network workers (%s)" % conns)
            r = subprocess.run([RUNNELCTL, "-s", n.sock, "top", "--interval", "700",
                                "--count", "3"], capture_output=True, text=True,
                               timeout=30)
        finally:
            stop.set()
            th.join(30)
        t.eq(r.returncode, 0, "runnelctl top --count 3 exits 0")
        screens = r.stdout.split("NAME ")
        t.eq(len(screens) - 1, 3, "three screens, each with its heading")
        rows = {}
        for line in screens[-1].splitlines()[1:]:
            f = line.split()
            if len(f) >= 8:
                rows[f[0]] = f
        t.eq(sorted(rows), sorted(w["name"] for w in ws),
             "the last screen has a row per worker: %s" % sorted(rows))
        net = [f for name, f in rows.items() if name.startswith("network-")]
        rps = sum(float(f[6]) for f in net)
        cpu = sum(float(f[3]) for f in net)
        t.ok(rps > 10, "the network workers answer requests per second "
             "while the producer runs (%.0f/s)" % rps)
        t.ok(cpu > 0, "and use CPU (%.1f%%)" % cpu)

        text = n.ctl("status").stdout
        t.ok(re.search(r"CPU s +RSS MiB +CONNS", text) and "LAST EXIT" in text,
             "runnelctl status shows the columns too")

        old = n.workers()["network-0"]
        os.kill(old["pid"], signal.SIGKILL)
        back = wait_for(lambda: (lambda w: w if w["pid"] not in (0, old["pid"]) and
                                 w["state"] == "running" else None)(
            n.workers()["network-0"]), 15)
        t.ok(back and back["last_exit"] == "killed by Killed" and
             back["restarts"] == 1,
             "after a SIGKILL network-0's last exit says so: %r" % (
                 back and back["last_exit"],))
        t.ok("killed by Killed" in n.ctl("status").stdout,
             "and runnelctl status prints it")
        t.eq([w["last_exit"] for w in n.status()["workers"]
              if w["name"] != "network-0"], [""] * (len(ws) - 1),
             "the other workers have none")
    finally:
        n.kill()

t.done()
