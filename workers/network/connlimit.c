/*
 * Kafka's connection quotas in a network worker: max.connections (per
 * broker and per listener), max.connections.per.ip and its overrides,
 * max.connection.creation.rate (per broker and per listener) and
 * connections.max.idle.ms. The counts are per broker: each worker adds
 * to its slice of the shared region (ipc/connlimit.h) and sums every
 * network worker's slice when it decides.
 *
 * As in Kafka's ConnectionQuotas: a listener at its max.connections, or
 * over a creation rate, is not accepted from (clients wait in the
 * backlog) until a slot frees or the rate allows; a connection over its
 * address's limit is accepted and closed at once. The inter-broker
 * listener, when there are other listeners, is exempt from the broker-
 * wide limit and rate (its own listener.name.<l>. ones still apply).
 * Existing connections are never touched.
 */
#include "autoconf.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "ipc/connlimit.h"
#include "workers/network/net_int.h"

_Static_assert(RN_CONFIG_MAX_LISTENERS <= RN_CONNLIM_LISTENERS,
    "a connlimit count per listener");

#define LIM_NONE INT64_MAX
#define LIM_LOG_EVERY_MS 10000
/* how often a listener paused at its limit looks again: a close in
 * another worker wakes nobody here */
#define LIM_RECHECK_MS 50

/* A number from server.properties: key's value, else def. */
static int64_t
lim_num(const struct rn_config *cfg, const char *key, int64_t def)
{
	const char *v = rn_config_static(cfg, key);
	char *end;
	long long x;

	if (v == NULL || *v == '\0')
		return def;
	errno = 0;
	x = strtoll(v, &end, 10);
	return errno == 0 && *end == '\0' ? x : def;
}

/* listener.name.<l>.key (Kafka lower-cases the name), else key. */
static int64_t
lim_listener_num(const struct rn_config *cfg, const char *lname,
    const char *key, int64_t def)
{
	char full[256];
	size_t i, k;

	k = (size_t)snprintf(full, sizeof(full), "listener.name.");
	for (i = 0; lname[i] != '\0' && k < sizeof(full) - 1; i++)
		full[k++] = (char)tolower((unsigned char)lname[i]);
	full[k] = '\0';
	strlcat(full, ".", sizeof(full));
	strlcat(full, key, sizeof(full));
	if (rn_config_static(cfg, full) != NULL)
		return lim_num(cfg, full, def);
	return lim_num(cfg, key, def);
}

/* Kafka's Int.MaxValue default means no limit. */
static int64_t
lim_max(int64_t v)
{
	return v < 0 || v >= INT_MAX ? LIM_NONE : v;
}

/* A socket address as the 16 bytes the shared table keys on. */
void
net_connlim_addr(const struct sockaddr_storage *ss, uint8_t out[16])
{
	memset(out, 0, 16);
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)ss;

		out[10] = out[11] = 0xff;
		memcpy(out + 12, &in->sin_addr, 4);
	} else if (ss->ss_family == AF_INET6)
		memcpy(out, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
}

/* "host:n,host:n" (a host may be an IPv6 literal: the count follows the
 * last colon); a bad entry is reported and left out. */
static void
lim_overrides(struct net_connlim *L, const char *v)
{
	char buf[4096], *save = NULL, *tok;

	strlcpy(buf, v, sizeof(buf));
	for (tok = strtok_r(buf, ",", &save); tok != NULL;
	    tok = strtok_r(NULL, ",", &save)) {
		struct addrinfo hints, *ai = NULL;
		struct sockaddr_storage ss;
		char *colon, *end;
		long long n;

		while (isspace((unsigned char)*tok))
			tok++;
		if (*tok == '\0')
			continue;
		if ((colon = strrchr(tok, ':')) == NULL) {
			log_warnx("max.connections.per.ip.overrides: '%s' is "
			    "not host:count: ignored", tok);
			continue;
		}
		*colon = '\0';
		errno = 0;
		n = strtoll(colon + 1, &end, 10);
		if (errno != 0 || *end != '\0' || n < 0 ||
		    L->n_over == NET_CONNLIM_OVERRIDES) {
			log_warnx("max.connections.per.ip.overrides: bad or "
			    "one too many entry for %s: ignored", tok);
			continue;
		}
		memset(&hints, 0, sizeof(hints));
		hints.ai_socktype = SOCK_STREAM;
		if (getaddrinfo(tok, NULL, &hints, &ai) != 0 || ai == NULL) {
			log_warnx("max.connections.per.ip.overrides: cannot "
			    "resolve %s: ignored", tok);
			continue;
		}
		memset(&ss, 0, sizeof(ss));
		memcpy(&ss, ai->ai_addr, ai->ai_addrlen <= sizeof(ss) ?
		    ai->ai_addrlen : sizeof(ss));
		freeaddrinfo(ai);
		net_connlim_addr(&ss, L->over[L->n_over].addr);
		L->over[L->n_over].max = lim_max(n);
		L->n_over++;
	}
}

void
net_connlim_init(struct net *n)
{
	const struct rn_worker_env *env = n->w->env;
	const struct rn_config *cfg = n->cfg;
	struct net_connlim *L = &n->lim;
	int64_t rate;
	int l, n_broker = 0;
	unsigned i;

	memset(L, 0, sizeof(*L));
	L->mine = rn_connlim_slice(env->shm, n->w->slot);
	/* what a previous incarnation counted died with it */
	rn_connlim_slice_reset(env->shm, n->w->slot);
	for (i = 0; i < env->n_network && i < 64; i++)
		L->slices[L->n_slices++] = rn_connlim_slice(env->shm,
		    rn_worker_slot_of(env, RN_ROLE_W_NETWORK, i));
	L->rates = rn_connlim_rates(env->shm);
	L->max_total = lim_max(lim_num(cfg, "max.connections", INT_MAX));
	rate = lim_max(lim_num(cfg, "max.connection.creation.rate", INT_MAX));
	L->interval_us[RN_CONFIG_MAX_LISTENERS] = rate == LIM_NONE ? 0 :
	    rate == 0 ? -1 : 1000000 / rate;
	L->per_ip = lim_max(lim_num(cfg, "max.connections.per.ip", INT_MAX));
	L->idle_ms = lim_num(cfg, "connections.max.idle.ms", 600000);
	if (rn_config_static(cfg, "max.connections.per.ip.overrides") != NULL)
		lim_overrides(L, rn_config_static(cfg,
		    "max.connections.per.ip.overrides"));
	L->track_ip = L->per_ip != LIM_NONE;
	for (i = 0; i < L->n_over; i++)
		L->track_ip = L->track_ip || L->over[i].max != LIM_NONE;
	for (l = 0; l < env->n_listen; l++)
		if (!env->listen[l].controller)
			n_broker++;
	for (l = 0; l < cfg->n_listeners && l < RN_CONFIG_MAX_LISTENERS; l++) {
		const char *name = cfg->listeners[l].name;

		L->max_listener[l] = lim_max(lim_listener_num(cfg, name,
		    "max.connections", INT_MAX));
		rate = lim_max(lim_listener_num(cfg, name,
		    "max.connection.creation.rate", INT_MAX));
		L->interval_us[l] = rate == LIM_NONE ? 0 :
		    rate == 0 ? -1 : 1000000 / rate;
		L->exempt[l] = n_broker > 1 &&
		    strcmp(name, cfg->inter_broker_listener_name) == 0;
	}
}

static uint64_t
sum_total(const struct net_connlim *L)
{
	uint64_t t = 0;
	unsigned i;

	for (i = 0; i < L->n_slices; i++)
		t += atomic_load_explicit(&L->slices[i]->total,
		    memory_order_relaxed);
	return t;
}

static uint64_t
sum_listener(const struct net_connlim *L, int l)
{
	uint64_t t = 0;
	unsigned i;

	for (i = 0; i < L->n_slices; i++)
		t += atomic_load_explicit(&L->slices[i]->listener[l],
		    memory_order_relaxed);
	return t;
}

static uint64_t
sum_ip(const struct net_connlim *L, const uint8_t addr[16])
{
	uint64_t t = 0;
	unsigned i;

	for (i = 0; i < L->n_slices; i++)
		t += rn_connlim_ip_get(L->slices[i], addr);
	return t;
}

/* The us until a rate clock lets one more in (-1: never, rate 0). */
static int64_t
rate_wait(_Atomic int64_t *tat, int64_t interval, int64_t now_us)
{
	if (interval == 0)
		return 0;
	if (interval < 0)
		return 1000000;
	/* a second's worth may come at once, as Kafka's rate window */
	return rn_connlim_rate_wait(tat, now_us, 1000000 - interval);
}

int64_t
net_connlim_admit_wait(struct net *n, int l)
{
	struct net_connlim *L = &n->lim;
	int64_t now_us = rn_now_us(), w = 0, x;

	if ((L->max_listener[l] != LIM_NONE &&
	    sum_listener(L, l) >= (uint64_t)L->max_listener[l]) ||
	    (!L->exempt[l] && L->max_total != LIM_NONE &&
	    sum_total(L) >= (uint64_t)L->max_total))
		return LIM_RECHECK_MS;
	if (!L->exempt[l])
		w = rate_wait(&L->rates->broker_tat_us,
		    L->interval_us[RN_CONFIG_MAX_LISTENERS], now_us);
	x = rate_wait(&L->rates->listener_tat_us[l], L->interval_us[l],
	    now_us);
	if (x > w)
		w = x;
	return w == 0 ? 0 : w / 1000 + 1;
}

/* At most one line per LIM_LOG_EVERY_MS, with how many went unsaid. */
static void
lim_log(struct net_connlim *L, const char *fmt, const char *peer,
    const char *lname, uint64_t count, int64_t max)
{
	int64_t now = rn_now_ms();

	if (now - L->logged_ms < LIM_LOG_EVERY_MS) {
		L->unlogged++;
		return;
	}
	log_warnx(fmt, peer, lname, (unsigned long long)count,
	    (long long)max, L->unlogged);
	L->logged_ms = now;
	L->unlogged = 0;
}

bool
net_connlim_take(struct net *n, int l, const struct sockaddr_storage *ss,
    struct net_connlim_ticket *t)
{
	struct net_connlim *L = &n->lim;
	const char *lname = n->cfg->listeners[l].name;
	int64_t max = L->per_ip, now_us = rn_now_us();
	char peer[INET6_ADDRSTRLEN] = "?";
	unsigned i;
	int k;

	memset(t, 0, sizeof(*t));
	t->listener = l;
	t->total = !L->exempt[l];
	if (L->interval_us[l] > 0)
		rn_connlim_rate_take(&L->rates->listener_tat_us[l], now_us,
		    L->interval_us[l]);
	if (t->total && L->interval_us[RN_CONFIG_MAX_LISTENERS] > 0)
		rn_connlim_rate_take(&L->rates->broker_tat_us, now_us,
		    L->interval_us[RN_CONFIG_MAX_LISTENERS]);
	atomic_fetch_add_explicit(&L->mine->listener[l], 1,
	    memory_order_relaxed);
	if (t->total)
		atomic_fetch_add_explicit(&L->mine->total, 1,
		    memory_order_relaxed);
	t->counted = true;
	net_connlim_addr(ss, t->addr);
	if (ss->ss_family == AF_INET)
		inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr,
		    peer, sizeof(peer));
	else if (ss->ss_family == AF_INET6)
		inet_ntop(AF_INET6,
		    &((const struct sockaddr_in6 *)ss)->sin6_addr, peer,
		    sizeof(peer));
	/* two workers that both saw one slot left: the later one backs off */
	if ((L->max_listener[l] != LIM_NONE &&
	    sum_listener(L, l) > (uint64_t)L->max_listener[l]) ||
	    (t->total && L->max_total != LIM_NONE &&
	    sum_total(L) > (uint64_t)L->max_total)) {
		lim_log(L, "connection from %s on listener %s closed: %llu "
		    "connections, max.connections %lld (%d more not logged)",
		    peer, lname, t->total ? sum_total(L) : sum_listener(L, l),
		    t->total ? L->max_total : L->max_listener[l]);
		net_connlim_release(n, t);
		return false;
	}
	if (!L->track_ip)
		return true;
	for (i = 0; i < L->n_over; i++)
		if (memcmp(L->over[i].addr, t->addr, 16) == 0) {
			max = L->over[i].max;
			break;
		}
	if (max == LIM_NONE)
		return true;
	if ((k = rn_connlim_ip_add(L->mine, t->addr, 1)) < 0) {
		if (!L->full_logged)
			log_warnx("connection limits: this worker counts "
			    "connections from %d addresses at most; new "
			    "addresses are refused while it is full",
			    RN_CONNLIM_IPS);
		L->full_logged = true;
		lim_log(L, "connection from %s on listener %s closed: "
		    "address table full (%llu counted, "
		    "max.connections.per.ip %lld; %d more not logged)", peer,
		    lname, (uint64_t)RN_CONNLIM_IPS, max);
		net_connlim_release(n, t);
		return false;
	}
	t->ip = true;
	if (sum_ip(L, t->addr) > (uint64_t)max) {
		lim_log(L, "connection from %s on listener %s closed: %llu "
		    "connections from that address, max.connections.per.ip "
		    "%lld (%d more not logged)", peer, lname,
		    sum_ip(L, t->addr), max);
		net_connlim_release(n, t);
		return false;
	}
	return true;
}

void
net_connlim_release(struct net *n, struct net_connlim_ticket *t)
{
	struct net_connlim *L = &n->lim;

	if (!t->counted)
		return;
	if (t->ip)
		(void)rn_connlim_ip_add(L->mine, t->addr, -1);
	if (atomic_load_explicit(&L->mine->listener[t->listener],
	    memory_order_relaxed) > 0)
		atomic_fetch_sub_explicit(&L->mine->listener[t->listener], 1,
		    memory_order_relaxed);
	if (t->total && atomic_load_explicit(&L->mine->total,
	    memory_order_relaxed) > 0)
		atomic_fetch_sub_explicit(&L->mine->total, 1,
		    memory_order_relaxed);
	t->counted = t->ip = false;
}
