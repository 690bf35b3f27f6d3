"""runnelctl restart --role ROLE [--rolling] under load.

A single node with num.network.threads=2: an idempotent acks=all producer and a
consumer run at full speed in threads while `runnelctl restart --role all
--rolling` runs three times, then `runnelctl restart --role network` (all network
workers at once). Each command succeeds, every worker gets a new pid, the
clients never see a refused connection (librdkafka error callbacks and log lines
counted), and nothing acknowledged is lost or duplicated. The throughput dip and
the durations are printed as TAP diagnostics. A requested restart counts in
runnel_worker_requested_restarts_total as well as in runnel_worker_restarts_total.
Then three nodes with an RF=3 topic (min.insync.replicas=2): each node in turn
restarted --role all --rolling under the same load, with the same checks.
"""
import json
import os
import re
import subprocess
import time

from confluent_kafka.admin import AdminClient, NewTopic

from prometheus_client.parser import text_string_to_metric_families

from rncluster import read_partitions
from rnload import ClientErrors, Load, rate
from rntest import RUNNELCTL, Cluster, Node, Tap, TempDir, wait_for

t = Tap()
errors = ClientErrors()
TOPIC, PARTS = "roll", 4


def read_all(bootstrap, expect, timeout=120):
    return read_partitions(bootstrap, TOPIC, PARTS, expect, timeout,
                           group="roll-check")


def restart(node, *args):
    t0 = time.monotonic()
    r = subprocess.run([RUNNELCTL, "-s", node.sock, "restart"] + list(args) +
                       ["--json"], capture_output=True, text=True, timeout=300)
    t1 = time.monotonic()
    try:
        js = json.loads(r.stdout)
    except ValueError:
        js = None
    return r, js, t0, t1


def metric(node, name, role):
    r = node.ctl("metrics")
    m = re.search(r'^%s\{role="%s"\} (\d+)' % (name, role), r.stdout, re.M)
    return int(m.group(1)) if m else None


with TempDir() as tmp:
    n = Node(tmp, props={"num.network.threads": "2",
                         "log.cleaner.enable": "true"})
    n.start()
    try:
        t.ok(n.wait_running() is not None, "node is up")
        admin = AdminClient({"bootstrap.servers": n.bootstrap})
        admin.create_topics([NewTopic(TOPIC, PARTS, 1)])[TOPIC].result(30)
        names = sorted(n.workers())
        t.diag("workers: %s" % ", ".join(names))

        # usage errors and privilege as `restart WORKER`
        r = n.ctl("restart", "--role", "nonesuch")
        t.ok(r.returncode != 0 and "no such role" in r.stderr,
             "an unknown role is refused: %s" % r.stderr.strip())
        r = n.ctl("restart", "--rolling")
        t.ok(r.returncode == 2, "--rolling without --role is a usage error")

        errors.capture(os.path.join(tmp, "clients.log"))
        load = Load(n.bootstrap, errors, TOPIC, PARTS, "roll-reader")
        load.start()
        wait_for(lambda: len(load.acked) > 20000, 60)
        time.sleep(3)
        b1 = time.monotonic()
        time.sleep(3)
        b0 = b1 - 3
        base_p, base_c = rate(load.ack_t, b0, b1 + 3), rate(load.seen_t, b0, b1 + 3)
        t.diag("before: %.0f records/s acknowledged, %.0f records/s consumed"
               % (base_p, base_c))

        for rnd in range(1, 4):
            before = {k: w["pid"] for k, w in n.workers().items()}
            r, js, t0, t1 = restart(n, "--role", "all", "--rolling")
            t.ok(r.returncode == 0 and js and js.get("ok"),
                 "rolling restart %d of all succeeds%s"
                 % (rnd, "" if r.returncode == 0 else ": " + r.stderr.strip()))
            after = {k: w["pid"] for k, w in n.workers().items()}
            t.ok(set(after) == set(before) and
                 all(after[k] and after[k] != before[k] for k in before),
                 "round %d: every worker has a new pid" % rnd)
            if js:
                t.eq([w["name"] for w in js["workers"]][-1], "controller",
                     "round %d: the controller is restarted last" % rnd)
                t.diag("round %d: %s" % (rnd, ", ".join(
                    "%s %d ms" % (w["name"], w["ms"]) for w in js["workers"])))
            dp, dc = rate(load.ack_t, t0, t1), rate(load.seen_t, t0, t1)
            seen = len(load.acked)
            t.ok(wait_for(lambda: len(load.acked) > seen + 1000, 20),
                 "round %d: the producer's records are acknowledged again" % rnd)
            t.diag("round %d: %.2f s (supervisor: %s ms); during it %.0f acks/s "
                   "(%.0f%% of before), %.0f consumed/s (%.0f%% of before)"
                   % (rnd, t1 - t0, js and js.get("duration_ms"), dp,
                      100 * dp / max(base_p, 1), dc, 100 * dc / max(base_c, 1)))
            time.sleep(2)

        # every network worker at once: the listeners stay open meanwhile
        before = {k: w["pid"] for k, w in n.workers().items()}
        r, js, t0, t1 = restart(n, "--role", "network")
        t.ok(r.returncode == 0 and js and js.get("ok") and
             not js.get("rolling"), "restart --role network succeeds")
        after = {k: w["pid"] for k, w in n.workers().items()}
        t.ok(all(after[k] != before[k] for k in before if k.startswith("network-"))
             and all(after[k] == before[k] for k in before
                     if not k.startswith("network-")),
             "the network workers, and only they, have new pids")
        dp = rate(load.ack_t, t0, t1)
        t.diag("--role network: %.2f s; during it %.0f acks/s (%.0f%% of before)"
               % (t1 - t0, dp, 100 * dp / max(base_p, 1)))
        time.sleep(2)

        seen = len(load.acked)
        t.ok(wait_for(lambda: len(load.acked) > seen + 1000, 20),
             "after it the producer's records are acknowledged again")
        load.finish()
        failed, acked = load.failed, load.acked
        del load  # its clients go now, not after the node is killed
        refused_log = errors.log_refused()
        errors.release()
        t.eq(failed, 0, "no delivery failed")
        t.eq((errors.refused, len(refused_log)), (0, 0),
             "no client saw a refused connection (error callbacks, log lines)")
        for l in refused_log[:10]:
            t.diag(l)
        vals = read_all(n.bootstrap, len(acked))
        got = set(vals)
        t.diag("%d records acknowledged, %d read" % (len(acked), len(vals)))
        t.eq(len(set(acked) - got), 0, "no acknowledged record is lost")
        t.eq(len(vals) - len(got), 0, "no record is duplicated")

        # requested restarts are counted as such, failures apart
        for role, want in (("network", 8), ("controller", 3),
                           ("replica-fetcher", 3), ("log-cleaner", 3),
                           ("group-coordinator", 3)):
            asked = metric(n, "runnel_worker_requested_restarts_total", role)
            total = metric(n, "runnel_worker_restarts_total", role)
            t.eq((asked, total), (want, want),
                 "%s: %d requested restarts counted, and no failure" % (role, want))
        fams = [f.name for f in text_string_to_metric_families(
            n.ctl("metrics").stdout)]
        t.ok("runnel_worker_requested_restarts" in fams and
             len(fams) == len(set(fams)),
             "the exposition parses, each family once")
        log = n.logtext()
        t.eq(log.count("did not stop in time"), 0, "every worker stopped in time")
        t.eq(n.crashes(), [], "no worker died of a crash")
    finally:
        n.kill()

# Three nodes, an RF=3 topic: each node in turn restarted --role all --rolling
# while the producer and the consumer run.
with TempDir() as tmp:
    c = Cluster(tmp, 3, props={"num.network.threads": "2",
                               "offsets.topic.replication.factor": "3",
                               "broker.session.timeout.ms": "3000",
                               "broker.heartbeat.interval.ms": "300",
                               "replica.lag.time.max.ms": "3000"})
    c.start()
    try:
        t.ok(c.wait_running(), "three nodes are up")
        admin = AdminClient({"bootstrap.servers": c.bootstrap})
        admin.create_topics([NewTopic(TOPIC, PARTS, 3, config={
            "min.insync.replicas": "2"})])[TOPIC].result(30)
        time.sleep(2)
        refused0 = errors.refused
        errors.capture(os.path.join(tmp, "clients.log"))
        load = Load(c.bootstrap, errors, TOPIC, PARTS, "roll-reader")
        load.start()
        wait_for(lambda: len(load.acked) > 20000, 60)
        b0 = time.monotonic()
        time.sleep(3)
        base_p = rate(load.ack_t, b0, time.monotonic())
        t.diag("3 nodes, before: %.0f records/s acknowledged" % base_p)
        for node in c.nodes:
            before = {k: w["pid"] for k, w in node.workers().items()}
            r, js, t0, t1 = restart(node, "--role", "all", "--rolling")
            after = {k: w["pid"] for k, w in node.workers().items()}
            t.ok(r.returncode == 0 and js and js.get("ok") and
                 all(after.get(k) and after[k] != before[k] for k in before),
                 "node %d: rolling restart of all succeeds, every worker has a "
                 "new pid%s" % (node.node_id, "" if r.returncode == 0
                                else ": " + r.stderr.strip()))
            dp = rate(load.ack_t, t0, t1)
            t.diag("node %d: %.2f s; during it %.0f acks/s (%.0f%% of before)"
                   % (node.node_id, t1 - t0, dp, 100 * dp / max(base_p, 1)))
            seen = len(load.acked)
            t.ok(wait_for(lambda: len(load.acked) > seen + 1000, 30),
                 "node %d: the producer's records are acknowledged again"
                 % node.node_id)
        load.finish()
        failed, acked = load.failed, load.acked
        del load
        refused_log = errors.log_refused()
        errors.release()
        t.eq(failed, 0, "3 nodes: no delivery failed")
        vals = read_all(c.bootstrap, len(acked))
        got = set(vals)
        t.diag("3 nodes: %d records acknowledged, %d read" % (len(acked), len(vals)))
        t.eq(len(set(acked) - got), 0, "3 nodes: no acknowledged record is lost")
        t.eq(len(vals) - len(got), 0, "3 nodes: no record is duplicated")
        t.eq((errors.refused - refused0, len(refused_log)), (0, 0),
             "3 nodes: no client saw a refused connection")
        for l in refused_log[:10]:
            t.diag(l)
        t.eq(c.crashes(), [], "3 nodes: no worker died of a crash")
    finally:
        c.kill()

t.done()
