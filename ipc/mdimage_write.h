/*
 * Encoding the metadata image body (its shape is in ipc/mdimage.h, whose
 * reader decodes it). The controller walks its state and hands each part
 * over in the order below; the keys, their order and the map sizes are
 * written here only.
 *
 *   rn_mdimage_enc_begin          once (n_brokers given)
 *     rn_mdimage_enc_broker       per broker, then its n_listeners
 *       rn_mdimage_enc_listener
 *   rn_mdimage_enc_topics         once (n_topics)
 *     rn_mdimage_enc_topic        per topic, then its n_configs
 *       rn_mdimage_enc_config
 *     rn_mdimage_enc_partitions   per topic (n_parts), then
 *       rn_mdimage_enc_partition
 *   rn_mdimage_enc_broker_configs (n), then rn_mdimage_enc_config each
 *   rn_mdimage_enc_node_configs   (n), then rn_mdimage_enc_config each
 *   rn_mdimage_enc_acls           (n), then rn_mdimage_enc_acl each
 *   rn_mdimage_enc_scram          (n), then rn_mdimage_enc_scram_cred each
 *   rn_mdimage_enc_quotas         (n), then rn_mdimage_enc_quota each
 *
 * A delta (partition changes only; the head's cluster id and broker
 * count are not used):
 *   rn_mdimage_enc_delta          once (n_parts)
 *     rn_mdimage_enc_delta_partition  per partition
 */
#ifndef RN_MDIMAGE_WRITE_H
#define RN_MDIMAGE_WRITE_H

#include <stdbool.h>
#include <stdint.h>

#include <msgpack.h>

#include "common/acl.h"
#include "common/scram.h"

struct rn_mdimage_enc {
	msgpack_packer pk;
	/* a replica on a broker that is fenced or not registered */
	bool (*offline)(void *arg, int32_t broker);
	void *arg;
	/* a replica whose dir is this one is offline too (NULL: none) */
	const uint8_t *lost_dir;
};

struct rn_mdimage_enc_head {
	const char *cluster_id;
	int32_t controller_id;      /* -1 when no leader is known */
	uint64_t epoch;             /* raft term */
	uint64_t offset;            /* last applied log index */
	int n_brokers;
};

struct rn_mdimage_enc_broker {
	int32_t id;
	const char *host;           /* its first listener's */
	uint16_t port;
	const char *rack;           /* NULL: none */
	bool fenced;
	bool shutdown;              /* in controlled shutdown */
	int64_t absent_since_ms;    /* wall ms its session expired; 0: not */
	int64_t epoch;
	int n_listeners;
};

struct rn_mdimage_enc_part {
	int32_t p;
	int32_t leader, leader_epoch, partition_epoch;
	const int32_t *replicas, *isr;
	int32_t n_replicas, n_isr;
	int32_t slot, dir;          /* this node's, -1 when not local */
	const uint8_t *dir_id;      /* 16 bytes */
	const uint8_t (*dirs)[16];  /* per replica, NULL: unknown */
};

void rn_mdimage_enc_begin(struct rn_mdimage_enc *e, msgpack_sbuffer *sb,
    const struct rn_mdimage_enc_head *h);
void rn_mdimage_enc_broker(struct rn_mdimage_enc *e,
    const struct rn_mdimage_enc_broker *b);
void rn_mdimage_enc_listener(struct rn_mdimage_enc *e, const char *name,
    const char *host, uint16_t port);
void rn_mdimage_enc_topics(struct rn_mdimage_enc *e, int n_topics);
void rn_mdimage_enc_topic(struct rn_mdimage_enc *e, const char *name,
    const uint8_t id[16], bool internal, int n_configs);
void rn_mdimage_enc_config(struct rn_mdimage_enc *e, const char *key,
    const char *value);
void rn_mdimage_enc_partitions(struct rn_mdimage_enc *e, int32_t n_parts);
void rn_mdimage_enc_partition(struct rn_mdimage_enc *e,
    const struct rn_mdimage_enc_part *p);
void rn_mdimage_enc_broker_configs(struct rn_mdimage_enc *e, int n);
void rn_mdimage_enc_node_configs(struct rn_mdimage_enc *e, int n);
void rn_mdimage_enc_acls(struct rn_mdimage_enc *e, int n);
void rn_mdimage_enc_acl(struct rn_mdimage_enc *e, const struct rn_acl *a);
void rn_mdimage_enc_scram(struct rn_mdimage_enc *e, int n);
void rn_mdimage_enc_scram_cred(struct rn_mdimage_enc *e,
    const struct rn_scram_cred *s);
struct rn_cquota;
void rn_mdimage_enc_quotas(struct rn_mdimage_enc *e, int n);
void rn_mdimage_enc_quota(struct rn_mdimage_enc *e, const struct rn_cquota *q);
void rn_mdimage_enc_delta(struct rn_mdimage_enc *e, msgpack_sbuffer *sb,
    const struct rn_mdimage_enc_head *h, int n_parts);
void rn_mdimage_enc_delta_partition(struct rn_mdimage_enc *e,
    const uint8_t topic_id[16], const struct rn_mdimage_enc_part *p);

#endif /* RN_MDIMAGE_WRITE_H */
