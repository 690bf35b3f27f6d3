"""Damaged metadata quorum files (libraft's, in __cluster_metadata-0).

Three voters; one is stopped and its files damaged, one way per round: a
bit flipped in a closed segment, the open segment cut inside its data,
garbage inside the newest snapshot, both metadata files (term and vote)
garbled. It is started on them: it must either come back with the
cluster's metadata (its own Metadata answer lists every topic) or stop,
once, with a log line naming the damaged file: no restart loop, no crash,
no silently different metadata. The two others keep the quorum and commit
a new topic every round. The damaged voter then gets its files back as
they were and catches up. Last, a single voter with a bit flipped in a
closed segment stops the same way. The seed is printed;
RUNNEL_TEST_SEED replays a run."""
import os
import random
import re
import shutil
import socket
import struct
import time

from confluent_kafka.admin import AdminClient, ConfigResource
from rncluster import create_topic
from rntest import Cluster, Node, Tap, TempDir, recv_frame, wait_for

t = Tap()
SEED = int(os.environ.get("RUNNEL_TEST_SEED") or random.randrange(1 << 30))
t.diag("seed %d (RUNNEL_TEST_SEED=%d replays this run)" % (SEED, SEED))
rng = random.Random(SEED)
PROPS = {"broker.session.timeout.ms": "3000",
         "broker.heartbeat.interval.ms": "300",
         "replica.lag.time.max.ms": "3000"}
CLOSED = re.compile(r"^\d{16}-\d{16}$")


def raft_dir(n):
    return os.path.join(n.logdir, "__cluster_metadata-0")


def topics_of(n):
    """The topic names in n's own Metadata v1 answer (all topics), or
    None: asked of that node alone."""
    try:
        s = socket.create_connection((n.host, n.port), timeout=5)
    except OSError:
        return None
    try:
        body = struct.pack(">hhih", 3, 1, 7, 4) + b"test" + \
            struct.pack(">i", -1)
        s.sendall(struct.pack(">i", len(body)) + body)
        r = recv_frame(s)
    except OSError:
        return None
    finally:
        s.close()
    if r is None:
        return None
    pos = [4]

    def take(fmt):
        v = struct.unpack_from(fmt, r, pos[0])
        pos[0] += struct.calcsize(fmt)
        return v[0] if len(v) == 1 else v

    def string():
        k = take(">h")
        v = r[pos[0]:pos[0] + max(k, 0)].decode()
        pos[0] += max(k, 0)
        return v if k >= 0 else None
    for _ in range(take(">i")):
        take(">i")
        string()
        take(">i")
        string()
    take(">i")
    names = set()
    for _ in range(take(">i")):
        err = take(">h")
        name = string()
        take(">b")
        for _ in range(take(">i")):
            take(">hii")
            take(">" + "i" * take(">i"))
            take(">" + "i" * take(">i"))
        if err == 0:
            names.add(name)
    return names


def flip_closed(d):
    segs = sorted(f for f in os.listdir(d) if CLOSED.match(f))
    if not segs:
        return None
    p = os.path.join(d, rng.choice(segs))
    at = rng.randrange(8, os.path.getsize(p))
    with open(p, "r+b") as f:
        f.seek(at)
        b = f.read(1)
        f.seek(at)
        f.write(bytes([b[0] ^ (1 << rng.randrange(8))]))
    return "%s: bit flipped at byte %d" % (os.path.basename(p), at)


def cut_open(d):
    for name in sorted(f for f in os.listdir(d) if f.startswith("open-")):
        p = os.path.join(d, name)
        data = open(p, "rb").read()
        last = len(data.rstrip(b"\0"))
        if last > 8:
            at = rng.randrange(8, last)
            os.truncate(p, at)
            return "%s: cut at byte %d (data up to %d)" % (name, at, last)
    return None


def garble_snapshot(d):
    snaps = sorted((f for f in os.listdir(d)
                    if f.startswith("snapshot-") and not f.endswith(".meta")),
                   key=lambda f: [int(x) for x in f.split("-")[1:]])
    if not snaps:
        return None
    p = os.path.join(d, snaps[-1])
    size = os.path.getsize(p)
    # inside it, past the compression frame's header: a garbled header
    # leaves data the state's own decoder judges
    at = rng.randrange(16, max(17, size - 32))
    with open(p, "r+b") as f:
        f.seek(at)
        f.write(bytes(rng.randrange(256) for _ in range(32)))
    return "%s: 32 bytes of garbage at byte %d of %d" % (snaps[-1], at, size)


def garble_metadata(d):
    for name in ("metadata1", "metadata2"):
        with open(os.path.join(d, name), "wb") as f:
            f.write(bytes(rng.randrange(256) for _ in range(32)))
    return "metadata1 and metadata2: 32 bytes of garbage each"


def controller_restarts(text):
    return [l for l in text.splitlines()
            if "controller" in l and "restarting in" in l]


def started_on_damage(n, damaged, want_topics, what):
    """Start n on damaged files: it comes back with want_topics or stops
    naming one of the damaged files. True if it stopped."""
    mark = len(n.logtext())
    n.start()
    t0 = time.monotonic()
    came = wait_for(lambda: n.proc.poll() is not None or (
        want_topics <= (topics_of(n) or set())), 40, 0.2)
    said = n.logtext()[mark:]
    if n.proc.poll() is None:
        t.ok(came, "%s: it came back with the cluster's metadata (%d "
             "topics) in %.1f s" % (what, len(want_topics),
                                    time.monotonic() - t0))
        return False
    named = [l for l in said.splitlines()
             if any(f in l for f in damaged)]
    t.ok(n.proc.returncode != 0 and named,
         "%s: it stopped (exit %s) in %.1f s with a line naming the file: "
         "%s" % (what, n.proc.returncode, time.monotonic() - t0, named[:1]))
    t.eq(controller_restarts(said), [], "%s: the controller was not "
         "restarted on it" % what)
    return True


def propose_many(bootstrap, topic, k):
    """k metadata changes (one log entry each): topic config updates."""
    a = AdminClient({"bootstrap.servers": bootstrap})
    fs = []
    for i in range(k):
        r = ConfigResource("topic", topic,
                           set_config={"retention.ms": str(86400000 + i)})
        fs.append(list(a.alter_configs([r]).values())[0])
    bad = 0
    for f in fs:
        try:
            f.result(60)
        except Exception:
            bad += 1
    return k - bad


with TempDir() as tmp:
    cl = Cluster(tmp, 3, props=PROPS)
    cl.start()
    try:
        t.ok(cl.wait_running(), "three voters are up")
        topics = set()

        def new_topic(name, bootstrap=None):
            try:
                create_topic(bootstrap or cl.bootstrap, name, 1, 1,
                             timeout=30)
                topics.add(name)
                return True
            except Exception as e:
                t.diag("creating %s: %s" % (name, e))
                return False
        t.ok(new_topic("t0"), "topic t0 created")
        t0 = time.monotonic()
        done = propose_many(cl.bootstrap, "t0", 1100)
        t.eq(done, 1100, "1100 metadata changes committed in %.1f s (past "
             "the snapshot threshold)" % (time.monotonic() - t0))
        v = cl.node(3)
        others = [cl.node(1), cl.node(2)]
        obs = ",".join(o.bootstrap for o in others)
        d = raft_dir(v)
        t.ok(wait_for(lambda: any(f.startswith("snapshot-") for f in
                                  os.listdir(d)), 20),
             "node 3 took a snapshot of the metadata")
        # a restart closes its open segments; t1 then goes to a new one
        v.stop()
        v.start()
        t.ok(v.wait_running(20) is not None and
             wait_for(lambda: topics <= (topics_of(v) or set()), 20),
             "node 3 restarted")
        t.ok(new_topic("t1"), "topic t1 created")
        t.ok(wait_for(lambda: topics <= (topics_of(v) or set()), 20),
             "node 3 has it")
        # killed, not stopped: a clean stop closes the open segment too
        v.kill()
        backup = os.path.join(tmp, "raft-backup")
        shutil.copytree(d, backup)
        t.diag("node 3's quorum files: %s" % " ".join(sorted(os.listdir(d))))

        rounds = [("a bit flipped in a closed segment", flip_closed),
                  ("the open segment cut inside its data", cut_open),
                  ("garbage inside the newest snapshot", garble_snapshot),
                  ("both metadata files garbled", garble_metadata)]
        rng.shuffle(rounds)
        for k, (what, damage) in enumerate(rounds, 1):
            # each round damages the files as the kill left them
            shutil.rmtree(d)
            shutil.copytree(backup, d)
            how = damage(d)
            if not t.ok(how is not None, "%s: there is such a file" % what):
                continue
            t.diag("%s: %s" % (what, how))
            damaged = [w.split(":")[0] for w in how.split(" and ")] \
                if not how.startswith("metadata") else \
                ["metadata1", "metadata2"]
            stopped = started_on_damage(v, damaged, topics, what)
            name = "during%d" % k
            t.ok(new_topic(name, obs), "%s: the two others commit a new "
                 "topic (%s)" % (what, name))
            t.ok(wait_for(lambda: all(topics <= (topics_of(o) or set())
                                      for o in others), 20),
                 "%s: both others list every topic" % what)
            if not stopped:
                t.ok(wait_for(lambda: topics <= (topics_of(v) or set()), 30),
                     "%s: node 3 has the new topic too" % what)
            v.stop()
            shutil.rmtree(d)
            shutil.copytree(backup, d)
            v.start()
            t.ok(v.wait_running(30) is not None and
                 wait_for(lambda: topics <= (topics_of(v) or set()), 30),
                 "%s: with its files as they were, node 3 catches up (%d "
                 "topics)" % (what, len(topics)))
            v.stop()
        t.eq(cl.crashes(), [], "no worker crashed")
    finally:
        cl.kill()

    # a single voter: nobody to catch up from, it stops naming the file
    n = Node(tmp, node_id=1, name="single")
    n.start()
    try:
        t.ok(n.wait_running(20) is not None, "a single voter is up")
        create_topic(n.bootstrap, "s0", 1, 1)
        n.stop()
        n.start()
        t.ok(n.wait_running(20) is not None, "restarted: its open segment "
             "is closed")
        create_topic(n.bootstrap, "s1", 1, 1)
        n.kill()
        sd = raft_dir(n)
        backup = os.path.join(tmp, "single-backup")
        shutil.copytree(sd, backup)
        for what, damage in (("a bit flipped in a closed segment",
                              flip_closed),
                             ("the open segment cut inside its data",
                              cut_open)):
            what = "single voter, " + what
            how = damage(sd)
            if not t.ok(how is not None, "%s: there is such a file" % what):
                continue
            t.diag("%s: %s" % (what, how))
            started_on_damage(n, [how.split(":")[0]], {"s0", "s1"}, what)
            if n.proc.poll() is None:
                n.stop()
            shutil.rmtree(sd)
            shutil.copytree(backup, sd)
        n.start()
        t.ok(n.wait_running(20) is not None and
             wait_for(lambda: {"s0", "s1"} <= (topics_of(n) or set()), 20),
             "single voter: with its files as they were, it has both topics")
        n.stop()
        t.eq(n.crashes(), [], "no worker crashed")
    finally:
        n.kill()

t.done()
