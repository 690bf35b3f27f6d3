/*
 * Every change a role makes to a partition's shared state: appends as
 * leader and as follower, truncation, the follower's high watermark,
 * log-start moves, waiter bits and the leader's ISR change in flight.
 * The slot's lock, the idempotence table and the order of their steps
 * live here and nowhere else.
 */
#include "autoconf.h"

#include <errno.h>
#include <string.h>

#include "common/util.h"
#include "protocol/kerrors.h"
#include "storage/errors.h"
#define RN_PARTITION_INTERNAL
#include "workers/partition/part_int.h"

/*
 * A segment rolled: the producers as of its base, as Kafka snapshots them
 * at a roll. Written without a sync (the storage duty syncs it with the
 * segments below, flush.c): a snapshot a power cut tore is skipped at the
 * next open for an older one.
 */
void
rn_part_rolled(struct rn_part *p)
{
	rn_part_size_sync(p);
	(void)rn_part_snapshot_producers(p,
	    atomic_load(&p->rt->log.active_base_offset), 0);
}

static int16_t append_leader(struct rn_part *p, void *records, size_t len,
    const struct rn_batch_header *h, int32_t leader_epoch,
    struct rn_append_info *info, int64_t *dup, bool coordinator,
    int64_t guard);

int16_t
rn_part_append_leader(struct rn_part *p, void *records, size_t len,
    const struct rn_batch_header *h, int32_t leader_epoch,
    struct rn_append_info *info, int64_t *dup)
{
	return append_leader(p, records, len, h, leader_epoch, info, dup,
	    false, RN_PART_NO_GUARD);
}

int16_t
rn_part_append_verified(struct rn_part *p, void *records, size_t len,
    const struct rn_batch_header *h, int32_t leader_epoch,
    struct rn_append_info *info, int64_t *dup, int64_t guard)
{
	return append_leader(p, records, len, h, leader_epoch, info, dup,
	    false, guard);
}

int
rn_part_txn_open(struct rn_part *p, int64_t pid, int16_t epoch,
    int64_t *guard)
{
	bool open;

	if (rn_part_lock(p) != 0)
		return -EIO;
	open = rn_idem_txn_open(&p->rt->idem, pid, epoch, guard);
	rn_part_unlock(p);
	return open ? 1 : 0;
}

int16_t
rn_part_append_coordinator(struct rn_part *p, void *records, size_t len,
    const struct rn_batch_header *h, int32_t leader_epoch,
    struct rn_append_info *info, int64_t *dup)
{
	return append_leader(p, records, len, h, leader_epoch, info, dup,
	    true, RN_PART_NO_GUARD);
}

static int16_t
append_leader(struct rn_part *p, void *records, size_t len,
    const struct rn_batch_header *h, int32_t leader_epoch,
    struct rn_append_info *info, int64_t *dup, bool coordinator,
    int64_t guard)
{
	int64_t now, cur;
	int rc, idem;

	*dup = -1;
	if (rn_part_lock(p) != 0)
		return RN_KERR_KAFKA_STORAGE_ERROR;
	/*
	 * Verified with the coordinator before: a marker for the producer
	 * written since ended the transaction the verification saw, and
	 * this write would open one nobody ends (KIP-890's guard).
	 */
	if (guard != RN_PART_NO_GUARD && !rn_idem_txn_open(&p->rt->idem,
	    h->producer_id, h->producer_epoch, &cur) && cur != guard) {
		rn_part_unlock(p);
		return RN_KERR_INVALID_TXN_STATE;
	}
	idem = rn_idem_check(&p->rt->idem, h, dup);
	if (idem == RN_IDEM_DUPLICATE || idem < 0) {
		/* a retry of what is already written, or refused */
		rn_part_unlock(p);
		return idem < 0 ? (int16_t)-idem : RN_KERR_NONE;
	}
	*dup = -1;
	now = rn_wallclock_ms();
	/* room for a new producer first: never at an open transaction's
	 * cost (the pool full and every producer here in one: refused) */
	idem = rn_idem_admit(&p->rt->idem, h, now);
	rn_part_producers_note(p, now);
	if (idem < 0) {
		rn_part_unlock(p);
		return (int16_t)-idem;
	}
	rc = rn_part_io(p, (coordinator ? rn_log_append_coordinator :
	    rn_log_append)(p->log, records, len, leader_epoch,
	    now, info), "appending as leader");
	if (rc == 0 && info->rolled)
		rn_part_rolled(p);
	if (rc == 0) {
		(void)rn_idem_record(&p->rt->idem, h, info->base_offset, now);
		if (h->attributes & RN_BATCH_ATTR_TRANSACTIONAL)
			rn_part_txn_sync(p->rt);
	}
	rn_part_unlock(p);
	return rc != 0 ? (int16_t)rn_storage_kafka_error(rc) : RN_KERR_NONE;
}

/* The fetched batches' epochs, before they are appended (their producers
 * after, rn_part_producers_appended: a roll's snapshot is of the state
 * before them). */
static void
note_batches(struct rn_part *p, const uint8_t *buf, size_t len)
{
	size_t off = 0;

	while (len - off >= RN_BATCH_HEADER_SIZE) {
		struct rn_batch_header h;

		rn_batch_parse_header(buf + off, &h);
		if (h.batch_length <= 0 ||
		    (size_t)h.batch_length + 12 > len - off)
			break;
		if (h.partition_leader_epoch >
		    rn_epoch_latest(&p->rt->log.epochs))
			rn_log_assign_epoch(p->log, h.partition_leader_epoch,
			    h.base_offset);
		off += (size_t)h.batch_length + 12;
	}
}

int
rn_part_append_follower(struct rn_part *p, const uint8_t *records, size_t len)
{
	struct rn_append_info info;
	int64_t from;
	int rc;

	if (rn_part_lock(p) != 0)
		return RN_PART_STALE;
	from = rn_log_end_offset(p->log);
	note_batches(p, records, len);
	rc = rn_part_io(p, rn_log_append_replica(p->log, records, len,
	    rn_wallclock_ms(), &info), "appending as follower");
	if (rc == 0 && info.rolled)
		rn_part_rolled(p);	/* only batches below the base count */
	if (rc == 0)
		rn_part_producers_appended(p, records, len, from);
	rn_part_unlock(p);
	return rc;
}

bool
rn_part_truncate(struct rn_part *p, int64_t cut, int64_t *from)
{
	struct rn_part_prodload pl;

	if (cut >= rn_log_end_offset(p->log) || rn_part_lock(p) != 0)
		return false;
	*from = rn_log_end_offset(p->log);
	/* a copy of this log under way copies its tail again */
	atomic_fetch_add(&p->rt->move.truncations, 1);
	(void)rn_part_io(p, rn_log_truncate_to(p->log, cut), "truncating");
	rn_part_size_sync(p);
	/* its producers' newest batches may be gone: as they were at the
	 * new end, from the snapshots that still describe the log (and the
	 * aborted index trimmed there) */
	rn_idem_reset(&p->rt->idem);
	rn_part_producers_load(p, &pl);
	if (atomic_load(&p->rt->high_watermark) > cut)
		atomic_store(&p->rt->high_watermark, cut);
	rn_part_unlock(p);
	return true;
}

bool
rn_part_restart_at(struct rn_part *p, int64_t leader_log_start)
{
	bool cut = false;

	if (rn_part_lock(p) != 0)
		return false;
	if (rn_log_end_offset(p->log) < leader_log_start) {
		atomic_fetch_add(&p->rt->move.truncations, 1);
		(void)rn_part_io(p, rn_log_truncate_fully(p->log,
		    leader_log_start), "truncating");
		rn_part_size_sync(p);
		rn_idem_reset(&p->rt->idem);
		rn_part_txn_sync(p->rt);
		rn_part_snapshots_prune(p, INT64_MAX, -1);
		cut = true;
	}
	rn_part_unlock(p);
	return cut;
}

void
rn_part_hw_follow(struct rn_part *p, int64_t leader_hw)
{
	int64_t leo = rn_part_log_end(p);
	int64_t hw = leader_hw < leo ? leader_hw : leo;

	/* one fetcher owns a follower replica: no other writer races */
	if (hw > atomic_load(&p->rt->high_watermark))
		atomic_store(&p->rt->high_watermark, hw);
}

int32_t
rn_part_latest_epoch(const struct rn_part *p)
{
	return rn_epoch_latest(&p->rt->log.epochs);
}

int16_t
rn_part_delete_records(struct rn_part *p, int64_t target, int64_t *low)
{
	if (rn_part_lock(p) != 0)
		return RN_KERR_KAFKA_STORAGE_ERROR;
	*low = rn_log_delete_records_before(p->log, target);
	if (*low < 0)
		(void)rn_part_io(p, (int)*low, "deleting records");
	rn_part_size_sync(p);
	rn_part_unlock(p);
	return *low < 0 ? (int16_t)rn_storage_kafka_error((int)*low) :
	    RN_KERR_NONE;
}

int
rn_part_retention(struct rn_part *p, int64_t now_ms)
{
	int deleted;

	if (rn_part_lock(p) != 0)
		return 0;
	deleted = rn_part_io(p, rn_log_retention(p->log, now_ms),
	    "deleting segments");
	/* producers idle past producer.id.expiration.ms (none with an open
	 * transaction) go, their pool entries with them */
	(void)rn_idem_expire(&p->rt->idem, now_ms);
	/* also the periodic check that the size kept up */
	rn_part_size_sync(p);
	rn_part_unlock(p);
	/* the producer snapshots of segments gone go with them */
	if (deleted > 0)
		rn_part_snapshots_prune(p, rn_log_start_offset(p->log), -1);
	return deleted > 0 ? deleted : 0;
}

void
rn_part_park(struct rn_part *p, unsigned worker)
{
	uint64_t bit = 1ULL << worker;

	/* a load first: the bit stays set while the worker parks there */
	if ((atomic_load(&p->rt->parked_workers) & bit) == 0)
		atomic_fetch_or(&p->rt->parked_workers, bit);
}

int64_t
rn_part_follower_caught_up_ms(struct rn_part *p, int32_t id)
{
	struct rn_part_follower *f = rn_part_follower(p, id);

	return f != NULL ? atomic_load(&f->last_caught_up_ms) : -1;
}

bool
rn_part_isr_change_allowed(struct rn_part *p, int32_t partition_epoch,
    int64_t now_ms)
{
	int64_t sent = atomic_load(&p->rt->isr_change_sent_ms);

	return sent == 0 || partition_epoch !=
	    atomic_load(&p->rt->isr_change_pepoch) ||
	    now_ms - sent > RN_ISR_CHANGE_RETRY_MS;
}

bool
rn_part_isr_change_claim(struct rn_part *p, int32_t partition_epoch,
    int64_t now_ms)
{
	int64_t expect = atomic_load(&p->rt->isr_change_sent_ms);

	if (!atomic_compare_exchange_strong(&p->rt->isr_change_sent_ms,
	    &expect, now_ms))
		return false;
	atomic_store(&p->rt->isr_change_pepoch, partition_epoch);
	return true;
}

void
rn_part_isr_change_unclaim(struct rn_part *p)
{
	atomic_store(&p->rt->isr_change_sent_ms, 0);
}

void
rn_part_isr_change_refused(const struct rn_shm *shm, int32_t slot,
    const uint8_t id[16], int32_t partition)
{
	struct rn_part_rt *rt;

	if (slot < 0 || (uint32_t)slot >= shm->hdr->max_partitions)
		return;
	rt = (struct rn_part_rt *)rn_shm_partition(shm, (unsigned)slot);
	if (rt->partition == partition && memcmp(rt->topic_id.b, id, 16) == 0 &&
	    atomic_load(&rt->isr_change_sent_ms) > 0)
		atomic_store(&rt->isr_change_sent_ms, rn_wallclock_ms() -
		    RN_ISR_CHANGE_RETRY_MS + RN_ISR_REFUSED_RETRY_MS);
}
