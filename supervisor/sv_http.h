/*
 * The metrics endpoint (metrics.listener=http://host:port): plain
 * HTTP/1.1, GET /metrics only, connections kept alive between requests,
 * served by the supervisor's loop. Never on a Kafka listener.
 */
#ifndef SV_HTTP_H
#define SV_HTTP_H

#include <poll.h>

#define SV_HTTP_MAX_CONNS 8
#define SV_HTTP_MAX_REQUEST 8192

struct sv;

/* 0 (also when metrics.listener is unset) or -errno; logs why. */
int sv_http_open(struct sv *sv);
/* Close the listener and every connection (also in a forked worker). */
void sv_http_close(void);
/* The listener and the connections to poll; how many pfds were used. */
/* upgrade: the listener's fd, serving one passed in, not accepting */
int sv_http_listener(void);
void sv_http_adopt(int fd);
void sv_http_pause(void);
int sv_http_pollfds(struct pollfd *pfd, int max);
void sv_http_handle(struct sv *sv, const struct pollfd *pfd, int n);

#endif /* SV_HTTP_H */
