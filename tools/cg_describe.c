/*
 * runnel-consumer-groups --describe: a group's offsets and lag (the
 * default), its members (--members) or its state (--state), in the
 * columns of Kafka's tool.
 */
#include "autoconf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/cg.h"

#define CG_MIN_WIDTH 15

struct table {
	struct cg_row *rows;
	int n, cap;
};

static int
max_width(int w, const char *s)
{
	int n = s != NULL ? (int)strlen(s) : 1;

	return n > w ? n : w;
}

static struct cg_row *
add_row(struct table *t, const char *topic, int32_t partition)
{
	struct cg_row *r;

	if (t->n == t->cap) {
		int cap = t->cap ? t->cap * 2 : 64;

		if ((r = realloc(t->rows, (size_t)cap * sizeof(*r))) == NULL)
			return NULL;
		t->rows = r;
		t->cap = cap;
	}
	r = &t->rows[t->n];
	memset(r, 0, sizeof(*r));
	if (topic != NULL && (r->topic = strdup(topic)) == NULL)
		return NULL;
	r->partition = partition;
	r->committed = r->log_start = r->log_end = -1;
	t->n++;
	return r;
}

static void
table_free(struct table *t)
{
	int i;

	for (i = 0; i < t->n; i++)
		free(t->rows[i].topic);
	free(t->rows);
}

static void
set_member(struct cg_row *r, const rd_kafka_MemberDescription_t *md)
{
	r->member = rd_kafka_MemberDescription_consumer_id(md);
	r->host = rd_kafka_MemberDescription_host(md);
	r->client = rd_kafka_MemberDescription_client_id(md);
}

/* Rows for what the members hold, then for committed-only partitions. */
static int
collect_rows(const rd_kafka_ConsumerGroupDescription_t *d,
    const rd_kafka_topic_partition_list_t *committed, struct table *t)
{
	size_t m, nm = rd_kafka_ConsumerGroupDescription_member_count(d);
	const rd_kafka_topic_partition_list_t *a;
	rd_kafka_topic_partition_t *c;
	struct cg_row *r;
	int i;

	for (m = 0; m < nm; m++) {
		const rd_kafka_MemberDescription_t *md =
		    rd_kafka_ConsumerGroupDescription_member(d, m);

		a = rd_kafka_MemberAssignment_partitions(
		    rd_kafka_MemberDescription_assignment(md));
		if (a == NULL || a->cnt == 0) {
			/* a member that holds nothing still gets its line */
			if ((r = add_row(t, NULL, -1)) == NULL)
				return -1;
			set_member(r, md);
			continue;
		}
		for (i = 0; i < a->cnt; i++) {
			if ((r = add_row(t, a->elems[i].topic,
			    a->elems[i].partition)) == NULL)
				return -1;
			set_member(r, md);
			if ((c = rd_kafka_topic_partition_list_find(committed,
			    r->topic, r->partition)) != NULL)
				r->committed = c->offset;
		}
	}
	for (i = 0; i < committed->cnt; i++) {
		c = &committed->elems[i];
		if (c->offset < 0)
			continue;
		for (m = 0; m < (size_t)t->n; m++)
			if (t->rows[m].topic != NULL &&
			    strcmp(t->rows[m].topic, c->topic) == 0 &&
			    t->rows[m].partition == c->partition)
				break;
		if (m < (size_t)t->n)
			continue;
		if ((r = add_row(t, c->topic, c->partition)) == NULL)
			return -1;
		r->committed = c->offset;
	}
	return 0;
}

static int
fill_log_end(rd_kafka_t *rk, const struct cg_opts *o, struct table *t)
{
	rd_kafka_topic_partition_list_t *l;
	rd_kafka_topic_partition_t *p;
	int i, rc;

	l = rd_kafka_topic_partition_list_new(t->n > 0 ? t->n : 1);
	for (i = 0; i < t->n; i++)
		if (t->rows[i].topic != NULL)
			rd_kafka_topic_partition_list_add(l, t->rows[i].topic,
			    t->rows[i].partition);
	rc = cg_offsets_at(rk, o, l, RD_KAFKA_OFFSET_END);
	for (i = 0; rc == 0 && i < t->n; i++)
		if (t->rows[i].topic != NULL && (p =
		    rd_kafka_topic_partition_list_find(l, t->rows[i].topic,
		    t->rows[i].partition)) != NULL)
			t->rows[i].log_end = p->offset;
	rd_kafka_topic_partition_list_destroy(l);
	return rc;
}

static const char *
num(char *buf, size_t len, int64_t v)
{
	if (v < 0)
		return "-";
	snprintf(buf, len, "%lld", (long long)v);
	return buf;
}

static void
print_rows(const char *group, const struct table *t)
{
	int gw = max_width(CG_MIN_WIDTH, group), tw = CG_MIN_WIDTH;
	int mw = CG_MIN_WIDTH, hw = CG_MIN_WIDTH, i;
	char b1[24], b2[24], b3[24], b4[12];

	for (i = 0; i < t->n; i++) {
		tw = max_width(tw, t->rows[i].topic);
		mw = max_width(mw, t->rows[i].member);
		hw = max_width(hw, t->rows[i].host);
	}
	printf("\n%-*s %-*s %-10s %-15s %-15s %-15s %-*s %-*s %s\n", gw,
	    "GROUP", tw, "TOPIC", "PARTITION", "CURRENT-OFFSET",
	    "LOG-END-OFFSET", "LAG", mw, "CONSUMER-ID", hw, "HOST",
	    "CLIENT-ID");
	for (i = 0; i < t->n; i++) {
		const struct cg_row *r = &t->rows[i];
		int64_t lag = r->committed >= 0 && r->log_end >= 0 ?
		    r->log_end - r->committed : -1;

		printf("%-*s %-*s %-10s %-15s %-15s %-15s %-*s %-*s %s\n",
		    gw, group, tw, r->topic ? r->topic : "-",
		    r->topic ? num(b4, sizeof(b4), r->partition) : "-",
		    num(b1, sizeof(b1), r->committed),
		    num(b2, sizeof(b2), r->log_end),
		    num(b3, sizeof(b3), lag < 0 ? -1 : lag),
		    mw, r->member ? r->member : "-",
		    hw, r->host ? r->host : "-", r->client ? r->client : "-");
	}
}

static int
cmp_row(const void *a, const void *b)
{
	const struct cg_row *x = a, *y = b;
	int c;

	if (x->topic == NULL || y->topic == NULL)
		return (x->topic == NULL) - (y->topic == NULL);
	if ((c = strcmp(x->topic, y->topic)) != 0)
		return c;
	return (x->partition > y->partition) - (x->partition < y->partition);
}

static int
describe_offsets(rd_kafka_t *rk, const struct cg_opts *o, const char *group,
    const rd_kafka_ConsumerGroupDescription_t *d)
{
	rd_kafka_topic_partition_list_t *committed;
	struct table t = { 0 };
	int rc = TOOL_EXIT_FAIL;

	if ((committed = cg_committed(rk, o, group)) == NULL)
		return TOOL_EXIT_FAIL;
	if (collect_rows(d, committed, &t) == 0 &&
	    fill_log_end(rk, o, &t) == 0) {
		qsort(t.rows, (size_t)t.n, sizeof(*t.rows), cmp_row);
		print_rows(group, &t);
		rc = TOOL_EXIT_OK;
	}
	table_free(&t);
	rd_kafka_topic_partition_list_destroy(committed);
	return rc;
}

/* "topic(0,1), other(3)" of a member's assignment, "-" when empty. */
static void
print_assignment(const rd_kafka_topic_partition_list_t *a)
{
	rd_kafka_topic_partition_list_t *l;
	int i;

	if (a == NULL || a->cnt == 0) {
		printf("-");
		return;
	}
	l = rd_kafka_topic_partition_list_copy(a);
	cg_sort(l);
	for (i = 0; i < l->cnt; i++) {
		bool first = i == 0 ||
		    strcmp(l->elems[i - 1].topic, l->elems[i].topic) != 0;
		bool last = i == l->cnt - 1 ||
		    strcmp(l->elems[i + 1].topic, l->elems[i].topic) != 0;

		if (first)
			printf("%s%s(", i ? ", " : "", l->elems[i].topic);
		printf("%d%s", (int)l->elems[i].partition, last ? ")" : ",");
	}
	rd_kafka_topic_partition_list_destroy(l);
}

static int
describe_members(const struct cg_opts *o, const char *group,
    const rd_kafka_ConsumerGroupDescription_t *d)
{
	size_t m, nm = rd_kafka_ConsumerGroupDescription_member_count(d);
	int gw = max_width(CG_MIN_WIDTH, group), mw = CG_MIN_WIDTH;
	int hw = CG_MIN_WIDTH, cw = CG_MIN_WIDTH;

	for (m = 0; m < nm; m++) {
		const rd_kafka_MemberDescription_t *md =
		    rd_kafka_ConsumerGroupDescription_member(d, m);

		mw = max_width(mw, rd_kafka_MemberDescription_consumer_id(md));
		hw = max_width(hw, rd_kafka_MemberDescription_host(md));
		cw = max_width(cw, rd_kafka_MemberDescription_client_id(md));
	}
	printf("\n%-*s %-*s %-*s %-*s %-12s%s\n", gw, "GROUP", mw,
	    "CONSUMER-ID", hw, "HOST", cw, "CLIENT-ID", "#PARTITIONS",
	    o->verbose ? " ASSIGNMENT" : "");
	for (m = 0; m < nm; m++) {
		const rd_kafka_MemberDescription_t *md =
		    rd_kafka_ConsumerGroupDescription_member(d, m);
		const rd_kafka_topic_partition_list_t *a =
		    rd_kafka_MemberAssignment_partitions(
		    rd_kafka_MemberDescription_assignment(md));

		printf("%-*s %-*s %-*s %-*s %-12d", gw, group, mw,
		    rd_kafka_MemberDescription_consumer_id(md), hw,
		    rd_kafka_MemberDescription_host(md), cw,
		    rd_kafka_MemberDescription_client_id(md),
		    a != NULL ? a->cnt : 0);
		if (o->verbose) {
			printf(" ");
			print_assignment(a);
		}
		printf("\n");
	}
	return TOOL_EXIT_OK;
}

static int
describe_state(const char *group, const rd_kafka_ConsumerGroupDescription_t *d)
{
	const rd_kafka_Node_t *c = rd_kafka_ConsumerGroupDescription_coordinator(d);
	const char *assignor =
	    rd_kafka_ConsumerGroupDescription_partition_assignor(d);
	char coord[300];
	int gw = max_width(CG_MIN_WIDTH, group), cw;

	snprintf(coord, sizeof(coord), "%s:%d (%d)", rd_kafka_Node_host(c),
	    (int)rd_kafka_Node_port(c), (int)rd_kafka_Node_id(c));
	cw = max_width(25, coord);
	printf("\n%-*s %-*s %-19s %-20s %s\n", gw, "GROUP", cw,
	    "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS");
	printf("%-*s %-*s %-19s %-20s %d\n", gw, group, cw, coord,
	    assignor != NULL && *assignor ? assignor : "", cg_state_name(
	    rd_kafka_ConsumerGroupDescription_state(d)),
	    (int)rd_kafka_ConsumerGroupDescription_member_count(d));
	return TOOL_EXIT_OK;
}

/* Kafka's notes before the table; false when there is nothing to show. */
static bool
say_state(const struct cg_opts *o, const char *group,
    rd_kafka_consumer_group_state_t s)
{
	if (s == RD_KAFKA_CONSUMER_GROUP_STATE_DEAD) {
		tool_errx("Consumer group '%s' does not exist.", group);
		return false;
	}
	if (o->view == CG_VIEW_STATE)
		return true;
	if (s == RD_KAFKA_CONSUMER_GROUP_STATE_EMPTY)
		printf("\nConsumer group '%s' has no active members.\n", group);
	else if (s == RD_KAFKA_CONSUMER_GROUP_STATE_PREPARING_REBALANCE ||
	    s == RD_KAFKA_CONSUMER_GROUP_STATE_COMPLETING_REBALANCE)
		printf("\nConsumer group '%s' is rebalancing.\n", group);
	return true;
}

static int
describe_group(rd_kafka_t *rk, const struct cg_opts *o, const char *group)
{
	const rd_kafka_ConsumerGroupDescription_t *d;
	rd_kafka_event_t *ev;
	int rc = TOOL_EXIT_FAIL;

	if ((ev = cg_describe_one(rk, o, group, &d)) == NULL)
		return TOOL_EXIT_FAIL;
	if (say_state(o, group, rd_kafka_ConsumerGroupDescription_state(d))) {
		if (o->view == CG_VIEW_MEMBERS)
			rc = describe_members(o, group, d);
		else if (o->view == CG_VIEW_STATE)
			rc = describe_state(group, d);
		else
			rc = describe_offsets(rk, o, group, d);
	}
	rd_kafka_event_destroy(ev);
	return rc;
}

int
cg_describe(rd_kafka_t *rk, const struct cg_opts *o)
{
	struct cg_listing l = { 0 };
	int i, rc = TOOL_EXIT_OK;

	if (o->all_groups) {
		if (cg_list_groups(rk, o, &l) != 0)
			return TOOL_EXIT_FAIL;
		for (i = 0; i < l.n; i++)
			if (describe_group(rk, o, l.ids[i]) != TOOL_EXIT_OK)
				rc = TOOL_EXIT_FAIL;
		cg_listing_free(&l);
		return rc;
	}
	for (i = 0; i < o->n_groups; i++)
		if (describe_group(rk, o, o->groups[i]) != TOOL_EXIT_OK)
			rc = TOOL_EXIT_FAIL;
	return rc;
}
