"""runnelctl reload: new TLS certificates without a restart. A node with
an SSL listener (keystore file) and an mTLS one (keystore and truststore
files, client certificates required) starts with CA A's certificates.
A client trusting only CA B fails; a client whose certificate CA B
signed is refused on the mTLS listener. A broken keystore is refused by
reload with a message naming the listener, nothing is replaced and the
node keeps serving. Then the files are swapped for CA B's and reload
replaces the network workers one by one: the CA-B-only client and the
CA-B client certificate now succeed, a CA-A-only client fails, and
meanwhile an idempotent producer trusting both CAs lost nothing, and a
connection attempt every 20 ms was never refused."""
import os
import shutil
import socket
import threading
import time

from confluent_kafka import KafkaError, Producer

from rntest import Node, Tap, TempDir, free_port
from rntls import Pki

t = Tap()


def produce_ok(conf, topic="reload"):
    """One record over conf acknowledged within 5 s?"""
    res = []
    p = Producer(dict(conf, **{"message.timeout.ms": 5000}))
    p.produce(topic, b"v", on_delivery=lambda e, m: res.append(e))
    left = p.flush(10)
    if left:
        p.purge()
        p.flush(1)
    del p
    return len(res) == 1 and res[0] is None


def ssl_conf(port, ca, client=None):
    c = {"bootstrap.servers": "127.0.0.1:%d" % port,
         "security.protocol": "SSL", "ssl.ca.location": ca,
         "ssl.endpoint.identification.algorithm": "https"}
    if client is not None:
        c["ssl.certificate.location"] = client.client_cert
        c["ssl.key.location"] = client.client_key
    return c


def network_pids(n):
    return {k: w["pid"] for k, w in n.workers().items()
            if k.startswith("network-")}


with TempDir() as tmp:
    a = Pki(os.path.join(tmp, "pki-a"))
    b = Pki(os.path.join(tmp, "pki-b"))
    live = os.path.join(tmp, "live")
    os.makedirs(live)
    keystore = os.path.join(live, "keystore.pem")
    trust = os.path.join(live, "trust.pem")
    both = os.path.join(live, "both-cas.pem")
    shutil.copy(a.keystore, keystore)
    shutil.copy(a.ca, trust)
    with open(both, "w") as f:
        f.write(a.read("ca.pem") + b.read("ca.pem"))

    n = Node(tmp)
    ps, pm = free_port(), free_port()
    n.props.update({
        "listeners": "PLAINTEXT://127.0.0.1:%d,SSL://127.0.0.1:%d,"
                     "MTLS://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d"
                     % (n.port, ps, pm, n.ctl_port),
        "advertised.listeners": "PLAINTEXT://127.0.0.1:%d,SSL://127.0.0.1:%d,"
                                "MTLS://127.0.0.1:%d" % (n.port, ps, pm),
        "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,"
                                          "MTLS:SSL,CONTROLLER:PLAINTEXT",
        "num.partitions": "1",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": keystore,
        "listener.name.mtls.ssl.client.auth": "required",
        "listener.name.mtls.ssl.truststore.type": "PEM",
        "listener.name.mtls.ssl.truststore.location": trust,
    })
    n.write_config()
    n.start()
    try:
        t.ok(n.wait_running() is not None, "a node with SSL and mTLS "
             "listeners on CA A's certificates")
        t.ok(produce_ok(ssl_conf(ps, a.ca)), "a client trusting CA A "
             "produces over SSL")
        t.ok(not produce_ok(ssl_conf(ps, b.ca)), "a client trusting only "
             "CA B fails")
        t.ok(produce_ok(ssl_conf(pm, a.ca, a)), "a CA A client certificate "
             "is taken on the mTLS listener")
        t.ok(not produce_ok(ssl_conf(pm, a.ca, b)), "a CA B one is refused")

        # a broken keystore: refused, nothing replaced
        pids = network_pids(n)
        with open(keystore, "w") as f:
            f.write("-----BEGIN CERTIFICATE-----\nnot a certificate\n"
                    "-----END CERTIFICATE-----\n")
        r = n.ctl("reload")
        t.ok(r.returncode != 0 and "listener SSL" in r.stderr and
             "kept" in r.stderr, "reload with a broken keystore is refused "
             "with a message naming the listener: %s" % r.stderr.strip())
        t.eq(network_pids(n), pids, "no network worker was replaced")
        t.ok(produce_ok(ssl_conf(ps, a.ca)), "the node keeps serving CA A's "
             "certificate to new connections")

        # CA B's files, reloaded under load
        stop = threading.Event()
        refused, attempts = [], [0]

        def connect_loop():
            while not stop.is_set():
                attempts[0] += 1
                try:
                    socket.create_connection(("127.0.0.1", ps),
                                             timeout=5).close()
                except OSError as e:
                    refused.append(repr(e))
                time.sleep(0.02)

        acked, errs = [], []
        p = Producer(dict(ssl_conf(ps, both), **{
            "enable.idempotence": True, "linger.ms": 5,
            "error_cb": lambda e: errs.append(e)}))
        th = threading.Thread(target=connect_loop)
        th.start()
        shutil.copy(b.keystore, keystore)
        shutil.copy(b.ca, trust)
        sent = 0
        r = [None]

        def do_reload():
            r[0] = n.ctl("reload")

        rt = threading.Thread(target=do_reload)
        rt.start()
        while rt.is_alive() or sent < 50:
            p.produce("reload-load", b"r-%d" % sent,
                      on_delivery=lambda e, m: acked.append(e))
            sent += 1
            p.poll(0)
            time.sleep(0.02)
        rt.join()
        p.flush(20)
        stop.set()
        th.join()
        r = r[0]
        t.ok(r.returncode == 0 and "TLS certificates reloaded" in r.stdout,
             "reload with CA B's files: %s%s" % (r.stdout, r.stderr))
        new = network_pids(n)
        t.ok(len(new) == len(pids) and all(new[k] != pids[k] for k in pids),
             "every network worker was replaced: %r -> %r" % (pids, new))
        t.ok(len(acked) == sent and all(e is None for e in acked),
             "a producer across the reload: %d records, all acknowledged"
             % sent)
        t.eq(refused, [], "no connection refused during the reload (%d "
             "attempts)" % attempts[0])
        t.ok(produce_ok(ssl_conf(ps, b.ca)), "the client trusting only CA B "
             "now succeeds")
        t.ok(not produce_ok(ssl_conf(ps, a.ca)), "one trusting only CA A "
             "now fails")
        t.ok(produce_ok(ssl_conf(pm, b.ca, b)), "the mTLS listener takes "
             "the CA B client certificate")
        t.ok(not produce_ok(ssl_conf(pm, b.ca, a)), "and refuses the CA A "
             "one")
        log = n.logtext()
        t.ok("listener SSL: TLS reloaded" in log and
             "listener MTLS: TLS reloaded" in log, "the reload is logged per "
             "listener")
    finally:
        n.stop()
    t.eq(n.crashes(), [], "no worker crashed")
t.done()
