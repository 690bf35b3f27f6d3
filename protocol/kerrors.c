/*
 * Error code names for logs and tools.
 */
#include "protocol/kerrors.h"

#include <stddef.h>

const char *
rn_kerr_name(int16_t code)
{
	switch (code) {
#define RN_KERR_CASE_(name, code) case code: return #name;
	RN_KERRORS(RN_KERR_CASE_)
#undef RN_KERR_CASE_
	}
	return NULL;
}
