"""JBOD (KIP-858) on a three-broker cluster with two log dirs per broker: a
12-partition RF=3 topic spreads each broker's replicas over both of its dirs,
runnel-log-dirs (DescribeLogDirs) shows where each replica is and that is where
it is on disk, and no replica's recorded dir differs from where its broker keeps
it (NumMismatchingReplicaToLogDirAssignments 0 in runnelctl status). One dir is
then removed from one broker's log.dirs and the broker restarted under an acks=all
load: the controller unassigns the replicas of the missing dir (Uuid.ZERO), the
broker re-creates them on its remaining dir, reports them (AssignReplicasToDirs)
and only then is unfenced; the replicas catch up with their leaders and every
acknowledged record is read back."""
import json
import os
import subprocess
import threading
import time

from confluent_kafka import Consumer, Producer, TopicPartition

from rncluster import admin, create_topic
from rnlogdirs import two_log_dirs
from rntest import BUILDDIR, Cluster, Tap, TempDir, wait_for

t = Tap()
PROPS = {"broker.session.timeout.ms": "3000", "broker.heartbeat.interval.ms": "300",
         "replica.lag.time.max.ms": "5000"}
TOPIC, NP = "jb", 12
SLOW = os.environ.get("RUNNEL_SANITIZERS") == "1"
W = 3 if SLOW else 1


def log_dirs(bootstrap, *args):
    r = subprocess.run([os.path.join(BUILDDIR, "runnel-log-dirs"), "--bootstrap-server",
                        bootstrap, "--describe"] + list(args),
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        return None
    return json.loads(r.stdout.strip().splitlines()[-1])


def placement(bootstrap):
    """{broker: {logDir: {partition name: entry}}} from runnel-log-dirs."""
    j = log_dirs(bootstrap, "--topic-list", TOPIC)
    if j is None:
        return None
    return {b["broker"]: {d["logDir"]: {p["partition"]: p for p in d["partitions"]}
                          for d in b["logDirs"]} for b in j["brokers"]}


def on_disk(dirs):
    return all(os.path.isdir(os.path.join(d, name)) for d, ps in dirs.items() for name in ps)


def mismatches(node):
    st = node.status()
    return st["node"].get("NumMismatchingReplicaToLogDirAssignments") if st else None


def full_isr(bootstrap):
    """Every partition of the topic has its three replicas in the ISR."""
    try:
        md = admin(bootstrap).list_topics(TOPIC, timeout=5).topics[TOPIC]
        return len(md.partitions) == NP and all(len(p.isrs) == 3
                                                 for p in md.partitions.values())
    except Exception:
        return False


def live_brokers(bootstrap):
    try:
        return sorted(admin(bootstrap).list_topics(timeout=3).brokers)
    except Exception:
        return []


with TempDir() as tmp:
    c = Cluster(tmp, 3, props=PROPS)
    two_log_dirs(c)
    c.start()
    try:
        t.ok(c.wait_running(30 * W), "three brokers with two log dirs each are up")
        create_topic(c.bootstrap, TOPIC, NP, 3, {"min.insync.replicas": "2"})
        wait_for(lambda: full_isr(c.bootstrap), 30 * W, 0.2)
        # a replica's log is made by its first record, not by being asked about
        p = Producer({"bootstrap.servers": c.bootstrap, "acks": "all"})
        for q in range(NP):
            p.produce(TOPIC, b"first", partition=q)
        t.eq(p.flush(30 * W), 0, "one record in each of the %d partitions" % NP)
        pl = wait_for(lambda: (lambda x: x if x and all(
            sum(len(v) for v in x[b].values()) == NP for b in x) else None)(
            placement(c.bootstrap)), 20 * W, 0.3)
        t.ok(pl is not None and sorted(pl) == [1, 2, 3],
             "runnel-log-dirs describes the three brokers, each with its %d replicas" % NP)
        pl = pl or {}
        for b in sorted(pl):
            counts = [len(pl[b].get(d, {})) for d in c.node(b).dirs]
            t.eq(counts, [NP // 2, NP // 2],
                 "broker %d: its replicas spread over both dirs" % b)
            t.ok(on_disk(pl[b]), "broker %d: each replica is on disk in the dir "
                 "DescribeLogDirs names" % b)
        r = subprocess.run([os.path.join(BUILDDIR, "runnel-topics"), "--bootstrap-server",
                            c.bootstrap, "--describe", "--topic", TOPIC],
                           capture_output=True, text=True, timeout=60)
        rows = [dict(f.split(": ", 1) for f in l.strip().split("\t") if ": " in f)
                for l in r.stdout.splitlines() if l.startswith("\t")]
        want = {}
        for b, dirs in pl.items():
            for d, ps in dirs.items():
                for name in ps:
                    want[(name, b)] = d
        got = {("%s-%s" % (TOPIC, w["Partition"]), int(b)): d for w in rows
               for b, d in zip(w["Replicas"].split(","), w.get("LogDirs", "").split(","))}
        t.ok(len(rows) == NP and got == want,
             "runnel-topics --describe shows each replica's log dir (LogDirs, aligned "
             "with Replicas), the same as DescribeLogDirs")
        t.eq([mismatches(n) for n in c.nodes], [0, 0, 0],
             "NumMismatchingReplicaToLogDirAssignments is 0 on every broker")
        j = log_dirs(c.bootstrap, "--broker-list", "2")
        t.ok(j is not None and [b["broker"] for b in j["brokers"]] == [2] and
             all(d["error"] is None for d in j["brokers"][0]["logDirs"]),
             "--broker-list 2 describes broker 2 alone, no dir in error")
        r = subprocess.run([os.path.join(BUILDDIR, "runnel-log-dirs"), "--bootstrap-server",
                            c.bootstrap, "--describe", "--broker-list", "2,7"],
                           capture_output=True, text=True, timeout=60)
        t.ok(r.returncode != 0 and "do not exist from --broker-list: 7" in r.stderr,
             "--broker-list with an unknown broker: Kafka's error")

        # an acks=all load through the restart
        acked, errors, stop = set(), [], threading.Event()

        def produce():
            p = Producer({"bootstrap.servers": c.bootstrap, "acks": "all",
                          "enable.idempotence": True, "linger.ms": 5,
                          "message.timeout.ms": 120000})
            i = 0

            def cb(err, m):
                if err is None:
                    acked.add(m.value())
                else:
                    errors.append(str(err))
            while not stop.is_set():
                p.produce(TOPIC, value=b"v%d" % i, partition=i % NP, on_delivery=cb)
                i += 1
                p.poll(0)
                if i % 200 == 0:
                    time.sleep(0.02)
            p.flush(60)
        th = threading.Thread(target=produce)
        th.start()
        time.sleep(2)

        victim = c.node(3)
        gone_dir = victim.dirs[1]
        lost = sorted(pl.get(3, {}).get(gone_dir, {}))
        victim.stop()
        victim.props["log.dirs"] = victim.dirs[0]
        victim.write_config()
        mark = os.path.getsize(victim.logfile)
        victim.start()
        def since_restart():
            with open(victim.logfile, errors="replace") as f:
                f.seek(mark)
                return f.read()
        # its old registration may still be live: wait for the new one's unfencing
        up = wait_for(lambda: "broker 3 is unfenced" in since_restart(), 60 * W, 0.2)
        t.ok(up and wait_for(lambda: live_brokers(c.bootstrap) == [1, 2, 3], 20 * W, 0.2),
             "broker 3 restarted without %s is registered and unfenced" % gone_dir)
        after = since_restart()
        rep = after.find("reporting the log dir of %d replica(s)" % len(lost))
        unf = after.find("broker 3 is unfenced")
        t.ok(rep >= 0 and unf > rep,
             "it reported the %d re-created replicas (AssignReplicasToDirs) before it "
             "was unfenced" % len(lost))
        ctl_logs = "".join(open(n.logfile, errors="replace").read() for n in c.nodes)
        t.ok("broker 3 no longer registers the log dir of %d of its replicas" % len(lost)
             in ctl_logs, "the controller unassigned the %d replicas of the missing dir "
             "(Uuid.ZERO)" % len(lost))
        t.ok(wait_for(lambda: mismatches(victim) == 0, 20 * W, 0.2),
             "no mismatching replica is left on broker 3")
        # on disk once its fetchers have made each log (asking makes none)
        pl3 = wait_for(lambda: (lambda x: x if x and len(x.get(3, {}).get(
            victim.dirs[0], {})) == NP and on_disk({victim.dirs[0]: x[3][victim.dirs[0]]})
            else None)(placement(c.bootstrap)), 30 * W, 0.3)
        t.ok(pl3 is not None,
             "all %d replicas of broker 3 are in its remaining dir, on disk" % NP)
        isr = wait_for(lambda: full_isr(c.bootstrap), 60 * W, 0.3)
        t.ok(isr, "every re-created replica caught up and is back in its ISR")

        stop.set()
        th.join(120)
        t.eq(errors[:3], [], "the producer saw no error")

        def same_sizes():
            x = placement(c.bootstrap)
            if not x:
                return None
            sizes = {}
            for b, dirs in x.items():
                for ps in dirs.values():
                    for name, e in ps.items():
                        sizes.setdefault(name, set()).add(e["size"])
            return all(len(s) == 1 for s in sizes.values()) and len(sizes) == NP
        t.ok(wait_for(same_sizes, 30 * W, 0.5),
             "every partition has the same size on its three replicas")

        cons = Consumer({"bootstrap.servers": c.bootstrap, "group.id": "jb",
                         "enable.auto.commit": False, "enable.partition.eof": True,
                         "auto.offset.reset": "earliest"})
        cons.assign([TopicPartition(TOPIC, p, 0) for p in range(NP)])
        seen, eof, deadline = set(), set(), time.monotonic() + 60 * W
        while len(eof) < NP and time.monotonic() < deadline:
            m = cons.poll(1)
            if m is None:
                continue
            if m.error():
                if m.error().code() == -191:  # _PARTITION_EOF
                    eof.add(m.partition())
                continue
            seen.add(m.value())
        cons.close()
        t.ok(len(acked) > 1000, "%d records acknowledged" % len(acked))
        t.eq(len(acked - seen), 0, "every acknowledged record is read back")
        t.eq(c.crashes(), [], "no worker crashed")
    finally:
        c.kill()
t.done()
