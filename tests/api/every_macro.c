/* SPDX-License-Identifier: MIT */
/*
 * every_macro.c - a program that uses every macro of include/traceagent.h
 * compiles with every warning and links with no library: without the agent
 * each macro is a load and a branch and records nothing, and
 * ta_channel_set says -1.  Built per language standard, and once with
 * -finstrument-functions, by tests/api/meson.build; every_macro.cc is the
 * C++11 build.
 */
#include <stddef.h>
#include <stdio.h>

#include <traceagent.h>

TA_CHANNEL(net);
TA_CHANNEL(disk);

static int work(int n)
{
	int sum = 0;

	TA_ZONE("work");
	TA_ZONE_TEXT("a text");
	TA_ZONE_VALUE(n);
	for (int i = 0; i < n; i++) {
		TA_ZONE_C(net, "round");
		TA_ZONE("inner");
		sum += i;
	}
	return sum;
}

/* Run-time names: a buffer, a const one, NULL. */
static void dynamic(int n)
{
	char name[32];
	const char *cname = "const name";

	snprintf(name, sizeof(name), "item %d", n);
	TA_ZONE_DYN(name);
	TA_ZONE_DYN_C(net, cname);
	TA_ZONE_DYN((const char *)0);
	TA_ZONE_BEGIN_DYN(name);
	TA_ZONE_BEGIN_DYN_C(disk, "literal too");
	TA_ZONE_END();
	TA_ZONE_END();
}

int main(void)
{
	int sum;

	TA_ZONE_BEGIN("begun");
	TA_ZONE_BEGIN_C(disk, "begun on disk");
	sum = work(10);
	TA_ZONE_END();
	TA_ZONE_END();
	TA_FRAME_MARK();
	TA_FRAME_MARK_NAMED("physics");
	TA_COUNTER("sum", sum);
	TA_COUNTER_C(net, "sum on net", sum);
	TA_COUNTER_F("half", sum / 2.0);
	TA_COUNTER_F_C(disk, "half on disk", 0.5);
	TA_MESSAGE("sum %d", sum);
	TA_MESSAGE("plain");
	TA_MESSAGE_C(net, "on net %s", "too");
	TA_INSTANT("instant");
	TA_INSTANT_C(disk, "instant on disk");
	dynamic(sum);
	TA_FRAME_BEGIN("physics step");
	TA_FRAME_END("physics step");
	TA_COUNTER_CONFIG("sum", TA_UNIT_NUMBER);
	TA_COUNTER_CONFIG("heap", TA_UNIT_BYTES);
	TA_COUNTER_CONFIG_C(net, "load", TA_UNIT_PERCENT);
	TA_APP_INFO("build %s", "abc");
	TA_APP_INFO("plain");
	TA_SECTION_ENTER("level");
	TA_SECTION_ENTER_C(disk, "loading");
	TA_SECTION_LEAVE_C(disk, "loading");
	TA_SECTION_LEAVE("level");
	TA_ALLOC(&sum, sizeof(sum));
	TA_ALLOC_C(net, &sum, 4);
	TA_ALLOC_NAMED("pool", &sum, 4u);
	TA_ALLOC_NAMED_C(disk, "pool on disk", &sum, (size_t)4);
	TA_FREE(&sum);
	TA_FREE_C(net, &sum);
	TA_FREE_NAMED("pool", &sum);
	TA_FREE_NAMED_C(disk, "pool on disk", &sum);
	TA_LOCK_NAME(&sum, "a lock");
	TA_LOCK_NAME_C(net, &sum, "a lock on net");
	TA_FIBER_ENTER("a fiber");
	TA_FIBER_LEAVE();
	TA_FIBER_ENTER_C(disk, "a fiber on disk");
	TA_FIBER_LEAVE();
	if (sum != 45 || ta_channel_set("net", 0) != -1 || ta_channel_set("net", 1) != -1) {
		fprintf(stderr, "every_macro: sum %d, or ta_channel_set worked without the agent\n",
			sum);
		return 1;
	}
	return 0;
}
