/* SPDX-License-Identifier: MIT */
/*
 * clock.c - calibration points between the counter and CLOCK_MONOTONIC.
 */
#include "clock.h"

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t ta_clock_realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

uint64_t ta_clock_nominal_hz(void)
{
#if TA_ARCH_HAS_COUNTER
	return ta_arch_counter_hz();
#else
	return 0;
#endif
}

void ta_clock_pair(uint64_t *ticks, uint64_t *ns)
{
	uint64_t best = UINT64_MAX;

	/* The counter read sits between two clock reads; of a few tries keep
	 * the one with the narrowest window (a preemption in between would
	 * skew the pair) and take the window's middle. */
	for (int i = 0; i < 5; i++) {
		uint64_t a = mono_ns();
		uint64_t t = ta_ticks();
		uint64_t b = mono_ns();
		if (b - a < best) {
			best = b - a;
			*ticks = t;
			*ns = a + (b - a) / 2;
		}
	}
}
