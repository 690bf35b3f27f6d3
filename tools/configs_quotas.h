/* runnel-configs for users and clients: the client quotas, spoken with
 * runnel's own codec (librdkafka 2.0.2 has no client-quota admin API). */
#ifndef RN_CONFIGS_QUOTAS_H
#define RN_CONFIGS_QUOTAS_H

#include <stdbool.h>

#include "tools/tool_common.h"

/* type "users" or "clients"; name NULL with dflt: <default>; NULL
 * without: every entity of the type (describe). An exit code. */
int cq_run(const char *bootstrap, bool describe, const char *type,
    const char *name, bool dflt, const struct tool_props *add,
    const struct tool_props *del, int timeout_ms);

#endif /* RN_CONFIGS_QUOTAS_H */
