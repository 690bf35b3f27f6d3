/*
 * runnelctl top (runnelctl_top.h): asks for the status every interval and
 * shows what moved since the last one, per worker. Rates need two
 * samples, so the first screen comes one interval after the start.
 */
#include "autoconf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <msgpack.h>

#include "common/ctlproto.h"
#include "common/util.h"
#include "tools/runnelctl_top.h"

#define TOP_MAX_WORKERS 160

/* What one worker showed in one sample. */
struct top_worker {
	char name[32];
	int64_t pid, cpu_ms, rss, conns, restarts;
	uint64_t requests;
	char state[16], last_exit[48];
};

struct top_sample {
	int64_t at_ms;
	int n;
	struct top_worker w[TOP_MAX_WORKERS];
};

/* One status request; 0, or -1 with the reason said. */
static int
sample(const char *path, struct top_sample *s)
{
	msgpack_unpacked up;
	const msgpack_object *ws;
	char *reply = NULL;
	bool connected;
	ssize_t n;
	uint32_t i;
	int rc = -1;

	n = rn_ctl_call_verb(path, "status", &reply, &connected);
	if (!connected) {
		fprintf(stderr, "runnelctl: cannot connect to %s\n", path);
		return -1;
	}
	s->at_ms = rn_now_ms();
	s->n = 0;
	msgpack_unpacked_init(&up);
	if (n > 0 && msgpack_unpack_next(&up, reply, (size_t)n, NULL) ==
	    MSGPACK_UNPACK_SUCCESS && (ws = rn_mp_get(&up.data,
	    "workers")) != NULL && ws->type == MSGPACK_OBJECT_ARRAY) {
		for (i = 0; i < ws->via.array.size && s->n < TOP_MAX_WORKERS;
		    i++) {
			const msgpack_object *o = &ws->via.array.ptr[i];
			struct top_worker *w = &s->w[s->n++];

			rn_mp_get_str(o, "name", w->name, sizeof(w->name));
			rn_mp_get_str(o, "state", w->state, sizeof(w->state));
			rn_mp_get_str(o, "last_exit", w->last_exit,
			    sizeof(w->last_exit));
			w->pid = rn_mp_get_int(o, "pid", 0);
			w->cpu_ms = rn_mp_get_int(o, "cpu_ms", 0);
			w->rss = rn_mp_get_int(o, "rss_bytes", 0);
			w->conns = rn_mp_get_int(o, "connections", 0);
			w->restarts = rn_mp_get_int(o, "restarts", 0);
			w->requests = (uint64_t)rn_mp_get_int(o, "requests", 0);
		}
		rc = 0;
	} else
		fprintf(stderr, "runnelctl: %s: no status from runneld\n",
		    path);
	msgpack_unpacked_destroy(&up);
	free(reply);
	return rc;
}

static const struct top_worker *
find(const struct top_sample *s, const char *name)
{
	int i;

	for (i = 0; i < s->n; i++)
		if (strcmp(s->w[i].name, name) == 0)
			return &s->w[i];
	return NULL;
}

static void
show(const struct top_sample *prev, const struct top_sample *cur)
{
	double dt = (double)(cur->at_ms - prev->at_ms) / 1000.0;
	int i;

	if (isatty(STDOUT_FILENO))
		fputs("\033[H\033[2J", stdout);
	printf("%-20s %-8s %-9s %6s %8s %6s %9s %8s  %s\n", "NAME", "PID",
	    "STATE", "CPU%", "RSS MiB", "CONNS", "REQ/S", "RESTARTS",
	    "LAST EXIT");
	for (i = 0; i < cur->n; i++) {
		const struct top_worker *w = &cur->w[i];
		const struct top_worker *p = find(prev, w->name);
		/* a restarted worker starts its own CPU count again */
		bool same = p != NULL && p->pid == w->pid && dt > 0;
		double cpu = same ? (double)(w->cpu_ms - p->cpu_ms) / 10.0 /
		    dt : 0;
		double rps = p != NULL && dt > 0 && w->requests >= p->requests ?
		    (double)(w->requests - p->requests) / dt : 0;

		printf("%-20s %-8lld %-9s %6.1f %8.1f %6lld %9.0f %8lld  %s\n",
		    w->name, (long long)w->pid, w->state, cpu,
		    (double)w->rss / (1024.0 * 1024.0), (long long)w->conns,
		    rps, (long long)w->restarts, w->last_exit);
	}
	fflush(stdout);
}

int
rn_ctl_top(const char *socket_path, int interval_ms, int count)
{
	struct top_sample *a = calloc(2, sizeof(*a));
	int k, rc = 1;

	if (a == NULL)
		return 1;
	if (sample(socket_path, &a[0]) != 0)
		goto out;
	for (k = 0; count == 0 || k < count; k++) {
		usleep((useconds_t)interval_ms * 1000);
		if (sample(socket_path, &a[(k + 1) % 2]) != 0)
			goto out;
		show(&a[k % 2], &a[(k + 1) % 2]);
	}
	rc = 0;
out:
	free(a);
	return rc;
}
