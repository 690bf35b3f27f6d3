"""A 3-node combined cluster whose CONTROLLER and inter-broker listeners are
SASL_SSL with PLAIN (as Kafka, the controller listener takes no SCRAM: its
credentials live in the metadata log the controllers serve) and the
authorizer on (super.users=User:broker): RF=3, min.insync.replicas=2,
idempotent acks=all writers on the PLAINTEXT client listener while the
active controller's node is SIGKILLed; a new controller is elected, leaders
move, writes go on, the node comes back and rejoins every ISR; the history
checker finds no loss and no duplicate. A node with a wrong password cannot
join (its log names the peer, never the secret). Its fetchers then log in
with SCRAM-SHA-512 (credentials set with runnel-configs) and it rejoins
every ISR. A user that is not a super user is refused on the controller
listener. A plaintext ApiVersions on the controller and inter-broker ports
gets no Kafka answer."""
import os
import time

import history
from rnclients import kafka_answered, plaintext_probe
from rncluster import wait_state
from rntest import BUILDDIR, Cluster, Tap, TempDir, free_port, run_tool, \
    wait_for
from rntls import Pki

t = Tap()
TOPIC = "secure"
PARTS = 3
GOOD_PW = "broker-secret-pw"
BAD_PW = "not-the-broker-pw"


ALICE_PW = "alice-secret-pw"


def jaas(password):
    return ('org.apache.kafka.common.security.plain.PlainLoginModule '
            'required username="broker" password="%s" '
            'user_broker="%s" user_alice="%s";'
            % (password, GOOD_PW, ALICE_PW))


def secure(cl, pki):
    for n in cl.nodes:
        n.ib_port = free_port()
        n.props.update({
            "listeners": "PLAINTEXT://127.0.0.1:%d,BROKER://127.0.0.1:%d,"
                         "CONTROLLER://127.0.0.1:%d"
                         % (n.port, n.ib_port, n.ctl_port),
            "advertised.listeners": "PLAINTEXT://127.0.0.1:%d,"
                                    "BROKER://127.0.0.1:%d"
                                    % (n.port, n.ib_port),
            "listener.security.protocol.map":
                "PLAINTEXT:PLAINTEXT,BROKER:SASL_SSL,CONTROLLER:SASL_SSL",
            "inter.broker.listener.name": "BROKER",
            "sasl.enabled.mechanisms": "PLAIN",
            "listener.name.broker.sasl.enabled.mechanisms":
                "PLAIN,SCRAM-SHA-512",
            "sasl.mechanism.inter.broker.protocol": "PLAIN",
            "listener.name.broker.plain.sasl.jaas.config": jaas(GOOD_PW),
            "listener.name.broker.ssl.keystore.type": "PEM",
            "listener.name.broker.ssl.keystore.location": pki.keystore,
            "listener.name.broker.ssl.truststore.type": "PEM",
            "listener.name.broker.ssl.truststore.location": pki.ca,
            "sasl.mechanism.controller.protocol": "PLAIN",
            "listener.name.controller.plain.sasl.jaas.config": jaas(GOOD_PW),
            "listener.name.controller.ssl.keystore.type": "PEM",
            "listener.name.controller.ssl.keystore.location": pki.keystore,
            "listener.name.controller.ssl.truststore.type": "PEM",
            "listener.name.controller.ssl.truststore.location": pki.ca,
            "authorizer.class.name":
                "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": "User:broker",
            "allow.everyone.if.no.acl.found": "true",
            "broker.session.timeout.ms": "3000",
            "broker.heartbeat.interval.ms": "300",
            "replica.lag.time.max.ms": "3000",
            "offsets.topic.replication.factor": "3",
        })
        n.write_config()


def active_controller(cl):
    from confluent_kafka.admin import AdminClient
    for n in cl.nodes:
        if n.proc is None or n.proc.poll() is not None:
            continue
        try:
            c = AdminClient({"bootstrap.servers": n.bootstrap}).list_topics(
                timeout=3).controller_id
            if c > 0:
                return c
        except Exception:
            pass
    return -1


def isr_everywhere(cl, want):
    """Every partition's ISR is the node set want."""
    for p in range(PARTS):
        st = wait_state(cl.bootstrap, TOPIC, lambda l, r, i: set(i) == want,
                        timeout=0.5, p=p)
        if st is None:
            return False
    return True


with TempDir() as tmp:
    pki = Pki(os.path.join(tmp, "pki"))
    cl = Cluster(tmp, 3)
    secure(cl, pki)
    cl.start()
    try:
        t.ok(cl.wait_running(60), "three combined nodes with SASL_SSL "
             "controller and inter-broker listeners are up, elect a "
             "controller and register")
        log = cl.node(1).logtext()
        t.ok("replica fetchers reach listener BROKER with TLS, SASL PLAIN "
             "as broker" in log and "controller connections to listener "
             "CONTROLLER use TLS, SASL PLAIN as broker" in log,
             "the node logged how it logs in to its peers")
        from confluent_kafka.admin import AdminClient, NewTopic
        a = AdminClient({"bootstrap.servers": cl.bootstrap})
        a.create_topics([NewTopic(TOPIC, PARTS, 3, config={
            "min.insync.replicas": "2"})])[TOPIC].result(30)
        t.ok(wait_for(lambda: history.fully_replicated(
            cl.bootstrap, TOPIC, PARTS, 3), 30),
            "RF=3 topic: all three replicas of every partition in the ISR "
            "(the followers fetch over SASL_SSL)")

        t.ok(kafka_answered(plaintext_probe(cl.node(1).port)),
             "the probe: a plaintext ApiVersions on the client port is "
             "answered")
        ib_raw = plaintext_probe(cl.node(1).ib_port)
        t.ok(not kafka_answered(ib_raw), "the same on the inter-broker port "
             "gets no Kafka answer (%d bytes back)" % len(ib_raw))
        ctl_raw = plaintext_probe(cl.node(1).ctl_port)
        t.ok(not kafka_answered(ctl_raw), "nor on the controller port (%d "
             "bytes back)" % len(ctl_raw))

        # alice logs in on the controller listener but is no super user
        from confluent_kafka.admin import AdminClient as AC
        ac = AC({"bootstrap.servers": "127.0.0.1:%d" % cl.node(2).ctl_port,
                 "security.protocol": "SASL_SSL", "ssl.ca.location": pki.ca,
                 "sasl.mechanisms": "PLAIN", "sasl.username": "alice",
                 "sasl.password": ALICE_PW})
        try:
            ac.list_topics(timeout=3)
        except Exception:
            pass
        t.ok(wait_for(lambda: "User:alice is not a super user" in
                      cl.node(2).logtext(), 10),
             "a non-super user is refused on the controller listener, and "
             "logged")

        victim = []

        def inject():
            c = active_controller(cl)
            victim.append(c)
            t.diag("SIGKILL node %d, the active controller" % c)
            cl.node(c).kill()

        def heal():
            c = victim[0]
            nc = wait_for(lambda: (lambda x: x if x > 0 and x != c else None)(
                active_controller(cl)), 30, 0.2)
            t.ok(nc is not None and nc != c, "a new controller was elected "
                 "(node %s)" % nc)
            # the new controller gives the brokers a fresh session, then
            # fences the dead one and moves its leaderships
            def moved():
                ls = [history.leader_of(cl.bootstrap, TOPIC, p, timeout=2)
                      for p in range(PARTS)]
                return ls if all(l > 0 and l != c for l in ls) else None
            leaders = wait_for(moved, 30, 0.5)
            t.ok(leaders, "every partition has a leader other than the "
                 "killed node: %r" % (leaders,))
            cl.node(c).start()

        res = history.run(t, cl, TOPIC, PARTS, inject, heal, hold=10.0)
        history.judge(t, res, "controller node SIGKILLed")
        t.ok(wait_for(lambda: isr_everywhere(cl, {1, 2, 3}), 60, 0.5),
             "the restarted node rejoined every ISR")
        t.eq(cl.crashes(), [], "no worker crashed")

        # a node whose inter-broker password is wrong cannot replicate
        bad = cl.node(victim[0] if victim else 3)
        bad.stop()
        bad.props["listener.name.broker.plain.sasl.jaas.config"] = \
            jaas(BAD_PW)
        bad.props["listener.name.controller.plain.sasl.jaas.config"] = \
            jaas(BAD_PW)
        bad.write_config()
        bad.start()

        def refused():
            return [l for l in bad.logtext().splitlines()
                    if "channel to controller" in l and
                    "SASL_AUTHENTICATION_FAILED" in l]
        line = wait_for(refused, 30, 0.5)
        t.ok(line, "the node with the wrong password logs that the "
             "controllers refuse its login: %s" % (line[-1] if line else None))
        t.ok(BAD_PW not in bad.logtext() and GOOD_PW not in bad.logtext(),
             "its log holds neither password")
        others = [n for n in cl.nodes if n is not bad]
        t.ok(wait_for(lambda: any("login as broker failed" in n.logtext()
                                  for n in others), 10),
             "the controllers log the failed login with its peer")
        time.sleep(5)
        t.ok(isr_everywhere(cl, {1, 2, 3} - {bad.node_id}),
             "it does not rejoin any ISR")
        t.ok(active_controller(cl) in {n.node_id for n in others},
             "the other two keep the quorum")

        # the same node's fetchers log in with SCRAM-SHA-512 instead
        # (through a node that reaches the controller: the bad one
        # cannot forward it)
        r = run_tool(os.path.join(BUILDDIR, "runnel-configs"),
                     others[0].bootstrap,
                     "--alter", "--entity-type", "users", "--entity-name",
                     "broker", "--add-config",
                     "SCRAM-SHA-512=[iterations=4096,password=%s]" % GOOD_PW)
        t.ok(r.returncode == 0, "runnel-configs sets broker's SCRAM-SHA-512 "
             "credential: %s%s" % (r.stdout.strip(), r.stderr.strip()))
        bad.stop()
        bad.props.update({
            "listener.name.controller.plain.sasl.jaas.config": jaas(GOOD_PW),
            "listener.name.broker.plain.sasl.jaas.config": jaas(BAD_PW),
            "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
            "listener.name.broker.scram-sha-512.sasl.jaas.config":
                'org.apache.kafka.common.security.scram.ScramLoginModule '
                'required username="broker" password="%s";' % GOOD_PW,
        })
        bad.write_config()
        bad.start()
        t.ok(wait_for(lambda: "replica fetchers reach listener BROKER with "
                      "TLS, SASL SCRAM-SHA-512 as broker" in bad.logtext(),
                      20), "the node restarts with a SCRAM-SHA-512 login")
        t.ok(wait_for(lambda: isr_everywhere(cl, {1, 2, 3}), 60, 0.5),
             "its fetchers log in with SCRAM and it rejoins every ISR")
        t.eq(cl.crashes(), [], "still no worker crashed")
    finally:
        cl.kill()
t.done()
