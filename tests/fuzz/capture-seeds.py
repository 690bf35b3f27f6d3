#!/usr/bin/python3
"""Seed corpora captured from real runnel programs, for the fuzz targets
fuzz_ctl, fuzz_records, fuzz_raft and fuzz_segment. Run by hand from a
configured build when a format changes, then commit what it wrote:

    RUNNEL_BUILDDIR=build tests/fuzz/capture-seeds.py

- corpus-ctl/: the requests the real runnelctl sends, read off a socket
  that answers {"ok": true}.
- corpus-raft/, corpus-records/: a three-node cluster whose controllers
  reach each other through recording proxies, while topics are created,
  written, configured and deleted and a node stops. Each connection to a
  controller listener as the listener gets it (the raft preamble and
  libraft's messages, or a broker's Kafka requests); the metadata-log
  entries out of libraft's AppendEntries messages, in log order, as one
  log and one by one, and a snapshot holding the largest entry's records.
- corpus-segment/: the .log segments node 1 wrote for topics produced to
  with keys and headers by kcat (librdkafka: uncompressed, zstd) and
  kafka-python (gzip), and by an idempotent kcat; each with the option
  byte fuzz_segment reads first.
"""
import os
import re
import shutil
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "lib"))
import rntest  # noqa: E402

MAX_SEED = 4096
MAX_STREAM = 256 * 1024


def write_seed(corpus, name, data):
    d = os.path.join(HERE, corpus)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)
    print("%s/%s: %d bytes" % (corpus, name, len(data)))


# ---- the control socket -------------------------------------------------

def capture_ctl(tmp):
    path = os.path.join(tmp, "ctl.sock")
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(4)
    got = []

    def serve():
        while True:
            try:
                c, _ = srv.accept()
            except OSError:
                return
            body = rntest.recv_frame(c)
            if body is not None:
                got.append(body)
                ok = b"\x81\xa2ok\xc3"  # {"ok": true}
                c.sendall(struct.pack(">I", len(ok)) + ok)
            c.close()
    threading.Thread(target=serve, daemon=True).start()
    cmds = {
        "status": ["status"],
        "metrics": ["metrics"],
        "restart-worker": ["restart", "network-0"],
        "restart-role": ["restart", "--role", "network"],
        "restart-rolling-all": ["restart", "--role", "all", "--rolling"],
        "upgrade": ["upgrade"],
        "upgrade-binary": ["upgrade", "--binary", "/usr/sbin/runneld"],
        "stop": ["stop"],
        "fault-on": ["fault", "stall-fetch", "on"],
    }
    for name, args in cmds.items():
        n = len(got)
        subprocess.run([rntest.RUNNELCTL, "-s", path] + args,
                       capture_output=True, timeout=10)
        if len(got) == n + 1:
            write_seed("corpus-ctl", "runnelctl-" + name, got[-1])
        else:
            print("runnelctl %s sent no request" % " ".join(args))
    srv.close()


# ---- a cluster behind recording proxies ---------------------------------

class Proxy:
    """Forwards 127.0.0.1:port to a node's controller listener and keeps
    what each connection sent to it."""

    def __init__(self):
        self.srv = socket.socket()
        self.srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.srv.bind(("127.0.0.1", 0))
        self.srv.listen(16)
        self.port = self.srv.getsockname()[1]
        self.upstream = None
        self.streams = []
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                c, _ = self.srv.accept()
            except OSError:
                return
            try:
                u = socket.create_connection(("127.0.0.1", self.upstream))
            except OSError:
                c.close()
                continue
            rec = bytearray()
            self.streams.append(rec)
            threading.Thread(target=self.pump, args=(c, u, rec),
                             daemon=True).start()
            threading.Thread(target=self.pump, args=(u, c, None),
                             daemon=True).start()

    @staticmethod
    def pump(src, dst, rec):
        try:
            while True:
                b = src.recv(65536)
                if not b:
                    break
                if rec is not None and len(rec) < MAX_STREAM:
                    rec += b[:MAX_STREAM - len(rec)]
                dst.sendall(b)
        except OSError:
            pass
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def raft_messages(stream):
    """(type, header, payload) of each whole libraft message after the
    16-byte runnel preamble (libraft's uv encoding: little-endian u64
    type and header length, the header, then AppendEntries' entries)."""
    p = 16
    while len(stream) - p >= 16:
        mtype, hlen = struct.unpack_from("<QQ", stream, p)
        if hlen > len(stream) - p - 16:
            return
        header = bytes(stream[p + 16:p + 16 + hlen])
        p += 16 + hlen
        payload = b""
        if mtype == 1:  # AppendEntries: entries padded to 8 bytes
            n = struct.unpack_from("<Q", header, 32)[0]
            lens = [struct.unpack_from("<QB3xI", header, 40 + 16 * i)
                    for i in range(n)]
            size = sum(ln for _, _, ln in lens)
            payload = bytes(stream[p:p + size])
            p += size
            yield mtype, header, payload, lens
        else:
            yield mtype, header, payload, []


def run_cluster(tmp):
    proxies = [Proxy() for _ in range(3)]
    voters = ",".join("%d@127.0.0.1:%d" % (i + 1, p.port)
                      for i, p in enumerate(proxies))
    nodes = []
    for i in range(3):
        n = rntest.Node(tmp, node_id=i + 1, voters=voters,
                        props={"num.network.threads": "1"})
        proxies[i].upstream = n.ctl_port
        nodes.append(n)
    for n in nodes:
        n.start()
    try:
        if not all(n.wait_running(30) for n in nodes):
            raise RuntimeError("the cluster did not start")
        boot = ",".join(n.bootstrap for n in nodes)
        topics = os.path.join(rntest.BUILDDIR, "runnel-topics")
        configs = os.path.join(rntest.BUILDDIR, "runnel-configs")

        def tool(path, *args):
            # until every broker registered (RF 3 needs three)
            for _ in range(60):
                r = rntest.run_tool(path, boot, *args)
                if r.returncode == 0 or ("replication factor" not in
                                         r.stderr and "not exist" not in
                                         r.stderr):
                    break
                time.sleep(0.5)
            if r.returncode != 0:
                print("%s %s: %s" % (os.path.basename(path), args, r.stderr))
        # librdkafka leaves gzip, snappy and lz4 batches uncompressed
        # here ("Broker does not support compression type"): gzip comes
        # from kafka-python
        codecs = ["none", "zstd", "gzip"]
        for c in codecs:
            tool(topics, "--create", "--topic", "seg-" + c,
                 "--partitions", "1", "--replication-factor", "3")
        tool(topics, "--create", "--topic", "seg-idempotent",
             "--partitions", "2", "--replication-factor", "3")
        for c in codecs[:2]:
            lines = "".join("k%d:value %d %s\n" % (i, i, "x" * (i * 7))
                            for i in range(12))
            subprocess.run(["kcat", "-b", boot, "-t", "seg-" + c, "-P",
                            "-K:", "-X", "compression.codec=" + c,
                            "-H", "h1=v1", "-H", "trace=abc",
                            "-X", "linger.ms=5", "-X", "batch.num.messages=3"],
                           input=lines.encode(), timeout=60, check=True)
        from kafka import KafkaProducer
        p = KafkaProducer(bootstrap_servers=boot, compression_type="gzip",
                          linger_ms=5)
        for i in range(12):
            p.send("seg-gzip", key=b"k%d" % i,
                   value=b"value %d %s" % (i, b"x" * (i * 7)),
                   headers=[("h1", b"v1")])
        p.flush()
        p.close()
        subprocess.run(["kcat", "-b", boot, "-t", "seg-idempotent", "-P",
                        "-p", "0", "-X", "enable.idempotence=true"],
                       input=b"one\ntwo\nthree\n", timeout=60, check=True)
        tool(configs, "--alter", "--topic", "seg-none",
             "--add-config", "retention.ms=86400000,cleanup.policy=delete")
        tool(topics, "--create", "--topic", "doomed", "--partitions", "3",
             "--replication-factor", "2")
        tool(topics, "--alter", "--topic", "doomed", "--partitions", "4")
        tool(topics, "--delete", "--topic", "doomed")
        time.sleep(2)
        nodes[2].stop()
        time.sleep(8)   # its session runs out: fenced
        for n in nodes[:2]:
            n.stop()
    finally:
        for n in nodes:
            n.kill()
    return proxies, nodes


def save_raft(proxies):
    conns = [bytes(s) for p in proxies for s in p.streams if s]
    raft = [s for s in conns if s.startswith(b"RNRAFT01")]
    kafka = [s for s in conns if not s.startswith(b"RNRAFT01")]
    # per message type the largest one, after its connection's preamble
    kinds = {}
    for s in raft:
        for mtype, h, pl, _ in raft_messages(s):
            m = s[:16] + struct.pack("<QQ", mtype, len(h)) + h + pl
            if len(m) <= MAX_SEED and len(m) > len(kinds.get(mtype, b"")):
                kinds[mtype] = m
    names = {1: "append-entries", 2: "append-entries-result",
             3: "request-vote", 4: "request-vote-result",
             5: "install-snapshot", 6: "timeout-now"}
    for mtype, m in sorted(kinds.items()):
        write_seed("corpus-raft", names.get(mtype, str(mtype)), m)
    if kafka:
        write_seed("corpus-raft", "kafka-broker-to-controller",
                   kafka[0][:MAX_SEED])
    return raft


def save_records(raft):
    # every entry once, by log index: the leader resends on retries
    log = {}
    for s in raft:
        for mtype, h, pl, lens in raft_messages(s):
            if mtype != 1:
                continue
            idx = struct.unpack_from("<Q", h, 8)[0] + 1  # prev index + 1
            cur = 0
            for term, etype, ln in lens:
                if etype == 1:  # RAFT_COMMAND: a record batch
                    log.setdefault(idx, pl[cur:cur + ln])
                cur += ln + (-ln % 8)
                idx += 1
    entries = [log[i] for i in sorted(log)]
    framed = b"".join(struct.pack(">H", len(e)) + e for e in entries)
    write_seed("corpus-records", "log-cluster", framed[:MAX_SEED * 4])
    # one entry of each mix of record types ({"t": "Topic", ...})
    seen = set()
    for e in entries:
        kind = "+".join(sorted(set(
            t.decode() for t in re.findall(rb"\xa1t[\xa0-\xbf]([A-Z][A-Za-z]+)",
                                           e))))
        if not kind or kind in seen or len(e) > MAX_SEED:
            continue
        seen.add(kind)
        write_seed("corpus-records", "entry-" + kind,
                   struct.pack(">H", len(e)) + e)
    if entries:
        # {"v": 1, "index": 100, "term": 2, "records": <an entry's array>}
        best = max(entries, key=len)
        snap = (b"\x84\xa1v\x01\xa5index\x64\xa4term\x02\xa7records" +
                best.rstrip(b"\0"))
        write_seed("corpus-records", "snapshot",
                   struct.pack(">H", len(snap)) + snap)


def save_segments(nodes):
    data = nodes[0].logdir
    for d in sorted(os.listdir(data)):
        if not d.startswith("seg-"):
            continue
        path = os.path.join(data, d, "%020d.log" % 0)
        if not os.path.exists(path):
            continue
        with open(path, "rb") as f:
            log = f.read()
        if not log:
            continue
        name = d.rsplit("-", 1)[0][4:]
        # the option byte (fuzz_segment.c): validate, index every batch
        write_seed("corpus-segment", name, b"\x01" + log[:MAX_SEED])
        if name == "none":
            for opt, what in ((0x00, "headers-only"), (0x11, "interval-100"),
                              (0x31, "tiny-indexes"), (0x05, "base-1000")):
                write_seed("corpus-segment", name + "-" + what,
                           bytes([opt]) + log[:MAX_SEED])
            # cut mid-batch, CRCs redone
            write_seed("corpus-segment", name + "-torn",
                       b"\x03" + log[:len(log) * 2 // 3])
            idx = os.path.join(data, d, "%020d.index" % 0)
            tidx = os.path.join(data, d, "%020d.timeindex" % 0)
            with open(idx, "rb") as f:
                ib = f.read(64).rstrip(b"\0")
            with open(tidx, "rb") as f:
                tb = f.read(72).rstrip(b"\0")
            ib += b"\0" * (-len(ib) % 8)
            tb += b"\0" * (-len(tb) % 12)
            write_seed("corpus-segment", name + "-trusted",
                       b"\x41" + struct.pack(">HH", len(ib), len(tb)) +
                       ib + tb + log[:MAX_SEED])


def main():
    tmp = tempfile.mkdtemp(prefix="runnel-seeds.")
    try:
        capture_ctl(tmp)
        proxies, nodes = run_cluster(tmp)
        raft = save_raft(proxies)
        save_records(raft)
        save_segments(nodes)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
