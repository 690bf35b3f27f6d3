"""runnel-acls against a real node: kafka-acls' flags and output.

- Without an authorizer --list fails naming SECURITY_DISABLED.
- --add (several operations and principals, a prefixed pattern, a deny
  with a host), adding again says "already exists".
- --list: everything, one topic, --resource-pattern-type match (the
  bindings that apply to a name), --principal.
- --remove --force of one entry and of a whole resource; without
  --force it asks and only "y" removes.
- --producer [--idempotent] and --consumer add Kafka's bindings.
- A DENY of WRITE added by the tool stops a confluent-kafka producer
  (TOPIC_AUTHORIZATION_FAILED); --remove opens the topic again.
- The broker's refusals: INVALID_REQUEST with its message,
  CLUSTER_AUTHORIZATION_FAILED; bad usage exits 2 with a message."""
import os
import re
import subprocess


from rnclients import produce_one
from rntest import BUILDDIR, Node, Tap, TempDir, run_tool, wait_for

ACLS = os.path.join(BUILDDIR, "runnel-acls")
AUTHZ = {"authorizer.class.name":
         "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
         "allow.everyone.if.no.acl.found": "true", "num.partitions": "1"}

t = Tap()


def run(node, *args, stdin=None):
    if stdin is None:
        return run_tool(ACLS, node.bootstrap, *args)
    return subprocess.run([ACLS, "--bootstrap-server", node.bootstrap,
                           "--timeout-ms", "10000"] + list(args),
                          input=stdin, capture_output=True, text=True,
                          timeout=60)


RES = re.compile(r"^(?:Current|Adding) ACLs for resource `ResourcePattern\("
                 r"resourceType=(\w+), name=(.*), patternType=(\w+)\)`: ?$")
ENTRY = re.compile(r"^ ?\t\(principal=(.*), host=(.*), operation=(\w+), "
                   r"permissionType=(\w+)\)$")


def parse(out):
    """{(type, name, pattern): {(principal, host, op, perm)}} from a listing."""
    res, cur = {}, None
    for line in out.splitlines():
        m = RES.match(line)
        if m:
            cur = res.setdefault(m.groups(), set())
            continue
        m = ENTRY.match(line)
        if m and cur is not None:
            cur.add(m.groups())
    return res


def listing(node, *args):
    r = run(node, "--list", *args)
    if r.returncode:
        t.diag("--list %s: %s" % (" ".join(args), r.stderr.strip()))
    return parse(r.stdout)


def topic(name, pattern="LITERAL"):
    return ("TOPIC", name, pattern)


def produce(node, name):
    """None when acknowledged, else the error's name."""
    return produce_one({"bootstrap.servers": node.bootstrap}, name)


def ok(r, name):
    t.eq(r.returncode, 0, name)
    if r.returncode:
        t.diag(r.stderr.strip())


def usage_error(node, name, *args):
    r = run(node, *args)
    t.eq(r.returncode, 2, "%s: exit 2" % name)
    t.ok(r.stderr.startswith("runnel-acls: "), "with a message: %r" %
         r.stderr.strip().splitlines()[0] if r.stderr.strip() else "")
    return r


ANON = "User:ANONYMOUS"

with TempDir() as tmp:
    n = Node(tmp, props={"num.partitions": "1"})
    n.start()
    try:
        t.ok(n.wait_running() is not None, "a node without an authorizer")
        r = run(n, "--list")
        t.eq(r.returncode, 1, "--list without an authorizer exits 1")
        t.ok("SECURITY_DISABLED" in r.stderr, "naming SECURITY_DISABLED: %r" %
             r.stderr.strip())
    finally:
        n.stop()

    n.props.update(AUTHZ)
    n.write_config()
    n.start()
    try:
        t.ok(n.wait_running() is not None, "the node with the built-in authorizer")
        r = run(n, "-h")
        t.ok(r.returncode == 0 and "--resource-pattern-type" in r.stdout and
             "--producer" in r.stdout, "-h prints the usage")

        t.eq(listing(n), {}, "no bindings at first")

        # several operations and principals on one literal topic
        r = run(n, "--add", "--allow-principal", "User:alice", "--allow-principal",
                "User:bob", "--operation", "Read", "--operation", "describe",
                "--topic", "orders")
        ok(r, "--add two principals, two operations")
        want_orders = {(p, "*", op, "ALLOW") for p in ("User:alice", "User:bob")
                       for op in ("READ", "DESCRIBE")}
        t.ok(r.stdout.startswith(
            "Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, "
            "name=orders, patternType=LITERAL)`: \n \t(principal=User:"),
            "kafka-acls' heading and first entry line: %r" % r.stdout[:140])
        t.eq(parse(r.stdout), {topic("orders"): want_orders},
             "the four entries announced (host * by default)")
        t.ok(r.stdout.endswith(")\n\n"), "the block ends with a blank line")

        r = run(n, "--add", "--allow-principal", "User:alice", "--operation", "READ",
                "--topic", "orders")
        ok(r, "adding an existing binding again")
        t.ok("Acl (pattern=ResourcePattern(resourceType=TOPIC, name=orders, "
             "patternType=LITERAL), entry=(principal=User:alice, host=*, "
             "operation=READ, permissionType=ALLOW)) already exists." in r.stdout and
             "Adding" not in r.stdout, "says it already exists: %r" % r.stdout)

        ok(run(n, "--add", "--allow-principal", "User:alice", "--operation", "Write",
               "--topic", "ord", "--resource-pattern-type", "prefixed"),
           "--add a prefixed pattern")
        ok(run(n, "--add", "--deny-principal", ANON, "--deny-host", "10.9.9.9",
               "--operation", "Read", "--group", "g1"),
           "--add a DENY from one host on a group")

        everything = listing(n)
        t.eq(everything, {
            topic("orders"): want_orders,
            topic("ord", "PREFIXED"): {("User:alice", "*", "WRITE", "ALLOW")},
            ("GROUP", "g1", "LITERAL"): {(ANON, "10.9.9.9", "READ", "DENY")},
        }, "--list shows every binding")
        r = run(n, "--list")
        t.ok("Current ACLs for resource `ResourcePattern(resourceType=GROUP, name=g1, "
             "patternType=LITERAL)`:\n\t(principal=User:ANONYMOUS, host=10.9.9.9, "
             "operation=READ, permissionType=DENY)\n\n" in r.stdout,
             "in kafka-acls' shape")

        t.eq(listing(n, "--topic", "orders"), {topic("orders"): want_orders},
             "--list --topic orders: its literal bindings only")
        t.eq(listing(n, "--topic", "orders", "--resource-pattern-type", "match"),
             {topic("orders"): want_orders,
              topic("ord", "PREFIXED"): {("User:alice", "*", "WRITE", "ALLOW")}},
             "--resource-pattern-type match: the bindings that apply to orders")
        t.eq(listing(n, "--topic", "ord", "--resource-pattern-type", "any"),
             {topic("ord", "PREFIXED"): {("User:alice", "*", "WRITE", "ALLOW")}},
             "--resource-pattern-type any: every pattern type named ord")
        r = run(n, "--list", "--principal", "User:bob")
        t.ok(r.stdout.startswith("ACLs for principal `User:bob`\n"),
             "--principal: its heading")
        t.eq(parse(r.stdout), {topic("orders"): {("User:bob", "*", "READ", "ALLOW"),
                                                 ("User:bob", "*", "DESCRIBE", "ALLOW")}},
             "--principal User:bob: only bob's entries")

        # remove one entry, then a whole resource
        ok(run(n, "--remove", "--force", "--allow-principal", "User:bob",
               "--operation", "Read", "--topic", "orders"),
           "--remove --force one entry")
        t.eq(listing(n, "--topic", "orders"),
             {topic("orders"): want_orders - {("User:bob", "*", "READ", "ALLOW")}},
             "only that entry is gone")
        r = run(n, "--remove", "--topic", "orders", stdin="n\n")
        t.ok(r.returncode == 0 and "Are you sure you want to delete all ACLs for "
             "resource filter `ResourcePattern(resourceType=TOPIC, name=orders, "
             "patternType=LITERAL)`? (y/n)" in r.stdout,
             "without --force it asks: %r" % r.stdout.strip())
        t.eq(len(listing(n, "--topic", "orders").get(topic("orders"), ())), 3,
             "answered n: nothing removed")
        r = run(n, "--remove", "--topic", "orders", stdin="y\n")
        ok(r, "answered y")
        t.eq(listing(n, "--topic", "orders"), {}, "the topic's bindings are gone")
        # the pattern type applies to every resource given: any = each name
        # exactly, whatever its pattern type
        ok(run(n, "--remove", "--force", "--topic", "ord", "--resource-pattern-type",
               "any", "--group", "g1"), "--remove --force two resources (any)")
        t.eq(listing(n), {}, "nothing left")

        # a binding added by the tool takes effect on the data path
        t.eq(produce(n, "blocked"), None, "producing to blocked works at first")
        ok(run(n, "--add", "--deny-principal", ANON, "--operation", "Write",
               "--topic", "blocked"), "--add DENY WRITE on blocked for User:ANONYMOUS")
        t.ok(wait_for(lambda: produce(n, "blocked") == "TOPIC_AUTHORIZATION_FAILED", 10,
                      0.5), "the producer is refused: TOPIC_AUTHORIZATION_FAILED")
        ok(run(n, "--remove", "--force", "--topic", "blocked"), "--remove the DENY")
        t.ok(wait_for(lambda: produce(n, "blocked") is None, 10, 0.5),
             "producing works again")

        # the conveniences; the tool itself is User:ANONYMOUS and needs the
        # cluster once a binding names it
        ok(run(n, "--add", "--allow-principal", ANON, "--cluster"),
           "--add ALL on the cluster for User:ANONYMOUS")
        r = run(n, "--add", "--allow-principal", "User:p", "--producer", "--topic", "pt",
                "--idempotent")
        ok(r, "--producer --idempotent")
        ok(run(n, "--add", "--allow-principal", "User:c", "--consumer", "--topic", "ct",
               "--group", "cg"), "--consumer")
        cl = ("CLUSTER", "kafka-cluster", "LITERAL")
        t.eq(listing(n), {
            cl: {(ANON, "*", "ALL", "ALLOW"), ("User:p", "*", "IDEMPOTENT_WRITE", "ALLOW")},
            topic("pt"): {("User:p", "*", op, "ALLOW") for op in
                          ("WRITE", "DESCRIBE", "CREATE")},
            topic("ct"): {("User:c", "*", op, "ALLOW") for op in ("READ", "DESCRIBE")},
            ("GROUP", "cg", "LITERAL"): {("User:c", "*", "READ", "ALLOW")},
        }, "--list shows Kafka's producer and consumer bindings")

        # the broker's refusals
        r = run(n, "--add", "--allow-principal", "User:x", "--topic", "")
        t.eq(r.returncode, 1, "an empty topic name exits 1")
        t.ok("INVALID_REQUEST" in r.stderr and "empty" in r.stderr,
             "INVALID_REQUEST with the broker's message: %r" % r.stderr.strip())
        ok(run(n, "--add", "--deny-principal", ANON, "--operation", "Alter", "--cluster"),
           "--add DENY ALTER on the cluster for User:ANONYMOUS")
        r = run(n, "--add", "--allow-principal", "User:x", "--topic", "late")
        t.eq(r.returncode, 1, "then adding exits 1")
        t.ok("CLUSTER_AUTHORIZATION_FAILED" in r.stderr,
             "naming CLUSTER_AUTHORIZATION_FAILED: %r" % r.stderr.strip())
        t.ok(topic("late") not in listing(n), "and adds nothing")

        # bad usage
        usage_error(n, "no action", "--topic", "x")
        usage_error(n, "two actions", "--add", "--list", "--topic", "x")
        r = usage_error(n, "an unknown operation", "--add", "--allow-principal",
                        "User:a", "--operation", "Fly", "--topic", "x")
        t.ok("Fly" in r.stderr, "naming it")
        r = usage_error(n, "--add without a principal", "--add", "--operation", "Read",
                        "--topic", "x")
        t.ok("--allow-principal, --deny-principal" in r.stderr, "saying which")
        r = usage_error(n, "--consumer without --group", "--add", "--allow-principal",
                        "User:a", "--consumer", "--topic", "x")
        t.ok("--group" in r.stderr, "saying --group")
        usage_error(n, "--add without a resource", "--add", "--allow-principal", "User:a")
        usage_error(n, "--add with pattern type match", "--add", "--allow-principal",
                    "User:a", "--topic", "x", "--resource-pattern-type", "match")
        r = usage_error(n, "an operation the resource type lacks", "--add",
                        "--allow-principal", "User:a", "--operation", "IdempotentWrite",
                        "--topic", "x")
        t.ok("ResourceType TOPIC only supports operations" in r.stderr, "Kafka's message")
        usage_error(n, "a principal without a type", "--add", "--allow-principal",
                    "alice", "--topic", "x")
        usage_error(n, "--principal without --list", "--remove", "--principal",
                    "User:a", "--topic", "x")
        usage_error(n, "--producer with --operation", "--add", "--allow-principal",
                    "User:a", "--producer", "--topic", "x", "--operation", "Read")
        usage_error(n, "--transactional-id (librdkafka 2.0.2 cannot name it)", "--list",
                    "--transactional-id", "tx")
    finally:
        n.stop()

t.done()
