"""runnel-storage: random-uuid, format (with and without --cluster-id), info.

Needs no running broker: it works on a node's config and log dirs.
"""
import base64
import fcntl
import os
import re
import subprocess

from rntest import BUILDDIR, Node, Tap, TempDir

STORAGE = os.path.join(BUILDDIR, "runnel-storage")

t = Tap()


def storage(*args):
    return subprocess.run([STORAGE] + list(args), capture_output=True,
                          text=True, timeout=30)


def props(path):
    """meta.properties as a dict (comments skipped)."""
    out = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line and not line.startswith(("#", "!")):
                k, _, v = line.partition("=")
                out[k] = v
    return out


def is_kafka_uuid(s):
    if not re.fullmatch(r"[A-Za-z0-9_-]{22}", s):
        return False
    return len(base64.urlsafe_b64decode(s + "==")) == 16


# random-uuid
a, b = storage("random-uuid"), storage("random-uuid")
t.eq(a.returncode, 0, "random-uuid exits 0")
ua, ub = a.stdout.strip(), b.stdout.strip()
t.ok(is_kafka_uuid(ua), "random-uuid prints 22 base64url chars of 16 bytes: %r" % ua)
t.ok(ua != ub, "two random-uuids differ")
t.ok(not ua.startswith("-") and not ub.startswith("-"),
     "a random uuid never starts with '-' (it must pass as a flag value)")
t.eq(storage("random-uuid", "--cluster-id", "x").returncode, 2,
     "random-uuid takes no options: usage error, exit 2")

with TempDir() as tmp:
    # two log dirs plus a separate metadata log dir, as a node would have
    n = Node(tmp, props={})
    d1, d2, meta = (os.path.join(n.dir, x) for x in ("d1", "d2", "meta"))
    n.props["log.dirs"] = "%s,%s" % (d1, d2)
    n.props["metadata.log.dir"] = meta
    n.write_config()
    dirs = [d1, d2, meta]

    r = storage("format", "--config", n.config)
    t.eq(r.returncode, 0, "format without --cluster-id succeeds (KIP-1262)")
    if r.returncode:
        t.diag(r.stderr)
    ids = set()
    for d in dirs:
        path = os.path.join(d, "meta.properties")
        ok = os.path.exists(path)
        t.ok(ok, "%s has meta.properties" % os.path.basename(d))
        if not ok:
            continue
        p = props(path)
        t.eq(p.get("version"), "2", "version=2 in %s" % os.path.basename(d))
        t.eq(p.get("node.id"), "1", "node.id from the config")
        t.ok("cluster.id" not in p, "no cluster.id key when none was given")
        t.ok(is_kafka_uuid(p.get("directory.id", "")), "directory.id is a Kafka Uuid")
        ids.add(p.get("directory.id"))
        t.eq(set(p) - {"version", "node.id", "directory.id"}, set(),
             "no other keys")
    t.eq(len(ids), 3, "every dir has its own directory.id")

    # formatted dirs are never overwritten without --ignore-formatted
    before = open(os.path.join(d1, "meta.properties")).read()
    r = storage("format", "--config", n.config, "--cluster-id", ua)
    t.eq(r.returncode, 1, "format again is refused with exit 1")
    t.ok("already formatted" in r.stderr and "--ignore-formatted" in r.stderr,
         "the refusal says the dir is formatted and names --ignore-formatted: %r"
         % r.stderr.strip())
    t.eq(open(os.path.join(d1, "meta.properties")).read(), before,
         "the refused format left meta.properties untouched")

    r = storage("format", "--config", n.config, "--ignore-formatted")
    t.eq(r.returncode, 0, "--ignore-formatted with every dir formatted: exit 0")
    t.eq(open(os.path.join(d1, "meta.properties")).read(), before,
         "--ignore-formatted leaves formatted dirs as they are")

    # one dir lost: --ignore-formatted formats only that one
    os.unlink(os.path.join(d2, "meta.properties"))
    r = storage("format", "-c", n.config, "-g")
    t.eq(r.returncode, 0, "--ignore-formatted formats the dir that lost its file")
    t.ok(os.path.exists(os.path.join(d2, "meta.properties")) and
         d2 in r.stdout and d1 not in r.stdout,
         "only the unformatted dir was written")

    # info
    r = storage("info", "--config", n.config)
    t.eq(r.returncode, 0, "info exits 0 on a consistent node")
    for d in dirs:
        t.ok(d in r.stdout, "info names %s" % os.path.basename(d))
    t.ok(r.stdout.count("formatted") >= 3 and "node.id=1" in r.stdout and
         "directory.id=" in r.stdout, "info shows each dir's properties")

    # --cluster-id on fresh dirs
    for d in dirs:
        os.unlink(os.path.join(d, "meta.properties"))
    r = storage("format", "--config", n.config, "--cluster-id", "not-a-uuid")
    t.eq(r.returncode, 1, "a cluster id that is not a Kafka Uuid is refused")
    t.ok("Uuid" in r.stderr and not os.path.exists(os.path.join(d1, "meta.properties")),
         "saying why, and writing nothing")
    r = storage("format", "--config", n.config, "--cluster-id", ub)
    t.eq(r.returncode, 0, "format --cluster-id succeeds")
    p = props(os.path.join(d1, "meta.properties"))
    t.eq((p.get("version"), p.get("cluster.id"), p.get("node.id")), ("2", ub, "1"),
         "version, cluster.id and node.id written")
    t.ok(is_kafka_uuid(p.get("directory.id", "")), "directory.id written")
    r = storage("info", "--config", n.config)
    t.ok(("cluster.id=%s" % ub) in r.stdout, "info shows the cluster id")

    # a different cluster id on a formatted dir is an error, even with -g
    os.unlink(os.path.join(d2, "meta.properties"))
    r = storage("format", "--config", n.config, "--cluster-id", ua, "-g")
    t.eq(r.returncode, 1, "format with another cluster id than a formatted dir's fails")
    t.ok(not os.path.exists(os.path.join(d2, "meta.properties")),
         "and writes nothing")

    # info sees a node.id that does not match the config
    with open(os.path.join(meta, "meta.properties"), "w") as f:
        f.write("version=2\nnode.id=7\ncluster.id=%s\n" % ub)
    r = storage("info", "--config", n.config)
    t.eq(r.returncode, 1, "info exits 1 when a dir's node.id differs from the config")
    t.ok("problem" in r.stdout, "and says what the problem is")

    # a running node holds its dirs' locks: format must not touch them
    os.unlink(os.path.join(meta, "meta.properties"))
    fd = os.open(os.path.join(meta, ".lock"), os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    r = storage("format", "--config", n.config, "-g")
    t.eq(r.returncode, 1, "format refuses a dir locked by a running node")
    t.ok("in use" in r.stderr, "and says it is in use")
    os.close(fd)

    # usage errors
    t.eq(storage("format").returncode, 2, "format without --config: exit 2")
    t.eq(storage("bogus").returncode, 2, "unknown command: exit 2")
    missing = storage("format", "--config", os.path.join(tmp, "nope.properties"))
    t.eq(missing.returncode, 1, "a missing config file: exit 1")
    t.ok("nope.properties" in missing.stderr, "naming the file")

t.done()
