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
	/*
	 * 0: never initialized (zero-filled memory), RN_RLOCK_READY, or the
	 * pid of the process initializing it. Lets a large table of locks
	 * in a lazily backed mapping be formatted on first use, so only the
	 * locks used cost memory.
	 */
	_Atomic int32_t state;
	uint32_t pad;
};

#define RN_RLOCK_READY (-1)

/* PTHREAD_PROCESS_SHARED + PTHREAD_MUTEX_ROBUST.  0 or -errno. */
int rn_rlock_init(struct rn_rlock *l);
/*
 * Initialize a zero-filled lock on its first use, once across processes
 * (an initializer that died half-way is replaced); lock and trylock call
 * it. 0 or -errno.
 */
int rn_rlock_init_once(struct rn_rlock *l);

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
