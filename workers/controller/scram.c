/*
 * SCRAM credentials in the metadata log: applying UserScramCredential
 * and RemoveUserScramCredential records, their part of snapshots and of
 * the image, and AlterUserScramCredentials, which writes them. The client
 * sends a salt and the salted password; only StoredKey and ServerKey
 * derived from it here go into a record. DescribeUserScramCredentials is
 * answered by the network workers from the image.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "common/ctlproto.h"
#include "common/log.h"
#include "common/scram.h"
#include "common/scram_boot.h"
#include "common/util.h"
#include "ipc/mdimage_write.h"
#include "protocol/kerrors.h"
#include "workers/controller/op.h"
#include "workers/controller/records.h"
#include "workers/controller/state.h"

static void
cred_free(struct rn_scram_cred *s)
{
	free((char *)s->name);
	free((uint8_t *)s->salt);
	OPENSSL_cleanse(s->stored_key, sizeof(s->stored_key));
	OPENSSL_cleanse(s->server_key, sizeof(s->server_key));
}

void
ctl_scram_free(struct ctl_scrams *s)
{
	int i;

	for (i = 0; i < s->n; i++)
		cred_free(&s->v[i]);
	free(s->v);
	memset(s, 0, sizeof(*s));
}

/* Where name/mech is, or where it would go (*found false). */
static int
find(const struct ctl_scrams *s, const char *name, size_t len, int mech,
    bool *found)
{
	int lo = 0, hi = s->n;

	*found = false;
	while (lo < hi) {
		int mid = lo + (hi - lo) / 2;
		int c = strncmp(s->v[mid].name, name, len);

		if (c == 0 && s->v[mid].name[len] != '\0')
			c = 1;
		if (c == 0)
			c = s->v[mid].mech - mech;
		if (c == 0) {
			*found = true;
			return mid;
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static const msgpack_object *
mp_bin(const msgpack_object *rec, const char *key, size_t min, size_t max)
{
	const msgpack_object *o = rn_mp_get(rec, key);

	if (o == NULL || o->type != MSGPACK_OBJECT_BIN ||
	    o->via.bin.size < min || o->via.bin.size > max)
		return NULL;
	return o;
}

/* Name and mechanism of a record; false if either is bad. */
static bool
rec_key(const msgpack_object *rec, char *name, size_t namelen, int *mech)
{
	int64_t m;

	if (!ctl_mp_strcpy(rec, "name", name, namelen) || name[0] == '\0' ||
	    !ctl_mp_int(rn_mp_get(rec, "mechanism"), &m) ||
	    rn_scram_key_len((int)m) == 0 || m > 127)
		return false;
	*mech = (int)m;
	return true;
}

int
ctl_scram_apply(struct ctl_state *st, const msgpack_object *rec)
{
	struct ctl_scrams *s = &st->scram;
	const msgpack_object *salt, *sk, *svk;
	struct rn_scram_cred c;
	char name[RN_SCRAM_NAME_MAX + 1];
	int64_t iter;
	size_t kl;
	bool found;
	int mech, i;
	uint8_t *sb;

	if (!rec_key(rec, name, sizeof(name), &mech))
		return -EINVAL;
	kl = rn_scram_key_len(mech);
	if ((salt = mp_bin(rec, "salt", 1, RN_SCRAM_SALT_MAX)) == NULL ||
	    (sk = mp_bin(rec, "stored_key", kl, kl)) == NULL ||
	    (svk = mp_bin(rec, "server_key", kl, kl)) == NULL ||
	    !ctl_mp_int(rn_mp_get(rec, "iterations"), &iter) || iter < 1 ||
	    iter > INT32_MAX)
		return -EINVAL;
	memset(&c, 0, sizeof(c));
	c.mech = (int8_t)mech;
	c.iterations = (int32_t)iter;
	memcpy(c.stored_key, sk->via.bin.ptr, kl);
	memcpy(c.server_key, svk->via.bin.ptr, kl);
	if ((c.name = strdup(name)) == NULL ||
	    (sb = malloc(salt->via.bin.size)) == NULL) {
		free((char *)c.name);
		return -ENOMEM;
	}
	memcpy(sb, salt->via.bin.ptr, salt->via.bin.size);
	c.salt = sb;
	c.salt_len = salt->via.bin.size;
	i = find(s, name, strlen(name), mech, &found);
	if (found) {
		cred_free(&s->v[i]);
		s->v[i] = c;
		return 0;
	}
	if (s->n == s->cap) {
		int cap = s->cap ? s->cap * 2 : 16;
		struct rn_scram_cred *v = realloc(s->v,
		    sizeof(*v) * (size_t)cap);

		if (v == NULL) {
			cred_free(&c);
			return -ENOMEM;
		}
		s->v = v;
		s->cap = cap;
	}
	memmove(&s->v[i + 1], &s->v[i], sizeof(*s->v) * (size_t)(s->n - i));
	s->v[i] = c;
	s->n++;
	return 0;
}

int
ctl_scram_apply_remove(struct ctl_state *st, const msgpack_object *rec)
{
	struct ctl_scrams *s = &st->scram;
	char name[RN_SCRAM_NAME_MAX + 1];
	bool found;
	int mech, i;

	if (!rec_key(rec, name, sizeof(name), &mech))
		return -EINVAL;
	i = find(s, name, strlen(name), mech, &found);
	if (!found)
		return -ENOENT;
	cred_free(&s->v[i]);
	memmove(&s->v[i], &s->v[i + 1], sizeof(*s->v) * (size_t)(s->n - i - 1));
	s->n--;
	return 0;
}

void
ctl_scram_snapshot(const struct ctl_state *st, struct ctl_batch *b)
{
	int i;

	for (i = 0; i < st->scram.n; i++)
		ctl_rec_scram(b, &st->scram.v[i]);
}

void
ctl_scram_encode(const struct ctl_state *st, struct rn_mdimage_enc *e)
{
	int i;

	rn_mdimage_enc_scram(e, st->scram.n);
	for (i = 0; i < st->scram.n; i++)
		rn_mdimage_enc_scram_cred(e, &st->scram.v[i]);
}

static int
boot_record(void *arg, const struct rn_scram_cred *cred)
{
	ctl_rec_scram(arg, cred);
	log_info("SCRAM credential %s for user %s from %s (runnel-storage "
	    "format --add-scram)", rn_scram_mech_name(cred->mech), cred->name,
	    RN_SCRAM_BOOT_FILE);
	return 0;
}

int
ctl_scram_bootstrap(const char *dir, struct ctl_batch *b)
{
	char err[512];
	int n;

	if ((n = rn_scram_boot_read(dir, boot_record, b, err, sizeof(err))) <
	    0)
		log_errx("bootstrap SCRAM credentials: %s", err);
	return n;
}

/* ---- AlterUserScramCredentials -------------------------------------- */

/* One deletion or upsertion, in request order (deletions first). */
struct alteration {
	struct rn_kstr name;
	int order;
	const struct rn_AlterUserScramCredentialsRequest_ScramCredentialDeletion
	    *del;
	const struct rn_AlterUserScramCredentialsRequest_ScramCredentialUpsertion
	    *ups;
};

static int
alteration_cmp(const void *a, const void *b)
{
	const struct alteration *x = a, *y = b;
	int32_t n = x->name.len < y->name.len ? x->name.len : y->name.len;
	int c = n > 0 ? memcmp(x->name.ptr, y->name.ptr, (size_t)n) : 0;

	if (c != 0)
		return c;
	if (x->name.len != y->name.len)
		return x->name.len < y->name.len ? -1 : 1;
	return x->order - y->order;
}

/* Kafka's checks of a user name and mechanism, and ours on size. */
static int16_t
check_key(struct rn_kstr name, int mech, const char **why)
{
	if (name.len <= 0) {
		*why = "Username must not be empty";
		return RN_KERR_UNACCEPTABLE_CREDENTIAL;
	}
	if (name.len > RN_SCRAM_NAME_MAX ||
	    memchr(name.ptr, '\0', (size_t)name.len) != NULL) {
		*why = "Username is too long or holds a NUL";
		return RN_KERR_UNACCEPTABLE_CREDENTIAL;
	}
	if (rn_scram_key_len(mech) == 0) {
		*why = "Unknown SCRAM mechanism";
		return RN_KERR_UNSUPPORTED_SASL_MECHANISM;
	}
	return 0;
}

static int16_t
check_alteration(const struct ctl_state *st, const struct alteration *a,
    const char **why)
{
	const struct rn_AlterUserScramCredentialsRequest_ScramCredentialUpsertion
	    *u = a->ups;
	int mech = a->del != NULL ? a->del->mechanism : u->mechanism;
	int16_t err;
	bool found;

	if ((err = check_key(a->name, mech, why)) != 0)
		return err;
	if (a->del != NULL) {
		(void)find(&st->scram, a->name.ptr, (size_t)a->name.len, mech,
		    &found);
		if (!found) {
			*why = "Attempt to delete a user credential that does "
			    "not exist";
			return RN_KERR_RESOURCE_NOT_FOUND;
		}
		return 0;
	}
	*why = NULL;
	if (u->iterations < RN_SCRAM_MIN_ITERATIONS)
		*why = "Too few iterations";
	else if (u->iterations > RN_SCRAM_MAX_ITERATIONS)
		*why = "Too many iterations";
	else if (u->salt.len <= 0 || u->salt.len > RN_SCRAM_SALT_MAX)
		*why = "The salt is empty or too long";
	else if ((size_t)u->salted_password.len != rn_scram_key_len(mech))
		*why = "The salted password is not as long as the "
		    "mechanism's digest";
	return *why != NULL ? RN_KERR_UNACCEPTABLE_CREDENTIAL : 0;
}

/* The records of one valid alteration; -errno only if they cannot be. */
static int
record_alteration(struct ctl_op *op, const struct alteration *a)
{
	const struct rn_AlterUserScramCredentialsRequest_ScramCredentialUpsertion
	    *u = a->ups;
	struct rn_scram_cred c;
	char name[RN_SCRAM_NAME_MAX + 1];
	int mech = a->del != NULL ? a->del->mechanism : u->mechanism;

	memcpy(name, a->name.ptr, (size_t)a->name.len);
	name[a->name.len] = '\0';
	if (a->del != NULL) {
		ctl_rec_remove_scram(&op->batch, name, strlen(name), mech);
		log_info("SCRAM credential of user '%s' (%s) removed", name,
		    rn_scram_mech_name(mech));
		return 0;
	}
	memset(&c, 0, sizeof(c));
	c.name = name;
	c.mech = (int8_t)mech;
	c.iterations = u->iterations;
	c.salt = u->salt.ptr;
	c.salt_len = (size_t)u->salt.len;
	if (rn_scram_derive_keys(mech, u->salted_password.ptr, c.stored_key,
	    c.server_key) != 0)
		return -EIO;
	ctl_rec_scram(&op->batch, &c);
	OPENSSL_cleanse(&c, sizeof(c));
	log_info("SCRAM credential of user '%s' (%s, %d iterations) set",
	    name, rn_scram_mech_name(mech), u->iterations);
	return 0;
}

int
ctl_op_alter_scram(struct ctl_op *op, struct rn_kreader *r)
{
	struct rn_AlterUserScramCredentialsRequest req;
	struct rn_AlterUserScramCredentialsResponse *resp = &op->resp.ausc;
	const struct ctl_state *st = &op->c->st;
	struct alteration *v;
	int32_t i, k, n;
	int rc;

	if ((rc = rn_AlterUserScramCredentialsRequest_decode(r, op->ver,
	    &op->arena, &req)) != 0)
		return rc;
	rn_AlterUserScramCredentialsResponse_init(resp);
	n = req.deletions_count + req.upsertions_count;
	v = rn_arena_alloc(&op->arena, sizeof(*v) * (size_t)(n > 0 ? n : 1));
	resp->results = rn_arena_alloc(&op->arena, sizeof(*resp->results) *
	    (size_t)(n > 0 ? n : 1));
	if (v == NULL || resp->results == NULL)
		return -ENOMEM;
	for (i = 0; i < req.deletions_count; i++)
		v[i] = (struct alteration){ req.deletions[i].name, i,
		    &req.deletions[i], NULL };
	for (k = 0; k < req.upsertions_count; k++, i++)
		v[i] = (struct alteration){ req.upsertions[k].name, i, NULL,
		    &req.upsertions[k] };
	/* sorted by user, then request order: one result per user */
	qsort(v, (size_t)n, sizeof(*v), alteration_cmp);
	for (i = 0; i < n; i = k) {
		struct rn_AlterUserScramCredentialsResponse_AlterUserScramCredentialsResult
		    *o = &resp->results[resp->results_count++];
		const char *why = NULL;

		for (k = i + 1; k < n && v[k].name.len == v[i].name.len &&
		    (v[i].name.len <= 0 || memcmp(v[k].name.ptr,
		    v[i].name.ptr, (size_t)v[i].name.len) == 0); k++)
			;
		rn_AlterUserScramCredentialsResponse_AlterUserScramCredentialsResult_init(o);
		o->user = v[i].name.len >= 0 ? v[i].name : rn_kstr_c("");
		/* as Kafka: the first alteration's error, else a repeat is
		 * the error */
		o->error_code = check_alteration(st, &v[i], &why);
		if (o->error_code == 0 && k - i > 1) {
			o->error_code = RN_KERR_DUPLICATE_RESOURCE;
			why = "A user credential cannot be altered twice in "
			    "the same request";
		}
		if (o->error_code != 0) {
			o->error_message = rn_kstr_c(why);
			continue;
		}
		if ((rc = record_alteration(op, &v[i])) != 0)
			return rc;
	}
	return 0;
}
