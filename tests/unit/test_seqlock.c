/*
 * Unit tests for the seqlock (ipc/seqlock.h): a writer process keeps a
 * multi-word record consistent (all words equal) while a reader process
 * checks it never accepts a torn copy; a writer killed between begin and end
 * leaves writer_died() true, the bounded read gives -EAGAIN, and reset()
 * recovers.
 */
#include "ipc/seqlock.h"

#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/lib/tap.h"

#define WORDS 16	/* 128 bytes: two cache lines, tearing is likely */

struct shared {
	struct rn_seqlock lock;
	_Atomic int stop;
	_Atomic int writer_in_update;
	_Atomic uint64_t writes;
	/* relaxed atomics: racy reads are the point, but they must not be UB */
	_Atomic uint64_t w[WORDS];
};

static struct shared *sh;

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void
write_record(uint64_t v)
{
	rn_seq_write_begin(&sh->lock);
	for (int i = 0; i < WORDS; i++)
		atomic_store_explicit(&sh->w[i], v, memory_order_relaxed);
	rn_seq_write_end(&sh->lock);
}

/* Copy once, without the seqlock: used to show tearing is observable. */
static bool
copy_is_torn(uint64_t *c)
{
	for (int i = 0; i < WORDS; i++)
		c[i] = atomic_load_explicit(&sh->w[i], memory_order_relaxed);
	for (int i = 1; i < WORDS; i++)
		if (c[i] != c[0])
			return true;
	return false;
}

static void __attribute__((noreturn))
writer(void)
{
	uint64_t v = 1;

	while (!atomic_load_explicit(&sh->stop, memory_order_relaxed)) {
		write_record(v++);
		atomic_store_explicit(&sh->writes, v, memory_order_relaxed);
	}
	_exit(0);
}

static void
test_no_torn_reads(void)
{
	uint64_t c[WORDS], last = 0, reads = 0, torn = 0, retries = 0,
	    raw_torn = 0, backwards = 0;
	uint32_t start;
	pid_t w;
	int st;
	double t_end;

	w = fork();
	if (w == 0)
		writer();
	/* reader: this process, for about a second */
	t_end = now() + 1.0;
	while (now() < t_end) {
		for (int k = 0; k < 1000; k++) {
			do {
				start = rn_seq_read_begin(&sh->lock);
				for (int i = 0; i < WORDS; i++)
					c[i] = atomic_load_explicit(&sh->w[i],
					    memory_order_relaxed);
				if (rn_seq_read_retry(&sh->lock, start))
					retries++;
				else
					break;
			} while (1);
			for (int i = 1; i < WORDS; i++)
				if (c[i] != c[0]) {
					torn++;
					break;
				}
			if (c[0] < last)
				backwards++;
			last = c[0];
			reads++;
			/* the control: the same copy without the protocol */
			if (copy_is_torn(c))
				raw_torn++;
		}
	}
	atomic_store(&sh->stop, 1);
	waitpid(w, &st, 0);
	ok(WIFEXITED(st) && WEXITSTATUS(st) == 0, "writer exited");
	is_int((long long)torn, 0, "no torn record accepted in %llu reads",
	    (unsigned long long)reads);
	is_int((long long)backwards, 0, "records never go back in time");
	ok(atomic_load(&sh->writes) > 1000, "writer made progress (%llu writes)",
	    (unsigned long long)atomic_load(&sh->writes));
	ok(reads > 1000, "reader made progress");
	diag("%llu reads, %llu retries, %llu writes; unprotected copies torn: "
	    "%llu", (unsigned long long)reads, (unsigned long long)retries,
	    (unsigned long long)atomic_load(&sh->writes),
	    (unsigned long long)raw_torn);
	/* Shows the check above can fail: the writer really races us.  Not
	 * asserted, a quiet machine might not interleave at all. */
	if (raw_torn == 0)
		diag("note: no unprotected copy was torn this run");
}

static void
test_dead_writer(void)
{
	uint32_t start = 0, before;
	pid_t w;
	int st;

	ok(!rn_seq_writer_died(&sh->lock), "even counter: no dead writer");
	w = fork();
	if (w == 0) {
		rn_seq_write_begin(&sh->lock);
		atomic_store_explicit(&sh->w[0], 12345, memory_order_relaxed);
		atomic_store(&sh->writer_in_update, 1);
		for (;;)
			pause();
	}
	while (!atomic_load(&sh->writer_in_update))
		sched_yield();
	kill(w, SIGKILL);
	waitpid(w, &st, 0);
	ok(WIFSIGNALED(st), "writer killed between begin and end");
	ok(rn_seq_writer_died(&sh->lock), "writer_died() is true");
	is_int(rn_seq_read_begin_timeout(&sh->lock, &start, 10000), -EAGAIN,
	    "bounded read gives -EAGAIN instead of spinning forever");
	is_int(rn_seq_read_begin_timeout(&sh->lock, &start, 0), -EAGAIN,
	    "also with zero spins");

	/* supervisor: rebuild the record, then reset */
	before = atomic_load(&sh->lock.seq);
	for (int i = 0; i < WORDS; i++)
		atomic_store_explicit(&sh->w[i], 7, memory_order_relaxed);
	rn_seq_reset(&sh->lock);
	ok(!rn_seq_writer_died(&sh->lock), "reset: counter even again");
	ok(atomic_load(&sh->lock.seq) != before - 1,
	    "reset moved past any value a reader could hold");
	is_int(rn_seq_read_begin_timeout(&sh->lock, &start, 0), 0,
	    "bounded read succeeds after reset");
	ok(!rn_seq_read_retry(&sh->lock, start), "no retry on a quiet record");
	is_int((long long)atomic_load(&sh->w[WORDS - 1]), 7, "rebuilt record");

	/* a reader holding a pre-reset value must retry */
	start = rn_seq_read_begin(&sh->lock);
	rn_seq_reset(&sh->lock);
	ok(rn_seq_read_retry(&sh->lock, start),
	    "reset invalidates reads in flight");
	write_record(9);
	ok(!rn_seq_writer_died(&sh->lock), "a new writer works after reset");
}

static void
test_single_process(void)
{
	struct rn_seqlock s;
	uint32_t a, b;

	rn_seq_init(&s);
	a = rn_seq_read_begin(&s);
	ok(!rn_seq_read_retry(&s, a), "no write: no retry");
	rn_seq_write_begin(&s);
	ok(atomic_load(&s.seq) & 1, "write_begin makes it odd");
	is_int(rn_seq_read_begin_timeout(&s, &b, 100), -EAGAIN,
	    "read during a write times out");
	rn_seq_write_end(&s);
	ok(!(atomic_load(&s.seq) & 1), "write_end makes it even");
	ok(rn_seq_read_retry(&s, a), "a write in between forces a retry");
}

int
main(void)
{
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		bail("mmap: %s", strerror(errno));
	alarm(30);
	rn_seq_init(&sh->lock);
	test_single_process();
	test_no_torn_reads();
	test_dead_writer();
	return done_testing();
}
