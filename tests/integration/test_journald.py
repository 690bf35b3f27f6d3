"""Logs reach journald with structured fields when the journal socket exists.

The test runs in a private mount namespace with a tmpfs over /run, where it
plays journald: it binds /run/systemd/journal/socket and reads the native
protocol datagrams runneld sends. Needs root (unshare), as CI has.
"""
import os
import socket
import subprocess
import sys
import threading

from rntest import Node, Tap, TempDir, wait_for

if os.environ.get("RUNNEL_IN_NS") != "1":
    if os.geteuid() != 0:
        print("1..0 # SKIP needs root for a private mount namespace")
        sys.exit(0)
    env = dict(os.environ, RUNNEL_IN_NS="1")
    script = ("mount -t tmpfs runnel-test /run && mkdir -p /run/systemd/journal && "
              "exec %s %s" % (sys.executable, os.path.abspath(__file__)))
    sys.exit(subprocess.call(["unshare", "--mount", "--propagation", "private",
                              "sh", "-c", script], env=env))

t = Tap()


def parse(datagram):
    """journald's native protocol: KEY=value lines (binary form not used here)."""
    fields = {}
    for line in datagram.split(b"\n"):
        if b"=" in line:
            k, v = line.split(b"=", 1)
            fields[k.decode()] = v.decode("utf-8", "replace")
    return fields


jsock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
jsock.bind("/run/systemd/journal/socket")
jsock.settimeout(0.2)
records = []
stop_reading = threading.Event()


def reader():
    # like journald, read continuously: a full socket queue blocks senders
    while not stop_reading.is_set():
        try:
            records.append(parse(jsock.recv(65536)))
        except socket.timeout:
            pass


thread = threading.Thread(target=reader, daemon=True)
thread.start()


def drain():
    stop_reading.set()
    thread.join()


with TempDir() as tmp:
    n = Node(tmp)
    n.start(journal=True)
    try:
        t.ok(n.wait_running() is not None, "node runs with the journal present")
        os.kill(n.workers()["network-1"]["pid"], 9)
        wait_for(lambda: n.workers()["network-1"]["restarts"] == 1, 5)
        n.stop()
        drain()
        t.ok(len(records) > 5, "records arrived on the journal socket (%d)" % len(records))
        comps = {r.get("COMPONENT") for r in records}
        t.ok({"supervisor", "controller", "network", "replica-fetcher"} <= comps,
             "COMPONENT= names each role: %s" % sorted(c for c in comps if c))
        net = [r for r in records if r.get("COMPONENT") == "network"]
        t.ok(net and all(r.get("WORKER", "").startswith("network-") for r in net),
             "WORKER= names the network worker")
        t.ok(all(r.get("PRIORITY", "").isdigit() and "MESSAGE" in r for r in records),
             "every record has PRIORITY= and MESSAGE=")
        t.ok(all(r.get("SYSLOG_IDENTIFIER") == "runneld" for r in records),
             "SYSLOG_IDENTIFIER=runneld")
        crash = [r for r in records if "network-1 killed by signal 9" in r.get("MESSAGE", "")]
        t.ok(crash and crash[0]["PRIORITY"] == "4",
             "the worker crash is logged at warning priority")
        t.ok("<6>" not in n.logtext(), "nothing went to stderr instead")
    finally:
        n.kill()

t.done()
