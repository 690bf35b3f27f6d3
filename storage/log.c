/*
 * Partition log over shared state: appends, reads, rolling, truncation,
 * retention, flushing, recovery and repair. See log.h for the concurrency
 * model; in short, everything that mutates runs under the caller's lock and
 * publishes through atomics in struct rn_log_shared, readers take
 * consistent snapshots and re-read the directory when segments appear or go.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE	/* sync_file_range */
#endif
#include "storage/log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "storage/checkpoint.h"
#include "storage/logdir.h"
#include "storage/segment.h"
#include "storage/swap.h"
#include "storage/txnindex.h"

struct hdr_reader {
	int fd;
	int64_t bpos;
	int64_t blen;
	uint8_t buf[8192];
};

struct rn_log {
	char *dir;
	int dirfd;
	struct rn_log_config cfg;
	struct rn_log_shared *sh;
	uint32_t gen;		/* generation the segment list matches */
	struct rn_segment **segs;	/* oldest first; the last is active */
	int nsegs;
	/* the list holds the active segment only, as opened (tail_list) */
	int tail_only;
	int cap;
	char *epoch_path;
	struct hdr_reader hr;	/* batch header cache for lookups (one thread) */
	struct rn_log_recovery_stats rstats;	/* what this open recovered */
};

/* A consistent view of the shared state, taken without the lock. */
struct snap {
	uint32_t gen;
	int64_t leo;
	int64_t lso;
	int64_t abase;
	int64_t asize;
	uint32_t oc;
	uint32_t tc;
};

#define ACQ memory_order_acquire
#define REL memory_order_release
#define RLX memory_order_relaxed

struct rn_log_config
rn_log_config_default(void)
{
	struct rn_log_config c = {
		.segment_bytes = 1073741824,
		.segment_ms = 604800000,
		.retention_ms = 604800000,
		.retention_bytes = -1,
		.max_message_bytes = 1048588,
		.flush_messages = INT64_MAX,
		.flush_ms = INT64_MAX,
		.index_interval_bytes = 4096,
		.segment_index_bytes = 10485760,
		.timestamp_type_log_append = 0,
	};

	return c;
}

/* ---- segment list ---- */

static void
seg_unref(struct rn_segment *seg)
{
	if (seg != NULL && --seg->refs == 0)
		rn_segment_free(seg);
}

static int
list_reserve(struct rn_log *log, int n)
{
	if (n <= log->cap)
		return 0;
	int ncap = log->cap ? log->cap : 8;

	while (ncap < n)
		ncap *= 2;
	struct rn_segment **ns = realloc(log->segs, (size_t)ncap * sizeof(*ns));

	if (ns == NULL)
		return -ENOMEM;
	log->segs = ns;
	log->cap = ncap;
	return 0;
}

static int
list_append(struct rn_log *log, struct rn_segment *seg)
{
	int rc = list_reserve(log, log->nsegs + 1);

	if (rc < 0)
		return rc;
	log->segs[log->nsegs++] = seg;
	return 0;
}

/* Drop segments [from, nsegs) from the list. */
static void
list_truncate(struct rn_log *log, int from)
{
	for (int i = from; i < log->nsegs; i++)
		seg_unref(log->segs[i]);
	if (from < log->nsegs)
		log->nsegs = from;
}

/* Drop the first k segments from the list. */
static void
list_drop_head(struct rn_log *log, int k)
{
	for (int i = 0; i < k; i++)
		seg_unref(log->segs[i]);
	memmove(log->segs, log->segs + k, (size_t)(log->nsegs - k) * sizeof(*log->segs));
	log->nsegs -= k;
}

/* Index of the last segment with base <= offset, or -1. */
static int
seg_find(const struct rn_log *log, int64_t offset)
{
	int lo = 0, hi = log->nsegs - 1, found = -1;

	while (lo <= hi) {
		int mid = lo + (hi - lo) / 2;

		if (log->segs[mid]->base_offset <= offset) {
			found = mid;
			lo = mid + 1;
		} else {
			hi = mid - 1;
		}
	}
	return found;
}

static struct rn_segment *
active_seg(const struct rn_log *log)
{
	return log->nsegs ? log->segs[log->nsegs - 1] : NULL;
}

static int
cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return x < y ? -1 : x > y;
}

static int
has_suffix(const char *name, const char *sfx)
{
	size_t n = strlen(name), s = strlen(sfx);

	return n > s && strcmp(name + n - s, sfx) == 0;
}

/*
 * Sorted base offsets of the .log files in the directory. With cleanup,
 * also remove leftovers of interrupted operations (recovery only).
 */
static int
list_dir(struct rn_log *log, int64_t **out, int *count, int cleanup)
{
	DIR *d = rn_opendirat(log->dirfd);
	struct dirent *de;
	int64_t *v = NULL;
	int n = 0, cap = 0;

	if (d == NULL)
		return -errno;
	while ((de = readdir(d)) != NULL) {
		int64_t base = rn_segment_parse_name(de->d_name, ".log");

		if (base >= 0) {
			if (n == cap) {
				int64_t *nv = realloc(v, (size_t)(cap ? cap * 2 : 16) * sizeof(*v));

				if (nv == NULL) {
					free(v);
					closedir(d);
					return -ENOMEM;
				}
				v = nv;
				cap = cap ? cap * 2 : 16;
			}
			v[n++] = base;
		} else if (cleanup && (has_suffix(de->d_name, ".tmp") ||
		    has_suffix(de->d_name, ".deleted") ||
		    has_suffix(de->d_name, ".cleaned") ||
		    has_suffix(de->d_name, ".swap"))) {
			unlinkat(log->dirfd, de->d_name, 0);
		}
	}
	if (cleanup) {
		/* Index files whose .log is gone (deletion removes .log first). */
		rewinddir(d);
		while ((de = readdir(d)) != NULL) {
			static const char *const sfx[] = { ".index", ".timeindex", ".txnindex" };

			for (size_t k = 0; k < 3; k++) {
				int64_t base = rn_segment_parse_name(de->d_name, sfx[k]);
				char name[RN_SEGMENT_NAME_MAX];

				if (base < 0)
					continue;
				rn_segment_name(name, base, ".log");
				if (faccessat(log->dirfd, name, F_OK, 0) < 0 && errno == ENOENT)
					unlinkat(log->dirfd, de->d_name, 0);
			}
		}
	}
	closedir(d);
	if (n > 1)
		qsort(v, (size_t)n, sizeof(*v), cmp_i64);
	*out = v;
	*count = n;
	return 0;
}

/*
 * Rebuild the segment list from the directory, keeping handles of segments
 * whose file is unchanged. Index mappings are dropped: a segment's role
 * (active or not) may have changed, and with it the right mapping size.
 */
static int
rescan(struct rn_log *log)
{
	int64_t *bases;
	int n, rc, j = 0;
	struct rn_segment **ns;

	rc = list_dir(log, &bases, &n, 0);
	if (rc < 0)
		return rc;
	ns = calloc(n ? (size_t)n : 1, sizeof(*ns));
	if (ns == NULL) {
		free(bases);
		return -ENOMEM;
	}
	for (int i = 0; i < n; i++) {
		char name[RN_SEGMENT_NAME_MAX];
		struct rn_segment *seg = NULL;
		struct stat st;

		rn_segment_name(name, bases[i], ".log");
		if (fstatat(log->dirfd, name, &st, 0) < 0) {
			rc = -errno;
			goto fail;
		}
		while (j < log->nsegs && log->segs[j]->base_offset < bases[i])
			j++;
		if (j < log->nsegs && log->segs[j]->base_offset == bases[i]) {
			struct rn_segment *old = log->segs[j];

			if (old->fd < 0 || (old->dev == st.st_dev && old->ino == st.st_ino)) {
				seg = old;
				seg->refs++;
				rn_segment_close_indexes(seg);
			}
		}
		if (seg == NULL) {
			seg = rn_segment_new(bases[i]);
			if (seg == NULL) {
				rc = -ENOMEM;
				goto fail;
			}
		}
		seg->size = st.st_size;
		ns[i] = seg;
	}
	list_truncate(log, 0);
	if (list_reserve(log, n) < 0) {
		rc = -ENOMEM;
		goto fail;
	}
	memcpy(log->segs, ns, (size_t)n * sizeof(*ns));
	log->nsegs = n;
	log->tail_only = 0;
	free(ns);
	free(bases);
	return 0;
fail:
	for (int i = 0; i < n; i++)
		seg_unref(ns[i]);
	free(ns);
	free(bases);
	return rc;
}

/* Re-read the directory while no segment change is in progress. */
static int
refresh(struct rn_log *log)
{
	for (int tries = 0; tries < 100000; tries++) {
		uint32_t g1 = atomic_load_explicit(&log->sh->generation, ACQ);
		int rc;

		if (g1 & 1) {
			sched_yield();
			continue;
		}
		rc = rescan(log);
		if (rc < 0 && rc != -ENOENT)
			return rc;
		if (rc == 0 && atomic_load_explicit(&log->sh->generation, ACQ) == g1) {
			log->gen = g1;
			return 0;
		}
	}
	return -EAGAIN;
}

/*
 * A log another process already recovered opens with its active segment
 * alone, from the shared state: reading the directory and stat-ing every
 * segment was most of what reopening a log cost, and a worker that cycles
 * handles over 10,000 partitions reopens them all the time. Appends and
 * tail reads need nothing older; whatever does reads the directory first
 * (need_from). -EAGAIN: something moved meanwhile, read the directory.
 */
static int
tail_list(struct rn_log *log)
{
	struct rn_log_shared *sh = log->sh;
	uint32_t g1 = atomic_load_explicit(&sh->generation, ACQ);
	int64_t abase = atomic_load_explicit(&sh->active_base_offset, ACQ);
	struct rn_segment *seg;
	int rc;

	if (g1 & 1)
		return -EAGAIN;
	if ((seg = rn_segment_new(abase)) == NULL)
		return -ENOMEM;
	if ((rc = list_append(log, seg)) < 0) {
		rn_segment_free(seg);
		return rc;
	}
	atomic_thread_fence(ACQ);
	if (atomic_load_explicit(&sh->generation, RLX) != g1 ||
	    atomic_load_explicit(&sh->active_base_offset, RLX) != abase) {
		list_truncate(log, 0);
		return -EAGAIN;
	}
	log->gen = g1;
	log->tail_only = 1;
	return 0;
}

/*
 * Before touching segments below the active one: list them all if only
 * the active one is listed and offset lies below it (INT64_MIN: always).
 */
static int
need_from(struct rn_log *log, int64_t offset)
{
	if (!log->tail_only || log->nsegs == 0 ||
	    offset >= log->segs[0]->base_offset)
		return 0;
	return refresh(log);
}

static int
need_all(struct rn_log *log)
{
	return need_from(log, INT64_MIN);
}

/* Is a segment with this base in the list (searching from the newest)? */
static int
list_has(const struct rn_log *log, int64_t base)
{
	for (int i = log->nsegs - 1; i >= 0; i--) {
		if (log->segs[i]->base_offset == base)
			return 1;
		if (log->segs[i]->base_offset < base)
			return 0;
	}
	return 0;
}

static int
snapshot_tail(struct rn_log *log, struct snap *s)
{
	struct rn_log_shared *sh = log->sh;

	for (int tries = 0; tries < 100000; tries++) {
		uint32_t g1 = atomic_load_explicit(&sh->generation, ACQ), c1;

		if (g1 & 1) {
			sched_yield();
			continue;
		}
		if (g1 != log->gen) {
			int rc = refresh(log);

			if (rc < 0)
				return rc;
			continue;
		}
		c1 = atomic_load_explicit(&sh->commit_seq, ACQ);
		if (c1 & 1) {
			if (tries > 1000)
				sched_yield();
			continue;
		}
		/* log end first: the size loaded after it covers its batches */
		s->leo = atomic_load_explicit(&sh->log_end_offset, ACQ);
		s->lso = atomic_load_explicit(&sh->log_start_offset, ACQ);
		s->asize = atomic_load_explicit(&sh->active_size, ACQ);
		s->oc = atomic_load_explicit(&sh->active_oidx_entries, ACQ);
		s->tc = atomic_load_explicit(&sh->active_tidx_entries, ACQ);
		s->abase = atomic_load_explicit(&sh->active_base_offset, ACQ);
		atomic_thread_fence(ACQ);
		if (atomic_load_explicit(&sh->commit_seq, RLX) != c1 ||
		    atomic_load_explicit(&sh->generation, RLX) != g1)
			continue;
		if (!list_has(log, s->abase)) {
			/* A roll elsewhere: the new active segment is not listed yet. */
			int rc = rescan(log);

			if (rc < 0 && rc != -ENOENT)
				return rc;
			continue;
		}
		s->gen = g1;
		return 0;
	}
	return -EAGAIN;
}

/* A snapshot with every segment listed. */
static int
snapshot(struct rn_log *log, struct snap *s)
{
	int rc = need_all(log);

	return rc < 0 ? rc : snapshot_tail(log, s);
}

static int
snapshot_still_valid(struct rn_log *log, const struct snap *s)
{
	atomic_thread_fence(ACQ);
	return atomic_load_explicit(&log->sh->generation, RLX) == s->gen;
}

static void
gen_begin(struct rn_log *log)
{
	atomic_fetch_add_explicit(&log->sh->generation, 1, RLX);
	atomic_thread_fence(REL);
}

static void
gen_end(struct rn_log *log)
{
	log->gen = atomic_fetch_add_explicit(&log->sh->generation, 1, REL) + 1;
}

static void
commit_begin(struct rn_log *log)
{
	atomic_fetch_add_explicit(&log->sh->commit_seq, 1, RLX);
	atomic_thread_fence(REL);
}

static void
commit_end(struct rn_log *log)
{
	atomic_fetch_add_explicit(&log->sh->commit_seq, 1, REL);
}

static int
write_epoch_checkpoint(struct rn_log *log)
{
	struct rn_epoch_entry e[RN_EPOCH_CACHE_SLOTS];
	uint32_t n = rn_epoch_snapshot(&log->sh->epochs, e, RN_EPOCH_CACHE_SLOTS);

	return rn_epoch_checkpoint_write(log->epoch_path, e, n,
	    !atomic_load_explicit(&log->sh->dir_unsynced, ACQ));
}

static size_t
index_prealloc(const struct rn_log *log)
{
	int64_t b = log->cfg.segment_index_bytes;

	return b > 0 ? (size_t)b : 10485760;
}

/* Publish the active segment's cursor (inside a commit window). */
static void
store_cursor(struct rn_log *log, const struct rn_segment_cursor *c)
{
	struct rn_log_shared *sh = log->sh;

	atomic_store_explicit(&sh->active_oidx_entries, c->o_entries, REL);
	atomic_store_explicit(&sh->active_tidx_entries, c->t_entries, REL);
	atomic_store_explicit(&sh->active_max_ts, c->max_ts, RLX);
	atomic_store_explicit(&sh->active_max_ts_offset, c->max_ts_offset, RLX);
	atomic_store_explicit(&sh->active_bytes_since_index, c->bytes_since_index, RLX);
	atomic_store_explicit(&sh->active_roll_ts, c->first_batch_ts, RLX);
	atomic_store_explicit(&sh->active_size, c->size, REL);
}

static void
load_cursor(struct rn_log *log, struct rn_segment_cursor *c)
{
	struct rn_log_shared *sh = log->sh;

	c->size = atomic_load_explicit(&sh->active_size, ACQ);
	c->next_offset = atomic_load_explicit(&sh->log_end_offset, ACQ);
	c->o_entries = atomic_load_explicit(&sh->active_oidx_entries, ACQ);
	c->t_entries = atomic_load_explicit(&sh->active_tidx_entries, ACQ);
	c->max_ts = atomic_load_explicit(&sh->active_max_ts, RLX);
	c->max_ts_offset = atomic_load_explicit(&sh->active_max_ts_offset, RLX);
	c->bytes_since_index = atomic_load_explicit(&sh->active_bytes_since_index, RLX);
	c->first_batch_ts = atomic_load_explicit(&sh->active_roll_ts, RLX);
}

/* Open what the writer needs of the active segment. */
static int
ensure_active_open(struct rn_log *log, struct rn_segment *seg)
{
	int rc = rn_segment_open_log(log->dirfd, seg, 0);

	if (rc < 0)
		return rc;
	if (!seg->idx_active)
		rc = rn_segment_open_indexes(log->dirfd, seg, index_prealloc(log), 1);
	return rc;
}

/*
 * Map a segment's indexes for lookups; failure just means "no index". The
 * active segment's entry counts come from the shared state, so any mapping
 * does. An older segment's come from its (trimmed) file sizes: a mapping
 * made while it was still active is redone, never trusted.
 */
static int
ensure_index_read(struct rn_log *log, struct rn_segment *seg, int active)
{
	int rc;

	if (rn_index_is_open(&seg->oidx) && (active || seg->idx_trusted))
		return 0;
	rc = rn_segment_open_indexes(log->dirfd, seg, 0, 0);
	if (rc == 0 && !active)
		seg->idx_trusted = 1;
	return rc;
}

/* ---- batch header reading for lookups ---- */

static void
hdr_init(struct hdr_reader *r, int fd)
{
	r->fd = fd;
	r->bpos = 0;
	r->blen = 0;
}

/* 1 with *h for the batch at pos (wholly before end), 0 if none, <0 error. */
static int
hdr_at(struct hdr_reader *r, int64_t pos, int64_t end, struct rn_batch_header *h)
{
	if (end - pos < RN_BATCH_HEADER_SIZE)
		return 0;
	if (pos < r->bpos || pos + RN_BATCH_HEADER_SIZE > r->bpos + r->blen) {
		int64_t want = end - pos < (int64_t)sizeof(r->buf) ? end - pos :
		    (int64_t)sizeof(r->buf);
		ssize_t n = rn_pread_full(r->fd, r->buf, (size_t)want, pos);

		if (n < 0)
			return (int)n;
		r->bpos = pos;
		r->blen = n;
		if (n < RN_BATCH_HEADER_SIZE)
			return 0;	/* file shorter than committed: truncated under us */
	}
	rn_batch_parse_header(r->buf + (pos - r->bpos), h);
	if (h->magic != RN_BATCH_MAGIC_V2 ||
	    h->batch_length < RN_BATCH_HEADER_SIZE - RN_BATCH_LOG_OVERHEAD ||
	    (int64_t)rn_batch_total_size(h) > end - pos)
		return -EBADMSG;
	return 1;
}

/*
 * Position of the first batch in seg (data ends at end) whose last offset
 * is >= offset: offset index, then a short scan. 1 found, 0 not in this
 * segment, <0 error.
 */
static int
locate(struct rn_log *log, struct rn_segment *seg, int active,
    uint32_t o_entries, int64_t end, int64_t offset, struct hdr_reader *r,
    int64_t *pos_out, struct rn_batch_header *h)
{
	int64_t pos = 0, o, p;
	int rc;

	if (offset > seg->base_offset && ensure_index_read(log, seg, active) == 0 &&
	    rn_oidx_lookup(&seg->oidx, o_entries, offset, end, &o, &p) >= 0)
		pos = p;
	while ((rc = hdr_at(r, pos, end, h)) == 1) {
		if (rn_batch_last_offset(h) >= offset) {
			*pos_out = pos;
			return 1;
		}
		pos += (int64_t)rn_batch_total_size(h);
	}
	*pos_out = pos;
	return rc;
}

/* ---- open / recovery ---- */

struct recover_epochs {
	struct rn_log *log;
	int64_t cap_offset;	/* batches at or above this end the data */
};

static int
recover_batch_cb(void *arg, int64_t pos, const struct rn_batch_header *h,
    const uint8_t *batch)
{
	struct recover_epochs *r = arg;

	(void)pos;
	(void)batch;
	if (rn_batch_last_offset(h) >= r->cap_offset)
		return 1;
	if (h->partition_leader_epoch >= 0)
		rn_epoch_assign(&r->log->sh->epochs, h->partition_leader_epoch,
		    h->base_offset);
	return 0;
}

static int
create_segment(struct rn_log *log, int64_t base, struct rn_segment **out)
{
	struct rn_segment *seg = rn_segment_new(base);
	int rc;

	if (seg == NULL)
		return -ENOMEM;
	/* Leftovers of an interrupted operation must not leak into it. */
	rn_segment_unlink(log->dirfd, base);
	rc = rn_segment_open_log(log->dirfd, seg, 1);
	if (rc == 0)
		rc = rn_segment_open_indexes(log->dirfd, seg, index_prealloc(log), 1);
	if (rc < 0) {
		rn_segment_free(seg);
		rn_segment_unlink(log->dirfd, base);
		return rc;
	}
	*out = seg;
	return 0;
}

/* Unlink and forget every listed segment after index i. */
static void
delete_after(struct rn_log *log, int i)
{
	for (int j = log->nsegs - 1; j > i; j--)
		rn_segment_unlink(log->dirfd, log->segs[j]->base_offset);
	list_truncate(log, i + 1);
}

/* A new empty segment at base, appended to the list. */
static int
append_new_segment(struct rn_log *log, int64_t base)
{
	struct rn_segment *seg;
	int rc = create_segment(log, base, &seg);

	if (rc < 0)
		return rc;
	if (list_append(log, seg) < 0) {
		rn_segment_free(seg);
		return -ENOMEM;
	}
	return 0;
}

/* The segment list as the directory has it (nothing opened yet). */
static int
list_segments(struct rn_log *log)
{
	int64_t *bases;
	int n, rc;

	/* A cleaner that died mid-swap: its new segment or the old ones. */
	rc = rn_swap_recover(log->dirfd);
	if (rc < 0)
		return rc;
	rc = list_dir(log, &bases, &n, 1);
	if (rc < 0)
		return rc;
	list_truncate(log, 0);
	for (int i = 0; i < n; i++) {
		struct rn_segment *seg = rn_segment_new(bases[i]);

		if (seg == NULL || list_append(log, seg) < 0) {
			rn_segment_free(seg);
			free(bases);
			return -ENOMEM;
		}
	}
	free(bases);
	return 0;
}

/* The epoch cache from its checkpoint (a bad one is ignored); *nep
 * entries were loaded. */
static int
load_epochs(struct rn_log *log, size_t *nep)
{
	struct rn_epoch_entry ep[RN_EPOCH_CACHE_SLOTS];
	int rc;

	memset(&log->sh->epochs, 0, sizeof(log->sh->epochs));
	rc = rn_epoch_checkpoint_read(log->epoch_path, ep, RN_EPOCH_CACHE_SLOTS,
	    nep);
	if (rc == 0)
		rn_epoch_load(&log->sh->epochs, ep, (uint32_t)*nep);
	else if (rc != -ENOENT && rc != -EBADMSG && rc != -EOVERFLOW)
		return rc;
	return 0;
}

/* Recovery threw data away: say where and how much, as an operator needs. */
static void
log_warn_corrupt(const struct rn_log *log, const struct rn_segment *seg,
    int64_t size, int64_t next_offset, int later)
{
	char more[64] = "", topic[RN_TOPIC_MAX + 1];

	if (later > 0)
		snprintf(more, sizeof(more), "; %d later segment(s) removed",
		    later);
	rn_log_about(LOG_WARNING, rn_logdir_subject(log->dir, topic), "%s/"
	    "%020lld.log: invalid data from byte %lld of %lld: the log now "
	    "ends at offset %lld%s", log->dir,
	    (long long)seg->base_offset, (long long)seg->size,
	    (long long)size, (long long)next_offset, more);
}

/*
 * Open segment i; a flushed one whose indexes look sane is trusted, any
 * other is scanned batch by batch (*scanned set). The last segment's
 * state ends up in c.
 */
static int
recover_segment(struct rn_log *log, int i, int64_t rp, int clean,
    struct recover_epochs *re, struct rn_segment_cursor *c, int *scanned)
{
	struct rn_segment *seg = log->segs[i];
	int last = i == log->nsegs - 1;
	int64_t next_base = last ? INT64_MAX : log->segs[i + 1]->base_offset;
	int need_scan = !clean && next_base > rp;
	int truncated = 0, rc;
	struct stat st;

	rc = rn_segment_open_log(log->dirfd, seg, 0);
	if (rc < 0)
		return rc;
	if (fstat(seg->fd, &st) < 0)
		return -errno;
	seg->size = st.st_size;
	if (!need_scan) {
		/* Flushed segment: trust it if its indexes look sane. */
		if (rn_segment_open_indexes(log->dirfd, seg, 0, 0) < 0 ||
		    rn_oidx_sanity(&seg->oidx, seg->o_entries, seg->size) < 0 ||
		    rn_tidx_sanity(&seg->tidx, seg->t_entries) < 0) {
			need_scan = 1;
		} else if (rn_segment_load_tail(seg, seg->o_entries,
		    seg->t_entries, seg->size, c) < 0) {
			/* cut short after its last index entry: what follows
			 * in later segments would leave a hole */
			need_scan = 1;
		} else if (last) {
			rc = rn_segment_open_indexes(log->dirfd, seg,
			    index_prealloc(log), 1);
			if (rc < 0)
				return rc;
		}
	}
	if (!need_scan)
		return 0;
	if ((*scanned)++ == 0)
		log->rstats.first_scanned = seg->base_offset;
	log->rstats.scanned_bytes += st.st_size;
	rc = rn_segment_recover(log->dirfd, seg, log->cfg.index_interval_bytes,
	    index_prealloc(log), 1, recover_batch_cb, re, c, &truncated);
	if (rc < 0)
		return rc;
	if (truncated)
		log_warn_corrupt(log, seg, st.st_size, c->next_offset,
		    last ? 0 : log->nsegs - i - 1);
	if (truncated && !last) {
		/* Nothing after a corrupt point can be trusted. */
		delete_after(log, i);
		last = 1;
	}
	if (!last) {
		rc = rn_index_resize(&seg->oidx, c->o_entries);
		if (rc == 0)
			rc = rn_index_resize(&seg->tidx, c->t_entries);
		if (rc < 0)
			return rc;
		seg->idx_active = 0;
		seg->o_entries = c->o_entries;
		seg->t_entries = c->t_entries;
	}
	return 0;
}

/* The start checkpoint is ahead of the data (lost tail): restart there. */
static int
restart_at(struct rn_log *log, int64_t lso, struct rn_segment_cursor *c)
{
	int rc;

	for (int i = 0; i < log->nsegs; i++)
		rn_segment_unlink(log->dirfd, log->segs[i]->base_offset);
	list_truncate(log, 0);
	if ((rc = append_new_segment(log, lso)) < 0)
		return rc;
	rn_segment_cursor_init(c, lso);
	rn_epoch_clear(&log->sh->epochs);
	return 0;
}

/* What recovery found becomes the shared state, magic last. */
static void
publish_recovered(struct rn_log *log, const struct rn_segment_cursor *c,
    int64_t lso, int64_t leo, int64_t rp, int clean)
{
	struct rn_log_shared *sh = log->sh;
	uint32_t gen = (atomic_load_explicit(&sh->generation, RLX) | 1) + 1;

	atomic_store_explicit(&sh->generation, gen, RLX);
	atomic_store_explicit(&sh->commit_seq, 0, RLX);
	atomic_store_explicit(&sh->log_start_offset, lso, RLX);
	atomic_store_explicit(&sh->active_base_offset, active_seg(log)->base_offset, RLX);
	store_cursor(log, c);
	atomic_store_explicit(&sh->log_end_offset, leo, RLX);
	atomic_store_explicit(&sh->recovery_point, clean ? leo : (rp < leo ? rp : leo), RLX);
	atomic_store_explicit(&sh->last_flush_ms, rn_wallclock_ms(), RLX);
	atomic_store_explicit(&sh->unflushed_messages, 0, RLX);
	log->gen = gen;
	atomic_store_explicit(&sh->magic, RN_LOG_SHARED_MAGIC, REL);
}

/* Initialize the shared state from what is on disk. */
static int
recover_log(struct rn_log *log, const struct rn_log_recovery *rec)
{
	struct rn_log_shared *sh = log->sh;
	int64_t rp = rec ? rec->recovery_point : 0;
	int64_t lso_hint = rec ? rec->log_start_offset : -1;
	int clean = rec ? rec->clean_shutdown : 0;
	struct recover_epochs re = { log, INT64_MAX };
	struct rn_segment_cursor c;
	int64_t leo, lso, t0 = rn_now_ms();
	size_t nep = 0;
	int rc, scanned = 0;

	memset(&log->rstats, 0, sizeof(log->rstats));
	log->rstats.recovered = 1;
	log->rstats.first_scanned = -1;
	log->rstats.recovery_point = clean ? -1 : rp;
	if ((rc = list_segments(log)) < 0 || (rc = load_epochs(log, &nep)) < 0)
		return rc;
	if (log->nsegs == 0 &&
	    (rc = append_new_segment(log, lso_hint > 0 ? lso_hint : 0)) < 0)
		return rc;
	for (int i = 0; i < log->nsegs; i++)
		if ((rc = recover_segment(log, i, rp, clean, &re, &c,
		    &scanned)) < 0)
			return rc;
	log->rstats.segments = log->nsegs;
	log->rstats.scanned = scanned;
	leo = c.next_offset;
	lso = log->segs[0]->base_offset;
	if (lso_hint > lso)
		lso = lso_hint;
	if (lso > leo) {
		if ((rc = restart_at(log, lso, &c)) < 0)
			return rc;
		leo = lso;
	}
	rn_epoch_truncate_from_end(&sh->epochs, leo);
	rn_epoch_truncate_from_start(&sh->epochs, lso);
	if (scanned > 0 || nep > 0)
		write_epoch_checkpoint(log);
	publish_recovered(log, &c, lso, leo, rp, clean);
	log->rstats.ms = rn_now_ms() - t0;
	return 0;
}

/* The partition's directory: 1 if made now, 0 if it was there. */
static int
make_log_dir(const char *dir)
{
	if (mkdir(dir, 0755) < 0)
		return errno == EEXIST ? 0 : -errno;
	return 1;
}

/*
 * A new log's directory is made without syncs: its entry in the log dir,
 * the epoch checkpoint and partition.metadata (7 syncs, 3-6 ms, were most
 * of a first produce to a new partition, and 100,000 partitions made
 * that minutes). Its first flush syncs them, before the recovery point
 * may move, as Kafka flushes a new log's parent directory with its first
 * segment flush: until then a power cut can take the directory away with
 * what is inside, but nothing in it was flushed yet either. The flag is
 * cleared first, so a file replaced meanwhile is either synced here (the
 * newest by name) or by its writer (who sees the flag clear).
 */
static int
sync_new_dir(struct rn_log *log)
{
	static const char *const files[] = { RN_LEADER_EPOCH_CHECKPOINT,
	    RN_PARTITION_METADATA };
	size_t i;
	int fd, rc = 0;

	if (!atomic_exchange_explicit(&log->sh->dir_unsynced, 0, ACQ))
		return 0;
	for (i = 0; i < sizeof(files) / sizeof(files[0]) && rc == 0; i++)
		rc = rn_fsync_at(log->dirfd, files[i]);
	if (rc == 0 && fsync(log->dirfd) < 0)
		rc = -errno;
	if (rc == 0 && (fd = openat(log->dirfd, "..", O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) < 0)
		rc = -errno;
	else if (rc == 0) {
		if (fsync(fd) < 0)
			rc = -errno;
		close(fd);
	}
	if (rc != 0)
		atomic_store_explicit(&log->sh->dir_unsynced, 1, REL);
	return rc;
}

int
rn_log_open(const char *dir, const struct rn_log_config *cfg,
    struct rn_log_shared *shared, const struct rn_log_recovery *rec,
    struct rn_log **out)
{
	struct rn_log *log;
	size_t dlen = strlen(dir);
	int rc, made = 0;

	log = calloc(1, sizeof(*log));
	if (log == NULL)
		return -ENOMEM;
	log->dirfd = -1;
	log->cfg = cfg ? *cfg : rn_log_config_default();
	if (log->cfg.index_interval_bytes < 0)
		log->cfg.index_interval_bytes = 0;
	log->sh = shared;
	log->dir = strdup(dir);
	log->epoch_path = malloc(dlen + sizeof("/" RN_LEADER_EPOCH_CHECKPOINT));
	if (log->dir == NULL || log->epoch_path == NULL) {
		rc = -ENOMEM;
		goto fail;
	}
	memcpy(log->epoch_path, dir, dlen);
	strcpy(log->epoch_path + dlen, "/" RN_LEADER_EPOCH_CHECKPOINT);
	/* made only when missing: a reopen costs no mkdir */
	log->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (log->dirfd < 0 && errno == ENOENT) {
		if ((made = make_log_dir(dir)) < 0) {
			rc = made;
			goto fail;
		}
		log->dirfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	}
	if (log->dirfd < 0) {
		rc = -errno;
		goto fail;
	}
	if (atomic_load_explicit(&shared->magic, ACQ) != RN_LOG_SHARED_MAGIC) {
		/* never flushed (made now, or made by a run that crashed
		 * before its first flush): its first flush syncs the dir */
		atomic_store_explicit(&shared->dir_unsynced, made == 1 ||
		    rec == NULL || rec->recovery_point <= 0, RLX);
		rc = recover_log(log, rec);
	} else {
		if ((rc = tail_list(log)) == -EAGAIN)
			rc = refresh(log);
		if (rc == -EAGAIN) {
			/*
			 * The generation stays odd: a lock owner died mid-change
			 * and our caller (holding the lock) is about to repair.
			 * Take the directory as it is; gen 0 forces a re-read.
			 */
			rc = rescan(log);
			log->gen = 0;
		}
	}
	if (rc < 0)
		goto fail;
	*out = log;
	return 0;
fail:
	rn_log_close(log);
	return rc;
}

void
rn_log_close(struct rn_log *log)
{
	if (log == NULL)
		return;
	list_truncate(log, 0);
	free(log->segs);
	if (log->dirfd >= 0)
		close(log->dirfd);
	free(log->dir);
	free(log->epoch_path);
	free(log);
}

/* ---- writer side ---- */

/*
 * Bring this handle up to date before a mutation (lock held); appends
 * need only the active segment listed.
 */
static int
writer_enter_tail(struct rn_log *log, struct rn_segment **active)
{
	struct rn_log_shared *sh = log->sh;
	struct rn_segment *seg;
	int rc;

	if ((atomic_load_explicit(&sh->generation, ACQ) & 1) ||
	    (atomic_load_explicit(&sh->commit_seq, ACQ) & 1)) {
		/* The previous lock owner died mid-change. */
		rc = rn_log_repair(log);
		if (rc < 0)
			return rc;
	}
	if (atomic_load_explicit(&sh->generation, ACQ) != log->gen) {
		rc = refresh(log);
		if (rc < 0)
			return rc;
	}
	seg = active_seg(log);
	if (seg == NULL ||
	    seg->base_offset != atomic_load_explicit(&sh->active_base_offset, ACQ)) {
		/* Another process rolled: pick up the new segment. */
		rc = rescan(log);
		if (rc < 0)
			return rc;
		seg = active_seg(log);
		if (seg == NULL ||
		    seg->base_offset != atomic_load_explicit(&sh->active_base_offset, ACQ))
			return -EUCLEAN;
	}
	rc = ensure_active_open(log, seg);
	if (rc < 0)
		return rc;
	if (active != NULL)
		*active = seg;
	return 0;
}

/* writer_enter_tail with every segment listed (after any repair). */
static int
writer_enter(struct rn_log *log, struct rn_segment **active)
{
	int rc = writer_enter_tail(log, active);

	/* listing drops index mappings: enter again to map the active ones */
	if (rc == 0 && log->tail_only && (rc = need_all(log)) == 0)
		rc = writer_enter_tail(log, active);
	return rc;
}

/*
 * Start a new active segment at base (the log end, or a follower's next
 * offset past a gap); lock held, inside writer_enter.
 */
static int
roll(struct rn_log *log, int64_t leo)
{
	struct rn_log_shared *sh = log->sh;
	struct rn_segment *old = active_seg(log), *seg;
	struct rn_segment_cursor c;
	int rc;

	if (old->base_offset == leo)
		return 0;	/* already empty */
	/*
	 * No generation change: a roll only adds a segment. Readers notice
	 * the new active base in their snapshot and re-read the directory;
	 * the base and its empty cursor are published in one commit window.
	 */
	load_cursor(log, &c);
	rc = create_segment(log, leo, &seg);
	if (rc == 0 && (rc = list_append(log, seg)) < 0)
		rn_segment_free(seg);
	if (rc < 0) {
		rn_segment_unlink(log->dirfd, leo);
		return rc;
	}
	/* Kafka's onBecomeInactiveSegment: final time entry, trimmed indexes. */
	rn_segment_time_index_final(old, &c);
	if (rn_index_resize(&old->oidx, c.o_entries) < 0 ||
	    rn_index_resize(&old->tidx, c.t_entries) < 0)
		rn_segment_close_indexes(old);	/* remapped lazily */
	old->idx_active = 0;
	old->idx_trusted = rn_index_is_open(&old->oidx);
	old->o_entries = c.o_entries;
	old->t_entries = c.t_entries;
	old->size = c.size;
	if (ftruncate(old->fd, c.size) < 0) {
		/* unpublished bytes stay beyond the size; harmless */
	}
	/*
	 * No writeback kick here: sync_file_range(SYNC_FILE_RANGE_WRITE) on
	 * the whole old segment blocked the appending worker 0.3-0.5 s per
	 * 1 GiB segment (block allocation and bio submission of every dirty
	 * page); the kernel's flusher writes it back off the event loop.
	 */

	rn_segment_cursor_init(&c, leo);
	commit_begin(log);
	atomic_store_explicit(&sh->active_base_offset, leo, REL);
	store_cursor(log, &c);
	commit_end(log);
	return 1;
}

static int
maybe_roll(struct rn_log *log, struct rn_segment *seg, size_t len,
    const struct rn_batch_summary *sum, int64_t ts)
{
	struct rn_log_shared *sh = log->sh;
	int64_t size = atomic_load_explicit(&sh->active_size, ACQ);
	int64_t leo = atomic_load_explicit(&sh->log_end_offset, ACQ);
	int64_t roll_ts = atomic_load_explicit(&sh->active_roll_ts, RLX);
	uint32_t oc = atomic_load_explicit(&sh->active_oidx_entries, ACQ);
	uint32_t tc = atomic_load_explicit(&sh->active_tidx_entries, ACQ);
	int64_t last = leo + sum->offset_count - 1;

	if (size == 0)
		return 0;
	if (size > log->cfg.segment_bytes - (int64_t)len ||
	    (roll_ts >= 0 && ts >= 0 && ts - roll_ts > log->cfg.segment_ms) ||
	    (int64_t)oc + sum->nbatches > (int64_t)rn_index_capacity(&seg->oidx) ||
	    (int64_t)tc + sum->nbatches + 1 > (int64_t)rn_index_capacity(&seg->tidx) ||
	    last - seg->base_offset > INT32_MAX ||
	    size + (int64_t)len > INT32_MAX)	/* index positions are int32 */
		return roll(log, leo);
	return 0;
}

/*
 * Write a payload at the end of the active segment, index it and publish.
 * Offsets in buf are final. Returns 0 or -errno.
 */
static int
write_and_publish(struct rn_log *log, struct rn_segment *seg, const void *buf,
    size_t len, int64_t now_ms, struct rn_append_info *info)
{
	struct rn_log_shared *sh = log->sh;
	const uint8_t *b = buf;
	struct rn_segment_cursor c;
	int64_t pos0, unflushed, payload_max_ts = RN_NO_TIMESTAMP;
	int epochs_changed = 0, rc;

	load_cursor(log, &c);
	pos0 = c.size;
	rc = rn_pwrite_full(seg->fd, buf, len, pos0);
	if (rc < 0) {
		/* Leave nothing half-written behind the committed size. */
		if (ftruncate(seg->fd, pos0) < 0) {
			/* repair will cut it if this failed too */
		}
		return rc;
	}
	for (size_t off = 0; off < len;) {
		struct rn_batch_header h;

		rn_batch_parse_header(b + off, &h);
		rn_segment_index_batch(seg, &c, pos0 + (int64_t)off, &h,
		    log->cfg.index_interval_bytes);
		if (h.max_timestamp > payload_max_ts)
			payload_max_ts = h.max_timestamp;
		if (h.partition_leader_epoch >= 0)
			epochs_changed |= rn_epoch_assign(&sh->epochs,
			    h.partition_leader_epoch, h.base_offset);
		off += rn_batch_total_size(&h);
	}
	if (epochs_changed)
		write_epoch_checkpoint(log);	/* rebuilt by recovery if lost */

	/* Publish: entries and bytes first, the log end last. */
	commit_begin(log);
	store_cursor(log, &c);
	atomic_store_explicit(&sh->log_end_offset, c.next_offset, REL);
	commit_end(log);

	if (info != NULL)
		info->max_timestamp = payload_max_ts;
	unflushed = atomic_load_explicit(&sh->unflushed_messages, RLX) +
	    (info ? info->record_count : 0);
	atomic_store_explicit(&sh->unflushed_messages, unflushed, RLX);
	if (unflushed >= log->cfg.flush_messages ||
	    (log->cfg.flush_ms < INT64_MAX &&
	    now_ms - atomic_load_explicit(&sh->last_flush_ms, RLX) >= log->cfg.flush_ms))
		return rn_log_flush(log, now_ms);
	return 0;
}

static int
append_leader(struct rn_log *log, void *batches, size_t len,
    int32_t leader_epoch, int64_t now_ms, struct rn_append_info *info,
    unsigned flags)
{
	struct rn_batch_limits lim = {
		.flags = flags,
		.max_batch_bytes = log->cfg.max_message_bytes,
	};
	struct rn_batch_summary sum;
	struct rn_append_info tmp;
	struct rn_segment *seg;
	int lat = log->cfg.timestamp_type_log_append;
	int64_t base, next;
	int rc;

	if (info == NULL)
		info = &tmp;
	memset(info, 0, sizeof(*info));
	rc = rn_batch_validate(batches, len, &lim, &sum);
	if (rc < 0)
		return rc;
	if ((int64_t)len > log->cfg.segment_bytes)
		return RN_ERR_RECORD_LIST_TOO_LARGE;	/* could never fit a segment */
	rc = writer_enter_tail(log, &seg);
	if (rc < 0)
		return rc;
	rc = maybe_roll(log, seg, len, &sum, lat ? now_ms : sum.max_timestamp);
	if (rc < 0)
		return rc;
	if (rc > 0) {
		info->rolled = 1;
		seg = active_seg(log);
	}
	base = atomic_load_explicit(&log->sh->log_end_offset, ACQ);
	next = rn_batch_assign(batches, len, base, leader_epoch,
	    lat ? now_ms : -1, sum.ts_mismatch > 0);
	info->base_offset = base;
	info->last_offset = next - 1;
	info->log_append_time = lat ? now_ms : -1;
	info->nbatches = sum.nbatches;
	info->record_count = sum.record_count;
	return write_and_publish(log, seg, batches, len, now_ms, info);
}

int
rn_log_append(struct rn_log *log, void *batches, size_t len,
    int32_t leader_epoch, int64_t now_ms, struct rn_append_info *info)
{
	return append_leader(log, batches, len, leader_epoch, now_ms, info,
	    RN_BATCH_V_PRODUCE);
}

int
rn_log_append_coordinator(struct rn_log *log, void *batches, size_t len,
    int32_t leader_epoch, int64_t now_ms, struct rn_append_info *info)
{
	return append_leader(log, batches, len, leader_epoch, now_ms, info,
	    RN_BATCH_V_PRODUCE | RN_BATCH_V_COORDINATOR);
}

int
rn_log_append_control(struct rn_log *log, void *batch, size_t len,
    int32_t leader_epoch, int64_t now_ms, struct rn_append_info *info)
{
	return append_leader(log, batch, len, leader_epoch, now_ms, info,
	    RN_BATCH_V_PRODUCE | RN_BATCH_V_ALLOW_CONTROL);
}

int
rn_log_append_replica(struct rn_log *log, const void *batches, size_t len,
    int64_t now_ms, struct rn_append_info *info)
{
	struct rn_batch_limits lim = {
		.flags = RN_BATCH_V_REPLICA | RN_BATCH_V_ALLOW_CONTROL,
		.max_batch_bytes = 0,	/* the leader already accepted them */
	};
	struct rn_batch_summary sum;
	struct rn_append_info tmp;
	struct rn_segment *seg;
	int rc;

	if (info == NULL)
		info = &tmp;
	memset(info, 0, sizeof(*info));
	rc = rn_batch_validate(batches, len, &lim, &sum);
	if (rc < 0)
		return rc;
	rc = writer_enter_tail(log, &seg);
	if (rc < 0)
		return rc;
	if (sum.first_offset < atomic_load_explicit(&log->sh->log_end_offset, ACQ))
		return -EILSEQ;	/* would rewrite existing offsets */
	/* A gap before the payload is fine, but never inside one segment index
	 * range: roll when the offsets would not fit relative to the base. */
	rc = maybe_roll(log, seg, len, &sum, sum.max_timestamp);
	if (rc < 0)
		return rc;
	if (rc > 0) {
		info->rolled = 1;
		seg = active_seg(log);
	}
	if (sum.last_offset - seg->base_offset > INT32_MAX) {
		rc = roll(log, sum.first_offset);	/* like Kafka: new base past the gap */
		if (rc < 0)
			return rc;
		info->rolled |= rc > 0;
		seg = active_seg(log);
	}
	if (sum.last_offset - seg->base_offset > INT32_MAX)
		return -EOVERFLOW;	/* gap too wide for one segment's relative offsets */
	info->base_offset = sum.first_offset;
	info->last_offset = sum.last_offset;
	info->log_append_time = -1;
	info->nbatches = sum.nbatches;
	info->record_count = sum.record_count;
	return write_and_publish(log, seg, batches, len, now_ms, info);
}

/* ---- reads ---- */

static int
read_once(struct rn_log *log, const struct snap *s, int64_t offset,
    int64_t max_bytes, int64_t bound, struct rn_log_slice *out)
{
	struct hdr_reader *r = &log->hr;
	int i = seg_find(log, offset);
	int rc = 0;

	if (i < 0)
		i = 0;
	for (; i < log->nsegs; i++) {
		struct rn_segment *seg = log->segs[i];
		int active = seg->base_offset == s->abase;
		int64_t end = active ? s->asize : seg->size, pos, cur, limit, o, p;
		int64_t first_base;
		uint32_t n_o;
		struct rn_batch_header h;

		if (seg->base_offset > s->abase)
			break;
		rc = rn_segment_open_log(log->dirfd, seg, 0);
		if (rc < 0) {
			rc = rc == -ENOENT ? -EAGAIN : rc;
			break;
		}
		if (ensure_index_read(log, seg, active) < 0)
			seg->o_entries = 0;
		n_o = active ? s->oc : seg->o_entries;
		hdr_init(r, seg->fd);
		rc = locate(log, seg, active, n_o, end, offset, r, &pos, &h);
		if (rc < 0)
			break;
		if (rc == 0)
			continue;	/* offset lies past this segment's data */
		rc = 0;
		if (rn_batch_last_offset(&h) >= bound)
			break;	/* the bound falls inside this batch: nothing to return */
		first_base = h.base_offset;
		cur = pos + (int64_t)rn_batch_total_size(&h);
		limit = max_bytes > end - pos ? end : pos + (max_bytes > 0 ? max_bytes : 0);
		/* Skip ahead over whole batches using the index, then scan the rest. */
		if (limit > cur && rn_index_is_open(&seg->oidx) &&
		    rn_oidx_lookup_pos(&seg->oidx, n_o, limit < end ? limit : end - 1,
		    bound, &o, &p) >= 0 && p > cur)
			cur = p;
		while (cur < limit) {
			int hr = hdr_at(r, cur, end, &h);

			if (hr < 0) {
				rc = hr;
				break;
			}
			if (hr == 0 || cur + (int64_t)rn_batch_total_size(&h) > limit ||
			    rn_batch_last_offset(&h) >= bound)
				break;
			cur += (int64_t)rn_batch_total_size(&h);
		}
		if (rc < 0)
			break;
		out->fd = seg->fd;
		out->file_pos = pos;
		out->len = cur - pos;
		out->first_offset = first_base;
		out->seg = seg;
		seg->refs++;
		break;
	}
	return rc;
}

int
rn_log_read(struct rn_log *log, int64_t offset, int64_t max_bytes,
    int64_t max_offset, struct rn_log_slice *out)
{
	for (int attempt = 0; attempt < 1000; attempt++) {
		struct snap s;
		int64_t bound;
		int rc;

		memset(out, 0, sizeof(*out));
		out->fd = -1;
		if ((rc = need_from(log, offset)) < 0 ||
		    (rc = snapshot_tail(log, &s)) < 0)
			return rc;
		out->log_end_offset = s.leo;
		out->log_start_offset = s.lso;
		if (offset < s.lso || offset > s.leo)
			return -ERANGE;
		bound = max_offset < 0 || max_offset > s.leo ? s.leo : max_offset;
		if (offset >= bound)
			return 0;
		rc = read_once(log, &s, offset, max_bytes, bound, out);
		if (rc == 0 && snapshot_still_valid(log, &s))
			return 0;
		rn_log_slice_release(log, out);
		/* A bad header while nothing moved is real damage, not a race. */
		if (rc == -EBADMSG && snapshot_still_valid(log, &s))
			return -EIO;
		if (rc < 0 && rc != -EAGAIN && rc != -EBADMSG)
			return rc;
		/* The segment set moved under us (or a file vanished): retry. */
	}
	return -EAGAIN;
}

void
rn_log_slice_release(struct rn_log *log, struct rn_log_slice *slice)
{
	(void)log;
	if (slice->seg != NULL)
		seg_unref(slice->seg);
	slice->seg = NULL;
	slice->fd = -1;
	slice->len = 0;
}

/* ---- timestamps ---- */

static int
find_time_in_batch(int fd, int64_t pos, const struct rn_batch_header *h,
    int64_t ts, int64_t lso, int64_t *offset, int64_t *found_ts)
{
	size_t size = rn_batch_total_size(h), rp = 0;
	uint8_t *b;
	struct rn_record_view rv;
	int rc;

	/* Compressed or LogAppendTime: the batch as a whole answers. */
	if (rn_batch_compression(h) != RN_COMPRESSION_NONE ||
	    (h->attributes & RN_BATCH_ATTR_LOG_APPEND_TIME)) {
		*offset = h->base_offset > lso ? h->base_offset : lso;
		*found_ts = h->max_timestamp;
		return 1;
	}
	b = malloc(size);
	if (b == NULL)
		return -ENOMEM;
	if (rn_pread_full(fd, b, size, pos) != (ssize_t)size) {
		free(b);
		return -EAGAIN;
	}
	while ((rc = rn_batch_next_record(b, size, &rp, &rv)) == 1) {
		if (rv.timestamp >= ts && rv.offset >= lso) {
			*offset = rv.offset;
			*found_ts = rv.timestamp;
			break;
		}
	}
	free(b);
	return rc < 0 ? -EBADMSG : rc;
}

/* KIP-734: the first record carrying the largest timestamp in the log. */
static int
offset_of_max_timestamp(struct rn_log *log, int64_t *offset, int64_t *found_ts)
{
	for (int attempt = 0; attempt < 1000; attempt++) {
		struct rn_segment *best = NULL;
		int64_t best_ts = RN_NO_TIMESTAMP, best_off = -1, pos;
		struct rn_batch_header h;
		uint32_t best_n = 0;
		struct snap s;
		int rc = snapshot(log, &s), found;

		if (rc < 0)
			return rc;
		for (int i = 0; i < log->nsegs; i++) {
			struct rn_segment *seg = log->segs[i];
			int64_t t, o;

			if (seg->base_offset == s.abase) {
				t = atomic_load_explicit(&log->sh->active_max_ts, RLX);
				o = atomic_load_explicit(&log->sh->active_max_ts_offset, RLX);
			} else if (ensure_index_read(log, seg, 0) == 0 && seg->t_entries > 0) {
				rn_tidx_get(&seg->tidx, seg->t_entries - 1, &t, &o);
			} else {
				continue;
			}
			/* Ties go to the older segment: the first such record wins. */
			if (t > best_ts && o >= s.lso && o < s.leo) {
				best = seg;
				best_ts = t;
				best_off = o;
				best_n = seg->base_offset == s.abase ? s.oc : seg->o_entries;
			}
		}
		if (best == NULL)
			return -ENOENT;
		rc = rn_segment_open_log(log->dirfd, best, 0);
		if (rc == 0) {
			int64_t end = best->base_offset == s.abase ? s.asize : best->size;

			hdr_init(&log->hr, best->fd);
			found = locate(log, best, best->base_offset == s.abase, best_n, end,
			    best_off, &log->hr, &pos, &h);
			if (found == 1)
				rc = find_time_in_batch(best->fd, pos, &h, best_ts, s.lso,
				    offset, found_ts);
			else
				rc = found < 0 ? found : -EAGAIN;
			if (rc == 0) {
				/* No record matches the indexed maximum: answer with it. */
				*offset = best_off;
				*found_ts = best_ts;
				rc = 1;
			}
		}
		if (snapshot_still_valid(log, &s) && rc != -EAGAIN && rc != -ENOENT)
			return rc < 0 ? rc : 0;
	}
	return -EAGAIN;
}

/*
 * The first record at or after ts in segment seg of snapshot s: 1 with
 * *offset and *found_ts set, 0 when the segment has none, or -errno
 * (-EAGAIN: it could not be opened, the log changed).
 */
static int
time_in_segment(struct rn_log *log, const struct snap *s,
    struct rn_segment *seg, int64_t ts, int64_t *offset, int64_t *found_ts)
{
	struct hdr_reader *r = &log->hr;
	int active = seg->base_offset == s->abase;
	int64_t end = active ? s->asize : seg->size, pos = 0, start, tts, toff;
	uint32_t n_o, n_t;
	struct rn_batch_header h;
	int hr;

	if ((active ? atomic_load_explicit(&log->sh->active_max_ts, RLX) :
	    rn_segment_largest_ts(log->dirfd, seg)) < ts)
		return 0;
	if (rn_segment_open_log(log->dirfd, seg, 0) < 0)
		return -EAGAIN;
	if (ensure_index_read(log, seg, active) < 0) {
		n_o = n_t = 0;
	} else {
		n_o = active ? s->oc : seg->o_entries;
		n_t = active ? s->tc : seg->t_entries;
	}
	/* Strictly earlier entry: everything before it is < ts. */
	start = s->lso;
	if (n_t > 0 && rn_tidx_lookup(&seg->tidx, n_t, ts - 1, &tts, &toff) >= 0 &&
	    toff > start)
		start = toff;
	hdr_init(r, seg->fd);
	hr = locate(log, seg, active, n_o, end, start, r, &pos, &h);
	while (hr == 1) {
		if (h.max_timestamp >= ts && rn_batch_last_offset(&h) >= s->lso &&
		    rn_batch_last_offset(&h) < s->leo) {
			hr = find_time_in_batch(seg->fd, pos, &h, ts, s->lso,
			    offset, found_ts);
			if (hr != 0)
				return hr;
		}
		pos += (int64_t)rn_batch_total_size(&h);
		hr = hdr_at(r, pos, end, &h);
	}
	return hr;
}

int
rn_log_offset_for_time(struct rn_log *log, int64_t ts, int64_t *offset,
    int64_t *found_ts)
{
	struct rn_log_shared *sh = log->sh;

	*found_ts = RN_NO_TIMESTAMP;
	if (ts == RN_LIST_EARLIEST) {
		*offset = atomic_load_explicit(&sh->log_start_offset, ACQ);
		return 0;
	}
	if (ts == RN_LIST_LATEST) {
		*offset = atomic_load_explicit(&sh->log_end_offset, ACQ);
		return 0;
	}
	if (ts == RN_LIST_MAX_TIMESTAMP)
		return offset_of_max_timestamp(log, offset, found_ts);
	if (ts < 0)
		return -EINVAL;
	for (int attempt = 0; attempt < 1000; attempt++) {
		struct snap s;
		int rc = snapshot(log, &s), i;

		if (rc < 0)
			return rc;
		i = seg_find(log, s.lso);
		rc = -ENOENT;
		for (i = i < 0 ? 0 : i; i < log->nsegs; i++) {
			struct rn_segment *seg = log->segs[i];
			int hr;

			if (seg->base_offset > s.abase)
				break;
			hr = time_in_segment(log, &s, seg, ts, offset, found_ts);
			if (hr == 0)
				continue;
			rc = hr == 1 ? 0 : hr;
			break;
		}
		if (snapshot_still_valid(log, &s) && rc != -EAGAIN)
			return rc == -EBADMSG ? -EIO : rc;
	}
	return -EAGAIN;
}

/* ---- truncation, deletion, retention ---- */

/* Entries (of n) whose position is < pos / whose offset is < off. */
static uint32_t
oidx_count_below_pos(const struct rn_index *ix, uint32_t n, int64_t pos)
{
	int64_t o, p, slot;

	if (pos <= 0 || !rn_index_is_open(ix))
		return 0;
	slot = rn_oidx_lookup_pos(ix, n, pos - 1, INT64_MAX, &o, &p);
	return (uint32_t)(slot + 1);
}

static uint32_t
tidx_count_below_offset(const struct rn_index *ix, uint32_t n, int64_t off)
{
	uint32_t lo = 0, hi = n < rn_index_capacity(ix) ? n : rn_index_capacity(ix);

	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int64_t t, o;

		rn_tidx_get(ix, mid, &t, &o);
		if (o < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int
rn_log_truncate_fully(struct rn_log *log, int64_t offset)
{
	struct rn_log_shared *sh = log->sh;
	struct rn_segment *seg;
	struct rn_segment_cursor c;
	int rc;

	if (offset < 0)
		return -EINVAL;
	rc = writer_enter(log, NULL);
	if (rc < 0 && rc != -EUCLEAN && rc != -ENOENT)
		return rc;
	gen_begin(log);
	/* Readers stop seeing data before anything is removed. */
	atomic_store_explicit(&sh->log_end_offset, offset, REL);
	atomic_store_explicit(&sh->log_start_offset, offset, REL);
	for (int i = 0; i < log->nsegs; i++)
		rn_segment_unlink(log->dirfd, log->segs[i]->base_offset);
	list_truncate(log, 0);
	rc = create_segment(log, offset, &seg);
	if (rc == 0 && (rc = list_append(log, seg)) < 0)
		rn_segment_free(seg);
	if (rc < 0)
		return rc;	/* generation left odd: the next writer repairs */
	rn_segment_cursor_init(&c, offset);
	commit_begin(log);
	atomic_store_explicit(&sh->active_base_offset, offset, REL);
	store_cursor(log, &c);
	commit_end(log);
	if (rn_epoch_clear(&sh->epochs))
		write_epoch_checkpoint(log);
	atomic_store_explicit(&sh->recovery_point, offset, RLX);
	gen_end(log);
	return rc;
}

int
rn_log_truncate_to(struct rn_log *log, int64_t offset)
{
	struct rn_log_shared *sh = log->sh;
	struct rn_segment *seg;
	struct rn_segment_cursor c;
	struct rn_batch_header h;
	struct hdr_reader *r;
	int64_t leo, lso, end, pos, new_leo;
	uint32_t n_o, n_t;
	int rc, i, active, found;

	rc = writer_enter(log, NULL);
	if (rc < 0)
		return rc;
	leo = atomic_load_explicit(&sh->log_end_offset, ACQ);
	lso = atomic_load_explicit(&sh->log_start_offset, ACQ);
	if (offset >= leo)
		return 0;
	if (offset < lso || offset < log->segs[0]->base_offset)
		return rn_log_truncate_fully(log, offset);
	i = seg_find(log, offset);
	seg = log->segs[i];
	active = i == log->nsegs - 1;
	end = active ? atomic_load_explicit(&sh->active_size, ACQ) : seg->size;
	rc = rn_segment_open_log(log->dirfd, seg, 0);
	if (rc < 0)
		return rc;
	if (ensure_index_read(log, seg, active) < 0)
		seg->o_entries = seg->t_entries = 0;
	n_o = active ? atomic_load_explicit(&sh->active_oidx_entries, ACQ) : seg->o_entries;
	n_t = active ? atomic_load_explicit(&sh->active_tidx_entries, ACQ) : seg->t_entries;
	r = &log->hr;
	hdr_init(r, seg->fd);
	found = locate(log, seg, active, n_o, end, offset, r, &pos, &h);
	if (found < 0)
		return found;
	new_leo = found && h.base_offset < offset ? h.base_offset : offset;
	if (!found)
		pos = end;
	n_o = rn_index_is_open(&seg->oidx) ? oidx_count_below_pos(&seg->oidx, n_o, pos) : 0;
	n_t = rn_index_is_open(&seg->tidx) ? tidx_count_below_offset(&seg->tidx, n_t, new_leo) : 0;

	gen_begin(log);
	atomic_store_explicit(&sh->log_end_offset, new_leo, REL);
	if (!active) {
		rc = rn_segment_open_indexes(log->dirfd, seg, index_prealloc(log), 1);
		if (rc < 0)
			return rc;	/* generation left odd: the next writer repairs */
	}
	rc = rn_segment_load_tail(seg, n_o, n_t, pos, &c);
	if (rc < 0) {
		/* Index disagrees with the data: rebuild from the data itself. */
		struct recover_epochs re = { log, new_leo };
		int truncated;

		rc = rn_segment_recover(log->dirfd, seg, log->cfg.index_interval_bytes,
		    index_prealloc(log), 0, recover_batch_cb, &re, &c, &truncated);
		if (rc < 0)
			return rc;	/* likewise */
	}
	commit_begin(log);
	atomic_store_explicit(&sh->active_base_offset, seg->base_offset, REL);
	store_cursor(log, &c);
	commit_end(log);
	delete_after(log, i);
	if (ftruncate(seg->fd, pos) < 0)
		rc = -errno;
	if (rn_epoch_truncate_from_end(&sh->epochs, new_leo))
		write_epoch_checkpoint(log);
	if (atomic_load_explicit(&sh->recovery_point, RLX) > new_leo)
		atomic_store_explicit(&sh->recovery_point, new_leo, RLX);
	gen_end(log);
	return rc;
}

/* Delete the k oldest segments (never the active one). */
static int
delete_oldest(struct rn_log *log, int k)
{
	struct rn_log_shared *sh = log->sh;
	int64_t lso, nb;
	int rc = 0;

	if (k <= 0)
		return 0;
	if (k > log->nsegs - 1)
		k = log->nsegs - 1;
	nb = log->segs[k]->base_offset;
	gen_begin(log);
	lso = atomic_load_explicit(&sh->log_start_offset, ACQ);
	if (nb > lso) {
		lso = nb;
		atomic_store_explicit(&sh->log_start_offset, lso, REL);
	}
	for (int i = 0; i < k; i++) {
		int e = rn_segment_unlink(log->dirfd, log->segs[i]->base_offset);

		if (e < 0 && rc == 0)
			rc = e;
	}
	list_drop_head(log, k);
	gen_end(log);
	if (rn_epoch_truncate_from_start(&sh->epochs, lso))
		write_epoch_checkpoint(log);
	return rc < 0 ? rc : k;
}

int64_t
rn_log_delete_records_before(struct rn_log *log, int64_t offset)
{
	struct rn_log_shared *sh = log->sh;
	int64_t leo, lso;
	int rc, k = 0;

	rc = writer_enter(log, NULL);
	if (rc < 0)
		return rc;
	leo = atomic_load_explicit(&sh->log_end_offset, ACQ);
	lso = atomic_load_explicit(&sh->log_start_offset, ACQ);
	if (offset > leo || offset < 0)
		return -ERANGE;
	if (offset <= lso)
		return lso;
	atomic_store_explicit(&sh->log_start_offset, offset, REL);
	if (rn_epoch_truncate_from_start(&sh->epochs, offset))
		write_epoch_checkpoint(log);
	while (k < log->nsegs - 1 && log->segs[k + 1]->base_offset <= offset)
		k++;
	rc = delete_oldest(log, k);
	if (rc < 0)
		return rc;
	return atomic_load_explicit(&sh->log_start_offset, ACQ);
}

int
rn_log_retention(struct rn_log *log, int64_t now_ms)
{
	struct rn_log_shared *sh = log->sh;
	int64_t total, lso;
	int rc, k = 0;

	rc = writer_enter(log, NULL);
	if (rc < 0)
		return rc;
	lso = atomic_load_explicit(&sh->log_start_offset, ACQ);
	total = atomic_load_explicit(&sh->active_size, ACQ);
	for (int i = 0; i < log->nsegs - 1; i++)
		total += log->segs[i]->size;
	/* Oldest first; stop at the first segment that must stay. */
	while (k < log->nsegs - 1) {
		struct rn_segment *seg = log->segs[k];
		int del = log->segs[k + 1]->base_offset <= lso;

		if (!del && log->cfg.retention_ms >= 0)
			del = now_ms - rn_segment_largest_ts(log->dirfd, seg) >
			    log->cfg.retention_ms;
		if (!del && log->cfg.retention_bytes >= 0)
			del = total - seg->size >= log->cfg.retention_bytes;
		if (!del)
			break;
		total -= seg->size;
		k++;
	}
	return delete_oldest(log, k);
}

int
rn_log_flush(struct rn_log *log, int64_t now_ms)
{
	struct rn_log_shared *sh = log->sh;
	int64_t rp = atomic_load_explicit(&sh->recovery_point, RLX);
	int64_t leo = atomic_load_explicit(&sh->log_end_offset, ACQ);
	int rc = 0;

	if (atomic_load_explicit(&sh->generation, ACQ) != log->gen) {
		rc = refresh(log);
		if (rc < 0)
			return rc;
	}
	if (leo > rp && (rc = need_from(log, rp)) < 0)
		return rc;
	if (leo > rp) {
		int i = seg_find(log, rp);

		for (i = i < 0 ? 0 : i; i < log->nsegs && rc == 0; i++) {
			struct rn_segment *seg = log->segs[i];

			rc = rn_segment_open_log(log->dirfd, seg, 0);
			if (rc == 0 && fdatasync(seg->fd) < 0)
				rc = -errno;
			/* Indexes below the recovery point are not rebuilt on restart. */
			if (rc == 0 && ensure_index_read(log, seg,
			    seg->base_offset == atomic_load_explicit(&sh->active_base_offset, ACQ)) == 0)
				rc = rn_segment_sync_indexes(seg);
		}
		if (rc == 0 && fsync(log->dirfd) < 0)
			rc = -errno;
		if (rc == 0)
			rc = sync_new_dir(log);
		if (rc < 0)
			return rc;
		atomic_store_explicit(&sh->recovery_point, leo, RLX);
	}
	atomic_store_explicit(&sh->last_flush_ms, now_ms, RLX);
	atomic_store_explicit(&sh->unflushed_messages, 0, RLX);
	return 0;
}

int64_t
rn_log_shutdown(struct rn_log *log)
{
	struct rn_log_shared *sh = log->sh;
	struct rn_segment *seg;
	int rc;

	rc = writer_enter(log, &seg);
	if (rc < 0)
		return rc;
	rc = rn_log_flush(log, rn_wallclock_ms());
	if (rc < 0)
		return rc;
	/* Trim the active indexes to their entries, as Kafka does on close. */
	rc = rn_index_resize(&seg->oidx, atomic_load_explicit(&sh->active_oidx_entries, ACQ));
	if (rc == 0)
		rc = rn_index_resize(&seg->tidx,
		    atomic_load_explicit(&sh->active_tidx_entries, ACQ));
	if (rc == 0)
		rc = rn_segment_sync_indexes(seg);
	seg->idx_active = 0;
	if (rc == 0)
		rc = write_epoch_checkpoint(log);
	if (rc < 0)
		return rc;
	atomic_store_explicit(&sh->magic, RN_LOG_SHARED_SHUT, REL);
	return atomic_load_explicit(&sh->recovery_point, RLX);
}

/* ---- repair after a dead lock owner ---- */

static int repair_locked(struct rn_log *log, uint32_t gen, uint32_t cs);

int
rn_log_repair(struct rn_log *log)
{
	struct rn_log_shared *sh = log->sh;
	uint32_t gen = atomic_load_explicit(&sh->generation, ACQ);
	uint32_t cs = atomic_load_explicit(&sh->commit_seq, ACQ);

	if (atomic_load_explicit(&sh->magic, ACQ) != RN_LOG_SHARED_MAGIC)
		return -EINVAL;	/* never initialized: rn_log_open recovers */
	return repair_locked(log, gen, cs);
}

/*
 * Died outside any publication: only unpublished bytes past the active
 * segment's published size to drop. 1 when done, 0 when the active
 * segment is not the one published (a full rebuild is needed), or -errno.
 */
static int
drop_unpublished(struct rn_log *log, int64_t abase, int64_t asize)
{
	struct rn_segment *seg = active_seg(log);
	struct stat st;
	int rc;

	if (seg == NULL || seg->base_offset != abase)
		return 0;
	rc = rn_segment_open_log(log->dirfd, seg, 0);
	if (rc < 0)
		return rc;
	if (fstat(seg->fd, &st) < 0)
		return -errno;
	if (st.st_size > asize && ftruncate(seg->fd, asize) < 0)
		return -errno;
	seg->size = asize;
	return 1;
}

/*
 * Died inside a segment change or a publication: rebuild the active
 * segment from its data, capped at the published log end (*leo), which
 * is the value readers went by, and publish it.
 */
static int
rebuild_active(struct rn_log *log, int64_t abase, int64_t *leo)
{
	struct rn_log_shared *sh = log->sh;
	struct recover_epochs re = { log, *leo };
	struct rn_segment_cursor c;
	struct rn_segment *seg;
	int rc, i, truncated;

	i = seg_find(log, abase);
	/* Segments wholly above the log end are leftovers of a truncation. */
	if (i >= 0 && (log->segs[i]->base_offset != abase || abase > *leo))
		i = -1;
	if (i < 0 && (i = seg_find(log, *leo)) < 0) {
		if ((rc = append_new_segment(log, *leo)) < 0)
			return rc;
		i = log->nsegs - 1;
	}
	delete_after(log, i);
	seg = log->segs[i];
	rc = rn_segment_recover(log->dirfd, seg, log->cfg.index_interval_bytes,
	    index_prealloc(log), 1, recover_batch_cb, &re, &c, &truncated);
	if (rc < 0)
		return rc;
	if (c.next_offset > *leo)
		*leo = c.next_offset;
	commit_begin(log);
	atomic_store_explicit(&sh->active_base_offset, seg->base_offset, REL);
	store_cursor(log, &c);
	atomic_store_explicit(&sh->log_end_offset, *leo, REL);
	commit_end(log);
	return 0;
}

static int
repair_locked(struct rn_log *log, uint32_t gen, uint32_t cs)
{
	struct rn_log_shared *sh = log->sh;
	int64_t leo = atomic_load_explicit(&sh->log_end_offset, ACQ);
	int64_t abase = atomic_load_explicit(&sh->active_base_offset, ACQ);
	int64_t asize = atomic_load_explicit(&sh->active_size, ACQ);
	int rc;

	rn_epoch_repair(&sh->epochs);
	rc = rn_swap_recover(log->dirfd);
	if (rc < 0)
		return rc;
	rc = rescan(log);
	if (rc < 0)
		return rc;
	rc = 0;
	if (!(gen & 1) && !(cs & 1))
		rc = drop_unpublished(log, abase, asize);
	if (rc == 0)
		rc = rebuild_active(log, abase, &leo);
	if (rc < 0)
		return rc;
	if (atomic_load_explicit(&sh->commit_seq, RLX) & 1)
		atomic_fetch_add_explicit(&sh->commit_seq, 1, REL);
	if (rn_epoch_truncate_from_end(&sh->epochs, leo))
		write_epoch_checkpoint(log);
	if (atomic_load_explicit(&sh->recovery_point, RLX) > leo)
		atomic_store_explicit(&sh->recovery_point, leo, RLX);
	/* A new even generation makes every process re-read the directory. */
	gen = atomic_load_explicit(&sh->generation, RLX);
	gen = (gen | 1) + 1;
	atomic_store_explicit(&sh->generation, gen, REL);
	log->gen = gen;
	return 0;
}

/* ---- compaction: the cleaner's view and its swap ---- */

int
rn_log_cleanable(struct rn_log *log, struct rn_log_seginfo *out, int cap,
    uint32_t *gen, int64_t *active_base)
{
	struct snap s;
	int rc = snapshot(log, &s), n = 0;

	if (rc < 0)
		return rc;
	for (int i = 0; i < log->nsegs && n < cap; i++) {
		struct rn_segment *seg = log->segs[i];

		if (seg->base_offset >= s.abase)
			break;
		out[n].base = seg->base_offset;
		out[n].size = seg->size;
		out[n].largest_ts = rn_segment_largest_ts(log->dirfd, seg);
		n++;
	}
	*gen = s.gen;
	*active_base = s.abase;
	return n;
}

int
rn_log_swap_segments(struct rn_log *log, uint32_t gen, int64_t base,
    const int64_t *olds, int n)
{
	int rc = writer_enter(log, NULL), i;

	if (rc < 0)
		return rc;
	if (atomic_load_explicit(&log->sh->generation, ACQ) != gen)
		return -ESTALE;	/* segments went or changed since the cleaning */
	i = seg_find(log, base);
	if (i < 0 || n < 1 || olds[0] != base || i + n >= log->nsegs)
		return -ESTALE;
	for (int k = 0; k < n; k++)
		if (log->segs[i + k]->base_offset != olds[k])
			return -ESTALE;
	/* the merged segments' aborted transactions go with their markers */
	rc = rn_txnindex_merge(log->dirfd, olds, n);
	if (rc < 0)
		return rc;
	rc = rn_swap_promote(log->dirfd, base);
	if (rc < 0)
		return rc;
	rn_swap_crash_point("swap");
	gen_begin(log);
	rc = rn_swap_install(log->dirfd, base, olds, n);
	if (rc < 0)
		return rc;	/* generation left odd: the next writer repairs */
	rn_txnindex_unlink_merged(log->dirfd, olds, n);
	gen_end(log);
	return refresh(log);
}

int
rn_log_dirfd(const struct rn_log *log)
{
	return log->dirfd;
}

uint32_t
rn_log_generation(const struct rn_log *log)
{
	return atomic_load_explicit(&log->sh->generation, ACQ);
}

/* ---- epochs and getters ---- */

int
rn_log_assign_epoch(struct rn_log *log, int32_t epoch, int64_t start_offset)
{
	int rc = writer_enter(log, NULL);

	if (rc < 0)
		return rc;
	if (rn_epoch_assign(&log->sh->epochs, epoch, start_offset))
		return write_epoch_checkpoint(log);
	return 0;
}

void
rn_log_end_offset_for_epoch(struct rn_log *log, int32_t epoch,
    int32_t *out_epoch, int64_t *out_offset)
{
	rn_epoch_end_offset_for(&log->sh->epochs, epoch,
	    atomic_load_explicit(&log->sh->log_end_offset, ACQ), out_epoch, out_offset);
}

int64_t
rn_log_end_offset(const struct rn_log *log)
{
	return atomic_load_explicit(&log->sh->log_end_offset, ACQ);
}

int64_t
rn_log_start_offset(const struct rn_log *log)
{
	return atomic_load_explicit(&log->sh->log_start_offset, ACQ);
}

int64_t
rn_log_recovery_point(const struct rn_log *log)
{
	return atomic_load_explicit(&log->sh->recovery_point, RLX);
}

int64_t
rn_log_size_bytes(struct rn_log *log)
{
	struct snap s;
	int64_t total = 0;
	int rc = snapshot(log, &s);

	if (rc < 0)
		return rc;
	for (int i = 0; i < log->nsegs; i++)
		total += log->segs[i]->base_offset == s.abase ? s.asize : log->segs[i]->size;
	return total;
}

int
rn_log_segment_count(struct rn_log *log)
{
	struct snap s;
	int rc = snapshot(log, &s);

	return rc < 0 ? rc : log->nsegs;
}

int
rn_log_segment_bases(struct rn_log *log, int64_t *bases, int cap)
{
	struct snap s;
	int rc = snapshot(log, &s);

	if (rc < 0)
		return rc;
	for (int i = 0; i < log->nsegs && i < cap; i++)
		bases[i] = log->segs[i]->base_offset;
	return log->nsegs;
}

const char *
rn_log_dir(const struct rn_log *log)
{
	return log->dir;
}

int
rn_log_segments(struct rn_log *log, int64_t *bases, int64_t *sizes, int cap,
    struct rn_log_view *v)
{
	struct snap s;
	int rc = snapshot(log, &s), i;

	if (rc < 0)
		return rc;
	for (i = 0; i < log->nsegs && i < cap; i++) {
		bases[i] = log->segs[i]->base_offset;
		sizes[i] = log->segs[i]->base_offset == s.abase ? s.asize :
		    log->segs[i]->size;
	}
	v->gen = s.gen;
	v->lso = s.lso;
	v->leo = s.leo;
	v->abase = s.abase;
	v->asize = s.asize;
	v->oc = s.oc;
	v->tc = s.tc;
	return log->nsegs;
}

/* ---- background flush of rolled segments, producer-state replay ---- */

/* Write back and wait for part of a rolled segment, from fc->pos. */
static int
flush_segment_part(struct rn_segment *seg, struct rn_log_flush_cursor *fc,
    int64_t *budget)
{
	/* a chunk at a time, so one call never waits long */
	const int64_t chunk_max = 8 << 20;

	while (fc->pos < seg->size && *budget > 0) {
		int64_t chunk = seg->size - fc->pos;

		if (chunk > chunk_max)
			chunk = chunk_max;
		if (chunk > *budget)
			chunk = *budget;
		if (sync_file_range(seg->fd, fc->pos, chunk,
		    SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE |
		    SYNC_FILE_RANGE_WAIT_AFTER) < 0)
			return -errno;
		fc->pos += chunk;
		*budget -= chunk;
	}
	return fc->pos < seg->size ? 0 : 1;
}

int
rn_log_flush_rolled_step(struct rn_log *log, struct rn_log_flush_cursor *fc,
    int64_t max_bytes, int64_t *upto, uint32_t *gen)
{
	int64_t rp = atomic_load_explicit(&log->sh->recovery_point, RLX);
	int64_t budget = max_bytes;
	struct snap s;
	int i, rc;

	if ((rc = snapshot(log, &s)) < 0)
		return rc;
	*upto = s.abase;
	*gen = s.gen;
	if (rp >= s.abase)
		return 1;
	if (fc->gen != s.gen || fc->base < rp) {
		/* segments removed or cut since: start over */
		fc->gen = s.gen;
		fc->base = rp;
		fc->pos = 0;
	}
	i = seg_find(log, rp);
	for (i = i < 0 ? 0 : i; i < log->nsegs &&
	    log->segs[i]->base_offset < s.abase; i++) {
		struct rn_segment *seg = log->segs[i];

		if (seg->base_offset < fc->base)
			continue;	/* synced earlier in this round */
		if (seg->base_offset > fc->base) {
			fc->base = seg->base_offset;
			fc->pos = 0;
		}
		if ((rc = rn_segment_open_log(log->dirfd, seg, 0)) < 0 ||
		    (rc = flush_segment_part(seg, fc, &budget)) <= 0)
			return rc;
		/* the size, then the indexes recovery will trust */
		if (fdatasync(seg->fd) < 0)
			return -errno;
		if (ensure_index_read(log, seg, 0) == 0 &&
		    (rc = rn_segment_sync_indexes(seg)) < 0)
			return rc;
		fc->base = seg->base_offset + 1;	/* this one is done */
		fc->pos = 0;
	}
	if (fsync(log->dirfd) < 0)
		return -errno;
	return (rc = sync_new_dir(log)) < 0 ? rc : 1;
}

int
rn_log_recovery_point_advance(struct rn_log *log, uint32_t gen, int64_t upto)
{
	struct rn_log_shared *sh = log->sh;

	/* a truncation or removal since: what was synced may not be the log */
	if (atomic_load_explicit(&sh->generation, ACQ) != gen ||
	    upto > atomic_load_explicit(&sh->active_base_offset, ACQ) ||
	    upto <= atomic_load_explicit(&sh->recovery_point, RLX))
		return 0;
	atomic_store_explicit(&sh->recovery_point, upto, RLX);
	return 1;
}

int
rn_log_scan_headers(struct rn_log *log, int64_t from, rn_log_header_fn fn,
    void *arg)
{
	struct snap s;
	int i, rc;

	if ((rc = snapshot(log, &s)) < 0)
		return rc;
	if (from < s.lso)
		from = s.lso;
	if (from >= s.leo)
		return 0;
	i = seg_find(log, from);
	for (i = i < 0 ? 0 : i; i < log->nsegs; i++) {
		struct rn_segment *seg = log->segs[i];
		int active = seg->base_offset == s.abase;
		int64_t end = active ? s.asize : seg->size, pos = 0, o, p;

		if ((rc = rn_segment_open_log(log->dirfd, seg, 0)) < 0)
			return rc;
		/* start near from: the offset index, then a short walk */
		if (from > seg->base_offset &&
		    ensure_index_read(log, seg, active) == 0 &&
		    rn_oidx_lookup(&seg->oidx, active ? s.oc : seg->o_entries,
		    from, end, &o, &p) >= 0)
			pos = p;
		if ((rc = rn_segment_scan(seg, pos, end, 0, 0,
		    (rn_segment_batch_fn)fn, arg, NULL)) != 0)
			return rc;
		if (active)
			break;
	}
	return 0;
}

void
rn_log_recovery_stats(const struct rn_log *log, struct rn_log_recovery_stats *st)
{
	*st = log->rstats;
}
