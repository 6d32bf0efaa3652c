/* SPDX-License-Identifier: MIT */
/*
 * api.c - the manual API's workload of scripts/bench: N rounds of each
 * macro in a loop of its own, and N calls of an empty instrumented
 * function, each loop timed alone.  Prints one line per loop, "NAME NS",
 * the loop's time less that of the same loop doing nothing ("empty"), so
 * start-up, the final flush and the loop itself are not counted.  Run with
 * the agent, without it (every macro a load and a branch), with
 * TRACEAGENT_CHANNELS=-functions (the hooks' disabled path) and with the
 * floor's hooks.  The channel "off" is switched off before its loops.
 *
 * Only empty() is instrumented: everything else says no_instrument_function.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <traceagent.h>

#define NOHOOK __attribute__((no_instrument_function, noinline))

TA_CHANNEL(off);

static volatile uint64_t sink;
/* Run-time names (TA_ZONE_DYN, fibers): in writable memory, as a program's
 * buffers are. */
static char dyn_names[4][8] = {"dyn0", "dyn1", "dyn2", "dyn3"};
static uint64_t blocks[1024];

NOHOOK static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The hooked call: its body one store, as the loops' bodies. */
__attribute__((noinline)) static void empty(long i)
{
	sink = (uint64_t)i;
}

#define LOOP(name, body)                                                                           \
	NOHOOK static uint64_t name(long n)                                                        \
	{                                                                                          \
		uint64_t t0 = now_ns();                                                            \
		for (long i = 0; i < n; i++) {                                                     \
			body;                                                                      \
			sink = (uint64_t)i;                                                        \
		}                                                                                  \
		return now_ns() - t0;                                                              \
	}

LOOP(loop_empty, (void)0)
LOOP(loop_zone, TA_ZONE("zone"))
LOOP(loop_begin_end, TA_ZONE_BEGIN("begin"); TA_ZONE_END())
LOOP(loop_counter, TA_COUNTER("counter", i))
LOOP(loop_message, TA_MESSAGE("round %d", (int)i))
LOOP(loop_instant, TA_INSTANT("instant"))
LOOP(loop_zone_dyn, TA_ZONE_DYN(dyn_names[i & 3]))
LOOP(loop_begin_end_dyn, TA_ZONE_BEGIN_DYN(dyn_names[i & 3]); TA_ZONE_END())
LOOP(loop_frame_begin_end, TA_FRAME_BEGIN("step"); TA_FRAME_END("step"))
LOOP(loop_alloc_free, TA_ALLOC_NAMED("pool", &blocks[i & 1023], 64);
     TA_FREE_NAMED("pool", &blocks[i & 1023]))
LOOP(loop_alloc, TA_ALLOC_NAMED("pool", &blocks[i & 1023], 64))
LOOP(loop_fiber_enter, TA_FIBER_ENTER(dyn_names[i & 3]))
LOOP(loop_lock_name, TA_LOCK_NAME(&blocks[i & 7], "lock"))
LOOP(loop_counter_config, TA_COUNTER_CONFIG("counter", TA_UNIT_BYTES))
LOOP(loop_app_info, TA_APP_INFO("round %d", (int)i))
LOOP(loop_fiber, TA_FIBER_ENTER(dyn_names[i & 3]); TA_FIBER_LEAVE())
LOOP(loop_section, TA_SECTION_ENTER("pass"); TA_SECTION_LEAVE("pass"))
LOOP(loop_off_zone, TA_ZONE_C(off, "off zone"))
LOOP(loop_off_begin_end, TA_ZONE_BEGIN_C(off, "off begin"); TA_ZONE_END())

NOHOOK static uint64_t loop_call(long n)
{
	uint64_t t0 = now_ns();

	/* empty() stores i itself. */
	for (long i = 0; i < n; i++)
		empty(i);
	return now_ns() - t0;
}

NOHOOK int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		uint64_t (*loop)(long);
	} loops[] = {
	    {"zone", loop_zone},
	    {"begin_end", loop_begin_end},
	    {"counter", loop_counter},
	    {"message", loop_message},
	    {"instant", loop_instant},
	    {"zone_dyn", loop_zone_dyn},
	    {"begin_end_dyn", loop_begin_end_dyn},
	    {"frame_begin_end", loop_frame_begin_end},
	    {"alloc_free", loop_alloc_free},
	    {"alloc", loop_alloc},
	    {"fiber_enter", loop_fiber_enter},
	    {"lock_name", loop_lock_name},
	    {"counter_config", loop_counter_config},
	    {"app_info", loop_app_info},
	    {"fiber", loop_fiber},
	    {"section", loop_section},
	    {"off_zone", loop_off_zone},
	    {"off_begin_end", loop_off_begin_end},
	    {"call", loop_call},
	};
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	uint64_t base;

	(void)ta_channel_set("off", 0);
	/* Once each first: the sites register, the pages are touched. */
	for (size_t k = 0; k < sizeof(loops) / sizeof(loops[0]); k++)
		loops[k].loop(1000);
	base = loop_empty(n);
	printf("empty %llu\n", (unsigned long long)base);
	for (size_t k = 0; k < sizeof(loops) / sizeof(loops[0]); k++) {
		uint64_t t = loops[k].loop(n);

		printf("%s %lld\n", loops[k].name, (long long)t - (long long)base);
	}
	return 0;
}
