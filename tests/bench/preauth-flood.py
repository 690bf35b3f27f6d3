#!/usr/bin/python3
"""An authenticated producer's throughput with and without an
unauthenticated flood, and the broker's memory through it (issue 15).

One runneld node with a SASL_PLAINTEXT listener (PLAIN). A confluent-kafka
producer, logged in, sends 1 KiB records with acks=1 for BENCH_PREAUTH_SECS
(10) seconds: alone, then while another process floods the same listener
with
  - 1,000 connections that each announce a 100 MiB request (a 4-byte size
    prefix, then a few bytes, then nothing), reopened once a second when
    the broker has closed them;
  - 1,000 connections that announce 500,000 bytes (just under
    sasl.server.max.receive.size) and stall, reopened when closed;
  - 4 threads of failed PLAIN logins in a loop;
then alone again. The broker's total RSS (supervisor + workers, /proc) is
sampled before, during and after. Prints figures; never passes or fails;
not part of make check."""
import multiprocessing
import os
import resource
import socket
import struct
import threading
import time

from confluent_kafka import Producer

from rntest import Node, TempDir, free_port, recv_frame

SECS = float(os.environ.get("BENCH_PREAUTH_SECS", "10"))
FLOOD = int(os.environ.get("BENCH_PREAUTH_CONNS", "1000"))
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'user_alice="alice-secret";')


def raise_nofile():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def frame(body):
    return struct.pack(">i", len(body)) + body


def header(key, ver, corr, client=b"flood"):
    return struct.pack(">hhih", key, ver, corr, len(client)) + client


def failed_login(port):
    """SaslHandshake v1 PLAIN, then SaslAuthenticate v0 with a wrong
    password: the broker's answer comes after its failure delay."""
    s = socket.create_connection(("127.0.0.1", port), timeout=5)
    try:
        mech = b"PLAIN"
        s.sendall(frame(header(17, 1, 1) + struct.pack(">h", len(mech)) + mech))
        if recv_frame(s) is None:
            return False
        tok = b"\0alice\0wrong-password"
        s.sendall(frame(header(36, 0, 2) + struct.pack(">i", len(tok)) + tok))
        return recv_frame(s) is not None
    except OSError:
        return False
    finally:
        s.close()


def flood(port, stop, stats):
    raise_nofile()
    big = struct.pack(">i", 100 * 1024 * 1024) + b"abcd"
    near = struct.pack(">i", 500000) + b"abcd"

    def opener(payload, key):
        conns = []
        while not stop.is_set():
            alive = []
            for s in conns:
                try:
                    if s.recv(1) == b"":
                        s.close()
                        continue
                except BlockingIOError:
                    pass
                except OSError:
                    s.close()
                    continue
                alive.append(s)
            conns = alive
            while len(conns) < FLOOD and not stop.is_set():
                try:
                    s = socket.create_connection(("127.0.0.1", port), timeout=2)
                    s.sendall(payload)
                    s.setblocking(False)
                    conns.append(s)
                    stats[key] += 1
                except OSError:
                    break
            stop.wait(1.0)
        for s in conns:
            s.close()

    def logins():
        while not stop.is_set():
            if failed_login(port):
                stats["failed_logins"] += 1

    threads = [threading.Thread(target=opener, args=(big, "opened_100mib")),
               threading.Thread(target=opener, args=(near, "opened_500kb"))]
    threads += [threading.Thread(target=logins) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    ru = resource.getrusage(resource.RUSAGE_SELF)
    stats["cpu_s"] = ru.ru_utime + ru.ru_stime


def produce(bootstrap, port, secs):
    conf = {"bootstrap.servers": "127.0.0.1:%d" % port,
            "security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": "PLAIN",
            "sasl.username": "alice", "sasl.password": "alice-secret",
            "acks": "1", "linger.ms": "5", "queue.buffering.max.messages": 200000}
    p = Producer(conf)
    done = [0]
    val = b"x" * 1024

    def cb(err, msg):
        if err is None:
            done[0] += 1
    # connect and warm up outside the timed part
    p.produce("flood-bench", val, on_delivery=cb)
    p.flush(30)
    done[0] = 0
    t0 = time.time()
    while time.time() - t0 < secs:
        try:
            p.produce("flood-bench", val, on_delivery=cb)
        except BufferError:
            p.poll(0.005)
        p.poll(0)
    p.flush(60)
    return done[0] / (time.time() - t0)


def sampler(n, stop, out):
    while not stop.is_set():
        out.append(n.rss_kib())
        stop.wait(0.5)


def main():
    hard = raise_nofile()
    with TempDir() as tmp:
        sp = free_port()
        n = Node(tmp)
        n.props.update({
            "listeners": "PLAINTEXT://127.0.0.1:%d,SASL_PLAINTEXT://127.0.0.1:%d,"
                         "CONTROLLER://127.0.0.1:%d" % (n.port, sp, n.ctl_port),
            "advertised.listeners": "PLAINTEXT://127.0.0.1:%d,"
                                    "SASL_PLAINTEXT://127.0.0.1:%d" % (n.port, sp),
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,"
                "SASL_PLAINTEXT:SASL_PLAINTEXT,CONTROLLER:PLAINTEXT",
            "sasl.enabled.mechanisms": "PLAIN",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
            "num.partitions": "1",
        })
        n.write_config()
        n.start()
        try:
            if n.wait_running(30) is None:
                print("node did not start")
                return
            print("open files limit: %d" % hard)
            rss0 = n.rss_kib()
            base = produce(n.bootstrap, sp, SECS)
            rss_base = n.rss_kib()
            print("alone:        %8.0f records/s   RSS %d KiB before, %d KiB after"
                  % (base, rss0, rss_base))

            stop, sstop = multiprocessing.Event(), threading.Event()
            mgr = multiprocessing.Manager()
            stats = mgr.dict(opened_100mib=0, opened_500kb=0, failed_logins=0)
            fl = multiprocessing.Process(target=flood, args=(sp, stop, stats))
            fl.start()
            time.sleep(2)
            samples = []
            smp = threading.Thread(target=sampler, args=(n, sstop, samples))
            smp.start()
            during = produce(n.bootstrap, sp, SECS)
            sstop.set()
            smp.join()
            stop.set()
            fl.join(30)
            st = dict(stats)
            print("under flood:  %8.0f records/s   RSS %d..%d KiB (max %d)"
                  % (during, min(samples), samples[-1], max(samples)))
            print("flood: %d connections announcing 100 MiB, %d announcing "
                  "500,000 bytes, %d failed logins answered"
                  % (st["opened_100mib"], st["opened_500kb"], st["failed_logins"]))
            print("the flood client itself used %.1f s of CPU (on the same "
                  "cores as the broker and the producer)" % st.get("cpu_s", 0))
            time.sleep(3)
            after = produce(n.bootstrap, sp, SECS)
            rss_after = n.rss_kib()
            print("alone again:  %8.0f records/s   RSS %d KiB" % (after, rss_after))
            print("ratio under flood / alone: %.3f (alone again / alone: %.3f; "
                  "under flood / mean of both alone runs: %.3f)"
                  % (during / base, after / base, 2 * during / (base + after)))
            print("RSS growth during the flood: %+d KiB; after it: %+d KiB"
                  % (max(samples) - rss_base, rss_after - rss_base))
            log = n.logtext()
            print("broker log: %d pre-auth size closes, %d failed logins, "
                  "%d authentication timeouts" % (
                      log.count("sasl.server.max.receive.size"),
                      log.count("authentication failed") + log.count("failed authentication"),
                      log.count("not done in")))
        finally:
            n.stop()


if __name__ == "__main__":
    main()
