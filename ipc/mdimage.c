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
/*
 * The delta ring. The writer publishes the whole body again once the
 * deltas since it would outgrow the ring, so a body of B bytes costs
 * B / DELTA_RING_BYTES of a byte per delta byte: small next to the delta
 * even at a million partitions.
 */
#define DELTA_RING_BYTES (8u << 20)
/* Arena bytes the deltas may add to a view before it is loaded afresh
 * (at least; or as much as the whole parse took). */
#define DELTA_ARENA_MIN (1u << 20)

/* A record of the ring, 8-byte aligned; its bytes follow. */
struct delta_rec {
	uint32_t len;
	uint32_t kind;
	uint64_t version;
};

enum { DELTA_CHANGE = 1, DELTA_BODY = 2 /* the whole body was replaced */ };

#define DELTA_REC_SIZE(len) (sizeof(struct delta_rec) + (((len) + 7) & ~(size_t)7))

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
	return sizeof(struct rn_meta_image) + DELTA_RING_BYTES + 64 * 1024 +
	    (size_t)p->max_partitions * 1024;
}

int
rn_mdimage_shm_init(void *base, size_t size, const struct rn_shm_params *p)
{
	struct rn_meta_image *mi = base;

	(void)p;
	mi->delta_size = DELTA_RING_BYTES;
	mi->body_size = size - sizeof(*mi) - DELTA_RING_BYTES;
	mi->writer_pid = 0;
	return 0;
}

static char *
ring_of(const struct rn_meta_image *mi)
{
	return (char *)(mi + 1);
}

static char *
body_of(const struct rn_meta_image *mi)
{
	return ring_of(mi) + mi->delta_size;
}

/* Copy n bytes in or out of the ring at an absolute position. */
static void
ring_put(const struct rn_meta_image *mi, uint64_t pos, const void *src,
    size_t n)
{
	size_t off = (size_t)(pos % mi->delta_size), first;

	first = n < mi->delta_size - off ? n : mi->delta_size - off;
	memcpy(ring_of(mi) + off, src, first);
	memcpy(ring_of(mi), (const char *)src + first, n - first);
}

static void
ring_get(const struct rn_meta_image *mi, uint64_t pos, void *dst, size_t n)
{
	size_t off = (size_t)(pos % mi->delta_size), first;

	first = n < mi->delta_size - off ? n : mi->delta_size - off;
	memcpy(dst, ring_of(mi) + off, first);
	memcpy((char *)dst + first, ring_of(mi), n - first);
}

/* The bytes published: the body's and the deltas' after it (a gauge:
 * read without the seqlock, so possibly of two publishes). */
size_t
rn_mdimage_bytes(const struct rn_shm *shm)
{
	const struct rn_meta_image *mi = rn_shm_meta(shm);
	uint64_t len = 0, from = mi->delta_base, head = mi->delta_head;

	if (mi->body_size >= sizeof(len))
		memcpy(&len, body_of(mi), sizeof(len));
	if (len > mi->body_size)
		len = 0;
	return (size_t)len + (head >= from && head - from <= mi->delta_size ?
	    head - from : 0);
}

/* ---- writer ------------------------------------------------------- */

int
rn_mdimage_publish(struct rn_shm *shm, int32_t node_id,
    const char *cluster_id, const void *body, size_t len)
{
	struct rn_meta_image *mi = rn_shm_meta(shm);
	char *dst = body_of(mi);
	uint64_t len64 = len, ver;
	struct delta_rec mark = { .kind = DELTA_BODY };

	if (mi->body_size < sizeof(len64) || len > mi->body_size -
	    sizeof(len64))
		return -EMSGSIZE;
	rn_seq_write_begin(&mi->lock);
	ver = atomic_load_explicit(&mi->version, memory_order_relaxed) + 1;
	mi->writer_pid = getpid();
	mi->node_id = node_id;
	mi->published_ms = rn_wallclock_ms();
	strlcpy(mi->cluster_id, cluster_id, sizeof(mi->cluster_id));
	/* readers following the ring stop at the mark and load the body */
	mark.version = ver;
	ring_put(mi, mi->delta_head, &mark, sizeof(mark));
	mi->delta_head += sizeof(mark);
	mi->delta_base = mi->delta_head;
	mi->base_version = ver;
	memcpy(dst, &len64, sizeof(len64));
	memcpy(dst + sizeof(len64), body, len);
	atomic_store_explicit(&mi->version, ver, memory_order_relaxed);
	rn_seq_write_end(&mi->lock);
	return 0;
}

int
rn_mdimage_publish_delta(struct rn_shm *shm, const void *delta, size_t len)
{
	struct rn_meta_image *mi = rn_shm_meta(shm);
	struct delta_rec r = { .len = (uint32_t)len, .kind = DELTA_CHANGE };
	size_t size = DELTA_REC_SIZE(len);

	if (atomic_load_explicit(&mi->version, memory_order_relaxed) == 0 ||
	    mi->base_version == 0)
		return -EAGAIN;
	if (len > UINT32_MAX || mi->delta_head + size - mi->delta_base >
	    mi->delta_size)
		return -ENOSPC;
	rn_seq_write_begin(&mi->lock);
	r.version = atomic_load_explicit(&mi->version, memory_order_relaxed) +
	    1;
	mi->published_ms = rn_wallclock_ms();
	ring_put(mi, mi->delta_head, &r, sizeof(r));
	ring_put(mi, mi->delta_head + sizeof(r), delta, len);
	mi->delta_head += size;
	atomic_store_explicit(&mi->version, r.version, memory_order_relaxed);
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
	char *deltas;            /* ring records copied out */
	size_t deltas_cap;
	uint64_t delta_pos;      /* ring position after the last applied */
	size_t parse_bytes;      /* arena bytes of the body's parse */
	struct rn_mdv_change *chg;
	int n_chg, cap_chg;
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
	free(p->deltas);
	free(p->chg);
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

static int64_t
mp_i64(const msgpack_object *map, const char *key, int64_t dflt)
{
	return rn_mp_get_int(map, key, dflt);
}

/* An id list; into the array reuse when it has room (a delta's). */
static int
load_i32s(struct mdv_priv *p, const msgpack_object *map, const char *key,
    const int32_t **out, int32_t *n, const int32_t *reuse, int32_t room)
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
	if (reuse != NULL && a->via.array.size <= (uint32_t)room)
		v = (int32_t *)reuse; /* the view's own arena memory */
	else if ((v = arena_alloc(p, sizeof(int32_t) *
	    a->via.array.size)) == NULL)
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

/* A partition map into pp; old, when given, lends its arrays. */
static int
load_partition(struct mdv_priv *p, const msgpack_object *m,
    struct rn_mdv_partition *pp, const struct rn_mdv_partition *old)
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
	    &pp->n_replicas, old ? old->replicas : NULL,
	    old ? old->n_replicas : 0)) != 0 ||
	    (rc = load_i32s(p, m, "isr", &pp->isr, &pp->n_isr,
	    old ? old->isr : NULL, old ? old->n_isr : 0)) != 0 ||
	    (rc = load_i32s(p, m, "offline", &pp->offline, &pp->n_offline,
	    old ? old->offline : NULL, old ? old->n_offline : 0)) != 0)
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
		    &pp[i], NULL)) != 0)
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
		i = rn_hash32(topics[k].name, topics[k].name_len) & p->hmask;
		while (p->topic_by_name[i] >= 0)
			i = (i + 1) & p->hmask;
		p->topic_by_name[i] = k;
		i = rn_hash32(topics[k].id, 16) & p->hmask;
		while (p->topic_by_id[i] >= 0)
			i = (i + 1) & p->hmask;
		p->topic_by_id[i] = k;
	}
	return 0;
}

/* The ACL bindings, sorted for rn_acl_allowed (absent: none). */
static int
load_acls(struct mdv_priv *p, const msgpack_object *a, struct rn_mdview *nv)
{
	struct rn_acl *acls;
	uint32_t i;

	if (a == NULL)
		return 0;
	if (a->type != MSGPACK_OBJECT_ARRAY)
		return -EBADMSG;
	if ((acls = arena_alloc(p, sizeof(*acls) * (a->via.array.size + 1))) ==
	    NULL)
		return -ENOMEM;
	for (i = 0; i < a->via.array.size; i++) {
		const msgpack_object *e = &a->via.array.ptr[i];
		const msgpack_object *f;

		if (e->type != MSGPACK_OBJECT_ARRAY || e->via.array.size != 7)
			return -EBADMSG;
		f = e->via.array.ptr;
		acls[i].resource = (int8_t)(f[0].type ==
		    MSGPACK_OBJECT_POSITIVE_INTEGER ? f[0].via.u64 : 0);
		acls[i].name = arena_str(p, &f[1]);
		acls[i].pattern = (int8_t)(f[2].type ==
		    MSGPACK_OBJECT_POSITIVE_INTEGER ? f[2].via.u64 : 0);
		acls[i].principal = arena_str(p, &f[3]);
		acls[i].host = arena_str(p, &f[4]);
		acls[i].op = (int8_t)(f[5].type ==
		    MSGPACK_OBJECT_POSITIVE_INTEGER ? f[5].via.u64 : 0);
		acls[i].perm = (int8_t)(f[6].type ==
		    MSGPACK_OBJECT_POSITIVE_INTEGER ? f[6].via.u64 : 0);
		if (acls[i].name == NULL || acls[i].principal == NULL ||
		    acls[i].host == NULL)
			return -EBADMSG;
	}
	rn_acl_sort(acls, a->via.array.size);
	nv->acls = acls;
	nv->n_acls = a->via.array.size;
	return 0;
}

/* The SCRAM credentials, sorted for rn_scram_find (absent: none). */
static int
load_scram(struct mdv_priv *p, const msgpack_object *a, struct rn_mdview *nv)
{
	struct rn_scram_cred *v;
	uint32_t i;

	if (a == NULL)
		return 0;
	if (a->type != MSGPACK_OBJECT_ARRAY)
		return -EBADMSG;
	if ((v = arena_alloc(p, sizeof(*v) * (a->via.array.size + 1))) == NULL)
		return -ENOMEM;
	for (i = 0; i < a->via.array.size; i++) {
		const msgpack_object *e = &a->via.array.ptr[i], *f;
		uint8_t *salt;
		size_t kl;

		if (e->type != MSGPACK_OBJECT_ARRAY || e->via.array.size != 6)
			return -EBADMSG;
		f = e->via.array.ptr;
		if (f[1].type != MSGPACK_OBJECT_POSITIVE_INTEGER ||
		    f[2].type != MSGPACK_OBJECT_POSITIVE_INTEGER ||
		    (kl = rn_scram_key_len((int)f[1].via.u64)) == 0 ||
		    f[3].type != MSGPACK_OBJECT_BIN ||
		    f[4].type != MSGPACK_OBJECT_BIN ||
		    f[5].type != MSGPACK_OBJECT_BIN ||
		    f[4].via.bin.size != kl || f[5].via.bin.size != kl ||
		    f[3].via.bin.size == 0 ||
		    f[3].via.bin.size > RN_SCRAM_SALT_MAX ||
		    f[2].via.u64 > INT32_MAX)
			return -EBADMSG;
		memset(&v[i], 0, sizeof(v[i]));
		v[i].name = arena_str(p, &f[0]);
		v[i].mech = (int8_t)f[1].via.u64;
		v[i].iterations = (int32_t)f[2].via.u64;
		if ((salt = arena_alloc(p, f[3].via.bin.size + 1)) == NULL)
			return -ENOMEM;
		memcpy(salt, f[3].via.bin.ptr, f[3].via.bin.size);
		v[i].salt = salt;
		v[i].salt_len = f[3].via.bin.size;
		memcpy(v[i].stored_key, f[4].via.bin.ptr, kl);
		memcpy(v[i].server_key, f[5].via.bin.ptr, kl);
		if (v[i].name == NULL)
			return -EBADMSG;
	}
	qsort(v, a->via.array.size, sizeof(*v), rn_scram_cmp);
	nv->scram = v;
	nv->n_scram = a->via.array.size;
	return 0;
}

/* The client quotas (absent: none); keys this build does not know are
 * left out. */
static int
load_quotas(struct mdv_priv *p, const msgpack_object *a, struct rn_mdview *nv)
{
	struct rn_cquota *q;
	uint32_t i;
	size_t n = 0;

	if (a == NULL)
		return 0;
	if (a->type != MSGPACK_OBJECT_ARRAY)
		return -EBADMSG;
	if ((q = arena_alloc(p, sizeof(*q) * (a->via.array.size + 1))) == NULL)
		return -ENOMEM;
	for (i = 0; i < a->via.array.size; i++) {
		const msgpack_object *e = &a->via.array.ptr[i];
		const msgpack_object *f;
		int k;

		if (e->type != MSGPACK_OBJECT_ARRAY || e->via.array.size != 6)
			return -EBADMSG;
		f = e->via.array.ptr;
		if (f[0].type != MSGPACK_OBJECT_POSITIVE_INTEGER ||
		    f[2].type != MSGPACK_OBJECT_POSITIVE_INTEGER ||
		    f[4].type != MSGPACK_OBJECT_STR ||
		    f[5].type != MSGPACK_OBJECT_FLOAT64)
			return -EBADMSG;
		if ((k = rn_cq_key_find(f[4].via.str.ptr,
		    f[4].via.str.size)) < 0)
			continue;
		q[n].ukind = (int8_t)f[0].via.u64;
		q[n].user = arena_str(p, &f[1]);
		q[n].ckind = (int8_t)f[2].via.u64;
		q[n].client = arena_str(p, &f[3]);
		q[n].key = (int8_t)k;
		q[n].value = f[5].via.f64;
		if (q[n].user == NULL || q[n].client == NULL)
			return -EBADMSG;
		n++;
	}
	nv->quotas = q;
	nv->n_quotas = n;
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
	    (rc = load_acls(p, rn_mp_get(m, "acls"), &nv)) != 0 ||
	    (rc = load_quotas(p, rn_mp_get(m, "quotas"), &nv)) != 0 ||
	    (rc = load_scram(p, rn_mp_get(m, "scram"), &nv)) != 0 ||
	    (rc = build_hashes(p, topics, nv.n_topics)) != 0)
		goto out;
	nv.topics = topics;
	nv.brokers = brokers;
	nv.priv = p;
	nv.version = v->version;
	nv.generation = v->generation;
	nv.changes_all = true;
	p->parse_bytes = rn_arena_used(&p->arena);
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

/* ---- reader: deltas ------------------------------------------------ */

static int
chg_add(struct mdv_priv *p, int32_t topic, int32_t part, int32_t old_slot)
{
	if (p->n_chg == p->cap_chg) {
		int cap = p->cap_chg ? p->cap_chg * 2 : 64;
		struct rn_mdv_change *c = reallocarray(p->chg, (size_t)cap,
		    sizeof(*c));

		if (c == NULL)
			return -ENOMEM;
		p->chg = c;
		p->cap_chg = cap;
	}
	p->chg[p->n_chg++] = (struct rn_mdv_change){ topic, part, old_slot };
	return 0;
}

/* One delta's partitions, each written over its entry in the view. */
static int
delta_apply(struct rn_mdview *v, const char *buf, size_t len)
{
	struct mdv_priv *p = v->priv;
	msgpack_unpacked up;
	const msgpack_object *m, *a;
	uint32_t i;
	int rc = -EBADMSG;

	msgpack_unpacked_init(&up);
	if (msgpack_unpack_next(&up, buf, len, NULL) !=
	    MSGPACK_UNPACK_SUCCESS || up.data.type != MSGPACK_OBJECT_MAP)
		goto out;
	m = &up.data;
	a = rn_mp_get(m, "parts");
	if (a == NULL || a->type != MSGPACK_OBJECT_ARRAY)
		goto out;
	for (i = 0; i < a->via.array.size; i++) {
		const msgpack_object *e = &a->via.array.ptr[i];
		const struct rn_mdv_topic *t;
		struct rn_mdv_partition *pp, np;
		int64_t part;

		rc = -EBADMSG;
		if (e->type != MSGPACK_OBJECT_ARRAY || e->via.array.size != 2 ||
		    e->via.array.ptr[0].type != MSGPACK_OBJECT_BIN ||
		    e->via.array.ptr[0].via.bin.size != 16 ||
		    e->via.array.ptr[1].type != MSGPACK_OBJECT_MAP)
			goto out;
		/* topics come and go with a whole body, never a delta */
		t = rn_mdview_topic_by_id(v,
		    (const uint8_t *)e->via.array.ptr[0].via.bin.ptr);
		part = mp_i64(&e->via.array.ptr[1], "p", -1);
		if (t == NULL || part < 0 || part >= t->n_parts) {
			rc = -ESTALE;
			goto out;
		}
		/* the view's own arena: writable behind the const */
		pp = (struct rn_mdv_partition *)&t->parts[part];
		memset(&np, 0, sizeof(np));
		if ((rc = load_partition(p, &e->via.array.ptr[1], &np, pp)) !=
		    0 || (rc = chg_add(p, (int32_t)(t - v->topics),
		    (int32_t)part, pp->slot)) != 0)
			goto out;
		*pp = np;
	}
	v->controller_id = (int32_t)mp_i64(m, "controller_id", -1);
	v->epoch = mp_i64(m, "epoch", 0);
	v->offset = mp_i64(m, "offset", 0);
	rc = 0;
out:
	msgpack_unpacked_destroy(&up);
	return rc;
}

/*
 * Apply the n bytes of records copied out of the ring, each the next
 * version. -ESTALE when one says the body must be loaded instead.
 */
static int
deltas_apply(struct rn_mdview *v, size_t n)
{
	struct mdv_priv *p = v->priv;
	size_t off = 0;
	int rc;

	while (off < n) {
		struct delta_rec r;

		if (n - off < sizeof(r))
			return -EBADMSG;
		memcpy(&r, p->deltas + off, sizeof(r));
		if (r.kind != DELTA_CHANGE || r.version != v->version + 1)
			return -ESTALE;
		if (DELTA_REC_SIZE(r.len) > n - off)
			return -EBADMSG;
		if ((rc = delta_apply(v, p->deltas + off + sizeof(r),
		    r.len)) != 0)
			return rc;
		v->version = r.version;
		off += DELTA_REC_SIZE(r.len);
	}
	return 0;
}

/* Copy the ring from pos to head (under the seqlock: bounds only). */
static int
deltas_copy(struct mdv_priv *p, const struct rn_meta_image *mi,
    uint64_t pos, uint64_t head)
{
	size_t n = (size_t)(head - pos);

	/* nothing new: p->deltas may be NULL, which memcpy may not take */
	if (n == 0)
		return 0;
	if (p->deltas_cap < n) {
		free(p->deltas);
		p->deltas_cap = 0;
		if ((p->deltas = malloc(n)) == NULL)
			return -ENOMEM;
		p->deltas_cap = n;
	}
	ring_get(mi, pos, p->deltas, n);
	return 0;
}

/*
 * Bring a loaded view forward by the deltas after it: 1, or -ESTALE when
 * the body must be loaded (a whole publish since, the view fell behind
 * the ring, or the deltas have grown its arena too much).
 */
static int
refresh_deltas(struct rn_mdview *v, const struct rn_meta_image *mi)
{
	struct mdv_priv *p = v->priv;
	size_t grown = rn_arena_used(&p->arena) - p->parse_bytes;
	uint64_t head = 0;
	uint32_t start;
	int tries, rc;

	if (grown > DELTA_ARENA_MIN && grown > p->parse_bytes)
		return -ESTALE;
	for (tries = 0;; tries++) {
		if (tries == READ_TRIES || rn_seq_read_begin_timeout(&mi->lock,
		    &start, READ_SPINS) != 0)
			return -EAGAIN;
		head = mi->delta_head;
		if (p->delta_pos > head || head - p->delta_pos > mi->delta_size) {
			if (rn_seq_read_retry(&mi->lock, start))
				continue;
			return -ESTALE;
		}
		if ((rc = deltas_copy(p, mi, p->delta_pos, head)) != 0)
			return rc;
		if (!rn_seq_read_retry(&mi->lock, start))
			break;
	}
	p->n_chg = 0;
	if ((rc = deltas_apply(v, (size_t)(head - p->delta_pos))) != 0)
		return rc;
	p->delta_pos = head;
	v->changes_all = false;
	v->changes = p->chg;
	v->n_changes = p->n_chg;
	return 1;
}

/* Load the whole body and the deltas after it. */
static int
refresh_body(struct rn_mdview *v, const struct rn_shm *shm, uint64_t gen)
{
	const struct rn_meta_image *mi = rn_shm_meta(shm);
	const char *src = body_of(mi);
	uint64_t base = 0, len = 0, from = 0, head = 0;
	struct rn_mdview nv;
	struct mdv_priv *p;
	uint32_t start;
	int tries, rc;

	if ((p = priv_new()) == NULL)
		return -ENOMEM;
	for (tries = 0;; tries++) {
		if (tries == READ_TRIES || rn_seq_read_begin_timeout(&mi->lock,
		    &start, READ_SPINS) != 0) {
			priv_free(p);
			return -EAGAIN;
		}
		base = mi->base_version;
		from = mi->delta_base;
		head = mi->delta_head;
		memcpy(&len, src, sizeof(len));
		/* a torn length is only used once it is bounds-checked */
		if (base == 0 || len > mi->body_size - sizeof(len) ||
		    from > head || head - from > mi->delta_size) {
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
		if ((rc = deltas_copy(p, mi, from, head)) != 0) {
			priv_free(p);
			return rc;
		}
		if (!rn_seq_read_retry(&mi->lock, start))
			break;
	}
	/* into a new view: the old one stays usable if this fails */
	rn_mdview_init(&nv);
	if ((rc = mdview_parse(&nv, p, p->copy, len)) != 0) {
		priv_free(p);
		return rc;
	}
	nv.version = base;
	nv.body_version = base;
	nv.generation = gen;
	p->delta_pos = head;
	if ((rc = deltas_apply(&nv, (size_t)(head - from))) != 0) {
		rn_mdview_free(&nv);
		return rc == -ESTALE ? -EBADMSG : rc;
	}
	nv.changes_all = true;
	nv.n_changes = 0;
	nv.changes = NULL;
	rn_mdview_free(v);
	*v = nv;
	return 1;
}

int
rn_mdview_refresh(struct rn_mdview *v, const struct rn_shm *shm)
{
	const struct rn_meta_image *mi = rn_shm_meta(shm);
	uint64_t ver, gen;
	int rc;

	ver = atomic_load_explicit(&mi->version, memory_order_acquire);
	gen = atomic_load_explicit(&shm->hdr->generation,
	    memory_order_acquire);
	if (ver == v->version && gen == v->generation && v->priv != NULL)
		return 0;
	if (v->priv != NULL && gen == v->generation && v->version != 0 &&
	    ver > v->version) {
		/* anything but a wait goes to the body: a delta that did not
		 * apply may have left its partition half written */
		rc = refresh_deltas(v, mi);
		if (rc == 1 || rc == -EAGAIN)
			return rc;
	}
	return refresh_body(v, shm, gen);
}

/* ---- lookups -------------------------------------------------------- */

const struct rn_mdv_topic *
rn_mdview_topic(const struct rn_mdview *v, const char *name, size_t len)
{
	const struct mdv_priv *p = v->priv;
	uint32_t i;

	if (p == NULL)
		return NULL;
	for (i = rn_hash32(name, len) & p->hmask; p->topic_by_name[i] >= 0;
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
	for (i = rn_hash32(id, 16) & p->hmask; p->topic_by_id[i] >= 0;
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

int
rn_mdview_broker_address(const struct rn_mdview *v, int32_t id,
    const char *listener, char *host, size_t hostlen, uint16_t *port)
{
	const struct rn_mdv_broker *b = rn_mdview_broker(v, id);
	int i;

	if (b == NULL || b->fenced)
		return -ENOENT;
	for (i = 0; i < b->n_listeners; i++)
		if (strcmp(b->listeners[i].name, listener) == 0) {
			strlcpy(host, b->listeners[i].host, hostlen);
			*port = b->listeners[i].port;
			return 0;
		}
	strlcpy(host, b->host, hostlen);
	*port = b->port;
	return 0;
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
