/*
 * Stress test for the SPSC ring across processes: a producer pushes
 * RN_STRESS_MSGS variable-length messages (8..512 bytes, content derived
 * from a 64-bit sequence number) through a ring in an anonymous MAP_SHARED
 * mapping; a consumer verifies every byte, and that nothing is lost,
 * duplicated or reordered.  Mid-run the parent SIGKILLs the consumer and
 * starts a new one, which must continue exactly where the old one stopped.
 *
 * Idempotent-consumer recovery (what a worker consuming a ring does):
 * a consumer keeps its progress, the next sequence number it expects, in
 * shared memory, and commits it BEFORE rn_ring_release().  A consumer can
 * therefore die in three places:
 *   - before the commit: the message is still at tail and the successor
 *     processes it (it was never counted);
 *   - between commit and release: the message is still at tail but already
 *     counted; the successor recognises it (seq == next_expected - 1) and
 *     only releases it;
 *   - after the release: nothing to do.
 * Processing must itself be idempotent or committed together with the
 * progress for this to be exactly-once; here "processing" is the count.
 * To be sure the middle case is exercised, the second consumer kills itself
 * deliberately between commit and release, and the third must recover it.
 */
#include "ipc/ring.h"

#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/lib/tap.h"

#ifndef RN_STRESS_MSGS
#define RN_STRESS_MSGS 10000000ull
#endif
#define RING_CAP	(256u * 1024u)
#define LEN_MIN		8u
#define LEN_MAX		512u

struct shared {
	/* consumer progress, committed before release (see above) */
	alignas(64) _Atomic uint64_t next_expected;
	alignas(64) _Atomic uint64_t errors;	/* any verification failure */
	_Atomic uint64_t first_bad_seq;
	_Atomic uint64_t recovered;	/* processed-but-unreleased skipped */
	_Atomic uint64_t sender_checks;
	_Atomic uint32_t recover_seen[4];	/* per consumer generation */
	_Atomic int32_t producer_pid;
	alignas(64) unsigned char ring[];
};

static uint32_t
len_of(uint64_t seq)
{
	uint64_t h = (seq + 1) * 0xd6e8feb86659fd93ull;

	h ^= h >> 32;
	return LEN_MIN + (uint32_t)(h % (LEN_MAX - LEN_MIN + 1));
}

static uint16_t
type_of(uint64_t seq)
{
	return (uint16_t)(seq * 7 + 1);
}

/* seq in the first 8 bytes, then words derived from (seq, index). */
static void
make_payload(unsigned char *buf, uint64_t seq, uint32_t len)
{
	uint64_t w;
	uint32_t i, off;

	memcpy(buf, &seq, 8);
	for (i = 1, off = 8; off < len; i++, off += 8) {
		w = (seq + 1) * 0x9e3779b97f4a7c15ull ^
		    (uint64_t)i * 0xbf58476d1ce4e5b9ull;
		memcpy(buf + off, &w, len - off < 8 ? len - off : 8);
	}
}

static void
cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

static void
die_with_parent(void)
{
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() == 1)
		_exit(3);
}

static void __attribute__((noreturn))
producer(struct shared *sh, int efd)
{
	struct rn_ring *r = rn_ring_at(sh->ring);
	unsigned char buf[LEN_MAX];
	unsigned spins;
	uint64_t seq;
	uint32_t len;
	int rc;

	die_with_parent();
	for (seq = 0; seq < RN_STRESS_MSGS; seq++) {
		len = len_of(seq);
		make_payload(buf, seq, len);
		spins = 0;
		while ((rc = rn_ring_push(r, type_of(seq), buf, len)) ==
		    -EAGAIN) {
			/* full: the consumer is behind (or dead and being
			 * replaced); it must not sleep on a full ring */
			if (spins == 0 && rn_ring_notify(r, efd) < 0)
				_exit(2);
			if (++spins % 64 == 0)
				sched_yield();
			else
				cpu_relax();
		}
		if (rc != 0)
			_exit(2);
		/* notify costs a full fence: once per batch, as a worker
		 * would once per event-loop turn; the batch ends at the
		 * latest when the ring is full (above) or at the end */
		if ((seq & 31) == 31 && rn_ring_notify(r, efd) < 0)
			_exit(2);
	}
	if (rn_ring_notify(r, efd) < 0)
		_exit(2);
	_exit(0);
}

static void
fail(struct shared *sh, uint64_t seq)
{
	uint64_t none = UINT64_MAX;

	atomic_fetch_add(&sh->errors, 1);
	atomic_compare_exchange_strong(&sh->first_bad_seq, &none, seq);
}

/*
 * gen: consumer generation (0, 1, 2).  die_at: seq at which to kill itself
 * between commit and release (UINT64_MAX: never).
 */
static void __attribute__((noreturn))
consumer(struct shared *sh, int efd, int gen, uint64_t die_at)
{
	struct rn_ring *r = rn_ring_at(sh->ring);
	unsigned char want[LEN_MAX];
	uint64_t next, seq;
	const void *p;
	uint16_t type;
	ssize_t n;
	bool first = true;
	int rc;

	die_with_parent();
	next = atomic_load_explicit(&sh->next_expected, memory_order_acquire);
	while (next < RN_STRESS_MSGS) {
		n = rn_ring_peek(r, &type, &p);
		if (n == -EAGAIN) {
			rc = rn_ring_wait(r, efd, 5000);
			if (rc != 0 && rc != -ETIMEDOUT)
				_exit(2);
			continue;
		}
		if (n < 8) {
			fail(sh, next);
			_exit(2);
		}
		memcpy(&seq, p, 8);
		if (first && next > 0 && seq == next - 1) {
			/* our predecessor committed this one but died before
			 * releasing it: already counted, just release */
			atomic_fetch_add(&sh->recovered, 1);
			atomic_store(&sh->recover_seen[gen], 1);
			rn_ring_release(r);
			first = false;
			continue;
		}
		first = false;
		if (seq != next || (uint32_t)n != len_of(seq) ||
		    type != type_of(seq)) {
			fail(sh, next);	/* loss, duplicate or reorder */
			_exit(2);
		}
		make_payload(want, seq, (uint32_t)n);
		if (memcmp(p, want, (size_t)n) != 0)
			fail(sh, seq);
		if ((seq & 4095) == 0) {
			if (rn_ring_peek_sender(r) !=
			    atomic_load(&sh->producer_pid))
				fail(sh, seq);
			atomic_fetch_add_explicit(&sh->sender_checks, 1,
			    memory_order_relaxed);
		}
		/* commit progress, then release (the order recovery needs) */
		next = seq + 1;
		atomic_store_explicit(&sh->next_expected, next,
		    memory_order_release);
		if (seq == die_at)
			raise(SIGKILL);
		rn_ring_release(r);
	}
	_exit(0);
}

static pid_t
spawn_consumer(struct shared *sh, int efd, int gen, uint64_t die_at)
{
	pid_t pid = fork();

	if (pid < 0)
		bail("fork: %s", strerror(errno));
	if (pid == 0)
		consumer(sh, efd, gen, die_at);
	return pid;
}

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
pause_ms(long ms)
{
	struct timespec d = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&d, NULL);
}

int
main(void)
{
	size_t sz = sizeof(struct shared) + rn_ring_shm_size(RING_CAP);
	struct shared *sh;
	pid_t prod, cons;
	uint64_t killed_at, used_at_kill, n, die_at;
	int efd, st, pst, valid_after_kill;
	size_t dropped;
	double t0, t1;

	plan(14);
	/* a hang must fail the test, not the CI job */
	alarm(55);

	sh = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
	    -1, 0);
	if (sh == MAP_FAILED)
		bail("mmap: %s", strerror(errno));
	atomic_init(&sh->first_bad_seq, UINT64_MAX);
	if (rn_ring_init(sh->ring, RING_CAP) != 0)
		bail("rn_ring_init failed");
	efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (efd < 0)
		bail("eventfd: %s", strerror(errno));

	t0 = now();
	prod = fork();
	if (prod < 0)
		bail("fork: %s", strerror(errno));
	if (prod == 0)
		producer(sh, efd);
	atomic_store(&sh->producer_pid, prod);
	/* the consumer only checks the sender after the pid is published */
	cons = spawn_consumer(sh, efd, 0, UINT64_MAX);

	/* let a third of the messages through, then kill the consumer
	 * wherever it happens to be */
	while (atomic_load(&sh->next_expected) < RN_STRESS_MSGS / 3)
		pause_ms(1);
	kill(cons, SIGKILL);
	waitpid(cons, &st, 0);
	killed_at = atomic_load(&sh->next_expected);
	ok(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
	    "first consumer SIGKILLed at next_expected=%llu",
	    (unsigned long long)killed_at);
	/* the producer is still running: valid() only reads */
	used_at_kill = rn_ring_used(rn_ring_at(sh->ring));
	valid_after_kill = rn_ring_valid(rn_ring_at(sh->ring));
	ok(valid_after_kill, "ring valid after the kill (%llu bytes queued)",
	    (unsigned long long)used_at_kill);
	dropped = rn_ring_repair(rn_ring_at(sh->ring));
	is_int((long long)dropped, 0, "repair() has nothing to drop");

	/* second consumer: continues, then dies between commit and release */
	die_at = killed_at + (RN_STRESS_MSGS - killed_at) / 2;
	cons = spawn_consumer(sh, efd, 1, die_at);
	waitpid(cons, &st, 0);
	ok(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL,
	    "second consumer died between commit and release of seq %llu",
	    (unsigned long long)die_at);
	is_int((long long)atomic_load(&sh->next_expected), (long long)die_at + 1,
	    "its progress was committed");
	ok(rn_ring_valid(rn_ring_at(sh->ring)), "ring valid after that death");

	/* third consumer runs to the end */
	cons = spawn_consumer(sh, efd, 2, UINT64_MAX);
	waitpid(cons, &st, 0);
	waitpid(prod, &pst, 0);
	t1 = now();

	ok(WIFEXITED(pst) && WEXITSTATUS(pst) == 0, "producer finished");
	ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, "last consumer finished");
	n = atomic_load(&sh->next_expected);
	is_int((long long)n, (long long)RN_STRESS_MSGS,
	    "every message consumed exactly once, in order");
	is_int((long long)atomic_load(&sh->errors), 0,
	    "no payload, length, type, sender or order error");
	if (atomic_load(&sh->errors) != 0)
		diag("first bad seq %llu",
		    (unsigned long long)atomic_load(&sh->first_bad_seq));
	is_int(atomic_load(&sh->recover_seen[2]), 1,
	    "third consumer skipped the processed-but-unreleased message");
	ok(atomic_load(&sh->recovered) <= 2,
	    "at most one skip per restart (%llu)",
	    (unsigned long long)atomic_load(&sh->recovered));
	is_int((long long)rn_ring_used(rn_ring_at(sh->ring)), 0,
	    "ring empty at the end");
	ok(rn_ring_valid(rn_ring_at(sh->ring)), "ring valid at the end");

	diag("%llu messages (%u..%u bytes) in %.2f s: %.2f M msg/s",
	    (unsigned long long)n, LEN_MIN, LEN_MAX, t1 - t0,
	    n / (t1 - t0) / 1e6);
	diag("first kill at seq %llu (%s), deliberate kill at seq %llu, "
	    "%llu sender checks",
	    (unsigned long long)killed_at,
	    atomic_load(&sh->recover_seen[1]) ?
	    "landed between commit and release" : "no committed-unreleased msg",
	    (unsigned long long)die_at,
	    (unsigned long long)atomic_load(&sh->sender_checks));
	close(efd);
	munmap(sh, sz);
	return done_testing();
}
