/*
 * runnel-leader-election: ElectLeaders, shaped like
 * kafka-leader-election.sh.
 *
 *   runnel-leader-election --bootstrap-server H:P
 *       --election-type PREFERRED|UNCLEAN
 *       (--topic T --partition P | --all-topic-partitions)
 */
#include "autoconf.h"

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "protocol/kerrors.h"
#include "protocol/kmsg_gen.h"
#include "tools/tool_kclient.h"

#define TIMEOUT_MS 60000
#define EL_VERSION 2

static const char *prog = "runnel-leader-election";

static void
usage(FILE *f)
{
	fprintf(f, "usage: %s --bootstrap-server HOST:PORT --election-type "
	    "PREFERRED|UNCLEAN\n"
	    "       (--topic TOPIC --partition N | --all-topic-partitions)\n",
	    prog);
}

/* Append "t-p" to a comma-separated list. */
static void
list_add(char **list, size_t *len, struct rn_kstr t, int32_t p)
{
	char item[300];
	int n = snprintf(item, sizeof(item), "%s%.*s-%d", *len ? ", " : "",
	    (int)(t.len > 0 ? t.len : 0), t.ptr, p);
	char *nl = realloc(*list, *len + (size_t)n + 1);

	if (nl == NULL)
		return;
	memcpy(nl + *len, item, (size_t)n + 1);
	*list = nl;
	*len += (size_t)n;
}

struct el_opts {
	const char *bootstrap, *topic;
	int32_t partition;      /* -1: none given */
	bool all;
	int8_t type;            /* 0 PREFERRED, 1 UNCLEAN */
};

/* Fill o from the command line; -1 to go on, else the exit code. */
static int
parse_args(int argc, char **argv, struct el_opts *o)
{
	static const struct option opts[] = {
		{ "bootstrap-server", required_argument, NULL, 'b' },
		{ "election-type", required_argument, NULL, 'e' },
		{ "topic", required_argument, NULL, 't' },
		{ "partition", required_argument, NULL, 'p' },
		{ "all-topic-partitions", no_argument, NULL, 'a' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *type_name = NULL;
	char *end;
	int ch;

	while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (ch) {
		case 'b': o->bootstrap = optarg; break;
		case 'e': type_name = optarg; break;
		case 't': o->topic = optarg; break;
		case 'p':
			o->partition = (int32_t)strtol(optarg, &end, 10);
			if (*optarg == '\0' || *end != '\0' || o->partition < 0) {
				fprintf(stderr, "%s: bad --partition %s\n",
				    prog, optarg);
				return 2;
			}
			break;
		case 'a': o->all = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (o->bootstrap == NULL || type_name == NULL || optind != argc) {
		usage(stderr);
		return 2;
	}
	if (strcasecmp(type_name, "PREFERRED") == 0)
		o->type = 0;
	else if (strcasecmp(type_name, "UNCLEAN") == 0)
		o->type = 1;
	else {
		fprintf(stderr, "%s: --election-type must be PREFERRED or "
		    "UNCLEAN\n", prog);
		return 2;
	}
	if (o->all == (o->topic != NULL) ||
	    (o->topic != NULL) != (o->partition >= 0)) {
		fprintf(stderr, "%s: give --topic and --partition, or "
		    "--all-topic-partitions\n", prog);
		return 2;
	}
	return -1;
}

/* Ask for the election; 0 with resp decoded, or -1 after saying why. */
static int
elect(int fd, struct el_opts *o, struct rn_arena *arena,
    struct rn_ElectLeadersResponse *resp)
{
	struct rn_ElectLeadersRequest req;
	struct rn_ElectLeadersRequest_TopicPartitions tp;
	char err[512];
	int rc = -1;

	rn_ElectLeadersRequest_init(&req);
	req.election_type = o->type;
	req.timeout_ms = TIMEOUT_MS;
	if (o->all) {
		req.topic_partitions = NULL;
		req.topic_partitions_count = -1;
	} else {
		rn_ElectLeadersRequest_TopicPartitions_init(&tp);
		tp.topic = rn_kstr_c(o->topic);
		tp.partitions = &o->partition;
		tp.partitions_count = 1;
		req.topic_partitions = &tp;
		req.topic_partitions_count = 1;
	}
	if (tkc_call_api(fd, RN_KAPI_ELECT_LEADERS, EL_VERSION, &req, arena,
	    resp, TIMEOUT_MS + 5000, err, sizeof(err)) != 0)
		fprintf(stderr, "%s: ElectLeaders: %s\n", prog, err);
	else if (resp->error_code != 0)
		fprintf(stderr, "%s: ElectLeaders failed: %s\n", prog,
		    rn_kerr_name(resp->error_code));
	else
		rc = 0;
	return rc;
}

static bool
failed(int16_t error_code)
{
	return error_code != 0 && error_code != RN_KERR_ELECTION_NOT_NEEDED;
}

/* One line per partition whose election failed. */
static void
print_failures(const struct rn_ElectLeadersResponse *resp)
{
	int32_t i, k;

	for (i = 0; i < resp->replica_election_results_count; i++) {
		const struct rn_ElectLeadersResponse_ReplicaElectionResult *t =
		    &resp->replica_election_results[i];

		for (k = 0; k < t->partition_result_count; k++) {
			const struct rn_ElectLeadersResponse_PartitionResult
			    *p = &t->partition_result[k];

			if (!failed(p->error_code))
				continue;
			printf("  %.*s-%d: %s%s%.*s\n",
			    (int)(t->topic.len > 0 ? t->topic.len : 0),
			    t->topic.ptr, p->partition_id,
			    rn_kerr_name(p->error_code),
			    p->error_message.len > 0 ? ": " : "",
			    (int)(p->error_message.len > 0 ?
			    p->error_message.len : 0), p->error_message.ptr);
		}
	}
}

/* The results as kafka-leader-election prints them; the exit code. */
static int
report(const struct rn_ElectLeadersResponse *resp, int8_t type)
{
	const char *type_name = type == 0 ? "PREFERRED" : "UNCLEAN";
	char *ok_list = NULL, *noop_list = NULL;
	size_t ok_len = 0, noop_len = 0;
	int32_t i, k;
	int nfailed = 0;

	for (i = 0; i < resp->replica_election_results_count; i++) {
		const struct rn_ElectLeadersResponse_ReplicaElectionResult *t =
		    &resp->replica_election_results[i];

		for (k = 0; k < t->partition_result_count; k++) {
			const struct rn_ElectLeadersResponse_PartitionResult
			    *p = &t->partition_result[k];

			if (p->error_code == 0)
				list_add(&ok_list, &ok_len, t->topic,
				    p->partition_id);
			else if (p->error_code == RN_KERR_ELECTION_NOT_NEEDED)
				list_add(&noop_list, &noop_len, t->topic,
				    p->partition_id);
			else
				nfailed++;
		}
	}
	if (ok_list != NULL)
		printf("Successfully completed leader election (%s) for "
		    "partitions %s\n", type_name, ok_list);
	if (noop_list != NULL)
		printf("Valid replica already elected for partitions %s\n",
		    noop_list);
	if (nfailed > 0) {
		printf("Error completing leader election (%s) for %d "
		    "partition(s):\n", type_name, nfailed);
		print_failures(resp);
	}
	if (ok_list == NULL && noop_list == NULL && nfailed == 0)
		printf("No partitions needed a leader election (%s)\n",
		    type_name);
	free(ok_list);
	free(noop_list);
	return nfailed > 0 ? 1 : 0;
}

int
main(int argc, char **argv)
{
	struct el_opts o = { NULL, NULL, -1, false, 0 };
	struct rn_ElectLeadersResponse resp;
	struct rn_arena arena;
	char err[512];
	int fd, rc;

	if ((rc = parse_args(argc, argv, &o)) >= 0)
		return rc;
	if ((fd = tkc_connect(o.bootstrap, 10000, err, sizeof(err))) < 0) {
		fprintf(stderr, "%s: %s\n", prog, err);
		return 1;
	}
	rn_arena_init(&arena, 64u << 20);
	rc = elect(fd, &o, &arena, &resp) == 0 ? report(&resp, o.type) : 1;
	rn_arena_free(&arena);
	close(fd);
	return rc;
}
