"""librdkafka's test 0129, unmodified (Debian's librdkafka 2.0.2 source
package; tests/lib/rdksuite.py), against three runneld nodes: a topic of
max.message.bytes 10000 and segment.bytes 20000, 1,000 records of 1,000
bytes in one transaction that is aborted, then a consumer from the start
must reach the end without an error: fetch responses holding aborted
records alone are not MSG_SIZE_TOO_LARGE (librdkafka issue 2993)."""
from rdksuite import main

main("0129")
