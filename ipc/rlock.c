/*
 * Robust process-shared lock (see rlock.h).
 */
#include "ipc/rlock.h"

#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <signal.h>
#include <unistd.h>

_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "owner must be a lock-free atomic");
_Static_assert(sizeof(pid_t) == 4, "pid_t layout is part of the segment");

int
rn_rlock_init(struct rn_rlock *l)
{
	pthread_mutexattr_t a;
	int rc;

	if ((rc = pthread_mutexattr_init(&a)) != 0)
		return -rc;
	if ((rc = pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED)) ||
	    (rc = pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST))) {
		pthread_mutexattr_destroy(&a);
		return -rc;
	}
	rc = pthread_mutex_init(&l->m, &a);
	pthread_mutexattr_destroy(&a);
	if (rc != 0)
		return -rc;
	atomic_init(&l->owner, 0);
	l->repairs = 0;
	atomic_store_explicit(&l->state, RN_RLOCK_READY, memory_order_release);
	return 0;
}

int
rn_rlock_init_once(struct rn_rlock *l)
{
	int32_t s = atomic_load_explicit(&l->state, memory_order_acquire);
	int rc;

	while (s != RN_RLOCK_READY) {
		/* untouched, or its initializer died before finishing */
		if (s == 0 || (s > 0 && kill(s, 0) == -1 && errno == ESRCH)) {
			if (!atomic_compare_exchange_strong(&l->state, &s,
			    (int32_t)getpid()))
				continue;
			if ((rc = rn_rlock_init(l)) != 0)
				atomic_store(&l->state, 0);
			return rc;
		}
		sched_yield();
		s = atomic_load_explicit(&l->state, memory_order_acquire);
	}
	return 0;
}

/* After EOWNERDEAD we hold the mutex but the data may be half-updated. */
static int
recover(struct rn_rlock *l, rn_rlock_repair_fn repair, void *arg)
{
	int rc;

	atomic_store_explicit(&l->owner, getpid(), memory_order_relaxed);
	l->repairs++;
	if (repair != NULL)
		repair(arg);
	/* only after the repair: a death inside repair() makes the next
	 * locker repair again */
	if ((rc = pthread_mutex_consistent(&l->m)) != 0) {
		atomic_store_explicit(&l->owner, 0, memory_order_relaxed);
		(void)pthread_mutex_unlock(&l->m);
		return -rc;
	}
	return 1;
}

static int
lock(struct rn_rlock *l, rn_rlock_repair_fn repair, void *arg, bool try)
{
	int rc;

	if ((rc = rn_rlock_init_once(l)) != 0)
		return rc;
	rc = try ? pthread_mutex_trylock(&l->m) : pthread_mutex_lock(&l->m);
	if (rc == EOWNERDEAD)
		return recover(l, repair, arg);
	if (rc != 0)
		return -rc;
	atomic_store_explicit(&l->owner, getpid(), memory_order_relaxed);
	return 0;
}

int
rn_rlock_lock(struct rn_rlock *l, rn_rlock_repair_fn repair, void *arg)
{
	return lock(l, repair, arg, false);
}

int
rn_rlock_trylock(struct rn_rlock *l, rn_rlock_repair_fn repair, void *arg)
{
	return lock(l, repair, arg, true);
}

int
rn_rlock_unlock(struct rn_rlock *l)
{
	pid_t me = getpid();
	int rc;

	if (atomic_load_explicit(&l->owner, memory_order_relaxed) != me)
		return -EPERM;
	atomic_store_explicit(&l->owner, 0, memory_order_relaxed);
	if ((rc = pthread_mutex_unlock(&l->m)) != 0) {
		atomic_store_explicit(&l->owner, me, memory_order_relaxed);
		return -rc;
	}
	return 0;
}

pid_t
rn_rlock_owner(const struct rn_rlock *l)
{
	return atomic_load_explicit(&l->owner, memory_order_relaxed);
}
