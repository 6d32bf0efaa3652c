/* SPDX-License-Identifier: MIT */
/*
 * apiviews.c - the manual API with known numbers, for the views' tests
 * (tests/e2e/test_apiviews.py): counters, messages, instants, a zone with
 * a text and a value, a channel of its own, frame marks, and one helper
 * thread.
 */
#include <math.h>
#include <pthread.h>

#include "traceagent.h"

TA_CHANNEL(net);

/* noinline: a function row of its own at every optimisation level. */
static __attribute__((noinline)) void send_one(int i)
{
	TA_ZONE_C(net, "send");
	TA_COUNTER_C(net, "sent", i + 1);
}

static __attribute__((noinline)) void work(void)
{
	TA_ZONE("work");
	TA_ZONE_TEXT("item 7");
	TA_ZONE_VALUE(7);
	TA_INSTANT("checkpoint");
}

static void *helper(void *arg)
{
	(void)arg;
	TA_MESSAGE("helper up");
	TA_INSTANT("helper done");
	return NULL;
}

/* Here, not above: the functions above keep their lines (test_srcline). */
#include <stdlib.h>

int main(void)
{
	pthread_t t;

	for (int i = 0; i < 100; i++)
		TA_COUNTER("queue", i);
	for (int i = 0; i < 10; i++)
		TA_COUNTER_F("ratio", i / 4.0);
	TA_COUNTER_F("bad", NAN);
	/* Two counters whose averages do not come out round
	 * (test_counters_digits). */
	if (getenv("APIVIEWS_THIRDS")) {
		TA_COUNTER("thirds", 1);
		TA_COUNTER("thirds", 2);
		TA_COUNTER("thirds", 2);
		TA_COUNTER_F("quarters", 0.25);
		TA_COUNTER_F("quarters", 0.5);
		TA_COUNTER_F("quarters", 0.5);
	}
	TA_MESSAGE("level %s loaded", "three");
	TA_MESSAGE("score %d", 42);
	work();
	for (int i = 0; i < 5; i++)
		send_one(i);
	/* Off, one more send (its zone and counter not recorded), on: two
	 * switches. */
	ta_channel_set("net", 0);
	send_one(99);
	ta_channel_set("net", 1);
	TA_ZONE_END(); /* no zone begun: counted, shown */
	for (int i = 0; i < 4; i++)
		TA_FRAME_MARK();
	if (pthread_create(&t, NULL, helper, NULL) != 0)
		return 1;
	pthread_join(t, NULL);
	return 0;
}
