"""Every secured way in, with each of the three clients users run: kcat,
confluent-kafka and kafka-python produce and read back over SSL (server
authentication), SSL with a client certificate (ssl.client.auth=required),
SASL_PLAINTEXT and SASL_SSL with PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512 on
one node. Then the refusals, with each client: a wrong password, an
unknown user, a client certificate of another CA; each is refused and
the broker's log says so (never with the password)."""
import os
import subprocess
import time

from confluent_kafka import Consumer, Producer
from rntest import BUILDDIR, Node, Tap, TempDir, free_port, run_tool, \
    wait_for
import rntls
from rntls import Pki

t = Tap()
PW = "alice-secret-pw"
WRONG = "not-alices-pw"
N = 20
CONFIGS = os.path.join(BUILDDIR, "runnel-configs")
MECHS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'user_alice="%s";' % PW)


def ways(n, pki):
    """(name, listener port, protocol, mechanism or None, client cert)."""
    out = [("SSL", n.ssl_port, "SSL", None, False),
           ("mTLS", n.mtls_port, "SSL", None, True)]
    for m in MECHS:
        out.append(("SASL_PLAINTEXT " + m, n.saslp_port, "SASL_PLAINTEXT", m,
                    False))
        out.append(("SASL_SSL " + m, n.sasls_port, "SASL_SSL", m, False))
    return out


def rdkafka_conf(port, proto, mech, cert, pki, pw=PW, user="alice",
                 client=None):
    c = {"bootstrap.servers": "127.0.0.1:%d" % port,
         "security.protocol": proto}
    if "SSL" in proto:
        c["ssl.ca.location"] = pki.ca
    if cert:
        c["ssl.certificate.location"] = client[0] if client else \
            pki.client_cert
        c["ssl.key.location"] = client[1] if client else pki.client_key
    if mech:
        c.update({"sasl.mechanisms": mech, "sasl.username": user,
                  "sasl.password": pw})
    return c


def kpy_kw(port, proto, mech, cert, pki, pw=PW, user="alice", client=None):
    kw = {"bootstrap_servers": "127.0.0.1:%d" % port,
          "security_protocol": proto}
    if "SSL" in proto:
        kw["ssl_cafile"] = pki.ca
        kw["ssl_check_hostname"] = True
    if cert:
        kw["ssl_certfile"] = client[0] if client else pki.client_cert
        kw["ssl_keyfile"] = client[1] if client else pki.client_key
    if mech:
        kw.update({"sasl_mechanism": mech, "sasl_plain_username": user,
                   "sasl_plain_password": pw})
    return kw


def vals(topic):
    return [b"%s-%02d" % (topic.encode(), i) for i in range(N)]


def via_kcat(conf, topic):
    x = []
    for k, v in conf.items():
        if k != "bootstrap.servers":
            x += ["-X", "%s=%s" % (k, v)]
    b = ["-b", conf["bootstrap.servers"]]
    p = subprocess.run(["kcat", "-P", "-t", topic, "-p", "0"] + b + x,
                       input=b"\n".join(vals(topic)) + b"\n",
                       capture_output=True, timeout=60)
    c = subprocess.run(["kcat", "-C", "-t", topic, "-p", "0", "-o",
                        "beginning", "-e", "-q"] + b + x,
                       capture_output=True, timeout=60)
    return p.returncode == 0 and c.stdout.split() == vals(topic)


def via_ck(conf, topic):
    errs = []
    p = Producer(dict(conf, **{"message.timeout.ms": 20000}))
    for v in vals(topic):
        p.produce(topic, v, on_delivery=lambda e, m: e and errs.append(e))
    left = p.flush(30)
    c = Consumer(dict(conf, **{"group.id": "g-" + topic,
                               "auto.offset.reset": "earliest"}))
    c.subscribe([topic])
    got, end = [], time.time() + 30
    while len(got) < N and time.time() < end:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got.append(m.value())
    c.close()
    return left == 0 and not errs and got == vals(topic)


def via_kpy(kw, topic):
    from kafka import KafkaConsumer, KafkaProducer
    p = KafkaProducer(**kw)
    for v in vals(topic):
        p.send(topic, v)
    p.flush(30)
    p.close()
    c = KafkaConsumer(topic, auto_offset_reset="earliest",
                      consumer_timeout_ms=10000, **kw)
    got = [m.value for m in c]
    c.close()
    return got == vals(topic)


def refused_kcat(conf):
    x = []
    for k, v in conf.items():
        if k != "bootstrap.servers":
            x += ["-X", "%s=%s" % (k, v)]
    r = subprocess.run(["kcat", "-L", "-b", conf["bootstrap.servers"],
                        "-m", "5"] + x, capture_output=True, timeout=30)
    return r.returncode != 0


def refused_ck(conf):
    from confluent_kafka.admin import AdminClient
    try:
        AdminClient(conf).list_topics(timeout=5)
        return False
    except Exception:
        return True


def refused_kpy(kw):
    from kafka import KafkaConsumer
    try:
        c = KafkaConsumer(request_timeout_ms=6000, api_version_auto_timeout_ms=5000,
                          **kw)
        c.topics()
        c.close()
        return False
    except Exception:
        return True


with TempDir() as tmp:
    pki = Pki(os.path.join(tmp, "pki"))
    # a client certificate of a CA the broker does not trust
    rntls._signed("intruder", "intruder", "other-ca",
                  "extendedKeyUsage=clientAuth\n", pki.dir)
    intruder = (pki.path("intruder.pem"), pki.path("intruder.key"))
    n = Node(tmp, props={"num.partitions": "1"})
    n.ssl_port, n.mtls_port = free_port(), free_port()
    n.saslp_port, n.sasls_port = free_port(), free_port()
    lst = ("PLAINTEXT://127.0.0.1:%d,SSL://127.0.0.1:%d,MTLS://127.0.0.1:%d,"
           "SASLP://127.0.0.1:%d,SASLS://127.0.0.1:%d" %
           (n.port, n.ssl_port, n.mtls_port, n.saslp_port, n.sasls_port))
    n.props.update({
        "listeners": lst + ",CONTROLLER://127.0.0.1:%d" % n.ctl_port,
        "advertised.listeners": lst,
        "listener.security.protocol.map":
            "PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL,SASLP:SASL_PLAINTEXT,"
            "SASLS:SASL_SSL,CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name": "PLAINTEXT",
        "ssl.keystore.type": "PEM", "ssl.keystore.location": pki.keystore,
        "listener.name.mtls.ssl.client.auth": "required",
        "listener.name.mtls.ssl.truststore.type": "PEM",
        "listener.name.mtls.ssl.truststore.location": pki.ca,
        "sasl.enabled.mechanisms": ",".join(MECHS),
        "listener.name.saslp.plain.sasl.jaas.config": JAAS,
        "listener.name.sasls.plain.sasl.jaas.config": JAAS,
    })
    n.write_config()
    n.start()
    try:
        t.ok(n.wait_running() is not None, "a node with SSL, mTLS, "
             "SASL_PLAINTEXT and SASL_SSL listeners is up")
        # one mechanism a request: the controller takes one alteration
        # per user and request, as Kafka's
        for mech in MECHS[1:]:
            r = run_tool(CONFIGS, n.bootstrap, "--alter", "--entity-type",
                         "users", "--entity-name", "alice", "--add-config",
                         "%s=[password=%s]" % (mech, PW))
            t.ok(r.returncode == 0, "alice's %s credential set: %s"
                 % (mech, r.stderr.strip()))
        for name, port, proto, mech, cert in ways(n, pki):
            conf = rdkafka_conf(port, proto, mech, cert, pki)
            kw = kpy_kw(port, proto, mech, cert, pki)
            tag = name.replace(" ", "-").replace("_", "").lower()
            t.ok(wait_for(lambda: via_kcat(conf, "kc-" + tag), 30, 1),
                 "kcat produces and reads back over %s" % name)
            t.ok(via_ck(conf, "ck-" + tag),
                 "confluent-kafka produces and reads back over %s" % name)
            t.ok(via_kpy(kw, "kp-" + tag),
                 "kafka-python produces and reads back over %s" % name)

        bad = [("a wrong password", dict(pw=WRONG)),
               ("an unknown user", dict(user="mallory"))]
        for mech in MECHS:
            for what, kv in bad:
                for proto, port in (("SASL_PLAINTEXT", n.saslp_port),
                                    ("SASL_SSL", n.sasls_port)):
                    rc = refused_kcat(rdkafka_conf(port, proto, mech, False,
                                                   pki, **kv))
                    ck = refused_ck(rdkafka_conf(port, proto, mech, False,
                                                 pki, **kv))
                    kp = refused_kpy(kpy_kw(port, proto, mech, False, pki,
                                            **kv))
                    t.ok(rc and ck and kp, "%s %s with %s: refused to kcat "
                         "%s, confluent-kafka %s, kafka-python %s"
                         % (proto, mech, what, rc, ck, kp))
        rc = refused_kcat(rdkafka_conf(n.mtls_port, "SSL", None, True, pki,
                                       client=intruder))
        ck = refused_ck(rdkafka_conf(n.mtls_port, "SSL", None, True, pki,
                                     client=intruder))
        kp = refused_kpy(kpy_kw(n.mtls_port, "SSL", None, True, pki,
                                client=intruder))
        t.ok(rc and ck and kp, "mTLS with a certificate of another CA: "
             "refused to kcat %s, confluent-kafka %s, kafka-python %s"
             % (rc, ck, kp))
        log = n.logtext()
        t.ok("mallory" in log and "alice" in log and
             "authentication failed" in log,
             "the failed logins are logged with the user")
        t.ok(PW not in log and WRONG not in log, "and never a password")
        t.ok("MTLS" in log and ("certificate" in log or "handshake" in log),
             "the refused certificate is logged")
        t.eq(n.crashes(), [], "no worker crashed")
    finally:
        n.stop()

t.done()
