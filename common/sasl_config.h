/*
 * SASL on a listener: sasl.enabled.mechanisms and the users of the PLAIN
 * mechanism from Kafka's JAAS text (PlainLoginModule's user_<name>="pw"
 * options), listener.name.<name>.plain.sasl.jaas.config first, then
 * sasl.jaas.config. SCRAM-SHA-256 and SCRAM-SHA-512 need no JAAS users:
 * their credentials are in the metadata log (common/scram.h).
 */
#ifndef RN_SASL_CONFIG_H
#define RN_SASL_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

struct rn_config;

#define RN_SASL_PLAIN 0x1
#define RN_SASL_SCRAM_SHA256 0x2
#define RN_SASL_SCRAM_SHA512 0x4

struct rn_sasl_user {
	char *name;
	char *password;
};

struct rn_sasl_cfg {
	unsigned mechs;          /* RN_SASL_* */
	char mech_list[64];      /* "PLAIN,SCRAM-SHA-256": what is enabled */
	struct rn_sasl_user *users;
	int n_users;
	/* connections.max.reauth.ms (KIP-368; 0: sessions never expire) */
	long long reauth_ms;
};

/* 0, or -1 with a one-line reason naming the key. */
int rn_sasl_cfg_load(const struct rn_config *cfg, const char *listener,
    struct rn_sasl_cfg *out, char *err, size_t errlen);
/* Wipes the passwords. */
void rn_sasl_cfg_free(struct rn_sasl_cfg *s);
/* The JAAS options user_<name>="<password>" of one PlainLoginModule. */
int rn_jaas_plain_users(const char *jaas, struct rn_sasl_cfg *out, char *err,
    size_t errlen);
/* The username and password options of a login module (how this node
 * logs in to its peers); malloc'ed. 0, or -1 with a reason. */
int rn_jaas_login(const char *jaas, char **user, char **password, char *err,
    size_t errlen);
/* Does user name (len bytes) have password pw (pwlen bytes)? In constant
 * time over the password. */
bool rn_sasl_plain_check(const struct rn_sasl_cfg *s, const char *name,
    size_t len, const char *pw, size_t pwlen);

#endif /* RN_SASL_CONFIG_H */
