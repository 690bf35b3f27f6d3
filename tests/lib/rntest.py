"""Helpers for runnel's integration tests: TAP output and real runneld nodes.

Each test starts real runneld processes from the build tree on 127.0.0.1,
in a private temporary directory, and talks to them with runnelctl and
real Kafka clients.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

BUILDDIR = os.environ.get("RUNNEL_BUILDDIR", os.getcwd())
RUNNELD = os.path.join(BUILDDIR, "runneld")
RUNNELCTL = os.path.join(BUILDDIR, "runnelctl")

# Set by tests/run-all.sh for the pass built with ASan/UBSan, whose shadow
# memory and allocator bookkeeping add to every byte a process touches:
# memory bounds still hold there, scaled by this factor.
SANITIZED = os.environ.get("RUNNEL_SANITIZERS") == "1"


def _over_time(signum, frame):
    # timeout(1) in tests/Makefile.inc: say so, then unwind through the
    # tests' finally blocks, which stop their nodes
    print("Bail out! the test ran over its time limit (SIGTERM)", flush=True)
    raise SystemExit(1)


signal.signal(signal.SIGTERM, _over_time)


def rss_bound_kib(kib):
    """A resident-memory bound in KiB for this build."""
    return kib * 3 if SANITIZED else kib


class Tap:
    def __init__(self):
        self.n = 0
        self.failed = 0

    def ok(self, cond, name):
        self.n += 1
        if not cond:
            self.failed += 1
        print("%sok %d - %s" % ("" if cond else "not ", self.n, name), flush=True)
        return cond

    def eq(self, got, want, name):
        if not self.ok(got == want, name):
            self.diag("     got: %r" % (got,))
            self.diag("  wanted: %r" % (want,))
        return got == want

    def diag(self, msg):
        for line in str(msg).splitlines():
            print("# " + line, file=sys.stderr, flush=True)

    def done(self):
        print("1..%d" % self.n, flush=True)
        sys.exit(1 if self.failed else 0)


# Listening ports come from below the kernel's ephemeral range: a port the
# kernel picked for a bind to port 0 is free only until some client's
# connect() takes it as its local port, and the tests make thousands of
# connections while a node is still starting. A counter under flock in
# one file hands out each port once across concurrent test processes.
PORT_LOW, PORT_HIGH = 20000, 32000
PORT_COUNTER = os.path.join(tempfile.gettempdir(), "runnel-test-ports")


def _bindable(port):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
        return True
    except OSError:
        return False
    finally:
        s.close()


def free_port():
    import fcntl
    fd = os.open(PORT_COUNTER, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        raw = os.read(fd, 32).strip()
        port = int(raw) if raw.isdigit() else PORT_LOW + os.getpid() % 1000
        for _ in range(PORT_HIGH - PORT_LOW):
            port = PORT_LOW if not PORT_LOW <= port < PORT_HIGH else port
            here, port = port, port + 1
            if _bindable(here):
                break
        else:
            raise RuntimeError("no free port in %d-%d" % (PORT_LOW, PORT_HIGH))
        os.lseek(fd, 0, os.SEEK_SET)
        os.ftruncate(fd, 0)
        os.write(fd, b"%d" % port)
        return here
    finally:
        os.close(fd)


def recv_exact(sock, n):
    """n bytes from sock, or None if it closes first."""
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return buf


def recv_frame(sock):
    """One frame with a 4-byte big-endian size prefix (the Kafka protocol's
    and the control socket's): its body, or None if sock closes first."""
    hdr = recv_exact(sock, 4)
    if hdr is None:
        return None
    return recv_exact(sock, int.from_bytes(hdr, "big"))


def run_tool(tool, bootstrap, *args, timeout_ms=10000):
    """A Kafka tool from the build tree against bootstrap; its
    CompletedProcess (text output)."""
    return subprocess.run([tool, "--bootstrap-server", bootstrap,
                           "--timeout-ms", str(timeout_ms)] + list(args),
                          capture_output=True, text=True, timeout=60)


def wait_for(pred, timeout=10.0, step=0.05):
    """Poll pred() until it returns a true value or timeout passes."""
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v:
            return v
        if time.monotonic() >= deadline:
            return v
        time.sleep(step)


def _alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class Node:
    """One runneld in its own directory with its own ports."""

    def __init__(self, tmp, node_id=1, props=None, voters=None,
                 roles="broker,controller", name=None):
        self.dir = os.path.join(tmp, name or ("node%d" % node_id))
        os.makedirs(self.dir, exist_ok=True)
        self.node_id = node_id
        self.port = free_port()
        self.ctl_port = free_port()
        self.sock = os.path.join(self.dir, "ctl.sock")
        self.logdir = os.path.join(self.dir, "data")
        self.logfile = os.path.join(self.dir, "runneld.log")
        self.config = os.path.join(self.dir, "server.properties")
        self.proc = None
        self.host = "127.0.0.1"
        self.exec_prefix = []  # e.g. ["ip", "netns", "exec", NS]
        p = {
            "node.id": str(node_id),
            "process.roles": roles,
            "listeners": "PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d"
                         % (self.port, self.ctl_port),
            "advertised.listeners": "PLAINTEXT://127.0.0.1:%d" % self.port,
            "controller.listener.names": "CONTROLLER",
            "controller.quorum.voters": voters or
                "%d@127.0.0.1:%d" % (node_id, self.ctl_port),
            "log.dirs": self.logdir,
            "control.socket.path": self.sock,
            "num.network.threads": "2",
            "num.replica.fetchers": "1",
            "offsets.topic.replication.factor": "1",
            "group.initial.rebalance.delay.ms": "0",
        }
        p.update(props or {})
        self.props = p
        self.write_config()

    def write_config(self):
        with open(self.config, "w") as f:
            for k, v in self.props.items():
                f.write("%s=%s\n" % (k, v))

    @property
    def bootstrap(self):
        return "%s:%d" % (self.host, self.port)

    def start(self, env=None, args=(), journal=False):
        e = dict(os.environ)
        if not journal:
            e["RUNNEL_LOG_STDERR"] = "1"
        e.update(env or {})
        self.log = open(self.logfile, "ab")
        self.proc = subprocess.Popen(self.exec_prefix +
                                     [RUNNELD, "--config", self.config] + list(args),
                                     stdout=self.log, stderr=subprocess.STDOUT, env=e)
        return self.proc

    def ctl(self, *args, check=False):
        r = subprocess.run([RUNNELCTL, "-s", self.sock] + list(args),
                           capture_output=True, text=True, timeout=10)
        if check and r.returncode != 0:
            raise RuntimeError("runnelctl %s: %s" % (args, r.stderr))
        return r

    def status(self):
        r = self.ctl("status", "--json")
        if r.returncode != 0:
            return None
        return json.loads(r.stdout)

    def workers(self):
        st = self.status()
        return {w["name"]: w for w in st["workers"]} if st else {}

    def wait_running(self, timeout=15.0):
        def all_running():
            st = self.status()
            return st if st and st["node"]["state"] == "running" and all(
                w["state"] == "running" for w in st["workers"]) else None
        return wait_for(all_running, timeout)

    def pids(self):
        """Every live process of this node: supervisor and workers."""
        out = []
        if self.proc and self.proc.poll() is None:
            out.append(self.proc.pid)
            for pid in os.listdir("/proc"):
                if not pid.isdigit():
                    continue
                try:
                    with open("/proc/%s/stat" % pid) as f:
                        fields = f.read().rsplit(")", 1)[1].split()
                    if int(fields[1]) == self.proc.pid:
                        out.append(int(pid))
                except (OSError, IndexError, ValueError):
                    pass
        return out

    def rss_kib(self, field="VmRSS"):
        """Resident memory of the node's whole process tree, KiB (field:
        VmRSS, or RssAnon for its private pages alone, not the shared
        memory the workers touch as they go)."""
        total = 0
        for pid in self.pids():
            try:
                with open("/proc/%d/status" % pid) as f:
                    total += sum(int(l.split()[1]) for l in f
                                 if l.startswith(field + ":"))
            except OSError:
                pass
        return total

    def anon_kib(self):
        """Anonymous resident memory of the node's processes, KiB."""
        return self.rss_kib("RssAnon")

    def stop(self, timeout=20.0):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode if self.proc else None

    def kill(self):
        """SIGKILL the supervisor and every worker, as a crash would."""
        pids = self.pids()
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if self.proc:
            self.proc.wait()
        # workers are reaped by init: wait until they are really gone
        wait_for(lambda: not any(_alive(p) for p in pids), 10)

    def crashes(self):
        """Log lines of workers that died of a bug (not of a test's SIGKILL)."""
        bad = ("signal 11 ", "signal 6 ", "signal 7 ", "signal 8 ", "signal 4 ")
        return [l for l in self.logtext().splitlines()
                if "killed by signal" in l and any(b in l for b in bad)]

    def logtext(self):
        with open(self.logfile, "rb") as f:
            return f.read().decode("utf-8", "replace")


class TempDir:
    def __enter__(self):
        self.path = tempfile.mkdtemp(prefix="runnel-test-")
        return self.path

    def __exit__(self, *exc):
        if os.environ.get("RUNNEL_KEEP_TEST_DIRS"):
            print("# kept %s" % self.path, file=sys.stderr)
        else:
            shutil.rmtree(self.path, ignore_errors=True)


class Cluster:
    """Several runneld nodes on 127.0.0.1 forming one cluster (static voters)."""

    def __init__(self, tmp, count=3, props=None, roles=None, voters=None):
        ports = [(free_port(), free_port()) for _ in range(count)]
        ids = list(range(1, count + 1))
        voter_ids = voters or ids
        vstr = ",".join("%d@127.0.0.1:%d" % (i, ports[i - 1][1]) for i in voter_ids)
        self.nodes = []
        for i in ids:
            role = (roles or {}).get(i, "broker,controller" if i in voter_ids else "broker")
            n = Node(tmp, node_id=i, voters=vstr, roles=role, props=dict(props or {}))
            n.port, n.ctl_port = ports[i - 1]
            if role == "broker":
                n.props["listeners"] = "PLAINTEXT://127.0.0.1:%d" % n.port
            elif role == "controller":
                n.props["listeners"] = "CONTROLLER://127.0.0.1:%d" % n.ctl_port
            else:
                n.props["listeners"] = "PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d" % ports[i - 1]
            if role == "controller":
                del n.props["advertised.listeners"]
            else:
                n.props["advertised.listeners"] = "PLAINTEXT://127.0.0.1:%d" % n.port
            n.write_config()
            self.nodes.append(n)

    def node(self, node_id):
        return self.nodes[node_id - 1]

    @property
    def brokers(self):
        return [n for n in self.nodes if "broker" in n.props["process.roles"]]

    @property
    def bootstrap(self):
        return ",".join(n.bootstrap for n in self.brokers)

    def start(self):
        for n in self.nodes:
            n.start()

    def crashes(self):
        return [l for n in self.nodes for l in n.crashes()]

    def wait_running(self, timeout=30):
        """Every node's workers run and every node's Metadata lists all brokers."""
        if not all(n.wait_running(timeout) for n in self.nodes):
            # say why on stderr (TAP ignores it), so a failure can be read
            for n in self.nodes:
                tail = n.logtext().splitlines()[-8:] if os.path.exists(n.logfile) else []
                sys.stderr.write("# node %d (exit %s): %s\n" % (
                    n.node_id, n.proc.poll() if n.proc else None,
                    " | ".join(tail)))
            return False
        from confluent_kafka.admin import AdminClient
        want = {n.node_id for n in self.nodes if "broker" in n.props["process.roles"]}

        def registered(n):
            try:
                md = AdminClient({"bootstrap.servers": n.bootstrap}).list_topics(timeout=2)
                return set(md.brokers) == want and md.controller_id > 0
            except Exception:
                return False
        return wait_for(lambda: all(registered(n) for n in self.brokers), timeout, 0.2)

    def kill(self):
        for n in self.nodes:
            n.kill()
