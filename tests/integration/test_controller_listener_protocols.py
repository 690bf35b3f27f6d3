"""The controller listener's other protocols, one combined node each: SSL
(no login; the host name checked against the certificate's SANs) and
SASL_PLAINTEXT (PLAIN). On each the broker agent registers through the
relay, topics are created and a round trip on the PLAINTEXT client listener
works; on SSL a plaintext ApiVersions to the controller port gets no Kafka
answer, on SASL_PLAINTEXT ApiVersions is answered before the login (as
Kafka does) and a Metadata request is not.
An SSL controller listener whose certificate does not name the address the
voters use is refused by the node's own agent, and logged."""
import os
import subprocess

from rncluster import create_topic
from rnclients import kafka_answered, plaintext_probe, roundtrip
from rntest import Node, Tap, TempDir, wait_for
from rntls import Pki

t = Tap()
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'username="broker" password="ctl-pw" user_broker="ctl-pw";')


def node(tmp, name, proto, extra):
    n = Node(tmp, name=name)
    n.props.update({
        "listener.security.protocol.map":
            "PLAINTEXT:PLAINTEXT,CONTROLLER:%s" % proto,
        "num.partitions": "1",
    })
    n.props.update(extra)
    n.write_config()
    return n


def registered(n):
    from confluent_kafka.admin import AdminClient
    try:
        md = AdminClient({"bootstrap.servers": n.bootstrap}).list_topics(
            timeout=2)
        return n.node_id in md.brokers and md.controller_id == n.node_id
    except Exception:
        return False


with TempDir() as tmp:
    pki = Pki(os.path.join(tmp, "pki"))
    cases = [
        ("ssl", "SSL", {
            "listener.name.controller.ssl.keystore.type": "PEM",
            "listener.name.controller.ssl.keystore.location": pki.keystore,
            "listener.name.controller.ssl.truststore.type": "PEM",
            "listener.name.controller.ssl.truststore.location": pki.ca}),
        ("sasl", "SASL_PLAINTEXT", {
            "sasl.mechanism.controller.protocol": "PLAIN",
            "listener.name.controller.plain.sasl.jaas.config": JAAS}),
    ]
    for name, proto, extra in cases:
        n = node(tmp, name, proto, extra)
        n.start()
        try:
            t.ok(n.wait_running() is not None and wait_for(
                lambda: registered(n), 30, 0.3),
                "%s controller listener: the agent registers and the node "
                "is its own controller" % proto)
            create_topic(n.bootstrap, "t-" + name, 1, 1)
            t.ok(roundtrip({"bootstrap.servers": n.bootstrap}, "t-" + name),
                 "%s: records go round on the client listener" % proto)
            if proto == "SSL":
                t.ok(not kafka_answered(plaintext_probe(n.ctl_port, 18)), "SSL: a plaintext "
                     "ApiVersions on the controller port gets no Kafka "
                     "answer")
            else:
                t.ok(kafka_answered(plaintext_probe(n.ctl_port, 18)) and
                     not kafka_answered(plaintext_probe(n.ctl_port, 3)), "%s: ApiVersions is "
                     "answered before the login, Metadata is not" % proto)
            t.eq(n.crashes(), [], "%s: no worker crashed" % proto)
        finally:
            n.kill()

    # a certificate that names neither 127.0.0.1 nor the voters' address
    other = os.path.join(tmp, "pki", "other")
    os.makedirs(other)
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                    "ec_paramgen_curve:P-256", "-nodes", "-days", "2",
                    "-subj", "/CN=elsewhere", "-addext",
                    "subjectAltName=DNS:elsewhere.invalid",
                    "-keyout", os.path.join(other, "k.pem"),
                    "-out", os.path.join(other, "c.pem")],
                   check=True, capture_output=True, timeout=60)
    with open(os.path.join(other, "ks.pem"), "w") as f:
        for p in ("c.pem", "k.pem"):
            with open(os.path.join(other, p)) as g:
                f.write(g.read())
    n = node(tmp, "badname", "SSL", {
        "listener.name.controller.ssl.keystore.type": "PEM",
        "listener.name.controller.ssl.keystore.location":
            os.path.join(other, "ks.pem"),
        "listener.name.controller.ssl.truststore.type": "PEM",
        "listener.name.controller.ssl.truststore.location":
            os.path.join(other, "c.pem")})
    n.start()
    try:
        line = wait_for(lambda: [l for l in n.logtext().splitlines()
                                 if "channel to controller" in l and
                                 "certificate" in l], 20, 0.3)
        t.ok(line, "a controller certificate for another name is refused "
             "by the agent: %s" % (line[-1] if line else None))
        t.ok(not registered(n), "and the broker does not register")
    finally:
        n.kill()
t.done()
