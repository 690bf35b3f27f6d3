#include "autoconf.h"

#include <errno.h>

#include "workers/ctl_assign.h"

/* Position of follower j, counted from the leader's position. */
static int
follower_pos(int first, int shift, int j, int n)
{
	return (first + 1 + (shift + j) % (n - 1)) % n;
}

int
ctl_assign_rack_unaware(const int32_t *brokers, int n_brokers, int n_parts,
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
