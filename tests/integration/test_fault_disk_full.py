"""A full disk (issue 16), judged by the history checker. Node X's only
log dir is a small tmpfs mounted on the host, so it outlives the node.
Three nodes, RF=3, min.insync.replicas=2, clean elections, idempotent
acks=all writers with bulky values; X leads some partitions. A filler
file takes most of the tmpfs and the writers fill the rest: X takes its
dir offline naming it and ENOSPC, and with no dir left it stops, as
Kafka's broker does; leadership moves and the writers carry on against
the other two. Restarted while the disk is still full, X stops again
at once, naming the dir and ENOSPC, without restarting a worker. Space
returns (the filler goes, the tmpfs grows), X restarts, recovers its log
and rejoins every ISR; its segments end byte for byte the leader's
(nothing kept from the failed writes). Nothing acknowledged is lost.
Then a single node (RF=1) whose only dir fills: the one write that finds
it full is answered KAFKA_STORAGE_ERROR and leaves nothing in the log;
under the checked writers it stops, they see errors or nothing, never a
loss, and after space returns and a restart every acknowledged record
reads back and new writes are acknowledged."""
import errno
import os
import re
import subprocess
import time

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import history
import rncluster
from rntest import Cluster, Tap, TempDir, wait_for

t = Tap()
PARTS = 3
X = 3
PROPS = {"min.insync.replicas": "2", "replica.lag.time.max.ms": "4000",
         "broker.session.timeout.ms": "6000",
         "unclean.leader.election.enable": "false",
         "log.segment.bytes": "1048576"}
# bulky values so the writers fill the last MiBs in seconds
WRITERS = {"rate": 80, "pad": 4096}
# The metadata log (libraft) keeps 24 MiB of segments allocated ahead in
# the first log dir: a tmpfs of 40 MiB leaves 16 MiB for the partitions.
# The filler leaves RESERVE of that free; when space returns the filler
# goes and the tmpfs grows to GROWN MiB, as the writers never stop.
TMPFS = 40
GROWN = 256
RESERVE = 2 << 20
OFFLINE_RE = re.compile(r"log dir (\S+) is offline: (.*) failed: (.*?);")


def mount_tmpfs(path, mib):
    os.makedirs(path, exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%dm" % mib,
                    "runnel-test", path], check=True)


def umount(path):
    # a killed worker may still be closing its files: try for a while
    if not wait_for(lambda: subprocess.run(
            ["umount", path], stderr=subprocess.DEVNULL).returncode == 0,
            10, 0.5):
        subprocess.run(["umount", "-l", path])


def grow(path, mib):
    subprocess.run(["mount", "-o", "remount,size=%dm" % mib, path],
                   check=True)


def free_bytes(path):
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def allocated(path):
    """Bytes allocated to the files under path."""
    return sum(os.lstat(os.path.join(d, f)).st_blocks * 512
               for d, _, fs in os.walk(path) for f in fs)


def fill(path, reserve):
    """A filler file takes the tmpfs's free space but reserve bytes; its
    size."""
    name = os.path.join(path, "filler")
    n = free_bytes(path) - reserve
    chunk = b"\0" * (1 << 20)
    with open(name, "ab") as f:
        try:
            while n > 0:
                f.write(chunk[:min(n, len(chunk))])
                n -= len(chunk)
            f.flush()
        except OSError as e:
            if e.errno != errno.ENOSPC:
                raise
    return os.path.getsize(name)


def segments(node, topic, p):
    """A partition's .log files on node, concatenated."""
    d = os.path.join(node.logdir, "%s-%d" % (topic, p))
    try:
        names = sorted(f for f in os.listdir(d) if f.endswith(".log"))
        return b"".join(open(os.path.join(d, f), "rb").read() for f in names)
    except OSError:
        return None


def same_logs(cl, node, topic):
    """node's log of every partition is byte for byte its leader's."""
    for p in range(PARTS):
        leader = history.leader_of(cl.bootstrap, topic, p)
        if leader < 0:
            return False
        mine = segments(node, topic, p)
        if leader != node.node_id and mine != segments(cl.node(leader),
                                                        topic, p):
            return False
    return True


def led_by(cl, topic, node_id):
    return [p for p in range(PARTS)
            if history.leader_of(cl.bootstrap, topic, p) == node_id]


def supervisor_exits(node):
    """Lines where the node's supervisor restarted or gave up on a worker."""
    return [l for l in node.logtext().splitlines()
            if "restarting in" in l or "giving up on it" in l]


def offline_line(node):
    return OFFLINE_RE.search(node.logtext())


def replicated(t, cl):
    topic = "full"
    x = cl.node(X)
    mnt = x.logdir
    state = {}
    admin = AdminClient({"bootstrap.servers": cl.bootstrap})
    # X is the preferred (first) replica of partitions 0 and 2
    admin.create_topics([NewTopic(topic, PARTS, replica_assignment=[
        [X, 1, 2], [1, 2, X], [X, 2, 1]])])[topic].result(30)
    t.ok(wait_for(lambda: history.fully_replicated(cl.bootstrap, topic,
                                                   PARTS, 3), 30),
         "topic %s: %d partitions, RF 3, fully replicated" % (topic, PARTS))
    led = led_by(cl, topic, X)
    t.ok(led, "node %d leads partitions %s of %s" % (X, led, topic))

    def full_disk():
        t0 = time.monotonic()
        state["meta"] = allocated(os.path.join(mnt, "__cluster_metadata-0"))
        state["filler"] = fill(mnt, RESERVE)
        state["offline"] = wait_for(lambda: offline_line(x), 60, 0.1)
        state["to_enospc"] = time.monotonic() - t0
        state["stopped"] = wait_for(lambda: x.proc.poll() is not None, 60)
        state["exit"] = x.proc.poll()
        t1 = time.monotonic()
        state["moved"] = wait_for(lambda: not led_by(cl, topic, X) and all(
            history.leader_of(cl.bootstrap, topic, p) > 0
            for p in range(PARTS)), 30, 0.2)
        state["move_s"] = time.monotonic() - t1
        st = os.statvfs(mnt)
        state["used"] = (st.f_blocks - st.f_bfree) * st.f_frsize
        # restarted before space returns (as systemd would), with not a
        # byte free, it stops again
        fill(mnt, 0)
        state["log_before"] = len(x.logtext())
        x.start()
        state["again"] = wait_for(lambda: x.proc.poll() is not None, 60)
        state["again_exit"] = x.proc.poll()
        state["again_log"] = x.logtext()[state["log_before"]:]

    def space_returns():
        os.unlink(os.path.join(mnt, "filler"))
        grow(mnt, GROWN)
        state["restarts_before"] = len(supervisor_exits(x))
        x.start()

    t0 = time.monotonic()
    res = history.run(t, cl, topic, PARTS, inject=full_disk,
                      heal=space_returns, hold=3.0, writer_opts=WRITERS)
    t.diag("the metadata log had %.1f MiB allocated, the filler took %.1f "
           "MiB of node %d's tmpfs; ENOSPC %.1f s later; %.1f MiB in use "
           "when it stopped" % (
               state.get("meta", 0) / 2**20, state.get("filler", 0) / 2**20,
               X, state.get("to_enospc", -1), state.get("used", 0) / 2**20))
    m = state.get("offline")
    t.ok(m is not None and os.path.realpath(m.group(1)) ==
         os.path.realpath(mnt) and "No space left on device" in m.group(3),
         "node %d's log names its log dir and ENOSPC: %s"
         % (X, m.group(0) if m else None))
    first = x.logtext()[:state.get("log_before", 0)]
    t.ok(state.get("stopped") and "every log dir is offline" in first,
         "with its only log dir offline node %d stopped (exit status %s), "
         "saying every log dir is offline" % (X, state.get("exit")))
    again = state.get("again_log", "")
    m = OFFLINE_RE.search(again)
    t.ok(state.get("again") and m is not None and
         os.path.realpath(m.group(1)) == os.path.realpath(mnt) and
         "No space left on device" in m.group(3),
         "restarted with its disk still full, node %d stopped again, "
         "naming the dir and ENOSPC (exit status %s): %s"
         % (X, state.get("again_exit"), m.group(0) if m else None))
    t.eq(state.get("restarts_before"), 0, "its supervisor restarted no "
         "worker on the way down, either time")
    t.ok(state.get("moved"), "leadership of what node %d led moved to the "
         "other two within 30 s (%.1f s after it stopped)"
         % (X, state.get("move_s", -1)))
    t.ok(res["failed"] <= res["attempted"] // 100, "the writers carried on: "
         "%d failures of %d sends" % (res["failed"], res["attempted"]))
    history.judge(t, res, "a full disk on node %d" % X)
    t.ok(x.proc.poll() is None and x.wait_running(30),
         "with space back node %d runs again" % X)
    t.ok(res["heal_to_full_replication_s"] < 60, "and is back in every ISR "
         "of %s %.1f s after space returned and it restarted"
         % (topic, res["heal_to_full_replication_s"]))
    t.ok(wait_for(lambda: same_logs(cl, x, topic), 30, 0.5),
         "node %d's segments are byte for byte each partition leader's: "
         "nothing of the failed writes kept" % X)
    t.eq(supervisor_exits(x), [], "no worker of node %d was restarted"
         % X)
    t.eq(cl.crashes(), [], "no worker crashed")
    t.diag("figures: attempted %d, acknowledged %d, lost %d, duplicated %d, "
           "inconsistent %d, heal to full service %.1f s, scenario %.1f s"
           % (res["attempted"], res["acknowledged"], len(res["lost"]),
              len(res["duplicated"]), len(res["inconsistent"]),
              res["heal_to_full_replication_s"], time.monotonic() - t0))


def probe(t, cl):
    """The only writer, without retries and one record in flight, fills
    the disk: the write that finds it full is answered with
    KAFKA_STORAGE_ERROR, what was acknowledged before reads back after a
    restart, and nothing else is there."""
    n = cl.node(1)
    history.create_topics(t, cl, ("probe",), 1, rf=1)
    fill(n.logdir, 1 << 20)
    p = Producer({"bootstrap.servers": cl.bootstrap, "acks": "all",
                  "enable.idempotence": False, "retries": 0,
                  "linger.ms": 0, "message.timeout.ms": 15000})
    acked, errs = [], []

    def report(err, msg):
        if err is None:
            acked.append(msg.value())
        else:
            errs.append((err.name(), msg.value()))
    pad = b"/" + b"x" * 65536
    for i in range(64):  # 4 MiB at most, the filler left 1
        p.produce("probe", value=b"p%d" % i + pad, partition=0,
                  on_delivery=report)
        p.flush(20)
        if errs:
            break
    t.eq(errs[:1] and errs[0][0], "KAFKA_STORAGE_ERROR", "single node: "
         "with its disk full, the write that found it so is answered "
         "KAFKA_STORAGE_ERROR (%d acknowledged before)" % len(acked))
    t.ok(wait_for(lambda: n.proc.poll() is not None, 30),
         "single node: it stopped")
    os.unlink(os.path.join(n.logdir, "filler"))
    n.start()
    t.ok(n.wait_running(30), "single node: with the filler gone it runs "
         "again")
    # the end offset it reports first, then once it has them all: a
    # restarted leader reporting less for a moment is shown, not judged
    ends = []
    c = Consumer({"bootstrap.servers": cl.bootstrap, "group.id": "ends"})

    def end():
        try:
            ends.append(c.get_watermark_offsets(TopicPartition("probe", 0),
                                                timeout=5, cached=False)[1])
        except Exception:
            return False
        return ends[-1] >= len(acked)
    t.ok(wait_for(end, 30, 0.1), "single node: its end offset is back at "
         "%d (reported first: %s)" % (len(acked), ends[:1]))
    c.close()
    got = rncluster.read_all(cl.bootstrap, "probe", 0)
    t.ok(got[:len(acked)] == acked, "single node: every acknowledged write "
         "reads back, in order (%d acknowledged, %d read: %s)"
         % (len(acked), len(got), [v[:4] for v in got]))
    t.ok(got[len(acked):] == [], "single node: nothing after them (not the "
         "failed write, nor any part of it)")


def single(t, cl):
    topic = "alone"
    n = cl.node(1)
    mnt = n.logdir
    state = {}
    history.create_topics(t, cl, (topic,), PARTS, rf=1)

    def full_disk():
        t0 = time.monotonic()
        state["filler"] = fill(mnt, RESERVE)
        state["offline"] = wait_for(lambda: offline_line(n), 60, 0.1)
        state["to_enospc"] = time.monotonic() - t0
        state["stopped"] = wait_for(lambda: n.proc.poll() is not None, 60)
        state["exit"] = n.proc.poll()

    def space_returns():
        os.unlink(os.path.join(mnt, "filler"))
        grow(mnt, GROWN)
        state["log_before"] = len(n.logtext())
        n.start()

    t0 = time.monotonic()
    res = history.run(t, cl, topic, PARTS, inject=full_disk,
                      heal=space_returns, hold=5.0, rf=1,
                      writer_opts=WRITERS)
    m = state.get("offline")
    t.ok(m is not None and "No space left on device" in m.group(3),
         "single node: its log names its log dir and ENOSPC: %s"
         % (m.group(0) if m else None))
    first = n.logtext()[:state.get("log_before", 0)]
    t.ok(state.get("stopped") and "every log dir is offline" in first,
         "single node: it stopped (exit status %s) with its only dir "
         "offline" % state.get("exit"))
    history.judge(t, res, "a full disk on a single node", during=False)
    t.ok(n.wait_running(30), "single node: with space back it runs again")
    acked = []
    p = Producer({"bootstrap.servers": cl.bootstrap, "acks": "all",
                  "enable.idempotence": True})
    for i in range(100):
        p.produce(topic, value=b"w99-%d" % i, partition=i % PARTS,
                  on_delivery=lambda e, msg: acked.append(msg.offset())
                  if e is None else None)
    p.flush(30)
    t.eq(len(acked), 100, "single node: new writes are acknowledged after "
         "the restart")
    t.eq(cl.crashes(), [], "single node: no worker crashed")
    t.diag("single node figures: attempted %d, acknowledged %d, failed %d, "
           "lost %d, duplicated %d, inconsistent %d, heal to full service "
           "%.1f s, scenario %.1f s"
           % (res["attempted"], res["acknowledged"], res["failed"],
              len(res["lost"]), len(res["duplicated"]),
              len(res["inconsistent"]), res["heal_to_full_replication_s"],
              time.monotonic() - t0))


with TempDir() as tmp:
    cl = Cluster(tmp, 3, props=PROPS)
    x = cl.node(X)
    mount_tmpfs(x.logdir, TMPFS)
    try:
        cl.start()
        t.ok(cl.wait_running(60), "three nodes up, node %d's only log dir "
             "a %d MiB tmpfs" % (X, TMPFS))
        replicated(t, cl)
    finally:
        cl.kill()
        umount(x.logdir)

with TempDir() as tmp:
    cl = Cluster(tmp, 1, props={"min.insync.replicas": "1",
                                "log.segment.bytes": "1048576"})
    n = cl.node(1)
    mount_tmpfs(n.logdir, TMPFS)
    try:
        cl.start()
        t.ok(cl.wait_running(60), "a single node up, its only log dir a "
             "%d MiB tmpfs" % TMPFS)
        probe(t, cl)
        single(t, cl)
    finally:
        cl.kill()
        umount(n.logdir)

t.done()
