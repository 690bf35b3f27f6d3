"""Power cuts of the metadata quorum's voters, libraft's own writes
included (tests/faults/powercut.c models its Linux AIO writes on O_DSYNC
segments: durable once reaped).

Three combined nodes (RF 3, min.insync.replicas=2): idempotent acks=all
producers run under the history checker while a metadata writer creates
topics and alters configs, so the metadata log moves; each voter in turn
(the active controller first) loses power at a seeded random moment
(RUNNEL_TEST_SEED replays the moments and the order of the other two;
which voter wins the first election is not seeded;
RUNNEL_RAFT_POWER_ROUNDS=N makes N cuts instead of 3) and restarts. After each: a quorum
leader, the same metadata on all three (topics, partition leaders,
replicas and ISRs as each node's Metadata answers, the altered configs as
each node's DescribeConfigs answers), every topic whose CreateTopics was
acknowledged there, every acknowledged config value there, and 0 lost /
duplicated / inconsistent records. Then a single voter with default
settings loses power while topics are created: it restarts, serves, and
every acknowledged CreateTopics is still there (libraft writes each entry
with O_DSYNC before it counts as committed). Needs the shim built:
`make tests/faults/libpowercut.so` (make check builds it)."""
import os
import random
import socket
import struct
import threading
import time

import history
import powercut
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
from kafka.protocol.admin import DescribeConfigsRequest
from kafka.protocol.api import RequestHeader
from kafka.protocol.metadata import MetadataRequest
from rntest import Cluster, Node, Tap, TempDir, recv_frame, wait_for

t = Tap()
SEED = int(os.environ.get("RUNNEL_TEST_SEED") or
           random.SystemRandom().randrange(1, 1 << 31))
rng = random.Random(SEED)
t.diag("seed %d (RUNNEL_TEST_SEED=%d replays it)" % (SEED, SEED))
CONFIG = "retention.ms"


def ask(node, req):
    """One request to this node alone (not to whichever broker a client
    picks): its decoded response, or None."""
    try:
        with socket.create_connection((node.host, node.port), 5) as s:
            s.settimeout(10)
            hdr = RequestHeader(req, correlation_id=7, client_id="raftpower")
            body = hdr.encode() + req.encode()
            s.sendall(struct.pack(">i", len(body)) + body)
            frame = recv_frame(s)
            return None if frame is None else \
                req.RESPONSE_TYPE.decode(frame[4:])
    except (OSError, ValueError, struct.error):
        return None


def view(node, config_topics):
    """What this node says: controller, topics with each partition's
    leader, replicas and ISR, and the altered topics' dynamic configs."""
    md = ask(node, MetadataRequest[1](topics=None))
    if md is None:
        return None
    topics = {}
    for err, name, _internal, parts in md.topics:
        if err != 0:
            return None
        topics[name] = sorted((p[1], p[2], tuple(sorted(p[3])),
                               tuple(sorted(p[4]))) for p in parts)
    res = [(2, name, [CONFIG]) for name in sorted(config_topics)
           if name in topics]
    configs = {}
    if res:
        dc = ask(node, DescribeConfigsRequest[0](resources=res))
        if dc is None:
            return None
        for err, _msg, _type, name, entries in dc.resources:
            if err != 0:
                return None
            configs[name] = {e[0]: e[1] for e in entries if not e[3]}
    return {"controller": md.controller_id, "topics": topics,
            "configs": configs}


class MetadataWriter(threading.Thread):
    """Creates topics and alters a config over and over, recording what
    was acknowledged and what was only attempted."""

    def __init__(self, bootstrap, prefix, rf):
        super().__init__(daemon=True)
        self.bootstrap, self.prefix, self.rf = bootstrap, prefix, rf
        self.created, self.attempted = [], []
        self.config_acked = {}      # topic -> last acknowledged value
        self.config_after = {}      # topic -> values tried after it
        self.stop_flag = threading.Event()

    def run(self):
        i = 0
        while not self.stop_flag.is_set():
            # a new client each time: one that knew a cut controller waits
            # out its request timeout on the dead connection
            a = AdminClient({"bootstrap.servers": self.bootstrap,
                             "socket.timeout.ms": 5000})
            name = "%s%d" % (self.prefix, i)
            self.attempted.append(name)
            try:
                a.create_topics([NewTopic(name, 1, self.rf)],
                                operation_timeout=10)[name].result(15)
                self.created.append(name)
            except Exception:
                pass
            target = self.created[-1] if self.created else None
            if target:
                value = str(3600000 + i)
                self.config_after.setdefault(target, []).append(value)
                r = ConfigResource("topic", target,
                                   set_config={CONFIG: value})
                try:
                    list(a.alter_configs([r]).values())[0].result(15)
                    self.config_acked[target] = value
                    self.config_after[target] = []
                except Exception:
                    pass
            i += 1
            time.sleep(0.05)

    def finish(self):
        self.stop_flag.set()
        self.join(60)


def same_views(nodes, topics=()):
    """Every node answers, names a controller, and says the same."""
    vs = [view(n, topics) for n in nodes]
    return all(v is not None and v["controller"] > 0 and v == vs[0]
               for v in vs)


def metadata_checks(what, nodes, mw, waited=90):
    """The TAP lines after a cut: one view on every node, with everything
    the metadata writer had acknowledged. Returns the seconds it took."""
    t0 = time.monotonic()
    topics = set(mw.config_acked)
    seen = {}

    def agree():
        vs = [view(n, topics) for n in nodes]
        seen["views"] = vs
        return all(v is not None and v["controller"] > 0 and v == vs[0]
                   for v in vs)
    same = wait_for(agree, waited, 0.5)
    took = time.monotonic() - t0
    vs = seen["views"]
    t.ok(same, "%s: every node names the same active controller (%s) and "
         "reports the same topics, leaders, replicas, ISRs and configs "
         "(%.1f s)" % (what, vs[0]["controller"] if vs[0] else None, took))
    if not same:
        for n, v in zip(nodes, vs):
            t.diag("node %d: %r" % (n.node_id, v and {
                "controller": v["controller"], "topics": len(v["topics"])}))
    v = next((v for v in vs if v is not None), {"topics": {},
                                                "configs": {}})
    missing = [n for n in mw.created if n not in v["topics"]]
    t.eq(missing, [], "%s: all %d acknowledged CreateTopics are there "
         "(%d attempted)" % (what, len(mw.created), len(mw.attempted)))
    wrong = {k: (v["configs"].get(k, {}).get(CONFIG), val)
             for k, val in mw.config_acked.items()
             if v["configs"].get(k, {}).get(CONFIG) not in
             [val] + mw.config_after.get(k, [])}
    t.eq(wrong, {}, "%s: all %d acknowledged config changes are there"
         % (what, len(mw.config_acked)))
    return took


def start_under_shim(n, shadow):
    powercut.baseline(n.logdir, shadow)
    n.start(env=powercut.env(n.logdir, shadow))


def quorum(tmp):
    """Each voter of three power-cut in turn, the active controller first."""
    cl = Cluster(tmp, 3, props={"min.insync.replicas": "2",
                                "unclean.leader.election.enable": "false"})
    started.extend(cl.nodes)
    shadows = {n.node_id: os.path.join(tmp, "shadow%d" % n.node_id)
               for n in cl.nodes}
    for n in cl.nodes:
        os.makedirs(n.logdir, exist_ok=True)
        start_under_shim(n, shadows[n.node_id])
    if not t.ok(cl.wait_running(60), "three voters up under the shim"):
        return
    history.create_topics(t, cl, ["data"], 3)
    first = wait_for(lambda: (view(cl.nodes[0], ()) or {}).get(
        "controller", -1) > 0 and view(cl.nodes[0], ())["controller"], 30)
    others = [n.node_id for n in cl.nodes if n.node_id != first]
    rng.shuffle(others)
    order = [first] + others
    # RUNNEL_RAFT_POWER_ROUNDS goes round the voters longer (past the
    # metadata log's snapshots and segment rolls)
    rounds = int(os.environ.get("RUNNEL_RAFT_POWER_ROUNDS") or 3)
    for rnd in range(rounds):
        vid = order[rnd % 3]
        victim, shadow = cl.node(vid), shadows[vid]
        ctl = (view(cl.nodes[(vid % 3)], ()) or {}).get("controller")
        what = "cut %d: node %d%s" % (rnd + 1, vid, " (the active "
                                      "controller)" if ctl == vid else "")
        if rnd == 0:
            t.eq(ctl, vid, "the first cut is of the active controller")
        mw = MetadataWriter(cl.bootstrap, "m%d-" % rnd, 2)
        delay = rng.uniform(0.0, 3.0)
        cut = {}

        def inject():
            time.sleep(delay)   # a seeded moment in the metadata stream
            victim.kill()
            cut["at"] = (len(mw.created), len(mw.attempted))
            st = powercut.cut(victim.logdir, shadow)
            cut["stats"] = st
            t.diag("%s lost power %.2f s in (after %d acknowledged "
                   "CreateTopics): %d entries dropped, %d restored, %d "
                   "bytes reverted" % (what, delay, cut["at"][0],
                                       len(st["entries dropped"]),
                                       len(st["entries restored"]),
                                       st["bytes reverted"]))

        def heal():
            # the heal time: power back until the node runs and every
            # node's Metadata agrees with the others' again
            t0 = time.monotonic()
            start_under_shim(victim, shadow)
            cut["running"] = victim.wait_running(60)
            wait_for(lambda: same_views(cl.nodes), 60, 0.2)
            cut["heal_s"] = time.monotonic() - t0
        mw.start()
        time.sleep(1.0)
        res = history.run(t, cl, "data", 3, inject=inject, heal=heal,
                          hold=4.0)
        mw.finish()
        t.ok(cut.get("running") is not None, "%s: restarted after the cut"
             % what)
        history.judge(t, res, what)
        metadata_checks(what, cl.nodes, mw)
        figures.append((what, res["attempted"], res["acknowledged"],
                        len(mw.attempted), len(mw.created),
                        cut.get("heal_s", -1)))
    t.eq(cl.crashes(), [], "no worker crashed")
    cl.kill()


def single(tmp):
    """One voter alone, default settings: its own syncs are all there is."""
    n = Node(tmp, name="single")
    started.append(n)
    shadow = os.path.join(tmp, "single-shadow")
    os.makedirs(n.logdir, exist_ok=True)
    start_under_shim(n, shadow)
    t.ok(n.wait_running(30) is not None, "single voter up under the shim")
    mw = MetadataWriter(n.bootstrap, "s-", 1)
    mw.start()
    delay = rng.uniform(2.0, 5.0)
    time.sleep(delay)
    n.kill()
    at = len(mw.created)
    st = powercut.cut(n.logdir, shadow)
    mw.finish()
    t.diag("single voter lost power %.2f s in, after %d acknowledged "
           "CreateTopics: %d entries dropped, %d restored, %d bytes "
           "reverted" % (delay, at, len(st["entries dropped"]),
                         len(st["entries restored"]), st["bytes reverted"]))
    t.ok(at > 0, "topics were created before the cut (%d)" % at)
    t0 = time.monotonic()
    start_under_shim(n, shadow)
    t.ok(n.wait_running(60) is not None and
         wait_for(lambda: same_views([n]), 60, 0.2),
         "single voter restarts after the cut and answers Metadata")
    serve_s = time.monotonic() - t0
    metadata_checks("single voter", [n], mw)
    # it serves: a record written to the last acknowledged topic reads back
    last = mw.created[-1] if mw.created else "s-0"
    p = Producer({"bootstrap.servers": n.bootstrap, "acks": "all"})
    got = []
    p.produce(last, value=b"after", on_delivery=lambda e, m: got.append(
        (e, m.offset() if e is None else None)))
    p.flush(60)
    t.ok(got and got[0][0] is None, "single voter: a record is acknowledged "
         "on %s after the cut (%r)" % (last, got))
    c = Consumer({"bootstrap.servers": n.bootstrap, "group.id": "rp"})
    c.assign([TopicPartition(last, 0, 0)])
    m = wait_for(lambda: (lambda m: m if m and not m.error() else None)(
        c.poll(1)), 30)
    c.close()
    t.eq(m.value() if m else None, b"after", "single voter: and reads back")
    figures.append(("single voter", None, None, len(mw.attempted),
                    len(mw.created), serve_s))
    t.eq(n.crashes(), [], "single voter: no worker crashed")
    n.kill()


figures = []
started = []
with TempDir() as tmp:
    try:
        quorum(tmp)
        single(tmp)
    finally:
        for n in started:
            n.kill()

for what, att, ack, mat, mack, heal in figures:
    t.diag("%s: records attempted %s, acknowledged %s; CreateTopics "
           "attempted %d, acknowledged %d; power back to running with the "
           "metadata agreed: %.1f s" % (what, "-" if att is None else att,
                                        "-" if ack is None else ack, mat,
                                        mack, heal))
t.done()
