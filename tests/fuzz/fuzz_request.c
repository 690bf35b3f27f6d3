/*
 * libFuzzer target for the request decoder, driven the way the network
 * worker drives it (workers/network/dispatch.c): request header, then the
 * body with the API's generated decoder into an arena capped at 4x the
 * frame + 4096. Every API of the codec table is decoded at every version
 * the codec knows, a superset of what a broker serves (the controller
 * decodes the rest).
 *
 * Input modes, chosen by the first byte so that a captured frame body is
 * a seed as it is (its first byte is the high byte of a small API key):
 *   0x00-0x7f  the whole input is one frame body (no size prefix);
 *   0x80-0xff  the rest is a stream of 4-byte size-prefixed frames, each
 *              checked with rn_kframe_size against 1 MiB like a socket
 *              read loop; a bad size ends the stream (the broker closes).
 *
 * Invariants that abort() (real bugs, not bad input):
 *   - a decoded request re-encodes without error, and decoding that
 *     encoding succeeds, consumes exactly its bytes and encodes to the
 *     same bytes again;
 *   - the request header round-trips the same way;
 *   - a Produce records slice that passes rn_batch_validate still passes
 *     after rn_batch_assign rewrote offsets, epoch and timestamps (the
 *     patched CRC must be right), and its uncompressed batches iterate to
 *     exactly recordCount records.
 * Sanitizers report the rest (overreads, UB, leaks).
 */
#include "autoconf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/kcodec.h"
#include "protocol/kframe.h"
#include "protocol/kmsg_gen.h"
#include "storage/batch.h"
#include "storage/bytes.h"
#include "tests/fuzz/fix_crcs.h"

#define FUZZ_MAX_FRAME (1 << 20)	/* socket.request.max.bytes-like cap */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Kept across inputs like a connection's arena; reset per frame. */
static struct rn_arena arena1, arena2;

static void
bug(const char *what, const struct rn_krequest_header *h, int rc)
{
	fprintf(stderr, "fuzz_request: %s (API %d v%d, rc %d)\n", what,
	    h ? h->api_key : -1, h ? h->api_version : -1, rc);
	abort();
}

/* ---- record batches ---------------------------------------------------- */


/* Walk the records of every uncompressed batch of a validated payload. */
static void
walk_records(const uint8_t *b, size_t len)
{
	size_t off = 0;

	while (len - off >= RN_BATCH_HEADER_SIZE) {
		struct rn_batch_header h;
		struct rn_record_view v;
		size_t pos = 0, sz;
		int64_t n = 0;
		int rc;

		rn_batch_parse_header(b + off, &h);
		sz = rn_batch_total_size(&h);
		if (rn_batch_compression(&h) == RN_COMPRESSION_NONE) {
			while ((rc = rn_batch_next_record(b + off, sz, &pos,
			    &v)) == 1)
				n++;
			if (rc != 0 || n != h.record_count)
				bug("validated batch does not iterate to "
				    "recordCount records", NULL, rc);
		}
		off += sz;
	}
}

static void
fuzz_records(const uint8_t *p, size_t len)
{
	static const struct rn_batch_limits lims[] = {
		{ RN_BATCH_V_PRODUCE, 0 },
		{ RN_BATCH_V_PRODUCE | RN_BATCH_V_ALLOW_CONTROL, 1 << 20 },
		{ RN_BATCH_V_REPLICA, 0 },
	};
	struct rn_batch_summary s, s2;
	uint8_t *copy;
	size_t i;

	for (i = 0; i < sizeof(lims) / sizeof(lims[0]); i++)
		(void)rn_batch_validate(p, len, &lims[i], &s);
	if (len == 0)
		return;
	copy = malloc(len);
	if (copy == NULL)
		return;
	memcpy(copy, p, len);
	fuzz_fix_crcs(copy, len);
	for (i = 0; i < sizeof(lims) / sizeof(lims[0]); i++) {
		if (rn_batch_validate(copy, len, &lims[i], &s) != 0)
			continue;
		walk_records(copy, len);
		/* leader assignment patches the CRC; the batch must stay valid */
		(void)rn_batch_assign(copy, len, 1000, 7, -1, 1);
		if (rn_batch_validate(copy, len, &lims[i], &s2) != 0)
			bug("batch invalid after rn_batch_assign (CreateTime)",
			    NULL, 0);
		(void)rn_batch_assign(copy, len, 5, 8, 1700000000000LL, 0);
		if (rn_batch_validate(copy, len, &lims[i], &s2) != 0)
			bug("batch invalid after rn_batch_assign "
			    "(LogAppendTime)", NULL, 0);
		if (s2.record_count != s.record_count ||
		    s2.nbatches != s.nbatches)
			bug("rn_batch_assign changed the batch count", NULL, 0);
		break;	/* the copy is rewritten now */
	}
	free(copy);
}

static void
fuzz_produce(const struct rn_ProduceRequest *pr)
{
	int32_t i, j;

	for (i = 0; i < pr->topic_data_count; i++)
		for (j = 0; j < pr->topic_data[i].partition_data_count; j++) {
			const struct rn_records *rec =
			    &pr->topic_data[i].partition_data[j].records;

			if (rec->len > 0)
				fuzz_records(rec->ptr, (size_t)rec->len);
		}
}

/* ---- round trip -------------------------------------------------------- */

/* Encode with every record set copied inline, so w->buf is the message. */
static int
encode_flat(const struct rn_kapi *api, int16_t v, const void *req,
    struct rn_kwriter *w)
{
	int rc;

	rn_kwriter_init(w);
	w->inline_max = SIZE_MAX;
	rc = api->encode_request(w, v, req);
	if (rc == 0 && w->nrefs != 0)
		rc = RN_KE_INVALID;
	return rc;
}

static void
round_trip(const struct rn_kapi *api, const struct rn_krequest_header *h,
    const void *req)
{
	struct rn_kwriter w1, w2;
	struct rn_kreader r;
	void *req2;
	int rc;

	if ((rc = encode_flat(api, h->api_version, req, &w1)) < 0) {
		if (rc == RN_KE_NOMEM)
			goto out1;
		bug("a decoded request does not encode", h, rc);
	}
	rn_arena_reset(&arena2);
	rn_arena_set_limit(&arena2, arena1.limit);
	req2 = rn_arena_alloc(&arena2, api->request_size);
	if (req2 == NULL)
		goto out1;
	/* an empty body leaves buf NULL; NULL + 0 is UB, so point elsewhere */
	rn_kreader_init(&r, w1.buf ? w1.buf : (const uint8_t *)"", w1.len);
	rc = api->decode_request(&r, h->api_version, &arena2, req2);
	if (rc < 0)
		bug("re-encoded request does not decode", h, rc);
	if (rn_kr_left(&r) != 0)
		bug("re-encoded request decodes short of its end", h,
		    (int)rn_kr_left(&r));
	if ((rc = encode_flat(api, h->api_version, req2, &w2)) < 0) {
		if (rc == RN_KE_NOMEM)
			goto out2;
		bug("a re-decoded request does not encode", h, rc);
	}
	if (w1.len != w2.len || (w1.len && memcmp(w1.buf, w2.buf, w1.len)))
		bug("encode(decode(encode(x))) != encode(x)", h, 0);
out2:
	rn_kwriter_free(&w2);
out1:
	rn_kwriter_free(&w1);
}

static void
header_round_trip(const struct rn_krequest_header *h)
{
	struct rn_krequest_header h2;
	struct rn_kwriter w;
	struct rn_kreader r;
	int rc;

	rn_kwriter_init(&w);
	rc = rn_krequest_header_encode(&w, h->header_version, h);
	if (rc == RN_KE_NOMEM)
		goto out;
	if (rc < 0)
		bug("a decoded request header does not encode", h, rc);
	rn_kreader_init(&r, w.buf ? w.buf : (const uint8_t *)"", w.len);
	rc = rn_krequest_header_decode(&r, &h2);
	if (rc < 0 || rn_kr_left(&r) != 0 || h2.api_key != h->api_key ||
	    h2.api_version != h->api_version ||
	    h2.correlation_id != h->correlation_id ||
	    h2.header_version != h->header_version ||
	    h2.client_id.len != h->client_id.len ||
	    (h->client_id.len > 0 && memcmp(h2.client_id.ptr,
	    h->client_id.ptr, (size_t)h->client_id.len) != 0))
		bug("request header does not round-trip", h, rc);
out:
	rn_kwriter_free(&w);
}

/* ---- one frame, as net_dispatch() sees it -------------------------------- */

static void
fuzz_frame(const uint8_t *body, size_t len)
{
	const struct rn_kapi *api;
	struct rn_krequest_header h;
	struct rn_kreader r;
	void *req;
	int rc;

	rn_kreader_init(&r, body, len);
	rc = rn_krequest_header_decode(&r, &h);
	if (rc < 0)
		return;		/* the broker closes (or answers ApiVersions) */
	header_round_trip(&h);
	api = rn_kapi_find(h.api_key);
	if (api == NULL || !rn_kapi_supported(h.api_key, h.api_version))
		return;		/* UNSUPPORTED_VERSION, no body decoding */
	rn_arena_reset(&arena1);
	rn_arena_set_limit(&arena1, 4 * len + 4096);
	req = rn_arena_alloc(&arena1, api->request_size);
	if (req == NULL)
		return;
	rc = api->decode_request(&r, h.api_version, &arena1, req);
	if (rc < 0)
		return;		/* malformed: the broker closes */
	round_trip(api, &h, req);
	if (h.api_key == RN_KAPI_PRODUCE)
		fuzz_produce(req);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t off;

	if (size == 0)
		return 0;
	if ((data[0] & 0x80) == 0) {
		fuzz_frame(data, size);
		return 0;
	}
	/* A stream: like the connection read loop, frame after frame. */
	for (off = 1; size - off >= 4; ) {
		int32_t n = rn_kframe_size(data + off, FUZZ_MAX_FRAME);

		if (n < 0)
			break;	/* hostile size: the broker closes */
		if ((size_t)n > size - off - 4)
			break;	/* partial frame: wait for more (never comes) */
		fuzz_frame(data + off + 4, (size_t)n);
		off += 4 + (size_t)n;
	}
	return 0;
}
