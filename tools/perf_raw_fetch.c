/*
 * runnel-perf raw-consumer: Fetch requests for one partition from
 * --from-offset to the log end (or --num-records). A response streams
 * through a small reused buffer (the receiver's work of a loopback TCP
 * stream, no more): its head is parsed up to the records, then only the
 * batch headers are read, to count records and find the next offset
 * (after the last whole batch), and the rest is discarded. The next
 * offset comes from the response, so a connection has one fetch in
 * flight; --connections C splits the offsets into C ranges read side by
 * side.
 */
#include "autoconf.h"

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
#include "tools/tool_common.h"
#include "tools/tool_kclient.h"

/* room for the response's headers around --fetch-max-bytes of records */
#define RESPONSE_SLACK (64 * 1024)
/* what one read takes, as the loopback TCP receiver of the bench */
#define STREAM_BUF (1 << 20)

/* Where a connection is in the response it reads. */
enum fetch_stage { ST_SIZE, ST_HEAD, ST_RECORDS, ST_TAIL };

struct fetch_conn {
	struct raw_conn *rc;    /* in the run's rcs */
	int64_t next, end;      /* this connection's range still to read */
	struct rn_kwriter w;    /* the request being written */
	bool sending;           /* w holds a request not all written */
	size_t out_off;
	bool done;
	uint8_t *buf;           /* STREAM_BUF bytes, reused */
	size_t len;
	enum fetch_stage stage;
	size_t frame_left;      /* bytes of the response not yet taken */
	size_t records_left;    /* of its records */
	size_t skip;            /* of the batch being passed over */
	size_t records_len;
	int64_t from;           /* the offset it was asked from */
	int64_t high_watermark;
};

struct fetch_run {
	const struct raw_opts *o;
	struct raw_conn *rcs;
	struct fetch_conn *conns;
	struct raw_stats st;
	int16_t ver;
	int64_t last_progress_ns;
	int64_t high_watermark;
};

/* A Fetch of one partition from offset, --fetch-max-bytes at most. */
static void
fetch_request(const struct raw_opts *o, int64_t offset, int32_t max_wait,
    struct rn_FetchRequest *req, struct rn_FetchRequest_FetchTopic *t,
    struct rn_FetchRequest_FetchPartition *p)
{
	rn_FetchRequest_init(req);
	rn_FetchRequest_FetchTopic_init(t);
	rn_FetchRequest_FetchPartition_init(p);
	req->max_wait_ms = max_wait;
	req->min_bytes = 1;
	req->max_bytes = (int32_t)o->fetch_max_bytes;
	req->topics = t;
	req->topics_count = 1;
	t->topic = rn_kstr_c(o->topic);
	t->partitions = p;
	t->partitions_count = 1;
	p->partition = o->partition;
	p->fetch_offset = offset;
	p->partition_max_bytes = (int32_t)o->fetch_max_bytes;
}

/* The one partition of a response, or NULL after saying why. */
static const struct rn_FetchResponse_PartitionData *
the_partition(const struct raw_opts *o, const struct rn_FetchResponse *resp)
{
	const struct rn_FetchResponse_PartitionData *pd;

	if (resp->error_code != 0) {
		tool_errx("fetch: %s", tool_err_name(
		    (rd_kafka_resp_err_t)resp->error_code));
		return NULL;
	}
	if (resp->responses_count != 1 ||
	    resp->responses[0].partitions_count != 1 ||
	    resp->responses[0].partitions[0].partition_index !=
	    o->partition) {
		tool_errx("a fetch response that is not for partition %d",
		    (int)o->partition);
		return NULL;
	}
	pd = &resp->responses[0].partitions[0];
	if (pd->error_code != 0) {
		tool_errx("fetch of %s-%d: %s", o->topic, (int)o->partition,
		    tool_err_name((rd_kafka_resp_err_t)pd->error_code));
		return NULL;
	}
	return pd;
}

/* The log's high watermark, asked once with a small blocking fetch. */
static int
probe_high_watermark(struct fetch_run *run)
{
	struct rn_FetchRequest req;
	struct rn_FetchRequest_FetchTopic t;
	struct rn_FetchRequest_FetchPartition p;
	struct rn_FetchResponse resp;
	const struct rn_FetchResponse_PartitionData *pd;
	struct rn_arena arena;
	char err[256];
	int rc = -1;

	rn_arena_init(&arena, 0);
	fetch_request(run->o, run->o->from_offset, 0, &req, &t, &p);
	p.partition_max_bytes = 1; /* a batch at most: only the watermark */
	if (tkc_call_api(run->rcs[0].fd, RN_KAPI_FETCH, run->ver, &req,
	    &arena, &resp, (int)run->o->timeout_ms, err, sizeof(err)) != 0)
		tool_errx("fetch: %s", err);
	else if ((pd = the_partition(run->o, &resp)) != NULL) {
		run->high_watermark = pd->high_watermark;
		rc = 0;
	}
	rn_arena_free(&arena);
	return rc;
}

/* Encode the next fetch of fc into its writer and start writing it. */
static int
send_fetch(struct fetch_run *run, struct fetch_conn *fc)
{
	struct rn_FetchRequest req;
	struct rn_FetchRequest_FetchTopic t;
	struct rn_FetchRequest_FetchPartition p;
	ssize_t k;

	if (!fc->sending) {
		fetch_request(run->o, fc->next, 500, &req, &t, &p);
		rn_kwriter_reset(&fc->w);
		if (rn_kframe_request(&fc->w, -1, RN_KAPI_FETCH, run->ver,
		    fc->rc->next_corr, "runnel-perf", &req, NULL, 0) != 0) {
			tool_errx("cannot encode a fetch request");
			return -1;
		}
		fc->sending = true;
		fc->out_off = 0;
		fc->from = fc->next;
	}
	k = raw_write(fc->rc->fd, fc->w.buf + fc->out_off,
	    fc->w.len - fc->out_off);
	if (k < 0) {
		tool_errx("sending a fetch request: %s", strerror(errno));
		return -1;
	}
	fc->out_off += (size_t)k;
	if (fc->out_off == fc->w.len) {
		fc->sending = false;
		fc->rc->next_corr++;
		fc->rc->inflight = 1;
	}
	return 0;
}

/* One whole batch of the records read: count what is in fc's range. */
static int
take_batch(struct fetch_run *run, struct fetch_conn *fc, const uint8_t *b,
    size_t *size)
{
	struct rn_batch_header h;
	int64_t lo, hi;

	rn_batch_parse_header(b, &h);
	if (h.magic != RN_BATCH_MAGIC_V2 || h.batch_length <
	    RN_BATCH_HEADER_SIZE - RN_BATCH_LOG_OVERHEAD ||
	    h.last_offset_delta < 0) {
		tool_errx("fetch: not a record batch at offset %lld",
		    (long long)fc->next);
		return -1;
	}
	*size = rn_batch_total_size(&h);
	if (*size > fc->records_left)
		return 0; /* cut by the size limit: fetched again */
	lo = h.base_offset > fc->next ? h.base_offset : fc->next;
	hi = rn_batch_last_offset(&h) + 1;
	if (hi > fc->end)
		hi = fc->end;
	if (hi > lo) {
		raw_stats_add(&run->st, run->o, (long)(hi - lo),
		    (double)*size, (double)*size);
		fc->next = hi;
	}
	return 0;
}

/*
 * The head of a response (p, n bytes of it so far), up to its records:
 * the bytes it takes, 0 when more are needed, -1 after saying why.
 */
static long
parse_head(struct fetch_run *run, struct fetch_conn *fc, const uint8_t *p,
    size_t n)
{
	const struct raw_opts *o = run->o;
	bool flex = run->ver >= 12;
	struct rn_kreader r;
	int32_t corr, i, aborted;
	int16_t err = 0, perr;
	int32_t records;

	rn_kreader_init(&r, p, n);
	(void)rn_kresponse_header_decode(&r, rn_kapi_response_header_version(
	    RN_KAPI_FETCH, run->ver), &corr);
	(void)rn_kr_int32(&r); /* throttle_time_ms */
	if (run->ver >= 7) {
		err = rn_kr_int16(&r);
		(void)rn_kr_int32(&r); /* session_id */
	}
	if (rn_kr_len(&r, flex, true, false) != 1 && !r.err)
		goto bad;
	(void)rn_kr_string(&r, flex, false);
	if (rn_kr_len(&r, flex, true, false) != 1 && !r.err)
		goto bad;
	if (rn_kr_int32(&r) != o->partition && !r.err)
		goto bad;
	perr = rn_kr_int16(&r);
	fc->high_watermark = rn_kr_int64(&r);
	(void)rn_kr_int64(&r); /* last_stable_offset */
	if (run->ver >= 5)
		(void)rn_kr_int64(&r); /* log_start_offset */
	aborted = rn_kr_len(&r, flex, true, true);
	for (i = 0; i < aborted && !r.err; i++) {
		(void)rn_kr_int64(&r);
		(void)rn_kr_int64(&r);
		if (flex)
			rn_kr_skip_tags(&r);
	}
	if (run->ver >= 11)
		(void)rn_kr_int32(&r); /* preferred_read_replica */
	records = rn_kr_len(&r, flex, true, true);
	if (r.err) {
		/* cut short: more to come, unless the whole frame is here */
		if (n < fc->frame_left && n < STREAM_BUF / 2)
			return 0;
		goto bad;
	}
	if (corr != fc->rc->want_corr || fc->rc->inflight == 0)
		goto bad;
	if (err != 0 || perr != 0) {
		tool_errx("fetch of %s-%d: %s", o->topic, (int)o->partition,
		    tool_err_name((rd_kafka_resp_err_t)(err ? err : perr)));
		return -1;
	}
	fc->records_len = fc->records_left = records > 0 ? (size_t)records : 0;
	if (fc->records_left > fc->frame_left - (size_t)(r.p - p))
		goto bad;
	return (long)(r.p - p);
bad:
	tool_errx("a fetch response that is not the answer to request %d "
	    "for %s-%d", fc->rc->want_corr, o->topic, (int)o->partition);
	return -1;
}

/* A whole response taken: done with the range, or fetch on. */
static int
response_done(struct fetch_run *run, struct fetch_conn *fc)
{
	fc->rc->want_corr++;
	fc->rc->inflight = 0;
	run->last_progress_ns = rn_now_ns();
	if (fc->next >= fc->end || fc->next >= fc->high_watermark)
		fc->done = true; /* the range read, or the log ends early */
	else if (fc->next == fc->from && fc->records_len > 0) {
		tool_errx("fetch: no whole batch at offset %lld within "
		    "--fetch-max-bytes %ld", (long long)fc->from,
		    run->o->fetch_max_bytes);
		return -1;
	}
	return 0;
}

/* One step through the response at p (n bytes): the bytes it took, 0
 * when it needs more, -1 after saying why. */
static long
step(struct fetch_run *run, struct fetch_conn *fc, const uint8_t *p,
    size_t n)
{
	int32_t max = (int32_t)(run->o->fetch_max_bytes + RESPONSE_SLACK);
	size_t k;
	long used = 0;

	switch (fc->stage) {
	case ST_SIZE:
		if (n < 4)
			return 0;
		if ((used = rn_kframe_size(p, max)) < 0) {
			tool_errx("a fetch response larger than "
			    "--fetch-max-bytes allows");
			return -1;
		}
		fc->frame_left = (size_t)used;
		fc->stage = ST_HEAD;
		return 4;
	case ST_HEAD:
		used = parse_head(run, fc, p, n < fc->frame_left ? n :
		    fc->frame_left);
		if (used > 0)
			fc->stage = ST_RECORDS;
		break;
	case ST_RECORDS:
		if (fc->skip == 0) {
			if (fc->records_left < RN_BATCH_HEADER_SIZE)
				fc->skip = fc->records_left;
			else if (n < RN_BATCH_HEADER_SIZE)
				return 0;
			else if (take_batch(run, fc, p, &k) != 0)
				return -1;
			else
				fc->skip = k < fc->records_left ? k :
				    fc->records_left;
		}
		used = (long)(n < fc->skip ? n : fc->skip);
		fc->skip -= (size_t)used;
		fc->records_left -= (size_t)used;
		break;
	case ST_TAIL:
		used = (long)(n < fc->frame_left ? n : fc->frame_left);
		break;
	}
	if (used > 0)
		fc->frame_left -= (size_t)used;
	return used;
}

/* Move on once the records or the response are all taken. */
static int
settle(struct fetch_run *run, struct fetch_conn *fc)
{
	if (fc->stage == ST_RECORDS && fc->records_left == 0)
		fc->stage = ST_TAIL;
	if (fc->stage == ST_TAIL && fc->frame_left == 0) {
		fc->stage = ST_SIZE;
		return response_done(run, fc);
	}
	return 0;
}

/* Take what is in fc's buffer; the bytes of a step cut short stay. */
static int
take(struct fetch_run *run, struct fetch_conn *fc)
{
	size_t off = 0;
	long used;

	while ((used = step(run, fc, fc->buf + off, fc->len - off)) > 0) {
		off += (size_t)used;
		if (settle(run, fc) != 0)
			return -1;
	}
	if (used < 0)
		return -1;
	memmove(fc->buf, fc->buf + off, fc->len - off);
	fc->len -= off;
	return 0;
}

/* Read what came on fc and fetch again when a response is in. */
static int
pump(struct fetch_run *run, struct fetch_conn *fc)
{
	for (;;) {
		ssize_t k = read(fc->rc->fd, fc->buf + fc->len,
		    STREAM_BUF - fc->len);

		if (k == 0 || (k < 0 && errno != EAGAIN && errno != EINTR)) {
			tool_errx("reading fetch responses: %s", k == 0 ?
			    "the broker closed the connection" :
			    strerror(errno));
			return -1;
		}
		if (k < 0)
			break;
		fc->len += (size_t)k;
		if (take(run, fc) != 0)
			return -1;
		if (fc->len == STREAM_BUF) {
			tool_errx("a fetch response whose head does not fit "
			    "%d bytes", STREAM_BUF);
			return -1;
		}
	}
	if (!fc->done && (fc->rc->inflight == 0 || fc->sending))
		return send_fetch(run, fc);
	return 0;
}
static bool
all_done(const struct fetch_run *run)
{
	for (long i = 0; i < run->o->connections; i++)
		if (!run->conns[i].done)
			return false;
	return true;
}

static int
event_loop(struct fetch_run *run, int epfd)
{
	struct epoll_event ev[64];

	for (long i = 0; i < run->o->connections; i++)
		if (!run->conns[i].done && send_fetch(run, &run->conns[i]) != 0)
			return -1;
	while (!all_done(run) && !raw_interrupted) {
		int n = epoll_wait(epfd, ev, 64, 100);

		for (int i = 0; i < n; i++)
			if (pump(run, ev[i].data.ptr) != 0)
				return -1;
		if (rn_now_ns() - run->last_progress_ns >
		    run->o->timeout_ms * 1000000L) {
			tool_errx("no fetch response for %ld ms",
			    run->o->timeout_ms);
			return -1;
		}
	}
	return 0;
}

/* Cut [from, end) into one range per connection. */
static void
split_ranges(struct fetch_run *run, int64_t end)
{
	long c = run->o->connections;
	int64_t from = run->o->from_offset, span = end - from;

	for (long i = 0; i < c; i++) {
		struct fetch_conn *fc = &run->conns[i];

		fc->next = from + span * i / c;
		fc->end = from + span * (i + 1) / c;
		fc->done = fc->next >= fc->end;
	}
}

int
raw_fetch_run(const struct raw_opts *o)
{
	struct fetch_run run;
	int epfd = -1, ret = TOOL_EXIT_FAIL;
	int64_t end;
	long i;

	memset(&run, 0, sizeof(run));
	run.o = o;
	if ((run.rcs = raw_conns_open(o, RN_KAPI_FETCH, 4, 12,
	    &run.ver)) == NULL || (run.conns = calloc((size_t)
	    o->connections, sizeof(*run.conns))) == NULL)
		goto err;
	for (i = 0; i < o->connections; i++) {
		run.conns[i].rc = &run.rcs[i];
		if ((run.conns[i].buf = malloc(STREAM_BUF)) == NULL)
			goto err;
	}
	if (probe_high_watermark(&run) != 0 ||
	    (epfd = epoll_create1(EPOLL_CLOEXEC)) < 0)
		goto err;
	end = run.high_watermark;
	if (o->num_records && o->from_offset + o->num_records < end)
		end = o->from_offset + o->num_records;
	split_ranges(&run, end);
	for (i = 0; i < o->connections; i++) {
		struct epoll_event ev = { EPOLLIN | EPOLLOUT | EPOLLET,
		    { .ptr = &run.conns[i] } };

		if (epoll_ctl(epfd, EPOLL_CTL_ADD, run.conns[i].rc->fd,
		    &ev) != 0)
			goto err;
	}
	raw_stats_start(&run.st);
	run.last_progress_ns = run.st.start_ns;
	if (event_loop(&run, epfd) == 0 && !raw_interrupted &&
	    (o->num_records == 0 || run.st.records >= o->num_records))
		ret = TOOL_EXIT_OK;
	else if (o->num_records && run.st.records < o->num_records)
		tool_errx("read %ld of %ld records (high watermark %lld)",
		    run.st.records, o->num_records,
		    (long long)run.high_watermark);
	raw_stats_print(&run.st, o, "raw-consumer", "");
err:
	if (epfd >= 0)
		close(epfd);
	for (i = 0; run.conns != NULL && i < o->connections; i++) {
		rn_kwriter_free(&run.conns[i].w);
		free(run.conns[i].buf);
	}
	free(run.conns);
	raw_conns_close(run.rcs, o->connections);
	return ret;
}
