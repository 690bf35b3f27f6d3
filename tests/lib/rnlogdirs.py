"""Log-dir helpers for the JBOD tests: nodes with two log dirs, what
runnel-log-dirs describes, and raw Kafka requests the test clients lack:
AlterReplicaLogDirs (v0-2, v2 flexible) and ApiVersions v0, over a plain
socket to a runnel node."""
import json
import os
import socket
import struct
import subprocess

from rntest import BUILDDIR
from rnwire import Reader
from rnwire import uvarint as _uvarint


def two_log_dirs(cluster):
    """Give each node of a cluster not yet started two log dirs, d1 and d2 in
    its own dir (node.dirs), and write its config."""
    for n in cluster.nodes:
        n.dirs = [os.path.join(n.dir, "d1"), os.path.join(n.dir, "d2")]
        n.props["log.dirs"] = ",".join(n.dirs)
        n.write_config()


def describe_json(bootstrap, topic, timeout=30):
    """What runnel-log-dirs --describe prints (JSON, its last line) for one
    topic, or None if it fails or prints no JSON."""
    r = subprocess.run([os.path.join(BUILDDIR, "runnel-log-dirs"), "--bootstrap-server",
                        bootstrap, "--describe", "--topic-list", topic],
                       capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        return None
    try:
        return json.loads(r.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        return None


def _str(s, flex):
    b = s.encode()
    return (_uvarint(len(b) + 1) if flex else struct.pack(">h", len(b))) + b


def _arr(items, flex):
    return (_uvarint(len(items) + 1) if flex else struct.pack(">i", len(items))) + \
        b"".join(items)


def _call(n, key, ver, body, flex_hdr):
    hdr = struct.pack(">hhi", key, ver, 77) + struct.pack(">h", 1) + b"t"
    if flex_hdr:
        hdr += b"\x00"
    msg = hdr + body
    with socket.create_connection(("127.0.0.1", n.port), timeout=10) as s:
        s.sendall(struct.pack(">i", len(msg)) + msg)
        buf = b""
        while len(buf) < 4 or len(buf) < 4 + struct.unpack(">i", buf[:4])[0]:
            c = s.recv(65536)
            if not c:
                return None
            buf += c
    return Reader(buf[4:])


def alter_raw(n, moves, ver):
    """moves [(path, topic, partition)] -> {(topic, p): error code}"""
    flex = ver >= 2
    dirs = [_str(path, flex) + _arr([_str(tp, flex) + _arr(
        [struct.pack(">i", p)], flex) + (b"\x00" if flex else b"")], flex) +
        (b"\x00" if flex else b"") for path, tp, p in moves]
    r = _call(n, 34, ver, _arr(dirs, flex) + (b"\x00" if flex else b""), flex)
    if r is None:
        return None
    r.take(">i")  # correlation id
    r.tags(flex)
    r.take(">i")  # throttle
    out = {}
    for _ in range(r.count(flex)):
        tp = r.string(flex)
        for _ in range(r.count(flex)):
            p = r.take(">i")
            out[(tp, p)] = r.take(">h")
            r.tags(flex)
        r.tags(flex)
    return out


def api_versions(n):
    r = _call(n, 18, 0, b"", False)
    r.take(">i")
    err = r.take(">h")
    keys = {}
    for _ in range(r.take(">i")):
        k, lo, hi = r.take(">h"), r.take(">h"), r.take(">h")
        keys[k] = (lo, hi)
    return err, keys
