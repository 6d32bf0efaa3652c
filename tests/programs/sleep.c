/* SPDX-License-Identifier: MIT */
/*
 * sleep.c - nap() sleeps 20 ms with nanosleep, NAPS times.  The program
 * also times each call itself with CLOCK_MONOTONIC and prints the shortest,
 * longest and mean in ns, so a test can compare the dump's durations with
 * a clock read outside the agent.
 */
#include <stdio.h>
#include <time.h>

#define NAPS 5

__attribute__((noipa)) static void nap(void)
{
	struct timespec ts = {0, 20 * 1000 * 1000};

	while (nanosleep(&ts, &ts) != 0)
		;
}

__attribute__((no_instrument_function)) static long long now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(void)
{
	long long min = -1, max = 0, sum = 0;

	for (int i = 0; i < NAPS; i++) {
		long long t0 = now_ns(), d;

		nap();
		d = now_ns() - t0;
		min = min < 0 || d < min ? d : min;
		max = d > max ? d : max;
		sum += d;
	}
	printf("naps %d min_ns %lld max_ns %lld avg_ns %lld\n", NAPS, min, max, sum / NAPS);
	return 0;
}
