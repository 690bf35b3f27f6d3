/*
 * bootstrap.scram (common/scram_boot.c): credentials written and read
 * back byte for byte; comments and blank lines skipped; a missing file is
 * no credential; every malformed line (bad mechanism, hex, lengths,
 * iterations out of bounds, a field too many or too few, a NUL in a
 * name) is refused with the line's number, and a file over the bound is
 * refused before it is read.
 */
#include "autoconf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/scram_boot.h"
#include "tests/lib/tap.h"

static char dir[256];
static struct rn_scram_cred got[4];
static char names[4][RN_SCRAM_NAME_MAX + 1];
static uint8_t salts[4][RN_SCRAM_SALT_MAX];
static int n_got;

static int
keep(void *arg, const struct rn_scram_cred *c)
{
	(void)arg;
	if (n_got == 4)
		return -1;
	got[n_got] = *c;
	strlcpy(names[n_got], c->name, sizeof(names[0]));
	memcpy(salts[n_got], c->salt, c->salt_len);
	got[n_got].name = names[n_got];
	got[n_got].salt = salts[n_got];
	n_got++;
	return 0;
}

static void
put(const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, RN_SCRAM_BOOT_FILE);
	f = fopen(path, "w");
	fputs(text, f);
	fclose(f);
}

static int
read_back(char *err, size_t errlen)
{
	n_got = 0;
	err[0] = '\0';
	return rn_scram_boot_read(dir, keep, NULL, err, errlen);
}

#define K32 "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

int
main(void)
{
	static const char *bad[] = {
		"SCRAM-SHA-1 616c 4096 00 " K32 " " K32 "\n",
		"SCRAM-SHA-256 616c 4096 00 " K32 "\n",
		"SCRAM-SHA-256 616c 4096 00 " K32 " " K32 " extra\n",
		"SCRAM-SHA-256 616 4096 00 " K32 " " K32 "\n",
		"SCRAM-SHA-256 61zz 4096 00 " K32 " " K32 "\n",
		"SCRAM-SHA-256 610062 4096 00 " K32 " " K32 "\n",
		"SCRAM-SHA-256 616c 4095 00 " K32 " " K32 "\n",
		"SCRAM-SHA-256 616c 16385 00 " K32 " " K32 "\n",
		"SCRAM-SHA-256 616c 4096x 00 " K32 " " K32 "\n",
		"SCRAM-SHA-256 616c 4096 00 " K32 "00 " K32 "\n",
		"SCRAM-SHA-512 616c 4096 00 " K32 " " K32 "\n",
		"SCRAM-SHA-256  4096 00 " K32 " " K32 "\n",
	};
	struct rn_scram_cred in[2];
	uint8_t salt1[3] = { 1, 2, 3 }, salt2[1] = { 0xff };
	char err[512], path[512];
	size_t i;
	int fd;

	plan(11 + (int)(sizeof(bad) / sizeof(bad[0])));
	snprintf(dir, sizeof(dir), "/tmp/runnel-unit-scramboot-%d",
	    (int)getpid());
	if (mkdir(dir, 0700) != 0)
		return 1;

	is_int(read_back(err, sizeof(err)), 0, "no file: no credential");

	memset(in, 0, sizeof(in));
	in[0].name = "alice";
	in[0].mech = RN_SCRAM_SHA256;
	in[0].iterations = 4096;
	in[0].salt = salt1;
	in[0].salt_len = sizeof(salt1);
	memset(in[0].stored_key, 0x11, 32);
	memset(in[0].server_key, 0x22, 32);
	in[1].name = "bob with spaces";
	in[1].mech = RN_SCRAM_SHA512;
	in[1].iterations = 16384;
	in[1].salt = salt2;
	in[1].salt_len = sizeof(salt2);
	memset(in[1].stored_key, 0x33, 64);
	memset(in[1].server_key, 0x44, 64);
	is_int(rn_scram_boot_write(dir, in, 2), 0, "two credentials written");
	is_int(read_back(err, sizeof(err)), 2, "and read back: %s", err);
	ok(strcmp(got[0].name, "alice") == 0 && got[0].mech ==
	    RN_SCRAM_SHA256 && got[0].iterations == 4096 &&
	    got[0].salt_len == 3 && memcmp(got[0].salt, salt1, 3) == 0 &&
	    memcmp(got[0].stored_key, in[0].stored_key, 32) == 0 &&
	    memcmp(got[0].server_key, in[0].server_key, 32) == 0,
	    "the first, byte for byte");
	ok(strcmp(got[1].name, "bob with spaces") == 0 && got[1].mech ==
	    RN_SCRAM_SHA512 && got[1].iterations == 16384 &&
	    got[1].salt_len == 1 && got[1].salt[0] == 0xff &&
	    memcmp(got[1].stored_key, in[1].stored_key, 64) == 0 &&
	    memcmp(got[1].server_key, in[1].server_key, 64) == 0,
	    "the second (a name with spaces, SHA-512)");
	in[0].iterations = 0;
	in[0].mech = 9;
	is_int(rn_scram_boot_write(dir, in, 1), -EINVAL,
	    "an unknown mechanism is not written");

	put("# a comment\n\n   \nSCRAM-SHA-256 616c 8192 00 " K32 " " K32
	    "\r\n");
	is_int(read_back(err, sizeof(err)), 1, "comments, blank lines and "
	    "CRLF: %s", err);
	ok(strcmp(got[0].name, "al") == 0 && got[0].iterations == 8192,
	    "the one credential");

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char text[1024];

		snprintf(text, sizeof(text), "# ok\n%s", bad[i]);
		put(text);
		ok(read_back(err, sizeof(err)) == -1 && strstr(err, "line 2") !=
		    NULL && n_got == 0, "malformed line %zu refused: %s", i,
		    err);
	}

	put("SCRAM-SHA-256 616c 4096 00 " K32 " " K32 "\nnonsense\n");
	ok(read_back(err, sizeof(err)) == -1 && strstr(err, "line 2") != NULL,
	    "a bad line after a good one fails the file: %s", err);

	snprintf(path, sizeof(path), "%s/%s", dir, RN_SCRAM_BOOT_FILE);
	fd = open(path, O_WRONLY | O_TRUNC);
	if (fd < 0 || ftruncate(fd, 64L << 20) != 0)
		return 1;
	close(fd);
	ok(read_back(err, sizeof(err)) == -1 && strstr(err, "at most") !=
	    NULL, "a 64 MiB file is refused unread: %s", err);

	unlink(path);
	chmod(dir, 0700);
	ok(rmdir(dir) == 0, "cleaned up");
	return done_testing();
}
