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




def make_topic_and_group(bootstrap):
    """A topic of two partitions, and a consumer group that reads it."""
    from confluent_kafka import Consumer, Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    a = AdminClient({"bootstrap.servers": bootstrap})
    wait_for(lambda: a.create_topics([NewTopic(TOPIC, 2, 1)])[TOPIC].exception(20) is None
             or TOPIC in a.list_topics(timeout=5).topics, 30, 0.5)
    p = Producer({"bootstrap.servers": bootstrap})
    p.produce(TOPIC, b"x", partition=0)
    p.flush(20)
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP,
                  "auto.offset.reset": "earliest"})
    c.subscribe([TOPIC])
    got = wait_for(lambda: c.poll(1.0), 30, 0)
    c.close()
    return got is not None


TOPIC, GROUP = "journald-orders", "journald-billing"

with TempDir() as tmp:
    n = Node(tmp)
    n.start(journal=True)
    try:
        t.ok(n.wait_running() is not None, "node runs with the journal present")
        read = make_topic_and_group(n.bootstrap)
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

        # the subject fields, so that journalctl TOPIC=orders finds them
        def msgs(rs):
            return [r["MESSAGE"] for r in rs]
        by_topic = [r for r in records if r.get("TOPIC") == TOPIC]
        parts = [r for r in by_topic if r["MESSAGE"].startswith(TOPIC + "-")]
        t.ok(any(r["MESSAGE"].startswith("CreateTopics %s:" % TOPIC) for r in by_topic) and
             sorted(r.get("PARTITION") for r in parts
                    if ": created: " in r["MESSAGE"]) == ["0", "1"],
             "TOPIC= on the topic's creation, with PARTITION= on each partition's "
             "line: %s" % msgs(by_topic)[:3])
        t.ok(parts and all(r.get("PARTITION") == r["MESSAGE"][len(TOPIC) + 1:].split(":")[0]
                           for r in parts),
             "every \"%s-N: ...\" line says PARTITION=N" % TOPIC)
        t.ok(all(r.get("TOPIC") for r in records if "PARTITION" in r),
             "no PARTITION= without its TOPIC=")
        by_broker = [r for r in records if r.get("BROKER") == "1"]
        t.ok(any("registering broker 1" in r["MESSAGE"] for r in by_broker) and
             any("broker 1 registered" in r["MESSAGE"] for r in by_broker),
             "BROKER=1 on the registration lines (%d records)" % len(by_broker))
        by_group = [r for r in records if r.get("GROUP") == GROUP]
        t.ok(read and any("generation 1 with 1 members" in r["MESSAGE"] for r in by_group),
             "GROUP= on the coordinator's lines about the group: %s" % msgs(by_group)[:2])
        t.ok(not any("TOPIC" in r or "GROUP" in r or "BROKER" in r for r in records
                     if "killed by signal" in r.get("MESSAGE", "")),
             "a line about no subject has none of these fields")
    finally:
        n.kill()

t.done()
