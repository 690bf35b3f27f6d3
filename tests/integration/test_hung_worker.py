"""Hang detection: a worker that stops heartbeating (SIGSTOP) is killed and
restarted after worker.heartbeat.timeout.ms; when the whole node was stopped
(supervisor included), nobody is called hung for the time they all slept."""
import os
import signal
import time

from rntest import Node, Tap, TempDir, wait_for

t = Tap()

with TempDir() as tmp:
    n = Node(tmp, props={"worker.heartbeat.timeout.ms": "1000"})
    n.start()
    try:
        st = n.wait_running()
        t.ok(st is not None, "node is up")
        w = n.workers()["network-1"]
        os.kill(w["pid"], signal.SIGSTOP)
        t0 = time.monotonic()
        back = wait_for(lambda: (lambda x: x if x["network-1"]["pid"] != w["pid"] and
                                 x["network-1"]["state"] == "running" else None)(n.workers()), 10)
        t.ok(back, "a stopped (hung) worker is killed and restarted (%.1f s)"
             % (time.monotonic() - t0))
        t.ok("network-1 has not heartbeaten" in n.logtext(), "and the log says why")

        before = {k: v["pid"] for k, v in n.workers().items()}
        pids = n.pids()
        for p in pids:
            os.kill(p, signal.SIGSTOP)
        time.sleep(2.5)
        for p in pids:
            os.kill(p, signal.SIGCONT)
        time.sleep(2.0)
        after = {k: v["pid"] for k, v in n.workers().items()}
        t.eq(after, before, "after the whole node was stopped for 2.5 s no worker was restarted")
        t.eq(n.crashes(), [], "no worker died of a crash")
    finally:
        n.kill()

t.done()
