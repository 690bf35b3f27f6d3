/*
 * The metadata image body's encoder, beside its decoder (mdimage.c): one
 * msgpack map whose keys and order ipc/mdimage.h describes.
 */
#include "autoconf.h"

#include <string.h>

#include "common/ctlproto.h"
#include "ipc/mdimage_write.h"
#include "common/cquota.h"

static void
pack_bool(msgpack_packer *pk, bool b)
{
	if (b)
		msgpack_pack_true(pk);
	else
		msgpack_pack_false(pk);
}

static void
pack_bin16(msgpack_packer *pk, const uint8_t id[16])
{
	msgpack_pack_bin(pk, 16);
	msgpack_pack_bin_body(pk, id, 16);
}

/* Who leads and how far the image goes: a body's and a delta's alike. */
static void
pack_position(msgpack_packer *pk, const struct rn_mdimage_enc_head *h)
{
	rn_mp_pack_str(pk, "controller_id");
	msgpack_pack_int32(pk, h->controller_id);
	rn_mp_pack_str(pk, "epoch");
	msgpack_pack_uint64(pk, h->epoch);
	rn_mp_pack_str(pk, "offset");
	msgpack_pack_uint64(pk, h->offset);
}

void
rn_mdimage_enc_begin(struct rn_mdimage_enc *e, msgpack_sbuffer *sb,
    const struct rn_mdimage_enc_head *h)
{
	msgpack_packer *pk = &e->pk;

	msgpack_packer_init(pk, sb, msgpack_sbuffer_write);
	/* cluster_id, position (3), brokers, topics, broker_configs,
	 * node_configs, acls, scram, quotas */
	msgpack_pack_map(pk, 11);
	rn_mp_pack_str(pk, "cluster_id");
	rn_mp_pack_str(pk, h->cluster_id);
	pack_position(pk, h);
	rn_mp_pack_str(pk, "brokers");
	msgpack_pack_array(pk, (size_t)h->n_brokers);
}

void
rn_mdimage_enc_broker(struct rn_mdimage_enc *e,
    const struct rn_mdimage_enc_broker *b)
{
	msgpack_packer *pk = &e->pk;

	msgpack_pack_map(pk, 9);
	rn_mp_pack_str(pk, "id");
	msgpack_pack_int32(pk, b->id);
	rn_mp_pack_str(pk, "host");
	rn_mp_pack_str(pk, b->host);
	rn_mp_pack_str(pk, "port");
	msgpack_pack_uint16(pk, b->port);
	rn_mp_pack_str(pk, "rack");
	rn_mp_pack_nstr(pk, b->rack);
	rn_mp_pack_str(pk, "fenced");
	pack_bool(pk, b->fenced);
	rn_mp_pack_str(pk, "shutdown");
	pack_bool(pk, b->shutdown);
	rn_mp_pack_str(pk, "absent_since");
	msgpack_pack_int64(pk, b->absent_since_ms);
	rn_mp_pack_str(pk, "epoch");
	msgpack_pack_int64(pk, b->epoch);
	rn_mp_pack_str(pk, "listeners");
	msgpack_pack_array(pk, (size_t)b->n_listeners);
}

void
rn_mdimage_enc_listener(struct rn_mdimage_enc *e, const char *name,
    const char *host, uint16_t port)
{
	msgpack_packer *pk = &e->pk;

	msgpack_pack_map(pk, 3);
	rn_mp_pack_str(pk, "name");
	rn_mp_pack_str(pk, name);
	rn_mp_pack_str(pk, "host");
	rn_mp_pack_str(pk, host);
	rn_mp_pack_str(pk, "port");
	msgpack_pack_uint16(pk, port);
}

void
rn_mdimage_enc_topics(struct rn_mdimage_enc *e, int n_topics)
{
	rn_mp_pack_str(&e->pk, "topics");
	msgpack_pack_array(&e->pk, (size_t)n_topics);
}

void
rn_mdimage_enc_topic(struct rn_mdimage_enc *e, const char *name,
    const uint8_t id[16], bool internal, int n_configs)
{
	msgpack_packer *pk = &e->pk;

	msgpack_pack_map(pk, 5);
	rn_mp_pack_str(pk, "name");
	rn_mp_pack_str(pk, name);
	rn_mp_pack_str(pk, "id");
	pack_bin16(pk, id);
	rn_mp_pack_str(pk, "internal");
	pack_bool(pk, internal);
	rn_mp_pack_str(pk, "configs");
	msgpack_pack_map(pk, (size_t)n_configs);
}

void
rn_mdimage_enc_config(struct rn_mdimage_enc *e, const char *key,
    const char *value)
{
	rn_mp_pack_str(&e->pk, key);
	rn_mp_pack_str(&e->pk, value);
}

void
rn_mdimage_enc_partitions(struct rn_mdimage_enc *e, int32_t n_parts)
{
	rn_mp_pack_str(&e->pk, "partitions");
	msgpack_pack_array(&e->pk, (size_t)n_parts);
}

static void
pack_ids(msgpack_packer *pk, const int32_t *ids, int32_t n)
{
	int32_t i;

	msgpack_pack_array(pk, (size_t)n);
	for (i = 0; i < n; i++)
		msgpack_pack_int32(pk, ids[i]);
}

static bool
replica_down(struct rn_mdimage_enc *e, const struct rn_mdimage_enc_part *p,
    int32_t r)
{
	return e->offline(e->arg, p->replicas[r]) || (e->lost_dir != NULL &&
	    p->dirs != NULL && memcmp(p->dirs[r], e->lost_dir, 16) == 0);
}

/* The replicas on brokers unregistered or fenced, or in a lost dir. */
static void
pack_offline(struct rn_mdimage_enc *e, const struct rn_mdimage_enc_part *p)
{
	int32_t r, n_off = 0;

	for (r = 0; r < p->n_replicas; r++)
		if (replica_down(e, p, r))
			n_off++;
	msgpack_pack_array(&e->pk, (size_t)n_off);
	for (r = 0; r < p->n_replicas; r++)
		if (replica_down(e, p, r))
			msgpack_pack_int32(&e->pk, p->replicas[r]);
}

void
rn_mdimage_enc_partition(struct rn_mdimage_enc *e,
    const struct rn_mdimage_enc_part *p)
{
	msgpack_packer *pk = &e->pk;

	msgpack_pack_map(pk, 10);
	rn_mp_pack_str(pk, "p");
	msgpack_pack_int32(pk, p->p);
	rn_mp_pack_str(pk, "leader");
	msgpack_pack_int32(pk, p->leader);
	rn_mp_pack_str(pk, "epoch");
	msgpack_pack_int32(pk, p->leader_epoch);
	rn_mp_pack_str(pk, "pepoch");
	msgpack_pack_int32(pk, p->partition_epoch);
	rn_mp_pack_str(pk, "replicas");
	pack_ids(pk, p->replicas, p->n_replicas);
	rn_mp_pack_str(pk, "isr");
	pack_ids(pk, p->isr, p->n_isr);
	rn_mp_pack_str(pk, "offline");
	pack_offline(e, p);
	rn_mp_pack_str(pk, "slot");
	msgpack_pack_int32(pk, p->slot);
	rn_mp_pack_str(pk, "dir");
	msgpack_pack_int32(pk, p->dir);
	rn_mp_pack_str(pk, "dir_id");
	pack_bin16(pk, p->dir_id);
}

void
rn_mdimage_enc_broker_configs(struct rn_mdimage_enc *e, int n)
{
	rn_mp_pack_str(&e->pk, "broker_configs");
	msgpack_pack_map(&e->pk, (size_t)n);
}

void
rn_mdimage_enc_node_configs(struct rn_mdimage_enc *e, int n)
{
	rn_mp_pack_str(&e->pk, "node_configs");
	msgpack_pack_map(&e->pk, (size_t)n);
}

void
rn_mdimage_enc_acls(struct rn_mdimage_enc *e, int n)
{
	rn_mp_pack_str(&e->pk, "acls");
	msgpack_pack_array(&e->pk, (size_t)n);
}

void
rn_mdimage_enc_acl(struct rn_mdimage_enc *e, const struct rn_acl *a)
{
	msgpack_packer *pk = &e->pk;

	msgpack_pack_array(pk, 7);
	msgpack_pack_int(pk, a->resource);
	rn_mp_pack_str(pk, a->name);
	msgpack_pack_int(pk, a->pattern);
	rn_mp_pack_str(pk, a->principal);
	rn_mp_pack_str(pk, a->host);
	msgpack_pack_int(pk, a->op);
	msgpack_pack_int(pk, a->perm);
}

void
rn_mdimage_enc_scram(struct rn_mdimage_enc *e, int n)
{
	rn_mp_pack_str(&e->pk, "scram");
	msgpack_pack_array(&e->pk, (size_t)n);
}

static void
pack_bin(msgpack_packer *pk, const uint8_t *p, size_t len)
{
	msgpack_pack_bin(pk, len);
	msgpack_pack_bin_body(pk, p, len);
}

void
rn_mdimage_enc_scram_cred(struct rn_mdimage_enc *e,
    const struct rn_scram_cred *s)
{
	msgpack_packer *pk = &e->pk;
	size_t kl = rn_scram_key_len(s->mech);

	msgpack_pack_array(pk, 6);
	rn_mp_pack_str(pk, s->name);
	msgpack_pack_int(pk, s->mech);
	msgpack_pack_int32(pk, s->iterations);
	pack_bin(pk, s->salt, s->salt_len);
	pack_bin(pk, s->stored_key, kl);
	pack_bin(pk, s->server_key, kl);
}

void
rn_mdimage_enc_quotas(struct rn_mdimage_enc *e, int n)
{
	rn_mp_pack_str(&e->pk, "quotas");
	msgpack_pack_array(&e->pk, (size_t)n);
}

void
rn_mdimage_enc_quota(struct rn_mdimage_enc *e, const struct rn_cquota *q)
{
	msgpack_packer *pk = &e->pk;

	msgpack_pack_array(pk, 6);
	msgpack_pack_int(pk, q->ukind);
	rn_mp_pack_str(pk, q->user);
	msgpack_pack_int(pk, q->ckind);
	rn_mp_pack_str(pk, q->client);
	rn_mp_pack_str(pk, rn_cq_key_names[q->key]);
	msgpack_pack_double(pk, q->value);
}

void
rn_mdimage_enc_delta(struct rn_mdimage_enc *e, msgpack_sbuffer *sb,
    const struct rn_mdimage_enc_head *h, int n_parts)
{
	msgpack_packer *pk = &e->pk;

	msgpack_packer_init(pk, sb, msgpack_sbuffer_write);
	msgpack_pack_map(pk, 4);
	pack_position(pk, h);
	rn_mp_pack_str(pk, "parts");
	msgpack_pack_array(pk, (size_t)n_parts);
}

void
rn_mdimage_enc_delta_partition(struct rn_mdimage_enc *e,
    const uint8_t topic_id[16], const struct rn_mdimage_enc_part *p)
{
	msgpack_pack_array(&e->pk, 2);
	pack_bin16(&e->pk, topic_id);
	rn_mdimage_enc_partition(e, p);
}
