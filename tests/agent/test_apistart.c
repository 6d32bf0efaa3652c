/* SPDX-License-Identifier: MIT */
/*
 * test_apistart.c - the manual API's events made before the agent runs
 * (agent/api.c): the one case where the start cannot be waited for, a
 * call inside its own thread's start (a signal handler's, made to look so
 * here as ring.c's slow path does: the thread's block is the busy
 * placeholder), is counted lost with cause `starting`, never dropped
 * uncounted, and leaves the site to be registered once the agent runs; an
 * agent that cannot start leaves every gate reading off, so the macros stop
 * calling in.  Each test runs in its own process (Check's fork mode), so
 * each starts the agent afresh.
 */
#define _GNU_SOURCE
#include <check.h>

#include "../check_run.h"
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define TA_AGENT_SIDE_
#include <traceagent.h>

#include "agent.h"
#include "flusher.h"
#include "ring.h"

static char dir[256], dump[300];

static void setup(void)
{
	const char *tmp = getenv("TMPDIR");

	snprintf(dir, sizeof(dir), "%s/ta-test-apistart-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(dump, sizeof(dump), "%s/api.trace", dir);
	setenv("TRACEAGENT_OUTPUT", dump, 1);
	setenv("TRACEAGENT_CONTROL", "off", 1);
}

static void teardown(void)
{
	unlink(dump);
	rmdir(dir);
}

#define SITE(var, kind, name)                                                                      \
	static struct ta_site_ var = {                                                             \
	    &var.first, 1u, (kind), TA_SITE_ABI_, (name), __FILE__, NULL, (uint32_t)__LINE__, 0u}

static uint64_t lost_starting(void)
{
	uint64_t by[TA_LOST_NCAUSES];

	ta_flusher_lost_by(by);
	return by[TA_LOST_STARTING];
}

START_TEST(nested_start_counted)
{
	SITE(zone, TA_KIND_ZONE_, "job");
	SITE(counter, TA_KIND_COUNTER_, "done");
	struct ta_block *b = ta_cur;

	ck_assert_uint_eq(__atomic_load_n(&ta_state, __ATOMIC_RELAXED), TA_S_UNINIT);
	/* Inside this thread's own slow path or start. */
	ta_cur_stop();
	ck_assert_ptr_null(ta_zone_enter_(&zone));
	ta_counter_(&counter, 7);
	ck_assert_int_eq(ta_channel_set_("net", 1), -1);
	ta_cur = b;
	ck_assert_uint_eq(__atomic_load_n(&ta_state, __ATOMIC_RELAXED), TA_S_UNINIT);
	ck_assert_uint_eq(lost_starting(), 3);
	/* Not registered: the settings were not known. */
	ck_assert(zone.gate == &zone.first);
	ck_assert(counter.gate == &counter.first);

	/* Out of it, the same calls start the agent and are recorded. */
	ck_assert_ptr_eq(ta_zone_enter_(&zone), &zone);
	ck_assert_uint_eq(__atomic_load_n(&ta_state, __ATOMIC_RELAXED), TA_S_RUNNING);
	ta_counter_(&counter, 7);
	ta_zone_exit_(&zone);
	ck_assert_int_eq(ta_channel_set_("net", 1), 0);
	ck_assert(zone.gate != &zone.first);
	ck_assert_uint_eq(*zone.gate, 1);
	ck_assert_uint_eq(*counter.gate, 1);
	ck_assert_uint_eq(lost_starting(), 3);
	ta_agent_shutdown();
}
END_TEST

START_TEST(no_start_gates_off)
{
	SITE(zone, TA_KIND_ZONE_, "job");
	SITE(late, TA_KIND_INSTANT_, "late");
	int fd = open(dump, O_WRONLY | O_CREAT | O_EXCL, 0600);

	/* A file is there: the agent does not start (and says so). */
	ck_assert_int_ge(fd, 0);
	close(fd);
	ck_assert_ptr_null(ta_zone_enter_(&zone));
	ck_assert_uint_eq(__atomic_load_n(&ta_state, __ATOMIC_RELAXED), TA_S_STOPPED);
	ck_assert(zone.gate != &zone.first);
	/* What the macros read before they call: off, so they call no more. */
	ck_assert_uint_eq(*zone.gate, 0);
	ta_instant_(&late);
	ck_assert(late.gate != &late.first);
	ck_assert_uint_eq(*late.gate, 0);
	ck_assert_uint_eq(lost_starting(), 0);
}
END_TEST

static Suite *apistart_suite(void)
{
	Suite *s = suite_create("apistart");
	TCase *tc = tcase_create("apistart");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, nested_start_counted);
	tcase_add_test(tc, no_start_gates_off);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ta_check_run(apistart_suite());
}
