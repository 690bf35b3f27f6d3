"""ISR metrics in a 3-node cluster: a follower that stops fetching is shrunk
out of the ISR, which raises the leader's isrshrinks_total and
underreplicatedpartitions; when it fetches again the expand raises
isrexpands_total and lowers underreplicatedpartitions."""
import urllib.request

from confluent_kafka import Producer
from prometheus_client.parser import text_string_to_metric_families

from rncluster import create_topic, fault, wait_state
from rntest import Cluster, Tap, TempDir, free_port, wait_for

RM = "kafka_server_replicamanager_"
PROPS = {"broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "300",
         "replica.lag.time.max.ms": "2000"}

t = Tap()


def metric(port, name):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port,
                                    timeout=5) as r:
            text = r.read().decode()
    except OSError:
        return None
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            if s.name == name and not s.labels:
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
        create_topic(c.bootstrap, "isr", 1, 2)
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

        t.eq(fault(c.node(follower), "stall-fetch", "off").returncode, 0,
             "the follower fetches again")
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
