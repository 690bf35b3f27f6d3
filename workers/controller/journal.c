/*
 * Recently applied metadata log entries (journal.h): a ring bounded in
 * entries and bytes, oldest dropped first.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "workers/controller/journal.h"

#define JOURNAL_MAX_BYTES (32u << 20)
#define JOURNAL_MAX_ENTRIES 65536

void
ctl_journal_init(struct ctl_journal *j)
{
	memset(j, 0, sizeof(*j));
}

static void
drop_oldest(struct ctl_journal *j)
{
	struct ctl_jentry *e = &j->v[j->head];

	j->floor = e->index;
	j->bytes -= e->len;
	free(e->data);
	e->data = NULL;
	j->head = (j->head + 1) % j->cap;
	j->n--;
}

void
ctl_journal_reset(struct ctl_journal *j, uint64_t index)
{
	while (j->n > 0)
		drop_oldest(j);
	j->head = 0;
	j->floor = index;
}

void
ctl_journal_free(struct ctl_journal *j)
{
	ctl_journal_reset(j, 0);
	free(j->v);
	ctl_journal_init(j);
}

void
ctl_journal_add(struct ctl_journal *j, uint64_t index, const void *data,
    size_t len)
{
	struct ctl_jentry *e;
	uint8_t *copy;

	if (j->n > 0 && index <= j->v[(j->head + j->n - 1) % j->cap].index) {
		/* not after the last: the log was replaced under us */
		ctl_journal_reset(j, index);
		return;
	}
	if (j->cap == 0) {
		if ((j->v = calloc(JOURNAL_MAX_ENTRIES, sizeof(*j->v))) == NULL)
			goto lost;
		j->cap = JOURNAL_MAX_ENTRIES;
	}
	if (len > JOURNAL_MAX_BYTES || (copy = malloc(len ? len : 1)) == NULL)
		goto lost;
	memcpy(copy, data, len);
	while (j->n > 0 && (j->n == j->cap ||
	    j->bytes + len > JOURNAL_MAX_BYTES))
		drop_oldest(j);
	e = &j->v[(j->head + j->n) % j->cap];
	e->index = index;
	e->len = len;
	e->data = copy;
	j->bytes += len;
	j->n++;
	return;
lost:
	/* a follower behind this entry gets the whole state */
	ctl_journal_reset(j, index);
}

int
ctl_journal_since(const struct ctl_journal *j, uint64_t have,
    size_t max_bytes, size_t *first, size_t *count)
{
	size_t lo = 0, hi = j->n, k, bytes = 0;

	if (have < j->floor)
		return -ENOENT;
	/* the first entry after have: entries are in index order */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (ctl_journal_at(j, mid)->index <= have)
			lo = mid + 1;
		else
			hi = mid;
	}
	*first = lo;
	for (k = lo; k < j->n; k++) {
		bytes += ctl_journal_at(j, k)->len;
		if (k > lo && bytes > max_bytes)
			break;
	}
	*count = k - lo;
	return 0;
}

const struct ctl_jentry *
ctl_journal_at(const struct ctl_journal *j, size_t pos)
{
	return &j->v[(j->head + pos) % j->cap];
}
