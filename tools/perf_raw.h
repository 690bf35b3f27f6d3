/*
 * runnel-perf's raw verbs: load that measures the broker, not a client.
 * Requests are encoded once with our own codec and sent pipelined on
 * non-blocking sockets; responses are read into reused buffers. What the
 * two verbs share lives in perf_raw.c: options, connections, the
 * ApiVersions check, the rate lines and the final JSON line.
 */
#ifndef RN_PERF_RAW_H
#define RN_PERF_RAW_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "protocol/kframe.h"

struct raw_opts {
	bool producer;
	const char *bootstrap, *topic, *latency_file;
	int32_t partition;
	long num_records, duration_s, record_size, batch_records, batch_bytes;
	long request_batches, connections, inflight, interval_ms, timeout_ms;
	long fetch_max_bytes, from_offset;
	int16_t acks;
	bool idempotent, print_json;
};

/* One connection to the broker: its socket and its requests' ids. */
struct raw_conn {
	int fd;
	int32_t next_corr;      /* of the next request sent */
	int32_t want_corr;      /* of the next response expected */
	int inflight;
};

/* Counts of a run, for the rate lines and the JSON line. */
struct raw_stats {
	int64_t start_ns, end_ns;
	long records;           /* acknowledged (produce) or read (fetch) */
	double payload_bytes;   /* record values */
	double wire_bytes;      /* whole batches */
	long errors;
	int first_error;        /* Kafka error code, 0 if none */
	/* the current --interval-ms window */
	int64_t win_start_ns;
	long win_records;
	double win_bytes;
};

extern volatile sig_atomic_t raw_interrupted;

/* Entry of the raw-producer and raw-consumer verbs (argv[1]). */
int perf_raw_main(int argc, char **argv);

int raw_produce_run(const struct raw_opts *o);
int raw_fetch_run(const struct raw_opts *o);

/*
 * o->connections non-blocking connections to the bootstrap server, and
 * the highest version of key within [min, max] the broker takes (asked
 * with ApiVersions on the first): the array, for raw_conns_close, or
 * NULL after saying why.
 */
struct raw_conn *raw_conns_open(const struct raw_opts *o, int16_t key,
    int16_t min, int16_t max, int16_t *ver);
void raw_conns_close(struct raw_conn *conns, long n);

/* Write from buf; bytes written (0 on EAGAIN), -1 on error. */
ssize_t raw_write(int fd, const uint8_t *buf, size_t len);

/* Patch the correlation id of a request frame (its size prefix first). */
void raw_set_corr(uint8_t *frame, int32_t corr);

void raw_stats_start(struct raw_stats *s);
/* Count records and bytes; prints a rate line when the window is over. */
void raw_stats_add(struct raw_stats *s, const struct raw_opts *o,
    long records, double payload, double wire);
void raw_stats_error(struct raw_stats *s, int code);
/* The summary line, and the JSON line with --print-json; extra is more
 * JSON fields (",\"k\":v..."), or "". */
void raw_stats_print(const struct raw_stats *s, const struct raw_opts *o,
    const char *mode, const char *extra);

#endif /* RN_PERF_RAW_H */
