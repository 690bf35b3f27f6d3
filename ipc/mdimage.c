/*
 * Publishing and reading the metadata image. The reader copies the body
 * out under the seqlock into a private buffer and parses it only when the
 * version moved, into one arena per view, so lookups never allocate.
 */
#include "autoconf.h"

#include <errno.h>
#include <inttypes.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <msgpack.h>

#include "common/arena.h"
#include "common/ctlproto.h"
#include "common/util.h"
#include "ipc/mdimage.h"

#define READ_SPINS (1u << 16)
#define READ_TRIES 64
#define MDV_TRIM_BYTES (256 * 1024)

/* ---- region -------------------------------------------------------- */

size_t
rn_mdimage_shm_size(const struct rn_shm_params *p)
{
	/*
	 * The image describes the whole cluster (~100 bytes a partition with
	 * its name share and replica lists), and a cluster holds several
	 * times the partitions of one node: 1 KiB per local slot. Only the
	 * pages the image uses are ever backed.
	 */
	return sizeof(struct rn_meta_image) + 64 * 1024 +
	    (size_t)p->max_partitions * 1024;
}

int
rn_mdimage_shm_init(void *base, size_t size, const struct rn_shm_params *p)
{
	struct rn_meta_image *mi = base;

	(void)p;
	mi->body_size = size - sizeof(*mi);
	mi->writer_pid = 0;
	return 0;
}

/* ---- writer ------------------------------------------------------- */

int
rn_mdimage_publish(struct rn_shm *shm, int32_t node_id,
    const char *cluster_id, const void *body, size_t len)
{
	struct rn_meta_image *mi = rn_shm_meta(shm);
	char *dst = (char *)(mi + 1);
	uint64_t len64 = len;

	if (mi->body_size < sizeof(len64) || len > mi->body_size -
	    sizeof(len64))
		return -EMSGSIZE;
	rn_seq_write_begin(&mi->lock);
	mi->writer_pid = getpid();
	mi->node_id = node_id;
	mi->published_ms = rn_wallclock_ms();
	strlcpy(mi->cluster_id, cluster_id, sizeof(mi->cluster_id));
	memcpy(dst, &len64, sizeof(len64));
	memcpy(dst + sizeof(len64), body, len);
	atomic_fetch_add_explicit(&mi->version, 1, memory_order_relaxed);
	rn_seq_write_end(&mi->lock);
	return 0;
}

/* ---- reader: arena -------------------------------------------------- */

struct mdv_priv {
	struct rn_arena arena;   /* uncapped: the image was bounded when written */
	int32_t *topic_by_name;  /* open addressing, -1 empty */
	int32_t *topic_by_id;
	uint32_t hmask;
	char *copy;              /* body copied out of shared memory */
	size_t copy_cap;
};

static struct mdv_priv *
priv_new(void)
{
	struct mdv_priv *p = calloc(1, sizeof(*p));

	if (p != NULL)
		rn_arena_init(&p->arena, SIZE_MAX);
	return p;
}

static void *
arena_alloc(struct mdv_priv *p, size_t n)
{
	return rn_arena_alloc(&p->arena, n);
}

static char *
arena_str(struct mdv_priv *p, const msgpack_object *o)
{
	if (o == NULL || o->type != MSGPACK_OBJECT_STR)
		return NULL;
	return rn_arena_strndup(&p->arena, o->via.str.ptr, o->via.str.size);
}

static void
priv_free(struct mdv_priv *p)
{
	if (p == NULL)
		return;
	rn_arena_free(&p->arena);
	free(p->topic_by_name);
	free(p->topic_by_id);
	free(p->copy);
	free(p);
}

void
rn_mdview_init(struct rn_mdview *v)
{
	memset(v, 0, sizeof(*v));
	v->controller_id = -1;
}

void
rn_mdview_free(struct rn_mdview *v)
{
	priv_free(v->priv);
	rn_mdview_init(v);
}

/* ---- reader: parsing ------------------------------------------------ */

static uint32_t
hash_bytes(const void *b, size_t n)
{
	const uint8_t *p = b;
	uint32_t h = 2166136261u;
	size_t i;

	for (i = 0; i < n; i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

static int64_t
mp_i64(const msgpack_object *map, const char *key, int64_t dflt)
{
	return rn_mp_get_int(map, key, dflt);
}

static int
load_i32s(struct mdv_priv *p, const msgpack_object *map, const char *key,
    const int32_t **out, int32_t *n)
{
	const msgpack_object *a = rn_mp_get(map, key);
	int32_t *v;
	uint32_t i;

	*out = NULL;
	*n = 0;
	if (a == NULL)
		return 0;
	if (a->type != MSGPACK_OBJECT_ARRAY)
		return -EBADMSG;
	if ((v = arena_alloc(p, sizeof(int32_t) * a->via.array.size)) ==
	    NULL)
		return -ENOMEM;
	for (i = 0; i < a->via.array.size; i++) {
		const msgpack_object *o = &a->via.array.ptr[i];

		if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
			v[i] = (int32_t)o->via.u64;
		else if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
			v[i] = (int32_t)o->via.i64;
		else
			return -EBADMSG;
	}
	*out = v;
	*n = (int32_t)a->via.array.size;
	return 0;
}

static int
cfg_cmp(const void *a, const void *b)
{
	return strcmp(((const struct rn_mdv_config *)a)->key,
	    ((const struct rn_mdv_config *)b)->key);
}

static int
load_configs(struct mdv_priv *p, const msgpack_object *m,
    const struct rn_mdv_config **out, int *n)
{
	struct rn_mdv_config *c;
	uint32_t i;

	*out = NULL;
	*n = 0;
	if (m == NULL || m->type == MSGPACK_OBJECT_NIL)
		return 0;
	if (m->type != MSGPACK_OBJECT_MAP)
		return -EBADMSG;
	if ((c = arena_alloc(p, sizeof(*c) * m->via.map.size)) == NULL)
		return -ENOMEM;
	for (i = 0; i < m->via.map.size; i++) {
		c[i].key = arena_str(p, &m->via.map.ptr[i].key);
		c[i].value = arena_str(p, &m->via.map.ptr[i].val);
		if (c[i].key == NULL || c[i].value == NULL)
			return -EBADMSG;
	}
	qsort(c, m->via.map.size, sizeof(*c), cfg_cmp);
	*out = c;
	*n = (int)m->via.map.size;
	return 0;
}

static int
load_partition(struct mdv_priv *p, const msgpack_object *m,
    struct rn_mdv_partition *pp)
{
	const msgpack_object *d;
	int rc;

	if (m->type != MSGPACK_OBJECT_MAP)
		return -EBADMSG;
	pp->p = (int32_t)mp_i64(m, "p", -1);
	pp->leader = (int32_t)mp_i64(m, "leader", -1);
	pp->leader_epoch = (int32_t)mp_i64(m, "epoch", -1);
	pp->partition_epoch = (int32_t)mp_i64(m, "pepoch", -1);
	pp->slot = (int32_t)mp_i64(m, "slot", -1);
	pp->dir = (int32_t)mp_i64(m, "dir", -1);
	if ((d = rn_mp_get(m, "dir_id")) != NULL && d->type ==
	    MSGPACK_OBJECT_BIN && d->via.bin.size == 16)
		memcpy(pp->dir_id, d->via.bin.ptr, 16);
	if ((rc = load_i32s(p, m, "replicas", &pp->replicas,
	    &pp->n_replicas)) != 0 || (rc = load_i32s(p, m, "isr", &pp->isr,
	    &pp->n_isr)) != 0 || (rc = load_i32s(p, m, "offline",
	    &pp->offline, &pp->n_offline)) != 0)
		return rc;
	return 0;
}

static int
load_topic(struct mdv_priv *p, const msgpack_object *m,
    struct rn_mdv_topic *t)
{
	const msgpack_object *o, *parts;
	struct rn_mdv_partition *pp;
	uint32_t i;
	int rc;

	if (m->type != MSGPACK_OBJECT_MAP ||
	    (t->name = arena_str(p, rn_mp_get(m, "name"))) == NULL)
		return -EBADMSG;
	t->name_len = strlen(t->name);
	o = rn_mp_get(m, "id");
	if (o == NULL || o->type != MSGPACK_OBJECT_BIN || o->via.bin.size != 16)
		return -EBADMSG;
	memcpy(t->id, o->via.bin.ptr, 16);
	o = rn_mp_get(m, "internal");
	t->internal = o != NULL && o->type == MSGPACK_OBJECT_BOOLEAN &&
	    o->via.boolean;
	if ((rc = load_configs(p, rn_mp_get(m, "configs"), &t->configs,
	    &t->n_configs)) != 0)
		return rc;
	parts = rn_mp_get(m, "partitions");
	if (parts == NULL || parts->type != MSGPACK_OBJECT_ARRAY)
		return -EBADMSG;
	pp = arena_alloc(p, sizeof(*pp) * parts->via.array.size);
	if (pp == NULL)
		return -ENOMEM;
	memset(pp, 0, sizeof(*pp) * parts->via.array.size);
	for (i = 0; i < parts->via.array.size; i++) {
		if ((rc = load_partition(p, &parts->via.array.ptr[i],
		    &pp[i])) != 0)
			return rc;
		/* the lookup indexes by partition id */
		if (pp[i].p != (int32_t)i)
			return -EBADMSG;
	}
	t->parts = pp;
	t->n_parts = (int32_t)parts->via.array.size;
	return 0;
}

static int
broker_cmp(const void *a, const void *b)
{
	int32_t x = ((const struct rn_mdv_broker *)a)->id;
	int32_t y = ((const struct rn_mdv_broker *)b)->id;

	return x < y ? -1 : x > y;
}

static int
load_broker(struct mdv_priv *p, const msgpack_object *m,
    struct rn_mdv_broker *b)
{
	const msgpack_object *o, *ls;
	struct rn_mdv_listener *l;
	uint32_t i;

	if (m->type != MSGPACK_OBJECT_MAP)
		return -EBADMSG;
	b->id = (int32_t)mp_i64(m, "id", -1);
	b->host = arena_str(p, rn_mp_get(m, "host"));
	if (b->host == NULL)
		return -EBADMSG;
	b->port = (uint16_t)mp_i64(m, "port", 0);
	b->rack = arena_str(p, rn_mp_get(m, "rack"));
	o = rn_mp_get(m, "fenced");
	b->fenced = o != NULL && o->type == MSGPACK_OBJECT_BOOLEAN &&
	    o->via.boolean;
	o = rn_mp_get(m, "shutdown");
	b->shutdown = o != NULL && o->type == MSGPACK_OBJECT_BOOLEAN &&
	    o->via.boolean;
	b->absent_since_ms = mp_i64(m, "absent_since", 0);
	b->epoch = mp_i64(m, "epoch", -1);
	ls = rn_mp_get(m, "listeners");
	if (ls == NULL || ls->type != MSGPACK_OBJECT_ARRAY)
		return 0;
	if ((l = arena_alloc(p, sizeof(*l) * ls->via.array.size)) == NULL)
		return -ENOMEM;
	for (i = 0; i < ls->via.array.size; i++) {
		const msgpack_object *e = &ls->via.array.ptr[i];

		l[i].name = arena_str(p, rn_mp_get(e, "name"));
		l[i].host = arena_str(p, rn_mp_get(e, "host"));
		l[i].port = (uint16_t)mp_i64(e, "port", 0);
		if (l[i].name == NULL || l[i].host == NULL)
			return -EBADMSG;
	}
	b->listeners = l;
	b->n_listeners = (int)ls->via.array.size;
	return 0;
}

static int
build_hashes(struct mdv_priv *p, const struct rn_mdv_topic *topics, int n)
{
	uint32_t size = 16, i;
	int k;

	while (size < (uint32_t)n * 2)
		size *= 2;
	p->topic_by_name = malloc(sizeof(int32_t) * size);
	p->topic_by_id = malloc(sizeof(int32_t) * size);
	if (p->topic_by_name == NULL || p->topic_by_id == NULL)
		return -ENOMEM;
	memset(p->topic_by_name, 0xff, sizeof(int32_t) * size);
	memset(p->topic_by_id, 0xff, sizeof(int32_t) * size);
	p->hmask = size - 1;
	for (k = 0; k < n; k++) {
		i = hash_bytes(topics[k].name, topics[k].name_len) & p->hmask;
		while (p->topic_by_name[i] >= 0)
			i = (i + 1) & p->hmask;
		p->topic_by_name[i] = k;
		i = hash_bytes(topics[k].id, 16) & p->hmask;
		while (p->topic_by_id[i] >= 0)
			i = (i + 1) & p->hmask;
		p->topic_by_id[i] = k;
	}
	return 0;
}

/* Parse into a fresh private part; on success swap it into v. */
static int
mdview_parse(struct rn_mdview *v, struct mdv_priv *p, const void *body,
    size_t len)
{
	struct rn_mdview nv;
	msgpack_unpacked up;
	const msgpack_object *m, *a;
	struct rn_mdv_topic *topics = NULL;
	struct rn_mdv_broker *brokers = NULL;
	uint32_t i;
	int rc = -EBADMSG;

	rn_mdview_init(&nv);
	msgpack_unpacked_init(&up);
	if (msgpack_unpack_next(&up, body, len, NULL) !=
	    MSGPACK_UNPACK_SUCCESS || up.data.type != MSGPACK_OBJECT_MAP)
		goto out;
	m = &up.data;
	rn_mp_get_str(m, "cluster_id", nv.cluster_id, sizeof(nv.cluster_id));
	nv.controller_id = (int32_t)mp_i64(m, "controller_id", -1);
	nv.epoch = mp_i64(m, "epoch", 0);
	nv.offset = mp_i64(m, "offset", 0);
	a = rn_mp_get(m, "brokers");
	if (a == NULL || a->type != MSGPACK_OBJECT_ARRAY)
		goto out;
	rc = -ENOMEM;
	if ((brokers = arena_alloc(p, sizeof(*brokers) * a->via.array.size)) ==
	    NULL)
		goto out;
	memset(brokers, 0, sizeof(*brokers) * a->via.array.size);
	for (i = 0; i < a->via.array.size; i++)
		if ((rc = load_broker(p, &a->via.array.ptr[i], &brokers[i])) !=
		    0)
			goto out;
	qsort(brokers, a->via.array.size, sizeof(*brokers), broker_cmp);
	nv.n_brokers = (int)a->via.array.size;
	rc = -EBADMSG;
	a = rn_mp_get(m, "topics");
	if (a == NULL || a->type != MSGPACK_OBJECT_ARRAY)
		goto out;
	rc = -ENOMEM;
	if ((topics = arena_alloc(p, sizeof(*topics) * a->via.array.size)) ==
	    NULL)
		goto out;
	memset(topics, 0, sizeof(*topics) * a->via.array.size);
	for (i = 0; i < a->via.array.size; i++)
		if ((rc = load_topic(p, &a->via.array.ptr[i], &topics[i])) != 0)
			goto out;
	nv.n_topics = (int)a->via.array.size;
	if ((rc = load_configs(p, rn_mp_get(m, "broker_configs"),
	    &nv.broker_configs, &nv.n_broker_configs)) != 0 ||
	    (rc = load_configs(p, rn_mp_get(m, "node_configs"),
	    &nv.node_configs, &nv.n_node_configs)) != 0 ||
	    (rc = build_hashes(p, topics, nv.n_topics)) != 0)
		goto out;
	nv.topics = topics;
	nv.brokers = brokers;
	nv.priv = p;
	nv.version = v->version;
	nv.generation = v->generation;
	priv_free(v->priv);
	*v = nv;
	rc = 0;
out:
	msgpack_unpacked_destroy(&up);
#ifdef __GLIBC__
	/*
	 * The unpacked objects (a few hundred bytes a partition) are gone:
	 * give the heap they grew back, or every worker keeps the peak of
	 * its largest parse resident.
	 */
	if (len > MDV_TRIM_BYTES)
		malloc_trim(0);
#endif
	return rc;
}

int
rn_mdview_load(struct rn_mdview *v, const void *body, size_t len)
{
	struct mdv_priv *p = priv_new();
	int rc;

	if (p == NULL)
		return -ENOMEM;
	if ((rc = mdview_parse(v, p, body, len)) != 0)
		priv_free(p);
	return rc;
}

int
rn_mdview_refresh(struct rn_mdview *v, const struct rn_shm *shm)
{
	const struct rn_meta_image *mi = rn_shm_meta(shm);
	const char *src = (const char *)(mi + 1);
	uint64_t ver, gen, len = 0;
	struct mdv_priv *p;
	uint32_t start;
	int tries, rc;

	ver = atomic_load_explicit(&mi->version, memory_order_acquire);
	gen = atomic_load_explicit(&shm->hdr->generation,
	    memory_order_acquire);
	if (ver == v->version && gen == v->generation && v->priv != NULL)
		return 0;
	if ((p = priv_new()) == NULL)
		return -ENOMEM;
	for (tries = 0;; tries++) {
		if (tries == READ_TRIES || rn_seq_read_begin_timeout(&mi->lock,
		    &start, READ_SPINS) != 0) {
			priv_free(p);
			return -EAGAIN;
		}
		ver = atomic_load_explicit(&mi->version, memory_order_relaxed);
		memcpy(&len, src, sizeof(len));
		/* a torn length is only used once it is bounds-checked */
		if (ver == 0 || len > mi->body_size - sizeof(len)) {
			if (rn_seq_read_retry(&mi->lock, start))
				continue;
			priv_free(p);
			return -EAGAIN; /* nothing published (yet or again) */
		}
		if (p->copy_cap < len) {
			free(p->copy);
			p->copy_cap = 0;
			if ((p->copy = malloc(len > 0 ? len : 1)) == NULL) {
				priv_free(p);
				return -ENOMEM;
			}
			p->copy_cap = len;
		}
		memcpy(p->copy, src + sizeof(len), len);
		if (!rn_seq_read_retry(&mi->lock, start))
			break;
	}
	if ((rc = mdview_parse(v, p, p->copy, len)) != 0) {
		priv_free(p);
		return rc;
	}
	v->version = ver;
	v->generation = gen;
	return 1;
}

/* ---- lookups -------------------------------------------------------- */

const struct rn_mdv_topic *
rn_mdview_topic(const struct rn_mdview *v, const char *name, size_t len)
{
	const struct mdv_priv *p = v->priv;
	uint32_t i;

	if (p == NULL)
		return NULL;
	for (i = hash_bytes(name, len) & p->hmask; p->topic_by_name[i] >= 0;
	    i = (i + 1) & p->hmask) {
		const struct rn_mdv_topic *t = &v->topics[p->topic_by_name[i]];

		if (t->name_len == len && memcmp(t->name, name, len) == 0)
			return t;
	}
	return NULL;
}

const struct rn_mdv_topic *
rn_mdview_topic_by_id(const struct rn_mdview *v, const uint8_t id[16])
{
	const struct mdv_priv *p = v->priv;
	uint32_t i;

	if (p == NULL)
		return NULL;
	for (i = hash_bytes(id, 16) & p->hmask; p->topic_by_id[i] >= 0;
	    i = (i + 1) & p->hmask) {
		const struct rn_mdv_topic *t = &v->topics[p->topic_by_id[i]];

		if (memcmp(t->id, id, 16) == 0)
			return t;
	}
	return NULL;
}

const struct rn_mdv_partition *
rn_mdview_partition(const struct rn_mdv_topic *t, int32_t p)
{
	if (t == NULL || p < 0 || p >= t->n_parts)
		return NULL;
	return &t->parts[p];
}

const struct rn_mdv_broker *
rn_mdview_broker(const struct rn_mdview *v, int32_t id)
{
	int lo = 0, hi = v->n_brokers;

	while (lo < hi) {
		int mid = (lo + hi) / 2;

		if (v->brokers[mid].id == id)
			return &v->brokers[mid];
		if (v->brokers[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static const char *
cfg_lookup(const struct rn_mdv_config *c, int n, const char *key)
{
	int lo = 0, hi = n;

	while (lo < hi) {
		int mid = (lo + hi) / 2, r = strcmp(c[mid].key, key);

		if (r == 0)
			return c[mid].value;
		if (r < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

const char *
rn_mdview_topic_override(const struct rn_mdv_topic *t, const char *key)
{
	return t != NULL ? cfg_lookup(t->configs, t->n_configs, key) : NULL;
}

const char *
rn_mdview_cfg_get(void *arg, enum rn_config_source level, const char *key)
{
	const struct rn_mdv_cfgsrc *s = arg;

	switch (level) {
	case RN_CFGSRC_DYNAMIC_BROKER_CONFIG:
		return cfg_lookup(s->v->node_configs, s->v->n_node_configs,
		    key);
	case RN_CFGSRC_DYNAMIC_DEFAULT_BROKER_CONFIG:
		return cfg_lookup(s->v->broker_configs,
		    s->v->n_broker_configs, key);
	case RN_CFGSRC_STATIC_BROKER_CONFIG:
		return rn_config_static(s->cfg, key);
	default:
		return NULL;
	}
}

int
rn_mdview_topic_config(const struct rn_mdview *v,
    const struct rn_mdv_topic *t, const struct rn_config *cfg,
    const char *key, const char **value, enum rn_config_source *source,
    char *buf, size_t buflen)
{
	const struct rn_kcfg *k = rn_kcfg_topic_find(key);
	struct rn_mdv_cfgsrc src = { v, cfg };
	struct rn_kcfg_value out;

	if (k == NULL)
		return -ENOENT;
	rn_kcfg_topic_value(k, rn_mdview_topic_override(t, key),
	    rn_mdview_cfg_get, &src, NULL, NULL, &out, buf, buflen);
	*value = out.value;
	*source = out.source;
	return 0;
}

int
rn_mdview_broker_config(const struct rn_mdview *v,
    const struct rn_config *cfg, const char *broker_key, const char **value,
    enum rn_config_source *source, char *buf, size_t buflen)
{
	const struct rn_kcfg *k = rn_kcfg_broker_find(broker_key);
	struct rn_mdv_cfgsrc src = { v, cfg };
	struct rn_kcfg_value out;

	(void)buf;
	(void)buflen;
	if (k == NULL)
		return -ENOENT;
	rn_kcfg_broker_value(k, false, rn_mdview_cfg_get, &src, NULL, NULL,
	    &out);
	*value = out.value;
	*source = out.source;
	return 0;
}
