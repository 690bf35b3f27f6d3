/*
 * libFuzzer target for what the controller listener makes of a
 * connection's first bytes: workers/controller/preamble.c, and the
 * transport that reads them (transport.c) with its real libuv loop over
 * a loopback TCP listener. The input is what a peer sends before closing
 * its side; seeds (tests/fuzz/corpus-raft/) are the first bytes real
 * controllers sent each other and a broker sent a controller.
 *
 * Past the 16-byte preamble the connection is libraft's: libraft (the
 * system's libraft.so, not instrumented) decodes the messages, and no
 * runnel code sees their bytes. The entries they carry reach runnel in
 * ctl_state_apply, which fuzz_records fuzzes.
 *
 * Invariants that abort():
 *   - the preamble's verdict on the bytes read so far never changes once
 *     given, is "Kafka" exactly when a byte differs from the magic, and
 *     a raft peer's node id is its 8 bytes big-endian, which
 *     ctl_preamble_write writes back;
 *   - the transport hands a raft peer's connection to raft with that id,
 *     hands a Kafka one to the Kafka callback with the bytes it read (a
 *     prefix of the input, up to the first differing one), and closes
 *     the others (node id 0, a preamble cut short) without either;
 *   - the transport is done with the connection within a second.
 * Sanitizers report the rest (leaks of its per-connection state and
 * handles, overreads, UB).
 */
#include "autoconf.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/config.h"
#include "common/util.h"
#include "workers/controller/preamble.h"
#include "workers/controller/transport.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void
bug(const char *what, long long a, long long b)
{
	fprintf(stderr, "fuzz_raft: %s (%lld, %lld)\n", what, a, b);
	abort();
}

/* ---- the preamble alone ------------------------------------------------ */

/* The verdict as bytes arrive one at a time; *decided_at how many it
 * took (the size when none was given). */
static enum ctl_preamble
check_preamble(const uint8_t *p, size_t size, uint64_t *id,
    size_t *decided_at)
{
	enum ctl_preamble first = CTL_PREAMBLE_MORE;
	size_t n, max = size < CTL_RAFT_PREAMBLE_LEN ? size :
	    CTL_RAFT_PREAMBLE_LEN;
	uint64_t got, first_id = 0, want = 0;
	uint8_t again[CTL_RAFT_PREAMBLE_LEN];
	int differs = 0, i;

	*decided_at = max;
	for (n = 0; n <= max; n++) {
		enum ctl_preamble r = ctl_preamble_read(p, n, &got);

		if (n > 0 && n <= CTL_RAFT_MAGIC_LEN &&
		    p[n - 1] != (uint8_t)CTL_RAFT_MAGIC[n - 1])
			differs = 1;
		if (first != CTL_PREAMBLE_MORE) {
			if (r != first || (r != CTL_PREAMBLE_KAFKA &&
			    got != first_id))
				bug("the preamble's verdict changed", (int)r,
				    (long long)n);
			continue;
		}
		if ((r == CTL_PREAMBLE_KAFKA) != differs)
			bug("Kafka iff a byte differs from the magic", (int)r,
			    (long long)n);
		if (r == CTL_PREAMBLE_MORE)
			continue;
		if (r != CTL_PREAMBLE_KAFKA && n != CTL_RAFT_PREAMBLE_LEN)
			bug("a raft verdict before the whole preamble", (int)r,
			    (long long)n);
		first = r;
		first_id = got;
		*decided_at = n;
	}
	if (first == CTL_PREAMBLE_RAFT || first == CTL_PREAMBLE_NO_ID) {
		for (i = 0; i < 8; i++)
			want = want << 8 | p[CTL_RAFT_MAGIC_LEN + i];
		if (first_id != want || (first == CTL_PREAMBLE_NO_ID) !=
		    (want == 0))
			bug("a node id other than its bytes", (long long)first_id,
			    (long long)want);
		ctl_preamble_write(again, first_id);
		if (memcmp(again, p, CTL_RAFT_PREAMBLE_LEN) != 0)
			bug("ctl_preamble_write does not write it back", 0, 0);
	}
	*id = first_id;
	return first;
}

/* ---- the transport over a loopback listener ----------------------------- */

static uv_loop_t loop;
static struct raft_uv_transport transport;
static struct rn_config cfg;
static struct sockaddr_in addr;

/* What the transport did with the connection of this input. */
static struct {
	int raft, kafka;
	uint64_t id;
	uint8_t head[CTL_RAFT_PREAMBLE_LEN];
	size_t n;
} seen;

static void
stream_closed(uv_handle_t *h)
{
	raft_free(h);	/* what raft and the Kafka side do with theirs */
}

static void
accept_cb(struct raft_uv_transport *t, raft_id id, const char *address,
    uv_stream_t *stream)
{
	(void)t;
	if (address == NULL || address[0] == '\0')
		bug("a raft peer without an address", (long long)id, 0);
	seen.raft++;
	seen.id = id;
	uv_close((uv_handle_t *)stream, stream_closed);
}

static void
kafka_cb(void *arg, uv_tcp_t *tcp, const uint8_t *head, size_t n)
{
	(void)arg;
	if (n == 0 || n > sizeof(seen.head))
		bug("a Kafka connection handed over with a bad head", (long long)n,
		    0);
	seen.kafka++;
	memcpy(seen.head, head, n);
	seen.n = n;
	uv_close((uv_handle_t *)tcp, stream_closed);
}

static void
transport_start(void)
{
	socklen_t alen = sizeof(addr);
	int fd;

	if (uv_loop_init(&loop) != 0)
		bug("uv_loop_init", 0, 0);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	memset(&addr, 0, sizeof(addr));
	addr.sin_family = AF_INET;
	addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 ||
	    getsockname(fd, (struct sockaddr *)&addr, &alen) != 0 ||
	    listen(fd, 64) != 0)
		bug("a loopback listener", errno, 0);
	if (ctl_transport_init(&transport, &loop, fd, &cfg) != 0 ||
	    transport.init(&transport, 1, "127.0.0.1:1") != 0)
		bug("ctl_transport_init", 0, 0);
	ctl_transport_set_kafka_cb(&transport, kafka_cb, NULL);
	if (transport.listen(&transport, accept_cb) != 0)
		bug("the transport does not listen", 0, 0);
}

/* Wait for fd to be ready for events; libFuzzer's SIGALRM (its -timeout
 * clock) interrupts system calls once a second. */
static void
wait_for(int fd, short events)
{
	struct pollfd p = { fd, events, 0 };

	while (poll(&p, 1, 1000) != 1)
		if (errno != EINTR)
			bug("poll on the loopback connection", errno, 0);
}

/* A connection to the listener, non-blocking. */
static int
dial(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0), err = 0;
	socklen_t len = sizeof(err);

	if (fd < 0)
		bug("socket", errno, 0);
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0) {
		if (errno != EINPROGRESS && errno != EINTR)
			bug("connect to the loopback listener", errno, 0);
		wait_for(fd, POLLOUT);
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 ||
		    err != 0)
			bug("connect to the loopback listener", err, 0);
	}
	return fd;
}

/* Send the input, close our side, turn the loop until the transport is
 * done with the connection (our side reads its end). */
static void
transport_run(const uint8_t *data, size_t size)
{
	int fd = dial(), i;
	size_t off = 0;
	int64_t deadline;
	char junk[256];

	/* the preamble's bytes whole; the transport reads no more, so of
	 * the rest what the socket takes */
	while (off < size) {
		ssize_t k = write(fd, data + off, size - off);

		if (k > 0)
			off += (size_t)k;
		else if (k < 0 && errno == EINTR)
			continue;
		else if (k < 0 && errno == EAGAIN &&
		    off < CTL_RAFT_PREAMBLE_LEN)
			wait_for(fd, POLLOUT);
		else
			break;
	}
	shutdown(fd, SHUT_WR);
	deadline = rn_now_ms() + 1000;
	for (;;) {
		struct pollfd p = { fd, POLLIN, 0 };
		ssize_t k;

		uv_run(&loop, UV_RUN_NOWAIT);
		if (poll(&p, 1, 1) == 1) {
			while ((k = read(fd, junk, sizeof(junk))) > 0)
				;
			if (k == 0 || (k < 0 && errno != EAGAIN &&
			    errno != EINTR))
				break;	/* closed by the transport or by us */
		}
		if (rn_now_ms() > deadline)
			bug("the transport kept the connection past a second",
			    (long long)size, 0);
	}
	close(fd);
	/* the close callbacks of its per-connection state */
	for (i = 0; i < 4; i++)
		uv_run(&loop, UV_RUN_NOWAIT);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	enum ctl_preamble want;
	size_t at;
	uint64_t id;

	want = check_preamble(data, size, &id, &at);
	if (transport.impl == NULL)
		transport_start();
	memset(&seen, 0, sizeof(seen));
	transport_run(data, size);
	switch (want) {
	case CTL_PREAMBLE_RAFT:
		if (seen.raft != 1 || seen.kafka != 0 || seen.id != id)
			bug("a raft peer not handed to raft with its id",
			    seen.raft, (long long)seen.id);
		break;
	case CTL_PREAMBLE_KAFKA:
		if (seen.kafka != 1 || seen.raft != 0 || seen.n < at ||
		    memcmp(seen.head, data, seen.n) != 0 ||
		    ctl_preamble_read(seen.head, seen.n, &id) !=
		    CTL_PREAMBLE_KAFKA)
			bug("a Kafka connection not handed over with its bytes",
			    seen.kafka, (long long)seen.n);
		break;
	default:
		if (seen.raft != 0 || seen.kafka != 0)
			bug("a connection handed over that should close",
			    seen.raft, seen.kafka);
	}
	return 0;
}
