/* SPDX-License-Identifier: MIT */
/*
 * apizone.c - run-time zone names, frames with gaps, counter units,
 * application info and sections with known numbers, for
 * tests/e2e/test_apizone.py.
 *
 * Without arguments: zones "item 0" .. "item 4" entered 1 .. 5 times each
 * (TA_ZONE_DYN, from two call sites), "loaded level" twice
 * (TA_ZONE_BEGIN_DYN), a NULL name, a 300-byte name, a name that is not
 * UTF-8; the frame set "physics" of 6 frames with gaps between them, the
 * 4th sleeping 60 ms, and one END without a BEGIN; two counters with
 * units given outside every section, one sampled inside "bench"; two lines of application info; the
 * sections "level 1" (twice) and "bench" overlapping its second occurrence.  With "overflow N": N
 * distinct zone names, each entered once.  With "threads": 4 threads
 * enter the same 100 names "t0" .. "t99" at once, 3 times each.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "traceagent.h"

TA_CHANNEL(net);

static void nap_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	while (nanosleep(&ts, &ts) != 0)
		;
}

/* noinline: a row of their own at every optimisation level. */
static __attribute__((noinline)) void step(void)
{
	__asm__ __volatile__("" ::: "memory");
}

static __attribute__((noinline)) void other(void)
{
	__asm__ __volatile__("" ::: "memory");
}

static __attribute__((noinline)) void named(const char *name)
{
	TA_ZONE_DYN(name);
	step();
}

static __attribute__((noinline)) void named_net(const char *name)
{
	TA_ZONE_DYN_C(net, name);
}

/* A call running when "bench" begins: in --section bench from there. */
static __attribute__((noinline)) void spans(void)
{
	TA_SECTION_ENTER("bench");
	step();
}

static int overflow(int n)
{
	char name[32];

	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "n%d", i);
		named(name);
	}
	return 0;
}

static void *racer(void *arg)
{
	char name[16];

	(void)arg;
	for (int r = 0; r < 3; r++)
		for (int i = 0; i < 100; i++) {
			snprintf(name, sizeof(name), "t%d", i);
			named(name);
		}
	return NULL;
}

static int threads(void)
{
	pthread_t t[4];

	for (int i = 0; i < 4; i++)
		if (pthread_create(&t[i], NULL, racer, NULL) != 0)
			return 1;
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	return 0;
}

int main(int argc, char **argv)
{
	char name[400];

	if (argc == 3 && !strcmp(argv[1], "overflow"))
		return overflow(atoi(argv[2]));
	if (argc == 2 && !strcmp(argv[1], "threads"))
		return threads();
	TA_APP_INFO("build %s", "abc123");
	TA_APP_INFO("levels %d", 3);
	TA_COUNTER_CONFIG("heap", TA_UNIT_BYTES);
	TA_COUNTER_CONFIG_C(net, "load", TA_UNIT_PERCENT);
	for (int i = 0; i < 5; i++)
		for (int k = 0; k <= i; k++) {
			snprintf(name, sizeof(name), "item %d", i);
			if (k % 2)
				named_net(name);
			else
				named(name);
		}
	for (int i = 0; i < 2; i++) {
		snprintf(name, sizeof(name), "loaded %s", "level");
		TA_ZONE_BEGIN_DYN(name);
		step();
		TA_ZONE_END();
	}
	named(NULL);
	memset(name, 'x', 300);
	name[300] = 0;
	named(name);
	named("bad \xff\xfe utf-8");

	TA_FRAME_END("physics"); /* no frame begun: left out */
	for (int i = 0; i < 6; i++) {
		TA_FRAME_BEGIN("physics");
		step();
		if (i == 3)
			nap_ms(60);
		TA_FRAME_END("physics");
		nap_ms(20); /* a gap: no frame */
	}
	TA_COUNTER("heap", 1536);
	TA_COUNTER("heap", 3 * 1048576);
	TA_COUNTER_F_C(net, "load", 42.5);

	step(); /* outside every section */
	TA_SECTION_ENTER("level 1");
	step();
	step();
	TA_SECTION_LEAVE("level 1");
	step();
	other();
	TA_SECTION_ENTER("level 1");
	spans();
	step();
	TA_SECTION_LEAVE("level 1");
	other();
	TA_COUNTER("heap", 2048); /* in "bench" only */
	TA_SECTION_LEAVE("bench");
	step();
	return 0;
}
