/*
 * __consumer_offsets records in Kafka's schemas, the group -> partition
 * rule, and the group settings. Pure functions: no process state.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/group_records.h"

/* One code point of UTF-8; a malformed byte is U+FFFD, as Java decodes. */
static uint32_t
utf8_next(const uint8_t **pp, const uint8_t *end)
{
	const uint8_t *p = *pp;
	uint32_t c = *p, need, i;

	if (c < 0x80) {
		*pp = p + 1;
		return c;
	}
	if (c >= 0xc2 && c <= 0xdf)
		need = 1, c &= 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		need = 2, c &= 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		need = 3, c &= 0x07;
	else {
		*pp = p + 1;
		return 0xfffd;
	}
	if ((size_t)(end - p) <= need) {
		*pp = p + 1;
		return 0xfffd;
	}
	for (i = 1; i <= need; i++) {
		if ((p[i] & 0xc0) != 0x80) {
			*pp = p + 1;
			return 0xfffd;
		}
		c = (c << 6) | (p[i] & 0x3f);
	}
	if ((need == 2 && (c < 0x800 || (c >= 0xd800 && c <= 0xdfff))) ||
	    (need == 3 && (c < 0x10000 || c > 0x10ffff))) {
		*pp = p + 1;
		return 0xfffd;
	}
	*pp = p + need + 1;
	return c;
}

int32_t
rn_java_string_hash(const char *s, size_t len)
{
	const uint8_t *p = (const uint8_t *)s, *end = p + len;
	uint32_t h = 0, c;

	while (p < end) {
		c = utf8_next(&p, end);
		if (c >= 0x10000) {
			c -= 0x10000;
			h = 31 * h + (0xd800 + (c >> 10));
			h = 31 * h + (0xdc00 + (c & 0x3ff));
		} else
			h = 31 * h + c;
	}
	return (int32_t)h;
}

int32_t
rn_group_partition(const char *group, size_t len, int32_t n)
{
	int32_t h = rn_java_string_hash(group, len);

	if (n <= 0)
		return -1;
	/* Kafka's Utils.abs: the one value without a positive twin is 0 */
	if (h == INT32_MIN)
		h = 0;
	else if (h < 0)
		h = -h;
	return h % n;
}

/* ---- encoding ------------------------------------------------------- */

void
rn_grec_offset_key(struct rn_kwriter *w, struct rn_kstr group,
    struct rn_kstr topic, int32_t partition)
{
	rn_kw_int16(w, 1);
	rn_kw_string(w, group, false, false);
	rn_kw_string(w, topic, false, false);
	rn_kw_int32(w, partition);
}

void
rn_grec_offset_value(struct rn_kwriter *w, const struct rn_grec_offset *v)
{
	struct rn_kstr md = v->metadata;

	if (md.len < 0)
		md = rn_kstr_c("");
	rn_kw_int16(w, 3);
	rn_kw_int64(w, v->offset);
	rn_kw_int32(w, v->leader_epoch);
	rn_kw_string(w, md, false, false);
	rn_kw_int64(w, v->commit_ts);
}

void
rn_grec_group_key(struct rn_kwriter *w, struct rn_kstr group)
{
	rn_kw_int16(w, 2);
	rn_kw_string(w, group, false, false);
}

/* Value v4 is a flexible version: compact lengths, empty tag sections. */
void
rn_grec_group_value(struct rn_kwriter *w, const struct rn_grec_group *v)
{
	int32_t i;

	rn_kw_int16(w, 4);
	rn_kw_string(w, v->protocol_type, true, false);
	rn_kw_int32(w, v->generation);
	rn_kw_string(w, v->protocol, true, true);
	rn_kw_string(w, v->leader, true, true);
	rn_kw_int64(w, v->state_ts);
	rn_kw_len(w, v->n_members, true, false, false);
	for (i = 0; i < v->n_members; i++) {
		const struct rn_grec_member *m = &v->members[i];

		rn_kw_string(w, m->member_id, true, false);
		rn_kw_string(w, m->instance_id, true, true);
		rn_kw_string(w, m->client_id, true, false);
		rn_kw_string(w, m->client_host, true, false);
		rn_kw_int32(w, m->rebalance_timeout);
		rn_kw_int32(w, m->session_timeout);
		rn_kw_bytes(w, m->subscription, true, false);
		rn_kw_bytes(w, m->assignment, true, false);
		rn_kw_uvarint(w, 0);
	}
	rn_kw_uvarint(w, 0);
}

/* ---- decoding ------------------------------------------------------- */

int
rn_grec_key_decode(const void *buf, size_t len, struct rn_grec_key *k)
{
	struct rn_kreader r;
	int16_t ver;

	memset(k, 0, sizeof(*k));
	rn_kreader_init(&r, buf, len);
	ver = rn_kr_int16(&r);
	if (ver == 0 || ver == 1) {
		k->kind = RN_GREC_OFFSET;
		k->group = rn_kr_string(&r, false, false);
		k->topic = rn_kr_string(&r, false, false);
		k->partition = rn_kr_int32(&r);
	} else if (ver == 2) {
		k->kind = RN_GREC_GROUP;
		k->group = rn_kr_string(&r, false, false);
	} else
		return -EBADMSG;
	return r.err ? -EBADMSG : 0;
}

int
rn_grec_offset_decode(const void *buf, size_t len, struct rn_grec_offset *v)
{
	struct rn_kreader r;
	int16_t ver;
	bool flex;

	memset(v, 0, sizeof(*v));
	rn_kreader_init(&r, buf, len);
	ver = rn_kr_int16(&r);
	if (ver < 0 || ver > 4)
		return -EBADMSG;
	flex = ver >= 4;
	v->leader_epoch = -1;
	v->expire_ts = -1;
	v->offset = rn_kr_int64(&r);
	if (ver >= 3)
		v->leader_epoch = rn_kr_int32(&r);
	v->metadata = rn_kr_string(&r, flex, false);
	v->commit_ts = rn_kr_int64(&r);
	if (ver == 1)
		v->expire_ts = rn_kr_int64(&r);
	return r.err ? -EBADMSG : 0;
}

static void
member_decode(struct rn_kreader *r, int16_t ver, struct rn_grec_member *m)
{
	bool flex = ver >= 4;

	m->member_id = rn_kr_string(r, flex, false);
	m->instance_id.len = -1;
	if (ver >= 3)
		m->instance_id = rn_kr_string(r, flex, true);
	m->client_id = rn_kr_string(r, flex, false);
	m->client_host = rn_kr_string(r, flex, false);
	m->rebalance_timeout = -1;
	if (ver >= 1)
		m->rebalance_timeout = rn_kr_int32(r);
	m->session_timeout = rn_kr_int32(r);
	m->subscription = rn_kr_bytes(r, flex, false);
	m->assignment = rn_kr_bytes(r, flex, false);
	if (flex)
		rn_kr_skip_tags(r);
}

int
rn_grec_group_decode(const void *buf, size_t len, struct rn_arena *a,
    struct rn_grec_group *v)
{
	struct rn_kreader r;
	int32_t i, n;
	int16_t ver;
	bool flex;

	memset(v, 0, sizeof(*v));
	rn_kreader_init(&r, buf, len);
	ver = rn_kr_int16(&r);
	if (ver < 0 || ver > 4)
		return -EBADMSG;
	flex = ver >= 4;
	v->protocol_type = rn_kr_string(&r, flex, false);
	v->generation = rn_kr_int32(&r);
	v->protocol = rn_kr_string(&r, flex, true);
	v->leader = rn_kr_string(&r, flex, true);
	v->state_ts = -1;
	if (ver >= 2)
		v->state_ts = rn_kr_int64(&r);
	n = rn_kr_len(&r, flex, true, false);
	/* each member takes at least a few bytes: no count beyond those */
	if (r.err || n < 0 || (size_t)n > rn_kr_left(&r))
		return -EBADMSG;
	if (n > 0 && (v->members = rn_arena_alloc(a,
	    sizeof(*v->members) * (size_t)n)) == NULL)
		return -ENOMEM;
	for (i = 0; i < n && !r.err; i++)
		member_decode(&r, ver, &v->members[i]);
	v->n_members = n;
	if (flex)
		rn_kr_skip_tags(&r);
	return r.err ? -EBADMSG : 0;
}

/* ---- settings ------------------------------------------------------- */

static int64_t
cfg_int(const struct rn_config *cfg, const char *key, int64_t dflt)
{
	const char *s = rn_config_static(cfg, key);
	char *end;
	long long v;

	if (s == NULL || *s == '\0')
		return dflt;
	v = strtoll(s, &end, 10);
	return *end == '\0' ? (int64_t)v : dflt;
}

void
rn_group_settings_load(const struct rn_config *cfg,
    struct rn_group_settings *s)
{
	/* Kafka's defaults, then what the configuration says */
	s->offsets_partitions = (int32_t)cfg_int(cfg,
	    "offsets.topic.num.partitions", 50);
	s->offsets_rf = (int16_t)cfg_int(cfg,
	    "offsets.topic.replication.factor", 3);
	s->offsets_segment_bytes = cfg_int(cfg, "offsets.topic.segment.bytes",
	    104857600);
	s->retention_ms = cfg_int(cfg, "offsets.retention.minutes", 10080) *
	    60000;
	s->retention_check_ms = cfg_int(cfg,
	    "offsets.retention.check.interval.ms", 600000);
	s->commit_timeout_ms = cfg_int(cfg, "offsets.commit.timeout.ms", 5000);
	s->initial_delay_ms = cfg_int(cfg, "group.initial.rebalance.delay.ms",
	    3000);
	s->min_session_ms = cfg_int(cfg, "group.min.session.timeout.ms", 6000);
	s->max_session_ms = cfg_int(cfg, "group.max.session.timeout.ms",
	    1800000);
	s->max_size = (int32_t)cfg_int(cfg, "group.max.size", INT32_MAX);
	s->max_metadata = cfg_int(cfg, "offset.metadata.max.bytes", 4096);
	if (s->offsets_partitions < 1)
		s->offsets_partitions = 1;
	if (s->offsets_rf < 1)
		s->offsets_rf = 1;
}
