/*
 * libFuzzer target for server.properties: the parser and the cross-key
 * checks the supervisor runs before anything else (rn_config_parse, then
 * rn_config_finish). Any text must end in a configuration or a one-line
 * reason, never a crash; a text that parsed must parse the same way again
 * (the parser keeps no state between calls).
 */
#include "autoconf.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int
parse(const char *text, char *err, size_t errlen)
{
	struct rn_config cfg;
	int rc;

	memset(&cfg, 0, sizeof(cfg));
	rc = rn_config_parse(&cfg, text, "fuzz", err, errlen, NULL, NULL);
	if (rc == 0)
		rc = rn_config_finish(&cfg, err, errlen);
	rn_config_free(&cfg);
	return rc;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[512], err2[512];
	char *text;
	int rc;

	if (size > 1 << 16)
		return 0;
	if ((text = malloc(size + 1)) == NULL)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	err[0] = '\0';
	rc = parse(text, err, sizeof(err));
	if (rc != 0 && err[0] == '\0')
		abort(); /* a refusal must say why */
	if (rc == 0 && parse(text, err2, sizeof(err2)) != 0)
		abort(); /* the same text, another answer */
	free(text);
	return 0;
}
