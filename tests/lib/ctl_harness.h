/*
 * Controller nodes for the C unit tests. Each node is a real controller
 * worker forked from the test with its own shared memory, log dir and,
 * for a voter, an inherited CONTROLLER listener. The test plays the
 * node's network worker in slot 1: admin requests and other messages
 * over the ring, answers read back, the image read through rn_mdview.
 *
 * Nodes 1..n_voters are combined broker,controller voters; the rest are
 * broker-only. Node i (0-based) has node.id i + 1.
 */
#ifndef RN_TESTS_CTL_HARNESS_H
#define RN_TESTS_CTL_HARNESS_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "common/config.h"
#include "ipc/mdimage.h"
#include "protocol/kcodec.h"
#include "protocol/kmsg_gen.h"
#include "workers/worker.h"

#define TH_MAX_NODES 5

struct th_node {
	struct rn_config cfg;
	struct rn_shm shm;
	struct rn_worker_env env;
	struct rn_mdview view;
	char dir[300];          /* its only log dir */
	uint16_t cport;         /* CONTROLLER listener (voters) */
	pid_t pid;              /* 0 when not running */
};

struct th_cluster {
	/* set by the test before th_setup */
	const char *name;       /* temp dir /tmp/rn-test-<name>-XXXXXX */
	int n_nodes;
	int n_voters;
	const char *extra_config; /* properties lines added to every node */
	bool node_logs;         /* child stderr to <tmpdir>/nodeN.log */
	bool own_metaprops;     /* the test writes meta.properties itself */
	/* filled by th_setup */
	struct th_node node[TH_MAX_NODES];
	char tmpdir[256];
	struct rn_arena arena;  /* admin answers are copied here */
	uint64_t next_req;
};

/* Temp dir, listeners, configs, segments, meta.properties; bails on error. */
void th_setup(struct th_cluster *c);
/* Fork node i's controller worker (rebuilding the image lock if a killed
 * writer left it held, as the supervisor does). */
void th_start(struct th_cluster *c, int i);
/* Signal node i (continuing it first if stopped) and reap it. */
void th_stop(struct th_cluster *c, int i, int sig);
/* Node i's wait status once it exits, or -1 after timeout_ms. */
int th_wait_exit(struct th_cluster *c, int i, int timeout_ms);
/* Stop every node; remove the temp dir unless keep (then say where). */
void th_teardown(struct th_cluster *c, bool keep);

/* Node i's image, refreshed. */
struct rn_mdview *th_view(struct th_cluster *c, int i);
/* The node index the running voters' images agree is the active
 * controller, or -1. */
int th_agreed_leader(struct th_cluster *c);
/* Poll pred every 20 ms for up to timeout_ms; its last value. */
bool th_wait_for(bool (*pred)(void *), void *arg, int timeout_ms);

/* Push one message to node i's controller and wake it; bails when full. */
void th_send(struct th_cluster *c, int i, uint16_t type, const void *buf,
    size_t len);
/* An RN_IPC_ADMIN_REQUEST carrying body (a Kafka request body); its id. */
uint64_t th_admin_send(struct th_cluster *c, int i, int16_t key, int16_t ver,
    const struct rn_kwriter *body);
/* The answer to request id: its "err" (a Kafka error code), or
 * TH_NO_ANSWER when none came within timeout_ms; the response body,
 * copied into c->arena, in *body. */
#define TH_NO_ANSWER INT_MIN
int th_admin_wait(struct th_cluster *c, int i, uint64_t id, int timeout_ms,
    struct rn_kreader *body);

/*
 * One admin request: req (a generated request struct) encoded as (key,
 * ver) and sent to node i, the answer decoded into resp (a generated
 * response struct, its strings in c->arena). The answer's "err",
 * TH_NO_ANSWER, or TH_BAD_ANSWER when its body does not decode.
 */
#define TH_BAD_ANSWER (INT_MIN + 1)
int th_admin_call(struct th_cluster *c, int i, int16_t key, int16_t ver,
    const void *req, void *resp, int timeout_ms);

/* Decode a CreateTopics v7 answer for the one topic name into *res (its
 * strings in c->arena); a topic error is shown with diag. 0, or -1 when
 * the body does not decode to one topic. */
int th_create_topics_result(struct th_cluster *c, struct rn_kreader *body,
    const char *name, struct rn_CreateTopicsResponse_CreatableTopicResult *res);

#endif /* RN_TESTS_CTL_HARNESS_H */
