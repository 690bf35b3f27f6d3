#ifndef SV_CONTROL_H
#define SV_CONTROL_H

#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <msgpack.h>

#define SV_CONTROL_MAX_CONNS 16

struct sv;

struct sv_conn {
	int fd;
	uid_t uid;
	pid_t pid;
	int64_t opened_ms;      /* when the request being read began */
	uint64_t gen;           /* which connection of this slot */
	char hdr[4];
	char *buf;      /* request body once the length is known */
	size_t have;    /* bytes received, header included */
	size_t need;    /* 4 + body length */
	/* a reply larger than the socket takes at once (metrics): the
	 * rest, sent as the peer reads; no request is read meanwhile */
	char *out;
	size_t out_len, out_off;
	int64_t out_ms;         /* when it began to wait */
};

int sv_control_pollfds(struct pollfd *pfd, int max);
void sv_control_handle(struct sv *sv, const struct pollfd *pfd, int n);
/* sv_status.c: the status reply, shared by the control socket and STATUS= */
void sv_control_pack_status(struct sv *sv, msgpack_packer *pk);
/* the observed brokers of the metadata image (runnel-cluster list) */
void sv_control_pack_brokers(struct sv *sv, msgpack_packer *pk);

#endif /* SV_CONTROL_H */
