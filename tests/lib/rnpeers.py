"""The peers the benchmarks measure runnel beside, in the same run:
librdkafka's in-memory mock cluster (../shared/peers/rdk_mock_broker.c,
built here with Debian's librdkafka)."""
import os
import socket
import subprocess
import sys

import rntest

PEERS = os.environ.get("RUNNEL_PEERS_DIR", os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "shared",
    "peers"))


def wait_port(port, secs=10):
    def up():
        try:
            socket.create_connection(("127.0.0.1", port), 0.5).close()
            return True
        except OSError:
            return False
    return rntest.wait_for(up, secs, 0.1)


def start_mock(tmp, topics):
    """The mock on a free port with topics ("name:partitions:rf", ...)
    made: (process, bootstrap), or (None, None) when it cannot be built."""
    src = os.path.join(PEERS, "rdk_mock_broker.c")
    exe = os.path.join(tmp, "rdk_mock_broker")
    if not os.path.exists(src) or subprocess.run(
            ["gcc", "-O2", "-o", exe, src, "-lrdkafka", "-ldl"],
            capture_output=True).returncode != 0:
        print("bench: no mock broker (%s missing or not buildable)" % src,
              file=sys.stderr)
        return None, None
    port = rntest.free_port()
    args = [exe, "-n", "1", "-p", str(port)]
    for t in topics:
        args += ["-t", t]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    return proc, "127.0.0.1:%d" % port if wait_port(port) else None
