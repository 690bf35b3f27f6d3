"""Client quotas: runnel-configs for users and clients, stored in the
metadata log (they survive a restart), producer_byte_rate enforced."""
import os
import threading
import time

from rntest import BUILDDIR, Node, Tap, TempDir, run_tool, wait_for

CONFIGS = os.path.join(BUILDDIR, "runnel-configs")
TOPICS = os.path.join(BUILDDIR, "runnel-topics")
RATE = 1048576
# Kafka's sampled rate lets a new client's sensor run ahead at first: it
# divides by at least quota.window.num - 1 windows (10 s), so the first
# ~10 MiB go at once. After that the rate is held over the quota window
# (quota.window.num = 11 samples of 1 s), whose oldest sample leaves
# every 11 s: a client that always has data sends a burst then, and a
# trickle until the next (the per-second figures are printed). So the
# quota is judged after BURST over MEASURE seconds, three whole quota
# windows, which hold one burst each, as Kafka's own sensor sees it.
BURST, MEASURE = 4, 33
SECS = BURST + MEASURE

t = Tap()


def cfg(node, *args):
    r = run_tool(CONFIGS, node.bootstrap, *args)
    if r.returncode:
        t.diag(r.stderr)
    return r


def produce(node, client_id, secs, out, key, stats=None):
    """Produce as fast as possible; acked bytes per second of the run."""
    from confluent_kafka import Producer
    conf = {"bootstrap.servers": node.bootstrap, "client.id": client_id,
            "linger.ms": 5, "batch.size": 65536, "acks": 1}
    if stats is not None:
        conf["statistics.interval.ms"] = 500
        conf["stats_cb"] = lambda s: stats.append(s)
    p = Producer(conf)
    val = b"x" * 1000
    acked = [0, []]

    def cb(err, msg):
        if err is None:
            acked[0] += len(msg.value())
            acked[1].append((time.monotonic(), len(msg.value())))
    end = time.monotonic() + secs
    while time.monotonic() < end:
        try:
            p.produce("q", val, on_delivery=cb)
        except BufferError:
            p.poll(0.01)
        p.poll(0)
    p.flush(10)
    out[key] = acked[1]


def rate(samples, t0, t1):
    return sum(n for (ts, n) in samples if t0 <= ts < t1) / (t1 - t0)


with TempDir() as tmp:
    n = Node(tmp)
    n.start()
    try:
        t.ok(n.wait_running() is not None, "node is running")
        t.ok(wait_for(lambda: run_tool(TOPICS, n.bootstrap, "--create", "--topic", "q",
                                       "--partitions", "4", "--if-not-exists").returncode == 0, 20),
             "topic q created")
        t.eq(cfg(n, "--alter", "--entity-type", "clients", "--entity-name", "slow",
                 "--add-config", "producer_byte_rate=%d" % RATE).returncode, 0,
             "producer_byte_rate set for client slow")
        t.eq(cfg(n, "--alter", "--entity-type", "users", "--entity-default",
                 "--add-config", "request_percentage=50").returncode, 0,
             "request_percentage stored for the default user")
        r = cfg(n, "--alter", "--entity-type", "clients", "--entity-name", "x",
                "--add-config", "bogus_rate=1")
        t.ok(r.returncode != 0 and "INVALID_REQUEST" in r.stderr, "an unknown key: INVALID_REQUEST")
        r = cfg(n, "--describe", "--entity-type", "clients")
        t.ok("client-id 'slow' are producer_byte_rate=1048576" in r.stdout,
             "describe shows slow's quota: %r" % r.stdout)
        r = cfg(n, "--describe", "--entity-type", "users", "--entity-default")
        t.ok("user-principal the default are request_percentage=50" in r.stdout,
             "describe shows the default user's: %r" % r.stdout)

        n.stop()
        n.start()
        t.ok(n.wait_running() is not None, "node restarted")
        r = cfg(n, "--describe", "--entity-type", "clients", "--entity-name", "slow")
        t.ok("producer_byte_rate=1048576" in r.stdout, "the quota survived the restart")

        if not os.environ.get("RN_QUOTA_SKIP_ENFORCE"):
            # 4 throttled connections and an unthrottled one for SECS; one
            # throttled producer then goes on while the quota is deleted
            out, stats = {}, []
            ths = [threading.Thread(target=produce, args=(n, "slow", SECS, out, "slow%d" % i,
                                                           stats if i == 0 else None))
                   for i in range(4)]
            ths.append(threading.Thread(target=produce, args=(n, "fast", SECS, out, "fast")))
            start = time.monotonic()
            for th in ths:
                th.start()
            for th in ths:
                th.join()
            t0, t1 = start + BURST, start + SECS
            slow = sum(rate(out["slow%d" % i], t0, t1) for i in range(4))
            whole = sum(rate(out["slow%d" % i], start, t1) for i in range(4))
            fast = rate(out["fast"], t0, t1)
            t.diag("over %d s from %d s: slow %.0f B/s (%.3f of the quota; "
                   "%.3f over the whole %d s, the first burst included), "
                   "fast %.0f B/s" % (MEASURE, BURST, slow, slow / RATE,
                                      whole / RATE, SECS, fast))
            t.diag("slow, MiB each second: %s" % " ".join(
                "%.1f" % (sum(rate(out["slow%d" % i], start + k, start + k + 1)
                              for i in range(4)) / RATE) for k in range(SECS)))
            t.ok(abs(slow - RATE) <= 0.1 * RATE,
                 "4 slow producers stay within 10%% of 1 MiB/s over %d s: %.0f B/s" % (MEASURE, slow))
            t.ok(fast > 5 * slow, "the unthrottled producer runs > 5x faster: %.0f" % fast)
            import json
            thr = max((b.get("throttle", {}).get("max", 0)
                       for s in stats for b in json.loads(s).get("brokers", {}).values()), default=0)
            t.ok(thr > 0, "librdkafka statistics show throttling: max %d ms" % thr)

            out = {}
            th = threading.Thread(target=produce, args=(n, "slow", 12, out, "after"))
            th.start()
            time.sleep(6)  # throttled by now
            t.eq(cfg(n, "--alter", "--entity-type", "clients", "--entity-name", "slow",
                     "--delete-config", "producer_byte_rate").returncode, 0, "quota deleted")
            gone = time.monotonic()
            th.join()
            s = out["after"]
            before = rate(s, gone - 4, gone)
            # acked bytes per 100 ms step after the delete: the first step
            # whose following second runs at over 5x the quota
            lifted = next((k / 10.0 for k in range(0, 40)
                           if rate(s, gone + k / 10.0, gone + k / 10.0 + 1) > 5 * RATE), None)
            t.diag("throttled %.0f B/s before the delete; over 5x the quota %s s after it"
                   % (before, lifted))
            # far below the unthrottled rate (a sensor's window rolling
            # over lets it run ahead for a moment, as Kafka's does)
            t.ok(before <= 3 * RATE, "throttled before the delete: %.0f B/s" % before)
            t.ok(lifted is not None and lifted <= 1.0,
                 "the limit lifts within a second of the delete (%s s)" % lifted)
    finally:
        n.stop()

t.done()
