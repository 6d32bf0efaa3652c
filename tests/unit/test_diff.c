/* SPDX-License-Identifier: MIT */
/*
 * test_diff.c - `traceagent diff` (analyzer/cmds/diff.c), run as the real command
 * on two synthetic dumps whose differences are known exactly: functions
 * matched by name and module file name across different paths and load
 * addresses, rows of one dump with the same name and module file name
 * summed, functions present on one side only, the orderings, --top, the
 * JSON, the table, and the exit statuses.
 */
#include "cmdtest.h"
#include "../check_run.h"

static char link_dir[64], link_path[256];

/* A second path to this executable, with the same file name. */
static void make_link(void)
{
	snprintf(link_dir, sizeof(link_dir), "/tmp/ta-diff-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(link_dir));
	snprintf(link_path, sizeof(link_path), "%s/%s", link_dir, strrchr(self_path, '/') + 1);
	ck_assert_int_eq(symlink(self_path, link_path), 0);
}

static void drop_link(void)
{
	unlink(link_path);
	rmdir(link_dir);
}

/* fa(100) { fb(30) } at the given load bias. */
static void a_with_b(struct ta_encoder *e, uint64_t *t, uint64_t b)
{
	ev(e, *t, fa - bias + b, 0);
	ev(e, *t + 10, fb - bias + b, 0);
	ev(e, *t + 40, fb - bias + b, 1);
	ev(e, *t + 100, fa - bias + b, 1);
	*t += 200;
}

static void a_alone(struct ta_encoder *e, uint64_t *t, uint64_t b)
{
	ev(e, *t, fa - bias + b, 0);
	ev(e, *t + 100, fa - bias + b, 1);
	*t += 200;
}

/*
 * Ticks are ns, from 0 at the process start.  Base: this executable at its own path and bias,
 * fa{fb} twice; the same file through the link at another place, fa once.  New: only the link, at
 * yet another place, fa four times and fc once.
 *
 *           base                     new
 *   fa  3 calls, 300 total, 240 self   4, 400, 400
 *   fb  2 calls,  60 total,  60 self   -
 *   fc  -                               1, 1000, 1000
 */
static void dumps(char *base_path, char *new_path)
{
	struct dumpgen g;
	struct ta_encoder e;
	uint64_t t = 1000, b2 = bias + (1ull << 41), b3 = bias + (1ull << 42);

	dg_init(&g, 100);
	dg_process(&g, 0, TA_CLOCK_MONOTONIC, 0, self_path);
	dg_module(&g, self_path, bias, 1, bias, bias + (1ull << 40));
	dg_module(&g, link_path, b2, 0, b2, b2 + (1ull << 40));
	ta_encoder_init(&e, 10);
	ta_encoder_begin(&e, t);
	a_with_b(&e, &t, bias);
	a_with_b(&e, &t, bias);
	a_alone(&e, &t, b2);
	dg_events(&g, &e);
	ta_encoder_free(&e);
	dg_end(&g, t, t, 10, 0, 1, 0);
	dg_write_tmp(&g, base_path);
	dg_free(&g);

	t = 5000;
	dg_init(&g, 200);
	dg_process(&g, 0, TA_CLOCK_MONOTONIC, 0, link_path);
	dg_module(&g, link_path, b3, 1, b3, b3 + (1ull << 40));
	ta_encoder_init(&e, 20);
	ta_encoder_begin(&e, t);
	for (int i = 0; i < 4; i++)
		a_alone(&e, &t, b3);
	ev(&e, t, fc - bias + b3, 0);
	ev(&e, t + 1000, fc - bias + b3, 1);
	t += 1000;
	dg_events(&g, &e);
	ta_encoder_free(&e);
	dg_end(&g, t, t, 10, 0, 1, 0);
	dg_write_tmp(&g, new_path);
	dg_free(&g);
}

START_TEST(json)
{
	struct out *o = malloc(sizeof(*o));
	char base[64], now[64], want[8192];
	const char *mod;

	setup();
	make_link();
	dumps(base, now);
	mod = strrchr(self_path, '/') + 1;
	run(o, "diff", "--json", base, now, NULL);
	ck_assert_int_eq(o->status, 0);
	ck_assert_str_eq(o->err, "");
	snprintf(
	    want, sizeof(want),
	    "{\"base\": {\"dump\": \"%s\", \"complete\": true, \"events\": 10, "
	    "\"duration_ns\": 1600},\n"
	    " \"new\": {\"dump\": \"%s\", \"complete\": true, \"events\": 10, "
	    "\"duration_ns\": 6800},\n"
	    " \"functions\": [\n"
	    "  {\"name\": \"report_fn_c\", \"module\": \"%s\", \"base_calls\": 0, "
	    "\"new_calls\": 1, \"base_total_ns\": 0, \"new_total_ns\": 1000, "
	    "\"base_self_ns\": 0, \"new_self_ns\": 1000, \"base_open\": 0, \"new_open\": 0, "
	    "\"base_partial\": 0, \"new_partial\": 0, \"total_change_ns\": 1000, "
	    "\"total_change_pct\": null, \"self_change_ns\": 1000, \"self_change_pct\": null},\n"
	    "  {\"name\": \"report_fn_a\", \"module\": \"%s\", \"base_calls\": 3, "
	    "\"new_calls\": 4, \"base_total_ns\": 300, \"new_total_ns\": 400, "
	    "\"base_self_ns\": 240, \"new_self_ns\": 400, \"base_open\": 0, \"new_open\": 0, "
	    "\"base_partial\": 0, \"new_partial\": 0, \"total_change_ns\": 100, "
	    "\"total_change_pct\": 33.33, \"self_change_ns\": 160, \"self_change_pct\": 66.67},\n"
	    "  {\"name\": \"report_fn_b\", \"module\": \"%s\", \"base_calls\": 2, "
	    "\"new_calls\": 0, \"base_total_ns\": 60, \"new_total_ns\": 0, "
	    "\"base_self_ns\": 60, \"new_self_ns\": 0, \"base_open\": 0, \"new_open\": 0, "
	    "\"base_partial\": 0, \"new_partial\": 0, \"total_change_ns\": -60, "
	    "\"total_change_pct\": -100.00, \"self_change_ns\": -60, \"self_change_pct\": "
	    "-100.00}\n"
	    " ]}\n",
	    base, now, mod, mod, mod);
	ck_assert_str_eq(o->out, want);
	/* Swapped: the same rows, every change the other way. */
	run(o, "diff", "--json", now, base, NULL);
	ck_assert_int_eq(o->status, 0);
	ck_assert_ptr_nonnull(strstr(
	    o->out, "\"base_calls\": 4, \"new_calls\": 3, "
		    "\"base_total_ns\": 400, \"new_total_ns\": 300, "
		    "\"base_self_ns\": 400, \"new_self_ns\": 240, "
		    "\"base_open\": 0, \"new_open\": 0, \"base_partial\": 0, "
		    "\"new_partial\": 0, \"total_change_ns\": -100, \"total_change_pct\": -25.00"));
	unlink(base);
	unlink(now);
	drop_link();
	free(o);
}
END_TEST

/* The order of the three functions in the output, as letters. */
static void order(const char *out, char *got)
{
	const char *p[3] = {strstr(out, "report_fn_a"), strstr(out, "report_fn_b"),
			    strstr(out, "report_fn_c")};
	int n = 0;

	for (;;) {
		int best = -1;

		for (int i = 0; i < 3; i++)
			if (p[i] && (best < 0 || p[i] < p[best]))
				best = i;
		if (best < 0)
			break;
		got[n++] = (char)('a' + best);
		p[best] = NULL;
	}
	got[n] = 0;
}

START_TEST(sort_and_top)
{
	struct out *o = malloc(sizeof(*o));
	char base[64], now[64], got[4];

	setup();
	make_link();
	dumps(base, now);
	run(o, "diff", base, now, NULL);
	order(o->out, got);
	ck_assert_str_eq(got, "cab");
	/* self: c 1000, a 160, b 60 */
	run(o, "diff", "--sort=self", base, now, NULL);
	order(o->out, got);
	ck_assert_str_eq(got, "cab");
	/* calls: b 2, then a and c 1 each, by name */
	run(o, "diff", "--sort=calls", base, now, NULL);
	order(o->out, got);
	ck_assert_str_eq(got, "bac");
	run(o, "diff", "--sort=name", "--json", base, now, NULL);
	order(o->out, got);
	ck_assert_str_eq(got, "abc");
	run(o, "diff", "--top=2", "--sort=calls", base, now, NULL);
	order(o->out, got);
	ck_assert_str_eq(got, "ba");
	run(o, "diff", "--function=*_[bc]", base, now, NULL);
	order(o->out, got);
	ck_assert_str_eq(got, "cb");
	unlink(base);
	unlink(now);
	drop_link();
	free(o);
}
END_TEST

START_TEST(text)
{
	struct out *o = malloc(sizeof(*o));
	char base[64], now[64], want[8192];
	const char *mod;

	setup();
	make_link();
	dumps(base, now);
	mod = strrchr(self_path, '/') + 1;
	run(o, "diff", base, now, NULL);
	ck_assert_int_eq(o->status, 0);
	snprintf(want, sizeof(want),
		 "base: %s\nnew:  %s\n\n"
		 "base calls  new calls   base total    new total    total diff   total%%"
		 "    base self     new self     self diff    self%%  function  module\n"
		 "         0          1         0 ns     1.000 us     +1.000 us      new"
		 "         0 ns     1.000 us     +1.000 us      new  report_fn_c  %s\n"
		 "         3          4       300 ns       400 ns       +100 ns   +33.3%%"
		 "       240 ns       400 ns       +160 ns   +66.7%%  report_fn_a  %s\n"
		 "         2          0        60 ns         0 ns        -60 ns  -100.0%%"
		 "        60 ns         0 ns        -60 ns  -100.0%%  report_fn_b  %s\n",
		 base, now, mod, mod, mod);
	ck_assert_str_eq(o->out, want);
	unlink(base);
	unlink(now);
	drop_link();
	free(o);
}
END_TEST

START_TEST(usage_and_errors)
{
	struct out *o = malloc(sizeof(*o));
	char base[64], now[64], want[256];

	setup();
	make_link();
	dumps(base, now);
	run(o, "diff", base, NULL);
	ck_assert_int_eq(o->status, 2);
	ck_assert_str_eq(o->err, "traceagent diff: two dumps are needed, BASE and NEW; try "
				 "'traceagent diff --help'\n");
	run(o, "diff", base, now, base, NULL);
	ck_assert_int_eq(o->status, 2);
	run(o, "diff", "--sort=speed", base, now, NULL);
	ck_assert_int_eq(o->status, 2);
	ck_assert_str_eq(o->err,
			 "traceagent diff: --sort: 'speed' is not total, self, calls or name\n");
	run(o, "diff", "--top=x", base, now, NULL);
	ck_assert_int_eq(o->status, 2);
	run(o, "diff", "--help", NULL);
	ck_assert_int_eq(o->status, 0);
	ck_assert_ptr_nonnull(strstr(o->out, "usage: traceagent diff"));
	run(o, "diff", base, "/nonexistent/new.trace", NULL);
	ck_assert_int_eq(o->status, 2);
	ck_assert_str_eq(o->err, "traceagent: /nonexistent/new.trace: No such file or directory\n");
	ck_assert_str_eq(o->out, "");
	/* A damaged side: still compared, status 1. */
	{
		struct dumpgen g;

		dg_init(&g, 1);
		dg_raw(&g, "garbage", 7);
		dg_write_tmp(&g, now);
		dg_free(&g);
	}
	run(o, "diff", "--json", base, now, NULL);
	ck_assert_int_eq(o->status, 1);
	snprintf(want, sizeof(want), "traceagent: %s: chunk 0 at offset 32: truncated", now);
	ck_assert_msg(strstr(o->err, want), "want %s in %s", want, o->err);
	ck_assert_ptr_nonnull(strstr(o->out, "\"new\": {\"dump\": "));
	ck_assert_ptr_nonnull(strstr(o->out, "\"complete\": false"));
	ck_assert_ptr_nonnull(strstr(o->out, "\"base_calls\": 2, \"new_calls\": 0"));
	unlink(base);
	unlink(now);
	drop_link();
	free(o);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("diff");
	TCase *tc = tcase_create("command");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, json);
	tcase_add_test(tc, sort_and_top);
	tcase_add_test(tc, text);
	tcase_add_test(tc, usage_and_errors);
	suite_add_tcase(s, tc);
	return ta_check_run(s);
}
