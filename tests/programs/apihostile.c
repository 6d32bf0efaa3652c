/* SPDX-License-Identifier: MIT */
/*
 * apihostile.c - the manual API used badly, for tests/e2e/test_apihostile.py:
 * a 100 KB zone text, a message with %n, NULL texts, 10,000 distinct zone
 * sites, an END without a BEGIN, a NaN counter, zones left open at exit;
 * "deep": TA_ZONE_BEGIN nested 300 deep.  It prints the same with and
 * without the agent.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <traceagent.h>

volatile int sink;

/* 10,000 zone sites, "z0000" to "z9999", a thousand each (apisites.c,
 * written by gen_sites.py). */
void sites0(void), sites1(void), sites2(void), sites3(void), sites4(void);
void sites5(void), sites6(void), sites7(void), sites8(void), sites9(void);

__attribute__((noinline)) static void big_text(void)
{
	static char text[100 * 1024 + 1];

	memset(text, 'x', sizeof(text) - 1);
	TA_ZONE("big");
	TA_ZONE_TEXT(text);
}

__attribute__((noinline)) static void messages(void)
{
	int n = 12345;
	/* volatile: the compiler cannot see that it is NULL. */
	const char *volatile none = NULL;

	TA_ZONE("messages");
	TA_MESSAGE("before%n after %d", &n, 7);
	printf("n %d\n", n);
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wformat-security"
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
	TA_MESSAGE(none);
#pragma GCC diagnostic pop
	TA_ZONE_TEXT(none);
}

__attribute__((noinline)) static void unmatched_end(void)
{
	TA_ZONE_END(); /* unmatched here */
}

__attribute__((noinline)) static void nan_counter(void)
{
	TA_COUNTER_F("nan", NAN);
	TA_COUNTER_F("inf", -INFINITY);
	TA_COUNTER("min", INT64_MIN);
}

__attribute__((noinline)) static void deep(void)
{
	for (int i = 0; i < 300; i++)
		TA_ZONE_BEGIN("deep");
	for (int i = 0; i < 300; i++)
		TA_ZONE_END();
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "deep")) {
		deep();
		printf("deep\n");
		return 0;
	}
	big_text();
	messages();
	sites0(), sites1(), sites2(), sites3(), sites4();
	sites5(), sites6(), sites7(), sites8(), sites9();
	unmatched_end();
	nan_counter();
	TA_ZONE_BEGIN("left open");
	TA_ZONE_BEGIN("left open inner");
	printf("sink %d\n", sink);
	exit(0);
}
