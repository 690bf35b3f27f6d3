"""Restart policy: backoff, crash-loop give-up, and a failed controller stopping the node.

Uses the test fault fault.worker.exit.on.start, which makes the named worker
exit with status 1 right after it starts (off by default).
"""
import os
import time

from rntest import Node, Tap, TempDir, wait_for

t = Tap()

with TempDir() as tmp:
    n = Node(tmp, name="loop", props={
        "fault.worker.exit.on.start": "network-1",
        "worker.restart.backoff.initial.ms": "50",
        "worker.restart.backoff.max.ms": "200",
        "worker.restart.max.failures": "3",
        "worker.restart.failure.window.ms": "60000",
    })
    n.start()
    try:
        failed = wait_for(lambda: (lambda w: w if w.get("network-1", {}).get("state") == "failed"
                                   else None)(n.workers()), 10)
        t.ok(failed, "a worker that keeps crashing is given up on")
        if failed:
            t.eq(failed["network-1"]["restarts"], 3,
                 "after worker.restart.max.failures restarts")
            t.eq(failed["network-1"]["pid"], 0, "and is not running")
            # under load a worker may still be starting when network-1 is
            # given up on (its three restarts take some 350 ms)
            others = wait_for(lambda: (lambda w: w if all(
                x["state"] == "running" for k, x in w.items() if k != "network-1")
                else None)(n.workers()), 10)
            t.ok(others, "the other workers keep running: %s" % (
                {k: w["state"] for k, w in (others or n.workers()).items()},))
            t.eq(failed["network-0"]["restarts"], 0, "the other workers were never restarted")
        log = n.logtext()
        t.ok("restarting in 50 ms" in log and "restarting in 100 ms" in log
             and "restarting in 200 ms" in log, "backoff doubles: 50, 100, 200 ms")
        t.ok("giving up on it" in log, "the give-up is logged")
        t.ok(n.proc.poll() is None, "the node keeps running without that worker")
        t.eq(n.stop(), 0, "and still stops cleanly")
    finally:
        n.kill()

    # the controller crash-looping takes the node down with a non-zero status
    n = Node(tmp, name="ctl", props={
        "fault.worker.exit.on.start": "controller",
        "worker.restart.backoff.initial.ms": "20",
        "worker.restart.max.failures": "2",
    })
    n.start()
    try:
        t0 = time.monotonic()
        try:
            rc = n.proc.wait(15)
        except Exception:
            rc = None
        t.ok(rc is not None and rc != 0,
             "a controller that crash-loops stops the node with status %r in %.1f s"
             % (rc, time.monotonic() - t0))
        t.ok("the controller failed: stopping the node" in n.logtext(),
             "and says why")
        t.ok(not os.path.exists(n.sock), "leaving no control socket behind")
    finally:
        n.kill()

t.done()
