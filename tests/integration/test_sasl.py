"""SASL/PLAIN on SASL_PLAINTEXT and SASL_SSL listeners, with real clients:
confluent-kafka (SaslHandshake v1 + SaslAuthenticate) and kafka-python
(handshake v0, raw tokens) produce and consume with the right password; a
wrong one is refused (SASL_AUTHENTICATION_FAILED after
connection.failed.authentication.delay.ms) and logged with the user and
the peer, never the password; Produce before a login, an unknown
mechanism and an oversized pre-auth frame end the connection; a flood of
1,000 connections announcing 100 MiB (and 1,000 stalled ones) leaves the
broker's anonymous memory within 32 MiB while a logged-in producer gets
every record acknowledged; ApiVersions
advertises the SASL APIs on SASL listeners only; a PLAINTEXT listener on
the same node keeps serving; SASL settings that cannot be served stop
startup with a message naming the key."""
import os
import resource
import socket
import struct
import subprocess
import time

from confluent_kafka import KafkaError, Producer
from kafka import KafkaConsumer, KafkaProducer

from rnclients import auth_errors, roundtrip
from rntest import (RUNNELD, Node, Tap, TempDir, free_port, recv_frame,
                    rss_bound_kib)
from rntls import Pki

t = Tap()
# the node inherits it: 2,000 flood connections and the test's own
_soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (_hard, _hard))
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'username="admin" password="admin-secret" user_admin="admin-secret" '
        'user_alice="alice-secret";')
JAAS2 = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
         'user_bob="bob s3cr;t = quoted";')
WRONG = "not-the-password-4711"
DELAY_MS = 400


def ck_roundtrip(conf, topic, count=300):
    return roundtrip(conf, topic, count, wait=30)


def ck_auth_error(conf):
    """The errors a producer reports with conf, after a few seconds."""
    return auth_errors(conf, "sasl-never")


def kpy_roundtrip(kw, topic, count=100):
    kp = KafkaProducer(**kw)
    for i in range(count):
        kp.send(topic, b"kpy-%d" % i)
    kp.flush(30)
    kp.close()
    kc = KafkaConsumer(topic, auto_offset_reset="earliest",
                       consumer_timeout_ms=10000, **kw)
    vals = [m.value for m in kc]
    kc.close()
    return vals == [b"kpy-%d" % i for i in range(count)]


def req(key, ver, corr, body=b""):
    cid = b"raw"
    h = struct.pack(">hhih", key, ver, corr, len(cid)) + cid
    return struct.pack(">i", len(h) + len(body)) + h + body


def kstr(s):
    return struct.pack(">h", len(s)) + s


def api_keys(port):
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    s.sendall(req(18, 0, 1))
    f = recv_frame(s)
    s.close()
    err, n = struct.unpack(">hi", f[4:10])
    return {struct.unpack(">h", f[10 + 6 * i:12 + 6 * i])[0] for i in range(n)}


def flood(port, count, size, body):
    """count connections that each announce a frame of size bytes and
    send body bytes of it (as many as the socket takes)."""
    out = []
    for _ in range(count):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        s.setblocking(False)
        try:
            s.send(struct.pack(">i", size) + body)
        except OSError:
            pass  # closed by the broker already
        out.append(s)
    return out


def all_closed(socks, timeout=20):
    """Has the broker closed every one of socks (EOF or reset)?"""
    left, end = list(socks), time.time() + timeout
    while left and time.time() < end:
        nxt = []
        for s in left:
            try:
                while True:
                    got = s.recv(65536)
                    if got == b"":
                        break
            except BlockingIOError:
                nxt.append(s)
            except OSError:
                pass
        left = nxt
        if left:
            time.sleep(0.2)
    return not left


def closed(s, timeout=5):
    s.settimeout(timeout)
    try:
        return s.recv(100) == b""
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


with TempDir() as tmp:
    pki = Pki(os.path.join(tmp, "pki"))
    pp, pq = free_port(), free_port()
    n = Node(tmp)
    n.props.update({
        "listeners": "PLAINTEXT://127.0.0.1:%d,SASL_PLAINTEXT://127.0.0.1:%d,"
                     "SASL_SSL://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d"
                     % (n.port, pp, pq, n.ctl_port),
        "advertised.listeners": "PLAINTEXT://127.0.0.1:%d,"
                                "SASL_PLAINTEXT://127.0.0.1:%d,"
                                "SASL_SSL://127.0.0.1:%d" % (n.port, pp, pq),
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,"
            "SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL,"
            "CONTROLLER:PLAINTEXT",
        "num.partitions": "1",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        # the SASL_SSL listener: the broker-wide fallback, and a quoted
        # password with blanks, ';' and '=' in it
        "sasl.jaas.config": JAAS2,
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": pki.keystore,
        "connection.failed.authentication.delay.ms": str(DELAY_MS),
    })
    n.write_config()
    n.start()
    plain_conf = {"bootstrap.servers": "127.0.0.1:%d" % pp,
                  "security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "PLAIN",
                  "sasl.username": "alice", "sasl.password": "alice-secret"}
    ssl_conf = {"bootstrap.servers": "127.0.0.1:%d" % pq,
                "security.protocol": "SASL_SSL", "sasl.mechanisms": "PLAIN",
                "sasl.username": "bob", "sasl.password": 'bob s3cr;t = quoted',
                "ssl.ca.location": pki.ca,
                "ssl.endpoint.identification.algorithm": "https"}
    try:
        t.ok(n.wait_running() is not None, "node with PLAINTEXT, SASL_PLAINTEXT "
             "and SASL_SSL listeners is up")
        log = n.logtext()
        t.ok("listener SASL_PLAINTEXT: SASL PLAIN, 2 user(s)" in log and
             "listener SASL_SSL: SASL PLAIN, 1 user(s)" in log,
             "the supervisor logged the users of each SASL listener")

        t.ok(ck_roundtrip(plain_conf, "sasl-plain"), "confluent-kafka over "
             "SASL_PLAINTEXT as alice: produced and consumed")
        t.ok(ck_roundtrip(ssl_conf, "sasl-ssl"), "confluent-kafka over SASL_SSL "
             "as bob (a quoted password from sasl.jaas.config): produced and "
             "consumed")
        t.ok(kpy_roundtrip({"bootstrap_servers": "127.0.0.1:%d" % pp,
                            "security_protocol": "SASL_PLAINTEXT",
                            "sasl_mechanism": "PLAIN",
                            "sasl_plain_username": "admin",
                            "sasl_plain_password": "admin-secret"}, "sasl-kpy"),
             "kafka-python over SASL_PLAINTEXT (handshake v0, raw token)")
        t.ok(kpy_roundtrip({"bootstrap_servers": "127.0.0.1:%d" % pq,
                            "security_protocol": "SASL_SSL",
                            "ssl_cafile": pki.ca,
                            "sasl_mechanism": "PLAIN",
                            "sasl_plain_username": "bob",
                            "sasl_plain_password": 'bob s3cr;t = quoted'},
                           "sasl-kpy-ssl"),
             "kafka-python over SASL_SSL")

        # the wrong password
        seen = ck_auth_error(dict(plain_conf, **{"sasl.password": WRONG}))
        t.ok(any(e.code() == KafkaError._AUTHENTICATION for e in seen),
             "confluent-kafka with a wrong password reports an authentication "
             "failure: %s" % (seen[:1],))
        seen = ck_auth_error(dict(ssl_conf, **{"sasl.password": WRONG}))
        t.ok(any(e.code() == KafkaError._AUTHENTICATION and
                 "Invalid username or password" in e.str() for e in seen),
             "the same over SASL_SSL, with the broker's message")
        try:
            KafkaProducer(bootstrap_servers="127.0.0.1:%d" % pp,
                          security_protocol="SASL_PLAINTEXT",
                          sasl_mechanism="PLAIN", sasl_plain_username="alice",
                          sasl_plain_password=WRONG, max_block_ms=5000,
                          api_version_auto_timeout_ms=5000).close()
            raised = False
        except Exception:
            raised = True
        t.ok(raised, "kafka-python with a wrong password fails to connect")
        log = n.logtext()
        fails = [l for l in log.splitlines()
                 if "SASL/PLAIN authentication failed for user 'alice'" in l]
        t.ok(fails and "from 127.0.0.1:" in fails[0] and
             "on listener SASL_PLAINTEXT" in fails[0],
             "the broker logged the user and the peer: %s" % fails[:1])
        t.ok(WRONG not in log and "alice-secret" not in log and
             "admin-secret" not in log and "s3cr;t" not in log,
             "no password, right or wrong, is in the log")

        # the same by hand: the answer, its delay, the close
        s = socket.create_connection(("127.0.0.1", pp), timeout=5)
        s.sendall(req(17, 1, 1, kstr(b"PLAIN")))
        f = recv_frame(s)
        t.ok(f is not None and f[4:6] == b"\0\0" and b"PLAIN" in f,
             "SaslHandshake v1 PLAIN accepted")
        t0 = time.time()
        tok = b"\0alice\0" + WRONG.encode()
        s.sendall(req(36, 1, 2, struct.pack(">i", len(tok)) + tok))
        f = recv_frame(s)
        took = time.time() - t0
        err = struct.unpack(">h", f[4:6])[0] if f else None
        t.eq(err, 58, "SaslAuthenticate with a wrong password: "
             "SASL_AUTHENTICATION_FAILED")
        t.ok(f is not None and b"Invalid username or password" in f,
             "with an error message")
        t.ok(took >= DELAY_MS / 1000.0 * 0.9, "answered after "
             "connection.failed.authentication.delay.ms (%.2f s)" % took)
        t.ok(closed(s), "and the connection closed")
        s.close()

        # Produce before a login
        s = socket.create_connection(("127.0.0.1", pp), timeout=5)
        body = struct.pack(">hhii", -1, 1, 1000, 0)  # txn id null, acks, timeout, 0 topics
        s.sendall(req(0, 3, 1, body))
        t.ok(closed(s), "Produce before authentication: disconnected")
        s.close()
        t.ok("API 0 before authentication: closing" in n.logtext(),
             "and logged")

        # an unknown mechanism
        s = socket.create_connection(("127.0.0.1", pp), timeout=5)
        s.sendall(req(17, 1, 1, kstr(b"SCRAM-SHA-256")))
        f = recv_frame(s)
        t.ok(f is not None and struct.unpack(">h", f[4:6])[0] == 33 and
             b"PLAIN" in f, "SaslHandshake SCRAM-SHA-256: "
             "UNSUPPORTED_SASL_MECHANISM with the enabled list")
        t.ok(closed(s), "and the connection closed")
        s.close()

        # an oversized frame before a login: cut off, nothing allocated
        s = socket.create_connection(("127.0.0.1", pp), timeout=5)
        s.sendall(struct.pack(">i", 600000) + b"\0" * 1000)
        t.ok(closed(s), "a 600,000-byte frame before authentication: "
             "disconnected (sasl.server.max.receive.size)")
        s.close()

        # a flood before any login: 1,000 connections announcing 100 MiB
        # and sending 64 KiB of it (a broker that sized a buffer by the
        # announced length, or read on, would hold 64 MiB and more), and
        # 1,000 announcing 500,000 bytes that stall; a producer logged in
        # meanwhile gets every record acknowledged
        anon0 = n.anon_kib()
        big = flood(pp, 1000, 100 * 1024 * 1024, b"\0" * 65536)
        stalled = flood(pp, 1000, 500000, b"abcd")
        acked = []
        prod = Producer(dict(plain_conf, **{"acks": "all"}))
        for i in range(2000):
            prod.produce("sasl-flood", b"v%d" % i,
                         on_delivery=lambda e, m: acked.append(e is None))
            prod.poll(0)
        left = prod.flush(60)
        anon1 = n.anon_kib()
        t.ok(left == 0 and len(acked) == 2000 and all(acked),
             "a logged-in producer during the flood: all of 2,000 records "
             "acknowledged (%d reports, %d errors, %d left)"
             % (len(acked), acked.count(False), left))
        t.ok(anon1 - anon0 < rss_bound_kib(32 * 1024),
             "the broker's anonymous RSS with 2,000 strangers connected grew "
             "%d KiB (< %d MiB)" % (anon1 - anon0,
                                    rss_bound_kib(32 * 1024) // 1024))
        t.ok(all_closed(big), "every connection announcing 100 MiB was "
             "closed by the broker")
        t.ok(not all_closed(stalled[:10], 0.5), "the stalled ones wait for "
             "their login (until its deadline)")
        for s in big + stalled:
            s.close()
        t.ok(ck_roundtrip(plain_conf, "sasl-after-flood", 10),
             "SASL serves as before once the flood is gone")

        # ApiVersions tells the truth per listener
        t.ok({17, 36} <= api_keys(pp), "ApiVersions on SASL_PLAINTEXT lists "
             "SaslHandshake and SaslAuthenticate")
        t.ok(not ({17, 36} & api_keys(n.port)), "ApiVersions on PLAINTEXT "
             "lists neither")
        s = socket.create_connection(("127.0.0.1", n.port), timeout=5)
        s.sendall(req(17, 1, 1, kstr(b"PLAIN")))
        t.ok(closed(s), "SaslHandshake on a PLAINTEXT listener: not served")
        s.close()

        # PLAINTEXT alongside
        r = subprocess.run(["kcat", "-C", "-b", n.bootstrap, "-t", "sasl-plain",
                            "-o", "beginning", "-e", "-c", "300"],
                           capture_output=True, timeout=30)
        t.ok(r.returncode == 0 and len(r.stdout.splitlines()) == 300,
             "a PLAINTEXT client reads what alice wrote over SASL")
        t.ok(ck_roundtrip(plain_conf, "sasl-after", 10), "SASL still serves "
             "after the refused clients")
        t.eq(n.crashes(), [], "no worker crashed")
    finally:
        n.stop()

    # settings that cannot be served stop startup, naming the key
    def bad(extra, name, want, what):
        p = {"listeners": "PLAINTEXT://127.0.0.1:%d,SASL_PLAINTEXT://127.0.0.1:%d,"
                          "CONTROLLER://127.0.0.1:%d"
                          % (free_port(), free_port(), free_port())}
        p["advertised.listeners"] = ",".join(
            l for l in p["listeners"].split(",") if not l.startswith("CONTROLLER"))
        p.update(extra)
        m = Node(tmp, name=name, props=p)
        e = dict(os.environ, RUNNEL_LOG_STDERR="1")
        r = subprocess.run([RUNNELD, "--config", m.config], capture_output=True,
                           text=True, timeout=20, env=e)
        errs = [l for l in r.stderr.splitlines() if l.startswith("<3>")]
        err = errs[0] if errs else ""
        t.ok(r.returncode != 0 and all(w in err for w in want),
             "%s: %s" % (what, err))
        t.ok("secret" not in r.stderr, "no password in that message")

    bad({}, "nojaas", ["listener.name.sasl_plaintext.plain.sasl.jaas.config"],
        "a SASL listener without users")
    bad({"sasl.jaas.config": JAAS, "sasl.enabled.mechanisms": "GSSAPI"},
        "gssapi", ["sasl.enabled.mechanisms", "GSSAPI"],
        "a mechanism not served")
    bad({"sasl.jaas.config": "org.apache.kafka.common.security.scram."
                             "ScramLoginModule required;"},
        "module", ["sasl.jaas.config", "PlainLoginModule"],
        "another login module")
    bad({"sasl.jaas.config": JAAS2, "inter.broker.listener.name":
         "SASL_PLAINTEXT"}, "ibl",
        ["inter-broker listener SASL_PLAINTEXT", "username and password"],
        "a SASL inter-broker listener without this node's own login")

t.done()
