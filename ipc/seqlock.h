/*
 * Seqlock for shared-memory tables with exactly one writer (process) and any
 * number of readers in any process.  The counter is odd while an update is
 * in progress.
 *
 * Writer:
 *	rn_seq_write_begin(&t->lock);
 *	... store the fields ...
 *	rn_seq_write_end(&t->lock);
 * Reader:
 *	do {
 *		start = rn_seq_read_begin(&t->lock);
 *		... copy the fields out; do not act on them yet ...
 *	} while (rn_seq_read_retry(&t->lock, start));
 *
 * The protected fields are read while they may be written, so a reader must
 * only copy them (never follow a value as an index without bounds checks,
 * never divide by it) until rn_seq_read_retry() says the copy is good.  For
 * strict C11 data-race freedom, access them through relaxed atomics
 * (atomic_load_explicit/atomic_store_explicit on _Atomic fields); plain
 * memcpy of naturally aligned words is what the fences below also protect in
 * practice with GCC on x86-64 and arm64.
 *
 * A writer that dies between begin and end leaves the counter odd forever:
 * rn_seq_read_begin() would spin, so readers that cannot rule this out use
 * rn_seq_read_begin_timeout().  The supervisor, knowing the writer is dead,
 * checks rn_seq_writer_died(), rebuilds the table, then calls rn_seq_reset().
 */
#ifndef RN_IPC_SEQLOCK_H
#define RN_IPC_SEQLOCK_H

#include <errno.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

struct rn_seqlock {
	_Atomic uint32_t seq;
};

_Static_assert(sizeof(struct rn_seqlock) == 4, "rn_seqlock is one word");
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "shared atomics must be lock-free");

/* Yield the CPU every this many spins: on 2 cores a preempted writer must
 * get to run. */
#define RN_SEQ_YIELD_SPINS 1024u

static inline void
rn_seq_cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

static inline void
rn_seq_init(struct rn_seqlock *s)
{
	atomic_init(&s->seq, 0);
}

static inline void
rn_seq_write_begin(struct rn_seqlock *s)
{
	uint32_t v = atomic_load_explicit(&s->seq, memory_order_relaxed);

	atomic_store_explicit(&s->seq, v + 1, memory_order_relaxed);
	/* the odd value must be visible before any of the data stores */
	atomic_thread_fence(memory_order_release);
}

static inline void
rn_seq_write_end(struct rn_seqlock *s)
{
	uint32_t v = atomic_load_explicit(&s->seq, memory_order_relaxed);

	/* release: data stores before the even value */
	atomic_store_explicit(&s->seq, v + 1, memory_order_release);
}

/* Spins (yielding now and then) while a write is in progress. */
static inline uint32_t
rn_seq_read_begin(const struct rn_seqlock *s)
{
	uint32_t v, spins = 0;

	for (;;) {
		/* acquire: data loads after the counter load */
		v = atomic_load_explicit(&s->seq, memory_order_acquire);
		if ((v & 1) == 0)
			return v;
		if (++spins % RN_SEQ_YIELD_SPINS == 0)
			sched_yield();
		else
			rn_seq_cpu_relax();
	}
}

/* Bounded variant: 0 with *start set, or -EAGAIN after `spins` tries while
 * the counter stayed odd (writer slow, or dead: see rn_seq_writer_died()). */
static inline int
rn_seq_read_begin_timeout(const struct rn_seqlock *s, uint32_t *start,
    unsigned spins)
{
	uint32_t v;
	unsigned i;

	for (i = 0;; i++) {
		v = atomic_load_explicit(&s->seq, memory_order_acquire);
		if ((v & 1) == 0) {
			*start = v;
			return 0;
		}
		if (i >= spins)
			return -EAGAIN;
		if ((i + 1) % RN_SEQ_YIELD_SPINS == 0)
			sched_yield();
		else
			rn_seq_cpu_relax();
	}
}

/* True if the copy made since `start` may be torn: read it again. */
static inline bool
rn_seq_read_retry(const struct rn_seqlock *s, uint32_t start)
{
	/* data loads before the second counter load */
	atomic_thread_fence(memory_order_acquire);
	return atomic_load_explicit(&s->seq, memory_order_relaxed) != start;
}

/* The counter is odd.  Only meaningful when the caller knows no writer is
 * running (e.g. the supervisor reaped the writer): it then means the writer
 * died mid-update and the table may be torn. */
static inline bool
rn_seq_writer_died(const struct rn_seqlock *s)
{
	return (atomic_load_explicit(&s->seq, memory_order_acquire) & 1) != 0;
}

/* Supervisor, after rebuilding the table with no writer running: make the
 * counter even again and different from any value a reader may hold. */
static inline void
rn_seq_reset(struct rn_seqlock *s)
{
	uint32_t v = atomic_load_explicit(&s->seq, memory_order_relaxed);

	atomic_store_explicit(&s->seq, (v | 1) + 1, memory_order_release);
}

#endif /* RN_IPC_SEQLOCK_H */
