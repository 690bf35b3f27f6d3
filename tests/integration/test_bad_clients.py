"""Bad input from outside never crashes a worker or allocates without bound:
oversized, negative and garbage frames, unknown API keys and versions, truncated
bodies. Each gets Kafka's answer or a closed connection and a log line, and the
broker keeps serving real clients."""
import socket
import struct
import time

from confluent_kafka import Producer

import os

import rntest
from rntest import Node, Tap, TempDir, rss_bound_kib

t = Tap()


def conn(n):
    s = socket.create_connection(("127.0.0.1", n.port), timeout=5)
    return s


def closed(s):
    try:
        s.settimeout(5)
        return s.recv(65536) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True


def frame(body):
    return struct.pack(">i", len(body)) + body


def header(key, ver, corr, client=b"bad-client"):
    return struct.pack(">hhih", key, ver, corr, len(client)) + client


def recv_frame(s):
    s.settimeout(5)
    return rntest.recv_frame(s)


with TempDir() as tmp:
    n = Node(tmp, props={"socket.request.max.bytes": "1048576"})
    n.start()
    try:
        st = n.wait_running()
        t.ok(st is not None, "node is up")
        pids = {w["name"]: w["pid"] for w in st["workers"]}

        s = conn(n)
        s.sendall(struct.pack(">i", 1048577))
        t.ok(closed(s), "a size prefix above socket.request.max.bytes closes the connection")
        s = conn(n)
        s.sendall(struct.pack(">i", -5))
        t.ok(closed(s), "a negative size prefix closes the connection")
        s = conn(n)
        s.sendall(struct.pack(">i", 0x7FFFFFFF) + b"x" * 100)
        t.ok(closed(s), "a 2 GiB size prefix closes the connection before allocating")

        s = conn(n)
        s.sendall(frame(header(999, 0, 7)))
        t.ok(closed(s), "an unknown API key closes the connection")
        s = conn(n)
        s.sendall(frame(header(0, 42, 8)))  # Produce v42
        t.ok(closed(s), "an unsupported version of a known API closes the connection")
        s = conn(n)
        s.sendall(frame(header(0, 2, 8) + b"\xff\xff" + struct.pack(">hii", 1, 1000, 0)))
        t.ok(closed(s), "Produce v2, advertised but not served, closes the connection")

        # ApiVersions at a version we do not serve: UNSUPPORTED_VERSION with our ranges
        s = conn(n)
        s.sendall(frame(header(18, 99, 9) + b"\x00"))  # header v2: tagged fields
        r = recv_frame(s)
        t.ok(r is not None, "ApiVersions v99 is answered")
        if r:
            corr, err, count = struct.unpack(">ihi", r[:10])
            keys = {struct.unpack(">hhh", r[10 + 6 * i:16 + 6 * i])[0]: 
                    struct.unpack(">hhh", r[10 + 6 * i:16 + 6 * i])[1:] for i in range(count)}
            t.eq((corr, err), (9, 35), "with correlation id and UNSUPPORTED_VERSION (35)")
            t.eq(keys.get(18), (0, 3), "and our ApiVersions range 0-3")
            t.eq(keys.get(0), (0, 9), "and Produce from 0 to 9 (v0-v2 advertised, as "
                 "Kafka 4 does, so older librdkafka keeps its codecs)")
            t.ok(17 not in keys and 38 not in keys and 8 in keys and 11 in keys,
                 "never APIs we do not serve (SaslHandshake, "
                 "CreateDelegationToken); the group APIs (OffsetCommit, "
                 "JoinGroup) are served")

        # a Metadata v1 request claiming a billion topics in a tiny frame
        s = conn(n)
        s.sendall(frame(header(3, 1, 10) + struct.pack(">i", 1000000000)))
        t.ok(closed(s), "an array count beyond the frame closes the connection")
        # a string longer than the frame
        s = conn(n)
        s.sendall(frame(header(3, 1, 11) + struct.pack(">ih", 1, 30000) + b"abc"))
        t.ok(closed(s), "a string length beyond the frame closes the connection")
        # random garbage after a valid header
        s = conn(n)
        s.sendall(frame(header(0, 7, 12) + bytes(range(256)) * 4))
        t.ok(closed(s), "a garbage Produce body closes the connection")
        # a frame cut short: the broker waits; the client gives up
        s = conn(n)
        s.sendall(struct.pack(">i", 100) + b"\x00\x03")
        s.close()
        # a corrupt record batch inside a well-formed Produce: CORRUPT_MESSAGE
        batch = bytearray(61 + 10)
        struct.pack_into(">qi", batch, 0, 0, len(batch) - 12)
        batch[16] = 2  # magic
        body = (struct.pack(">hhi", -1, 1, 5000) + struct.pack(">i", 1) +
                struct.pack(">h", 5) + b"hosed" + struct.pack(">ii", 1, 0) +
                struct.pack(">i", len(batch)) + bytes(batch))
        s = conn(n)
        s.sendall(frame(header(0, 7, 13) + body))
        r = recv_frame(s)
        t.ok(r is not None, "a produce with a corrupt batch is answered")
        if r:
            # corr, [topics: 1, name "hosed", [partitions: 1, index, error]]
            off = 4 + 4 + 2 + 5 + 4 + 4
            err = struct.unpack(">h", r[off:off + 2])[0]
            t.ok(err in (2, 3, 87), "with an error code (%d), not an append" % err)

        time.sleep(0.5)
        st = n.status()
        t.eq({w["name"]: w["pid"] for w in st["workers"]}, pids,
             "no worker crashed or restarted")
        log = n.logtext()
        t.ok("socket.request.max.bytes" in log and "unknown" in log,
             "the refusals are logged")

        ok = []
        p = Producer({"bootstrap.servers": n.bootstrap})
        p.produce("after-bad", b"still fine", on_delivery=lambda e, m: ok.append(e is None))
        p.flush(20)
        t.ok(ok == [True], "real clients are still served")
        t.eq(n.crashes(), [], "no worker died of a crash (SIGSEGV, SIGABRT, ...)")
    finally:
        n.kill()



# With Kafka's default socket.request.max.bytes (100 MiB) a frame may announce
# that much: the broker must not reserve it before the bytes arrive, and
# arrays claiming billions of elements must not allocate by their count.
with TempDir() as tmp:
    n = Node(tmp)
    n.start()
    try:
        st = n.wait_running()
        t.ok(st is not None, "a node with socket.request.max.bytes=100 MiB is up")
        pids = {w["name"]: w["pid"] for w in st["workers"]}
        s = conn(n)
        s.sendall(frame(header(18, 3, 1) + b"\x00\x00\x00"))
        recv_frame(s)
        s.close()
        before = n.rss_kib()
        held = []
        for i in range(40):
            s = conn(n)
            s.sendall(struct.pack(">i", 100 * 1024 * 1024) + header(0, 7, i) +
                      b"\x00" * 4096)
            held.append(s)
        # 1 MiB frames whose arrays claim 2^31-1 elements
        junk = (struct.pack(">hhi", -1, 1, 5000) + struct.pack(">i", 0x7FFFFFFF)
                + b"\x01" * (1 << 20))
        refused = 0
        for i in range(20):
            s = conn(n)
            s.sendall(frame(header(0, 7, 100 + i) + junk))
            refused += closed(s)
        s = conn(n)
        s.sendall(frame(header(3, 1, 200) + struct.pack(">i", 0x7FFFFFFF) +
                        b"\x00" * (1 << 20)))
        refused += closed(s)
        time.sleep(0.5)
        after = n.rss_kib()
        t.eq(refused, 21, "each frame with an impossible array count is refused")
        t.ok(after - before < rss_bound_kib(16 * 1024),
             "40 frames announcing 100 MiB and 21 huge arrays grow the node's "
             "RSS by %d KiB (bound %d MiB), not by what they announce"
             % (after - before, rss_bound_kib(16 * 1024) // 1024))
        for s in held:
            s.close()
        time.sleep(0.3)
        st = n.status()
        t.eq({w["name"]: w["pid"] for w in st["workers"]}, pids,
             "no worker crashed or restarted")
    finally:
        n.kill()


def cpu_ticks(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


# More connections than the worker has descriptors: it stops accepting for a
# while (clients wait in the backlog) instead of spinning on the listener.
with TempDir() as tmp:
    wrapper = os.path.join(tmp, "runneld-100-files")
    with open(wrapper, "w") as f:
        f.write("#!/bin/sh\nulimit -n 100\nexec %s \"$@\"\n" % rntest.RUNNELD)
    os.chmod(wrapper, 0o755)
    n = Node(tmp, props={"num.network.threads": "1"})
    saved, rntest.RUNNELD = rntest.RUNNELD, wrapper
    try:
        n.start()
    finally:
        rntest.RUNNELD = saved
    try:
        st = n.wait_running()
        t.ok(st is not None, "a node limited to 100 open files is up")
        net = [w["pid"] for w in st["workers"] if w["name"] == "network-0"][0]
        held = []
        for i in range(150):
            try:
                held.append(socket.create_connection(("127.0.0.1", n.port), timeout=2))
            except OSError:
                break
        time.sleep(0.5)
        before = cpu_ticks(net)
        time.sleep(2)
        spent = cpu_ticks(net) - before
        t.ok(spent < 40, "out of descriptors, the network worker idles "
             "(%d ticks in 2 s), it does not spin on accept" % spent)
        for s in held:
            s.close()
        ok = []
        p = Producer({"bootstrap.servers": n.bootstrap})
        p.produce("after-flood", b"x", on_delivery=lambda e, m: ok.append(e is None))
        p.flush(20)
        t.ok(ok == [True], "once they close, clients are served again")
        warned = [l for l in n.logtext().splitlines() if "pausing new connections" in l]
        t.ok(1 <= len(warned) <= 2, "said so once (%d lines)" % len(warned))
    finally:
        n.kill()

t.done()
