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

int
main(int argc, char **argv)
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
	struct rn_ElectLeadersRequest req;
	struct rn_ElectLeadersRequest_TopicPartitions tp;
	struct rn_ElectLeadersResponse resp;
	const char *bootstrap = NULL, *topic = NULL, *type_name = NULL;
	char *ok_list = NULL, *noop_list = NULL, err[512], *end;
	size_t ok_len = 0, noop_len = 0;
	struct rn_kwriter w;
	struct rn_kreader r;
	struct rn_arena arena;
	int32_t partition = -1, i, k;
	int ch, all = 0, fd, rc = 1, failed = 0;
	int8_t type;

	while ((ch = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (ch) {
		case 'b': bootstrap = optarg; break;
		case 'e': type_name = optarg; break;
		case 't': topic = optarg; break;
		case 'p':
			partition = (int32_t)strtol(optarg, &end, 10);
			if (*optarg == '\0' || *end != '\0' || partition < 0) {
				fprintf(stderr, "%s: bad --partition %s\n",
				    prog, optarg);
				return 2;
			}
			break;
		case 'a': all = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (bootstrap == NULL || type_name == NULL || optind != argc) {
		usage(stderr);
		return 2;
	}
	if (strcasecmp(type_name, "PREFERRED") == 0)
		type = 0;
	else if (strcasecmp(type_name, "UNCLEAN") == 0)
		type = 1;
	else {
		fprintf(stderr, "%s: --election-type must be PREFERRED or "
		    "UNCLEAN\n", prog);
		return 2;
	}
	if (all == (topic != NULL) || (topic != NULL) != (partition >= 0)) {
		fprintf(stderr, "%s: give --topic and --partition, or "
		    "--all-topic-partitions\n", prog);
		return 2;
	}
	if ((fd = tkc_connect(bootstrap, 10000, err, sizeof(err))) < 0) {
		fprintf(stderr, "%s: %s\n", prog, err);
		return 1;
	}
	rn_arena_init(&arena, 64u << 20);
	rn_ElectLeadersRequest_init(&req);
	req.election_type = type;
	req.timeout_ms = TIMEOUT_MS;
	if (all) {
		req.topic_partitions = NULL;
		req.topic_partitions_count = -1;
	} else {
		rn_ElectLeadersRequest_TopicPartitions_init(&tp);
		tp.topic = rn_kstr_c(topic);
		tp.partitions = &partition;
		tp.partitions_count = 1;
		req.topic_partitions = &tp;
		req.topic_partitions_count = 1;
	}
	rn_kwriter_init(&w);
	rn_ElectLeadersRequest_encode(&w, EL_VERSION, &req);
	if (tkc_call(fd, RN_KAPI_ELECT_LEADERS, EL_VERSION, &w, &arena, &r,
	    TIMEOUT_MS + 5000, err, sizeof(err)) != 0) {
		fprintf(stderr, "%s: ElectLeaders: %s\n", prog, err);
		goto out;
	}
	if (rn_ElectLeadersResponse_decode(&r, EL_VERSION, &arena, &resp) !=
	    0) {
		fprintf(stderr, "%s: ElectLeaders: the response does not "
		    "decode\n", prog);
		goto out;
	}
	if (resp.error_code != 0) {
		fprintf(stderr, "%s: ElectLeaders failed: %s\n", prog,
		    rn_kerr_name(resp.error_code));
		goto out;
	}
	type_name = type == 0 ? "PREFERRED" : "UNCLEAN";
	for (i = 0; i < resp.replica_election_results_count; i++) {
		const struct rn_ElectLeadersResponse_ReplicaElectionResult *t =
		    &resp.replica_election_results[i];

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
				failed++;
		}
	}
	if (ok_list != NULL)
		printf("Successfully completed leader election (%s) for "
		    "partitions %s\n", type_name, ok_list);
	if (noop_list != NULL)
		printf("Valid replica already elected for partitions %s\n",
		    noop_list);
	if (failed > 0) {
		printf("Error completing leader election (%s) for %d "
		    "partition(s):\n", type_name, failed);
		for (i = 0; i < resp.replica_election_results_count; i++) {
			const struct rn_ElectLeadersResponse_ReplicaElectionResult
			    *t = &resp.replica_election_results[i];

			for (k = 0; k < t->partition_result_count; k++) {
				const struct rn_ElectLeadersResponse_PartitionResult
				    *p = &t->partition_result[k];

				if (p->error_code == 0 || p->error_code ==
				    RN_KERR_ELECTION_NOT_NEEDED)
					continue;
				printf("  %.*s-%d: %s%s%.*s\n",
				    (int)(t->topic.len > 0 ? t->topic.len : 0),
				    t->topic.ptr, p->partition_id,
				    rn_kerr_name(p->error_code),
				    p->error_message.len > 0 ? ": " : "",
				    (int)(p->error_message.len > 0 ?
				    p->error_message.len : 0),
				    p->error_message.ptr);
			}
		}
	}
	if (ok_list == NULL && noop_list == NULL && failed == 0)
		printf("No partitions needed a leader election (%s)\n",
		    type_name);
	rc = failed > 0 ? 1 : 0;
out:
	free(ok_list);
	free(noop_list);
	rn_kwriter_free(&w);
	rn_arena_free(&arena);
	close(fd);
	return rc;
}
