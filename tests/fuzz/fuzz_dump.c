/* SPDX-License-Identifier: MIT */
/*
 * fuzz_dump.c - the libFuzzer harness for the analyzer's decoder: every
 * input goes through the dump reader, the session and the report's tables
 * (fuzz_entry.c).  Built and run by scripts/fuzz.
 */
#include <stddef.h>
#include <stdint.h>

#include "fuzz_entry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return ta_fuzz_dump(data, size);
}
