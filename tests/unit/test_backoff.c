/* The worker restart policy: capped exponential backoff, crash-loop give-up. */
#include "autoconf.h"

#include "supervisor/sv_backoff.h"
#include "tests/lib/tap.h"

int
main(void)
{
	struct sv_restart_policy p = { .initial_ms = 100, .max_ms = 1000,
	    .max_failures = 5, .window_ms = 60000 };
	struct sv_restart_state st = { 0 };
	int64_t t = 1000000;

	plan(13);
	is_int(sv_backoff_failure(&st, &p, t), 100, "first failure: initial");
	is_int(sv_backoff_failure(&st, &p, t + 1), 200, "second doubles");
	is_int(sv_backoff_failure(&st, &p, t + 2), 400, "third doubles");
	is_int(sv_backoff_failure(&st, &p, t + 3), 800, "fourth doubles");
	is_int(sv_backoff_failure(&st, &p, t + 4), 1000, "fifth is capped");
	is_int(sv_backoff_recent(&st, &p, t + 4), 5, "five failures in window");
	is_int(sv_backoff_failure(&st, &p, t + 5), -1,
	    "sixth within the window: give up");

	/* failures spread wider than the window never give up */
	sv_backoff_reset(&st);
	int64_t d = 0;
	for (int i = 0; i < 50; i++)
		d = sv_backoff_failure(&st, &p, t + (int64_t)i * 20000);
	ok(d > 0, "50 failures 20 s apart keep restarting (delay %lld)",
	    (long long)d);
	is_int(sv_backoff_recent(&st, &p, t + 49 * 20000), 3,
	    "only three fall within a 60 s window");

	/* a quiet period resets the exponent */
	sv_backoff_reset(&st);
	sv_backoff_failure(&st, &p, t);
	sv_backoff_failure(&st, &p, t + 10);
	is_int(sv_backoff_failure(&st, &p, t + 120000), 100,
	    "after a quiet window the delay is initial again");

	/* reset forgets everything */
	sv_backoff_reset(&st);
	is_int(sv_backoff_recent(&st, &p, t), 0, "reset forgets failures");

	/* zero initial backoff stays zero, limit still applies */
	struct sv_restart_policy z = { .initial_ms = 0, .max_ms = 0,
	    .max_failures = 1, .window_ms = 1000 };
	sv_backoff_reset(&st);
	is_int(sv_backoff_failure(&st, &z, t), 0, "zero backoff");
	is_int(sv_backoff_failure(&st, &z, t + 1), -1,
	    "max_failures=1: the second failure gives up");
	return done_testing();
}
