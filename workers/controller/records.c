/* Packing of metadata records; applying them is state.c's job. */
#include "autoconf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/cquota.h"
#include "common/ctlproto.h"
#include "common/util.h"
#include "workers/controller/records.h"

static const char *const rec_names[] = {
	[CTL_REC_UNKNOWN] = "?",
	[CTL_REC_CLUSTER_ID] = "ClusterId",
	[CTL_REC_FEATURE_LEVEL] = "FeatureLevel",
	[CTL_REC_REGISTER_BROKER] = "RegisterBroker",
	[CTL_REC_TOPIC] = "Topic",
	[CTL_REC_PARTITION] = "Partition",
	[CTL_REC_CONFIG] = "Config",
	[CTL_REC_REMOVE_TOPIC] = "RemoveTopic",
	[CTL_REC_BROKER_CHANGE] = "BrokerChange",
	[CTL_REC_UNREGISTER_BROKER] = "UnregisterBroker",
	[CTL_REC_PARTITION_CHANGE] = "PartitionChange",
	[CTL_REC_ACL] = "AccessControlEntry",
	[CTL_REC_REMOVE_ACL] = "RemoveAccessControlEntry",
	[CTL_REC_SCRAM] = "UserScramCredential",
	[CTL_REC_REMOVE_SCRAM] = "RemoveUserScramCredential",
	[CTL_REC_CLIENT_QUOTA] = "ClientQuota",
};

const char *
ctl_rec_type_name(enum ctl_rec_type t)
{
	return (unsigned)t < RN_ARRAY_SIZE(rec_names) ? rec_names[t] : "?";
}

enum ctl_rec_type
ctl_rec_type_of(const msgpack_object *rec)
{
	const msgpack_object *t = rn_mp_get(rec, "t");
	unsigned i;

	if (t == NULL || t->type != MSGPACK_OBJECT_STR)
		return CTL_REC_UNKNOWN;
	for (i = 1; i < RN_ARRAY_SIZE(rec_names); i++)
		if (strlen(rec_names[i]) == t->via.str.size &&
		    memcmp(rec_names[i], t->via.str.ptr, t->via.str.size) == 0)
			return (enum ctl_rec_type)i;
	return CTL_REC_UNKNOWN;
}

void
ctl_mp_str(msgpack_packer *pk, const char *s, size_t len)
{
	msgpack_pack_str(pk, len);
	msgpack_pack_str_body(pk, s, len);
}

void
ctl_mp_bin16(msgpack_packer *pk, const uint8_t id[16])
{
	msgpack_pack_bin(pk, 16);
	msgpack_pack_bin_body(pk, id, 16);
}

bool
ctl_mp_int(const msgpack_object *o, int64_t *out)
{
	if (o == NULL)
		return false;
	if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER && o->via.u64 <=
	    INT64_MAX) {
		*out = (int64_t)o->via.u64;
		return true;
	}
	if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER) {
		*out = o->via.i64;
		return true;
	}
	return false;
}

bool
ctl_mp_strcpy(const msgpack_object *map, const char *key, char *out,
    size_t outlen)
{
	return rn_mp_get_str(map, key, out, outlen) == 0;
}

bool
ctl_mp_bin16_get(const msgpack_object *map, const char *key, uint8_t out[16])
{
	const msgpack_object *o = rn_mp_get(map, key);

	if (o == NULL || o->type != MSGPACK_OBJECT_BIN || o->via.bin.size != 16)
		return false;
	memcpy(out, o->via.bin.ptr, 16);
	return true;
}

int
ctl_uuid_random(uint8_t out[16])
{
	struct rn_uuid u;
	int rc;

	if ((rc = rn_uuid_random(&u)) != 0)
		return rc;
	memcpy(out, u.b, 16);
	return 0;
}

void
ctl_uuid_str(const uint8_t id[16], char out[23])
{
	struct rn_uuid u;

	memcpy(u.b, id, 16);
	rn_uuid_str(&u, out);
}

int
ctl_uuid_parse(const char *s, uint8_t out[16])
{
	struct rn_uuid u;
	int rc;

	if ((rc = rn_uuid_parse(s, &u)) != 0)
		return rc;
	memcpy(out, u.b, 16);
	return 0;
}

bool
ctl_uuid_is_zero(const uint8_t id[16])
{
	static const uint8_t zero[16];

	return memcmp(id, zero, 16) == 0;
}

void
ctl_batch_init(struct ctl_batch *b)
{
	msgpack_sbuffer_init(&b->sb);
	msgpack_packer_init(&b->pk, &b->sb, msgpack_sbuffer_write);
	b->n = 0;
}

void
ctl_batch_free(struct ctl_batch *b)
{
	msgpack_sbuffer_destroy(&b->sb);
	b->n = 0;
}

void *
ctl_batch_finish(const struct ctl_batch *b, size_t *len)
{
	msgpack_sbuffer hdr;
	msgpack_packer pk;
	char *out;

	msgpack_sbuffer_init(&hdr);
	msgpack_packer_init(&pk, &hdr, msgpack_sbuffer_write);
	msgpack_pack_array(&pk, b->n);
	*len = hdr.size + b->sb.size;
	/* raft_apply wants raft_malloc'd memory: the caller copies if so */
	if ((out = malloc(*len > 0 ? *len : 1)) != NULL) {
		memcpy(out, hdr.data, hdr.size);
		if (b->sb.size > 0)
			memcpy(out + hdr.size, b->sb.data, b->sb.size);
	}
	msgpack_sbuffer_destroy(&hdr);
	return out;
}

static void
rec_begin(struct ctl_batch *b, enum ctl_rec_type t, unsigned nfields)
{
	b->n++;
	msgpack_pack_map(&b->pk, nfields + 1);
	rn_mp_pack_str(&b->pk, "t");
	rn_mp_pack_str(&b->pk, rec_names[t]);
}

static void
pack_i32s(msgpack_packer *pk, const int32_t *v, int32_t n)
{
	int32_t i;

	msgpack_pack_array(pk, (size_t)n);
	for (i = 0; i < n; i++)
		msgpack_pack_int32(pk, v[i]);
}

void
ctl_rec_cluster_id(struct ctl_batch *b, const char *cluster_id,
    int metadata_version)
{
	rec_begin(b, CTL_REC_CLUSTER_ID, 2);
	rn_mp_pack_str(&b->pk, "cluster_id");
	rn_mp_pack_str(&b->pk, cluster_id);
	rn_mp_pack_str(&b->pk, "metadata_version");
	msgpack_pack_int(&b->pk, metadata_version);
}

void
ctl_rec_feature_level(struct ctl_batch *b, const char *name, int level)
{
	rec_begin(b, CTL_REC_FEATURE_LEVEL, 2);
	rn_mp_pack_str(&b->pk, "name");
	rn_mp_pack_str(&b->pk, name);
	rn_mp_pack_str(&b->pk, "level");
	msgpack_pack_int(&b->pk, level);
}

void
ctl_rec_register_broker(struct ctl_batch *b, const struct ctl_broker *br,
    bool with_epoch)
{
	msgpack_packer *pk = &b->pk;
	int i;

	rec_begin(b, CTL_REC_REGISTER_BROKER, with_epoch ? 9 : 6);
	rn_mp_pack_str(pk, "id");
	msgpack_pack_int32(pk, br->id);
	rn_mp_pack_str(pk, "incarnation");
	ctl_mp_bin16(pk, br->incarnation);
	rn_mp_pack_str(pk, "listeners");
	msgpack_pack_array(pk, (size_t)br->n_listeners);
	for (i = 0; i < br->n_listeners; i++) {
		msgpack_pack_map(pk, 3);
		rn_mp_pack_str(pk, "name");
		rn_mp_pack_str(pk, br->listeners[i].name);
		rn_mp_pack_str(pk, "host");
		rn_mp_pack_str(pk, br->listeners[i].host);
		rn_mp_pack_str(pk, "port");
		msgpack_pack_uint16(pk, br->listeners[i].port);
	}
	rn_mp_pack_str(pk, "rack");
	if (br->rack[0] != '\0')
		rn_mp_pack_str(pk, br->rack);
	else
		msgpack_pack_nil(pk);
	rn_mp_pack_str(pk, "log_dirs");
	msgpack_pack_array(pk, (size_t)br->n_log_dirs);
	for (i = 0; i < br->n_log_dirs; i++)
		ctl_mp_bin16(pk, br->log_dirs[i]);
	rn_mp_pack_str(pk, "fenced");
	if (br->fenced)
		msgpack_pack_true(pk);
	else
		msgpack_pack_false(pk);
	if (with_epoch) {
		rn_mp_pack_str(pk, "epoch");
		msgpack_pack_int64(pk, br->epoch);
		rn_mp_pack_str(pk, "in_controlled_shutdown");
		if (br->in_controlled_shutdown)
			msgpack_pack_true(pk);
		else
			msgpack_pack_false(pk);
		rn_mp_pack_str(pk, "absent_since");
		msgpack_pack_int64(pk, br->absent_since_ms);
	}
}

void
ctl_rec_topic(struct ctl_batch *b, const char *name, size_t len,
    const uint8_t id[16])
{
	rec_begin(b, CTL_REC_TOPIC, 2);
	rn_mp_pack_str(&b->pk, "name");
	ctl_mp_str(&b->pk, name, len);
	rn_mp_pack_str(&b->pk, "id");
	ctl_mp_bin16(&b->pk, id);
}

void
ctl_rec_partition(struct ctl_batch *b, const uint8_t topic_id[16],
    int32_t partition, const struct ctl_partition *p, bool with_slots)
{
	msgpack_packer *pk = &b->pk;
	int32_t i;

	rec_begin(b, CTL_REC_PARTITION, (with_slots ? 9 : 8) +
	    (p->n_adding > 0) + (p->n_removing > 0));
	rn_mp_pack_str(pk, "topic_id");
	ctl_mp_bin16(pk, topic_id);
	rn_mp_pack_str(pk, "partition");
	msgpack_pack_int32(pk, partition);
	rn_mp_pack_str(pk, "replicas");
	pack_i32s(pk, p->replicas, p->n_replicas);
	rn_mp_pack_str(pk, "isr");
	pack_i32s(pk, p->isr, p->n_isr);
	rn_mp_pack_str(pk, "leader");
	msgpack_pack_int32(pk, p->leader);
	rn_mp_pack_str(pk, "leader_epoch");
	msgpack_pack_int32(pk, p->leader_epoch);
	rn_mp_pack_str(pk, "partition_epoch");
	msgpack_pack_int32(pk, p->partition_epoch);
	rn_mp_pack_str(pk, "directories");
	msgpack_pack_array(pk, (size_t)p->n_replicas);
	for (i = 0; i < p->n_replicas; i++) {
		static const uint8_t zero[16];

		ctl_mp_bin16(pk, p->dirs != NULL ? p->dirs[i] : zero);
	}
	if (with_slots) {
		rn_mp_pack_str(pk, "slots");
		pack_i32s(pk, p->slots, p->n_replicas);
	}
	if (p->n_adding > 0) {
		rn_mp_pack_str(pk, "adding");
		pack_i32s(pk, p->adding, p->n_adding);
	}
	if (p->n_removing > 0) {
		rn_mp_pack_str(pk, "removing");
		pack_i32s(pk, p->removing, p->n_removing);
	}
}

void
ctl_rec_config(struct ctl_batch *b, int resource_type,
    const char *resource_name, size_t rlen, const char *key,
    const char *value)
{
	rec_begin(b, CTL_REC_CONFIG, 4);
	rn_mp_pack_str(&b->pk, "resource_type");
	msgpack_pack_int(&b->pk, resource_type);
	rn_mp_pack_str(&b->pk, "resource_name");
	ctl_mp_str(&b->pk, resource_name, rlen);
	rn_mp_pack_str(&b->pk, "key");
	rn_mp_pack_str(&b->pk, key);
	rn_mp_pack_str(&b->pk, "value");
	if (value != NULL)
		rn_mp_pack_str(&b->pk, value);
	else
		msgpack_pack_nil(&b->pk);
}

void
ctl_rec_acl(struct ctl_batch *b, const struct ctl_acl *a)
{
	rec_begin(b, CTL_REC_ACL, 8);
	rn_mp_pack_str(&b->pk, "id");
	ctl_mp_bin16(&b->pk, a->id);
	rn_mp_pack_str(&b->pk, "resource_type");
	msgpack_pack_int(&b->pk, a->b.resource);
	rn_mp_pack_str(&b->pk, "resource_name");
	rn_mp_pack_str(&b->pk, a->b.name);
	rn_mp_pack_str(&b->pk, "pattern_type");
	msgpack_pack_int(&b->pk, a->b.pattern);
	rn_mp_pack_str(&b->pk, "principal");
	rn_mp_pack_str(&b->pk, a->b.principal);
	rn_mp_pack_str(&b->pk, "host");
	rn_mp_pack_str(&b->pk, a->b.host);
	rn_mp_pack_str(&b->pk, "operation");
	msgpack_pack_int(&b->pk, a->b.op);
	rn_mp_pack_str(&b->pk, "permission_type");
	msgpack_pack_int(&b->pk, a->b.perm);
}

void
ctl_rec_remove_acl(struct ctl_batch *b, const uint8_t id[16])
{
	rec_begin(b, CTL_REC_REMOVE_ACL, 1);
	rn_mp_pack_str(&b->pk, "id");
	ctl_mp_bin16(&b->pk, id);
}

static void
pack_entity_part(msgpack_packer *pk, const char *type, int8_t kind,
    const char *name)
{
	msgpack_pack_array(pk, 2);
	rn_mp_pack_str(pk, type);
	if (kind == RN_CQ_NAME)
		rn_mp_pack_str(pk, name);
	else
		msgpack_pack_nil(pk);
}

void
ctl_rec_client_quota(struct ctl_batch *b, const struct rn_cquota *q, bool set)
{
	rec_begin(b, CTL_REC_CLIENT_QUOTA, 3);
	rn_mp_pack_str(&b->pk, "entity");
	msgpack_pack_array(&b->pk, (q->ukind != RN_CQ_NONE) +
	    (q->ckind != RN_CQ_NONE));
	if (q->ukind != RN_CQ_NONE)
		pack_entity_part(&b->pk, "user", q->ukind, q->user);
	if (q->ckind != RN_CQ_NONE)
		pack_entity_part(&b->pk, "client-id", q->ckind, q->client);
	rn_mp_pack_str(&b->pk, "key");
	rn_mp_pack_str(&b->pk, rn_cq_key_names[q->key]);
	rn_mp_pack_str(&b->pk, "value");
	if (set)
		msgpack_pack_double(&b->pk, q->value);
	else
		msgpack_pack_nil(&b->pk);
}

void
ctl_rec_scram(struct ctl_batch *b, const struct rn_scram_cred *s)
{
	size_t kl = rn_scram_key_len(s->mech);

	rec_begin(b, CTL_REC_SCRAM, 6);
	rn_mp_pack_str(&b->pk, "name");
	rn_mp_pack_str(&b->pk, s->name);
	rn_mp_pack_str(&b->pk, "mechanism");
	msgpack_pack_int(&b->pk, s->mech);
	rn_mp_pack_str(&b->pk, "salt");
	msgpack_pack_bin(&b->pk, s->salt_len);
	msgpack_pack_bin_body(&b->pk, s->salt, s->salt_len);
	rn_mp_pack_str(&b->pk, "stored_key");
	msgpack_pack_bin(&b->pk, kl);
	msgpack_pack_bin_body(&b->pk, s->stored_key, kl);
	rn_mp_pack_str(&b->pk, "server_key");
	msgpack_pack_bin(&b->pk, kl);
	msgpack_pack_bin_body(&b->pk, s->server_key, kl);
	rn_mp_pack_str(&b->pk, "iterations");
	msgpack_pack_int32(&b->pk, s->iterations);
}

void
ctl_rec_remove_scram(struct ctl_batch *b, const char *name, size_t len,
    int mech)
{
	rec_begin(b, CTL_REC_REMOVE_SCRAM, 2);
	rn_mp_pack_str(&b->pk, "name");
	ctl_mp_str(&b->pk, name, len);
	rn_mp_pack_str(&b->pk, "mechanism");
	msgpack_pack_int(&b->pk, mech);
}

void
ctl_rec_remove_topic(struct ctl_batch *b, const uint8_t id[16])
{
	rec_begin(b, CTL_REC_REMOVE_TOPIC, 1);
	rn_mp_pack_str(&b->pk, "id");
	ctl_mp_bin16(&b->pk, id);
}

void
ctl_rec_broker_dirs(struct ctl_batch *b, int32_t id,
    const uint8_t (*dirs)[16], int n)
{
	int i;

	rec_begin(b, CTL_REC_BROKER_CHANGE, 2);
	rn_mp_pack_str(&b->pk, "id");
	msgpack_pack_int32(&b->pk, id);
	rn_mp_pack_str(&b->pk, "log_dirs");
	msgpack_pack_array(&b->pk, (size_t)n);
	for (i = 0; i < n; i++)
		ctl_mp_bin16(&b->pk, dirs[i]);
}

void
ctl_rec_broker_change(struct ctl_batch *b, int32_t id, int fenced,
    int shutdown)
{
	msgpack_packer *pk = &b->pk;

	rec_begin(b, CTL_REC_BROKER_CHANGE, 1 + (fenced >= 0) +
	    (shutdown >= 0));
	rn_mp_pack_str(pk, "id");
	msgpack_pack_int32(pk, id);
	if (fenced >= 0) {
		rn_mp_pack_str(pk, "fenced");
		if (fenced)
			msgpack_pack_true(pk);
		else
			msgpack_pack_false(pk);
	}
	if (shutdown >= 0) {
		rn_mp_pack_str(pk, "in_controlled_shutdown");
		if (shutdown)
			msgpack_pack_true(pk);
		else
			msgpack_pack_false(pk);
	}
}

void
ctl_rec_broker_absent(struct ctl_batch *b, int32_t id, int64_t since_ms)
{
	msgpack_packer *pk = &b->pk;

	rec_begin(b, CTL_REC_BROKER_CHANGE, 3);
	rn_mp_pack_str(pk, "id");
	msgpack_pack_int32(pk, id);
	rn_mp_pack_str(pk, "fenced");
	msgpack_pack_true(pk);
	rn_mp_pack_str(pk, "absent_since");
	msgpack_pack_int64(pk, since_ms);
}

void
ctl_rec_unregister_broker(struct ctl_batch *b, int32_t id)
{
	rec_begin(b, CTL_REC_UNREGISTER_BROKER, 1);
	rn_mp_pack_str(&b->pk, "id");
	msgpack_pack_int32(&b->pk, id);
}

void
ctl_rec_partition_change(struct ctl_batch *b, const uint8_t topic_id[16],
    int32_t partition, int32_t leader, const int32_t *isr, int32_t n_isr,
    int32_t leader_epoch, int32_t partition_epoch)
{
	msgpack_packer *pk = &b->pk;

	rec_begin(b, CTL_REC_PARTITION_CHANGE, 6);
	rn_mp_pack_str(pk, "topic_id");
	ctl_mp_bin16(pk, topic_id);
	rn_mp_pack_str(pk, "partition");
	msgpack_pack_int32(pk, partition);
	rn_mp_pack_str(pk, "leader");
	msgpack_pack_int32(pk, leader);
	rn_mp_pack_str(pk, "isr");
	pack_i32s(pk, isr, n_isr);
	rn_mp_pack_str(pk, "leader_epoch");
	msgpack_pack_int32(pk, leader_epoch);
	rn_mp_pack_str(pk, "partition_epoch");
	msgpack_pack_int32(pk, partition_epoch);
}
