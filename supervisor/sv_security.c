/*
 * TLS contexts and SASL users of the client listeners, built once at
 * start from the config and the key files, while the supervisor still
 * has the privileges to read them (a root-started node's workers run as
 * supervisor.user and might not), and how this node logs in to its
 * peers. Workers inherit them through fork(); only the network workers
 * and (the peer login) the replica fetchers keep them (workers/worker.c).
 *
 * runnelctl reload reads the key and trust files again: every TLS
 * listener's context is built anew and checked, and only when all are
 * good do they replace the old ones, for the network workers forked from
 * then on (sv_control.c then replaces the running ones one by one).
 */
#include "autoconf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/ssl.h>
#include <openssl/x509.h>

#include "common/log.h"
#include "common/principal_map.h"
#include "common/sasl_config.h"
#include "common/ssl_config.h"
#include "supervisor/sv.h"
#include "workers/secure_client.h"

/*
 * How the replica fetchers log in to the leaders: the inter-broker
 * listener's TLS trust and this node's SASL credentials, as a Kafka
 * broker takes them (sasl.mechanism.inter.broker.protocol and the
 * listener's JAAS username/password).
 */
static int
sv_security_load_peers(struct sv *sv)
{
	const struct rn_config *cfg = &sv->cfg;
	const struct rn_listener *l;
	char err[512], what[256];

	if (!(cfg->roles & RN_ROLE_BROKER) ||
	    (l = rn_config_listener(cfg, cfg->inter_broker_listener_name)) ==
	    NULL || l->proto == RN_SEC_PLAINTEXT)
		return 0;
	if ((sv->env.ib_client = calloc(1, sizeof(*sv->env.ib_client))) ==
	    NULL || rn_secc_cfg_load(cfg, l->name,
	    "sasl.mechanism.inter.broker.protocol", sv->env.ib_client, err,
	    sizeof(err)) != 0) {
		log_errx("configuration: inter-broker listener %s (%s): %s",
		    l->name, rn_secproto_name(l->proto),
		    sv->env.ib_client == NULL ? "out of memory" : err);
		free(sv->env.ib_client);
		sv->env.ib_client = NULL;
		return -1;
	}
	rn_secc_cfg_describe(sv->env.ib_client, what, sizeof(what));
	log_info("replica fetchers reach listener %s with %s", l->name, what);
	return 0;
}

/*
 * How the controller worker logs in to the controllers (raft between
 * voters, the broker agent): the controller listener's TLS trust and
 * this node's credentials (sasl.mechanism.controller.protocol, PLAIN,
 * and the listener's JAAS username/password).
 */
static int
sv_security_load_controllers(struct sv *sv)
{
	const struct rn_config *cfg = &sv->cfg;
	const char *name = cfg->controller_listener_names[0];
	char err[512], what[256];

	const char *mech = rn_config_static(cfg,
	    "sasl.mechanism.controller.protocol");

	if (cfg->n_controller_listener_names == 0 ||
	    rn_config_listener_proto(cfg, name) == RN_SEC_PLAINTEXT)
		return 0;
	if (mech != NULL && strcmp(mech, "PLAIN") != 0) {
		log_errx("configuration: invalid value '%s' for "
		    "sasl.mechanism.controller.protocol: the controller "
		    "listener takes PLAIN only (SCRAM credentials live in the "
		    "metadata log the controllers serve)", mech);
		return -1;
	}
	if ((sv->env.ctl_client = calloc(1, sizeof(*sv->env.ctl_client))) ==
	    NULL || rn_secc_cfg_load(cfg, name,
	    "sasl.mechanism.controller.protocol", sv->env.ctl_client, err,
	    sizeof(err)) != 0) {
		log_errx("configuration: controller listener %s: %s", name,
		    sv->env.ctl_client == NULL ? "out of memory" : err);
		free(sv->env.ctl_client);
		sv->env.ctl_client = NULL;
		return -1;
	}
	rn_secc_cfg_describe(sv->env.ctl_client, what, sizeof(what));
	log_info("controller connections to listener %s use %s", name, what);
	return 0;
}

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
			/* checked on SASL_SSL too; there the SASL login
			 * names the principal, as in Kafka */
			if ((s->pmap = rn_ssl_principal_map_new(cfg, l->name,
			    err, sizeof(err))) == NULL) {
				log_errx("configuration: listener %s (%s): %s",
				    l->name, rn_secproto_name(l->proto), err);
				return -1;
			}
			if (l->proto == RN_SEC_SSL &&
			    !rn_pmap_is_default(s->pmap)) {
				rn_pmap_describe(s->pmap, what, sizeof(what));
				log_info("listener %s: client certificates "
				    "name principals by "
				    "ssl.principal.mapping.rules %s", l->name,
				    what);
			}
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
			if (rn_config_is_controller_listener(cfg, l->name) &&
			    !(s->sasl->mechs & RN_SASL_PLAIN)) {
				log_errx("configuration: controller listener "
				    "%s: sasl.enabled.mechanisms must name "
				    "PLAIN, the one it serves", l->name);
				return -1;
			}
			log_info("listener %s: SASL %s, %d user(s)", l->name,
			    s->sasl->mech_list, s->sasl->n_users);
		}
	}
	return sv_security_load_peers(sv) != 0 ? -1 :
	    sv_security_load_controllers(sv);
}

/* A context whose certificate has expired or is not valid yet: why. */
static const char *
cert_out_of_date(SSL_CTX *ctx)
{
	X509 *x = SSL_CTX_get0_certificate(ctx);

	if (x == NULL)
		return NULL;
	if (X509_cmp_current_time(X509_get0_notAfter(x)) < 0)
		return "its certificate has expired";
	if (X509_cmp_current_time(X509_get0_notBefore(x)) > 0)
		return "its certificate is not valid yet";
	return NULL;
}

int
sv_security_reload(struct sv *sv, char *err, size_t errlen)
{
	const struct rn_config *cfg = &sv->cfg;
	SSL_CTX *fresh[RN_CONFIG_MAX_LISTENERS] = { NULL };
	char why[512], what[256];
	const char *bad;
	int i, n = 0;

	for (i = 0; i < cfg->n_listeners; i++) {
		const struct rn_listener *l = &cfg->listeners[i];

		if (!RN_SEC_TLS(l->proto) || sv->env.sec[i].ssl_ctx == NULL)
			continue;
		fresh[i] = rn_ssl_ctx_new(cfg, l->name, why, sizeof(why));
		bad = fresh[i] == NULL ? why : cert_out_of_date(fresh[i]);
		if (bad != NULL) {
			snprintf(err, errlen, "listener %s: %s; the "
			    "certificates in use are kept", l->name, bad);
			goto refuse;
		}
		n++;
	}
	if (n == 0) {
		snprintf(err, errlen, "no TLS listener: nothing to reload");
		return -1;
	}
	for (i = 0; i < cfg->n_listeners; i++) {
		if (fresh[i] == NULL)
			continue;
		SSL_CTX_free(sv->env.sec[i].ssl_ctx);
		sv->env.sec[i].ssl_ctx = fresh[i];
		rn_ssl_ctx_describe(cfg, cfg->listeners[i].name, what,
		    sizeof(what));
		log_notice("listener %s: TLS reloaded, %s",
		    cfg->listeners[i].name, what);
	}
	return n;
refuse:
	for (i = 0; i < cfg->n_listeners; i++)
		SSL_CTX_free(fresh[i]);
	return -1;
}
