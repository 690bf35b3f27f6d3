/*
 * The metadata log entries this node applied last, kept in memory so a
 * node without the log (process.roles=broker) follows it by offset, as
 * Kafka's brokers fetch __cluster_metadata: it is answered with the
 * entries after its offset, and with the whole state only when it is
 * further behind than they reach.
 */
#ifndef RN_CTL_JOURNAL_H
#define RN_CTL_JOURNAL_H

#include <stddef.h>
#include <stdint.h>

struct ctl_jentry {
	uint64_t index;          /* raft log index */
	size_t len;
	uint8_t *data;           /* the entry as applied (a record batch) */
};

struct ctl_journal {
	struct ctl_jentry *v;    /* a ring of cap entries, oldest at head */
	size_t head, n, cap;
	size_t bytes;            /* of the entries' data */
	/* every applied entry after this index is kept (raft log entries
	 * that are not records, barriers and configurations, leave gaps) */
	uint64_t floor;
};

void ctl_journal_init(struct ctl_journal *j);
void ctl_journal_free(struct ctl_journal *j);
/* Forget everything: what follows is applied on top of index. */
void ctl_journal_reset(struct ctl_journal *j, uint64_t index);
/* Keep an applied entry, dropping the oldest past the bounds. */
void ctl_journal_add(struct ctl_journal *j, uint64_t index,
    const void *data, size_t len);
/*
 * The entries after have, from the oldest, at most max_bytes of them but
 * at least one: *first is the position for ctl_journal_at, *count how
 * many (0 when none is newer). -ENOENT when the journal no longer reaches
 * back to have.
 */
int ctl_journal_since(const struct ctl_journal *j, uint64_t have,
    size_t max_bytes, size_t *first, size_t *count);
const struct ctl_jentry *ctl_journal_at(const struct ctl_journal *j,
    size_t pos);

#endif /* RN_CTL_JOURNAL_H */
