/*
 * DescribeUserScramCredentials, answered from the image as a Kafka broker
 * answers it from its metadata cache (mechanisms and iterations, never a
 * key), and AlterUserScramCredentials, authorized here and run by the
 * controller (workers/controller/scram.c).
 */
#include "autoconf.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/acl.h"
#include "common/scram.h"
#include "protocol/kerrors.h"
#include "workers/network/net_int.h"

#define MSG_NO_USER "Attempt to describe a user credential that does not " \
	"exist: "
#define MSG_DUP_USER "Cannot describe SCRAM credentials for the same user " \
	"twice in a single request: "

typedef struct rn_DescribeUserScramCredentialsResponse_DescribeUserScramCredentialsResult
    describe_result;

static int
kstr_cmp(const void *a, const void *b)
{
	const struct rn_kstr *x = a, *y = b;
	int32_t n = x->len < y->len ? x->len : y->len;
	int c = n > 0 ? memcmp(x->ptr, y->ptr, (size_t)n) : 0;

	if (c != 0 || x->len == y->len)
		return c;
	return x->len < y->len ? -1 : 1;
}

/* The credentials of user (sorted by name: they are adjacent). */
static size_t
first_cred(const struct rn_mdview *v, struct rn_kstr user, size_t *n)
{
	size_t lo = 0, hi = v->n_scram, len = user.len > 0 ? (size_t)user.len :
	    0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strncmp(v->scram[mid].name, user.ptr, len);

		if (c == 0 && v->scram[mid].name[len] != '\0')
			c = 1;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (*n = 0; lo + *n < v->n_scram &&
	    strncmp(v->scram[lo + *n].name, user.ptr, len) == 0 &&
	    v->scram[lo + *n].name[len] == '\0'; (*n)++)
		;
	return lo;
}

static struct rn_kstr
msg(struct conn *c, const char *prefix, struct rn_kstr user)
{
	size_t pl = strlen(prefix), ul = user.len > 0 ? (size_t)user.len : 0;
	char *s = rn_arena_alloc(&c->arena, pl + ul + 1);

	if (s == NULL)
		return rn_kstr_c(prefix);
	memcpy(s, prefix, pl);
	memcpy(s + pl, user.ptr, ul);
	s[pl + ul] = '\0';
	return rn_kstr_c(s);
}

/* One user's result: its credentials, or RESOURCE_NOT_FOUND. */
static int
describe_user(struct net *n, struct conn *c, struct rn_kstr user,
    describe_result *o)
{
	const struct rn_mdview *v = &n->view;
	size_t first, cnt, i;

	o->user = user;
	first = first_cred(v, user, &cnt);
	if (cnt == 0) {
		o->error_code = RN_KERR_RESOURCE_NOT_FOUND;
		o->error_message = msg(c, MSG_NO_USER, user);
		return 0;
	}
	if ((o->credential_infos = net_array(c, (int32_t)cnt,
	    sizeof(*o->credential_infos))) == NULL)
		return -ENOMEM;
	for (i = 0; i < cnt; i++) {
		rn_DescribeUserScramCredentialsResponse_CredentialInfo_init(
		    &o->credential_infos[i]);
		o->credential_infos[i].mechanism = v->scram[first + i].mech;
		o->credential_infos[i].iterations =
		    v->scram[first + i].iterations;
	}
	o->credential_infos_count = (int32_t)cnt;
	return 0;
}

int
net_describe_scram(struct net *n, struct conn *c)
{
	struct rn_DescribeUserScramCredentialsRequest *req = c->req;
	struct rn_DescribeUserScramCredentialsResponse r;
	const struct rn_mdview *v = &n->view;
	struct rn_kstr *users;
	int32_t i, k, nu = 0;

	rn_DescribeUserScramCredentialsResponse_init(&r);
	if (!net_authorized_cluster(n, c, RN_ACL_OP_DESCRIBE)) {
		r.error_code = RN_KERR_CLUSTER_AUTHORIZATION_FAILED;
		return net_respond(n, c, &r);
	}
	if (req->users_count <= 0) {
		/* null or empty: every user with a credential */
		size_t j;

		if ((users = net_array(c, (int32_t)(v->n_scram > 0 ?
		    v->n_scram : 1), sizeof(*users))) == NULL)
			return -ENOMEM;
		for (j = 0; j < v->n_scram; j++)
			if (nu == 0 || strcmp(users[nu - 1].ptr,
			    v->scram[j].name) != 0)
				users[nu++] = rn_kstr_c(v->scram[j].name);
	} else {
		if ((users = net_array(c, req->users_count,
		    sizeof(*users))) == NULL)
			return -ENOMEM;
		for (i = 0; i < req->users_count; i++)
			users[nu++] = req->users[i].name;
		/* sorted: a user named twice is adjacent */
		qsort(users, (size_t)nu, sizeof(*users), kstr_cmp);
	}
	if ((r.results = net_array(c, nu > 0 ? nu : 1,
	    sizeof(*r.results))) == NULL)
		return -ENOMEM;
	for (i = 0; i < nu; i = k) {
		describe_result *o = &r.results[r.results_count++];

		for (k = i + 1; k < nu && kstr_cmp(&users[i], &users[k]) == 0;
		    k++)
			;
		rn_DescribeUserScramCredentialsResponse_DescribeUserScramCredentialsResult_init(o);
		if (k - i > 1) {
			o->user = users[i];
			o->error_code = RN_KERR_DUPLICATE_RESOURCE;
			o->error_message = msg(c, MSG_DUP_USER, users[i]);
		} else if (describe_user(n, c, users[i], o) != 0)
			return -ENOMEM;
	}
	return net_respond(n, c, &r);
}

int
net_alter_scram(struct net *n, struct conn *c)
{
	struct rn_AlterUserScramCredentialsRequest *req = c->req;
	struct rn_AlterUserScramCredentialsResponse r;
	struct rn_kstr *names;
	int32_t i, nd = req->deletions_count, nn;

	if (net_authorized_cluster(n, c, RN_ACL_OP_ALTER))
		return net_admin_forward(n, c);
	rn_AlterUserScramCredentialsResponse_init(&r);
	nn = nd + req->upsertions_count;
	names = net_array(c, nn > 0 ? nn : 1, sizeof(*names));
	r.results = net_array(c, nn > 0 ? nn : 1, sizeof(*r.results));
	if (names == NULL || r.results == NULL)
		return -ENOMEM;
	for (i = 0; i < nn; i++)
		names[i] = i < nd ? req->deletions[i].name :
		    req->upsertions[i - nd].name;
	/* one result per user */
	qsort(names, (size_t)nn, sizeof(*names), kstr_cmp);
	for (i = 0; i < nn; i++) {
		struct rn_AlterUserScramCredentialsResponse_AlterUserScramCredentialsResult
		    *o;

		if (i > 0 && kstr_cmp(&names[i - 1], &names[i]) == 0)
			continue;
		o = &r.results[r.results_count++];
		rn_AlterUserScramCredentialsResponse_AlterUserScramCredentialsResult_init(o);
		o->user = names[i];
		o->error_code = RN_KERR_CLUSTER_AUTHORIZATION_FAILED;
	}
	return net_respond(n, c, &r);
}
