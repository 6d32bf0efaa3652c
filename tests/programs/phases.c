/* SPDX-License-Identifier: MIT */
/*
 * phases.c - a program whose hot function changes at known times, for
 * `traceagent top`: phase_a() in a loop for PHASE_MS milliseconds (from
 * the environment, default 1000), then phase_b(), then phase_c(), each
 * call about a microsecond of work of its own.  A frame is marked
 * (TA_FRAME_MARK) every 10 ms of each phase.
 *
 * At the end it prints how many times it called each phase function,
 * "phase_a N" and so on, one a line: the counts a trace must show.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "traceagent.h"

#define WORK	 100 /* iterations of a call's own work */
#define FRAME_NS 10000000ull

static volatile uint64_t sink;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* In each phase function itself (a macro, not a call): its time is
 * their self time. */
#define WORK_BODY(k)                                                                               \
	do {                                                                                       \
		uint64_t x = sink + (k);                                                           \
		for (int i = 0; i < WORK; i++)                                                     \
			x = x * 6364136223846793005ull + 1442695040888963407ull;                   \
		sink = x;                                                                          \
	} while (0)

static void __attribute__((noinline)) phase_a(void)
{
	WORK_BODY(1);
}

static void __attribute__((noinline)) phase_b(void)
{
	WORK_BODY(2);
}

static void __attribute__((noinline)) phase_c(void)
{
	WORK_BODY(3);
}

/* Calls fn for ms milliseconds; returns how many times. */
static uint64_t __attribute__((noinline)) run_phase(void (*fn)(void), uint64_t ms)
{
	uint64_t start = now_ns(), end = start + ms * 1000000ull, frame = start + FRAME_NS;
	uint64_t calls = 0, t = start;

	while (t < end) {
		for (int i = 0; i < 64; i++)
			fn();
		calls += 64;
		t = now_ns();
		if (t >= frame) {
			TA_FRAME_MARK();
			frame += FRAME_NS;
		}
	}
	return calls;
}

int main(void)
{
	const char *env = getenv("PHASE_MS");
	uint64_t ms = env ? strtoull(env, NULL, 10) : 1000;
	uint64_t a, b, c;

	a = run_phase(phase_a, ms);
	b = run_phase(phase_b, ms);
	c = run_phase(phase_c, ms);
	printf("phase_a %llu\nphase_b %llu\nphase_c %llu\n", (unsigned long long)a,
	       (unsigned long long)b, (unsigned long long)c);
	return 0;
}
