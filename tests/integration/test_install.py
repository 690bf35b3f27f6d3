"""The installation as users get it: `make install DESTDIR=...` of this
build, then the installed unit, sysusers.d and tmpfiles.d files checked
by systemd's own tools, and the installed binary reading the installed
example configuration."""
import os
import pwd
import re
import shutil
import subprocess

from rntest import BUILDDIR, Tap, TempDir

t = Tap()


def run(args, **kw):
    env = dict(os.environ)
    # not a part of the running make check's job server
    env.pop("MAKEFLAGS", None)
    env.pop("MFLAGS", None)
    return subprocess.run(args, capture_output=True, text=True, timeout=300,
                          env=env, **kw)


def installed(root, suffix):
    for d, _dirs, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            if p.endswith(suffix):
                return p
    return None


with TempDir() as tmp:
    dest = os.path.join(tmp, "dest")
    r = run(["make", "-C", BUILDDIR, "install", "DESTDIR=" + dest])
    t.ok(r.returncode == 0, "make install DESTDIR=... succeeds (%s)" % r.stderr[-300:])

    unit = installed(dest, "/lib/systemd/system/runneld.service")
    sbin = installed(dest, "/sbin/runneld")
    t.ok(unit is not None and sbin is not None, "the unit and runneld are installed (%s, %s)"
         % (unit, sbin))
    text = open(unit).read() if unit else ""
    m = re.search(r"^ExecStart=(\S+) --config (\S+)$", text, re.M)
    want_bin = sbin[len(dest):] if sbin else None
    t.ok(m is not None and m.group(1) == want_bin and "@" not in text,
         "ExecStart names the installed runneld (%s), no @name@ left unsubstituted"
         % (m.group(0) if m else text[:200]))

    ctl = installed(dest, "/bin/runnelctl")
    m = re.search(r"^ExecReload=(\S+) -s \S+ upgrade$", text, re.M)
    t.ok(m is not None and ctl is not None and m.group(1) == ctl[len(dest):],
         "ExecReload runs the installed runnelctl upgrade (%s)"
         % (m.group(0) if m else "no ExecReload"))

    # systemd-analyze checks the commands exist: point them into DESTDIR
    probe = os.path.join(tmp, "runneld.service")
    with open(probe, "w") as f:
        f.write(text.replace("ExecStart=", "ExecStart=" + dest, 1)
                .replace("ExecReload=", "ExecReload=" + dest, 1))
    r = run(["systemd-analyze", "verify", "--man=no", probe])
    t.ok(r.returncode == 0, "systemd-analyze verify passes on the installed unit (%s)"
         % (r.stdout + r.stderr).strip()[-300:])
    bad = os.path.join(tmp, "unsubstituted.service")
    with open(bad, "w") as f:
        f.write(re.sub(r"^ExecStart=.*$", "ExecStart=@sbindir@/runneld", text, flags=re.M))
    r = run(["systemd-analyze", "verify", "--man=no", bad])
    t.ok(r.returncode != 0, "and it refuses a unit whose ExecStart still reads @sbindir@")

    # sysusers.d and tmpfiles.d applied to a scratch root
    root = os.path.join(tmp, "root")
    os.makedirs(os.path.join(root, "etc"))
    sysusers = installed(dest, "/lib/sysusers.d/runnel.conf")
    tmpfiles = installed(dest, "/lib/tmpfiles.d/runnel.conf")
    r = run(["systemd-sysusers", "--root=" + root, sysusers or "/nonexistent"])
    passwd = open(os.path.join(root, "etc", "passwd")).read() \
        if os.path.exists(os.path.join(root, "etc", "passwd")) else ""
    line = [l for l in passwd.splitlines() if l.startswith("runnel:")]
    t.ok(r.returncode == 0 and line, "sysusers.d creates the runnel user (%s)"
         % (line or r.stderr.strip()))
    uid = int(line[0].split(":")[2]) if line else -1
    r = run(["systemd-tmpfiles", "--root=" + root, "--create", tmpfiles or "/nonexistent"])
    st = None
    try:
        st = os.stat(os.path.join(root, "var", "lib", "runnel"))
    except OSError:
        pass
    t.ok(r.returncode == 0 and st is not None and st.st_uid == uid and
         (st.st_mode & 0o777) == 0o750,
         "tmpfiles.d creates /var/lib/runnel, 0750, owned by runnel (%s)" % r.stderr.strip())

    # the installed binary reads the installed example configuration
    example = installed(dest, "/runnel/server.properties.example")
    r = run([sbin or "/nonexistent", "--check-config", "--config", example or "/nonexistent"])
    t.ok(r.returncode == 0 and "configuration ok" in (r.stdout + r.stderr),
         "the installed runneld accepts the installed example config (%s)"
         % (r.stdout + r.stderr).strip()[-200:])
    shutil.rmtree(dest, ignore_errors=True)
t.done()
