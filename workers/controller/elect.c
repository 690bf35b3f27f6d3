#include "autoconf.h"

#include <string.h>

#include "protocol/kerrors.h"
#include "workers/controller/elect.h"

enum ctl_bstate
ctl_broker_state(void *arg, int32_t id)
{
	const struct ctl_broker *b = ctl_state_broker(arg, id);

	if (b == NULL || b->fenced)
		return CTL_B_DOWN;
	return b->in_controlled_shutdown ? CTL_B_LEAVING : CTL_B_UP;
}

/* Keep the members of in not in state drop; unchanged if none remain. */
static int32_t
isr_without(const int32_t *in, int32_t n, enum ctl_bstate drop,
    ctl_bstate_fn fn, void *arg, int32_t *out)
{
	int32_t i, k = 0;

	for (i = 0; i < n && k < CTL_MAX_RF; i++)
		if (fn(arg, in[i]) != drop)
			out[k++] = in[i];
	if (k > 0)
		return k;
	for (i = 0; i < n && i < CTL_MAX_RF; i++)
		out[i] = in[i];
	return n < CTL_MAX_RF ? n : CTL_MAX_RF;
}

static bool
differs(const struct ctl_partition *p, const struct ctl_pchange *c)
{
	return c->leader != p->leader || c->n_isr != p->n_isr ||
	    memcmp(c->isr, p->isr, sizeof(int32_t) * (size_t)c->n_isr) != 0;
}

static void
finish(const struct ctl_partition *p, struct ctl_pchange *c)
{
	c->leader_epoch = p->leader_epoch + (c->leader != p->leader);
	c->partition_epoch = p->partition_epoch + differs(p, c);
}

bool
ctl_elect(const struct ctl_partition *p, ctl_bstate_fn fn, void *arg,
    bool unclean, struct ctl_pchange *out)
{
	int32_t isr1[CTL_MAX_RF], n1, i;

	memset(out, 0, sizeof(*out));
	n1 = isr_without(p->isr, p->n_isr, CTL_B_DOWN, fn, arg, isr1);
	out->n_isr = isr_without(isr1, n1, CTL_B_LEAVING, fn, arg, out->isr);
	out->leader = -1;
	if (p->leader >= 0 && fn(arg, p->leader) == CTL_B_UP &&
	    ctl_ids_has(out->isr, out->n_isr, p->leader))
		out->leader = p->leader;
	for (i = 0; out->leader < 0 && i < p->n_replicas; i++)
		if (fn(arg, p->replicas[i]) == CTL_B_UP &&
		    ctl_ids_has(out->isr, out->n_isr, p->replicas[i]))
			out->leader = p->replicas[i];
	if (out->leader < 0 && p->leader >= 0 &&
	    fn(arg, p->leader) == CTL_B_LEAVING &&
	    ctl_ids_has(out->isr, out->n_isr, p->leader))
		out->leader = p->leader; /* nowhere to move it */
	for (i = 0; out->leader < 0 && unclean && i < p->n_replicas; i++)
		if (fn(arg, p->replicas[i]) == CTL_B_UP) {
			out->leader = p->replicas[i];
			out->isr[0] = out->leader;
			out->n_isr = 1;
			out->unclean = true;
		}
	finish(p, out);
	return differs(p, out);
}

int16_t
ctl_elect_preferred(const struct ctl_partition *p, ctl_bstate_fn fn,
    void *arg, struct ctl_pchange *out)
{
	int32_t pref;

	if (p->n_replicas == 0)
		return RN_KERR_PREFERRED_LEADER_NOT_AVAILABLE;
	pref = p->replicas[0];
	if (p->leader == pref)
		return RN_KERR_ELECTION_NOT_NEEDED;
	if (fn(arg, pref) != CTL_B_UP || !ctl_ids_has(p->isr, p->n_isr, pref))
		return RN_KERR_PREFERRED_LEADER_NOT_AVAILABLE;
	memset(out, 0, sizeof(*out));
	out->leader = pref;
	out->n_isr = p->n_isr < CTL_MAX_RF ? p->n_isr : CTL_MAX_RF;
	memcpy(out->isr, p->isr, sizeof(int32_t) * (size_t)out->n_isr);
	finish(p, out);
	return 0;
}

int16_t
ctl_elect_unclean(const struct ctl_partition *p, ctl_bstate_fn fn,
    void *arg, struct ctl_pchange *out)
{
	if (p->leader >= 0)
		return RN_KERR_ELECTION_NOT_NEEDED;
	if (!ctl_elect(p, fn, arg, true, out) || out->leader < 0)
		return RN_KERR_ELIGIBLE_LEADERS_NOT_AVAILABLE;
	return 0;
}

bool
ctl_leads_movable(const struct ctl_state *st, int32_t id, ctl_bstate_fn fn,
    void *arg)
{
	int i;
	int32_t p, k;

	for (i = 0; i < st->n_topics; i++)
		for (p = 0; p < st->topics[i]->n_parts; p++) {
			const struct ctl_partition *pp =
			    &st->topics[i]->parts[p];

			if (pp->leader != id)
				continue;
			for (k = 0; k < pp->n_isr; k++)
				if (pp->isr[k] != id &&
				    fn(arg, pp->isr[k]) == CTL_B_UP)
					return true;
		}
	return false;
}
