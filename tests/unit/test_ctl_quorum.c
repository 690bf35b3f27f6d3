/*
 * Three controller workers, one per simulated node, each with its own
 * shared memory, log dir and inherited CONTROLLER listener: the raft
 * transport connects them (preamble, accept, demultiplexing), they elect
 * a leader, the metadata log reaches every node's image and
 * meta.properties, the leader answers admin requests and followers
 * forward them to it, and killing the leader elects another one.
 */
#include "autoconf.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "protocol/kmsg_gen.h"
#include "storage/metaprops.h"
#include "tests/lib/ctl_harness.h"
#include "tests/lib/tap.h"

extern char **environ;

#define N 3

static struct th_cluster cl = {
	.name = "quorum", .n_nodes = N, .n_voters = N,
};
static int leader, follower;
static char cid[23];

/* The node every live image names as controller once it has registered
 * as a broker too, or -1 after timeout_ms. */
static int
wait_leader(int timeout_ms)
{
	int64_t end = rn_now_ms() + timeout_ms;
	int l;

	while (rn_now_ms() < end) {
		if ((l = th_agreed_leader(&cl)) >= 0 &&
		    rn_mdview_broker(&cl.node[l].view, l + 1) != NULL)
			return l;
		usleep(20000);
	}
	return -1;
}

static bool
pred_topic_everywhere(void *arg)
{
	const char *name = arg;
	int i;

	for (i = 0; i < N; i++)
		if (rn_mdview_topic(th_view(&cl, i), name, strlen(name)) ==
		    NULL)
			return false;
	return true;
}

/* CreateTopics (v7, one topic, RF 1) at node i: the "err" field, and the
 * topic's error code in *topic_err. */
static int
create_at(int i, const char *name, int16_t *topic_err)
{
	struct rn_CreateTopicsRequest req;
	struct rn_CreateTopicsRequest_CreatableTopic t;
	struct rn_CreateTopicsResponse_CreatableTopicResult res;
	struct rn_kwriter w;
	struct rn_kreader r;
	uint64_t id;
	int err;

	rn_CreateTopicsRequest_init(&req);
	rn_CreateTopicsRequest_CreatableTopic_init(&t);
	t.name = rn_kstr_c(name);
	t.num_partitions = 1;
	t.replication_factor = 1;
	req.topics = &t;
	req.topics_count = 1;
	rn_kwriter_init(&w);
	rn_CreateTopicsRequest_encode(&w, 7, &req);
	id = th_admin_send(&cl, i, RN_KAPI_CREATE_TOPICS, 7, &w);
	rn_kwriter_free(&w);
	*topic_err = -1;
	err = th_admin_wait(&cl, i, id, 10000, &r);
	if (err == 0 && th_create_topics_result(&cl, &r, name, &res) == 0)
		*topic_err = res.error_code;
	return err;
}

/* Three controllers elect a leader and agree on one cluster id. */
static void
test_election(void)
{
	struct rn_metaprops mp;
	char err[400];
	int i, same;

	leader = wait_leader(15000);
	ok(leader >= 0, "three controllers agree on a leader (node %d)",
	    leader + 1);
	if (leader < 0)
		bail("no leader");
	strcpy(cid, cl.node[leader].view.cluster_id);
	for (i = 0, same = 0; i < N; i++)
		if (strcmp(cl.node[i].view.cluster_id, cid) == 0)
			same++;
	is_int(same, N, "every image has cluster id %s", cid);
	for (i = 0, same = 0; i < N; i++)
		if (rn_metaprops_read(cl.node[i].dir, &mp, err,
		    sizeof(err)) == 0 && strcmp(mp.cluster_id, cid) == 0)
			same++;
	is_int(same, N, "every node persisted it in meta.properties");
}

/* The leader answers admin requests; a follower forwards them. */
static void
test_create_and_forward(void)
{
	int16_t terr;

	is_int(create_at(leader, "t1", &terr), 0, "the leader answers");
	is_int(terr, 0, "CreateTopics t1 on the leader");
	ok(th_wait_for(pred_topic_everywhere, "t1", 5000),
	    "t1 reaches every image");
	follower = (leader + 1) % N;
	is_int(create_at(follower, "t2", &terr), 0,
	    "a follower forwards to the active controller");
	is_int(terr, 0, "CreateTopics t2 through a follower");
	ok(th_wait_for(pred_topic_everywhere, "t2", 5000),
	    "t2 reaches every image");
}

/* A Kafka request the controller listener does not serve: closed. */
static void
test_kafka_on_raft_listener(void)
{
	struct sockaddr_in sin;
	struct pollfd pfd;
	char buf[16];
	int fd;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sin.sin_port = htons(cl.node[follower].cport);
	fd = socket(AF_INET, SOCK_STREAM, 0);
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0)
		bail("connect");
	/* an ApiVersions v0 request frame */
	if (write(fd, "\0\0\0\x0e\0\x12\0\0\0\0\0\x01\0\x04test", 18) != 18)
		bail("write");
	pfd.fd = fd;
	pfd.events = POLLIN;
	ok(poll(&pfd, 1, 5000) == 1 && read(fd, buf, sizeof(buf)) <= 0,
	    "a Kafka-protocol connection is closed");
	close(fd);
}

/* Kill the leader: another is elected, and the old one catches up. */
static void
test_failover(void)
{
	int leader2;
	int16_t terr;

	th_stop(&cl, leader, SIGKILL);
	leader2 = wait_leader(15000);
	ok(leader2 >= 0 && leader2 != leader, "a new leader (node %d)",
	    leader2 + 1);
	if (leader2 < 0)
		bail("no new leader");
	is_int(create_at(leader2, "t3", &terr), 0, "the new leader answers");
	is_int(terr, 0, "CreateTopics t3 on the new leader");
	ok(rn_mdview_topic(&cl.node[leader2].view, "t1", 2) != NULL,
	    "t1 survived the failover");
	th_start(&cl, leader);
	ok(th_wait_for(pred_topic_everywhere, "t3", 10000),
	    "the restarted node caught up");
	ok(strcmp(cl.node[leader].view.cluster_id, cid) == 0,
	    "with the same cluster id");
}

int
main(int argc, char **argv)
{
	int i;

	setproctitle_init(argc, argv, environ);
	rn_log_init("test", NULL, 0);
	th_setup(&cl);
	for (i = 0; i < N; i++)
		th_start(&cl, i);
	test_election();
	test_create_and_forward();
	test_kafka_on_raft_listener();
	test_failover();
	th_teardown(&cl, tap_failed != 0);
	return done_testing();
}
