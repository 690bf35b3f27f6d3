"""runnel-configs against a real node: describe, alter, delete, invalid values."""
import os
import re

from rntest import BUILDDIR, Node, Tap, TempDir, run_tool, wait_for

TOPICS = os.path.join(BUILDDIR, "runnel-topics")
CONFIGS = os.path.join(BUILDDIR, "runnel-configs")

t = Tap()


def run(tool, node, *args):
    return run_tool(tool, node.bootstrap, *args)


def entries(out):
    """{name: (value, line)} from a --describe listing."""
    res = {}
    for line in out.splitlines():
        m = re.match(r"  ([\w.-]+)=(\S*) sensitive=", line)
        if m:
            res[m.group(1)] = (m.group(2), line)
    return res


with TempDir() as tmp:
    n = Node(tmp)
    n.start()
    try:
        t.ok(n.wait_running() is not None, "node is running")
        t.ok(wait_for(lambda: run(TOPICS, n, "--create", "--topic", "cfg",
                                  "--partitions", "1", "--if-not-exists").returncode == 0, 20),
             "topic cfg created")
        base = ["--entity-type", "topics", "--entity-name", "cfg"]

        r = run(CONFIGS, n, "--describe", *base)
        t.eq(r.returncode, 0, "--describe a fresh topic")
        t.ok("Dynamic configs for topic cfg are:" in r.stdout, "with its heading")
        t.eq(entries(r.stdout), {}, "and no dynamic overrides")

        r = run(CONFIGS, n, "--describe", "--all", *base)
        e = entries(r.stdout)
        t.ok(r.returncode == 0 and "retention.ms" in e, "--all lists retention.ms")
        default_retention = e.get("retention.ms", ("?",))[0]
        line = e.get("retention.ms", ("", ""))[1]
        t.ok("source=DEFAULT_CONFIG" in line or "source=STATIC_BROKER_CONFIG" in line,
             "retention.ms comes from a default or the static config: %r" % line)

        r = run(CONFIGS, n, "--alter", *base, "--add-config", "retention.ms=1000")
        t.eq(r.returncode, 0, "--alter --add-config retention.ms=1000")
        if r.returncode:
            t.diag(r.stderr)
        r = run(CONFIGS, n, "--describe", *base)
        e = entries(r.stdout)
        t.eq(e.get("retention.ms", (None,))[0], "1000", "--describe shows retention.ms=1000")
        t.ok("source=DYNAMIC_TOPIC_CONFIG" in e.get("retention.ms", ("", ""))[1] and
             "DYNAMIC_TOPIC_CONFIG:retention.ms=1000" in e.get("retention.ms", ("", ""))[1],
             "as a dynamic topic config (source and synonyms)")

        # a second override must keep the first (legacy AlterConfigs merge)
        # runnel's only cleanup.policy is delete: a one-item bracketed list
        r = run(CONFIGS, n, "--alter", *base, "--add-config",
                "cleanup.policy=[delete],max.message.bytes=2000")
        t.eq(r.returncode, 0, "--add-config with two keys, one a bracketed list")
        if r.returncode:
            t.diag(r.stderr)
        e = entries(run(CONFIGS, n, "--describe", *base).stdout)
        t.eq(e.get("retention.ms", (None,))[0], "1000", "retention.ms=1000 kept")
        t.eq(e.get("cleanup.policy", (None,))[0], "delete",
             "cleanup.policy=delete set (brackets dropped)")
        t.eq(e.get("max.message.bytes", (None,))[0], "2000", "max.message.bytes=2000 set")

        r = run(CONFIGS, n, "--alter", *base, "--delete-config", "retention.ms,cleanup.policy")
        t.eq(r.returncode, 0, "--delete-config retention.ms,cleanup.policy")
        e = entries(run(CONFIGS, n, "--describe", *base).stdout)
        t.ok("retention.ms" not in e and "cleanup.policy" not in e,
             "the overrides are gone")
        t.eq(e.get("max.message.bytes", (None,))[0], "2000", "the other one stays")
        e = entries(run(CONFIGS, n, "--describe", "--all", *base).stdout)
        t.eq(e.get("retention.ms", (None,))[0], default_retention,
             "retention.ms is back to its default")

        r = run(CONFIGS, n, "--alter", *base, "--delete-config", "retention.ms")
        t.eq(r.returncode, 1, "deleting an override that is not there exits 1")

        r = run(CONFIGS, n, "--alter", *base, "--add-config", "retention.ms=banana")
        t.eq(r.returncode, 1, "a bad value exits 1")
        t.ok("INVALID_CONFIG" in r.stderr, "with INVALID_CONFIG: %r" % r.stderr.strip())
        r = run(CONFIGS, n, "--alter", *base, "--add-config", "no.such.config=1")
        t.eq(r.returncode, 1, "an unknown config exits 1")

        r = run(CONFIGS, n, "--describe", "--entity-type", "topics", "--entity-name", "nope")
        t.eq(r.returncode, 1, "describing a missing topic exits 1")
        t.ok("UNKNOWN_TOPIC_OR_PART" in r.stderr, "UNKNOWN_TOPIC_OR_PART")

        r = run(CONFIGS, n, "--describe", "--entity-type", "brokers", "--entity-name", "1",
                "--all")
        t.eq(r.returncode, 0, "--describe --all broker 1")
        t.ok("log.retention.ms" in r.stdout or "log.retention.hours" in r.stdout,
             "shows the broker's retention config")

        t.eq(run(CONFIGS, n, "--describe").returncode, 2, "no --entity-type: exit 2")
        t.eq(run(CONFIGS, n, "--alter", *base).returncode, 2,
             "--alter with nothing to change: exit 2")
        t.eq(run(CONFIGS, n, "--alter", *base, "--add-config", "novalue").returncode, 2,
             "--add-config without '=': exit 2")
    finally:
        n.stop()

t.done()
