"""runnel-storage format --add-scram: SCRAM credentials for a cluster's
first start, as Kafka's storage tool gives them. A node formatted with
alice (SCRAM-SHA-256, a password), bob (SCRAM-SHA-512, iterations=8192)
and carol (SCRAM-SHA-256 from salt= and saltedpassword=) starts with no
other setup, and confluent-kafka logs in as each on a SASL_PLAINTEXT
listener and produces and consumes; a wrong password is refused. The
file the tool leaves holds no password and only its owner reads it.
Then alice's password is changed and bob's credential deleted with
runnel-configs; after a restart the changes stand (the file is not read
again: no duplicate, nothing put back), and formatting the started node
with --add-scram is refused."""
import base64
import hashlib
import os
import stat
import subprocess

from confluent_kafka import KafkaError

from rnclients import add_sasl_plaintext, auth_errors, roundtrip
from rntest import Node, Tap, TempDir, run_tool

t = Tap()
BUILD = os.environ.get("RUNNEL_BUILDDIR", ".")
STORAGE = os.path.join(BUILD, "runnel-storage")
CONFIGS = os.path.join(BUILD, "runnel-configs")
ALICE_PW, ALICE_PW2 = "alice-secret", "alice-new-secret"
BOB_PW, CAROL_PW = "bob-secret", "carol-secret"


def conf(n, mech, user, pw):
    return {"bootstrap.servers": "127.0.0.1:%d" % n.sasl_port,
            "security.protocol": "SASL_PLAINTEXT", "sasl.mechanisms": mech,
            "sasl.username": user, "sasl.password": pw}


def refused(n, mech, user, pw):
    return any(e.code() == KafkaError._AUTHENTICATION
               for e in auth_errors(conf(n, mech, user, pw), "never"))


def boot_lines(n):
    with open(n.logfile, errors="replace") as f:
        return sum("(runnel-storage format --add-scram)" in line
                   for line in f)


with TempDir() as tmp:
    n = Node(tmp)
    add_sasl_plaintext(n, ("SCRAM-SHA-256", "SCRAM-SHA-512"))
    n.props.update({
        "connection.failed.authentication.delay.ms": "50",
        "num.partitions": "1",
    })
    n.write_config()
    salt = b"carol-salt-0123"
    salted = hashlib.pbkdf2_hmac("sha256", CAROL_PW.encode(), salt, 4096)
    r = subprocess.run([STORAGE, "format", "--config", n.config,
                        "--add-scram",
                        "SCRAM-SHA-256=[name=alice,password=%s]" % ALICE_PW,
                        "--add-scram", "SCRAM-SHA-512=[name=bob,"
                        "iterations=8192,password=%s]" % BOB_PW,
                        "--add-scram", 'SCRAM-SHA-256=[name=carol,salt="%s",'
                        'saltedpassword="%s"]'
                        % (base64.b64encode(salt).decode(),
                           base64.b64encode(salted).decode())],
                       capture_output=True, text=True, timeout=60)
    t.ok(r.returncode == 0 and r.stdout.count("SCRAM credential") == 3,
         "format with three --add-scram: %s%s" % (r.stdout, r.stderr))
    boot = os.path.join(n.logdir, "bootstrap.scram")
    with open(boot) as f:
        text = f.read()
    t.ok(stat.S_IMODE(os.stat(boot).st_mode) == 0o600 and
         all(pw not in text for pw in (ALICE_PW, BOB_PW, CAROL_PW)),
         "bootstrap.scram is 0600 and holds no password")
    r = subprocess.run([STORAGE, "format", "--config", n.config,
                        "--ignore-formatted", "--add-scram",
                        "SCRAM-SHA-256=[name=x,iterations=100,password=y]"],
                       capture_output=True, text=True, timeout=60)
    t.ok(r.returncode != 0 and "4096" in r.stderr,
         "too few iterations refused: %s" % r.stderr.strip())

    n.start()
    try:
        t.ok(n.wait_running() is not None, "the formatted node starts")
        t.ok(roundtrip(conf(n, "SCRAM-SHA-256", "alice", ALICE_PW), "t-a"),
             "alice logs in with SCRAM-SHA-256, produces and consumes")
        t.ok(roundtrip(conf(n, "SCRAM-SHA-512", "bob", BOB_PW), "t-b"),
             "bob logs in with SCRAM-SHA-512, produces and consumes")
        t.ok(roundtrip(conf(n, "SCRAM-SHA-256", "carol", CAROL_PW), "t-c"),
             "carol (salt and saltedpassword) logs in and round-trips")
        t.ok(refused(n, "SCRAM-SHA-256", "alice", "wrong-password"),
             "a wrong password is refused")
        t.ok(refused(n, "SCRAM-SHA-256", "bob", BOB_PW),
             "bob has no SCRAM-SHA-256 credential: refused")
        t.eq(boot_lines(n), 3, "the controller took three credentials "
             "from bootstrap.scram")

        r = run_tool(CONFIGS, n.bootstrap, "--alter", "--entity-type",
                     "users", "--entity-name", "alice", "--add-config",
                     "SCRAM-SHA-256=[iterations=8192,password=%s]" % ALICE_PW2)
        t.ok(r.returncode == 0, "alice's password changed: %s" % r.stderr)
        r = run_tool(CONFIGS, n.bootstrap, "--alter", "--entity-type",
                     "users", "--entity-name", "bob", "--delete-config",
                     "SCRAM-SHA-512")
        t.ok(r.returncode == 0, "bob's credential deleted: %s" % r.stderr)
        n.stop()
        n.start()
        t.ok(n.wait_running() is not None, "restarted")
        t.eq(boot_lines(n), 3, "the restart read no bootstrap credential")
        r = run_tool(CONFIGS, n.bootstrap, "--describe", "--entity-type",
                     "users")
        out = r.stdout
        t.ok("'alice' are SCRAM-SHA-256=iterations=8192" in out and
             "'carol' are SCRAM-SHA-256=iterations=4096" in out and
             "'bob'" not in out and out.count("'alice'") == 1,
             "describe: alice as changed, carol, no bob: %r" % out)
        t.ok(roundtrip(conf(n, "SCRAM-SHA-256", "alice", ALICE_PW2), "t-a2"),
             "alice logs in with her new password")
        t.ok(refused(n, "SCRAM-SHA-256", "alice", ALICE_PW),
             "her bootstrap password is not put back")
        t.ok(refused(n, "SCRAM-SHA-512", "bob", BOB_PW),
             "bob's deleted credential is not put back")
    finally:
        n.stop()
    r = subprocess.run([STORAGE, "format", "--config", n.config,
                        "--ignore-formatted", "--add-scram",
                        "SCRAM-SHA-256=[name=dave,password=x]"],
                       capture_output=True, text=True, timeout=60)
    t.ok(r.returncode != 0 and "formatted" in r.stderr,
         "--add-scram on a started node is refused: %s" % r.stderr.strip())
    t.eq(n.crashes(), [], "no worker crashed")
t.done()
