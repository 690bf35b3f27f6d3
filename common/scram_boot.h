/*
 * The SCRAM credentials `runnel-storage format --add-scram` leaves for a
 * cluster's first start: the file `bootstrap.scram` in metadata.log.dir,
 * which the controller that founds the cluster (the one that proposes its
 * cluster id) turns into UserScramCredential records. It holds what the
 * records hold (salt, iterations, StoredKey, ServerKey), never a
 * password; one credential a line:
 *
 *   SCRAM-SHA-256 <user, hex> <iterations> <salt, hex> <StoredKey, hex>
 *       <ServerKey, hex>
 *
 * Lines starting with '#' are comments. The file is written 0600.
 */
#ifndef RN_SCRAM_BOOT_H
#define RN_SCRAM_BOOT_H

#include <stddef.h>

#include "common/scram.h"

#define RN_SCRAM_BOOT_FILE "bootstrap.scram"
#define RN_SCRAM_BOOT_MAX 1024 /* credentials a file may hold */

/* Write n credentials into dir's file (atomically); 0 or -errno. */
int rn_scram_boot_write(const char *dir, const struct rn_scram_cred *v,
    int n);

/*
 * Call fn for each credential of dir's file, in file order (the credential
 * and its strings live only during the call). The number read, 0 when
 * there is no file, or -1 with err saying what is wrong (fn's nonzero
 * return stops the read and is an error too).
 */
int rn_scram_boot_read(const char *dir,
    int (*fn)(void *arg, const struct rn_scram_cred *c), void *arg,
    char *err, size_t errlen);

#endif /* RN_SCRAM_BOOT_H */
