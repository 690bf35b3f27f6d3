"""runnel-consumer-groups against a real node and real consumers: list,
describe with lag, members and state, resets (dry run and execute, each
specification), offset deletion and group deletion."""
import os
import subprocess
import time

from confluent_kafka import Consumer, Producer, TopicPartition

from rntest import BUILDDIR, Node, Tap, TempDir, wait_for

TOPICS = os.path.join(BUILDDIR, "runnel-topics")
GROUPS = os.path.join(BUILDDIR, "runnel-consumer-groups")

t = Tap()


def run(node, *args):
    return subprocess.run([GROUPS, "--bootstrap-server", node.bootstrap,
                           "--timeout-ms", "10000"] + list(args),
                          capture_output=True, text=True, timeout=60)


def table(out, first):
    """Rows (lists of columns) of the table whose header starts with first."""
    rows, inside = [], False
    for line in out.splitlines():
        cols = line.split()
        if cols and cols[0] == first:
            inside = True
            continue
        if inside and cols:
            rows.append(cols)
        elif inside:
            inside = False
    return rows


def offsets_rows(out):
    """{partition: (current, log_end, lag, consumer)} from --describe."""
    return {int(r[2]): (r[3], r[4], r[5], r[6])
            for r in table(out, "GROUP") if r[1] == "cg"}


def new_offsets(out):
    return {int(r[2]): int(r[3]) for r in table(out, "GROUP")}


def consumer(node, group):
    return Consumer({"bootstrap.servers": node.bootstrap, "group.id": group,
                     "auto.offset.reset": "earliest",
                     "enable.auto.commit": False,
                     "session.timeout.ms": 6000})


def committed(node, group, parts=(0, 1, 2)):
    c = consumer(node, group)
    try:
        got = c.committed([TopicPartition("cg", p) for p in parts],
                          timeout=10)
        return {tp.partition: tp.offset for tp in got}
    finally:
        c.close()


def produce(node, per_partition):
    p = Producer({"bootstrap.servers": node.bootstrap, "acks": "all"})
    for part, n in per_partition.items():
        for i in range(n):
            p.produce("cg", value=b"v%d" % i, partition=part)
    return p.flush(15)


def consume_all(c, n, timeout=30):
    got, deadline = 0, time.monotonic() + timeout
    while got < n and time.monotonic() < deadline:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got += 1
    return got


with TempDir() as tmp:
    n = Node(tmp, props={"group.initial.rebalance.delay.ms": "0"})
    n.start()
    try:
        t.ok(n.wait_running() is not None, "node is running")
        r = subprocess.run([TOPICS, "--bootstrap-server", n.bootstrap,
                            "--create", "--topic", "cg", "--partitions", "3"],
                           capture_output=True, text=True, timeout=60)
        t.eq(r.returncode, 0, "topic cg with 3 partitions created")
        t.eq(produce(n, {0: 10, 1: 10, 2: 10}), 0, "30 records produced")

        c = consumer(n, "g1")
        c.subscribe(["cg"])
        t.eq(consume_all(c, 30), 30, "a group member reads all 30 records")
        c.commit(asynchronous=False)

        r = run(n, "--list")
        t.ok(r.returncode == 0 and "g1" in r.stdout.split(), "--list names g1")
        r = run(n, "--list", "--state")
        t.ok(["g1", "Stable"] in table(r.stdout, "GROUP"),
             "--list --state shows g1 Stable")
        r = run(n, "--list", "--state", "Empty")
        t.ok(r.returncode == 0 and "g1" not in r.stdout,
             "--list --state Empty leaves out the stable g1")

        r = run(n, "--describe", "--group", "g1")
        rows = offsets_rows(r.stdout)
        t.eq(sorted(rows), [0, 1, 2], "--describe lists the 3 partitions")
        if not t.ok(all(v[:3] == ("10", "10", "0") and v[3] != "-"
                        for v in rows.values()),
                    "each at CURRENT-OFFSET 10, LOG-END-OFFSET 10, LAG 0, "
                    "held by a consumer"):
            t.diag(r.stdout + r.stderr)

        t.eq(produce(n, {0: 5}), 0, "5 more records into partition 0")
        r = run(n, "--describe", "--group", "g1")
        t.eq(offsets_rows(r.stdout).get(0, ())[:3], ("10", "15", "5"),
             "partition 0 now shows LAG 5")

        r = run(n, "--describe", "--group", "g1", "--members", "--verbose")
        mem = table(r.stdout, "GROUP")
        t.ok(len(mem) == 1 and mem[0][4] == "3" and "cg(0,1,2)" in r.stdout,
             "--members --verbose: one member holding cg(0,1,2)")
        r = run(n, "--describe", "--group", "g1", "--state")
        st = table(r.stdout, "GROUP")
        t.ok(len(st) == 1 and st[0][-2:] == ["Stable", "1"],
             "--state: Stable with 1 member")

        r = run(n, "--reset-offsets", "--group", "g1", "--topic", "cg",
                "--to-earliest", "--execute")
        t.ok(r.returncode != 0 and "Assignments can only be reset if the "
             "group 'g1' is inactive, but the current state is Stable."
             in r.stderr, "an active group cannot be reset")
        c.close()

        r = wait_for(lambda: (lambda x: x if "has no active members"
                              in x.stdout else None)(
            run(n, "--describe", "--group", "g1")), 20)
        t.ok(r is not None, "after the consumer leaves, the group has no "
             "active members")
        t.eq(committed(n, "g1"), {0: 10, 1: 10, 2: 10},
             "committed offsets are 10, 10, 10")

        r = run(n, "--reset-offsets", "--group", "g1", "--topic", "cg",
                "--to-earliest")
        t.eq(new_offsets(r.stdout), {0: 0, 1: 0, 2: 0},
             "dry run --to-earliest shows 0 for each partition")
        t.eq(committed(n, "g1"), {0: 10, 1: 10, 2: 10},
             "a dry run changes nothing")

        r = run(n, "--reset-offsets", "--group", "g1", "--topic", "cg:1",
                "--to-offset", "3", "--execute")
        t.eq(new_offsets(r.stdout), {1: 3}, "--to-offset 3 on cg:1")
        t.eq(committed(n, "g1"), {0: 10, 1: 3, 2: 10},
             "--execute committed partition 1 at 3 only")

        r = run(n, "--reset-offsets", "--group", "g1", "--topic", "cg",
                "--shift-by", "-4", "--execute")
        t.eq(committed(n, "g1"), {0: 6, 1: 0, 2: 6},
             "--shift-by -4 moves each back, clamped at the log start")
        r = run(n, "--reset-offsets", "--group", "g1", "--topic", "cg:2",
                "--to-offset", "1000", "--execute")
        t.eq(new_offsets(r.stdout), {2: 10},
             "--to-offset past the end is clamped to the log end")

        r = run(n, "--reset-offsets", "--group", "g1", "--all-topics",
                "--to-latest", "--execute")
        t.eq(committed(n, "g1"), {0: 15, 1: 10, 2: 10},
             "--all-topics --to-latest moves every committed partition "
             "to its end")

        r = run(n, "--reset-offsets", "--group", "g1", "--topic", "cg",
                "--to-datetime", "2000-01-01T00:00:00.000Z", "--dry-run")
        t.eq(new_offsets(r.stdout), {0: 0, 1: 0, 2: 0},
             "--to-datetime in the past gives the first offsets")
        r = run(n, "--reset-offsets", "--group", "g1", "--topic", "cg",
                "--to-datetime", "2999-01-01T00:00:00+02:00", "--dry-run")
        t.eq(new_offsets(r.stdout), {0: 15, 1: 10, 2: 10},
             "--to-datetime in the future gives the log ends")
        r = run(n, "--reset-offsets", "--group", "g1", "--topic", "cg",
                "--by-duration", "P1DT2H", "--execute")
        t.eq(committed(n, "g1"), {0: 0, 1: 0, 2: 0},
             "--by-duration P1DT2H (before every record) gives offset 0")
        r = run(n, "--reset-offsets", "--group", "g1", "--topic", "cg",
                "--by-duration", "yesterday")
        t.ok(r.returncode == 2 and "PnDTnHnMnS" in r.stderr,
             "a bad duration is a usage error")

        r = run(n, "--delete-offsets", "--group", "g1", "--topic", "cg:2")
        t.ok(r.returncode == 0 and ["cg", "2", "Successful"] in
             table(r.stdout, "TOPIC"), "--delete-offsets cg:2 succeeds")
        t.eq(committed(n, "g1"), {0: 0, 1: 0, 2: -1001},
             "partition 2 has no committed offset any more")

        r = run(n, "--delete", "--group", "g1")
        t.ok(r.returncode == 0 and "Deletion of requested consumer groups "
             "('g1') was successful." in r.stdout, "--delete g1 succeeds")
        r = run(n, "--list")
        t.ok(r.returncode == 0 and "g1" not in r.stdout.split(),
             "g1 is gone from --list")
        r = run(n, "--describe", "--group", "nosuch")
        t.ok(r.returncode != 0 and "Consumer group 'nosuch' does not exist."
             in r.stderr, "describing an unknown group says it does not "
             "exist")
        t.eq(n.crashes(), [], "no worker crashed")
    finally:
        n.stop()

t.done()
