"""supervisor.user: the supervisor stays root (it binds and supervises), every
worker runs as the service user, the log dir belongs to that user (and the
bootstrap.scram root's runnel-storage format --add-scram left in it, which
the controller then commits), and the broker still serves. Needs root, as CI
has."""
import os
import pwd
import stat
import subprocess

from rntest import Node, Tap, TempDir, wait_for

if os.geteuid() != 0:
    print("1..0 # SKIP needs root to drop privileges")
    raise SystemExit(0)

t = Tap()
nobody = pwd.getpwnam("nobody")


def uid_of(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("Uid:"):
                return int(line.split()[1])
    return None


with TempDir() as tmp:
    os.chmod(tmp, 0o755)  # the service user must reach its log dir
    n = Node(tmp, props={"supervisor.user": "nobody"})
    os.makedirs(n.dir, exist_ok=True)
    os.chmod(n.dir, 0o755)
    # formatted by root with a SCRAM credential for the first start
    storage = os.path.join(os.environ.get("RUNNEL_BUILDDIR", "."),
                           "runnel-storage")
    subprocess.run([storage, "format", "--config", n.config, "--add-scram",
                    "SCRAM-SHA-256=[name=alice,password=alice-secret]"],
                   check=True, capture_output=True, timeout=60)
    n.start()
    try:
        st = n.wait_running()
        t.ok(st is not None, "node with supervisor.user=nobody is up")
        t.eq(uid_of(n.proc.pid), 0, "the supervisor keeps root")
        t.eq(sorted({uid_of(w["pid"]) for w in st["workers"]}), [nobody.pw_uid],
             "every worker runs as the service user")
        t.eq(os.stat(n.logdir).st_uid, nobody.pw_uid, "the log dir belongs to the service user")
        boot = os.stat(os.path.join(n.logdir, "bootstrap.scram"))
        t.ok(boot.st_uid == nobody.pw_uid and
             stat.S_IMODE(boot.st_mode) == 0o600,
             "bootstrap.scram, written by root, is handed to the service "
             "user, still 0600")
        t.ok(wait_for(lambda: "SCRAM credential SCRAM-SHA-256 for user "
                      "alice from bootstrap.scram" in n.logtext()),
             "and the controller, running as that user, committed it")
        s = os.stat(n.sock)
        t.ok(stat.S_IMODE(s.st_mode) == 0o660 and s.st_gid == nobody.pw_gid,
             "the control socket is 0660 and group-owned by the service user's group")
        r = subprocess.run(["kcat", "-P", "-b", n.bootstrap, "-t", "priv"], input=b"as-nobody\n",
                           capture_output=True, timeout=30)
        r = subprocess.run(["kcat", "-C", "-b", n.bootstrap, "-t", "priv", "-e", "-o", "beginning"],
                           capture_output=True, timeout=30)
        t.ok(b"as-nobody" in r.stdout, "and the broker serves produce and fetch")
        t.eq(n.stop(), 0, "and stops cleanly")
    finally:
        n.kill()

t.done()
