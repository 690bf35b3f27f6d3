/*
 * Partition leader and ISR decisions of the active controller, as pure
 * functions of the partition and its brokers' states: what a fenced,
 * unregistered or shutting-down broker costs a partition, and elections
 * (the automatic one, preferred, unclean). Callers turn a decision into
 * a PartitionChange record.
 */
#ifndef RN_CTL_ELECT_H
#define RN_CTL_ELECT_H

#include <stdbool.h>
#include <stdint.h>

#include "workers/controller/state.h"

#define CTL_MAX_RF 64

enum ctl_bstate {
	CTL_B_DOWN = 0,     /* unregistered or fenced */
	CTL_B_LEAVING,      /* in controlled shutdown */
	CTL_B_UP,
};

typedef enum ctl_bstate (*ctl_bstate_fn)(void *arg, int32_t id);

/* A partition's new leader and ISR. */
struct ctl_pchange {
	int32_t leader, leader_epoch, partition_epoch;
	int32_t n_isr;
	int32_t isr[CTL_MAX_RF];
	bool unclean;       /* an out-of-sync replica was made leader */
};

/* The state of broker id in st (a ctl_bstate_fn with arg = st). */
enum ctl_bstate ctl_broker_state(void *st, int32_t id);

/*
 * What p should become: DOWN brokers leave the ISR, then LEAVING ones,
 * each step only if someone remains; the leader stays if UP and in the
 * ISR, else the first UP ISR member in replica order, else (a LEAVING
 * leader with no alternative) stays, else with unclean the first UP
 * replica leads with ISR = [itself], else no leader (-1). A new leader
 * bumps the leader epoch; any change bumps the partition epoch.
 * True when out differs from p.
 */
bool ctl_elect(const struct ctl_partition *p, ctl_bstate_fn fn, void *arg,
    bool unclean, struct ctl_pchange *out);

/* ElectLeaders: 0 with out filled, or ELECTION_NOT_NEEDED,
 * PREFERRED_LEADER_NOT_AVAILABLE / ELIGIBLE_LEADERS_NOT_AVAILABLE. */
int16_t ctl_elect_preferred(const struct ctl_partition *p, ctl_bstate_fn fn,
    void *arg, struct ctl_pchange *out);
int16_t ctl_elect_unclean(const struct ctl_partition *p, ctl_bstate_fn fn,
    void *arg, struct ctl_pchange *out);

/* A LEAVING broker may stop once it leads nothing another UP ISR member
 * could lead. */
bool ctl_leads_movable(const struct ctl_state *st, int32_t id,
    ctl_bstate_fn fn, void *arg);

#endif /* RN_CTL_ELECT_H */
