"""Deleting a topic and creating it again under the same name: the new topic
(a new topic id) never shows a record of the old one, on one node and on a
3-node cluster (RF=3), across restarts, for a broker that was down during
the deletion, and for an idempotent producer that wrote to both."""
import base64
import glob
import os
import shutil
import signal
import socket
import struct
import subprocess
import threading
import time
import traceback

import kafka
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from rntest import BUILDDIR, Cluster, Node, Tap, TempDir, wait_for

TOPICS = os.path.join(BUILDDIR, "runnel-topics")
ELECT = os.path.join(BUILDDIR, "runnel-leader-election")
PROPS = {"auto.create.topics.enable": "false", "log.segment.bytes": "65536"}
ROUNDS = int(os.environ.get("RECREATE_ROUNDS", "20"))

class LockedTap(Tap):
    """The single node and the cluster run at once, in two threads."""
    lock = threading.Lock()

    def ok(self, cond, name):
        with self.lock:
            return Tap.ok(self, cond, name)


t = LockedTap()


def admin(bs):
    return AdminClient({"bootstrap.servers": bs})


def retried(op, done_if_retried):
    """An admin call, again while a controller is elected (a voter stopped)
    or brokers unfence after a restart (not enough of them for the RF yet).
    A retry of a call that went through meets done_if_retried."""
    deadline, tried = time.monotonic() + 30, False
    while True:
        try:
            return op()
        except Exception as e:
            if tried and done_if_retried in str(e):
                return None
            if not any(w in str(e) for w in ("TIMED_OUT", "NOT_CONTROLLER",
                                             "INVALID_REPLICATION_FACTOR")) or \
                    time.monotonic() > deadline:
                raise
            tried = True
            time.sleep(0.2)


def create(a, name, parts, rf=None, assignment=None):
    nt = NewTopic(name, parts, rf) if assignment is None else \
        NewTopic(name, len(assignment), -1, replica_assignment=assignment)
    retried(lambda: a.create_topics([nt], operation_timeout=10,
                                    request_timeout=15)[name].result(20), "TOPIC_ALREADY_EXISTS")


def delete(a, name):
    retried(lambda: a.delete_topics([name], operation_timeout=10,
                                    request_timeout=15)[name].result(20), "UNKNOWN_TOPIC")


def describe(node, name):
    """(topic id, [(partition, leader, replicas, isr)]) from runnel-topics on one broker."""
    r = subprocess.run([TOPICS, "--bootstrap-server", node.bootstrap, "--describe",
                        "--topic", name], capture_output=True, text=True, timeout=30)
    tid, parts = None, []
    for line in r.stdout.splitlines():
        f = dict(kv.split(": ", 1) for kv in line.strip().split("\t") if ": " in kv)
        if not line.startswith("\t") and "TopicId" in f:
            tid = f["TopicId"]
        elif line.startswith("\t") and "Partition" in f:
            parts.append((int(f["Partition"]), f["Leader"], f["Replicas"], f["Isr"]))
    return tid, parts


def serving(nodes):
    """Every broker answers Metadata with an active controller."""
    def ok(n):
        try:
            return AdminClient({"bootstrap.servers": n.bootstrap}).list_topics(
                timeout=2).controller_id > 0
        except Exception:
            return False
    return wait_for(lambda: all(ok(n) for n in nodes), 30, 0.2)


_admins = {}


def seen_everywhere(nodes, name, parts):
    """Every broker's metadata has the topic with this partition count and leaders."""
    def ok():
        for n in nodes:
            try:
                if n.bootstrap not in _admins:
                    _admins[n.bootstrap] = admin(n.bootstrap)
                md = _admins[n.bootstrap].list_topics(name, timeout=3).topics.get(name)
            except Exception:
                return False
            if md is None or md.error is not None or len(md.partitions) != parts or \
                    any(p.leader < 0 for p in md.partitions.values()):
                return False
        return True
    return wait_for(ok, 20, 0.1)


def produce(bs, name, values, errors=None):
    p = Producer({"bootstrap.servers": bs, "acks": "all", "linger.ms": 5,
                  "message.timeout.ms": 20000})
    errs = errors if errors is not None else []
    for v in values:
        p.produce(name, v.encode(), on_delivery=lambda e, m: e and errs.append(e))
    left = p.flush(30)
    return left == 0 and not errs


def consume(bs, name, parts):
    """Every record of every partition from offset 0: [(partition, offset, value)]."""
    c = Consumer({"bootstrap.servers": bs, "group.id": "unused",
                  "enable.auto.commit": False, "enable.partition.eof": True})
    c.assign([TopicPartition(name, i, 0) for i in range(parts)])
    out, eof, deadline = [], set(), time.monotonic() + 20
    while len(eof) < parts and time.monotonic() < deadline:
        m = c.poll(0.1)
        if m is None:
            continue
        if m.error():
            if m.error().code() == KafkaError._PARTITION_EOF:
                eof.add(m.partition())
            continue
        eof.discard(m.partition())
        out.append((m.partition(), m.offset(), m.value().decode()))
    c.close()
    return sorted(out)


def kcat_consume(bs, name):
    r = subprocess.run(["kcat", "-C", "-b", bs, "-t", name, "-o", "beginning", "-e",
                        "-f", "%p %o %s\\n"], capture_output=True, text=True, timeout=60)
    out = []
    for line in r.stdout.splitlines():
        p, o, v = line.split(" ", 2)
        out.append((int(p), int(o), v))
    return sorted(out)


def check_exact(got, want_values, what):
    vals = sorted(v for _, _, v in got)
    ok = t.ok(vals == sorted(want_values), what)
    if not ok:
        extra = [v for v in vals if v not in set(want_values)]
        t.diag("read %d records, wanted %d; %d others, such as %s" % (
            len(vals), len(want_values), len(extra), extra[:5]))
    by_part = {}
    for p, o, _ in got:
        by_part.setdefault(p, []).append(o)
    t.ok(all(offs == list(range(len(offs))) for offs in by_part.values()),
         what + ": offsets start at 0 in every partition")
    return ok


def delete_dirs(nodes):
    return [d for n in nodes for d in glob.glob(os.path.join(n.logdir, "*-delete"))]


def topic_dirs(n, name):
    return sorted(os.path.basename(d) for d in glob.glob(os.path.join(n.logdir, name + "-*")))


def dir_topic_id(n, d):
    try:
        with open(os.path.join(n.logdir, d, "partition.metadata")) as f:
            for line in f:
                if line.startswith("topic_id:"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        return None
    return None


def rounds(nodes, bs, rf, name):
    """Create, 1,000 records, delete, re-create with another partition count
    at once, 10 records: each round reads exactly the 10 new records. The
    topic one round re-creates is the one the next round fills and deletes."""
    a = admin(bs)
    bad, last, t0, p_old = 0, None, time.monotonic(), 1
    create(a, name, p_old, rf)
    seen_everywhere(nodes, name, p_old)
    for i in range(ROUNDS):
        p_new = 1 + p_old % 3
        old = ["old-%d-%d" % (i, k) for k in range(1000)]
        new = ["new-%d-%d" % (i, k) for k in range(10)]
        errs = []
        try:
            ok = produce(bs, name, old, errs)
            delete(a, name)
            create(a, name, p_new, rf)     # no wait between delete and create
            seen_everywhere(nodes, name, p_new)
            ok = produce(bs, name, new, errs) and ok
            got = consume(bs, name, p_new)
        except Exception as e:
            t.diag("round %d: %s" % (i, e))
            ok, got = False, []
        if not ok or sorted(v for _, _, v in got) != sorted(new) or \
                any(o >= 10 for _, o, _ in got):
            bad += 1
            t.diag("round %d: read %d records, %d old ones, offsets %s, errors %s" % (
                i, len(got), sum(1 for _, _, v in got if v.startswith("old")),
                [o for _, o, _ in got], [str(e) for e in errs[:3]]))
        last, p_old = (p_new, new), p_new
    t.diag("%d rounds took %.1f s" % (ROUNDS, time.monotonic() - t0))
    t.eq(bad, 0, "%d rounds of delete and re-create: every round reads only its 10 new records"
         % ROUNDS)
    return last


def kp_consume(bs, name, parts):
    """kafka-python, no group: every partition from the beginning to its end."""
    c = kafka.KafkaConsumer(bootstrap_servers=bs, group_id=None, enable_auto_commit=False)
    tps = [kafka.TopicPartition(name, i) for i in range(parts)]
    c.assign(tps)
    c.seek_to_beginning(*tps)
    end, out, deadline = c.end_offsets(tps), [], time.monotonic() + 20
    while any(c.position(tp) < end[tp] for tp in tps) and time.monotonic() < deadline:
        for tp, msgs in c.poll(timeout_ms=200).items():
            out.extend((tp.partition, m.offset, m.value.decode()) for m in msgs)
    c.close()
    return sorted(out)


def check_after(nodes, bs, name, parts, new, what):
    check_exact(consume(bs, name, parts), new, what + ": confluent-kafka reads exactly the 10 new records")
    check_exact(kcat_consume(bs, name), new, what + ": kcat reads exactly the 10 new records")
    check_exact(kp_consume(bs, name, parts), new, what + ": kafka-python reads exactly the 10 new records")


def deleted_files_held(nodes):
    """Open fds and mappings of files that were deleted from a node's log dir."""
    held = []
    for n in nodes:
        for pid in n.pids():
            try:
                fds = ["/proc/%d/fd/%s" % (pid, fd) for fd in os.listdir("/proc/%d/fd" % pid)]
                links = []
                for fd in fds:
                    try:
                        links.append(os.readlink(fd))
                    except OSError:
                        pass
                with open("/proc/%d/maps" % pid) as f:
                    links += [l.split(None, 5)[-1].strip() for l in f if "/" in l]
            except OSError:
                continue
            held += ["%d: %s" % (pid, l) for l in links
                     if l.startswith(n.logdir) and l.endswith("(deleted)")]
    return held


def check_disk(nodes, name, parts, what):
    t.ok(wait_for(lambda: not deleted_files_held(nodes), 10),
         what + ": no process holds a file of a deleted topic open or mapped: %s"
         % deleted_files_held(nodes)[:3])
    tid = describe(nodes[0], name)[0]
    want = ["%s-%d" % (name, i) for i in range(parts)]
    t.ok(wait_for(lambda: not delete_dirs(nodes), 10),
         what + ": no -delete directory left: %s" % delete_dirs(nodes))
    t.eq([topic_dirs(n, name) for n in nodes], [want] * len(nodes),
         what + ": only the new topic's partition directories")
    t.ok(tid is not None and all(dir_topic_id(n, d) == tid for n in nodes for d in want),
         what + ": each partition.metadata names the new topic id %s" % tid)


def stop_all(nodes):
    """SIGTERM to every node at once, then wait for each."""
    for n in nodes:
        if n.proc and n.proc.poll() is None:
            n.proc.send_signal(signal.SIGTERM)
    for n in nodes:
        n.stop()


def restart(nodes):
    stop_all(nodes)
    for n in nodes:
        n.start()


def single_node(tmp):
    n = Node(tmp, props=PROPS)
    n.start()
    try:
        t.ok(n.wait_running() is not None and serving([n]), "single node: running")
        parts, new = rounds([n], n.bootstrap, 1, "rc")
        check_after([n], n.bootstrap, "rc", parts, new, "single node")
        check_disk([n], "rc", parts, "single node")
        old_id = fetch_by_id(n)
        a = admin(n.bootstrap)
        create(a, "st", 1, 1)
        seen_everywhere([n], "st", 1)
        produce(n.bootstrap, "st", ["st-old-%d" % k for k in range(5)])
        stop_all([n])
        plant_strays(n)
        n.start()
        t.ok(n.wait_running() is not None and serving([n]) and
             seen_everywhere([n], "rc", parts),
             "single node: restarted")
        check_after([n], n.bootstrap, "rc", parts, new, "single node after a restart")
        check_disk([n], "rc", parts, "single node after a restart")
        strays_gone(n)
        t.eq(fetch_v13(n, old_id), 100, "Fetch v13 with a deleted topic id after the restart: "
             "UNKNOWN_TOPIC_ID")
        idempotent(n.bootstrap, [n], 1)
        t.eq(n.crashes(), [], "single node: no worker crashed")
    finally:
        n.stop()


def b64id(tid):
    return base64.urlsafe_b64decode(tid + "==")


def fetch_v13(n, tid, partition=0):
    """The partition error of a raw Fetch v13 (topic ids) for one partition."""
    body = struct.pack(">hhih", 1, 13, 7, 4) + b"test" + b"\0"
    body += struct.pack(">iiiibii", -1, 0, 1, 1 << 20, 0, 0, -1)
    body += b"\x02" + b64id(tid) + b"\x02"
    body += struct.pack(">iiqiqi", partition, -1, 0, -1, -1, 1 << 20) + b"\0" + b"\0"
    body += b"\x01" + b"\x01" + b"\0"
    with socket.create_connection(("127.0.0.1", n.port), timeout=10) as sk:
        sk.sendall(struct.pack(">i", len(body)) + body)
        data = b""
        while len(data) < 4 or len(data) < 4 + struct.unpack(">i", data[:4])[0]:
            chunk = sk.recv(65536)
            if not chunk:
                return None
            data += chunk
    # size, correlation id, tagged fields; throttle, error, session; 1 topic
    pos = 4 + 4 + 1 + 4 + 2 + 4
    if data[pos] != 2 or data[pos + 1:pos + 17] != b64id(tid) or data[pos + 17] != 2:
        return None
    return struct.unpack(">h", data[pos + 22:pos + 24])[0]


def fetch_by_id(n):
    """Fetch v13 names topics by id: the id of a deleted topic is unknown,
    its re-creation's is served. Returns the deleted id."""
    a = admin(n.bootstrap)
    create(a, "gone", 1, 1)
    seen_everywhere([n], "gone", 1)
    produce(n.bootstrap, "gone", ["gone-%d" % k for k in range(5)])
    old = describe(n, "gone")[0]
    delete(a, "gone")
    create(a, "gone", 1, 1)
    seen_everywhere([n], "gone", 1)
    new = describe(n, "gone")[0]
    t.eq(fetch_v13(n, old), 100, "Fetch v13 with the deleted topic's id: UNKNOWN_TOPIC_ID")
    t.eq(fetch_v13(n, new), 0, "Fetch v13 with the re-created topic's id: no error")
    return old


def write_topic_id(path, raw):
    tid = base64.urlsafe_b64encode(raw).decode().rstrip("=")
    with open(os.path.join(path, "partition.metadata"), "w") as f:
        f.write("version: 0\ntopic_id: %s\n" % tid)


def plant_strays(n):
    """While the node is down: a copy of rc-0 under a topic id nobody knows
    (ghost-0), and st-0 relabelled with another topic id than st's."""
    shutil.copytree(os.path.join(n.logdir, "rc-0"), os.path.join(n.logdir, "ghost-0"))
    write_topic_id(os.path.join(n.logdir, "ghost-0"), os.urandom(16))
    write_topic_id(os.path.join(n.logdir, "st-0"), os.urandom(16))


def strays_gone(n):
    a = admin(n.bootstrap)
    t.ok(wait_for(lambda: not os.path.exists(os.path.join(n.logdir, "ghost-0")), 10),
         "stray ghost-0 (an unknown topic id) is removed at start")
    t.eq(consume(n.bootstrap, "st", 1), [],
         "st-0 holding another topic id's records is not served: st reads empty")
    produce(n.bootstrap, "st", ["st-new-%d" % k for k in range(3)])
    check_exact(consume(n.bootstrap, "st", 1), ["st-new-%d" % k for k in range(3)],
                "st takes new records from offset 0")
    log = n.logtext().splitlines()
    t.ok(any("stray" in l and "ghost-0" in l for l in log) and
         any("stray" in l and "st-0" in l for l in log),
         "both strays are logged")
    t.ok(wait_for(lambda: not delete_dirs([n]), 10), "no -delete directory left after strays")
    delete(a, "st")


def idempotent(bs, nodes, rf):
    """One idempotent producer writes to a topic, to its re-creation, and to both again."""
    a = admin(bs)
    p = Producer({"bootstrap.servers": bs, "enable.idempotence": True, "linger.ms": 5,
                  "message.timeout.ms": 20000})
    errs = []

    def send(vals):
        for v in vals:
            p.produce("idem", v.encode(), partition=0,
                      on_delivery=lambda e, m: e and errs.append(e))
        return p.flush(30)

    create(a, "idem", 1, rf)
    seen_everywhere(nodes, "idem", 1)
    send(["a-%d" % k for k in range(300)])
    delete(a, "idem")
    create(a, "idem", 2, rf)
    seen_everywhere(nodes, "idem", 2)
    new = ["b-%d" % k for k in range(300)]
    left = send(new)
    t.ok(left == 0 and not errs, "idempotent producer: the re-created topic takes its records "
         "without an error: %s" % [str(e) for e in errs[:3]])
    t.ok(not any(e.code() == KafkaError.OUT_OF_ORDER_SEQUENCE_NUMBER for e in errs),
         "idempotent producer: no OUT_OF_ORDER_SEQUENCE_NUMBER")
    got = consume(bs, "idem", 2)
    check_exact(got, new, "idempotent producer: exactly its records to the new topic, no duplicate")


def cluster(tmp):
    c = Cluster(tmp, 3, props=PROPS)
    c.start()
    nodes = c.nodes
    try:
        t.ok(c.wait_running(), "cluster: 3 nodes running")
        parts, new = rounds(nodes, c.bootstrap, 3, "rc")
        check_after(nodes, c.bootstrap, "rc", parts, new, "cluster")
        check_disk(nodes, "rc", parts, "cluster")
        down_broker(c)
        restart(nodes)
        t.ok(c.wait_running() and seen_everywhere(nodes, "rc", parts),
             "cluster: every node restarted")
        check_after(nodes, c.bootstrap, "rc", parts, new, "cluster after restarting every node")
        check_disk(nodes, "rc", parts, "cluster after restarting every node")
        idempotent(c.bootstrap, nodes, 3)
        t.eq(c.crashes(), [], "cluster: no worker crashed")
    finally:
        stop_all(nodes)


def down_broker(c):
    """Node 3 is down while dn is deleted and re-created; it comes back."""
    a = admin(c.bootstrap)
    n3 = c.node(3)
    up = [c.node(1), c.node(2)]
    create(a, "dn", 1, assignment=[[3, 1, 2]])
    seen_everywhere(c.nodes, "dn", 1)
    produce(c.bootstrap, "dn", ["old-%d" % k for k in range(1000)])
    t.ok(wait_for(lambda: describe(c.node(1), "dn")[1][0][3] == "3,1,2", 10),
         "down broker: dn-0 in sync on 3 brokers before node 3 stops")
    n3.stop()
    bs = ",".join(n.bootstrap for n in up)

    def controller_up():
        ids = set()
        for n in up:
            try:
                ids.add(admin(n.bootstrap).list_topics(timeout=2).controller_id)
            except Exception:
                return False
        return ids <= {1, 2}
    # an AdminClient keeps waiting for the controller its first metadata named
    t.ok(wait_for(controller_up, 20, 0.2), "down broker: brokers 1 and 2 name a live controller")
    a = admin(bs)
    delete(a, "dn")
    create(a, "dn", 1, assignment=[[3, 1, 2]])
    seen_everywhere(up, "dn", 1)
    new = ["new-%d" % k for k in range(10)]
    t.ok(produce(bs, "dn", new), "down broker: 10 records to the new dn while node 3 is down")
    tid = describe(c.node(1), "dn")[0]
    n3.start()
    t.ok(wait_for(lambda: describe(c.node(1), "dn")[1][0][3] in ("1,2,3", "2,1,3", "3,1,2",
                                                               "3,2,1", "1,3,2", "2,3,1"), 30),
         "down broker: node 3 rejoins the new dn-0's ISR")
    t.ok(any(("stray" in l or "deleting" in l) and "dn-0" in l
             for l in n3.logtext().splitlines()),
         "down broker: node 3 logs the removal of its dn-0 of the old topic id")
    r = subprocess.run([ELECT, "--bootstrap-server", c.bootstrap, "--election-type",
                        "PREFERRED", "--topic", "dn", "--partition", "0"],
                       capture_output=True, text=True, timeout=30)
    t.ok(wait_for(lambda: describe(c.node(1), "dn")[1][0][1] == "3", 15),
         "down broker: node 3 leads dn-0 after a preferred election (%s)" % r.stdout.strip())
    seen_everywhere(c.nodes, "dn", 1)
    # the new leader's high watermark moves once the followers fetch from it
    wait_for(lambda: len(consume(n3.bootstrap, "dn", 1)) >= 10, 15, 0.2)
    check_exact(consume(n3.bootstrap, "dn", 1), new,
                "down broker: node 3 as leader serves exactly the 10 new records")
    check_exact(kcat_consume(n3.bootstrap, "dn"), new, "down broker: kcat reads the same from node 3")
    t.ok(dir_topic_id(n3, "dn-0") == tid and not delete_dirs([n3]),
         "down broker: node 3's dn-0 is the new topic id's, no -delete dir left")


start = time.monotonic()
def guarded(fn, path):
    try:
        fn(path)
    except Exception as e:
        t.ok(False, "%s ran to its end: %r" % (fn.__name__, e))
        t.diag(traceback.format_exc())


with TempDir() as tmp:
    one = threading.Thread(target=guarded, args=(single_node, os.path.join(tmp, "one")))
    one.start()
    guarded(cluster, os.path.join(tmp, "three"))
    one.join()
t.diag("took %.1f s" % (time.monotonic() - start))
t.done()
