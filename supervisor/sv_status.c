/* The node's status as the control socket reports it. */
#include "autoconf.h"

#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/ctlproto.h"
#include "common/util.h"
#include "ipc/mdimage.h"
#include "ipc/mdimage_write.h"
#include "ipc/metrics.h"
#include "supervisor/sv.h"
#include "supervisor/sv_control.h"

static void
pack_listeners(msgpack_packer *pk, const struct rn_listener *l, int n)
{
	char buf[RN_CONFIG_NAME_MAX + RN_CONFIG_HOST_MAX + 16];
	int i;

	msgpack_pack_array(pk, (size_t)n);
	for (i = 0; i < n; i++) {
		snprintf(buf, sizeof(buf), "%s://%s:%u", l[i].name, l[i].host,
		    l[i].port);
		rn_mp_pack_str(pk, buf);
	}
}

/* CPU time (user + system) and resident bytes of a process; 0 if gone. */
static void
proc_usage(pid_t pid, int64_t *cpu_ms, int64_t *rss)
{
	char path[64], buf[1024], *p;
	unsigned long long ut = 0, st = 0, pages = 0;
	FILE *f;

	*cpu_ms = *rss = 0;
	if (pid <= 0)
		return;
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if ((f = fopen(path, "re")) != NULL) {
		/* the fields after the command name, which may hold spaces */
		if (fgets(buf, sizeof(buf), f) != NULL &&
		    (p = strrchr(buf, ')')) != NULL &&
		    sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u "
		    "%*u %llu %llu", &ut, &st) == 2)
			*cpu_ms = (int64_t)((ut + st) * 1000 /
			    (unsigned long long)sysconf(_SC_CLK_TCK));
		fclose(f);
	}
	snprintf(path, sizeof(path), "/proc/%d/statm", (int)pid);
	if ((f = fopen(path, "re")) != NULL) {
		if (fscanf(f, "%*u %llu", &pages) == 1)
			*rss = (int64_t)pages * sysconf(_SC_PAGESIZE);
		fclose(f);
	}
}

/* How the worker's last run ended: "" when it never ended. */
static void
exit_str(const struct sv_child *c, char *buf, size_t len)
{
	int s = c->last_status;

	buf[0] = '\0';
	if (c->restarts == 0 && s == 0)
		return;
	if (WIFSIGNALED(s))
		snprintf(buf, len, "killed by %s", strsignal(WTERMSIG(s)));
	else if (WIFEXITED(s))
		snprintf(buf, len, "exit status %d", WEXITSTATUS(s));
}

/* Requests the worker answered (its metrics slot; 0 for other roles). */
static uint64_t
worker_requests(struct sv *sv, unsigned slot)
{
	const struct rn_met_worker *m = rn_metrics_worker(&sv->shm, slot);
	uint64_t n = 0;
	unsigned k;

	for (k = 0; k < RN_MET_MAX_API; k++)
		n += atomic_load_explicit(&m->requests[k],
		    memory_order_relaxed);
	return n;
}

static void
pack_node(struct sv *sv, msgpack_packer *pk, int64_t now)
{
	struct rn_meta_image *mi = rn_shm_meta(&sv->shm);
	char cluster[sizeof(mi->cluster_id) + 1] = "";
	uint64_t version = 0;
	uint32_t seq;

	/* bounded read: a dead writer must not hang the supervisor */
	if (rn_seq_read_begin_timeout(&mi->lock, &seq, 100000) == 0) {
		version = atomic_load(&mi->version);
		memcpy(cluster, mi->cluster_id, sizeof(mi->cluster_id));
		if (rn_seq_read_retry(&mi->lock, seq))
			version = 0;
	}
	msgpack_pack_map(pk, 11);
	rn_mp_pack_str(pk, "node_id");
	msgpack_pack_int32(pk, sv->cfg.node_id);
	rn_mp_pack_str(pk, "roles");
	rn_mp_pack_str(pk, rn_config_roles_str(sv->cfg.roles));
	rn_mp_pack_str(pk, "listeners");
	pack_listeners(pk, sv->cfg.listeners, sv->cfg.n_listeners);
	rn_mp_pack_str(pk, "advertised_listeners");
	pack_listeners(pk, sv->cfg.advertised, sv->cfg.n_advertised);
	rn_mp_pack_str(pk, "pid");
	msgpack_pack_int(pk, getpid());
	rn_mp_pack_str(pk, "uptime_ms");
	msgpack_pack_int64(pk, now - sv->started_ms);
	rn_mp_pack_str(pk, "state");
	rn_mp_pack_str(pk, sv->stopping || sv->draining ? "stopping" :
	    sv->ready_sent ? "running" : "starting");
	rn_mp_pack_str(pk, "cluster_id");
	rn_mp_pack_str(pk, cluster);
	rn_mp_pack_str(pk, "metadata_image_version");
	msgpack_pack_uint64(pk, version);
	rn_mp_pack_str(pk, "shm_generation");
	msgpack_pack_uint64(pk, atomic_load(&sv->shm.hdr->generation));
	/* Kafka's metric name (KIP-858) */
	rn_mp_pack_str(pk, "NumMismatchingReplicaToLogDirAssignments");
	msgpack_pack_uint32(pk, atomic_load(&sv->shm.hdr->dir_mismatches));
}

void
sv_control_pack_status(struct sv *sv, msgpack_packer *pk)
{
	int64_t now = rn_now_ms();
	unsigned i;

	msgpack_pack_map(pk, 3);
	rn_mp_pack_str(pk, "ok");
	msgpack_pack_true(pk);
	rn_mp_pack_str(pk, "node");
	pack_node(sv, pk, now);
	rn_mp_pack_str(pk, "workers");
	msgpack_pack_array(pk, sv->n_children);
	for (i = 0; i < sv->n_children; i++) {
		const struct sv_child *c = &sv->children[i];
		struct rn_worker_slot *ws = rn_shm_worker(&sv->shm, c->slot);
		int64_t hb = atomic_load(&ws->heartbeat_ms), cpu_ms, rss;
		char last[64];

		proc_usage(c->pid, &cpu_ms, &rss);
		exit_str(c, last, sizeof(last));
		msgpack_pack_map(pk, 15);
		rn_mp_pack_str(pk, "name");
		rn_mp_pack_str(pk, c->name);
		rn_mp_pack_str(pk, "role");
		rn_mp_pack_str(pk, rn_worker_role_name(c->role));
		rn_mp_pack_str(pk, "index");
		msgpack_pack_unsigned_int(pk, c->index);
		rn_mp_pack_str(pk, "pid");
		msgpack_pack_int(pk, c->pid);
		rn_mp_pack_str(pk, "state");
		rn_mp_pack_str(pk, rn_worker_state_name(c->state));
		rn_mp_pack_str(pk, "restarts");
		msgpack_pack_unsigned_int(pk, c->restarts);
		rn_mp_pack_str(pk, "uptime_ms");
		msgpack_pack_int64(pk, c->pid ? now - c->started_ms : 0);
		rn_mp_pack_str(pk, "heartbeat_age_ms");
		msgpack_pack_int64(pk, c->pid && hb ? now - hb : -1);
		rn_mp_pack_str(pk, "hellos");
		msgpack_pack_uint64(pk, atomic_load(&ws->hellos));
		rn_mp_pack_str(pk, "duties");
		msgpack_pack_array(pk, ws->duties & RN_DUTY_STORAGE ? 1 : 0);
		if (ws->duties & RN_DUTY_STORAGE)
			rn_mp_pack_str(pk, "storage");
		rn_mp_pack_str(pk, "cpu_ms");
		msgpack_pack_int64(pk, cpu_ms);
		rn_mp_pack_str(pk, "rss_bytes");
		msgpack_pack_int64(pk, rss);
		rn_mp_pack_str(pk, "connections");
		msgpack_pack_int64(pk, atomic_load_explicit(&rn_metrics_worker(
		    &sv->shm, c->slot)->connections, memory_order_relaxed));
		rn_mp_pack_str(pk, "requests");
		msgpack_pack_uint64(pk, worker_requests(sv, c->slot));
		rn_mp_pack_str(pk, "last_exit");
		rn_mp_pack_str(pk, last);
	}
}

/* A broker as the image has it (its listeners left out). */
static void
pack_broker(msgpack_packer *pk, const struct rn_mdv_broker *b)
{
	struct rn_mdimage_enc e = { .pk = *pk };
	struct rn_mdimage_enc_broker eb = {
		.id = b->id, .host = b->host, .port = b->port, .rack = b->rack,
		.fenced = b->fenced, .shutdown = b->shutdown,
		.absent_since_ms = b->absent_since_ms, .epoch = b->epoch,
	};

	rn_mdimage_enc_broker(&e, &eb);
}

/*
 * Every node's image holds every observed broker, so any node answers.
 * The view is kept between calls: a refresh copies only a newer image.
 */
void
sv_control_pack_brokers(struct sv *sv, msgpack_packer *pk)
{
	static struct rn_mdview v;
	static bool inited;
	int i, rc;

	if (!inited) {
		rn_mdview_init(&v);
		inited = true;
	}
	rc = rn_mdview_refresh(&v, &sv->shm);
	if (rc < 0 && v.version == 0) {
		msgpack_pack_map(pk, 2);
		rn_mp_pack_str(pk, "ok");
		msgpack_pack_false(pk);
		rn_mp_pack_str(pk, "error");
		rn_mp_pack_str(pk, "no metadata image yet");
		return;
	}
	msgpack_pack_map(pk, 3);
	rn_mp_pack_str(pk, "ok");
	msgpack_pack_true(pk);
	rn_mp_pack_str(pk, "cluster_id");
	rn_mp_pack_str(pk, v.cluster_id);
	rn_mp_pack_str(pk, "brokers");
	msgpack_pack_array(pk, (size_t)v.n_brokers);
	for (i = 0; i < v.n_brokers; i++)
		pack_broker(pk, &v.brokers[i]);
}
