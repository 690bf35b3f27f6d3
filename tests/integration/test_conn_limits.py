"""Kafka's connection quotas, per broker across the network workers:
max.connections (a client past the limit waits in the backlog, as Kafka's
acceptor blocks, and is served once a slot frees; the first N go on being
served), max.connections.per.ip with an override for 127.0.0.1 against
127.0.0.2 (the connection over the limit is closed at once),
max.connection.creation.rate (a burst is spread out at the rate, a slow
trickle goes straight through), connections.max.idle.ms (an idle
connection is closed, a busy one is not), and counts that come back
right after connections close and after the network workers are killed."""
import os
import signal
import socket
import struct
import time

from rntest import Node, Tap, TempDir, recv_frame, wait_for

t = Tap()
CORR = [0]


def api_versions_req():
    CORR[0] += 1
    client = b"connlimit-test"
    body = struct.pack(">hhih", 18, 0, CORR[0], len(client)) + client
    return struct.pack(">i", len(body)) + body


def connect(n, src="127.0.0.1"):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((src, 0))
    s.settimeout(5)
    s.connect(("127.0.0.1", n.port))
    return s


def served(s, timeout=5.0):
    """An ApiVersions round trip on s: True if answered in time."""
    try:
        s.settimeout(timeout)
        s.sendall(api_versions_req())
        return recv_frame(s) is not None
    except (OSError, socket.timeout):
        return False


def closed_at_once(s, timeout=2.0):
    """True if the broker closes s without answering."""
    try:
        s.settimeout(timeout)
        s.sendall(api_versions_req())
        return s.recv(65536) == b""
    except (ConnectionResetError, BrokenPipeError):
        return True
    except (socket.timeout, OSError):
        return False


def network_pids(n):
    return [w["pid"] for name, w in n.workers().items()
            if name.startswith("network")]


def node(tmp, name, props):
    n = Node(tmp, name=name, props=props)
    n.start()
    st = n.wait_running()
    t.ok(st is not None, "%s: node is up" % name)
    return n


with TempDir() as tmp:
    # -- max.connections ---------------------------------------------
    n = node(tmp, "maxconn", {"max.connections": "5"})
    try:
        first = [connect(n) for _ in range(5)]
        t.ok(all(served(s) for s in first), "max.connections=5: 5 clients served")
        sixth = connect(n)  # the kernel completes it; runnel does not take it
        t.ok(not served(sixth, 1.5), "the 6th waits in the backlog: no answer")
        t.ok(all(served(s) for s in first), "the first 5 are still served")
        first.pop().close()
        t.ok(served(sixth, 5), "a slot freed: the 6th is served")
        for s in first:
            s.close()
        sixth.close()
        time.sleep(0.3)
        again = [connect(n) for _ in range(5)]
        t.ok(all(served(s) for s in again), "after closes, 5 new clients are served")
        late = connect(n)
        t.ok(not served(late, 1.0), "and a 6th waits again: the count is exact")
        late.close()
        for s in again:
            s.close()
        time.sleep(0.3)
        # a network worker's counts die with it
        hold = [connect(n) for _ in range(5)]
        t.ok(all(served(s) for s in hold), "5 clients held open")
        before = network_pids(n)
        for pid in before:
            os.kill(pid, signal.SIGKILL)
        t.ok(wait_for(lambda: n.wait_running(1) is not None and
                      not set(network_pids(n)) & set(before), 20),
             "network workers killed and restarted")
        for s in hold:
            s.close()
        after = [connect(n) for _ in range(5)]
        t.ok(all(served(s) for s in after),
             "after the kill, 5 new clients are served: no leaked counts")
        for s in after:
            s.close()
        t.eq(n.crashes(), [], "no worker crashed")
    finally:
        n.stop()

    # -- max.connections.per.ip and its overrides -----------------------
    n = node(tmp, "perip", {"max.connections.per.ip": "2",
                            "max.connections.per.ip.overrides": "127.0.0.1:4"})
    try:
        b = [connect(n, "127.0.0.2") for _ in range(2)]
        t.ok(all(served(s) for s in b), "127.0.0.2: 2 connections served")
        extra = connect(n, "127.0.0.2")
        t.ok(closed_at_once(extra), "127.0.0.2: the 3rd is closed at once")
        a = [connect(n) for _ in range(4)]
        t.ok(all(served(s) for s in a), "127.0.0.1 (override 4): 4 served")
        t.ok(closed_at_once(connect(n)), "127.0.0.1: the 5th is closed at once")
        t.ok(all(served(s) for s in b + a), "existing connections untouched")
        b.pop().close()
        time.sleep(0.3)
        nb = connect(n, "127.0.0.2")
        t.ok(served(nb), "127.0.0.2: one closed, a new one is served")
        t.ok(closed_at_once(connect(n, "127.0.0.2")), "and the next is closed again")
        log = n.logtext()
        t.ok("max.connections.per.ip" in log and "127.0.0.2" in log,
             "the refusal is logged with the address")
        for s in b + a + [nb]:
            s.close()
        t.eq(n.crashes(), [], "no worker crashed")
    finally:
        n.stop()

    # -- max.connection.creation.rate --------------------------------
    n = node(tmp, "rate", {"max.connection.creation.rate": "5"})
    try:
        time.sleep(1.2)
        trickle_ok = True
        for _ in range(5):
            s = connect(n)
            t0 = time.time()
            trickle_ok = trickle_ok and served(s, 2) and time.time() - t0 < 0.25
            s.close()
            time.sleep(0.3)
        t.ok(trickle_ok, "a trickle below the rate is served at once")
        time.sleep(1.2)
        t0 = time.time()
        burst = [connect(n) for _ in range(20)]
        for s in burst:
            s.sendall(api_versions_req())
        times = []
        for s in burst:
            s.settimeout(10)
            if recv_frame(s) is not None:
                times.append(time.time() - t0)
        t.eq(len(times), 20, "a burst of 20 is served in the end, none closed")
        if times:
            t.diag("burst served after %.2f s (first %.2f s)" % (max(times), min(times)))
        t.ok(times and max(times) >= 2.0, "a burst of 20 at 5/s is spread over >= 2 s")
        t.ok(times and min(times) < 0.5, "its first ones go through at once")
        for s in burst:
            s.close()
        t.eq(n.crashes(), [], "no worker crashed")
    finally:
        n.stop()

    # -- connections.max.idle.ms ------------------------------------
    n = node(tmp, "idle", {"connections.max.idle.ms": "1500"})
    try:
        idle, busy = connect(n), connect(n)
        t.ok(served(idle) and served(busy), "two clients served")
        end = time.time() + 3.5
        busy_ok = True
        while time.time() < end:
            busy_ok = busy_ok and served(busy)
            time.sleep(0.4)
        t.ok(busy_ok, "a busy connection stays open past connections.max.idle.ms")
        try:
            idle.settimeout(1)
            gone = idle.recv(100) == b""
        except ConnectionResetError:
            gone = True
        except socket.timeout:
            gone = False
        t.ok(gone, "an idle one is closed after connections.max.idle.ms")
        idle.close()
        busy.close()
        t.eq(n.crashes(), [], "no worker crashed")
    finally:
        n.stop()

t.done()
