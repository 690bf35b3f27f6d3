/*
 * Metadata records: the entries of the metadata log. Each raft entry is a
 * msgpack array of records applied together; each record is a map
 * {"t": type name, ...} named after Kafka's metadata records:
 *
 *   ClusterId      {cluster_id: str (Uuid base64url), metadata_version: int}
 *   FeatureLevel   {name: str, level: int}
 *   RegisterBroker {id, incarnation: bin16, listeners: [{name,host,port}],
 *                   rack: str|nil, log_dirs: [bin16], fenced: bool
 *                   [, epoch: int (snapshots only)]}
 *   Topic          {name: str, id: bin16}
 *   Partition      {topic_id: bin16, partition, replicas: [], isr: [],
 *                   leader, leader_epoch, partition_epoch,
 *                   directories: [bin16] [, slots: [] (snapshots only)]
                   [, adding: [], removing: [] (a reassignment in
                   progress: absent when none)]}
 *   Config         {resource_type: 2 topic | 4 broker, resource_name: str,
 *                   key: str, value: str|nil (nil deletes)}
 *   RemoveTopic    {id: bin16}
 *   BrokerChange   {id, fenced: bool (absent: unchanged),
 *                   in_controlled_shutdown: bool (absent: unchanged)
 *                   [, absent_since: int (wall ms its session expired)]}
 *   UnregisterBroker {id}
 *   PartitionChange {topic_id: bin16, partition, leader, isr: [],
 *                   leader_epoch, partition_epoch} (replicas unchanged)
 *   AccessControlEntry {id: bin16, resource_type, resource_name,
 *                   pattern_type, principal, host, operation,
 *                   permission_type} (Kafka's codes, common/acl.h)
 *   RemoveAccessControlEntry {id}
 *   UserScramCredential {name: str, mechanism: 1 SCRAM-SHA-256 |
 *                   2 SCRAM-SHA-512, salt: bin, stored_key: bin,
 *                   server_key: bin, iterations} (a user's credential for
 *                   one mechanism, set or replaced; never the password)
 *   RemoveUserScramCredential {name, mechanism}
 *   ClientQuota    {entity: [[type "user"|"client-id", name|nil (nil:
 *                   <default>)]], key: str, value: float|nil (nil removes)}
 *
 * RegisterBroker in snapshots also carries in_controlled_shutdown and
 * absent_since. A broker stays in the state (the observed brokers) until
 * an UnregisterBroker record removes it.
 */
#ifndef RN_CTL_RECORDS_H
#define RN_CTL_RECORDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>

#include "workers/controller/state.h"

enum ctl_rec_type {
	CTL_REC_UNKNOWN = 0,
	CTL_REC_CLUSTER_ID,
	CTL_REC_FEATURE_LEVEL,
	CTL_REC_REGISTER_BROKER,
	CTL_REC_TOPIC,
	CTL_REC_PARTITION,
	CTL_REC_CONFIG,
	CTL_REC_REMOVE_TOPIC,
	CTL_REC_BROKER_CHANGE,
	CTL_REC_UNREGISTER_BROKER,
	CTL_REC_PARTITION_CHANGE,
	CTL_REC_ACL,
	CTL_REC_REMOVE_ACL,
	CTL_REC_SCRAM,
	CTL_REC_REMOVE_SCRAM,
	CTL_REC_CLIENT_QUOTA,
};

enum ctl_rec_type ctl_rec_type_of(const msgpack_object *rec);
const char *ctl_rec_type_name(enum ctl_rec_type t);

/* A batch of records being built; finish() yields one raft entry. */
struct ctl_batch {
	msgpack_sbuffer sb;
	msgpack_packer pk;
	unsigned n;
};

void ctl_batch_init(struct ctl_batch *b);
void ctl_batch_free(struct ctl_batch *b);
/* The entry bytes (array header + records), malloc'd; NULL on ENOMEM. */
void *ctl_batch_finish(const struct ctl_batch *b, size_t *len);

void ctl_rec_cluster_id(struct ctl_batch *b, const char *cluster_id,
    int metadata_version);
void ctl_rec_feature_level(struct ctl_batch *b, const char *name,
    int level);
void ctl_rec_register_broker(struct ctl_batch *b, const struct ctl_broker *br,
    bool with_epoch);
void ctl_rec_topic(struct ctl_batch *b, const char *name, size_t len,
    const uint8_t id[16]);
void ctl_rec_partition(struct ctl_batch *b, const uint8_t topic_id[16],
    int32_t partition, const struct ctl_partition *p, bool with_slots);
/* value NULL deletes the key. */
void ctl_rec_config(struct ctl_batch *b, int resource_type,
    const char *resource_name, size_t rlen, const char *key,
    const char *value);
void ctl_rec_remove_topic(struct ctl_batch *b, const uint8_t id[16]);
/* A broker's log dirs now online, after some failed. */
void ctl_rec_broker_dirs(struct ctl_batch *b, int32_t id,
    const uint8_t (*dirs)[16], int n);
/* fenced / shutdown: 1 set, 0 clear, -1 leave as is. */
void ctl_rec_broker_change(struct ctl_batch *b, int32_t id, int fenced,
    int shutdown);
/* Fenced because its session expired at since_ms (wall clock). */
void ctl_rec_broker_absent(struct ctl_batch *b, int32_t id, int64_t since_ms);
void ctl_rec_unregister_broker(struct ctl_batch *b, int32_t id);
void ctl_rec_partition_change(struct ctl_batch *b, const uint8_t topic_id[16],
    int32_t partition, int32_t leader, const int32_t *isr, int32_t n_isr,
    int32_t leader_epoch, int32_t partition_epoch);

void ctl_rec_acl(struct ctl_batch *b, const struct ctl_acl *a);
void ctl_rec_remove_acl(struct ctl_batch *b, const uint8_t id[16]);
void ctl_rec_scram(struct ctl_batch *b, const struct rn_scram_cred *s);
void ctl_rec_remove_scram(struct ctl_batch *b, const char *name, size_t len,
    int mech);
/* set: the value; else the key is removed from the entity. */
struct rn_cquota;
void ctl_rec_client_quota(struct ctl_batch *b, const struct rn_cquota *q,
    bool set);

/* Uuid helpers on raw bytes (see state.h on why not struct rn_uuid). */
int ctl_uuid_random(uint8_t out[16]);
void ctl_uuid_str(const uint8_t id[16], char out[23]);
int ctl_uuid_parse(const char *s, uint8_t out[16]);
bool ctl_uuid_is_zero(const uint8_t id[16]);

/* msgpack helpers shared by the record and image code. */
void ctl_mp_str(msgpack_packer *pk, const char *s, size_t len);
void ctl_mp_bin16(msgpack_packer *pk, const uint8_t id[16]);
bool ctl_mp_int(const msgpack_object *o, int64_t *out);
/* NUL-terminated copy; false if absent, not a string, too long or
 * holding a NUL. */
bool ctl_mp_strcpy(const msgpack_object *map, const char *key, char *out,
    size_t outlen);
bool ctl_mp_bin16_get(const msgpack_object *map, const char *key,
    uint8_t out[16]);

#endif /* RN_CTL_RECORDS_H */
