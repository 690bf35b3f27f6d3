/*
 * Replica placement. Rack-unaware: the worked table of the placement
 * description (brokers 1000..1004, 10 partitions, RF 3, start index 0,
 * shift 3), then properties over many shapes and random starts.
 * Rack-aware: a fixed table and properties (rack spread, no duplicate).
 */
#include "autoconf.h"

#include <stdio.h>
#include <stdlib.h>

#include "tests/lib/tap.h"
#include "tests/unit/seed002.h"
#include "common/placement.h"

#define expected seed002_table

static void
test_seed_table(void)
{
	int32_t brokers[5] = { 1000, 1001, 1002, 1003, 1004 }, out[30];
	int p, j, bad = 0;

	is_int(rn_assign_rack_unaware(brokers, 5, 10, 3, 0, 3, 0, out), 0,
	    "seed table: assignment succeeds");
	for (p = 0; p < 10; p++) {
		int row_ok = 1;

		for (j = 0; j < 3; j++)
			if (out[p * 3 + j] != expected[p][j])
				row_ok = 0;
		if (!ok(row_ok, "partition %d: [%d,%d,%d]", p, out[p * 3],
		    out[p * 3 + 1], out[p * 3 + 2]))
			bad++;
	}
	is_int(bad, 0, "the whole table matches");
	/*
	 * Partitions added later (CreatePartitions) start at their index;
	 * the shift is the caller's (random in Kafka), so the one the table
	 * had by then (3 + 1 after the first wrap) continues the table.
	 */
	is_int(rn_assign_rack_unaware(brokers, 5, 4, 3, 0, 4, 6, out), 0,
	    "continuing from partition 6");
	ok(out[0] == 1001 && out[1] == 1002 && out[2] == 1003 &&
	    out[9] == 1004 && out[10] == 1000 && out[11] == 1001,
	    "partitions 6 and 9 as in the table");
}

static void
test_errors(void)
{
	int32_t b[2] = { 1, 2 }, out[8];

	ok(rn_assign_rack_unaware(b, 2, 2, 3, 0, 0, 0, out) < 0,
	    "rf above the broker count is refused");
	ok(rn_assign_rack_unaware(b, 2, 2, 0, 0, 0, 0, out) < 0,
	    "rf 0 is refused");
	ok(rn_assign_rack_unaware(b, 0, 2, 1, 0, 0, 0, out) < 0,
	    "no brokers is refused");
	is_int(rn_assign_rack_unaware(b, 1, 3, 1, 0, 0, 0, out), 0,
	    "one broker, rf 1");
	ok(out[0] == 1 && out[1] == 1 && out[2] == 1, "all on broker 1");
}

/* Each broker leads n/brokers partitions; no replica set repeats a broker. */
static void
test_properties(void)
{
	int32_t brokers[7], *out;
	int nb, rf, np, start, shift, p, j, k, fails_lead = 0, fails_dup = 0;
	int fails_spread = 0;

	srandom(12345);
	for (nb = 1; nb <= 7; nb++) {
		for (k = 0; k < nb; k++)
			brokers[k] = 100 + k * 3;
		for (rf = 1; rf <= nb; rf++) {
			np = nb * (1 + (int)(random() % 4));
			start = (int)(random() % nb);
			shift = (int)(random() % nb);
			out = calloc((size_t)(np * rf), sizeof(*out));
			if (rn_assign_rack_unaware(brokers, nb, np, rf, start,
			    shift, 0, out) != 0)
				bail("assignment failed for %d brokers", nb);
			for (k = 0; k < nb; k++) {
				int leads = 0, replicas = 0;

				for (p = 0; p < np; p++) {
					if (out[p * rf] == brokers[k])
						leads++;
					for (j = 0; j < rf; j++)
						if (out[p * rf + j] ==
						    brokers[k])
							replicas++;
				}
				if (leads != np / nb)
					fails_lead++;
				if (replicas != np * rf / nb)
					fails_spread++;
			}
			for (p = 0; p < np; p++)
				for (j = 0; j < rf; j++)
					for (k = 0; k < j; k++)
						if (out[p * rf + j] ==
						    out[p * rf + k])
							fails_dup++;
			free(out);
		}
	}
	is_int(fails_lead, 0, "every broker leads partitions/brokers "
	    "partitions");
	is_int(fails_dup, 0, "no partition has a broker twice");
	is_int(fails_spread, 0, "replicas spread evenly when partitions are "
	    "a multiple of brokers");
}

/*
 * Rack-aware: brokers 0-5 in three racks (rack1: 0,5; rack2: 3,4;
 * rack3: 1,2) alternate as 0,3,1,5,4,2; with start index and shift 0,
 * 7 partitions of RF 3 follow the formula on that list, skipping a
 * candidate whose rack already holds a replica.
 */
static void
test_rack_table(void)
{
	static const int32_t want[7][3] = {
		{ 0, 3, 1 }, { 3, 1, 5 }, { 1, 5, 4 }, { 5, 4, 2 },
		{ 4, 2, 0 }, { 2, 0, 3 }, { 0, 4, 2 },
	};
	int32_t brokers[6] = { 0, 1, 2, 3, 4, 5 }, order[6], out[21];
	const char *racks[6] = { "rack1", "rack3", "rack3", "rack2", "rack2",
	    "rack1" };
	int p, j, bad = 0;

	is_int(rn_assign_rack_order(brokers, racks, 6, order), 3,
	    "three racks");
	ok(order[0] == 0 && order[1] == 3 && order[2] == 1 && order[3] == 5 &&
	    order[4] == 4 && order[5] == 2, "rack-alternated order "
	    "0,3,1,5,4,2");
	is_int(rn_assign_rack_aware(brokers, racks, 6, 7, 3, 0, 0, 0, out),
	    0, "rack-aware assignment succeeds");
	for (p = 0; p < 7; p++)
		for (j = 0; j < 3; j++)
			if (out[p * 3 + j] != want[p][j])
				bad++;
	is_int(bad, 0, "the 7 partitions are as expected");
}

/* Replicas cover min(rf, racks) racks; leaders spread over brokers. */
static void
test_rack_properties(void)
{
	static const char *names[] = { "a", "b", "c", "d" };
	int32_t brokers[9], *out;
	const char *racks[9];
	int nb, nr, rf, np, p, j, k, fails_racks = 0, fails_dup = 0;
	int fails_lead = 0;

	srandom(4321);
	for (nb = 2; nb <= 9; nb++)
		for (nr = 2; nr <= 4 && nr <= nb; nr++)
			for (rf = 1; rf <= nb; rf++) {
				for (k = 0; k < nb; k++) {
					brokers[k] = 10 + k;
					racks[k] = names[(k * 7 + 3) % nr];
				}
				/* every rack used at least once */
				for (k = 0; k < nr; k++)
					racks[k] = names[k];
				np = nb * (1 + (int)(random() % 3));
				out = calloc((size_t)(np * rf), sizeof(*out));
				if (rn_assign_rack_aware(brokers, racks, nb,
				    np, rf, (int)(random() % nb),
				    (int)(random() % nb), 0, out) != 0)
					bail("rack-aware assignment failed");
				for (p = 0; p < np; p++) {
					const char *seen[9];
					int n_seen = 0, m;

					for (j = 0; j < rf; j++) {
						const char *r =
						    racks[out[p * rf + j] - 10];

						for (m = 0; m < n_seen; m++)
							if (seen[m] == r)
								break;
						if (m == n_seen)
							seen[n_seen++] = r;
						for (k = 0; k < j; k++)
							if (out[p * rf + j] ==
							    out[p * rf + k])
								fails_dup++;
					}
					if (n_seen != (rf < nr ? rf : nr))
						fails_racks++;
				}
				for (k = 0; k < nb; k++) {
					int leads = 0;

					for (p = 0; p < np; p++)
						if (out[p * rf] == brokers[k])
							leads++;
					if (leads != np / nb)
						fails_lead++;
				}
				free(out);
			}
	is_int(fails_racks, 0, "each partition spans min(rf, racks) racks");
	is_int(fails_dup, 0, "no partition has a broker twice");
	is_int(fails_lead, 0, "every broker leads partitions/brokers "
	    "partitions");
}

int
main(void)
{
	test_seed_table();
	test_errors();
	test_properties();
	test_rack_table();
	test_rack_properties();
	return done_testing();
}
