/*
 * A real controller worker in a forked child, driven from the parent the
 * way a network worker drives it: admin requests over the slot-1 ring,
 * answers read back, the image read through rn_mdview. Then the
 * controller is killed and restarted (the metadata log brings everything
 * back), topics are altered and deleted, and a node whose
 * meta.properties names another cluster is refused.
 */
#include "autoconf.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <msgpack.h>

#include "common/ctlproto.h"
#include "common/log.h"
#include "common/util.h"
#include "ipc/msgtypes.h"
#include "protocol/kerrors.h"
#include "protocol/kmsg_gen.h"
#include "storage/metaprops.h"
#include "tests/lib/ctl_harness.h"
#include "tests/lib/tap.h"

extern char **environ;

static struct th_cluster cl = {
	.name = "ctl", .n_nodes = 1, .n_voters = 1,
	.extra_config = "num.partitions=2\nlog.segment.bytes=2048\n",
	.own_metaprops = true,
};
static struct th_node *const node = &cl.node[0];

struct view_pred {
	bool (*fn)(void *);
	void *arg;
};

static bool
pred_view(void *arg)
{
	struct view_pred *vp = arg;

	return th_view(&cl, 0)->version != 0 && vp->fn(vp->arg);
}

/* Refresh the image until pred holds (or timeout); returns pred's value. */
static bool
wait_view(bool (*pred)(void *), void *arg, int timeout_ms)
{
	struct view_pred vp = { pred, arg };

	return th_wait_for(pred_view, &vp, timeout_ms);
}

static bool
pred_ready(void *arg)
{
	(void)arg;
	return node->view.cluster_id[0] != '\0' &&
	    rn_mdview_broker(&node->view, 1) != NULL;
}

static bool
pred_version_above(void *arg)
{
	return node->view.version > *(uint64_t *)arg && pred_ready(NULL);
}

static bool
pred_topic(void *arg)
{
	return rn_mdview_topic(&node->view, arg, strlen(arg)) != NULL;
}

static bool
pred_no_topic(void *arg)
{
	return rn_mdview_topic(&node->view, arg, strlen(arg)) == NULL;
}

/* Send one admin request; wait for its answer (the body into the arena). */
/* One admin request to node 0; bails when it is refused or its answer
 * does not decode into resp. */
static void
call(int16_t key, int16_t ver, const void *req, void *resp)
{
	int err = th_admin_call(&cl, 0, key, ver, req, resp, 10000);

	if (err == TH_NO_ANSWER)
		bail("no answer to API %d v%d", key, ver);
	if (err != 0)
		bail("API %d v%d refused (error %d)", key, ver, err);
}

static int16_t
admin(int16_t key, int16_t ver, struct rn_kwriter *req, struct rn_kreader *r)
{
	uint64_t id = th_admin_send(&cl, 0, key, ver, req);
	int err = th_admin_wait(&cl, 0, id, 10000, r);

	if (err == TH_NO_ANSWER)
		bail("no answer to admin request %llu", (unsigned long long)id);
	return (int16_t)err;
}

/* Stop the controller the hard way and start it again. */
static void
kill_and_restart(void)
{
	th_stop(&cl, 0, SIGKILL);
	th_start(&cl, 0);
}

struct ct_conf {
	const char *k, *v;
};

/* CreateTopics with one topic; returns the topic's error code. */
static int16_t
create_topic(const char *name, int32_t np, int16_t rf,
    const struct ct_conf *confs, int nconf, bool validate_only,
    struct rn_CreateTopicsResponse_CreatableTopicResult *out)
{
	struct rn_CreateTopicsRequest req;
	struct rn_CreateTopicsRequest_CreatableTopic t;
	struct rn_CreateTopicsRequest_CreatableTopicConfig c[8];
	struct rn_CreateTopicsResponse_CreatableTopicResult res;
	struct rn_kwriter w;
	struct rn_kreader r;
	int i;
	int16_t e;

	rn_CreateTopicsRequest_init(&req);
	rn_CreateTopicsRequest_CreatableTopic_init(&t);
	t.name = rn_kstr_c(name);
	t.num_partitions = np;
	t.replication_factor = rf;
	for (i = 0; i < nconf; i++) {
		c[i].name = rn_kstr_c(confs[i].k);
		c[i].value = rn_kstr_c(confs[i].v);
	}
	t.configs = c;
	t.configs_count = nconf;
	req.topics = &t;
	req.topics_count = 1;
	req.timeout_ms = 5000;
	req.validate_only = validate_only;
	rn_kwriter_init(&w);
	if (rn_CreateTopicsRequest_encode(&w, 7, &req) != 0)
		bail("encode CreateTopics");
	e = admin(RN_KAPI_CREATE_TOPICS, 7, &w, &r);
	rn_kwriter_free(&w);
	if (e != 0)
		return -1000 - e;
	if (th_create_topics_result(&cl, &r, name, &res) != 0)
		bail("CreateTopics response does not decode");
	if (out != NULL)
		*out = res;
	return res.error_code;
}

static int16_t
incremental_alter_res(int8_t type, const char *resource, const char *key,
    int8_t op, const char *value)
{
	struct rn_IncrementalAlterConfigsRequest req;
	struct rn_IncrementalAlterConfigsRequest_AlterConfigsResource res;
	struct rn_IncrementalAlterConfigsRequest_AlterableConfig c;
	struct rn_IncrementalAlterConfigsResponse resp;

	rn_IncrementalAlterConfigsRequest_init(&req);
	rn_IncrementalAlterConfigsRequest_AlterConfigsResource_init(&res);
	res.resource_type = type;
	res.resource_name = rn_kstr_c(resource);
	c.name = rn_kstr_c(key);
	c.config_operation = op;
	c.value = rn_kstr_c(value);
	res.configs = &c;
	res.configs_count = 1;
	req.resources = &res;
	req.resources_count = 1;
	call(RN_KAPI_INCREMENTAL_ALTER_CONFIGS, 1, &req, &resp);
	if (resp.responses_count != 1)
		bail("IncrementalAlterConfigs response");
	return resp.responses[0].error_code;
}

static int16_t
incremental_alter(const char *topic, const char *key, int8_t op,
    const char *value)
{
	return incremental_alter_res(2, topic, key, op, value);
}

static int16_t
alter_configs(const char *topic, const char *key, const char *value)
{
	struct rn_AlterConfigsRequest req;
	struct rn_AlterConfigsRequest_AlterConfigsResource res;
	struct rn_AlterConfigsRequest_AlterableConfig c;
	struct rn_AlterConfigsResponse resp;

	rn_AlterConfigsRequest_init(&req);
	rn_AlterConfigsRequest_AlterConfigsResource_init(&res);
	res.resource_type = 2;
	res.resource_name = rn_kstr_c(topic);
	c.name = rn_kstr_c(key);
	c.value = rn_kstr_c(value);
	res.configs = &c;
	res.configs_count = 1;
	req.resources = &res;
	req.resources_count = 1;
	call(RN_KAPI_ALTER_CONFIGS, 1, &req, &resp);
	if (resp.responses_count != 1)
		bail("AlterConfigs response");
	return resp.responses[0].error_code;
}

static int16_t
delete_topic(const char *name, const uint8_t *id)
{
	struct rn_DeleteTopicsRequest req;
	struct rn_DeleteTopicsRequest_DeleteTopicState s;
	struct rn_DeleteTopicsResponse resp;

	rn_DeleteTopicsRequest_init(&req);
	rn_DeleteTopicsRequest_DeleteTopicState_init(&s);
	if (name != NULL)
		s.name = rn_kstr_c(name);
	else {
		s.name.len = -1;
		memcpy(s.topic_id.b, id, 16);
	}
	req.topics = &s;
	req.topics_count = 1;
	req.timeout_ms = 5000;
	call(RN_KAPI_DELETE_TOPICS, 6, &req, &resp);
	if (resp.responses_count != 1)
		bail("DeleteTopics response");
	return resp.responses[0].error_code;
}

static int16_t
create_partitions(const char *name, int32_t count)
{
	struct rn_CreatePartitionsRequest req;
	struct rn_CreatePartitionsRequest_CreatePartitionsTopic t;
	struct rn_CreatePartitionsResponse resp;

	rn_CreatePartitionsRequest_init(&req);
	rn_CreatePartitionsRequest_CreatePartitionsTopic_init(&t);
	t.name = rn_kstr_c(name);
	t.count = count;
	t.assignments = NULL;
	t.assignments_count = -1;
	req.topics = &t;
	req.topics_count = 1;
	req.timeout_ms = 5000;
	call(RN_KAPI_CREATE_PARTITIONS, 3, &req, &resp);
	if (resp.results_count != 1)
		bail("CreatePartitions response");
	return resp.results[0].error_code;
}

static void
metaprops_cluster_id(char out[23])
{
	struct rn_metaprops mp;
	char err[256];

	out[0] = '\0';
	if (rn_metaprops_read(node->dir, &mp, err, sizeof(err)) == 0)
		strcpy(out, mp.cluster_id);
}

static const char *
topic_config(const char *topic, const char *key, enum rn_config_source *src)
{
	static char buf[64];
	const char *v = NULL;

	th_view(&cl, 0);
	if (rn_mdview_topic_config(&node->view, rn_mdview_topic(&node->view,
	    topic, strlen(topic)), &node->cfg, key, &v, src, buf,
	    sizeof(buf)) != 0)
		return NULL;
	return v;
}

static char cid[23];            /* the cluster id of the first start */
static uint8_t orders_id[16];
static int32_t orders_slots[3];

/* What runneld does once the log dirs are locked. */
static void
test_metaprops_written(void)
{
	is_int(rn_metaprops_ensure(&node->cfg, node->env.cluster_id,
	    node->env.dir_ids), 0, "meta.properties written");
	is_str(node->env.cluster_id, "", "no cluster id before the first "
	    "start");
}

static void
test_first_start(void)
{
	th_start(&cl, 0);
	ok(wait_view(pred_ready, NULL, 10000), "controller published an "
	    "image with a cluster id and broker 1");
	metaprops_cluster_id(cid);
	ok(cid[0] != '\0' && strcmp(cid, node->view.cluster_id) == 0,
	    "meta.properties has the published cluster id (%s)", cid);
	is_int(node->view.controller_id, 1, "node 1 is the active controller");
}

static void
test_create_topics(void)
{
	struct rn_CreateTopicsResponse_CreatableTopicResult res;
	struct ct_conf good[] = { { "retention.ms", "1000" } };
	struct ct_conf unknown[] = { { "no.such.config", "1" } };
	struct ct_conf badval[] = { { "retention.ms", "soon" } };
	int i;

	is_int(create_topic("orders", 3, 1, good, 1, false, &res), 0,
	    "CreateTopics orders: success");
	ok(res.num_partitions == 3 && res.replication_factor == 1 &&
	    !rn_uuid_is_zero(&res.topic_id) && res.configs_count > 0,
	    "v7 result: partitions, rf, topic id, configs");
	memcpy(orders_id, res.topic_id.b, 16);
	for (i = 0; i < res.configs_count; i++)
		if (rn_kstr_eq(res.configs[i].name, "retention.ms"))
			ok(rn_kstr_eq(res.configs[i].value, "1000") &&
			    res.configs[i].config_source ==
			    RN_CFGSRC_DYNAMIC_TOPIC_CONFIG,
			    "result config retention.ms=1000 from the topic");
	is_int(create_topic("orders", 1, 1, NULL, 0, false, NULL),
	    RN_KERR_TOPIC_ALREADY_EXISTS, "again: TOPIC_ALREADY_EXISTS");
	is_int(create_topic("bad/name", 1, 1, NULL, 0, false, NULL),
	    RN_KERR_INVALID_TOPIC_EXCEPTION,
	    "bad/name: INVALID_TOPIC_EXCEPTION");
	is_int(create_topic("..", 1, 1, NULL, 0, false, NULL),
	    RN_KERR_INVALID_TOPIC_EXCEPTION, "'..': INVALID_TOPIC_EXCEPTION");
	is_int(create_topic("a.b", 1, 1, NULL, 0, false, NULL), 0, "a.b");
	is_int(create_topic("a_b", 1, 1, NULL, 0, false, NULL),
	    RN_KERR_INVALID_TOPIC_EXCEPTION, "a_b collides with a.b");
	is_int(create_topic("zero", 0, 1, NULL, 0, false, NULL),
	    RN_KERR_INVALID_PARTITIONS, "0 partitions: INVALID_PARTITIONS");
	is_int(create_topic("rf2", 1, 2, NULL, 0, false, NULL),
	    RN_KERR_INVALID_REPLICATION_FACTOR,
	    "RF 2 with one broker: INVALID_REPLICATION_FACTOR");
	is_int(create_topic("cfg1", 1, 1, unknown, 1, false, NULL),
	    RN_KERR_INVALID_CONFIG, "unknown config: INVALID_CONFIG");
	is_int(create_topic("cfg2", 1, 1, badval, 1, false, NULL),
	    RN_KERR_INVALID_CONFIG, "bad value: INVALID_CONFIG");
	is_int(create_topic("dry", 1, 1, NULL, 0, true, NULL), 0,
	    "validate_only succeeds");
	is_int(create_topic("dflt", -1, -1, NULL, 0, false, &res), 0,
	    "defaults: success");
	is_int(res.num_partitions, 2, "num.partitions applied");
}

static void
test_image(void)
{
	const struct rn_mdv_topic *t;
	const struct rn_mdv_partition *p;
	enum rn_config_source src;
	int32_t *slots = orders_slots;
	int i;

	t = rn_mdview_topic(th_view(&cl, 0), "orders", 6);
	ok(t != NULL && t->n_parts == 3 && memcmp(t->id, orders_id, 16) == 0,
	    "orders in the image with its id and 3 partitions");
	ok(rn_mdview_topic(&node->view, "dry", 3) == NULL, "validate_only "
	    "created nothing");
	for (i = 0; i < 3; i++) {
		p = rn_mdview_partition(t, i);
		slots[i] = p != NULL ? p->slot : -1;
		ok(p != NULL && p->leader == 1 && p->slot >= 0 &&
		    p->slot < 64 && p->dir == 0,
		    "orders-%d: leader 1, slot %d, dir 0", i, slots[i]);
	}
	ok(slots[0] != slots[1] && slots[1] != slots[2] &&
	    slots[0] != slots[2], "distinct slots");
	ok(topic_config("orders", "retention.ms", &src) != NULL &&
	    strcmp(topic_config("orders", "retention.ms", &src), "1000") == 0 &&
	    src == RN_CFGSRC_DYNAMIC_TOPIC_CONFIG,
	    "orders retention.ms=1000 DYNAMIC_TOPIC_CONFIG");
}

/* SIGKILL and restart: the metadata log brings it all back */
static void
test_restart(void)
{
	const struct rn_mdv_topic *t;
	int32_t *slots = orders_slots;
	uint64_t ver = node->view.version;
	char cid2[23];

	kill_and_restart();
	ok(wait_view(pred_version_above, &ver, 10000),
	    "restarted controller republished");
	t = rn_mdview_topic(&node->view, "orders", 6);
	ok(t != NULL && memcmp(t->id, orders_id, 16) == 0 && t->n_parts == 3,
	    "orders back with the same id");
	ok(t != NULL && t->parts[0].slot == slots[0] &&
	    t->parts[1].slot == slots[1] && t->parts[2].slot == slots[2],
	    "same slots after the restart");
	ok(rn_mdview_topic(&node->view, "a.b", 3) != NULL &&
	    rn_mdview_topic(&node->view, "dflt", 4) != NULL,
	    "other topics back");
	metaprops_cluster_id(cid2);
	is_str(cid2, cid, "meta.properties keeps the cluster id");
	is_str(node->view.cluster_id, cid, "same cluster id published");
}

static void
test_topic_configs(void)
{
	enum rn_config_source src;

	is_int(incremental_alter("orders", "segment.ms", 0, "5000"), 0,
	    "IncrementalAlterConfigs SET segment.ms");
	ok(topic_config("orders", "segment.ms", &src) != NULL &&
	    strcmp(topic_config("orders", "segment.ms", &src), "5000") == 0 &&
	    src == RN_CFGSRC_DYNAMIC_TOPIC_CONFIG, "segment.ms=5000 dynamic");
	is_int(incremental_alter("orders", "retention.ms", 1, NULL), 0,
	    "IncrementalAlterConfigs DELETE retention.ms");
	topic_config("orders", "retention.ms", &src);
	ok(src != RN_CFGSRC_DYNAMIC_TOPIC_CONFIG, "retention.ms override gone");
	is_int(incremental_alter("orders", "segment.bytes", 0, "1"),
	    RN_KERR_INVALID_CONFIG, "segment.bytes=1: INVALID_CONFIG");
	is_int(incremental_alter("nope", "segment.ms", 0, "1"),
	    RN_KERR_UNKNOWN_TOPIC_OR_PARTITION, "unknown topic");
	is_int(alter_configs("orders", "max.message.bytes", "2000"), 0,
	    "AlterConfigs replaces the set");
	ok(strcmp(topic_config("orders", "max.message.bytes", &src), "2000") ==
	    0 && src == RN_CFGSRC_DYNAMIC_TOPIC_CONFIG,
	    "max.message.bytes=2000 dynamic");
	topic_config("orders", "segment.ms", &src);
	ok(src != RN_CFGSRC_DYNAMIC_TOPIC_CONFIG,
	    "segment.ms dropped by the legacy replace");
	ok(strcmp(topic_config("orders", "segment.bytes", &src), "2048") == 0 &&
	    src == RN_CFGSRC_STATIC_BROKER_CONFIG,
	    "segment.bytes from server.properties: STATIC_BROKER_CONFIG");
}

/* dynamic broker configs: the cluster default, then this broker */
static void
test_broker_configs(void)
{
	enum rn_config_source src;

	is_int(incremental_alter_res(4, "", "log.retention.ms", 0, "7000"), 0,
	    "dynamic default log.retention.ms");
	ok(strcmp(topic_config("orders", "retention.ms", &src), "7000") == 0 &&
	    src == RN_CFGSRC_DYNAMIC_DEFAULT_BROKER_CONFIG,
	    "orders retention.ms=7000 DYNAMIC_DEFAULT_BROKER_CONFIG");
	is_int(incremental_alter_res(4, "1", "log.retention.ms", 0, "8000"), 0,
	    "broker 1 log.retention.ms");
	ok(strcmp(topic_config("orders", "retention.ms", &src), "8000") == 0 &&
	    src == RN_CFGSRC_DYNAMIC_BROKER_CONFIG,
	    "orders retention.ms=8000 DYNAMIC_BROKER_CONFIG");
	is_int(incremental_alter_res(4, "", "log.retention.ms", 0, "x"),
	    RN_KERR_INVALID_CONFIG, "bad broker value: INVALID_CONFIG");
	is_int(incremental_alter_res(4, "", "num.io.threads", 0, "3"), 0,
	    "num.io.threads (dynamic in Kafka) accepted");
	is_int(incremental_alter_res(4, "", "no.such.broker.key", 0, "3"),
	    RN_KERR_INVALID_CONFIG, "made-up broker key: INVALID_CONFIG");
	is_int(incremental_alter_res(4, "1", "log.retention.hours", 0, "3"),
	    RN_KERR_INVALID_REQUEST, "read-only broker key: INVALID_REQUEST");
	is_int(incremental_alter_res(4, "",
	    "sasl.kerberos.min.time.before.relogin", 0, "1000"),
	    RN_KERR_INVALID_REQUEST, "per-broker key at the default: "
	    "INVALID_REQUEST");
	is_int(incremental_alter_res(4, "1",
	    "sasl.kerberos.min.time.before.relogin", 0, "1000"), 0,
	    "per-broker key on broker 1 accepted");
}

static void
test_create_partitions(void)
{
	const struct rn_mdv_topic *t;

	is_int(create_partitions("dflt", 4), 0, "CreatePartitions 2 -> 4");
	is_int(create_partitions("dflt", 3), RN_KERR_INVALID_PARTITIONS,
	    "4 -> 3: INVALID_PARTITIONS");
	t = rn_mdview_topic(th_view(&cl, 0), "dflt", 4);
	ok(t != NULL && t->n_parts == 4 && t->parts[3].slot >= 0,
	    "dflt has 4 partitions with slots");
}

/* DeleteTopics: image first, then the dirs */
static void
test_delete_topics(void)
{
	const struct rn_mdv_topic *t;
	char path[600], text[512];
	uint8_t abid[16];
	FILE *f;
	int i;

	for (i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "%s/orders-%d", node->dir, i);
		mkdir(path, 0750);
		snprintf(path, sizeof(path), "%s/orders-%d/"
		    "00000000000000000000.log", node->dir, i);
		if ((f = fopen(path, "w")) != NULL)
			fclose(f);
	}
	is_int(delete_topic("orders", NULL), 0, "DeleteTopics orders");
	ok(wait_view(pred_no_topic, "orders", 2000), "orders gone from the "
	    "image");
	snprintf(path, sizeof(path), "%s/orders-0", node->dir);
	ok(access(path, F_OK) != 0, "orders-0 directory removed");
	snprintf(text, sizeof(text), "ls %s | grep -c delete >/dev/null",
	    node->dir);
	ok(system(text) != 0, "no -delete dir left behind");
	is_int(delete_topic("orders", NULL), RN_KERR_UNKNOWN_TOPIC_OR_PARTITION,
	    "again: UNKNOWN_TOPIC_OR_PARTITION");
	is_int(delete_topic(NULL, orders_id), RN_KERR_UNKNOWN_TOPIC_ID,
	    "by its old id: UNKNOWN_TOPIC_ID");
	t = rn_mdview_topic(th_view(&cl, 0), "a.b", 3);
	memcpy(abid, t->id, 16);
	is_int(delete_topic(NULL, abid), 0, "DeleteTopics a.b by id");
	ok(wait_view(pred_no_topic, "a.b", 2000), "a.b gone");
	is_int(create_topic("a_b", 1, 1, NULL, 0, false, NULL), 0,
	    "a_b may now be created");
}

static void
test_auto_create(void)
{
	const struct rn_mdv_topic *t;
	msgpack_sbuffer sb;
	msgpack_packer pk;

	msgpack_sbuffer_init(&sb);
	msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 2);
	rn_mp_pack_str(&pk, "v");
	msgpack_pack_int(&pk, RN_IPC_VERSION);
	rn_mp_pack_str(&pk, "topics");
	msgpack_pack_array(&pk, 2);
	rn_mp_pack_str(&pk, "auto1");
	rn_mp_pack_str(&pk, "dflt");
	th_send(&cl, 0, RN_IPC_AUTO_CREATE, sb.data, sb.size);
	msgpack_sbuffer_destroy(&sb);
	ok(wait_view(pred_topic, "auto1", 5000), "auto1 auto-created");
	t = rn_mdview_topic(&node->view, "auto1", 5);
	ok(t != NULL && t->n_parts == 2, "with num.partitions partitions");
}

/*
 * Past the snapshot threshold: libraft snapshots the state and drops
 * old entries; a restarted controller restores the snapshot.
 */
static void
test_snapshot(void)
{
	const struct rn_mdv_topic *t;
	enum rn_config_source src;
	int64_t t0 = rn_now_ms();
	int32_t slot3;
	uint64_t ver;
	char v[16], text[512];
	int i, fails = 0;

	for (i = 0; i < 1100; i++) {
		snprintf(v, sizeof(v), "%d", 1000 + i);
		if (incremental_alter("dflt", "segment.ms", 0, v) != 0)
			fails++;
	}
	is_int(fails, 0, "1100 config changes committed (%lld ms)",
	    (long long)(rn_now_ms() - t0));
	snprintf(text, sizeof(text), "ls %s/__cluster_metadata-0 | "
	    "grep -q snapshot", node->dir);
	ok(system(text) == 0, "a snapshot was taken");
	t = rn_mdview_topic(th_view(&cl, 0), "dflt", 4);
	slot3 = t->parts[3].slot;
	ver = node->view.version;
	kill_and_restart();
	ok(wait_view(pred_version_above, &ver, 10000),
	    "restarted from the snapshot");
	ok(strcmp(topic_config("dflt", "segment.ms", &src), "2099") == 0,
	    "the last change survived");
	t = rn_mdview_topic(&node->view, "dflt", 4);
	ok(t != NULL && t->n_parts == 4 && t->parts[3].slot == slot3 &&
	    rn_mdview_topic(&node->view, "auto1", 5) != NULL &&
	    rn_mdview_topic(&node->view, "a_b", 3) != NULL,
	    "topics and slots restored");
}

static void
test_sigterm(void)
{
	int64_t t0 = rn_now_ms();
	int status;

	/*
	 * Closing raft waits for its disk writes in flight; on a loaded
	 * machine with other tests syncing, that took over 10 s once.
	 */
	kill(node->pid, SIGTERM);
	status = th_wait_exit(&cl, 0, 30000);
	ok(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0,
	    "SIGTERM: exit status 0 (status 0x%x after %lld ms)", status,
	    (long long)(rn_now_ms() - t0));
}

/* another cluster's meta.properties: refused */
static void
test_other_cluster(void)
{
	struct rn_metaprops mp;
	char err[256], cid2[23];
	int status;

	if (rn_metaprops_read(node->dir, &mp, err, sizeof(err)) != 0)
		bail("meta.properties: %s", err);
	strcpy(mp.cluster_id, "AAAAAAAAAAAAAAAAAAAAAQ");
	if (rn_metaprops_write(node->dir, &mp) != 0)
		bail("cannot rewrite meta.properties");
	th_start(&cl, 0);
	status = th_wait_exit(&cl, 0, 15000);
	ok(status != -1 && WIFEXITED(status) &&
	    WEXITSTATUS(status) == RN_WORKER_EXIT_FATAL,
	    "a log naming another cluster: exit status 2 (status 0x%x)",
	    status);
	metaprops_cluster_id(cid2);
	is_str(cid2, "AAAAAAAAAAAAAAAAAAAAAQ", "meta.properties left alone");
	if (status == -1)
		th_stop(&cl, 0, SIGKILL);
}

/*
 * A node formatted with a cluster id and an empty metadata log (here:
 * the log removed): the first active controller proposes that id.
 */
static void
test_formatted_cluster_id(void)
{
	char text[512];
	int status;

	snprintf(text, sizeof(text), "rm -rf %s/__cluster_metadata-0",
	    node->dir);
	if (system(text) != 0)
		bail("rm");
	rn_shm_meta_rebuild(&node->shm);
	rn_mdview_free(&node->view);
	rn_mdview_init(&node->view);
	th_start(&cl, 0);
	ok(wait_view(pred_ready, NULL, 10000), "fresh log: image published");
	is_str(node->view.cluster_id, "AAAAAAAAAAAAAAAAAAAAAQ",
	    "the formatted cluster id became the cluster's");
	ok(rn_mdview_topic(&node->view, "dflt", 4) == NULL,
	    "and the log is new");
	kill(node->pid, SIGTERM);
	status = th_wait_exit(&cl, 0, 10000);
	ok(WIFEXITED(status) && WEXITSTATUS(status) == 0, "stopped");
}

int
main(int argc, char **argv)
{
	setproctitle_init(argc, argv, environ);
	rn_log_init("test", NULL, 0);
	th_setup(&cl);
	test_metaprops_written();
	test_first_start();
	test_create_topics();
	test_image();
	test_restart();
	test_topic_configs();
	test_broker_configs();
	test_create_partitions();
	test_delete_topics();
	test_auto_create();
	test_snapshot();
	test_sigterm();
	test_other_cluster();
	test_formatted_cluster_id();
	th_teardown(&cl, tap_failed != 0);
	return done_testing();
}
