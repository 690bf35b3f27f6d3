"""A cluster whose nodes each live in their own network namespace, so the
tests can cut the network between them.

Every node gets a namespace with one veth link to a bridge in the test's
own namespace: node i has address 10.X.0.i, the bridge (and so the test
and its clients) 10.X.0.254. A cut between two nodes is a pair of
`prohibit` routes, one in each namespace; the clients on the bridge keep
reaching every node unless a test cuts them too. A one-way cut is one
such route (oneway()); a silent one (drop()) is a `blackhole` policy rule
in the receiver's namespace, so the sender's packets vanish without an
answer and TCP has to time out, as with an iptables DROP rule. Needs root
and iproute2 only.
"""
import os
import signal
import subprocess

from rntest import Node, wait_for


def _ip(*args, ns=None, check=True):
    cmd = (["ip", "netns", "exec", ns] if ns else []) + ["ip"] + list(args)
    return subprocess.run(cmd, capture_output=True, text=True, check=check)


class NetCluster:
    """count nodes, every one broker and controller, in namespaces."""

    PORT = 9092
    CTL_PORT = 9093

    def __init__(self, tmp, count=3, props=None):
        self.cuts = set()
        self.drops = set()  # (src, dst): dst silently drops what src sends
        self.nodes = []
        self._claim_bridge()
        self.ns = ["%s-n%d" % (self.bridge, i) for i in range(1, count + 1)]
        try:
            self._make_network()
        except Exception:
            self.destroy()
            raise
        voters = ",".join("%d@%s:%d" % (i, self.addr(i), self.CTL_PORT)
                          for i in range(1, count + 1))
        for i in range(1, count + 1):
            n = Node(tmp, node_id=i, voters=voters, props=dict(props or {}))
            a = self.addr(i)
            n.port, n.ctl_port = self.PORT, self.CTL_PORT
            n.host = a
            n.props["listeners"] = ("PLAINTEXT://%s:%d,CONTROLLER://%s:%d"
                                    % (a, self.PORT, a, self.CTL_PORT))
            n.props["advertised.listeners"] = "PLAINTEXT://%s:%d" % (a, self.PORT)
            n.write_config()
            n.exec_prefix = ["ip", "netns", "exec", self.ns[i - 1]]
            self.nodes.append(n)

    def addr(self, i):
        return "%s.%d" % (self.subnet, i)

    def _claim_bridge(self):
        """The first free bridge name; creating it is the claim, so tests
        running side by side get distinct subnets."""
        for idx in range(250):
            name = "rnfault%d" % idx
            if _ip("link", "add", name, "type", "bridge",
                   check=False).returncode == 0:
                self.bridge, self.subnet = name, "10.201.%d" % idx
                return
        raise RuntimeError("no free rnfault bridge (stale ones: ip link)")

    def _make_network(self):
        _ip("addr", "add", "%s.254/24" % self.subnet, "dev", self.bridge)
        _ip("link", "set", self.bridge, "up")
        for i, ns in enumerate(self.ns, 1):
            veth = "%sv%d" % (self.bridge, i)  # at most 12 characters
            # what a killed run under this bridge's name left behind
            _ip("link", "del", veth, check=False)
            _ip("netns", "del", ns, check=False)
            _ip("netns", "add", ns)
            _ip("link", "add", veth, "type", "veth", "peer", "name", "eth0",
                "netns", ns)
            _ip("link", "set", veth, "master", self.bridge, "up")
            _ip("addr", "add", "%s/24" % self.addr(i), "dev", "eth0", ns=ns)
            _ip("link", "set", "eth0", "up", ns=ns)
            _ip("link", "set", "lo", "up", ns=ns)
            # the local table after the drop rules (drop()), not before
            _ip("rule", "add", "pref", "1000", "lookup", "local", ns=ns)
            _ip("rule", "del", "pref", "0", ns=ns)

    def destroy(self):
        for n in self.nodes:
            try:
                n.kill()
            except Exception:
                pass
        for ns in self.ns:
            _ip("netns", "del", ns, check=False)
        _ip("link", "del", self.bridge, check=False)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.destroy()

    def node(self, i):
        return self.nodes[i - 1]

    @property
    def bootstrap(self):
        return ",".join(n.bootstrap for n in self.nodes)

    def start(self, node=None):
        # ip netns exec execs runneld in place: the pid is the node's
        for n in ([node] if node else self.nodes):
            n.start()

    def crashes(self):
        return [l for n in self.nodes for l in n.crashes()]

    # ---- cuts -------------------------------------------------------

    def _route(self, verb, src, dst):
        _ip("route", verb, "prohibit", "%s/32" % self.addr(dst),
            ns=self.ns[src - 1], check=(verb == "add"))

    def cut(self, a, b):
        """No packet between nodes a and b, either way."""
        self.oneway(a, b)
        self.oneway(b, a)

    def isolate(self, a):
        """Node a reaches no other node (clients on the bridge still reach it)."""
        for n in self.nodes:
            if n.node_id != a:
                self.cut(a, n.node_id)

    def oneway(self, src, dst):
        """src's packets to dst are refused in src's namespace; dst's still
        reach src. (TCP needs both ways, so connections between the two
        stall once the one-way cut is in: dst's data arrive, src's answers
        and acknowledgements do not.)"""
        if (src, dst) in self.cuts:
            return
        self._route("add", src, dst)
        self.cuts.add((src, dst))

    def _rule(self, verb, src, dst):
        _ip("rule", verb, "pref", "100", "from", "%s/32" % self.addr(src),
            "blackhole", ns=self.ns[dst - 1], check=(verb == "add"))

    def drop(self, src, dst):
        """dst silently drops every packet from src (no refusal, no ICMP):
        src's connects and sends to dst hang until TCP times out. dst's
        packets still reach src."""
        if (src, dst) in self.drops:
            return
        self._rule("add", src, dst)
        self.drops.add((src, dst))

    def drop_both(self, a, b):
        """A silent cut both ways between a and b."""
        self.drop(a, b)
        self.drop(b, a)

    def heal(self):
        for a, b in list(self.cuts):
            self._route("del", a, b)
        self.cuts.clear()
        for a, b in list(self.drops):
            self._rule("del", a, b)
        self.drops.clear()

    # ---- pauses -----------------------------------------------------

    def pause(self, i):
        """SIGSTOP every process of node i, as a long GC or VM pause would."""
        for pid in self.node(i).pids():
            os.kill(pid, signal.SIGSTOP)

    def resume(self, i):
        for pid in self.node(i).pids():
            os.kill(pid, signal.SIGCONT)

    def wait_running(self, timeout=40):
        """Workers up on every node and every broker registered."""
        if not all(n.wait_running(timeout) for n in self.nodes):
            return False
        from confluent_kafka.admin import AdminClient
        want = {n.node_id for n in self.nodes}

        def registered():
            try:
                md = AdminClient({"bootstrap.servers": self.bootstrap}
                                 ).list_topics(timeout=2)
                return set(md.brokers) == want and md.controller_id > 0
            except Exception:
                return False
        return wait_for(registered, timeout, 0.2)
