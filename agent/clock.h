/* SPDX-License-Identifier: MIT */
/*
 * clock.h - the timestamp counter, the one per-architecture piece of the
 * hot path.  Ticks are converted to time later, from (ticks, CLOCK_MONOTONIC)
 * pairs the agent writes into the dump (ta_clock_pair).
 */
#ifndef TA_CLOCK_H
#define TA_CLOCK_H

#include <stdint.h>
#include <time.h>

#include "format.h"

#if defined(__x86_64__)
#define TA_CLOCK_SOURCE TA_CLOCK_RDTSC
#define TA_ARCH "x86_64"
static inline __attribute__((always_inline)) uint64_t ta_ticks(void)
{
	uint32_t lo, hi;

	/* Plain rdtsc, not rdtscp or lfence;rdtsc: ordering against the
	 * traced code costs ~20 cycles and buys nothing at function
	 * granularity.  The TSC is invariant on every CPU we target. */
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}
#elif defined(__aarch64__)
#define TA_CLOCK_SOURCE TA_CLOCK_CNTVCT
#define TA_ARCH "aarch64"
static inline __attribute__((always_inline)) uint64_t ta_ticks(void)
{
	uint64_t v;

	/* The isb keeps the counter read from being speculated ahead of
	 * the code before the hook. */
	__asm__ volatile("isb\n\tmrs %0, cntvct_el0" : "=r"(v)::"memory");
	return v;
}
#else
#define TA_CLOCK_SOURCE TA_CLOCK_MONOTONIC
#define TA_ARCH "generic"
/* No counter we know how to read: fall back to the vDSO clock (a libc
 * call on the hot path, the one exception, documented in the README). */
static inline uint64_t ta_ticks(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}
#endif

/* Counter frequency the hardware states (CNTFRQ_EL0), else 0. */
uint64_t ta_clock_nominal_hz(void);

/* Reads the counter and CLOCK_MONOTONIC back to back. */
void ta_clock_pair(uint64_t *ticks, uint64_t *mono_ns);

uint64_t ta_clock_realtime_ns(void);

#endif
