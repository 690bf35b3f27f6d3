"""make soak: a randomized mix of faults against a 5-node cluster, judged
by the history checker (tests/lib/history.py).

Five nodes, every one broker and controller, each in its own network
namespace (tests/lib/rnnet.py) and each under the power-cut shim
(tests/faults/powercut.c) so any of them can lose power. The run is a
series of episodes until SOAK_MINUTES (default 30) have passed; each
episode has a fresh topic (3 partitions, RF 3, min.insync.replicas=2,
clean elections only) and its own history:

  writers  three idempotent acks=all producers and one non-idempotent
           acks=all producer (its duplicates and reorderings are
           reported, not failures: retries without idempotence give them)
  readers  a tail reading every partition from the start while the fault
           runs, and a final read of the whole topic after the heal

and one fault, drawn from a shuffled deck (every kind once before any
twice): partitions of every shape (a node isolated, the partition leader
isolated as a zombie, a bridge, a 2/3 split, a silent-drop isolation,
the leader deaf one way, the leader mute one way, flapping cuts), SIGKILL
of a whole node, SIGKILL of one worker, SIGSTOP of a node, a node
restarted with its wall clock skewed (libfaketime), a power cut of one
node, a node's log dir filled to ENOSPC (every node's log dir is a tmpfs
of SOAK_TMPFS_MIB), reads or writes under a node's log dir failing with
EIO (tests/faults/diskfail.c, loaded before the power-cut shim so a
failed call never counts as written) and a node killed with the unflushed
tail of its logs damaged (cut short or a bit flipped past each log's
recovery point, where recovery must find it). The fault is held a
random 6-18 s, healed, and the cluster must be fully replicated again
before the episode's history is checked: the heal-to-service time is
that wait.

At the end it prints the figures per fault kind and overall and exits 1
on any lost, duplicated (idempotent writers), inconsistent, misplaced,
reordered (idempotent writers) or unexpected value, or a worker crash.

Environment: SOAK_MINUTES (30), SOAK_SEED (the time), SOAK_RATE (values
per second per writer, 100), SOAK_TMPFS_MIB (192), SOAK_KINDS (a
comma-separated subset of the fault kinds; all by default),
RUNNEL_BUILDDIR. Needs root, iproute2 and faketime, like the fault
tests.
"""
import collections
import errno
import os
import random
import signal
import struct
import subprocess
import sys
import threading
import time

import history
import powercut
from confluent_kafka.admin import AdminClient, NewTopic
from rnnet import NetCluster
from rntest import BUILDDIR, TempDir, wait_for

N = 5
PARTS = 3
RF = 3
MINUTES = float(os.environ.get("SOAK_MINUTES", "30"))
SEED = int(os.environ.get("SOAK_SEED", str(int(time.time()))))
RATE = int(os.environ.get("SOAK_RATE", "100"))
PROPS = {"min.insync.replicas": "2", "replica.lag.time.max.ms": "4000",
         "broker.session.timeout.ms": "6000",
         "unclean.leader.election.enable": "false",
         "default.replication.factor": "3"}
FAKETIME = "/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1"
DISKFAIL = os.path.join(BUILDDIR, "tests", "faults", "libdiskfail.so")
# the metadata log keeps 24 MiB of segments allocated ahead in it
TMPFS_MIB = int(os.environ.get("SOAK_TMPFS_MIB", "192"))

rng = random.Random(SEED)


def log(msg):
    print("[soak %s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


class Soak:
    def __init__(self, tmp):
        self.tmp = tmp
        self.cl = NetCluster(tmp, N, props=PROPS)
        self.shadow = {n.node_id: os.path.join(tmp, "shadow%d" % n.node_id)
                       for n in self.cl.nodes}
        self.skew = {}  # node -> libfaketime offset while skewed
        self.switch = {n.node_id: os.path.join(tmp, "disk%d" % n.node_id)
                       for n in self.cl.nodes}
        self.mounted = []
        self.after = None  # a fault's report once the cluster serves again

    # ---- nodes ------------------------------------------------------

    def env(self, i):
        n = self.cl.node(i)
        e = powercut.env(n.logdir, self.shadow[i])
        # first: a call it fails never reaches the power-cut shim
        e["LD_PRELOAD"] = "%s:%s" % (DISKFAIL, e["LD_PRELOAD"])
        e.update({"DISKFAIL_ROOT": os.path.realpath(n.logdir),
                  "DISKFAIL_SWITCH": self.switch[i]})
        if i in self.skew and os.path.exists(FAKETIME):
            e["LD_PRELOAD"] = "%s:%s" % (e["LD_PRELOAD"], FAKETIME)
            e.update({"FAKETIME": self.skew[i],
                      "FAKETIME_DONT_FAKE_MONOTONIC": "1",
                      "FAKETIME_NO_CACHE": "1"})
        return e

    def start(self, i, fresh_baseline=False):
        n = self.cl.node(i)
        os.makedirs(n.logdir, exist_ok=True)
        if fresh_baseline:
            powercut.baseline(n.logdir, self.shadow[i])
        n.start(env=self.env(i))

    def start_all(self):
        for n in self.cl.nodes:
            # a small disk of its own, so one can be filled
            os.makedirs(n.logdir, exist_ok=True)
            subprocess.run(["mount", "-t", "tmpfs", "-o",
                            "size=%dm" % TMPFS_MIB, "runnel-soak", n.logdir],
                           check=True)
            self.mounted.append(n.logdir)
            self.start(n.node_id, fresh_baseline=True)

    def unmount_all(self):
        for path in self.mounted:
            # a killed worker may still be closing its files
            if not wait_for(lambda: subprocess.run(
                    ["umount", path], stderr=subprocess.DEVNULL).returncode
                    == 0, 10, 0.5):
                subprocess.run(["umount", "-l", path])
        self.mounted = []

    def running(self, i):
        p = self.cl.node(i).proc
        return p is not None and p.poll() is None

    def restart_if_dead(self, i):
        if not self.running(i):
            self.start(i)

    # ---- cluster questions -----------------------------------------

    def bootstrap(self):
        return self.cl.bootstrap

    def controller(self):
        try:
            return AdminClient({"bootstrap.servers": self.bootstrap()}
                               ).list_topics(timeout=3).controller_id
        except Exception:
            return -1

    def healthy(self):
        """Every node's workers running and every broker registered."""
        try:
            if not all(n.status() and n.status()["node"]["state"] == "running"
                       and all(w["state"] == "running"
                               for w in n.status()["workers"])
                       for n in self.cl.nodes):
                return False
            md = AdminClient({"bootstrap.servers": self.bootstrap()}
                             ).list_topics(timeout=3)
            return len(md.brokers) == N and md.controller_id > 0
        except Exception:
            return False

    def replicas(self, topic):
        """Partition 0's replicas, leader first; [] if unknown."""
        try:
            md = AdminClient({"bootstrap.servers": self.bootstrap()}
                             ).list_topics(topic, timeout=3)
            p = md.topics[topic].partitions[0]
            return [p.leader] + [r for r in p.replicas if r != p.leader]
        except Exception:
            return []

    def target(self, topic):
        """The node a fault hits: partition 0's leader, one of its
        followers, the active controller or any node."""
        reps = self.replicas(topic)
        v = rng.choice([reps[0] if reps else -1,
                        rng.choice(reps[1:]) if len(reps) > 1 else -1,
                        self.controller(), rng.randint(1, N)])
        return v if 1 <= v <= N else rng.randint(1, N)

    def create_topic(self, name):
        admin = AdminClient({"bootstrap.servers": self.bootstrap()})
        deadline = time.monotonic() + 60
        while True:
            try:
                admin.create_topics([NewTopic(name, PARTS, RF)])[name].result(30)
                break
            except Exception as e:
                if "TOPIC_ALREADY_EXISTS" in str(e):
                    break
                if time.monotonic() > deadline:
                    raise
                time.sleep(1)
        return wait_for(lambda: history.fully_replicated(
            self.bootstrap(), name, PARTS, RF), 60, 0.5)

    # ---- faults: each returns (description, heal) -------------------

    def f_isolate(self, topic):
        v = self.target(topic)
        self.cl.isolate(v)
        return "node %d isolated" % v, self.cl.heal

    def f_zombie(self, topic):
        v = history.leader_of(self.bootstrap(), topic, 0)
        v = v if v > 0 else rng.randint(1, N)
        self.cl.isolate(v)
        return "leader %d isolated (zombie)" % v, self.cl.heal

    def f_bridge(self, topic):
        a, b, c = rng.sample(range(1, N + 1), 3)
        self.cl.cut(b, c)
        return "bridge: %d sees %d and %d, they not each other" % (a, b, c), \
            self.cl.heal

    def f_split(self, topic):
        nodes = list(range(1, N + 1))
        rng.shuffle(nodes)
        reps = self.replicas(topic)
        if len(reps) == RF and rng.random() < 0.5:
            # the leader and one follower in the minority: an ISR of two
            # on the side without the controller quorum (Jepsen 2013)
            nodes = reps[:1] + [reps[rng.randint(1, RF - 1)]]
            nodes += [i for i in range(1, N + 1) if i not in nodes]
        minority, majority = nodes[:2], nodes[2:]
        for a in minority:
            for b in majority:
                self.cl.cut(a, b)
        return "split %s | %s" % (sorted(minority), sorted(majority)), \
            self.cl.heal

    def f_silent(self, topic):
        v = history.leader_of(self.bootstrap(), topic, 0)
        v = v if v > 0 else rng.randint(1, N)
        for o in range(1, N + 1):
            if o != v:
                self.cl.drop_both(v, o)
        return "leader %d isolated by silent drops" % v, self.cl.heal

    def f_deaf(self, topic):
        v = history.leader_of(self.bootstrap(), topic, 0)
        v = v if v > 0 else rng.randint(1, N)
        for o in range(1, N + 1):
            if o != v:
                self.cl.drop(o, v)
        return "leader %d sends, hears nothing (silent, one way)" % v, \
            self.cl.heal

    def f_mute(self, topic):
        v = history.leader_of(self.bootstrap(), topic, 0)
        v = v if v > 0 else rng.randint(1, N)
        for o in range(1, N + 1):
            if o != v:
                self.cl.oneway(v, o)
        return "leader %d hears, cannot send (one way)" % v, self.cl.heal

    def f_flap(self, topic):
        stop = threading.Event()
        flaps = [0]

        def flap():
            while not stop.is_set():
                a, b = rng.sample(range(1, N + 1), 2)
                self.cl.cut(a, b)
                flaps[0] += 1
                stop.wait(rng.uniform(2, 4))
                self.cl.heal()
                stop.wait(rng.uniform(1, 2))
        th = threading.Thread(target=flap, daemon=True)
        th.start()

        def heal():
            stop.set()
            th.join()
            self.cl.heal()
            log("  %d flaps" % flaps[0])
        return "flapping cuts between random pairs", heal

    def f_kill_node(self, topic):
        v = self.target(topic)
        self.cl.node(v).kill()
        return "node %d SIGKILLed" % v, lambda: self.start(v)

    def f_kill_worker(self, topic):
        v = self.target(topic)
        ws = self.cl.node(v).workers()
        if not ws:
            return "node %d: no worker to kill" % v, lambda: None
        name = rng.choice(sorted(ws))
        try:
            os.kill(ws[name]["pid"], signal.SIGKILL)
        except (ProcessLookupError, KeyError, TypeError):
            pass
        return "worker %s of node %d SIGKILLed" % (name, v), lambda: None

    def f_pause(self, topic):
        v = self.target(topic)
        self.cl.pause(v)
        return "node %d SIGSTOPped" % v, lambda: self.cl.resume(v)

    def f_skew(self, topic):
        v = self.target(topic)
        off = rng.choice(["+600s", "-600s", "+3600s", "-3600s"])
        if not os.path.exists(FAKETIME):
            return "no libfaketime: skipped", lambda: None
        self.cl.node(v).stop()
        self.skew[v] = off
        self.start(v)

        def heal():
            # the skew is the fault, held while the others act: set right
            # again with a clean restart
            self.cl.node(v).stop()
            del self.skew[v]
            self.start(v)
        return "node %d restarted with its wall clock %s" % (v, off), heal

    def f_power(self, topic):
        v = self.target(topic)
        n = self.cl.node(v)
        n.kill()
        stats = powercut.cut(n.logdir, self.shadow[v])
        desc = "node %d power cut (%d bytes reverted, %d entries dropped)" % (
            v, stats["bytes reverted"], len(stats["entries dropped"]))
        return desc, lambda: self.start(v, fresh_baseline=True)

    def f_full(self, topic):
        v = self.target(topic)
        path = os.path.join(self.cl.node(v).logdir, "filler")
        chunk = b"\0" * (1 << 20)
        with open(path, "ab") as f:
            try:
                while True:
                    f.write(chunk)
                    f.flush()
            except OSError as e:
                if e.errno != errno.ENOSPC:
                    raise
        size = os.path.getsize(path)

        def heal():
            os.unlink(path)  # the node, stopped by it, restarts after
        return "node %d's log dir filled (%d MiB filler)" % (
            v, size >> 20), heal

    def f_eio(self, topic):
        v = self.target(topic)
        what = rng.choice(["write", "read", "read write"])
        with open(self.switch[v], "w") as f:
            f.write(what + "\n")

        def heal():
            os.unlink(self.switch[v])
        return "node %d: %s failing with EIO" % (v, what), heal

    def f_corrupt(self, topic):
        v = self.target(topic)
        n = self.cl.node(v)
        n.kill()
        hurt = damage_tails(n.logdir)
        since = len(n.logtext())

        def said():
            # what recovery reported of it, once the node serves again
            lines = [l for l in n.logtext()[since:].splitlines()
                     if "invalid data" in l]
            return "  node %d's recovery: %d logs cut back to their last " \
                "valid batch%s" % (v, len(lines), (": " + lines[0].strip())
                                   if lines else "")
        self.after = said
        return "node %d SIGKILLed, %d log tails damaged past the recovery " \
            "point (%s)" % (v, len(hurt), ", ".join(hurt[:4])), \
            lambda: self.start(v)

    KINDS = ("isolate", "zombie", "bridge", "split", "silent", "deaf", "mute",
             "flap", "kill_node", "kill_worker", "pause", "skew", "power",
             "full", "eio", "corrupt")


def recovery_points(logdir):
    """topic-partition -> offset, from the log dir's checkpoint (none: 0)."""
    rp = {}
    try:
        with open(os.path.join(logdir, "recovery-point-offset-checkpoint")) as f:
            for line in f.read().splitlines()[2:]:
                topic, part, off = line.split()
                rp["%s-%s" % (topic, part)] = int(off)
    except (OSError, ValueError):
        pass
    return rp


def batches(data):
    """(start, end, base offset) of each whole batch in a segment."""
    pos, out = 0, []
    while pos + 61 <= len(data):
        base, length = struct.unpack_from(">qi", data, pos)
        end = pos + 12 + length
        if length < 49 or end > len(data):
            break
        out.append((pos, end, base))
        pos = end
    return out


def damage_tails(logdir):
    """Cut short, or flip a bit in, the newest segment of some of the
    node's partitions, only in batches past the checkpointed recovery
    point: what a crash may leave there, and what recovery must find by
    the CRC. A batch's first 16 bytes (base offset, length, leader epoch)
    are outside its CRC, as in Kafka, so flips land after them."""
    rp, hurt = recovery_points(logdir), []
    dirs = sorted(d for d in os.listdir(logdir)
                  if "-" in d and not d.startswith("__cluster_metadata")
                  and os.path.isdir(os.path.join(logdir, d)))
    rng.shuffle(dirs)
    for d in dirs:
        logs = sorted(f for f in os.listdir(os.path.join(logdir, d))
                      if f.endswith(".log"))
        if not logs or len(hurt) >= 6 or rng.random() < 0.5:
            continue
        path = os.path.join(logdir, d, logs[-1])
        with open(path, "rb") as f:
            data = f.read()
        tail = [b for b in batches(data) if b[2] >= rp.get(d, 0)]
        if not tail:
            continue
        start, end, base = rng.choice(tail)
        if rng.random() < 0.5:
            at = rng.randrange(start, end)
            os.truncate(path, at)
            hurt.append("%s cut at byte %d (offset %d)" % (d, at, base))
        else:
            at = rng.randrange(start + 16, end)
            with open(path, "r+b") as f:
                f.seek(at)
                b = f.read(1)[0] ^ (1 << rng.randrange(8))
                f.seek(at)
                f.write(bytes([b]))
            hurt.append("%s bit flipped at byte %d (offset %d)"
                        % (d, at, base))
    return hurt


class Totals:
    KEYS = ("episodes", "attempted", "acknowledged", "failed", "unknown",
            "lost", "duplicated", "dup_nonidem", "inconsistent", "misplaced",
            "reordered", "reordered_nonidem", "unexpected", "bad")

    def __init__(self):
        self.v = {k: 0 for k in self.KEYS}
        self.heal = []

    def add(self, other):
        for k in self.KEYS:
            self.v[k] += other[k]
        self.heal.extend(other["heal"])

    def line(self, name):
        h = self.heal
        hs = ("heal-to-service s: min %.1f median %.1f max %.1f"
              % (min(h), sorted(h)[len(h) // 2], max(h))) if h else ""
        v = self.v
        return ("%-12s ep %2d attempted %7d acked %7d failed %5d unknown %4d "
                "| lost %d dup %d (non-idem %d, allowed) inconsistent %d "
                "misplaced %d reordered %d (non-idem %d, allowed) "
                "unexpected %d | %s" % (
                    name, v["episodes"], v["attempted"], v["acknowledged"],
                    v["failed"], v["unknown"], v["lost"], v["duplicated"],
                    v["dup_nonidem"], v["inconsistent"], v["misplaced"],
                    v["reordered"], v["reordered_nonidem"], v["unexpected"],
                    hs))


def episode(s, k, kind):
    topic = "soak%d" % k
    if not s.create_topic(topic):
        log("episode %d: topic %s not fully replicated in 60 s" % (k, topic))
    pi, pn = "r%d/" % (2 * k), "r%d/" % (2 * k + 1)
    ws = [history.Writer(i, s.bootstrap(), topic, rate=RATE, prefix=pi)
          for i in range(3)]
    wn = history.Writer(9, s.bootstrap(), topic, idempotent=False,
                        rate=RATE, prefix=pn)
    tail = history.Tail(s.bootstrap(), topic, PARTS)
    for w in ws + [wn]:
        w.start()
    tail.start()
    time.sleep(3)
    reps = s.replicas(topic)
    desc, heal = getattr(s, "f_" + kind)(topic)
    desc += " (partition 0: leader %s, followers %s)" % (
        reps[0] if reps else "?", reps[1:])
    hold = rng.uniform(6, 18)
    log("episode %d [%s] %s, held %.0f s" % (k, kind, desc, hold))
    time.sleep(hold)
    heal()
    healed = time.monotonic()
    for n in s.cl.nodes:  # nothing is left dead by a fault
        s.restart_if_dead(n.node_id)
    ok = wait_for(lambda: s.healthy() and history.fully_replicated(
        s.bootstrap(), topic, PARTS, RF), 120, 0.5)
    service = time.monotonic() - healed
    if not ok:
        log("  NOT back to full service 120 s after the heal")
    if s.after is not None:
        log(s.after())
        s.after = None
    time.sleep(2)
    for w in ws + [wn]:
        w.finish()
    tail.finish()
    final, _ = history.final_read(s.bootstrap(), topic, PARTS, timeout=120)
    ri = history.check(ws, tail, final, True, pi)
    rn = history.check([wn], tail, final, False, pn)
    out = {
        "episodes": 1,
        "attempted": ri["attempted"] + rn["attempted"],
        "acknowledged": ri["acknowledged"] + rn["acknowledged"],
        "failed": ri["failed"] + rn["failed"],
        "unknown": ri["unknown"] + rn["unknown"],
        "lost": len(ri["lost"]) + len(rn["lost"]),
        "duplicated": len(ri["duplicated"]),
        "dup_nonidem": len(rn["duplicated"]),
        # the tail's view is shared by both checks: counted once
        "inconsistent": len(ri["inconsistent"]),
        "misplaced": len(ri["misplaced"]) + len(rn["misplaced"]),
        "reordered": len(ri["reordered"]),
        "reordered_nonidem": len(rn["reordered"]),
        "unexpected": len(ri["unexpected"]) + len(rn["unexpected"]),
        "heal": [service] if ok else [],
    }
    out["bad"] = int(not ri["ok"] or bool(rn["lost"] or rn["misplaced"]
                                          or rn["unexpected"]) or not ok)
    log("  idempotent: %s" % history.summary(ri))
    log("  non-idempotent: %s" % history.summary(rn))
    errs = collections.Counter(e for w in ws + [wn]
                               for e in w.failed.values())
    if errs:
        log("  failed sends (not acknowledged, allowed): %s" % ", ".join(
            "%s %d" % kv for kv in errs.most_common()))
    log("  full service %.1f s after the heal%s" % (
        service, "" if not out["bad"] else "  <-- FAILED"))
    for name, r in (("idempotent", ri), ("non-idempotent", rn)):
        for key in ("lost", "duplicated", "inconsistent", "misplaced",
                    "reordered", "unexpected"):
            if r[key] and (name == "idempotent" or
                           key not in ("duplicated", "reordered")):
                log("  %s %s (first 5): %r" % (name, key, r[key][:5]))
    return out


def main():
    log("seed %d, %.1f minutes, %d nodes, %d writers x %d/s"
        % (SEED, MINUTES, N, 4, RATE))
    kinds = [k for k in os.environ.get("SOAK_KINDS", "").split(",") if k]
    kinds = kinds or list(Soak.KINDS)
    unknown = [k for k in kinds if k not in Soak.KINDS]
    if unknown:
        log("unknown fault kinds %s; known: %s" % (unknown, Soak.KINDS))
        return 2
    per = {k: Totals() for k in Soak.KINDS}
    total = Totals()
    crashes = []
    with TempDir() as tmp:
        s = Soak(tmp)
        try:
            s.start_all()
            if not s.cl.wait_running(60):
                log("the cluster did not come up")
                return 2
            end = time.monotonic() + MINUTES * 60
            deck, k = [], 0
            while time.monotonic() < end:
                if not deck:
                    deck = list(kinds)
                    rng.shuffle(deck)
                kind = deck.pop()
                k += 1
                r = episode(s, k, kind)
                per[kind].add(r)
                total.add(r)
            crashes = s.cl.crashes()
        finally:
            for n in s.cl.nodes:
                if s.running(n.node_id):
                    try:
                        s.cl.resume(n.node_id)
                    except Exception:
                        pass
            s.cl.destroy()
            s.unmount_all()
    print("\nsoak figures (seed %d, %.1f minutes):" % (SEED, MINUTES))
    for kind in Soak.KINDS:
        if per[kind].v["episodes"]:
            print(per[kind].line(kind))
    print(total.line("overall"))
    if crashes:
        print("worker crashes:\n  " + "\n  ".join(crashes))
    bad = total.v["bad"] or crashes
    print("soak: %s" % ("FAILED" if bad else
                        "0 lost, 0 duplicated, 0 inconsistent"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
