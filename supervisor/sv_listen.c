/*
 * Binding is the supervisor's: it may need privileges for low ports, and
 * bound sockets survive a network worker's restart, so clients only see
 * their own connection drop, never a refused connect.
 */
#include "autoconf.h"

#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "common/log.h"
#include "common/util.h"
#include "supervisor/sv.h"

static int
bind_one(const struct rn_listener *l)
{
	struct addrinfo hints, *res, *ai;
	char port[8];
	int fd = -1, on = 1, rc;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	snprintf(port, sizeof(port), "%u", l->port);
	if ((rc = getaddrinfo(l->host[0] ? l->host : NULL, port, &hints,
	    &res)) != 0) {
		log_errx("listener %s: cannot resolve '%s': %s", l->name,
		    l->host, gai_strerror(rc));
		return -1;
	}
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK |
		    SOCK_CLOEXEC, ai->ai_protocol);
		if (fd == -1)
			continue;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 &&
		    listen(fd, 1024) == 0)
			break;
		rc = errno;
		close(fd);
		fd = -1;
		errno = rc;
	}
	freeaddrinfo(res);
	if (fd == -1)
		log_errx("listener %s: cannot listen on %s:%u: %s", l->name,
		    l->host, l->port, strerror(errno));
	return fd;
}

int
sv_listeners_bind(struct sv *sv)
{
	int i, fd;

	for (i = 0; i < sv->cfg.n_listeners; i++) {
		const struct rn_listener *l = &sv->cfg.listeners[i];

		if ((fd = bind_one(l)) == -1)
			return -1;
		sv->env.listen[i].fd = fd;
		sv->env.listen[i].listener = i;
		sv->env.listen[i].controller =
		    rn_config_is_controller_listener(&sv->cfg, l->name);
		sv->env.n_listen = i + 1;
		log_info("listening on %s://%s:%u", l->name, l->host, l->port);
	}
	return 0;
}
