"""confluent-kafka round trips the security tests share: produce a run of
values and read them back with a group consumer, and wait for a client's
authentication error."""
import time

from confluent_kafka import Consumer, KafkaError, Producer


def roundtrip(conf, topic, count=100, wait=20):
    """Every value produced with conf is acknowledged and read back in order."""
    p = Producer(dict(conf, **{"linger.ms": 5, "message.timeout.ms": wait * 1000}))
    errs = []
    vals = [b"%s-%d" % (topic.encode(), i) for i in range(count)]
    for v in vals:
        p.produce(topic, v, on_delivery=lambda e, m: e and errs.append(e))
    left = p.flush(wait)
    c = Consumer(dict(conf, **{"group.id": "g-" + topic,
                               "auto.offset.reset": "earliest"}))
    c.subscribe([topic])
    got, end = [], time.time() + wait
    while len(got) < count and time.time() < end:
        m = c.poll(0.5)
        if m is not None and not m.error():
            got.append(m.value())
    c.close()
    return left == 0 and not errs and got == vals


def auth_errors(conf, topic, wait=8):
    """The errors a producer with conf reports until an authentication one."""
    seen = []
    p = Producer(dict(conf, **{"error_cb": lambda e: seen.append(e)}))
    p.produce(topic, b"x")
    end = time.time() + wait
    while time.time() < end and not any(
            e.code() == KafkaError._AUTHENTICATION for e in seen):
        p.poll(0.2)
    p.purge()
    p.flush(1)
    return seen
