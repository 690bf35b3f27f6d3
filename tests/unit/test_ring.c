/*
 * Unit tests for the SPSC message ring (ipc/ring.c): empty/full behaviour,
 * size limits, wrap-around with padding frames, sender pids, corruption
 * detection and repair, and the eventfd wake-up protocol.
 */
#include "ipc/ring.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/lib/tap.h"

static void *
shm_alloc(size_t size)
{
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		bail("mmap %zu: %s", size, strerror(errno));
	return p;
}

/* The fault-injection tests poke the indices at their documented offsets. */
static _Atomic uint64_t *
head_of(void *mem)
{
	return (_Atomic uint64_t *)((char *)mem + RN_RING_OFF_HEAD);
}

static _Atomic uint64_t *
tail_of(void *mem)
{
	return (_Atomic uint64_t *)((char *)mem + RN_RING_OFF_TAIL);
}

static unsigned char *
data_of(void *mem)
{
	return (unsigned char *)mem + RN_RING_HDR_SIZE;
}

static uint32_t
frame_size(uint32_t len)
{
	return 16 + ((len + 15) & ~15u);
}

/* Payload bytes derived from (seq, i), so every byte can be checked. */
static void
fill(unsigned char *p, uint32_t len, uint32_t seq)
{
	uint32_t x = seq * 2654435761u + 1;

	for (uint32_t i = 0; i < len; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p[i] = (unsigned char)x;
	}
}

static void
test_geometry(void)
{
	void *mem = shm_alloc(rn_ring_shm_size(4096) + 64);

	is_int((long long)rn_ring_shm_size(4096), RN_RING_HDR_SIZE + 4096,
	    "shm_size(4096) is header + capacity");
	ok(rn_ring_shm_size(2048) == 0 && rn_ring_shm_size(5000) == 0 &&
	    rn_ring_shm_size(0) == 0, "shm_size rejects small/non-pow2");
	is_int(rn_ring_init(mem, 6000), -EINVAL, "init rejects non-pow2");
	is_int(rn_ring_init((char *)mem + 8, 4096), -EINVAL,
	    "init rejects memory not 64-byte aligned");
	is_int(rn_ring_init(mem, 4096), 0, "init 4096");
	is_int(rn_ring_max_payload(rn_ring_at(mem)), 2048 - 16,
	    "small ring: max payload is capacity/2 - 16");
	munmap(mem, rn_ring_shm_size(4096) + 64);
}

static void
test_basic(void)
{
	size_t sz = rn_ring_shm_size(4096);
	void *mem = shm_alloc(sz);
	struct rn_ring *r;
	unsigned char buf[3000], big[RN_RING_MSG_MAX + 1];
	const void *p;
	uint16_t type = 0;
	ssize_t n;
	int i, pushed;

	rn_ring_init(mem, 4096);
	r = rn_ring_at(mem);

	is_int(rn_ring_peek(r, &type, &p), -EAGAIN, "empty ring: peek -EAGAIN");
	is_int(rn_ring_peek_sender(r), 0, "empty ring: sender 0");
	is_int((long long)rn_ring_used(r), 0, "empty ring: used 0");
	ok(rn_ring_valid(r), "fresh ring valid");
	rn_ring_release(r);	/* harmless on an empty ring */
	is_int((long long)rn_ring_used(r), 0, "release on empty is a no-op");

	memset(big, 0xab, sizeof(big));
	is_int(rn_ring_push(r, 1, big, 2033), -EMSGSIZE,
	    "small ring: > capacity/2 - 16 is -EMSGSIZE");
	is_int(rn_ring_push(r, 1, big, RN_RING_MSG_MAX + 1), -EMSGSIZE,
	    "> RN_RING_MSG_MAX is -EMSGSIZE");
	is_int(rn_ring_push(r, 1, big, 2032), 0, "max payload accepted");
	n = rn_ring_peek(r, &type, &p);
	ok(n == 2032 && memcmp(p, big, 2032) == 0, "max payload round trip");
	rn_ring_release(r);

	fill(buf, 100, 7);
	is_int(rn_ring_push(r, 42, buf, 100), 0, "push 100 bytes");
	is_int((long long)rn_ring_used(r), frame_size(100), "used is one frame");
	n = rn_ring_peek(r, &type, &p);
	is_int(n, 100, "peek length");
	is_int(type, 42, "peek type");
	ok(memcmp(p, buf, 100) == 0, "payload byte-identical");
	ok(((uintptr_t)p & 15) == 0, "payload 16-byte aligned");
	is_int(rn_ring_peek_sender(r), getpid(), "sender is our pid");
	ok(rn_ring_peek(r, NULL, NULL) == 100, "peek again: same message");
	rn_ring_release(r);
	is_int(rn_ring_peek(r, &type, &p), -EAGAIN, "empty after release");

	is_int(rn_ring_push(r, 0, NULL, 0), 0, "zero-length, type 0 message");
	is_int(rn_ring_push(r, 0xffff, buf, 1), 0, "type 0xffff message");
	n = rn_ring_peek(r, &type, &p);
	ok(n == 0 && type == 0, "zero-length message comes back as such");
	rn_ring_release(r);
	n = rn_ring_peek(r, &type, &p);
	ok(n == 1 && type == 0xffff && *(const unsigned char *)p == buf[0],
	    "type 0xffff round trip");
	rn_ring_release(r);

	/* Full: 100-byte payloads take 128-byte frames, 32 fit in 4096
	 * (from offset 0, so no padding frame intervenes). */
	rn_ring_init(mem, 4096);
	for (pushed = 0; pushed < 100; pushed++) {
		fill(buf, 100, (uint32_t)pushed);
		if (rn_ring_push(r, 1, buf, 100) != 0)
			break;
	}
	is_int(pushed, 4096 / 128, "ring holds exactly capacity/frame messages");
	is_int(rn_ring_push(r, 1, buf, 100), -EAGAIN, "full ring: -EAGAIN");
	is_int(rn_ring_push(r, 1, buf, 0), -EAGAIN,
	    "full ring: even an empty message is -EAGAIN");
	is_int((long long)rn_ring_used(r), 4096, "full ring: used == capacity");
	ok(rn_ring_valid(r), "full ring valid");
	rn_ring_release(r);
	is_int(rn_ring_push(r, 1, buf, 100), 0, "push succeeds after release");
	for (i = 1; i <= pushed; i++) {
		unsigned char want[100];

		fill(want, 100, (uint32_t)i);
		n = rn_ring_peek(r, &type, &p);
		if (n != 100 || memcmp(p, want, 100) != 0)
			break;
		rn_ring_release(r);
	}
	is_int(i, pushed + 1, "FIFO order kept across a full ring");
	is_int(rn_ring_peek(r, NULL, NULL), -EAGAIN, "drained");
	munmap(mem, sz);
}

/*
 * Many sizes from 0 to RN_RING_MSG_MAX through a 256 KiB ring, with the
 * consumer lagging so the ring wraps constantly at odd offsets.
 */
static void
test_wrap(void)
{
	uint32_t cap = 256 * 1024;
	size_t sz = rn_ring_shm_size(cap);
	void *mem = shm_alloc(sz);
	struct rn_ring *r;
	static unsigned char buf[RN_RING_MSG_MAX], want[RN_RING_MSG_MAX];
	static const uint32_t edge[] = { 0, 1, 7, 8, 15, 16, 17, 31, 32, 33,
	    4095, 4096, 4097, 65535, RN_RING_MSG_MAX };
	uint32_t lens[64], seq_in = 0, seq_out = 0, rnd = 12345, len;
	const unsigned char *prev = NULL;
	const void *p;
	uint16_t type;
	ssize_t n;
	int bad = 0, contig_bad = 0, wraps = 0, valid_bad = 0, rc;
	const int total = 20000;

	rn_ring_init(mem, cap);
	r = rn_ring_at(mem);
	is_int(rn_ring_max_payload(r), RN_RING_MSG_MAX,
	    "256 KiB ring accepts full RN_RING_MSG_MAX payloads");
	while (seq_out < (uint32_t)total) {
		/* push until full (or a burst limit), then drain a few */
		while (seq_in < (uint32_t)total && seq_in - seq_out < 64) {
			rnd = rnd * 1103515245u + 12345u;
			if (seq_in < sizeof(edge) / sizeof(edge[0]))
				len = edge[seq_in];
			else if ((rnd >> 16) % 8 == 0)
				len = (rnd >> 8) % (RN_RING_MSG_MAX + 1);
			else
				len = (rnd >> 8) % 700;
			fill(buf, len, seq_in);
			rc = rn_ring_push(r, (uint16_t)(seq_in & 0xffff), buf,
			    len);
			if (rc == -EAGAIN)
				break;
			if (rc != 0) {
				bad++;
				break;
			}
			lens[seq_in % 64] = len;
			seq_in++;
		}
		for (int k = 0; k < 3 && seq_out < seq_in; k++) {
			n = rn_ring_peek(r, &type, &p);
			len = lens[seq_out % 64];
			fill(want, len, seq_out);
			if (n != (ssize_t)len || type != (seq_out & 0xffff) ||
			    memcmp(p, want, len) != 0)
				bad++;
			if ((const unsigned char *)p < data_of(mem) ||
			    (const unsigned char *)p + len > data_of(mem) + cap)
				contig_bad++;
			if (prev != NULL && (const unsigned char *)p < prev)
				wraps++;
			prev = p;
			rn_ring_release(r);
			seq_out++;
		}
		if (seq_out % 97 == 0 && !rn_ring_valid(r))
			valid_bad++;
	}
	is_int(bad, 0, "%d messages of 0..%u bytes byte-identical, in order",
	    total, RN_RING_MSG_MAX);
	is_int(contig_bad, 0, "every payload contiguous inside the data area");
	ok(wraps > 100, "ring wrapped %d times (padding frames exercised)",
	    wraps);
	is_int(valid_bad, 0, "valid() true throughout");
	is_int(rn_ring_peek(r, NULL, NULL), -EAGAIN, "drained at the end");
	munmap(mem, sz);
}

/* Exact fit: a frame ending exactly at the end needs no padding. */
static void
test_exact_fit(void)
{
	size_t sz = rn_ring_shm_size(4096);
	void *mem = shm_alloc(sz);
	struct rn_ring *r;
	unsigned char buf[2048];
	const void *p;
	int i;

	rn_ring_init(mem, 4096);
	r = rn_ring_at(mem);
	memset(buf, 0x5a, sizeof(buf));
	/* 3 frames of 1024 bytes, consume them, then a 1024-byte frame fits
	 * exactly at the end, a 2032-byte one needs padding + wrap. */
	for (i = 0; i < 3; i++)
		rn_ring_push(r, 1, buf, 1008);
	for (i = 0; i < 3; i++)
		rn_ring_release(r);
	is_int(rn_ring_push(r, 1, buf, 1008), 0, "frame ending at the end");
	is_int(rn_ring_push(r, 1, buf, 1008), 0, "next frame starts at 0");
	is_int((long long)rn_ring_used(r), 2048, "no padding for exact fit");
	rn_ring_release(r);
	rn_ring_release(r);
	/* tail = head = 5*1024 -> offset 1024; 2032+16 = 2048 fits before
	 * the end (3072 left) */
	is_int(rn_ring_push(r, 1, buf, 2032), 0, "2048-byte frame at 1024");
	/* offset 3072: 1024 left, a 2048-byte frame needs 1024 padding */
	is_int(rn_ring_push(r, 1, buf, 2032), -EAGAIN,
	    "padding + frame does not fit while the first is unread");
	rn_ring_release(r);
	is_int(rn_ring_push(r, 1, buf, 2032), 0,
	    "padding + frame fit once drained (capacity/2 bound)");
	is_int((long long)rn_ring_used(r), 1024 + 2048,
	    "used counts the padding frame");
	ok(rn_ring_peek(r, NULL, &p) == 2032 && p == data_of(mem) + 16,
	    "message after padding starts at offset 0");
	rn_ring_release(r);
	is_int((long long)rn_ring_used(r), 0, "padding released with it");
	munmap(mem, sz);
}

static void
test_sender(void)
{
	size_t sz = rn_ring_shm_size(4096);
	void *mem = shm_alloc(sz);
	struct rn_ring *r;
	pid_t child;
	int st;

	rn_ring_init(mem, 4096);
	r = rn_ring_at(mem);
	child = fork();
	if (child == 0) {
		/* exercises the pid cache being reset by fork */
		_exit(rn_ring_push(r, 9, "child", 5) == 0 ? 0 : 1);
	}
	waitpid(child, &st, 0);
	ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child pushed");
	is_int(rn_ring_peek_sender(r), child, "sender is the child's pid");
	rn_ring_release(r);
	rn_ring_push(r, 9, "me", 2);
	is_int(rn_ring_peek_sender(r), getpid(), "then ours again");
	munmap(mem, sz);
}

/* Three messages of 100, 200, 300 bytes at offsets 0, 128, 352. */
static struct rn_ring *
three(void *mem)
{
	unsigned char buf[300];
	struct rn_ring *r;

	rn_ring_init(mem, 4096);
	r = rn_ring_at(mem);
	fill(buf, 300, 1);
	rn_ring_push(r, 1, buf, 100);
	rn_ring_push(r, 2, buf, 200);
	rn_ring_push(r, 3, buf, 300);
	return r;
}

static void
test_corruption(void)
{
	size_t sz = rn_ring_shm_size(4096);
	void *mem = shm_alloc(sz);
	struct rn_ring *r;
	uint64_t h;
	uint16_t type;
	const void *p;
	unsigned char buf[300];
	const uint32_t f1 = frame_size(100), f2 = frame_size(200),
	    f3 = frame_size(300);

	fill(buf, 300, 1);

	/* head moved forward past the last frame */
	r = three(mem);
	ok(rn_ring_valid(r), "three frames: valid");
	atomic_fetch_add(head_of(mem), 48);
	ok(!rn_ring_valid(r), "head beyond the last frame: invalid");
	is_int((long long)rn_ring_repair(r), 48, "repair drops the 48 bytes");
	ok(rn_ring_valid(r), "valid after repair");
	ok(rn_ring_peek(r, &type, &p) == 100 && type == 1 &&
	    memcmp(p, buf, 100) == 0, "intact frames kept");
	is_int((long long)rn_ring_used(r), f1 + f2 + f3, "all three kept");

	/* head moved into the middle of a frame (unaligned) */
	r = three(mem);
	atomic_fetch_sub(head_of(mem), 40);
	ok(!rn_ring_valid(r), "head inside the last frame: invalid");
	is_int((long long)rn_ring_repair(r), f3 - 40,
	    "repair truncates to the last intact frame");
	is_int((long long)rn_ring_used(r), f1 + f2, "two frames left");
	ok(rn_ring_valid(r), "valid after repair");

	/* head far beyond tail: impossible indices */
	r = three(mem);
	h = atomic_load(head_of(mem));
	atomic_store(head_of(mem), h + 10 * 4096);
	ok(!rn_ring_valid(r), "head - tail > capacity: invalid");
	is_int(rn_ring_push(r, 1, buf, 10), -EBADMSG,
	    "push refuses impossible indices");
	is_int(rn_ring_peek(r, &type, &p), -EBADMSG,
	    "peek refuses impossible indices");
	is_int((long long)rn_ring_repair(r), 4096, "reset drops <= capacity");
	ok(rn_ring_valid(r), "valid after reset");
	is_int(rn_ring_peek(r, &type, &p), -EAGAIN, "reset ring is empty");
	ok(rn_ring_push(r, 5, buf, 50) == 0 && rn_ring_peek(r, &type, &p) == 50
	    && type == 5 && memcmp(p, buf, 50) == 0, "reset ring works");

	/* tail beyond head */
	r = three(mem);
	h = atomic_load(head_of(mem));
	atomic_store(tail_of(mem), h + 16);
	ok(!rn_ring_valid(r), "tail > head: invalid");
	is_int(rn_ring_peek(r, &type, &p), -EBADMSG, "peek: -EBADMSG");
	rn_ring_repair(r);
	ok(rn_ring_valid(r) && rn_ring_used(r) == 0, "repaired to empty");
	ok(rn_ring_push(r, 5, buf, 50) == 0 && rn_ring_peek(r, &type, &p) == 50,
	    "works after repair");

	/* tail unaligned */
	r = three(mem);
	atomic_store(tail_of(mem), 8);
	ok(!rn_ring_valid(r), "unaligned tail: invalid");
	rn_ring_repair(r);
	ok(rn_ring_valid(r) && rn_ring_used(r) == 0, "repaired to empty");

	/* corrupt the second frame's length */
	r = three(mem);
	data_of(mem)[f1] ^= 0x40;
	ok(!rn_ring_valid(r), "corrupt 2nd frame header: invalid");
	ok(rn_ring_peek(r, &type, &p) == 100 && type == 1,
	    "first frame still readable");
	is_int((long long)rn_ring_repair(r), f2 + f3,
	    "repair drops the corrupt frame and what follows");
	ok(rn_ring_valid(r), "valid after repair");
	rn_ring_release(r);
	is_int(rn_ring_peek(r, &type, &p), -EAGAIN, "then empty");
	ok(rn_ring_push(r, 7, buf, 300) == 0 && rn_ring_peek(r, &type, &p) == 300
	    && type == 7 && memcmp(p, buf, 300) == 0,
	    "producer continues after truncation");

	/* corrupt the type of the frame at tail: check word catches it */
	r = three(mem);
	data_of(mem)[4] ^= 0x01;
	ok(!rn_ring_valid(r), "corrupt frame at tail: invalid");
	is_int(rn_ring_peek(r, &type, &p), -EBADMSG, "peek: -EBADMSG");
	is_int(rn_ring_peek_sender(r), 0, "peek_sender: 0 on corrupt frame");
	rn_ring_release(r);
	is_int((long long)rn_ring_used(r), f1 + f2 + f3,
	    "release does not skip a corrupt frame");
	is_int((long long)rn_ring_repair(r), f1 + f2 + f3, "repair drops all");
	ok(rn_ring_valid(r) && rn_ring_peek(r, &type, &p) == -EAGAIN,
	    "valid and empty");

	/* a stale frame from an earlier lap is not taken for a new one */
	r = three(mem);
	rn_ring_release(r);
	rn_ring_release(r);
	rn_ring_release(r);
	/* one lap later, the same offsets: old headers, wrong positions */
	atomic_store(tail_of(mem), 4096);
	atomic_store(head_of(mem), 4096 + f1 + f2 + f3);
	ok(!rn_ring_valid(r), "frames from the previous lap do not validate");

	/* repair on a healthy ring changes nothing */
	r = three(mem);
	is_int((long long)rn_ring_repair(r), 0, "healthy ring: repair drops 0");
	is_int((long long)rn_ring_used(r), f1 + f2 + f3, "and keeps all");

	/* discard: safe beside a live producer, also fixes a corrupt frame */
	r = three(mem);
	data_of(mem)[f1] ^= 0x40;
	is_int((long long)rn_ring_discard(r), f1 + f2 + f3,
	    "discard drops everything queued");
	ok(rn_ring_valid(r) && rn_ring_peek(r, &type, &p) == -EAGAIN,
	    "valid and empty after discard");
	ok(rn_ring_push(r, 8, buf, 10) == 0 && rn_ring_peek(r, &type, &p) == 10
	    && type == 8, "producer continues after discard");

	/* impossible indices with a sane head: only tail moves */
	r = three(mem);
	h = atomic_load(head_of(mem));
	atomic_store(tail_of(mem), h + 4096 * 3);
	rn_ring_repair(r);
	is_int((long long)atomic_load(head_of(mem)), (long long)h,
	    "reset keeps an aligned head (producer undisturbed)");
	ok(rn_ring_push(r, 5, buf, 50) == 0 && rn_ring_peek(r, &type, &p) == 50,
	    "push/peek after the reset");

	/* destroyed geometry */
	r = three(mem);
	((uint32_t *)mem)[0] ^= 1;
	ok(!rn_ring_valid(r), "corrupt magic: invalid");
	((uint32_t *)mem)[0] ^= 1;
	((uint32_t *)mem)[1] = 1u << 30;	/* capacity scribbled */
	is_int(rn_ring_push(r, 1, buf, 10), -EBADMSG,
	    "push refuses a scribbled capacity (no out-of-bounds write)");
	is_int(rn_ring_peek(r, &type, &p), -EBADMSG, "peek refuses it too");
	ok(!rn_ring_valid(r), "and it is invalid");
	munmap(mem, sz);
}

/* Producer died mid-push: a half-written frame beyond head is invisible. */
static void
test_producer_death(void)
{
	size_t sz = rn_ring_shm_size(4096);
	void *mem = shm_alloc(sz);
	struct rn_ring *r = three(mem);
	uint64_t used = rn_ring_used(r);

	memset(data_of(mem) + used, 0x77, 200);	/* torn frame, head not moved */
	ok(rn_ring_valid(r), "garbage beyond head: still valid");
	is_int((long long)rn_ring_repair(r), 0, "repair has nothing to drop");
	is_int(rn_ring_push(r, 4, "x", 1), 0, "a new producer overwrites it");
	ok(rn_ring_valid(r), "and the ring stays valid");
	munmap(mem, sz);
}

static int
efd_count(int efd)
{
	uint64_t v;

	if (read(efd, &v, sizeof(v)) != sizeof(v))
		return errno == EAGAIN ? 0 : -1;
	return (int)v;
}

static void
test_notify(void)
{
	size_t sz = rn_ring_shm_size(4096);
	void *mem = shm_alloc(sz);
	struct rn_ring *r;
	int efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	struct timespec t0, t1;
	pid_t child;
	int st, rc;
	double ms;

	if (efd < 0)
		bail("eventfd: %s", strerror(errno));
	rn_ring_init(mem, 4096);
	r = rn_ring_at(mem);

	rn_ring_push(r, 1, "a", 1);
	is_int(rn_ring_notify(r, efd), 0, "consumer awake: notify writes nothing");
	is_int(efd_count(efd), 0, "eventfd untouched");

	rn_ring_consumer_sleeping(r, true);
	is_int(rn_ring_notify(r, efd), 0, "consumer sleeping: notify ok");
	is_int(efd_count(efd), 1, "eventfd counted one wake-up");
	rn_ring_consumer_sleeping(r, true);
	rn_ring_notify(r, efd);
	rn_ring_notify(r, efd);
	rn_ring_notify(r, efd);
	is_int(efd_count(efd), 1, "burst of notifies: one write per sleep");
	is_int(efd_count(efd), 0, "eventfd empty again");

	rn_ring_consumer_sleeping(r, true);
	rn_ring_consumer_sleeping(r, false);
	is_int(rn_ring_notify(r, efd), 0, "consumer woke by itself: no write");
	is_int(rn_ring_notify(r, -1), 0, "no syscall at all (bad fd unused)");
	rn_ring_consumer_sleeping(r, true);
	is_int(rn_ring_notify(r, -1), -EBADF, "write errors are reported");

	/* rn_ring_wait: immediate, timeout, and a real cross-process wake */
	is_int(rn_ring_wait(r, efd, 0), 0, "wait returns at once when non-empty");
	rn_ring_release(r);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	is_int(rn_ring_wait(r, efd, 30), -ETIMEDOUT, "wait times out when empty");
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
	ok(ms >= 25 && ms < 1000, "timeout honoured (%.1f ms)", ms);
	child = fork();
	if (child == 0) {
		struct timespec d = { 0, 50 * 1000 * 1000 };

		nanosleep(&d, NULL);
		rn_ring_push(r, 2, "wake", 4);
		_exit(rn_ring_notify(r, efd) == 0 ? 0 : 1);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = rn_ring_wait(r, efd, 5000);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	waitpid(child, &st, 0);
	ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
	is_int(rc, 0, "wait returns when the producer pushes");
	ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, "producer's notify succeeded");
	/* without the eventfd write it would sleep the full 5 s */
	ok(ms < 2000, "woken by the eventfd, not the timeout (%.1f ms)", ms);
	is_int(rn_ring_peek(r, NULL, NULL), 4, "the message is there");
	close(efd);
	munmap(mem, sz);
}

int
main(void)
{
	test_geometry();
	test_basic();
	test_wrap();
	test_exact_fit();
	test_sender();
	test_corruption();
	test_producer_death();
	test_notify();
	return done_testing();
}
