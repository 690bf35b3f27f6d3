"""The process model: one supervisor, its workers, per-worker restart, clean stop."""
import os
import signal
import time

from rntest import Node, Tap, TempDir, wait_for

t = Tap()

with TempDir() as tmp:
    n = Node(tmp, props={"num.network.threads": "3", "num.replica.fetchers": "2"})
    n.start()
    try:
        st = n.wait_running()
        t.ok(st is not None, "node comes up with every worker running")
        ws = {w["name"]: w for w in st["workers"]}
        t.eq(sorted(ws), ["controller", "group-coordinator", "log-cleaner-0",
                          "network-0", "network-1", "network-2",
                          "replica-fetcher-0", "replica-fetcher-1"],
             "one controller, num.network.threads network, num.replica.fetchers "
             "fetchers, one log cleaner, one group coordinator")
        t.eq({w["role"] for w in st["workers"]},
             {"controller", "network", "replica-fetcher", "log-cleaner",
              "group-coordinator"}, "roles are named")
        t.eq({name: w["duties"] for name, w in ws.items() if w["duties"]},
             {"network-0": ["storage"]},
             "status names the one worker with the storage duty (retention, "
             "flush, ISR lag check, high-watermark checkpoint)")
        ctl_text = n.ctl("status").stdout
        t.ok(any(l.startswith("network-0") and l.rstrip().endswith("storage")
                 for l in ctl_text.splitlines()),
             "runnelctl status shows it in its DUTIES column")
        t.eq(st["node"]["node_id"], 1, "status shows the node id")
        t.eq(st["node"]["roles"], "broker,controller", "status shows the roles")
        t.ok(any(str(n.port) in l for l in st["node"]["listeners"]),
             "status shows the listeners")
        st2 = wait_for(lambda: (lambda s: s if s and s["node"]["metadata_image_version"] >= 1
                                and s["node"]["cluster_id"] else None)(n.status()), 10)
        t.ok(st2 is not None, "the controller published the metadata image with a cluster id")

        # every worker is its own process, titled with its role and index
        for name, w in sorted(ws.items()):
            with open("/proc/%d/cmdline" % w["pid"], "rb") as f:
                title = f.read().replace(b"\0", b" ").decode()
            t.ok(name in title and w["pid"] != n.proc.pid,
                 "%s runs as pid %d titled '%s'" % (name, w["pid"], title.strip()))

        # network workers said hello to the controller over their ring
        t.ok(wait_for(lambda: all(w["hellos"] >= 1 for w in n.workers().values()
                                  if w["role"] != "controller"), 5),
             "every worker reached the controller through shared memory")

        # kill -9 each worker in turn: back within 2 s, others untouched
        for name in sorted(ws):
            before = n.workers()
            old = before[name]
            os.kill(old["pid"], signal.SIGKILL)
            t0 = time.monotonic()
            after = wait_for(lambda: (lambda w: w if w.get(name, {}).get("state") == "running"
                                      and w[name]["pid"] != old["pid"] else None)(n.workers()), 5)
            took = time.monotonic() - t0
            t.ok(after and took < 2.0,
                 "%s killed with SIGKILL is running again with a new pid in %.2f s"
                 % (name, took))
            if not after:
                continue
            t.eq(after[name]["restarts"], old["restarts"] + 1,
                 "%s restarts counter incremented" % name)
            others = {k: v["pid"] for k, v in after.items() if k != name}
            t.eq(others, {k: v["pid"] for k, v in before.items() if k != name},
                 "killing %s left every other worker's pid unchanged" % name)

        # runnelctl restart WORKER: graceful, counted, nobody else touched
        before = n.workers()
        r = n.ctl("restart", "network-1")
        t.eq(r.returncode, 0, "runnelctl restart network-1 succeeds")
        after = wait_for(lambda: (lambda w: w if w["network-1"]["pid"] != before["network-1"]["pid"]
                                  and w["network-1"]["state"] == "running" else None)(n.workers()), 5)
        t.ok(after is not None, "network-1 restarted with a new pid")
        if after:
            t.eq(after["network-1"]["restarts"], before["network-1"]["restarts"] + 1,
                 "operator restart is counted")
            t.eq(after["controller"]["pid"], before["controller"]["pid"],
                 "the controller kept its pid")
        r = n.ctl("restart", "no-such-worker")
        t.ok(r.returncode != 0 and "no such worker" in r.stderr,
             "restart of an unknown worker is an error: %s" % r.stderr.strip())

        # SIGTERM: ordered stop, exit 0, nothing left behind
        pids = n.pids()
        t.ok(len(pids) == 9, "supervisor and eight workers alive before stop (%d)" % len(pids))
        t0 = time.monotonic()
        rc = n.stop()
        t.eq(rc, 0, "SIGTERM stops the node with exit status 0 in %.2f s"
             % (time.monotonic() - t0))
        alive = [p for p in pids if os.path.exists("/proc/%d" % p)
                 and open("/proc/%d/stat" % p).read().split()[2] != "Z"]
        t.eq(alive, [], "no runneld process is left after SIGTERM")
        t.ok(not os.path.exists(n.sock), "the control socket is removed")
        log = n.logtext()
        i_net = log.find("network-0 exited")
        i_ctl = log.find("controller exited")
        t.ok(0 <= i_net < i_ctl, "network workers stop before the controller")
        t.ok(all(l.startswith("<") for l in log.splitlines() if l),
             "every stderr log line carries a <N> priority prefix")

        # runnelctl stop and a supervisor SIGKILL leave nothing either
        n.start()
        t.ok(n.wait_running() is not None, "node restarts on the same log dir")
        r = n.ctl("stop")
        t.eq(r.returncode, 0, "runnelctl stop is accepted")
        try:
            rc = n.proc.wait(15)
        except Exception:
            rc = None
        t.eq(rc, 0, "runnelctl stop stops the node with status 0")

        n.start()
        st = n.wait_running()
        wpids = [w["pid"] for w in st["workers"]] if st else []
        os.kill(n.proc.pid, signal.SIGKILL)
        n.proc.wait()
        gone = wait_for(lambda: not any(os.path.exists("/proc/%d" % p) for p in wpids), 5)
        t.ok(gone, "workers die with a SIGKILLed supervisor (no orphans)")
        n.start()
        t.ok(n.wait_running() is not None,
             "a node starts again after its supervisor was SIGKILLed (stale socket, lock released)")
    finally:
        n.kill()

t.done()
