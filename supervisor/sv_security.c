/*
 * TLS contexts and SASL users of the client listeners, built once at
 * start from the config and the key files, while the supervisor still
 * has the privileges to read them (a root-started node's workers run as
 * supervisor.user and might not). Workers inherit them through fork();
 * only the network workers keep them (workers/worker.c).
 */
#include "autoconf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/ssl.h>

#include "common/log.h"
#include "common/sasl_config.h"
#include "common/ssl_config.h"
#include "supervisor/sv.h"

int
sv_security_load(struct sv *sv)
{
	const struct rn_config *cfg = &sv->cfg;
	char err[512], what[256];
	int i;

	for (i = 0; i < cfg->n_listeners; i++) {
		const struct rn_listener *l = &cfg->listeners[i];
		struct rn_listen_sec *s = &sv->env.sec[i];

		if (RN_SEC_TLS(l->proto)) {
			if ((s->ssl_ctx = rn_ssl_ctx_new(cfg, l->name, err,
			    sizeof(err))) == NULL) {
				log_errx("configuration: listener %s (%s): %s",
				    l->name, rn_secproto_name(l->proto), err);
				return -1;
			}
			rn_ssl_ctx_describe(cfg, l->name, what, sizeof(what));
			log_info("listener %s: TLS, %s", l->name, what);
		}
		if (RN_SEC_SASL(l->proto)) {
			if ((s->sasl = calloc(1, sizeof(*s->sasl))) == NULL ||
			    rn_sasl_cfg_load(cfg, l->name, s->sasl, err,
			    sizeof(err)) != 0) {
				log_errx("configuration: listener %s (%s): %s",
				    l->name, rn_secproto_name(l->proto),
				    s->sasl == NULL ? "out of memory" : err);
				return -1;
			}
			log_info("listener %s: SASL %s, %d user(s)", l->name,
			    s->sasl->mech_list, s->sasl->n_users);
		}
	}
	return 0;
}
