/*
 * The controller's metadata state: records in, state out; snapshot and
 * restore give the same state (slots included); the image the state
 * encodes parses back through the readers' view, configs and their
 * sources included; publishing through shared memory. Partition
 * reassignment: the rules (widen, complete once the target is in the
 * ISR, cancel, reorder and removal at once) and the Partition record's
 * adding/removing replicas through the state, PartitionChange,
 * snapshots and the hook that tells a node its replica went (with the
 * slot it had). Offline log dirs: LOST replicas and a broker's dirs less
 * the failed one.
 */
#include "autoconf.h"

#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/util.h"
#include "ipc/mdimage.h"
#include "ipc/shm.h"
#include "protocol/kerrors.h"
#include "tests/lib/tap.h"
#include "workers/controller/offline_dirs.h"
#include "workers/controller/op.h"
#include "workers/controller/reassign.h"
#include "workers/controller/records.h"
#include "workers/controller/state.h"

static void
apply_batch(struct ctl_state *st, struct ctl_batch *b, uint64_t index)
{
	void *e;
	size_t len;

	e = ctl_batch_finish(b, &len);
	if (e == NULL)
		bail("out of memory");
	if (ctl_state_apply(st, e, len, index) < 0)
		bail("batch at %llu did not apply", (unsigned long long)index);
	free(e);
	ctl_batch_free(b);
	ctl_batch_init(b);
}

static void
add_topic(struct ctl_batch *b, const char *name, uint8_t idb, int np,
    const int32_t *replicas, int rf)
{
	struct ctl_partition p;
	uint8_t id[16];
	int i;

	memset(id, idb, sizeof(id));
	ctl_rec_topic(b, name, strlen(name), id);
	for (i = 0; i < np; i++) {
		memset(&p, 0, sizeof(p));
		p.n_replicas = rf;
		p.replicas = (int32_t *)&replicas[i * rf];
		p.n_isr = rf;
		p.isr = (int32_t *)&replicas[i * rf];
		p.leader = replicas[i * rf];
		ctl_rec_partition(b, id, i, &p, false);
	}
}

static int
snap_equal(const struct ctl_state *a, const struct ctl_state *b)
{
	msgpack_sbuffer x, y;
	int eq;

	msgpack_sbuffer_init(&x);
	msgpack_sbuffer_init(&y);
	ctl_state_snapshot(a, &x);
	ctl_state_snapshot(b, &y);
	eq = x.size == y.size && memcmp(x.data, y.data, x.size) == 0;
	msgpack_sbuffer_destroy(&x);
	msgpack_sbuffer_destroy(&y);
	return eq;
}

static struct ctl_state st;
static uint8_t dir_ids[2][16] = { { 0xd1 }, { 0xd2 } };

static void
build_state(void)
{
	struct ctl_batch b;
	struct ctl_broker br;
	struct ctl_listener l = { "PLAINTEXT", "127.0.0.1", 9092 };
	int32_t r1[] = { 1, 1, 1 }, r2[] = { 1, 2, 2, 1 };
	char cid[23];
	uint8_t raw[16];

	ctl_state_init(&st);
	ctl_batch_init(&b);
	ctl_uuid_random(raw);
	ctl_uuid_str(raw, cid);
	ctl_rec_cluster_id(&b, cid, CTL_METADATA_VERSION);
	ctl_rec_feature_level(&b, "metadata.version", CTL_METADATA_VERSION);
	memset(&br, 0, sizeof(br));
	br.id = 1;
	br.listeners = &l;
	br.n_listeners = 1;
	strcpy(br.rack, "r1");
	br.log_dirs = dir_ids;
	br.n_log_dirs = 2;
	ctl_rec_register_broker(&b, &br, false);
	apply_batch(&st, &b, 2);
	is_str(st.cluster_id, cid, "ClusterId applied");
	is_int(st.metadata_version, CTL_METADATA_VERSION, "metadata.version");
	is_int(st.n_brokers, 1, "one broker");
	is_int(st.brokers[0].epoch, 2, "broker epoch is the record's index");

	add_topic(&b, "alpha", 0xa1, 3, r1, 1);
	ctl_rec_config(&b, CTL_RES_TOPIC, "alpha", 5, "retention.ms", "1000");
	apply_batch(&st, &b, 3);
	add_topic(&b, "beta", 0xb1, 2, r2, 2);
	ctl_rec_config(&b, CTL_RES_BROKER, "", 0, "log.retention.bytes",
	    "4096");
	apply_batch(&st, &b, 4);
	is_int(st.n_topics, 2, "two topics");
	is_int(st.topics[0]->n_parts, 3, "alpha has 3 partitions");
	ok(st.topics[0]->parts[0].slots[0] == 0 &&
	    st.topics[0]->parts[1].slots[0] == 1 &&
	    st.topics[0]->parts[2].slots[0] == 2, "alpha takes slots 0-2");
	ok(st.topics[1]->parts[0].slots[0] == 3 &&
	    st.topics[1]->parts[0].slots[1] == 0 &&
	    st.topics[1]->parts[1].slots[1] == 4,
	    "beta: broker 1 slots 3 and 4, broker 2 slots from 0");
	is_str(ctl_configs_get(&st.topics[0]->configs, "retention.ms"), "1000",
	    "topic config applied");

	/* delete alpha, create gamma: it reuses the lowest free slots */
	{
		uint8_t id[16];
		int32_t r3[] = { 1, 1 };

		memset(id, 0xa1, sizeof(id));
		ctl_rec_remove_topic(&b, id);
		apply_batch(&st, &b, 5);
		ok(ctl_state_topic(&st, "alpha", 5) == NULL, "alpha removed");
		add_topic(&b, "gamma", 0xc1, 2, r3, 1);
		apply_batch(&st, &b, 6);
		ok(st.topics[1]->parts[0].slots[0] == 0 &&
		    st.topics[1]->parts[1].slots[0] == 1,
		    "gamma reuses slots 0 and 1");
	}
	/* a config deleted with a nil value */
	ctl_rec_config(&b, CTL_RES_TOPIC, "gamma", 5, "cleanup.policy",
	    "delete");
	ctl_rec_config(&b, CTL_RES_TOPIC, "gamma", 5, "segment.ms", "5000");
	apply_batch(&st, &b, 7);
	ctl_rec_config(&b, CTL_RES_TOPIC, "gamma", 5, "cleanup.policy", NULL);
	apply_batch(&st, &b, 8);
	ok(ctl_configs_get(&st.topics[1]->configs, "cleanup.policy") == NULL &&
	    ctl_configs_get(&st.topics[1]->configs, "segment.ms") != NULL,
	    "nil value deletes one key");
	ok(ctl_state_topic_collision(&st, "gam_ma", 6) == NULL &&
	    ctl_state_topic_collision(&st, "be.ta", 5) == NULL,
	    "no collision without . or _ in the existing name");
	ctl_batch_free(&b);
}

static void
test_snapshot(void)
{
	struct ctl_state st2;
	msgpack_sbuffer sb;

	msgpack_sbuffer_init(&sb);
	is_int(ctl_state_snapshot(&st, &sb), 0, "snapshot taken");
	ctl_state_init(&st2);
	is_int(ctl_state_restore(&st2, sb.data, sb.size), 0, "restored");
	ok(snap_equal(&st, &st2), "restored state is identical");
	ok(st2.topics[1]->parts[0].slots[0] == 0 &&
	    st2.topics[0]->parts[0].slots[0] == 3,
	    "slots survive the snapshot (not recomputed)");
	is_int(st2.brokers[0].epoch, 2, "broker epoch survives");
	is_int((long long)st2.last_index, 8, "last index survives");
	ok(ctl_state_restore(&st2, "\x01\x02", 2) < 0,
	    "garbage snapshot refused");
	ctl_state_free(&st2);
	msgpack_sbuffer_destroy(&sb);
}

static void
test_image(void)
{
	struct ctl_local loc = { 1, 1, 7, 2, (const uint8_t (*)[16])dir_ids,
	    4096 };
	struct rn_config cfg;
	struct rn_mdview v;
	const struct rn_mdv_topic *t;
	const struct rn_mdv_partition *p;
	const struct rn_mdv_broker *br;
	enum rn_config_source src;
	msgpack_sbuffer sb;
	const char *val;
	char buf[64], err[256];
	uint8_t id[16];

	if (rn_config_parse(&cfg, "node.id=1\nprocess.roles=broker,controller\n"
	    "listeners=PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093\n"
	    "controller.listener.names=CONTROLLER\n"
	    "controller.quorum.voters=1@127.0.0.1:9093\n"
	    "log.dirs=/tmp/x\nlog.segment.bytes=2048\n", "test", err,
	    sizeof(err), NULL, NULL) != 0 || rn_config_finish(&cfg, err,
	    sizeof(err)) != 0)
		bail("config: %s", err);
	msgpack_sbuffer_init(&sb);
	ctl_state_encode_image(&st, &loc, &sb);
	rn_mdview_init(&v);
	is_int(rn_mdview_load(&v, sb.data, sb.size), 0, "image parses");
	is_str(v.cluster_id, st.cluster_id, "cluster id");
	ok(v.controller_id == 1 && v.epoch == 7 && v.offset == 8,
	    "controller, epoch, offset");
	is_int(v.n_topics, 2, "two topics in the view");
	t = rn_mdview_topic(&v, "gamma", 5);
	ok(t != NULL && t->n_parts == 2, "gamma found by name");
	memset(id, 0xb1, sizeof(id));
	ok(rn_mdview_topic_by_id(&v, id) != NULL &&
	    strcmp(rn_mdview_topic_by_id(&v, id)->name, "beta") == 0,
	    "beta found by id");
	ok(rn_mdview_topic(&v, "alpha", 5) == NULL, "alpha gone");
	p = rn_mdview_partition(t, 1);
	ok(p != NULL && p->slot == 1 && p->leader == 1 && p->n_replicas == 1,
	    "gamma-1: slot 1, leader 1");
	ok(p != NULL && p->dir == 0, "gamma-1 in the first dir");
	ok(rn_mdview_partition(t, 2) == NULL, "no gamma-2");
	p = rn_mdview_partition(rn_mdview_topic(&v, "beta", 4), 0);
	ok(p != NULL && p->n_offline == 1 && p->offline[0] == 2,
	    "beta-0: the replica on unregistered broker 2 is offline");
	br = rn_mdview_broker(&v, 1);
	ok(br != NULL && strcmp(br->host, "127.0.0.1") == 0 &&
	    br->port == 9092 && br->rack != NULL &&
	    strcmp(br->rack, "r1") == 0 && !br->fenced, "broker 1");
	ok(rn_mdview_broker(&v, 2) == NULL, "no broker 2");

	is_int(rn_mdview_topic_config(&v, t, &cfg, "segment.ms", &val, &src,
	    buf, sizeof(buf)), 0, "segment.ms looked up");
	ok(strcmp(val, "5000") == 0 && src == RN_CFGSRC_DYNAMIC_TOPIC_CONFIG,
	    "topic override: DYNAMIC_TOPIC_CONFIG");
	rn_mdview_topic_config(&v, t, &cfg, "retention.bytes", &val, &src,
	    buf, sizeof(buf));
	ok(strcmp(val, "4096") == 0 &&
	    src == RN_CFGSRC_DYNAMIC_DEFAULT_BROKER_CONFIG,
	    "dynamic broker default: DYNAMIC_DEFAULT_BROKER_CONFIG");
	rn_mdview_topic_config(&v, t, &cfg, "segment.bytes", &val, &src,
	    buf, sizeof(buf));
	ok(strcmp(val, "2048") == 0 && src == RN_CFGSRC_STATIC_BROKER_CONFIG,
	    "server.properties: STATIC_BROKER_CONFIG (got %s, %d)", val, src);
	rn_mdview_topic_config(&v, t, &cfg, "compression.type", &val, &src,
	    buf, sizeof(buf));
	ok(strcmp(val, "producer") == 0 && src == RN_CFGSRC_DEFAULT_CONFIG,
	    "built-in default: DEFAULT_CONFIG");
	ok(rn_mdview_topic_config(&v, t, &cfg, "no.such", &val, &src, buf,
	    sizeof(buf)) == -ENOENT, "unknown key");
	ok(rn_mdview_broker_config(&v, &cfg, "log.retention.bytes", &val,
	    &src, buf, sizeof(buf)) == 0 && strcmp(val, "4096") == 0 &&
	    src == RN_CFGSRC_DYNAMIC_DEFAULT_BROKER_CONFIG,
	    "broker config log.retention.bytes: dynamic default");
	ok(rn_mdview_broker_config(&v, &cfg, "log.segment.bytes", &val,
	    &src, buf, sizeof(buf)) == 0 && strcmp(val, "2048") == 0 &&
	    src == RN_CFGSRC_STATIC_BROKER_CONFIG,
	    "broker config log.segment.bytes: static");
	rn_mdview_free(&v);
	msgpack_sbuffer_destroy(&sb);
}

static void
test_validate(void)
{
	const struct rn_kcfg *d = rn_kcfg_topic_find("segment.bytes");
	char err[256];

	ok(d != NULL && rn_kcfg_validate(d, "100", err, sizeof(err)) == 0,
	    "segment.bytes=100 valid");
	ok(rn_kcfg_validate(d, "10", err, sizeof(err)) != 0 &&
	    strstr(err, "at least 14") != NULL, "below minimum: %s", err);
	ok(rn_kcfg_validate(d, "abc", err, sizeof(err)) != 0 &&
	    strstr(err, "Not a number of type INT") != NULL, "not a number");
	d = rn_kcfg_topic_find("compression.type");
	ok(rn_kcfg_validate(d, "zstd", err, sizeof(err)) == 0 &&
	    rn_kcfg_validate(d, "brotli", err, sizeof(err)) != 0,
	    "compression.type choices: %s", err);
	d = rn_kcfg_topic_find("cleanup.policy");
	ok(rn_kcfg_validate(d, "compact", err, sizeof(err)) == 0 &&
	    rn_kcfg_validate(d, "compact,delete", err, sizeof(err)) == 0,
	    "cleanup.policy=compact and compact,delete accepted");
}

static void
test_shm_publish(void)
{
	struct rn_shm_params sp = { 2, 4096, 64, 0 };
	struct ctl_local loc = { 1, 1, 7, 2, (const uint8_t (*)[16])dir_ids,
	    64 };
	struct rn_shm shm;
	struct rn_mdview v;
	msgpack_sbuffer sb;

	if (rn_shm_create(&sp, &shm) != 0)
		bail("shm");
	rn_mdview_init(&v);
	is_int(rn_mdview_refresh(&v, &shm), -EAGAIN, "nothing published yet");
	msgpack_sbuffer_init(&sb);
	ctl_state_encode_image(&st, &loc, &sb);
	is_int(rn_mdimage_publish(&shm, 1, st.cluster_id, sb.data, sb.size),
	    0, "published");
	is_int(rn_mdview_refresh(&v, &shm), 1, "view refreshed");
	is_int(rn_mdview_refresh(&v, &shm), 0, "no change, no work");
	is_str(rn_shm_meta(&shm)->cluster_id, st.cluster_id,
	    "header carries the cluster id");
	ok(rn_mdview_topic(&v, "beta", 4) != NULL, "beta visible");
	/* the supervisor rebuilds the image after a controller crash */
	rn_shm_meta_rebuild(&shm);
	is_int(rn_mdview_refresh(&v, &shm), -EAGAIN, "rebuilt image: wait");
	ok(rn_mdview_topic(&v, "beta", 4) != NULL,
	    "the old view stays usable meanwhile");
	is_int(rn_mdimage_publish(&shm, 1, st.cluster_id, sb.data, sb.size),
	    0, "republished");
	is_int(rn_mdview_refresh(&v, &shm), 1, "view refreshed again");
	ok(rn_mdimage_publish(&shm, 1, "", sb.data, (size_t)64 << 20) ==
	    -EMSGSIZE, "oversized body refused");
	rn_mdview_free(&v);
	msgpack_sbuffer_destroy(&sb);
	rn_shm_destroy(&shm);
}

static enum ctl_bstate
all_up(void *arg, int32_t id)
{
	(void)arg;
	(void)id;
	return CTL_B_UP;
}

static bool
ids_are(const int32_t *v, int32_t n, const char *want)
{
	char got[256];
	size_t k = 0;
	int32_t i;

	got[0] = '\0';
	for (i = 0; i < n && k < sizeof(got) - 16; i++)
		k += (size_t)snprintf(got + k, sizeof(got) - k, "%s%d",
		    i ? "," : "", v[i]);
	if (strcmp(got, want) != 0)
		diag("got [%s], want [%s]", got, want);
	return strcmp(got, want) == 0;
}

/* A partition as the state holds it, over caller's arrays. */
static void
part_of(struct ctl_partition *p, int32_t *rep, int32_t nr, int32_t *isr,
    int32_t ni, int32_t leader)
{
	memset(p, 0, sizeof(*p));
	p->replicas = rep;
	p->n_replicas = nr;
	p->isr = isr;
	p->n_isr = ni;
	p->leader = leader;
	p->leader_epoch = 5;
	p->partition_epoch = 9;
}

/* ---- reassignment: the rules, and the records through the state ---- */

static void
test_reassign_rules(void)
{
	int32_t rep[] = { 1, 2, 3 }, isr[] = { 1, 2, 3 }, to[] = { 2, 3, 4 };
	int32_t isr4[] = { 1, 2, 3, 4 }, back[] = { 3, 2, 1 };
	struct ctl_partition p, w;
	struct ctl_reassign ra, done, c;

	part_of(&p, rep, 3, isr, 3, 1);
	is_int(ctl_reassign_start(&p, to, 3, all_up, NULL, &ra), 0,
	    "1,2,3 -> 2,3,4 starts");
	ok(ids_are(ra.replicas, ra.n_replicas, "2,3,4,1") &&
	    ids_are(ra.adding, ra.n_adding, "4") &&
	    ids_are(ra.removing, ra.n_removing, "1"),
	    "replicas widened to target + removing, adding 4, removing 1");
	ok(ra.leader == 1 && ra.leader_epoch == 5 && ra.partition_epoch == 10,
	    "the leader stays meanwhile; a new partition epoch");
	ctl_reassign_as_partition(&ra, &w);
	ok(!ctl_reassign_complete(&w, all_up, NULL, &done),
	    "not complete while 4 is out of the ISR");
	w.isr = isr4;
	w.n_isr = 4;
	ok(ctl_reassign_complete(&w, all_up, NULL, &done),
	    "complete once 4 is in the ISR");
	ok(ids_are(done.replicas, done.n_replicas, "2,3,4") &&
	    ids_are(done.isr, done.n_isr, "2,3,4") && done.n_adding == 0 &&
	    done.n_removing == 0, "replicas and ISR become 2,3,4");
	ok(done.leader == 2 && done.leader_epoch == 6,
	    "the removed leader 1 hands over to 2, leader epoch 6");

	w.isr = isr;
	w.n_isr = 3;
	is_int(ctl_reassign_cancel(&w, all_up, NULL, &c), 0, "cancel");
	ok(ids_are(c.replicas, c.n_replicas, "2,3,1") &&
	    ids_are(c.isr, c.n_isr, "1,2,3") && c.leader == 1 &&
	    c.n_adding == 0, "cancel takes 4 out again, leader 1 stays");
	is_int(ctl_reassign_cancel(&p, all_up, NULL, &c),
	    RN_KERR_NO_REASSIGNMENT_IN_PROGRESS, "cancel with none going on");

	is_int(ctl_reassign_start(&p, back, 3, all_up, NULL, &ra), 0,
	    "a reorder");
	ok(ids_are(ra.replicas, ra.n_replicas, "3,2,1") && ra.n_adding == 0 &&
	    ra.leader == 1, "a reorder completes at once");
	is_int(ctl_reassign_start(&p, to, 2, all_up, NULL, &ra), 0,
	    "1,2,3 -> 2,3 (removal only)");
	ok(ids_are(ra.replicas, ra.n_replicas, "2,3") &&
	    ids_are(ra.isr, ra.n_isr, "2,3") && ra.leader == 2 &&
	    !ctl_reassigning(&(struct ctl_partition){ .n_adding = ra.n_adding,
	    .n_removing = ra.n_removing }), "a removal completes at once");
}

static uint8_t tid[16] = { 0x42 };
static int32_t removed_broker = -1, removed_slot = -1, removed_calls;

static void
on_removed(void *arg, const struct ctl_topic *t, int32_t p, int32_t broker,
    int32_t slot, const uint8_t dir[16])
{
	(void)arg;
	(void)t;
	(void)p;
	(void)dir;
	removed_broker = broker;
	removed_slot = slot;
	removed_calls++;
}

static void
record(struct ctl_batch *b, const struct ctl_reassign *ra)
{
	struct ctl_partition np;

	ctl_reassign_as_partition(ra, &np);
	ctl_rec_partition(b, tid, 0, &np, false);
}

static void
test_reassign_state(void)
{
	int32_t rep[] = { 1, 2, 3 }, to[] = { 2, 3, 4 }, isr4[] = { 1, 2, 3, 4 };
	struct ctl_state rs, st2;
	struct ctl_partition p, *pp;
	struct ctl_reassign ra;
	struct ctl_batch b;
	msgpack_sbuffer sb;
	int32_t slot1;

	ctl_state_init(&rs);
	rs.on_remove_replica = on_removed;
	ctl_batch_init(&b);
	ctl_rec_topic(&b, "moves", 5, tid);
	part_of(&p, rep, 3, rep, 3, 1);
	ctl_rec_partition(&b, tid, 0, &p, false);
	apply_batch(&rs, &b, 1);
	pp = &ctl_state_topic(&rs, "moves", 5)->parts[0];
	slot1 = pp->slots[0];

	if (ctl_reassign_start(pp, to, 3, all_up, NULL, &ra) != 0)
		bail("start refused");
	record(&b, &ra);
	apply_batch(&rs, &b, 2);
	pp = &ctl_state_topic(&rs, "moves", 5)->parts[0];
	ok(ctl_reassigning(pp) && ids_are(pp->replicas, pp->n_replicas,
	    "2,3,4,1") && ids_are(pp->adding, pp->n_adding, "4") &&
	    ids_are(pp->removing, pp->n_removing, "1"),
	    "the Partition record carries adding and removing replicas");
	is_int(removed_calls, 0, "widening drops no replica");
	ok(pp->slots[3] == slot1 && pp->slots[2] >= 0,
	    "broker 1 keeps its slot; broker 4 gets one");

	ctl_rec_partition_change(&b, tid, 0, 1, isr4, 4, pp->leader_epoch,
	    pp->partition_epoch + 1);
	apply_batch(&rs, &b, 3);
	pp = &ctl_state_topic(&rs, "moves", 5)->parts[0];
	ok(pp->n_isr == 4 && ids_are(pp->adding, pp->n_adding, "4"),
	    "a PartitionChange (4 joins the ISR) keeps the reassignment");

	msgpack_sbuffer_init(&sb);
	ctl_state_init(&st2);
	if (ctl_state_snapshot(&rs, &sb) != 0 ||
	    ctl_state_restore(&st2, sb.data, sb.size) != 0)
		bail("snapshot round trip failed");
	pp = &ctl_state_topic(&st2, "moves", 5)->parts[0];
	ok(ids_are(pp->adding, pp->n_adding, "4") &&
	    ids_are(pp->removing, pp->n_removing, "1"),
	    "a snapshot keeps the reassignment");
	ctl_state_free(&st2);
	msgpack_sbuffer_destroy(&sb);

	pp = &ctl_state_topic(&rs, "moves", 5)->parts[0];
	if (!ctl_reassign_complete(pp, all_up, NULL, &ra))
		bail("not complete");
	record(&b, &ra);
	apply_batch(&rs, &b, 4);
	pp = &ctl_state_topic(&rs, "moves", 5)->parts[0];
	ok(!ctl_reassigning(pp) && ids_are(pp->replicas, pp->n_replicas,
	    "2,3,4") && pp->leader == 2, "completion: 2,3,4, leader 2");
	ok(removed_calls == 1 && removed_broker == 1 && removed_slot == slot1,
	    "the hook hears broker 1's replica go, with its slot %d", slot1);
	ctl_batch_free(&b);
	ctl_state_free(&rs);
}

/*
 * Log dir failure through the state: a replica marked LOST is offline and
 * placed nowhere on its broker, the failed dir leaves the broker's
 * registered dirs, and both survive a snapshot.
 */
static uint8_t off_dirs[2][16] = { { 0xe1 }, { 0xe2 } };
static uint8_t off_tid[16] = { 0x7a };

/* Broker 1 with two dirs, topic t with p0 on the first and p1 on the
 * second; then p1's replica lost and the second dir gone. */
static void
build_offline(struct ctl_state *ost)
{
	struct ctl_batch b;
	struct ctl_broker br;
	struct ctl_partition p;
	int32_t one = 1;
	int i;

	ctl_state_init(ost);
	ctl_batch_init(&b);
	memset(&br, 0, sizeof(br));
	br.id = 1;
	br.log_dirs = off_dirs;
	br.n_log_dirs = 2;
	ctl_rec_register_broker(&b, &br, false);
	ctl_rec_topic(&b, "t", 1, off_tid);
	for (i = 0; i < 2; i++) {
		memset(&p, 0, sizeof(p));
		p.n_replicas = p.n_isr = 1;
		p.replicas = p.isr = &one;
		p.leader = 1;
		p.dirs = &off_dirs[i];
		ctl_rec_partition(&b, off_tid, i, &p, false);
	}
	apply_batch(ost, &b, 2);
	p = ost->topics[0]->parts[1];
	p.dirs = (uint8_t (*)[16])ctl_dir_lost;
	p.partition_epoch++;
	ctl_rec_partition(&b, off_tid, 1, &p, false);
	ctl_rec_broker_dirs(&b, 1, (const uint8_t (*)[16])off_dirs, 1);
	apply_batch(ost, &b, 3);
}

/* The image lists the LOST replica as offline, and only it. */
static void
check_offline_image(const struct ctl_state *ost, const struct ctl_local *loc,
    const char *what)
{
	const struct rn_mdv_topic *t;
	struct rn_mdview v;
	msgpack_sbuffer sb;

	msgpack_sbuffer_init(&sb);
	ctl_state_encode_image(ost, loc, &sb);
	rn_mdview_init(&v);
	if (rn_mdview_load(&v, sb.data, sb.size) != 0 ||
	    (t = rn_mdview_topic(&v, "t", 1)) == NULL || t->n_parts != 2)
		bail("the image of the offline dirs state does not parse");
	ok(t->parts[0].n_offline == 0 && t->parts[1].n_offline == 1 &&
	    t->parts[1].offline[0] == 1 && t->parts[1].dir == RN_MDV_DIR_LOST,
	    "%s: the image's p1 has broker 1 offline, p0 nothing", what);
	rn_mdview_free(&v);
	msgpack_sbuffer_destroy(&sb);
}

static void
check_offline(const struct ctl_state *ost, const char *what)
{
	const uint8_t (*ids)[16] = (const uint8_t (*)[16])off_dirs;
	struct ctl_local loc = { .node_id = 1, .n_dirs = 2, .dir_ids = ids,
	    .max_partitions = 64 };
	const struct ctl_topic *t = ost->topics[0];
	int32_t slot, d0, d1;

	ok(!ctl_replica_lost(&t->parts[0], 1) &&
	    ctl_replica_lost(&t->parts[1], 1), "%s: p1's replica is lost, "
	    "p0's is not", what);
	ok(ost->brokers[0].n_log_dirs == 1 &&
	    memcmp(ost->brokers[0].log_dirs[0], off_dirs[0], 16) == 0,
	    "%s: the broker keeps only its healthy dir", what);
	ctl_state_local_placement(ost, &loc, t, 0, &slot, &d0);
	ctl_state_local_placement(ost, &loc, t, 1, &slot, &d1);
	ok(d0 == 0 && d1 == RN_MDV_DIR_LOST, "%s: the image places p0 in "
	    "dir 0 and p1 nowhere (%d, %d)", what, d0, d1);
	check_offline_image(ost, &loc, what);
}

static void
test_offline_dirs(void)
{
	struct ctl_state ost, back;
	msgpack_sbuffer sb;

	build_offline(&ost);
	is_int(ost.topics[0]->parts[1].partition_epoch, 1,
	    "the LOST record bumped the partition epoch");
	check_offline(&ost, "applied");
	msgpack_sbuffer_init(&sb);
	ctl_state_init(&back);
	if (ctl_state_snapshot(&ost, &sb) != 0 ||
	    ctl_state_restore(&back, sb.data, sb.size) != 0)
		bail("snapshot round trip failed");
	check_offline(&back, "restored from a snapshot");
	msgpack_sbuffer_destroy(&sb);
	ctl_state_free(&ost);
	ctl_state_free(&back);
}

/* KIP-858: directories in Partition records, snapshots, a dir dropped */
static void
test_dirs(void)
{
	static uint8_t d1[2][16] = { { 0xe1 }, { 0xe2 } };
	struct ctl_state a, b2;
	struct ctl_batch b;
	struct ctl_broker br;
	struct ctl_listener l = { "PLAINTEXT", "127.0.0.1", 9092 };
	struct ctl_partition p;
	msgpack_sbuffer sb;
	int32_t one = 1, i;
	uint8_t id[16], dirs[1][16];
	const struct ctl_topic *t;

	ctl_state_init(&a);
	ctl_batch_init(&b);
	memset(&br, 0, sizeof(br));
	br.id = 1;
	br.listeners = &l;
	br.n_listeners = 1;
	br.log_dirs = d1;
	br.n_log_dirs = 2;
	ctl_rec_register_broker(&b, &br, false);
	memset(id, 0xdd, sizeof(id));
	ctl_rec_topic(&b, "delta", 5, id);
	for (i = 0; i < 4; i++) {
		memset(&p, 0, sizeof(p));
		p.n_replicas = p.n_isr = 1;
		p.replicas = p.isr = &one;
		p.leader = 1;
		memcpy(dirs[0], d1[i % 2], 16);
		p.dirs = dirs;
		ctl_rec_partition(&b, id, i, &p, false);
	}
	apply_batch(&a, &b, 2);
	t = ctl_state_topic(&a, "delta", 5);
	ok(t != NULL && memcmp(t->parts[1].dirs[0], d1[1], 16) == 0,
	    "a Partition record's directories are in the state");
	msgpack_sbuffer_init(&sb);
	ctl_state_snapshot(&a, &sb);
	ctl_state_init(&b2);
	ok(ctl_state_restore(&b2, sb.data, sb.size) == 0 &&
	    memcmp(ctl_state_topic(&b2, "delta", 5)->parts[3].dirs[0], d1[1],
	    16) == 0, "directories survive a snapshot");
	msgpack_sbuffer_destroy(&sb);
	ctl_state_free(&b2);

	/* registered again without its second dir */
	br.n_log_dirs = 1;
	br.incarnation[0] = 1;
	ctl_rec_register_broker(&b, &br, false);
	is_int(ctl_dirs_unassign_missing(&b, &a, &br), 2,
	    "a registration without dir 2: its two replicas unassigned");
	apply_batch(&a, &b, 3);
	t = ctl_state_topic(&a, "delta", 5);
	memset(dirs[0], 0, 16);
	ok(memcmp(t->parts[1].dirs[0], dirs[0], 16) == 0 &&
	    memcmp(t->parts[3].dirs[0], dirs[0], 16) == 0 &&
	    memcmp(t->parts[0].dirs[0], d1[0], 16) == 0 &&
	    t->parts[1].slots[0] == 1 && t->parts[1].partition_epoch == 0,
	    "to Uuid.ZERO; the others, slots and partition epochs stay");
	is_int(ctl_dirs_unassign_missing(&b, &a, &br), 0,
	    "nothing more to unassign");
	ctl_batch_free(&b);
	ctl_state_free(&a);
}

/* SCRAM credentials: set, replaced, removed, kept by a snapshot. */
static void
test_scram(void)
{
	struct ctl_state a, b2;
	struct ctl_batch b;
	struct rn_scram_cred c;
	msgpack_sbuffer sb;
	uint8_t salt[8] = { 1, 2, 3, 4, 5, 6, 7, 8 }, sp[RN_SCRAM_KEY_MAX];
	uint8_t stored[RN_SCRAM_KEY_MAX], server[RN_SCRAM_KEY_MAX];
	const struct rn_scram_cred *f;

	ctl_state_init(&a);
	ctl_state_init(&b2);
	ctl_batch_init(&b);
	memset(&c, 0, sizeof(c));
	c.name = "bob";
	c.mech = RN_SCRAM_SHA512;
	c.iterations = 4096;
	c.salt = salt;
	c.salt_len = sizeof(salt);
	ctl_rec_scram(&b, &c);
	c.name = "alice";
	c.mech = RN_SCRAM_SHA256;
	c.iterations = 8192;
	ok(rn_scram_salted_password(RN_SCRAM_SHA256, "pw", 2, salt,
	    sizeof(salt), 4096, sp) == 0 && rn_scram_derive_keys(
	    RN_SCRAM_SHA256, sp, c.stored_key, c.server_key) == 0,
	    "keys derived from a salted password");
	memcpy(stored, c.stored_key, sizeof(stored));
	memcpy(server, c.server_key, sizeof(server));
	ctl_rec_scram(&b, &c);
	apply_batch(&a, &b, 1);
	f = rn_scram_find(a.scram.v, (size_t)a.scram.n, "alice", 5,
	    RN_SCRAM_SHA256);
	ok(a.scram.n == 2 && f != NULL && f->iterations == 8192 &&
	    memcmp(f->stored_key, stored, 32) == 0 &&
	    memcmp(f->server_key, server, 32) == 0 &&
	    strcmp(a.scram.v[0].name, "alice") == 0,
	    "two credentials applied, sorted by user");
	c.iterations = 4096;
	ctl_rec_scram(&b, &c);
	apply_batch(&a, &b, 2);
	ok(a.scram.n == 2 && a.scram.v[0].iterations == 4096,
	    "a second UserScramCredential replaces the first");
	msgpack_sbuffer_init(&sb);
	is_int(ctl_state_snapshot(&a, &sb), 0, "snapshot with credentials");
	is_int(ctl_state_restore(&b2, sb.data, sb.size), 0, "restored");
	ok(snap_equal(&a, &b2) && b2.scram.n == 2,
	    "the credentials survive the snapshot");
	msgpack_sbuffer_destroy(&sb);
	ctl_rec_remove_scram(&b, "alice", 5, RN_SCRAM_SHA256);
	apply_batch(&a, &b, 3);
	ok(a.scram.n == 1 && strcmp(a.scram.v[0].name, "bob") == 0,
	    "RemoveUserScramCredential removes alice's");
	ctl_rec_remove_scram(&b, "alice", 5, RN_SCRAM_SHA256);
	c.mech = 9;
	ctl_rec_scram(&b, &c);
	apply_batch(&a, &b, 4);
	ok(a.scram.n == 1, "removing what is gone, an unknown mechanism: "
	    "skipped");
	ctl_batch_free(&b);
	ctl_state_free(&a);
	ctl_state_free(&b2);
}

int
main(void)
{
	build_state();
	test_snapshot();
	test_image();
	test_validate();
	test_shm_publish();
	test_reassign_rules();
	test_reassign_state();
	test_offline_dirs();
	test_dirs();
	test_scram();
	ctl_state_free(&st);
	return done_testing();
}
