/*
 * A compacted topic keeps the last record of each key, so a record
 * without one has no place in it: Produce refuses the partition's batches
 * with INVALID_RECORD, as Kafka does. Compressed batches are opened for
 * the check (one scratch buffer per worker, kept).
 */
#include "autoconf.h"

#include <errno.h>
#include <string.h>

#include "storage/batch.h"
#include "storage/codec.h"
#include "workers/network/net_int.h"

/* a batch opening to more than this is refused (a compression bomb) */
#define KEYLESS_MAX_BODY (64 * 1024 * 1024)
#define KEYLESS_KEEP (8 * 1024 * 1024)	/* scratch kept between requests */

static struct rn_buf scratch;

bool
net_policy_compact(struct net *n, const struct rn_mdv_topic *t)
{
	char policy[64];
	const char *p;

	rn_part_config_str(&n->view, t, n->cfg, "cleanup.policy", policy,
	    sizeof(policy));
	for (p = strstr(policy, "compact"); p != NULL;
	    p = strstr(p + 1, "compact"))
		if ((p == policy || p[-1] == ',' || p[-1] == ' ') &&
		    (p[7] == '\0' || p[7] == ',' || p[7] == ' '))
			return true;
	return false;
}

static int
keyless_scan(const uint8_t *buf, size_t len)
{
	size_t off = 0;

	while (len - off >= RN_BATCH_HEADER_SIZE) {
		struct rn_batch_header h;
		struct rn_record_view rec;
		const uint8_t *body;
		size_t size, blen, pos = 0;
		int rc;

		rn_batch_parse_header(buf + off, &h);
		size = rn_batch_total_size(&h);
		if (h.batch_length < RN_BATCH_HEADER_SIZE - RN_BATCH_LOG_OVERHEAD ||
		    size > len - off)
			return 0;	/* left to the append's validation */
		body = buf + off + RN_BATCH_HEADER_SIZE;
		blen = size - RN_BATCH_HEADER_SIZE;
		if (rn_batch_compression(&h) != RN_COMPRESSION_NONE) {
			if (rn_codec_decompress(rn_batch_compression(&h), body,
			    blen, &scratch, KEYLESS_MAX_BODY) != 0)
				return -EBADMSG;
			body = scratch.p;
			blen = scratch.len;
		}
		while ((rc = rn_records_next(&h, body, blen, &pos, &rec)) == 1)
			if (rec.key_len < 0)
				return 1;
		if (rc < 0)
			return -EBADMSG;
		off += size;
	}
	return 0;
}

int
net_keyless_record(const uint8_t *buf, size_t len)
{
	int rc = keyless_scan(buf, len);

	if (scratch.cap > KEYLESS_KEEP)
		rn_buf_free(&scratch);
	return rc;
}
