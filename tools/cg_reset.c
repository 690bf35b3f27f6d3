/*
 * runnel-consumer-groups --reset-offsets: the new committed offset of
 * each chosen partition, shown (--dry-run, the default) or committed
 * (--execute). As with Kafka's tool, only a group with no active
 * members can be reset, and an offset outside the log is moved to its
 * nearest end.
 */
#include "autoconf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/util.h"
#include "tools/cg.h"

/* The partitions to reset: from --topic, or every committed one. */
static rd_kafka_topic_partition_list_t *
chosen_partitions(rd_kafka_t *rk, const struct cg_opts *o,
    const rd_kafka_topic_partition_list_t *committed)
{
	if (o->all_topics)
		return rd_kafka_topic_partition_list_copy(committed);
	return cg_topic_partitions(rk, o);
}

static int64_t
committed_of(const rd_kafka_topic_partition_list_t *c,
    const rd_kafka_topic_partition_t *p)
{
	rd_kafka_topic_partition_t *e =
	    rd_kafka_topic_partition_list_find(c, p->topic, p->partition);

	return e != NULL ? e->offset : -1;
}

/* The wanted offset of one partition before clamping; -1 (said why). */
static int
wanted(const struct cg_opts *o, const rd_kafka_topic_partition_t *p,
    int64_t start, int64_t end, int64_t by_time, int64_t current,
    int64_t *out)
{
	switch (o->reset) {
	case CG_TO_EARLIEST: *out = start; return 0;
	case CG_TO_LATEST: *out = end; return 0;
	case CG_TO_OFFSET: *out = o->reset_value; return 0;
	case CG_TO_DATETIME:
	case CG_BY_DURATION: *out = by_time >= 0 ? by_time : end; return 0;
	case CG_SHIFT_BY:
	case CG_TO_CURRENT:
		if (current < 0) {
			tool_errx("partition %s-%d has no committed offset to "
			    "%s", p->topic, (int)p->partition,
			    o->reset == CG_SHIFT_BY ? "shift" : "keep");
			return -1;
		}
		*out = o->reset == CG_SHIFT_BY ? current + o->reset_value :
		    current;
		return 0;
	default: return -1;
	}
}

/*
 * Fills targets with the new offsets: reads the log start and end (and
 * the offsets at a time) of every partition, then clamps into the log.
 */
static int
compute(rd_kafka_t *rk, const struct cg_opts *o,
    const rd_kafka_topic_partition_list_t *committed,
    rd_kafka_topic_partition_list_t *targets)
{
	rd_kafka_topic_partition_list_t *start, *end, *at = NULL;
	int i, rc = -1;

	start = rd_kafka_topic_partition_list_copy(targets);
	end = rd_kafka_topic_partition_list_copy(targets);
	if (o->reset == CG_TO_DATETIME || o->reset == CG_BY_DURATION)
		at = rd_kafka_topic_partition_list_copy(targets);
	if (cg_offsets_at(rk, o, start, RD_KAFKA_OFFSET_BEGINNING) != 0 ||
	    cg_offsets_at(rk, o, end, RD_KAFKA_OFFSET_END) != 0 ||
	    (at != NULL && cg_offsets_at(rk, o, at, o->reset_value) != 0))
		goto done;
	for (i = 0; i < targets->cnt; i++) {
		rd_kafka_topic_partition_t *p = &targets->elems[i];
		int64_t lo = start->elems[i].offset, hi = end->elems[i].offset;
		int64_t v;

		if (wanted(o, p, lo, hi, at ? at->elems[i].offset : -1,
		    committed_of(committed, p), &v) != 0)
			goto done;
		p->offset = v < lo ? lo : v > hi ? hi : v;
	}
	rc = 0;
done:
	rd_kafka_topic_partition_list_destroy(start);
	rd_kafka_topic_partition_list_destroy(end);
	if (at != NULL)
		rd_kafka_topic_partition_list_destroy(at);
	return rc;
}

static void
print_targets(const char *group, const rd_kafka_topic_partition_list_t *l)
{
	int gw = (int)strlen(group) > 15 ? (int)strlen(group) : 15;
	int tw = 15, i;

	for (i = 0; i < l->cnt; i++)
		if ((int)strlen(l->elems[i].topic) > tw)
			tw = (int)strlen(l->elems[i].topic);
	printf("\n%-*s %-*s %-10s %s\n", gw, "GROUP", tw, "TOPIC",
	    "PARTITION", "NEW-OFFSET");
	for (i = 0; i < l->cnt; i++)
		printf("%-*s %-*s %-10d %lld\n", gw, group, tw,
		    l->elems[i].topic, (int)l->elems[i].partition,
		    (long long)l->elems[i].offset);
}

/* Commits the new offsets (OffsetCommit as a standalone member). */
static int
commit(rd_kafka_t *rk, const struct cg_opts *o, const char *group,
    const rd_kafka_topic_partition_list_t *l)
{
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_AdminOptions_t *ao = tool_admin_options(rk,
	    RD_KAFKA_ADMIN_OP_ALTERCONSUMERGROUPOFFSETS, o->timeout_ms);
	rd_kafka_AlterConsumerGroupOffsets_t *req =
	    rd_kafka_AlterConsumerGroupOffsets_new(group, l);
	const rd_kafka_group_result_t **gr;
	const rd_kafka_topic_partition_list_t *res;
	rd_kafka_event_t *ev;
	size_t n;
	int i, rc = -1;

	rd_kafka_AlterConsumerGroupOffsets(rk, &req, 1, ao, q);
	rd_kafka_AlterConsumerGroupOffsets_destroy(req);
	ev = tool_admin_wait(rk, q,
	    RD_KAFKA_EVENT_ALTERCONSUMERGROUPOFFSETS_RESULT,
	    o->timeout_ms + 5000, "cannot commit the new offsets");
	if (ev != NULL && rd_kafka_event_error(ev)) {
		tool_report_err("cannot commit the new offsets",
		    rd_kafka_event_error(ev), rd_kafka_event_error_string(ev));
	} else if (ev != NULL) {
		gr = rd_kafka_AlterConsumerGroupOffsets_result_groups(
		    rd_kafka_event_AlterConsumerGroupOffsets_result(ev), &n);
		res = n == 1 ? rd_kafka_group_result_partitions(gr[0]) : NULL;
		rc = n == 1 && rd_kafka_group_result_error(gr[0]) == NULL ?
		    0 : -1;
		for (i = 0; res != NULL && i < res->cnt; i++)
			if (res->elems[i].err != RD_KAFKA_RESP_ERR_NO_ERROR) {
				tool_report_err("cannot commit an offset",
				    res->elems[i].err, res->elems[i].topic);
				rc = -1;
			}
		if (rc != 0 && n == 1 && rd_kafka_group_result_error(gr[0]))
			tool_report_err("cannot commit the new offsets",
			    rd_kafka_error_code(rd_kafka_group_result_error(
			    gr[0])), rd_kafka_error_string(
			    rd_kafka_group_result_error(gr[0])));
	}
	if (ev != NULL)
		rd_kafka_event_destroy(ev);
	rd_kafka_AdminOptions_destroy(ao);
	rd_kafka_queue_destroy(q);
	return rc;
}

/* Empty and unknown (Dead) groups may be reset; active ones may not. */
static int
check_inactive(rd_kafka_t *rk, const struct cg_opts *o, const char *group)
{
	const rd_kafka_ConsumerGroupDescription_t *d;
	rd_kafka_consumer_group_state_t s;
	rd_kafka_event_t *ev;

	if ((ev = cg_describe_one(rk, o, group, &d)) == NULL)
		return -1;
	s = rd_kafka_ConsumerGroupDescription_state(d);
	rd_kafka_event_destroy(ev);
	if (s == RD_KAFKA_CONSUMER_GROUP_STATE_EMPTY ||
	    s == RD_KAFKA_CONSUMER_GROUP_STATE_DEAD)
		return 0;
	tool_errx("Assignments can only be reset if the group '%s' is "
	    "inactive, but the current state is %s.", group, cg_state_name(s));
	return -1;
}

static int
reset_group(rd_kafka_t *rk, const struct cg_opts *o, const char *group)
{
	rd_kafka_topic_partition_list_t *committed, *targets = NULL;
	int rc = TOOL_EXIT_FAIL;

	if (check_inactive(rk, o, group) != 0 ||
	    (committed = cg_committed(rk, o, group)) == NULL)
		return TOOL_EXIT_FAIL;
	if ((targets = chosen_partitions(rk, o, committed)) == NULL ||
	    compute(rk, o, committed, targets) != 0)
		goto done;
	cg_sort(targets);
	if (o->execute && commit(rk, o, group, targets) != 0)
		goto done;
	print_targets(group, targets);
	rc = TOOL_EXIT_OK;
done:
	if (targets != NULL)
		rd_kafka_topic_partition_list_destroy(targets);
	rd_kafka_topic_partition_list_destroy(committed);
	return rc;
}

int
cg_reset_offsets(rd_kafka_t *rk, const struct cg_opts *o)
{
	int i, rc = TOOL_EXIT_OK;

	if (!o->execute && !o->dry_run)
		tool_warnx("no offsets are changed without --execute; this "
		    "is a dry run (add --dry-run to say so)");
	for (i = 0; i < o->n_groups; i++)
		if (reset_group(rk, o, o->groups[i]) != TOOL_EXIT_OK)
			rc = TOOL_EXIT_FAIL;
	return rc;
}
