/* SPDX-License-Identifier: MIT */
/*
 * fuzz_entry.h - one fuzz input through the analyzer, shared by the
 * libFuzzer harness (fuzz_dump.c) and the unit test that replays the
 * regression corpus (tests/unit/test_fuzz_corpus.c).
 *
 * The first byte of an input picks how the rest is used (the low two bits)
 * and which visitor walks it (the next two):
 *   mode 0 (and 3): the bytes are the dump, as they are;
 *   mode 1: the bytes are a dump whose chunk CRCs (and file header CRC)
 *           are recomputed and whose stored sizes are clamped to what is
 *           there, so mutations reach the payload decoders instead of
 *           failing the checksum;
 *   mode 2: as 1, and every uncompressed chunk is LZ4-compressed first,
 *           which drives the decompression path with meaningful payloads;
 *   visitor 0: the profile; 1: the profile with histograms, inside the
 *   library calls' visitor (report --alloc --locks --io); 2: a checking
 *   visitor around the profile with histograms (every frame entered is
 *   exited exactly once, times are consistent); 3: no visitor.
 * Then the report's numbers are built as `traceagent report` builds them,
 * except that functions are not named from ELF files (that would read
 * whatever paths the input names).
 *
 * Never writes a file.  Aborts (so the fuzzer notices) when an invariant
 * of the session does not hold; returns 0 otherwise.
 */
#ifndef TA_FUZZ_ENTRY_H
#define TA_FUZZ_ENTRY_H

#include <stddef.h>
#include <stdint.h>

int ta_fuzz_dump(const uint8_t *data, size_t size);
/* The bytes in[0..n) with their chunks' checksums repaired as mode 1 does
 * (mode 2 with compress), in a malloc'd *out of *len bytes: 0, or -1
 * without memory. */
int ta_fuzz_repair(const uint8_t *in, size_t n, int compress, uint8_t **out, size_t *len);

#endif
