/*
 * SCRAM (RFC 5802, RFC 7677) as Kafka keeps it: per user and mechanism
 * a salt, an iteration count, StoredKey = H(HMAC(SaltedPassword,
 * "Client Key")) and ServerKey = HMAC(SaltedPassword, "Server Key"),
 * never the password. The primitives here are shared by the controller
 * (deriving the keys), the network worker (verifying a login) and the
 * tools (salting a password).
 */
#ifndef RN_SCRAM_H
#define RN_SCRAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Kafka's ScramMechanism type codes. */
#define RN_SCRAM_SHA256 1
#define RN_SCRAM_SHA512 2

/* Kafka's bounds on the iteration count of a credential. */
#define RN_SCRAM_MIN_ITERATIONS 4096
#define RN_SCRAM_MAX_ITERATIONS 16384

#define RN_SCRAM_KEY_MAX 64      /* SHA-512's digest */
#define RN_SCRAM_SALT_MAX 256    /* Kafka bounds none; we must */
#define RN_SCRAM_NAME_MAX 256    /* bytes of a user name */

/* One user's credential for one mechanism. */
struct rn_scram_cred {
	const char *name;
	int8_t mech;
	int32_t iterations;
	const uint8_t *salt;
	size_t salt_len;
	uint8_t stored_key[RN_SCRAM_KEY_MAX];
	uint8_t server_key[RN_SCRAM_KEY_MAX];
};

/* "SCRAM-SHA-256", "SCRAM-SHA-512"; NULL for another code. */
const char *rn_scram_mech_name(int mech);
/* The code of a mechanism name (len bytes), 0 if it is none. */
int rn_scram_mech_by_name(const char *name, size_t len);
/* Digest length of the mechanism's hash, 0 for an unknown one. */
size_t rn_scram_key_len(int mech);

/* Hi(password, salt, i) = PBKDF2 with HMAC-H: key_len bytes to out. */
int rn_scram_salted_password(int mech, const char *pw, size_t pwlen,
    const uint8_t *salt, size_t salt_len, int iterations, uint8_t *out);
/* StoredKey and ServerKey from a salted password (key_len bytes). */
int rn_scram_derive_keys(int mech, const uint8_t *salted,
    uint8_t *stored_key, uint8_t *server_key);
int rn_scram_hmac(int mech, const uint8_t *key, size_t keylen,
    const void *msg, size_t len, uint8_t *out);
int rn_scram_hash(int mech, const uint8_t *in, size_t len, uint8_t *out);

/* The credential of name/mech among n sorted by (name, mech), or NULL. */
const struct rn_scram_cred *rn_scram_find(const struct rn_scram_cred *v,
    size_t n, const char *name, size_t len, int mech);
int rn_scram_cmp(const void *a, const void *b);

#endif /* RN_SCRAM_H */
