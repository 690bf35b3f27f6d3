"""ssl.principal.mapping.rules on mutual-TLS listeners, with real clients.
One node, the authorizer on and allow.everyone.if.no.acl.found=false:
- MTLS (listener.name.mtls.ssl.principal.mapping.rules=
  RULE:^CN=([a-zA-Z0-9.]*).*$/$1/L,DEFAULT): the certificate
  CN=Alice,OU=ServiceUsers,O=Runnel,C=US is User:alice, so an ACL for
  User:alice lets confluent-kafka produce and consume there, while Bob's
  certificate (User:bob, no ACL) is refused the topic;
- NOMATCH (the broker-wide key, a rule that matches neither): the login
  is refused (the connection closed once the handshake ends), the client
  gets no metadata, and the broker logs the DN and
  the rules;
- a malformed value stops startup with a message naming the key."""
import logging
import os
import subprocess
import time

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient
from kafka.admin import (ACL, ACLOperation, ACLPermissionType,
                         ACLResourcePatternType, KafkaAdminClient, NewTopic,
                         ResourcePattern, ResourceType)

from rntest import RUNNELD, Node, Tap, TempDir, free_port, wait_for
from rntls import Pki

t = Tap()
TOPIC = "pmap-orders"
GROUP = "g-alice"
RULES = "RULE:^CN=([a-zA-Z0-9.]*).*$/$1/L,DEFAULT"
ALICE_DN = "CN=Alice,OU=ServiceUsers,O=Runnel,C=US"


def produce(conf, values):
    """None when every value is acknowledged, else the first error's name."""
    errs, acks = [], []
    p = Producer(dict(conf, **{"message.timeout.ms": 10000}))
    for v in values:
        p.produce(TOPIC, v, on_delivery=lambda e, m: (errs if e else acks)
                  .append(e.name() if e else m))
    p.flush(20)
    if errs:
        return errs[0]
    return None if len(acks) == len(values) else "no delivery report"


def consume(conf, want):
    c = Consumer(dict(conf, **{"group.id": GROUP, "auto.offset.reset": "earliest",
                               "enable.auto.commit": False}))
    c.subscribe([TOPIC])
    got, end = [], time.time() + 30
    try:
        while len(got) < want and time.time() < end:
            m = c.poll(0.5)
            if m is not None and not m.error():
                got.append(m.value())
    finally:
        c.close()
    return got


def start_fails(tmp, props, name):
    n = Node(tmp, name=name, props=props)
    e = dict(os.environ, RUNNEL_LOG_STDERR="1")
    r = subprocess.run([RUNNELD, "--config", n.config], capture_output=True,
                       text=True, timeout=20, env=e)
    errs = [l for l in r.stderr.splitlines() if l.startswith("<3>")]
    return r.returncode, errs[0] if errs else ""


with TempDir() as tmp:
    pki = Pki(os.path.join(tmp, "pki"))
    alice = pki.client("alice", "/C=US/O=Runnel/OU=ServiceUsers/CN=Alice")
    bob = pki.client("bob", "/C=US/O=Runnel/OU=ServiceUsers/CN=Bob")
    pm, px = free_port(), free_port()
    n = Node(tmp)
    n.props.update({
        "listeners": "PLAINTEXT://127.0.0.1:%d,MTLS://127.0.0.1:%d,"
                     "NOMATCH://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d"
                     % (n.port, pm, px, n.ctl_port),
        "advertised.listeners": "PLAINTEXT://127.0.0.1:%d,MTLS://127.0.0.1:%d,"
                                "NOMATCH://127.0.0.1:%d" % (n.port, pm, px),
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,MTLS:SSL,"
                                          "NOMATCH:SSL,CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name": "PLAINTEXT",
        "num.partitions": "1",
        "authorizer.class.name":
            "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "allow.everyone.if.no.acl.found": "false",
        # the operator's plaintext admin connection
        "super.users": "User:ANONYMOUS",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": pki.keystore,
        "ssl.client.auth": "required",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": pki.ca,
        # the broker-wide rules match no one; MTLS has its own
        "ssl.principal.mapping.rules": "RULE:^CN=nobody,(.*)$/$1/U",
        "listener.name.mtls.ssl.principal.mapping.rules": RULES,
    })
    n.write_config()
    n.start()

    def tls_conf(port, cert):
        return {"bootstrap.servers": "127.0.0.1:%d" % port,
                "security.protocol": "SSL", "ssl.ca.location": pki.ca,
                "ssl.certificate.location": cert[0],
                "ssl.key.location": cert[1]}

    try:
        t.ok(n.wait_running() is not None, "node with two mTLS listeners and "
             "the authorizer is up")
        log = n.logtext()
        t.ok("listener MTLS: client certificates name principals by "
             "ssl.principal.mapping.rules [RULE:^CN=([a-zA-Z0-9.]*).*$/$1/L, "
             "DEFAULT]" in log, "the supervisor logged MTLS's rules")

        adm = KafkaAdminClient(bootstrap_servers=n.bootstrap,
                               request_timeout_ms=15000)
        try:
            adm.create_topics([NewTopic(TOPIC, 1, 1)])
            r = adm.create_acls([
                ACL("User:alice", "*", ACLOperation.ALL,
                    ACLPermissionType.ALLOW,
                    ResourcePattern(ResourceType.TOPIC, TOPIC,
                                    ACLResourcePatternType.LITERAL)),
                ACL("User:alice", "*", ACLOperation.ALL,
                    ACLPermissionType.ALLOW,
                    ResourcePattern(ResourceType.GROUP, GROUP,
                                    ACLResourcePatternType.LITERAL))])
            t.eq(r["failed"], [], "ACLs for User:alice created (topic, group)")
        finally:
            adm.close()
        time.sleep(1.5)  # bindings take effect within a second of the commit

        vals = [b"alice-%d" % i for i in range(50)]
        t.eq(produce(tls_conf(pm, alice), vals), None, "Alice's certificate "
             "(%s) is User:alice on MTLS: her ACL lets her produce" % ALICE_DN)
        t.eq(consume(tls_conf(pm, alice), len(vals)), vals, "and consume "
             "in her group")
        t.eq(produce(tls_conf(pm, bob), [b"bob"]),
             "TOPIC_AUTHORIZATION_FAILED", "Bob's certificate (User:bob, no "
             "ACL) is refused the topic: the rule named him, not everyone")

        # NOMATCH: no rule applies to Alice's DN, the login is refused
        # once the handshake ends: the client sees its connection closed
        seen = []

        class Collect(logging.Handler):
            def emit(self, rec):
                seen.append(rec.getMessage())

        lg = logging.getLogger("pmap-nomatch")
        lg.addHandler(Collect())
        lg.propagate = False
        lg.setLevel(logging.DEBUG)
        a = AdminClient(dict(tls_conf(px, alice), logger=lg))
        md_ok = True
        try:
            a.list_topics(timeout=6)
        except Exception:
            md_ok = False
        a.poll(1)  # the logger is served from poll
        t.ok(not md_ok and any("Disconnected" in m for m in seen),
             "on NOMATCH Alice gets no metadata, her connection closed: %s"
             % seen[:1])
        want = ("TLS client 127.0.0.1:", "on listener NOMATCH: no rule "
                "applies to %s, ssl.principal.mapping.rules "
                "[RULE:^CN=nobody,(.*)$/$1/U]: authentication failed" % ALICE_DN)
        t.ok(wait_for(lambda: all(w in n.logtext() for w in want), 10),
             "the broker logged the refused DN and the rules")
        t.eq(produce(tls_conf(pm, alice), [b"after"]), None,
             "MTLS still serves Alice afterwards")
        t.ok(pki.key_password not in n.logtext(), "no secret in the log")
        t.eq(n.crashes(), [], "no worker crashed")
    finally:
        n.stop()

    # a malformed value stops startup, naming the key
    base = {"listeners": "PLAINTEXT://127.0.0.1:%d,SSL://127.0.0.1:%d,"
                         "CONTROLLER://127.0.0.1:%d"
                         % (free_port(), free_port(), free_port()),
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,"
                                              "CONTROLLER:PLAINTEXT",
            "ssl.keystore.type": "PEM", "ssl.keystore.location": pki.keystore}
    base["advertised.listeners"] = ",".join(
        l for l in base["listeners"].split(",") if not l.startswith("CONTROLLER"))
    for name, key, value, want in [
            ("badsuffix", "ssl.principal.mapping.rules",
             "RULE:^CN=(.*?),OU=x.*$/$1/LU", "unmatched substring `U`"),
            ("badcase", "listener.name.ssl.ssl.principal.mapping.rules",
             "rule:^CN=(.*)$/$1/", "invalid rule `rule:^CN=(.*)$/$1/`"),
            ("badregex", "ssl.principal.mapping.rules",
             "RULE:^CN=(.*$/$1/,DEFAULT", "missing closing parenthesis")]:
        p = dict(base, **{key: value})
        rc, err = start_fails(tmp, p, name)
        t.ok(rc != 0 and key in err and want in err,
             "%s refuses to start: %s" % (value, err))

t.done()
