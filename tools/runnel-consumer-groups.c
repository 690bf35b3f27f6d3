/*
 * runnel-consumer-groups: list, describe, reset and delete consumer
 * groups over the Kafka protocol, with kafka-consumer-groups' flag
 * names and output shape.
 *
 *   runnel-consumer-groups --bootstrap-server H:P --list [--state [S,..]]
 *   runnel-consumer-groups --bootstrap-server H:P --describe
 *       (--group G... | --all-groups) [--members [--verbose] | --state]
 *   runnel-consumer-groups --bootstrap-server H:P --reset-offsets
 *       --group G (--topic T[:P,..]... | --all-topics) --to-earliest |
 *       --to-latest | --to-offset N | --shift-by N | --to-datetime D |
 *       --by-duration PnDTnHnMnS | --to-current  [--dry-run | --execute]
 *   runnel-consumer-groups --bootstrap-server H:P --delete --group G...
 *   runnel-consumer-groups --bootstrap-server H:P --delete-offsets
 *       --group G --topic T[:P,..]
 */
#include "autoconf.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/util.h"
#include "tools/cg.h"

static void
usage(FILE *f)
{
	fprintf(f,
	    "usage: runnel-consumer-groups --bootstrap-server HOST:PORT ACTION "
	    "[options]\n"
	    "actions:\n"
	    "  --list [--state [STATE,...]]\n"
	    "  --describe (--group G ... | --all-groups) "
	    "[--members [--verbose] | --state | --offsets]\n"
	    "  --reset-offsets --group G (--topic T[:P,...] ... | "
	    "--all-topics) SPEC [--dry-run | --execute]\n"
	    "      SPEC: --to-earliest | --to-latest | --to-current | "
	    "--to-offset N |\n"
	    "            --shift-by N | --to-datetime YYYY-MM-DDTHH:mm:SS.sss"
	    "[Z|+hh:mm] |\n"
	    "            --by-duration PnDTnHnMnS\n"
	    "  --delete (--group G ... | --all-groups)\n"
	    "  --delete-offsets --group G --topic T[:P,...] ...\n"
	    "client options: --command-config FILE, -X key=value, "
	    "--timeout-ms MS\n");
}

/* Is state in the comma-separated filter (any case)? */
static bool
state_wanted(const char *filter, const char *state)
{
	size_t n = strlen(state);
	const char *p = filter;

	while (*p != '\0') {
		const char *e = strchr(p, ',');
		size_t len = e != NULL ? (size_t)(e - p) : strlen(p);

		if (len == n && strncasecmp(p, state, n) == 0)
			return true;
		p += len + (e != NULL);
	}
	return false;
}

static int
list_groups(rd_kafka_t *rk, const struct cg_opts *o)
{
	struct cg_listing l;
	int i, w = 15;

	if (cg_list_groups(rk, o, &l) != 0)
		return TOOL_EXIT_FAIL;
	for (i = 0; i < l.n; i++)
		if ((int)strlen(l.ids[i]) > w)
			w = (int)strlen(l.ids[i]);
	if (o->state_flag)
		printf("%-*s %s\n", w, "GROUP", "STATE");
	for (i = 0; i < l.n; i++) {
		const char *st = cg_state_name(l.states[i]);

		if (!o->state_flag)
			printf("%s\n", l.ids[i]);
		else if (o->state_filter == NULL || *o->state_filter == '\0' ||
		    state_wanted(o->state_filter, st))
			printf("%-*s %s\n", w, l.ids[i], st);
	}
	cg_listing_free(&l);
	return TOOL_EXIT_OK;
}

static int
delete_groups(rd_kafka_t *rk, const struct cg_opts *o)
{
	rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
	rd_kafka_AdminOptions_t *ao = tool_admin_options(rk,
	    RD_KAFKA_ADMIN_OP_DELETEGROUPS, o->timeout_ms);
	rd_kafka_DeleteGroup_t **dg = calloc((size_t)o->n_groups,
	    sizeof(*dg));
	const rd_kafka_group_result_t **gr;
	const rd_kafka_error_t *err;
	rd_kafka_event_t *ev = NULL;
	size_t n, i;
	int rc = TOOL_EXIT_FAIL, failed = 0;

	if (dg == NULL)
		goto done;
	for (i = 0; i < (size_t)o->n_groups; i++)
		dg[i] = rd_kafka_DeleteGroup_new(o->groups[i]);
	rd_kafka_DeleteGroups(rk, dg, (size_t)o->n_groups, ao, q);
	rd_kafka_DeleteGroup_destroy_array(dg, (size_t)o->n_groups);
	if ((ev = tool_admin_wait(rk, q, RD_KAFKA_EVENT_DELETEGROUPS_RESULT,
	    o->timeout_ms + 5000, "cannot delete groups")) == NULL)
		goto done;
	gr = rd_kafka_DeleteGroups_result_groups(
	    rd_kafka_event_DeleteGroups_result(ev), &n);
	for (i = 0; i < n; i++)
		if ((err = rd_kafka_group_result_error(gr[i])) != NULL) {
			if (failed++ == 0)
				printf("Deletion of some consumer groups "
				    "failed:\n");
			printf("* Group '%s' could not be deleted due to: "
			    "%s\n", rd_kafka_group_result_name(gr[i]),
			    tool_err_name(rd_kafka_error_code(err)));
		}
	if (failed == 0) {
		printf("Deletion of requested consumer groups (");
		for (i = 0; i < (size_t)o->n_groups; i++)
			printf("%s'%s'", i ? ", " : "", o->groups[i]);
		printf(") was successful.\n");
	}
	rc = failed ? TOOL_EXIT_FAIL : TOOL_EXIT_OK;
done:
	if (ev != NULL)
		rd_kafka_event_destroy(ev);
	free(dg);
	rd_kafka_AdminOptions_destroy(ao);
	rd_kafka_queue_destroy(q);
	return rc;
}

static void
print_offset_deletions(const rd_kafka_topic_partition_list_t *res)
{
	int i, tw = 15;

	for (i = 0; i < res->cnt; i++)
		if ((int)strlen(res->elems[i].topic) > tw)
			tw = (int)strlen(res->elems[i].topic);
	printf("\n%-*s %-10s %s\n", tw, "TOPIC", "PARTITION", "STATUS");
	for (i = 0; i < res->cnt; i++)
		printf("%-*s %-10d %s%s\n", tw, res->elems[i].topic,
		    (int)res->elems[i].partition,
		    res->elems[i].err ? "Error: " : "Successful",
		    res->elems[i].err ? tool_err_name(res->elems[i].err) : "");
}

static int
delete_offsets(rd_kafka_t *rk, const struct cg_opts *o)
{
	rd_kafka_topic_partition_list_t *parts;
	rd_kafka_queue_t *q;
	rd_kafka_AdminOptions_t *ao;
	rd_kafka_DeleteConsumerGroupOffsets_t *req;
	const rd_kafka_group_result_t **gr;
	const rd_kafka_error_t *err;
	rd_kafka_event_t *ev;
	size_t n;
	int i, rc = TOOL_EXIT_FAIL;

	if ((parts = cg_topic_partitions(rk, o)) == NULL)
		return TOOL_EXIT_FAIL;
	q = rd_kafka_queue_new(rk);
	ao = tool_admin_options(rk, RD_KAFKA_ADMIN_OP_DELETECONSUMERGROUPOFFSETS,
	    o->timeout_ms);
	req = rd_kafka_DeleteConsumerGroupOffsets_new(o->groups[0], parts);
	rd_kafka_DeleteConsumerGroupOffsets(rk, &req, 1, ao, q);
	rd_kafka_DeleteConsumerGroupOffsets_destroy(req);
	if ((ev = tool_admin_wait(rk, q,
	    RD_KAFKA_EVENT_DELETECONSUMERGROUPOFFSETS_RESULT,
	    o->timeout_ms + 5000, "cannot delete offsets")) != NULL) {
		gr = rd_kafka_DeleteConsumerGroupOffsets_result_groups(
		    rd_kafka_event_DeleteConsumerGroupOffsets_result(ev), &n);
		if (rd_kafka_event_error(ev))
			tool_report_err("cannot delete offsets",
			    rd_kafka_event_error(ev),
			    rd_kafka_event_error_string(ev));
		else if (n == 1 && (err = rd_kafka_group_result_error(gr[0]))
		    != NULL)
			tool_report_err("cannot delete offsets",
			    rd_kafka_error_code(err),
			    rd_kafka_error_string(err));
		else if (n == 1) {
			const rd_kafka_topic_partition_list_t *res =
			    rd_kafka_group_result_partitions(gr[0]);

			rc = TOOL_EXIT_OK;
			for (i = 0; i < res->cnt; i++)
				if (res->elems[i].err)
					rc = TOOL_EXIT_FAIL;
			printf("Request %s for deleting offsets of group %s\n",
			    rc == TOOL_EXIT_OK ? "succeeded" :
			    "partly failed", o->groups[0]);
			print_offset_deletions(res);
		}
		rd_kafka_event_destroy(ev);
	}
	rd_kafka_AdminOptions_destroy(ao);
	rd_kafka_queue_destroy(q);
	rd_kafka_topic_partition_list_destroy(parts);
	return rc;
}

/* Grows a NULL-terminated-free argument array by one. */
static int
push(const char ***v, int *n, const char *s)
{
	const char **nv = realloc(*v, (size_t)(*n + 1) * sizeof(**v));

	if (nv == NULL)
		return -1;
	nv[(*n)++] = s;
	*v = nv;
	return 0;
}

static int
set_action(struct cg_opts *o, enum cg_action a)
{
	if (o->action != CG_NONE && o->action != a) {
		tool_errx("give one of --list, --describe, --reset-offsets, "
		    "--delete, --delete-offsets");
		return -1;
	}
	o->action = a;
	return 0;
}

static int
set_reset(struct cg_opts *o, enum cg_reset r, const char *arg)
{
	long v;

	if (o->reset != CG_TO_NONE) {
		tool_errx("give one reset specification");
		return -1;
	}
	o->reset = r;
	switch (r) {
	case CG_TO_OFFSET:
	case CG_SHIFT_BY:
		if (tool_parse_long(arg, r == CG_TO_OFFSET ? 0 : INT64_MIN / 2,
		    INT64_MAX / 2, &v) != 0) {
			tool_errx("bad offset '%s'", arg);
			return -1;
		}
		o->reset_value = v;
		return 0;
	case CG_TO_DATETIME:
		if (cg_parse_datetime(arg, &o->reset_value) != 0) {
			tool_errx("--to-datetime: '%s' is not "
			    "YYYY-MM-DDTHH:mm:SS[.sss][Z|+hh:mm]", arg);
			return -1;
		}
		return 0;
	case CG_BY_DURATION:
		if (cg_parse_duration(arg, &o->reset_value) != 0) {
			tool_errx("--by-duration: '%s' is not PnDTnHnMnS", arg);
			return -1;
		}
		o->reset_value = rn_wallclock_ms() - o->reset_value;
		return 0;
	default:
		return 0;
	}
}

/* What each action needs; 0, or -1 after saying what is wrong. */
static int
check_opts(struct cg_opts *o)
{
	bool groups = o->n_groups > 0 || o->all_groups;

	if (o->bootstrap == NULL || tool_check_bootstrap(o->bootstrap) != 0) {
		if (o->bootstrap == NULL)
			tool_errx("--bootstrap-server is required");
		return -1;
	}
	if (o->action == CG_NONE) {
		tool_errx("give one of --list, --describe, --reset-offsets, "
		    "--delete, --delete-offsets");
		return -1;
	}
	if ((o->action == CG_DESCRIBE || o->action == CG_DELETE) && !groups) {
		tool_errx("--group or --all-groups is required");
		return -1;
	}
	if ((o->action == CG_RESET || o->action == CG_DELETE_OFFSETS) &&
	    (o->n_groups == 0 || o->all_groups)) {
		tool_errx("--group is required (--all-groups is not taken "
		    "here)");
		return -1;
	}
	if (o->action == CG_RESET && (o->reset == CG_TO_NONE ||
	    (o->n_topics == 0) == !o->all_topics || (o->dry_run &&
	    o->execute))) {
		tool_errx("--reset-offsets needs one reset specification, "
		    "--topic or --all-topics, and at most one of --dry-run "
		    "and --execute");
		return -1;
	}
	if (o->action == CG_DELETE_OFFSETS && (o->n_topics == 0 ||
	    o->n_groups != 1)) {
		tool_errx("--delete-offsets needs one --group and --topic");
		return -1;
	}
	return 0;
}

/* Fills groups for --delete --all-groups. */
static int
expand_all_groups(rd_kafka_t *rk, struct cg_opts *o, struct cg_listing *l)
{
	int i;

	if (cg_list_groups(rk, o, l) != 0)
		return -1;
	for (i = 0; i < l->n; i++)
		if (push(&o->groups, &o->n_groups, l->ids[i]) != 0)
			return -1;
	return 0;
}

static int
run(rd_kafka_t *rk, struct cg_opts *o)
{
	struct cg_listing all = { 0 };
	int rc;

	switch (o->action) {
	case CG_LIST: return list_groups(rk, o);
	case CG_DESCRIBE: return cg_describe(rk, o);
	case CG_RESET: return cg_reset_offsets(rk, o);
	case CG_DELETE_OFFSETS: return delete_offsets(rk, o);
	case CG_DELETE:
		if (o->all_groups && expand_all_groups(rk, o, &all) != 0)
			return TOOL_EXIT_FAIL;
		rc = o->n_groups > 0 ? delete_groups(rk, o) : TOOL_EXIT_OK;
		cg_listing_free(&all);
		return rc;
	default: return TOOL_EXIT_USAGE;
	}
}

enum {
	O_BOOTSTRAP = 256, O_LIST, O_DESCRIBE, O_RESET, O_DELETE,
	O_DELETE_OFFSETS, O_GROUP, O_ALL_GROUPS, O_TOPIC, O_ALL_TOPICS,
	O_MEMBERS, O_OFFSETS, O_STATE, O_VERBOSE, O_DRY_RUN, O_EXECUTE,
	O_TO_EARLIEST, O_TO_LATEST, O_TO_CURRENT, O_TO_OFFSET, O_SHIFT_BY,
	O_TO_DATETIME, O_BY_DURATION, O_CMD_CONFIG, O_TIMEOUT,
};

static const struct option lopts[] = {
	{ "bootstrap-server", required_argument, NULL, O_BOOTSTRAP },
	{ "list", no_argument, NULL, O_LIST },
	{ "describe", no_argument, NULL, O_DESCRIBE },
	{ "reset-offsets", no_argument, NULL, O_RESET },
	{ "delete", no_argument, NULL, O_DELETE },
	{ "delete-offsets", no_argument, NULL, O_DELETE_OFFSETS },
	{ "group", required_argument, NULL, O_GROUP },
	{ "all-groups", no_argument, NULL, O_ALL_GROUPS },
	{ "topic", required_argument, NULL, O_TOPIC },
	{ "all-topics", no_argument, NULL, O_ALL_TOPICS },
	{ "members", no_argument, NULL, O_MEMBERS },
	{ "offsets", no_argument, NULL, O_OFFSETS },
	{ "state", optional_argument, NULL, O_STATE },
	{ "verbose", no_argument, NULL, O_VERBOSE },
	{ "dry-run", no_argument, NULL, O_DRY_RUN },
	{ "execute", no_argument, NULL, O_EXECUTE },
	{ "to-earliest", no_argument, NULL, O_TO_EARLIEST },
	{ "to-latest", no_argument, NULL, O_TO_LATEST },
	{ "to-current", no_argument, NULL, O_TO_CURRENT },
	{ "to-offset", required_argument, NULL, O_TO_OFFSET },
	{ "shift-by", required_argument, NULL, O_SHIFT_BY },
	{ "to-datetime", required_argument, NULL, O_TO_DATETIME },
	{ "by-duration", required_argument, NULL, O_BY_DURATION },
	{ "command-config", required_argument, NULL, O_CMD_CONFIG },
	{ "timeout-ms", required_argument, NULL, O_TIMEOUT },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

/* --state takes an optional value, also as the next word ("--state X"). */
static void
take_state(struct cg_opts *o, int argc, char **argv)
{
	o->state_flag = true;
	o->view = CG_VIEW_STATE;
	if (optarg != NULL)
		o->state_filter = optarg;
	else if (optind < argc && argv[optind][0] != '-')
		o->state_filter = argv[optind++];
}

static int
take_option(struct cg_opts *o, int ch, int argc, char **argv)
{
	long v;

	switch (ch) {
	case O_BOOTSTRAP: o->bootstrap = optarg; return 0;
	case O_LIST: return set_action(o, CG_LIST);
	case O_DESCRIBE: return set_action(o, CG_DESCRIBE);
	case O_RESET: return set_action(o, CG_RESET);
	case O_DELETE: return set_action(o, CG_DELETE);
	case O_DELETE_OFFSETS: return set_action(o, CG_DELETE_OFFSETS);
	case O_GROUP: return push(&o->groups, &o->n_groups, optarg);
	case O_ALL_GROUPS: o->all_groups = true; return 0;
	case O_TOPIC: return push(&o->topics, &o->n_topics, optarg);
	case O_ALL_TOPICS: o->all_topics = true; return 0;
	case O_MEMBERS: o->view = CG_VIEW_MEMBERS; return 0;
	case O_OFFSETS: o->view = CG_VIEW_OFFSETS; return 0;
	case O_STATE: take_state(o, argc, argv); return 0;
	case O_VERBOSE: o->verbose = true; return 0;
	case O_DRY_RUN: o->dry_run = true; return 0;
	case O_EXECUTE: o->execute = true; return 0;
	case O_TO_EARLIEST: return set_reset(o, CG_TO_EARLIEST, NULL);
	case O_TO_LATEST: return set_reset(o, CG_TO_LATEST, NULL);
	case O_TO_CURRENT: return set_reset(o, CG_TO_CURRENT, NULL);
	case O_TO_OFFSET: return set_reset(o, CG_TO_OFFSET, optarg);
	case O_SHIFT_BY: return set_reset(o, CG_SHIFT_BY, optarg);
	case O_TO_DATETIME: return set_reset(o, CG_TO_DATETIME, optarg);
	case O_BY_DURATION: return set_reset(o, CG_BY_DURATION, optarg);
	case O_CMD_CONFIG: return tool_props_load_file(&o->client, optarg);
	case 'X': return tool_props_add(&o->client, optarg);
	case O_TIMEOUT:
		if (tool_parse_long(optarg, 1, 3600000, &v) != 0) {
			tool_errx("--timeout-ms: bad value '%s'", optarg);
			return -1;
		}
		o->timeout_ms = (int)v;
		return 0;
	default: return -1;
	}
}

int
main(int argc, char **argv)
{
	struct cg_opts o;
	rd_kafka_t *rk;
	int ch, rc;

	tool_init(argv[0]);
	memset(&o, 0, sizeof(o));
	o.timeout_ms = TOOL_DEFAULT_TIMEOUT_MS;
	while ((ch = getopt_long(argc, argv, "hX:", lopts, NULL)) != -1) {
		if (ch == 'h') {
			usage(stdout);
			return TOOL_EXIT_OK;
		}
		if (take_option(&o, ch, argc, argv) != 0) {
			if (ch == '?')
				usage(stderr);
			return TOOL_EXIT_USAGE;
		}
	}
	if (optind != argc) {
		tool_errx("unexpected argument '%s'", argv[optind]);
		return TOOL_EXIT_USAGE;
	}
	if (o.action == CG_LIST && o.view == CG_VIEW_STATE)
		o.view = CG_VIEW_OFFSETS;
	if (check_opts(&o) != 0) {
		fprintf(stderr, "(runnel-consumer-groups --help for usage)\n");
		return TOOL_EXIT_USAGE;
	}
	if ((rk = tool_client_new(RD_KAFKA_PRODUCER, o.bootstrap, &o.client,
	    NULL)) == NULL)
		return TOOL_EXIT_FAIL;
	rc = run(rk, &o);
	rd_kafka_destroy(rk);
	free(o.groups);
	free(o.topics);
	tool_props_free(&o.client);
	return rc;
}
