/*
 * runnel-perf raw-producer: one ProduceRequest, encoded once with valid
 * RecordBatch v2 batches, sent again and again with only its correlation
 * id patched (and, with --idempotent, each batch's base sequence and
 * CRC), --inflight at a time on each of --connections sockets. Every
 * response is decoded and every partition error counted; the records of
 * a request count once the broker acknowledged them (acks=0: once
 * written to the socket). One latency sample per request.
 */
#include "autoconf.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "common/util.h"
#include "protocol/kmsg_gen.h"
#include "storage/batch.h"
#include "tools/perf_raw.h"
#include "tools/perf_stats.h"
#include "tools/tool_common.h"
#include "tools/tool_kclient.h"

#define MAX_INFLIGHT 64
/* a produce response for one partition is small: anything bigger is
 * garbage */
#define MAX_RESPONSE (1 << 20)

/* The request every send repeats, and where its batches are. */
struct produce_req {
	uint8_t *frame;         /* the template */
	size_t len;
	size_t batches_off;     /* the records bytes within the frame */
	size_t batch_len;       /* one batch; request_batches of them */
	long records;           /* per request */
	double payload;         /* record value bytes per request */
	double wire;            /* batch bytes per request */
	int16_t ver;
	int64_t producer_id;
	int16_t producer_epoch;
};

/* One connection's sending side. */
struct produce_conn {
	struct raw_conn *rc;    /* in the run's rcs */
	struct rn_kframebuf in; /* responses read, reused */
	uint8_t *out;           /* this connection's copy of the request */
	bool pending;           /* a request is started: patched, budgeted */
	size_t out_off;         /* written of it */
	int64_t sent_ns[MAX_INFLIGHT];  /* by correlation id */
};

struct produce_run {
	const struct raw_opts *o;
	struct produce_req req;
	struct raw_conn *rcs;
	struct produce_conn *conns;
	struct raw_stats st;
	struct rn_arena arena;
	long budget;            /* requests left to start; -1: no limit */
	int32_t next_seq;       /* --idempotent: next base sequence */
	bool stopping;           /* send no more; drain what is in flight */
	int64_t last_progress_ns;
	uint32_t *lat_us;       /* one per acknowledged request */
	size_t n_lat, cap_lat;
};

/* Records per batch: --batch-records, or as many as --batch-bytes holds
 * (default 1,000,000 B: under Kafka's default max.message.bytes). */
static long
batch_record_count(const struct raw_opts *o, const struct rn_record_in *rec)
{
	struct rn_batch_build_opts bo;
	long n, cap = o->batch_bytes ? o->batch_bytes : 1000000;
	struct rn_record_in *recs;

	if (o->batch_records)
		return o->batch_records;
	n = cap / (o->record_size + 8);
	if (n < 1)
		return 1;
	if ((recs = malloc((size_t)n * sizeof(*recs))) == NULL)
		return -1;
	for (long i = 0; i < n; i++)
		recs[i] = *rec;
	rn_batch_build_opts_default(&bo);
	/* the record overhead guessed above is an upper bound for small
	 * records; shrink until the batch fits */
	while (n > 1 && rn_batch_build(NULL, 0, &bo, recs, (int)n) > cap)
		n -= n / 64 + 1;
	free(recs);
	return n;
}

/* One batch of n records of the value, the producer as set in pr. */
static uint8_t *
build_batch(const struct raw_opts *o, const struct produce_req *pr,
    const uint8_t *value, long n, size_t *len)
{
	struct rn_batch_build_opts bo;
	struct rn_record_in *recs;
	uint8_t *buf = NULL;
	ssize_t size;
	int64_t now = rn_wallclock_ms();

	if ((recs = calloc((size_t)n, sizeof(*recs))) == NULL)
		return NULL;
	for (long i = 0; i < n; i++) {
		recs[i].key_len = -1;
		recs[i].value = value;
		recs[i].value_len = (int32_t)o->record_size;
		recs[i].timestamp = now;
	}
	rn_batch_build_opts_default(&bo);
	bo.producer_id = pr->producer_id;
	bo.producer_epoch = pr->producer_epoch;
	bo.base_sequence = pr->producer_id >= 0 ? 0 : -1;
	size = rn_batch_build(NULL, 0, &bo, recs, (int)n);
	if (size > 0 && (buf = malloc((size_t)size)) != NULL &&
	    rn_batch_build(buf, (size_t)size, &bo, recs, (int)n) != size) {
		free(buf);
		buf = NULL;
	}
	free(recs);
	*len = (size_t)size;
	return buf;
}

/* Encode the request once: --request-batches copies of one batch. */
static int
encode_request(const struct raw_opts *o, struct produce_req *pr)
{
	struct rn_ProduceRequest req;
	struct rn_ProduceRequest_TopicProduceData td;
	struct rn_ProduceRequest_PartitionProduceData pd;
	struct rn_record_in one = { NULL, -1, NULL, (int32_t)o->record_size,
	    0, NULL, 0 };
	struct rn_kwriter w;
	uint8_t *value, *batch = NULL, *blob = NULL;
	size_t blob_len;
	int rc = -1;

	rn_kwriter_init(&w);
	w.inline_max = SIZE_MAX; /* one contiguous frame to copy */
	if ((value = malloc((size_t)o->record_size + 1)) == NULL)
		goto err;
	/* random capitals, like Kafka's tool */
	for (long i = 0; i < o->record_size; i++)
		value[i] = (uint8_t)('A' + random() % 26);
	one.value = value;
	if ((pr->records = batch_record_count(o, &one)) < 0 ||
	    (batch = build_batch(o, pr, value, pr->records,
	    &pr->batch_len)) == NULL)
		goto err;
	blob_len = pr->batch_len * (size_t)o->request_batches;
	if (blob_len > INT32_MAX - 4096 || (blob = malloc(blob_len)) == NULL)
		goto err;
	for (long i = 0; i < o->request_batches; i++)
		memcpy(blob + (size_t)i * pr->batch_len, batch, pr->batch_len);
	pr->records *= o->request_batches;
	pr->payload = (double)pr->records * (double)o->record_size;
	pr->wire = (double)blob_len;

	rn_ProduceRequest_init(&req);
	rn_ProduceRequest_TopicProduceData_init(&td);
	rn_ProduceRequest_PartitionProduceData_init(&pd);
	req.acks = o->acks;
	req.timeout_ms = (int32_t)o->timeout_ms;
	req.topic_data = &td;
	req.topic_data_count = 1;
	td.name = rn_kstr_c(o->topic);
	td.partition_data = &pd;
	td.partition_data_count = 1;
	pd.index = o->partition;
	pd.records.ptr = blob;
	pd.records.len = (int32_t)blob_len;
	pd.records.fd = -1;
	if (rn_kframe_request(&w, -1, RN_KAPI_PRODUCE, pr->ver, 0,
	    "runnel-perf", &req, NULL, 0) != 0)
		goto err;
	/* the records end the request, but for three empty tag sections
	 * (partition, topic, request) in flexible versions */
	pr->batches_off = w.len - blob_len - (pr->ver >= 9 ? 3 : 0);
	if (memcmp(w.buf + pr->batches_off, blob, blob_len) != 0)
		goto err;
	pr->frame = w.buf;
	pr->len = w.len;
	w.buf = NULL;
	rc = 0;
err:
	if (rc != 0)
		tool_errx("cannot build the produce request");
	rn_kwriter_free(&w);
	free(value);
	free(batch);
	free(blob);
	return rc;
}

/* --idempotent: a producer id for the batches. */
static int
init_producer_id(const struct raw_opts *o, int fd, struct produce_req *pr)
{
	struct rn_InitProducerIdRequest req;
	struct rn_InitProducerIdResponse resp;
	struct rn_arena arena;
	char err[256];
	int rc = -1;

	rn_arena_init(&arena, 0);
	rn_InitProducerIdRequest_init(&req);
	req.transactional_id.len = -1;
	req.transaction_timeout_ms = 60000;
	if (tkc_call_api(fd, RN_KAPI_INIT_PRODUCER_ID, 1, &req, &arena, &resp,
	    (int)o->timeout_ms, err, sizeof(err)) != 0)
		tool_errx("InitProducerId: %s", err);
	else if (resp.error_code != 0)
		tool_errx("InitProducerId: %s",
		    tool_err_name((rd_kafka_resp_err_t)resp.error_code));
	else {
		pr->producer_id = resp.producer_id;
		pr->producer_epoch = resp.producer_epoch;
		rc = 0;
	}
	rn_arena_free(&arena);
	return rc;
}

/* --idempotent: the next sequences into out's batches, CRCs redone. */
static void
set_sequences(struct produce_run *run, uint8_t *out)
{
	const struct produce_req *pr = &run->req;

	for (long i = 0; i < run->o->request_batches; i++) {
		uint8_t *b = out + pr->batches_off + (size_t)i * pr->batch_len;
		long n = pr->records / run->o->request_batches;
		uint32_t be = htonl((uint32_t)run->next_seq);

		memcpy(b + RN_BATCH_OFF_BASE_SEQUENCE, &be, 4);
		be = htonl(rn_batch_compute_crc(b, pr->batch_len));
		memcpy(b + RN_BATCH_OFF_CRC, &be, 4);
		/* sequences wrap at INT32_MAX as in Kafka */
		run->next_seq = (int32_t)(((int64_t)run->next_seq + n) &
		    INT32_MAX);
	}
}

static void
add_latency(struct produce_run *run, int64_t ns)
{
	if (run->n_lat == run->cap_lat) {
		size_t nc = run->cap_lat ? run->cap_lat * 2 : 4096;
		uint32_t *nl = realloc(run->lat_us, nc * sizeof(*nl));

		if (nl == NULL)
			return; /* a sample lost, not the run */
		run->lat_us = nl;
		run->cap_lat = nc;
	}
	run->lat_us[run->n_lat++] = ns / 1000 > UINT32_MAX ? UINT32_MAX :
	    (uint32_t)(ns / 1000);
}

/* Write the current request, starting the next ones while the window
 * allows; -1 when the connection broke. */
static int
pump_send(struct produce_run *run, struct produce_conn *pc)
{
	struct raw_conn *c = pc->rc;
	const struct produce_req *pr = &run->req;

	for (;;) {
		ssize_t k;

		if (!pc->pending) {
			if (run->stopping || run->budget == 0 ||
			    (run->o->acks != 0 &&
			    c->inflight >= run->o->inflight))
				return 0;
			raw_set_corr(pc->out, c->next_corr);
			if (run->o->idempotent)
				set_sequences(run, pc->out);
			if (run->budget > 0)
				run->budget--;
			pc->pending = true;
			pc->out_off = 0;
		}
		k = raw_write(c->fd, pc->out + pc->out_off,
		    pr->len - pc->out_off);
		if (k < 0) {
			tool_errx("sending a produce request: %s",
			    strerror(errno));
			return -1;
		}
		pc->out_off += (size_t)k;
		if (pc->out_off < pr->len)
			return 0; /* the socket is full: EPOLLOUT resumes */
		pc->pending = false;
		pc->sent_ns[c->next_corr % MAX_INFLIGHT] = rn_now_ns();
		c->next_corr++;
		if (run->o->acks != 0) {
			c->inflight++;
			continue;
		}
		run->last_progress_ns = rn_now_ns();
		raw_stats_add(&run->st, run->o, pr->records, pr->payload,
		    pr->wire);
	}
}

/* One produce response: every partition's error checked. */
static int
on_response(struct produce_run *run, struct produce_conn *pc,
    const uint8_t *frame, size_t size)
{
	struct raw_conn *c = pc->rc;
	struct rn_ProduceResponse resp;
	struct rn_kreader r;
	int32_t t, p, parts = 0;

	rn_arena_reset(&run->arena);
	if (c->inflight == 0 || rn_kframe_response(&r, frame, size, -1,
	    RN_KAPI_PRODUCE, run->req.ver, c->want_corr) != 0 ||
	    rn_ProduceResponse_decode(&r, run->req.ver, &run->arena,
	    &resp) != 0) {
		tool_errx("a produce response that is not the answer to "
		    "request %d", c->want_corr);
		return -1;
	}
	add_latency(run, rn_now_ns() - pc->sent_ns[c->want_corr %
	    MAX_INFLIGHT]);
	c->want_corr++;
	c->inflight--;
	for (t = 0; t < resp.responses_count; t++)
		for (p = 0; p < resp.responses[t].partition_responses_count;
		    p++) {
			int16_t e = resp.responses[t].partition_responses[p].
			    error_code;

			parts++;
			if (e != 0)
				raw_stats_error(&run->st, e);
			else
				raw_stats_add(&run->st, run->o,
				    run->req.records, run->req.payload,
				    run->req.wire);
		}
	if (parts != 1) {
		tool_errx("a produce response with %d partitions, not 1",
		    parts);
		return -1;
	}
	run->last_progress_ns = rn_now_ns();
	if (run->st.errors)
		run->stopping = true; /* drain what is in flight, then stop */
	return 0;
}

/*
 * Read what the socket has into pc->in: 1 if bytes came, 0 if none
 * (EAGAIN), -1 at end of file or on error (errno set, ENOTCONN at EOF).
 */
static int
read_some(struct produce_conn *pc)
{
	uint8_t *base;
	size_t room;
	ssize_t k;

	rn_kfb_room(&pc->in, &base, &room);
	if (room == 0) {
		errno = ENOMEM;
		return -1;
	}
	k = read(pc->rc->fd, base, room);
	if (k > 0) {
		pc->in.len += (size_t)k;
		return 1;
	}
	if (k == 0) {
		errno = ENOTCONN;
		return -1;
	}
	return errno == EAGAIN || errno == EINTR ? 0 : -1;
}

/* Read and handle what came on pc; -1 when it broke. */
static int
pump_recv(struct produce_run *run, struct produce_conn *pc)
{
	int rc;

	while ((rc = read_some(pc)) == 1) {
		const uint8_t *frame;
		size_t off = 0, size;
		int got;

		while ((got = rn_kfb_next(&pc->in, &off, MAX_RESPONSE, &frame,
		    &size)) == 1)
			if (on_response(run, pc, frame, size) != 0)
				return -1;
		if (got < 0) {
			tool_errx("a response frame of a bad size");
			return -1;
		}
		rn_kfb_consume(&pc->in, off);
	}
	if (rc < 0) {
		tool_errx("reading produce responses: %s", errno == ENOTCONN ?
		    "the broker closed the connection" : strerror(errno));
		return -1;
	}
	return 0;
}

static bool
all_done(const struct produce_run *run)
{
	for (long i = 0; i < run->o->connections; i++)
		if (run->conns[i].rc->inflight > 0 || run->conns[i].pending)
			return false;
	return run->stopping || run->budget == 0;
}

static int
event_loop(struct produce_run *run, int epfd)
{
	const struct raw_opts *o = run->o;
	int64_t end_ns = o->duration_s ? run->st.start_ns +
	    o->duration_s * 1000000000L : 0;
	struct epoll_event ev[64];

	for (long i = 0; i < o->connections; i++)
		if (pump_send(run, &run->conns[i]) != 0)
			return -1;
	while (!all_done(run)) {
		int n = epoll_wait(epfd, ev, 64, 100);
		int64_t now = rn_now_ns();

		for (int i = 0; i < n; i++) {
			struct produce_conn *pc = ev[i].data.ptr;

			if (pump_recv(run, pc) != 0 || pump_send(run, pc) != 0)
				return -1;
		}
		if (raw_interrupted || (end_ns && now >= end_ns))
			run->stopping = true;
		if (now - run->last_progress_ns >
		    o->timeout_ms * 1000000L) {
			tool_errx("no produce response for %ld ms",
			    o->timeout_ms);
			return -1;
		}
	}
	return 0;
}

static void
report(struct produce_run *run)
{
	char extra[256];

	perf_sort_us(run->lat_us, run->n_lat);
	snprintf(extra, sizeof(extra), ",\"record_size\":%ld,\"acks\":\"%s\","
	    "\"inflight\":%ld,\"records_per_request\":%ld,"
	    "\"p50_ms\":%.3f,\"p99_ms\":%.3f,\"max_ms\":%.3f",
	    run->o->record_size, run->o->acks < 0 ? "all" :
	    run->o->acks ? "1" : "0", run->o->inflight, run->req.records,
	    perf_pct_ms(run->lat_us, run->n_lat, 50),
	    perf_pct_ms(run->lat_us, run->n_lat, 99),
	    perf_pct_ms(run->lat_us, run->n_lat, 100));
	raw_stats_print(&run->st, run->o, "raw-producer", extra);
	if (run->o->latency_file != NULL)
		(void)perf_write_cdf(run->o->latency_file, run->lat_us,
		    run->n_lat);
}

int
raw_produce_run(const struct raw_opts *o)
{
	struct produce_run run;
	int epfd = -1, ret = TOOL_EXIT_FAIL;
	long i;

	memset(&run, 0, sizeof(run));
	run.o = o;
	run.req.producer_id = -1;
	run.req.producer_epoch = -1;
	rn_arena_init(&run.arena, 1 << 20); /* a response decodes into it */
	if ((run.rcs = raw_conns_open(o, RN_KAPI_PRODUCE, 3, 9,
	    &run.req.ver)) == NULL || (run.conns = calloc((size_t)
	    o->connections, sizeof(*run.conns))) == NULL)
		goto err;
	for (i = 0; i < o->connections; i++)
		run.conns[i].rc = &run.rcs[i];
	if ((o->idempotent && init_producer_id(o, run.rcs[0].fd,
	    &run.req) != 0) || encode_request(o, &run.req) != 0 ||
	    (epfd = epoll_create1(EPOLL_CLOEXEC)) < 0)
		goto err;
	for (i = 0; i < o->connections; i++) {
		struct epoll_event ev = { EPOLLIN | EPOLLOUT | EPOLLET,
		    { .ptr = &run.conns[i] } };

		if ((run.conns[i].out = malloc(run.req.len)) == NULL ||
		    epoll_ctl(epfd, EPOLL_CTL_ADD, run.conns[i].rc->fd,
		    &ev) != 0)
			goto err;
		memcpy(run.conns[i].out, run.req.frame, run.req.len);
	}
	run.budget = o->num_records ? (o->num_records + run.req.records - 1) /
	    run.req.records : -1;
	raw_stats_start(&run.st);
	run.last_progress_ns = run.st.start_ns;
	if (event_loop(&run, epfd) == 0 && run.st.errors == 0 &&
	    (o->num_records == 0 || run.st.records >= o->num_records))
		ret = TOOL_EXIT_OK;
	report(&run);
err:
	if (epfd >= 0)
		close(epfd);
	for (i = 0; run.conns != NULL && i < o->connections; i++) {
		free(run.conns[i].out);
	}
	free(run.conns);
	raw_conns_close(run.rcs, o->connections);
	free(run.req.frame);
	free(run.lat_us);
	rn_arena_free(&run.arena);
	return ret;
}
