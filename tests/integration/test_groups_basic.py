"""Consumer groups with real clients against one runneld: a confluent-kafka
subscriber in its own process commits, reads on without committing and is
SIGKILLed; a new process resumes from the committed offsets, and at each step
committed() and position() agree with runnel-consumer-groups --describe; three kcat -G
members share six partitions two each, and when one is killed the other two take
its partitions after the session timeout, with nothing skipped and nothing read
twice beyond what the dead member had not committed; two kafka-python members
balance and commit."""
import json
import os
import re
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from kafka import KafkaConsumer

from rntest import Node, Tap, TempDir, wait_for, BUILDDIR, SANITIZED

t = Tap()
SESSION_MS = 6000


def create(n, topic, parts):
    subprocess.run([os.path.join(BUILDDIR, "runnel-topics"), "--bootstrap-server",
                    n.bootstrap, "--create", "--topic", topic, "--partitions",
                    str(parts), "--replication-factor", "1"],
                   check=True, capture_output=True, timeout=30)


def produce(n, topic, parts, per_part, tag):
    p = Producer({"bootstrap.servers": n.bootstrap})
    for i in range(per_part):
        for q in range(parts):
            p.produce(topic, value=b"%s-%d-%d" % (tag, q, i), partition=q)
    t.eq(p.flush(30), 0, "%d records produced to %s" % (parts * per_part, topic))


def consumer(n, group, **kw):
    conf = {"bootstrap.servers": n.bootstrap, "group.id": group,
            "auto.offset.reset": "earliest", "enable.auto.commit": False,
            "session.timeout.ms": SESSION_MS}
    conf.update(kw)
    return Consumer(conf)


def drain(c, want, timeout=30):
    got = []
    end = time.monotonic() + timeout
    while len(got) < want and time.monotonic() < end:
        m = c.poll(0.5)
        if m is not None and m.error() is None:
            got.append((m.partition(), m.offset()))
    return got


# One group member in its own process (a separate /usr/bin/python3, as a
# restarted application would be), driven by JSON lines on stdin, answering
# one JSON line each on stdout. Between commands it blocks on stdin and
# consumes nothing: its position cannot move while the parent looks at the
# group from outside (librdkafka's own thread keeps heartbeating).
MEMBER = r'''
import json, sys, time
from confluent_kafka import Consumer, TopicPartition
conf, topic, parts = json.loads(sys.argv[1]), sys.argv[2], int(sys.argv[3])
c = Consumer(conf)
c.subscribe([topic])
tps = lambda: [TopicPartition(topic, q) for q in range(parts)]
def say(o):
    sys.stdout.write(json.dumps(o) + "\n")
    sys.stdout.flush()
say({"ready": True})
for line in sys.stdin:
    cmd = json.loads(line)
    if cmd["op"] == "read":
        got, end = [], time.monotonic() + cmd.get("timeout", 60)
        while len(got) < cmd["n"] and time.monotonic() < end:
            m = c.poll(0.5)
            if m is not None and m.error() is None:
                got.append((m.partition(), m.offset()))
        say({"records": got})
    elif cmd["op"] == "commit":
        done = c.commit(asynchronous=False)
        say({"errors": [None if tp.error is None else str(tp.error) for tp in done or []],
             "count": len(done or [])})
    elif cmd["op"] == "state":
        com = c.committed(tps(), timeout=10)
        pos = c.position(tps())
        say({"assignment": sorted(tp.partition for tp in c.assignment()),
             "committed": {tp.partition: tp.offset for tp in com},
             "position": {tp.partition: tp.offset for tp in pos},
             "high": {q: c.get_watermark_offsets(TopicPartition(topic, q), timeout=10)[1]
                      for q in range(parts)}})
    elif cmd["op"] == "close":
        c.close()
        say({"closed": True})
        break
'''


class Member:
    """A consumer of `group` in a child process (see MEMBER)."""

    def __init__(self, n, group, topic, parts, client_id):
        self.client_id = client_id
        conf = {"bootstrap.servers": n.bootstrap, "group.id": group,
                "client.id": client_id,
                "auto.offset.reset": "earliest", "enable.auto.commit": False,
                "session.timeout.ms": SESSION_MS}
        self.p = subprocess.Popen([sys.executable, "-c", MEMBER, json.dumps(conf),
                                   topic, str(parts)], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, text=True)
        self.ask(None)

    def ask(self, cmd, timeout=60):
        """Send cmd (None: just read the next answer); the answer, or None if
        the child says nothing within timeout seconds."""
        if cmd is not None:
            self.p.stdin.write(json.dumps(cmd) + "\n")
            self.p.stdin.flush()
        r, _, _ = select.select([self.p.stdout], [], [], timeout)
        line = self.p.stdout.readline() if r else ""
        return json.loads(line) if line else None

    def state(self):
        s = self.ask({"op": "state"})
        for k in ("committed", "position", "high"):
            s[k] = {int(q): v for q, v in s[k].items()}
        s["client"] = self.client_id
        return s

    def kill(self):
        self.p.send_signal(signal.SIGKILL)
        self.p.wait()

    def close(self):
        if self.p.poll() is None:
            self.ask({"op": "close"}, 30)
            self.p.wait(30)


def describe(n, group):
    """{partition: (CURRENT-OFFSET, LOG-END-OFFSET, LAG, CLIENT-ID)} of
    `runnel-consumer-groups --describe`, columns as printed, and its output."""
    r = subprocess.run([os.path.join(BUILDDIR, "runnel-consumer-groups"),
                        "--bootstrap-server", n.bootstrap, "--timeout-ms", "10000",
                        "--describe", "--group", group],
                       capture_output=True, text=True, timeout=60)
    rows, inside = {}, False
    for line in r.stdout.splitlines():
        cols = line.split()
        if cols[:1] == ["GROUP"]:
            inside = True
        elif inside and len(cols) == 9 and cols[0] == group:
            if cols[6] == "-" or not cols[6].startswith(cols[8] + "-"):
                cols[8] = "member id %s of client %s" % (cols[6], cols[8])
            rows[int(cols[2])] = tuple(cols[3:6]) + (cols[8],)
    return rows, r.stdout + r.stderr


def agrees(n, group, s, what):
    """--describe says what committed(), position() and the high watermarks of
    the member's state s say, at the same moment (the member is idle)."""
    rows, out = describe(n, group)
    def col(v):  # the tool prints "-" where nothing is committed
        return str(v) if v >= 0 else "-"
    want = {q: (col(s["committed"][q]), col(s["high"][q]),
                col(s["high"][q] - s["committed"][q] if s["committed"][q] >= 0 else -1),
                s["client"]) for q in s["committed"]}
    if not t.eq(rows, want, "--describe agrees with committed() and the log end "
                "%s: CURRENT-OFFSET %s, LAG %s" % (what, [want[q][0] for q in sorted(want)],
                                                [want[q][2] for q in sorted(want)])):
        t.diag(out)


def confluent_resume(n):
    create(n, "orders", 3)
    produce(n, "orders", 3, 100, b"o")
    parts = range(3)
    m1 = Member(n, "app", "orders", 3, "app-process-1")
    first = m1.ask({"op": "read", "n": 150})["records"]
    first = [tuple(r) for r in first]
    t.eq(len(first), 150, "a subscribed consumer (its own process) reads 150 records")
    done = m1.ask({"op": "commit"})
    t.ok(done["count"] == 3 and done["errors"] == [None] * 3,
         "the commit is acknowledged for every partition: %s" % done)
    # -1001: nothing read (or committed) there yet
    want = {q: max([o for p, o in first if p == q], default=-1002) + 1 for q in parts}
    s = m1.state()
    t.eq(s["position"], want, "position() is the offset after the last record read")
    t.eq(s["committed"], want, "committed() returns what was committed")
    t.ok(s["assignment"] == [0, 1, 2] and s["high"] == {0: 100, 1: 100, 2: 100},
         "the member holds the 3 partitions, each 100 records long: %s %s"
         % (s["assignment"], s["high"]))
    agrees(n, "app", s, "after the commit")

    # 30 more read and not committed: position() moves, committed() and
    # --describe's CURRENT-OFFSET do not
    extra = [tuple(r) for r in m1.ask({"op": "read", "n": 30})["records"]]
    s2 = m1.state()
    t.ok(s2["committed"] == want and s2["position"] == {
        q: max([o for p, o in first + extra if p == q], default=-1002) + 1 for q in parts}
         and sum(max(s2["position"][q], 0) - max(want[q], 0) for q in parts) == 30,
         "30 more read, not committed: position() %s is ahead of committed() %s"
         % (s2["position"], s2["committed"]))
    agrees(n, "app", s2, "with uncommitted reads (position() is not shown)")

    # the process dies without closing: no LeaveGroup, no commit
    m1.kill()
    m2 = Member(n, "app", "orders", 3, "app-process-2")
    rest = 300 - sum(max(v, 0) for v in want.values())
    second = [tuple(r) for r in m2.ask({"op": "read", "n": rest}, 90)["records"]]
    t.eq(len(second), rest, "a new process of the group reads the %d records from "
         "the committed offsets on" % rest)
    starts = {q: min([o for p, o in second if p == q], default=None) for q in parts}
    t.eq({q: v for q, v in starts.items() if v is not None},
         {q: max(v, 0) for q, v in want.items() if v < 100},
         "it resumes each partition at the committed offset")
    t.eq(sorted(set(first + extra) | set(second)),
         [(q, o) for q in parts for o in range(100)], "every record was read")
    t.eq(sorted(set(first + extra) & set(second)), sorted(extra),
         "the only records read twice are the 30 the killed process had not committed")
    done = m2.ask({"op": "commit"})
    s = m2.state()
    # position() is only known where this process read something
    t.ok(done["errors"] == [None] * 3 and s["committed"] == {0: 100, 1: 100, 2: 100}
         and s["position"] == {q: 100 if starts[q] is not None else -1001 for q in parts},
         "the new member commits 100, 100, 100: committed() %s, position() %s"
         % (s["committed"], s["position"]))
    agrees(n, "app", s, "for the new member")
    admin = AdminClient({"bootstrap.servers": n.bootstrap})
    # librdkafka lists with ListGroups, then describes with DescribeGroups
    groups = {g.id: g for g in admin.list_groups(timeout=10)}
    t.ok("app" in groups, "ListGroups names the group")
    d = groups.get("app")
    t.ok(d is not None and d.state == "Stable" and d.protocol_type == "consumer"
         and len(d.members) == 1 and d.members[0].client_id == "app-process-2" and
         len(d.members[0].assignment) > 0,
         "DescribeGroups: Stable, consumer protocol, the new process the only "
         "member, with its assignment")
    m2.close()

    # __consumer_offsets: internal, Kafka's partition count, compacted
    from kafka import KafkaAdminClient
    ka = KafkaAdminClient(bootstrap_servers=n.bootstrap)
    md = ka.describe_topics(["__consumer_offsets"])[0]
    ka.close()
    t.ok(md["is_internal"] and len(md["partitions"]) == 50,
         "__consumer_offsets is internal with 50 partitions (%s, %d)"
         % (md["is_internal"], len(md["partitions"])))
    from confluent_kafka.admin import ConfigResource
    res = ConfigResource("topic", "__consumer_offsets")
    cfg = admin.describe_configs([res])[res].result(10)
    t.eq((cfg["cleanup.policy"].value, cfg["segment.bytes"].value),
         ("compact", "104857600"), "it is compacted, with 100 MiB segments")

    # assign() with a standalone commit (generation -1, no member id)
    c = consumer(n, "standalone")
    c.assign([TopicPartition("orders", 1, 40)])
    c.commit(offsets=[TopicPartition("orders", 1, 42)], asynchronous=False)
    got = c.committed([TopicPartition("orders", 1)], timeout=10)
    t.eq(got[0].offset, 42, "a standalone consumer's commit is kept")
    c.close()


def s16(b):
    return struct.pack(">h", len(b)) + b


def rpc(n, key, ver, body, flexible=False):
    """One request on a fresh connection; the response body after the
    correlation id (and the header's tag section when flexible)."""
    hdr = struct.pack(">hhi", key, ver, 7) + s16(b"raw")
    if flexible:
        hdr += b"\x00"
    with socket.create_connection(("127.0.0.1", n.port), timeout=10) as so:
        msg = hdr + body
        so.sendall(struct.pack(">i", len(msg)) + msg)
        buf = b""
        while len(buf) < 4 or len(buf) < 4 + struct.unpack(">i", buf[:4])[0]:
            c = so.recv(65536)
            if not c:
                return None
            buf += c
    return buf[8 + (1 if flexible else 0):]


def raw_protocol(n):
    # FindCoordinator v4: batched keys (compact strings), key_type 0
    body = b"\x00" + bytes([3]) + bytes([2]) + b"a" + bytes([2]) + b"b" + b"\x00"
    r = rpc(n, 10, 4, body, flexible=True)
    ok = r is not None and r[4] == 3
    nodes, errs, o = [], [], 5
    for _ in range(2 if ok else 0):
        kl = r[o] - 1
        o += 1 + kl
        nodes.append(struct.unpack(">i", r[o:o + 4])[0])
        o += 4
        hl = r[o] - 1
        o += 1 + hl + 4
        errs.append(struct.unpack(">h", r[o:o + 2])[0])
        o += 2
        ml = r[o] - 1
        o += 1 + max(ml, 0) + 1
    t.eq((nodes, errs), ([1, 1], [0, 0]),
         "FindCoordinator v4 answers each of a batch of group keys")
    body = b"\x01" + bytes([2]) + bytes([3]) + b"tx" + b"\x00"
    r = rpc(n, 10, 4, body, flexible=True)
    o = 5 + 3 + 4
    o += 1 + r[o] - 1 + 4
    # __transaction_state's replication factor (3 by default) exceeds the
    # one live broker: it is not created, as Kafka does not
    t.eq(struct.unpack(">h", r[o:o + 2])[0], 15,
         "a transactional key waits for __transaction_state "
         "(COORDINATOR_NOT_AVAILABLE: fewer brokers than its replication "
         "factor)")

    proto = struct.pack(">i", 1) + s16(b"range") + struct.pack(">i", 2) + b"\x00\x00"
    # JoinGroup v5: a session timeout below group.min.session.timeout.ms
    body = (s16(b"rawg") + struct.pack(">ii", 1000, 10000) + s16(b"") +
            struct.pack(">h", -1) + s16(b"consumer") + proto)
    r = rpc(n, 11, 5, body)
    t.eq(struct.unpack(">h", r[4:6])[0], 26, "JoinGroup with a 1 s session: "
         "INVALID_SESSION_TIMEOUT")
    # JoinGroup v4 without a member id: MEMBER_ID_REQUIRED and the id to use
    body = (s16(b"rawg") + struct.pack(">ii", 10000, 10000) + s16(b"") +
            s16(b"consumer") + proto)
    r = rpc(n, 11, 4, body)
    err = struct.unpack(">h", r[4:6])[0]
    o = 10
    for _ in range(2):
        o += 2 + struct.unpack(">h", r[o:o + 2])[0]
    ml = struct.unpack(">h", r[o:o + 2])[0]
    mid = r[o + 2:o + 2 + ml]
    t.ok(err == 79 and mid.startswith(b"raw-"),
         "JoinGroup v4 without a member id: MEMBER_ID_REQUIRED with %r" % mid)
    # a huge protocol count is refused by the codec, nobody crashes
    body = (s16(b"rawg") + struct.pack(">ii", 10000, 10000) + s16(b"") +
            s16(b"consumer") + struct.pack(">i", 0x7fffffff))
    t.ok(rpc(n, 11, 4, body) is None, "a JoinGroup claiming 2^31 protocols is refused")
    # DeleteGroups v0: an unknown group, and the empty group "app"
    body = struct.pack(">i", 2) + s16(b"no-such-group") + s16(b"app")
    r = rpc(n, 42, 0, body)
    res, o = {}, 8
    for _ in range(2):
        gl = struct.unpack(">h", r[o:o + 2])[0]
        g = r[o + 2:o + 2 + gl]
        o += 2 + gl
        res[g] = struct.unpack(">h", r[o:o + 2])[0]
        o += 2
    t.eq(res, {b"no-such-group": 69, b"app": 0},
         "DeleteGroups: GROUP_ID_NOT_FOUND, and an empty group is deleted")
    c = consumer(n, "app")
    got = c.committed([TopicPartition("orders", q) for q in range(3)], timeout=10)
    c.close()
    t.eq([tp.offset for tp in got], [-1001] * 3, "the deleted group's offsets are gone")
    # OffsetDelete v0: the standalone group's offset of orders-1 goes
    body = (s16(b"standalone") + struct.pack(">i", 1) + s16(b"orders") +
            struct.pack(">ii", 1, 1))
    r = rpc(n, 47, 0, body)
    top = struct.unpack(">h", r[0:2])[0]
    perr = struct.unpack(">h", r[-2:])[0]
    c = consumer(n, "standalone")
    got = c.committed([TopicPartition("orders", 1)], timeout=10)
    c.close()
    t.ok(top == 0 and perr == 0 and got[0].offset == -1001,
         "OffsetDelete removes a committed offset (%d, %d, %d)" % (top, perr, got[0].offset))


def uvarint(b, o):
    v = shift = 0
    while True:
        x = b[o]
        o += 1
        v |= (x & 0x7f) << shift
        shift += 7
        if not x & 0x80:
            return v, o


def offset_fetch_v8(n, groups):
    """OffsetFetch v8 for several groups (all topics each): {group: (error,
    {(topic, partition): offset})}."""
    body = bytes([len(groups) + 1])
    for g in groups:
        body += bytes([len(g) + 1]) + g + b"\x00" + b"\x00"   # topics null, tags
    body += b"\x00" + b"\x00"                                 # require_stable, tags
    r = rpc(n, 9, 8, body, flexible=True)
    out, o = {}, 4
    ng, o = uvarint(r, o)
    for _ in range(ng - 1):
        gl, o = uvarint(r, o)
        g = r[o:o + gl - 1]
        o += gl - 1
        offs = {}
        nt, o = uvarint(r, o)
        for _ in range(nt - 1):
            tl, o = uvarint(r, o)
            tn = r[o:o + tl - 1]
            o += tl - 1
            np_, o = uvarint(r, o)
            for _ in range(np_ - 1):
                part, off = struct.unpack(">iq", r[o:o + 12])
                o += 16
                ml, o = uvarint(r, o)
                o += max(ml - 1, 0) + 2 + 1
                offs[(tn, part)] = off
            o += 1
        err = struct.unpack(">h", r[o:o + 2])[0]
        o += 3
        out[g] = (err, offs)
    return out


def list_groups_v4(n, states):
    """ListGroups v4 with a state filter: {group: state}."""
    body = bytes([len(states) + 1])
    for st in states:
        body += bytes([len(st) + 1]) + st
    r = rpc(n, 16, 4, body + b"\x00", flexible=True)
    out, o = {}, 6
    ng, o = uvarint(r, o)
    for _ in range(ng - 1):
        f = []
        for _ in range(3):
            ln, o = uvarint(r, o)
            f.append(r[o:o + ln - 1])
            o += ln - 1
        o += 1
        out[f[0]] = f[2]
    return out


def kcat_member(n, i, d):
    out = open(os.path.join(d, "kcat%d.out" % i), "w")
    err = open(os.path.join(d, "kcat%d.err" % i), "w")
    return subprocess.Popen(
        ["kcat", "-u", "-b", n.bootstrap, "-G", "kc", "-X", "session.timeout.ms=%d" % SESSION_MS,
         "-X", "heartbeat.interval.ms=500", "-X", "auto.offset.reset=earliest",
         "-X", "auto.commit.interval.ms=500", "-f", "%p %o\n", "shared"],
        stdout=out, stderr=err)


def assigned(d, i):
    """The partitions member i holds now, from its rebalance lines."""
    held = set()
    with open(os.path.join(d, "kcat%d.err" % i)) as f:
        for line in f:
            m = re.search(r"(assigned|revoked): (.*)$", line)
            if m:
                ps = {int(x) for x in re.findall(r"\[(\d+)\]", m.group(2))}
                held = ps if m.group(1) == "assigned" else set()
    return held


def consumed(d, i):
    out = []
    with open(os.path.join(d, "kcat%d.out" % i)) as f:
        for line in f:
            if line.endswith("\n") and len(line.split()) == 2:
                p, o = line.split()
                out.append((int(p), int(o)))
    return out


def kcat_group(n, d):
    create(n, "shared", 6)
    produce(n, "shared", 6, 50, b"a")
    ms = [kcat_member(n, i, d) for i in range(3)]
    ok = wait_for(lambda: [len(assigned(d, i)) for i in range(3)] == [2, 2, 2] and
                  sum(len(consumed(d, i)) for i in range(3)) >= 300, 40)
    t.ok(ok, "three kcat -G members hold two partitions each and read all 300 records")
    t.eq(sorted(p for i in range(3) for p in assigned(d, i)), list(range(6)),
         "the three assignments cover the six partitions once")
    victim = 1
    lost = assigned(d, victim)
    time.sleep(1.5)   # its offsets are committed every 500 ms
    c = consumer(n, "kc")
    ms[victim].send_signal(signal.SIGKILL)
    ms[victim].wait()
    killed = time.monotonic()
    com = {tp.partition: tp.offset for tp in c.committed(
        [TopicPartition("shared", q) for q in range(6)], timeout=10)}
    c.close()
    produce(n, "shared", 6, 50, b"b")
    ok = wait_for(lambda: sorted(assigned(d, 0) | assigned(d, 2)) == list(range(6)),
                  SESSION_MS / 1000.0 + 15)
    took = time.monotonic() - killed
    # The dead member goes when its session expires: 6 s after its last
    # heartbeat, which was at most heartbeat.interval.ms (0.5 s) before the
    # kill (the lower bound allows 1 s more for a late heartbeat). Then: the
    # coordinator looks at session deadlines every 100 ms; the survivors hear
    # REBALANCE_IN_PROGRESS in their next heartbeat (up to 0.5 s); JoinGroup
    # and SyncGroup round trips, kcat printing its new assignment and this
    # test's 50 ms polling take the rest. Measured 5.9 to 6.5 s (20 runs, load
    # about 2 on 2 cores). The margin: 0.1 + 0.5 s of those timers, 0.9 s for
    # round trips and scheduling, 1 s more under ASan.
    bound = SESSION_MS / 1000.0 + 1.5 + (1.0 if SANITIZED else 0.0)
    t.ok(ok and SESSION_MS / 1000.0 - 1.5 < took < bound,
         "the two others hold all six partitions %.1f s after the kill: once the "
         "dead member's session (%d ms) expired, and within %.1f s"
         % (took, SESSION_MS, bound))
    wait_for(lambda: len(set(consumed(d, 0) + consumed(d, 2) + consumed(d, 1))) >= 600, 20)
    for m in (ms[0], ms[2]):
        m.terminate()
        m.wait()
    every = consumed(d, 0) + consumed(d, 1) + consumed(d, 2)
    missing = sorted(set((q, o) for q in range(6) for o in range(100)) - set(every))
    t.eq(missing, [], "nothing produced was skipped")
    seen, dups = set(), []
    for r in every:
        if r in seen:
            dups.append(r)
        seen.add(r)
    bad = [(p, o) for p, o in dups if p not in lost or o < com.get(p, 0)]
    t.eq(bad, [], "records read twice (%d) are only the dead member's uncommitted ones"
         % len(dups))


def kafka_python_pair(n):
    create(n, "kp", 4)
    produce(n, "kp", 4, 25, b"k")
    # one thread each: a member blocks in poll() while its group rebalances
    got = [[], []]
    held = [set(), set()]
    ok = [False, False]
    stop = threading.Event()

    def member(i):
        c = KafkaConsumer("kp", bootstrap_servers=n.bootstrap, group_id="kpg",
                          auto_offset_reset="earliest", enable_auto_commit=False,
                          session_timeout_ms=SESSION_MS, heartbeat_interval_ms=500,
                          max_poll_interval_ms=20000)
        while not stop.is_set():
            for recs in c.poll(timeout_ms=200).values():
                got[i] += [(r.partition, r.offset) for r in recs]
            held[i] = set(c.assignment())
        c.commit()
        ok[i] = all(c.committed(tp) == c.position(tp) for tp in held[i])
        c.close()

    ths = [threading.Thread(target=member, args=(i,)) for i in range(2)]
    for th in ths:
        th.start()
    wait_for(lambda: sorted(len(h) for h in held) == [2, 2] and
             len(set(got[0] + got[1])) >= 100, 40)
    t.eq(sorted(len(h) for h in held), [2, 2],
         "two kafka-python members hold two partitions each")
    stop.set()
    for th in ths:
        th.join(30)
    missing = sorted(set((q, o) for q in range(4) for o in range(25)) - set(got[0] + got[1]))
    t.eq(missing, [], "they read all 100 records between them")
    t.ok(all(ok), "each member's commit is read back equal to its position")


with TempDir() as tmp:
    n = Node(tmp)
    n.start()
    try:
        t.ok(n.wait_running() is not None, "node up")
        confluent_resume(n)
        raw_protocol(n)
        kcat_group(n, tmp)
        kafka_python_pair(n)
        t.eq(n.crashes(), [], "no worker crashed")

        # the whole node restarts: groups come back from __consumer_offsets
        def offsets(group, topic, parts):
            c = consumer(n, group)
            try:
                r = c.committed([TopicPartition(topic, q) for q in range(parts)],
                                timeout=15)
                return {tp.partition: tp.offset for tp in r}
            finally:
                c.close()
        before = (offsets("kc", "shared", 6), offsets("kpg", "kp", 4))
        v8 = offset_fetch_v8(n, [b"kc", b"kpg", b"nobody"])
        t.eq(v8, {b"kc": (0, {(b"shared", q): o for q, o in before[0].items()}),
                  b"kpg": (0, {(b"kp", q): o for q, o in before[1].items()}),
                  b"nobody": (0, {})},
             "OffsetFetch v8 answers several groups at once")
        lg = list_groups_v4(n, [b"Empty"])
        t.ok(lg.get(b"kc") == b"Empty" and lg.get(b"kpg") == b"Empty" and
             list_groups_v4(n, [b"Stable"]) == {},
             "ListGroups v4 filters by state: %s" % lg)
        n.stop()
        n.start()
        t.ok(n.wait_running() is not None, "node restarted")
        after = (offsets("kc", "shared", 6), offsets("kpg", "kp", 4))
        t.ok(after == before and min(before[0].values()) > 0,
             "after a restart the groups' committed offsets are the same: %s" % (after,))
    finally:
        n.stop()
t.done()
