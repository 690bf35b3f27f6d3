/* runnel-configs --entity-type users: SCRAM credentials (configs_users.c). */
#ifndef RN_CONFIGS_USERS_H
#define RN_CONFIGS_USERS_H

struct tool_props;

/* add: "SCRAM-SHA-256=iterations=N,password=P"; del: "SCRAM-SHA-256=".
 * A TOOL_EXIT_* code, after printing the outcome. */
int configs_users_alter(const char *bootstrap, const struct tool_props *client,
    int timeout_ms, const char *user, const struct tool_props *add,
    const struct tool_props *del);
/* user NULL: every user with a credential. */
int configs_users_describe(const char *bootstrap,
    const struct tool_props *client, int timeout_ms, const char *user);

#endif /* RN_CONFIGS_USERS_H */
