/*
 * Producer-state snapshots in Kafka's format: <20-digit offset>.snapshot in
 * a partition directory holds, for each idempotent producer, its last batch
 * as of that offset (ProducerStateManager's PidSnapshot, version 1, big
 * endian):
 *
 *   int16 version (1) | uint32 crc32c of what follows | int32 count |
 *   count x { int64 producer id, int16 epoch, int32 last sequence,
 *             int64 last offset, int32 offset delta, int64 timestamp,
 *             int32 coordinator epoch, int64 current txn first offset }
 *
 * The file format and the files only: when to take a snapshot and what the
 * entries mean is the partition runtime's business.
 */
#ifndef RN_STORAGE_PRODSNAP_H
#define RN_STORAGE_PRODSNAP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define RN_PRODSNAP_SUFFIX ".snapshot"
#define RN_PRODSNAP_VERSION 1
#define RN_PRODSNAP_HEADER 10	/* version, crc, count */
#define RN_PRODSNAP_ENTRY 46
/* A file larger than this is taken as corrupt (about 1,450,000 producers;
 * the default shm.max.producers pool holds 131,072). */
#define RN_PRODSNAP_MAX_FILE (64 << 20)

struct rn_prodsnap_entry {
	int64_t producer_id;
	int16_t epoch;
	int32_t last_seq;
	int64_t last_offset;
	int32_t offset_delta;	/* last offset - the batch's base offset */
	int64_t timestamp;
	int32_t coordinator_epoch;	/* -1: no transactions here */
	int64_t txn_first_offset;	/* -1 */
};

static inline size_t
rn_prodsnap_size(size_t n)
{
	return RN_PRODSNAP_HEADER + n * RN_PRODSNAP_ENTRY;
}

/* Encode into buf (rn_prodsnap_size(n) bytes). */
void rn_prodsnap_encode(const struct rn_prodsnap_entry *e, size_t n,
    uint8_t *buf);

typedef int (*rn_prodsnap_fn)(void *arg, const struct rn_prodsnap_entry *e);

/*
 * Check a snapshot's version, CRC and length, then hand each entry to fn
 * (a non-zero return stops the walk and is returned). -EBADMSG if the
 * bytes are not a whole snapshot.
 */
int rn_prodsnap_decode(const uint8_t *buf, size_t len, rn_prodsnap_fn fn,
    void *arg);

/*
 * Write <offset>.snapshot in the directory dirfd through a temporary file
 * and a rename, so it is whole or absent. durable: the file and the
 * directory are synced too; otherwise rn_prodsnap_sync does that later.
 * 0 or -errno.
 */
int rn_prodsnap_write(int dirfd, int64_t offset,
    const struct rn_prodsnap_entry *e, size_t n, int durable);

/* Read and decode <offset>.snapshot: -ENOENT, -EBADMSG, -errno or fn's. */
int rn_prodsnap_read(int dirfd, int64_t offset, rn_prodsnap_fn fn, void *arg);

/*
 * The offsets of the snapshot files, ascending: up to cap stored, the
 * number found returned (more than cap: ask with more room), or -errno.
 */
int rn_prodsnap_list(int dirfd, int64_t *offsets, int cap);

/* Remove <offset>.snapshot (0 if it was not there). */
int rn_prodsnap_remove(int dirfd, int64_t offset);

/* fsync <offset>.snapshot if it exists (the caller syncs the directory). */
int rn_prodsnap_sync(int dirfd, int64_t offset);

/*
 * Remove the snapshots below `below` or above `above` (-1: no upper
 * limit), then all but the newest `keep` of the rest. Returns how many
 * went, or -errno.
 */
int rn_prodsnap_prune(int dirfd, int64_t below, int64_t above, int keep);

#endif /* RN_STORAGE_PRODSNAP_H */
