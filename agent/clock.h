/* SPDX-License-Identifier: MIT */
/*
 * clock.h - the timestamp counter, read inline (arch/<cpu>/arch.h
 * ta_arch_counter), the one per-architecture piece of the hot path.  Ticks are converted to time
 * later, from (ticks, CLOCK_MONOTONIC) pairs the agent writes into the dump (ta_clock_pair).
 */
#ifndef TA_CLOCK_H
#define TA_CLOCK_H

#include <stdint.h>
#include <time.h>

#include "arch.h"
#include "format.h"

#if TA_ARCH_HAS_COUNTER
#define TA_CLOCK_SOURCE TA_ARCH_CLOCK_SOURCE
static inline __attribute__((always_inline)) uint64_t ta_ticks(void)
{
	return ta_arch_counter();
}
#else
#define TA_CLOCK_SOURCE TA_CLOCK_MONOTONIC
/* No counter we know how to read: fall back to the vDSO clock (a libc
 * call on the hot path, the one exception, docs/building.md). */
static inline uint64_t ta_ticks(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
#endif

/*
 * The first counter value past t.  A frame mark judged in keep mode waits
 * for it on both sides of its event, so that no other record of its
 * thread shares a tick with the window it bounds: a counter coarser than
 * the code between two records (62.5 MHz stepped each microsecond under
 * qemu-user, 24 MHz on some Arm boards) would otherwise put the call made
 * just before or after the mark inside the window (docs/traceagent-
 * record.md, "Keeping only the slow frames").  A counter that stands still
 * is given up on after 2^20 reads.
 */
static inline uint64_t ta_ticks_after(uint64_t t)
{
	uint64_t n = ta_ticks();

	for (uint32_t i = 0; n <= t && i < (1u << 20); i++)
		n = ta_ticks();
	return n;
}

/* Counter frequency the hardware states (CNTFRQ_EL0), else 0. */
uint64_t ta_clock_nominal_hz(void);

/* Reads the counter and CLOCK_MONOTONIC back to back. */
void ta_clock_pair(uint64_t *ticks, uint64_t *mono_ns);

uint64_t ta_clock_realtime_ns(void);

#endif
