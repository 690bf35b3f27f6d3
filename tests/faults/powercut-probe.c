/*
 * Drives the power-cut shim through the calls it models, one per
 * argument, in the current directory (the shim's root), then SIGKILLs
 * itself: tests/integration/test_fault_powercut_model.py cuts the power
 * after it and checks what is left against what each call promised.
 *
 *   open NAME FLAGS   FLAGS: any of c (O_CREAT), x (O_EXCL), d (O_DSYNC),
 *                     t (O_TRUNC), s (O_SYNC)
 *   pwrite NAME OFF LEN CH        pwrite of LEN bytes CH at OFF
 *   pwritev2 NAME OFF LEN CH      pwritev2 with RWF_DSYNC
 *   sys-pwritev NAME OFF LEN CH   pwritev through syscall(), as libuv does
 *   aio NAME OFF LEN CH           io_submit a PWRITEV and reap it
 *   aio-dsync NAME OFF LEN CH     the same with RWF_DSYNC
 *   aio-inflight NAME OFF LEN CH  io_submit, let it complete, never reap
 *   fsync NAME | fdatasync NAME | dirsync
 *   trunc NAME LEN | falloc NAME LEN | unlink NAME | rename OLD NEW
 *   rmdir NAME
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/aio_abi.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#define FILES 16

static struct {
	char name[64];
	int fd;
} files[FILES];

static int
fd_of(const char *name)
{
	for (int i = 0; i < FILES; i++)
		if (files[i].fd > 0 && strcmp(files[i].name, name) == 0)
			return files[i].fd;
	fprintf(stderr, "probe: %s is not open\n", name);
	exit(2);
}

static void
opened(const char *name, int fd)
{
	for (int i = 0; i < FILES; i++)
		if (files[i].fd <= 0) {
			snprintf(files[i].name, sizeof(files[i].name), "%s",
			    name);
			files[i].fd = fd;
			return;
		}
	exit(2);
}

static void
die(const char *what)
{
	perror(what);
	exit(1);
}

/* One AIO write; reaped unless inflight. */
static void
aio_write(int fd, off_t off, char *buf, size_t len, int rw_flags,
    int inflight)
{
	aio_context_t ctx = 0;
	struct iovec iov = { buf, len };
	struct iocb cb, *cbs[1] = { &cb };
	struct io_event ev;

	if (syscall(SYS_io_setup, 1, &ctx) != 0)
		die("io_setup");
	memset(&cb, 0, sizeof(cb));
	cb.aio_fildes = (uint32_t)fd;
	cb.aio_lio_opcode = IOCB_CMD_PWRITEV;
	cb.aio_buf = (uint64_t)(uintptr_t)&iov;
	cb.aio_nbytes = 1;
	cb.aio_offset = off;
	cb.aio_rw_flags = rw_flags;
	if (syscall(SYS_io_submit, ctx, 1, cbs) != 1)
		die("io_submit");
	if (inflight) {
		usleep(200000);	/* done in the kernel, not yet seen */
		return;
	}
	if (syscall(SYS_io_getevents, ctx, 1, 1, &ev, NULL) != 1 ||
	    ev.res != (int64_t)len)
		die("io_getevents");
	syscall(SYS_io_destroy, ctx);
}

int
main(int argc, char **argv)
{
	static char buf[1 << 20];
	int i = 1, fd, flags;

	while (i < argc) {
		const char *op = argv[i++];

		if (strcmp(op, "open") == 0 && i + 1 < argc) {
			flags = O_WRONLY;
			for (const char *f = argv[i + 1]; *f; f++)
				flags |= *f == 'c' ? O_CREAT : *f == 'x' ?
				    O_EXCL : *f == 'd' ? O_DSYNC : *f == 't' ?
				    O_TRUNC : *f == 's' ? O_SYNC : 0;
			if ((fd = open(argv[i], flags, 0644)) < 0)
				die(argv[i]);
			opened(argv[i], fd);
			i += 2;
		} else if (strcmp(op, "dirsync") == 0) {
			if ((fd = open(".", O_RDONLY | O_DIRECTORY)) < 0 ||
			    fsync(fd) != 0)
				die("dirsync");
			close(fd);
		} else if ((strcmp(op, "fsync") == 0 ||
		    strcmp(op, "fdatasync") == 0) && i < argc) {
			fd = fd_of(argv[i++]);
			if ((op[1] == 's' ? fsync(fd) : fdatasync(fd)) != 0)
				die(op);
		} else if ((strcmp(op, "trunc") == 0 ||
		    strcmp(op, "falloc") == 0) && i + 1 < argc) {
			fd = fd_of(argv[i]);
			if ((op[0] == 't' ? ftruncate(fd, atol(argv[i + 1])) :
			    posix_fallocate(fd, 0, atol(argv[i + 1]))) != 0)
				die(op);
			i += 2;
		} else if (strcmp(op, "unlink") == 0 && i < argc) {
			if (unlink(argv[i++]) != 0)
				die("unlink");
		} else if (strcmp(op, "rmdir") == 0 && i < argc) {
			if (rmdir(argv[i++]) != 0)
				die("rmdir");
		} else if (strcmp(op, "rename") == 0 && i + 1 < argc) {
			if (rename(argv[i], argv[i + 1]) != 0)
				die("rename");
			i += 2;
		} else if (i + 3 < argc) {
			off_t off = atol(argv[i + 1]);
			size_t len = (size_t)atol(argv[i + 2]);
			struct iovec iov = { buf, len };

			if (len > sizeof(buf))
				exit(2);
			fd = fd_of(argv[i]);
			memset(buf, argv[i + 3][0], len);
			i += 4;
			if (strcmp(op, "pwrite") == 0) {
				if (pwrite(fd, buf, len, off) != (ssize_t)len)
					die("pwrite");
			} else if (strcmp(op, "pwritev2") == 0) {
				if (pwritev2(fd, &iov, 1, off, RWF_DSYNC) !=
				    (ssize_t)len)
					die("pwritev2");
			} else if (strcmp(op, "sys-pwritev") == 0) {
				if (syscall(SYS_pwritev, fd, &iov, 1, (long)off,
				    0L) != (long)len)
					die("pwritev");
			} else if (strcmp(op, "aio") == 0)
				aio_write(fd, off, buf, len, 0, 0);
			else if (strcmp(op, "aio-dsync") == 0)
				aio_write(fd, off, buf, len, RWF_DSYNC, 0);
			else if (strcmp(op, "aio-inflight") == 0)
				aio_write(fd, off, buf, len, 0, 1);
			else
				exit(2);
		} else {
			fprintf(stderr, "probe: bad step %s\n", op);
			exit(2);
		}
	}
	raise(SIGKILL);	/* the power goes */
	return 0;
}
