/*
 * The node's metrics as the supervisor reads them: the counters of the
 * metrics region summed over worker and partition slots, the restarts of
 * the worker slots, and gauges computed from the metadata image. Served
 * as Prometheus text (sv_http.c) and over the control socket.
 */
#ifndef SV_METRICS_H
#define SV_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <msgpack.h>

struct sv;

struct sv_met_sample {
	unsigned fam;           /* index in the family table */
	const char *lname;      /* NULL: no label */
	const char *lval;
	size_t lval_len;
	uint64_t v;
	/* a histogram's samples: "_bucket", "_sum" or "_count" after the
	 * family's name, more labels (stage, le), and v in us shown as
	 * seconds. The second label's value is l2num when l2val is NULL. */
	const char *suffix;
	const char *l2name, *l2val;
	const char *l3name, *l3val;
	int32_t l2num;
	bool v_us;
	bool v_signed;          /* v is an int64_t (a gauge that can be -1) */
};

struct sv_metrics {
	struct sv_met_sample *s; /* grouped by family, in table order */
	size_t n, cap;
	int error;              /* -ENOMEM while collecting */
};

/* Read every figure now; the labels point into a view kept until the
 * next collection. 0 or -ENOMEM. */
int sv_metrics_collect(struct sv *sv, struct sv_metrics *m);
void sv_metrics_free(struct sv_metrics *m);
/*
 * A byte buffer kept from one scrape to the next, so rendering allocates
 * only when a scrape outgrows the last one.
 */
struct sv_obuf {
	char *b;
	size_t len, cap;
};
/* Room for n more bytes after len; 0 or -ENOMEM. */
int sv_obuf_reserve(struct sv_obuf *o, size_t n);
void sv_obuf_free(struct sv_obuf *o);
/* The Prometheus text exposition 0.0.4, appended to o (after an HTTP
 * head's room, say); 0, or -ENOMEM with o->len as it was. */
int sv_metrics_render(const struct sv_metrics *m, struct sv_obuf *o);
/* [{"name", "labels": {...}, "value"}, ...] */
void sv_metrics_pack(const struct sv_metrics *m, msgpack_packer *pk);
/* the control socket's "metrics" reply */
void sv_control_pack_metrics(struct sv *sv, msgpack_packer *pk);

#endif /* SV_METRICS_H */
