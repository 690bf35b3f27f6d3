/*
 * Restart policy for workers, kept free of process state so it can be
 * tested on its own: capped exponential backoff, and giving up on a worker
 * that fails more than max_failures times within window_ms (the same
 * shape as systemd's StartLimitBurst/StartLimitIntervalSec).
 */
#ifndef SV_BACKOFF_H
#define SV_BACKOFF_H

#include <stdbool.h>
#include <stdint.h>

#define SV_BACKOFF_HISTORY 64

struct sv_restart_policy {
	int64_t initial_ms;
	int64_t max_ms;
	int max_failures;     /* < SV_BACKOFF_HISTORY */
	int64_t window_ms;
};

struct sv_restart_state {
	int64_t failures[SV_BACKOFF_HISTORY]; /* times of recent failures, ring */
	unsigned n;                           /* failures recorded in total */
};

/*
 * Record a failure at now_ms. Returns the delay before the next start,
 * or -1 when the worker has crash-looped past the limit.
 */
int64_t sv_backoff_failure(struct sv_restart_state *st,
    const struct sv_restart_policy *p, int64_t now_ms);
/* Failures within the window ending at now_ms. */
int sv_backoff_recent(const struct sv_restart_state *st,
    const struct sv_restart_policy *p, int64_t now_ms);
/* Forget the history (operator restart). */
void sv_backoff_reset(struct sv_restart_state *st);

#endif /* SV_BACKOFF_H */
