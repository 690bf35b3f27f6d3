"""ACLs with the built-in authorizer (authorizer.class.name = Kafka's
StandardAuthorizer), driven by kafka-python's admin client and checked
with confluent-kafka and kcat on the data path. Every connection is
User:ANONYMOUS until authentication exists; allow.everyone.if.no.acl.found
lets it create the first bindings, as an operator bootstraps a cluster.

- Without an authorizer the ACL APIs answer SECURITY_DISABLED.
- CreateAcls, DescribeAcls (filters: exact, MATCH), DeleteAcls.
- Produce, consume (Fetch), Metadata and ListOffsets follow the bindings:
  a WRITE grant implies DESCRIBE, not READ; a topic named by someone
  else's binding is refused; a prefixed DENY of ALL refuses a family of
  topics; a topic no binding names stays open; DENY over ALLOW; a
  listing leaves out the topics one may not describe.
- Changes take effect within a second of the commit, and survive a
  restart (snapshot and log).
- Consumer groups: READ on the group, checked by the group coordinator
  with the principal the network worker forwards.
- An API that does not check ACLs yet is served to super.users only.
- super.users sees everything."""
import socket
import struct
import subprocess
import time

from confluent_kafka import Consumer, KafkaException, TopicPartition
from kafka.admin import (ACL, ACLFilter, ACLOperation, ACLPermissionType,
                         ACLResourcePatternType, ConfigResource,
                         ConfigResourceType, KafkaAdminClient,
                         ResourcePattern, ResourcePatternFilter, ResourceType)
from kafka.errors import SecurityDisabledError, TopicAuthorizationFailedError

from rnclients import produce_one
from rntest import Node, Tap, TempDir, wait_for

t = Tap()
ANON = "User:ANONYMOUS"
AUTHZ = {"authorizer.class.name":
         "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
         "allow.everyone.if.no.acl.found": "true", "num.partitions": "1"}


def admin(n):
    return KafkaAdminClient(bootstrap_servers=n.bootstrap, request_timeout_ms=15000)


def acl(name, op, perm=ACLPermissionType.ALLOW, principal=ANON, host="*",
        rtype=ResourceType.TOPIC, pattern=ACLResourcePatternType.LITERAL):
    return ACL(principal, host, op, perm, ResourcePattern(rtype, name, pattern))


def produce(n, topic, idempotent=False):
    """None when acknowledged, else the error's name."""
    return produce_one({"bootstrap.servers": n.bootstrap,
                        "enable.idempotence": idempotent}, topic)


def consume(n, topic):
    """The first record's value, or the error's name."""
    c = Consumer({"bootstrap.servers": n.bootstrap, "group.id": "unused",
                  "enable.auto.commit": False})
    c.assign([TopicPartition(topic, 0, 0)])
    try:
        deadline = time.time() + 10
        while time.time() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                return m.error().name()
            return m.value()
        return "nothing"
    finally:
        c.close()


def group_consume(n, group, topic):
    """(first value or error name, offset committed for partition 0)."""
    c = Consumer({"bootstrap.servers": n.bootstrap, "group.id": group,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False,
                  "session.timeout.ms": 6000})
    c.subscribe([topic])
    got = "nothing"
    try:
        deadline = time.time() + 20
        while time.time() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                got = m.error().name()
                break
            got = m.value()
            c.commit(message=m, asynchronous=False)
            break
        if isinstance(got, bytes):
            off = c.committed([TopicPartition(topic, 0)], timeout=10)[0].offset
        else:
            off = None
        return got, off
    except KafkaException as e:
        return e.args[0].name(), None
    finally:
        c.close()


def listed(n):
    c = Consumer({"bootstrap.servers": n.bootstrap, "group.id": "unused"})
    try:
        return set(c.list_topics(timeout=10).topics)
    finally:
        c.close()


with TempDir() as tmp:
    n = Node(tmp, props={"num.partitions": "1"})
    n.start()
    try:
        t.ok(n.wait_running() is not None, "a node without an authorizer")
        a = admin(n)
        try:
            a.describe_acls(ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                                      ResourcePatternFilter(ResourceType.ANY, None,
                                                            ACLResourcePatternType.ANY)))
            t.ok(False, "DescribeAcls without an authorizer: SECURITY_DISABLED")
        except SecurityDisabledError:
            t.ok(True, "DescribeAcls without an authorizer: SECURITY_DISABLED")
        a.close()
    finally:
        n.stop()

    n.props.update(AUTHZ)
    n.write_config()
    n.start()
    try:
        t.ok(n.wait_running() is not None, "the node with the built-in authorizer")
        for topic in ("orders", "secret", "deny-1", "free"):
            t.eq(produce(n, topic), None, "before any binding, %s is open "
                 "(allow.everyone.if.no.acl.found)" % topic)
        a = admin(n)
        r = a.create_acls([
            acl("orders", ACLOperation.WRITE),
            acl("secret", ACLOperation.READ, principal="User:alice"),
            acl("deny-", ACLOperation.ALL, perm=ACLPermissionType.DENY,
                pattern=ACLResourcePatternType.PREFIXED),
        ])
        t.eq((len(r["succeeded"]), len(r["failed"])), (3, 0), "CreateAcls: three bindings")
        r = a.create_acls([acl("orders", ACLOperation.WRITE)])
        t.eq(len(r["succeeded"]), 1, "creating one again succeeds (nothing new)")
        r = a.create_acls([ACL(ANON, "*", ACLOperation.READ, ACLPermissionType.ALLOW,
                               ResourcePattern(ResourceType.CLUSTER, "not-the-cluster",
                                               ACLResourcePatternType.LITERAL))])
        t.eq(len(r["failed"]), 1, "a CLUSTER binding not named kafka-cluster is refused")

        allf = ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                         ResourcePatternFilter(ResourceType.ANY, None,
                                               ACLResourcePatternType.ANY))
        got, err = a.describe_acls(allf)
        t.eq(len(got), 3, "DescribeAcls lists the three (%s)" % err)
        match = ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                          ResourcePatternFilter(ResourceType.TOPIC, "deny-1",
                                                ACLResourcePatternType.MATCH))
        got, err = a.describe_acls(match)
        t.ok(len(got) == 1 and got[0].resource_pattern.resource_name == "deny-",
             "a MATCH filter finds the prefixed binding that covers deny-1")

        t.ok(wait_for(lambda: produce(n, "orders") is None, 5),
             "orders: WRITE granted, produce acknowledged")
        t.eq(consume(n, "orders"), "TOPIC_AUTHORIZATION_FAILED",
             "orders: WRITE does not grant READ")
        t.eq(produce(n, "secret"), "TOPIC_AUTHORIZATION_FAILED",
             "secret: named by alice's binding, refused to others")
        t.eq(produce(n, "deny-1"), "TOPIC_AUTHORIZATION_FAILED",
             "deny-1: the prefixed DENY of ALL refuses it")
        t.eq(produce(n, "free"), None, "free: no binding names it, still open")
        t.eq(produce(n, "orders", idempotent=True), None,
             "an idempotent producer gets an id (WRITE on some topic)")
        names = listed(n)
        t.ok("orders" in names and "free" in names and "secret" not in names and
             "deny-1" not in names, "a listing leaves out what one may not describe "
             "(%s)" % sorted(names))
        r = subprocess.run(["kcat", "-b", n.bootstrap, "-P", "-t", "secret", "-p", "0"],
                           input=b"x\n", capture_output=True, timeout=30)
        t.ok(r.returncode != 0 or b"uthoriz" in r.stderr,
             "kcat cannot produce to secret either (%s)" % r.stderr[-120:])

        # DENY over ALLOW, and changes within a second
        a.create_acls([acl("orders", ACLOperation.READ)])
        t.ok(wait_for(lambda: consume(n, "orders") == b"v", 10),
             "orders: READ granted, consumed")
        a.create_acls([acl("orders", ACLOperation.READ, perm=ACLPermissionType.DENY,
                           host="127.0.0.1")])
        t.ok(wait_for(lambda: consume(n, "orders") == "TOPIC_AUTHORIZATION_FAILED", 10),
             "a DENY from this host wins over the ALLOW")
        deny = ACLFilter(ANON, "127.0.0.1", ACLOperation.READ, ACLPermissionType.DENY,
                         ResourcePatternFilter(ResourceType.TOPIC, "orders",
                                               ACLResourcePatternType.LITERAL))
        res = a.delete_acls([deny])
        t.ok(len(res) == 1 and len(res[0][1]) == 1, "DeleteAcls removes exactly the DENY")
        t0 = time.time()
        t.ok(wait_for(lambda: consume(n, "orders") == b"v", 10),
             "READ is back once the DENY is deleted")
        t.diag("consume allowed again %.2f s after DeleteAcls answered" % (time.time() - t0))

        # consumer groups: READ on the group (and the topic)
        a.create_acls([acl("g-ok", ACLOperation.READ, rtype=ResourceType.GROUP),
                       acl("g-secret", ACLOperation.READ, principal="User:alice",
                           rtype=ResourceType.GROUP)])
        t.eq(group_consume(n, "g-ok", "orders"), (b"v", 1),
             "group g-ok (READ granted): subscribes, consumes orders, commits offset 1")
        t.eq(group_consume(n, "g-secret", "orders")[0], "GROUP_AUTHORIZATION_FAILED",
             "group g-secret (alice's): GROUP_AUTHORIZATION_FAILED")

        # DescribeConfigs: DESCRIBE_CONFIGS on the topic (WRITE does not imply it)
        res = a.describe_configs([ConfigResource(ConfigResourceType.TOPIC, "secret"),
                                  ConfigResource(ConfigResourceType.TOPIC, "free")])
        errs = {x[3]: x[0] for r in res for x in r.resources}
        t.eq(errs, {"secret": 29, "free": 0},
             "DescribeConfigs: secret refused (TOPIC_AUTHORIZATION_FAILED), free described")

        # DeleteTopics: DELETE on the topic (the prefixed DENY of ALL)
        try:
            a.delete_topics(["deny-1"])
            t.ok(False, "DeleteTopics of deny-1 (the prefixed DENY): refused")
        except TopicAuthorizationFailedError:
            t.ok(True, "DeleteTopics of deny-1 (the prefixed DENY): refused")

        # an API that checks no ACLs yet: super users only (UnregisterBroker)
        s = socket.create_connection(("127.0.0.1", n.port), timeout=10)
        hdr = struct.pack(">hhih", 64, 0, 7, 1) + b"x" + b"\x00"
        body = struct.pack(">i", 99) + b"\x00"
        s.sendall(struct.pack(">i", len(hdr) + len(body)) + hdr + body)
        t.eq(s.recv(100), b"", "UnregisterBroker from a non-super user: connection "
             "closed")
        s.close()
        t.ok(wait_for(lambda: "served to super.users only" in n.logtext(), 10),
             "and the log says why")
        t.ok("authorization: User:ANONYMOUS from 127.0.0.1 denied" in n.logtext(),
             "denials are logged with the principal and the host")
        a.close()
    finally:
        n.stop()

    # the bindings survive a restart; a super user passes every check
    n.props["super.users"] = "User:admin;" + ANON
    n.write_config()
    n.start()
    try:
        t.ok(n.wait_running() is not None, "restarted, ANONYMOUS a super user")
        a = admin(n)
        got, err = a.describe_acls(allf)
        t.eq(len(got), 6, "the six bindings survived the restart")
        t.eq(produce(n, "secret"), None, "a super user writes to secret")
        t.eq(consume(n, "secret"), b"v", "and reads it")
        a.close()
        t.eq(n.crashes(), [], "no worker crashed")
    finally:
        n.stop()

t.done()
