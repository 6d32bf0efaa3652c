/* SPDX-License-Identifier: MIT */
/*
 * channels.c - the manual API's channels switched at known points, for
 * tests/e2e/test_channels.py.  Every mode prints the same with and
 * without the agent (the macros cost nothing and do nothing then), but
 * "ret", which prints what ta_channel_set returned.
 *
 *   toggle  100 rounds of a "send" zone (channel net) around f(), a
 *           "depth" counter sample and a "work" zone (channel user);
 *           functions off for rounds 10-19, net off for 30-59, user off
 *           for 40-49.
 *   plain   the same rounds, nothing switched (for TRACEAGENT_CHANNELS).
 *   signal  plain, raising SIGUSR1 at rounds 25 and 75 when something
 *           (the agent, TRACEAGENT_CHANNEL_SIGNAL) handles it.
 *   ret     ta_channel_set's results.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <traceagent.h>

TA_CHANNEL(net);

static volatile int sink;

__attribute__((noinline)) static void f(int i)
{
	sink += i;
}

/* Whether raising sig would reach a handler rather than end the program. */
static int handled(int sig)
{
	struct sigaction sa;

	return sigaction(sig, NULL, &sa) == 0 && sa.sa_handler != SIG_DFL;
}

static void round_of(int i)
{
	{
		TA_ZONE_C(net, "send");
		f(i);
	}
	TA_COUNTER("depth", i);
	{
		TA_ZONE("work");
		sink += 1;
	}
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "toggle";

	if (!strcmp(mode, "ret")) {
		printf("net off %d\n", ta_channel_set("net", 0));
		printf("net on %d\n", ta_channel_set("net", 1));
		printf("fresh %d\n", ta_channel_set("fresh", 1));
		printf("null %d\n", ta_channel_set(NULL, 1));
		return 0;
	}
	for (int i = 0; i < 100; i++) {
		if (!strcmp(mode, "toggle")) {
			if (i == 10)
				ta_channel_set("functions", 0);
			if (i == 20)
				ta_channel_set("functions", 1);
			if (i == 30)
				ta_channel_set("net", 0);
			if (i == 40)
				ta_channel_set("user", 0);
			if (i == 50)
				ta_channel_set("user", 1);
			if (i == 60)
				ta_channel_set("net", 1);
		} else if (!strcmp(mode, "signal") && (i == 25 || i == 75) && handled(SIGUSR1)) {
			raise(SIGUSR1);
		}
		round_of(i);
	}
	printf("%s: sink %d\n", mode, sink);
	return 0;
}
