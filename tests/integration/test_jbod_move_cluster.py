"""Moves between log dirs on a three-broker cluster with two log dirs per broker
(AlterReplicaLogDirs, KIP-113): every replica of an RF=3 partition (its leader
and both followers) moved to its broker's other dir at once, with
runnel-reassign-partitions, under an idempotent acks=all producer and a
consumer: the followers keep fetching while their own fetcher copies, the
leader keeps serving them; the three moves end, the metadata records the new
dirs, the ISR stays whole, no client error, every acknowledged record is read
back once and the three replicas are the same size. REPLICA_NOT_AVAILABLE from
a broker without the replica; a reassignment to another broker with a log dir
for the new replica: the tool asks again until that broker has it, and it ends
in that dir."""
import json
import os
import subprocess
import threading
import time

from confluent_kafka import Consumer, Producer, TopicPartition

from rncluster import admin, create_topic
from rnlogdirs import alter_raw, describe_json, two_log_dirs
from rntest import BUILDDIR, SANITIZED, Cluster, Tap, TempDir, wait_for

t = Tap()
W = 4 if SANITIZED else 1
MIB = 32 if SANITIZED else 128
PROPS = {"broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "300",
         "replica.lag.time.max.ms": "10000", "log.segment.bytes": str(32 << 20)}
PAD = os.urandom(1000)


def tool(*args, timeout=120):
    return subprocess.run([os.path.join(BUILDDIR, args[0])] + list(args[1:]),
                          capture_output=True, text=True, timeout=timeout)


def describe(bootstrap, topic):
    """{(broker, partition name): (current dir, future dir)}"""
    j = describe_json(bootstrap, topic)
    if j is None:
        return None
    out = {}
    for b in j["brokers"]:
        for d in b["logDirs"]:
            for p in d["partitions"]:
                cur, fut = out.get((b["broker"], p["partition"]), (None, None))
                if p["isFuture"]:
                    fut = d["logDir"]
                else:
                    cur = d["logDir"]
                out[(b["broker"], p["partition"])] = (cur, fut)
    return out


def sizes(bootstrap, topic, name):
    r = tool("runnel-log-dirs", "--bootstrap-server", bootstrap, "--describe",
             "--topic-list", topic, timeout=30)
    j = json.loads(r.stdout.strip().splitlines()[-1])
    return sorted(p["size"] for b in j["brokers"] for d in b["logDirs"]
                  for p in d["partitions"] if p["partition"] == name and not p["isFuture"])


def replicas(bootstrap, topic, p=0):
    md = admin(bootstrap).list_topics(topic, timeout=5).topics[topic].partitions[p]
    return list(md.replicas), sorted(md.isrs)


def plan(tmp, name, topic, reps, dirs):
    path = os.path.join(tmp, name)
    with open(path, "w") as f:
        json.dump({"version": 1, "partitions": [
            {"topic": topic, "partition": 0, "replicas": reps, "log_dirs": dirs}]}, f)
    return path


with TempDir() as tmp:
    c = Cluster(tmp, 3, props=PROPS)
    two_log_dirs(c)
    c.start()
    try:
        t.ok(c.wait_running(30 * W), "three brokers with two log dirs each are up")
        create_topic(c.bootstrap, "rep", 1, 3, {"min.insync.replicas": "2"})
        create_topic(c.bootstrap, "solo", 1, 1)
        wait_for(lambda: len(replicas(c.bootstrap, "rep")[1]) == 3, 30 * W, 0.2)

        p = Producer({"bootstrap.servers": c.bootstrap, "acks": "all",
                      "linger.ms": 20, "batch.size": 1000000,
                      "queue.buffering.max.kbytes": 262144})
        nfill = (MIB << 20) // 1000
        for i in range(nfill):
            while True:
                try:
                    p.produce("rep", b"f%010d" % i + PAD[11:], partition=0)
                    break
                except BufferError:
                    p.poll(0.01)
        p.produce("solo", b"s", partition=0)
        t.eq(p.flush(120 * W), 0, "%d MiB in rep-0, on its three replicas" % MIB)
        before = wait_for(lambda: (lambda d: d if d and len(
            [k for k in d if k[1] == "rep-0" and d[k][0]]) == 3 else None)(
            describe(c.bootstrap, "rep")), 30 * W, 0.3) or {}
        target = {}
        for (b, _), (cur, _) in before.items():
            dirs = c.node(b).dirs
            target[b] = dirs[1] if cur == dirs[0] else dirs[0]
        reps = replicas(c.bootstrap, "rep")[0]

        # ---- the load ------------------------------------------------------
        acked, errors, seen, cerrors = {}, [], set(), []
        stop = threading.Event()

        def produce():
            pr = Producer({"bootstrap.servers": c.bootstrap, "acks": "all",
                           "enable.idempotence": True, "linger.ms": 5,
                           "message.timeout.ms": 120000})

            def cb(err, m):
                if err is None:
                    acked[m.value()[:11]] = m.offset()
                else:
                    errors.append(str(err))
            i, t0 = 0, time.monotonic()
            while not stop.is_set():
                while i < (time.monotonic() - t0) * 3000:
                    pr.produce("rep", b"L%010d" % i + PAD[:100], partition=0,
                               on_delivery=cb)
                    i += 1
                pr.poll(0.005)
            pr.flush(120)

        def consume():
            co = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "tail",
                           "enable.auto.commit": False})
            co.assign([TopicPartition("rep", 0, nfill)])
            # done once the producer has flushed (acknowledgements come
            # during the flush too) and every record it had acknowledged
            # was read
            while not (stop.is_set() and not th[0].is_alive() and
                       set(acked) <= seen):
                for m in co.consume(1000, 0.2):
                    if m.error():
                        cerrors.append(str(m.error()))
                    else:
                        seen.add(m.value()[:11])
                if stop.is_set() and time.monotonic() > deadline[0]:
                    break
            co.close()
        deadline = [1e18]
        th = [threading.Thread(target=produce), threading.Thread(target=consume)]
        for x in th:
            x.start()
        time.sleep(2)

        # ---- every replica of rep-0 to its broker's other dir --------------
        t0 = time.monotonic()
        r = tool("runnel-reassign-partitions", "--bootstrap-server", c.bootstrap,
                 "--execute", "--reassignment-json-file",
                 plan(tmp, "dirs.json", "rep", reps, [target[b] for b in reps]))
        t.ok(r.returncode == 0 and "Successfully started log directory moves for: "
             "rep-0-1,rep-0-2,rep-0-3" in r.stdout,
             "the three replicas of rep-0 (leader %d) are sent to their other dir"
             % replicas(c.bootstrap, "rep")[0][0])
        if r.returncode != 0:
            t.diag(r.stdout + r.stderr)
        done = wait_for(lambda: (lambda d: d if d and all(
            d.get((b, "rep-0")) == (target[b], None) for b in reps) else None)(
            describe(c.bootstrap, "rep")), 120 * W, 0.2)
        secs = time.monotonic() - t0
        t.ok(done is not None, "all three moves end: each replica in its new dir "
             "(%.1f s for 3 x %d MiB)" % (secs, MIB))
        r = tool("runnel-reassign-partitions", "--bootstrap-server", c.bootstrap,
                 "--verify", "--reassignment-json-file",
                 plan(tmp, "dirs.json", "rep", reps, [target[b] for b in reps]))
        t.eq(r.stdout.count("completed successfully."), 3,
             "--verify: the three replica moves completed")
        desc = tool("runnel-topics", "--bootstrap-server", c.bootstrap, "--describe",
                    "--topic", "rep").stdout
        row = [dict(f.split(": ", 1) for f in l.strip().split("\t") if ": " in f)
               for l in desc.splitlines() if l.startswith("\t")]
        got = dict(zip(row[0]["Replicas"].split(","), row[0]["LogDirs"].split(","))) \
            if row else {}
        t.eq(got, {str(b): target[b] for b in reps},
             "the metadata records each replica's new dir")
        t.eq(len(replicas(c.bootstrap, "rep")[1]), 3, "the ISR stayed whole")
        # the old copy's -delete tree is removed after the swap lets go
        # of the partition's lock, a moment after the move shows as done
        t.ok(wait_for(lambda: all(
            not os.path.exists(os.path.join(d, "rep-0")) or d == target[n.node_id]
            for n in c.nodes for d in n.dirs) and
            all(not any(e.startswith("rep-0.") for e in os.listdir(d))
                for n in c.nodes for d in n.dirs), 10, 0.2),
             "no broker keeps a copy, future or -delete dir in its old dir")
        time.sleep(1)
        deadline[0] = time.monotonic() + 60 * W
        stop.set()
        for x in th:
            x.join(180)
        t.eq(errors[:3] + cerrors[:3], [], "no client error (%d records acknowledged)"
             % len(acked))
        t.ok(set(acked) <= seen, "the consumer got every acknowledged record "
             "(%d missing)" % len(set(acked) - seen))
        t.ok(wait_for(lambda: len(set(sizes(c.bootstrap, "rep", "rep-0"))) == 1,
                      30 * W, 0.5), "the three replicas are the same size")
        co = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "all",
                       "enable.auto.commit": False, "enable.partition.eof": True})
        co.assign([TopicPartition("rep", 0, 0)])
        counts, fill, eof, end = {}, 0, False, time.monotonic() + 120 * W
        while not eof and time.monotonic() < end:
            for m in co.consume(10000, 1):
                if m.error():
                    eof = eof or m.error().code() == -191
                elif m.value()[:1] == b"f":
                    fill += 1
                else:
                    counts[m.value()[:11]] = counts.get(m.value()[:11], 0) + 1
        co.close()
        t.eq((fill, sum(1 for k in acked if counts.get(k) != 1)), (nfill, 0),
             "a full read: the fill, and each acknowledged record once")

        # ---- REPLICA_NOT_AVAILABLE, and a log dir for a new replica ---------
        holder = replicas(c.bootstrap, "solo")[0][0]
        other = [b for b in (1, 2, 3) if b != holder][0]
        got = alter_raw(c.node(other), [(c.node(other).dirs[1], "solo", 0)], 1)
        t.eq(got, {("solo", 0): 9}, "broker %d, which has no replica of solo-0: "
             "REPLICA_NOT_AVAILABLE" % other)
        want = c.node(other).dirs[1]
        r = tool("runnel-reassign-partitions", "--bootstrap-server", c.bootstrap,
                 "--execute", "--reassignment-json-file",
                 plan(tmp, "solo.json", "solo", [other], [want]))
        t.ok(r.returncode == 0 and "Successfully started log directory move for: "
             "solo-0-%d" % other in r.stdout,
             "solo-0 reassigned from broker %d to %d with log_dirs [%s]: the tool "
             "asked until broker %d had the replica" % (holder, other, want, other))
        if r.returncode != 0:
            t.diag(r.stdout + r.stderr)
        t.ok(wait_for(lambda: (lambda d: d if d and d.get((other, "solo-0")) ==
                               (want, None) and (holder, "solo-0") not in d
                               else None)(describe(c.bootstrap, "solo")), 60 * W, 0.3),
             "it ends on broker %d, in %s" % (other, want))
        t.eq(c.crashes(), [], "no worker crashed")
    finally:
        c.kill()
t.done()
