/*
 * A scraper for the metrics bench: GET one path at a fixed rate on one
 * kept-alive HTTP/1.1 connection, as Prometheus does, reading each
 * response whole and discarding it. It reconnects when the server closes,
 * so it scrapes a server without keep-alive too (and counts the
 * connects). Written in C so that on a 2-core machine the client's own
 * CPU does not swamp the cost it is there to measure.
 *
 *   metrics-scraper HOST PORT PATH [-r RATE] [-d SECONDS] [-n COUNT]
 *
 * RATE requests a second (0: back to back; 100 by default); it runs for
 * SECONDS, or COUNT requests, or until SIGTERM/SIGINT, then prints one
 * JSON line: requests, ok (2xx), other (another status), errors, connects,
 * bytes, seconds, late (ticks it fell behind), cpu_seconds (its own).
 */
#include "autoconf.h"

#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

static volatile sig_atomic_t stop;

struct counts {
	uint64_t requests, ok, other, errors, connects, bytes, late;
};

static void
on_signal(int sig)
{
	stop = 1;
}

static int64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int
dial(const char *host, const char *port)
{
	struct addrinfo hints, *res;
	struct timeval tv = { 5, 0 };
	int fd, one = 1;

	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo(host, port, &hints, &res) != 0)
		return -1;
	fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd != -1 && (connect(fd, res->ai_addr, res->ai_addrlen) == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == -1 ||
	    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) ==
	    -1)) {
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	return fd;
}

/* The value of header name in a head, or NULL; the head ends "\r\n\r\n". */
static const char *
header(const char *head, const char *name)
{
	size_t n = strlen(name);
	const char *p;

	for (p = strstr(head, "\r\n"); p != NULL && p[2] != '\r';
	    p = strstr(p + 2, "\r\n"))
		if (strncasecmp(p + 2, name, n) == 0 && p[2 + n] == ':')
			return p + 3 + n + strspn(p + 3 + n, " \t");
	return NULL;
}

/*
 * One response, read whole: its status, or -1 when the connection broke.
 * *keep is false when the server closes after it.
 */
static int
read_response(int fd, char *buf, size_t cap, uint64_t *bytes, bool *keep)
{
	size_t have = 0, head_len;
	uint64_t body, got;
	const char *end, *v;
	ssize_t n;
	int status;

	for (;;) {
		if (have == cap - 1)
			return -1;
		if ((n = read(fd, buf + have, cap - 1 - have)) <= 0)
			return -1;
		have += (size_t)n;
		buf[have] = '\0';
		if ((end = strstr(buf, "\r\n\r\n")) != NULL)
			break;
	}
	head_len = (size_t)(end - buf) + 4;
	if (sscanf(buf, "HTTP/1.%*d %d", &status) != 1 ||
	    (v = header(buf, "Content-Length")) == NULL)
		return -1;
	body = strtoull(v, NULL, 10);
	v = header(buf, "Connection");
	*keep = v == NULL || strncasecmp(v, "close", 5) != 0;
	for (got = have - head_len; got < body; got += (uint64_t)n)
		if ((n = read(fd, buf, cap)) <= 0)
			return -1;
	*bytes += head_len + body;
	return got == body ? status : -1;
}

static double
cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	    (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static void
usage(void)
{
	fprintf(stderr, "usage: metrics-scraper HOST PORT PATH [-r RATE] "
	    "[-d SECONDS] [-n COUNT]\n");
	exit(2);
}

int
main(int argc, char **argv)
{
	static char buf[1 << 16];
	struct counts c = { 0 };
	double rate = 100, secs = 0;
	uint64_t max = 0;
	int64_t t0, next, period, end;
	char req[512];
	bool keep = false;
	int fd = -1, status, i, len;

	if (argc < 4)
		usage();
	for (i = 4; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "-r") == 0)
			rate = atof(argv[i + 1]);
		else if (strcmp(argv[i], "-d") == 0)
			secs = atof(argv[i + 1]);
		else if (strcmp(argv[i], "-n") == 0)
			max = strtoull(argv[i + 1], NULL, 10);
		else
			usage();
	}
	if (i != argc)
		usage();
	len = snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: %s:%s\r\n"
	    "User-Agent: metrics-scraper\r\nAccept: text/plain\r\n\r\n",
	    argv[3], argv[1], argv[2]);
	if (len < 0 || (size_t)len >= sizeof(req))
		usage();
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);
	signal(SIGPIPE, SIG_IGN);
	period = rate > 0 ? (int64_t)(1e9 / rate) : 0;
	t0 = next = now_ns();
	end = secs > 0 ? t0 + (int64_t)(secs * 1e9) : INT64_MAX;
	while (!stop && now_ns() < end && (max == 0 || c.requests < max)) {
		if (fd == -1) {
			if ((fd = dial(argv[1], argv[2])) == -1) {
				c.errors++;
				sleep(1);
				continue;
			}
			c.connects++;
		}
		c.requests++;
		status = write(fd, req, (size_t)len) == len ? read_response(fd,
		    buf, sizeof(buf), &c.bytes, &keep) : -1;
		if (status >= 200 && status < 300)
			c.ok++;
		else if (status > 0)
			c.other++;
		else
			c.errors++;
		if (status < 0 || !keep) {
			close(fd);
			fd = -1;
		}
		if (period == 0)
			continue;
		next += period;
		if (next < now_ns()) {
			/* behind: count it and keep the rate from here */
			c.late++;
			next = now_ns();
			continue;
		}
		while (!stop && now_ns() < next)
			usleep((useconds_t)((next - now_ns()) / 1000 + 1));
	}
	if (fd != -1)
		close(fd);
	printf("{\"requests\": %" PRIu64 ", \"ok\": %" PRIu64 ", \"other\": %"
	    PRIu64 ", \"errors\": %" PRIu64 ", \"connects\": %" PRIu64
	    ", \"bytes\": %" PRIu64 ", \"late\": %" PRIu64 ", \"seconds\": %.3f"
	    ", \"cpu_seconds\": %.3f}\n", c.requests, c.ok, c.other, c.errors,
	    c.connects, c.bytes, c.late, (double)(now_ns() - t0) / 1e9,
	    cpu_seconds());
	return c.ok > 0 || c.other > 0 ? 0 : 1;
}
