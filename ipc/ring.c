/*
 * SPSC ring of length-framed messages in shared memory (see ring.h).
 *
 * Ownership of the fields, which is what makes it lock-free:
 *   head, tail_cache    written by the producer only
 *   tail, head_cache    written by the consumer only
 *   sleeping            set by the consumer, cleared by either
 *   data[tail..head)    owned by the consumer, the rest by the producer
 * The producer publishes a frame with one release store of head; the
 * consumer hands space back with one release store of tail.  Each side keeps
 * its last view of the other's index in its own cache line so that, in the
 * common case, it touches the other side's line only when the ring looks
 * full (producer) or empty (consumer).  The caches live in shared memory too,
 * so a restarted process simply continues with them.
 */
#include "ipc/ring.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define RING_MAGIC	0x726e5247u	/* "rnRG" */
#define FRAME_HDR	16u
#define FRAME_ALIGN	16u
#define FLAG_PAD	0x0001u
#define WAIT_SPINS	2000

struct rn_frame {
	uint32_t len;		/* payload bytes (padding: bytes after header) */
	uint16_t type;
	uint16_t flags;		/* FLAG_PAD */
	int32_t sender;		/* producer pid */
	uint32_t check;		/* frame_check(): catches garbage and stale laps */
};

struct rn_ring {
	/* line 0: geometry, written once by rn_ring_init() */
	uint32_t magic;
	uint32_t capacity;
	uint32_t mask;
	uint32_t max_payload;
	/* line 1: producer */
	alignas(64) _Atomic uint64_t head;
	uint64_t tail_cache;	/* producer's last acquire-view of tail */
	/* line 2: consumer */
	alignas(64) _Atomic uint64_t tail;
	uint64_t head_cache;	/* consumer's last acquire-view of head */
	/* line 3: wake-up flag, kept apart so polling it costs neither side */
	alignas(64) _Atomic uint32_t sleeping;
	alignas(64) unsigned char data[];
};

_Static_assert(sizeof(struct rn_frame) == FRAME_HDR, "frame header size");
_Static_assert(FRAME_HDR % FRAME_ALIGN == 0, "header keeps frames aligned");
_Static_assert(offsetof(struct rn_ring, head) == RN_RING_OFF_HEAD, "head line");
_Static_assert(offsetof(struct rn_ring, tail) == RN_RING_OFF_TAIL, "tail line");
_Static_assert(offsetof(struct rn_ring, sleeping) == 192, "flag line");
_Static_assert(offsetof(struct rn_ring, data) == RN_RING_HDR_SIZE, "data start");
_Static_assert(sizeof(struct rn_ring) == RN_RING_HDR_SIZE, "control block");
_Static_assert(alignof(struct rn_ring) == 64, "cache-line aligned");
/* Shared across processes: the atomics must not fall back to locks. */
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "64-bit atomics lock-free");
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "32-bit atomics lock-free");

static inline uint64_t
round_frame(uint64_t len)
{
	return (len + FRAME_ALIGN - 1) & ~(uint64_t)(FRAME_ALIGN - 1);
}

/* Mixes the position in so a frame left from an earlier lap (or a header
 * copied elsewhere) fails the check when head/tail are corrupted. */
static uint32_t
frame_check(const struct rn_frame *f, uint64_t pos)
{
	uint32_t x;

	x = RING_MAGIC ^ (uint32_t)((pos * 0x9e3779b97f4a7c15ull) >> 32);
	x ^= f->len * 0x85ebca77u;
	x ^= ((uint32_t)f->type << 16 | f->flags) * 0xc2b2ae3du;
	x ^= (uint32_t)f->sender * 0x27d4eb2fu;
	x ^= x >> 15;
	x *= 0x2c1b3c6du;
	x ^= x >> 12;
	return x;
}

/* getpid() is a real syscall in current glibc; cache it per process. */
static pid_t cached_pid;
static pthread_once_t pid_once = PTHREAD_ONCE_INIT;

static void
pid_forget(void)
{
	cached_pid = 0;
}

static void
pid_register(void)
{
	(void)pthread_atfork(NULL, NULL, pid_forget);
}

static pid_t
self_pid(void)
{
	if (cached_pid == 0) {
		(void)pthread_once(&pid_once, pid_register);
		cached_pid = getpid();
	}
	return cached_pid;
}

static bool
geometry_ok(const struct rn_ring *r)
{
	uint32_t cap = r->capacity;

	return r->magic == RING_MAGIC && cap >= RN_RING_CAP_MIN &&
	    cap <= (1u << 31) && (cap & (cap - 1)) == 0 && r->mask == cap - 1 &&
	    r->max_payload == (cap / 2 - FRAME_HDR < RN_RING_MSG_MAX ?
	    cap / 2 - FRAME_HDR : RN_RING_MSG_MAX);
}

/*
 * Validate the frame at pos, given avail published bytes from pos.  Copies
 * the header to *f and returns the frame size, or 0 if it is corrupt.
 */
static uint64_t
frame_at(const struct rn_ring *r, uint64_t pos, uint64_t avail,
    struct rn_frame *f)
{
	uint64_t off, size;

	if ((pos & (FRAME_ALIGN - 1)) != 0 || avail < FRAME_HDR ||
	    avail > r->capacity)
		return 0;
	off = pos & r->mask;
	memcpy(f, r->data + off, sizeof(*f));
	if (f->check != frame_check(f, pos) || (f->flags & ~FLAG_PAD) != 0 ||
	    f->sender <= 0)
		return 0;
	size = FRAME_HDR + round_frame(f->len);
	if (f->flags & FLAG_PAD) {
		/* padding always runs exactly to the end of the data area */
		if (off + size != r->capacity)
			return 0;
	} else if (f->len > r->max_payload)
		return 0;
	if (size > avail || off + size > r->capacity)
		return 0;
	return size;
}

size_t
rn_ring_shm_size(uint32_t capacity)
{
	if (capacity < RN_RING_CAP_MIN || capacity > (1u << 31) ||
	    (capacity & (capacity - 1)) != 0)
		return 0;
	return (size_t)RN_RING_HDR_SIZE + capacity;
}

int
rn_ring_init(void *mem, uint32_t capacity)
{
	struct rn_ring *r = mem;

	if (mem == NULL || ((uintptr_t)mem & 63) != 0 ||
	    rn_ring_shm_size(capacity) == 0)
		return -EINVAL;
	memset(r, 0, sizeof(*r));
	r->capacity = capacity;
	r->mask = capacity - 1;
	r->max_payload = capacity / 2 - FRAME_HDR;
	if (r->max_payload > RN_RING_MSG_MAX)
		r->max_payload = RN_RING_MSG_MAX;
	atomic_init(&r->head, 0);
	atomic_init(&r->tail, 0);
	atomic_init(&r->sleeping, 0);
	/* zeroed data never forms a frame (sender 0 is rejected) */
	memset(r->data, 0, capacity);
	/* magic last: another process sees a formatted ring or none */
	atomic_thread_fence(memory_order_release);
	r->magic = RING_MAGIC;
	return 0;
}

struct rn_ring *
rn_ring_at(void *mem)
{
	return mem;
}

uint32_t
rn_ring_capacity(const struct rn_ring *r)
{
	return r->capacity;
}

uint32_t
rn_ring_max_payload(const struct rn_ring *r)
{
	return r->max_payload;
}

int
rn_ring_push(struct rn_ring *r, uint16_t type, const void *buf, uint32_t len)
{
	struct rn_frame f;
	uint64_t head, used, total;
	uint32_t cap = r->capacity, need, off, contig, padlen;

	/* a scribbled geometry would send our writes outside the ring */
	if (!geometry_ok(r))
		return -EBADMSG;
	if (len > r->max_payload)
		return -EMSGSIZE;
	need = FRAME_HDR + (uint32_t)round_frame(len);
	head = atomic_load_explicit(&r->head, memory_order_relaxed);
	off = (uint32_t)(head & r->mask);
	contig = cap - off;
	/* a frame that does not fit before the end needs a padding frame */
	total = need <= contig ? need : (uint64_t)contig + need;

	used = head - r->tail_cache;
	if (used > cap || cap - used < total) {
		/* acquire: the consumer's reads of released bytes happen
		 * before we overwrite them */
		r->tail_cache = atomic_load_explicit(&r->tail,
		    memory_order_acquire);
		used = head - r->tail_cache;
		if (used > cap)
			return -EBADMSG;	/* indices corrupt: repair() */
		if (cap - used < total)
			return -EAGAIN;
	}

	if (need > contig) {
		memset(&f, 0, sizeof(f));
		f.len = contig - FRAME_HDR;
		f.flags = FLAG_PAD;
		f.sender = self_pid();
		f.check = frame_check(&f, head);
		memcpy(r->data + off, &f, sizeof(f));
		head += contig;
		off = 0;
	}
	f.len = len;
	f.type = type;
	f.flags = 0;
	f.sender = self_pid();
	f.check = frame_check(&f, head);
	memcpy(r->data + off, &f, sizeof(f));
	if (len > 0)
		memcpy(r->data + off + FRAME_HDR, buf, len);
	padlen = need - FRAME_HDR - len;
	if (padlen > 0)		/* no stale bytes from an older lap */
		memset(r->data + off + FRAME_HDR + len, 0, padlen);
	/* the one store that makes the whole frame (and any padding) visible */
	atomic_store_explicit(&r->head, head + need, memory_order_release);
	return 0;
}

/*
 * Find the message at tail, skipping (and releasing) padding frames.
 * Returns its offset in data[] with the header in *f, -EAGAIN or -EBADMSG.
 */
static int64_t
peek_frame(struct rn_ring *r, struct rn_frame *f, uint64_t *size)
{
	uint64_t tail, head;

	if (!geometry_ok(r))
		return -EBADMSG;
	tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
	for (;;) {
		head = r->head_cache;
		if (head == tail || head - tail > r->capacity) {
			head = atomic_load_explicit(&r->head,
			    memory_order_acquire);
			r->head_cache = head;
			if (head == tail)
				return -EAGAIN;
			if (head - tail > r->capacity)
				return -EBADMSG;
		}
		*size = frame_at(r, tail, head - tail, f);
		if (*size == 0)
			return -EBADMSG;
		if (!(f->flags & FLAG_PAD))
			return (int64_t)(tail & r->mask);
		/* padding carries nothing: hand it back right away */
		tail += *size;
		atomic_store_explicit(&r->tail, tail, memory_order_release);
	}
}

ssize_t
rn_ring_peek(struct rn_ring *r, uint16_t *type, const void **payload)
{
	struct rn_frame f;
	uint64_t size;
	int64_t off;

	off = peek_frame(r, &f, &size);
	if (off < 0)
		return (ssize_t)off;
	if (type != NULL)
		*type = f.type;
	if (payload != NULL)
		*payload = r->data + off + FRAME_HDR;
	return (ssize_t)f.len;
}

void
rn_ring_release(struct rn_ring *r)
{
	struct rn_frame f;
	uint64_t size, tail;

	/* re-validating costs a few multiplies on a hot line and makes a
	 * release without a successful peek harmless */
	if (peek_frame(r, &f, &size) < 0)
		return;
	tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
	/* release: our reads of the payload happen before the producer
	 * reuses the space */
	atomic_store_explicit(&r->tail, tail + size, memory_order_release);
}

pid_t
rn_ring_peek_sender(struct rn_ring *r)
{
	struct rn_frame f;
	uint64_t size;

	if (peek_frame(r, &f, &size) < 0)
		return 0;
	return (pid_t)f.sender;
}

bool
rn_ring_empty(struct rn_ring *r)
{
	uint64_t tail = atomic_load_explicit(&r->tail, memory_order_relaxed);

	return atomic_load_explicit(&r->head, memory_order_acquire) == tail;
}

void
rn_ring_consumer_sleeping(struct rn_ring *r, bool sleeping)
{
	atomic_store_explicit(&r->sleeping, sleeping ? 1u : 0u,
	    memory_order_seq_cst);
	/* Dekker with rn_ring_notify(): flag store before our next load of
	 * head, pairing with the producer's fence between head and flag */
	if (sleeping)
		atomic_thread_fence(memory_order_seq_cst);
}

int
rn_ring_notify(struct rn_ring *r, int efd)
{
	uint64_t one = 1;
	ssize_t n;

	/* head store (in push) before the flag load; see consumer_sleeping */
	atomic_thread_fence(memory_order_seq_cst);
	if (atomic_load_explicit(&r->sleeping, memory_order_relaxed) == 0)
		return 0;
	/* one write per sleep, however many pushes race with the wake-up */
	if (atomic_exchange_explicit(&r->sleeping, 0,
	    memory_order_seq_cst) == 0)
		return 0;
	for (;;) {
		n = write(efd, &one, sizeof(one));
		if (n == (ssize_t)sizeof(one))
			return 0;
		if (n < 0 && errno == EINTR)
			continue;
		/* a saturated counter still wakes the consumer */
		if (n < 0 && errno == EAGAIN)
			return 0;
		return n < 0 ? -errno : -EIO;
	}
}

static int64_t
now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int
rn_ring_wait(struct rn_ring *r, int efd, int timeout_ms)
{
	struct pollfd pfd = { .fd = efd, .events = POLLIN };
	int64_t deadline;
	uint64_t cnt;
	int i, rc, left;

	for (i = 0; i < WAIT_SPINS; i++) {
		if (!rn_ring_empty(r))
			return 0;
#if defined(__x86_64__) || defined(__i386__)
		__builtin_ia32_pause();
#endif
	}
	/* the clock only once we really are going to sleep */
	deadline = timeout_ms >= 0 ? now_ms() + timeout_ms : 0;
	for (;;) {
		rn_ring_consumer_sleeping(r, true);
		/* the re-check that makes the announcement race-free */
		if (!rn_ring_empty(r)) {
			rn_ring_consumer_sleeping(r, false);
			return 0;
		}
		left = -1;
		if (timeout_ms >= 0) {
			int64_t d = deadline - now_ms();
			left = d > 0 ? (int)d : 0;
		}
		rc = poll(&pfd, 1, left);
		rn_ring_consumer_sleeping(r, false);
		if (rc < 0 && errno != EINTR)
			return -errno;
		if (rc > 0 && (pfd.revents & POLLIN))
			(void)read(efd, &cnt, sizeof(cnt));
		if (!rn_ring_empty(r))
			return 0;
		if (rc == 0 && timeout_ms >= 0 && now_ms() >= deadline)
			return -ETIMEDOUT;
	}
}

bool
rn_ring_valid(const struct rn_ring *r)
{
	struct rn_frame f;
	uint64_t tail, head, pos, size;

	if (!geometry_ok(r))
		return false;
	/* tail first: a live consumer can only make it grow, never past
	 * the head we read afterwards */
	tail = atomic_load_explicit(&r->tail, memory_order_acquire);
	head = atomic_load_explicit(&r->head, memory_order_acquire);
	if ((tail & (FRAME_ALIGN - 1)) != 0 || head - tail > r->capacity)
		return false;
	for (pos = tail; pos != head; pos += size) {
		size = frame_at(r, pos, head - pos, &f);
		if (size == 0)
			return false;
	}
	return true;
}

size_t
rn_ring_repair(struct rn_ring *r)
{
	struct rn_frame f;
	uint64_t tail, head, pos, size, dropped;

	if (!geometry_ok(r))
		return 0;
	tail = atomic_load_explicit(&r->tail, memory_order_acquire);
	head = atomic_load_explicit(&r->head, memory_order_acquire);
	if ((tail & (FRAME_ALIGN - 1)) != 0 || head - tail > r->capacity) {
		/* no trustworthy frame boundary: reset to empty where head
		 * is.  Only the consumer's fields change unless head itself
		 * is misaligned, so a running producer is not disturbed (its
		 * tail_cache is re-read whenever head - tail_cache looks
		 * impossible). */
		dropped = head - tail;
		if (dropped > r->capacity)
			dropped = r->capacity;
		pos = head & ~(uint64_t)(FRAME_ALIGN - 1);
		if (pos != head) {
			r->tail_cache = pos;
			atomic_store_explicit(&r->head, pos,
			    memory_order_release);
		}
		r->head_cache = pos;
		atomic_store_explicit(&r->tail, pos, memory_order_release);
		return (size_t)dropped;
	}
	for (pos = tail; pos != head; pos += size) {
		size = frame_at(r, pos, head - pos, &f);
		if (size == 0)
			break;
	}
	if (pos == head)
		return 0;	/* intact: write nothing */
	/* truncate after the last intact frame; the caches must not point
	 * beyond the new head */
	r->tail_cache = tail;
	r->head_cache = tail;
	atomic_store_explicit(&r->head, pos, memory_order_release);
	return (size_t)(head - pos);
}

size_t
rn_ring_discard(struct rn_ring *r)
{
	uint64_t tail, head, dropped;

	tail = atomic_load_explicit(&r->tail, memory_order_relaxed);
	head = atomic_load_explicit(&r->head, memory_order_acquire);
	dropped = head - tail;
	if (dropped > r->capacity)
		dropped = r->capacity;
	/* head is always a frame boundary the producer published, so this
	 * is safe while it keeps pushing */
	r->head_cache = head;
	atomic_store_explicit(&r->tail, head, memory_order_release);
	return (size_t)dropped;
}

uint64_t
rn_ring_used(const struct rn_ring *r)
{
	uint64_t tail = atomic_load_explicit(&r->tail, memory_order_acquire);

	return atomic_load_explicit(&r->head, memory_order_acquire) - tail;
}
