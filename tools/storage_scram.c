/*
 * runnel-storage format --add-scram, with the argument Kafka's storage
 * tool takes: MECHANISM=[name=U,password=P] or, instead of the password,
 * salt=<base64>,saltedpassword=<base64>; iterations=N (default 4096,
 * 4096 to 16384). A value may be quoted. The keys are derived here, so
 * the password goes no further than this process.
 */
#include "autoconf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "tools/storage_scram.h"

#define DEFAULT_ITERATIONS 4096
#define SALT_BYTES 32
#define ARG_MAX_BYTES 4096

/* Standard base64 (padding optional) into out; its length or -1. */
static long
b64_decode(const char *s, uint8_t *out, size_t max)
{
	size_t n = strlen(s), pad = 0;
	char buf[ARG_MAX_BYTES + 4];
	int got;

	if (n == 0 || n > ARG_MAX_BYTES)
		return -1;
	memcpy(buf, s, n);
	while (n % 4 != 0)
		buf[n++] = '=';
	buf[n] = '\0';
	while (pad < 2 && buf[n - 1 - pad] == '=')
		pad++;
	if ((n / 4) * 3 - pad > max)
		return -1;
	if ((got = EVP_DecodeBlock(out, (const unsigned char *)buf, (int)n)) <
	    0)
		return -1;
	return (long)got - (long)pad;
}

void
storage_scram_free(struct rn_scram_cred *c)
{
	free((char *)c->name);
	free((uint8_t *)c->salt);
	OPENSSL_cleanse(c, sizeof(*c));
}

struct parts {
	char *name, *salt, *iterations, *password, *salted;
};

/* "k=v,k=v" into p (pointers into s, which is cut); 0 or -1. */
static int
split(char *s, struct parts *p, char *err, size_t errlen)
{
	char *comp, *save = NULL;

	memset(p, 0, sizeof(*p));
	for (comp = strtok_r(s, ",", &save); comp != NULL;
	    comp = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(comp, '='), *v;
		size_t vl;
		char **slot;

		if (eq == NULL) {
			snprintf(err, errlen, "no '=' in a SCRAM component");
			return -1;
		}
		*eq = '\0';
		v = eq + 1;
		vl = strlen(v);
		if (vl >= 2 && v[0] == '"' && v[vl - 1] == '"') {
			v[vl - 1] = '\0';
			v++;
		}
		if (strcmp(comp, "name") == 0)
			slot = &p->name;
		else if (strcmp(comp, "salt") == 0)
			slot = &p->salt;
		else if (strcmp(comp, "iterations") == 0)
			slot = &p->iterations;
		else if (strcmp(comp, "password") == 0)
			slot = &p->password;
		else if (strcmp(comp, "saltedpassword") == 0)
			slot = &p->salted;
		else {
			snprintf(err, errlen, "unknown SCRAM configuration: "
			    "%.64s", comp);
			return -1;
		}
		*slot = v;
	}
	return 0;
}

static int
fill(const struct parts *p, struct rn_scram_cred *c, char *err,
    size_t errlen)
{
	uint8_t salt[RN_SCRAM_SALT_MAX], salted[RN_SCRAM_KEY_MAX];
	size_t kl = rn_scram_key_len(c->mech);
	long sl = SALT_BYTES, it = DEFAULT_ITERATIONS;
	char *end;
	int rc = -1;

	if (p->name == NULL || p->name[0] == '\0' ||
	    strlen(p->name) > RN_SCRAM_NAME_MAX) {
		snprintf(err, errlen, "you must supply 'name' (at most %d "
		    "bytes) to add-scram", RN_SCRAM_NAME_MAX);
		return -1;
	}
	if (p->iterations != NULL) {
		it = strtol(p->iterations, &end, 10);
		if (*end != '\0' || end == p->iterations) {
			snprintf(err, errlen, "failed to parse iterations "
			    "count: %.32s", p->iterations);
			return -1;
		}
	}
	if (it < RN_SCRAM_MIN_ITERATIONS || it > RN_SCRAM_MAX_ITERATIONS) {
		snprintf(err, errlen, "the 'iterations' value must be from %d "
		    "to %d for add-scram using %s", RN_SCRAM_MIN_ITERATIONS,
		    RN_SCRAM_MAX_ITERATIONS, rn_scram_mech_name(c->mech));
		return -1;
	}
	if ((p->password == NULL) == (p->salted == NULL)) {
		snprintf(err, errlen, "you must supply one of 'password' or "
		    "'saltedpassword' to add-scram");
		return -1;
	}
	if (p->salted != NULL && p->salt == NULL) {
		snprintf(err, errlen, "you must supply 'salt' with "
		    "'saltedpassword' to add-scram");
		return -1;
	}
	if (p->salt != NULL) {
		if ((sl = b64_decode(p->salt, salt, sizeof(salt))) <= 0) {
			snprintf(err, errlen, "failed to decode the salt (base64, "
			    "1 to %d bytes)", RN_SCRAM_SALT_MAX);
			return -1;
		}
	} else if (RAND_bytes(salt, SALT_BYTES) != 1) {
		snprintf(err, errlen, "no randomness for a salt");
		return -1;
	}
	if (p->salted != NULL) {
		if (b64_decode(p->salted, salted, sizeof(salted)) != (long)kl) {
			snprintf(err, errlen, "failed to decode saltedpassword: "
			    "want the base64 of %zu bytes for %s", kl,
			    rn_scram_mech_name(c->mech));
			goto out;
		}
	} else if (rn_scram_salted_password(c->mech, p->password,
	    strlen(p->password), salt, (size_t)sl, (int)it, salted) != 0) {
		snprintf(err, errlen, "cannot salt the password");
		goto out;
	}
	if (rn_scram_derive_keys(c->mech, salted, c->stored_key,
	    c->server_key) != 0) {
		snprintf(err, errlen, "cannot derive the SCRAM keys");
		goto out;
	}
	c->iterations = (int32_t)it;
	c->salt_len = (size_t)sl;
	if ((c->name = strdup(p->name)) == NULL ||
	    (c->salt = malloc((size_t)sl)) == NULL) {
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	memcpy((uint8_t *)c->salt, salt, (size_t)sl);
	rc = 0;
out:
	OPENSSL_cleanse(salted, sizeof(salted));
	return rc;
}

int
storage_scram_parse(const char *arg, struct rn_scram_cred *c, char *err,
    size_t errlen)
{
	char buf[ARG_MAX_BYTES + 1], *s, *eq, *cfg;
	struct parts p;
	size_t n;
	int rc;

	memset(c, 0, sizeof(*c));
	if (strlen(arg) > ARG_MAX_BYTES) {
		snprintf(err, errlen, "an --add-scram argument is at most %d "
		    "bytes", ARG_MAX_BYTES);
		return -1;
	}
	strlcpy(buf, arg, sizeof(buf));
	s = buf + strspn(buf, " \t");
	n = strlen(s);
	while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
		s[--n] = '\0';
	if ((eq = strchr(s, '=')) == NULL) {
		snprintf(err, errlen, "no '=' in the --add-scram argument: want "
		    "MECHANISM=[name=U,password=P]");
		rc = -1;
		goto out;
	}
	if ((c->mech = (int8_t)rn_scram_mech_by_name(s, (size_t)(eq - s))) ==
	    0) {
		snprintf(err, errlen, "the add-scram mechanism %.*s is not "
		    "supported (SCRAM-SHA-256, SCRAM-SHA-512)",
		    (int)(eq - s) > 32 ? 32 : (int)(eq - s), s);
		rc = -1;
		goto out;
	}
	cfg = eq + 1;
	n = strlen(cfg);
	if (n < 2 || cfg[0] != '[' || cfg[n - 1] != ']') {
		snprintf(err, errlen, "expected the configuration of %s in "
		    "[...]", rn_scram_mech_name(c->mech));
		rc = -1;
		goto out;
	}
	cfg[n - 1] = '\0';
	rc = split(cfg + 1, &p, err, errlen) == 0 ? fill(&p, c, err, errlen) :
	    -1;
out:
	OPENSSL_cleanse(buf, sizeof(buf));
	if (rc != 0) {
		int8_t mech = c->mech;

		storage_scram_free(c);
		c->mech = mech;
	}
	return rc;
}
