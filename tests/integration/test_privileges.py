"""supervisor.user: the supervisor stays root (it binds and supervises), every
worker runs as the service user, the log dir belongs to that user, and the broker
still serves. Needs root, as CI has."""
import os
import pwd
import stat
import subprocess

from rntest import Node, Tap, TempDir

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
    n.start()
    try:
        st = n.wait_running()
        t.ok(st is not None, "node with supervisor.user=nobody is up")
        t.eq(uid_of(n.proc.pid), 0, "the supervisor keeps root")
        t.eq(sorted({uid_of(w["pid"]) for w in st["workers"]}), [nobody.pw_uid],
             "every worker runs as the service user")
        t.eq(os.stat(n.logdir).st_uid, nobody.pw_uid, "the log dir belongs to the service user")
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
