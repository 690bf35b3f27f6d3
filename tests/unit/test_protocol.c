/*
 * Kafka codec tests: round trips of every served API and version (request
 * and response), real client requests captured from kcat/librdkafka,
 * kafka-python and confluent-kafka, hand-assembled response vectors,
 * records by reference (file ranges for sendfile), and hostile input.
 */
#include "protocol/kcodec.h"
#include "protocol/kerrors.h"
#include "protocol/kframe.h"
#include "protocol/kmsg_gen.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/lib/tap.h"

/* ---- primitives the generated fill/compare helpers use --------------- */

struct tg {
	uint64_t s;
	struct rn_arena *a;
};

static uint64_t
tg_rand(struct tg *t)
{
	/* xorshift64*: deterministic so a failure reproduces. */
	t->s ^= t->s >> 12;
	t->s ^= t->s << 25;
	t->s ^= t->s >> 27;
	return t->s * 2685821657736338717ULL;
}

static void *
tg_alloc(struct tg *t, size_t n)
{
	void *p = rn_arena_alloc(t->a, n ? n : 1);

	if (p == NULL)
		bail("test arena exhausted");
	return p;
}

static int32_t
tg_count(struct tg *t, bool nullable)
{
	if (nullable && tg_rand(t) % 6 == 0)
		return -1;
	return (int32_t)(tg_rand(t) % 3);
}

static struct rn_kstr
tg_str(struct tg *t, bool nullable)
{
	struct rn_kstr s = { NULL, 0 };
	char *p;
	int32_t i;

	if (nullable && tg_rand(t) % 5 == 0) {
		s.len = -1;
		return s;
	}
	s.len = (int32_t)(tg_rand(t) % 9);
	p = tg_alloc(t, (size_t)s.len);
	for (i = 0; i < s.len; i++)
		p[i] = (char)('a' + tg_rand(t) % 26);
	s.ptr = p;
	return s;
}

static struct rn_kbytes
tg_bytes(struct tg *t, bool nullable)
{
	struct rn_kbytes b = { NULL, 0 };
	uint8_t *p;
	int32_t i;

	if (nullable && tg_rand(t) % 5 == 0) {
		b.len = -1;
		return b;
	}
	b.len = (int32_t)(tg_rand(t) % 12);
	p = tg_alloc(t, (size_t)b.len);
	for (i = 0; i < b.len; i++)
		p[i] = (uint8_t)tg_rand(t);
	b.ptr = p;
	return b;
}

static struct rn_records
tg_records(struct tg *t, bool nullable)
{
	struct rn_kbytes b = tg_bytes(t, nullable);
	struct rn_records r = { b.ptr, b.len, -1, 0 };

	return r;
}

static void
tg_uuid(struct tg *t, struct rn_uuid *u)
{
	int i;

	for (i = 0; i < 16; i++)
		u->b[i] = (uint8_t)tg_rand(t);
}

static int
tg_eq_int(long long a, long long b, const char *path, const char *f)
{
	if (a != b)
		diag("%s.%s: %lld != %lld", path, f, a, b);
	return a == b;
}

static int __attribute__((unused))
tg_eq_dbl(double a, double b, const char *path, const char *f)
{
	if (a != b)
		diag("%s.%s: %g != %g", path, f, a, b);
	return a == b;
}

static int
tg_eq_mem(const void *a, const void *b, size_t n, const char *path,
    const char *f)
{
	if (memcmp(a, b, n) != 0) {
		diag("%s.%s: bytes differ", path, f);
		return 0;
	}
	return 1;
}

static int
tg_eq_span(const void *pa, int32_t la, const void *pb, int32_t lb,
    const char *path, const char *f)
{
	if (la != lb) {
		diag("%s.%s: length %d != %d", path, f, la, lb);
		return 0;
	}
	return la <= 0 || tg_eq_mem(pa, pb, (size_t)la, path, f);
}

static int
tg_eq_str(struct rn_kstr a, struct rn_kstr b, const char *path, const char *f)
{
	return tg_eq_span(a.ptr, a.len, b.ptr, b.len, path, f);
}

static int
tg_eq_bytes(struct rn_kbytes a, struct rn_kbytes b, const char *path,
    const char *f)
{
	return tg_eq_span(a.ptr, a.len, b.ptr, b.len, path, f);
}

static int
tg_eq_records(const struct rn_records *a, const struct rn_records *b,
    const char *path, const char *f)
{
	return tg_eq_span(a->ptr, a->len, b->ptr, b->len, path, f);
}

#include "protocol/kmsg_testgen.h"

/* ---- helpers ------------------------------------------------------------ */

/* Concatenate a writer's chunks (memory and file ranges) into one buffer. */
static uint8_t *
flatten(const struct rn_kwriter *w, size_t *len)
{
	struct rn_kchunk ch[64];
	int n = rn_kwriter_chunks(w, ch, 64), i;
	size_t total = rn_kwriter_size(w), off = 0;
	uint8_t *buf;

	if (n < 0 || n > 64)
		return NULL;
	buf = malloc(total ? total : 1);
	for (i = 0; i < n; i++) {
		if (ch[i].fd >= 0) {
			if (pread(ch[i].fd, buf + off, ch[i].len,
			    (off_t)ch[i].file_pos) != (ssize_t)ch[i].len) {
				free(buf);
				return NULL;
			}
		} else if (ch[i].len) {
			memcpy(buf + off, ch[i].ptr, ch[i].len);
		}
		off += ch[i].len;
	}
	if (off != total) {
		free(buf);
		return NULL;
	}
	*len = total;
	return buf;
}

static int
nibble(char c)
{
	return c <= '9' ? c - '0' : c - 'a' + 10;
}

static uint8_t *
read_hex(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "r");
	char *txt;
	uint8_t *out;
	size_t n = 0, cap = 1 << 16, i;
	int c;

	if (fp == NULL)
		return NULL;
	txt = malloc(cap);
	while ((c = fgetc(fp)) != EOF)
		if (n + 1 < cap && ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
			txt[n++] = (char)c;
	fclose(fp);
	out = malloc(n / 2 + 1);
	for (i = 0; i + 1 < n; i += 2)
		out[i / 2] = (uint8_t)(nibble(txt[i]) << 4 | nibble(txt[i + 1]));
	free(txt);
	*len = n / 2;
	return out;
}

static const char *
srcdir(void)
{
	const char *s = getenv("RUNNEL_SRCDIR");

	return s ? s : ".";
}

/* ---- round trips -------------------------------------------------------- */

static void
test_roundtrips(void)
{
	size_t m;
	struct rn_arena fa, da;
	struct rn_kwriter w, w2;

	rn_arena_init(&fa, 1 << 24);
	rn_arena_init(&da, 1 << 24);
	rn_kwriter_init(&w);
	rn_kwriter_init(&w2);
	for (m = 0; m < sizeof(tg_msgs) / sizeof(tg_msgs[0]); m++) {
		const struct tg_msg *tm = &tg_msgs[m];
		const struct rn_kapi *api = rn_kapi_find(tm->key);
		int16_t v;

		if (api == NULL) {
			ok(0, "%s in API table", tm->name);
			continue;
		}
		for (v = tm->vmin; v <= tm->vmax; v++) {
			int seed, good = 1;

			for (seed = 1; seed <= 8 && good; seed++) {
				struct tg t = { 0x9e3779b97f4a7c15ULL * (uint64_t)(seed + 31 * v + 977 * (int)m), &fa };
				void *in = calloc(1, tm->size), *out = calloc(1, tm->size);
				struct rn_kreader r;
				uint8_t *buf = NULL, *buf2 = NULL;
				size_t len = 0, len2 = 0;
				int rc;

				rn_arena_reset(&fa);
				rn_arena_reset(&da);
				rn_kwriter_reset(&w);
				rn_kwriter_reset(&w2);
				tm->fill(&t, v, in);
				rc = tm->request ? api->encode_request(&w, v, in) :
				    api->encode_response(&w, v, in);
				if (rc != 0) {
					diag("%s v%d seed %d: encode %d", tm->name, v, seed, rc);
					good = 0;
					goto next;
				}
				buf = flatten(&w, &len);
				rn_kreader_init(&r, buf, len);
				/* Cap the arena like a broker would: 4x the frame plus slack for empty frames. */
				rn_arena_set_limit(&da, 4 * len + 4096);
				rc = tm->request ? api->decode_request(&r, v, &da, out) :
				    api->decode_response(&r, v, &da, out);
				if (rc != 0 || rn_kr_left(&r) != 0) {
					diag("%s v%d seed %d: decode %d, %zu left", tm->name, v, seed, rc, rn_kr_left(&r));
					good = 0;
					goto next;
				}
				if (!tm->eq(in, out, v)) {
					diag("%s v%d seed %d: decoded differs", tm->name, v, seed);
					good = 0;
					goto next;
				}
				/* Re-encoding the decoded message must give the same bytes. */
				rc = tm->request ? api->encode_request(&w2, v, out) :
				    api->encode_response(&w2, v, out);
				buf2 = rc == 0 ? flatten(&w2, &len2) : NULL;
				if (buf2 == NULL || len2 != len || memcmp(buf, buf2, len) != 0) {
					diag("%s v%d seed %d: re-encode differs", tm->name, v, seed);
					good = 0;
				}
				/* Every truncation must fail cleanly. */
				if (good && seed <= 2) {
					size_t cut;

					for (cut = 0; cut < len; cut++) {
						rn_arena_reset(&da);
						rn_kreader_init(&r, buf, cut);
						rc = tm->request ? api->decode_request(&r, v, &da, out) :
						    api->decode_response(&r, v, &da, out);
						if (rc != RN_KE_MALFORMED) {
							diag("%s v%d: truncated at %zu gave %d", tm->name, v, cut, rc);
							good = 0;
							break;
						}
					}
				}
next:
				free(buf);
				free(buf2);
				free(in);
				free(out);
			}
			ok(good, "%s v%d round trip", tm->name, v);
		}
	}
	rn_kwriter_free(&w);
	rn_kwriter_free(&w2);
	rn_arena_free(&fa);
	rn_arena_free(&da);
}

/* ---- captured client requests ---------------------------------------- */

struct fixture {
	const char *file;
	int16_t key;
	int16_t version;
	const char *client_id;
};

static const struct fixture fixtures[] = {
	{ "librdkafka-ApiVersions-v3.hex", 18, 3, "rdkafka" },
	{ "librdkafka-ApiVersions-v0.hex", 18, 0, "rdkafka" },
	{ "librdkafka-Metadata-v4-all.hex", 3, 4, "rdkafka" },
	{ "librdkafka-Metadata-v4-topic.hex", 3, 4, "rdkafka" },
	{ "librdkafka-Produce-v7.hex", 0, 7, "rdkafka" },
	{ "librdkafka-ListOffsets-v2.hex", 2, 2, "rdkafka" },
	{ "librdkafka-Fetch-v11.hex", 1, 11, "rdkafka" },
	{ "confluent-kafka-ApiVersions-v3.hex", 18, 3, "ck-producer" },
	{ "confluent-kafka-Produce-v7.hex", 0, 7, "ck-producer" },
	{ "kafka-python-ApiVersions-v0.hex", 18, 0, "kpy-probe" },
	{ "kafka-python-Metadata-v0.hex", 3, 0, "kpy-probe" },
	{ "kafka-python-Metadata-v1.hex", 3, 1, "kpy-probe" },
	{ "kafka-python-Produce-v7.hex", 0, 7, "kpy-probe" },
	{ "kafka-python-FindCoordinator-v0.hex", 10, 0, "kpy-consumer" },
	{ "kafka-python-JoinGroup-v2.hex", 11, 2, "kpy-consumer" },
};
#define NFIXTURES (sizeof(fixtures) / sizeof(fixtures[0]))

static uint8_t *fixture_buf[NFIXTURES];
static size_t fixture_len[NFIXTURES];

static void
check_fixture_fields(const struct fixture *fx, const union rn_krequest *u)
{
	const char *f = fx->file;

	switch (fx->key) {
	case RN_KAPI_API_VERSIONS:
		if (fx->version >= 3) {
			const char *want = strstr(f, "confluent") ?
			    "confluent-kafka-python" : "librdkafka";

			ok(rn_kstr_eq(u->api_versions.client_software_name, want),
			    "%s: software name %s", f, want);
			ok(u->api_versions.client_software_version.len > 0,
			    "%s: software version %.*s", f,
			    u->api_versions.client_software_version.len,
			    u->api_versions.client_software_version.ptr);
		}
		break;
	case RN_KAPI_METADATA:
		if (strstr(f, "-topic")) {
			ok(u->metadata.topics_count == 1 &&
			    rn_kstr_eq(u->metadata.topics[0].name, "test"),
			    "%s: asks for topic test", f);
		} else if (fx->version >= 1) {
			ok(u->metadata.topics_count <= 0, "%s: all topics (%d)", f,
			    u->metadata.topics_count);
		} else {
			is_int(u->metadata.topics_count, 0, "%s: v0 empty list", f);
		}
		break;
	case RN_KAPI_PRODUCE: {
		const struct rn_ProduceRequest *p = &u->produce;

		ok(p->topic_data_count == 1 &&
		    rn_kstr_eq(p->topic_data[0].name, "test") &&
		    p->topic_data[0].partition_data_count == 1 &&
		    p->topic_data[0].partition_data[0].index == 0,
		    "%s: produce to test/0", f);
		if (p->topic_data_count == 1 && p->topic_data[0].partition_data_count == 1) {
			const struct rn_records *rec = &p->topic_data[0].partition_data[0].records;
			const uint8_t *rp = rec->ptr;

			/* Zero copy: the records slice points into the frame. */
			ok(rec->len > 61 && rp > fixture_buf[fx - fixtures] &&
			    rp + rec->len == fixture_buf[fx - fixtures] + fixture_len[fx - fixtures],
			    "%s: records slice of %d bytes is in the frame", f, rec->len);
			ok(rec->len > 16 && rp[16] == 2, "%s: record batch magic 2", f);
		}
		ok(p->transactional_id.len == -1, "%s: not transactional", f);
		break;
	}
	case RN_KAPI_FETCH:
		ok(u->fetch.topics_count == 1 &&
		    rn_kstr_eq(u->fetch.topics[0].topic, "test") &&
		    u->fetch.topics[0].partitions_count == 1,
		    "%s: fetch test/0", f);
		is_int(u->fetch.replica_id, -1, "%s: consumer replica id", f);
		break;
	case RN_KAPI_FIND_COORDINATOR:
		ok(rn_kstr_eq(u->find_coordinator.key, "g1"), "%s: group g1", f);
		break;
	case RN_KAPI_JOIN_GROUP: {
		const struct rn_JoinGroupRequest *j = &u->join_group;

		ok(rn_kstr_eq(j->group_id, "g1") && j->session_timeout_ms == 10000 &&
		    j->rebalance_timeout_ms == 300000 && rn_kstr_eq(j->member_id, "") &&
		    rn_kstr_eq(j->protocol_type, "consumer") && j->protocols_count == 2 &&
		    rn_kstr_eq(j->protocols[0].name, "range") &&
		    rn_kstr_eq(j->protocols[1].name, "roundrobin"),
		    "%s: join g1 offering range and roundrobin", f);
		break;
	}
	case RN_KAPI_LIST_OFFSETS:
		ok(u->list_offsets.topics_count == 1 &&
		    u->list_offsets.topics[0].partitions_count == 1 &&
		    u->list_offsets.topics[0].partitions[0].timestamp == -2,
		    "%s: earliest offset of test/0", f);
		break;
	}
}

static void
test_fixtures(void)
{
	size_t i;
	struct rn_arena a;
	char path[PATH_MAX];

	rn_arena_init(&a, 0);
	for (i = 0; i < NFIXTURES; i++) {
		const struct fixture *fx = &fixtures[i];
		struct rn_krequest_header h;
		struct rn_kreader r;
		const struct rn_kapi *api;
		union rn_krequest *u = calloc(1, sizeof(*u));
		int rc;

		snprintf(path, sizeof(path), "%s/tests/unit/fixtures/protocol/%s",
		    srcdir(), fx->file);
		fixture_buf[i] = read_hex(path, &fixture_len[i]);
		if (!ok(fixture_buf[i] != NULL && fixture_len[i] > 8, "%s: read", fx->file)) {
			free(u);
			continue;
		}
		rn_kreader_init(&r, fixture_buf[i], fixture_len[i]);
		rc = rn_krequest_header_decode(&r, &h);
		ok(rc == 0 && h.api_key == fx->key && h.api_version == fx->version &&
		    rn_kstr_eq(h.client_id, fx->client_id),
		    "%s: header key %d v%d client %.*s", fx->file, h.api_key,
		    h.api_version, h.client_id.len, h.client_id.ptr);
		api = rn_kapi_find(h.api_key);
		rn_arena_reset(&a);
		rn_arena_set_limit(&a, 4 * fixture_len[i]);
		rc = api ? api->decode_request(&r, h.api_version, &a, u) : -1;
		ok(rc == 0 && rn_kr_left(&r) == 0, "%s: body decodes fully (rc %d, %zu left)",
		    fx->file, rc, rn_kr_left(&r));
		if (rc == 0)
			check_fixture_fields(fx, u);
		free(u);
	}
	rn_arena_free(&a);
}

/* Every prefix of a real frame fails; random corruption never crashes. */
static void
test_fixture_hostile(void)
{
	size_t i, cut;
	struct rn_arena a;
	struct tg t = { 12345, NULL };

	rn_arena_init(&a, 0);
	for (i = 0; i < NFIXTURES; i++) {
		const uint8_t *buf = fixture_buf[i];
		size_t len = fixture_len[i];
		union rn_krequest *u = malloc(sizeof(*u));
		uint8_t *mut = malloc(len);
		int bad = 0, iter, accepted = 0;

		if (buf == NULL) {
			free(u);
			free(mut);
			continue;
		}
		for (cut = 0; cut < len; cut++) {
			struct rn_kreader r;
			struct rn_krequest_header h;
			const struct rn_kapi *api;
			int rc;

			rn_arena_reset(&a);
			rn_arena_set_limit(&a, 4 * len);
			rn_kreader_init(&r, buf, cut);
			rc = rn_krequest_header_decode(&r, &h);
			if (rc == 0) {
				api = rn_kapi_find(h.api_key);
				rc = api->decode_request(&r, h.api_version, &a, u);
			}
			if (rc != RN_KE_MALFORMED)
				bad++;
		}
		is_int(bad, 0, "%s: all %zu truncations rejected", fixtures[i].file, len);
		for (iter = 0; iter < 3000; iter++) {
			struct rn_kreader r;
			struct rn_krequest_header h;
			const struct rn_kapi *api;
			int k, flips = 1 + (int)(tg_rand(&t) % 4);

			memcpy(mut, buf, len);
			for (k = 0; k < flips; k++) {
				size_t at = 8 + tg_rand(&t) % (len - 8);

				mut[at] = (uint8_t)(tg_rand(&t) % 3 == 0 ? 0xff : tg_rand(&t));
			}
			rn_arena_reset(&a);
			rn_arena_set_limit(&a, 4 * len);
			rn_kreader_init(&r, mut, len);
			if (rn_krequest_header_decode(&r, &h) == 0 &&
			    (api = rn_kapi_find(h.api_key)) != NULL &&
			    api->decode_request(&r, h.api_version, &a, u) == 0)
				accepted++;
			if (a.used_total > 4 * len)
				bad++;
		}
		ok(bad == 0, "%s: 3000 mutations decoded within the arena cap (%d accepted)",
		    fixtures[i].file, accepted);
		free(u);
		free(mut);
	}
	rn_arena_free(&a);
}

/* ---- hand-built vectors --------------------------------------------- */

static int
decode_hex_req(const char *hex, int16_t key, int16_t ver, struct rn_arena *a,
    void *out, size_t *left)
{
	uint8_t buf[512];
	size_t n = strlen(hex) / 2, i;
	struct rn_kreader r;
	int rc;

	for (i = 0; i < n; i++) {
		unsigned v;

		sscanf(hex + 2 * i, "%2x", &v);
		buf[i] = (uint8_t)v;
	}
	rn_kreader_init(&r, buf, n);
	rc = rn_kapi_find(key)->decode_request(&r, ver, a, out);
	if (left)
		*left = rn_kr_left(&r);
	return rc;
}

static void
test_hostile_vectors(void)
{
	struct rn_arena a;
	struct rn_ProduceRequest p;
	struct rn_MetadataRequest md;
	struct rn_ApiVersionsRequest av;
	size_t left;
	int rc;

	rn_arena_init(&a, 1 << 20);
	/* Produce v3: txn id null, acks 1, timeout, topic array claims 2^31-1. */
	rc = decode_hex_req("ffff" "0001" "00007530" "7fffffff" "0004", 0, 3, &a, &p, NULL);
	is_int(rc, RN_KE_MALFORMED, "huge array count rejected");
	is_int((long long)a.used_total, 0, "... before allocating");
	/* Topic name length 0x7fff with 2 bytes present. */
	rc = decode_hex_req("ffff" "0001" "00007530" "00000001" "7fff" "6162", 0, 3, &a, &p, NULL);
	is_int(rc, RN_KE_MALFORMED, "huge string length rejected");
	/* Topic name null: not nullable. */
	rc = decode_hex_req("ffff" "0001" "00007530" "00000001" "ffff" "00000000", 0, 3, &a, &p, NULL);
	is_int(rc, RN_KE_MALFORMED, "null non-nullable string rejected");
	/* Transactional id -2: below the null marker. */
	rc = decode_hex_req("fffe" "0001" "00007530" "00000000", 0, 3, &a, &p, NULL);
	is_int(rc, RN_KE_MALFORMED, "string length -2 rejected");
	/* Array count -1 where not nullable (Produce topics). */
	rc = decode_hex_req("ffff" "0001" "00007530" "ffffffff", 0, 3, &a, &p, NULL);
	is_int(rc, RN_KE_MALFORMED, "null non-nullable array rejected");
	/* Records length -5. */
	rc = decode_hex_req("ffff" "0001" "00007530" "00000001" "0001" "61" "00000001"
	    "00000000" "fffffffb", 0, 3, &a, &p, NULL);
	is_int(rc, RN_KE_MALFORMED, "records length -5 rejected");
	rc = decode_hex_req("ffff" "0001" "00007530" "00000001" "0001" "61" "00000001"
	    "00000000" "ffffffff", 0, 3, &a, &p, &left);
	ok(rc == 0 && p.topic_data[0].partition_data[0].records.len == -1 && left == 0,
	    "null records accepted (nullable)");
	/* Metadata v9 (flexible): compact array length varint overflow. */
	rc = decode_hex_req("ffffffff7f", 3, 9, &a, &md, NULL);
	is_int(rc, RN_KE_MALFORMED, "5-byte varint overflow rejected");
	rc = decode_hex_req("8080808080" "01", 3, 9, &a, &md, NULL);
	is_int(rc, RN_KE_MALFORMED, "6-byte varint rejected");
	/* Metadata v9 null topics, auto create, flags, and an unknown tag. */
	rc = decode_hex_req("00" "01" "00" "01" "01" "63" "03" "aabbcc", 3, 9, &a, &md, &left);
	ok(rc == 0 && left == 0 && md.topics_count == -1 && md.allow_auto_topic_creation,
	    "unknown tagged field skipped");
	rc = decode_hex_req("00" "01" "00" "01" "01" "63" "09" "aabbcc", 3, 9, &a, &md, NULL);
	is_int(rc, RN_KE_MALFORMED, "tagged field longer than the frame rejected");
	rc = decode_hex_req("00" "01" "00" "01" "05" "63" "00", 3, 9, &a, &md, NULL);
	is_int(rc, RN_KE_MALFORMED, "tag count beyond the frame rejected");
	/* Metadata v10: 40000 topics of uuid+name claimed in a small frame. */
	rc = decode_hex_req("82b802" "00000000000000000000000000000000" "01" "00", 3, 10, &a, &md, NULL);
	is_int(rc, RN_KE_MALFORMED, "element count checked against minimum element size");
	/* ApiVersions v3: compact string length above what is left. */
	rc = decode_hex_req("7f" "61" "00" "00", 18, 3, &a, &av, NULL);
	is_int(rc, RN_KE_MALFORMED, "compact string past the end rejected");
	/* Arena cap: a valid Metadata v1 request with 100 empty-name topics
	 * needs 100 * sizeof(topic) bytes; a 64-byte cap refuses it. */
	{
		char hex[2 * 8 + 100 * 4 + 1];
		int i;

		strcpy(hex, "00000064");
		for (i = 0; i < 100; i++)
			strcat(hex, "0000");
		rn_arena_reset(&a);
		rn_arena_set_limit(&a, 64);
		rc = decode_hex_req(hex, 3, 1, &a, &md, NULL);
		is_int(rc, RN_KE_ARENA, "arena cap enforced");
		ok(a.used_total <= 64, "arena stayed under its cap (%zu)", a.used_total);
		rn_arena_reset(&a);
		rn_arena_set_limit(&a, 1 << 20);
		rc = decode_hex_req(hex, 3, 1, &a, &md, &left);
		ok(rc == 0 && md.topics_count == 100 && left == 0, "same frame fits a larger cap");
	}
	is_int(rn_ProduceRequest_decode(&(struct rn_kreader){ NULL, NULL, 0 }, 2, &a, &p),
	    RN_KE_VERSION, "Produce v2 not served");
	is_int(rn_ProduceRequest_decode(&(struct rn_kreader){ NULL, NULL, 0 }, 10, &a, &p),
	    RN_KE_VERSION, "Produce v10 not served");
	rn_arena_free(&a);
}

static int
writer_hex_eq(struct rn_kwriter *w, const char *hex, const char *what)
{
	size_t len, i;
	uint8_t *buf = flatten(w, &len);
	char got[1024] = "";

	for (i = 0; buf && i < len && i < 500; i++)
		sprintf(got + 2 * i, "%02x", buf[i]);
	free(buf);
	return is_str(got, hex, "%s", what);
}

static void
test_response_vectors(void)
{
	struct rn_kwriter w;
	struct rn_ApiVersionsResponse r;
	struct rn_ApiVersionsResponse_ApiVersion ent = { 0, 3, 9 };
	struct rn_ApiVersionsResponse_ApiVersion all[RN_KAPI_COUNT];
	struct rn_ProduceResponse pr;
	struct rn_ProduceResponse_TopicProduceResponse tp;
	struct rn_ProduceResponse_PartitionProduceResponse pp;
	size_t mark;
	int i, found = 0;

	rn_kwriter_init(&w);
	rn_ApiVersionsResponse_init(&r);
	r.api_keys = &ent;
	r.api_keys_count = 1;
	rn_ApiVersionsResponse_encode(&w, 0, &r);
	writer_hex_eq(&w, "0000" "00000001" "0000" "0003" "0009", "ApiVersions v0 response bytes");
	rn_kwriter_reset(&w);
	r.throttle_time_ms = 7;
	rn_ApiVersionsResponse_encode(&w, 3, &r);
	writer_hex_eq(&w, "0000" "02" "0000" "0003" "0009" "00" "00000007" "00",
	    "ApiVersions v3 response bytes (compact, tags)");
	rn_kwriter_reset(&w);
	r.zk_migration_ready = true;
	rn_ApiVersionsResponse_encode(&w, 3, &r);
	writer_hex_eq(&w, "0000" "02" "0000" "0003" "0009" "00" "00000007" "01" "03" "01" "01",
	    "ApiVersions v3 response with tagged field 3");
	/* Full frame for librdkafka's v3 request: header v0, no tag byte. */
	rn_kwriter_reset(&w);
	r.zk_migration_ready = false;
	rn_kresponse_begin(&w, RN_KAPI_API_VERSIONS, 3, 0x01020304, &mark);
	rn_ApiVersionsResponse_encode(&w, 3, &r);
	rn_kw_frame_end(&w, mark);
	writer_hex_eq(&w, "00000013" "01020304" "0000" "02" "0000" "0003" "0009" "00" "00000007" "00",
	    "ApiVersions v3 frame uses response header v0");
	/* Produce v9: flexible header v1. */
	rn_kwriter_reset(&w);
	rn_ProduceResponse_init(&pr);
	rn_ProduceResponse_TopicProduceResponse_init(&tp);
	rn_ProduceResponse_PartitionProduceResponse_init(&pp);
	tp.name = rn_kstr_c("t");
	tp.partition_responses = &pp;
	tp.partition_responses_count = 1;
	pp.base_offset = 5;
	pr.responses = &tp;
	pr.responses_count = 1;
	rn_kresponse_begin(&w, RN_KAPI_PRODUCE, 9, 1, &mark);
	rn_ProduceResponse_encode(&w, 9, &pr);
	rn_kw_frame_end(&w, mark);
	writer_hex_eq(&w, "00000030" "00000001" "00"
	    "02" "0274" "02" "00000000" "0000" "0000000000000005" "ffffffffffffffff"
	    "ffffffffffffffff" "01" "00" "00" "00" "00000000" "00",
	    "Produce v9 response frame (header v1, defaults -1)");

	is_int(rn_kapi_fill_api_versions(all, RN_KAPI_COUNT), RN_KAPI_COUNT, "table size");
	for (i = 0; i < RN_KAPI_COUNT; i++) {
		if (all[i].api_key == 0 && all[i].min_version == 3 && all[i].max_version == 9)
			found |= 1;
		if (all[i].api_key == 1 && all[i].min_version == 4 && all[i].max_version == 13)
			found |= 2;
		if (all[i].api_key == 18 && all[i].min_version == 0 && all[i].max_version == 3)
			found |= 4;
		if (all[i].api_key == 3 && all[i].max_version == 12)
			found |= 8;
	}
	is_int(found, 15, "ApiVersions advertises Produce 3-9, Fetch 4-13, ApiVersions 0-3, Metadata 0-12");
	is_int(rn_kapi_request_header_version(18, 3), 2, "ApiVersions v3 request header v2");
	is_int(rn_kapi_request_header_version(18, 2), 1, "ApiVersions v2 request header v1");
	is_int(rn_kapi_response_header_version(18, 3), 0, "ApiVersions v3 response header v0");
	is_int(rn_kapi_response_header_version(0, 9), 1, "Produce v9 response header v1");
	is_int(rn_kapi_response_header_version(0, 8), 0, "Produce v8 response header v0");
	is_int(rn_kapi_request_header_version(0, 11), 2, "too-new Produce still parses as header v2");
	is_int(rn_kapi_request_header_version(9999, 0), -1, "unknown key");
	ok(rn_kapi_supported(1, 13) && !rn_kapi_supported(1, 14) && !rn_kapi_supported(1, 3),
	    "Fetch 4-13 supported exactly");
	is_str(rn_kerr_name(RN_KERR_UNSUPPORTED_VERSION), "UNSUPPORTED_VERSION", "error name 35");
	is_int(RN_KERR_UNSUPPORTED_VERSION, 35, "UNSUPPORTED_VERSION = 35");
	is_str(rn_kerr_name(-1), "UNKNOWN_SERVER_ERROR", "error name -1");
	ok(rn_kerr_name(12345) == NULL, "unknown error code has no name");
	rn_kwriter_free(&w);
}

/* ---- records by reference: FetchResponse with a file range ------------ */

static void
test_records_by_reference(void)
{
	char tmpl[] = "/tmp/rn_test_protocol_XXXXXX";
	int fd = mkstemp(tmpl);
	uint8_t file[300], *flat;
	struct rn_FetchResponse fr, back;
	struct rn_FetchResponse_FetchableTopicResponse tr;
	struct rn_FetchResponse_PartitionData pd[2];
	struct rn_kwriter w;
	struct rn_kchunk ch[8];
	struct rn_kreader r;
	struct rn_arena a;
	size_t mark, len;
	int n, i;
	int32_t corr;
	static const char memrec[] = "in-memory-batch";

	if (!ok(fd >= 0, "temp file"))
		return;
	unlink(tmpl);
	for (i = 0; i < (int)sizeof(file); i++)
		file[i] = (uint8_t)i;
	if (write(fd, file, sizeof(file)) != (ssize_t)sizeof(file))
		bail("write");
	rn_FetchResponse_init(&fr);
	rn_FetchResponse_FetchableTopicResponse_init(&tr);
	rn_FetchResponse_PartitionData_init(&pd[0]);
	rn_FetchResponse_PartitionData_init(&pd[1]);
	memset(tr.topic_id.b, 0xab, 16);
	tr.partitions = pd;
	tr.partitions_count = 2;
	pd[0].high_watermark = 1000;
	pd[0].records = (struct rn_records){ NULL, 200, fd, 50 };
	pd[0].current_leader.leader_id = 3;     /* non-default: emitted as tag 1 */
	pd[0].current_leader.leader_epoch = 9;
	pd[1].partition_index = 1;
	pd[1].records = (struct rn_records){ memrec, (int32_t)strlen(memrec), -1, 0 };
	fr.responses = &tr;
	fr.responses_count = 1;

	rn_kwriter_init(&w);
	rn_kresponse_begin(&w, RN_KAPI_FETCH, 13, 77, &mark);
	is_int(rn_FetchResponse_encode(&w, 13, &fr), 0, "FetchResponse v13 encodes");
	rn_kw_frame_end(&w, mark);
	n = rn_kwriter_chunks(&w, ch, 8);
	is_int(n, 5, "chunks: header+fields, file range, fields, memory records, tail");
	ok(n == 5 && ch[1].fd == fd && ch[1].file_pos == 50 && ch[1].len == 200,
	    "file range chunk refers to fd at offset 50, 200 bytes");
	ok(n == 5 && ch[3].fd < 0 && ch[3].ptr == memrec && ch[3].len == strlen(memrec),
	    "memory records referenced, not copied");
	is_int((long long)w.len + 200 + (long long)strlen(memrec), (long long)rn_kwriter_size(&w),
	    "size counts referenced bytes");
	flat = flatten(&w, &len);
	ok(flat != NULL && rn_kframe_size(flat, 1 << 20) == (int32_t)len - 4,
	    "size prefix covers referenced bytes");
	rn_kreader_init(&r, flat + 4, len - 4);
	rn_arena_init(&a, 4 * len);
	ok(rn_kresponse_header_decode(&r, 1, &corr) == 0 && corr == 77, "response header v1");
	ok(rn_FetchResponse_decode(&r, 13, &a, &back) == 0 && rn_kr_left(&r) == 0,
	    "FetchResponse v13 decodes fully");
	ok(back.responses_count == 1 && back.responses[0].partitions_count == 2 &&
	    back.responses[0].partitions[0].records.len == 200 &&
	    memcmp(back.responses[0].partitions[0].records.ptr, file + 50, 200) == 0 &&
	    back.responses[0].partitions[1].records.len == (int32_t)strlen(memrec) &&
	    memcmp(back.responses[0].partitions[1].records.ptr, memrec, strlen(memrec)) == 0,
	    "records bytes from the file range and memory arrive intact");
	ok(back.responses[0].partitions[0].current_leader.leader_id == 3 &&
	    back.responses[0].partitions[0].current_leader.leader_epoch == 9 &&
	    back.responses[0].partitions[1].current_leader.leader_id == -1 &&
	    back.responses[0].partitions[0].diverging_epoch.epoch == -1,
	    "tagged struct round trip, absent tags keep defaults");
	free(flat);

	/* Small memory records may be inlined when the caller allows it. */
	rn_kwriter_reset(&w);
	w.inline_max = 64;
	rn_FetchResponse_encode(&w, 13, &fr);
	n = rn_kwriter_chunks(&w, ch, 8);
	is_int(n, 3, "inline_max copies small memory records, file range stays a chunk");
	rn_kwriter_free(&w);
	rn_arena_free(&a);
	close(fd);
}

static void
test_frames_and_headers(void)
{
	uint8_t p[4];
	struct rn_kwriter w;
	struct rn_krequest_header h = { 0, 9, 42, { "cli", 3 }, 2 }, back;
	struct rn_kreader r;
	size_t len;
	uint8_t *buf;
	int32_t i;
	static const int32_t sizes[] = { 0, 100, 1 << 20, (1 << 20) + 1, -1, INT32_MIN };
	static const int32_t want[] = { 0, 100, 1 << 20, RN_KE_FRAMESIZE, RN_KE_FRAMESIZE,
		RN_KE_FRAMESIZE };

	for (i = 0; i < 6; i++) {
		rn_kw_put32(p, (uint32_t)sizes[i]);
		is_int(rn_kframe_size(p, 1 << 20), want[i], "frame size %d vs max 1MiB", sizes[i]);
	}
	rn_kwriter_init(&w);
	rn_krequest_header_encode(&w, 2, &h);
	buf = flatten(&w, &len);
	is_int((long long)len, 8 + 2 + 3 + 1, "request header v2 size (classic client id + tags)");
	rn_kreader_init(&r, buf, len);
	ok(rn_krequest_header_decode(&r, &back) == 0 && back.header_version == 2 &&
	    back.correlation_id == 42 && rn_kstr_eq(back.client_id, "cli") &&
	    rn_kr_left(&r) == 0, "request header v2 round trip");
	free(buf);
	rn_kwriter_reset(&w);
	h.api_key = 999;
	rn_krequest_header_encode(&w, 0, &h);
	buf = flatten(&w, &len);
	rn_kreader_init(&r, buf, len);
	ok(rn_krequest_header_decode(&r, &back) == RN_KE_VERSION && back.api_key == 999 &&
	    back.correlation_id == 42, "unknown API key: fixed fields then RN_KE_VERSION");
	free(buf);
	/* Varint codec edges. */
	rn_kwriter_reset(&w);
	rn_kw_uvarint(&w, UINT32_MAX);
	rn_kw_varint(&w, INT32_MIN);
	rn_kw_varlong(&w, INT64_MIN);
	rn_kw_varlong(&w, -1);
	buf = flatten(&w, &len);
	rn_kreader_init(&r, buf, len);
	ok(rn_kr_uvarint(&r) == UINT32_MAX && rn_kr_varint(&r) == INT32_MIN &&
	    rn_kr_varlong(&r) == INT64_MIN && rn_kr_varlong(&r) == -1 &&
	    r.err == 0 && rn_kr_left(&r) == 0, "varint extremes round trip");
	free(buf);
	rn_kwriter_free(&w);
}

int
main(void)
{
	size_t i;

	test_roundtrips();
	test_fixtures();
	test_fixture_hostile();
	test_hostile_vectors();
	test_response_vectors();
	test_records_by_reference();
	test_frames_and_headers();
	for (i = 0; i < NFIXTURES; i++)
		free(fixture_buf[i]);
	return done_testing();
}
