/*
 * Replica placement as Kafka computes it, as pure functions over broker
 * ids (and racks): the controller places new partitions with them, and
 * runnel-reassign-partitions --generate proposes with them.
 */
#include "autoconf.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/placement.h"

/* Position of follower j, counted from the leader's position. */
static int
follower_pos(int first, int shift, int j, int n)
{
	return (first + 1 + (shift + j) % (n - 1)) % n;
}

int
rn_assign_rack_unaware(const int32_t *brokers, int n_brokers, int n_parts,
    int rf, int start_index, int shift, int start_partition, int32_t *out)
{
	int i, j, p;

	if (n_brokers <= 0 || rf < 1 || rf > n_brokers || n_parts < 0 ||
	    start_index < 0 || shift < 0 || start_partition < 0)
		return -EINVAL;
	for (i = 0; i < n_parts; i++) {
		int first;

		p = start_partition + i;
		if (p > 0 && p % n_brokers == 0)
			shift++;
		first = (p + start_index) % n_brokers;
		out[i * rf] = brokers[first];
		for (j = 0; j < rf - 1; j++)
			out[i * rf + 1 + j] =
			    brokers[follower_pos(first, shift, j, n_brokers)];
	}
	return 0;
}

int
rn_assign_rack_order(const int32_t *brokers, const char *const *racks,
    int n_brokers, int32_t *out)
{
	const char **rl;
	int *next, n_racks = 0, i, k, done = 0, ri = 0;

	if (n_brokers <= 0)
		return -EINVAL;
	rl = calloc((size_t)n_brokers, sizeof(*rl));
	next = calloc((size_t)n_brokers, sizeof(*next));
	if (rl == NULL || next == NULL) {
		free(rl);
		free(next);
		return -ENOMEM;
	}
	/* distinct racks, sorted by name (insertion sort: few racks) */
	for (i = 0; i < n_brokers; i++) {
		for (k = 0; k < n_racks; k++)
			if (strcmp(rl[k], racks[i]) == 0)
				break;
		if (k < n_racks)
			continue;
		for (k = n_racks; k > 0 && strcmp(rl[k - 1], racks[i]) > 0; k--)
			rl[k] = rl[k - 1];
		rl[k] = racks[i];
		n_racks++;
	}
	/* next[r]: index in brokers of the next unused broker of rack r */
	while (done < n_brokers) {
		for (i = next[ri]; i < n_brokers; i++)
			if (strcmp(racks[i], rl[ri]) == 0)
				break;
		if (i < n_brokers) {
			out[done++] = brokers[i];
			next[ri] = i + 1;
		} else
			next[ri] = n_brokers;
		ri = (ri + 1) % n_racks;
	}
	free(rl);
	free(next);
	return n_racks;
}

static const char *
rack_of(const int32_t *brokers, const char *const *racks, int n, int32_t id)
{
	int i;

	for (i = 0; i < n; i++)
		if (brokers[i] == id)
			return racks[i];
	return "";
}

int
rn_assign_rack_aware(const int32_t *brokers, const char *const *racks,
    int n_brokers, int n_parts, int rf, int start_index, int shift,
    int start_partition, int32_t *out)
{
	int32_t *arr;
	const char **used_racks;
	int n_racks, i, j, p;

	if (n_brokers <= 0 || rf < 1 || rf > n_brokers || n_parts < 0 ||
	    start_index < 0 || shift < 0 || start_partition < 0)
		return -EINVAL;
	if ((arr = calloc((size_t)n_brokers, sizeof(*arr))) == NULL ||
	    (used_racks = calloc((size_t)rf, sizeof(*used_racks))) == NULL) {
		free(arr);
		return -ENOMEM;
	}
	if ((n_racks = rn_assign_rack_order(brokers, racks, n_brokers,
	    arr)) < 0) {
		free(arr);
		free(used_racks);
		return n_racks;
	}
	for (i = 0; i < n_parts; i++) {
		int first, n_used_racks = 0, n_used = 1, k = 0;
		int32_t *rep = &out[i * rf];

		p = start_partition + i;
		if (p > 0 && p % n_brokers == 0)
			shift++;
		first = (p + start_index) % n_brokers;
		rep[0] = arr[first];
		used_racks[n_used_racks++] = rack_of(brokers, racks, n_brokers,
		    rep[0]);
		for (j = 0; j < rf - 1; j++) {
			for (;;) {
				int32_t b = arr[n_brokers == 1 ? 0 :
				    follower_pos(first, shift * n_racks, k,
				    n_brokers)];
				const char *r = rack_of(brokers, racks,
				    n_brokers, b);
				bool rack_used = false, broker_used = false;
				int m;

				k++;
				for (m = 0; m < n_used_racks; m++)
					if (strcmp(used_racks[m], r) == 0)
						rack_used = true;
				for (m = 0; m < n_used; m++)
					if (rep[m] == b)
						broker_used = true;
				if ((!rack_used || n_used_racks == n_racks) &&
				    (!broker_used || n_used == n_brokers)) {
					rep[n_used++] = b;
					if (!rack_used)
						used_racks[n_used_racks++] = r;
					break;
				}
			}
		}
	}
	free(arr);
	free(used_racks);
	return 0;
}
