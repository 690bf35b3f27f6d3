"""The control socket: permissions, SO_PEERCRED, and bad requests."""
import os
import socket
import stat
import struct
import subprocess

from rntest import RUNNELCTL, Node, Tap, TempDir, recv_frame

t = Tap()


def frame(body):
    return struct.pack(">I", len(body)) + body


def closed(s):
    s.settimeout(5)
    try:
        return s.recv(1) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True


def as_nobody(args):
    """Run runnelctl as uid 65534 (nobody)."""
    def demote():
        os.setgroups([])
        os.setgid(65534)
        os.setuid(65534)
    return subprocess.run([RUNNELCTL] + args, capture_output=True, text=True,
                          preexec_fn=demote, timeout=10)


with TempDir() as tmp:
    n = Node(tmp)
    n.start()
    try:
        t.ok(n.wait_running() is not None, "node is up")
        mode = stat.S_IMODE(os.stat(n.sock).st_mode)
        t.eq(oct(mode), oct(0o660), "control socket has mode 0660")

        # a healthy connection opened before the bad ones keeps working
        good = socket.socket(socket.AF_UNIX)
        good.connect(n.sock)

        # garbage that is not msgpack: error reply, then closed
        s = socket.socket(socket.AF_UNIX)
        s.connect(n.sock)
        s.sendall(frame(b"\xc1\xc1\xc1 not msgpack"))
        r = recv_frame(s)
        t.ok(r is not None and b"malformed" in r, "garbage gets an error reply")
        t.ok(closed(s), "and its connection is closed")

        # a length prefix far above the limit: refused before allocating
        s = socket.socket(socket.AF_UNIX)
        s.connect(n.sock)
        s.sendall(struct.pack(">I", 0x7FFFFFFF))
        r = recv_frame(s)
        t.ok(r is not None and b"too large" in r, "oversized request gets an error reply")
        t.ok(closed(s), "and its connection is closed")

        # a map without the protocol version
        s = socket.socket(socket.AF_UNIX)
        s.connect(n.sock)
        s.sendall(frame(b"\x81\xa4verb\xa6status"))  # {"verb": "status"}
        r = recv_frame(s)
        t.ok(r is not None and b"version" in r, "a request without a version is refused")
        t.ok(closed(s), "and its connection is closed")

        # a client that connects and hangs up mid-frame
        s = socket.socket(socket.AF_UNIX)
        s.connect(n.sock)
        s.sendall(b"\x00\x00")
        s.close()

        # the earlier connection and the daemon are untouched
        good.sendall(frame(b"\x82\xa1v\x01\xa4verb\xa6status"))
        r = recv_frame(good)
        t.ok(r is not None and b"workers" in r,
             "a connection opened before the bad ones still gets answers")
        good.sendall(frame(b"\x82\xa1v\x01\xa4verb\xa5bogus"))
        r = recv_frame(good)
        t.ok(r is not None and b"unknown verb" in r, "an unknown verb is an error reply")
        good.close()
        st = n.wait_running(5)
        t.ok(st is not None and all(w["restarts"] == 0 for w in st["workers"]),
             "the daemon and its workers are untouched by bad requests")

        # SO_PEERCRED: other users may look but not touch
        # let nobody reach the socket at all, for this test only
        os.chmod(tmp, 0o711)
        os.chmod(n.dir, 0o711)
        os.chmod(n.sock, 0o666)
        r = as_nobody(["-s", n.sock, "status"])
        t.eq(r.returncode, 0, "an unprivileged user may read status")
        r = as_nobody(["-s", n.sock, "restart", "network-0"])
        t.ok(r.returncode != 0 and "permission denied" in r.stderr,
             "restart is refused to an unprivileged user: %s" % r.stderr.strip())
        r = as_nobody(["-s", n.sock, "stop"])
        t.ok(r.returncode != 0 and "permission denied" in r.stderr,
             "stop is refused to an unprivileged user")
        t.ok(n.proc.poll() is None and n.workers()["network-0"]["restarts"] == 0,
             "nothing changed after the refused verbs")
        t.ok("restart refused to uid 65534" in n.logtext(),
             "the refusal is logged with the caller's uid")

        # runnelctl's own errors
        r = n.ctl("frobnicate")
        t.ok(r.returncode == 2 and "unknown verb" in r.stderr, "runnelctl rejects unknown verbs")
        r = subprocess.run([RUNNELCTL, "-s", os.path.join(tmp, "absent.sock"), "status"],
                           capture_output=True, text=True)
        t.ok(r.returncode == 1 and "cannot connect" in r.stderr,
             "runnelctl says when no node listens")
    finally:
        n.kill()

t.done()
