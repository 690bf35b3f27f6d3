"""The ACL matrix with authenticated principals: SASL/PLAIN users admin (a
super user), alice, bob and carol on a SASL_PLAINTEXT listener, the
built-in authorizer with allow.everyone.if.no.acl.found=false, bindings
made by admin with kafka-python's admin client, checked with
confluent-kafka producers and consumers logged in as each user:

- with no binding nobody but admin may do anything;
- alice: WRITE on orders (produce yes, consume no);
- bob: READ on orders and on group bob-g (a group consumer in bob-g reads,
  in another group gets GROUP_AUTHORIZATION_FAILED; produce refused);
- carol: ALL on topics prefixed logs- (auto-creation of logs-b by produce,
  CREATE implied by ALL), but a DENY of WRITE on logs-a wins;
- alice may not describe ACLs (CLUSTER_AUTHORIZATION_FAILED);
- CreateTopics of one allowed and one refused topic creates the first and
  answers TOPIC_AUTHORIZATION_FAILED for the second; DeleteTopics likewise;
- an anonymous PLAINTEXT client is refused;
- a binding removed stops the user within a second."""
import time

from confluent_kafka import Consumer, KafkaException, TopicPartition
from kafka.admin import (ACL, ACLFilter, ACLOperation, ACLPermissionType,
                         ACLResourcePatternType, KafkaAdminClient, NewTopic,
                         ResourcePattern, ResourcePatternFilter, ResourceType)
from kafka.errors import (ClusterAuthorizationFailedError,
                          TopicAuthorizationFailedError)

from rnclients import produce_one
from rntest import Node, Tap, TempDir, free_port, wait_for

t = Tap()
USERS = {"admin": "admin-pw", "alice": "alice-pw", "bob": "bob-pw", "carol": "carol-pw"}
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'username="admin" password="admin-pw" ' +
        " ".join('user_%s="%s"' % kv for kv in USERS.items()) + ";")


def conf(n, user):
    if user is None:
        return {"bootstrap.servers": n.bootstrap}
    return {"bootstrap.servers": "127.0.0.1:%d" % n.sasl_port,
            "security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "PLAIN",
            "sasl.username": user, "sasl.password": USERS[user]}


def admin(n):
    return KafkaAdminClient(bootstrap_servers="127.0.0.1:%d" % n.sasl_port,
                            security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                            sasl_plain_username="admin",
                            sasl_plain_password=USERS["admin"],
                            request_timeout_ms=15000)


def kadmin_as(n, user):
    return KafkaAdminClient(bootstrap_servers="127.0.0.1:%d" % n.sasl_port,
                            security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                            sasl_plain_username=user, sasl_plain_password=USERS[user],
                            request_timeout_ms=15000)


def acl(principal, name, op, perm=ACLPermissionType.ALLOW, rtype=ResourceType.TOPIC,
        pattern=ACLResourcePatternType.LITERAL):
    return ACL(principal, "*", op, perm, ResourcePattern(rtype, name, pattern))


def produce(n, user, topic):
    """None when acknowledged, else the error's name."""
    return produce_one(conf(n, user), topic,
                       b"from-%s" % (user or "anon").encode())


def consume(n, user, topic, group=None):
    """The first value read, or the error's name."""
    c = Consumer(dict(conf(n, user), **{"group.id": group or "g-" + (user or "anon"),
                                        "auto.offset.reset": "earliest",
                                        "enable.auto.commit": False,
                                        "session.timeout.ms": 6000}))
    if group:
        c.subscribe([topic])
    else:
        c.assign([TopicPartition(topic, 0, 0)])
    try:
        end = time.time() + 15
        while time.time() < end:
            m = c.poll(0.5)
            if m is None:
                continue
            return m.error().name() if m.error() else m.value()
        return "nothing"
    except KafkaException as e:
        return e.args[0].name()
    finally:
        c.close()


with TempDir() as tmp:
    n = Node(tmp)
    n.sasl_port = free_port()
    n.props.update({
        "listeners": "PLAINTEXT://127.0.0.1:%d,SASL_PLAINTEXT://127.0.0.1:%d,"
                     "CONTROLLER://127.0.0.1:%d" % (n.port, n.sasl_port, n.ctl_port),
        "advertised.listeners": "PLAINTEXT://127.0.0.1:%d,SASL_PLAINTEXT://127.0.0.1:%d"
                                % (n.port, n.sasl_port),
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,"
            "SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "authorizer.class.name":
            "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin",
        "allow.everyone.if.no.acl.found": "false",
        "num.partitions": "1",
    })
    n.write_config()
    n.start()
    try:
        t.ok(n.wait_running() is not None, "a node with SASL users and the authorizer")
        a = admin(n)
        a.create_topics([NewTopic("orders", 1, 1), NewTopic("logs-a", 1, 1)])
        t.eq(produce(n, "admin", "orders"), None, "admin (a super user) produces")
        t.eq(produce(n, "alice", "orders"), "TOPIC_AUTHORIZATION_FAILED",
             "alice, with no binding, is refused")

        r = a.create_acls([
            acl("User:alice", "orders", ACLOperation.WRITE),
            acl("User:bob", "orders", ACLOperation.READ),
            acl("User:bob", "bob-g", ACLOperation.READ, rtype=ResourceType.GROUP),
            acl("User:carol", "logs-", ACLOperation.ALL,
                pattern=ACLResourcePatternType.PREFIXED),
            acl("User:carol", "logs-a", ACLOperation.WRITE, perm=ACLPermissionType.DENY),
            # librdkafka asks for its group's coordinator even with assign()
            acl("User:*", "g-", ACLOperation.READ, rtype=ResourceType.GROUP,
                pattern=ACLResourcePatternType.PREFIXED),
        ])
        t.eq(len(r["succeeded"]), 6, "admin creates six bindings")

        t.ok(wait_for(lambda: produce(n, "alice", "orders") is None, 5),
             "alice: produce to orders (WRITE)")
        t.eq(consume(n, "alice", "orders"), "TOPIC_AUTHORIZATION_FAILED",
             "alice: no READ on orders")
        t.eq(produce(n, "bob", "orders"), "TOPIC_AUTHORIZATION_FAILED",
             "bob: no WRITE on orders")
        t.eq(consume(n, "bob", "orders", group="bob-g"), b"from-admin",
             "bob: consumes orders in group bob-g")
        t.eq(consume(n, "bob", "orders", group="other-g"), "GROUP_AUTHORIZATION_FAILED",
             "bob: another group is refused")
        t.eq(produce(n, "carol", "logs-b"), None,
             "carol: ALL on logs-* creates logs-b by producing to it")
        t.eq(produce(n, "carol", "logs-a"), "TOPIC_AUTHORIZATION_FAILED",
             "carol: the DENY of WRITE on logs-a wins over ALL on logs-*")
        t.eq(consume(n, "carol", "logs-b"), b"from-carol", "carol: reads logs-b")
        t.eq(produce(n, None, "orders"), "TOPIC_AUTHORIZATION_FAILED",
             "an anonymous PLAINTEXT client is refused")

        # admin requests: checked per topic; a mixed one goes on without
        # the refused topics and gets them back in the answer
        a.create_acls([acl("User:alice", "alice-", ACLOperation.CREATE,
                           pattern=ACLResourcePatternType.PREFIXED),
                       acl("User:alice", "alice-", ACLOperation.DELETE,
                           pattern=ACLResourcePatternType.PREFIXED)])
        ka = kadmin_as(n, "alice")
        msg = ""
        try:
            ka.create_topics([NewTopic("alice-1", 1, 1), NewTopic("bob-1", 1, 1)])
        except TopicAuthorizationFailedError as e:
            msg = str(e)
        t.ok("topic='alice-1', error_code=0" in msg and
             "topic='bob-1', error_code=29" in msg,
             "CreateTopics of alice-1 and bob-1 as alice: alice-1 created, bob-1 "
             "TOPIC_AUTHORIZATION_FAILED, in request order")
        names = set(a.list_topics())
        t.ok("alice-1" in names and "bob-1" not in names,
             "the controller created alice-1 only (%s)" % sorted(names))
        try:
            ka.delete_topics(["orders"])
            t.ok(False, "alice may not delete orders")
        except TopicAuthorizationFailedError:
            t.ok(True, "alice may not delete orders (TOPIC_AUTHORIZATION_FAILED)")
        ka.delete_topics(["alice-1"])
        t.ok(wait_for(lambda: "alice-1" not in set(a.list_topics()), 10),
             "alice deletes alice-1")
        try:
            ka.describe_acls(ACLFilter(None, None, ACLOperation.ANY,
                                       ACLPermissionType.ANY,
                                       ResourcePatternFilter(ResourceType.ANY, None,
                                                             ACLResourcePatternType.ANY)))
            t.ok(False, "alice may not describe ACLs")
        except ClusterAuthorizationFailedError:
            t.ok(True, "alice may not describe ACLs (CLUSTER_AUTHORIZATION_FAILED)")
        ka.close()

        res = a.delete_acls([ACLFilter("User:alice", None, ACLOperation.ANY,
                                       ACLPermissionType.ANY,
                                       ResourcePatternFilter(ResourceType.ANY, None,
                                                             ACLResourcePatternType.ANY))])
        t.eq(len(res[0][1]), 3, "admin removes alice's three bindings")
        t0 = time.time()
        t.ok(wait_for(lambda: produce(n, "alice", "orders") ==
                      "TOPIC_AUTHORIZATION_FAILED", 5),
             "alice is refused again")
        t.diag("refused %.2f s after DeleteAcls answered (one produce attempt "
               "included)" % (time.time() - t0))
        log = n.logtext()
        for line in [l for l in log.splitlines() if "authorization:" in l][:20]:
            t.diag(line)
        t.ok("authorization: User:alice from 127.0.0.1 denied" in log and
             "authorization: User:bob from 127.0.0.1 denied Describe on Group "
             "other-g" in log, "denials name the authenticated principal")
        a.close()
        t.eq(n.crashes(), [], "no worker crashed")
    finally:
        n.stop()

t.done()
