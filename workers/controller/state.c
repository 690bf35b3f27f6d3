/*
 * Applying metadata records to the controller's state. Everything here is
 * a pure function of the records applied so far: no clock, no randomness,
 * no local configuration. Slots are allocated per broker (lowest free),
 * so every node computes every broker's slots the same way, and snapshots
 * carry them so a restore reproduces them exactly.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/ctlproto.h"
#include "common/log.h"
#include "common/mpbound.h"
#include "common/util.h"
#include "ipc/mdimage.h"
#include "ipc/mdimage_write.h"
#include "workers/controller/offline_dirs.h"
#include "workers/controller/records.h"
#include "workers/controller/state.h"

#define SNAPSHOT_VERSION 1

/* ---- configs -------------------------------------------------------- */

static int
cfg_find(const struct ctl_configs *c, const char *key, bool *found)
{
	int lo = 0, hi = c->n;

	while (lo < hi) {
		int mid = (lo + hi) / 2, r = strcmp(c->v[mid].key, key);

		if (r == 0) {
			*found = true;
			return mid;
		}
		if (r < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return lo;
}

const char *
ctl_configs_get(const struct ctl_configs *c, const char *key)
{
	bool found;
	int i;

	if (c == NULL)
		return NULL;
	i = cfg_find(c, key, &found);
	return found ? c->v[i].value : NULL;
}

static int
cfg_set(struct ctl_configs *c, const char *key, const char *value)
{
	bool found;
	int i = cfg_find(c, key, &found);
	char *v;

	if (value == NULL) {
		if (!found)
			return 0;
		free(c->v[i].key);
		free(c->v[i].value);
		memmove(&c->v[i], &c->v[i + 1], sizeof(c->v[0]) *
		    (size_t)(c->n - i - 1));
		c->n--;
		return 0;
	}
	if ((v = strdup(value)) == NULL)
		return -ENOMEM;
	if (found) {
		free(c->v[i].value);
		c->v[i].value = v;
		return 0;
	}
	if (c->n == c->cap) {
		int cap = c->cap ? c->cap * 2 : 8;
		struct ctl_kv *nv = realloc(c->v, sizeof(*nv) * (size_t)cap);

		if (nv == NULL) {
			free(v);
			return -ENOMEM;
		}
		c->v = nv;
		c->cap = cap;
	}
	memmove(&c->v[i + 1], &c->v[i], sizeof(c->v[0]) * (size_t)(c->n - i));
	if ((c->v[i].key = strdup(key)) == NULL) {
		memmove(&c->v[i], &c->v[i + 1], sizeof(c->v[0]) *
		    (size_t)(c->n - i));
		free(v);
		return -ENOMEM;
	}
	c->v[i].value = v;
	c->n++;
	return 0;
}

static void
cfg_free(struct ctl_configs *c)
{
	int i;

	for (i = 0; i < c->n; i++) {
		free(c->v[i].key);
		free(c->v[i].value);
	}
	free(c->v);
	memset(c, 0, sizeof(*c));
}

/* ---- slots ---------------------------------------------------------- */

static struct ctl_slotmap *
slotmap(struct ctl_state *st, int32_t broker, bool create)
{
	struct ctl_slotmap *m;
	int i;

	for (i = 0; i < st->n_slotmaps; i++)
		if (st->slotmaps[i].broker == broker)
			return &st->slotmaps[i];
	if (!create)
		return NULL;
	m = realloc(st->slotmaps, sizeof(*m) * (size_t)(st->n_slotmaps + 1));
	if (m == NULL)
		return NULL;
	st->slotmaps = m;
	m = &st->slotmaps[st->n_slotmaps++];
	memset(m, 0, sizeof(*m));
	m->broker = broker;
	return m;
}

static int
slot_mark(struct ctl_state *st, int32_t broker, int32_t slot)
{
	struct ctl_slotmap *m = slotmap(st, broker, true);
	int32_t w = slot / 64;

	if (m == NULL || slot < 0)
		return -ENOMEM;
	if (w >= m->nwords) {
		int32_t nw = w + 1 > m->nwords * 2 ? w + 1 : m->nwords * 2;
		uint64_t *nb = realloc(m->bits, sizeof(*nb) * (size_t)nw);

		if (nb == NULL)
			return -ENOMEM;
		memset(nb + m->nwords, 0, sizeof(*nb) *
		    (size_t)(nw - m->nwords));
		m->bits = nb;
		m->nwords = nw;
	}
	m->bits[w] |= 1ULL << (slot % 64);
	return 0;
}

static void
slot_free(struct ctl_state *st, int32_t broker, int32_t slot)
{
	struct ctl_slotmap *m = slotmap(st, broker, false);

	if (m != NULL && slot >= 0 && slot / 64 < m->nwords)
		m->bits[slot / 64] &= ~(1ULL << (slot % 64));
}

static int32_t
slot_alloc(struct ctl_state *st, int32_t broker)
{
	struct ctl_slotmap *m = slotmap(st, broker, true);
	int32_t w;

	if (m == NULL)
		return -1;
	for (w = 0; w < m->nwords; w++)
		if (m->bits[w] != ~0ULL)
			break;
	w = w * 64 + (w < m->nwords ? __builtin_ctzll(~m->bits[w]) : 0);
	return slot_mark(st, broker, w) == 0 ? w : -1;
}

/* ---- state ---------------------------------------------------------- */

void
ctl_state_init(struct ctl_state *st)
{
	memset(st, 0, sizeof(*st));
	st->changed.all = true; /* nothing published from it yet */
}

/* ---- what changed since the last image ------------------------------ */

/* Past this many, one whole image is cheaper than the delta. */
#define CHANGES_MAX 65536

static void
changed_all(struct ctl_state *st)
{
	st->changed.all = true;
	st->changed.n = 0;
}

static void
changed_part(struct ctl_state *st, const uint8_t topic_id[16], int32_t p)
{
	struct ctl_changes *c = &st->changed;

	if (c->all)
		return;
	if (c->n == c->cap) {
		int cap = c->cap ? c->cap * 2 : 64;
		struct ctl_changed_part *v;

		if (cap > CHANGES_MAX || (v = reallocarray(c->v, (size_t)cap,
		    sizeof(*v))) == NULL) {
			changed_all(st);
			return;
		}
		c->v = v;
		c->cap = cap;
	}
	memcpy(c->v[c->n].topic_id, topic_id, 16);
	c->v[c->n++].p = p;
}

void
ctl_state_changes_clear(struct ctl_state *st)
{
	st->changed.all = false;
	st->changed.n = 0;
}

static void
part_free(struct ctl_partition *p)
{
	free(p->replicas);
	free(p->isr);
	free(p->dirs);
	free(p->slots);
	free(p->adding);
	free(p->removing);
	memset(p, 0, sizeof(*p));
}

static void
topic_free(struct ctl_topic *t)
{
	int32_t i;

	for (i = 0; i < t->n_parts; i++)
		part_free(&t->parts[i]);
	free(t->parts);
	cfg_free(&t->configs);
	free(t);
}

static void
broker_free(struct ctl_broker *b)
{
	free(b->listeners);
	free(b->log_dirs);
}

void
ctl_state_free(struct ctl_state *st)
{
	int i;

	for (i = 0; i < st->n_topics; i++)
		topic_free(st->topics[i]);
	free(st->topics);
	free(st->by_name);
	free(st->by_id);
	for (i = 0; i < st->n_brokers; i++)
		broker_free(&st->brokers[i]);
	free(st->brokers);
	for (i = 0; i < st->n_broker_res; i++)
		cfg_free(&st->broker_res[i].cfg);
	free(st->broker_res);
	for (i = 0; i < st->n_slotmaps; i++)
		free(st->slotmaps[i].bits);
	free(st->slotmaps);
	ctl_acls_free(&st->acls);
	ctl_scram_free(&st->scram);
	ctl_quotas_free(&st->quotas);
	free(st->changed.v);
	ctl_state_init(st);
}

void
ctl_state_reset(struct ctl_state *st)
{
	void (*hook)(void *, const struct ctl_topic *) = st->on_remove_topic;
	void (*rhook)(void *, const struct ctl_topic *, int32_t, int32_t,
	    int32_t, const uint8_t *) = st->on_remove_replica;
	void *arg = st->hook_arg;

	ctl_state_free(st);
	ctl_state_init(st);
	st->on_remove_topic = hook;
	st->on_remove_replica = rhook;
	st->hook_arg = arg;
}

/* ---- topic indexes --------------------------------------------------- */

uint32_t
ctl_topic_name_hash(const char *name, size_t len)
{
	uint32_t h = 2166136261u;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= (uint8_t)(name[i] == '.' ? '_' : name[i]);
		h *= 16777619u;
	}
	return h;
}

static uint32_t
hash_id(const uint8_t id[16])
{
	uint32_t h;

	memcpy(&h, id + 4, sizeof(h));
	return h * 2654435761u;
}

static void
index_put(struct ctl_state *st, int i)
{
	const struct ctl_topic *t = st->topics[i];
	uint32_t m = st->idx_cap - 1, k;

	k = ctl_topic_name_hash(t->name, strlen(t->name)) & m;
	for (; st->by_name[k]; k = (k + 1) & m)
		;
	st->by_name[k] = i + 1;
	for (k = hash_id(t->id) & m; st->by_id[k]; k = (k + 1) & m)
		;
	st->by_id[k] = i + 1;
}

/* Rebuild both indexes for cap slots (at least twice the topics). */
static int
index_rebuild(struct ctl_state *st, uint32_t cap)
{
	int32_t *bn = calloc(cap, sizeof(*bn)), *bi = calloc(cap, sizeof(*bi));
	int i;

	if (bn == NULL || bi == NULL) {
		free(bn);
		free(bi);
		return -ENOMEM;
	}
	free(st->by_name);
	free(st->by_id);
	st->by_name = bn;
	st->by_id = bi;
	st->idx_cap = cap;
	for (i = 0; i < st->n_topics; i++)
		index_put(st, i);
	return 0;
}

/* topics[n_topics - 1] was just appended. */
static int
index_add(struct ctl_state *st)
{
	uint32_t cap = st->idx_cap ? st->idx_cap : 64;

	while ((uint32_t)st->n_topics * 2 > cap)
		cap *= 2;
	if (cap != st->idx_cap)
		return index_rebuild(st, cap);
	index_put(st, st->n_topics - 1);
	return 0;
}

struct ctl_topic *
ctl_state_topic(const struct ctl_state *st, const char *name, size_t len)
{
	uint32_t m = st->idx_cap - 1, k;
	int32_t e;

	if (st->idx_cap == 0)
		return NULL;
	for (k = ctl_topic_name_hash(name, len) & m; (e = st->by_name[k]) != 0;
	    k = (k + 1) & m) {
		struct ctl_topic *t = st->topics[e - 1];

		if (strlen(t->name) == len && memcmp(t->name, name, len) == 0)
			return t;
	}
	return NULL;
}

struct ctl_topic *
ctl_state_topic_by_id(const struct ctl_state *st, const uint8_t id[16])
{
	uint32_t m = st->idx_cap - 1, k;
	int32_t e;

	if (st->idx_cap == 0)
		return NULL;
	for (k = hash_id(id) & m; (e = st->by_id[k]) != 0; k = (k + 1) & m)
		if (memcmp(st->topics[e - 1]->id, id, 16) == 0)
			return st->topics[e - 1];
	return NULL;
}

struct ctl_topic *
ctl_state_topic_collision(const struct ctl_state *st, const char *name,
    size_t len)
{
	uint32_t m = st->idx_cap - 1, h;
	int32_t e;
	size_t k;

	if (st->idx_cap == 0 || (memchr(name, '.', len) == NULL &&
	    memchr(name, '_', len) == NULL))
		return NULL;
	/* colliding names hash alike: only this chain can hold one */
	for (h = ctl_topic_name_hash(name, len) & m; (e = st->by_name[h]) != 0;
	    h = (h + 1) & m) {
		const char *o = st->topics[e - 1]->name;

		if (strlen(o) != len || memcmp(o, name, len) == 0)
			continue;
		for (k = 0; k < len; k++) {
			char a = name[k] == '.' ? '_' : name[k];
			char b = o[k] == '.' ? '_' : o[k];

			if (a != b)
				break;
		}
		if (k == len)
			return st->topics[e - 1];
	}
	return NULL;
}

struct ctl_broker *
ctl_state_broker(const struct ctl_state *st, int32_t id)
{
	int i;

	for (i = 0; i < st->n_brokers; i++)
		if (st->brokers[i].id == id)
			return &st->brokers[i];
	return NULL;
}

static struct ctl_res_configs *
broker_res(struct ctl_state *st, const char *name, bool create)
{
	struct ctl_res_configs *r;
	int i;

	for (i = 0; i < st->n_broker_res; i++)
		if (strcmp(st->broker_res[i].name, name) == 0)
			return &st->broker_res[i];
	if (!create)
		return NULL;
	r = realloc(st->broker_res, sizeof(*r) * (size_t)(st->n_broker_res +
	    1));
	if (r == NULL)
		return NULL;
	st->broker_res = r;
	r = &st->broker_res[st->n_broker_res++];
	memset(r, 0, sizeof(*r));
	strlcpy(r->name, name, sizeof(r->name));
	return r;
}

const struct ctl_configs *
ctl_state_broker_configs(const struct ctl_state *st, const char *resource)
{
	struct ctl_res_configs *r = broker_res((struct ctl_state *)st,
	    resource, false);

	return r != NULL ? &r->cfg : NULL;
}

int
ctl_state_dir_load(const struct ctl_state *st, int32_t broker,
    const uint8_t dir[16])
{
	int i, n = 0;
	int32_t p, r;

	for (i = 0; i < st->n_topics; i++)
		for (p = 0; p < st->topics[i]->n_parts; p++) {
			const struct ctl_partition *pp =
			    &st->topics[i]->parts[p];

			for (r = 0; r < pp->n_replicas; r++)
				if (pp->replicas[r] == broker &&
				    pp->dirs != NULL &&
				    memcmp(pp->dirs[r], dir, 16) == 0)
					n++;
		}
	return n;
}

/* ---- applying records ----------------------------------------------- */

/* int32 array field; *out malloc'd (NULL when empty). */
static int
get_i32s(const msgpack_object *rec, const char *key, int32_t **out,
    int32_t *n)
{
	const msgpack_object *a = rn_mp_get(rec, key);
	uint32_t i;
	int64_t v;

	*out = NULL;
	*n = 0;
	if (a == NULL || a->type != MSGPACK_OBJECT_ARRAY)
		return -EINVAL;
	if (a->via.array.size == 0)
		return 0;
	if ((*out = calloc(a->via.array.size, sizeof(int32_t))) == NULL)
		return -ENOMEM;
	for (i = 0; i < a->via.array.size; i++) {
		if (!ctl_mp_int(&a->via.array.ptr[i], &v) || v < INT32_MIN ||
		    v > INT32_MAX) {
			free(*out);
			*out = NULL;
			return -EINVAL;
		}
		(*out)[i] = (int32_t)v;
	}
	*n = (int32_t)a->via.array.size;
	return 0;
}

static bool
get_i32(const msgpack_object *rec, const char *key, int32_t *out)
{
	int64_t v;

	if (!ctl_mp_int(rn_mp_get(rec, key), &v) || v < INT32_MIN ||
	    v > INT32_MAX)
		return false;
	*out = (int32_t)v;
	return true;
}

static int
apply_cluster_id(struct ctl_state *st, const msgpack_object *rec)
{
	char cid[23];
	uint8_t raw[16];
	int32_t mv = CTL_METADATA_VERSION;

	if (!ctl_mp_strcpy(rec, "cluster_id", cid, sizeof(cid)) ||
	    ctl_uuid_parse(cid, raw) != 0)
		return -EINVAL;
	get_i32(rec, "metadata_version", &mv);
	if (st->cluster_id[0] != '\0' && strcmp(st->cluster_id, cid) != 0) {
		/* the first committed one wins, as in KIP-1262 */
		log_warnx("ignoring a second ClusterId record (%s; the cluster "
		    "is %s)", cid, st->cluster_id);
		return -EINVAL;
	}
	strlcpy(st->cluster_id, cid, sizeof(st->cluster_id));
	st->metadata_version = (int16_t)mv;
	return 0;
}

static int
apply_feature_level(struct ctl_state *st, const msgpack_object *rec)
{
	char name[48];
	int32_t level;
	int i;

	if (!ctl_mp_strcpy(rec, "name", name, sizeof(name)) ||
	    !get_i32(rec, "level", &level))
		return -EINVAL;
	for (i = 0; i < st->n_features; i++)
		if (strcmp(st->features[i].name, name) == 0)
			break;
	if (i == st->n_features) {
		if (i == CTL_MAX_FEATURES)
			return -EINVAL;	/* skipped: it changes nothing */
		st->n_features++;
		strlcpy(st->features[i].name, name,
		    sizeof(st->features[i].name));
	}
	st->features[i].level = (int16_t)level;
	if (strcmp(name, "metadata.version") == 0)
		st->metadata_version = (int16_t)level;
	return 0;
}

/* A record's list of directory ids (absent or empty: none). */
static int
get_dirs(const msgpack_object *a, uint8_t (**out)[16], int *n)
{
	uint32_t i;

	*out = NULL;
	*n = 0;
	if (a == NULL || a->type != MSGPACK_OBJECT_ARRAY ||
	    a->via.array.size == 0)
		return 0;
	if ((*out = calloc(a->via.array.size, 16)) == NULL)
		return -ENOMEM;
	for (i = 0; i < a->via.array.size; i++) {
		const msgpack_object *d = &a->via.array.ptr[i];

		if (d->type == MSGPACK_OBJECT_BIN && d->via.bin.size == 16)
			memcpy((*out)[(*n)++], d->via.bin.ptr, 16);
	}
	return 0;
}

static int
apply_register_broker(struct ctl_state *st, const msgpack_object *rec)
{
	struct ctl_broker b, *slot;
	const msgpack_object *a, *o;
	uint32_t i;
	int64_t epoch;

	memset(&b, 0, sizeof(b));
	if (!get_i32(rec, "id", &b.id) || !ctl_mp_bin16_get(rec, "incarnation",
	    b.incarnation))
		return -EINVAL;
	b.epoch = ctl_mp_int(rn_mp_get(rec, "epoch"), &epoch) ? epoch :
	    (int64_t)st->applying_index;
	if ((o = rn_mp_get(rec, "rack")) != NULL && o->type ==
	    MSGPACK_OBJECT_STR)
		ctl_mp_strcpy(rec, "rack", b.rack, sizeof(b.rack));
	o = rn_mp_get(rec, "fenced");
	b.fenced = o != NULL && o->type == MSGPACK_OBJECT_BOOLEAN &&
	    o->via.boolean;
	o = rn_mp_get(rec, "in_controlled_shutdown");
	b.in_controlled_shutdown = o != NULL && o->type ==
	    MSGPACK_OBJECT_BOOLEAN && o->via.boolean;
	if (!ctl_mp_int(rn_mp_get(rec, "absent_since"), &b.absent_since_ms))
		b.absent_since_ms = 0;
	a = rn_mp_get(rec, "listeners");
	if (a != NULL && a->type == MSGPACK_OBJECT_ARRAY &&
	    a->via.array.size > 0) {
		b.listeners = calloc(a->via.array.size, sizeof(*b.listeners));
		if (b.listeners == NULL)
			return -ENOMEM;
		for (i = 0; i < a->via.array.size; i++) {
			const msgpack_object *l = &a->via.array.ptr[i];
			struct ctl_listener *bl = &b.listeners[b.n_listeners];

			if (!ctl_mp_strcpy(l, "name", bl->name,
			    sizeof(bl->name)) || !ctl_mp_strcpy(l, "host",
			    bl->host, sizeof(bl->host)))
				continue;
			bl->port = (uint16_t)rn_mp_get_int(l, "port", 0);
			b.n_listeners++;
		}
	}
	if (get_dirs(rn_mp_get(rec, "log_dirs"), &b.log_dirs,
	    &b.n_log_dirs) != 0) {
		broker_free(&b);
		return -ENOMEM;
	}
	if ((slot = ctl_state_broker(st, b.id)) != NULL) {
		broker_free(slot);
		*slot = b;
		return 0;
	}
	slot = realloc(st->brokers, sizeof(*slot) * (size_t)(st->n_brokers +
	    1));
	if (slot == NULL) {
		broker_free(&b);
		return -ENOMEM;
	}
	st->brokers = slot;
	/* keep them sorted by id: placement iterates in that order */
	for (i = 0; i < (uint32_t)st->n_brokers && st->brokers[i].id < b.id;
	    i++)
		;
	memmove(&st->brokers[i + 1], &st->brokers[i], sizeof(b) *
	    (size_t)(st->n_brokers - (int)i));
	st->brokers[i] = b;
	st->n_brokers++;
	return 0;
}

static int
apply_topic(struct ctl_state *st, const msgpack_object *rec)
{
	const msgpack_object *name = rn_mp_get(rec, "name");
	struct ctl_topic *t;
	uint8_t id[16];

	/* names are C strings here: one holding a NUL would be another
	 * (found by fuzzing: its snapshot named a different topic) */
	if (name == NULL || name->type != MSGPACK_OBJECT_STR ||
	    name->via.str.size == 0 || name->via.str.size >
	    CTL_TOPIC_NAME_MAX || memchr(name->via.str.ptr, '\0',
	    name->via.str.size) != NULL || !ctl_mp_bin16_get(rec, "id", id))
		return -EINVAL;
	if (ctl_state_topic(st, name->via.str.ptr, name->via.str.size) !=
	    NULL || ctl_state_topic_by_id(st, id) != NULL) {
		char topic[CTL_TOPIC_NAME_MAX + 1];

		memcpy(topic, name->via.str.ptr, name->via.str.size);
		topic[name->via.str.size] = '\0';
		rn_log_about(LOG_WARNING, rn_subj_topic(topic), "Topic record "
		    "for an existing topic %s: skipped", topic);
		return -EINVAL;
	}
	if (st->n_topics == st->cap_topics) {
		int cap = st->cap_topics ? st->cap_topics * 2 : 16;
		struct ctl_topic **nt = realloc(st->topics, sizeof(*nt) *
		    (size_t)cap);

		if (nt == NULL)
			return -ENOMEM;
		st->topics = nt;
		st->cap_topics = cap;
	}
	if ((t = calloc(1, sizeof(*t))) == NULL)
		return -ENOMEM;
	memcpy(t->name, name->via.str.ptr, name->via.str.size);
	memcpy(t->id, id, 16);
	st->topics[st->n_topics++] = t;
	if (index_add(st) != 0) {
		st->n_topics--;
		free(t);
		return -ENOMEM;
	}
	return 0;
}

/* A partition record's replicas, ISR, leader, epochs and directories. */
static int
part_decode(const msgpack_object *rec, struct ctl_partition *np)
{
	const msgpack_object *a;
	int32_t i;

	if (get_i32s(rec, "replicas", &np->replicas, &np->n_replicas) != 0 ||
	    get_i32s(rec, "isr", &np->isr, &np->n_isr) != 0 ||
	    !get_i32(rec, "leader", &np->leader) ||
	    !get_i32(rec, "leader_epoch", &np->leader_epoch) ||
	    !get_i32(rec, "partition_epoch", &np->partition_epoch))
		return -EINVAL;
	/* absent: no reassignment in progress */
	if ((rn_mp_get(rec, "adding") != NULL && get_i32s(rec, "adding",
	    &np->adding, &np->n_adding) != 0) || (rn_mp_get(rec,
	    "removing") != NULL && get_i32s(rec, "removing", &np->removing,
	    &np->n_removing) != 0))
		return -EINVAL;
	if (np->n_replicas > 0) {
		np->dirs = calloc((size_t)np->n_replicas, 16);
		np->slots = calloc((size_t)np->n_replicas, sizeof(int32_t));
		if (np->dirs == NULL || np->slots == NULL)
			return -ENOMEM;
	}
	a = rn_mp_get(rec, "directories");
	if (a != NULL && a->type == MSGPACK_OBJECT_ARRAY)
		for (i = 0; i < np->n_replicas &&
		    i < (int32_t)a->via.array.size; i++) {
			const msgpack_object *d = &a->via.array.ptr[i];

			if (d->type == MSGPACK_OBJECT_BIN &&
			    d->via.bin.size == 16)
				memcpy(np->dirs[i], d->via.bin.ptr, 16);
		}
	return 0;
}

/*
 * Slots a snapshot gives are ones a node can have: below the largest
 * shm.max.partitions. A larger one sized its broker's bitmap (2^31 - 1:
 * 256 MiB, found by fuzzing) for a slot no image ever shows.
 */
static bool
slots_possible(const int32_t *slots, int32_t n)
{
	int32_t i;

	for (i = 0; i < n; i++)
		if (slots[i] < 0 || slots[i] >= CTL_SLOTS_MAX)
			return false;
	return true;
}

/*
 * Slots: a replica that stays keeps its slot; a new one takes its
 * broker's lowest free slot (or, from a snapshot, the one recorded).
 */
static int
part_slots(struct ctl_state *st, const struct ctl_partition *old,
    struct ctl_partition *np, const int32_t *given_slots)
{
	int32_t i, j;

	if (old != NULL)
		for (j = 0; j < old->n_replicas; j++) {
			for (i = 0; i < np->n_replicas; i++)
				if (np->replicas[i] == old->replicas[j])
					break;
			if (i == np->n_replicas)
				slot_free(st, old->replicas[j], old->slots[j]);
		}
	for (i = 0; i < np->n_replicas; i++) {
		np->slots[i] = -1;
		for (j = 0; old != NULL && j < old->n_replicas; j++)
			if (old->replicas[j] == np->replicas[i])
				np->slots[i] = old->slots[j];
		if (np->slots[i] >= 0)
			continue;
		if (given_slots != NULL) {
			np->slots[i] = given_slots[i];
			if (slot_mark(st, np->replicas[i], np->slots[i]) != 0)
				return -ENOMEM;
		} else
			np->slots[i] = slot_alloc(st, np->replicas[i]);
	}
	return 0;
}

/* Tell the hook of each replica of old that np no longer has. */
static void
replicas_dropped(struct ctl_state *st, const struct ctl_topic *t, int32_t p,
    const struct ctl_partition *old, const struct ctl_partition *np)
{
	int32_t i, j;

	if (st->on_remove_replica == NULL)
		return;
	for (j = 0; j < old->n_replicas; j++) {
		for (i = 0; i < np->n_replicas; i++)
			if (np->replicas[i] == old->replicas[j])
				break;
		if (i == np->n_replicas)
			st->on_remove_replica(st->hook_arg, t, p,
			    old->replicas[j], old->slots[j], old->dirs[j]);
	}
}

static int
apply_partition(struct ctl_state *st, const msgpack_object *rec)
{
	struct ctl_partition np, *old = NULL;
	struct ctl_topic *t;
	uint8_t tid[16];
	int32_t p, *given_slots = NULL, n_given = 0;
	int rc;

	memset(&np, 0, sizeof(np));
	if (!ctl_mp_bin16_get(rec, "topic_id", tid) || !get_i32(rec,
	    "partition", &p) || p < 0)
		return -EINVAL;
	if ((t = ctl_state_topic_by_id(st, tid)) == NULL) {
		log_warnx("Partition record for an unknown topic id: skipped");
		return -EINVAL;
	}
	if (p > t->n_parts) {
		rn_log_about(LOG_WARNING, rn_subj_part(t->name, p), "Partition "
		    "record for %s-%d leaves a gap: skipped", t->name, p);
		return -EINVAL;
	}
	if ((rc = part_decode(rec, &np)) != 0)
		goto out;
	rc = -EINVAL;
	if (rn_mp_get(rec, "slots") != NULL && (get_i32s(rec, "slots",
	    &given_slots, &n_given) != 0 || n_given != np.n_replicas ||
	    !slots_possible(given_slots, n_given)))
		goto out;
	if (p < t->n_parts)
		old = &t->parts[p];
	if (old != NULL)
		replicas_dropped(st, t, p, old, &np);
	if ((rc = part_slots(st, old, &np, given_slots)) != 0)
		goto out;
	if (old != NULL) {
		part_free(old);
		*old = np;
		changed_part(st, tid, p);
	} else {
		struct ctl_partition *nparts = realloc(t->parts,
		    sizeof(*nparts) * (size_t)(t->n_parts + 1));

		if (nparts == NULL) {
			rc = -ENOMEM;
			goto out;
		}
		t->parts = nparts;
		t->parts[t->n_parts++] = np;
		changed_all(st); /* a new partition: the topic's shape */
	}
	free(given_slots);
	return 0;
out:
	free(given_slots);
	part_free(&np);
	return rc;
}

static int
apply_config(struct ctl_state *st, const msgpack_object *rec)
{
	const msgpack_object *rn = rn_mp_get(rec, "resource_name");
	const msgpack_object *v = rn_mp_get(rec, "value");
	char key[256], value[4096], rname[CTL_TOPIC_NAME_MAX + 1];
	int64_t type;
	struct ctl_configs *c;

	if (!ctl_mp_int(rn_mp_get(rec, "resource_type"), &type) ||
	    rn == NULL || rn->type != MSGPACK_OBJECT_STR ||
	    rn->via.str.size >= sizeof(rname) ||
	    memchr(rn->via.str.ptr, '\0', rn->via.str.size) != NULL ||
	    !ctl_mp_strcpy(rec, "key", key, sizeof(key)))
		return -EINVAL;
	memcpy(rname, rn->via.str.ptr, rn->via.str.size);
	rname[rn->via.str.size] = '\0';
	if (v != NULL && v->type == MSGPACK_OBJECT_STR) {
		if (!ctl_mp_strcpy(rec, "value", value, sizeof(value)))
			return -EINVAL;
	} else if (v != NULL && v->type != MSGPACK_OBJECT_NIL)
		return -EINVAL;
	if (type == CTL_RES_TOPIC) {
		struct ctl_topic *t = ctl_state_topic(st, rname,
		    strlen(rname));

		if (t == NULL) {
			rn_log_about(LOG_WARNING, rn_subj_topic(rname), "Config "
			    "record for unknown topic %s: skipped", rname);
			return -EINVAL;
		}
		c = &t->configs;
	} else if (type == CTL_RES_BROKER) {
		struct ctl_res_configs *r = broker_res(st, rname, true);

		if (r == NULL)
			return -ENOMEM;
		c = &r->cfg;
	} else
		return -EINVAL;
	return cfg_set(c, key, v != NULL && v->type == MSGPACK_OBJECT_STR ?
	    value : NULL);
}

static int
apply_remove_topic(struct ctl_state *st, const msgpack_object *rec)
{
	const struct ctl_topic *t;
	uint8_t id[16];
	int i;
	int32_t p, r;

	if (!ctl_mp_bin16_get(rec, "id", id) ||
	    (t = ctl_state_topic_by_id(st, id)) == NULL)
		return -EINVAL;
	for (i = 0; st->topics[i] != t; i++)
		;
	if (st->on_remove_topic != NULL)
		st->on_remove_topic(st->hook_arg, st->topics[i]);
	for (p = 0; p < st->topics[i]->n_parts; p++) {
		struct ctl_partition *pp = &st->topics[i]->parts[p];

		for (r = 0; r < pp->n_replicas; r++)
			slot_free(st, pp->replicas[r], pp->slots[r]);
	}
	topic_free(st->topics[i]);
	memmove(&st->topics[i], &st->topics[i + 1], sizeof(st->topics[0]) *
	    (size_t)(st->n_topics - i - 1));
	st->n_topics--;
	/* the later topics moved down one place */
	return index_rebuild(st, st->idx_cap);
}

static int
apply_broker_change(struct ctl_state *st, const msgpack_object *rec)
{
	const msgpack_object *o;
	struct ctl_broker *b;
	uint8_t (*dirs)[16] = NULL;
	int32_t id;
	int n_dirs = 0;

	if (!get_i32(rec, "id", &id))
		return -EINVAL;
	if ((b = ctl_state_broker(st, id)) == NULL) {
		rn_log_about(LOG_WARNING, rn_subj_broker(id), "BrokerChange "
		    "record for unknown broker %d: skipped", id);
		return -EINVAL;
	}
	if ((o = rn_mp_get(rec, "fenced")) != NULL && o->type ==
	    MSGPACK_OBJECT_BOOLEAN)
		b->fenced = o->via.boolean;
	if ((o = rn_mp_get(rec, "in_controlled_shutdown")) != NULL &&
	    o->type == MSGPACK_OBJECT_BOOLEAN)
		b->in_controlled_shutdown = o->via.boolean;
	if ((o = rn_mp_get(rec, "log_dirs")) != NULL) {
		/* the dirs still online (a dir failed) */
		if (get_dirs(o, &dirs, &n_dirs) != 0)
			return -ENOMEM;
		free(b->log_dirs);
		b->log_dirs = dirs;
		b->n_log_dirs = n_dirs;
	}
	if (!b->fenced)
		b->absent_since_ms = 0;
	else
		ctl_mp_int(rn_mp_get(rec, "absent_since"),
		    &b->absent_since_ms);
	return 0;
}

static int
apply_unregister_broker(struct ctl_state *st, const msgpack_object *rec)
{
	struct ctl_broker *b;
	int32_t id;
	int i;

	if (!get_i32(rec, "id", &id) || (b = ctl_state_broker(st, id)) ==
	    NULL)
		return -EINVAL;
	i = (int)(b - st->brokers);
	broker_free(b);
	memmove(&st->brokers[i], &st->brokers[i + 1], sizeof(*b) *
	    (size_t)(st->n_brokers - i - 1));
	st->n_brokers--;
	return 0;
}

/* Leader and ISR change: replicas, dirs and slots stay. */
static int
apply_partition_change(struct ctl_state *st, const msgpack_object *rec)
{
	struct ctl_partition *pp;
	struct ctl_topic *t;
	uint8_t tid[16];
	int32_t p, leader, le, pe, *isr, n_isr;

	if (!ctl_mp_bin16_get(rec, "topic_id", tid) || !get_i32(rec,
	    "partition", &p) || !get_i32(rec, "leader", &leader) ||
	    !get_i32(rec, "leader_epoch", &le) ||
	    !get_i32(rec, "partition_epoch", &pe))
		return -EINVAL;
	if ((t = ctl_state_topic_by_id(st, tid)) == NULL || p < 0 ||
	    p >= t->n_parts) {
		log_warnx("PartitionChange record for an unknown partition: "
		    "skipped");
		return -EINVAL;
	}
	if (get_i32s(rec, "isr", &isr, &n_isr) != 0)
		return -EINVAL;
	pp = &t->parts[p];
	free(pp->isr);
	pp->isr = isr;
	pp->n_isr = n_isr;
	pp->leader = leader;
	pp->leader_epoch = le;
	pp->partition_epoch = pe;
	changed_part(st, tid, p);
	return 0;
}

int
ctl_state_apply_record(struct ctl_state *st, const msgpack_object *rec)
{
	enum ctl_rec_type t = ctl_rec_type_of(rec);
	int rc;

	switch (t) {
	case CTL_REC_CLUSTER_ID: rc = apply_cluster_id(st, rec); break;
	case CTL_REC_FEATURE_LEVEL: rc = apply_feature_level(st, rec); break;
	case CTL_REC_REGISTER_BROKER: rc = apply_register_broker(st, rec);
		break;
	case CTL_REC_TOPIC: rc = apply_topic(st, rec); break;
	case CTL_REC_PARTITION: rc = apply_partition(st, rec); break;
	case CTL_REC_CONFIG: rc = apply_config(st, rec); break;
	case CTL_REC_REMOVE_TOPIC: rc = apply_remove_topic(st, rec); break;
	case CTL_REC_BROKER_CHANGE: rc = apply_broker_change(st, rec); break;
	case CTL_REC_UNREGISTER_BROKER: rc = apply_unregister_broker(st, rec);
		break;
	case CTL_REC_PARTITION_CHANGE: rc = apply_partition_change(st, rec);
		break;
	case CTL_REC_ACL: rc = ctl_acls_apply(st, rec); break;
	case CTL_REC_REMOVE_ACL: rc = ctl_acls_apply_remove(st, rec); break;
	case CTL_REC_SCRAM: rc = ctl_scram_apply(st, rec); break;
	case CTL_REC_REMOVE_SCRAM: rc = ctl_scram_apply_remove(st, rec);
		break;
	case CTL_REC_CLIENT_QUOTA: rc = ctl_quotas_apply(st, rec); break;
	default:
		/* a newer record type: skipping keeps older nodes running */
		log_warnx("unknown metadata record type at index %llu: skipped",
		    (unsigned long long)st->applying_index);
		return -EINVAL;
	}
	if (rc != 0)
		log_warnx("%s record at index %llu not applied: %s",
		    ctl_rec_type_name(t),
		    (unsigned long long)st->applying_index, strerror(-rc));
	else if (t != CTL_REC_PARTITION && t != CTL_REC_PARTITION_CHANGE)
		changed_all(st); /* brokers, topics, configs: the whole image */
	return rc;
}

int
ctl_state_apply(struct ctl_state *st, const void *buf, size_t len,
    uint64_t index)
{
	msgpack_unpacked up;
	uint32_t i;
	int n = 0;

	msgpack_unpacked_init(&up);
	/* bounded: an entry comes from the leader, over the network */
	if (rn_mp_unpack(&up, buf, len) != MSGPACK_UNPACK_SUCCESS ||
	    up.data.type != MSGPACK_OBJECT_ARRAY) {
		msgpack_unpacked_destroy(&up);
		log_warnx("log entry %llu is not a record batch: skipped",
		    (unsigned long long)index);
		st->last_index = index;
		return -EBADMSG;
	}
	st->applying_index = index;
	for (i = 0; i < up.data.via.array.size; i++)
		if (ctl_state_apply_record(st, &up.data.via.array.ptr[i]) == 0)
			n++;
	msgpack_unpacked_destroy(&up);
	st->last_index = index;
	return n;
}

/* ---- snapshots ------------------------------------------------------ */

int
ctl_state_snapshot(const struct ctl_state *st, msgpack_sbuffer *sb)
{
	struct ctl_batch b;
	msgpack_packer pk;
	void *entry;
	size_t len;
	int i, k;
	int32_t p;

	ctl_batch_init(&b);
	for (i = 0; i < st->n_features; i++)
		ctl_rec_feature_level(&b, st->features[i].name,
		    st->features[i].level);
	/*
	 * After the feature levels: both set metadata_version, and the
	 * state's may have come from a ClusterId record after its
	 * metadata.version level (found by fuzzing: a restored node had the
	 * level's version, not the one the node that took it used).
	 */
	if (st->cluster_id[0] != '\0')
		ctl_rec_cluster_id(&b, st->cluster_id, st->metadata_version);
	for (i = 0; i < st->n_brokers; i++)
		ctl_rec_register_broker(&b, &st->brokers[i], true);
	for (i = 0; i < st->n_broker_res; i++)
		for (k = 0; k < st->broker_res[i].cfg.n; k++)
			ctl_rec_config(&b, CTL_RES_BROKER,
			    st->broker_res[i].name,
			    strlen(st->broker_res[i].name),
			    st->broker_res[i].cfg.v[k].key,
			    st->broker_res[i].cfg.v[k].value);
	for (i = 0; i < st->n_topics; i++) {
		const struct ctl_topic *t = st->topics[i];

		ctl_rec_topic(&b, t->name, strlen(t->name), t->id);
		for (k = 0; k < t->configs.n; k++)
			ctl_rec_config(&b, CTL_RES_TOPIC, t->name,
			    strlen(t->name), t->configs.v[k].key,
			    t->configs.v[k].value);
		for (p = 0; p < t->n_parts; p++)
			ctl_rec_partition(&b, t->id, p, &t->parts[p], true);
	}
	ctl_acls_snapshot(st, &b);
	ctl_scram_snapshot(st, &b);
	ctl_quotas_snapshot(st, &b);
	entry = ctl_batch_finish(&b, &len);
	ctl_batch_free(&b);
	if (entry == NULL)
		return -ENOMEM;
	/* {"v", "index", "term", "records": [...]} */
	msgpack_packer_init(&pk, sb, msgpack_sbuffer_write);
	msgpack_pack_map(&pk, 4);
	rn_mp_pack_str(&pk, "v");
	msgpack_pack_int(&pk, SNAPSHOT_VERSION);
	rn_mp_pack_str(&pk, "index");
	msgpack_pack_uint64(&pk, st->last_index);
	rn_mp_pack_str(&pk, "term");
	msgpack_pack_uint64(&pk, st->last_term);
	rn_mp_pack_str(&pk, "records");
	msgpack_sbuffer_write(sb, entry, len);
	free(entry);
	return 0;
}

/*
 * A snapshot's index or term, uint64 as packed (0 when absent or not a
 * positive integer): read as int64, one past INT64_MAX came back 0 and a
 * negative one wrapped (found by fuzzing).
 */
static uint64_t
snapshot_u64(const msgpack_object *map, const char *key)
{
	const msgpack_object *o = rn_mp_get(map, key);

	return o != NULL && o->type == MSGPACK_OBJECT_POSITIVE_INTEGER ?
	    o->via.u64 : 0;
}

int
ctl_state_restore(struct ctl_state *st, const void *buf, size_t len)
{
	msgpack_unpacked up;
	const msgpack_object *recs;
	uint32_t i;
	int rc = 0;

	msgpack_unpacked_init(&up);
	if (rn_mp_unpack(&up, buf, len) != MSGPACK_UNPACK_SUCCESS ||
	    rn_mp_get_int(&up.data, "v", -1) != SNAPSHOT_VERSION ||
	    (recs = rn_mp_get(&up.data, "records")) == NULL ||
	    recs->type != MSGPACK_OBJECT_ARRAY) {
		msgpack_unpacked_destroy(&up);
		return -EBADMSG;
	}
	ctl_state_reset(st);
	st->last_index = snapshot_u64(&up.data, "index");
	st->last_term = snapshot_u64(&up.data, "term");
	st->applying_index = st->last_index;
	for (i = 0; i < recs->via.array.size; i++)
		if (ctl_state_apply_record(st, &recs->via.array.ptr[i]) != 0)
			rc = -EBADMSG;
	msgpack_unpacked_destroy(&up);
	return rc;
}

/* ---- the image ------------------------------------------------------ */

static bool
topic_internal(const char *name)
{
	return strcmp(name, "__consumer_offsets") == 0 ||
	    strcmp(name, "__transaction_state") == 0;
}

static int
local_dir_index(const struct ctl_local *loc, const uint8_t dir[16])
{
	int i;

	if (ctl_uuid_is_zero(dir))
		return -1;
	for (i = 0; i < loc->n_dirs; i++)
		if (memcmp(loc->dir_ids[i], dir, 16) == 0)
			return i;
	return -1;
}

void
ctl_state_local_placement(const struct ctl_state *st,
    const struct ctl_local *loc, const struct ctl_topic *t, int32_t p,
    int32_t *slot, int32_t *dir)
{
	const struct ctl_partition *pp = &t->parts[p];
	int32_t r;

	(void)st;
	*slot = -1;
	*dir = -1;
	for (r = 0; r < pp->n_replicas; r++) {
		if (pp->replicas[r] != loc->node_id)
			continue;
		if (pp->slots[r] >= 0 &&
		    (uint32_t)pp->slots[r] < loc->max_partitions)
			*slot = pp->slots[r];
		*dir = local_dir_index(loc, pp->dirs[r]);
		if (ctl_dir_is_lost(pp->dirs[r]))
			*dir = RN_MDV_DIR_LOST; /* down until placed again */
		else if (*dir < 0 && loc->n_dirs > 0)
			*dir = 0; /* directory unknown here: the first dir */
		return;
	}
}

static bool
replica_offline(void *arg, int32_t id)
{
	const struct ctl_broker *b = ctl_state_broker(arg, id);

	return b == NULL || b->fenced;
}

static void
enc_configs(struct rn_mdimage_enc *e, const struct ctl_configs *c)
{
	int i;

	for (i = 0; c != NULL && i < c->n; i++)
		rn_mdimage_enc_config(e, c->v[i].key, c->v[i].value);
}

static void
enc_broker(struct rn_mdimage_enc *e, const struct ctl_broker *b)
{
	struct rn_mdimage_enc_broker eb = {
		.id = b->id,
		/* the first advertised listener; all of them follow */
		.host = b->n_listeners ? b->listeners[0].host : "",
		.port = b->n_listeners ? b->listeners[0].port : 0,
		.rack = b->rack[0] != '\0' ? b->rack : NULL,
		.fenced = b->fenced,
		.shutdown = b->in_controlled_shutdown,
		.absent_since_ms = b->absent_since_ms,
		.epoch = b->epoch,
		.n_listeners = b->n_listeners,
	};
	int k;

	rn_mdimage_enc_broker(e, &eb);
	for (k = 0; k < b->n_listeners; k++)
		rn_mdimage_enc_listener(e, b->listeners[k].name,
		    b->listeners[k].host, b->listeners[k].port);
}

/* A partition as this node's image shows it. */
static void
enc_part_of(const struct ctl_state *st, const struct ctl_local *loc,
    const struct ctl_topic *t, int32_t p, struct rn_mdimage_enc_part *ep)
{
	static const uint8_t zero[16];
	const struct ctl_partition *pp = &t->parts[p];
	int32_t r;

	*ep = (struct rn_mdimage_enc_part){
		.p = p, .leader = pp->leader,
		.leader_epoch = pp->leader_epoch,
		.partition_epoch = pp->partition_epoch,
		.replicas = pp->replicas, .n_replicas = pp->n_replicas,
		.isr = pp->isr, .n_isr = pp->n_isr,
		.dirs = (const uint8_t (*)[16])pp->dirs,
		.dir_id = zero,
	};
	ctl_state_local_placement(st, loc, t, p, &ep->slot, &ep->dir);
	for (r = 0; r < pp->n_replicas; r++)
		if (pp->replicas[r] == loc->node_id)
			ep->dir_id = pp->dirs[r];
}

static void
enc_topic(struct rn_mdimage_enc *e, const struct ctl_state *st,
    const struct ctl_local *loc, const struct ctl_topic *t)
{
	struct rn_mdimage_enc_part ep;
	int32_t p;

	rn_mdimage_enc_topic(e, t->name, t->id, topic_internal(t->name),
	    t->configs.n);
	enc_configs(e, &t->configs);
	rn_mdimage_enc_partitions(e, t->n_parts);
	for (p = 0; p < t->n_parts; p++) {
		enc_part_of(st, loc, t, p, &ep);
		rn_mdimage_enc_partition(e, &ep);
	}
}

int
ctl_state_encode_image(const struct ctl_state *st,
    const struct ctl_local *loc, msgpack_sbuffer *sb)
{
	struct rn_mdimage_enc e = { .offline = replica_offline,
	    .arg = (void *)st, .lost_dir = ctl_dir_lost };
	struct rn_mdimage_enc_head h = { .cluster_id = st->cluster_id,
	    .controller_id = loc->controller_id, .epoch = loc->epoch,
	    .offset = st->last_index, .n_brokers = st->n_brokers };
	const struct ctl_configs *c;
	char node[16];
	int i;

	rn_mdimage_enc_begin(&e, sb, &h);
	for (i = 0; i < st->n_brokers; i++)
		enc_broker(&e, &st->brokers[i]);
	rn_mdimage_enc_topics(&e, st->n_topics);
	for (i = 0; i < st->n_topics; i++)
		enc_topic(&e, st, loc, st->topics[i]);
	c = ctl_state_broker_configs(st, "");
	rn_mdimage_enc_broker_configs(&e, c != NULL ? c->n : 0);
	enc_configs(&e, c);
	snprintf(node, sizeof(node), "%d", loc->node_id);
	c = ctl_state_broker_configs(st, node);
	rn_mdimage_enc_node_configs(&e, c != NULL ? c->n : 0);
	enc_configs(&e, c);
	ctl_acls_encode(st, &e);
	ctl_scram_encode(st, &e);
	ctl_quotas_encode(st, &e);
	return 0;
}

int
ctl_state_encode_delta(const struct ctl_state *st,
    const struct ctl_local *loc, msgpack_sbuffer *sb)
{
	struct rn_mdimage_enc e = { .offline = replica_offline,
	    .arg = (void *)st, .lost_dir = ctl_dir_lost };
	struct rn_mdimage_enc_head h = { .cluster_id = st->cluster_id,
	    .controller_id = loc->controller_id, .epoch = loc->epoch,
	    .offset = st->last_index };
	const struct ctl_changes *c = &st->changed;
	struct rn_mdimage_enc_part ep;
	int i;

	if (c->all)
		return -ESTALE;
	for (i = 0; i < c->n; i++) {
		const struct ctl_topic *t = ctl_state_topic_by_id(st,
		    c->v[i].topic_id);

		if (t == NULL || c->v[i].p >= t->n_parts)
			return -ESTALE;
	}
	rn_mdimage_enc_delta(&e, sb, &h, c->n);
	for (i = 0; i < c->n; i++) {
		const struct ctl_topic *t = ctl_state_topic_by_id(st,
		    c->v[i].topic_id);

		enc_part_of(st, loc, t, c->v[i].p, &ep);
		rn_mdimage_enc_delta_partition(&e, t->id, &ep);
	}
	return 0;
}
