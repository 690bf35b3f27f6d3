/*
 * __transaction_state records in Kafka's schemas (TransactionLogKey v0,
 * TransactionLogValue v0 written, v0 and v1 read), the transactional id
 * -> partition rule (the group's: abs(javaStringHash) % partitions), and
 * the transaction coordinator's settings. Pure functions.
 */
#ifndef RN_TXN_RECORDS_H
#define RN_TXN_RECORDS_H

#include <stdint.h>

#include "protocol/kcodec.h"

#define RN_TXN_TOPIC "__transaction_state"

/* TransactionState as the log stores it (Kafka's byte values). */
enum rn_txn_status {
	RN_TXN_EMPTY = 0,
	RN_TXN_ONGOING = 1,
	RN_TXN_PREPARE_COMMIT = 2,
	RN_TXN_PREPARE_ABORT = 3,
	RN_TXN_COMPLETE_COMMIT = 4,
	RN_TXN_COMPLETE_ABORT = 5,
	RN_TXN_DEAD = 6,
	RN_TXN_PREPARE_EPOCH_FENCE = 7,
};

/* Kafka's names ("Ongoing", ...), as ListTransactions filters them. */
const char *rn_txn_status_name(int s);
int rn_txn_status_parse(struct rn_kstr name);

struct rn_txn_topic_parts {
	struct rn_kstr topic;
	int32_t *parts;
	int32_t n_parts;
};

struct rn_txn_value {
	int64_t producer_id;
	int16_t producer_epoch;
	int32_t timeout_ms;
	int8_t status;
	struct rn_txn_topic_parts *topics;  /* NULL when none */
	int32_t n_topics;
	int64_t last_update_ms;
	int64_t start_ms;
};

void rn_txn_key(struct rn_kwriter *w, struct rn_kstr txn_id);
void rn_txn_value_write(struct rn_kwriter *w, const struct rn_txn_value *v);
/* 0 with the id, or -EBADMSG (another key version or bytes short). */
int rn_txn_key_decode(const void *buf, size_t len, struct rn_kstr *txn_id);
/* 0, or -EBADMSG; arrays come from a (bounded by the bytes read). */
int rn_txn_value_decode(const void *buf, size_t len, struct rn_arena *a,
    struct rn_txn_value *v);

struct rn_config;

/* The transaction coordinator's settings of the broker configuration. */
struct rn_txn_settings {
	int32_t partitions;        /* transaction.state.log.num.partitions */
	int16_t rf;                /* transaction.state.log.replication.factor */
	int32_t min_isr;           /* transaction.state.log.min.isr */
	int64_t segment_bytes;     /* transaction.state.log.segment.bytes */
	int64_t max_timeout_ms;    /* transaction.max.timeout.ms */
	int64_t id_expiration_ms;  /* transactional.id.expiration.ms */
	int64_t abort_interval_ms; /* transaction.abort.timed.out.transaction.cleanup.interval.ms */
	int64_t remove_interval_ms; /* transaction.remove.expired.transaction.cleanup.interval.ms */
};

void rn_txn_settings_load(const struct rn_config *cfg,
    struct rn_txn_settings *s);

#endif /* RN_TXN_RECORDS_H */
