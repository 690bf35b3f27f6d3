/*
 * SASL settings of a listener, and the JAAS text of PlainLoginModule
 * read the way Kafka's JaasConfig reads it: one login module, a flag,
 * key=value options (values quoted or bare), a closing semicolon.
 */
#include "autoconf.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>

#include "common/config.h"
#include "common/sasl_config.h"
#include "common/ssl_config.h"
#include "common/util.h"

#define PLAIN_MODULE "org.apache.kafka.common.security.plain.PlainLoginModule"
#define USERS_MAX 4096

static void
skip_space(const char **p)
{
	while (isspace((unsigned char)**p))
		(*p)++;
}

/* A bare word: up to white space, '=' or ';'. */
static size_t
word(const char *p)
{
	size_t n = 0;

	while (p[n] != '\0' && !isspace((unsigned char)p[n]) && p[n] != '=' &&
	    p[n] != ';')
		n++;
	return n;
}

static int
add_user(struct rn_sasl_cfg *out, const char *name, size_t nlen,
    const char *pw)
{
	struct rn_sasl_user *u;

	if (out->n_users == USERS_MAX)
		return -1;
	if ((u = realloc(out->users, sizeof(*u) * (size_t)(out->n_users + 1)))
	    == NULL)
		return -1;
	out->users = u;
	u = &out->users[out->n_users];
	if ((u->name = strndup(name, nlen)) == NULL)
		return -1;
	if ((u->password = strdup(pw)) == NULL) {
		free(u->name);
		return -1;
	}
	out->n_users++;
	return 0;
}

/* Called with each option of the module; nonzero stops (out of memory). */
typedef int (*jaas_option_fn)(const char *key, size_t klen, const char *val,
    void *arg);

/*
 * The options of the one login module in jaas; module, when not NULL,
 * is the only one accepted. 0, -1 with err set, or -2 when fn failed.
 */
static int
jaas_options(const char *jaas, const char *module, jaas_option_fn fn,
    void *arg, char *err, size_t errlen)
{
	const char *p = jaas;
	char *val = NULL;
	size_t n;

	skip_space(&p);
	n = word(p);
	if (module != NULL && (n != strlen(module) ||
	    strncmp(p, module, n) != 0)) {
		snprintf(err, errlen, "the login module is not %s", module);
		return -1;
	}
	if (n == 0) {
		snprintf(err, errlen, "no login module");
		return -1;
	}
	p += n;
	skip_space(&p);
	n = word(p);
	if (!(n == 8 && strncasecmp(p, "required", 8) == 0) &&
	    !(n == 9 && strncasecmp(p, "requisite", 9) == 0) &&
	    !(n == 10 && strncasecmp(p, "sufficient", 10) == 0) &&
	    !(n == 8 && strncasecmp(p, "optional", 8) == 0)) {
		snprintf(err, errlen, "no login module flag (required) after "
		    "the module name");
		return -1;
	}
	p += n;
	if ((val = malloc(strlen(jaas) + 1)) == NULL)
		goto oom;
	for (;;) {
		const char *key;
		size_t klen, vlen = 0;

		skip_space(&p);
		if (*p == ';')
			break;
		key = p;
		klen = word(p);
		p += klen;
		skip_space(&p);
		if (klen == 0 || *p != '=') {
			snprintf(err, errlen, "expected key=value or ';' at "
			    "'%.20s'", key);
			goto bad;
		}
		p++;
		skip_space(&p);
		if (*p == '"') {
			for (p++; *p != '"'; p++) {
				if (*p == '\0') {
					snprintf(err, errlen, "unterminated "
					    "quoted value of %.*s", (int)klen,
					    key);
					goto bad;
				}
				if (*p == '\\' && p[1] != '\0')
					p++;
				val[vlen++] = *p;
			}
			p++;
		} else {
			vlen = word(p);
			memcpy(val, p, vlen);
			p += vlen;
		}
		val[vlen] = '\0';
		if (fn(key, klen, val, arg) != 0) {
			OPENSSL_cleanse(val, strlen(jaas) + 1);
			free(val);
			return -2;
		}
	}
	p++;
	skip_space(&p);
	if (*p != '\0') {
		snprintf(err, errlen, "text after the ';' (one login module "
		    "only)");
		goto bad;
	}
	OPENSSL_cleanse(val, strlen(jaas) + 1);
	free(val);
	return 0;
oom:
	snprintf(err, errlen, "out of memory");
bad:
	if (val != NULL) {
		OPENSSL_cleanse(val, strlen(jaas) + 1);
		free(val);
	}
	return -1;
}

static int
plain_user_option(const char *key, size_t klen, const char *val, void *arg)
{
	if (klen > 5 && strncmp(key, "user_", 5) == 0)
		return add_user(arg, key + 5, klen - 5, val);
	return 0;
}

int
rn_jaas_plain_users(const char *jaas, struct rn_sasl_cfg *out, char *err,
    size_t errlen)
{
	int rc = jaas_options(jaas, PLAIN_MODULE, plain_user_option, out, err,
	    errlen);

	if (rc == -2)
		snprintf(err, errlen, "out of memory or more than %d users",
		    USERS_MAX);
	else if (rc == -1 && strncmp(err, "the login module", 16) == 0)
		strlcat(err, " (the users of PLAIN come from it)", errlen);
	return rc < 0 ? -1 : 0;
}

struct login_opts {
	char *user, *password;
};

static int
login_option(const char *key, size_t klen, const char *val, void *arg)
{
	struct login_opts *o = arg;
	char **dst = klen == 8 && strncmp(key, "username", 8) == 0 ? &o->user :
	    klen == 8 && strncmp(key, "password", 8) == 0 ? &o->password : NULL;

	if (dst == NULL)
		return 0;
	if (*dst != NULL) {
		OPENSSL_cleanse(*dst, strlen(*dst));
		free(*dst);
	}
	return (*dst = strdup(val)) == NULL ? -1 : 0;
}

int
rn_jaas_login(const char *jaas, char **user, char **password, char *err,
    size_t errlen)
{
	struct login_opts o = { NULL, NULL };
	int rc = jaas_options(jaas, NULL, login_option, &o, err, errlen);

	if (rc == 0 && (o.user == NULL || o.password == NULL)) {
		snprintf(err, errlen, "no username and password options "
		    "(this node's own login)");
		rc = -1;
	}
	if (rc == -2)
		snprintf(err, errlen, "out of memory");
	if (rc != 0) {
		free(o.user);
		if (o.password != NULL) {
			OPENSSL_cleanse(o.password, strlen(o.password));
			free(o.password);
		}
		return -1;
	}
	*user = o.user;
	*password = o.password;
	return 0;
}

int
rn_sasl_cfg_load(const struct rn_config *cfg, const char *lname,
    struct rn_sasl_cfg *out, char *err, size_t errlen)
{
	const char *mechs = rn_listener_key(cfg, lname, NULL,
	    "sasl.enabled.mechanisms");
	const char *jaas = rn_listener_key(cfg, lname, "plain",
	    "sasl.jaas.config");
	const char *reauth = rn_listener_key(cfg, lname, NULL,
	    "connections.max.reauth.ms");
	char buf[512], why[256], *s = buf, *m;

	memset(out, 0, sizeof(*out));
	if (mechs == NULL)
		mechs = "PLAIN";
	if (strlcpy(buf, mechs, sizeof(buf)) >= sizeof(buf)) {
		snprintf(err, errlen, "sasl.enabled.mechanisms: too long");
		return -1;
	}
	while ((m = strsep(&s, ",")) != NULL) {
		unsigned bit;

		m = rn_trim(m);
		if (*m == '\0')
			continue;
		if (strcmp(m, "PLAIN") == 0)
			bit = RN_SASL_PLAIN;
		else if (strcmp(m, "SCRAM-SHA-256") == 0)
			bit = RN_SASL_SCRAM_SHA256;
		else if (strcmp(m, "SCRAM-SHA-512") == 0)
			bit = RN_SASL_SCRAM_SHA512;
		else {
			snprintf(err, errlen, "invalid value '%s' for "
			    "sasl.enabled.mechanisms (listener %s): %s is not "
			    "supported (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)",
			    mechs, lname, m);
			return -1;
		}
		if (out->mechs & bit)
			continue;
		out->mechs |= bit;
		if (out->mech_list[0] != '\0')
			strlcat(out->mech_list, ",", sizeof(out->mech_list));
		strlcat(out->mech_list, m, sizeof(out->mech_list));
	}
	if (out->mechs == 0) {
		snprintf(err, errlen, "sasl.enabled.mechanisms is empty for "
		    "SASL listener %s", lname);
		return -1;
	}
	if (reauth != NULL) {
		char *end;

		out->reauth_ms = strtoll(reauth, &end, 10);
		if (*reauth == '\0' || *end != '\0' || out->reauth_ms < 0) {
			snprintf(err, errlen, "invalid value '%s' for "
			    "connections.max.reauth.ms (listener %s): want "
			    "milliseconds, 0 for no re-authentication", reauth,
			    lname);
			return -1;
		}
	}
	/* SCRAM's users are in the metadata log, PLAIN's in the JAAS text */
	if (!(out->mechs & RN_SASL_PLAIN))
		return 0;
	if (jaas == NULL) {
		snprintf(err, errlen, "SASL listener %s has no users: set "
		    "listener.name.%s.plain.sasl.jaas.config to %s required "
		    "user_<name>=\"<password>\";", lname, lname, PLAIN_MODULE);
		for (char *c = err; *c; c++)
			if (strncmp(c, "listener.name.", 14) == 0)
				for (c += 14; *c && *c != '.'; c++)
					*c = (char)tolower((unsigned char)*c);
		return -1;
	}
	if (rn_jaas_plain_users(jaas, out, why, sizeof(why)) != 0) {
		snprintf(err, errlen, "invalid sasl.jaas.config for listener "
		    "%s: %s", lname, why);
		rn_sasl_cfg_free(out);
		return -1;
	}
	if (out->n_users == 0) {
		snprintf(err, errlen, "sasl.jaas.config of listener %s names "
		    "no users (user_<name>=\"<password>\")", lname);
		rn_sasl_cfg_free(out);
		return -1;
	}
	return 0;
}

void
rn_sasl_cfg_free(struct rn_sasl_cfg *s)
{
	int i;

	for (i = 0; i < s->n_users; i++) {
		OPENSSL_cleanse(s->users[i].password,
		    strlen(s->users[i].password));
		free(s->users[i].password);
		free(s->users[i].name);
	}
	free(s->users);
	s->users = NULL;
	s->n_users = 0;
}

bool
rn_sasl_plain_check(const struct rn_sasl_cfg *s, const char *name,
    size_t len, const char *pw, size_t pwlen)
{
	int i;

	for (i = 0; i < s->n_users; i++) {
		const struct rn_sasl_user *u = &s->users[i];
		size_t ul = strlen(u->password);

		if (strlen(u->name) != len || memcmp(u->name, name, len) != 0)
			continue;
		/* the time taken tells nothing of the password but its
		 * length */
		return ul == pwlen && CRYPTO_memcmp(u->password, pw, ul) == 0;
	}
	return false;
}
