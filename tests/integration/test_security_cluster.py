"""Credentials and ACLs on every broker of a 3-node cluster (authorizer
on, SASL_PLAINTEXT client listener with SCRAM-SHA-256 and -512; the
PLAINTEXT listener carries admin tools and replication as the super user
User:ANONYMOUS):

- a SCRAM credential set with runnel-configs through one node logs in on
  each broker (a fresh client bootstrapped on that broker alone), with
  confluent-kafka and with kcat, both mechanisms, producing and reading;
  deleted, new logins are refused on each broker;
- an ACL added with runnel-acls through one node is enforced by each
  broker within a second of the tool's answer (the commit): Metadata asked
  of each broker by kafka-python over one kept login per broker shows the
  topic once the binding reached that broker, and hides it again within a
  second of the binding's removal. The times per broker are printed."""
import os
import subprocess
import time

import history
from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient
from rnclients import add_sasl_plaintext
from rntest import BUILDDIR, Cluster, Tap, TempDir, run_tool, wait_for

t = Tap()
TOPIC = "sec"
PW = "carol-secret-pw"
CONFIGS = os.path.join(BUILDDIR, "runnel-configs")
ACLS = os.path.join(BUILDDIR, "runnel-acls")
MECHS = ("SCRAM-SHA-256", "SCRAM-SHA-512")


def configure(cl):
    for n in cl.nodes:
        add_sasl_plaintext(n, MECHS)
        n.props.update({
            "inter.broker.listener.name": "PLAINTEXT",
            "authorizer.class.name":
                "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": "User:ANONYMOUS",
            "allow.everyone.if.no.acl.found": "false",
            "offsets.topic.replication.factor": "3",
        })
        n.write_config()


def sasl_conf(port, mech, user="carol", pw=PW):
    return {"bootstrap.servers": "127.0.0.1:%d" % port,
            "security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": mech,
            "sasl.username": user, "sasl.password": pw}


def logs_in(port, mech):
    """A fresh client whose only broker is this one: its first request
    goes there, after the login."""
    a = AdminClient(sasl_conf(port, mech))
    try:
        a.list_topics(timeout=4)
        return True
    except KafkaException:
        return False


def kcat(port, mech, *args, data=None):
    return subprocess.run(
        ["kcat", "-b", "127.0.0.1:%d" % port, "-X",
         "security.protocol=SASL_PLAINTEXT", "-X", "sasl.mechanisms=" + mech,
         "-X", "sasl.username=carol", "-X", "sasl.password=" + PW] +
        list(args), input=data, capture_output=True, timeout=60)


class PinnedMetadata:
    """kafka-python, one SCRAM login per broker kept open: the topics a
    Metadata request answered by that very broker shows carol."""

    def __init__(self, cl):
        from kafka.client_async import KafkaClient
        self.c = KafkaClient(
            bootstrap_servers="127.0.0.1:%d" % cl.node(1).sasl_port,
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="SCRAM-SHA-256", sasl_plain_username="carol",
            sasl_plain_password=PW, api_version=(2, 5, 0))
        self.c.poll(future=self.c.cluster.request_update(), timeout_ms=5000)

    def topics(self, node_id):
        from kafka.protocol.metadata import MetadataRequest
        end = time.monotonic() + 10
        while not self.c.ready(node_id) and time.monotonic() < end:
            self.c.poll(timeout_ms=50)
        f = self.c.send(node_id, MetadataRequest[1](topics=None))
        self.c.poll(future=f, timeout_ms=5000)
        if not f.succeeded():
            return None
        return {tp[1] for tp in f.value.topics}

    def close(self):
        self.c.close()


def propagation(md, ids, want, limit=10.0):
    """Seconds until each broker's Metadata shows (want) or hides the
    topic, from now; None for a broker that did not within limit."""
    start, took = time.monotonic(), {}
    while len(took) < len(ids) and time.monotonic() - start < limit:
        for i in ids:
            if i in took:
                continue
            tops = md.topics(i)
            if tops is not None and (TOPIC in tops) == want:
                took[i] = time.monotonic() - start
    return {i: took.get(i) for i in ids}


def within_a_second(took, what):
    t.ok(all(s is not None and s <= 1.0 for s in took.values()),
         "every broker %s within a second of the tool's answer: %s" % (
             what, ", ".join("broker %d %.3f s" % (i, s) if s is not None
                             else "broker %d never" % i
                             for i, s in took.items())))


with TempDir() as tmp:
    cl = Cluster(tmp, 3)
    configure(cl)
    try:
        cl.start()
        t.ok(cl.wait_running(), "three nodes with the "
             "authorizer and a SCRAM listener are up")
        admin = AdminClient({"bootstrap.servers": cl.bootstrap})
        from confluent_kafka.admin import NewTopic
        admin.create_topics([NewTopic(TOPIC, 3, 3)])[TOPIC].result(30)
        t.ok(wait_for(lambda: history.fully_replicated(cl.bootstrap, TOPIC,
                                                       3, 3), 30),
             "topic %s: 3 partitions, every replica in sync" % TOPIC)
        ids = [n.node_id for n in cl.nodes]

        t.ok(not any(logs_in(n.sasl_port, "SCRAM-SHA-256")
                     for n in cl.nodes),
             "before the credential: carol logs in on no broker")
        # one mechanism a request: the controller takes one alteration
        # per user and request, as Kafka's
        for mech, it in zip(MECHS, (8192, 4096)):
            r = run_tool(CONFIGS, cl.node(1).bootstrap, "--alter",
                         "--entity-type", "users", "--entity-name", "carol",
                         "--add-config", "%s=[iterations=%d,password=%s]"
                         % (mech, it, PW))
            t.ok(r.returncode == 0, "runnel-configs through node 1 sets "
                 "carol's %s credential: %s" % (mech, r.stderr.strip()))
        for mech in MECHS:
            for n in cl.nodes:
                t.ok(wait_for(lambda: logs_in(n.sasl_port, mech), 10, 0.2),
                     "carol logs in on broker %d with %s"
                     % (n.node_id, mech))

        md = PinnedMetadata(cl)
        t.eq([TOPIC in (md.topics(i) or ()) for i in ids], [False] * 3,
             "without an ACL no broker shows carol the topic")
        r = run_tool(ACLS, cl.node(2).bootstrap, "--add", "--allow-principal",
                     "User:carol", "--operation", "All", "--topic", TOPIC)
        added = propagation(md, ids, True)
        t.ok(r.returncode == 0, "runnel-acls through node 2 allows carol "
             "everything on %s" % TOPIC)
        within_a_second(added, "enforces the new binding")

        written = []
        for mech in MECHS:
            for n in cl.nodes:
                vals = [b"%s-%d-%d" % (mech.encode(), n.node_id, i)
                        for i in range(20)]
                written += vals
                p = kcat(n.sasl_port, mech, "-P", "-t", TOPIC, "-p", "0",
                         data=b"\n".join(vals) + b"\n")
                t.ok(p.returncode == 0, "kcat %s, bootstrapped on broker %d, produces"
                     % (mech, n.node_id))
        c = kcat(cl.node(3).sasl_port, "SCRAM-SHA-512", "-C", "-t", TOPIC,
                 "-p", "0", "-o", "beginning", "-e", "-q")
        t.eq(c.stdout.split(), written, "kcat SCRAM-SHA-512 reads back "
             "every record the six kcat producers wrote, in order")

        r = run_tool(ACLS, cl.node(3).bootstrap, "--remove", "--force",
                     "--allow-principal", "User:carol", "--operation", "All",
                     "--topic", TOPIC)
        removed = propagation(md, ids, False)
        t.ok(r.returncode == 0, "runnel-acls through node 3 removes it")
        within_a_second(removed, "hides the topic again")
        md.close()

        for mech in MECHS:
            r = run_tool(CONFIGS, cl.node(1).bootstrap, "--alter",
                         "--entity-type", "users", "--entity-name", "carol",
                         "--delete-config", mech)
            t.ok(r.returncode == 0, "carol's %s credential deleted: %s"
                 % (mech, r.stderr.strip()))
        for mech in MECHS:
            for n in cl.nodes:
                t.ok(wait_for(lambda: not logs_in(n.sasl_port, mech), 10,
                              0.2),
                     "deleted, carol no longer logs in on broker %d with %s"
                     % (n.node_id, mech))
        t.eq(cl.crashes(), [], "no worker crashed")
    finally:
        cl.kill()

t.done()
