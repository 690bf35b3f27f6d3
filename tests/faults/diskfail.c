/*
 * A failing disk for tests: an LD_PRELOAD shim that makes reads or writes
 * of files under $DISKFAIL_ROOT fail with EIO while the file named by
 * $DISKFAIL_SWITCH says so ("read", "write" or both on one line). The
 * test turns the disk bad and good again by writing that file, without
 * restarting anything.
 *
 * Only the calls runneld's data path makes through libc are covered:
 * write, pwrite, writev, pwritev, fsync and fdatasync for writes; read,
 * pread, preadv and sendfile (the fetch path's zero-copy send, where the
 * file is the source) for reads. Index files are mmap'd and their stores
 * are not seen; the first syscall on the segment next to them is.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

static const char *root, *switch_path;
static size_t root_len;

static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_writev)(int, const struct iovec *, int);
static ssize_t (*real_pwritev)(int, const struct iovec *, int, off_t);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static ssize_t (*real_read)(int, void *, size_t);
static ssize_t (*real_pread)(int, void *, size_t, off_t);
static ssize_t (*real_preadv)(int, const struct iovec *, int, off_t);
static ssize_t (*real_sendfile)(int, int, off_t *, size_t);

__attribute__((constructor)) static void
df_init(void)
{
	/* copies: runneld's setproctitle reuses the environment's memory */
	root = getenv("DISKFAIL_ROOT");
	switch_path = getenv("DISKFAIL_SWITCH");
	if (root == NULL || switch_path == NULL ||
	    (root = strdup(root)) == NULL ||
	    (switch_path = strdup(switch_path)) == NULL)
		root = switch_path = NULL;
	else
		root_len = strlen(root);
	real_write = dlsym(RTLD_NEXT, "write");
	real_pwrite = dlsym(RTLD_NEXT, "pwrite");
	real_writev = dlsym(RTLD_NEXT, "writev");
	real_pwritev = dlsym(RTLD_NEXT, "pwritev");
	real_fsync = dlsym(RTLD_NEXT, "fsync");
	real_fdatasync = dlsym(RTLD_NEXT, "fdatasync");
	real_read = dlsym(RTLD_NEXT, "read");
	real_pread = dlsym(RTLD_NEXT, "pread");
	real_preadv = dlsym(RTLD_NEXT, "preadv");
	real_sendfile = dlsym(RTLD_NEXT, "sendfile");
}

/*
 * What the switch says now, read at most every 50 ms a process: 'r'
 * and/or 'w' bits. Read with the real read, not ours.
 */
enum { FAIL_READ = 1, FAIL_WRITE = 2 };

static int
failing(void)
{
	static int state;
	static struct timespec last;
	struct timespec now;
	char buf[32];
	ssize_t n;
	int fd;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if ((now.tv_sec - last.tv_sec) * 1000 +
	    (now.tv_nsec - last.tv_nsec) / 1000000 < 50)
		return state;
	last = now;
	state = 0;
	if ((fd = open(switch_path, O_RDONLY | O_CLOEXEC)) < 0)
		return state;
	n = real_read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return state;
	buf[n] = '\0';
	if (strstr(buf, "read") != NULL)
		state |= FAIL_READ;
	if (strstr(buf, "write") != NULL)
		state |= FAIL_WRITE;
	return state;
}

/* Is fd a regular file under the root, and is that kind of call failing? */
static bool
fails(int fd, int what)
{
	char link[64], path[PATH_MAX];
	struct stat st;
	ssize_t n;

	if (root == NULL || fd < 0 || (failing() & what) == 0)
		return false;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		return false;
	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	if ((n = readlink(link, path, sizeof(path) - 1)) <= 0)
		return false;
	path[n] = '\0';
	if (strncmp(path, root, root_len) != 0 || path[root_len] != '/')
		return false;
	errno = EIO;
	return true;
}

ssize_t
write(int fd, const void *b, size_t n)
{
	return fails(fd, FAIL_WRITE) ? -1 : real_write(fd, b, n);
}

ssize_t
pwrite(int fd, const void *b, size_t n, off_t off)
{
	return fails(fd, FAIL_WRITE) ? -1 : real_pwrite(fd, b, n, off);
}

ssize_t
pwrite64(int fd, const void *b, size_t n, off_t off)
{
	return pwrite(fd, b, n, off);
}

ssize_t
writev(int fd, const struct iovec *v, int n)
{
	return fails(fd, FAIL_WRITE) ? -1 : real_writev(fd, v, n);
}

ssize_t
pwritev(int fd, const struct iovec *v, int n, off_t off)
{
	return fails(fd, FAIL_WRITE) ? -1 : real_pwritev(fd, v, n, off);
}

int
fsync(int fd)
{
	return fails(fd, FAIL_WRITE) ? -1 : real_fsync(fd);
}

int
fdatasync(int fd)
{
	return fails(fd, FAIL_WRITE) ? -1 : real_fdatasync(fd);
}

ssize_t
read(int fd, void *b, size_t n)
{
	return fails(fd, FAIL_READ) ? -1 : real_read(fd, b, n);
}

ssize_t
pread(int fd, void *b, size_t n, off_t off)
{
	return fails(fd, FAIL_READ) ? -1 : real_pread(fd, b, n, off);
}

ssize_t
pread64(int fd, void *b, size_t n, off_t off)
{
	return pread(fd, b, n, off);
}

ssize_t
preadv(int fd, const struct iovec *v, int n, off_t off)
{
	return fails(fd, FAIL_READ) ? -1 : real_preadv(fd, v, n, off);
}

ssize_t
sendfile(int out, int in, off_t *off, size_t n)
{
	return fails(in, FAIL_READ) ? -1 : real_sendfile(out, in, off, n);
}

ssize_t
sendfile64(int out, int in, off_t *off, size_t n)
{
	return sendfile(out, in, off, n);
}
