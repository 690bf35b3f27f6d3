/*
 * runnelctl: the operator's client of the supervisor's control socket.
 *   runnelctl [-s PATH] status [--json]
 *   runnelctl [-s PATH] top [--interval MS] [--count N]
 *   runnelctl [-s PATH] metrics [--json]
 *   runnelctl [-s PATH] restart WORKER
 *   runnelctl [-s PATH] restart --role ROLE [--rolling] [--json]
 *   runnelctl [-s PATH] upgrade [--binary PATH] [--json]
 *   runnelctl [-s PATH] reload [--json]
 *   runnelctl [-s PATH] stop
 */
#include "autoconf.h"

#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <msgpack.h>

#include "common/ctlproto.h"
#include "tools/runnelctl_top.h"

#define DEFAULT_SOCKET "/run/runnel/runneld.sock"

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: runnelctl [-s SOCKET] status [--json]\n"
	    "       runnelctl [-s SOCKET] top [--interval MS] [--count N]\n"
	    "       runnelctl [-s SOCKET] metrics [--json]\n"
	    "       runnelctl [-s SOCKET] restart WORKER\n"
	    "       runnelctl [-s SOCKET] restart --role ROLE [--rolling] "
	    "[--json]\n"
	    "         ROLE: network, replica-fetcher, log-cleaner, "
	    "group-coordinator,\n"
	    "         controller or all; answers when every new worker is "
	    "healthy\n"
	    "         (--rolling: one worker at a time, each healthy before "
	    "the next)\n"
	    "       runnelctl [-s SOCKET] upgrade [--binary PATH] [--json]\n"
	    "         re-execute the supervisor (PATH: default the binary it "
	    "runs) on the\n"
	    "         same sockets and shared memory; answers when the new "
	    "one is ready\n"
	    "         (or failed, and the old one keeps the node)\n"
	    "       runnelctl [-s SOCKET] reload [--json]\n"
	    "         read the TLS listeners' key and trust files again (a "
	    "bad one is\n"
	    "         refused, the old ones kept), then replace the network "
	    "workers one\n"
	    "         by one; answers when the last new one is healthy\n"
	    "       runnelctl [-s SOCKET] stop\n"
	    "       runnelctl [-s SOCKET] fault stall-fetch on|off   (test fault)\n"
	    "SOCKET defaults to $RUNNEL_CONTROL_SOCKET, else %s\n",
	    DEFAULT_SOCKET);
}

static void
json_str(const char *s, size_t n)
{
	size_t i;

	putchar('"');
	for (i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void
json_obj(const msgpack_object *o)
{
	uint32_t i;

	switch (o->type) {
	case MSGPACK_OBJECT_NIL: printf("null"); break;
	case MSGPACK_OBJECT_BOOLEAN:
		printf(o->via.boolean ? "true" : "false");
		break;
	case MSGPACK_OBJECT_POSITIVE_INTEGER:
		printf("%llu", (unsigned long long)o->via.u64);
		break;
	case MSGPACK_OBJECT_NEGATIVE_INTEGER:
		printf("%lld", (long long)o->via.i64);
		break;
	case MSGPACK_OBJECT_FLOAT32:
	case MSGPACK_OBJECT_FLOAT64:
		printf("%g", o->via.f64);
		break;
	case MSGPACK_OBJECT_STR:
		json_str(o->via.str.ptr, o->via.str.size);
		break;
	case MSGPACK_OBJECT_ARRAY:
		putchar('[');
		for (i = 0; i < o->via.array.size; i++) {
			if (i)
				putchar(',');
			json_obj(&o->via.array.ptr[i]);
		}
		putchar(']');
		break;
	case MSGPACK_OBJECT_MAP:
		putchar('{');
		for (i = 0; i < o->via.map.size; i++) {
			if (i)
				putchar(',');
			if (o->via.map.ptr[i].key.type == MSGPACK_OBJECT_STR)
				json_obj(&o->via.map.ptr[i].key);
			else
				printf("\"?\"");
			putchar(':');
			json_obj(&o->via.map.ptr[i].val);
		}
		putchar('}');
		break;
	default:
		printf("null");
	}
}

/* A worker's duties, comma-separated; "-" for none. */
static const char *
duties(const msgpack_object *w, char *buf, size_t len)
{
	const msgpack_object *d = rn_mp_get(w, "duties");
	uint32_t i;

	buf[0] = '\0';
	for (i = 0; d != NULL && d->type == MSGPACK_OBJECT_ARRAY &&
	    i < d->via.array.size; i++) {
		const msgpack_object *s = &d->via.array.ptr[i];

		if (s->type != MSGPACK_OBJECT_STR)
			continue;
		snprintf(buf + strlen(buf), len - strlen(buf), "%s%.*s",
		    buf[0] ? "," : "", (int)s->via.str.size, s->via.str.ptr);
	}
	return buf[0] ? buf : "-";
}

static void
fmt_duration(int64_t ms, char *buf, size_t len)
{
	int64_t s = ms / 1000;

	if (ms < 0)
		snprintf(buf, len, "-");
	else if (s < 60)
		snprintf(buf, len, "%llds", (long long)s);
	else if (s < 3600)
		snprintf(buf, len, "%lldm%02llds", (long long)(s / 60),
		    (long long)(s % 60));
	else
		snprintf(buf, len, "%lldh%02lldm", (long long)(s / 3600),
		    (long long)(s / 60 % 60));
}

static void
print_str_list(const msgpack_object *a)
{
	uint32_t i;

	if (a == NULL || a->type != MSGPACK_OBJECT_ARRAY)
		return;
	for (i = 0; i < a->via.array.size; i++) {
		const msgpack_object *s = &a->via.array.ptr[i];
		if (s->type == MSGPACK_OBJECT_STR)
			printf("%s%.*s", i ? ", " : "", (int)s->via.str.size,
			    s->via.str.ptr);
	}
}

static void
print_status(const msgpack_object *r)
{
	const msgpack_object *node = rn_mp_get(r, "node");
	const msgpack_object *ws = rn_mp_get(r, "workers");
	char roles[64] = "", state[32] = "", cluster[64] = "", up[32];
	uint32_t i;

	rn_mp_get_str(node, "roles", roles, sizeof(roles));
	rn_mp_get_str(node, "state", state, sizeof(state));
	rn_mp_get_str(node, "cluster_id", cluster, sizeof(cluster));
	fmt_duration(rn_mp_get_int(node, "uptime_ms", -1), up, sizeof(up));
	printf("node %lld (%s), supervisor pid %lld, %s, up %s\n",
	    (long long)rn_mp_get_int(node, "node_id", -1), roles,
	    (long long)rn_mp_get_int(node, "pid", -1), state, up);
	printf("listeners: ");
	print_str_list(rn_mp_get(node, "listeners"));
	printf("\nadvertised: ");
	print_str_list(rn_mp_get(node, "advertised_listeners"));
	printf("\ncluster id: %s\n", cluster[0] ? cluster : "(not known yet)");
	printf("metadata image version: %lld\n\n",
	    (long long)rn_mp_get_int(node, "metadata_image_version", 0));
	printf("%-20s %-17s %-8s %-9s %8s %10s %9s %8s %6s  %-8s %s\n",
	    "NAME", "ROLE", "PID", "STATE", "RESTARTS", "UPTIME", "CPU s",
	    "RSS MiB", "CONNS", "DUTIES", "LAST EXIT");
	for (i = 0; ws != NULL && ws->type == MSGPACK_OBJECT_ARRAY &&
	    i < ws->via.array.size; i++) {
		const msgpack_object *w = &ws->via.array.ptr[i];
		char name[64] = "", role[32] = "", st[32] = "", pid[16];
		char dbuf[64], last[64] = "";
		int64_t p = rn_mp_get_int(w, "pid", 0);

		rn_mp_get_str(w, "name", name, sizeof(name));
		rn_mp_get_str(w, "role", role, sizeof(role));
		rn_mp_get_str(w, "state", st, sizeof(st));
		snprintf(pid, sizeof(pid), "%lld", (long long)p);
		fmt_duration(p ? rn_mp_get_int(w, "uptime_ms", -1) : -1, up,
		    sizeof(up));
		rn_mp_get_str(w, "last_exit", last, sizeof(last));
		printf("%-20s %-17s %-8s %-9s %8lld %10s %9.1f %8.1f %6lld  "
		    "%-8s %s\n", name, role, p ? pid : "-", st,
		    (long long)rn_mp_get_int(w, "restarts", 0), up,
		    (double)rn_mp_get_int(w, "cpu_ms", 0) / 1000.0,
		    (double)rn_mp_get_int(w, "rss_bytes", 0) / (1024.0 * 1024.0),
		    (long long)rn_mp_get_int(w, "connections", 0),
		    duties(w, dbuf, sizeof(dbuf)), last);
	}
}

struct cmd {
	const char *path;       /* the control socket */
	const char *verb;
	const char *worker;     /* restart */
	const char *role;       /* restart --role */
	const char *binary;     /* upgrade --binary */
	int interval_ms, count; /* top */
	bool rolling;
	const char *fault, *fault_state;
	bool json;
};

/* The verbs: how many words follow each, and what to say without them. */
static const struct verb {
	const char *name;
	int nargs;
	const char *missing;
} verbs[] = {
	{ "status", 0, NULL },
	{ "top", 0, NULL },
	{ "metrics", 0, NULL },
	{ "stop", 0, NULL },
	{ "upgrade", 0, NULL },
	{ "reload", 0, NULL },
	{ "restart", 1, "restart needs a worker name (see runnelctl status) or --role ROLE" },
	{ "fault", 2, "fault needs a name and on|off" },
};

/* Options before and after the verb; 0, 1 for --help (only before the
 * verb, as "+s:jh" asks), or -1 for a bad one. */
static int
parse_opts(int argc, char **argv, const char *optstring, struct cmd *c)
{
	static const struct option opts[] = {
		{ "socket", required_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "role", required_argument, NULL, 'r' },
		{ "rolling", no_argument, NULL, 'R' },
		{ "binary", required_argument, NULL, 'b' },
		{ "interval", required_argument, NULL, 'i' },
		{ "count", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int ch;

	while ((ch = getopt_long(argc, argv, optstring, opts, NULL)) != -1) {
		switch (ch) {
		case 's': c->path = optarg; break;
		case 'j': c->json = true; break;
		case 'r': c->role = optarg; break;
		case 'R': c->rolling = true; break;
		case 'b': c->binary = optarg; break;
		case 'i': c->interval_ms = atoi(optarg); break;
		case 'n': c->count = atoi(optarg); break;
		case 'h':
			if (optstring[0] == '+')
				return 1;
			return -1;
		default: return -1;
		}
	}
	return 0;
}

/* Fill c from the command line; -1 to go on, else the exit code. */
static int
parse_args(int argc, char **argv, struct cmd *c)
{
	const struct verb *v = NULL;
	size_t i;
	int rc;

	if ((rc = parse_opts(argc, argv, "+s:jh", c)) == 1) {
		usage(stdout);
		return 0;
	}
	if (rc != 0 || optind >= argc) {
		usage(stderr);
		return 2;
	}
	c->verb = argv[optind++];
	/* options may also follow the verb: "status --json" */
	if (parse_opts(argc, argv, "s:jhi:n:", c) != 0) {
		usage(stderr);
		return 2;
	}
	for (i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (strcmp(c->verb, verbs[i].name) == 0)
			v = &verbs[i];
	if (v == NULL) {
		fprintf(stderr, "runnelctl: unknown verb '%s'\n", c->verb);
		usage(stderr);
		return 2;
	}
	if ((c->role != NULL || c->rolling) &&
	    strcmp(c->verb, "restart") != 0) {
		fprintf(stderr, "runnelctl: --role and --rolling are for "
		    "restart\n");
		return 2;
	}
	if (c->binary != NULL && strcmp(c->verb, "upgrade") != 0) {
		fprintf(stderr, "runnelctl: --binary is for upgrade\n");
		return 2;
	}
	if (c->rolling && c->role == NULL) {
		fprintf(stderr, "runnelctl: --rolling needs --role ROLE\n");
		return 2;
	}
	if (c->role != NULL) {
		/* restart --role ROLE: no worker name */
		if (optind != argc) {
			fprintf(stderr, "runnelctl: restart takes a worker or "
			    "--role ROLE, not both\n");
			return 2;
		}
		return -1;
	}
	if (optind + v->nargs > argc) {
		fprintf(stderr, "runnelctl: %s\n", v->missing);
		return 2;
	}
	if (v->nargs == 1)
		c->worker = argv[optind++];
	if (v->nargs == 2) {
		c->fault = argv[optind++];
		c->fault_state = argv[optind++];
	}
	if (optind != argc) {
		usage(stderr);
		return 2;
	}
	return -1;
}

static void
pack_request(msgpack_packer *pk, const struct cmd *c)
{
	msgpack_pack_map(pk, c->role ? 4 : c->worker ? 3 : c->fault ? 4 :
	    c->binary ? 3 : 2);
	rn_mp_pack_str(pk, "v");
	msgpack_pack_int(pk, RN_CTL_VERSION);
	rn_mp_pack_str(pk, "verb");
	rn_mp_pack_str(pk, c->verb);
	if (c->role) {
		rn_mp_pack_str(pk, "role");
		rn_mp_pack_str(pk, c->role);
		rn_mp_pack_str(pk, "rolling");
		if (c->rolling)
			msgpack_pack_true(pk);
		else
			msgpack_pack_false(pk);
	}
	if (c->binary) {
		rn_mp_pack_str(pk, "binary");
		rn_mp_pack_str(pk, c->binary);
	}
	if (c->worker) {
		rn_mp_pack_str(pk, "worker");
		rn_mp_pack_str(pk, c->worker);
	}
	if (c->fault) {
		rn_mp_pack_str(pk, "fault");
		rn_mp_pack_str(pk, c->fault);
		rn_mp_pack_str(pk, "state");
		rn_mp_pack_str(pk, c->fault_state);
	}
}

/* The exposition as /metrics serves it, or the samples as JSON. */
static void
print_metrics(const msgpack_object *r, bool json)
{
	const msgpack_object *o;

	o = rn_mp_get(r, json ? "metrics" : "text");
	if (o == NULL)
		return;
	if (json) {
		json_obj(o);
		putchar('\n');
	} else if (o->type == MSGPACK_OBJECT_STR)
		fwrite(o->via.str.ptr, 1, o->via.str.size, stdout);
}

/* What a restart --role did, worker by worker. */
static void
print_roll(const msgpack_object *r)
{
	const msgpack_object *ws = rn_mp_get(r, "workers");
	char role[32] = "";
	uint32_t i, done = 0;

	rn_mp_get_str(r, "role", role, sizeof(role));
	for (i = 0; ws != NULL && ws->type == MSGPACK_OBJECT_ARRAY &&
	    i < ws->via.array.size; i++) {
		const msgpack_object *w = &ws->via.array.ptr[i];
		char name[64] = "";
		int64_t ms = rn_mp_get_int(w, "ms", -1);

		rn_mp_get_str(w, "name", name, sizeof(name));
		if (ms < 0) {
			printf("%-20s pid %-8lld not restarted\n", name,
			    (long long)rn_mp_get_int(w, "old_pid", 0));
			continue;
		}
		done++;
		printf("%-20s pid %-8lld -> %-8lld healthy after %lld ms "
		    "(restarts %lld)\n", name,
		    (long long)rn_mp_get_int(w, "old_pid", 0),
		    (long long)rn_mp_get_int(w, "pid", 0), (long long)ms,
		    (long long)rn_mp_get_int(w, "restarts", 0));
	}
	printf("%s%s restart of %s: %u worker(s) in %lld ms\n",
	    rn_mp_get(r, "ok") != NULL && rn_mp_get(r, "ok")->via.boolean ?
	    "" : "incomplete ", rn_mp_get(r, "rolling") != NULL &&
	    rn_mp_get(r, "rolling")->via.boolean ? "rolling" : "immediate",
	    role, done, (long long)rn_mp_get_int(r, "duration_ms", 0));
}

/* What an upgrade did: the workers the new supervisor replaced. */
static void
print_upgrade(const msgpack_object *r)
{
	const msgpack_object *ws = rn_mp_get(r, "workers");
	const msgpack_object *ok = rn_mp_get(r, "ok");
	char binary[4096] = "";
	uint32_t i;

	rn_mp_get_str(r, "binary", binary, sizeof(binary));
	for (i = 0; ws != NULL && ws->type == MSGPACK_OBJECT_ARRAY &&
	    i < ws->via.array.size; i++) {
		const msgpack_object *w = &ws->via.array.ptr[i];
		char name[64] = "";

		rn_mp_get_str(w, "name", name, sizeof(name));
		printf("%-20s pid %-8lld -> %-8lld healthy after %lld ms\n",
		    name, (long long)rn_mp_get_int(w, "old_pid", 0),
		    (long long)rn_mp_get_int(w, "pid", 0),
		    (long long)rn_mp_get_int(w, "ms", 0));
	}
	if (ok != NULL && ok->type == MSGPACK_OBJECT_BOOLEAN &&
	    ok->via.boolean)
		printf("upgraded: supervisor pid %lld -> %lld runs %s, %lld "
		    "ms\n", (long long)rn_mp_get_int(r, "old_pid", 0),
		    (long long)rn_mp_get_int(r, "pid", 0), binary,
		    (long long)rn_mp_get_int(r, "duration_ms", 0));
}

/* Say what runneld answered; the exit code. */
static int
print_reply(const char *reply, size_t n, const struct cmd *c)
{
	bool roll = c->role != NULL || strcmp(c->verb, "reload") == 0;
	msgpack_unpacked up;
	char err[640];
	int rc = 1;

	msgpack_unpacked_init(&up);
	if (msgpack_unpack_next(&up, reply, n, NULL) !=
	    MSGPACK_UNPACK_SUCCESS || up.data.type != MSGPACK_OBJECT_MAP) {
		fprintf(stderr, "runnelctl: malformed reply\n");
	} else if (rn_mp_get(&up.data, "ok") == NULL ||
	    !rn_mp_get(&up.data, "ok")->via.boolean) {
		if (rn_mp_get_str(&up.data, "error", err, sizeof(err)) != 0)
			strlcpy(err, "request failed", sizeof(err));
		if (c->json && strcmp(c->verb, "upgrade") == 0) {
			json_obj(&up.data);
			putchar('\n');
		} else if (roll && rn_mp_get(&up.data, "workers") != NULL)
			print_roll(&up.data);
		else if (strcmp(c->verb, "upgrade") == 0)
			print_upgrade(&up.data);
		fprintf(stderr, "runnelctl: %s\n", err);
	} else {
		if (strcmp(c->verb, "status") == 0) {
			if (c->json) {
				json_obj(&up.data);
				putchar('\n');
			} else
				print_status(&up.data);
		} else if (strcmp(c->verb, "metrics") == 0)
			print_metrics(&up.data, c->json);
		else if ((roll || strcmp(c->verb, "upgrade") == 0) &&
		    c->json) {
			json_obj(&up.data);
			putchar('\n');
		} else if (roll) {
			print_roll(&up.data);
			if (c->role == NULL)
				printf("TLS certificates reloaded: every "
				    "network worker serves the new ones\n");
		}
		else if (strcmp(c->verb, "upgrade") == 0)
			print_upgrade(&up.data);
		else if (strcmp(c->verb, "restart") == 0)
			printf("restarting %s\n", c->worker);
		else if (c->fault)
			printf("fault %s %s\n", c->fault, c->fault_state);
		else
			printf("stopping\n");
		rc = 0;
	}
	msgpack_unpacked_destroy(&up);
	return rc;
}

int
main(int argc, char **argv)
{
	struct cmd c = { .path = getenv("RUNNEL_CONTROL_SOCKET") };
	msgpack_sbuffer sb;
	msgpack_packer pk;
	char *reply = NULL;
	int fd, rc;
	ssize_t n;

	if (c.path == NULL)
		c.path = DEFAULT_SOCKET;
	if ((rc = parse_args(argc, argv, &c)) >= 0)
		return rc;
	if (strcmp(c.verb, "top") == 0)
		return rn_ctl_top(c.path, c.interval_ms > 0 ? c.interval_ms :
		    1000, c.count > 0 ? c.count : 0);
	if ((fd = rn_ctl_connect(c.path)) < 0) {
		fprintf(stderr, "runnelctl: cannot connect to %s: %s\n", c.path,
		    strerror(-fd));
		return 1;
	}
	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	pack_request(&pk, &c);
	rc = 1;
	if (rn_ctl_send(fd, sb.data, sb.size) != 0 ||
	    (n = rn_ctl_recv(fd, &reply, RN_CTL_MAX_REPLY)) < 0)
		fprintf(stderr, "runnelctl: %s: no reply from runneld\n",
		    c.path);
	else
		rc = print_reply(reply, (size_t)n, &c);
	free(reply);
	msgpack_sbuffer_destroy(&sb);
	close(fd);
	return rc;
}
