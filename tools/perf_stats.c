/*
 * Latency percentiles and CDF files for runnel-perf (perf_stats.h).
 */
#include "autoconf.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/perf_stats.h"
#include "tools/tool_common.h"

static int
cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

void
perf_sort_us(uint32_t *v, size_t n)
{
	if (n > 1) /* v may be NULL when there is no sample */
		qsort(v, n, sizeof(*v), cmp_u32);
}

double
perf_pct_ms(const uint32_t *v, size_t n, double p)
{
	long i;

	if (n == 0)
		return 0;
	i = (long)ceil(p / 100.0 * (double)n) - 1;
	if (i < 0)
		i = 0;
	if ((size_t)i >= n)
		i = (long)n - 1;
	return (double)v[i] / 1000.0;
}

int
perf_write_cdf(const char *path, const uint32_t *v, size_t n)
{
	FILE *f = fopen(path, "w");
	int i;

	if (f == NULL) {
		tool_errx("%s: %s", path, strerror(errno));
		return -1;
	}
	fprintf(f, "# percentile latency_ms (%zu samples)\n", n);
	for (i = 0; i <= 1000 && n > 0; i++)
		fprintf(f, "%.1f %.3f\n", i / 10.0,
		    perf_pct_ms(v, n, i / 10.0));
	if (fclose(f) != 0) {
		tool_errx("%s: %s", path, strerror(errno));
		return -1;
	}
	return 0;
}
