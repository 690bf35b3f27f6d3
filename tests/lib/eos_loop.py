"""A consume-transform-produce loop, as an exactly-once application writes
it with confluent-kafka: read `in` as a member of a group (read_committed,
no auto commit), and per batch write one transformed record to `out` per
input record and the group's offsets in one transaction.

Run as its own process so a test can SIGKILL it: its fixed transactional.id
fences a killed predecessor when it starts again. An abortable error aborts
and rewinds to the group's committed offsets; a fatal one exits 3 (the test
starts it again). Each event is one line appended to --events:
"start", "commit <records>", "abort <error>", "retry <error>",
"fatal <error>".

usage: eos_loop.py BOOTSTRAP GROUP TXN_ID IN OUT EVENTS [BATCH] [PACE_S]
(PACE_S: how long each transaction is held open after its records are
produced, so faults find transactions open)
"""
import sys
import time

from confluent_kafka import (OFFSET_BEGINNING, Consumer, KafkaException,
                             Producer, TopicPartition)

BOOTSTRAP, GROUP, TXN_ID, IN, OUT, EVENTS = sys.argv[1:7]
BATCH = int(sys.argv[7]) if len(sys.argv) > 7 else 500
PACE = float(sys.argv[8]) if len(sys.argv) > 8 else 0.0

events = open(EVENTS, "a", buffering=1)


def event(line):
    events.write("%d %s\n" % (int(time.time() * 1000), line))


def transform(value):
    # the output carries the input's id: the checker counts ids in `out`
    return b"out:" + value


producer = Producer({"bootstrap.servers": BOOTSTRAP,
                     "transactional.id": TXN_ID,
                     "transaction.timeout.ms": 20000,
                     "message.timeout.ms": 20000,
                     "linger.ms": 5})
consumer = Consumer({"bootstrap.servers": BOOTSTRAP, "group.id": GROUP,
                     "isolation.level": "read_committed",
                     "enable.auto.commit": False,
                     "auto.offset.reset": "earliest",
                     "session.timeout.ms": 6000,
                     "heartbeat.interval.ms": 1000,
                     "max.poll.interval.ms": 60000})


def rewind(partitions):
    """Seek each partition to the group's committed offset (the start when
    it has none): what the last committed transaction left."""
    if not partitions:
        return
    for _ in range(30):
        try:
            got = consumer.committed(partitions, timeout=10)
            break
        except KafkaException as e:
            event("retry committed %s" % e.args[0].name())
            time.sleep(0.5)
    else:
        event("fatal committed offsets unreadable")
        sys.exit(3)
    for tp in got:
        off = tp.offset if tp.offset >= 0 else OFFSET_BEGINNING
        consumer.seek(TopicPartition(tp.topic, tp.partition, off))


def on_assign(c, partitions):
    # a new assignment starts from the committed offsets, never from
    # whatever an earlier owner fetched past them
    for tp in partitions:
        tp.offset = OFFSET_BEGINNING
    got = None
    for _ in range(30):
        try:
            got = c.committed(partitions, timeout=10)
            break
        except KafkaException as e:
            event("retry committed %s" % e.args[0].name())
            time.sleep(0.5)
    if got is None:
        event("fatal committed offsets unreadable")
        sys.exit(3)
    for tp in got:
        if tp.offset < 0:
            tp.offset = OFFSET_BEGINNING
    c.assign(got)


def run_batch(msgs):
    """One transaction of msgs; True when committed."""
    ends = {}
    producer.begin_transaction()
    for m in msgs:
        while True:
            try:
                producer.produce(OUT, key=m.value(), value=transform(m.value()))
                break
            except BufferError:
                producer.poll(0.1)
        ends[(m.topic(), m.partition())] = m.offset() + 1
    # held open a while (the records on their way meanwhile), so a kill
    # lands inside a transaction often, not between two
    deadline = time.monotonic() + PACE
    while time.monotonic() < deadline:
        producer.poll(0.05)
    producer.send_offsets_to_transaction(
        [TopicPartition(t, p, o) for (t, p), o in ends.items()],
        consumer.consumer_group_metadata(), 30)
    for attempt in range(5):
        try:
            producer.commit_transaction(60)
            return True
        except KafkaException as e:
            err = e.args[0]
            if err.retriable() and not err.txn_requires_abort() and \
                    not err.fatal() and attempt < 4:
                event("retry commit %s" % err.name())
                continue
            raise


def main():
    event("start")
    for attempt in range(20):
        try:
            producer.init_transactions(60)
            break
        except KafkaException as e:
            if e.args[0].fatal() or not e.args[0].retriable():
                event("fatal init %s" % e.args[0].name())
                sys.exit(3)
            event("retry init %s" % e.args[0].name())
    else:
        event("fatal init retries exhausted")
        sys.exit(3)
    consumer.subscribe([IN], on_assign=on_assign)
    while True:
        msgs = [m for m in consumer.consume(BATCH, 1.0) if not m.error()]
        if not msgs:
            continue
        try:
            run_batch(msgs)
            event("commit %d" % len(msgs))
        except KafkaException as e:
            err = e.args[0]
            if err.fatal() or not err.txn_requires_abort() and \
                    not err.retriable():
                event("fatal %s %s" % (err.name(), err.str()))
                sys.exit(3)
            event("abort %s" % err.name())
            for attempt in range(5):
                try:
                    producer.abort_transaction(60)
                    break
                except KafkaException as e2:
                    if e2.args[0].fatal() or attempt == 4:
                        event("fatal abort %s" % e2.args[0].name())
                        sys.exit(3)
                    event("retry abort %s" % e2.args[0].name())
            rewind(consumer.assignment())


main()
