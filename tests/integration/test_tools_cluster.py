"""runnel-metadata-quorum and runnel-leader-election against a real cluster:
three combined nodes and one broker-only node (which forwards the requests
to the active controller)."""
import os
import re
import subprocess

from rntest import BUILDDIR, Cluster, Tap, TempDir

QUORUM = os.path.join(BUILDDIR, "runnel-metadata-quorum")
ELECT = os.path.join(BUILDDIR, "runnel-leader-election")
TOPICS = os.path.join(BUILDDIR, "runnel-topics")

t = Tap()


def run(tool, bootstrap, *args):
    return subprocess.run([tool, "--bootstrap-server", bootstrap] + list(args),
                          capture_output=True, text=True, timeout=90)


def fields(out):
    return dict(re.findall(r"^(\w+):\s+(.*)$", out, re.M))


with TempDir() as tmp:
    c = Cluster(tmp, count=4, voters=[1, 2, 3],
                props={"broker.session.timeout.ms": "3000",
                       "broker.heartbeat.interval.ms": "500"})
    c.start()
    try:
        t.ok(c.wait_running(60), "three voters and a broker-only node run")
        b4 = c.node(4).bootstrap
        r = run(QUORUM, b4, "describe", "--status")
        t.eq(r.returncode, 0, "describe --status through the broker-only node")
        f = fields(r.stdout)
        t.ok(f.get("LeaderId") in ("1", "2", "3"), "LeaderId is a voter")
        t.ok(int(f.get("LeaderEpoch", "0")) >= 1, "LeaderEpoch")
        t.ok(int(f.get("HighWatermark", "0")) > 0, "HighWatermark")
        t.eq(f.get("CurrentVoters"), "[1,2,3]", "CurrentVoters")
        t.eq(f.get("CurrentObservers"), "[4]", "CurrentObservers")
        t.ok(len(f.get("ClusterId", "")) == 22, "ClusterId")
        for k in ("MaxFollowerLag", "MaxFollowerLagTimeMs"):
            t.ok(k in f, k)
        r = run(QUORUM, c.node(1).bootstrap, "describe", "--replication")
        t.eq(r.returncode, 0, "describe --replication")
        lines = r.stdout.splitlines()
        t.ok(lines and lines[0].split() == ["NodeId", "LogEndOffset", "Lag",
                                            "LastFetchTimestamp",
                                            "LastCaughtUpTimestamp", "Status"],
             "replication header")
        status = {l.split()[0]: l.split()[-1] for l in lines[1:] if l.strip()}
        t.eq(sorted(status.values()), ["Follower", "Follower", "Leader", "Observer"],
             "one leader, two followers, one observer")
        t.eq(status.get("4"), "Observer", "node 4 is the observer")

        r = run(TOPICS, b4, "--create", "--topic", "el", "--partitions", "3",
                "--replication-factor", "3")
        t.eq(r.returncode, 0, "RF 3 topic created through node 4")
        r = run(ELECT, b4, "--election-type", "PREFERRED", "--topic", "el",
                "--partition", "0")
        t.eq(r.returncode, 0, "preferred election on el-0")
        t.ok("Valid replica already elected for partitions el-0" in r.stdout,
             "el-0 already led by its preferred replica")
        r = run(ELECT, b4, "--election-type", "unclean", "--all-topic-partitions")
        t.eq(r.returncode, 0, "unclean election on all partitions")
        r = run(ELECT, b4, "--election-type", "PREFERRED", "--topic", "none",
                "--partition", "0")
        t.eq(r.returncode, 1, "unknown partition: exit status 1")
        t.ok("none-0: UNKNOWN_TOPIC_OR_PARTITION" in r.stdout, "and says why")
        r = run(ELECT, b4, "--election-type", "sideways", "--all-topic-partitions")
        t.eq(r.returncode, 2, "bad election type: usage error")
    finally:
        c.kill()
t.done()
