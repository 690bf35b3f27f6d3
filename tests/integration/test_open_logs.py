"""A node whose open-files limit holds far fewer logs than it serves: a
topic of 3,000 partitions under RLIMIT_NOFILE 1024 takes a record in every
partition from confluent-kafka with no delivery error, reads every one back
through kcat (closed logs reopen), keeps each network worker under the
limit, refuses no log open for want of descriptors, and restarts no
worker. Before the network workers closed idle logs
each open log held its descriptors until the topic went away, and the
partitions past the limit's few hundred failed with KAFKA_STORAGE_ERROR
until the producer gave up."""
import os
import subprocess
import time

from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from rntest import Node, Tap, TempDir, wait_for

t = Tap()
PARTS = 3000
NOFILE = 1024


def worker_fds(node):
    """Open descriptors of each network worker, by pid."""
    out = {}
    for pid in node.pids():
        try:
            with open("/proc/%d/cmdline" % pid) as f:
                if "network-" not in f.read():
                    continue
            out[pid] = len(os.listdir("/proc/%d/fd" % pid))
        except OSError:
            pass
    return out


with TempDir() as tmp:
    n = Node(tmp)
    # the limit is inherited by the supervisor and every worker
    n.exec_prefix = ["prlimit", "--nofile=%d:%d" % (NOFILE, NOFILE), "--"]
    n.start()
    t.ok(n.wait_running(), "node is up under an open-files limit of %d" % NOFILE)
    a = AdminClient({"bootstrap.servers": n.bootstrap})
    fs = a.create_topics([NewTopic("wide", PARTS, 1)], request_timeout=60)
    fs["wide"].result(timeout=60)

    errors = []
    p = Producer({"bootstrap.servers": n.bootstrap, "linger.ms": 20,
                  "message.timeout.ms": 120000})
    for i in range(PARTS):
        p.produce("wide", value=b"v%d" % i, partition=i,
                  on_delivery=lambda err, msg: err and errors.append(str(err)))
        p.poll(0)
    left = p.flush(150)
    t.eq(left, 0, "every record to %d partitions delivered" % PARTS)
    t.eq(errors[:3], [], "no delivery error")

    fds = worker_fds(n)
    t.ok(fds and max(fds.values()) < NOFILE,
         "each network worker stays under the limit: %s" % fds)

    # every partition read back: logs closed since reopen on demand
    r = subprocess.run(["kcat", "-C", "-b", n.bootstrap, "-t", "wide",
                        "-o", "beginning", "-e", "-q", "-f", "%p:%s\n"],
                       capture_output=True, text=True, timeout=300)
    got = {}
    for line in r.stdout.splitlines():
        part, _, value = line.partition(":")
        got.setdefault(int(part), []).append(value)
    t.eq(len(got), PARTS, "kcat reads a record from every partition")
    bad = [k for k, v in got.items() if v != ["v%d" % k]]
    t.eq(bad[:5], [], "each partition holds exactly its own record")

    refused = [l for l in n.logtext().splitlines()
               if "Too many open files" in l]
    t.eq(len(refused), 0, "no log open refused for want of descriptors")
    t.eq(n.crashes(), [], "no worker crashed")
    st = n.status()
    t.eq(sum(w.get("restarts", 0) for w in st.get("workers", [])), 0,
         "no worker restarted")
    n.stop()

t.done()
