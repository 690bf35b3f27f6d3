"""confluent-kafka calls the security tests share: one record produced
with its outcome, a run of values produced and read back with a group
consumer, and a client's authentication errors."""
import time

from confluent_kafka import Consumer, KafkaError, Producer


def produce_one(conf, topic, value=b"v"):
    """None when acknowledged, else the error's name."""
    res = []
    p = Producer(dict(conf, **{"message.timeout.ms": 8000}))
    p.produce(topic, value, on_delivery=lambda e, m: res.append(e))
    p.flush(15)
    if not res:
        return "no delivery report"
    return None if res[0] is None else res[0].name()


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
