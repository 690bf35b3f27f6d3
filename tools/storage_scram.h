/* runnel-storage format --add-scram: Kafka's argument (storage_scram.c). */
#ifndef RN_STORAGE_SCRAM_H
#define RN_STORAGE_SCRAM_H

#include <stddef.h>

#include "common/scram.h"

/*
 * 'SCRAM-SHA-256=[name=alice,password=secret]' (or iterations=N, and
 * salt=B64 with saltedpassword=B64 instead of password) into *c, whose
 * name and salt are allocated (free with storage_scram_free). 0, or -1
 * with err saying why (never echoing a password).
 */
int storage_scram_parse(const char *arg, struct rn_scram_cred *c, char *err,
    size_t errlen);
void storage_scram_free(struct rn_scram_cred *c);

#endif /* RN_STORAGE_SCRAM_H */
