"""SASL/SCRAM-SHA-256 and SCRAM-SHA-512 with credentials in the metadata
log: a node with a SASL_PLAINTEXT listener (PLAIN,SCRAM-SHA-256,
SCRAM-SHA-512; a PLAIN admin user) and a PLAINTEXT one; runnel-configs
creates alice's SCRAM-SHA-256 and bob's SCRAM-SHA-512 credentials
(kafka-python 2.0.2's admin client has no SCRAM API, so only the tool);
confluent-kafka (SaslHandshake v1 + SaslAuthenticate) and kafka-python
(handshake v0, raw tokens) produce and consume as alice, confluent-kafka
as bob with SHA-512; a wrong password and an unknown user are refused
(SASL_AUTHENTICATION_FAILED) and logged with the user, never the
password; describe lists mechanisms and iterations; the API's errors
(too few iterations, an unknown mechanism, a user twice, deleting what
is not there); deleting alice's credential stops her next login; the
credentials survive a restart; with the authorizer on, the ACLs of
User:alice apply to her SCRAM login, and the SCRAM admin APIs need
ALTER/DESCRIBE on the cluster."""
import base64
import hashlib
import hmac
import os
import socket
import struct
import time

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from kafka import KafkaConsumer, KafkaProducer

from rnclients import auth_errors, roundtrip
from rntest import Node, Tap, TempDir, free_port, recv_frame, run_tool, wait_for

t = Tap()
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'username="admin" password="admin-secret" user_admin="admin-secret";')
ALICE_PW = "alice-secret"
BOB_PW = "bob-s3cret,with=odd"
WRONG = "not-the-password-4711"
DELAY_MS = 300
BUILD = os.environ.get("RUNNEL_BUILDDIR", ".")
CONFIGS = os.path.join(BUILD, "runnel-configs")


def scram_conf(n, mech, user, pw):
    return {"bootstrap.servers": "127.0.0.1:%d" % n.sasl_port,
            "security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": mech,
            "sasl.username": user, "sasl.password": pw}


def ck_roundtrip(conf, topic, count=100):
    return roundtrip(conf, topic, count)


def ck_auth_error(conf):
    """Did a producer with conf report an authentication error?"""
    return any(e.code() == KafkaError._AUTHENTICATION
               for e in auth_errors(conf, "scram-never"))


def kpy_roundtrip(n, mech, user, pw, topic, count=50):
    kw = {"bootstrap_servers": "127.0.0.1:%d" % n.sasl_port,
          "security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": mech,
          "sasl_plain_username": user, "sasl_plain_password": pw}
    kp = KafkaProducer(**kw)
    for i in range(count):
        kp.send(topic, b"kpy-%d" % i)
    kp.flush(20)
    kp.close()
    kc = KafkaConsumer(topic, auto_offset_reset="earliest",
                       consumer_timeout_ms=8000, **kw)
    vals = [m.value for m in kc]
    kc.close()
    return vals == [b"kpy-%d" % i for i in range(count)]


def configs(n, *args):
    return run_tool(CONFIGS, n.bootstrap, *args)


def req(key, ver, corr, body=b"", flexible=False):
    cid = b"raw"
    h = struct.pack(">hhih", key, ver, corr, len(cid)) + cid
    if flexible:
        h += b"\0"  # no tagged fields
    return struct.pack(">i", len(h) + len(body)) + h + body


def uvarint(v):
    out = b""
    while v >= 0x80:
        out += bytes([(v & 0x7f) | 0x80])
        v >>= 7
    return out + bytes([v])


def cstr(s):
    return uvarint(len(s) + 1) + s


def cbytes(b):
    return uvarint(len(b) + 1) + b


def alter_raw(port, dels, ups):
    """AlterUserScramCredentials v0 on a plain socket: [(user, error)]."""
    return alter_raw_on(lambda: socket.create_connection(("127.0.0.1", port),
                                                         timeout=10),
                        dels, ups)


def alter_raw_on(connect, dels, ups):
    body = uvarint(len(dels) + 1)
    for name, mech in dels:
        body += cstr(name.encode()) + struct.pack(">b", mech) + b"\0"
    body += uvarint(len(ups) + 1)
    for name, mech, it, salt, salted in ups:
        body += (cstr(name.encode()) + struct.pack(">bi", mech, it) +
                 cbytes(salt) + cbytes(salted) + b"\0")
    body += b"\0"
    s = connect()
    s.sendall(req(51, 0, 7, body, flexible=True))
    f = recv_frame(s)
    s.close()
    # corr, header tags, throttle, results
    p = 4 + 1 + 4
    out = []

    def rvar():
        nonlocal p
        v, shift = 0, 0
        while True:
            b = f[p]
            p += 1
            v |= (b & 0x7f) << shift
            shift += 7
            if not b & 0x80:
                return v

    cnt = rvar() - 1
    for _ in range(cnt):
        ln = rvar() - 1
        user = f[p:p + ln].decode()
        p += ln
        err = struct.unpack(">h", f[p:p + 2])[0]
        p += 2
        ln = rvar() - 1
        p += max(ln, 0)
        rvar()  # tags
        out.append((user, err))
    return sorted(out)


def sasl_auth(s, corr, token):
    """One SaslAuthenticate v1: (error, server token)."""
    s.sendall(req(36, 1, corr, struct.pack(">i", len(token)) + token))
    f = recv_frame(s)
    err, ml = struct.unpack(">hh", f[4:8])
    p = 8 + max(ml, 0)
    bl = struct.unpack(">i", f[p:p + 4])[0]
    return err, f[p + 4:p + 4 + max(bl, 0)]


def scram_login(port, mech, user, pw):
    """A SCRAM login by hand (RFC 5802); the socket, or None."""
    name = "SCRAM-SHA-256" if mech == 1 else "SCRAM-SHA-512"
    h = hashlib.sha256 if mech == 1 else hashlib.sha512
    s = socket.create_connection(("127.0.0.1", port), timeout=10)
    s.sendall(req(17, 1, 1, struct.pack(">h", len(name)) + name.encode()))
    recv_frame(s)
    cnonce = "fyko+d2lbbFgONRv9qkxdawL"
    bare = "n=%s,r=%s" % (user, cnonce)
    err, sfirst = sasl_auth(s, 2, ("n,," + bare).encode())
    if err:
        return None
    attrs = dict(a.split("=", 1) for a in sfirst.decode().split(","))
    salt = base64.b64decode(attrs["s"])
    sp = salted(mech, pw, salt, int(attrs["i"]))
    ckey = hmac.new(sp, b"Client Key", h).digest()
    final = "c=biws,r=" + attrs["r"]
    auth = ",".join([bare, sfirst.decode(), final]).encode()
    sig = hmac.new(h(ckey).digest(), auth, h).digest()
    proof = bytes(a ^ b for a, b in zip(ckey, sig))
    err, sfinal = sasl_auth(s, 3, (final + ",p=" +
                                   base64.b64encode(proof).decode()).encode())
    skey = hmac.new(sp, b"Server Key", h).digest()
    want = b"v=" + base64.b64encode(hmac.new(skey, auth, h).digest())
    if err or sfinal != want:
        return None
    return s


def salted(mech, pw, salt, it):
    h = "sha256" if mech == 1 else "sha512"
    return hashlib.pbkdf2_hmac(h, pw.encode(), salt, it)


with TempDir() as tmp:
    n = Node(tmp)
    n.sasl_port = free_port()
    base = {
        "listeners": "PLAINTEXT://127.0.0.1:%d,SASL_PLAINTEXT://127.0.0.1:%d,"
                     "CONTROLLER://127.0.0.1:%d" % (n.port, n.sasl_port, n.ctl_port),
        "advertised.listeners": "PLAINTEXT://127.0.0.1:%d,SASL_PLAINTEXT://127.0.0.1:%d"
                                % (n.port, n.sasl_port),
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,"
            "SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "connection.failed.authentication.delay.ms": str(DELAY_MS),
        "num.partitions": "1",
    }
    n.props.update(base)
    n.write_config()
    n.start()
    try:
        t.ok(n.wait_running() is not None, "a node with PLAIN, SCRAM-SHA-256 "
             "and SCRAM-SHA-512 on its SASL_PLAINTEXT listener")

        r = configs(n, "--alter", "--entity-type", "users", "--entity-name",
                    "alice", "--add-config",
                    "SCRAM-SHA-256=[iterations=8192,password=%s]" % ALICE_PW)
        t.ok(r.returncode == 0 and "Completed updating config for user alice"
             in r.stdout, "runnel-configs adds alice's SCRAM-SHA-256 "
             "credential: %s%s" % (r.stdout.strip(), r.stderr.strip()))
        r = configs(n, "--alter", "--entity-type", "users", "--entity-name",
                    "bob", "--add-config",
                    "SCRAM-SHA-512=[password=%s]" % BOB_PW)
        t.ok(r.returncode == 0, "and bob's SCRAM-SHA-512 one (default "
             "iterations): %s" % r.stderr.strip())
        r = configs(n, "--describe", "--entity-type", "users")
        t.ok("SCRAM credential configs for user-principal 'alice' are "
             "SCRAM-SHA-256=iterations=8192" in r.stdout and
             "SCRAM credential configs for user-principal 'bob' are "
             "SCRAM-SHA-512=iterations=4096" in r.stdout,
             "describe lists both users, mechanisms and iterations: %r"
             % r.stdout)
        r = configs(n, "--describe", "--entity-type", "users",
                    "--entity-name", "nobody")
        t.ok(r.returncode != 0 and "RESOURCE_NOT_FOUND" in r.stdout,
             "describing an unknown user: RESOURCE_NOT_FOUND")
        r = configs(n, "--alter", "--entity-type", "users", "--entity-name",
                    "carol", "--add-config",
                    "SCRAM-SHA-256=[iterations=100,password=x]")
        t.ok(r.returncode != 0 and "4096" in r.stderr,
             "the tool refuses fewer than 4096 iterations")

        # the API's own checks, on a raw request
        s256 = salted(1, "pw", b"salt", 4096)
        t.eq(alter_raw(n.port, [], [("carol", 1, 100, b"salt", s256)]),
             [("carol", 93)], "iterations 100: UNACCEPTABLE_CREDENTIAL")
        t.eq(alter_raw(n.port, [], [("carol", 1, 20000, b"salt", s256)]),
             [("carol", 93)], "iterations 20000: UNACCEPTABLE_CREDENTIAL")
        t.eq(alter_raw(n.port, [], [("carol", 3, 4096, b"salt", s256)]),
             [("carol", 33)], "mechanism 3: UNSUPPORTED_SASL_MECHANISM")
        t.eq(alter_raw(n.port, [("carol", 1)], [("carol", 1, 4096, b"salt",
                                                 s256)]),
             [("carol", 91)], "deleting what is not there first: "
             "RESOURCE_NOT_FOUND")
        t.eq(alter_raw(n.port, [], [("dave", 1, 4096, b"salt", s256),
                                    ("dave", 2, 4096, b"salt",
                                     salted(2, "pw", b"salt", 4096))]),
             [("dave", 92)], "the same user twice: DUPLICATE_RESOURCE")
        t.eq(alter_raw(n.port, [], [("", 1, 4096, b"salt", s256)]),
             [("", 93)], "an empty user name: UNACCEPTABLE_CREDENTIAL")
        r = configs(n, "--describe", "--entity-type", "users",
                    "--entity-name", "dave")
        t.ok(r.returncode != 0, "nothing of the refused requests was written")

        t.ok(ck_roundtrip(scram_conf(n, "SCRAM-SHA-256", "alice", ALICE_PW),
                          "scram-ck-alice"),
             "confluent-kafka as alice (SCRAM-SHA-256): produced and consumed")
        t.ok(ck_roundtrip(scram_conf(n, "SCRAM-SHA-512", "bob", BOB_PW),
                          "scram-ck-bob"),
             "confluent-kafka as bob (SCRAM-SHA-512, ',' and '=' in the "
             "password): produced and consumed")
        t.ok(kpy_roundtrip(n, "SCRAM-SHA-256", "alice", ALICE_PW,
                           "scram-kpy-alice"),
             "kafka-python as alice (SCRAM-SHA-256, raw tokens)")
        t.ok(kpy_roundtrip(n, "SCRAM-SHA-512", "bob", BOB_PW, "scram-kpy-bob"),
             "kafka-python as bob (SCRAM-SHA-512)")
        t.ok(ck_roundtrip({"bootstrap.servers": "127.0.0.1:%d" % n.sasl_port,
                           "security.protocol": "SASL_PLAINTEXT",
                           "sasl.mechanisms": "PLAIN", "sasl.username": "admin",
                           "sasl.password": "admin-secret"}, "scram-plain", 20),
             "PLAIN still serves beside SCRAM")

        t0 = time.time()
        t.ok(ck_auth_error(scram_conf(n, "SCRAM-SHA-256", "alice", WRONG)),
             "alice with a wrong password: authentication error")
        t.ok(ck_auth_error(scram_conf(n, "SCRAM-SHA-512", "alice", ALICE_PW)),
             "alice over SCRAM-SHA-512 (she has no credential for it): refused")
        t.ok(ck_auth_error(scram_conf(n, "SCRAM-SHA-256", "mallory", "x")),
             "an unknown user: refused")
        log = n.logtext()
        t.ok("SASL/SCRAM-SHA-256 authentication failed for user 'alice' from "
             "127.0.0.1:" in log and "wrong password" in log,
             "the failure is logged with the user and the peer")
        t.ok("for user 'mallory'" in log, "and the unknown user's too")
        t.ok(WRONG not in log and ALICE_PW not in log and BOB_PW not in log,
             "no password in the log")

        # a malformed client-first: closed, logged
        s = socket.create_connection(("127.0.0.1", n.sasl_port), timeout=5)
        s.sendall(req(17, 1, 1, struct.pack(">h", 13) + b"SCRAM-SHA-256"))
        f = recv_frame(s)
        t.ok(f is not None and struct.unpack(">h", f[4:6])[0] == 0 and
             b"SCRAM-SHA-512" in f, "SaslHandshake SCRAM-SHA-256 taken; the "
             "enabled mechanisms listed")
        s.sendall(req(36, 1, 2, struct.pack(">i", 9) + b"garbage!!"))
        f = recv_frame(s)
        t.ok(f is not None and struct.unpack(">h", f[4:6])[0] == 58,
             "a malformed client-first: SASL_AUTHENTICATION_FAILED")
        s.settimeout(5)
        try:
            t.ok(s.recv(10) == b"", "and the connection closed")
        except ConnectionResetError:
            t.ok(True, "and the connection closed")
        s.close()
        t.ok(wait_for(lambda: "malformed client-first message" in
                      n.logtext()), "and logged")

        r = configs(n, "--alter", "--entity-type", "users", "--entity-name",
                    "alice", "--delete-config", "SCRAM-SHA-256")
        t.ok(r.returncode == 0, "alice's credential deleted: %s"
             % r.stderr.strip())
        t.ok(ck_auth_error(scram_conf(n, "SCRAM-SHA-256", "alice", ALICE_PW)),
             "and her next login fails")
        r = configs(n, "--alter", "--entity-type", "users", "--entity-name",
                    "alice", "--delete-config", "SCRAM-SHA-256")
        t.ok(r.returncode != 0 and "RESOURCE_NOT_FOUND" in r.stderr,
             "deleting it again: RESOURCE_NOT_FOUND")
        r = configs(n, "--alter", "--entity-type", "users", "--entity-name",
                    "alice", "--add-config",
                    "SCRAM-SHA-256=[iterations=4096,password=%s]" % ALICE_PW)
        t.ok(r.returncode == 0, "alice's credential set again")
        t.eq(n.crashes(), [], "no worker crashed")
    finally:
        n.stop()

    # the credentials are in the metadata log: a restart keeps them; the
    # authorizer on, User:alice's ACLs apply to her SCRAM login
    n.props.update({
        "authorizer.class.name":
            "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin;User:ANONYMOUS",
        "allow.everyone.if.no.acl.found": "false",
    })
    n.write_config()
    n.start()
    try:
        t.ok(n.wait_running() is not None, "restarted with the authorizer on")
        r = configs(n, "--describe", "--entity-type", "users")
        t.ok("'alice' are SCRAM-SHA-256=iterations=4096" in r.stdout and
             "'bob' are SCRAM-SHA-512=iterations=4096" in r.stdout,
             "the credentials survived the restart")
        r = run_tool(os.path.join(BUILD, "runnel-acls"), n.bootstrap, "--add",
                     "--allow-principal", "User:alice", "--operation", "Write",
                     "--operation", "Describe", "--topic", "scram-acl")
        t.ok(r.returncode == 0, "an ACL lets User:alice write scram-acl: %s"
             % r.stderr.strip())
        r = run_tool(os.path.join(BUILD, "runnel-topics"), n.bootstrap,
                     "--create", "--topic", "scram-acl", "--partitions", "1",
                     "--replication-factor", "1")

        def produce(conf, topic):
            res = []
            p = Producer(dict(conf, **{"message.timeout.ms": 8000}))
            p.produce(topic, b"x", on_delivery=lambda e, m: res.append(e))
            p.flush(12)
            return "no report" if not res else (
                None if res[0] is None else res[0].name())

        alice = scram_conf(n, "SCRAM-SHA-256", "alice", ALICE_PW)
        bob = scram_conf(n, "SCRAM-SHA-512", "bob", BOB_PW)
        t.eq(produce(alice, "scram-acl"), None,
             "alice, logged in with SCRAM, writes where her ACL lets her")
        t.eq(produce(bob, "scram-acl"), "TOPIC_AUTHORIZATION_FAILED",
             "bob, with no ACL, may not")
        c = Consumer(dict(alice, **{"group.id": "g-alice",
                                    "enable.auto.commit": False}))
        c.assign([TopicPartition("scram-acl", 0, 0)])
        m, end = None, time.time() + 10
        while m is None and time.time() < end:
            m = c.poll(0.5)
        c.close()
        t.ok(m is not None and m.error() is not None and
             m.error().name() in ("TOPIC_AUTHORIZATION_FAILED",
                                  "GROUP_AUTHORIZATION_FAILED"),
             "nor may alice read it (no READ ACL): %s"
             % (m.error().name() if m is not None and m.error() else m))
        t.ok(wait_for(lambda: "authorization: User:bob" in n.logtext()),
             "the denial names User:bob")
        # the SCRAM admin APIs need DESCRIBE / ALTER on the cluster
        s = scram_login(n.sasl_port, 2, "bob", BOB_PW)
        t.ok(s is not None, "a hand-made SCRAM-SHA-512 login as bob, the "
             "server signature checked")
        if s is not None:
            s.sendall(req(50, 0, 4, b"\0\0", flexible=True))
            f = recv_frame(s)
            t.eq(struct.unpack(">h", f[9:11])[0], 31, "bob may not describe "
                 "SCRAM credentials: CLUSTER_AUTHORIZATION_FAILED")
            s.close()
            t.eq(alter_raw_on(lambda: scram_login(n.sasl_port, 2, "bob",
                                                  BOB_PW), [("bob", 2)], []),
                 [("bob", 31)], "nor alter them")
        t.eq(alter_raw(n.port, [], [("erin", 1, 4096, b"salt", s256)]),
             [("erin", 0)], "a super user may")
        t.eq(n.crashes(), [], "no worker crashed")
    finally:
        n.stop()

t.done()
