"""ISR metrics in a 3-node cluster: a follower that stops fetching is shrunk
out of the ISR, which raises the leader's isrshrinks_total and
underreplicatedpartitions; when it fetches again, throttled by the follower
replication quota, its replicafetchermanager_maxlag shows how far behind it
is until it has caught up; the expand raises isrexpands_total and lowers
underreplicatedpartitions."""
import time
import urllib.request

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, ConfigResource
from prometheus_client.parser import text_string_to_metric_families

from rncluster import create_topic, fault, wait_state
from rntest import Cluster, Tap, TempDir, free_port, wait_for

RM = "kafka_server_replicamanager_"
PROPS = {"broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "300",
         "replica.lag.time.max.ms": "2000"}

t = Tap()


MAXLAG = "kafka_server_replicafetchermanager_maxlag"
RATE = 50 * 1024        # the follower's catch-up: bytes/s
BACKLOG = 300           # records of 1000 bytes while it is stalled


def metric(port, name, **labels):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port,
                                    timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return None
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.name == name and s.labels == labels:
                return s.value
    return None


with TempDir() as tmp:
    c = Cluster(tmp, 3, props=PROPS)
    mports = {}
    for n in c.nodes:
        mports[n.node_id] = free_port()
        n.props["metrics.listener"] = "http://127.0.0.1:%d" % mports[n.node_id]
        n.write_config()
    c.start()
    try:
        t.ok(c.wait_running(), "three nodes are up")
        # throttled only while out of the ISR (a rate must be set, too)
        create_topic(c.bootstrap, "isr", 1, 2,
                     {"follower.replication.throttled.replicas": "*"})
        st = wait_state(c.bootstrap, "isr", lambda l, r, i: l > 0 and len(i) == 2)
        t.ok(st is not None, "RF=2 partition with both replicas in sync: %s" % (st,))
        leader, replicas, _ = st
        follower = [r for r in replicas if r != leader][0]
        lp = mports[leader]
        p = Producer({"bootstrap.servers": c.bootstrap})
        p.produce("isr", b"warm-up")
        t.eq(p.flush(20), 0, "a record is written")
        t.ok(wait_for(lambda: metric(lp, RM + "underreplicatedpartitions") == 0, 10),
             "the leader reports no under-replicated partition")
        shrinks0 = metric(lp, RM + "isrshrinks_total")
        expands0 = metric(lp, RM + "isrexpands_total")
        t.ok(shrinks0 is not None and expands0 is not None,
             "the leader reports isrshrinks_total and isrexpands_total")

        t.eq(fault(c.node(follower), "stall-fetch", "on").returncode, 0,
             "the follower's fetches are stalled (test fault)")
        st = wait_state(c.bootstrap, "isr", lambda l, r, i: i == [leader], 20)
        t.ok(st is not None, "the follower left the ISR")
        t.ok(wait_for(lambda: metric(lp, RM + "isrshrinks_total") == shrinks0 + 1, 10),
             "isrshrinks_total rose by 1")
        t.ok(wait_for(lambda: metric(lp, RM + "underreplicatedpartitions") == 1, 10),
             "underreplicatedpartitions is 1")

        fp = mports[follower]
        t.eq(metric(fp, MAXLAG, clientid="Replica"), 0,
             "the stalled follower's maxlag is 0: no fetch told it of more")
        a = AdminClient({"bootstrap.servers": c.bootstrap})
        r = ConfigResource("broker", str(follower), set_config={
            "follower.replication.throttled.rate": str(RATE)})
        list(a.alter_configs([r]).values())[0].result(30)
        # committed is not yet in the follower's image, which its
        # DescribeConfigs answers from; its fetcher, stalled, looks at the
        # image every 100 ms
        bres = ConfigResource("broker", str(follower))
        t.ok(wait_for(lambda: list(a.describe_configs([bres]).values())[0].result(10)[
            "follower.replication.throttled.rate"].value == str(RATE), 10),
            "the follower's image has its replication quota")
        time.sleep(0.5)
        # in batches of 10 KB: a fetch takes at least one whole batch
        for i in range(BACKLOG):
            p.produce("isr", b"b" * 1000)
            if i % 10 == 9:
                p.flush(20)
        t.eq(p.flush(20), 0, "%d records written while it is stalled" % BACKLOG)
        t.eq(fault(c.node(follower), "stall-fetch", "off").returncode, 0,
             "the follower fetches again")
        lags = []
        t.ok(wait_for(lambda: lags.append(metric(fp, MAXLAG, clientid="Replica")) or
                      (lags[-1] or 0) > 0, 10),
             "catching up at %d B/s, the follower's maxlag > 0 (%s)" % (RATE, lags[-1]))
        t.ok(lags[-1] <= BACKLOG, "and at most the %d records it missed" % BACKLOG)
        t.ok(wait_for(lambda: metric(fp, MAXLAG, clientid="Replica") == 0, 40),
             "maxlag is 0 again once it has caught up")
        t.eq(metric(lp, MAXLAG, clientid="Replica"), 0,
             "the leader, following nothing, has maxlag 0")
        sizes = []
        t.ok(wait_for(lambda: sizes.append((
            metric(lp, "kafka_log_log_size", topic="isr", partition="0"),
            metric(fp, "kafka_log_log_size", topic="isr", partition="0"))) or
            sizes[-1][0] == sizes[-1][1], 10) and sizes[-1][0] > BACKLOG * 1000,
            "the follower's log is the leader's size (%s)" % (sizes[-1],))
        st = wait_state(c.bootstrap, "isr", lambda l, r, i: len(i) == 2, 30)
        t.ok(st is not None, "the follower is back in the ISR")
        t.ok(wait_for(lambda: metric(lp, RM + "isrexpands_total") == expands0 + 1, 10),
             "isrexpands_total rose by 1")
        t.ok(wait_for(lambda: metric(lp, RM + "underreplicatedpartitions") == 0, 10),
             "underreplicatedpartitions is back to 0")
        t.eq(c.crashes(), [], "no worker crashed")
    finally:
        for n in c.nodes:
            n.stop()
t.done()
