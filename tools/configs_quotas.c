/*
 * The users and clients entity types of runnel-configs: AlterClientQuotas
 * and DescribeClientQuotas v1 on a plain connection to the first
 * bootstrap server, printed as kafka-configs.sh prints them.
 */
#include "autoconf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/util.h"
#include "protocol/kerrors.h"
#include "protocol/kmsg_gen.h"
#include "tools/configs_quotas.h"
#include "tools/tool_kclient.h"

static const char *
etype(const char *type)
{
	return strcmp(type, "users") == 0 ? "user" : "client-id";
}

static int
describe(int fd, const char *type, const char *name, bool dflt,
    int timeout_ms)
{
	struct rn_DescribeClientQuotasRequest req;
	struct rn_DescribeClientQuotasRequest_ComponentData comp;
	struct rn_DescribeClientQuotasResponse resp;
	struct rn_arena arena;
	char err[256];
	int32_t i, j;
	int rc = TOOL_EXIT_OK;

	rn_arena_init(&arena, 0);
	rn_DescribeClientQuotasRequest_init(&req);
	rn_DescribeClientQuotasRequest_ComponentData_init(&comp);
	comp.entity_type = rn_kstr_c(etype(type));
	comp.match_type = name != NULL ? 0 : dflt ? 1 : 2;
	comp.match = name != NULL ? rn_kstr_c(name) :
	    (struct rn_kstr){ NULL, -1 };
	req.components = &comp;
	req.components_count = 1;
	req.strict = name != NULL || dflt;
	if (tkc_call_api(fd, RN_KAPI_DESCRIBE_CLIENT_QUOTAS, 1, &req, &arena,
	    &resp, timeout_ms, err, sizeof(err)) != 0) {
		tool_errx("DescribeClientQuotas: %s", err);
		rc = TOOL_EXIT_FAIL;
		goto out;
	}
	if (resp.error_code != 0) {
		tool_errx("DescribeClientQuotas: %s", rn_kerr_name(resp.error_code));
		rc = TOOL_EXIT_FAIL;
		goto out;
	}
	for (i = 0; i < resp.entries_count; i++) {
		const struct rn_DescribeClientQuotasResponse_EntryData *e =
		    &resp.entries[i];

		printf("Quota configs for");
		for (j = 0; j < e->entity_count; j++) {
			printf("%s %s ", j ? " and" : "",
			    e->entity[j].entity_type.len == 4 ? "user-principal" :
			    "client-id");
			if (e->entity[j].entity_name.len < 0)
				printf("the default");
			else
				printf("'%.*s'", (int)e->entity[j].entity_name.len,
				    e->entity[j].entity_name.ptr);
		}
		printf(" are ");
		for (j = 0; j < e->values_count; j++)
			printf("%s%.*s=%.17g", j ? ", " : "",
			    (int)e->values[j].key.len, e->values[j].key.ptr,
			    e->values[j].value);
		printf("\n");
	}
out:
	rn_arena_free(&arena);
	return rc;
}

static int
alter(int fd, const char *type, const char *name,
    const struct tool_props *add, const struct tool_props *del,
    int timeout_ms)
{
	struct rn_AlterClientQuotasRequest req;
	struct rn_AlterClientQuotasRequest_EntryData ed;
	struct rn_AlterClientQuotasRequest_EntityData ent;
	struct rn_AlterClientQuotasRequest_OpData *ops;
	struct rn_AlterClientQuotasResponse resp;
	struct rn_arena arena;
	char err[256];
	int i, n = 0, rc = TOOL_EXIT_OK;

	if ((ops = calloc((size_t)(add->n + del->n + 1), sizeof(*ops))) == NULL)
		return TOOL_EXIT_FAIL;
	for (i = 0; i < add->n; i++) {
		char *eq = strchr(add->kv[i], '='), *end;

		rn_AlterClientQuotasRequest_OpData_init(&ops[n]);
		ops[n].key = (struct rn_kstr){ add->kv[i],
		    (int32_t)(eq - add->kv[i]) };
		ops[n].value = strtod(eq + 1, &end);
		if (end == eq + 1 || *end != '\0') {
			tool_errx("--add-config: '%s' is not a number", eq + 1);
			free(ops);
			return TOOL_EXIT_USAGE;
		}
		n++;
	}
	for (i = 0; i < del->n; i++) {
		char *eq = strchr(del->kv[i], '=');

		rn_AlterClientQuotasRequest_OpData_init(&ops[n]);
		ops[n].key = (struct rn_kstr){ del->kv[i], eq != NULL ?
		    (int32_t)(eq - del->kv[i]) : (int32_t)strlen(del->kv[i]) };
		ops[n++].remove = true;
	}
	rn_arena_init(&arena, 0);
	rn_AlterClientQuotasRequest_init(&req);
	rn_AlterClientQuotasRequest_EntryData_init(&ed);
	rn_AlterClientQuotasRequest_EntityData_init(&ent);
	ent.entity_type = rn_kstr_c(etype(type));
	ent.entity_name = name != NULL ? rn_kstr_c(name) :
	    (struct rn_kstr){ NULL, -1 };
	ed.entity = &ent;
	ed.entity_count = 1;
	ed.ops = ops;
	ed.ops_count = n;
	req.entries = &ed;
	req.entries_count = 1;
	if (tkc_call_api(fd, RN_KAPI_ALTER_CLIENT_QUOTAS, 1, &req, &arena,
	    &resp, timeout_ms, err, sizeof(err)) != 0) {
		tool_errx("AlterClientQuotas: %s", err);
		rc = TOOL_EXIT_FAIL;
	} else if (resp.entries_count != 1 || resp.entries[0].error_code != 0) {
		tool_errx("AlterClientQuotas: %s%s%.*s",
		    resp.entries_count ? rn_kerr_name(resp.entries[0].
		    error_code) : "no answer", resp.entries_count &&
		    resp.entries[0].error_message.len > 0 ? ": " : "",
		    resp.entries_count && resp.entries[0].error_message.len > 0 ?
		    (int)resp.entries[0].error_message.len : 0,
		    resp.entries_count ? resp.entries[0].error_message.ptr : "");
		rc = TOOL_EXIT_FAIL;
	} else
		printf("Completed updating config for %s %s.\n",
		    strcmp(type, "users") == 0 ? "user" : "client",
		    name != NULL ? name : "<default>");
	rn_arena_free(&arena);
	free(ops);
	return rc;
}

int
cq_run(const char *bootstrap, bool desc, const char *type, const char *name,
    bool dflt, const struct tool_props *add, const struct tool_props *del,
    int timeout_ms)
{
	char err[256];
	int fd, rc;

	if ((fd = tkc_connect(bootstrap, timeout_ms, err, sizeof(err))) < 0) {
		tool_errx("%s", err);
		return TOOL_EXIT_FAIL;
	}
	rc = desc ? describe(fd, type, name, dflt, timeout_ms) :
	    alter(fd, type, name, add, del, timeout_ms);
	close(fd);
	return rc;
}
