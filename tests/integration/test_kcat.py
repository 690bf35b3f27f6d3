"""kcat (librdkafka) against a real runneld: metadata, and 1,000,000 records of mixed
sizes (0 B to 100 KiB), keys, headers and null values produced with gzip, snappy, lz4
and zstd (each stored compressed with its codec: librdkafka 2.0 sends gzip, snappy and
lz4 uncompressed unless Produce is advertised from v0), consumed back byte-identical
from the beginning and from an offset."""
import glob
import os
import random
import struct
import subprocess

from rntest import Node, Tap, TempDir

t = Tap()
CODECS = ["gzip", "snappy", "lz4", "zstd"]
PER_CODEC = 250000
ALPHABET = b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"


def records(seed):
    """(key, value) with value None for a null; sizes mostly small, some up to 100 KiB."""
    rnd = random.Random(seed)
    out = []
    for i in range(PER_CODEC):
        if i % 97 == 0:
            v = None
        elif i % 5000 == 1:
            v = bytes(rnd.choices(ALPHABET, k=rnd.randint(64 * 1024, 100 * 1024)))
        elif i % 100 == 2:
            v = bytes(rnd.choices(ALPHABET, k=rnd.randint(1, 4096)))
        elif i % 211 == 3:
            v = b""
        else:
            v = bytes(rnd.choices(ALPHABET, k=rnd.randint(1, 200)))
        out.append((b"key-%d" % i, v))
    return out


def batch_codecs(logdir, topic):
    """{codec id: record count} over the partition's segments (attributes
    & 7; records counted, not batches: on a loaded machine librdkafka
    sends many one-record batches, which it leaves uncompressed when the
    codec's framing outweighs what it saves)."""
    seen = {}
    for seg in sorted(glob.glob(os.path.join(logdir, topic + "-0", "*.log"))):
        data = open(seg, "rb").read()
        pos = 0
        while pos + 23 <= len(data):
            blen = struct.unpack_from(">i", data, pos + 8)[0]
            codec = struct.unpack_from(">h", data, pos + 21)[0] & 7
            records = struct.unpack_from(">i", data, pos + 23)[0] + 1
            seen[codec] = seen.get(codec, 0) + records
            pos += 12 + blen
    return seen


def kcat(args, data=None, timeout=600):
    return subprocess.run(["kcat"] + args, input=data, capture_output=True,
                          timeout=timeout)


with TempDir() as tmp:
    n = Node(tmp, props={"num.partitions": "1"})
    n.start()
    try:
        t.ok(n.wait_running() is not None, "node is up")
        total = 0
        for idx, codec in enumerate(CODECS):
            topic = "kcat-" + codec
            recs = records(idx)
            # -Z: an empty value is sent as null; empty values get "-" marker handling below
            lines = b"\n".join(k + b"\t" + (v if v is not None else b"")
                               for k, v in recs) + b"\n"
            # -Z sends empty values as null; the zstd run keeps them as 0-byte values
            nullify = codec != "zstd"
            r = kcat(["-P", "-b", n.bootstrap, "-t", topic, "-z", codec, "-K", "\t"] +
                     (["-Z"] if nullify else []) +
                     ["-H", "codec=" + codec, "-X", "linger.ms=20",
                      "-X", "batch.num.messages=10000"], lines)
            t.eq(r.returncode, 0, "kcat produced %d records with %s (%s)"
                 % (len(recs), codec, r.stderr.decode()[-200:].strip()))
            # librdkafka drops a codec it thinks the broker lacks, silently;
            # it also sends a batch the codec cannot shrink uncompressed
            codecs = batch_codecs(n.logdir, topic)
            t.ok(set(codecs) <= {0, idx + 1} and
                 codecs.get(idx + 1, 0) >= 0.9 * sum(codecs.values()),
                 "%s: the records are stored %s-compressed (records by codec id: %s)"
                 % (codec, codec, codecs))
            if nullify:
                expect = [(k, v if v else None) for k, v in recs]
            else:
                expect = [(k, v if v else b"") for k, v in recs]
            r = kcat(["-C", "-b", n.bootstrap, "-t", topic, "-o", "beginning", "-e",
                      "-f", "%k\t%S\t%h\t%s\n"])
            out = r.stdout.split(b"\n")[:-1]
            got = []
            for line in out:
                k, size, hdrs, val = line.split(b"\t", 3)
                got.append((k, None if size == b"-1" else val, hdrs))
            t.eq(len(got), len(expect), "%s: every record consumed back" % codec)
            same = all(g[0] == e[0] and g[1] == e[1] for g, e in zip(got, expect))
            t.ok(same, "%s: keys and values byte-identical, %s kept"
                 % (codec, "nulls" if nullify else "0-byte values"))
            t.ok(all(g[2] == b"codec=" + codec.encode() for g in got),
                 "%s: headers kept" % codec)
            total += len(got) if same else 0
            # from an offset
            r = kcat(["-C", "-b", n.bootstrap, "-t", topic, "-o", "123456", "-c", "1000",
                      "-f", "%o\t%k\n"])
            offs = [l.split(b"\t") for l in r.stdout.split(b"\n")[:-1]]
            t.ok(len(offs) == 1000 and offs[0][0] == b"123456" and
                 all(o[1] == expect[int(o[0])][0] for o in offs),
                 "%s: consuming from offset 123456 starts there" % codec)
        t.eq(total, 4 * PER_CODEC, "1,000,000 records round-tripped")

        r = kcat(["-L", "-b", n.bootstrap])
        txt = r.stdout.decode()
        t.ok("1 brokers:" in txt and ("broker 1 at 127.0.0.1:%d" % n.port) in txt,
             "kcat -L shows the broker")
        t.ok(all(('topic "kcat-%s" with 1 partitions' % c) in txt for c in CODECS),
             "kcat -L shows the topics")
        t.eq(n.crashes(), [], "no worker died of a crash (SIGSEGV, SIGABRT, ...)")
    finally:
        n.kill()

t.done()
