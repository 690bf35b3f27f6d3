"""librdkafka's test 0103, unmodified (Debian's librdkafka 2.0.2 source
package; tests/lib/rdksuite.py), against three runneld nodes: the
transactional producer's misuse, commits and aborts with and without
compression, consume-transform-produce over 10 transactions, fencing
(with and without producing after it), DeleteRecords under an open
transaction (Kafka >= 2.5 recovers: nothing fails), empty transactions
with and without offsets, the high watermark of each isolation level
around a commit; and its broker-less half, 0103_transactions_local."""
from rdksuite import main

main("0103")
