/*
 * The network worker's internals: connections, the event loop, and one
 * handler per Kafka API. Each connection has at most one request being
 * handled at a time (as Kafka mutes a channel), so responses leave in
 * request order; later requests wait in the read buffer.
 */
#ifndef RN_NET_H
#define RN_NET_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "protocol/kcodec.h"
#include "protocol/kmsg_gen.h"
#include "workers/partition/partition.h"
#include "workers/replquota.h"
#include "workers/worker.h"
#include "common/acl.h"
#include "ipc/mdimage.h"
#include "ipc/wakeset.h"
#include "ipc/metrics.h"

struct net;
struct conn;
struct ssl_ctx_st;

/* A response on its way out: its encoded bytes and the records it references. */
struct net_out {
	struct net_out *next;
	struct rn_kwriter w;
	struct rn_kchunk *chunks;
	int n_chunks;
	int cur;                 /* chunk being sent */
	size_t cur_off;          /* bytes of it already sent */
	struct rn_log_slice *slices; /* released once sent */
	struct rn_part **slice_parts;
	int n_slices;
	/* a timed request's: its frame complete, handled, parked (0: never)
	 * and its response queued; ready_us 0 when not timed (us,
	 * CLOCK_MONOTONIC); its API's histogram index */
	int64_t ready_us, start_us, park_us, queued_us;
	int met_api;
};

struct msgpack_object;
struct msgpack_sbuffer;

enum conn_wait {
	CONN_IDLE = 0,
	CONN_WAIT_FETCH,         /* a fetch parked until data or max.wait.ms */
	CONN_WAIT_CONTROLLER,    /* an admin request forwarded to the controller */
	CONN_WAIT_ACKS,          /* an acks=all produce waiting for the ISR */
	CONN_WAIT_COORDINATOR,   /* a group request forwarded to the coordinator */
	CONN_WAIT_VERIFY,        /* a transactional produce waiting for its
				  * coordinator's verification (KIP-890) */
	CONN_WAIT_AUTH_FAILED,   /* a failed login's answer held back
				  * connection.failed.authentication.delay.ms */
};

/* Where SASL stands on a connection of a SASL listener. */
enum conn_sasl {
	CONN_SASL_HANDSHAKE = 0, /* SaslHandshake expected */
	CONN_SASL_TOKEN,         /* SaslAuthenticate expected (handshake v1) */
	CONN_SASL_RAW,           /* a raw token frame expected (handshake v0) */
};

/* An acks=all partition append (or a transaction marker) waiting for
 * the high watermark: its answer's error code and partition index. */
struct produce_wait {
	int16_t *error_code;
	int32_t partition;
	const struct rn_kstr *topic;
	uint8_t topic_id[16];    /* the topic it was appended to */
	int64_t need;            /* high watermark that commits it */
	bool done;
};

/* One partition a parked fetch waits on: records past offset. */
struct net_watch {
	struct rn_part *p;
	int64_t offset;
};

struct ssl_st;
struct rn_sasl_cfg;
struct sockaddr_storage;

/* What a connection added to the shared counts (connlimit.c). */
struct net_connlim_ticket {
	int listener;            /* cfg listener index */
	bool counted;            /* in the listener's count */
	bool total;              /* in the broker-wide one (not exempt) */
	bool ip;                 /* in its address's count */
	uint8_t addr[16];
};
struct net_scram;
struct net_fsess;

struct conn {
	int fd;
	uint64_t id;
	struct conn *next_all, *prev_all;
	uint32_t ep_events;      /* what epoll watches for it now */
	/* on n->parked while a request waits (wait != CONN_IDLE) */
	struct conn *next_parked, *prev_parked;
	char peer[64];

	/*
	 * Security: the listener it came in on; TLS (ssl NULL on plaintext
	 * listeners); until authed (the TLS handshake and, on a SASL
	 * listener, a login done) only ApiVersions and the SASL APIs are
	 * taken, frames are capped at sasl.server.max.receive.size, and
	 * all of it must end by auth_deadline_ms (0: none left).
	 */
	int listener;            /* index into cfg->listeners */
	const struct rn_sasl_cfg *sasl; /* NULL: not a SASL listener */
	struct ssl_st *ssl;
	bool tls_done;           /* handshake finished */
	bool tls_ktls;           /* the kernel encrypts sends: SSL_sendfile */
	bool tls_broken;         /* a fatal TLS error: no close_notify */
	bool authed;
	enum conn_sasl sasl_state;
	int64_t auth_deadline_ms;
	char principal[512];     /* "User:alice": what authz.c authorizes */
	struct net_scram *scram; /* a SCRAM exchange under way (scram.c) */
	/* KIP-368 (sasl.c): a request other than a re-authentication after
	 * session_end_ms (0: never) closes the connection */
	int64_t session_end_ms;
	int8_t sasl_mech;        /* the mechanism logged in with (sasl.c) */
	bool reauth_ok;          /* logged in with SaslAuthenticate v1+ */
	bool reauthing;          /* a re-authentication under way */

	/* input: frames accumulate here; grown only as bytes arrive */
	uint8_t *rbuf;
	size_t rlen, rcap;
	size_t frame_off;        /* start of the frame being handled */
	size_t frame_len;        /* its size (without the prefix); 0 if none */
	/* the last read with bytes (its time, where its bytes start in
	 * rbuf) and the one before: when a frame became complete */
	int64_t rx_us, prev_rx_us;
	size_t rx_from;

	/* the request being handled */
	enum conn_wait wait;
	int64_t deadline_ms;
	struct rn_krequest_header hdr;
	struct rn_arena arena;
	void *req;               /* decoded request (in arena) */
	struct rn_arena_mark req_mark; /* the arena after the request */
	uint64_t admin_req;      /* id of the request forwarded to the controller
				  * or the group coordinator */
	void *resp;              /* a response being completed (acks=all) */
	struct produce_wait *pw;
	int n_pw;
	/* a transactional produce's verification (txn_verify.c), by flat
	 * partition index: the guard of each partition verified
	 * (RN_PART_NO_GUARD: not) and the coordinator's verdict */
	int64_t *vguard;
	int16_t *verr;
	int n_verify;
	int64_t vpid;
	int16_t vepoch;
	bool verified;           /* handled again after the verdicts came */
	/* a parked fetch's partitions and offsets, and the image it was
	 * built on: a wake-up looks at these before building again */
	struct net_watch *watch;
	int n_watch, watch_cap;
	uint64_t watch_version;
	/* its incremental fetch session (fetch_session.c), whether the
	 * fetch being answered uses it, the request as decoded and the
	 * arena after it (the answer's own request is built there) */
	struct net_fsess *fsess;
	bool fsess_on;
	const struct rn_FetchRequest *fsess_req;
	struct rn_arena_mark fsess_mark;
	/* the stage histograms' times of the request being handled (us):
	 * frame complete, handled, parked (0: not); ready_us 0: not timed.
	 * met_api: its API's histogram index, -1: none; met_queued: its
	 * response is queued (and timed when written) */
	int64_t ready_us, start_us, park_us;
	int met_api;
	bool met_queued;

	struct net_out *out_head, *out_tail;
	bool want_write;
	bool closing;            /* close once the output drains */
	bool authz_logged;       /* a denial was logged (authz.c) */
	/* an admin request forwarded without its refused items: per item of
	 * c->req, refused (authz_admin.c); NULL: forwarded whole */
	bool *authz_denied;
	struct net_connlim_ticket lim; /* released on close */
	int64_t active_ms;       /* last read or write: connections.max.idle.ms */
	/* a client quota throttled it: no request read before (0: none) */
	int64_t mute_until_ms;
};

#define NET_CONNLIM_OVERRIDES 64

struct rn_connlim_slice;
struct rn_connlim_rates;

/* The connection quotas as this worker applies them (connlimit.c). */
struct net_connlim {
	struct rn_connlim_slice *mine;      /* this worker's counts */
	struct rn_connlim_slice *slices[64]; /* every network worker's */
	unsigned n_slices;
	struct rn_connlim_rates *rates;
	int64_t max_total;                  /* max.connections, INT64_MAX: none */
	int64_t max_listener[RN_CONFIG_MAX_LISTENERS];
	/* us per connection of each listener's creation rate, then the
	 * broker's (0: no limit, -1: rate 0) */
	int64_t interval_us[RN_CONFIG_MAX_LISTENERS + 1];
	bool exempt[RN_CONFIG_MAX_LISTENERS]; /* the inter-broker listener */
	int64_t per_ip;                     /* max.connections.per.ip */
	struct {
		uint8_t addr[16];
		int64_t max;
	} over[NET_CONNLIM_OVERRIDES];
	unsigned n_over;
	bool track_ip;                      /* some address has a limit */
	int64_t idle_ms;                    /* connections.max.idle.ms; <0 none */
	int64_t logged_ms;                  /* rate-limits the closing lines */
	int unlogged;
	bool full_logged;
};


/*
 * A log line strangers can cause at will (before authentication): at
 * most one per NET_LOGRATE_MS, saying how many went unsaid.
 */
struct net_lograte {
	int64_t logged_ms;
	unsigned unsaid;
};
#define NET_LOGRATE_MS 10000

struct net {
	struct rn_worker *w;
	const struct rn_config *cfg;
	int epfd;
	int efd;                 /* this worker's wake-up eventfd */
	uint64_t next_conn_id;
	uint64_t next_admin_id;
	struct conn *conns;      /* all connections */
	struct conn *parked;     /* those with a request parked: woken by an
				  * append without a walk over all */
	struct conn *dead;       /* closed this round, freed after the events */
	unsigned n_conns;
	unsigned conns_peak;     /* most connections since the heap was trimmed */
	int64_t trimmed_ms;
	struct rn_mdview view;
	struct rn_part_table parts;
	struct rn_replquota lquota; /* leader.replication.throttled.rate */
	int net_efds[64];      /* eventfd of each network worker, by index */
	/* the slots marked changed for this worker (ipc/wakeset.h), taken
	 * into changed[] at a wake-up; changed_words[] lists its nonzero
	 * words, for clearing */
	struct rn_wakeset wake;
	uint64_t *changed;
	uint32_t *changed_words;
	/* the incremental fetch sessions of its connections */
	struct net_fsess *fsess;
	unsigned n_fsess;
	uint64_t fsess_parts;    /* partitions they hold */
	int64_t now_ms;
	/* every connection is looked at for its deadlines (network.c) only
	 * when one may be due, not each turn of the loop: a flood of idle
	 * strangers would cost each request of a client then. Whoever sets
	 * a deadline earlier calls net_deadline_soon. */
	int64_t scan_at_ms;
	bool scan_each_turn;     /* TLS bytes wait on a connection not reading */
	int64_t turn_start_us;   /* the last wait's end (stage histograms) */
	int64_t next_retention_ms;
	bool ret_active;         /* a retention pass is under way */
	int ret_topic, ret_part; /* where it stands in the image */
	int64_t next_isr_check_ms;
	bool isr_active;         /* an ISR pass is under way */
	struct rn_part_pass isr_pass;
	int64_t next_hw_checkpoint_ms;
	struct rn_ckpt_pass *hw_ckpt;
	/* the background flush of rolled segments (flush.c), and the
	 * recovery-point checkpoint it makes worth writing */
	bool flush_active;
	struct rn_part_pass flush_pass;
	int64_t next_flush_ms;
	int64_t next_rp_checkpoint_ms;
	struct rn_ckpt_pass *rp_ckpt;
	int64_t accept_resume_ms;  /* out of descriptors: listen again then */
	int64_t accept_warned_ms;
	/* the versions this worker handles, from the codec table, and what
	 * ApiVersions says of them (the same but for Produce's minimum) */
	struct rn_ApiVersionsResponse_ApiVersion *apis, *advertised;
	int n_apis;
	struct rn_ringq_in from_ctl;  /* a fragmented reply being reassembled */
	/*
	 * What a connection does with a whole frame (net_dispatch, wired
	 * by network.c): conn.c calls nothing above it.
	 */
	bool (*dispatch)(struct net *n, struct conn *c);
	/* this node's own registration as the image shows it, cached per
	 * image version and registered epoch (network.c) */
	uint64_t self_view_version;
	int64_t self_epoch;
	bool self_registered, self_unfenced;
	bool serving;            /* the client listeners are being accepted on */
	/* the group coordinator (coord_channel.c) */
	/* security (tls.c, sasl.c) */
	uint8_t *tls_buf;             /* one bounded send buffer per worker */
	int n_apis_plain;             /* n_apis less the SASL ones (last) */
	int64_t auth_fail_delay_ms;   /* connection.failed.authentication.delay.ms */
	int64_t preauth_max;          /* sasl.server.max.receive.size */
	struct net_lograte log_preauth_size;    /* frames over preauth_max */
	struct net_lograte log_preauth_timeout; /* logins not done in time */
	struct rn_ringq to_coord;     /* not yet in the ring to it */
	struct rn_ringq_in from_coord;
	int32_t coord_pid;            /* its pid when last drained */
	int64_t next_offsets_create_ms;
	int64_t next_txn_create_ms;   /* __transaction_state asked for */
	struct rn_authz authz;        /* authz.c */
	struct net_connlim lim;       /* connlimit.c */
	/* a client listener (env index) not accepted from until then
	 * (0: watched as serving says): at a limit, or over a rate */
	int64_t lpause_ms[RN_CONFIG_MAX_LISTENERS];
	bool lwatched[RN_CONFIG_MAX_LISTENERS];
};

/*
 * Does this node lead mp? Only once the image holds this incarnation's
 * own registration, unfenced: a node restarted before its previous
 * incarnation's session expired must not act on the leaderships that
 * incarnation held, with a log that may have lost its unsynced tail
 * (followers asking it where an epoch ends would truncate to it).
 */
bool net_leads(struct net *n, const struct rn_mdv_partition *mp);

/* authz.c: the connection's principal against super.users and the ACLs */
int net_authz_init(struct net *n);
const char *net_principal(const struct conn *c);
/* The peer's address without its port, as ACL hosts are written. */
void net_peer_addr(const struct conn *c, char *out, size_t len);
/* May c do op on the resource? Always, with no authorizer; a denial is
 * logged once per connection. */
bool net_authorized(struct net *n, struct conn *c, int8_t op, int8_t res,
    const char *name, size_t len);
bool net_authorized_cluster(struct net *n, struct conn *c, int8_t op);
/* The same without logging a denial: one of several ways to be allowed. */
bool net_authorized_cluster_quiet(struct net *n, struct conn *c, int8_t op);
/* IDEMPOTENT_WRITE on the cluster, or WRITE on some topic (InitProducerId) */
bool net_authorized_write_somewhere(struct net *n, struct conn *c);
/* False if the request's API checks no ACLs and c is no super user. */
bool net_authz_gate(struct net *n, struct conn *c);
int net_describe_acls(struct net *n, struct conn *c);
int net_create_acls(struct net *n, struct conn *c);
int net_delete_acls(struct net *n, struct conn *c);

/*
 * connlimit.c: the connection quotas. Before accepting on listener l
 * (cfg index): 0, or the ms to wait (a limit or rate reached). After:
 * count the connection, false (nothing counted, logged) if it must be
 * closed at once. Release on close; idempotent.
 */
void net_connlim_init(struct net *n);
int64_t net_connlim_admit_wait(struct net *n, int l);
bool net_connlim_take(struct net *n, int l, const struct sockaddr_storage *ss,
    struct net_connlim_ticket *t);
void net_connlim_release(struct net *n, struct net_connlim_ticket *t);
void net_connlim_addr(const struct sockaddr_storage *ss, uint8_t out[16]);
/* scram_admin.c: DescribeUserScramCredentials from the image, and
 * AlterUserScramCredentials authorized, then forwarded */
int net_describe_scram(struct net *n, struct conn *c);
int net_alter_scram(struct net *n, struct conn *c);

/* conn.c: sockets, framing, the output queue; below dispatch.c */
/* lim: what the connection was counted in (connlimit.c); it is released
 * on close from here on */
struct conn *net_conn_new(struct net *n, int fd, int listener,
    const struct net_connlim_ticket *lim);
void net_conn_close(struct net *n, struct conn *c, const char *why);
void net_conn_reap(struct net *n);
void net_conn_readable(struct net *n, struct conn *c);
void net_conn_writable(struct net *n, struct conn *c);
void net_conn_queue(struct net *n, struct conn *c, struct net_out *o);
/* True: log the line now, *unsaid held back since the last one. */
bool net_lograte_ok(struct net_lograte *r, int64_t now, unsigned *unsaid);
/* A deadline at at_ms: the connections are looked at by then. */
void net_deadline_soon(struct net *n, int64_t at_ms);
/* Park the request being handled until it is settled or deadline_ms. */
void net_conn_park(struct net *n, struct conn *c, enum conn_wait wait,
    int64_t deadline_ms);
/* Finish the request being handled and move to the next one, if any. */
void net_conn_request_done(struct net *n, struct conn *c);
void net_conn_process(struct net *n, struct conn *c);
/* Would it take input now (idle, not held back by unread responses)? */
bool net_conn_wants_input(const struct conn *c);
void net_out_free(struct net *n, struct net_out *o);

/* dispatch.c: a frame to its API handler, and the response back */
/* Handle the frame at c->frame_off; returns false if the connection must close. */
bool net_dispatch(struct net *n, struct conn *c);
/*
 * The ring message that forwards the request being handled to another
 * worker (its header, a fresh request id in c->admin_req, the client id,
 * the peer's host for the group coordinator when host is not NULL, the
 * body as the client sent it) into sb, which the caller destroys.
 */
int net_forward_pack(struct net *n, struct conn *c, const char *host,
    struct msgpack_sbuffer *sb);
/* The same with another body than the client's (a request re-encoded). */
int net_forward_pack_body(struct net *n, struct conn *c, const char *host,
    const void *body, size_t len, struct msgpack_sbuffer *sb);
/*
 * The reply to a request forwarded to another worker (m: {"req", "body"
 * (the encoded response body), "err"}) goes to the connection waiting
 * for it in state wait; a reply without a body closes that connection,
 * so its client asks again.
 */
void net_forwarded_reply(struct net *n, enum conn_wait wait,
    const struct msgpack_object *m, const char *from);
/* Start a response for the request being handled. */
struct net_out *net_out_begin(struct conn *c, size_t *mark);
void net_out_finish(struct net *n, struct conn *c, struct net_out *o,
    size_t mark);
/* Encode resp (the request's own response struct) and queue it. */
int net_respond(struct net *n, struct conn *c, const void *resp);
/* count elements of size bytes from the request's arena (never 0 bytes). */
void *net_array(struct conn *c, int32_t count, size_t size);
/* A topic of the current image by a request's (possibly null) name. */
const struct rn_mdv_topic *net_topic(struct net *n, struct rn_kstr name);
int net_apis_init(struct net *n);
bool net_api_served(const struct net *n, int16_t key, int16_t version);

/* One per API; each queues its response or parks the connection. */
int net_api_versions(struct net *n, struct conn *c);
int net_metadata(struct net *n, struct conn *c);
int net_describe_cluster(struct net *n, struct conn *c);
/* logdirs.c */
int net_describe_log_dirs(struct net *n, struct conn *c);
int net_alter_replica_log_dirs(struct net *n, struct conn *c);
int net_describe_configs(struct net *n, struct conn *c);
/* Has a local partition a log on disk (or open) here? Asking creates none. */
bool net_part_exists(struct net *n, const struct rn_mdv_topic *t,
    const struct rn_mdv_partition *mp);
int net_produce(struct net *n, struct conn *c);
int net_init_producer_id(struct net *n, struct conn *c);
/* acks=all settling shared by Produce and WriteTxnMarkers (produce.c):
 * true when every wait is done; parks the connection's partitions. */
bool net_acks_settled(struct net *n, struct conn *c, bool timed_out);
int32_t net_min_isr(struct net *n, const struct rn_mdv_topic *t);
/* txn_markers.c */
int net_write_txn_markers(struct net *n, struct conn *c);
/* producers.c */
int net_describe_producers(struct net *n, struct conn *c);
int net_fetch(struct net *n, struct conn *c);
int net_list_offsets(struct net *n, struct conn *c);
int net_offset_for_leader_epoch(struct net *n, struct conn *c);
int net_delete_records(struct net *n, struct conn *c);
int net_admin_forward(struct net *n, struct conn *c);
int net_admin_forward_body(struct net *n, struct conn *c, const void *body,
    size_t len);
/* authz_admin.c: the controller's APIs, authorized before forwarding;
 * a reply to a request forwarded with some items refused is merged */
int net_admin_checked(struct net *n, struct conn *c);
int net_admin_merge(struct net *n, struct conn *c, const void *body,
    size_t len);

/* quota.c: count bytes of key (enum rn_cq_key) for c's entity; the
 * throttle time in ms (c is then muted that long), 0 without a quota */
int32_t net_quota_record(struct net *n, struct conn *c, int key,
    int64_t bytes);

/* fetch.c: parked fetches */
void net_fetch_recheck(struct net *n, struct conn *c, bool timed_out);
/* Does c's parked fetch watch a slot set in changed (or keep no watch)? */
bool net_fetch_watches(const struct conn *c, const uint64_t *changed);

/* network.c: parked requests look again; the wake set taken first
 * unless all (a new image: every one) */
void net_wakeup(struct net *n, bool all);

/* fetch_session.c: KIP-227 incremental fetch sessions */
int net_fsess_begin(struct net *n, struct conn *c, int16_t *err);
int net_fsess_effective(struct net *n, struct conn *c, bool first);
void net_fsess_answered(struct conn *c, struct rn_FetchResponse *r,
    const uint8_t *unsent);
void net_fsess_marks(struct net *n, uint32_t nw);
void net_fsess_all(struct net *n);
bool net_fsess_woken(const struct conn *c);
bool net_fsess_full(const struct conn *c);
void net_fsess_free(struct net *n, struct conn *c);

/* produce.c: acks=all waits */
void net_produce_recheck(struct net *n, struct conn *c, bool timed_out);

/* replica.c: the leader's side of replication */
void net_replica_fetched(struct net *n, const struct rn_mdv_topic *t,
    const struct rn_mdv_partition *mp, struct rn_part *p, int32_t replica,
    int64_t fetch_offset, int64_t now_wallclock_ms);
/* Part of a pass proposing laggards out of the ISR of every partition
 * this node leads, until deadline_us; true while the pass goes on. */
bool net_isr_housekeeping(struct net *n, struct rn_part_pass *pass,
    int64_t deadline_us);

/* ctl_channel.c: replies from the controller */
int net_ctl_drain(struct net *n);
void net_auto_create(struct net *n, const struct rn_kstr *names, int count);
int net_alter_partition(struct net *n, const struct rn_mdv_topic *t,
    const struct rn_mdv_partition *mp, const int32_t *isr, int n_isr);

/* coord_channel.c: consumer groups */
int net_find_coordinator(struct net *n, struct conn *c);
/* A marker on a __consumer_offsets partition, told to the coordinator. */
void net_coord_txn_marker(struct net *n, int32_t partition, int64_t pid,
    bool commit);
int net_group_forward(struct net *n, struct conn *c);
/* Queue a message to this node's coordinator worker and wake it. */
int net_coord_send(struct net *n, const void *buf, size_t len);

/* txn_verify.c: KIP-890's verification of transactional writes */
/* Parked for a verification (true), or nothing to verify. */
bool net_produce_verify_start(struct net *n, struct conn *c);
void net_verify_reply(struct net *n, const struct msgpack_object *m);
void net_verify_timeout(struct net *n, struct conn *c);
/* A coordinator's verdict as a Produce answers it; *msg set with it. */
int16_t net_verify_produce_error(int16_t err, struct rn_kstr *msg);
int net_coord_drain(struct net *n);
bool net_coord_pump(struct net *n);

/* Where clients of connection c reach broker b: its listener of the
 * name c came in on, else its default address (metadata.c). */
void net_broker_endpoint(const struct net *n, const struct conn *c,
    const struct rn_mdv_broker *b, const char **host, uint16_t *port);

/*
 * tls.c: a connection's TLS. The I/O calls behave as read, writev and
 * sendfile on a nonblocking socket: -1 with errno EAGAIN when TLS waits
 * for the socket (either way; net_tls_wants_write says which).
 */
#define NET_TLS_HANDSHAKE_MS 10000
#define NET_TLS_BUF (64 * 1024)
int net_tls_start(struct net *n, struct conn *c, struct ssl_ctx_st *ctx);
/* 1 done, 0 not yet (see net_tls_wants_write), -1 failed (logged) */
int net_tls_handshake(struct net *n, struct conn *c);
bool net_tls_wants_write(const struct conn *c);
ssize_t net_tls_read(struct conn *c, void *buf, size_t len);
ssize_t net_tls_writev(struct net *n, struct conn *c,
    const struct iovec *iov, int niov);
ssize_t net_tls_sendfile(struct net *n, struct conn *c, int fd, off_t off,
    size_t len);
/* Decrypted bytes OpenSSL holds that epoll cannot see. */
bool net_tls_pending(const struct conn *c);
void net_tls_free(struct conn *c);

/* sasl.c: SaslHandshake, SaslAuthenticate, the raw tokens of v0 */
int net_sasl_handshake(struct net *n, struct conn *c);
int net_sasl_authenticate(struct net *n, struct conn *c);
/* The frame at c->frame_off is a raw token (after a v0 handshake). */
bool net_sasl_raw_token(struct net *n, struct conn *c);
/* A held-back failed login: answer it now and close. */
void net_sasl_fail_now(struct net *n, struct conn *c);
/* May this request be taken before authentication? */
bool net_sasl_preauth_ok(const struct conn *c, int16_t api_key);
/* Is c's SASL session still good for this request (KIP-368)? False
 * after logging why the connection is closed. */
bool net_sasl_session_ok(struct net *n, const struct conn *c, int16_t api_key);

/* scram.c: the server side of SCRAM-SHA-256/512 */
enum {
	NET_SCRAM_NEXT,          /* out holds the server-first */
	NET_SCRAM_DONE,          /* out holds the server-final; c is authed */
	NET_SCRAM_FAILED,        /* bad credentials (logged) */
	NET_SCRAM_MALFORMED,     /* not SCRAM (logged) */
};
#define NET_SCRAM_OUT_MAX 2048
/* 0, or -1 when out of memory. */
int net_scram_start(struct conn *c, int mech);
void net_scram_free(struct conn *c);
/* One client message of len bytes; the exchange is freed once it ends. */
int net_scram_step(struct net *n, struct conn *c, const uint8_t *tok,
    size_t len, char *out, size_t outmax, size_t *outlen);

/* Map a storage error to a Kafka error code. */
int16_t net_storage_kerr(int rc);

/* net_metrics.c: the counters in shared memory (ipc/metrics.h) */
void net_count_in(struct net *n, const struct rn_part *p, int64_t records,
    int64_t bytes);
void net_count_out(struct net *n, const struct rn_part *p, size_t bytes);
void net_count_request(struct net *n, int16_t api_key);
void net_count_isr(struct net *n);
void net_count_conns(struct net *n);
void net_count_fsess(struct net *n);
/* One sample of us microseconds in this worker's histogram of stage. */
void net_stage(struct net *n, enum rn_met_stage stage, int64_t us);
/* A timed request's RequestMetrics stages, from its times (us; park 0:
 * never parked) and when its response's last byte was written. */
void net_request_timed(struct net *n, int api, int64_t ready, int64_t start,
    int64_t park, int64_t queued, int64_t sent);
/* keyless.c: is the topic compacted; does a payload hold a record without
 * a key (1), none (0), or a batch that cannot be opened (-EBADMSG)? */
bool net_policy_compact(struct net *n, const struct rn_mdv_topic *t);
int net_keyless_record(const uint8_t *buf, size_t len);

#endif /* RN_NET_H */
