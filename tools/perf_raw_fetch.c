/*
 * runnel-perf raw-consumer: Fetch requests for one partition from
 * --from-offset to the log end (or --num-records), each response read
 * into the connection's reused buffer and discarded. Only the batch
 * headers are read, to count records and find the next offset (after
 * the last whole batch). The next offset comes from the response, so a
 * connection has one fetch in flight; --connections C splits the offsets
 * into C ranges read side by side.
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

struct fetch_conn {
	struct raw_conn rc;
	int64_t next, end;      /* this connection's range still to read */
	struct rn_kwriter w;    /* the request being written */
	bool sending;           /* w holds a request not all written */
	size_t out_off;
	bool done;
};

struct fetch_run {
	const struct raw_opts *o;
	struct fetch_conn *conns;
	struct raw_stats st;
	struct rn_arena arena;
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
	if (tkc_call_api(run->conns[0].rc.fd, RN_KAPI_FETCH, run->ver, &req,
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
		    fc->rc.next_corr, "runnel-perf", &req, NULL, 0) != 0) {
			tool_errx("cannot encode a fetch request");
			return -1;
		}
		fc->sending = true;
		fc->out_off = 0;
	}
	k = raw_write(fc->rc.fd, fc->w.buf + fc->out_off,
	    fc->w.len - fc->out_off);
	if (k < 0) {
		tool_errx("sending a fetch request: %s", strerror(errno));
		return -1;
	}
	fc->out_off += (size_t)k;
	if (fc->out_off == fc->w.len) {
		fc->sending = false;
		fc->rc.next_corr++;
		fc->rc.inflight = 1;
	}
	return 0;
}

/*
 * Count the whole batches of records read from fc->next and move it past
 * the last of them. 0, or -1 after saying why (not batches, or no whole
 * batch fits --fetch-max-bytes).
 */
static int
take_records(struct fetch_run *run, struct fetch_conn *fc,
    const uint8_t *rec, size_t len, int64_t high_watermark)
{
	int64_t from = fc->next;
	size_t off = 0;

	while (len - off >= RN_BATCH_HEADER_SIZE) {
		struct rn_batch_header h;
		int64_t lo, hi;
		size_t size;

		rn_batch_parse_header(rec + off, &h);
		if (h.magic != RN_BATCH_MAGIC_V2 || h.batch_length <
		    RN_BATCH_HEADER_SIZE - RN_BATCH_LOG_OVERHEAD ||
		    h.last_offset_delta < 0) {
			tool_errx("fetch: not a record batch at offset %lld",
			    (long long)fc->next);
			return -1;
		}
		size = rn_batch_total_size(&h);
		if (size > len - off)
			break; /* cut by the size limit: fetched again */
		lo = h.base_offset > fc->next ? h.base_offset : fc->next;
		hi = rn_batch_last_offset(&h) + 1;
		if (hi > fc->end)
			hi = fc->end;
		if (hi > lo) {
			raw_stats_add(&run->st, run->o, (long)(hi - lo),
			    (double)size, (double)size);
			fc->next = hi;
		}
		off += size;
	}
	if (fc->next >= fc->end || fc->next >= high_watermark)
		fc->done = true; /* the range read, or the log ends early */
	else if (fc->next == from && len > 0) {
		tool_errx("fetch: no whole batch at offset %lld within "
		    "--fetch-max-bytes %ld", (long long)from,
		    run->o->fetch_max_bytes);
		return -1;
	}
	return 0;
}

static int
on_response(struct fetch_run *run, struct fetch_conn *fc,
    const uint8_t *frame, size_t size)
{
	const struct rn_FetchResponse_PartitionData *pd;
	struct rn_FetchResponse resp;
	struct rn_kreader r;

	rn_arena_reset(&run->arena);
	if (fc->rc.inflight == 0 || rn_kframe_response(&r, frame, size, -1,
	    RN_KAPI_FETCH, run->ver, fc->rc.want_corr) != 0 ||
	    rn_FetchResponse_decode(&r, run->ver, &run->arena, &resp) != 0) {
		tool_errx("a fetch response that is not the answer to "
		    "request %d", fc->rc.want_corr);
		return -1;
	}
	fc->rc.want_corr++;
	fc->rc.inflight = 0;
	if ((pd = the_partition(run->o, &resp)) == NULL)
		return -1;
	run->last_progress_ns = rn_now_ns();
	return take_records(run, fc, pd->records.ptr,
	    pd->records.len > 0 ? (size_t)pd->records.len : 0,
	    pd->high_watermark);
}

/* Read what came on fc and fetch again when a response is in. */
static int
pump(struct fetch_run *run, struct fetch_conn *fc)
{
	int32_t max = (int32_t)(run->o->fetch_max_bytes + RESPONSE_SLACK);
	int rc;

	while ((rc = raw_read(&fc->rc)) == 1) {
		const uint8_t *frame;
		size_t off = 0, size;
		int got;

		while ((got = rn_kfb_next(&fc->rc.in, &off, max, &frame,
		    &size)) == 1)
			if (on_response(run, fc, frame, size) != 0)
				return -1;
		if (got < 0) {
			tool_errx("a fetch response larger than "
			    "--fetch-max-bytes allows");
			return -1;
		}
		rn_kfb_consume(&fc->rc.in, off);
	}
	if (rc < 0) {
		tool_errx("reading fetch responses: %s", errno == ENOTCONN ?
		    "the broker closed the connection" : strerror(errno));
		return -1;
	}
	if (!fc->done && (fc->rc.inflight == 0 || fc->sending))
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
	rn_arena_init(&run.arena, 1 << 20); /* a response decodes into it */
	if ((run.conns = calloc((size_t)o->connections,
	    sizeof(*run.conns))) == NULL)
		goto err;
	for (i = 0; i < o->connections; i++)
		run.conns[i].rc.fd = -1;
	for (i = 0; i < o->connections; i++)
		if (raw_connect(o, &run.conns[i].rc) != 0)
			goto err;
	if (raw_api_version(o, &run.conns[0].rc, RN_KAPI_FETCH, 4, 12,
	    &run.ver) != 0 || probe_high_watermark(&run) != 0 ||
	    (epfd = epoll_create1(EPOLL_CLOEXEC)) < 0)
		goto err;
	end = run.high_watermark;
	if (o->num_records && o->from_offset + o->num_records < end)
		end = o->from_offset + o->num_records;
	split_ranges(&run, end);
	for (i = 0; i < o->connections; i++) {
		struct epoll_event ev = { EPOLLIN | EPOLLOUT | EPOLLET,
		    { .ptr = &run.conns[i] } };

		if (epoll_ctl(epfd, EPOLL_CTL_ADD, run.conns[i].rc.fd,
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
		raw_conn_close(&run.conns[i].rc);
		rn_kwriter_free(&run.conns[i].w);
	}
	free(run.conns);
	rn_arena_free(&run.arena);
	return ret;
}
