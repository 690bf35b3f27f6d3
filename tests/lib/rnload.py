"""Clients under load for the tests that replace processes while they run
(test_rolling_restart, test_upgrade): an idempotent acks=all producer and a
consumer at full speed, and librdkafka's errors and log lines, counted for
refused connections."""
import os
import re
import sys
import threading
import time

from confluent_kafka import Consumer, Producer, TopicPartition

REFUSED = re.compile(r"connection refused|ECONNREFUSED", re.I)


class ClientErrors:
    """librdkafka's error callbacks, and its log lines (which it writes to
    stderr, captured in a file): the refused connections among them."""

    def __init__(self):
        self.lock = threading.Lock()
        self.refused, self.lines = 0, []
        self.logfile = None

    def capture(self, path):
        """Send this process's stderr (librdkafka's log) to path."""
        sys.stderr.flush()
        self.logfile = path
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.saved = os.dup(2)
        os.dup2(fd, 2)
        os.close(fd)
        # Python's own stderr (TAP diagnostics, tracebacks) stays where it was
        self.pystderr = sys.stderr
        sys.stderr = open(self.saved, "w", closefd=False)

    def release(self):
        if self.logfile is not None:
            sys.stderr.flush()
            os.dup2(self.saved, 2)
            sys.stderr = self.pystderr

    def note(self, text):
        with self.lock:
            if REFUSED.search(text):
                self.refused += 1
            if len(self.lines) < 200:
                self.lines.append(text)

    def error_cb(self, err):
        self.note(str(err))

    def log_refused(self):
        with open(self.logfile, errors="replace") as f:
            return [l.rstrip() for l in f if REFUSED.search(l)]


def client_conf(bootstrap, errors):
    return {"bootstrap.servers": bootstrap, "error_cb": errors.error_cb,
            "reconnect.backoff.ms": 20, "reconnect.backoff.max.ms": 200}


class Load:
    """A producer sending unique values as fast as it can (ack times kept) and a
    consumer reading the topic at full speed (receive times kept)."""

    def __init__(self, bootstrap, errors, topic, parts, group):
        self.errors, self.topic = errors, topic
        self.stop = threading.Event()
        self.acked, self.ack_t, self.failed = [], [], 0
        self.seen_t = []
        pc = client_conf(bootstrap, errors)
        pc.update({"acks": "all", "enable.idempotence": True, "linger.ms": 5,
                   "message.timeout.ms": 120000})
        self.p = Producer(pc)
        cc = client_conf(bootstrap, errors)
        cc.update({"group.id": group, "enable.auto.commit": False,
                   "fetch.wait.max.ms": 100})
        self.c = Consumer(cc)
        self.c.assign([TopicPartition(topic, p, 0) for p in range(parts)])
        self.pt = threading.Thread(target=self.produce, daemon=True)
        self.ct = threading.Thread(target=self.consume, daemon=True)

    def cb(self, err, msg):
        if err is None:
            self.acked.append(msg.value())
            self.ack_t.append(time.monotonic())
        else:
            self.failed += 1
            self.errors.note("delivery failed: %s" % err)

    def produce(self):
        i = 0
        while not self.stop.is_set():
            try:
                self.p.produce(self.topic, value=b"v-%09d" % i, on_delivery=self.cb)
                i += 1
            except BufferError:
                self.p.poll(0.01)
                continue
            if i % 200 == 0:
                self.p.poll(0)
        self.p.flush(120)

    def consume(self):
        while not self.stop.is_set():
            for m in self.c.consume(1000, 0.2):
                if not m.error():
                    self.seen_t.append(time.monotonic())
        self.c.close()

    def start(self):
        self.pt.start()
        self.ct.start()

    def finish(self):
        self.stop.set()
        self.pt.join(180)
        self.ct.join(60)


def rate(times, t0, t1):
    """Events per second in [t0, t1)."""
    if t1 <= t0:
        return 0.0
    return sum(1 for x in list(times) if t0 <= x < t1) / (t1 - t0)
