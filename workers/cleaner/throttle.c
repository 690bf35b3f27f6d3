/*
 * The cleaner's I/O cap (log.cleaner.io.max.bytes.per.second): bytes read
 * and written are counted from the start of a cleaning and the process
 * sleeps whenever it is ahead of the rate.
 */
#include "autoconf.h"

#include <time.h>

#include "workers/cleaner/cl_int.h"

static int64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void
cl_throttle_init(struct cl_throttle *t, double rate)
{
	t->rate = rate;
	t->start_ns = now_ns();
	t->bytes = 0;
}

void
cl_throttle_io(struct cl_throttle *t, size_t bytes)
{
	double due_s;
	int64_t ahead_ns;

	if (t->rate <= 0 || t->rate > 1e18)
		return;
	t->bytes += (double)bytes;
	due_s = t->bytes / t->rate;
	ahead_ns = (int64_t)(due_s * 1e9) - (now_ns() - t->start_ns);
	if (ahead_ns > 1000000) {
		struct timespec ts = { ahead_ns / 1000000000, ahead_ns % 1000000000 };

		nanosleep(&ts, NULL);
	}
	/* a long idle spell does not bank a burst */
	if (now_ns() - t->start_ns > 10LL * 1000000000) {
		t->start_ns = now_ns();
		t->bytes = 0;
	}
}
