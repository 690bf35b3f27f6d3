/*
 * Client quotas in the network workers: a request's bytes (a Produce
 * request's size, a consumer's Fetch response) counted against the quota
 * its user and client id resolve to with Kafka's precedence, in the shared
 * table (ipc/cquota.c); over it, the response carries throttle_time_ms
 * and the connection reads nothing more for that long. No image quota:
 * nothing is done.
 */
#include "autoconf.h"

#include <string.h>

#include "common/cquota.h"
#include "common/log.h"
#include "common/util.h"
#include "ipc/cquota.h"
#include "workers/network/net_int.h"

/* Kafka's precedence, most specific first: (user kind, client kind). */
static const int8_t levels[][2] = {
	{ RN_CQ_NAME, RN_CQ_NAME }, { RN_CQ_NAME, RN_CQ_DEFAULT },
	{ RN_CQ_NAME, RN_CQ_NONE }, { RN_CQ_DEFAULT, RN_CQ_NAME },
	{ RN_CQ_DEFAULT, RN_CQ_DEFAULT }, { RN_CQ_DEFAULT, RN_CQ_NONE },
	{ RN_CQ_NONE, RN_CQ_NAME }, { RN_CQ_NONE, RN_CQ_DEFAULT },
};

static bool
names(int8_t kind, const char *want, const char *have, size_t len)
{
	return kind != RN_CQ_NAME || (strlen(want) == len &&
	    memcmp(want, have, len) == 0);
}

int32_t
net_quota_record(struct net *n, struct conn *c, int key, int64_t bytes)
{
	const struct rn_mdview *v = &n->view;
	const struct rn_cquota *q = NULL;
	const char *user = net_principal(c), *client = "";
	size_t ulen, clen = 0;
	struct rn_cq_entity *e;
	uint64_t h;
	int64_t now, thr;
	unsigned l;
	size_t i;

	if (v->n_quotas == 0)
		return 0;
	if (strncmp(user, "User:", 5) == 0)
		user += 5;
	ulen = strlen(user);
	if (c->hdr.client_id.len > 0) {
		client = c->hdr.client_id.ptr;
		clen = (size_t)c->hdr.client_id.len;
	}
	for (l = 0; q == NULL && l < RN_ARRAY_SIZE(levels); l++)
		for (i = 0; i < v->n_quotas; i++) {
			const struct rn_cquota *x = &v->quotas[i];

			if (x->key == key && x->ukind == levels[l][0] &&
			    x->ckind == levels[l][1] &&
			    names(x->ukind, x->user, user, ulen) &&
			    names(x->ckind, x->client, client, clen)) {
				q = x;
				break;
			}
		}
	if (q == NULL)
		return 0;
	/* the sensor Kafka would keep: the tags of the matched level */
	h = rn_hash64(&key, sizeof(key));
	if (q->ukind != RN_CQ_NONE)
		h = rn_hash64_more(h, user, ulen);
	h = rn_hash64_more(h, "\001", 1);
	if (q->ckind != RN_CQ_NONE)
		h = rn_hash64_more(h, client, clen);
	if (h == 0)
		h = 1;
	now = rn_now_ms();
	if ((e = rn_cq_entity_get(n->w->env->shm, h, now)) == NULL) {
		static int64_t warned;

		if (now - warned > 60000) {
			log_warnx("client quota table full: %d entities; "
			    "some are not measured", RN_CQ_ENTITIES);
			warned = now;
		}
		return 0;
	}
	thr = rn_cq_record(e, bytes, q->value, now);
	if (thr > 0 && now + thr > c->mute_until_ms) {
		c->mute_until_ms = now + thr;
		net_deadline_soon(n, c->mute_until_ms);
	}
	return (int32_t)thr;
}
