"""A bad configuration stops runneld before it starts anything, with one clear message."""
import os
import subprocess

from rntest import RUNNELD, Node, Tap, TempDir, free_port

t = Tap()


def run(args, timeout=10):
    e = dict(os.environ, RUNNEL_LOG_STDERR="1")
    return subprocess.run([RUNNELD] + args, capture_output=True, text=True,
                          timeout=timeout, env=e)


with TempDir() as tmp:
    n = Node(tmp)
    base = dict(n.props)

    def write(extra, drop=()):
        p = {k: v for k, v in base.items() if k not in drop}
        p.update(extra)
        with open(n.config, "w") as f:
            for k, v in p.items():
                f.write("%s=%s\n" % (k, v))

    write({})
    r = run(["--config", n.config, "--check-config"])
    t.eq(r.returncode, 0, "a valid config passes --check-config")

    write({"num.network.threads": "many"})
    r = run(["--config", n.config])
    errs = [l for l in r.stderr.splitlines() if l.startswith("<3>")]
    t.ok(r.returncode != 0, "an invalid value stops startup")
    t.ok(len(errs) == 1 and "num.network.threads" in errs[0] and "'many'" in errs[0]
         and "server.properties:" in errs[0],
         "one message naming key, value and line: %s" % (errs[:1],))
    t.ok(not os.path.exists(n.sock) and not os.path.exists(n.logdir),
         "nothing was started half way (no socket, no log dir)")

    write({}, drop=("controller.quorum.voters",))
    r = run(["--config", n.config])
    t.ok(r.returncode != 0 and "controller.quorum.voters" in r.stderr,
         "a missing required key names the key")

    write({"some.unknown.key": "1"})
    r = run(["--config", n.config, "--check-config"])
    t.ok(r.returncode == 0 and "<4>" in r.stderr and "some.unknown.key" in r.stderr,
         "an unknown key is a warning naming it")

    r = run(["--config", os.path.join(tmp, "missing.properties")])
    t.ok(r.returncode != 0 and "missing.properties" in r.stderr, "a missing file is named")

    # a listener port already taken: nothing left running, socket removed
    write({})
    busy = Node(tmp, name="busy")
    busy.start()
    try:
        busy.wait_running()
        base["listeners"] = "PLAINTEXT://127.0.0.1:%d,CONTROLLER://127.0.0.1:%d" % (
            busy.port, free_port())
        write({})
        r = run(["--config", n.config])
        t.ok(r.returncode != 0 and "cannot listen" in r.stderr,
             "a port in use stops startup: %s" % r.stderr.strip().splitlines()[-1:])
        t.ok(not os.path.exists(n.sock), "and removes its control socket")

        # two nodes on one log dir: the second is refused
        write({"log.dirs": busy.logdir})
        r = run(["--config", n.config])
        t.ok(r.returncode != 0 and "locked by another process" in r.stderr,
             "a log dir in use by another node is refused")
    finally:
        busy.kill()

    # the embedded default is complete
    r = run(["--print-default-config"])
    t.ok(r.returncode == 0 and "process.roles=broker,controller" in r.stdout,
         "the embedded default config can be printed")

t.done()
