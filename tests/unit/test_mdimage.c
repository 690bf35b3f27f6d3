/*
 * Unit tests for the metadata image's deltas (ipc/mdimage.c): a reader
 * that holds an image applies the partition changes published after it
 * in place and learns which partitions they were; a reader that starts
 * late loads the body and the deltas after it; a whole publish makes
 * every reader load the body again; the writer refuses a delta that would
 * outgrow the ring, and readers follow it across the ring's end and
 * after falling far behind.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include <msgpack.h>

#include "ipc/mdimage.h"
#include "ipc/mdimage_write.h"
#include "ipc/shm.h"
#include "tests/lib/tap.h"

#define N_TOPICS 3
#define N_PARTS 50

static const int32_t replicas[3] = { 1, 2, 3 };

/* The state the test publishes: each partition's leader and ISR size. */
struct model {
	int32_t leader[N_TOPICS][N_PARTS];
	int32_t n_isr[N_TOPICS][N_PARTS];
	int32_t epoch[N_TOPICS][N_PARTS];
};

static bool
never_offline(void *arg, int32_t id)
{
	(void)arg;
	(void)id;
	return false;
}

static void
topic_id(int t, uint8_t id[16])
{
	memset(id, 0, 16);
	id[0] = (uint8_t)(t + 1);
}

static void
part_of(const struct model *m, int t, int p, struct rn_mdimage_enc_part *ep)
{
	static const uint8_t zero[16];

	memset(ep, 0, sizeof(*ep));
	ep->p = p;
	ep->leader = m->leader[t][p];
	ep->leader_epoch = m->epoch[t][p];
	ep->partition_epoch = m->epoch[t][p];
	ep->replicas = replicas;
	ep->n_replicas = 3;
	ep->isr = replicas;
	ep->n_isr = m->n_isr[t][p];
	ep->slot = t * N_PARTS + p;
	ep->dir = 0;
	ep->dir_id = zero;
}

/* Two SCRAM credentials, published out of order: the view sorts them. */
static const uint8_t salt[4] = { 1, 2, 3, 4 };
static const struct rn_scram_cred scram_bob = { .name = "bob",
    .mech = RN_SCRAM_SHA512, .iterations = 8192, .salt = salt,
    .salt_len = sizeof(salt), .stored_key = { 7 }, .server_key = { 9 } };
static const struct rn_scram_cred scram_alice = { .name = "alice",
    .mech = RN_SCRAM_SHA256, .iterations = 4096, .salt = salt,
    .salt_len = sizeof(salt), .stored_key = { 5 }, .server_key = { 6 } };

static void
publish_body(struct rn_shm *shm, const struct model *m)
{
	struct rn_mdimage_enc e = { .offline = never_offline };
	struct rn_mdimage_enc_head h = { .cluster_id = "c", .controller_id = 1,
	    .epoch = 1, .offset = 1, .n_brokers = 0 };
	struct rn_mdimage_enc_part ep;
	msgpack_sbuffer sb;
	uint8_t id[16];
	char name[16];
	int t, p;

	msgpack_sbuffer_init(&sb);
	rn_mdimage_enc_begin(&e, &sb, &h);
	rn_mdimage_enc_topics(&e, N_TOPICS);
	for (t = 0; t < N_TOPICS; t++) {
		snprintf(name, sizeof(name), "t%d", t);
		topic_id(t, id);
		rn_mdimage_enc_topic(&e, name, id, false, 0);
		rn_mdimage_enc_partitions(&e, N_PARTS);
		for (p = 0; p < N_PARTS; p++) {
			part_of(m, t, p, &ep);
			rn_mdimage_enc_partition(&e, &ep);
		}
	}
	rn_mdimage_enc_broker_configs(&e, 0);
	rn_mdimage_enc_node_configs(&e, 0);
	rn_mdimage_enc_acls(&e, 0);
	rn_mdimage_enc_scram(&e, 2);
	rn_mdimage_enc_scram_cred(&e, &scram_bob);
	rn_mdimage_enc_scram_cred(&e, &scram_alice);
	rn_mdimage_enc_quotas(&e, 0);
	if (rn_mdimage_publish(shm, 1, "c", sb.data, sb.size) != 0)
		bail("publish");
	msgpack_sbuffer_destroy(&sb);
}

/* Change one partition (leader and ISR) and publish it as a delta. */
static int
publish_change(struct rn_shm *shm, struct model *m, int t, int p,
    int32_t leader, int32_t n_isr)
{
	struct rn_mdimage_enc e = { .offline = never_offline };
	struct rn_mdimage_enc_head h = { .controller_id = 1, .epoch = 1,
	    .offset = 2 };
	struct rn_mdimage_enc_part ep;
	msgpack_sbuffer sb;
	uint8_t id[16];
	int rc;

	m->leader[t][p] = leader;
	m->n_isr[t][p] = n_isr;
	m->epoch[t][p]++;
	msgpack_sbuffer_init(&sb);
	rn_mdimage_enc_delta(&e, &sb, &h, 1);
	topic_id(t, id);
	part_of(m, t, p, &ep);
	rn_mdimage_enc_delta_partition(&e, id, &ep);
	rc = rn_mdimage_publish_delta(shm, sb.data, sb.size);
	msgpack_sbuffer_destroy(&sb);
	return rc;
}

/* Whether the view shows the model, partition for partition. */
static bool
view_is(const struct rn_mdview *v, const struct model *m)
{
	int t, p;

	if (v->n_topics != N_TOPICS)
		return false;
	for (t = 0; t < N_TOPICS; t++)
		for (p = 0; p < N_PARTS; p++) {
			const struct rn_mdv_partition *mp = &v->topics[t].parts[p];

			if (mp->leader != m->leader[t][p] ||
			    mp->n_isr != m->n_isr[t][p] ||
			    mp->leader_epoch != m->epoch[t][p] ||
			    mp->n_replicas != 3 ||
			    mp->slot != t * N_PARTS + p)
				return false;
		}
	return true;
}

int
main(void)
{
	struct rn_shm_params sp = { .n_workers = 4, .ring_bytes = 4096,
	    .max_partitions = 64 };
	struct rn_mdview early, late, far;
	const struct rn_mdv_partition *before;
	struct rn_shm shm;
	struct model m;
	uint64_t ring;
	int t, p, i, rc, refused = -1, n_deltas;
	bool followed = true;

	plan(20);
	if ((rc = rn_shm_create(&sp, &shm)) != 0)
		bail("rn_shm_create: %s", strerror(-rc));
	ring = rn_shm_meta(&shm)->delta_size;
	for (t = 0; t < N_TOPICS; t++)
		for (p = 0; p < N_PARTS; p++) {
			m.leader[t][p] = 1 + (p % 3);
			m.n_isr[t][p] = 3;
			m.epoch[t][p] = 0;
		}
	rn_mdview_init(&early);
	rn_mdview_init(&late);
	rn_mdview_init(&far);
	is_int(publish_change(&shm, &m, 0, 0, 1, 3), -EAGAIN,
	    "no delta before the first body");
	publish_body(&shm, &m);
	is_int(rn_mdview_refresh(&early, &shm), 1, "a reader loads the body");
	ok(early.changes_all && view_is(&early, &m),
	    "all of it, as published");
	is_int(rn_mdview_refresh(&far, &shm), 1, "so does a reader that will "
	    "fall behind");
	{
		const struct rn_scram_cred *a = rn_scram_find(early.scram,
		    early.n_scram, "alice", 5, RN_SCRAM_SHA256);

		ok(early.n_scram == 2 && a != NULL && a->iterations == 4096 &&
		    a->salt_len == 4 && a->salt[3] == 4 &&
		    a->stored_key[0] == 5 && a->server_key[0] == 6 &&
		    rn_scram_find(early.scram, early.n_scram, "bob", 3,
		    RN_SCRAM_SHA512) != NULL && rn_scram_find(early.scram,
		    early.n_scram, "bob", 3, RN_SCRAM_SHA256) == NULL &&
		    rn_scram_find(early.scram, early.n_scram, "al", 2,
		    RN_SCRAM_SHA256) == NULL,
		    "the SCRAM credentials are in the view, found by user and "
		    "mechanism");
	}

	/* one ISR shrink and one leader change */
	before = &early.topics[1].parts[7];
	is_int(publish_change(&shm, &m, 1, 7, 2, 2), 0, "a delta is taken");
	is_int(publish_change(&shm, &m, 2, 49, 3, 1), 0, "and another");
	is_int(rn_mdview_refresh(&early, &shm), 1, "the reader moves on");
	ok(!early.changes_all && early.n_changes == 2 &&
	    early.changes[0].topic == 1 && early.changes[0].p == 7 &&
	    early.changes[1].topic == 2 && early.changes[1].p == 49 &&
	    early.changes[0].old_slot == 1 * N_PARTS + 7,
	    "by the deltas, naming the two partitions and their old slots");
	ok(view_is(&early, &m) && &early.topics[1].parts[7] == before,
	    "which show the change where they were");
	is_int((long long)early.version, 3, "at the version of the last delta");
	is_int(rn_mdview_refresh(&late, &shm), 1, "a new reader");
	ok(late.changes_all && view_is(&late, &m) && late.version == 3,
	    "loads the body and applies the deltas after it");

	/* a whole publish: readers load the body again */
	publish_body(&shm, &m);
	is_int(rn_mdview_refresh(&early, &shm), 1, "a whole publish");
	ok(early.changes_all && view_is(&early, &m),
	    "is loaded whole by a reader that followed the deltas");

	/* fill the ring: the writer refuses what would outgrow it */
	for (i = 0; i < 1000000 && refused != 0; i++) {
		if ((rc = publish_change(&shm, &m, i % N_TOPICS, i % N_PARTS,
		    1 + i % 3, 1 + i % 3)) == -ENOSPC) {
			refused = 0;
			break;
		}
		if (rn_mdview_refresh(&early, &shm) != 1 || early.changes_all ||
		    !view_is(&early, &m))
			followed = false;
	}
	n_deltas = i;
	ok(refused == 0 && n_deltas > 1000, "the ring refuses a delta once "
	    "full (%d deltas in %llu bytes)", n_deltas,
	    (unsigned long long)ring);
	ok(followed, "a reader refreshing after each delta followed them all");
	/* the state the refused delta meant goes whole, as the controller
	 * does it */
	publish_body(&shm, &m);
	/* past the ring's end and around it again */
	followed = true;
	for (i = 0; i < 2 * n_deltas; i++) {
		if (publish_change(&shm, &m, i % N_TOPICS, (i * 7) % N_PARTS,
		    1 + i % 3, 1 + (i / 3) % 3) != 0) {
			publish_body(&shm, &m);
			continue;
		}
		if (i % 97 == 0 && (rn_mdview_refresh(&early, &shm) != 1 ||
		    !view_is(&early, &m)))
			followed = false;
	}
	ok(followed, "a reader refreshing now and then follows across the "
	    "ring's end");
	is_int(rn_mdview_refresh(&far, &shm), 1, "a reader far behind");
	ok(far.changes_all && view_is(&far, &m),
	    "loads the body again and is current");
	rn_mdview_free(&early);
	rn_mdview_free(&late);
	rn_mdview_free(&far);
	rn_shm_destroy(&shm);
	return done_testing();
}
