/*
 * A power cut for tests: an LD_PRELOAD shim that records, for every file
 * under $POWERCUT_ROOT, what a power failure would leave of it.
 *
 * It keeps what POSIX promises, no more: a file's contents (and size) are
 * durable as of its last fsync or fdatasync; a write on a descriptor
 * opened O_SYNC or O_DSYNC, or a pwritev2 with RWF_SYNC or RWF_DSYNC,
 * makes the range it wrote durable (and the size up to its end) once it
 * returns; a directory's entries are durable as of its last fsync.
 * ftruncate, fallocate, open(O_TRUNC), rename and unlink are durable only
 * through those syncs. libraft 0.15 writes its segments with Linux AIO
 * through syscall(): io_submit of an IOCB_CMD_PWRITEV on an O_DSYNC
 * descriptor (O_DIRECT and RWF_NOWAIT added where the filesystem allows,
 * as ext4 does: then from its loop thread, woken by an eventfd; else
 * io_submit and io_getevents from a libuv pool thread). Either way such a
 * write is durable when its completion is reaped (io_getevents), the
 * moment libraft learns of it; one still in flight at the cut is lost.
 * At each durable point it copies what became durable into
 * $POWERCUT_SHADOW:
 *
 *   ino.<id>   the file's durable contents
 *   dir.<id>   the directory's durable entries, "<id> <name>" lines
 *              ("<name>/" for a directory)
 *
 * where <id> is "<inode>.<generation>" (FS_IOC_GETVERSION): ext4 reuses
 * an unlinked file's inode number at once, and a name the directory
 * still holds durably must not get the contents of the new file.
 *
 * tests/lib/powercut.py takes a baseline before the node starts and,
 * after SIGKILLing every process of the node, puts the tree back to what
 * the shadow says: the power cut. Files outside the root are untouched.
 * A file created afresh starts with nothing durable. The copies are
 * taken under an flock on ino.<id>.lock, as several processes (the
 * workers) and threads may sync one file; a whole-file copy is written
 * aside and renamed in, so a SIGKILL in the middle of one never leaves a
 * shorter durable image.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/aio_abi.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

static const char *root, *shadow;
static size_t root_len;

static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_writev)(int, const struct iovec *, int);
static ssize_t (*real_pwritev)(int, const struct iovec *, int, off_t);
static int (*real_open)(const char *, int, ...);
static int (*real_openat)(int, const char *, int, ...);
static ssize_t (*real_pwritev2)(int, const struct iovec *, int, off_t, int);
static long (*real_syscall)(long, ...);

/*
 * AIO writes submitted and not yet reaped: the iocb is the key the
 * completion names (io_event.obj). Bounded: a write that finds the table
 * full is simply not recorded as durable (the cut may then lose it, which
 * a real power cut may too).
 */
#define PC_AIO 256
struct pc_aio {
	__u64 obj;
	int fd;
	off_t off;
	bool dsync;	/* the whole write: RWF_(D)SYNC or an O_(D)SYNC fd */
	bool fsync;	/* IOCB_CMD_FSYNC / FDSYNC */
};
static struct pc_aio aio[PC_AIO];
static pthread_mutex_t aio_lock = PTHREAD_MUTEX_INITIALIZER;

__attribute__((constructor)) static void
pc_init(void)
{
	/*
	 * Copies: runneld's setproctitle reuses the memory the environment
	 * was in.
	 */
	root = getenv("POWERCUT_ROOT");
	shadow = getenv("POWERCUT_SHADOW");
	if (root == NULL || shadow == NULL ||
	    (root = strdup(root)) == NULL || (shadow = strdup(shadow)) == NULL)
		root = shadow = NULL;
	else
		root_len = strlen(root);
	real_fsync = dlsym(RTLD_NEXT, "fsync");
	real_fdatasync = dlsym(RTLD_NEXT, "fdatasync");
	real_write = dlsym(RTLD_NEXT, "write");
	real_pwrite = dlsym(RTLD_NEXT, "pwrite");
	real_writev = dlsym(RTLD_NEXT, "writev");
	real_pwritev = dlsym(RTLD_NEXT, "pwritev");
	real_open = dlsym(RTLD_NEXT, "open");
	real_openat = dlsym(RTLD_NEXT, "openat");
	real_pwritev2 = dlsym(RTLD_NEXT, "pwritev2");
	real_syscall = dlsym(RTLD_NEXT, "syscall");
}

/* Is fd a file or directory under the root? */
static bool
tracked(int fd, struct stat *st)
{
	char link[64], path[PATH_MAX];
	ssize_t n;

	if (root == NULL || fd < 0)
		return false;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	if ((n = readlink(link, path, sizeof(path) - 1)) <= 0)
		return false;
	path[n] = '\0';
	if (strncmp(path, root, root_len) != 0 ||
	    (path[root_len] != '/' && path[root_len] != '\0'))
		return false;
	return fstat(fd, st) == 0 && (S_ISREG(st->st_mode) ||
	    S_ISDIR(st->st_mode));
}

/*
 * Copies bytes [off, off + len) of the file behind fd into out at the
 * same offset (len < 0: to its end), through a read-only descriptor of its
 * own: fd may be open for writing only, or O_DIRECT. Returns false if the
 * copy fell short.
 */
static bool
copy_range(int fd, int out, off_t off, off_t len)
{
	char buf[1 << 16], link[64];
	ssize_t n;
	size_t want;
	bool ok = true;
	int in;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	if ((in = real_open(link, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	while (len != 0) {
		want = len < 0 || len > (off_t)sizeof(buf) ? sizeof(buf) :
		    (size_t)len;
		if ((n = pread(in, buf, want, off)) <= 0) {
			ok = n == 0 && len < 0;
			break;
		}
		if (real_pwrite(out, buf, (size_t)n, off) != n) {
			ok = false;
			break;
		}
		off += n;
		if (len > 0)
			len -= n;
	}
	close(in);
	return ok;
}

/* The inode's generation (0 where the filesystem has none). */
static unsigned long
generation(int fd)
{
	int gen = 0;

	return ioctl(fd, FS_IOC_GETVERSION, &gen) == 0 ? (unsigned)gen : 0;
}

/* The generation of dirfd's entry name, opened aside. */
static unsigned long
generation_at(int dirfd, const char *name)
{
	unsigned long gen = 0;
	int fd = real_openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_NOCTTY | O_CLOEXEC);

	if (fd >= 0) {
		gen = generation(fd);
		close(fd);
	}
	return gen;
}

static bool
is_dir(int dirfd, const struct dirent *e)
{
	struct stat st;

	if (e->d_type != DT_UNKNOWN)
		return e->d_type == DT_DIR;
	return fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISDIR(st.st_mode);
}

/*
 * Writes "<inode>.<generation> <name>" for each entry of the directory,
 * "<name>/" for a directory (one removed since comes back as one).
 */
static void
copy_listing(int fd, int out)
{
	int dfd = dup(fd);
	DIR *d;
	struct dirent *e;
	FILE *f;

	if (dfd < 0 || (d = fdopendir(dfd)) == NULL) {
		if (dfd >= 0)
			close(dfd);
		return;
	}
	rewinddir(d);
	if (ftruncate(out, 0) == 0 && (f = fdopen(dup(out), "w")) != NULL) {
		while ((e = readdir(d)) != NULL)
			if (strcmp(e->d_name, ".") != 0 &&
			    strcmp(e->d_name, "..") != 0)
				fprintf(f, "%llu.%lu %s%s\n",
				    (unsigned long long)e->d_ino,
				    generation_at(dirfd(d), e->d_name),
				    e->d_name, is_dir(dirfd(d), e) ? "/" : "");
		fclose(f);
	}
	closedir(d);
}

/* The shadow's name for fd's inode; false if fd is not tracked. */
static bool
shadow_name(int fd, char *name, size_t size, struct stat *st)
{
	if (!tracked(fd, st))
		return false;
	snprintf(name, size, "%s/%s.%llu.%lu", shadow,
	    S_ISDIR(st->st_mode) ? "dir" : "ino",
	    (unsigned long long)st->st_ino, generation(fd));
	return true;
}

/* The lock every change to one shadow image is made under; -1 if none. */
static int
lock_image(const char *name)
{
	char lock[PATH_MAX];
	int fd;

	snprintf(lock, sizeof(lock), "%s.lock", name);
	if ((fd = real_open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0666)) < 0)
		return -1;
	if (flock(fd, LOCK_EX) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * Records what a sync of fd made durable: the whole file (or directory
 * listing) as it is now, written aside and renamed over the image.
 */
static void
made_durable(int fd)
{
	char name[PATH_MAX], tmp[PATH_MAX + 32];
	struct stat st;
	bool ok;
	int out, lk, saved = errno;

	if (!shadow_name(fd, name, sizeof(name), &st) ||
	    (lk = lock_image(name)) < 0)
		goto done;
	snprintf(tmp, sizeof(tmp), "%s.tmp%ld", name, (long)gettid());
	if ((out = real_open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0666)) >= 0) {
		if (S_ISDIR(st.st_mode)) {
			copy_listing(fd, out);
			ok = true;
		} else
			ok = copy_range(fd, out, 0, -1);
		close(out);
		if (!ok || rename(tmp, name) != 0)
			unlink(tmp);
	}
	close(lk);
done:
	errno = saved;
}

/*
 * Records that a synchronous write of [off, off + len) of fd is durable:
 * those bytes, and the file's size up to their end (the metadata needed
 * to read them back), nothing else of what it was not synced.
 */
static void
made_range_durable(int fd, off_t off, size_t len)
{
	char name[PATH_MAX];
	struct stat st;
	int out, lk, saved = errno;

	if (len == 0 || !shadow_name(fd, name, sizeof(name), &st) ||
	    S_ISDIR(st.st_mode) || (lk = lock_image(name)) < 0)
		goto done;
	if ((out = real_open(name, O_RDWR | O_CREAT | O_CLOEXEC, 0666)) >= 0) {
		(void)copy_range(fd, out, off, (off_t)len);
		close(out);
	}
	close(lk);
done:
	errno = saved;
}

/* A file created afresh: nothing of it is durable yet. */
static void
created(int fd)
{
	char name[PATH_MAX];
	struct stat st;
	int lk, saved = errno;

	if (!shadow_name(fd, name, sizeof(name), &st) || S_ISDIR(st.st_mode) ||
	    (lk = lock_image(name)) < 0)
		goto done;
	unlink(name);
	close(lk);
done:
	errno = saved;
}

int
fsync(int fd)
{
	int rc = real_fsync(fd);

	if (rc == 0)
		made_durable(fd);
	return rc;
}

int
fdatasync(int fd)
{
	int rc = real_fdatasync(fd);

	if (rc == 0)
		made_durable(fd);
	return rc;
}

/* Does a plain write on fd reach the disk before it returns? */
static bool
sync_writes(int fd)
{
	int fl = fd >= 0 ? fcntl(fd, F_GETFL) : -1;

	return fl >= 0 && (fl & O_DSYNC) != 0;	/* O_SYNC includes O_DSYNC */
}

/* After a write of n bytes at off: durable if fd writes synchronously. */
static void
after_write(int fd, off_t off, ssize_t n)
{
	if (n > 0 && sync_writes(fd))
		made_range_durable(fd, off, (size_t)n);
}

/* Where a write at the file position that wrote n bytes began. */
static off_t
began_at(int fd, ssize_t n)
{
	off_t end = n > 0 ? lseek(fd, 0, SEEK_CUR) : -1;

	return end >= n ? end - n : 0;
}

ssize_t
write(int fd, const void *b, size_t n)
{
	ssize_t rc = real_write(fd, b, n);

	if (rc > 0 && root != NULL && sync_writes(fd))
		after_write(fd, began_at(fd, rc), rc);
	return rc;
}

ssize_t
pwrite(int fd, const void *b, size_t n, off_t off)
{
	ssize_t rc = real_pwrite(fd, b, n, off);

	if (root != NULL)
		after_write(fd, off, rc);
	return rc;
}

ssize_t
pwrite64(int fd, const void *b, size_t n, off_t off)
{
	return pwrite(fd, b, n, off);
}

ssize_t
writev(int fd, const struct iovec *v, int n)
{
	ssize_t rc = real_writev(fd, v, n);

	if (rc > 0 && root != NULL && sync_writes(fd))
		after_write(fd, began_at(fd, rc), rc);
	return rc;
}

ssize_t
pwritev(int fd, const struct iovec *v, int n, off_t off)
{
	ssize_t rc = real_pwritev(fd, v, n, off);

	if (root != NULL)
		after_write(fd, off, rc);
	return rc;
}

ssize_t
pwritev64(int fd, const struct iovec *v, int n, off_t off)
{
	return pwritev(fd, v, n, off);
}

/* pwritev2: RWF_DSYNC / RWF_SYNC make this one write synchronous. */
ssize_t
pwritev2(int fd, const struct iovec *v, int n, off_t off, int flags)
{
	ssize_t rc = real_pwritev2(fd, v, n, off, flags);

	if (rc > 0 && root != NULL && off >= 0) {
		if (flags & (RWF_DSYNC | RWF_SYNC))
			made_range_durable(fd, off, (size_t)rc);
		else
			after_write(fd, off, rc);
	}
	return rc;
}

ssize_t
pwritev64v2(int fd, const struct iovec *v, int n, off_t off, int flags)
{
	return pwritev2(fd, v, n, off, flags);
}

/* A file opened O_CREAT that did not exist before starts with nothing. */
static void
opened(int fd, int flags, bool existed)
{
	if (fd >= 0 && root != NULL && (flags & O_CREAT) && !existed)
		created(fd);
}

static bool
exists_at(int dirfd, const char *path, int flags)
{
	struct stat st;

	if (root == NULL || !(flags & O_CREAT))
		return true;
	if (flags & O_EXCL)
		return false;	/* it succeeds only if it did not */
	return fstatat(dirfd, path, &st, 0) == 0;
}

int
open(const char *path, int flags, ...)
{
	mode_t mode = 0;
	va_list ap;
	bool existed;
	int fd;

	if (flags & (O_CREAT | O_TMPFILE)) {
		va_start(ap, flags);
		mode = (mode_t)va_arg(ap, int);
		va_end(ap);
	}
	existed = exists_at(AT_FDCWD, path, flags);
	fd = real_open(path, flags, mode);
	opened(fd, flags, existed);
	return fd;
}

int
open64(const char *path, int flags, ...)
{
	mode_t mode = 0;
	va_list ap;

	if (flags & (O_CREAT | O_TMPFILE)) {
		va_start(ap, flags);
		mode = (mode_t)va_arg(ap, int);
		va_end(ap);
	}
	return open(path, flags, mode);
}

/* The fortified entry points (_FORTIFY_SOURCE, no mode argument). */
int
__open_2(const char *path, int flags)
{
	return open(path, flags);
}

int
__open64_2(const char *path, int flags)
{
	return open(path, flags);
}

int
openat(int dirfd, const char *path, int flags, ...)
{
	mode_t mode = 0;
	va_list ap;
	bool existed;
	int fd;

	if (flags & (O_CREAT | O_TMPFILE)) {
		va_start(ap, flags);
		mode = (mode_t)va_arg(ap, int);
		va_end(ap);
	}
	existed = exists_at(dirfd, path, flags);
	fd = real_openat(dirfd, path, flags, mode);
	opened(fd, flags, existed);
	return fd;
}

int
openat64(int dirfd, const char *path, int flags, ...)
{
	mode_t mode = 0;
	va_list ap;

	if (flags & (O_CREAT | O_TMPFILE)) {
		va_start(ap, flags);
		mode = (mode_t)va_arg(ap, int);
		va_end(ap);
	}
	return openat(dirfd, path, flags, mode);
}

int
__openat_2(int dirfd, const char *path, int flags)
{
	return openat(dirfd, path, flags);
}

int
__openat64_2(int dirfd, const char *path, int flags)
{
	return openat(dirfd, path, flags);
}

/*
 * Linux AIO, as libraft uses it through syscall(): io_submit records each
 * write (where, and whether it is synchronous), io_getevents makes the
 * completed ones durable before the caller sees them. Everything else
 * goes straight through, and so does everything when no root is set.
 */
static void
aio_submitted(long nr, struct iocb **iocbs)
{
	struct iocb *cb;
	long i;
	int j;

	pthread_mutex_lock(&aio_lock);
	for (i = 0; i < nr; i++) {
		cb = iocbs[i];
		if (cb->aio_lio_opcode != IOCB_CMD_PWRITE &&
		    cb->aio_lio_opcode != IOCB_CMD_PWRITEV &&
		    cb->aio_lio_opcode != IOCB_CMD_FSYNC &&
		    cb->aio_lio_opcode != IOCB_CMD_FDSYNC)
			continue;
		for (j = 0; j < PC_AIO && aio[j].obj != 0; j++)
			;
		if (j == PC_AIO)
			break;
		aio[j].obj = (__u64)(uintptr_t)cb;
		aio[j].fd = (int)cb->aio_fildes;
		aio[j].off = (off_t)cb->aio_offset;
		aio[j].fsync = cb->aio_lio_opcode == IOCB_CMD_FSYNC ||
		    cb->aio_lio_opcode == IOCB_CMD_FDSYNC;
		aio[j].dsync = (cb->aio_rw_flags & (RWF_DSYNC | RWF_SYNC)) ||
		    sync_writes(aio[j].fd);
	}
	pthread_mutex_unlock(&aio_lock);
}

/* iocbs the kernel refused (io_submit took fewer, or failed). */
static void
aio_refused(struct iocb **iocbs, long from, long nr)
{
	long i;
	int j;

	pthread_mutex_lock(&aio_lock);
	for (i = from; i < nr; i++)
		for (j = 0; j < PC_AIO; j++)
			if (aio[j].obj == (__u64)(uintptr_t)iocbs[i])
				aio[j].obj = 0;
	pthread_mutex_unlock(&aio_lock);
}

static void
aio_reaped(long n, struct io_event *ev)
{
	struct pc_aio done;
	long i;
	int j;

	for (i = 0; i < n; i++) {
		pthread_mutex_lock(&aio_lock);
		for (j = 0; j < PC_AIO && aio[j].obj != ev[i].obj; j++)
			;
		if (j < PC_AIO) {
			done = aio[j];
			aio[j].obj = 0;
		}
		pthread_mutex_unlock(&aio_lock);
		if (j == PC_AIO || ev[i].res < 0)
			continue;
		if (done.fsync)
			made_durable(done.fd);
		else if (done.dsync)
			made_range_durable(done.fd, done.off, (size_t)ev[i].res);
	}
}

long
syscall(long nr, ...)
{
	long a[6], rc;
	va_list ap;
	int i;

	va_start(ap, nr);
	for (i = 0; i < 6; i++)
		a[i] = va_arg(ap, long);
	va_end(ap);
	if (root != NULL && nr == SYS_io_submit && a[1] > 0) {
		/* recorded first: the completion may be reaped at once */
		aio_submitted(a[1], (struct iocb **)a[2]);
		rc = real_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
		if (rc < a[1])
			aio_refused((struct iocb **)a[2], rc < 0 ? 0 : rc, a[1]);
		return rc;
	}
	rc = real_syscall(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	if (root == NULL || rc <= 0)
		return rc;
	if (nr == SYS_io_getevents || nr == SYS_io_pgetevents)
		aio_reaped(rc, (struct io_event *)a[3]);
	else if (nr == SYS_pwritev && sync_writes((int)a[0]))
		made_range_durable((int)a[0], (off_t)a[3], (size_t)rc);
	else if (nr == SYS_pwritev2 && ((a[5] & (RWF_DSYNC | RWF_SYNC)) ||
	    sync_writes((int)a[0])))
		made_range_durable((int)a[0], (off_t)a[3], (size_t)rc);
	else if (nr == SYS_pwrite64 && sync_writes((int)a[0]))
		made_range_durable((int)a[0], (off_t)a[3], (size_t)rc);
	return rc;
}
