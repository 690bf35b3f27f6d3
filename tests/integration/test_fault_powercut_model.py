"""The power-cut model itself (tests/faults/powercut.c): a probe program
makes each call the shim models under it, SIGKILLs itself, the power is
cut (tests/lib/powercut.py) and what is left must be exactly what the
calls promised: synchronous writes (O_DSYNC, RWF_DSYNC, libraft's Linux
AIO once reaped, libuv's pwritev through syscall()) keep their range,
unsynced writes, truncations, allocations, renames and unlinks are undone,
an AIO write never reaped is lost, a directory keeps the entries of its
last fsync. Needs `make tests/faults/libpowercut.so
tests/faults/powercut-probe` (make check builds both)."""
import os
import subprocess

import powercut
from rntest import BUILDDIR, Tap, TempDir

t = Tap()
PROBE = os.path.join(BUILDDIR, "tests", "faults", "powercut-probe")


def run(tmp, name, steps, before=None):
    """The files under a fresh root after the probe's steps and a cut
    ("dir/file" names: files in a subdirectory)."""
    root = os.path.join(tmp, name)
    shadow = os.path.join(tmp, name + "-shadow")
    os.makedirs(root)
    for fname, data in (before or {}).items():
        os.makedirs(os.path.dirname(os.path.join(root, fname)),
                    exist_ok=True)
        with open(os.path.join(root, fname), "wb") as f:
            f.write(data)
    powercut.baseline(root, shadow)
    p = subprocess.run([PROBE] + steps, cwd=root,
                       env=dict(os.environ, **powercut.env(root, shadow)),
                       capture_output=True, text=True)
    t.ok(p.returncode == -9, "%s: the probe ran its steps (%s)"
         % (name, p.stderr.strip() or "killed"))
    stats = powercut.cut(root, shadow)
    out = {}
    for d, _dirs, files in os.walk(root):
        for fname in files:
            with open(os.path.join(d, fname), "rb") as f:
                out[os.path.relpath(os.path.join(d, fname), root)] = f.read()
    return out, stats


with TempDir() as tmp:
    # libraft's segment: O_DSYNC, allocated, AIO writes reaped in order
    got, _ = run(tmp, "aio-dsync-fd", [
        "open", "seg", "cxd", "falloc", "seg", "65536", "dirsync",
        "aio", "seg", "0", "4096", "a", "aio", "seg", "4096", "4096", "b"])
    t.eq(got, {"seg": b"a" * 4096 + b"b" * 4096},
         "AIO writes on an O_DSYNC file are durable once reaped, and the "
         "size up to their end (not the unsynced allocation)")

    got, _ = run(tmp, "aio-inflight", [
        "open", "seg", "cxd", "dirsync", "aio", "seg", "0", "4096", "a",
        "aio-inflight", "seg", "4096", "4096", "b"])
    t.eq(got, {"seg": b"a" * 4096},
         "an AIO write never reaped is lost to the cut")

    got, _ = run(tmp, "aio-plain", [
        "open", "f", "cx", "dirsync", "aio", "f", "0", "4096", "a",
        "aio-dsync", "f", "8192", "4096", "c"])
    t.eq(got, {"f": b"\0" * 8192 + b"c" * 4096},
         "without O_DSYNC an AIO write is not durable, with RWF_DSYNC it is")

    got, _ = run(tmp, "fallocate", [
        "open", "f", "cx", "falloc", "f", "8192", "dirsync",
        "open", "g", "cx", "falloc", "g", "8192", "fsync", "g", "dirsync"])
    t.eq(got, {"f": b"", "g": b"\0" * 8192},
         "an allocation is durable only after the file's own fsync")

    got, _ = run(tmp, "sync-writes", [
        "open", "d", "cxd", "open", "s", "cxs", "open", "v", "cx",
        "open", "u", "cxd", "dirsync",
        "pwrite", "d", "0", "10", "d", "pwrite", "s", "0", "10", "s",
        "pwritev2", "v", "0", "10", "v", "pwrite", "v", "10", "10", "x",
        "sys-pwritev", "u", "0", "10", "u"])
    t.eq(got, {"d": b"d" * 10, "s": b"s" * 10, "u": b"u" * 10,
               "v": b"v" * 10},
         "O_DSYNC, O_SYNC, pwritev2(RWF_DSYNC) and syscall(pwritev) on an "
         "O_DSYNC file are durable; a plain write after them is not")

    got, _ = run(tmp, "fsync", [
        "open", "f", "cx", "pwrite", "f", "0", "10", "a", "fdatasync", "f",
        "pwrite", "f", "10", "10", "b", "dirsync",
        "open", "n", "cx", "pwrite", "n", "0", "10", "n", "fsync", "n"])
    t.eq(got, {"f": b"a" * 10},
         "fdatasync keeps what was written before it; a file whose "
         "directory was never synced after its creation is gone")

    old = {"keep": b"K" * 100, "gone": b"G" * 10, "moved": b"M" * 10}
    got, st = run(tmp, "undone", [
        "open", "keep", "t", "pwrite", "keep", "0", "5", "x",
        "unlink", "gone", "rename", "moved", "there",
        "open", "new", "cx", "pwrite", "new", "0", "10", "n", "fsync", "new"],
        before=old)
    t.eq(got, old, "O_TRUNC, an unlink and a rename without a directory "
         "fsync are undone; a file created without one is gone (%d "
         "restored, %d dropped)" % (len(st["entries restored"]),
                                    len(st["entries dropped"])))

    got, _ = run(tmp, "dir-synced", [
        "unlink", "gone", "rename", "moved", "there", "open", "keep", "",
        "trunc", "keep", "50", "fsync", "keep", "dirsync"], before=old)
    t.eq(got, {"keep": b"K" * 50, "there": b"M" * 10},
         "after the directory's fsync the unlink and the rename hold; a "
         "truncation holds after the file's fsync")

    got, _ = run(tmp, "reused", [
        "open", "a", "cx", "pwrite", "a", "0", "10", "a", "fsync", "a",
        "dirsync", "unlink", "a", "dirsync",
        "open", "b", "cx", "dirsync"])
    t.eq(got, {"b": b""}, "a file created afresh has nothing durable, "
         "whatever inode it got")

    got, _ = run(tmp, "rmdir", ["unlink", "d/f", "rmdir", "d"],
                 before={"d/f": b"F" * 10})
    t.eq(got, {"d/f": b"F" * 10}, "a directory removed without its "
         "parent's fsync comes back, with its files")

t.done()
