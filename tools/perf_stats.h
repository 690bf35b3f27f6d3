/*
 * Latency figures runnel-perf's verbs share: samples in microseconds,
 * sorted once, read as nearest-rank percentiles, and written as a CDF
 * for the bench's plots.
 */
#ifndef RN_PERF_STATS_H
#define RN_PERF_STATS_H

#include <stddef.h>
#include <stdint.h>

void perf_sort_us(uint32_t *v, size_t n);
/* Nearest-rank percentile p of the sorted samples, in ms; 0 if none. */
double perf_pct_ms(const uint32_t *v, size_t n, double p);
/*
 * "percentile ms" lines, 0 to 100 by 0.1, of the sorted samples: a CDF
 * gnuplot draws as it is. 0, or -1 after saying why.
 */
int perf_write_cdf(const char *path, const uint32_t *v, size_t n);

#endif /* RN_PERF_STATS_H */
