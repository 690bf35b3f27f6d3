/*
 * Collecting and rendering the node's metrics. Names follow the
 * Prometheus JMX exporter's common rules over Kafka's MBeans
 * (kafka.server:type=BrokerTopicMetrics,name=MessagesInPerSec becomes
 * kafka_server_brokertopicmetrics_messagesin_total), so dashboards made
 * for Kafka read runnel. Per-node figures are this node's, like Kafka's.
 */
#include "autoconf.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/ctlproto.h"
#include "ipc/mdimage.h"
#include "ipc/metrics.h"
#include "ipc/prodpool.h"
#include "protocol/kmsg_gen.h"
#include "supervisor/sv.h"
#include "supervisor/sv_metrics.h"
#include "supervisor/sv_metrics_int.h"
#include "workers/partition/partition.h"

enum fam {
	F_MSGS_IN, F_BYTES_IN, F_BYTES_OUT,
	F_PARTITIONS, F_LEADERS, F_URP, F_OFFLINE_REPLICAS,
	F_SHRINKS, F_EXPANDS,
	F_ACTIVE_CTL, F_OFFLINE_PARTS, F_FENCED,
	F_OFFLINE_DIRS, F_REQUESTS, F_RESTARTS, F_REQ_RESTARTS, F_STAGES,
	F_MD_IMAGES, F_MD_BYTES,
	F_REQ_TIME, F_LOG_SIZE, F_MAX_LAG, F_DIR_MISMATCH,
	F_RAFT_LEADER, F_RAFT_EPOCH, F_RAFT_HW, F_RAFT_COMMIT_AVG,
	F_RAFT_COMMIT, F_RING_USED, F_RING_CAP, F_RING_DROPPED,
	F_SHM_REGION, F_SHM_BACKED, F_SHM_SLOTS, F_MD_IMAGE_BYTES,
	F_RLOCK_REPAIRS, F_PRODPOOL_USED, F_PRODPOOL_FULL, F_FS_SESSIONS,
	F_FS_PARTS, F_COUNT
};

const struct sv_met_family sv_met_families[] = {
	[F_MSGS_IN] = { "kafka_server_brokertopicmetrics_messagesin_total",
	    "counter", "Records appended as leader, per topic and in all" },
	[F_BYTES_IN] = { "kafka_server_brokertopicmetrics_bytesin_total",
	    "counter", "Produce payload bytes appended as leader" },
	[F_BYTES_OUT] = { "kafka_server_brokertopicmetrics_bytesout_total",
	    "counter", "Record bytes sent to consumers" },
	[F_PARTITIONS] = { "kafka_server_replicamanager_partitioncount",
	    "gauge", "Partitions with a replica on this broker" },
	[F_LEADERS] = { "kafka_server_replicamanager_leadercount",
	    "gauge", "Partitions this broker leads" },
	[F_URP] = { "kafka_server_replicamanager_underreplicatedpartitions",
	    "gauge", "Led partitions whose ISR is smaller than the replicas" },
	[F_OFFLINE_REPLICAS] = {
	    "kafka_server_replicamanager_offlinereplicacount",
	    "gauge", "Replicas on this broker marked offline" },
	[F_SHRINKS] = { "kafka_server_replicamanager_isrshrinks_total",
	    "counter", "ISR shrinks committed for partitions led here" },
	[F_EXPANDS] = { "kafka_server_replicamanager_isrexpands_total",
	    "counter", "ISR expands committed for partitions led here" },
	[F_ACTIVE_CTL] = {
	    "kafka_controller_kafkacontroller_activecontrollercount",
	    "gauge", "1 on the active controller, else 0" },
	[F_OFFLINE_PARTS] = {
	    "kafka_controller_kafkacontroller_offlinepartitionscount",
	    "gauge", "Partitions without a leader (active controller only)" },
	[F_FENCED] = { "kafka_controller_kafkacontroller_fencedbrokercount",
	    "gauge", "Fenced brokers (active controller only)" },
	[F_OFFLINE_DIRS] = {
	    "kafka_log_logmanager_offlinelogdirectorycount", "gauge",
	    "Log dirs taken offline by an I/O error" },
	[F_REQUESTS] = { "kafka_network_requestmetrics_requests_total",
	    "counter", "Requests received, per API" },
	[F_RESTARTS] = { "runnel_worker_restarts_total", "counter",
	    "Worker restarts by the supervisor, per role (failures and "
	    "operator restarts alike)" },
	[F_REQ_RESTARTS] = { "runnel_worker_requested_restarts_total",
	    "counter", "Of those, the restarts an operator asked for "
	    "(runnelctl restart), per role" },
	[F_STAGES] = { "runnel_request_stage_seconds", "histogram",
	    "Network workers: the stages of Produce requests (queued, decode, "
	    "append, acks, send, total) and of their event loops (loop_wait, "
	    "loop_turn, loop_duty); network and fetcher workers: taking in a "
	    "new metadata image (metadata)" },
	[F_MD_IMAGES] = { "runnel_metadata_images_published_total", "counter",
	    "Metadata images this node's controller worker published, whole "
	    "(body) or as partition changes (delta)" },
	[F_MD_BYTES] = { "runnel_metadata_image_published_bytes_total",
	    "counter", "Their bytes, whole (body) and as deltas (delta)" },
	[F_REQ_TIME] = { "kafka_network_requestmetrics_request_seconds",
	    "histogram", "Request latency per API by stage, as Kafka's "
	    "RequestMetrics: total, queue (frame read -> handled), local "
	    "(handling), remote (acks=all, a parked fetch, a forwarded "
	    "request), responsesend" },
	[F_LOG_SIZE] = { "kafka_log_log_size", "gauge",
	    "Bytes of each partition's log on this broker" },
	[F_MAX_LAG] = { "kafka_server_replicafetchermanager_maxlag", "gauge",
	    "Largest lag in records behind the leader's high watermark among "
	    "the replicas this broker follows, as of their last fetches" },
	[F_FS_SESSIONS] = {
	    "kafka_server_fetchsessioncache_numincrementalfetchsessions",
	    "gauge", "Incremental fetch sessions open on this broker" },
	[F_FS_PARTS] = {
	    "kafka_server_fetchsessioncache_numincrementalfetchpartitionscached",
	    "gauge", "Partitions held by the incremental fetch sessions" },
	[F_DIR_MISMATCH] = {
	    "kafka_server_replicamanager_nummismatchingreplicatologdirassignments",
	    "gauge", "Replicas whose recorded log dir is not where this "
	    "broker keeps them" },
	[F_RAFT_LEADER] = { "kafka_server_raftmetrics_current_leader", "gauge",
	    "Node id of the metadata quorum's leader, -1 when unknown" },
	[F_RAFT_EPOCH] = { "kafka_server_raftmetrics_current_epoch", "gauge",
	    "The metadata quorum's epoch (raft term)" },
	[F_RAFT_HW] = { "kafka_server_raftmetrics_high_watermark", "gauge",
	    "The metadata log's commit index as this node knows it" },
	[F_RAFT_COMMIT_AVG] = { "kafka_server_raftmetrics_commit_latency_avg",
	    "gauge", "Mean milliseconds from proposing metadata records to "
	    "their being applied, since the node started (active controller)" },
	[F_RAFT_COMMIT] = { "runnel_raft_commit_seconds", "histogram",
	    "Proposing metadata records -> their being applied (active "
	    "controller)" },
	[F_RING_USED] = { "runnel_ring_used_bytes", "gauge",
	    "Bytes waiting in the rings between the workers and the "
	    "controller or group coordinator, summed by direction" },
	[F_RING_CAP] = { "runnel_ring_capacity_bytes", "gauge",
	    "Bytes each of those rings holds" },
	[F_RING_DROPPED] = { "runnel_ring_dropped_bytes_total", "counter",
	    "Bytes of torn messages cut from rings after a worker died" },
	[F_SHM_REGION] = { "runnel_shm_region_bytes", "gauge",
	    "Bytes of each region of the shared-memory segment (reserved)" },
	[F_SHM_BACKED] = { "runnel_shm_backed_bytes", "gauge",
	    "Bytes of the shared-memory segment backed by memory" },
	[F_SHM_SLOTS] = { "runnel_shm_partition_slots_used", "gauge",
	    "Partition slots used since the node started, of "
	    "shm.max.partitions" },
	[F_MD_IMAGE_BYTES] = { "runnel_metadata_image_bytes", "gauge",
	    "Bytes of the published metadata image: its body and the "
	    "deltas after it" },
	[F_RLOCK_REPAIRS] = { "runnel_rlock_repairs_total", "counter",
	    "Partition locks taken over from a holder that died, and "
	    "repaired" },
	[F_PRODPOOL_USED] = { "runnel_producer_pool_entries_used", "gauge",
	    "Idempotent producers kept in the node's producer pool (beyond "
	    "each partition's 24), of shm.max.producers" },
	[F_PRODPOOL_FULL] = { "runnel_producer_pool_exhausted_total",
	    "counter", "Times a partition found the producer pool empty "
	    "for a new producer (then an idle one is evicted, or the batch "
	    "refused)" },
};
const unsigned sv_met_n_families = F_COUNT;

/* In the order of enum rn_met_rq. */
static const char *const rq_names[RN_RQ_COUNT] = {
	"total", "queue", "local", "remote", "responsesend",
};

static const char *const ring_names[4] = {
	"to_controller", "from_controller", "to_coordinator",
	"from_coordinator",
};

/* The samples' array between collections (sv_metrics_free). */
static struct sv_met_sample *pool;
static size_t pool_cap;

/* In the order of enum rn_met_stage. */
static const char *const stage_names[RN_STAGE_COUNT] = {
	"queued", "decode", "append", "acks", "send", "total",
	"loop_wait", "loop_turn", "loop_duty", "metadata",
};

/* The buckets' upper bounds: 2^i us in seconds, then +Inf. */
static const char *const bucket_le[RN_MET_BUCKETS] = {
	"1e-06", "2e-06", "4e-06", "8e-06", "1.6e-05", "3.2e-05", "6.4e-05",
	"0.000128", "0.000256", "0.000512", "0.001024", "0.002048",
	"0.004096", "0.008192", "0.016384", "0.032768", "0.065536",
	"0.131072", "0.262144", "0.524288", "1.048576", "2.097152",
	"4.194304", "8.388608", "16.777216", "+Inf",
};

static void
add(struct sv_metrics *m, enum fam f, const char *lname, const char *lval,
    size_t lval_len, uint64_t v)
{
	struct sv_met_sample *s;

	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 128;

		if ((s = reallocarray(m->s, cap, sizeof(*s))) == NULL) {
			m->error = -ENOMEM;
			return;
		}
		m->s = s;
		m->cap = cap;
	}
	m->s[m->n++] = (struct sv_met_sample){ .fam = f, .lname = lname,
	    .lval = lval, .lval_len = lval_len, .v = v };
}

/* A labelled gauge with a fixed label value. */
static void
add_str(struct sv_metrics *m, enum fam f, const char *lname,
    const char *lval, uint64_t v)
{
	add(m, f, lname, lval, strlen(lval), v);
}


static void
add_plain(struct sv_metrics *m, enum fam f, uint64_t v)
{
	add(m, f, NULL, NULL, 0, v);
}

static void
add_signed(struct sv_metrics *m, enum fam f, int64_t v)
{
	add_plain(m, f, (uint64_t)v);
	if (m->error == 0)
		m->s[m->n - 1].v_signed = true;
}

/* One counter of struct rn_met_worker, summed over the worker slots
 * (which lie side by side). */
#define W(field) offsetof(struct rn_met_worker, field)
static uint64_t
sum_workers(struct sv *sv, size_t off)
{
	const char *w = (const char *)rn_metrics_worker(&sv->shm, 0) + off;
	unsigned i, n = sv->shm.hdr->n_workers;
	uint64_t sum = 0;

	for (i = 0; i < n; i++, w += sizeof(struct rn_met_worker))
		sum += rn_met_get((const _Atomic uint64_t *)(const void *)w);
	return sum;
}

/* A histogram of the worker slots (at offset base) summed over them in
 * one pass: its buckets, then its sum in us. */
static void
hist_sums(struct sv *sv, size_t base, uint64_t s[RN_MET_BUCKETS + 1])
{
	const char *w = (const char *)rn_metrics_worker(&sv->shm, 0) + base;
	const struct rn_met_hist *h;
	unsigned i, b, n = sv->shm.hdr->n_workers;

	memset(s, 0, (RN_MET_BUCKETS + 1) * sizeof(*s));
	for (i = 0; i < n; i++, w += sizeof(struct rn_met_worker)) {
		h = (const struct rn_met_hist *)(const void *)w;
		for (b = 0; b < RN_MET_BUCKETS; b++)
			s[b] += rn_met_get(&h->bucket[b]);
		s[RN_MET_BUCKETS] += rn_met_get(&h->sum_us);
	}
}

/* A topic's counters: the sums over its partitions' slots here. */
static bool
topic_sums(struct sv *sv, const struct rn_mdv_topic *t, uint64_t sum[3])
{
	const struct rn_met_part *mp;
	bool here = false;
	int i;

	sum[0] = sum[1] = sum[2] = 0;
	for (i = 0; i < t->n_parts; i++) {
		if (t->parts[i].slot < 0 ||
		    (uint32_t)t->parts[i].slot >= sv->shm.hdr->max_partitions)
			continue;
		mp = rn_metrics_part(&sv->shm, (unsigned)t->parts[i].slot);
		here = true;
		/* a slot not yet written for this partition counts nothing */
		if (atomic_load_explicit(&mp->tag, memory_order_acquire) !=
		    rn_met_tag(t->id, t->parts[i].p))
			continue;
		sum[0] += rn_met_get(&mp->msgs_in);
		sum[1] += rn_met_get(&mp->bytes_in);
		sum[2] += rn_met_get(&mp->bytes_out);
	}
	return here;
}

/* BrokerTopicMetrics: the total (worker slots), then each topic. */
static void
collect_topics(struct sv *sv, const struct rn_mdview *v,
    struct sv_metrics *m)
{
	uint64_t total[3], *sums;
	bool *here;
	unsigned f;
	int i;

	total[0] = sum_workers(sv, W(msgs_in));
	total[1] = sum_workers(sv, W(bytes_in));
	total[2] = sum_workers(sv, W(bytes_out));
	sums = calloc((size_t)v->n_topics + 1, 3 * sizeof(*sums));
	here = calloc((size_t)v->n_topics + 1, sizeof(*here));
	if (sums == NULL || here == NULL) {
		m->error = -ENOMEM;
		goto out;
	}
	for (i = 0; i < v->n_topics; i++)
		here[i] = topic_sums(sv, &v->topics[i], sums + 3 * i);
	for (f = 0; f < 3; f++) {
		add_plain(m, F_MSGS_IN + f, total[f]);
		for (i = 0; i < v->n_topics; i++)
			if (here[i])
				add(m, F_MSGS_IN + f, "topic",
				    v->topics[i].name, v->topics[i].name_len,
				    sums[3 * i + f]);
	}
out:
	free(sums);
	free(here);
}

static bool
has_id(const int32_t *ids, int32_t n, int32_t id)
{
	int32_t i;

	for (i = 0; i < n; i++)
		if (ids[i] == id)
			return true;
	return false;
}

/* ReplicaManager and KafkaController gauges from the image. */
static void
collect_image(struct sv *sv, const struct rn_mdview *v, struct sv_metrics *m)
{
	uint64_t parts = 0, leaders = 0, urp = 0, offline = 0, noleader = 0;
	uint64_t fenced = 0;
	int32_t self = sv->cfg.node_id;
	bool active = v->version != 0 && v->controller_id == self;
	int i, j;

	for (i = 0; i < v->n_topics; i++)
		for (j = 0; j < v->topics[i].n_parts; j++) {
			const struct rn_mdv_partition *p =
			    &v->topics[i].parts[j];

			if (p->leader < 0)
				noleader++;
			if (has_id(p->replicas, p->n_replicas, self))
				parts++;
			if (has_id(p->offline, p->n_offline, self))
				offline++;
			if (p->leader != self)
				continue;
			leaders++;
			if (p->n_isr < p->n_replicas)
				urp++;
		}
	for (i = 0; i < v->n_brokers; i++)
		if (v->brokers[i].fenced)
			fenced++;
	add_plain(m, F_PARTITIONS, parts);
	add_plain(m, F_LEADERS, leaders);
	add_plain(m, F_URP, urp);
	add_plain(m, F_OFFLINE_REPLICAS, offline);
	add(m, F_MD_IMAGES, "kind", "body", 4, sum_workers(sv, W(md_bodies)));
	add(m, F_MD_IMAGES, "kind", "delta", 5, sum_workers(sv, W(md_deltas)));
	add(m, F_MD_BYTES, "kind", "body", 4,
	    sum_workers(sv, W(md_body_bytes)));
	add(m, F_MD_BYTES, "kind", "delta", 5,
	    sum_workers(sv, W(md_delta_bytes)));
	add_plain(m, F_SHRINKS, sum_workers(sv, W(isr_shrinks)));
	add_plain(m, F_EXPANDS, sum_workers(sv, W(isr_expands)));
	add_plain(m, F_ACTIVE_CTL, active);
	add_plain(m, F_OFFLINE_PARTS, active ? noleader : 0);
	add_plain(m, F_FENCED, active ? fenced : 0);
}

static void
collect_requests(struct sv *sv, struct sv_metrics *m)
{
	int i;

	for (i = 0; i < RN_KAPI_COUNT; i++) {
		if (rn_kapis[i].key < 0 || rn_kapis[i].key >= RN_MET_MAX_API)
			continue;
		add(m, F_REQUESTS, "request", rn_kapis[i].name,
		    strlen(rn_kapis[i].name), sum_workers(sv, W(requests) +
		    (size_t)rn_kapis[i].key * sizeof(uint64_t)));
	}
}

/*
 * Restarts as the worker slots count them, summed by role; then the
 * operator's among them (a family's samples are rendered together).
 */
static void
collect_restarts(struct sv *sv, struct sv_metrics *m)
{
	const struct sv_role *roles;
	size_t n_roles, r;
	unsigned i, pass;
	uint64_t n;
	bool any;

	roles = sv_roles(&n_roles);
	for (pass = 0; pass < 2; pass++)
		for (r = 0; r < n_roles; r++) {
			const char *name = rn_worker_role_name(roles[r].role);

			for (n = 0, any = false, i = 0; i < sv->n_children;
			    i++) {
				const struct sv_child *c = &sv->children[i];

				if (c->role != roles[r].role)
					continue;
				n += pass == 0 ? atomic_load(&rn_shm_worker(
				    &sv->shm, c->slot)->restarts) :
				    c->requested_restarts;
				any = true;
			}
			if (any)
				add(m, pass == 0 ? F_RESTARTS : F_REQ_RESTARTS,
				    "role", name, strlen(name), n);
		}
}

/*
 * A histogram's samples from its summed buckets (h: RN_MET_BUCKETS
 * counts, then the sum in us), made cumulative; its labels: lname=lval
 * (if NULL, le alone), then l2name=l2val if given, then le. Its mean in
 * us, or 0 when empty.
 */
static uint64_t
add_hist_sums(struct sv_metrics *m, enum fam f,
    const uint64_t h[RN_MET_BUCKETS + 1], const char *lname,
    const char *lval, const char *l2name, const char *l2val)
{
	struct sv_met_sample *s;
	size_t lval_len = lval != NULL ? strlen(lval) : 0;
	uint64_t cum = 0, v;
	unsigned b;

	for (b = 0; b < RN_MET_BUCKETS + 2; b++) {
		if (b < RN_MET_BUCKETS)
			cum += h[b];
		v = b == RN_MET_BUCKETS ? h[RN_MET_BUCKETS] : cum;
		add(m, f, lname, lval, lval_len, v);
		if (m->error != 0)
			return 0;
		s = &m->s[m->n - 1];
		s->suffix = b < RN_MET_BUCKETS ? "_bucket" :
		    b == RN_MET_BUCKETS ? "_sum" : "_count";
		s->v_us = b == RN_MET_BUCKETS;
		/* the labels in order, le last, none left empty */
		if (l2name != NULL) {
			s->l2name = l2name;
			s->l2val = l2val;
		}
		if (b >= RN_MET_BUCKETS)
			continue;
		if (lname == NULL) {
			/* no first label: le takes its place */
			s->lname = "le";
			s->lval = bucket_le[b];
			s->lval_len = strlen(bucket_le[b]);
		} else if (l2name == NULL) {
			s->l2name = "le";
			s->l2val = bucket_le[b];
		} else {
			s->l3name = "le";
			s->l3val = bucket_le[b];
		}
	}
	return cum > 0 ? h[RN_MET_BUCKETS] / cum : 0;
}

/*
 * One histogram of the worker slots (at offset base), summed over them
 * and made cumulative, as add_hist_sums.
 */
static uint64_t
add_hist(struct sv *sv, struct sv_metrics *m, enum fam f, size_t base,
    const char *lname, const char *lval, const char *l2name,
    const char *l2val)
{
	uint64_t h[RN_MET_BUCKETS + 1];

	hist_sums(sv, base, h);
	return add_hist_sums(m, f, h, lname, lval, l2name, l2val);
}

/* The stage histograms summed over the worker slots, cumulative. */
static void
collect_stages(struct sv *sv, struct sv_metrics *m)
{
	unsigned st;

	for (st = 0; st < RN_STAGE_COUNT && m->error == 0; st++)
		(void)add_hist(sv, m, F_STAGES, W(stages) + st *
		    sizeof(struct rn_met_hist), "stage", stage_names[st],
		    NULL, NULL);
}

/*
 * RequestMetrics: each timed API's stages, for the APIs this node has
 * answered: an API never asked adds no 140 lines of zeros to every
 * scrape (most of a scrape's cost at 100 scrapes a second).
 */
static void
collect_request_times(struct sv *sv, struct sv_metrics *m)
{
	const struct rn_kapi *api;
	uint64_t total[RN_MET_BUCKETS + 1], n;
	unsigned a, st, b;
	size_t base;

	for (a = 0; a < RN_MET_N_API; a++) {
		if ((api = rn_kapi_find(rn_met_api_keys[a])) == NULL)
			continue;
		base = W(req) + a * RN_RQ_COUNT * sizeof(struct rn_met_hist);
		hist_sums(sv, base + RN_RQ_TOTAL * sizeof(struct rn_met_hist),
		    total);
		for (n = 0, b = 0; b < RN_MET_BUCKETS; b++)
			n += total[b];
		if (n == 0)
			continue;
		for (st = 0; st < RN_RQ_COUNT && m->error == 0; st++)
			(void)add_hist(sv, m, F_REQ_TIME, base + st *
			    sizeof(struct rn_met_hist), "request", api->name,
			    "stage", rq_names[st]);
	}
}

/* kafka_log_log_size: each partition with a live log here. */
static void
collect_log_sizes(struct sv *sv, const struct rn_mdview *v,
    struct sv_metrics *m)
{
	const struct rn_mdv_topic *t;
	int64_t size;
	int i, j;

	for (i = 0; i < v->n_topics && m->error == 0; i++) {
		t = &v->topics[i];
		for (j = 0; j < t->n_parts; j++) {
			if (t->parts[j].slot < 0 || (size = rn_part_slot_log_size(
			    &sv->shm, (unsigned)t->parts[j].slot, t->id,
			    t->parts[j].p)) < 0)
				continue;
			add(m, F_LOG_SIZE, "topic", t->name, t->name_len,
			    (uint64_t)size);
			if (m->error != 0)
				return;
			m->s[m->n - 1].l2name = "partition";
			m->s[m->n - 1].l2num = t->parts[j].p;
		}
	}
}

/* The slot of the first worker of a role, or -1. */
static int
role_slot(struct sv *sv, enum rn_worker_role role)
{
	unsigned i;

	for (i = 0; i < sv->n_children; i++)
		if (sv->children[i].role == role)
			return (int)sv->children[i].slot;
	return -1;
}

/* The replica fetchers' largest lag, and the controller's raft view. */
static void
collect_gauges(struct sv *sv, struct sv_metrics *m)
{
	const struct rn_met_worker *w;
	uint64_t lag = 0, avg_us, sessions = 0, sess_parts = 0;
	unsigned i;
	int s;

	for (i = 0; i < sv->n_children; i++)
		if (sv->children[i].role == RN_ROLE_W_FETCHER) {
			w = rn_metrics_worker(&sv->shm, sv->children[i].slot);
			if (rn_met_get(&w->fetch_max_lag) > lag)
				lag = rn_met_get(&w->fetch_max_lag);
		} else if (sv->children[i].role == RN_ROLE_W_NETWORK) {
			w = rn_metrics_worker(&sv->shm, sv->children[i].slot);
			sessions += rn_met_get(&w->fetch_sessions);
			sess_parts += rn_met_get(&w->fetch_session_parts);
		}
	add_str(m, F_MAX_LAG, "clientid", "Replica", lag);
	add_plain(m, F_FS_SESSIONS, sessions);
	add_plain(m, F_FS_PARTS, sess_parts);
	add_plain(m, F_DIR_MISMATCH, atomic_load(&sv->shm.hdr->dir_mismatches));
	if ((s = role_slot(sv, RN_ROLE_W_CONTROLLER)) < 0)
		return;
	w = rn_metrics_worker(&sv->shm, (unsigned)s);
	add_signed(m, F_RAFT_LEADER, atomic_load_explicit(&w->raft_leader,
	    memory_order_relaxed));
	add_signed(m, F_RAFT_EPOCH, atomic_load_explicit(&w->raft_epoch,
	    memory_order_relaxed));
	add_signed(m, F_RAFT_HW, atomic_load_explicit(&w->raft_hw,
	    memory_order_relaxed));
	/* the histogram's family follows; its mean is the gauge's, in ms
	 * (us * 1000 shown as millionths) */
	add_plain(m, F_RAFT_COMMIT_AVG, 0);
	if (m->error != 0)
		return;
	i = (unsigned)m->n - 1;
	avg_us = add_hist(sv, m, F_RAFT_COMMIT, W(raft_commit), NULL, NULL,
	    NULL, NULL);
	if (m->error == 0) {
		m->s[i].v = avg_us * 1000;
		m->s[i].v_us = true;
	}
}

/*
 * The partition slots ever used and their locks' repairs. The pass reads
 * the whole slot map (shm.max.partitions bits, 128 KiB by default) and a
 * line of each used slot: at 100 scrapes a second, a good part of each.
 * So it is redone only when the segment's backed bytes changed (a slot's
 * first use backs its pages: a new slot shows at the next scrape) or the
 * segment was rebuilt, and at least once a second (a repair shows within
 * it).
 */
static void
slot_pass(struct sv *sv, uint64_t backed, uint64_t *slots,
    uint64_t *repairs)
{
	static uint64_t last_backed, last_gen, n, r;
	static int64_t last_ms;
	static bool done;
	uint64_t gen = atomic_load(&sv->shm.hdr->generation);
	unsigned w, max = sv->shm.hdr->max_partitions;
	int64_t now = rn_now_ms();

	if (!done || backed == 0 || backed != last_backed ||
	    gen != last_gen || now - last_ms >= 1000) {
		for (n = r = 0, w = rn_shm_slot_next_used(&sv->shm, 0);
		    w < max; w = rn_shm_slot_next_used(&sv->shm, w + 1)) {
			n++;
			r += __atomic_load_n(&rn_shm_partition(&sv->shm,
			    w)->lock.repairs, __ATOMIC_RELAXED);
		}
		done = true;
		last_backed = backed;
		last_gen = gen;
		last_ms = now;
	}
	*slots = n;
	*repairs = r;
}

/* The rings, the segment and its partition locks. */
static void
collect_ipc(struct sv *sv, struct sv_metrics *m)
{
	struct rn_ring *(*const ring[4])(const struct rn_shm *, unsigned) = {
		rn_shm_ring_to_ctl, rn_shm_ring_from_ctl,
		rn_shm_ring_to_coord, rn_shm_ring_from_coord,
	};
	const struct rn_shm_hdr *h = sv->shm.hdr;
	struct rn_prodpool *pp;
	uint64_t used, repairs, slots, backed = 0;
	struct stat st;
	unsigned r, w;

	for (r = 0; r < 4; r++) {
		for (used = 0, w = 0; w < h->n_workers; w++)
			used += rn_ring_used(ring[r](&sv->shm, w));
		add_str(m, F_RING_USED, "ring", ring_names[r], used);
	}
	add_plain(m, F_RING_CAP, h->ring_bytes);
	add_plain(m, F_RING_DROPPED, atomic_load(&h->ring_dropped_bytes));
	pp = rn_shm_prodpool(&sv->shm);
	add_plain(m, F_PRODPOOL_USED, (uint64_t)atomic_load(&pp->in_use));
	add_plain(m, F_PRODPOOL_FULL, atomic_load(&pp->exhausted));
	for (r = 0; r < RN_REGION_COUNT; r++)
		add_str(m, F_SHM_REGION, "region", rn_shm_region_name(r),
		    rn_shm_region_size(&sv->shm, r));
	if (fstat(sv->shm.fd, &st) == 0) {
		backed = (uint64_t)st.st_blocks * 512;
		add_plain(m, F_SHM_BACKED, backed);
	}
	slot_pass(sv, backed, &slots, &repairs);
	add_plain(m, F_SHM_SLOTS, slots);
	add_plain(m, F_MD_IMAGE_BYTES, rn_mdimage_bytes(&sv->shm));
	add_plain(m, F_RLOCK_REPAIRS, repairs);
}

int
sv_metrics_collect(struct sv *sv, struct sv_metrics *m)
{
	static struct rn_mdview v;
	static bool inited;

	if (!inited) {
		rn_mdview_init(&v);
		inited = true;
	}
	memset(m, 0, sizeof(*m));
	/* the last collection's array, its size as good as any */
	m->s = pool;
	m->cap = pool_cap;
	pool = NULL;
	pool_cap = 0;
	/* an old view is still a view; without one the gauges read 0 */
	(void)rn_mdview_refresh(&v, &sv->shm);
	collect_topics(sv, &v, m);
	collect_image(sv, &v, m);
	add_plain(m, F_OFFLINE_DIRS, (uint64_t)__builtin_popcount(
	    atomic_load(&sv->shm.hdr->offline_dirs)));
	collect_requests(sv, m);
	collect_restarts(sv, m);
	collect_stages(sv, m);
	collect_request_times(sv, m);
	collect_log_sizes(sv, &v, m);
	collect_gauges(sv, m);
	collect_ipc(sv, m);
	return m->error;
}

void
sv_metrics_free(struct sv_metrics *m)
{
	/* kept for the next collection: a scrape allocates nothing new */
	free(pool);
	pool = m->s;
	pool_cap = m->cap;
	memset(m, 0, sizeof(*m));
}

/* A sample's name: its family's, with a histogram's suffix. */
static void
pack_name(msgpack_packer *pk, const char *name, const char *suffix)
{
	size_t a = strlen(name), b = suffix != NULL ? strlen(suffix) : 0;

	msgpack_pack_str(pk, a + b);
	msgpack_pack_str_body(pk, name, a);
	if (b > 0)
		msgpack_pack_str_body(pk, suffix, b);
}

void
sv_metrics_pack(const struct sv_metrics *m, msgpack_packer *pk)
{
	const struct sv_met_sample *s;
	size_t i;

	msgpack_pack_array(pk, m->n);
	for (i = 0; i < m->n; i++) {
		s = &m->s[i];
		msgpack_pack_map(pk, 3);
		rn_mp_pack_str(pk, "name");
		pack_name(pk, sv_met_families[s->fam].name, s->suffix);
		rn_mp_pack_str(pk, "labels");
		msgpack_pack_map(pk, (s->lname != NULL) + (s->l2name != NULL) +
		    (s->l3name != NULL));
		if (s->lname != NULL) {
			rn_mp_pack_str(pk, s->lname);
			msgpack_pack_str(pk, s->lval_len);
			msgpack_pack_str_body(pk, s->lval, s->lval_len);
		}
		if (s->l2name != NULL) {
			char num[12];

			rn_mp_pack_str(pk, s->l2name);
			if (s->l2val == NULL)
				snprintf(num, sizeof(num), "%d", s->l2num);
			rn_mp_pack_str(pk, s->l2val != NULL ? s->l2val : num);
		}
		if (s->l3name != NULL) {
			rn_mp_pack_str(pk, s->l3name);
			rn_mp_pack_str(pk, s->l3val);
		}
		rn_mp_pack_str(pk, "value");
		if (s->v_signed)
			msgpack_pack_int64(pk, (int64_t)s->v);
		else if (s->v_us)
			msgpack_pack_double(pk, (double)s->v / 1e6);
		else
			msgpack_pack_uint64(pk, s->v);
	}
}

/* {"ok", "text": the exposition, "metrics": the samples} */
void
sv_control_pack_metrics(struct sv *sv, msgpack_packer *pk)
{
	static struct sv_obuf text;	/* kept: its size suits the next */
	struct sv_metrics m;

	text.len = 0;
	if (sv_metrics_collect(sv, &m) != 0 ||
	    sv_metrics_render(&m, &text) != 0) {
		msgpack_pack_map(pk, 2);
		rn_mp_pack_str(pk, "ok");
		msgpack_pack_false(pk);
		rn_mp_pack_str(pk, "error");
		rn_mp_pack_str(pk, "out of memory");
	} else {
		msgpack_pack_map(pk, 3);
		rn_mp_pack_str(pk, "ok");
		msgpack_pack_true(pk);
		rn_mp_pack_str(pk, "text");
		msgpack_pack_str(pk, text.len);
		msgpack_pack_str_body(pk, text.b, text.len);
		rn_mp_pack_str(pk, "metrics");
		sv_metrics_pack(&m, pk);
	}
	sv_metrics_free(&m);
}
