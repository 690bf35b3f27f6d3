#include "autoconf.h"

#include <string.h>

#include "supervisor/sv_backoff.h"

int
sv_backoff_recent(const struct sv_restart_state *st,
    const struct sv_restart_policy *p, int64_t now_ms)
{
	unsigned i, have = st->n < SV_BACKOFF_HISTORY ? st->n :
	    SV_BACKOFF_HISTORY;
	int recent = 0;

	for (i = 0; i < have; i++)
		if (now_ms - st->failures[i] < p->window_ms)
			recent++;
	return recent;
}

int64_t
sv_backoff_failure(struct sv_restart_state *st,
    const struct sv_restart_policy *p, int64_t now_ms)
{
	int64_t delay;
	int recent, shift;

	st->failures[st->n % SV_BACKOFF_HISTORY] = now_ms;
	st->n++;
	recent = sv_backoff_recent(st, p, now_ms);
	if (recent > p->max_failures)
		return -1;
	/* the first failure in a quiet window restarts after initial_ms */
	delay = p->initial_ms;
	for (shift = 1; shift < recent && delay < p->max_ms; shift++)
		delay *= 2;
	return delay < p->max_ms ? delay : p->max_ms;
}

void
sv_backoff_reset(struct sv_restart_state *st)
{
	memset(st, 0, sizeof(*st));
}
