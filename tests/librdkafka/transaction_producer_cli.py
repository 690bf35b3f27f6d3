"""A stand-in for librdkafka's tests/java/TransactionProducerCli.java.

librdkafka's test 0098 runs that Java program (through java/run-class.sh
and Kafka's Java client jars) to write transactional data for its
consumer to read. Debian has a JDK but not Kafka's Java client, so this
program takes the same command line and does the same with
confluent-kafka (which is librdkafka underneath, not the Java client: the
records and transactions are the same, the producer's wire behaviour is
librdkafka's).

    transaction_producer_cli.py BOOTSTRAP CMD...

Each CMD is comma separated, spaces around commas ignored:
    topic,NAME          topic for the producer commands that follow
    testid,ID           part of the transactional ids
    sleep,MS            pause
    exit,CODE           end at once: no flush, no close, an open
                        transaction stays open (as System.exit does)
    producerN,PARTITION,ID_START,COUNT,TXN_TYPE,FLUSH
        with producerN's producer (created on first use: idempotent,
        transactional unless TXN_TYPE is None, transactional.id
        test-transactional-id-<testid>-producerN), COUNT records to
        PARTITION (-1: the partitioner's choice) with the one-byte key
        (ID_START + i) & 0xff and the value 10 20 30 40; TXN_TYPE
        BeginX begins a transaction first, XAbort / XCommit ends it
        after, XOpen leaves it open; FLUSH is DoFlush or DontFlush.
At the end every producer is flushed and closed, as the Java one does.
One difference: an abort flushes first (see make_test_messages).
"""
import os
import re
import sys
import time

from confluent_kafka import Producer

PAYLOAD = bytes([0x10, 0x20, 0x30, 0x40])
TXN_TYPES = ("None", "BeginAbort", "BeginCommit", "BeginOpen",
             "ContinueAbort", "ContinueCommit", "ContinueOpen")


def fail(msg):
    print("TransactionProducerCli (python): %s" % msg, file=sys.stderr,
          flush=True)
    sys.exit(1)


def on_delivery(err, msg):
    # an aborted transaction purges what was not yet sent: expected
    if err is not None and err.code() not in (-152, -151):  # _PURGE_*
        fail("delivery failed: %s" % err)


def create_producer(bootstrap, testid, name, transactional):
    conf = {"bootstrap.servers": bootstrap,
            "client.id": ("transactional-producer-" if transactional
                          else "producer-") + name,
            "enable.idempotence": True,
            "linger.ms": 5,
            # Java's default partitioner hashes keys with murmur2
            "partitioner": "murmur2_random"}
    if os.environ.get("RDK_STANDIN_DEBUG"):
        conf["debug"] = os.environ["RDK_STANDIN_DEBUG"]
    if transactional:
        conf["transactional.id"] = "test-transactional-id-%s-%s" % (testid,
                                                                    name)
    p = Producer(conf)
    if transactional:
        p.init_transactions(60)
    return p


def make_test_messages(p, topic, partition, id_start, count, tt, flush):
    if tt in ("BeginAbort", "BeginCommit", "BeginOpen"):
        p.begin_transaction()
    for i in range(count):
        kw = {"key": bytes([(i + id_start) & 0xff]), "value": PAYLOAD,
              "on_delivery": on_delivery}
        if partition != -1:
            kw["partition"] = partition
        while True:
            try:
                p.produce(topic, **kw)
                break
            except BufferError:
                p.poll(0.1)
        p.poll(0)
    if flush == "DoFlush":
        p.flush()
    if tt in ("BeginAbort", "ContinueAbort"):
        # Java's producer has its AddPartitionsToTxn answered (retried past
        # CONCURRENT_TRANSACTIONS) before it sends EndTxn. librdkafka 2.0.2
        # may abort with that add refused or unanswered (its issue 4849):
        # when the add met the previous commit's markers, the EndTxn(abort)
        # then finds that commit complete, INVALID_TXN_STATE, fatal. A
        # flush first has the partition added, as Java does; the aborted
        # records then reach the log, aborted, where 0098 reads only
        # read_committed (its read_uncommitted cases flush their aborts).
        p.flush()
        p.abort_transaction(60)
    elif tt in ("BeginCommit", "ContinueCommit"):
        p.commit_transaction(60)


def main(argv):
    if len(argv) < 1:
        fail("usage: BOOTSTRAP CMD...")
    bootstrap = argv[0]
    producers = {}
    topic = testid = None
    for arg in argv[1:]:
        cmd = re.split(r"\s*,\s*", arg.strip())
        print("TransactionProducerCli (python): command: '%s'" % arg,
              flush=True)
        if cmd[0] == "sleep":
            time.sleep(int(cmd[1], 0) / 1000.0)
        elif cmd[0] == "exit":
            sys.stdout.flush()
            os._exit(int(cmd[1], 0))
        elif cmd[0] == "topic":
            topic = cmd[1]
        elif cmd[0] == "testid":
            testid = cmd[1]
        elif cmd[0].startswith("producer"):
            if len(cmd) != 6 or cmd[4] not in TXN_TYPES or \
                    cmd[5] not in ("DoFlush", "DontFlush"):
                fail("bad producer command: %r" % arg)
            p = producers.get(cmd[0])
            if p is None:
                p = create_producer(bootstrap, testid, cmd[0],
                                    cmd[4] != "None")
                producers[cmd[0]] = p
            make_test_messages(p, topic, int(cmd[1], 0), int(cmd[2], 0),
                               int(cmd[3], 0), cmd[4], cmd[5])
        else:
            fail("unknown command: %r" % arg)
    for p in producers.values():
        p.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
