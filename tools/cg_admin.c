/*
 * runnel-consumer-groups: the admin requests it makes (ListGroups,
 * DescribeGroups, OffsetFetch through librdkafka's admin API) and the
 * partition offsets it reads with ListOffsets.
 */
#include "autoconf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cg.h"

const char *
cg_state_name(rd_kafka_consumer_group_state_t s)
{
	switch (s) {
	case RD_KAFKA_CONSUMER_GROUP_STATE_PREPARING_REBALANCE:
		return "PreparingRebalance";
	case RD_KAFKA_CONSUMER_GROUP_STATE_COMPLETING_REBALANCE:
		return "CompletingRebalance";
	case RD_KAFKA_CONSUMER_GROUP_STATE_STABLE: return "Stable";
	case RD_KAFKA_CONSUMER_GROUP_STATE_DEAD: return "Dead";
	case RD_KAFKA_CONSUMER_GROUP_STATE_EMPTY: return "Empty";
	default: return "Unknown";
	}
}

static int
cmp_tp(const void *a, const void *b)
{
	const rd_kafka_topic_partition_t *x = a, *y = b;
	int c = strcmp(x->topic, y->topic);

	if (c != 0)
		return c;
	return (x->partition > y->partition) - (x->partition < y->partition);
}

void
cg_sort(rd_kafka_topic_partition_list_t *l)
{
	qsort(l->elems, (size_t)l->cnt, sizeof(*l->elems), cmp_tp);
}

/* The result event of an admin call already sent on q, or NULL. */
static rd_kafka_event_t *
wait_result(rd_kafka_t *rk, rd_kafka_queue_t *q, rd_kafka_event_type_t want,
    const struct cg_opts *o, const char *what)
{
	rd_kafka_event_t *ev;

	if ((ev = tool_admin_wait(rk, q, want, o->timeout_ms + 5000,
	    what)) == NULL)
		return NULL;
	if (rd_kafka_event_error(ev)) {
		tool_report_err(what, rd_kafka_event_error(ev),
		    rd_kafka_event_error_string(ev));
		rd_kafka_event_destroy(ev);
		return NULL;
	}
	return ev;
}

static int
keep_listing(struct cg_listing *out, const rd_kafka_ConsumerGroupListing_t **v,
    size_t n)
{
	size_t i;

	out->ids = calloc(n + 1, sizeof(*out->ids));
	out->states = calloc(n + 1, sizeof(*out->states));
	if (out->ids == NULL || out->states == NULL)
		return -1;
	for (i = 0; i < n; i++) {
		if ((out->ids[i] = strdup(
		    rd_kafka_ConsumerGroupListing_group_id(v[i]))) == NULL)
			return -1;
		out->states[i] = rd_kafka_ConsumerGroupListing_state(v[i]);
		out->n++;
	}
	return 0;
}

int
cg_list_groups(rd_kafka_t *rk, const struct cg_opts *o,
    struct cg_listing *out)
{
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_AdminOptions_t *ao = tool_admin_options(rk,
	    RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPS, o->timeout_ms);
	const rd_kafka_ListConsumerGroups_result_t *res;
	const rd_kafka_ConsumerGroupListing_t **v;
	const rd_kafka_error_t **errs;
	rd_kafka_event_t *ev;
	size_t n, n_err;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	rd_kafka_ListConsumerGroups(rk, ao, q);
	if ((ev = wait_result(rk, q, RD_KAFKA_EVENT_LISTCONSUMERGROUPS_RESULT,
	    o, "cannot list groups")) == NULL)
		goto done;
	res = rd_kafka_event_ListConsumerGroups_result(ev);
	errs = rd_kafka_ListConsumerGroups_result_errors(res, &n_err);
	if (n_err > 0) {
		/* a broker that did not answer: the listing is partial */
		tool_report_err("cannot list every group",
		    rd_kafka_error_code(errs[0]),
		    rd_kafka_error_string(errs[0]));
	} else {
		v = rd_kafka_ListConsumerGroups_result_valid(res, &n);
		rc = keep_listing(out, v, n);
	}
	rd_kafka_event_destroy(ev);
done:
	rd_kafka_AdminOptions_destroy(ao);
	rd_kafka_queue_destroy(q);
	return rc;
}

void
cg_listing_free(struct cg_listing *l)
{
	int i;

	for (i = 0; i < l->n; i++)
		free(l->ids[i]);
	free(l->ids);
	free(l->states);
	memset(l, 0, sizeof(*l));
}

rd_kafka_event_t *
cg_describe_one(rd_kafka_t *rk, const struct cg_opts *o, const char *group,
    const rd_kafka_ConsumerGroupDescription_t **desc)
{
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_AdminOptions_t *ao = tool_admin_options(rk,
	    RD_KAFKA_ADMIN_OP_DESCRIBECONSUMERGROUPS, o->timeout_ms);
	const rd_kafka_ConsumerGroupDescription_t **v;
	const rd_kafka_error_t *err;
	rd_kafka_event_t *ev;
	size_t n;

	rd_kafka_DescribeConsumerGroups(rk, &group, 1, ao, q);
	ev = wait_result(rk, q, RD_KAFKA_EVENT_DESCRIBECONSUMERGROUPS_RESULT,
	    o, "cannot describe the group");
	rd_kafka_AdminOptions_destroy(ao);
	rd_kafka_queue_destroy(q);
	if (ev == NULL)
		return NULL;
	v = rd_kafka_DescribeConsumerGroups_result_groups(
	    rd_kafka_event_DescribeConsumerGroups_result(ev), &n);
	if (n != 1) {
		tool_errx("cannot describe group '%s': no answer for it", group);
		rd_kafka_event_destroy(ev);
		return NULL;
	}
	if ((err = rd_kafka_ConsumerGroupDescription_error(v[0])) != NULL) {
		tool_report_err("cannot describe the group",
		    rd_kafka_error_code(err), rd_kafka_error_string(err));
		rd_kafka_event_destroy(ev);
		return NULL;
	}
	*desc = v[0];
	return ev;
}

rd_kafka_topic_partition_list_t *
cg_committed(rd_kafka_t *rk, const struct cg_opts *o, const char *group)
{
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_AdminOptions_t *ao = tool_admin_options(rk,
	    RD_KAFKA_ADMIN_OP_LISTCONSUMERGROUPOFFSETS, o->timeout_ms);
	rd_kafka_ListConsumerGroupOffsets_t *req =
	    rd_kafka_ListConsumerGroupOffsets_new(group, NULL);
	rd_kafka_topic_partition_list_t *copy = NULL;
	const rd_kafka_group_result_t **gr;
	const rd_kafka_error_t *err;
	rd_kafka_event_t *ev;
	size_t n;

	rd_kafka_ListConsumerGroupOffsets(rk, &req, 1, ao, q);
	rd_kafka_ListConsumerGroupOffsets_destroy(req);
	ev = wait_result(rk, q, RD_KAFKA_EVENT_LISTCONSUMERGROUPOFFSETS_RESULT,
	    o, "cannot fetch the group's offsets");
	if (ev != NULL) {
		gr = rd_kafka_ListConsumerGroupOffsets_result_groups(
		    rd_kafka_event_ListConsumerGroupOffsets_result(ev), &n);
		if (n == 1 && (err = rd_kafka_group_result_error(gr[0])) !=
		    NULL)
			tool_report_err("cannot fetch the group's offsets",
			    rd_kafka_error_code(err),
			    rd_kafka_error_string(err));
		else if (n == 1)
			copy = rd_kafka_topic_partition_list_copy(
			    rd_kafka_group_result_partitions(gr[0]));
		rd_kafka_event_destroy(ev);
	}
	rd_kafka_AdminOptions_destroy(ao);
	rd_kafka_queue_destroy(q);
	return copy;
}

int
cg_offsets_at(rd_kafka_t *rk, const struct cg_opts *o,
    rd_kafka_topic_partition_list_t *parts, int64_t ts)
{
	rd_kafka_resp_err_t err;
	int i;

	if (parts->cnt == 0)
		return 0;
	for (i = 0; i < parts->cnt; i++)
		parts->elems[i].offset = ts;
	err = rd_kafka_offsets_for_times(rk, parts, o->timeout_ms);
	if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
		tool_report_err("cannot read partition offsets", err, NULL);
		return -1;
	}
	for (i = 0; i < parts->cnt; i++) {
		rd_kafka_topic_partition_t *p = &parts->elems[i];

		if (p->err != RD_KAFKA_RESP_ERR_NO_ERROR) {
			char what[300];

			snprintf(what, sizeof(what), "cannot read the offsets "
			    "of %s-%d", p->topic, (int)p->partition);
			tool_report_err(what, p->err, NULL);
			return -1;
		}
	}
	return 0;
}

/* Adds one --topic spec: "t" (every partition) or "t:0,2". */
static int
add_topic_spec(rd_kafka_topic_partition_list_t *l, const char *spec,
    const struct tool_md *md)
{
	const char *colon = strchr(spec, ':');
	const struct tool_topic *t;
	char name[256], *p, *end;
	int i;

	snprintf(name, sizeof(name), "%.*s", colon ? (int)(colon - spec) :
	    (int)strlen(spec), spec);
	if ((t = tool_md_topic(md, name)) == NULL || t->err != 0) {
		tool_errx("topic '%s' does not exist", name);
		return -1;
	}
	if (colon == NULL) {
		for (i = 0; i < t->n_parts; i++)
			rd_kafka_topic_partition_list_add(l, name,
			    t->parts[i].id);
		return 0;
	}
	for (p = (char *)colon + 1; *p != '\0'; p = end + (*end == ',')) {
		long v = strtol(p, &end, 10);

		if (end == p || (*end != ',' && *end != '\0') || v < 0 ||
		    v >= t->n_parts) {
			tool_errx("--topic %s: no partition '%s' in topic "
			    "'%s' (%d partitions)", spec, p, name, t->n_parts);
			return -1;
		}
		rd_kafka_topic_partition_list_add(l, name, (int32_t)v);
	}
	return 0;
}

/* The partitions the --topic options name. */
rd_kafka_topic_partition_list_t *
cg_topic_partitions(rd_kafka_t *rk, const struct cg_opts *o)
{
	rd_kafka_topic_partition_list_t *l;
	struct tool_md md = { 0 };
	int i;

	if (tool_md_fetch(rk, o->bootstrap, &o->client, o->timeout_ms,
	    &md) != 0)
		return NULL;
	l = rd_kafka_topic_partition_list_new(16);
	for (i = 0; i < o->n_topics; i++)
		if (add_topic_spec(l, o->topics[i], &md) != 0) {
			rd_kafka_topic_partition_list_destroy(l);
			l = NULL;
			break;
		}
	tool_md_free(&md);
	return l;
}
