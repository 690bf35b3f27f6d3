"""systemd integration: READY=1 once every worker is up, STATUS=, WATCHDOG=1, STOPPING=1."""
import os
import socket
import time

from rntest import Node, Tap, TempDir

t = Tap()


def messages(sock, until, want=None):
    """Collect notify datagrams until the deadline or until want is seen."""
    got = []
    while time.monotonic() < until:
        sock.settimeout(max(0.01, until - time.monotonic()))
        try:
            data = sock.recv(4096).decode()
        except socket.timeout:
            break
        got.append(data)
        if want and want in data:
            break
    return got


with TempDir() as tmp:
    path = os.path.join(tmp, "notify.sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(path)
    n = Node(tmp, props={"num.network.threads": "3"})
    n.start(env={"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "400000"})
    try:
        msgs = messages(sock, time.monotonic() + 15, "READY=1")
        ready = [m for m in msgs if "READY=1" in m]
        t.ok(ready, "READY=1 is sent")
        st = n.status()
        t.ok(st is not None and all(w["state"] == "running" for w in st["workers"])
             and len(st["workers"]) == 7,
             "when READY=1 arrives every worker is running")
        t.ok(ready and "MAINPID=%d" % n.proc.pid in ready[0], "READY carries MAINPID")
        t.ok(any("STATUS=" in m for m in msgs), "STATUS= lines are sent")

        msgs = messages(sock, time.monotonic() + 1.5)
        dogs = sum(m.count("WATCHDOG=1") for m in msgs)
        t.ok(dogs >= 3, "WATCHDOG=1 every half period while healthy (%d in 1.5 s)" % dogs)

        # a worker killed: STATUS tells it, the node recovers
        os.kill(n.workers()["network-2"]["pid"], 9)
        msgs = messages(sock, time.monotonic() + 3, "STATUS=running")
        t.ok(any("STATUS=recovering" in m for m in msgs) and
             any("STATUS=running" in m for m in msgs),
             "STATUS reports the recovery of a killed worker")

        n.proc.send_signal(15)
        # like systemd, keep reading: a full socket queue blocks the sender
        msgs = []
        deadline = time.monotonic() + 15
        while n.proc.poll() is None and time.monotonic() < deadline:
            msgs += messages(sock, time.monotonic() + 0.2)
        t.ok(any("STOPPING=1" in m for m in msgs), "SIGTERM sends STOPPING=1")
        t.eq(n.proc.wait(1), 0, "and the node exits 0")
    finally:
        n.kill()
        sock.close()

t.done()
