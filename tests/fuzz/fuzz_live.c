/* SPDX-License-Identifier: MIT */
/*
 * fuzz_live.c - the libFuzzer harness for `traceagent top`'s aggregator
 * (analyzer/lib/live.c): a stream fed in pieces (fuzz_live_entry.h).
 * Built and run by scripts/fuzz.
 */
#include <stddef.h>
#include <stdint.h>

#include "fuzz_live_entry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return ta_fuzz_live(data, size);
}
