"""runnel-topics against a real node: create, list, describe, alter, delete."""
import os
import re
import subprocess

from rntest import BUILDDIR, Node, Tap, TempDir, run_tool, wait_for

TOPICS = os.path.join(BUILDDIR, "runnel-topics")

t = Tap()


def topics(node, *args):
    return run_tool(TOPICS, node.bootstrap, *args)


def parse_describe(out):
    """{topic: (header fields, [partition fields...])} from --describe."""
    res = {}
    for line in out.splitlines():
        fields = dict(re.findall(r"(\w[\w ]*?): ([^\t]*)", line))
        if not line.startswith("\t") and "PartitionCount" in fields:
            res[fields["Topic"]] = (fields, [])
        elif line.startswith("\t") and "Partition" in fields:
            res[fields["Topic"]][1].append(fields)
    return res


with TempDir() as tmp:
    n = Node(tmp)
    n.start()
    try:
        t.ok(n.wait_running() is not None, "node is running")
        t.ok(wait_for(lambda: topics(n, "--list").returncode == 0, 20),
             "runnel-topics --list answers")

        r = topics(n, "--create", "--topic", "orders", "--partitions", "3",
                   "--replication-factor", "1")
        t.eq(r.returncode, 0, "--create orders with 3 partitions")
        t.ok("Created topic orders." in r.stdout, "says it created it")
        if r.returncode:
            t.diag(r.stderr)

        t.ok(wait_for(lambda: "orders" in topics(n, "--list").stdout.split(), 10),
             "--list shows orders")

        def described(name, parts):
            d = parse_describe(topics(n, "--describe", "--topic", name).stdout)
            return d if name in d and len(d[name][1]) == parts else None

        d = wait_for(lambda: described("orders", 3), 10)
        t.ok(d is not None, "--describe shows orders")
        if d:
            head, parts = d["orders"]
            t.eq(head.get("PartitionCount"), "3", "PartitionCount: 3")
            t.eq(head.get("ReplicationFactor"), "1", "ReplicationFactor: 1")
            t.ok(re.fullmatch(r"[A-Za-z0-9_-]{22}", head.get("TopicId", "")) is not None,
                 "TopicId is a Kafka Uuid (Metadata v10+)")
            t.eq([p["Partition"] for p in parts], ["0", "1", "2"], "partitions 0, 1, 2")
            t.ok(all(p.get("Leader") == "1" for p in parts), "Leader: 1 everywhere")
            t.ok(all(p.get("Replicas") == "1" for p in parts), "Replicas: 1 everywhere")
            t.ok(all(p.get("Isr") == "1" for p in parts), "Isr: 1 everywhere")
            t.ok(all("Offline" not in p for p in parts), "no Offline column on a healthy topic")

        r = topics(n, "--create", "--topic", "orders", "--partitions", "3")
        t.eq(r.returncode, 1, "creating it again exits 1")
        t.ok("already exists" in r.stderr and "TOPIC_ALREADY_EXISTS" in r.stderr,
             "with an 'already exists' message: %r" % r.stderr.strip())
        r = topics(n, "--create", "--topic", "orders", "--if-not-exists")
        t.eq(r.returncode, 0, "--if-not-exists makes that a success")

        r = topics(n, "--alter", "--topic", "orders", "--partitions", "5")
        t.eq(r.returncode, 0, "--alter --partitions 5")
        t.ok(wait_for(lambda: described("orders", 5), 10) is not None,
             "--describe shows 5 partitions")
        r = topics(n, "--alter", "--topic", "orders", "--partitions", "2")
        t.eq(r.returncode, 1, "shrinking partitions exits 1")

        r = topics(n, "--create", "--topic", "bad/name", "--partitions", "1")
        t.eq(r.returncode, 1, "an invalid topic name exits 1")
        t.ok("INVALID_TOPIC_EXCEPTION" in r.stderr or "invalid topic" in r.stderr.lower(),
             "saying the name is invalid: %r" % r.stderr.strip())
        r = topics(n, "--create", "--topic", "x" * 250, "--partitions", "1")
        t.eq(r.returncode, 1, "a 250-char topic name exits 1")

        r = topics(n, "--create", "--topic", "manual", "--replica-assignment", "1,1")
        t.eq(r.returncode, 0, "--replica-assignment 1,1 creates 2 partitions on broker 1")
        d = wait_for(lambda: described("manual", 2), 10)
        t.ok(d is not None and all(p["Replicas"] == "1" for p in d["manual"][1]),
             "described with replicas 1")

        r = topics(n, "--create", "--topic", "withcfg", "--partitions", "1",
                   "--config", "retention.ms=12345")
        t.eq(r.returncode, 0, "--create with --config retention.ms=12345")
        d = wait_for(lambda: described("withcfg", 1), 10)
        t.ok(d is not None and "retention.ms=12345" in d["withcfg"][0].get("Configs", ""),
             "Configs: shows the override")

        r = topics(n, "--delete", "--topic", "orders")
        t.eq(r.returncode, 0, "--delete orders")
        t.ok(wait_for(lambda: "orders" not in topics(n, "--list").stdout.split(), 10),
             "--list no longer shows orders")
        r = topics(n, "--delete", "--topic", "orders")
        t.eq(r.returncode, 1, "deleting a missing topic exits 1")
        t.eq(topics(n, "--delete", "--topic", "orders", "--if-exists").returncode, 0,
             "--if-exists makes that a success")
        r = topics(n, "--describe", "--topic", "orders")
        t.eq(r.returncode, 1, "describing a missing topic exits 1")

        t.eq(topics(n, "--list", "--create").returncode, 2, "two actions: exit 2")
        t.eq(topics(n, "--create").returncode, 2, "--create without --topic: exit 2")
    finally:
        n.stop()

# nothing listening: a clear error, exit 1, well before the timeout
r = subprocess.run([TOPICS, "--bootstrap-server", "127.0.0.1:1", "--list"],
                   capture_output=True, text=True, timeout=60)
t.eq(r.returncode, 1, "an unreachable bootstrap server exits 1")
t.ok("reachable" in r.stderr, "saying no broker is reachable: %r" % r.stderr.strip())

t.done()
