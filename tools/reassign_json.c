/* Kafka's reassignment JSON, read and written with jansson. */
#include "autoconf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tools/reassign.h"

int
ra_plan_add(struct ra_plan *pl, const char *topic, int32_t partition,
    const int32_t *replicas, int n)
{
	struct ra_part *p;

	if (pl->n == pl->cap) {
		int cap = pl->cap ? 2 * pl->cap : 16;
		struct ra_part *nv = realloc(pl->v, sizeof(*nv) * (size_t)cap);

		if (nv == NULL)
			return -1;
		pl->v = nv;
		pl->cap = cap;
	}
	p = &pl->v[pl->n];
	if ((p->topic = strdup(topic)) == NULL ||
	    (p->replicas = calloc((size_t)(n > 0 ? n : 1),
	    sizeof(int32_t))) == NULL) {
		free(p->topic);
		return -1;
	}
	if (n > 0)
		memcpy(p->replicas, replicas, sizeof(int32_t) * (size_t)n);
	p->partition = partition;
	p->n = n;
	p->dirs = NULL;
	pl->n++;
	return 0;
}

void
ra_plan_free(struct ra_plan *pl)
{
	int i, k;

	for (i = 0; i < pl->n; i++) {
		free(pl->v[i].topic);
		free(pl->v[i].replicas);
		if (pl->v[i].dirs != NULL)
			for (k = 0; k < pl->v[i].n; k++)
				free(pl->v[i].dirs[k]);
		free(pl->v[i].dirs);
	}
	free(pl->v);
	memset(pl, 0, sizeof(*pl));
}

const struct ra_part *
ra_plan_find(const struct ra_plan *pl, const char *topic, int32_t partition)
{
	int i;

	for (i = 0; i < pl->n; i++)
		if (pl->v[i].partition == partition &&
		    strcmp(pl->v[i].topic, topic) == 0)
			return &pl->v[i];
	return NULL;
}

static json_t *
load(const char *path, char *err, size_t errlen)
{
	json_error_t je;
	json_t *root = json_load_file(path, 0, &je);

	if (root == NULL)
		snprintf(err, errlen, "%s:%d: %s", path, je.line, je.text);
	else if (!json_is_object(root)) {
		snprintf(err, errlen, "%s: not a JSON object", path);
		json_decref(root);
		root = NULL;
	}
	return root;
}

/* One {"topic", "partition", "replicas", "log_dirs"} entry into pl. */
static int
plan_entry(json_t *e, struct ra_plan *pl, char *err, size_t errlen)
{
	json_t *t = json_object_get(e, "topic");
	json_t *p = json_object_get(e, "partition");
	json_t *r = json_object_get(e, "replicas");
	json_t *d = json_object_get(e, "log_dirs");
	int32_t ids[64];
	size_t i, n;

	if (!json_is_string(t) || !json_is_integer(p) || !json_is_array(r) ||
	    (n = json_array_size(r)) > 64) {
		snprintf(err, errlen, "each partition needs \"topic\", "
		    "\"partition\" and \"replicas\" (at most 64)");
		return -1;
	}
	for (i = 0; i < n; i++) {
		json_t *x = json_array_get(r, i);

		if (!json_is_integer(x)) {
			snprintf(err, errlen, "replicas must be broker ids");
			return -1;
		}
		ids[i] = (int32_t)json_integer_value(x);
	}
	/* as Kafka: as many log dirs as replicas, or none */
	if (d != NULL && (!json_is_array(d) || json_array_size(d) != n)) {
		snprintf(err, errlen, "Size of replicas list is different from "
		    "size of log dirs list for partition %s-%d",
		    json_string_value(t), (int)json_integer_value(p));
		return -1;
	}
	for (i = 0; d != NULL && i < n; i++)
		if (!json_is_string(json_array_get(d, i))) {
			snprintf(err, errlen, "log_dirs must be paths or "
			    "\"any\"");
			return -1;
		}
	if (ra_plan_find(pl, json_string_value(t),
	    (int32_t)json_integer_value(p)) != NULL) {
		snprintf(err, errlen, "partition %s-%d is given twice",
		    json_string_value(t), (int)json_integer_value(p));
		return -1;
	}
	if (ra_plan_add(pl, json_string_value(t),
	    (int32_t)json_integer_value(p), ids, (int)n) != 0) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	for (i = 0; d != NULL && i < n; i++) {
		const char *s = json_string_value(json_array_get(d, i));
		struct ra_part *rp = &pl->v[pl->n - 1];

		if (strcmp(s, "any") == 0)
			continue;
		if (rp->dirs == NULL)
			rp->dirs = calloc(n, sizeof(char *));
		if (rp->dirs == NULL || (rp->dirs[i] = strdup(s)) == NULL) {
			snprintf(err, errlen, "out of memory");
			return -1;
		}
	}
	return 0;
}

int
ra_plan_read(const char *path, struct ra_plan *pl, char *err, size_t errlen)
{
	json_t *root, *parts;
	size_t i;
	int rc = 0;

	if ((root = load(path, err, errlen)) == NULL)
		return -1;
	parts = json_object_get(root, "partitions");
	if (!json_is_array(parts) || json_array_size(parts) == 0) {
		snprintf(err, errlen, "%s: no \"partitions\" to reassign",
		    path);
		rc = -1;
	}
	for (i = 0; rc == 0 && i < json_array_size(parts); i++)
		rc = plan_entry(json_array_get(parts, i), pl, err, errlen);
	json_decref(root);
	return rc;
}

int
ra_topics_read(const char *path, char ***names, int *n, char *err,
    size_t errlen)
{
	json_t *root, *topics;
	size_t i, k;

	*names = NULL;
	*n = 0;
	if ((root = load(path, err, errlen)) == NULL)
		return -1;
	topics = json_object_get(root, "topics");
	k = json_is_array(topics) ? json_array_size(topics) : 0;
	if (k == 0 || (*names = calloc(k, sizeof(char *))) == NULL) {
		snprintf(err, errlen, "%s: no \"topics\" to move", path);
		json_decref(root);
		return -1;
	}
	for (i = 0; i < k; i++) {
		const char *s = json_string_value(json_object_get(
		    json_array_get(topics, i), "topic"));

		if (s == NULL || ((*names)[i] = strdup(s)) == NULL) {
			snprintf(err, errlen, "%s: each topic needs a "
			    "\"topic\" name", path);
			json_decref(root);
			return -1;
		}
		(*n)++;
	}
	json_decref(root);
	return 0;
}

static json_t *
part_json(const struct ra_part *p)
{
	json_t *o = json_object(), *r = json_array(), *d = json_array();
	int i;

	for (i = 0; i < p->n; i++) {
		json_array_append_new(r, json_integer(p->replicas[i]));
		json_array_append_new(d, json_string("any"));
	}
	json_object_set_new(o, "topic", json_string(p->topic));
	json_object_set_new(o, "partition", json_integer(p->partition));
	json_object_set_new(o, "replicas", r);
	json_object_set_new(o, "log_dirs", d);
	return o;
}

char *
ra_plan_json(const struct ra_plan *pl)
{
	json_t *root = json_object(), *parts = json_array();
	char *s;
	int i;

	for (i = 0; i < pl->n; i++)
		json_array_append_new(parts, part_json(&pl->v[i]));
	json_object_set_new(root, "version", json_integer(1));
	json_object_set_new(root, "partitions", parts);
	s = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(root);
	return s;
}
