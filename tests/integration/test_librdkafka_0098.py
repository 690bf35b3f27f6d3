"""librdkafka's test 0098, unmodified (Debian's librdkafka 2.0.2 source
package; tests/lib/rdksuite.py), against three runneld nodes: a
read_committed and a read_uncommitted consumer over 16 cases of
transactional data (committed, aborted, mixed with non-transactional
records, rapid aborts and commits, across partitions, simultaneous
transactions, a transaction split across message sets, one left open
with the last stable offset 3 behind the high watermark), each checked
by count, keys and the consumer statistics' offsets.

Each case is written twice: once by the Java program of librdkafka's
(java/TransactionProducerCli.java, on Kafka's Java client, which Debian
does not ship), here a Python stand-in with its command line
(tests/librdkafka/transaction_producer_cli.py, confluent-kafka: that half
is written by librdkafka, not by the Java client); once by librdkafka's
C++ producer inside the runner. That producer can abort a transaction
before librdkafka 2.0.2 has its partition added (librdkafka issue 4849,
fixed upstream later), about one run in eight: a failed run is said and
run once more on the same nodes (rdksuite.RETRY_ONCE)."""
from rdksuite import main

main("0098")
