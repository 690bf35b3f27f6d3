/*
 * Kafka RecordBatch v2 (message format v2): header parsing, validation of
 * produce payloads, leader-side offset/epoch/timestamp assignment, and a
 * builder for uncompressed batches.
 *
 * Layout (big-endian): baseOffset i64 | batchLength i32 | partitionLeaderEpoch
 * i32 | magic i8 | crc u32 | attributes i16 | lastOffsetDelta i32 |
 * baseTimestamp i64 | maxTimestamp i64 | producerId i64 | producerEpoch i16 |
 * baseSequence i32 | recordCount i32 | records. batchLength counts the bytes
 * after itself; the CRC32C covers attributes..end, so offsets, length and
 * epoch can be rewritten without touching it.
 */
#ifndef RN_STORAGE_BATCH_H
#define RN_STORAGE_BATCH_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "storage/errors.h"

#define RN_BATCH_HEADER_SIZE 61
#define RN_BATCH_LOG_OVERHEAD 12	/* baseOffset + batchLength */
#define RN_BATCH_MAGIC_V2 2

#define RN_BATCH_OFF_BASE_OFFSET 0
#define RN_BATCH_OFF_LENGTH 8
#define RN_BATCH_OFF_LEADER_EPOCH 12
#define RN_BATCH_OFF_MAGIC 16
#define RN_BATCH_OFF_CRC 17
#define RN_BATCH_OFF_ATTRIBUTES 21
#define RN_BATCH_OFF_LAST_OFFSET_DELTA 23
#define RN_BATCH_OFF_BASE_TIMESTAMP 27
#define RN_BATCH_OFF_MAX_TIMESTAMP 35
#define RN_BATCH_OFF_PRODUCER_ID 43
#define RN_BATCH_OFF_PRODUCER_EPOCH 51
#define RN_BATCH_OFF_BASE_SEQUENCE 53
#define RN_BATCH_OFF_RECORD_COUNT 57

#define RN_BATCH_ATTR_COMPRESSION_MASK 0x07
#define RN_BATCH_ATTR_LOG_APPEND_TIME 0x08
#define RN_BATCH_ATTR_TRANSACTIONAL 0x10
#define RN_BATCH_ATTR_CONTROL 0x20
#define RN_BATCH_ATTR_DELETE_HORIZON 0x40

enum rn_compression {
	RN_COMPRESSION_NONE = 0,
	RN_COMPRESSION_GZIP = 1,
	RN_COMPRESSION_SNAPPY = 2,
	RN_COMPRESSION_LZ4 = 3,
	RN_COMPRESSION_ZSTD = 4,
};

#define RN_NO_TIMESTAMP (-1LL)

struct rn_batch_header {
	int64_t base_offset;
	int32_t batch_length;
	int32_t partition_leader_epoch;
	int8_t magic;
	uint32_t crc;
	int16_t attributes;
	int32_t last_offset_delta;
	int64_t base_timestamp;
	int64_t max_timestamp;
	int64_t producer_id;
	int16_t producer_epoch;
	int32_t base_sequence;
	int32_t record_count;
};

/* Decode the fixed header; buf must hold RN_BATCH_HEADER_SIZE bytes. */
void rn_batch_parse_header(const void *buf, struct rn_batch_header *h);

static inline int64_t
rn_batch_last_offset(const struct rn_batch_header *h)
{
	return h->base_offset + h->last_offset_delta;
}

static inline size_t
rn_batch_total_size(const struct rn_batch_header *h)
{
	return (size_t)h->batch_length + RN_BATCH_LOG_OVERHEAD;
}

static inline int
rn_batch_compression(const struct rn_batch_header *h)
{
	return h->attributes & RN_BATCH_ATTR_COMPRESSION_MASK;
}

/* CRC32C of a whole batch's checksummed range (attributes..end). */
uint32_t rn_batch_compute_crc(const void *batch, size_t size);

/* Validation rules. */
#define RN_BATCH_V_PRODUCE 0x1	/* client data: strict offsets/counts, no control */
#define RN_BATCH_V_REPLICA 0x2	/* already-assigned offsets (follower fetch) */
#define RN_BATCH_V_ALLOW_CONTROL 0x4	/* internal writers (txn markers) */
#define RN_BATCH_V_COORDINATOR 0x8	/* the group coordinator's transactional
					 * offsets: a producer, no sequence */

struct rn_batch_limits {
	unsigned flags;
	int64_t max_batch_bytes;	/* max.message.bytes, per batch like Kafka; <=0: none */
};

struct rn_batch_summary {
	int nbatches;
	int64_t offset_count;	/* sum of lastOffsetDelta + 1 */
	int64_t record_count;	/* sum of recordCount */
	int64_t first_offset;	/* offsets as found in the buffer */
	int64_t last_offset;
	int64_t max_timestamp;	/* largest batch maxTimestamp */
	int ts_mismatch;	/* uncompressed batches whose maxTimestamp != max of records */
};

/*
 * Validate a payload of one or more batches in one pass: framing, magic,
 * CRC, counts, and for uncompressed batches every record's framing.
 * Returns 0 or RN_ERR_CORRUPT_MESSAGE / RN_ERR_INVALID_RECORD /
 * RN_ERR_MESSAGE_TOO_LARGE / RN_ERR_UNSUPPORTED_FOR_MESSAGE_FORMAT.
 */
int rn_batch_validate(const void *buf, size_t len,
    const struct rn_batch_limits *lim, struct rn_batch_summary *out);

/*
 * Leader-side assignment on a validated payload, in place: consecutive
 * offsets from base_offset, partitionLeaderEpoch = leader_epoch, and either
 * LogAppendTime (log_append_time_ms >= 0: set the timestamp-type bit and
 * maxTimestamp) or CreateTime (clear the bit; with fix_max_timestamp,
 * correct uncompressed batches' maxTimestamp from their records). The CRC is
 * patched only when attributes or maxTimestamp change.
 * Returns the offset after the last assigned one.
 */
int64_t rn_batch_assign(void *buf, size_t len, int64_t base_offset,
    int32_t leader_epoch, int64_t log_append_time_ms, int fix_max_timestamp);

/* One record for the builder; lengths of -1 mean null. */
struct rn_header_in {
	const void *key;
	int32_t key_len;
	const void *value;
	int32_t value_len;
};

struct rn_record_in {
	const void *key;
	int32_t key_len;
	const void *value;
	int32_t value_len;
	int64_t timestamp;
	const struct rn_header_in *headers;
	int32_t nheaders;
};

struct rn_batch_build_opts {
	int64_t base_offset;
	int32_t partition_leader_epoch;	/* -1 when unknown */
	int16_t attributes;	/* compression bits must be 0 */
	int64_t producer_id;	/* -1 for none */
	int16_t producer_epoch;
	int32_t base_sequence;
};

/* Options for a plain non-idempotent batch at offset 0. */
void rn_batch_build_opts_default(struct rn_batch_build_opts *o);

/*
 * Build an uncompressed v2 batch of n >= 1 records into buf. Returns its
 * size; with buf == NULL only computes the size. -ENOSPC if cap is short,
 * -EINVAL for bad arguments.
 */
ssize_t rn_batch_build(void *buf, size_t cap,
    const struct rn_batch_build_opts *o, const struct rn_record_in *recs,
    int n);

/* Decoded view of one record of an uncompressed batch (points into it). */
struct rn_record_view {
	int64_t offset;
	int64_t timestamp;
	int8_t attributes;
	const uint8_t *key;
	int32_t key_len;
	const uint8_t *value;
	int32_t value_len;
	const uint8_t *headers;	/* raw header block */
	int32_t nheaders;
	const uint8_t *raw;	/* the whole record, length prefix included */
	size_t raw_len;
	int64_t ts_delta;	/* as stored */
	int32_t offset_delta;
};

/*
 * Iterate records of a validated uncompressed batch: *pos starts at 0;
 * returns 1 with *rec filled, 0 at the end, or RN_ERR_INVALID_RECORD.
 */
int rn_batch_next_record(const void *batch, size_t size, size_t *pos,
    struct rn_record_view *rec);

/*
 * Iterate the records of a batch body given apart from its header (a
 * decompressed one): *pos starts at 0; returns 1 with *rec filled, 0 at
 * the end of buf, or RN_ERR_INVALID_RECORD.
 */
int rn_records_next(const struct rn_batch_header *h, const uint8_t *buf,
    size_t len, size_t *pos, struct rn_record_view *rec);

/*
 * Append one record to out (capacity checked by the caller: at most
 * rn_record_rebased_max(rec) bytes), its timestamp delta moved from
 * old_base_ts to new_base_ts, the same offset delta. Returns its size.
 */
size_t rn_record_rebased(uint8_t *out, const struct rn_record_view *rec,
    int64_t old_base_ts, int64_t new_base_ts);
size_t rn_record_rebased_max(const struct rn_record_view *rec);

#endif /* RN_STORAGE_BATCH_H */
