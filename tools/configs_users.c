/*
 * runnel-configs --entity-type users: SCRAM credentials, as kafka-configs
 * handles them with --bootstrap-server.
 *
 *   --alter --entity-name U --add-config 'SCRAM-SHA-256=[iterations=N,password=P]'
 *   --alter --entity-name U --delete-config SCRAM-SHA-256
 *   --describe [--entity-name U]
 *
 * librdkafka 2.0.2 has no AlterUserScramCredentials nor
 * DescribeUserScramCredentials (they came in 2.2), so these requests go
 * out on runnel's own codec over a plain connection (tools/tool_kclient.c):
 * a PLAINTEXT listener only. The password is salted and iterated here
 * (Hi() of RFC 5802, with a random salt); only that goes on the wire.
 */
#include "autoconf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/rand.h>

#include "common/scram.h"
#include "protocol/kerrors.h"
#include "protocol/kmsg_gen.h"
#include "tools/configs_users.h"
#include "tools/tool_common.h"
#include "tools/tool_kclient.h"

#define DEFAULT_ITERATIONS 4096  /* kafka-configs' */
#define SALT_BYTES 32

static int
connect_plain(const char *bootstrap, const struct tool_props *client,
    int timeout_ms)
{
	char err[256];
	int fd;

	if (!tool_plaintext_only(client)) {
		tool_errx("--entity-type users sends its requests on runnel's "
		    "own client, which speaks PLAINTEXT only: give a "
		    "PLAINTEXT listener (librdkafka 2.0.2 lacks the SCRAM "
		    "admin APIs)");
		return -1;
	}
	if ((fd = tkc_connect(bootstrap, timeout_ms, err, sizeof(err))) < 0)
		tool_errx("%s", err);
	return fd;
}

static void
print_error(const char *what, const char *user, int16_t code,
    struct rn_kstr msg)
{
	tool_errx("%s for user '%s': %s%s%.*s", what, user,
	    rn_kerr_name(code) != NULL ? rn_kerr_name(code) : "error",
	    msg.len > 0 ? ": " : "", msg.len > 0 ? (int)msg.len : 0,
	    msg.len > 0 ? msg.ptr : "");
}

/* "[iterations=N,]password=P" (brackets already dropped). */
static int
parse_credential(const char *mech, const char *v, int *iterations,
    const char **pw)
{
	long it = DEFAULT_ITERATIONS;

	if (strncmp(v, "iterations=", 11) == 0) {
		const char *comma = strchr(v, ',');
		char num[16];

		if (comma == NULL || (size_t)(comma - v - 11) >= sizeof(num))
			goto bad;
		memcpy(num, v + 11, (size_t)(comma - v - 11));
		num[comma - v - 11] = '\0';
		if (tool_parse_long(num, -1, INT32_MAX, &it) != 0)
			goto bad;
		if (it == -1)
			it = DEFAULT_ITERATIONS;
		v = comma + 1;
	}
	if (strncmp(v, "password=", 9) != 0)
		goto bad;
	if (it < RN_SCRAM_MIN_ITERATIONS) {
		tool_errx("Iterations %ld is less than the minimum %d required "
		    "for %s", it, RN_SCRAM_MIN_ITERATIONS, mech);
		return -1;
	}
	*iterations = (int)it;
	*pw = v + 9;
	return 0;
bad:
	/* never echo the value: it holds the password */
	tool_errx("Invalid credential property %s: want "
	    "%s=[iterations=N,password=P]", mech, mech);
	return -1;
}

int
configs_users_alter(const char *bootstrap, const struct tool_props *client,
    int timeout_ms, const char *user, const struct tool_props *add,
    const struct tool_props *del)
{
	struct rn_AlterUserScramCredentialsRequest req;
	struct rn_AlterUserScramCredentialsResponse resp;
	struct rn_AlterUserScramCredentialsRequest_ScramCredentialDeletion
	    dels[4];
	struct rn_AlterUserScramCredentialsRequest_ScramCredentialUpsertion
	    ups[4];
	uint8_t salts[4][SALT_BYTES], salted[4][RN_SCRAM_KEY_MAX];
	struct rn_arena arena;
	char err[256];
	int i, fd, rc = TOOL_EXIT_FAIL;

	if (add->n > 2 || del->n > 2) {
		tool_errx("a user has at most one credential per mechanism");
		return TOOL_EXIT_USAGE;
	}
	rn_AlterUserScramCredentialsRequest_init(&req);
	req.deletions = dels;
	req.upsertions = ups;
	for (i = 0; i < del->n; i++) {
		const char *k = del->kv[i];
		int m = rn_scram_mech_by_name(k, strcspn(k, "="));

		if (m == 0) {
			tool_errx("Only SCRAM credential configs can be deleted "
			    "for users: unexpected config name %.*s",
			    (int)strcspn(k, "="), k);
			return TOOL_EXIT_USAGE;
		}
		dels[i].name = rn_kstr_c(user);
		dels[i].mechanism = (int8_t)m;
		req.deletions_count++;
	}
	for (i = 0; i < add->n; i++) {
		const char *k = add->kv[i], *pw;
		size_t kl = strcspn(k, "=");
		int m = rn_scram_mech_by_name(k, kl), it;

		if (m == 0) {
			tool_errx("Only SCRAM credential configs can be added "
			    "for users: unexpected config name %.*s", (int)kl,
			    k);
			return TOOL_EXIT_USAGE;
		}
		if (parse_credential(rn_scram_mech_name(m), k + kl + 1, &it,
		    &pw) != 0)
			return TOOL_EXIT_USAGE;
		if (RAND_bytes(salts[i], SALT_BYTES) != 1 ||
		    rn_scram_salted_password(m, pw, strlen(pw), salts[i],
		    SALT_BYTES, it, salted[i]) != 0) {
			tool_errx("cannot salt the password");
			return TOOL_EXIT_FAIL;
		}
		ups[i].name = rn_kstr_c(user);
		ups[i].mechanism = (int8_t)m;
		ups[i].iterations = it;
		ups[i].salt = (struct rn_kbytes){ salts[i], SALT_BYTES };
		ups[i].salted_password = (struct rn_kbytes){ salted[i],
		    (int32_t)rn_scram_key_len(m) };
		req.upsertions_count++;
	}
	if ((fd = connect_plain(bootstrap, client, timeout_ms)) < 0)
		goto out;
	rn_arena_init(&arena, 1u << 20);
	if (tkc_call_api(fd, RN_KAPI_ALTER_USER_SCRAM_CREDENTIALS, 0, &req,
	    &arena, &resp, timeout_ms, err, sizeof(err)) != 0)
		tool_errx("AlterUserScramCredentials: %s", err);
	else {
		rc = TOOL_EXIT_OK;
		for (i = 0; i < resp.results_count; i++)
			if (resp.results[i].error_code != 0) {
				print_error("cannot alter the SCRAM credentials",
				    user, resp.results[i].error_code,
				    resp.results[i].error_message);
				rc = TOOL_EXIT_FAIL;
			}
		if (rc == TOOL_EXIT_OK)
			printf("Completed updating config for user %s.\n",
			    user);
	}
	rn_arena_free(&arena);
	close(fd);
out:
	OPENSSL_cleanse(salted, sizeof(salted));
	return rc;
}

int
configs_users_describe(const char *bootstrap,
    const struct tool_props *client, int timeout_ms, const char *user)
{
	struct rn_DescribeUserScramCredentialsRequest req;
	struct rn_DescribeUserScramCredentialsResponse resp;
	struct rn_DescribeUserScramCredentialsRequest_UserName un;
	struct rn_arena arena;
	char err[256];
	int32_t i, k;
	int fd, rc = TOOL_EXIT_FAIL;

	rn_DescribeUserScramCredentialsRequest_init(&req);
	if (user != NULL) {
		un.name = rn_kstr_c(user);
		req.users = &un;
		req.users_count = 1;
	} else
		req.users_count = -1;   /* null: every user */
	if ((fd = connect_plain(bootstrap, client, timeout_ms)) < 0)
		return TOOL_EXIT_FAIL;
	rn_arena_init(&arena, 16u << 20);
	if (tkc_call_api(fd, RN_KAPI_DESCRIBE_USER_SCRAM_CREDENTIALS, 0, &req,
	    &arena, &resp, timeout_ms, err, sizeof(err)) != 0)
		tool_errx("DescribeUserScramCredentials: %s", err);
	else if (resp.error_code != 0)
		print_error("cannot describe the SCRAM credentials", user ?
		    user : "*", resp.error_code, resp.error_message);
	else {
		rc = TOOL_EXIT_OK;
		for (i = 0; i < resp.results_count; i++) {
			const struct rn_DescribeUserScramCredentialsResponse_DescribeUserScramCredentialsResult
			    *r = &resp.results[i];

			if (r->error_code != 0) {
				printf("Error retrieving SCRAM credential "
				    "configs for user-principal '%.*s': %s: "
				    "%.*s\n", (int)r->user.len, r->user.ptr,
				    rn_kerr_name(r->error_code) ?
				    rn_kerr_name(r->error_code) : "error",
				    r->error_message.len > 0 ?
				    (int)r->error_message.len : 0,
				    r->error_message.ptr ? r->error_message.ptr :
				    "");
				if (user != NULL)
					rc = TOOL_EXIT_FAIL;
				continue;
			}
			printf("SCRAM credential configs for user-principal "
			    "'%.*s' are ", (int)r->user.len, r->user.ptr);
			for (k = 0; k < r->credential_infos_count; k++)
				printf("%s%s=iterations=%d", k ? ", " : "",
				    rn_scram_mech_name(
				    r->credential_infos[k].mechanism) ?
				    rn_scram_mech_name(
				    r->credential_infos[k].mechanism) : "?",
				    r->credential_infos[k].iterations);
			printf("\n");
		}
	}
	rn_arena_free(&arena);
	close(fd);
	return rc;
}
