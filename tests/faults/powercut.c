/*
 * A power cut for tests: an LD_PRELOAD shim that records, for every file
 * under $POWERCUT_ROOT, what a power failure would leave of it.
 *
 * It keeps the model a journaling filesystem gives (ext4 data=ordered,
 * roughly): a file's contents are durable as of its last fsync or
 * fdatasync (or of each write, when it was opened O_SYNC or O_DSYNC); a
 * directory's entries are durable as of its last fsync. At each such
 * point it copies what became durable into $POWERCUT_SHADOW:
 *
 *   ino.<inode>   the file's durable contents
 *   dir.<inode>   the directory's durable entries, "<inode> <name>" lines
 *
 * tests/lib/powercut.py takes a baseline before the node starts and,
 * after SIGKILLing every process of the node, puts the tree back to what
 * the shadow says: the power cut. Files outside the root are untouched.
 * The copies are taken under an flock on the shadow file, as several
 * processes (the workers) may sync one file.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define PC_FDS 65536

static const char *root, *shadow;
static size_t root_len;
static char sync_fd[PC_FDS]; /* opened O_SYNC/O_DSYNC: each write is durable */

static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_writev)(int, const struct iovec *, int);
static ssize_t (*real_pwritev)(int, const struct iovec *, int, off_t);
static int (*real_open)(const char *, int, ...);
static int (*real_openat)(int, const char *, int, ...);

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
 * Copies the whole file behind fd into out (the shadow image), through a
 * read-only descriptor of its own: fd may be open for writing only.
 */
static void
copy_file(int fd, int out)
{
	char buf[1 << 16], link[64];
	off_t off = 0;
	ssize_t n;
	int in;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	if ((in = real_open(link, O_RDONLY | O_CLOEXEC)) < 0)
		return;
	if (ftruncate(out, 0) == 0)
		while ((n = pread(in, buf, sizeof(buf), off)) > 0) {
			if (pwrite(out, buf, (size_t)n, off) != n)
				break;
			off += n;
		}
	close(in);
}

/* Writes "<inode> <name>" for each entry of the directory fd. */
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
				fprintf(f, "%llu %s\n",
				    (unsigned long long)e->d_ino, e->d_name);
		fclose(f);
	}
	closedir(d);
}

/* Records what a sync of fd made durable. */
static void
made_durable(int fd)
{
	char name[PATH_MAX];
	struct stat st;
	int out, saved = errno;

	if (!tracked(fd, &st))
		return;
	snprintf(name, sizeof(name), "%s/%s.%llu", shadow,
	    S_ISDIR(st.st_mode) ? "dir" : "ino",
	    (unsigned long long)st.st_ino);
	if ((out = real_open(name, O_RDWR | O_CREAT | O_CLOEXEC, 0666)) < 0)
		goto done;
	if (flock(out, LOCK_EX) == 0) {
		if (S_ISDIR(st.st_mode))
			copy_listing(fd, out);
		else
			copy_file(fd, out);
	}
	close(out);
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

static void
after_write(int fd, ssize_t n)
{
	if (n > 0 && fd >= 0 && fd < PC_FDS && sync_fd[fd])
		made_durable(fd);
}

ssize_t
write(int fd, const void *b, size_t n)
{
	ssize_t rc = real_write(fd, b, n);

	after_write(fd, rc);
	return rc;
}

ssize_t
pwrite(int fd, const void *b, size_t n, off_t off)
{
	ssize_t rc = real_pwrite(fd, b, n, off);

	after_write(fd, rc);
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

	after_write(fd, rc);
	return rc;
}

ssize_t
pwritev(int fd, const struct iovec *v, int n, off_t off)
{
	ssize_t rc = real_pwritev(fd, v, n, off);

	after_write(fd, rc);
	return rc;
}

static void
opened(int fd, int flags)
{
	if (fd >= 0 && fd < PC_FDS)
		sync_fd[fd] = (flags & (O_SYNC | O_DSYNC)) != 0;
}

int
open(const char *path, int flags, ...)
{
	mode_t mode = 0;
	va_list ap;
	int fd;

	if (flags & (O_CREAT | O_TMPFILE)) {
		va_start(ap, flags);
		mode = (mode_t)va_arg(ap, int);
		va_end(ap);
	}
	fd = real_open(path, flags, mode);
	opened(fd, flags);
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

int
openat(int dirfd, const char *path, int flags, ...)
{
	mode_t mode = 0;
	va_list ap;
	int fd;

	if (flags & (O_CREAT | O_TMPFILE)) {
		va_start(ap, flags);
		mode = (mode_t)va_arg(ap, int);
		va_end(ap);
	}
	fd = real_openat(dirfd, path, flags, mode);
	opened(fd, flags);
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
