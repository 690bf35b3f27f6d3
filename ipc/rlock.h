/*
 * Robust, process-shared lock living in shared memory: a pthread mutex with
 * PTHREAD_PROCESS_SHARED and PTHREAD_MUTEX_ROBUST, so that when a holder
 * dies (even by SIGKILL) the kernel marks it and the next locker learns it
 * must repair the protected data.
 *
 * The mutex holds no pointers into the mapping (glibc keeps the robust list
 * per thread, in the locker's own address space), so processes may map the
 * segment at different addresses.  Do not exec() while holding it.
 *
 * `owner` is the pid of the holder, for diagnostics and the supervisor; after
 * a holder's death it keeps the dead pid until the next lock.
 */
#ifndef RN_IPC_RLOCK_H
#define RN_IPC_RLOCK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

struct rn_rlock {
	pthread_mutex_t m;
	_Atomic pid_t owner;
	uint32_t repairs;	/* times a dead holder was repaired (under m) */
};

/* PTHREAD_PROCESS_SHARED + PTHREAD_MUTEX_ROBUST.  0 or -errno. */
int rn_rlock_init(struct rn_rlock *l);

typedef void (*rn_rlock_repair_fn)(void *arg);

/*
 * Returns 0, or 1 when the previous holder died holding it: repair(arg) (if
 * not NULL) was called under the lock and the mutex made consistent before
 * returning.  -errno on failure (e.g. -ENOTRECOVERABLE, when an earlier
 * locker got EOWNERDEAD and unlocked without making it consistent, which
 * this API never does).
 */
int rn_rlock_lock(struct rn_rlock *l, rn_rlock_repair_fn repair, void *arg);
/* 0, or -EPERM if this process does not hold it, or -errno. */
int rn_rlock_unlock(struct rn_rlock *l);
/* Pid of the holder, 0 if free (or a dead holder's pid: see above). */
pid_t rn_rlock_owner(const struct rn_rlock *l);

/* Addition: 0 when taken, -EBUSY when held, 1/-errno as rn_rlock_lock(). */
int rn_rlock_trylock(struct rn_rlock *l, rn_rlock_repair_fn repair, void *arg);

#endif /* RN_IPC_RLOCK_H */
