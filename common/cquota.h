/*
 * Client quotas as Kafka names them: a value per key for an entity of
 * a user and/or a client id, each named or the default (<default>).
 * The controller keeps them (workers/controller/quotas.c), the image
 * carries them, the network workers enforce the byte rates.
 */
#ifndef RN_CQUOTA_H
#define RN_CQUOTA_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* How an entity names a user or a client id. */
#define RN_CQ_NONE 0             /* not part of the entity */
#define RN_CQ_NAME 1
#define RN_CQ_DEFAULT 2          /* <default> */

enum rn_cq_key {
	RN_CQ_PRODUCE = 0,       /* producer_byte_rate (enforced) */
	RN_CQ_FETCH,             /* consumer_byte_rate (enforced) */
	RN_CQ_REQUEST_PCT,       /* request_percentage (stored only) */
	RN_CQ_MUTATION,          /* controller_mutation_rate (stored only) */
	RN_CQ_NKEYS
};

struct rn_cquota {
	int8_t ukind, ckind;     /* RN_CQ_NONE/NAME/DEFAULT */
	int8_t key;              /* enum rn_cq_key */
	const char *user;        /* "" unless RN_CQ_NAME */
	const char *client;
	double value;
};

static const char *const rn_cq_key_names[RN_CQ_NKEYS] = {
	"producer_byte_rate", "consumer_byte_rate", "request_percentage",
	"controller_mutation_rate",
};

static inline int
rn_cq_key_find(const char *s, size_t len)
{
	int i;

	for (i = 0; i < RN_CQ_NKEYS; i++)
		if (strlen(rn_cq_key_names[i]) == len &&
		    memcmp(rn_cq_key_names[i], s, len) == 0)
			return i;
	return -1;
}

#endif /* RN_CQUOTA_H */
