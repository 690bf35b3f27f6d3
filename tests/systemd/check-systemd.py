#!/usr/bin/python3
"""make check-systemd: runnel installed as users get it and run under a
real systemd, PID 1 of its own PID, mount, UTS, IPC and cgroup namespaces
over a Debian 12 minbase root (systemd-nspawn needs a host booted with
systemd; this needs only root). The network namespace is the host's, so
clients here reach the unit's listener on 127.0.0.1.

  1. a minbase root (debootstrap, cached under RUNNEL_SYSTEMD_CACHE,
     /var/tmp/runnel-systemd-root, keyed by a hash of the package list)
     copied to a scratch root; `make install DESTDIR=ROOT prefix=/usr
     sysconfdir=/etc` of this build into it; sysusers.d and tmpfiles.d
     applied by the root's own systemd-sysusers and systemd-tmpfiles
  2. systemd booted as PID 1; is-system-running says running or degraded
  3. systemctl enable --now runneld: active/running (Type=notify, so
     READY=1 arrived), the STATUS= line; records produced and read back
     from here; journalctl -o json has runneld's COMPONENT= and WORKER=;
     journalctl TOPIC=, BROKER= and GROUP= find the lines about the topic
     made here (its partition's with PARTITION=), node 1 (its
     registration) and a group a consumer here joined (its rebalance)
  4. systemctl reload runneld (runnelctl upgrade), three times in a row,
     each timed and checked: a new MainPID, still active, no refused TCP
     connect in a loop of them, and every record an idempotent producer
     had acked across it read back once and in order; then all of them
  5. systemctl stop: within TimeoutStopSec, the controlled shutdown
     logged; systemctl start works again
  6. the watchdog: the supervisor SIGSTOPped, systemd kills it after
     WatchdogSec and restarts it (RUNNEL_SYSTEMD_WATCHDOG=0 leaves it out)

TAP on stdout; `1..0 # SKIP reason` where the namespaces cannot be made.
Everything (the namespace's PID 1 and so every process in it, its mounts,
its cgroup, the scratch root) goes on exit, failed or not.
"""
import ctypes
import fcntl
import hashlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time

SRCDIR = os.environ.get("RUNNEL_SRCDIR") or \
    os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILDDIR = os.environ.get("RUNNEL_BUILDDIR") or os.path.join(SRCDIR, "build")
CACHE = os.environ.get("RUNNEL_SYSTEMD_CACHE", "/var/tmp/runnel-systemd-root")
MIRROR = os.environ.get("RUNNEL_DEBIAN_MIRROR", "http://deb.debian.org/debian")
SUITE = "bookworm"
WATCHDOG = os.environ.get("RUNNEL_SYSTEMD_WATCHDOG", "1") != "0"
# systemd as PID 1, and what runneld and runnelctl link (ldd build/runneld:
# libbsd, msgpack-c, libsystemd, raft, libuv, the codecs, pcre2-8; the Kafka tools
# also link librdkafka and jansson)
PACKAGES = sorted([
    "systemd", "systemd-sysv", "dbus",
    "libbsd0", "libmsgpackc2", "libsystemd0", "libraft2", "libuv1",
    "zlib1g", "libsnappy1v5", "liblz4-1", "libzstd1",
    "libjansson4", "librdkafka1", "libpcre2-8-0",
])
TOPIC = "systemd-check"
GROUP = "systemd-check-group"
NODE_ID = 1  # contrib/server.properties
RELOADS = 3  # the "three times each", under systemd too


class Tap:
    def __init__(self):
        self.n = 0
        self.failed = 0

    def ok(self, cond, desc):
        self.n += 1
        if not cond:
            self.failed += 1
        print("%s %d - %s" % ("ok" if cond else "not ok", self.n, desc.replace("\n", " ")),
              flush=True)
        return cond

    def diag(self, msg):
        for line in str(msg).splitlines() or [""]:
            print("# " + line, flush=True)


t = Tap()
phases = []


class Phase:
    def __init__(self, name):
        self.name = name

    def __enter__(self):
        self.t0 = time.monotonic()
        return self

    def __exit__(self, *exc):
        d = time.monotonic() - self.t0
        phases.append((self.name, d))
        t.diag("phase %s: %.1f s" % (self.name, d))
        return False


class Skip(Exception):
    pass


def skip(why):
    raise Skip(why)


def run(args, timeout=120, **kw):
    env = dict(os.environ)
    env.pop("MAKEFLAGS", None)
    env.pop("MFLAGS", None)
    env.setdefault("LC_ALL", "C")
    try:
        return subprocess.run(args, capture_output=True, text=True, timeout=timeout,
                              env=env, **kw)
    except subprocess.TimeoutExpired as e:
        return subprocess.CompletedProcess(args, 124, e.stdout or "",
                                           (e.stderr or "") + " (timed out after %ss)" % timeout)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


# ---------------------------------------------------------------- the root

def cached_base():
    """The minbase root for PACKAGES, made once and kept: its path."""
    key = hashlib.sha256(("%s %s %s" % (SUITE, MIRROR, " ".join(PACKAGES))).encode())
    base = os.path.join(CACHE, "%s-%s" % (SUITE, key.hexdigest()[:16]))
    os.makedirs(CACHE, exist_ok=True)
    with open(os.path.join(CACHE, ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one debootstrap at a time
        if os.path.exists(os.path.join(base, ".complete")):
            t.diag("cached root %s" % base)
            return base
        tmp = base + ".tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        t.diag("debootstrap %s into %s (%s)" % (SUITE, tmp, ",".join(PACKAGES)))
        r = run(["debootstrap", "--variant=minbase", "--include=" + ",".join(PACKAGES),
                 SUITE, tmp, MIRROR], timeout=900)
        if r.returncode != 0:
            t.diag((r.stdout + r.stderr)[-3000:])
            shutil.rmtree(tmp, ignore_errors=True)
            return None
        # a cached root is never booted itself: each run boots a copy
        run(["chroot", tmp, "apt-get", "clean"])
        open(os.path.join(tmp, ".complete"), "w").close()
        shutil.rmtree(base, ignore_errors=True)
        os.rename(tmp, base)
        return base


def prepare_root(base, root, kafka_port, ctl_port):
    """The scratch root: a copy of the base with this build installed."""
    r = run(["cp", "-a", "--reflink=auto", base, root], timeout=300)
    if r.returncode != 0:
        return "cp: " + r.stderr
    os.unlink(os.path.join(root, ".complete"))
    r = run(["make", "-C", BUILDDIR, "install", "DESTDIR=" + root, "prefix=/usr",
             "sysconfdir=/etc", "localstatedir=/var"], timeout=600)
    if r.returncode != 0:
        return "make install: " + (r.stdout + r.stderr)[-2000:]
    etc = os.path.join(root, "etc", "runnel")
    props = open(os.path.join(etc, "server.properties.example")).read()
    # the host's network: ports nothing else here listens on
    props = props.replace(":9092", ":%d" % kafka_port).replace(":9093", ":%d" % ctl_port)
    props = props.replace("PLAINTEXT://localhost:", "PLAINTEXT://127.0.0.1:")
    with open(os.path.join(etc, "server.properties"), "w") as f:
        f.write(props)
    with open(os.path.join(root, "etc", "hostname"), "w") as f:
        f.write("runnel-systemd-check\n")
    # nothing of the host's machine: systemd makes the root's own id
    open(os.path.join(root, "etc", "machine-id"), "w").close()
    # no login prompts on the host's terminals; nothing that needs a real
    # machine (logind wants a seat, e2scrub an ext4 LVM)
    for u in ("getty.target", "console-getty.service", "getty@.service",
              "serial-getty@.service", "systemd-logind.service", "e2scrub_reap.service"):
        link = os.path.join(root, "etc/systemd/system", u)
        if not os.path.lexists(link):
            os.symlink("/dev/null", link)
    # sysusers.d and tmpfiles.d as the booting systemd applies them (its
    # systemd-sysusers.service only runs on a first boot or an update)
    # (/run is a tmpfs at boot, where systemd-tmpfiles-setup.service makes
    # /run/runnel; the root's systemd-tmpfiles wants a /proc, the host's
    # works on the root with --root=)
    for args in (["chroot", root, "systemd-sysusers"],
                 ["systemd-tmpfiles", "--root=" + root, "--create", "--exclude-prefix=/run",
                  os.path.join(root, "usr/lib/tmpfiles.d/runnel.conf")]):
        r = run(args)
        if r.returncode != 0:
            return "%s: %s" % (" ".join(args[:3]), r.stderr)
    return None


# ------------------------------------------------------------ the namespace

class Machine:
    """systemd as PID 1 in new PID, mount, UTS, IPC and cgroup namespaces
    over ROOT. pid is its pid here."""

    def __init__(self, root, cgroup):
        self.root = root
        self.cgroup = cgroup
        self.proc = None
        self.pid = None

    def boot(self):
        r = self.root
        # in the new mount namespace only: nothing to unmount here later
        script = "\n".join([
            "set -e",
            "mount --make-rprivate /",
            # the root a mount of its own, as a real machine's is: systemd
            # sets up a service's mount namespace (ProtectSystem=,
            # PrivateTmp=...) by moving mounts onto /, which fails with
            # EINVAL over a plain chroot directory
            "mount --bind %s %s" % (r, r),
            # a /dev of its own, as systemd-nspawn makes one: the host's
            # device nodes a service needs, no tty, console or disk
            "mount -t tmpfs -o mode=755,nosuid tmpfs %s/dev" % r,
            "for n in null zero full random urandom tty; do",
            "  touch %s/dev/$n; mount --bind /dev/$n %s/dev/$n; done" % (r, r),
            "mkdir -p %s/dev/pts %s/dev/shm %s/dev/mqueue" % (r, r, r),
            "mount -t devpts -o newinstance,ptmxmode=0666,mode=620 devpts %s/dev/pts" % r,
            "ln -s pts/ptmx %s/dev/ptmx" % r,
            "mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs %s/dev/shm" % r,
            "ln -s /proc/self/fd %s/dev/fd" % r,
            "ln -s /proc/self/fd/0 %s/dev/stdin; ln -s /proc/self/fd/1 %s/dev/stdout" % (r, r),
            "ln -s /proc/self/fd/2 %s/dev/stderr" % r,
            "mount -t proc proc %s/proc" % r,
            "mount -t sysfs -o nosuid,nodev,noexec sysfs %s/sys" % r,
            "mount -t tmpfs -o mode=755,nosuid,nodev tmpfs %s/run" % r,
            "mount -t tmpfs -o mode=1777,nosuid,nodev tmpfs %s/tmp" % r,
            # pivot_root(".", ".") and detach the old root beneath
            "cd %s" % r,
            "pivot_root . .",
            "umount -l .",
            "exec /lib/systemd/systemd --system",
        ])
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "container": "runnel-check",
               "LANG": "C.UTF-8"}
        log = open(os.path.join(os.path.dirname(self.root), "systemd-root.console"), "w")
        cg = self.cgroup

        def pre():
            # this test killed, even by SIGKILL: unshare gets SIGKILL, and
            # its child, the namespace's PID 1, too (--kill-child), and
            # with it every process in the namespace
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
            if cg:  # the new namespace's cgroup root is this one
                with open(os.path.join(cg, "cgroup.procs"), "w") as f:
                    f.write("0")
        self.proc = subprocess.Popen(
            ["unshare", "--pid", "--fork", "--kill-child=SIGKILL", "--mount", "--uts",
             "--ipc"] +
            (["--cgroup"] if self.cgroup else []) + ["sh", "-c", script],
            env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            preexec_fn=pre, start_new_session=True)
        # unshare forks once: its child becomes systemd
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and self.pid is None:
            try:
                kids = open("/proc/%d/task/%d/children" % (self.proc.pid, self.proc.pid)).read().split()
            except OSError:
                kids = []
            for k in kids:
                try:
                    if os.readlink("/proc/%s/exe" % k).endswith("/systemd"):
                        self.pid = int(k)
                except OSError:
                    pass
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        return self.pid

    def host_pid(self, pid):
        """The pid here of the machine's process pid."""
        for d in os.listdir("/proc"):
            if not d.isdigit():
                continue
            try:
                for line in open("/proc/%s/status" % d):
                    if line.startswith("NSpid:"):
                        f = line.split()
                        if len(f) >= 3 and int(f[-1]) == pid and \
                                os.readlink("/proc/%s/ns/pid" % d) == \
                                os.readlink("/proc/%d/ns/pid" % self.pid):
                            return int(d)
            except (OSError, ValueError):
                pass
        return -1

    def sh(self, args, timeout=120):
        """A command in the machine, by the path its root has."""
        return run(["nsenter", "-t", str(self.pid), "-m", "-p", "-u", "-i", "-r", "-w",
                    "--"] + args, timeout=timeout)

    def systemctl(self, *args, timeout=120):
        return self.sh(["systemctl", "--no-pager"] + list(args), timeout=timeout)

    def show(self, unit, *props):
        r = self.systemctl("show", unit, "-p", ",".join(props))
        out = {}
        for line in r.stdout.splitlines():
            k, _, v = line.partition("=")
            out[k] = v
        return out

    def journal(self, *args):
        return self.sh(["journalctl", "--no-pager"] + list(args))

    def stop(self):
        if self.pid:
            try:
                os.kill(self.pid, signal.SIGKILL)  # and with it every process in it
            except ProcessLookupError:
                pass
        if self.proc:
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        self.pid = None


def make_cgroup():
    """A cgroup v2 directory of our own to be the machine's cgroup root, so
    its systemd never manages the host's root cgroup. None without one."""
    for mnt in ("/sys/fs/cgroup/unified", "/sys/fs/cgroup"):
        if os.path.exists(os.path.join(mnt, "cgroup.procs")) and \
                os.path.exists(os.path.join(mnt, "cgroup.subtree_control")):
            for old in os.listdir(mnt):  # of a run killed by SIGKILL
                if old.startswith("runnel-check-systemd-") and \
                        not os.path.exists("/proc/" + old.rsplit("-", 1)[1]):
                    remove_cgroup(os.path.join(mnt, old))
            d = os.path.join(mnt, "runnel-check-systemd-%d" % os.getpid())
            try:
                os.mkdir(d)
                return d
            except OSError:
                return None
    return None


def remove_cgroup(d):
    if not d or not os.path.isdir(d):
        return
    for _ in range(50):
        for top, dirs, _files in os.walk(d, topdown=False):
            for sub in dirs:
                try:
                    os.rmdir(os.path.join(top, sub))
                except OSError:
                    pass
        try:
            os.rmdir(d)
            return
        except OSError:
            time.sleep(0.1)


# ----------------------------------------------------------------- clients

def produce(port, values):
    from confluent_kafka import Producer
    p = Producer({"bootstrap.servers": "127.0.0.1:%d" % port, "acks": "all",
                  "enable.idempotence": True, "message.timeout.ms": 30000})
    errors = []

    def dr(err, _msg):
        if err is not None:
            errors.append(str(err))
    for v in values:
        p.produce(TOPIC, value=v.encode(), on_delivery=dr)
        p.poll(0)
    left = p.flush(60)
    return errors + (["%d undelivered" % left] if left else [])


def consume(port, want, timeout=None, start=None):
    """want records of TOPIC from offset start (the beginning if None)."""
    from confluent_kafka import Consumer, TopicPartition, OFFSET_BEGINNING
    c = Consumer({"bootstrap.servers": "127.0.0.1:%d" % port,
                  "group.id": "systemd-check-%d" % time.time_ns(),
                  "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    c.assign([TopicPartition(TOPIC, 0, OFFSET_BEGINNING if start is None else start)])
    got = []
    # a million records take some 10 s to read here
    deadline = time.monotonic() + (timeout or 60 + want / 20000)
    while len(got) < want and time.monotonic() < deadline:
        for m in c.consume(1000, 1.0):
            if not m.error():
                got.append(m.value().decode())
    c.close()
    return got


def join_group(port, n):
    """A consumer of GROUP subscribed to TOPIC: it joins, reads n records,
    commits and leaves. The records it read."""
    from confluent_kafka import Consumer
    c = Consumer({"bootstrap.servers": "127.0.0.1:%d" % port, "group.id": GROUP,
                  "auto.offset.reset": "earliest", "enable.auto.commit": False})
    c.subscribe([TOPIC])
    got = []
    deadline = time.monotonic() + 60
    while len(got) < n and time.monotonic() < deadline:
        for m in c.consume(100, 1.0):
            if not m.error():
                got.append(m.value().decode())
    if got:
        c.commit(asynchronous=False)
    c.close()
    return got[:n]


def create_topic(port):
    from confluent_kafka.admin import AdminClient, NewTopic
    a = AdminClient({"bootstrap.servers": "127.0.0.1:%d" % port})
    f = a.create_topics([NewTopic(TOPIC, 1, 1)])[TOPIC]
    try:
        f.result(30)
        return None
    except Exception as e:  # noqa: BLE001 - shown in the TAP line
        return str(e)


class ConnectLoop(threading.Thread):
    """TCP connects to the listener, one after another, until stopped."""

    def __init__(self, port):
        super().__init__(daemon=True)
        self.port = port
        self.ok = 0
        self.refused = 0
        self.other = []
        self.halt = threading.Event()

    def run(self):
        while not self.halt.is_set():
            s = socket.socket()
            s.settimeout(5)
            try:
                s.connect(("127.0.0.1", self.port))
                self.ok += 1
            except ConnectionRefusedError:
                self.refused += 1
            except OSError as e:
                self.other.append(str(e))
            finally:
                s.close()
            time.sleep(0.005)


class ProduceLoop(threading.Thread):
    """An idempotent producer at full speed until stopped; what was acked.
    Its values are "<name>-<n>"."""

    def __init__(self, port, name="during"):
        super().__init__(daemon=True)
        from confluent_kafka import Producer
        self.name = name
        self.errors = []
        self.acked = []
        self.first_offset = None  # of the first record acked
        self.failed = []
        self.halt = threading.Event()
        self.p = Producer({"bootstrap.servers": "127.0.0.1:%d" % port, "acks": "all",
                           "enable.idempotence": True, "linger.ms": 5,
                           "queue.buffering.max.messages": 20000,
                           "message.timeout.ms": 60000,
                           "error_cb": lambda e: self.errors.append(str(e))})

    def dr(self, err, msg):
        if err is None and self.first_offset is None:
            self.first_offset = msg.offset()
        (self.failed if err is not None else self.acked).append(msg.value().decode())

    def run(self):
        i = 0
        while not self.halt.is_set():
            try:
                self.p.produce(TOPIC, value=("%s-%d" % (self.name, i)).encode(), on_delivery=self.dr)
                i += 1
            except BufferError:
                self.p.poll(0.05)
                continue
            self.p.poll(0)
        self.left = self.p.flush(60)
        self.sent = i


def wait_for(fn, timeout, step=0.2):
    deadline = time.monotonic() + timeout
    while True:
        v = fn()
        if v or time.monotonic() >= deadline:
            return v
        time.sleep(step)


# -------------------------------------------------------------------- main

def on_sigterm(signum, _frame):
    # timeout(1) and make's interrupt: tear down through the finally blocks
    raise KeyboardInterrupt("signal %d" % signum)


def main():
    signal.signal(signal.SIGTERM, on_sigterm)
    signal.signal(signal.SIGHUP, on_sigterm)
    if os.geteuid() != 0:
        skip("needs root (PID, mount and cgroup namespaces, chroot)")
    for tool in ("debootstrap", "unshare", "nsenter", "chroot"):
        if shutil.which(tool) is None:
            skip("%s not installed (contrib/debian-packages)" % tool)
    try:
        import confluent_kafka  # noqa: F401
    except ImportError:
        skip("python3-confluent-kafka not installed (contrib/debian-packages)")
    if not os.path.exists(os.path.join(BUILDDIR, "runneld")):
        skip("no runneld in %s: build first" % BUILDDIR)
    r = run(["unshare", "--pid", "--fork", "--mount", "--uts", "--ipc", "true"])
    if r.returncode != 0:
        skip("cannot make PID and mount namespaces here: %s" % r.stderr.strip())

    t_start = time.monotonic()
    work = os.path.join(BUILDDIR, "systemd-check")
    root = os.path.join(work, "root")
    if os.path.exists(work):
        run(["rm", "-rf", "--one-file-system", work], timeout=300)
    os.makedirs(work)
    kafka_port, ctl_port = free_port(), free_port()
    while ctl_port == kafka_port:
        ctl_port = free_port()

    cgroup = None
    m = None
    try:
        with Phase("root"):
            base = cached_base()
        if not t.ok(base is not None, "a Debian %s minbase root with systemd and runnel's libraries"
                    % SUITE):
            return
        with Phase("install"):
            err = prepare_root(base, root, kafka_port, ctl_port)
        unit = os.path.join(root, "usr/lib/systemd/system/runneld.service")
        text = open(unit).read() if os.path.exists(unit) else ""
        if not t.ok(err is None and "ExecStart=/usr/sbin/runneld --config /etc/runnel/server.properties"
                    in text and os.path.exists(os.path.join(root, "usr/sbin/runneld")),
                    "make install DESTDIR=ROOT prefix=/usr sysconfdir=/etc; the unit names "
                    "/usr/sbin/runneld (%s)" % (err or "ok")):
            return
        passwd = open(os.path.join(root, "etc/passwd")).read()
        line = [x for x in passwd.splitlines() if x.startswith("runnel:")]
        st = os.stat(os.path.join(root, "var/lib/runnel"))
        t.ok(line and st.st_uid == int(line[0].split(":")[2]) and (st.st_mode & 0o777) == 0o750,
             "the root's systemd-sysusers and systemd-tmpfiles made the runnel user and "
             "/var/lib/runnel (0750, owned by it)")

        cgroup = make_cgroup()
        m = Machine(root, cgroup)
        with Phase("boot"):
            pid = m.boot()
            state = ""
            if pid:
                # (is-system-running --wait has no deadline: poll)
                def booted():
                    nonlocal state
                    state = m.systemctl("is-system-running").stdout.strip()
                    return state in ("running", "degraded")
                wait_for(booted, 120, 0.5)
        if not t.ok(state in ("running", "degraded"),
                    "systemd booted as PID 1 (pid %s here): is-system-running says %s"
                    % (pid, state or "nothing")):
            con = os.path.join(work, "systemd-root.console")
            t.diag(open(con).read()[-3000:] if os.path.exists(con) else "no console log")
            return
        if state == "degraded":
            t.diag(m.systemctl("--failed").stdout)
        checks(m, kafka_port)
    finally:
        with Phase("teardown"):
            if m:
                m.stop()
            remove_cgroup(cgroup)
            if os.environ.get("RUNNEL_SYSTEMD_KEEP") != "1":
                run(["rm", "-rf", "--one-file-system", work], timeout=300)
        total = time.monotonic() - t_start
        t.diag("phases: " + ", ".join("%s %.1f s" % p for p in phases) +
               "; total %.1f s" % total)


def journal_json(m, *args):
    """journalctl -o json ARGS: one dict a record."""
    out = []
    for line in m.journal("-o", "json", *args).stdout.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            pass
    return out


def subject_checks(m, port, first):
    """journalctl TOPIC=, BROKER= and GROUP= find the lines about each."""
    with Phase("journal-subjects"):
        grouped = join_group(port, 10)

        def lines(match, want):
            """The records journalctl MATCH finds, once one's MESSAGE has want."""
            found = []

            def get():
                found[:] = journal_json(m, match)
                return any(want in str(x.get("MESSAGE")) for x in found)
            wait_for(get, 15, 0.5)
            return found
        by_topic = lines("TOPIC=" + TOPIC, "%s-0: created" % TOPIC)
        by_broker = lines("BROKER=%d" % NODE_ID, "registering broker %d" % NODE_ID)
        by_group = lines("GROUP=" + GROUP, "group %s: generation 1 with 1 members" % GROUP)

    def msgs(recs):
        return [str(x.get("MESSAGE")) for x in recs]
    created = [x for x in by_topic if str(x.get("MESSAGE")).startswith("CreateTopics %s:" % TOPIC)]
    parts = [x for x in by_topic if str(x.get("MESSAGE")).startswith(TOPIC + "-")]
    t.ok(created and parts and all(x.get("TOPIC") == TOPIC for x in by_topic) and
         all(x.get("PARTITION") == x["MESSAGE"][len(TOPIC) + 1:].split(":")[0]
             for x in parts) and
         any(x.get("PARTITION") == "0" and "leader %d" % NODE_ID in x["MESSAGE"]
             for x in parts),
         "journalctl TOPIC=%s: %d records, its creation and its partition's line with "
         "PARTITION=0 and its leader (%s)" % (TOPIC, len(by_topic), msgs(created + parts)[:3]))
    reg = [x for x in msgs(by_broker) if "registering broker %d" % NODE_ID in x or
           "broker %d registered" % NODE_ID in x]
    t.ok(reg and all(x.get("BROKER") == str(NODE_ID) for x in by_broker),
         "journalctl BROKER=%d: %d records, its registration among them (%s)"
         % (NODE_ID, len(by_broker), reg[:2]))
    stable = [x for x in msgs(by_group) if "generation 1 with 1 members" in x]
    t.ok(grouped == first[:10] and stable and
         all(x.get("GROUP") == GROUP for x in by_group),
         "a consumer of group %s joined and read %d records; journalctl GROUP=%s: %d "
         "records, the coordinator's rebalance among them (%s)"
         % (GROUP, len(grouped), GROUP, len(by_group), msgs(by_group)[:2]))


def reload_once(m, port, k, pid1):
    """Reload k of RELOADS under a connect loop and an idempotent producer:
    the new MainPID and the records acked across it."""
    with Phase("reload-%d" % k):
        loop = ConnectLoop(port)
        loop.start()
        prod = ProduceLoop(port, "reload%d" % k)
        prod.start()
        time.sleep(1)
        t0 = time.monotonic()
        r = m.systemctl("reload", "runneld", timeout=120)
        reload_s = time.monotonic() - t0
        s = m.show("runneld", "ActiveState", "SubState", "MainPID", "StatusText")
        time.sleep(1)
        loop.halt.set()
        prod.halt.set()
        loop.join()
        prod.join()
        during = prod.acked
        got = consume(port, len(during), start=prod.first_offset) \
            if prod.first_offset is not None else []
    pid2 = int(s.get("MainPID", "0") or 0)
    what = "reload %d of %d" % (k, RELOADS)
    t.diag("%s: %.1f s, MainPID %d -> %d, %d connects, %d refused"
           % (what, reload_s, pid1, pid2, loop.ok, loop.refused))
    t.ok(r.returncode == 0, "%s: systemctl reload runneld succeeds in %.1f s (%s)"
         % (what, reload_s, r.stderr.strip()[-300:]))
    t.ok(s.get("ActiveState") == "active" and s.get("SubState") == "running" and
         pid2 > 0 and pid2 != pid1,
         "%s: then active/running, MainPID %d -> %d" % (what, pid1, pid2))
    t.ok(loop.refused == 0 and not loop.other and loop.ok > 10,
         "%s: no TCP connect refused (%d connects, %d refused, %s)"
         % (what, loop.ok, loop.refused, loop.other[:2]))
    # the new supervisor, once the old one left, names itself again so
    # that systemd no longer takes it for a process it did not fork
    handback = wait_for(lambda: [x for x in m.journal(
        "-u", "runneld", "_PID=%d" % pid2, "-o", "cat").stdout.splitlines()
        if "main pid %d again" % pid2 in x], 10, 0.5)
    if not t.ok(handback, "%s: the new supervisor handed systemd its main pid back (%s)"
                % (what, handback[:1] or "no such line")):
        t.diag(m.journal("-u", "runneld", "-n", "40", "-o", "short-precise").stdout)
    refused = [e for e in prod.errors if "refused" in e.lower()]
    t.ok(prod.sent > 0 and len(prod.acked) == prod.sent and not prod.failed and
         not refused and prod.left == 0,
         "%s: an idempotent producer at full speed all through it: %d sent, %d acked, "
         "%d failed, %d connection refused (%s)"
         % (what, prod.sent, len(prod.acked), len(prod.failed), len(refused),
            prod.errors[:2]))
    missing = len(set(during) - set(got))
    t.ok(during and got == during,
         "%s: the %d records acked across it read back once and in order from offset %s "
         "(%d read, %d missing, %d duplicated)"
         % (what, len(during), prod.first_offset, len(got), missing,
            len(got) - len(set(got))))
    return pid2, during


def checks(m, port):
    with Phase("start"):
        r = m.systemctl("enable", "--now", "runneld", timeout=120)
        s = m.show("runneld", "ActiveState", "SubState", "MainPID", "StatusText", "Type",
                   "NRestarts")
    pid1 = int(s.get("MainPID", "0") or 0)
    if not t.ok(r.returncode == 0 and s.get("ActiveState") == "active" and
                s.get("SubState") == "running" and pid1 > 0,
                "systemctl enable --now runneld: active/running, MainPID %d (%s)"
                % (pid1, (r.stderr.strip() or s))):
        t.diag(m.systemctl("status", "runneld").stdout)
        t.diag(m.journal("-u", "runneld", "-n", "60").stdout)
        return
    t.ok(s.get("Type") == "notify" and s.get("StatusText", "").startswith("running"),
         "Type=notify and ready; STATUS= says \"%s\"" % s.get("StatusText"))
    st = m.systemctl("status", "runneld").stdout
    t.diag(st)
    t.ok(m.systemctl("is-enabled", "runneld").stdout.strip() == "enabled",
         "the unit is enabled (WantedBy=multi-user.target)")

    # the sandboxing the unit asks for, as the kernel sees it
    status = dict(x.split(":\t", 1) for x in
                  m.sh(["cat", "/proc/%d/status" % pid1]).stdout.splitlines() if ":\t" in x)
    bnd = int(status.get("CapBnd", "0"), 16)
    # CAP_CHOWN, DAC_OVERRIDE, FOWNER, KILL, SETGID, SETUID, NET_BIND_SERVICE
    want = sum(1 << b for b in (0, 1, 3, 5, 6, 7, 10))
    ns_main = m.sh(["readlink", "/proc/%d/ns/mnt" % pid1]).stdout.strip()
    ns_init = m.sh(["readlink", "/proc/1/ns/mnt"]).stdout.strip()
    ro = run(["nsenter", "-t", str(m.host_pid(pid1)), "-m", "--", "touch",
              "/usr/runnel-sandbox-probe"])
    t.ok(status.get("NoNewPrivs", "").strip() == "1" and
         status.get("Seccomp", "").strip() == "2" and bnd == want and
         ns_main and ns_main != ns_init and ro.returncode != 0 and
         "read-only" in ro.stderr.lower(),
         "sandboxed: NoNewPrivs %s, Seccomp %s (MemoryDenyWriteExecute, "
         "SystemCallArchitectures), CapBnd %#x (want %#x), its own mount namespace, "
         "/usr read-only in it (%s)"
         % (status.get("NoNewPrivs", "?").strip(), status.get("Seccomp", "?").strip(),
            bnd, want, ro.stderr.strip()[-80:]))
    kids = m.sh(["cat", "/proc/%d/task/%d/children" % (pid1, pid1)]).stdout.split()
    uids = set()
    for k in kids:
        for x in m.sh(["cat", "/proc/%s/status" % k]).stdout.splitlines():
            if x.startswith("Uid:"):
                uids.add(int(x.split()[1]))
    runnel_uid = m.sh(["id", "-u", "runnel"]).stdout.strip()
    t.ok(len(kids) >= 5 and uids == {int(runnel_uid or -1)},
         "%d workers, all running as the runnel user (uids %s, runnel is %s)"
         % (len(kids), sorted(uids), runnel_uid))

    with Phase("produce"):
        errs = []

        def created():
            e = create_topic(port)
            errs.append(e)
            return e is None
        wait_for(created, 30, 1)
        err = errs[-1]
        first = ["before-%d" % i for i in range(1000)]
        perr = produce(port, first)
        got = consume(port, len(first))
    t.ok(not perr and got == first,
         "1000 records produced from the host to 127.0.0.1:%d read back in order "
         "(%d read, %s)" % (port, len(got), perr[:3] or err or "no error"))

    # journald: runneld's own fields
    with Phase("journal"):
        recs = journal_json(m, "-u", "runneld", "--output-fields",
                            "COMPONENT,WORKER,MESSAGE,_PID,SYSLOG_IDENTIFIER")
    comps = sorted({str(x.get("COMPONENT")) for x in recs if x.get("COMPONENT")})
    workers = sorted({str(x.get("WORKER")) for x in recs if x.get("WORKER")})
    t.ok("supervisor" in comps and any(w.startswith("network") for w in workers),
         "journalctl -u runneld -o json: %d records with COMPONENT= %s and WORKER= %s"
         % (len(recs), comps, workers[:8]))
    r = m.journal("-u", "runneld", "COMPONENT=supervisor", "-o", "cat")
    t.ok("ready" in r.stdout, "journalctl -u runneld COMPONENT=supervisor shows the ready line")
    subject_checks(m, port, first)

    # the upgrade: systemctl reload runneld runs runnelctl upgrade; three in a row
    pid = pid1
    for k in range(1, RELOADS + 1):
        pid, during = reload_once(m, port, k, pid)
        first = first + during
    with Phase("after-reload"):
        second = ["after-%d" % i for i in range(1000)]
        perr = produce(port, second)
        want = first + second
        got = consume(port, len(want))
    missing = len(set(want) - set(got))
    dups = len(got) - len(set(got))
    t.ok(not perr and got == want,
         "after the %d reloads, everything read back once and in order: the 1000 from "
         "before, the %d produced during the reloads, 1000 more produced after (%d read, "
         "%d missing, %d duplicated, %s)" % (RELOADS, len(first) - 1000, len(got), missing,
                                             dups, perr[:3] or "no error"))

    # stop: SIGTERM, the controlled shutdown, within TimeoutStopSec
    with Phase("stop"):
        tss = m.show("runneld", "TimeoutStopUSec").get("TimeoutStopUSec", "")
        since = m.sh(["date", "+%Y-%m-%d %H:%M:%S"]).stdout.strip()
        t0 = time.monotonic()
        r = m.systemctl("stop", "runneld", timeout=120)
        stop_s = time.monotonic() - t0
        s = m.show("runneld", "ActiveState", "Result")
        log = m.journal("-u", "runneld", "--since", since, "-o", "cat").stdout
        full = m.journal("-u", "runneld", "--since", since, "-o", "short-precise").stdout
    stopped = t.ok(r.returncode == 0 and s.get("ActiveState") == "inactive" and
         s.get("Result") == "success" and stop_s < 30,
         "systemctl stop runneld: inactive, Result=%s, in %.1f s (TimeoutStopSec %s)"
         % (s.get("Result"), stop_s, tss))
    if not t.ok("controlled shutdown" in log.lower(), "the journal shows the controlled shutdown") \
            or not stopped:
        t.diag(full[-8000:])
    with Phase("restart"):
        r = m.systemctl("start", "runneld", timeout=120)
        s = m.show("runneld", "ActiveState", "SubState", "MainPID")
        got = consume(port, len(first) + len(second)) if r.returncode == 0 else []
    pid3 = int(s.get("MainPID", "0") or 0)
    t.ok(r.returncode == 0 and s.get("ActiveState") == "active" and pid3 > 0,
         "systemctl start runneld again: active, MainPID %d" % pid3)
    t.ok(got == first + second, "and all %d records read back after the restart (%d read)"
         % (len(first) + len(second), len(got)))

    if not WATCHDOG:
        return
    # the watchdog: a stopped supervisor sends no WATCHDOG=1
    with Phase("watchdog"):
        wd = m.show("runneld", "WatchdogUSec", "NRestarts")
        since = m.sh(["date", "+%Y-%m-%d %H:%M:%S"]).stdout.strip()
        r = m.systemctl("kill", "-s", "SIGSTOP", "--kill-whom=main", "runneld")
        t0 = time.monotonic()

        def restarted():
            s = m.show("runneld", "ActiveState", "SubState", "MainPID", "NRestarts")
            p = int(s.get("MainPID", "0") or 0)
            return s if (s.get("ActiveState") == "active" and s.get("SubState") == "running"
                         and p > 0 and p != pid3) else None
        s = wait_for(restarted, 120, 1) or {}
        wd_s = time.monotonic() - t0
        log = m.journal("-u", "runneld", "--since", since, "-o", "cat").stdout
    pid4 = int(s.get("MainPID", "0") or 0)
    t.ok(r.returncode == 0 and pid4 > 0 and
         int(s.get("NRestarts", "0") or 0) > int(wd.get("NRestarts", "0") or 0),
         "watchdog (%s): the SIGSTOPped supervisor killed and restarted in %.1f s, "
         "MainPID %d -> %d, NRestarts %s -> %s"
         % (wd.get("WatchdogUSec"), wd_s, pid3, pid4, wd.get("NRestarts"), s.get("NRestarts")))
    fired = [x for x in log.splitlines() if "watchdog timeout" in x.lower()]
    t.ok(fired, "the journal says the watchdog fired (%s)" % (fired[:1] or "no such line"))
    if pid4 > 0:
        got = consume(port, len(first) + len(second))
        t.ok(got == first + second, "all records read back after the watchdog restart (%d)"
             % len(got))


if __name__ == "__main__":
    try:
        main()
    except Skip as e:
        print("1..0 # SKIP %s" % e, flush=True)
        sys.exit(0)
    except BaseException:
        t.ok(False, "the test itself failed (below)")
        print("1..%d" % t.n, flush=True)
        raise
    print("1..%d" % t.n, flush=True)
    sys.exit(1 if t.failed else 0)
