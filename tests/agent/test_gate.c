/* SPDX-License-Identifier: MIT */
/*
 * test_gate.c - the hooks' gate (ta_fn_gate, agent/api.h) once the agent
 * has started: 1 when `functions` is on, 0 when the settings switch it off
 * or start paused, never left at 2 ("not started"), which would send every
 * hook through the out-of-line start check.  Each test runs in its own
 * process (Check's fork mode), so each starts the agent afresh.
 */
#define _GNU_SOURCE
#include <check.h>

#include "../check_run.h"
#include "../testdir.h"
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "agent.h"
#include "api.h"

static const struct {
	const char *channels, *start;
	uint32_t gate;
} cases[] = {
    {NULL, NULL, 1},	    {"all", NULL, 1},	 {"-functions", NULL, 0},     {"user", NULL, 0},
    {"functions", NULL, 1}, {NULL, "paused", 0}, {"-functions", "paused", 0},
};

START_TEST(gate_after_start)
{
	char path[PATH_MAX + 32], said[1024];
	struct ta_stderr_catch c;
	int gate;

	/* In a directory of the test's own: a fixed name in the temporary
	 * directory may be another run's, and the agent would not trace. */
	ta_test_path(path, sizeof(path), "test-gate", "gate.trace");
	setenv("TRACEAGENT_OUTPUT", path, 1);
	setenv("TRACEAGENT_CONTROL", "off", 1);
	if (cases[_i].channels)
		setenv("TRACEAGENT_CHANNELS", cases[_i].channels, 1);
	if (cases[_i].start)
		setenv("TRACEAGENT_START", cases[_i].start, 1);
	ck_assert_uint_eq(__atomic_load_n(&ta_fn_gate, __ATOMIC_RELAXED), 2);
	/* What the first hook does; an agent that does not trace fails the
	 * test with what it said. */
	ta_stderr_begin(&c, "test-gate");
	gate = ta_fn_gate_start();
	ta_stderr_end(&c, said, sizeof(said));
	ck_assert_msg(__atomic_load_n(&ta_state, __ATOMIC_RELAXED) == TA_S_RUNNING,
		      "the agent did not start: %s", said[0] ? said : "(it said nothing)");
	ck_assert_int_eq(gate, (int)cases[_i].gate);
	ck_assert_uint_eq(__atomic_load_n(&ta_fn_gate, __ATOMIC_RELAXED), cases[_i].gate);
	ck_assert_int_eq(ta_fn_on(), (int)cases[_i].gate);
	ta_agent_shutdown();
	unlink(path);
}
END_TEST

static Suite *gate_suite(void)
{
	Suite *s = suite_create("gate");
	TCase *tc = tcase_create("gate");

	tcase_add_loop_test(tc, gate_after_start, 0, (int)(sizeof(cases) / sizeof(cases[0])));
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ta_check_run(gate_suite());
}
