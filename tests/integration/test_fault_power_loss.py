"""Power cuts (tests/faults/powercut.c: each file keeps only what was
synced, each directory only the entries synced with it). A single node
with log.flush.interval.messages=1 loses nothing acknowledged; with Kafka's defaults
(no sync but on roll and shutdown) it loses at most the unsynced tail and
comes back consistent: contiguous offsets, every record's CRC good, the
high watermark not past the log. One node of three cut loses nothing
acknowledged: replication covers it. Then the active controller's node (a
Raft voter) is power-cut: the two other voters elect a controller and
commit a topic creation without it, nothing acknowledged is lost, and it
comes back with its partition logs and metadata quorum files cut to what
it synced, catches up and serves the topic made while it was down
(test_fault_raft_power.py cuts each voter in turn)."""
import os
import time

import history
import powercut
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from rntest import Cluster, Node, Tap, TempDir, wait_for

t = Tap()
N = 3000


def produce(bootstrap, topic, n):
    acked, errs = {}, []

    def report(err, m):
        if err is None:
            acked[m.value().decode()] = m.offset()
        else:
            errs.append(err)
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all",
                  "enable.idempotence": True, "linger.ms": 2,
                  "batch.size": 16384})
    for i in range(n):
        p.produce(topic, value=b"v%d" % i, partition=0, on_delivery=report)
        p.poll(0)
    p.flush(30)
    return acked, errs


def active_controller(bootstrap):
    try:
        return AdminClient({"bootstrap.servers": bootstrap}).list_topics(
            timeout=3).controller_id
    except Exception:
        return -1


def has_topic(bootstrap, topic):
    try:
        md = AdminClient({"bootstrap.servers": bootstrap}).list_topics(
            topic, timeout=3)
        return topic in md.topics and md.topics[topic].error is None
    except Exception:
        return False


def watermarks(bootstrap, topic):
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "pc"})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, 0), timeout=3)
    except Exception:
        return None
    finally:
        c.close()


def read_all(bootstrap, topic):
    """[(offset, value)] from the start to the high watermark; CRCs checked."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "pc",
                  "check.crcs": True, "enable.auto.commit": False})
    lo, hi = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    c.assign([TopicPartition(topic, 0, lo)])
    out, errors = [], []
    while (not out or out[-1][0] + 1 < hi) and len(errors) < 20:
        m = c.poll(5)
        if m is None:
            break
        if m.error():
            errors.append(str(m.error()))
            continue
        out.append((m.offset(), m.value().decode()))
    c.close()
    return lo, hi, out, errors


def single(tmp, name, props):
    n = Node(tmp, name=name, props=props)
    shadow = os.path.join(tmp, name + "-shadow")
    os.makedirs(n.logdir, exist_ok=True)
    powercut.baseline(n.logdir, shadow)
    n.start(env=powercut.env(n.logdir, shadow))
    t.ok(n.wait_running() is not None, "%s: node up under the shim" % name)
    acked, errs = produce(n.bootstrap, "pc", N)
    t.eq((len(acked), errs), (N, []), "%s: %d records acknowledged" % (name, N))
    n.kill()
    stats = powercut.cut(n.logdir, shadow)
    t.diag("%s: power cut: %r" % (name, stats))
    n.start()
    t.ok(n.wait_running() is not None, "%s: node restarts after the cut" % name)
    # after an unclean stop the node leads again once its new registration
    # is taken, when its previous incarnation's session has expired
    t.ok(wait_for(lambda: watermarks(n.bootstrap, "pc") is not None, 40),
         "%s: partition pc-0 is served again" % name)
    lo, hi, out, errors = read_all(n.bootstrap, "pc")
    t.eq(errors, [], "%s: no read error, no bad CRC" % name)
    t.ok([o for o, _ in out] == list(range(lo, hi)),
         "%s: offsets %d..%d read back without a hole" % (name, lo, hi))
    t.ok(all(acked.get(v) == o for o, v in out),
         "%s: every record read is one acknowledged at that offset" % name)
    t.eq(lo, 0, "%s: what survived starts at offset 0 (a prefix of the "
         "acknowledged records)" % name)
    # the log goes on from its recovered end: no gap, nothing overwritten
    p = Producer({"bootstrap.servers": n.bootstrap, "acks": "all"})
    after = []
    p.produce("pc", value=b"after", partition=0,
              on_delivery=lambda err, m: after.append(
                  (err, m.offset() if err is None else None)))
    p.flush(30)
    t.eq(after, [(None, hi)], "%s: the next record is written at the "
         "recovered end, offset %d" % (name, hi))
    lost = N - len(out)
    t.eq(n.crashes(), [], "%s: no worker crashed" % name)
    n.stop()
    return lost


with TempDir() as tmp:
    lost = single(tmp, "synced", {"log.flush.interval.messages": "1"})
    t.eq(lost, 0, "log.flush.interval.messages=1: nothing acknowledged lost")
    lost = single(tmp, "defaults", {})
    t.diag("defaults: %d of %d acknowledged records lost to the cut "
           "(the documented trade-off)" % (lost, N))

    cl = Cluster(tmp, 3, props={"min.insync.replicas": "2",
                                "unclean.leader.election.enable": "false"})
    shadows = {n.node_id: os.path.join(tmp, "shadow%d" % n.node_id)
               for n in cl.nodes}
    for n in cl.nodes:
        os.makedirs(n.logdir, exist_ok=True)
        powercut.baseline(n.logdir, shadows[n.node_id])
        n.start(env=powercut.env(n.logdir, shadows[n.node_id]))
    t.ok(cl.wait_running(), "three nodes up under the shim")
    admin = AdminClient({"bootstrap.servers": cl.bootstrap})
    admin.create_topics([NewTopic("cut", 3, 3)])["cut"].result(30)
    t.ok(wait_for(lambda: history.fully_replicated(cl.bootstrap, "cut", 3, 3),
                  30), "topic cut: 3 partitions, RF 3")
    # the leader of cut-0 loses power: it comes back with a shorter log
    # than its followers, and must not lead them down to it
    victim = cl.node(history.leader_of(cl.bootstrap, "cut", 0))
    shadow = shadows[victim.node_id]

    def power_cut():
        victim.kill()
        t.diag("node %d power cut: %r" % (victim.node_id,
                                          powercut.cut(victim.logdir, shadow)))

    def power_back():
        powercut.baseline(victim.logdir, shadow)
        victim.start(env=powercut.env(victim.logdir, shadow))

    # back well within its previous session (broker.session.timeout.ms)
    res = history.run(t, cl, "cut", 3, inject=power_cut, heal=power_back,
                      hold=3.0)
    for k in ("lost", "duplicated", "inconsistent", "misplaced",
              "reordered", "unexpected"):
        t.eq(len(res[k]), 0, "the leader of cut-0 (node %d) power-cut: %s 0"
             % (victim.node_id, k))

    # the active controller's node loses power: a voter of the quorum
    ctl = wait_for(lambda: active_controller(cl.bootstrap)
                   if active_controller(cl.bootstrap) > 0 else None, 30)
    if not t.ok(ctl, "node %s is the active controller" % ctl):
        t.done()
    voter, vshadow = cl.node(ctl), shadows[ctl]

    def created(name, parts, rf):
        # a new client each time: one that knew the old controller waits
        # out its request timeout on the dead connection
        a = AdminClient({"bootstrap.servers": cl.bootstrap})
        try:
            a.create_topics([NewTopic(name, parts, rf)])[name].result(15)
            return True
        except Exception as e:
            return "already exists" in str(e)
    # the node cut before registers again once its logs are recovered
    t.ok(wait_for(lambda: created("cutctl", 3, 3), 60) and
         wait_for(lambda: history.fully_replicated(cl.bootstrap, "cutctl",
                                                   3, 3), 30),
         "topic cutctl: 3 partitions, RF 3")
    seen = {}

    def cut_voter():
        voter.kill()
        cut = powercut.cut(voter.logdir, vshadow)
        t.diag("node %d (active controller) power cut: %d entries dropped, "
               "%s bytes reverted" % (ctl, len(cut.get("entries dropped", [])),
                                      cut.get("bytes reverted")))
        seen["controller"] = wait_for(
            lambda: (lambda c: c if c > 0 and c != ctl else None)(
                active_controller(cl.bootstrap)), 30)
        t0 = time.monotonic()
        seen["created"] = wait_for(lambda: created("during", 1, 2), 60)
        seen["create_s"] = time.monotonic() - t0

    def voter_back():
        powercut.baseline(voter.logdir, vshadow)
        voter.start(env=powercut.env(voter.logdir, vshadow))

    res = history.run(t, cl, "cutctl", 3, inject=cut_voter, heal=voter_back,
                      hold=3.0)
    t.ok(seen.get("controller"), "with node %d cut, node %s became the active "
         "controller" % (ctl, seen.get("controller")))
    t.ok(seen.get("created"), "the two other voters committed a topic "
         "creation without it (%.1f s)" % seen.get("create_s", -1))
    for k in ("lost", "duplicated", "inconsistent", "misplaced",
              "reordered", "unexpected"):
        t.eq(len(res[k]), 0, "the active controller (node %d) power-cut: %s 0"
             % (ctl, k))
    t.ok(wait_for(lambda: has_topic(voter.bootstrap, "during"), 60),
         "node %d came back, caught up with the metadata log and serves the "
         "topic created while it was down" % ctl)
    t.ok(wait_for(lambda: active_controller(cl.bootstrap) > 0, 30),
         "a controller is active at the end")
    t.eq(cl.crashes(), [], "no worker crashed")
    cl.kill()

t.done()
