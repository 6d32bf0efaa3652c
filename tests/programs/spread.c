/* SPDX-License-Identifier: MIT */
/*
 * spread.c - one function with a known spread of durations, for the
 * report's percentiles, and a known change between two runs, for diff.
 *
 *   spread [ROUNDS]
 *
 * Each round calls hold(us) 100 times: 60 times for 100 us, 35 times for
 * 300 us and 5 times for 1000 us, in a shuffled but fixed order, so that
 * p50 falls among the 100 us calls, p90 among the 300 us calls and p99
 * among the 1000 us calls, each well inside its group so that a few calls
 * stretched by the scheduler cannot move it.  hold() waits on the clock
 * (not in the kernel), so no call is shorter than asked.  With ROUNDS > 1,
 * extra() runs once per round after the first.
 *
 * Calls: main 1, round ROUNDS, hold 100 * ROUNDS, extra ROUNDS - 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((no_instrument_function)) static unsigned long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

__attribute__((noipa)) static void hold(unsigned us)
{
	unsigned long long end = now_ns() + us * 1000ull;

	while (now_ns() < end)
		sink++;
}

__attribute__((noipa)) static void extra(void)
{
	hold(100);
}

__attribute__((noipa)) static void round_of_calls(void)
{
	/* i * 37 mod 100 visits 0..99 once each: a fixed shuffle. */
	for (unsigned i = 0; i < 100; i++) {
		unsigned k = i * 37 % 100;

		hold(k < 60 ? 100 : k < 95 ? 300 : 1000);
	}
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 1;

	for (int r = 0; r < rounds; r++) {
		round_of_calls();
		if (r)
			extra();
	}
	printf("spread: %d rounds\n", rounds);
	return 0;
}
