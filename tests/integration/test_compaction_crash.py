"""The log cleaner SIGKILLed again and again while it cleans and swaps
segments (at each step of the swap through RUNNEL_CLEANER_CRASH_FILE, and at
random moments from outside): each time the node keeps serving, and a full
read never loses a key, never shows a record twice and always ends each key
with its latest value; at the end the log is compacted."""
import os
import random
import signal
import time

from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from rntest import Node, Tap, TempDir, wait_for

TOPIC = "crashy"
KEYS = 300
KILLS = 24
STEPS = ["cleaned", "promote", "swap", "unlink", "indexes", "random"]

t = Tap()
rnd = random.Random(int(os.environ.get("RUNNEL_TEST_SEED", time.time())))
expect = {}     # key -> (offset, value)
seq = [0]


def produce(p, count):
    out = []

    def dr(err, msg):
        if err is None:
            out.append((msg.offset(), msg.key().decode(), msg.value()))
        else:
            t.diag("delivery failed: %s" % err)
    for _ in range(count):
        i = seq[0]
        seq[0] += 1
        k = "k%03d" % (i % KEYS)
        while True:
            try:
                p.produce(TOPIC, key=k.encode(), value=b"%d" % i, on_delivery=dr)
                break
            except BufferError:
                p.poll(0.05)
    p.flush(30)
    for off, k, v in out:
        if k not in expect or expect[k][0] < off:
            expect[k] = (off, v)
    return len(out) == count


def read_check(bootstrap):
    """None if a full read is right, else why not."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "unused",
                  "enable.auto.commit": False, "enable.partition.eof": True,
                  "fetch.error.backoff.ms": 50})
    try:
        _, hw = c.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=5)
        c.assign([TopicPartition(TOPIC, 0, 0)])
        last, prev, deadline = {}, -1, time.time() + 15
        while time.time() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF and prev + 1 >= hw:
                    break
                continue
            if m.offset() <= prev:
                return "offset %d after %d: a record twice" % (m.offset(), prev)
            prev = m.offset()
            last[m.key().decode()] = (m.offset(), m.value())
            if prev + 1 >= hw:
                break
        else:
            return "read did not reach the high watermark %d (at %d)" % (hw, prev)
        for k, want in expect.items():
            if last.get(k) != want:
                return "key %s: want %r, read %r" % (k, want, last.get(k))
        return None
    except Exception as e:
        return "read failed: %s" % e
    finally:
        c.close()


def cleaner_pid(n):
    w = n.workers().get("log-cleaner-0")
    return w["pid"] if w and w["state"] == "running" else None


with TempDir() as tmp:
    crash_file = os.path.join(tmp, "crash-at")
    n = Node(tmp, props={"log.cleaner.backoff.ms": "100",
                         "worker.restart.backoff.initial.ms": "20",
                         "worker.restart.backoff.max.ms": "100",
                         "worker.restart.max.failures": "1000"})
    n.start(env={"RUNNEL_CLEANER_CRASH_FILE": crash_file})
    try:
        t.ok(n.wait_running() is not None, "node is up")
        a = AdminClient({"bootstrap.servers": n.bootstrap})
        a.create_topics([NewTopic(TOPIC, 1, 1, config={
            "cleanup.policy": "compact", "segment.bytes": "16384",
            "segment.ms": "3000", "min.cleanable.dirty.ratio": "0.01"})])[TOPIC].result(20)
        wait_for(lambda: TOPIC in a.list_topics(timeout=5).topics and
                 a.list_topics(timeout=5).topics[TOPIC].partitions[0].leader >= 0, 10)
        # batches stay well under segment.bytes (a larger one is refused)
        p = Producer({"bootstrap.servers": n.bootstrap, "linger.ms": 5,
                      "batch.size": 8192, "acks": "all", "compression.type": "lz4"})
        t.ok(produce(p, 3000), "first updates acknowledged")

        kills, steps_hit, problems = 0, {}, []
        # every step KILLS / len(STEPS) times, in a random order within each
        # round of len(STEPS): a random choice of 24 missed some step 7% of
        # the time
        order = []
        while len(order) < KILLS:
            order += rnd.sample(STEPS, len(STEPS))
        for it in range(KILLS):
            step = order[it]
            pid = wait_for(lambda: cleaner_pid(n), timeout=10)
            if step != "random":
                with open(crash_file, "w") as f:
                    f.write(step)
            if not produce(p, 1500):
                problems.append("round %d: produce failed" % it)
            if step == "random":
                time.sleep(rnd.uniform(0, 0.4))
                if pid:
                    os.kill(pid, signal.SIGKILL)
                    kills += 1
                    steps_hit[step] = steps_hit.get(step, 0) + 1
            else:
                # a round that rolled no segment leaves nothing to clean:
                # more updates until the cleaner gets to the step
                hit = False
                for _ in range(4):
                    if wait_for(lambda: not os.path.exists(crash_file), timeout=5, step=0.05):
                        hit = True
                        break
                    produce(p, 1500)
                if hit:
                    kills += 1
                    steps_hit[step] = steps_hit.get(step, 0) + 1
                else:
                    os.unlink(crash_file)
                    problems.append("round %d: the cleaner never reached %s" % (it, step))
            wait_for(lambda: cleaner_pid(n) not in (None, pid), timeout=10)
            why = None

            def right():
                global why
                why = read_check(n.bootstrap)
                # wrong data is a failure at once; only unavailability may pass
                if why is not None and ("twice" in why or why.startswith("key ")):
                    problems.append("round %d (%s): %s" % (it, step, why))
                    return True
                return why is None
            if not wait_for(right, timeout=20, step=0.5):
                problems.append("round %d (%s): %s" % (it, step, why))
        t.ok(kills >= 20, "the cleaner was killed %d times (%s)" % (kills, steps_hit))
        t.eq(sorted(s for s in STEPS if steps_hit.get(s, 0) < 1), [],
             "every swap step, and a random moment, was hit at least once")
        t.eq(problems, [], "after every kill a full read loses no key, doubles no record, "
                           "ends each key with its latest value")

        # no more kills: the log ends up compacted
        time.sleep(3.2)
        produce(p, 1)       # past segment.ms: the tail's segment rolls

        def compacted():
            c = Consumer({"bootstrap.servers": n.bootstrap, "group.id": "unused",
                          "enable.auto.commit": False})
            _, hw = c.get_watermark_offsets(TopicPartition(TOPIC, 0), timeout=5)
            c.assign([TopicPartition(TOPIC, 0, 0)])
            count = 0
            while True:
                m = c.poll(2.0)
                if m is None or m.error():
                    break
                count += 1
                if m.offset() + 1 >= hw:
                    break
            c.close()
            return count <= KEYS + 1
        t.ok(wait_for(compacted, timeout=30, step=1.0), "then the log is compacted to one record per key")
        t.eq(read_check(n.bootstrap), None, "and reads right")
        pdir = os.path.join(n.logdir, TOPIC + "-0")

        def no_leftovers():
            return not [f for f in os.listdir(pdir)
                        if f.endswith(".cleaned") or f.endswith(".swap")]
        t.ok(wait_for(no_leftovers, timeout=15), "no .cleaned or .swap files are left behind")
        t.ok(n.wait_running(10) is not None, "every worker is running")
        t.eq(n.crashes(), [], "no worker crashed by itself")
    finally:
        n.stop()
t.done()
