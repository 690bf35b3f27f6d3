/*
 * The aborted-transaction index of a segment, <base>.txnindex, in Kafka's
 * layout (TransactionIndex / AbortedTxn): one 34-byte big-endian entry per
 * transaction aborted by a marker in that segment, in marker order:
 *
 *   int16 version (0) | int64 producer id | int64 first offset |
 *   int64 last offset (the marker's) | int64 last stable offset
 *
 * The files only: when an entry is written is the partition runtime's
 * business. A torn last entry (a crash mid-write) is ignored when read.
 */
#ifndef RN_STORAGE_TXNINDEX_H
#define RN_STORAGE_TXNINDEX_H

#include <stddef.h>
#include <stdint.h>

#define RN_TXNINDEX_SUFFIX ".txnindex"
#define RN_TXNINDEX_ENTRY 34
#define RN_TXNINDEX_VERSION 0

struct rn_aborted_txn {
	int64_t producer_id;
	int64_t first_offset;
	int64_t last_offset;
	int64_t last_stable_offset;
};

void rn_txnindex_encode(const struct rn_aborted_txn *a, uint8_t *buf);
/* 0, or -EBADMSG for an entry of another version. */
int rn_txnindex_decode(const uint8_t *buf, struct rn_aborted_txn *a);

/* Append one entry to the segment's index (created if missing). 0/-errno. */
int rn_txnindex_append(int dirfd, int64_t base, const struct rn_aborted_txn *a);

/*
 * Every whole entry of the segment's index, in order: fn(arg, entry); a
 * non-zero return stops the walk and is returned. 0 when the file is
 * absent; -EBADMSG on an entry of another version; -errno.
 */
typedef int (*rn_txnindex_fn)(void *arg, const struct rn_aborted_txn *a);
int rn_txnindex_read(int dirfd, int64_t base, rn_txnindex_fn fn, void *arg);

/* fsync the segment's index if it exists (the caller syncs the dir). */
int rn_txnindex_sync(int dirfd, int64_t base);

/*
 * A cleaning merges segments olds[0..n) into one at olds[0]: the others'
 * entries appended to olds[0]'s index (in order) and synced, before the
 * swap; their files are removed after it (rn_txnindex_unlink_merged). A
 * crash in between leaves an entry in two indexes: readers drop the
 * second sight of a (producer, marker offset).
 */
int rn_txnindex_merge(int dirfd, const int64_t *olds, int n);
void rn_txnindex_unlink_merged(int dirfd, const int64_t *olds, int n);

/*
 * Rewrite the segment's index keeping the entries keep(arg, entry) says
 * true for: the kept ones into <base>.txnindex.tmp (a crash leaves it for the
 * log's open to remove), synced, renamed
 * over it, the dir synced. Nothing is written when every entry stays.
 * 0/-errno (the old index stays whole on failure).
 */
int rn_txnindex_filter(int dirfd, int64_t base, rn_txnindex_fn keep,
    void *arg);

/* Drop the entries whose marker is at or after offset (truncation). */
int rn_txnindex_truncate(int dirfd, int64_t base, int64_t offset);

#endif /* RN_STORAGE_TXNINDEX_H */
