"""Crash recovery on one local runneld (prints figures, never fails):
BENCH_RECOVERY_GB (10) GB of 1 KiB records written with runnel-perf under
the default flush settings, the whole node SIGKILLed once the recovery
point is checkpointed, and restarted: the time until it serves again (a
produce and a fetch answer) and what its recovery line says (time, bytes
scanned). An idempotent producer writes before the load, idles across the
crash and goes on after it. Then the same crash again with
recovery-point-offset-checkpoint removed: a full scan, as every restart
did before the recovery point was checkpointed. Before each restart the
log's pages are dropped from the page cache (BENCH_RECOVERY_COLD=0 keeps
them), so the scan reads the disk as after a reboot."""
import json
import os
import re
import subprocess
import time

from confluent_kafka import Consumer, Producer, TopicPartition

from rntest import Node, TempDir, wait_for

GB = float(os.environ.get("BENCH_RECOVERY_GB", "10"))
COLD = os.environ.get("BENCH_RECOVERY_COLD", "1") != "0"
BUILD = os.environ.get("RUNNEL_BUILDDIR", "build")
PERF = os.path.join(BUILD, "runnel-perf")
LINE = re.compile(r"bench-0: log recovered in (\d+) ms \(([^)]*)\): scanned "
                  r"(\d+) of (\d+) segments, (\d+) bytes")


def serves(node):
    try:
        p = Producer({"bootstrap.servers": node.bootstrap,
                      "message.timeout.ms": 5000})
        done = []
        p.produce("bench", b"probe", on_delivery=lambda e, m: done.append(e))
        p.flush(5)
        if done != [None]:
            return False
        c = Consumer({"bootstrap.servers": node.bootstrap, "group.id": "probe"})
        lo, hi = c.get_watermark_offsets(TopicPartition("bench", 0), timeout=5)
        c.assign([TopicPartition("bench", 0, hi - 1)])
        m = c.poll(5)
        c.close()
        return m is not None and m.error() is None
    except Exception:
        return False


def checkpointed(node):
    try:
        with open(os.path.join(node.logdir,
                               "recovery-point-offset-checkpoint")) as f:
            for line in f.read().split("\n")[2:]:
                if line.startswith("bench 0 "):
                    return int(line.split()[2])
    except OSError:
        pass
    return -1


def active_base(node):
    d = os.path.join(node.logdir, "bench-0")
    return max(int(f[:20]) for f in os.listdir(d) if f.endswith(".log"))


def drop_cache(node):
    """The log's pages out of the page cache, as after a reboot (synced
    first: only clean pages can be dropped)."""
    d = os.path.join(node.logdir, "bench-0")
    for f in os.listdir(d):
        fd = os.open(os.path.join(d, f), os.O_RDONLY)
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)


def crash_and_restart(node, label):
    mark = len(node.logtext())
    node.kill()
    if COLD:
        drop_cache(node)
        label += ", cold cache"
    t0 = time.monotonic()
    node.start()
    wait_for(lambda: serves(node), 600, 0.1)
    up = time.monotonic() - t0
    m = None
    for line in node.logtext()[mark:].splitlines():
        m = LINE.search(line) or m
    if m:
        print("%s: serves again %.2f s after the restart; recovery %s ms "
              "(%s), scanned %s of %s segments, %.1f MB" % (
                  label, up, m.group(1), m.group(2), m.group(3), m.group(4),
                  int(m.group(5)) / 1e6))
    else:
        print("%s: serves again %.2f s after the restart; no recovery line"
              % (label, up))


def idempotent(node, prefix, count, p=None):
    p = p or Producer({"bootstrap.servers": node.bootstrap,
                       "enable.idempotence": True, "linger.ms": 5})
    errs = []
    for i in range(count):
        p.produce("bench", b"%s-%06d" % (prefix, i),
                  on_delivery=lambda e, m: errs.append(e) if e else None)
    p.flush(60)
    return p, errs


with TempDir() as tmp:
    n = Node(tmp, props={"num.network.threads": "2"})
    n.start()
    try:
        n.wait_running()
        subprocess.run([os.path.join(BUILD, "runnel-topics"),
                        "--bootstrap-server", n.bootstrap, "--create",
                        "--topic", "bench", "--partitions", "1",
                        "--replication-factor", "1"], check=True,
                       capture_output=True)
        idem, errs = idempotent(n, b"idem-a", 100)
        records = int(GB * (1 << 30) / 1024)
        t0 = time.monotonic()
        r = subprocess.run([PERF, "producer", "--bootstrap-server",
                            n.bootstrap, "--topic", "bench", "--num-records",
                            str(records), "--record-size", "1024", "--acks",
                            "1", "--linger-ms", "5", "--batch-size",
                            "1000000", "--print-json"],
                           capture_output=True, text=True)
        js = [json.loads(l) for l in r.stdout.splitlines()
              if l.startswith("{")]
        print("wrote %.1f GB of 1 KiB records in %.1f s: %s" % (
            GB, time.monotonic() - t0, js[-1] if js else r.stderr[-300:]))
        t0 = time.monotonic()
        ok = wait_for(lambda: checkpointed(n) == active_base(n), 120, 0.5)
        print("recovery point checkpointed at the active base %d: %s, %.1f s "
              "after the last write (log.flush.offset.checkpoint.interval.ms "
              "60000)" % (active_base(n), ok, time.monotonic() - t0))
        crash_and_restart(n, "SIGKILL")
        idem, errs2 = idempotent(n, b"idem-b", 100, idem)
        print("idle idempotent producer after the crash: %d errors before, "
              "%d after" % (len(errs), len(errs2)))
        # the storage duty writes it again only a minute later
        os.unlink(os.path.join(n.logdir, "recovery-point-offset-checkpoint"))
        crash_and_restart(n, "SIGKILL without the checkpoint (full scan)")
    finally:
        n.stop()
