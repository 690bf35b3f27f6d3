"""Client calls the security tests share: one record produced with its
outcome, a run of values produced and read back with a group consumer, a
client's authentication errors (confluent-kafka), a plaintext probe of
a port with one raw Kafka request, and a node's SASL_PLAINTEXT listener."""
import socket
import struct
import time

from rntest import free_port

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


def plaintext_probe(port, api_key=18):
    """The bytes a plaintext v0 request (ApiVersions, or Metadata of no
    topics) with correlation id 7 gets back from port within 3 s."""
    req = struct.pack(">hhih", api_key, 0, 7, 5) + b"probe"
    if api_key == 3:
        req += struct.pack(">i", 0)
    got = b""
    s = socket.create_connection(("127.0.0.1", port), timeout=3)
    try:
        s.sendall(struct.pack(">i", len(req)) + req)
        s.settimeout(3)
        # until a whole frame, the peer's close or the timeout
        while len(got) < 4 or len(got) < 4 + struct.unpack(">i", got[:4])[0]:
            b = s.recv(4096)
            if not b:
                break
            got += b
    except OSError:
        pass
    finally:
        s.close()
    return got


def kafka_answered(got):
    """Whether got is a Kafka response frame for correlation id 7."""
    return len(got) >= 8 and struct.unpack(">i", got[4:8])[0] == 7


def add_sasl_plaintext(node, mechanisms):
    """A SASL_PLAINTEXT listener on node (node.sasl_port) beside its
    PLAINTEXT and CONTROLLER ones, taking these mechanisms."""
    node.sasl_port = free_port()
    node.props.update({
        "listeners": "PLAINTEXT://127.0.0.1:%d,SASL_PLAINTEXT://127.0.0.1:"
                     "%d,CONTROLLER://127.0.0.1:%d"
                     % (node.port, node.sasl_port, node.ctl_port),
        "advertised.listeners": "PLAINTEXT://127.0.0.1:%d,"
                                "SASL_PLAINTEXT://127.0.0.1:%d"
                                % (node.port, node.sasl_port),
        "listener.security.protocol.map":
            "PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,"
            "CONTROLLER:PLAINTEXT",
        "sasl.enabled.mechanisms": ",".join(mechanisms),
    })
