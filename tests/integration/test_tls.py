"""TLS on client listeners, with real clients: one node with a PLAINTEXT, an
SSL (PEM keystore file, encrypted key) and an mTLS listener (inline PEM
keystore on one line, ssl.client.auth=required, per-listener keys). A
throwaway CA and certificates are made with the openssl CLI. confluent-kafka,
kcat and kafka-python produce and consume over SSL with the server's name
checked; a 1 MiB record and a few thousand records come back byte-identical;
a wrong CA, a missing client certificate, a plaintext client and a stalled
handshake are refused and logged while the others keep being served; bad
TLS settings stop startup with a message naming the key."""
import os
import socket
import struct
import subprocess
import time

from confluent_kafka import Consumer, KafkaException, Producer
from kafka import KafkaConsumer, KafkaProducer

from rntest import RUNNELD, Node, Tap, TempDir, free_port, wait_for
from rntls import Pki

t = Tap()
COUNT = 3000


def kcat(args, data=None, timeout=60):
    return subprocess.run(["kcat"] + args, input=data, capture_output=True,
                          timeout=timeout)


def ck_produce(conf, topic, values):
    p = Producer(dict(conf, **{"linger.ms": 5, "message.max.bytes": 2000000}))
    errs = []
    for i, v in enumerate(values):
        while True:
            try:
                p.produce(topic, key=b"k%d" % i, value=v,
                          on_delivery=lambda e, m: e and errs.append(e))
                break
            except BufferError:
                p.poll(0.1)
    left = p.flush(60)
    return left == 0 and not errs, errs[:1]


def ck_consume(conf, topic, want, group, timeout=60):
    c = Consumer(dict(conf, **{"group.id": group, "auto.offset.reset": "earliest",
                               "enable.auto.commit": False,
                               "fetch.max.bytes": 4 * 1024 * 1024}))
    c.subscribe([topic])
    got = []
    end = time.time() + timeout
    try:
        while len(got) < want and time.time() < end:
            m = c.poll(1.0)
            if m is None or m.error():
                continue
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
    ps, pm = free_port(), free_port()
    chain_one_line = " ".join(pki.read("server.pem").split("\n"))
    key_one_line = " ".join(pki.read("server.key").split("\n"))
    n = Node(tmp)
    n.props.update({
        "listeners": "PLAINTEXT://127.0.0.1:%d,SSL://127.0.0.1:%d,"
                     "MTLS://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d"
                     % (n.port, ps, pm, n.ctl_port),
        "advertised.listeners": "PLAINTEXT://127.0.0.1:%d,SSL://127.0.0.1:%d,"
                                "MTLS://127.0.0.1:%d" % (n.port, ps, pm),
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,"
                                          "MTLS:SSL,CONTROLLER:PLAINTEXT",
        "inter.broker.listener.name": "PLAINTEXT",
        "message.max.bytes": "2097152",
        "num.partitions": "1",
        # the global keystore: a PEM file, its key encrypted
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": pki.keystore_enc,
        "ssl.key.password": pki.key_password,
        # the mTLS listener: its own inline keystore and client auth
        "listener.name.mtls.ssl.keystore.certificate.chain": chain_one_line,
        "listener.name.mtls.ssl.keystore.key": key_one_line,
        "listener.name.mtls.ssl.key.password": "",
        "listener.name.mtls.ssl.client.auth": "required",
        "listener.name.mtls.ssl.truststore.type": "PEM",
        "listener.name.mtls.ssl.truststore.location": pki.ca,
    })
    n.write_config()
    n.start()
    ssl_bs = "127.0.0.1:%d" % ps
    mtls_bs = "127.0.0.1:%d" % pm
    ssl_conf = {"bootstrap.servers": ssl_bs, "security.protocol": "SSL",
                "ssl.ca.location": pki.ca,
                "ssl.endpoint.identification.algorithm": "https"}
    kc_ssl = ["-b", ssl_bs, "-X", "security.protocol=SSL",
              "-X", "ssl.ca.location=" + pki.ca,
              "-X", "ssl.endpoint.identification.algorithm=https"]
    try:
        t.ok(n.wait_running() is not None, "node with PLAINTEXT, SSL and mTLS "
             "listeners is up")
        log = n.logtext()
        t.ok("listener SSL: TLS" in log and "listener MTLS: TLS" in log and
             "client auth required" in log, "the supervisor logged both TLS "
             "listeners")
        t.ok(pki.key_password not in log, "the key password is not logged")

        # confluent-kafka over SSL, the server's name checked
        vals = [b"ssl-%06d-" % i + b"x" * (i % 700) for i in range(COUNT)]
        ok, errs = ck_produce(ssl_conf, "tls-many", vals)
        t.ok(ok, "confluent-kafka produced %d records over SSL %s" % (COUNT, errs))
        got = ck_consume(ssl_conf, "tls-many", COUNT, "g-many")
        t.eq(len(got), COUNT, "confluent-kafka consumed them back over SSL")
        t.ok(got == vals, "byte-identical, in order, across TLS record "
             "boundaries (the fallback fetch path)")

        # one 1 MiB record
        big = os.urandom(1024 * 1024)
        ok, errs = ck_produce(ssl_conf, "tls-big", [big])
        t.ok(ok, "a 1 MiB record produced over SSL %s" % errs)
        got = ck_consume(ssl_conf, "tls-big", 1, "g-big")
        t.ok(len(got) == 1 and got[0] == big, "and fetched back byte-identical")

        # Metadata over SSL names the SSL listener, over PLAINTEXT the plain one
        r = kcat(["-L"] + kc_ssl + ["-t", "tls-many"])
        t.ok(r.returncode == 0 and ("127.0.0.1:%d" % ps).encode() in r.stdout,
             "kcat -L over SSL: brokers at the SSL listener (%s)"
             % r.stderr.decode()[-200:].strip())
        r = kcat(["-L", "-b", n.bootstrap, "-t", "tls-many"])
        t.ok(r.returncode == 0 and ("127.0.0.1:%d" % n.port).encode() in r.stdout
             and ("127.0.0.1:%d" % ps).encode() not in r.stdout,
             "kcat -L over PLAINTEXT: brokers at the PLAINTEXT listener")
        lines = b"".join(b"kcat-%d\n" % i for i in range(500))
        r = kcat(["-P", "-t", "tls-kcat"] + kc_ssl, lines)
        t.eq(r.returncode, 0, "kcat produced over SSL (%s)"
             % r.stderr.decode()[-200:].strip())
        r = kcat(["-C", "-t", "tls-kcat", "-o", "beginning", "-e"] + kc_ssl)
        t.ok(r.returncode == 0 and r.stdout == lines, "kcat consumed them back "
             "over SSL")

        # kafka-python over SSL
        kp = KafkaProducer(bootstrap_servers=ssl_bs, security_protocol="SSL",
                           ssl_cafile=pki.ca, ssl_check_hostname=True)
        for i in range(200):
            kp.send("tls-kpy", b"kpy-%d" % i)
        kp.flush(30)
        kp.close()
        kcons = KafkaConsumer("tls-kpy", bootstrap_servers=ssl_bs,
                              security_protocol="SSL", ssl_cafile=pki.ca,
                              auto_offset_reset="earliest",
                              consumer_timeout_ms=10000)
        kvals = [m.value for m in kcons]
        kcons.close()
        t.eq(kvals, [b"kpy-%d" % i for i in range(200)],
             "kafka-python produced and consumed over SSL")

        # a client that does not trust the CA fails, and is logged
        before = n.logtext().count("TLS handshake with")
        r = kcat(["-L", "-b", ssl_bs, "-X", "security.protocol=SSL",
                  "-X", "ssl.ca.location=" + pki.other_ca, "-m", "3"])
        t.ok(r.returncode != 0, "kcat with the wrong CA fails")
        t.ok(wait_for(lambda: n.logtext().count("TLS handshake with") > before,
                      5), "the broker logged the failed handshake")
        bad = [l for l in n.logtext().splitlines() if "TLS handshake with" in l]
        t.ok(bad and "on listener SSL failed" in bad[-1] and "127.0.0.1:" in bad[-1],
             "with the peer and the reason: %s" % (bad[-1:],))

        # a plaintext Kafka request on the SSL port: refused, logged
        s = socket.create_connection(("127.0.0.1", ps), timeout=5)
        s.sendall(struct.pack(">ih", 10, 18) + b"\0\0\0\0\0\0\0\0")
        try:
            data = s.recv(100)
        except OSError:
            data = b""
        s.close()
        t.ok(not data.startswith(struct.pack(">i", 0)[:2] + b"\0"),
             "a plaintext ApiVersions on the SSL listener gets no Kafka answer")

        # mTLS: without a client certificate refused, with one served
        r = kcat(["-L", "-b", mtls_bs, "-X", "security.protocol=SSL",
                  "-X", "ssl.ca.location=" + pki.ca, "-m", "3"])
        t.ok(r.returncode != 0, "ssl.client.auth=required: no client "
             "certificate, no metadata")
        r = kcat(["-L", "-b", mtls_bs, "-X", "security.protocol=SSL",
                  "-X", "ssl.ca.location=" + pki.ca,
                  "-X", "ssl.certificate.location=" + pki.client_cert,
                  "-X", "ssl.key.location=" + pki.client_key, "-t", "tls-many"])
        t.ok(r.returncode == 0 and ("127.0.0.1:%d" % pm).encode() in r.stdout,
             "with a client certificate of the CA: served, brokers at the "
             "mTLS listener (%s)" % r.stderr.decode()[-200:].strip())
        mconf = dict(ssl_conf, **{"bootstrap.servers": mtls_bs,
                                  "ssl.certificate.location": pki.client_cert,
                                  "ssl.key.location": pki.client_key})
        ok, errs = ck_produce(mconf, "tls-mtls", [b"m%d" % i for i in range(100)])
        got = ck_consume(mconf, "tls-mtls", 100, "g-mtls")
        t.ok(ok and got == [b"m%d" % i for i in range(100)],
             "confluent-kafka with a client certificate produced and consumed")

        # a stalled handshake is closed after its time
        s = socket.create_connection(("127.0.0.1", ps), timeout=20)
        t0 = time.time()
        try:
            data = s.recv(10)
        except OSError:
            data = b""
        took = time.time() - t0
        s.close()
        t.ok(data == b"" and 8 <= took <= 16, "a connection that never "
             "starts its handshake is closed after ~10 s (%.1f s)" % took)
        t.ok("TLS handshake not done in" in n.logtext(), "and that is logged")

        # the plaintext listener kept working through all of it
        r = kcat(["-C", "-b", n.bootstrap, "-t", "tls-kcat", "-o", "beginning",
                  "-e"])
        t.ok(r.returncode == 0 and r.stdout == lines, "PLAINTEXT clients "
             "served alongside: the SSL-produced records read back in plain")
        ok, errs = ck_produce(ssl_conf, "tls-after", [b"after"])
        t.ok(ok, "SSL still serves after the refused clients")
        t.eq(n.crashes(), [], "no worker crashed")
    finally:
        n.stop()

    # settings that cannot be served stop startup, naming the key
    base = {"listeners": "PLAINTEXT://127.0.0.1:%d,SSL://127.0.0.1:%d,"
                         "CONTROLLER://127.0.0.1:%d"
                         % (free_port(), free_port(), free_port()),
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,"
                                              "CONTROLLER:PLAINTEXT"}
    base["advertised.listeners"] = ",".join(
        l for l in base["listeners"].split(",") if not l.startswith("CONTROLLER"))

    def bad(extra, name, want, what):
        p = dict(base)
        p.update(extra)
        rc, err = start_fails(tmp, p, name)
        t.ok(rc != 0 and all(w in err for w in want), "%s: %s" % (what, err))

    bad({}, "nokey", ["ssl.keystore.location", "SSL"],
        "an SSL listener without a keystore")
    bad({"ssl.keystore.type": "PEM", "ssl.keystore.location": pki.keystore_enc,
         "ssl.key.password": "wrong"}, "badpw", ["ssl.key.password"],
        "a wrong ssl.key.password")
    bad({"ssl.keystore.type": "JKS", "ssl.keystore.location": pki.keystore},
        "jks", ["ssl.keystore.type", "PEM"], "a JKS keystore")
    bad({"ssl.keystore.location": pki.keystore,
         "inter.broker.listener.name": "SSL",
         "ssl.endpoint.identification.algorithm": "bogus"}, "ibl",
        ["inter-broker listener SSL", "ssl.endpoint.identification.algorithm"],
        "an SSL inter-broker listener with an unknown host check")
    bad({"ssl.keystore.location": pki.keystore,
         "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,"
                                           "CONTROLLER:SASL_SSL",
         "sasl.jaas.config": "org.apache.kafka.common.security.plain."
                             "PlainLoginModule required username=\"b\" "
                             "password=\"b-secret\" user_b=\"b-secret\";",
         "sasl.mechanism.controller.protocol": "SCRAM-SHA-256"}, "ctlscram",
        ["sasl.mechanism.controller.protocol", "PLAIN"],
        "SCRAM on the controller listener (Kafka takes PLAIN there)")
    bad({"ssl.keystore.location": pki.keystore,
         "ssl.enabled.protocols": "TLSv1.2,SSLv3"}, "proto",
        ["ssl.enabled.protocols", "SSLv3"], "an unknown TLS protocol")
    bad({"ssl.keystore.location": pki.keystore,
         "ssl.client.auth": "required"}, "notrust",
        ["ssl.client.auth", "truststore"], "client auth without a truststore")

t.done()
