/* RecordBatch v2: builder/validator round trip, error kinds, assignment. */
#include "storage/batch.h"
#include "storage/bytes.h"
#include "storage/crc32c.h"
#include "tests/lib/tap.h"

static void
recrc(uint8_t *b)
{
	size_t size = (size_t)(int32_t)rn_get_be32(b + RN_BATCH_OFF_LENGTH) + 12;

	rn_put_be32(b + RN_BATCH_OFF_CRC, rn_batch_compute_crc(b, size));
}

static ssize_t
build_simple(uint8_t *buf, size_t cap, int n, int64_t ts0)
{
	struct rn_header_in hdrs[2] = {
		{ "h1", 2, "v1", 2 },
		{ "h2", 2, NULL, -1 },
	};
	struct rn_record_in recs[64];
	char keys[64][16], vals[64][64];
	struct rn_batch_build_opts o;

	rn_batch_build_opts_default(&o);
	for (int i = 0; i < n; i++) {
		snprintf(keys[i], sizeof(keys[i]), "key-%d", i);
		snprintf(vals[i], sizeof(vals[i]), "value-%d-%0*d", i, i % 40, 7);
		recs[i] = (struct rn_record_in){
			.key = i % 5 == 4 ? NULL : keys[i],
			.key_len = i % 5 == 4 ? -1 : (int32_t)strlen(keys[i]),
			.value = vals[i],
			.value_len = (int32_t)strlen(vals[i]),
			.timestamp = ts0 + i * 3 - (i == 2 ? 10 : 0),
			.headers = i % 2 ? hdrs : NULL,
			.nheaders = i % 2 ? 2 : 0,
		};
	}
	return rn_batch_build(buf, cap, &o, recs, n);
}

static int
validate(const uint8_t *b, size_t len, int64_t max, unsigned flags)
{
	struct rn_batch_limits lim = { flags ? flags : RN_BATCH_V_PRODUCE, max };
	struct rn_batch_summary s;

	return rn_batch_validate(b, len, &lim, &s);
}

int
main(void)
{
	uint8_t buf[8192], copy[8192], payload[16384];
	struct rn_batch_summary sum;
	struct rn_batch_limits lim = { RN_BATCH_V_PRODUCE, 1048588 };
	struct rn_batch_header h;
	struct rn_record_view rv;
	ssize_t n, n2;
	size_t pos, plen;
	int count, good;

	plan(53);

	/* Builder and validator agree. */
	n = build_simple(buf, sizeof(buf), 10, 1700000000000LL);
	ok(n > RN_BATCH_HEADER_SIZE, "built a 10-record batch (%zd bytes)", n);
	is_int(build_simple(NULL, 0, 10, 1700000000000LL), n, "size-only build matches");
	is_int(build_simple(buf, (size_t)n - 1, 10, 1700000000000LL), -ENOSPC,
	    "short buffer is -ENOSPC");
	n = build_simple(buf, sizeof(buf), 10, 1700000000000LL);
	is_int(rn_batch_validate(buf, (size_t)n, &lim, &sum), 0, "valid batch validates");
	is_int(sum.nbatches, 1, "one batch");
	is_int(sum.record_count, 10, "ten records");
	is_int(sum.max_timestamp, 1700000000027LL, "max timestamp from the records");
	is_int(sum.ts_mismatch, 0, "builder's maxTimestamp is right");
	rn_batch_parse_header(buf, &h);
	is_int(h.magic, 2, "magic 2");
	is_int(h.last_offset_delta, 9, "lastOffsetDelta = n - 1");
	is_int(h.producer_id, -1, "no producer id");
	is_int(h.crc, rn_crc32c(0, buf + 21, (size_t)n - 21), "crc covers attributes..end");

	/* Walk the records back. */
	pos = 0;
	count = 0;
	good = 1;
	while (rn_batch_next_record(buf, (size_t)n, &pos, &rv) == 1) {
		char key[16], val[64];

		snprintf(key, sizeof(key), "key-%d", count);
		snprintf(val, sizeof(val), "value-%d-%0*d", count, count % 40, 7);
		if (rv.offset != count ||
		    (count % 5 == 4 ? rv.key_len != -1 || rv.key != NULL :
		    rv.key_len != (int32_t)strlen(key) || memcmp(rv.key, key, strlen(key))) ||
		    rv.value_len != (int32_t)strlen(val) || memcmp(rv.value, val, strlen(val)) ||
		    rv.nheaders != (count % 2 ? 2 : 0) ||
		    rv.timestamp != 1700000000000LL + count * 3 - (count == 2 ? 10 : 0))
			good = 0;
		count++;
	}
	is_int(count, 10, "iterated 10 records");
	ok(good, "keys, values, headers and timestamps round-trip");

	/* Corruptions. */
	memcpy(copy, buf, (size_t)n);
	copy[n - 3] ^= 0x40;
	is_int(validate(copy, (size_t)n, 0, 0), RN_ERR_CORRUPT_MESSAGE, "flipped byte: CRC mismatch");
	memcpy(copy, buf, (size_t)n);
	copy[RN_BATCH_OFF_CRC] ^= 1;
	is_int(validate(copy, (size_t)n, 0, 0), RN_ERR_CORRUPT_MESSAGE, "bad stored crc");
	memcpy(copy, buf, (size_t)n);
	copy[RN_BATCH_OFF_MAGIC] = 1;
	is_int(validate(copy, (size_t)n, 0, 0), RN_ERR_UNSUPPORTED_FOR_MESSAGE_FORMAT, "magic 1 unsupported");
	copy[RN_BATCH_OFF_MAGIC] = 0;
	is_int(validate(copy, (size_t)n, 0, 0), RN_ERR_UNSUPPORTED_FOR_MESSAGE_FORMAT, "magic 0 unsupported");
	copy[RN_BATCH_OFF_MAGIC] = 7;
	is_int(validate(copy, (size_t)n, 0, 0), RN_ERR_CORRUPT_MESSAGE, "magic 7 corrupt");
	is_int(validate(buf, (size_t)n - 1, 0, 0), RN_ERR_CORRUPT_MESSAGE, "truncated batch");
	is_int(validate(buf, 40, 0, 0), RN_ERR_CORRUPT_MESSAGE, "truncated header");
	is_int(validate(buf, 0, 0, 0), RN_ERR_CORRUPT_MESSAGE, "empty payload");
	memcpy(copy, buf, (size_t)n);
	rn_put_be32(copy + RN_BATCH_OFF_LENGTH, 20);
	is_int(validate(copy, (size_t)n, 0, 0), RN_ERR_CORRUPT_MESSAGE, "batchLength below header size");

	memcpy(copy, buf, (size_t)n);
	rn_put_be32(copy + RN_BATCH_OFF_RECORD_COUNT, 11);
	recrc(copy);
	is_int(validate(copy, (size_t)n, 0, 0), RN_ERR_INVALID_RECORD, "count != lastOffsetDelta + 1");
	rn_put_be32(copy + RN_BATCH_OFF_LAST_OFFSET_DELTA, 10);
	recrc(copy);
	is_int(validate(copy, (size_t)n, 0, 0), RN_ERR_INVALID_RECORD, "count larger than the records present");
	rn_put_be32(copy + RN_BATCH_OFF_RECORD_COUNT, 9);
	rn_put_be32(copy + RN_BATCH_OFF_LAST_OFFSET_DELTA, 8);
	recrc(copy);
	is_int(validate(copy, (size_t)n, 0, 0), RN_ERR_INVALID_RECORD, "count smaller than the records present");
	rn_put_be32(copy + RN_BATCH_OFF_RECORD_COUNT, (uint32_t)-1);
	recrc(copy);
	is_int(validate(copy, (size_t)n, 0, 0), RN_ERR_INVALID_RECORD, "negative record count");

	/* First record's offset delta (byte after length, attrs, ts delta) = 1. */
	memcpy(copy, buf, (size_t)n);
	copy[RN_BATCH_HEADER_SIZE + 3] = 2;	/* zigzag(1) */
	recrc(copy);
	is_int(validate(copy, (size_t)n, 0, 0), RN_ERR_INVALID_RECORD, "offset deltas must be 0..n-1");
	memcpy(copy, buf, (size_t)n);
	copy[RN_BATCH_HEADER_SIZE] = 0x7e;	/* first record claims 63 bytes */
	recrc(copy);
	is_int(validate(copy, (size_t)n, 0, 0), RN_ERR_INVALID_RECORD, "record length framing");

	is_int(validate(buf, (size_t)n, n - 1, 0), RN_ERR_MESSAGE_TOO_LARGE, "batch over max.message.bytes");
	is_int(validate(buf, (size_t)n, n, 0), 0, "batch at max.message.bytes is fine");

	memcpy(copy, buf, (size_t)n);
	rn_put_be16(copy + RN_BATCH_OFF_ATTRIBUTES, RN_BATCH_ATTR_CONTROL);
	recrc(copy);
	is_int(validate(copy, (size_t)n, 0, 0), RN_ERR_INVALID_RECORD, "clients may not write control batches");
	is_int(validate(copy, (size_t)n, 0, RN_BATCH_V_PRODUCE | RN_BATCH_V_ALLOW_CONTROL), 0,
	    "internal writers may");
	memcpy(copy, buf, (size_t)n);
	rn_put_be64(copy + RN_BATCH_OFF_PRODUCER_ID, 42);
	recrc(copy);
	is_int(validate(copy, (size_t)n, 0, 0), RN_ERR_INVALID_RECORD, "producer id without sequence");
	rn_put_be32(copy + RN_BATCH_OFF_BASE_SEQUENCE, 0);
	recrc(copy);
	is_int(validate(copy, (size_t)n, 0, 0), 0, "idempotent batch with sequence 0");

	/* Compressed batches: only the header and CRC are checked, body untouched. */
	memcpy(copy, buf, (size_t)n);
	rn_put_be16(copy + RN_BATCH_OFF_ATTRIBUTES, RN_COMPRESSION_ZSTD);
	memset(copy + RN_BATCH_HEADER_SIZE, 0xa5, (size_t)n - RN_BATCH_HEADER_SIZE);
	recrc(copy);
	is_int(validate(copy, (size_t)n, 0, 0), 0, "opaque compressed body is accepted");
	rn_put_be16(copy + RN_BATCH_OFF_ATTRIBUTES, 6);
	recrc(copy);
	is_int(validate(copy, (size_t)n, 0, 0), RN_ERR_CORRUPT_MESSAGE, "unknown codec 6");

	/* Several batches in one payload, then leader assignment. */
	plen = 0;
	for (int i = 0; i < 3; i++) {
		n2 = build_simple(payload + plen, sizeof(payload) - plen, 3 + i, 1000 + i);
		plen += (size_t)n2;
	}
	is_int(rn_batch_validate(payload, plen, &lim, &sum), 0, "three-batch payload validates");
	is_int(sum.nbatches, 3, "three batches");
	is_int(sum.offset_count, 12, "3 + 4 + 5 offsets");
	is_int(validate(payload, plen - 5, 0, 0), RN_ERR_CORRUPT_MESSAGE, "torn last batch of a payload");

	is_int(rn_batch_assign(payload, plen, 500, 7, 1234567, 0), 512, "assign returns the next offset");
	is_int(rn_batch_validate(payload, plen, &lim, &sum), 0, "CRC still valid after LogAppendTime rewrite");
	good = 1;
	for (size_t off = 0, expect = 500; off < plen; off += rn_batch_total_size(&h)) {
		rn_batch_parse_header(payload + off, &h);
		if (h.base_offset != (int64_t)expect || h.partition_leader_epoch != 7 ||
		    !(h.attributes & RN_BATCH_ATTR_LOG_APPEND_TIME) ||
		    h.max_timestamp != 1234567 ||
		    h.crc != rn_batch_compute_crc(payload + off, rn_batch_total_size(&h)))
			good = 0;
		expect += (size_t)h.last_offset_delta + 1;
	}
	ok(good, "offsets, epoch, LogAppendTime bit, maxTimestamp and CRC set on every batch");
	pos = 0;
	rn_batch_next_record(payload, plen, &pos, &rv);
	is_int(rv.timestamp, 1234567, "records report the log append time");

	/* Back to CreateTime; a lying maxTimestamp gets corrected. */
	rn_put_be64(payload + RN_BATCH_OFF_MAX_TIMESTAMP, 99);
	recrc(payload);
	rn_put_be16(payload + RN_BATCH_OFF_ATTRIBUTES, 0);
	recrc(payload);
	is_int(rn_batch_validate(payload, plen, &lim, &sum), 0, "still valid");
	is_int(sum.ts_mismatch, 1, "mismatched maxTimestamp noticed");
	rn_batch_assign(payload, plen, 0, 8, -1, 1);
	rn_batch_parse_header(payload, &h);
	is_int(h.max_timestamp, 1003, "CreateTime maxTimestamp recomputed from records");
	is_int(rn_batch_validate(payload, plen, &lim, &sum), 0, "CRC valid after the fix");
	rn_batch_parse_header(payload + rn_batch_total_size(&h), &h);
	ok(!(h.attributes & RN_BATCH_ATTR_LOG_APPEND_TIME), "CreateTime clears the LogAppendTime bit");

	is_int(rn_storage_kafka_error(RN_ERR_CORRUPT_MESSAGE), 2, "CORRUPT_MESSAGE = 2");
	is_int(rn_storage_kafka_error(RN_ERR_INVALID_RECORD), 87, "INVALID_RECORD = 87");
	is_int(rn_storage_kafka_error(RN_ERR_MESSAGE_TOO_LARGE) * 100 +
	    rn_storage_kafka_error(RN_ERR_UNSUPPORTED_FOR_MESSAGE_FORMAT), 1043,
	    "MESSAGE_TOO_LARGE = 10, UNSUPPORTED_FOR_MESSAGE_FORMAT = 43");
	return done_testing();
}
