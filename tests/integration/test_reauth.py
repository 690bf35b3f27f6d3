"""connections.max.reauth.ms (KIP-368) on a SASL_PLAINTEXT listener,
set per listener (listener.name.sasl_plaintext.connections.max.reauth.ms
= 2000). By hand on one socket: SaslAuthenticate v1 answers
session_lifetime_ms 2000; a request within the session is answered; a
re-authentication (SaslHandshake v1 + SaslAuthenticate, same user and
mechanism) works on the live connection after the session ended and
gives it a new session; a request after the session's end without one
closes the connection, with a log line; re-authenticating as another
user, or with another mechanism, is refused; a user whose credential was
deleted mid-session is refused at re-authentication. With
confluent-kafka (librdkafka 2.0.2, which does not re-authenticate: the
broker closes its connection at its first request after the session
and it logs in again), an idempotent producer sends across four
lifetimes with no delivery error (only the transient disconnect notices
of its expired sessions) and every record read back once; a producer
whose credential is deleted is cut off within one lifetime (plus the
image's second). The PLAINTEXT listener is untouched."""
import base64
import hashlib
import hmac
import os
import socket
import struct
import subprocess
import time

from confluent_kafka import Consumer, KafkaError, Producer

from rnclients import add_sasl_plaintext
from rntest import Node, Tap, TempDir, recv_frame, run_tool

t = Tap()
BUILD = os.environ.get("RUNNEL_BUILDDIR", ".")
STORAGE = os.path.join(BUILD, "runnel-storage")
CONFIGS = os.path.join(BUILD, "runnel-configs")
LIFE_MS = 2000
USERS = {"alice": "alice-secret", "bob": "bob-secret",
         "carol": "carol-secret", "dave": "dave-secret",
         "erin": "erin-secret"}


def req(key, ver, corr, body=b""):
    cid = b"raw"
    h = struct.pack(">hhih", key, ver, corr, len(cid)) + cid
    return struct.pack(">i", len(h) + len(body)) + h + body


def sasl_auth(s, corr, token):
    """SaslAuthenticate v1: (error, server token, session_lifetime_ms), or
    None if the connection closed."""
    s.sendall(req(36, 1, corr, struct.pack(">i", len(token)) + token))
    f = recv_frame(s)
    if f is None:
        return None
    err, ml = struct.unpack(">hh", f[4:8])
    p = 8 + max(ml, 0)
    bl = struct.unpack(">i", f[p:p + 4])[0]
    tok = f[p + 4:p + 4 + max(bl, 0)]
    p += 4 + max(bl, 0)
    return err, tok, struct.unpack(">q", f[p:p + 8])[0]


def handshake(s, name):
    """SaslHandshake v1: its error code, or None if closed."""
    s.sendall(req(17, 1, 1, struct.pack(">h", len(name)) + name.encode()))
    f = recv_frame(s)
    return None if f is None else struct.unpack(">h", f[4:6])[0]


def scram(s, user, pw, mech="SCRAM-SHA-256"):
    """A SCRAM-SHA-256/512 login on s: the session lifetime, or the
    error code (negative: -1 the connection closed)."""
    h = hashlib.sha256 if mech == "SCRAM-SHA-256" else hashlib.sha512
    e = handshake(s, mech)
    if e is None:
        return -1
    if e:
        return -e
    bare = "n=%s,r=%s" % (user, base64.b64encode(os.urandom(18)).decode())
    r = sasl_auth(s, 2, ("n,," + bare).encode())
    if r is None:
        return -1
    if r[0]:
        return -r[0]
    sfirst = r[1].decode()
    attrs = dict(a.split("=", 1) for a in sfirst.split(","))
    sp = hashlib.pbkdf2_hmac(h().name, pw.encode(),
                             base64.b64decode(attrs["s"]), int(attrs["i"]))
    ckey = hmac.new(sp, b"Client Key", h).digest()
    final = "c=biws,r=" + attrs["r"]
    auth = ",".join([bare, sfirst, final]).encode()
    sig = hmac.new(h(ckey).digest(), auth, h).digest()
    proof = bytes(a ^ b for a, b in zip(ckey, sig))
    r = sasl_auth(s, 3, (final + ",p=" +
                         base64.b64encode(proof).decode()).encode())
    if r is None:
        return -1
    return -r[0] if r[0] else r[2]


def metadata_ok(s):
    """A Metadata v1 (no topics) answered on s?"""
    try:
        s.sendall(req(3, 1, 9, struct.pack(">i", 0)))
        f = recv_frame(s)
    except OSError:
        return False
    return f is not None and struct.unpack(">i", f[:4])[0] == 9


def closed(s):
    try:
        return recv_frame(s) is None
    except OSError:
        return True


def login(n, user, mech="SCRAM-SHA-256"):
    s = socket.create_connection(("127.0.0.1", n.sasl_port), timeout=10)
    return s, scram(s, user, USERS[user], mech)


def ck_conf(n, user):
    return {"bootstrap.servers": "127.0.0.1:%d" % n.sasl_port,
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "SCRAM-SHA-256", "sasl.username": user,
            "sasl.password": USERS[user]}


def log_count(n, text):
    with open(n.logfile, errors="replace") as f:
        return f.read().count(text)


EXPIRED = "without re-authentication (connections.max.reauth.ms): closing"

with TempDir() as tmp:
    n = Node(tmp)
    add_sasl_plaintext(n, ("SCRAM-SHA-256", "SCRAM-SHA-512"))
    n.props.update({
        "listener.name.sasl_plaintext.connections.max.reauth.ms":
            str(LIFE_MS),
        "connection.failed.authentication.delay.ms": "50",
        "num.partitions": "1",
    })
    n.write_config()
    args = [STORAGE, "format", "--config", n.config]
    for u, pw in USERS.items():
        args += ["--add-scram", "SCRAM-SHA-256=[name=%s,password=%s]" % (u, pw)]
    args += ["--add-scram", "SCRAM-SHA-512=[name=alice,password=%s]"
             % USERS["alice"]]
    subprocess.run(args, check=True, capture_output=True, timeout=60)
    n.start()
    try:
        t.ok(n.wait_running() is not None, "a node with a 2 s SASL session "
             "on its SASL_PLAINTEXT listener")

        s, life = login(n, "alice")
        t.eq(life, LIFE_MS, "SaslAuthenticate v1 answers "
             "session_lifetime_ms from the listener's key")
        t.ok(metadata_ok(s), "a request within the session is answered")
        time.sleep(LIFE_MS / 1000 + 0.3)
        t.eq(scram(s, "alice", USERS["alice"]), LIFE_MS, "after the "
             "session's end, a re-authentication on the same connection "
             "succeeds with a new session")
        t.ok(metadata_ok(s), "and the connection serves requests again")
        time.sleep(LIFE_MS / 1000 / 2)
        t.eq(scram(s, "alice", USERS["alice"]), LIFE_MS,
             "re-authenticating before the end works too")
        t.ok(metadata_ok(s), "and serves")
        before = log_count(n, EXPIRED)
        time.sleep(LIFE_MS / 1000 + 0.3)
        t.ok(not metadata_ok(s) and closed(s), "a request after the "
             "session's end without re-authentication: connection closed")
        s.close()
        t.ok(log_count(n, EXPIRED) > before, "with a log line")

        s, life = login(n, "alice")
        t.eq(scram(s, "bob", USERS["bob"]), -58, "re-authenticating as "
             "another user: SASL_AUTHENTICATION_FAILED")
        t.ok(closed(s), "and closed")
        s.close()
        s, life = login(n, "alice")
        t.ok(scram(s, "alice", USERS["alice"], "SCRAM-SHA-512") < 0 and
             closed(s), "re-authenticating with another mechanism: "
             "refused and closed")
        s.close()

        s, life = login(n, "carol")
        t.eq(life, LIFE_MS, "carol logged in")
        r = run_tool(CONFIGS, n.bootstrap, "--alter", "--entity-type",
                     "users", "--entity-name", "carol", "--delete-config",
                     "SCRAM-SHA-256")
        t.ok(r.returncode == 0, "carol's credential deleted: %s" % r.stderr)
        time.sleep(1.2)  # the image reaches the workers within a second
        t.ok(metadata_ok(s), "her session still serves until it ends")
        t.eq(scram(s, "carol", USERS["carol"]), -58, "her re-authentication "
             "is refused: SASL_AUTHENTICATION_FAILED")
        t.ok(closed(s), "and the connection closed")
        s.close()

        # librdkafka 2.0.2: no re-authentication; cut and logged in again
        before = log_count(n, EXPIRED)
        errs, acked = [], []
        p = Producer(dict(ck_conf(n, "dave"), **{
            "enable.idempotence": True, "linger.ms": 5,
            "error_cb": lambda e: errs.append(e)}))
        vals = [b"v-%d" % i for i in range(80)]
        t0 = time.time()
        for v in vals:
            p.produce("reauth", v, on_delivery=lambda e, m: acked.append(e))
            p.poll(0)
            time.sleep(0.1)
        p.flush(20)
        t.diag("produce across %.1f lifetimes: %d delivered, errors %r" % (
            (time.time() - t0) / (LIFE_MS / 1000),
            sum(e is None for e in acked),
            errs + [e for e in acked if e is not None]))
        t.ok(len(acked) == 80 and all(e is None for e in acked),
             "an idempotent producer across four sessions: every record "
             "acknowledged, no delivery error")
        t.ok(all(e.code() in (KafkaError._TRANSPORT,
                              KafkaError._ALL_BROKERS_DOWN) and
                 not e.fatal() for e in errs),
             "the client saw only the transient disconnects of its "
             "expired sessions (%d notices), nothing fatal" % len(errs))
        t.ok(log_count(n, EXPIRED) > before, "its expired connections were "
             "closed (%d times) and it logged in again"
             % (log_count(n, EXPIRED) - before))
        c = Consumer(dict(ck_conf(n, "dave"), **{
            "group.id": "g-reauth", "auto.offset.reset": "earliest"}))
        c.subscribe(["reauth"])
        got, end = [], time.time() + 20
        while len(got) < 80 and time.time() < end:
            m = c.poll(0.5)
            if m is not None and not m.error():
                got.append(m.value())
        c.close()
        t.ok(got == vals, "read back once each, in order (%d)" % len(got))

        # a credential deleted under a producing client
        errs, acked = [], []
        p = Producer(dict(ck_conf(n, "erin"), **{
            "message.timeout.ms": 30000,
            "error_cb": lambda e: errs.append((time.time(), e))}))
        p.produce("reauth-e", b"first", on_delivery=lambda e, m:
                  acked.append(e))
        p.flush(10)
        t.ok(acked == [None], "erin produces")
        r = run_tool(CONFIGS, n.bootstrap, "--alter", "--entity-type",
                     "users", "--entity-name", "erin", "--delete-config",
                     "SCRAM-SHA-256")
        t0 = time.time()
        t.ok(r.returncode == 0, "erin's credential deleted")
        cut = None
        while time.time() < t0 + 10 and cut is None:
            p.produce("reauth-e", b"more", on_delivery=lambda e, m:
                      acked.append(e))
            p.poll(0.1)
            for ts, e in errs:
                if e.code() == KafkaError._AUTHENTICATION:
                    cut = ts - t0
        p.purge()
        p.flush(1)
        t.diag("erin cut off %.2f s after the deletion" % (cut or -1))
        t.ok(cut is not None and cut <= LIFE_MS / 1000 + 1.5,
             "erin is cut off within one session lifetime (plus the "
             "image's second)")

        r = run_tool(CONFIGS, n.bootstrap, "--describe", "--entity-type",
                     "topics", "--entity-name", "reauth")
        t.ok(r.returncode == 0, "the PLAINTEXT listener is unaffected")
    finally:
        n.stop()
    t.eq(n.crashes(), [], "no worker crashed")
t.done()
