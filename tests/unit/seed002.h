/*
 * The worked rack-unaware table of seed 002 (as its code computes it):
 * brokers 1000..1004, 10 partitions, RF 3, start index 0, shift 3.
 */
#ifndef RN_TEST_SEED002_H
#define RN_TEST_SEED002_H

#include <stdint.h>

static const int32_t seed002_table[10][3] = {
	{ 1000, 1004, 1001 }, { 1001, 1000, 1002 }, { 1002, 1001, 1003 },
	{ 1003, 1002, 1004 }, { 1004, 1003, 1000 }, { 1000, 1001, 1002 },
	{ 1001, 1002, 1003 }, { 1002, 1003, 1004 }, { 1003, 1004, 1000 },
	{ 1004, 1000, 1001 },
};

#endif /* RN_TEST_SEED002_H */
