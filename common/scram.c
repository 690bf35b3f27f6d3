/* SCRAM primitives over OpenSSL (see scram.h). */
#include "autoconf.h"

#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "common/scram.h"

static const EVP_MD *
md_of(int mech)
{
	switch (mech) {
	case RN_SCRAM_SHA256:
		return EVP_sha256();
	case RN_SCRAM_SHA512:
		return EVP_sha512();
	}
	return NULL;
}

const char *
rn_scram_mech_name(int mech)
{
	switch (mech) {
	case RN_SCRAM_SHA256:
		return "SCRAM-SHA-256";
	case RN_SCRAM_SHA512:
		return "SCRAM-SHA-512";
	}
	return NULL;
}

int
rn_scram_mech_by_name(const char *name, size_t len)
{
	int m;

	for (m = RN_SCRAM_SHA256; m <= RN_SCRAM_SHA512; m++)
		if (strlen(rn_scram_mech_name(m)) == len &&
		    memcmp(rn_scram_mech_name(m), name, len) == 0)
			return m;
	return 0;
}

size_t
rn_scram_key_len(int mech)
{
	const EVP_MD *md = md_of(mech);

	return md != NULL ? (size_t)EVP_MD_size(md) : 0;
}

int
rn_scram_salted_password(int mech, const char *pw, size_t pwlen,
    const uint8_t *salt, size_t salt_len, int iterations, uint8_t *out)
{
	const EVP_MD *md = md_of(mech);

	if (md == NULL || pwlen > INT32_MAX || salt_len > INT32_MAX ||
	    iterations < 1)
		return -1;
	return PKCS5_PBKDF2_HMAC(pw, (int)pwlen, salt, (int)salt_len,
	    iterations, md, EVP_MD_size(md), out) == 1 ? 0 : -1;
}

int
rn_scram_hmac(int mech, const uint8_t *key, size_t keylen, const void *msg,
    size_t len, uint8_t *out)
{
	const EVP_MD *md = md_of(mech);
	unsigned int olen = 0;

	if (md == NULL || keylen > INT32_MAX)
		return -1;
	return HMAC(md, key, (int)keylen, msg, len, out, &olen) != NULL ? 0 :
	    -1;
}

int
rn_scram_hash(int mech, const uint8_t *in, size_t len, uint8_t *out)
{
	const EVP_MD *md = md_of(mech);
	unsigned int olen = 0;

	if (md == NULL)
		return -1;
	return EVP_Digest(in, len, out, &olen, md, NULL) == 1 ? 0 : -1;
}

int
rn_scram_derive_keys(int mech, const uint8_t *salted, uint8_t *stored_key,
    uint8_t *server_key)
{
	uint8_t client_key[RN_SCRAM_KEY_MAX];
	size_t kl = rn_scram_key_len(mech);
	int rc;

	if (kl == 0)
		return -1;
	rc = rn_scram_hmac(mech, salted, kl, "Client Key", 10, client_key) ||
	    rn_scram_hash(mech, client_key, kl, stored_key) ||
	    rn_scram_hmac(mech, salted, kl, "Server Key", 10, server_key);
	OPENSSL_cleanse(client_key, sizeof(client_key));
	return rc ? -1 : 0;
}

int
rn_scram_cmp(const void *a, const void *b)
{
	const struct rn_scram_cred *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c != 0 ? c : x->mech - y->mech;
}

const struct rn_scram_cred *
rn_scram_find(const struct rn_scram_cred *v, size_t n, const char *name,
    size_t len, int mech)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strncmp(v[mid].name, name, len);

		if (c == 0 && v[mid].name[len] != '\0')
			c = 1;
		if (c == 0)
			c = v[mid].mech - mech;
		if (c == 0)
			return &v[mid];
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}
