/* SPDX-License-Identifier: MIT */
/*
 * fuzz_live_entry.h - one fuzz input through the live side's decoders,
 * shared by the libFuzzer harnesses (fuzz_serve.c, fuzz_live.c) and the
 * unit test that replays their regression corpora
 * (tests/unit/test_live_fuzz.c).
 *
 * An input is two bytes of settings, then a dump stream:
 *   byte 0, bits 0-1: the stream as it is (0, 3), with its chunks'
 *           checksums repaired (1), or repaired and LZ4-compressed (2), as
 *           fuzz_entry.h's modes;
 *   byte 0, bits 2-3: serve: the quota (none, 100 bytes, 4 KiB, 64 KiB);
 *           top: a snapshot every 1, 4 or 64 pieces, or at the end only;
 *   byte 0, bits 4-6: the pieces' largest size: the whole stream, 1, 7,
 *           64, 512, 4096, 65536 bytes, or 1 to 3 bytes;
 *   byte 1: the seed of the pieces' sizes (uniform in [1, largest]).
 *
 * ta_fuzz_serve feeds one client of serve (analyzer/lib/serve_conn.c) writing
 * nowhere (TA_SV_NOWHERE), then checks that its dump, the first bytes it
 * kept, reads back as whole chunks, within the quota and bounds.
 * ta_fuzz_live feeds top's aggregator (analyzer/lib/live.c, naming without
 * files) and checks each snapshot's numbers and the caps.
 * Both write no file and abort when an invariant does not hold.
 */
#ifndef TA_FUZZ_LIVE_ENTRY_H
#define TA_FUZZ_LIVE_ENTRY_H

#include <stddef.h>
#include <stdint.h>

int ta_fuzz_serve(const uint8_t *data, size_t size);
int ta_fuzz_live(const uint8_t *data, size_t size);

#endif
