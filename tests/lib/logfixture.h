/*
 * Helpers for the C unit tests of a partition log (storage/log.c): remove
 * a test's directory tree, deterministic bytes, batches built from a seed,
 * a full checked read of a log, a small log config and varied appends.
 * Each test keeps its own root directory.
 */
#ifndef RN_TESTS_LOGFIXTURE_H
#define RN_TESTS_LOGFIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "storage/log.h"

/* Scratch buffer for one or more batches (lf_append_varied uses it too). */
extern uint8_t lf_pbuf[1 << 20];

/* rm -rf path (no links followed). */
void lf_rm_rf(const char *path);

/* A 32-bit integer hash: deterministic test bytes from a seed. */
uint32_t lf_mix(uint32_t x);

/* One uncompressed batch of nrec records with vsize-byte values. */
size_t lf_mk_batch(uint8_t *buf, size_t cap, int nrec, int vsize, int64_t ts,
    uint32_t seed);

/*
 * Read everything from `from` to the log end in max_bytes slices, checking
 * every batch (CRC, framing) and that offsets are contiguous. Returns the
 * end offset reached or a negative error; counts batches, digests bytes.
 */
int64_t lf_check_all(struct rn_log *log, int64_t from, int64_t max_bytes,
    int64_t *nbatches, uint32_t *digest);

/* The default config with 128 KiB segments, 16 KiB indexes, no retention. */
struct rn_log_config lf_small_config(void);

/* Append `count` batches of varied shapes; returns 0 if offsets were contiguous. */
int lf_append_varied(struct rn_log *log, int count, uint32_t seed, int64_t ts,
    int64_t now, int *rolls);

#endif
