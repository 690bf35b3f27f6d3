/*
 * The connection counts behind max.connections, max.connections.per.ip
 * and max.connection.creation.rate, shared by the network workers that
 * accept from the same listening sockets. Each worker slot has its own
 * slice that only the worker in that slot writes (relaxed atomics; the
 * others read and sum), so a worker that dies leaves nothing behind once
 * its slice is zeroed: the supervisor does it when it reaps the worker,
 * and a new incarnation does it again before accepting. The creation
 * rates are shared clocks (GCRA) that any network worker moves by CAS.
 */
#ifndef RN_CONNLIMIT_H
#define RN_CONNLIMIT_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rn_shm;
struct rn_shm_params;

#define RN_CONNLIM_LISTENERS 8     /* = RN_CONFIG_MAX_LISTENERS */
#define RN_CONNLIM_IPS 1024        /* addresses a worker can count at once */
#define RN_CONNLIM_PROBES 32       /* linear probes before "full" */

/* One address's connections on one worker; used stays set once taken,
 * so a probe chain never breaks (an entry at count 0 is reused). */
struct rn_connlim_ip {
	uint8_t addr[16];          /* IPv6, or IPv4 mapped (::ffff:a.b.c.d) */
	_Atomic uint32_t count;
	_Atomic uint32_t used;
};

struct rn_connlim_slice {
	_Atomic uint32_t total;    /* what counts against max.connections */
	_Atomic uint32_t listener[RN_CONNLIM_LISTENERS];
	uint32_t pad[7];
	struct rn_connlim_ip ip[RN_CONNLIM_IPS];
};

/* The creation-rate clocks: when the connections taken so far are paid
 * for, in CLOCK_MONOTONIC us (broker-wide, then per listener). */
struct rn_connlim_rates {
	_Atomic int64_t broker_tat_us;
	_Atomic int64_t listener_tat_us[RN_CONNLIM_LISTENERS];
	int64_t pad[7];
};

size_t rn_connlim_shm_size(const struct rn_shm_params *p);
struct rn_connlim_rates *rn_connlim_rates(const struct rn_shm *shm);
struct rn_connlim_slice *rn_connlim_slice(const struct rn_shm *shm,
    unsigned slot);
/* Forget a slot's counts: its worker is gone (or just starting). */
void rn_connlim_slice_reset(const struct rn_shm *shm, unsigned slot);

/* The slice owner's add to an address (delta +1 or -1): the new count,
 * or -1 when a new address finds no free entry. */
int rn_connlim_ip_add(struct rn_connlim_slice *s, const uint8_t addr[16],
    int delta);
/* Any worker's read of an address's count in a slice. */
uint32_t rn_connlim_ip_get(const struct rn_connlim_slice *s,
    const uint8_t addr[16]);

/*
 * A rate of interval_us per connection with a burst of burst_us: 0 if
 * one may be taken now, else the us until it may (nothing taken).
 */
int64_t rn_connlim_rate_wait(_Atomic int64_t *tat, int64_t now_us,
    int64_t burst_us);
/* Take one (after the wait said 0; concurrent takers may overshoot by
 * one each, never more). */
void rn_connlim_rate_take(_Atomic int64_t *tat, int64_t now_us,
    int64_t interval_us);

#endif /* RN_CONNLIMIT_H */
