#include "autoconf.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include "common/util.h"

int64_t
rn_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

int64_t
rn_now_ms(void)
{
	return rn_now_ns() / 1000000;
}

int64_t
rn_now_us(void)
{
	return rn_now_ns() / 1000;
}

int64_t
rn_wallclock_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int
rn_set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl == -1 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) == -1)
		return -errno;
	return 0;
}

int
rn_set_cloexec(int fd, int on)
{
	int fl = fcntl(fd, F_GETFD);

	if (fl == -1)
		return -errno;
	fl = on ? fl | FD_CLOEXEC : fl & ~FD_CLOEXEC;
	if (fcntl(fd, F_SETFD, fl) == -1)
		return -errno;
	return 0;
}

/* write() or read() until len bytes moved, EOF (read) or an error. */
static ssize_t
io_full(int fd, char *p, size_t len, bool out)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = out ? write(fd, p + done, len - done) :
		    read(fd, p + done, len - done);
		if (n == 0 && !out)
			break;
		if (n == -1) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		done += (size_t)n;
	}
	return (ssize_t)done;
}

ssize_t
rn_write_all(int fd, const void *buf, size_t len)
{
	return io_full(fd, (char *)(uintptr_t)buf, len, true);
}

ssize_t
rn_read_full(int fd, void *buf, size_t len)
{
	return io_full(fd, buf, len, false);
}

char *
rn_trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = '\0';
	return s;
}

int
rn_mkdir_p(const char *path, mode_t mode)
{
	char buf[4096], *p;

	if (strlcpy(buf, path, sizeof(buf)) >= sizeof(buf))
		return -ENAMETOOLONG;
	for (p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) == -1 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, mode) == -1 && errno != EEXIST)
		return -errno;
	return 0;
}

/* tmp + (fsync) + rename: the one way a file is replaced whole. */
static int
write_rename(const char *path, const void *buf, size_t len, mode_t mode,
    bool sync)
{
	char tmp[4096];
	int fd, rc = 0;

	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.tmp", path) >= sizeof(tmp))
		return -ENAMETOOLONG;
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    mode)) == -1)
		return -errno;
	if (rn_write_all(fd, buf, len) < 0 || (sync && fsync(fd) == -1))
		rc = -errno;
	if (close(fd) == -1 && rc == 0)
		rc = -errno;
	if (rc == 0 && rename(tmp, path) == -1)
		rc = -errno;
	if (rc != 0)
		unlink(tmp);
	return rc;
}

int
rn_fsync_at(int dirfd, const char *name)
{
	int fd, rc = 0;

	if ((fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC)) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (fsync(fd) < 0)
		rc = -errno;
	close(fd);
	return rc;
}

int
rn_write_file_atomic(const char *path, const void *buf, size_t len,
    mode_t mode)
{
	char dir[4096];
	int dfd, rc;

	if ((rc = write_rename(path, buf, len, mode, true)) != 0)
		return rc;
	/* the rename itself is durable only once the directory is synced */
	strlcpy(dir, path, sizeof(dir));
	if ((dfd = open(dirname(dir), O_RDONLY | O_DIRECTORY | O_CLOEXEC)) !=
	    -1) {
		fsync(dfd);
		close(dfd);
	}
	return 0;
}

int
rn_write_file_replace(const char *path, const void *buf, size_t len,
    mode_t mode)
{
	return write_rename(path, buf, len, mode, false);
}

static const char b64url[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

int
rn_uuid_random(struct rn_uuid *u)
{
	do {
		if (getrandom(u->b, sizeof(u->b), 0) != sizeof(u->b))
			return -errno;
		/* version 4, variant 1, like java.util.UUID.randomUUID */
		u->b[6] = (uint8_t)((u->b[6] & 0x0f) | 0x40);
		u->b[8] = (uint8_t)((u->b[8] & 0x3f) | 0x80);
	} while (rn_uuid_is_zero(u));
	return 0;
}

void
rn_uuid_str(const struct rn_uuid *u, char out[23])
{
	uint32_t acc = 0;
	int bits = 0, o = 0, i;

	for (i = 0; i < 16; i++) {
		acc = (acc << 8) | u->b[i];
		bits += 8;
		while (bits >= 6) {
			bits -= 6;
			out[o++] = b64url[(acc >> bits) & 0x3f];
		}
	}
	if (bits > 0)
		out[o++] = b64url[(acc << (6 - bits)) & 0x3f];
	out[o] = '\0';
}

int
rn_uuid_parse(const char *s, struct rn_uuid *u)
{
	uint32_t acc = 0;
	int bits = 0, o = 0, i;

	if (strlen(s) != 22)
		return -EINVAL;
	for (i = 0; i < 22; i++) {
		const char *c = strchr(b64url, s[i]);
		if (c == NULL || s[i] == '\0')
			return -EINVAL;
		acc = (acc << 6) | (uint32_t)(c - b64url);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			if (o < 16)
				u->b[o++] = (uint8_t)(acc >> bits);
		}
	}
	/* 22 characters carry 132 bits: the 4 left over must be zero */
	if ((acc & 0x0f) != 0)
		return -EINVAL;
	return o == 16 ? 0 : -EINVAL;
}

int
rn_uuid_is_zero(const struct rn_uuid *u)
{
	static const struct rn_uuid zero;

	return memcmp(u, &zero, sizeof(zero)) == 0;
}

int
rn_tcp_connect_timed(const char *host, uint16_t port, int timeout_ms)
{
	struct timeval tv = { timeout_ms / 1000, (timeout_ms % 1000) * 1000 };
	struct addrinfo hints, *res;
	char port_s[8];
	int fd, one = 1;

	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	snprintf(port_s, sizeof(port_s), "%u", port);
	if (getaddrinfo(host, port_s, &hints, &res) != 0)
		return -EHOSTUNREACH;
	if ((fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0) {
		freeaddrinfo(res);
		return -errno;
	}
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (connect(fd, res->ai_addr, res->ai_addrlen) == -1) {
		int e = errno;

		freeaddrinfo(res);
		close(fd);
		return -e;
	}
	freeaddrinfo(res);
	return fd;
}

uint32_t
rn_hash32_more(uint32_t h, const void *p, size_t len)
{
	const uint8_t *b = p;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ b[i]) * 16777619u;
	return h;
}

uint64_t
rn_hash64_more(uint64_t h, const void *p, size_t len)
{
	const uint8_t *b = p;
	size_t i;

	for (i = 0; i < len; i++)
		h = (h ^ b[i]) * 1099511628211ULL;
	return h;
}
