/*
 * Unit tests for the robust process-shared lock (ipc/rlock.c): a holder
 * SIGKILLed while holding it, a waiter blocked when the holder dies, normal
 * operation afterwards, mutual exclusion between processes, and an
 * unrecoverable mutex reported as -ENOTRECOVERABLE.
 */
#include "ipc/rlock.h"

#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/lib/tap.h"

struct shared {
	struct rn_rlock lock;
	uint64_t counter;	/* plain: only the lock protects it */
	int repair_calls;	/* counted by the repair callback */
	int half_done;		/* set by a holder that is killed mid-update */
};

static struct shared *sh;

static void
repair_cb(void *arg)
{
	struct shared *s = arg;

	s->repair_calls++;
	s->half_done = 0;	/* what a real repair would do */
}

/* Child: take the lock, mark the data half-updated, tell the parent, and
 * wait to be killed. */
static pid_t
holder_child(int *rfd)
{
	int p[2];
	pid_t pid;

	if (pipe(p) != 0)
		bail("pipe: %s", strerror(errno));
	pid = fork();
	if (pid < 0)
		bail("fork: %s", strerror(errno));
	if (pid == 0) {
		close(p[0]);
		if (rn_rlock_lock(&sh->lock, repair_cb, sh) < 0)
			_exit(2);
		sh->half_done = 1;
		(void)write(p[1], "x", 1);
		for (;;)
			pause();
	}
	close(p[1]);
	*rfd = p[0];
	return pid;
}

static void
wait_byte(int fd)
{
	char c;

	if (read(fd, &c, 1) != 1)
		bail("child did not report");
	close(fd);
}

static void
sleep_ms(long ms)
{
	struct timespec d = { 0, ms * 1000000L };

	nanosleep(&d, NULL);
}

static void
test_basic(void)
{
	is_int(rn_rlock_init(&sh->lock), 0, "init");
	is_int(rn_rlock_owner(&sh->lock), 0, "free lock has no owner");
	is_int(rn_rlock_unlock(&sh->lock), -EPERM, "unlock when not held: -EPERM");
	is_int(rn_rlock_lock(&sh->lock, repair_cb, sh), 0, "lock");
	is_int(rn_rlock_owner(&sh->lock), getpid(), "owner is our pid");
	is_int(rn_rlock_unlock(&sh->lock), 0, "unlock");
	is_int(rn_rlock_owner(&sh->lock), 0, "owner cleared");
	is_int(sh->repair_calls, 0, "no repair on a clean lock");
}

static void
test_dead_holder(void)
{
	pid_t child, other;
	int fd, st, rc, i, bad;

	child = holder_child(&fd);
	wait_byte(fd);
	is_int(rn_rlock_owner(&sh->lock), child, "child holds the lock");
	is_int(rn_rlock_trylock(&sh->lock, repair_cb, sh), -EBUSY,
	    "trylock while held: -EBUSY");
	kill(child, SIGKILL);
	waitpid(child, &st, 0);
	ok(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "holder SIGKILLed");
	is_int(rn_rlock_owner(&sh->lock), child,
	    "owner still names the dead holder");

	rc = rn_rlock_lock(&sh->lock, repair_cb, sh);
	is_int(rc, 1, "lock after the holder died returns 1");
	is_int(sh->repair_calls, 1, "repair callback ran exactly once");
	is_int(sh->half_done, 0, "repair ran before lock returned");
	is_int((long long)sh->lock.repairs, 1, "repairs counter is 1");
	is_int(rn_rlock_owner(&sh->lock), getpid(), "we own it now");
	is_int(rn_rlock_unlock(&sh->lock), 0, "unlock after repair");

	rc = rn_rlock_lock(&sh->lock, repair_cb, sh);
	is_int(rc, 0, "next lock is clean (mutex made consistent)");
	rn_rlock_unlock(&sh->lock);
	for (i = 0, bad = 0; i < 1000; i++) {
		if (rn_rlock_lock(&sh->lock, repair_cb, sh) != 0 ||
		    rn_rlock_unlock(&sh->lock) != 0)
			bad++;
	}
	is_int(bad, 0, "1000 lock/unlock cycles return 0");
	is_int(sh->repair_calls, 1, "no further repair");

	other = fork();
	if (other == 0) {
		if (rn_rlock_lock(&sh->lock, repair_cb, sh) != 0)
			_exit(1);
		if (rn_rlock_owner(&sh->lock) != getpid())
			_exit(2);
		_exit(rn_rlock_unlock(&sh->lock) == 0 ? 0 : 3);
	}
	waitpid(other, &st, 0);
	ok(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	    "another process takes and releases it normally");
}

/* A waiter already blocked in lock() when the holder dies gets 1. */
static void
test_blocked_waiter(void)
{
	pid_t holder, waiter;
	int fd, st;

	holder = holder_child(&fd);
	wait_byte(fd);
	waiter = fork();
	if (waiter == 0) {
		int rc = rn_rlock_lock(&sh->lock, repair_cb, sh);

		if (rc == 1)
			rn_rlock_unlock(&sh->lock);
		_exit(rc == 1 ? 0 : 10 + (rc < 0 ? 0 : rc));
	}
	sleep_ms(50);	/* let the waiter block (the test holds if it has not) */
	kill(holder, SIGKILL);
	waitpid(holder, &st, 0);
	waitpid(waiter, &st, 0);
	ok(WIFEXITED(st) && WEXITSTATUS(st) == 0,
	    "blocked waiter got 1 when the holder died");
	is_int(sh->repair_calls, 2, "its repair ran once (in the waiter)");
	is_int(rn_rlock_lock(&sh->lock, repair_cb, sh), 0, "lock clean again");
	rn_rlock_unlock(&sh->lock);
}

static void
test_counter(void)
{
	const int iters = 1000000;
	pid_t kids[2];
	int st, good = 0;

	sh->counter = 0;
	for (int k = 0; k < 2; k++) {
		kids[k] = fork();
		if (kids[k] == 0) {
			for (int i = 0; i < iters; i++) {
				if (rn_rlock_lock(&sh->lock, NULL, NULL) != 0)
					_exit(1);
				/* a non-atomic read-modify-write: lost updates
				 * if exclusion fails */
				sh->counter = sh->counter + 1;
				if (rn_rlock_unlock(&sh->lock) != 0)
					_exit(1);
			}
			_exit(0);
		}
	}
	for (int k = 0; k < 2; k++) {
		waitpid(kids[k], &st, 0);
		good += WIFEXITED(st) && WEXITSTATUS(st) == 0;
	}
	is_int(good, 2, "both incrementers finished");
	is_int((long long)sh->counter, 2LL * iters,
	    "2 x 1,000,000 increments under the lock give exactly 2,000,000");
}

/* Someone locks with raw pthreads, gets EOWNERDEAD and unlocks without
 * making it consistent: the mutex is then unusable, and we must say so. */
static void
test_not_recoverable(void)
{
	pid_t holder;
	int fd, st;

	holder = holder_child(&fd);
	wait_byte(fd);
	kill(holder, SIGKILL);
	waitpid(holder, &st, 0);
	if (pthread_mutex_lock(&sh->lock.m) != EOWNERDEAD)
		bail("expected EOWNERDEAD from the raw mutex");
	pthread_mutex_unlock(&sh->lock.m);
	is_int(rn_rlock_lock(&sh->lock, repair_cb, sh), -ENOTRECOVERABLE,
	    "unrecoverable mutex: -ENOTRECOVERABLE");
	is_int(rn_rlock_init(&sh->lock), 0, "re-init (supervisor)");
	is_int(rn_rlock_lock(&sh->lock, repair_cb, sh), 0, "usable again");
	rn_rlock_unlock(&sh->lock);
}

int
main(void)
{
	sh = mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE,
	    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		bail("mmap: %s", strerror(errno));
	alarm(50);
	test_basic();
	test_dead_holder();
	test_blocked_waiter();
	test_counter();
	test_not_recoverable();
	return done_testing();
}
