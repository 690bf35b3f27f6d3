/*
 * __transaction_state records in Kafka's schemas and the transaction
 * coordinator's settings. Pure functions: no process state.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "protocol/txn_records.h"

static const char *const status_names[] = {
	"Empty", "Ongoing", "PrepareCommit", "PrepareAbort", "CompleteCommit",
	"CompleteAbort", "Dead", "PrepareEpochFence",
};

const char *
rn_txn_status_name(int s)
{
	if (s < 0 || s >= (int)(sizeof(status_names) / sizeof(*status_names)))
		return "Unknown";
	return status_names[s];
}

int
rn_txn_status_parse(struct rn_kstr name)
{
	int i;

	for (i = 0; i < (int)(sizeof(status_names) / sizeof(*status_names));
	    i++)
		if (name.len == (int32_t)strlen(status_names[i]) &&
		    memcmp(name.ptr, status_names[i], (size_t)name.len) == 0)
			return i;
	return -1;
}

void
rn_txn_key(struct rn_kwriter *w, struct rn_kstr txn_id)
{
	rn_kw_int16(w, 0);
	rn_kw_string(w, txn_id, false, false);
}

/* Version 0: classic lengths, partitions nullable (null when none). */
void
rn_txn_value_write(struct rn_kwriter *w, const struct rn_txn_value *v)
{
	int32_t i, j;

	rn_kw_int16(w, 0);
	rn_kw_int64(w, v->producer_id);
	rn_kw_int16(w, v->producer_epoch);
	rn_kw_int32(w, v->timeout_ms);
	rn_kw_int8(w, v->status);
	rn_kw_len(w, v->n_topics > 0 ? v->n_topics : -1, false, true, true);
	for (i = 0; i < v->n_topics; i++) {
		rn_kw_string(w, v->topics[i].topic, false, false);
		rn_kw_int32(w, v->topics[i].n_parts);
		for (j = 0; j < v->topics[i].n_parts; j++)
			rn_kw_int32(w, v->topics[i].parts[j]);
	}
	rn_kw_int64(w, v->last_update_ms);
	rn_kw_int64(w, v->start_ms);
}

int
rn_txn_key_decode(const void *buf, size_t len, struct rn_kstr *txn_id)
{
	struct rn_kreader r;

	rn_kreader_init(&r, buf, len);
	if (rn_kr_int16(&r) != 0)
		return -EBADMSG;
	*txn_id = rn_kr_string(&r, false, false);
	return r.err ? -EBADMSG : 0;
}

int
rn_txn_value_decode(const void *buf, size_t len, struct rn_arena *a,
    struct rn_txn_value *v)
{
	struct rn_kreader r;
	int16_t ver;
	bool flex;
	int32_t i, j, n;

	memset(v, 0, sizeof(*v));
	rn_kreader_init(&r, buf, len);
	ver = rn_kr_int16(&r);
	if (r.err || ver < 0 || ver > 1)
		return -EBADMSG;
	flex = ver >= 1;
	v->producer_id = rn_kr_int64(&r);
	v->producer_epoch = rn_kr_int16(&r);
	v->timeout_ms = rn_kr_int32(&r);
	v->status = rn_kr_int8(&r);
	n = rn_kr_len(&r, flex, true, true);
	if (n > 0) {
		/* a topic takes at least 2 + 4 bytes: the count is bounded */
		v->topics = rn_kr_array(&r, a, n, sizeof(*v->topics), 5);
		if (v->topics == NULL)
			return -EBADMSG;
		v->n_topics = n;
		for (i = 0; i < n && !r.err; i++) {
			struct rn_txn_topic_parts *t = &v->topics[i];

			t->topic = rn_kr_string(&r, flex, false);
			t->n_parts = rn_kr_len(&r, flex, true, false);
			if (t->n_parts < 0)
				t->n_parts = 0;
			t->parts = rn_kr_array(&r, a, t->n_parts,
			    sizeof(*t->parts), 4);
			if (t->n_parts > 0 && t->parts == NULL)
				return -EBADMSG;
			for (j = 0; j < t->n_parts; j++)
				t->parts[j] = rn_kr_int32(&r);
			if (flex)
				rn_kr_skip_tags(&r);
		}
	}
	v->last_update_ms = rn_kr_int64(&r);
	v->start_ms = rn_kr_int64(&r);
	if (flex)
		rn_kr_skip_tags(&r);
	return r.err ? -EBADMSG : 0;
}

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
rn_txn_settings_load(const struct rn_config *cfg, struct rn_txn_settings *s)
{
	/* Kafka's defaults, then what the configuration says */
	s->partitions = (int32_t)cfg_int(cfg,
	    "transaction.state.log.num.partitions", 50);
	s->rf = (int16_t)cfg_int(cfg, "transaction.state.log.replication.factor",
	    3);
	s->min_isr = (int32_t)cfg_int(cfg, "transaction.state.log.min.isr", 2);
	s->segment_bytes = cfg_int(cfg, "transaction.state.log.segment.bytes",
	    104857600);
	s->max_timeout_ms = cfg_int(cfg, "transaction.max.timeout.ms", 900000);
	s->id_expiration_ms = cfg_int(cfg, "transactional.id.expiration.ms",
	    604800000);
	s->abort_interval_ms = cfg_int(cfg,
	    "transaction.abort.timed.out.transaction.cleanup.interval.ms", 10000);
	s->remove_interval_ms = cfg_int(cfg,
	    "transaction.remove.expired.transaction.cleanup.interval.ms", 3600000);
	if (s->partitions < 1)
		s->partitions = 1;
	if (s->rf < 1)
		s->rf = 1;
	if (s->min_isr < 1)
		s->min_isr = 1;
	if (s->abort_interval_ms < 1)
		s->abort_interval_ms = 1;
}
