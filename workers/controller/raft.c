/*
 * libraft wiring for the controller: storage (raft_uv), the transport on
 * the inherited listener, the FSM over the metadata state, leadership
 * handling and image publishing.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "ipc/mdimage.h"
#include "ipc/metrics.h"
#include "storage/metaprops.h"
#include "workers/controller/raft.h"
#include "workers/controller/transport.h"

/* ---- cluster id: persisted before anything in memory uses it -------- */

void
ctl_cluster_id_applied(struct ctl *c, const char *before)
{
	char err[1400];
	int rc;

	if (c->st.cluster_id[0] == '\0' || strcmp(before, c->st.cluster_id) ==
	    0 || c->fatal)
		return;
	rc = rn_metaprops_set_cluster_id(c->cfg, c->st.cluster_id, err,
	    sizeof(err));
	if (rc == -EEXIST || rc == -EINVAL) {
		log_errx("%s", err);
		c->fatal = true;
		c->exit_code = RN_WORKER_EXIT_FATAL;
		return;
	}
	if (rc != 0) {
		log_errx("cannot persist cluster id %s: %s", c->st.cluster_id,
		    err);
		c->fatal = true;
		c->exit_code = RN_WORKER_EXIT_RESTART;
		return;
	}
	if (strcmp(c->known_cluster_id, c->st.cluster_id) != 0)
		log_info("cluster id %s written to every log dir's %s",
		    c->st.cluster_id, RN_METAPROPS_FILE);
	strlcpy(c->known_cluster_id, c->st.cluster_id,
	    sizeof(c->known_cluster_id));
}

/* ---- FSM ------------------------------------------------------------ */

static int
fsm_apply(struct raft_fsm *fsm, const struct raft_buffer *buf, void **result)
{
	struct ctl *c = fsm->data;
	char before[23];

	strlcpy(before, c->st.cluster_id, sizeof(before));
	/* raft advances last_applied after this returns */
	ctl_state_apply(&c->st, buf->base, buf->len,
	    raft_last_applied(&c->raft) + 1);
	ctl_journal_add(&c->journal, c->st.last_index, buf->base, buf->len);
	c->st.last_term = c->raft.current_term;
	c->dirty = true;
	c->reconcile = true;
	ctl_cluster_id_applied(c, before);
	*result = NULL;
	return 0; /* a committed entry is never refused */
}

static int
fsm_snapshot(struct raft_fsm *fsm, struct raft_buffer *bufs[],
    unsigned *n_bufs)
{
	struct ctl *c = fsm->data;
	msgpack_sbuffer sb;
	int rc;

	msgpack_sbuffer_init(&sb);
	if ((rc = ctl_state_snapshot(&c->st, &sb)) != 0 ||
	    (*bufs = raft_malloc(sizeof(**bufs))) == NULL) {
		msgpack_sbuffer_destroy(&sb);
		return RAFT_NOMEM;
	}
	/* 8-byte multiple, like log entries (see ctl_raft_propose) */
	while (sb.size % 8 != 0)
		msgpack_sbuffer_write(&sb, "", 1);
	(*bufs)[0].base = sb.data; /* freed in fsm_snapshot_finalize */
	(*bufs)[0].len = sb.size;
	*n_bufs = 1;
	log_debug("metadata snapshot at index %llu: %zu bytes",
	    (unsigned long long)c->st.last_index, sb.size);
	return 0;
}

static int
fsm_snapshot_finalize(struct raft_fsm *fsm, struct raft_buffer *bufs[],
    unsigned *n_bufs)
{
	unsigned i;

	(void)fsm;
	if (*bufs == NULL)
		return 0;
	for (i = 0; i < *n_bufs; i++)
		free((*bufs)[i].base);
	raft_free(*bufs);
	*bufs = NULL;
	*n_bufs = 0;
	return 0;
}

static int
fsm_restore(struct raft_fsm *fsm, struct raft_buffer *buf)
{
	struct ctl *c = fsm->data;
	char before[23];
	int rc;

	strlcpy(before, c->st.cluster_id, sizeof(before));
	if ((rc = ctl_state_restore(&c->st, buf->base, buf->len)) == -EBADMSG &&
	    c->st.last_index == 0) {
		log_errx("metadata snapshot does not parse");
		return RAFT_CORRUPT;
	}
	if (rc != 0)
		log_warnx("metadata snapshot: some records were skipped");
	raft_free(buf->base); /* ours on success */
	ctl_journal_reset(&c->journal, c->st.last_index);
	c->dirty = true;
	c->reconcile = true;
	ctl_cluster_id_applied(c, before);
	log_info("metadata restored from a snapshot at index %llu",
	    (unsigned long long)c->st.last_index);
	return 0;
}

/* ---- start / stop --------------------------------------------------- */

static int
ctl_listen_fd(const struct rn_worker_env *env)
{
	int i;

	for (i = 0; i < env->n_listen; i++)
		if (env->listen[i].controller)
			return env->listen[i].fd;
	return -1;
}

/* The controller listener's TLS and SASL, built by the supervisor. */
static void
ctl_listen_security(struct ctl *c)
{
	const struct rn_worker_env *env = c->w->env;
	const struct rn_listen_sec *sec = NULL;
	int i;

	for (i = 0; i < env->n_listen; i++)
		if (env->listen[i].controller)
			sec = &env->sec[env->listen[i].listener];
	ctl_transport_set_security(&c->transport, env->ctl_client,
	    sec != NULL ? sec->ssl_ctx : NULL, sec != NULL ? sec->sasl : NULL,
	    sec != NULL && (sec->ssl_ctx != NULL || sec->sasl != NULL));
}

static void
voter_addr(const struct rn_voter *v, char *buf, size_t len)
{
	if (strchr(v->host, ':') != NULL)
		snprintf(buf, len, "[%s]:%u", v->host, v->port);
	else
		snprintf(buf, len, "%s:%u", v->host, v->port);
}

/* Every static voter bootstraps the same configuration (once). */
static int
bootstrap_voters(struct ctl *c)
{
	const struct rn_config *cfg = c->cfg;
	struct raft_configuration conf;
	char addr[RN_CONFIG_HOST_MAX + 16];
	int i, rc;

	raft_configuration_init(&conf);
	for (i = 0; i < cfg->n_voters; i++) {
		voter_addr(&cfg->voters[i], addr, sizeof(addr));
		if ((rc = raft_configuration_add(&conf,
		    (raft_id)cfg->voters[i].id, addr, RAFT_VOTER)) != 0) {
			raft_configuration_close(&conf);
			log_errx("controller.quorum.voters: %s",
			    raft_strerror(rc));
			return -EINVAL;
		}
	}
	rc = raft_bootstrap(&c->raft, &conf);
	raft_configuration_close(&conf);
	if (rc == 0)
		log_info("metadata log bootstrapped in %s with %d voter(s)",
		    c->raft_dir, cfg->n_voters);
	else if (rc != RAFT_CANTBOOTSTRAP) {
		log_errx("bootstrap of the metadata log: %s",
		    raft_errmsg(&c->raft));
		return -EIO;
	}
	return 0;
}

/*
 * libraft 0.15 calls the io's close callback again whenever a late
 * handle or work callback finds nothing left pending (uvMaybeFireCloseCb
 * never clears it), and raft's own callback frees what it owns each time.
 * Only the first call is passed on.
 */
static void
ctl_io_closed(struct raft_io *io)
{
	struct ctl *c = ((struct raft *)io->data)->data;

	if (c->io_close_fired) {
		log_debug("metadata log: repeated close callback ignored");
		return;
	}
	c->io_close_fired = true;
	c->io_close_cb(io);
}

static void
ctl_io_close(struct raft_io *io, raft_io_close_cb cb)
{
	struct ctl *c = ((struct raft *)io->data)->data;

	c->io_close_cb = cb;
	c->io_close(io, ctl_io_closed);
}

/*
 * A libraft error as a negative errno: a full or failing disk keeps its
 * meaning, so the caller stops rather than retries it, and so do damaged
 * files (-EUCLEAN); the rest is -EPROTO.
 */
static int
raft_errno(int rc)
{
	switch (rc) {
	case RAFT_NOSPACE:
		return -ENOSPC;
	case RAFT_IOERR:
		return -EIO;
	case RAFT_CORRUPT:
	case RAFT_MALFORMED:
		/* damaged files: logged naming the file, restarts mend nothing */
		return -EUCLEAN;
	default:
		return -EPROTO;
	}
}

int
ctl_raft_start(struct ctl *c)
{
	const struct rn_config *cfg = c->cfg;
	char self[RN_CONFIG_HOST_MAX + 16], err[1200];
	int i, rc, me = -1;

	for (i = 0; i < cfg->n_voters; i++)
		if (cfg->voters[i].id == cfg->node_id)
			me = i;
	if (me < 0) {
		rn_log_about(LOG_INFO, rn_subj_broker(cfg->node_id), "node %d "
		    "is not a voter: it follows the active controller's "
		    "metadata image instead of the raft log", cfg->node_id);
		return 0;
	}
	voter_addr(&cfg->voters[me], self, sizeof(self));
	snprintf(c->raft_dir, sizeof(c->raft_dir), "%s/%s",
	    cfg->metadata_log_dir, CTL_RAFT_DIR);
	if ((rc = rn_mkdir_p(c->raft_dir, 0750)) != 0) {
		log_errx("cannot create %s: %s", c->raft_dir, strerror(-rc));
		return rc;
	}
	if ((rc = ctl_raft_check_files(c->raft_dir, err, sizeof(err))) != 0) {
		log_errx("metadata log: %s; not starting on it: a voter must "
		    "not forget entries or votes it gave", err);
		return rc == -EBADMSG ? -EUCLEAN : rc;
	}
	if ((rc = ctl_transport_init(&c->transport, &c->loop,
	    ctl_listen_fd(c->w->env), cfg)) != 0)
		return rc;
	ctl_listen_security(c);
	c->hooks.transport_ready(c);
	if ((rc = raft_uv_init(&c->io, &c->loop, c->raft_dir,
	    &c->transport)) != 0) {
		log_errx("metadata log in %s: %s", c->raft_dir,
		    c->io.errmsg[0] ? c->io.errmsg : raft_strerror(rc));
		ctl_transport_free(&c->transport);
		return raft_errno(rc);
	}
	c->io_inited = true;
	/* it would set a damaged segment aside and forget its entries */
	raft_uv_set_auto_recovery(&c->io, false);
	c->io_close = c->io.close;
	c->io.close = ctl_io_close;
	c->fsm.version = 2;
	c->fsm.data = c;
	c->fsm.apply = fsm_apply;
	c->fsm.snapshot = fsm_snapshot;
	c->fsm.restore = fsm_restore;
	c->fsm.snapshot_finalize = fsm_snapshot_finalize;
	c->fsm.snapshot_async = NULL;
	if ((rc = raft_init(&c->raft, &c->io, &c->fsm,
	    (raft_id)cfg->node_id, self)) != 0) {
		log_errx("raft: %s", raft_errmsg(&c->raft));
		return raft_errno(rc);
	}
	c->raft_inited = true;
	c->raft.data = c;
	raft_set_snapshot_threshold(&c->raft, CTL_SNAPSHOT_THRESHOLD);
	raft_set_snapshot_trailing(&c->raft, CTL_SNAPSHOT_TRAILING);
	raft_set_pre_vote(&c->raft, true);

	if ((rc = bootstrap_voters(c)) != 0)
		return rc;
	if ((rc = raft_start(&c->raft)) != 0) {
		log_errx("metadata log in %s: %s", c->raft_dir,
		    raft_errmsg(&c->raft));
		return raft_errno(rc);
	}
	rn_log_about(LOG_INFO, rn_subj_broker(cfg->node_id), "metadata quorum "
	    "started: node %d at %s, %d voter(s)", cfg->node_id, self,
	    cfg->n_voters);
	return 0;
}

static void
ctl_raft_closed(struct raft *r)
{
	struct ctl *c = r->data;

	/* the io and transport are freed by ctl_raft_free, once the loop
	 * has run dry: libraft may still touch them from late callbacks */
	c->raft_closed = true;
	if (c->close_done != NULL)
		c->close_done(c);
}

void
ctl_raft_free(struct ctl *c)
{
	if (!c->io_inited)
		return;
	raft_uv_close(&c->io);
	ctl_transport_free(&c->transport);
	c->io_inited = false;
}

void
ctl_raft_close(struct ctl *c, void (*done)(struct ctl *c))
{
	c->close_done = done;
	if (c->raft_inited) {
		c->raft_inited = false;
		raft_close(&c->raft, ctl_raft_closed);
		return;
	}
	/* raft_init failed after the io was set up: ctl_raft_free frees it */
	c->raft_closed = true;
	done(c);
}

bool
ctl_raft_is_leader(struct ctl *c)
{
	return c->raft_inited && raft_state(&c->raft) == RAFT_LEADER;
}

int
ctl_raft_propose(struct ctl *c, const struct ctl_batch *b,
    struct raft_apply *req, raft_apply_cb cb)
{
	struct raft_buffer buf;
	void *entry;
	int64_t t0;
	size_t len, i;
	int rc;

	if (!ctl_raft_is_leader(c))
		return -ENOTCONN;
	if ((entry = ctl_batch_finish(b, &len)) == NULL)
		return -ENOMEM;
	/*
	 * raft takes raft_malloc'd memory whose length is a multiple of 8:
	 * raft_uv frames entries in 8-byte units and, with that assertion
	 * compiled out, mis-frames the segment otherwise. The zero padding
	 * follows the msgpack array, so readers never see it.
	 */
	buf.len = (len + 7) & ~(size_t)7;
	if ((buf.base = raft_calloc(1, buf.len)) == NULL) {
		free(entry);
		return -ENOMEM;
	}
	memcpy(buf.base, entry, len);
	free(entry);
	t0 = rn_now_ns() / 1000;
	if ((rc = raft_apply(&c->raft, req, &buf, 1, cb)) != 0) {
		raft_free(buf.base);
		log_warnx("proposing %u metadata record(s): %s", b->n,
		    raft_errmsg(&c->raft));
		return rc == RAFT_NOTLEADER || rc == RAFT_LEADERSHIPLOST ?
		    -ENOTCONN : -EIO;
	}
	for (i = 0; i < sizeof(c->proposed) / sizeof(c->proposed[0]); i++)
		if (c->proposed[i].req == NULL) {
			c->proposed[i].req = req;
			c->proposed[i].us = t0;
			break;
		}
	return 0;
}

void
ctl_raft_settled(struct ctl *c, struct raft_apply *req, int status)
{
	size_t i;

	for (i = 0; i < sizeof(c->proposed) / sizeof(c->proposed[0]); i++)
		if (c->proposed[i].req == req) {
			c->proposed[i].req = NULL;
			if (status == 0 && c->w != NULL)
				rn_met_observe(&rn_metrics_worker(c->shm,
				    c->w->slot)->raft_commit,
				    rn_now_ns() / 1000 - c->proposed[i].us);
			return;
		}
}

/* Kafka's raft-metrics gauges, as of this loop turn. */
static void
ctl_raft_gauges(struct ctl *c)
{
	struct rn_met_worker *m;
	struct ctl_local loc;

	if (c->w == NULL)
		return;
	m = rn_metrics_worker(c->shm, c->w->slot);
	ctl_local(c, &loc);
	atomic_store_explicit(&m->raft_leader, loc.controller_id,
	    memory_order_relaxed);
	atomic_store_explicit(&m->raft_epoch, (int64_t)loc.epoch,
	    memory_order_relaxed);
	if (c->raft_inited)
		atomic_store_explicit(&m->raft_hw,
		    (int64_t)c->raft.commit_index, memory_order_relaxed);
}

/* ---- the image ------------------------------------------------------ */

void
ctl_local(struct ctl *c, struct ctl_local *loc)
{
	raft_id id = 0;
	const char *addr = NULL;

	loc->node_id = c->cfg->node_id;
	loc->controller_id = -1;
	loc->epoch = 0;
	if (c->raft_inited) {
		raft_leader(&c->raft, &id, &addr);
		loc->controller_id = id != 0 ? (int32_t)id : -1;
		loc->epoch = c->raft.current_term;
	} else if (c->image_loaded) {
		/* broker-only: what the image's source said */
		loc->controller_id = c->image_controller;
		loc->epoch = c->image_epoch;
	}
	loc->n_dirs = c->n_dirs;
	loc->dir_ids = (const uint8_t (*)[16])c->dir_ids;
	loc->max_partitions = c->shm->hdr->max_partitions;
}

/* The published images in this worker's metrics slot. */
static void
ctl_count_image(struct ctl *c, bool delta, size_t bytes)
{
	struct rn_met_worker *m;

	if (c->w == NULL)
		return;
	m = rn_metrics_worker(c->shm, c->w->slot);
	rn_met_add(delta ? &m->md_deltas : &m->md_bodies, 1);
	rn_met_add(delta ? &m->md_delta_bytes : &m->md_body_bytes, bytes);
}

void
ctl_publish(struct ctl *c)
{
	struct ctl_local loc;
	msgpack_sbuffer sb;
	int rc;

	if (!c->dirty || c->fatal)
		return;
	if (!c->raft_inited && !c->image_loaded)
		return; /* broker-only: nothing fetched yet */
	/* a leader that has not caught up would publish a stale image */
	if (c->raft_inited && !c->ready && (ctl_raft_is_leader(c) ||
	    raft_state(&c->raft) != RAFT_FOLLOWER))
		return;
	ctl_local(c, &loc);
	if (!c->ready && loc.controller_id < 0)
		return;
	/* the removed topics' slots and dirs go before an image can hand
	 * their names to new topics */
	c->hooks.before_publish(c);
	msgpack_sbuffer_init(&sb);
	/* partition changes alone go as a delta: their cost is theirs, not
	 * the cluster's */
	if (ctl_state_encode_delta(&c->st, &loc, &sb) == 0 &&
	    rn_mdimage_publish_delta(c->shm, sb.data, sb.size) == 0) {
		c->dirty = false;
		ctl_count_image(c, true, sb.size);
		ctl_state_changes_clear(&c->st);
		msgpack_sbuffer_destroy(&sb);
		c->hooks.published(c);
		return;
	}
	msgpack_sbuffer_clear(&sb);
	ctl_state_encode_image(&c->st, &loc, &sb);
	rc = rn_mdimage_publish(c->shm, c->cfg->node_id, c->st.cluster_id,
	    sb.data, sb.size);
	if (rc != 0) {
		/* retried at every turn: say it once per size */
		if (sb.size != c->image_unfit)
			log_errx("metadata image of %zu bytes does not fit the "
			    "shared memory region of %llu bytes (1 KiB per "
			    "shm.max.partitions slot): raise "
			    "shm.max.partitions",
			    sb.size, (unsigned long long)rn_shm_meta(
			    c->shm)->body_size);
		c->image_unfit = sb.size;
	} else {
		c->image_unfit = 0;
		c->dirty = false;
		ctl_count_image(c, false, sb.size);
		ctl_state_changes_clear(&c->st);
		log_debug("published metadata image at offset %llu (%zu "
		    "bytes)", (unsigned long long)c->st.last_index, sb.size);
	}
	msgpack_sbuffer_destroy(&sb);
	c->hooks.published(c);
}

/* ---- leadership ----------------------------------------------------- */

static bool
broker_matches(const struct ctl *c, const struct ctl_broker *b)
{
	const struct rn_config *cfg = c->cfg;
	int i;

	if (b == NULL || b->fenced || b->in_controlled_shutdown ||
	    memcmp(b->incarnation, c->incarnation, 16) != 0 ||
	    b->n_listeners != cfg->n_advertised ||
	    strcmp(b->rack, cfg->broker_rack) != 0 ||
	    b->n_log_dirs != c->n_dirs)
		return false;
	for (i = 0; i < cfg->n_advertised; i++)
		if (strcmp(b->listeners[i].name, cfg->advertised[i].name) != 0 ||
		    strcmp(b->listeners[i].host, cfg->advertised[i].host) != 0 ||
		    b->listeners[i].port != cfg->advertised[i].port)
			return false;
	for (i = 0; i < c->n_dirs; i++)
		if (memcmp(b->log_dirs[i], c->dir_ids[i], 16) != 0)
			return false;
	return true;
}

static void
ctl_become_ready(struct ctl *c)
{
	c->ready = true;
	c->dirty = true;
	c->reconcile = true;
	c->hooks.became_active(c);
	log_info("active controller: cluster %s, metadata at offset %llu, "
	    "%d topic(s)", c->st.cluster_id,
	    (unsigned long long)c->st.last_index, c->st.n_topics);
	ctl_publish(c);
	/* operations start after this loop turn (ctl_after_turn) */
}

static void
ctl_boot_applied(struct raft_apply *req, int status, void *result)
{
	struct ctl *c = req->data;

	(void)result;
	ctl_raft_settled(c, req, status);
	c->boot_inflight = false;
	if (status != 0) {
		log_warnx("bootstrap metadata records not committed: %s",
		    raft_strerror(status));
		c->leader_term = 0; /* try again if still leading */
		return;
	}
	if (c->fatal || !ctl_raft_is_leader(c))
		return;
	ctl_become_ready(c);
}

/* What the metadata log still lacks once this node leads. */
static void
ctl_leader_bootstrap(struct ctl *c)
{
	const struct rn_config *cfg = c->cfg;
	struct ctl_batch b;
	int rc;

	ctl_batch_init(&b);
	if (c->st.cluster_id[0] == '\0') {
		char cid[23];
		uint8_t raw[16];

		if (c->known_cluster_id[0] != '\0') {
			/* formatted with a cluster id: the cluster gets it */
			strlcpy(cid, c->known_cluster_id, sizeof(cid));
		} else {
			if (ctl_uuid_random(raw) != 0)
				fatal("no random cluster id");
			ctl_uuid_str(raw, cid);
		}
		log_info("no cluster id in the metadata log: proposing %s",
		    cid);
		ctl_rec_cluster_id(&b, cid, CTL_METADATA_VERSION);
		ctl_rec_feature_level(&b, "metadata.version",
		    CTL_METADATA_VERSION);
		/* the founding batch carries them, so they come exactly once */
		if (ctl_scram_bootstrap(cfg->metadata_log_dir, &b) < 0)
			fatal("the bootstrap SCRAM credentials cannot be used");
	}
	if ((cfg->roles & RN_ROLE_BROKER) &&
	    !broker_matches(c, ctl_state_broker(&c->st, cfg->node_id))) {
		struct ctl_broker br;
		struct ctl_listener ls[RN_CONFIG_MAX_LISTENERS];
		int i;

		memset(&br, 0, sizeof(br));
		br.id = cfg->node_id;
		/* the agent registers with the same incarnation: a no-op */
		memcpy(br.incarnation, c->incarnation, 16);
		for (i = 0; i < cfg->n_advertised; i++) {
			strlcpy(ls[i].name, cfg->advertised[i].name,
			    sizeof(ls[i].name));
			strlcpy(ls[i].host, cfg->advertised[i].host,
			    sizeof(ls[i].host));
			ls[i].port = cfg->advertised[i].port;
		}
		br.listeners = ls;
		br.n_listeners = cfg->n_advertised;
		strlcpy(br.rack, cfg->broker_rack, sizeof(br.rack));
		br.log_dirs = c->dir_ids;
		br.n_log_dirs = c->n_dirs;
		br.fenced = false; /* the local broker is up with us */
		ctl_rec_register_broker(&b, &br, false);
		rn_log_about(LOG_INFO, rn_subj_broker(cfg->node_id),
		    "registering broker %d", cfg->node_id);
	}
	if (b.n == 0) {
		ctl_batch_free(&b);
		ctl_become_ready(c);
		return;
	}
	c->boot_apply.data = c;
	rc = ctl_raft_propose(c, &b, &c->boot_apply, ctl_boot_applied);
	ctl_batch_free(&b);
	if (rc != 0)
		c->leader_term = 0;
	else
		c->boot_inflight = true;
}

static void
ctl_barrier_done(struct raft_barrier *req, int status)
{
	struct ctl *c = req->data;

	c->barrier_inflight = false;
	if (c->stopping || c->fatal)
		return;
	if (status != 0 || !ctl_raft_is_leader(c) ||
	    c->leader_term != c->raft.current_term) {
		c->leader_term = 0; /* the watch starts over */
		return;
	}
	ctl_leader_bootstrap(c);
}

void
ctl_raft_watch(struct ctl *c)
{
	raft_id id = 0;
	const char *addr = NULL;
	bool leader;

	ctl_raft_gauges(c);
	if (!c->raft_inited || c->stopping || c->fatal)
		return;
	leader = raft_state(&c->raft) == RAFT_LEADER;
	if (leader && c->leader_term != c->raft.current_term &&
	    !c->barrier_inflight && !c->boot_inflight) {
		c->leader_term = c->raft.current_term;
		c->ready = false;
		c->dirty = true;
		log_info("leading the metadata quorum in term %llu",
		    (unsigned long long)c->leader_term);
		/* everything committed before this term gets applied first */
		c->barrier.data = c;
		if (raft_barrier(&c->raft, &c->barrier, ctl_barrier_done) ==
		    0)
			c->barrier_inflight = true;
		else
			c->leader_term = 0;
	} else if (!leader && (c->leader_term != 0 || c->ready)) {
		log_info("no longer leading the metadata quorum");
		c->leader_term = 0;
		c->ready = false;
		c->dirty = true;
		c->hooks.lost_leadership(c);
	}
	raft_leader(&c->raft, &id, &addr);
	if (id != c->last_leader) {
		c->last_leader = id;
		c->dirty = true;
	}
	ctl_publish(c);
}
