/* SPDX-License-Identifier: MIT */
/*
 * fuzz_serve.c - the libFuzzer harness for one client of `traceagent serve`
 * (analyzer/lib/serve_conn.c): a stream fed in pieces (fuzz_live_entry.h).
 * Built and run by scripts/fuzz.
 */
#include <stddef.h>
#include <stdint.h>

#include "fuzz_live_entry.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return ta_fuzz_serve(data, size);
}
