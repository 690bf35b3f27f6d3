/*
 * What the collection (sv_metrics.c) and the text renderer
 * (sv_metrics_text.c) share: the table of metric families, indexed by a
 * sample's fam.
 */
#ifndef SV_METRICS_INT_H
#define SV_METRICS_INT_H

struct sv_met_family {
	const char *name, *type, *help;
};

extern const struct sv_met_family sv_met_families[];
extern const unsigned sv_met_n_families;

#endif /* SV_METRICS_INT_H */
