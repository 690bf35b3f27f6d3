"""Power cuts for tests, with the LD_PRELOAD shim tests/faults/powercut.c.

baseline() records the tree under a root as durable before a node starts;
env() is what the node runs with so the shim records each sync; cut(),
after every process of the node was SIGKILLed, puts the tree back to what
was durable: file contents as of their last fsync/fdatasync, directory
entries as of their directory's last fsync, ranges written synchronously
(O_DSYNC, RWF_DSYNC, libraft's AIO writes once reaped) as of their write.
The metadata quorum's directory is cut like every other.
"""
import fcntl
import os
import shutil
import struct

from rntest import BUILDDIR

SHIM = os.path.join(BUILDDIR, "tests", "faults", "libpowercut.so")


FS_IOC_GETVERSION = 0x80087601


def key(path):
    """The shim's name for path's inode: "<inode>.<generation>"."""
    st = os.lstat(path)
    gen = 0
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        try:
            gen = struct.unpack("I", fcntl.ioctl(fd, FS_IOC_GETVERSION,
                                                 b"\0" * 4))[0]
        finally:
            os.close(fd)
    except OSError:
        pass
    return "%d.%d" % (st.st_ino, gen)


def env(root, shadow):
    return {"LD_PRELOAD": SHIM, "POWERCUT_ROOT": os.path.realpath(root),
            "POWERCUT_SHADOW": os.path.realpath(shadow)}


def baseline(root, shadow):
    """Everything under root as it is now is durable."""
    shutil.rmtree(shadow, ignore_errors=True)
    os.makedirs(shadow)
    os.chmod(shadow, 0o1777)  # the workers write here after dropping root
    for d, dirs, files in os.walk(root):
        with open(os.path.join(shadow, "dir.%s" % key(d)), "w") as f:
            for name in dirs:
                f.write("%s %s/\n" % (key(os.path.join(d, name)), name))
            for name in files:
                f.write("%s %s\n" % (key(os.path.join(d, name)), name))
        for name in files:
            p = os.path.join(d, name)
            shutil.copyfile(p, os.path.join(shadow, "ino.%s" % key(p)))


def _listing(shadow, ino):
    try:
        with open(os.path.join(shadow, "dir.%s" % ino)) as f:
            return [tuple(l.rstrip("\n").split(" ", 1)) for l in f if l.strip()]
    except FileNotFoundError:
        return None


def _image(shadow, ino):
    try:
        with open(os.path.join(shadow, "ino.%s" % ino), "rb") as f:
            return f.read()
    except FileNotFoundError:
        return b""  # created, never synced: nothing of it is durable


def _remove(p):
    if os.path.isdir(p) and not os.path.islink(p):
        shutil.rmtree(p)
    else:
        os.unlink(p)


def _restore_dir(path, ino, shadow, stats):
    listing = _listing(shadow, ino)
    if listing is None:
        # a directory whose entries were never synced keeps none of them
        for name in os.listdir(path):
            _remove(os.path.join(path, name))
            stats["entries dropped"].append(os.path.join(path, name))
        return
    # "name/" is a directory
    keep = {name.rstrip("/"): (ino, name.endswith("/"))
            for ino, name in listing}
    owner = os.stat(path)
    for name in os.listdir(path):
        if name not in keep or keep[name][1] != os.path.isdir(
                os.path.join(path, name)):
            _remove(os.path.join(path, name))
            stats["entries dropped"].append(os.path.join(path, name))
    for name, (ino, is_dir) in keep.items():
        p = os.path.join(path, name)
        if is_dir:
            if not os.path.isdir(p):
                # removed after its parent's last sync: it comes back
                os.mkdir(p)
                os.chown(p, owner.st_uid, owner.st_gid)
                stats["entries restored"].append(p)
            _restore_dir(p, ino, shadow, stats)
            continue
        data = _image(shadow, ino)
        cur = None
        if os.path.exists(p):
            with open(p, "rb") as f:
                cur = f.read()
        else:
            # unlinked (or renamed away) after its directory's last sync
            stats["entries restored"].append(p)
        if cur != data:
            stats["bytes reverted"] += abs(len(cur or b"") - len(data)) or \
                len(data)
            with open(p, "wb") as f:
                f.write(data)
            if cur is None:
                os.chown(p, owner.st_uid, owner.st_gid)


def cut(root, shadow):
    """The tree as a power failure would leave it; returns what changed."""
    stats = {"entries dropped": [], "entries restored": [],
             "bytes reverted": 0}
    _restore_dir(root, key(root), shadow, stats)
    return stats
