/* SPDX-License-Identifier: MIT */
/*
 * test_cmdopts.c - the subcommands' option parser (analyzer/lib/cmdopts.c) and
 * the filters it hands to timeline.c: which words are options and values,
 * what is refused, and the exact messages and exit statuses.
 */
#define _GNU_SOURCE
#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check_run.h"
#include "cmdopts.h"
#include "timeline.h"

enum { O_TIME = TA_OPT_OWN, O_BUFFER };

static const struct ta_opt table[] = {
    {"--json", TA_ARG_NONE, TA_OPT_JSON},
    {"--time", TA_ARG_NONE, O_TIME}, /* a prefix of the next one */
    {"--time-range", TA_ARG_EQ, TA_OPT_TIME_RANGE},
    {"--tid", TA_ARG_EQ, TA_OPT_TID},
    {"--depth", TA_ARG_EQ, TA_OPT_DEPTH},
    {"--function", TA_ARG_EQ, TA_OPT_FUNCTION},
    {"--top", TA_ARG_EQ, TA_OPT_TOP},
    {"--sort", TA_ARG_EQ, TA_OPT_SORT},
    {"-o", TA_ARG_NEXT, TA_OPT_OUTPUT},
    {"--output", TA_ARG_EQ, TA_OPT_OUTPUT},
    {"--buffer", TA_ARG_EITHER, O_BUFFER},
    {NULL, TA_ARG_NONE, 0},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: traceagent t [OPTIONS] DUMP\n");
}

/* ---- capturing stdout and stderr (each test runs in its own process) ---- */

static FILE *cap_out, *cap_err;
static int saved_out, saved_err;
static char got_out[4096], got_err[4096];

static void capture(void)
{
	fflush(stdout);
	fflush(stderr);
	cap_out = tmpfile();
	cap_err = tmpfile();
	ck_assert(cap_out && cap_err);
	saved_out = dup(1);
	saved_err = dup(2);
	dup2(fileno(cap_out), 1);
	dup2(fileno(cap_err), 2);
}

static void slurp(FILE *f, char *buf, size_t n)
{
	size_t len;

	rewind(f);
	len = fread(buf, 1, n - 1, f);
	buf[len] = 0;
	fclose(f);
}

static void release(void)
{
	fflush(stdout);
	fflush(stderr);
	dup2(saved_out, 1);
	dup2(saved_err, 2);
	close(saved_out);
	close(saved_err);
	slurp(cap_out, got_out, sizeof(got_out));
	slurp(cap_err, got_err, sizeof(got_err));
}

/* ---- running the parser ----------------------------------------------------------- */

static const char *label(int id)
{
	switch (id) {
	case TA_OPT_JSON:
		return "json";
	case O_TIME:
		return "time";
	case TA_OPT_TIME_RANGE:
		return "range";
	case TA_OPT_TID:
		return "tid";
	case TA_OPT_DEPTH:
		return "depth";
	case TA_OPT_FUNCTION:
		return "function";
	case TA_OPT_TOP:
		return "top";
	case TA_OPT_SORT:
		return "sort";
	case TA_OPT_OUTPUT:
		return "out";
	case O_BUFFER:
		return "buffer";
	}
	return "?";
}

static char trace[4096];
static size_t trace_len;

/* Appends one token to trace. */
__attribute__((format(printf, 1, 2))) static void token(const char *fmt, ...)
{
	va_list ap;

	if (trace_len)
		trace[trace_len++] = ' ';
	va_start(ap, fmt);
	trace_len += (size_t)vsnprintf(trace + trace_len, sizeof(trace) - trace_len, fmt, ap);
	va_end(ap);
	ck_assert_uint_lt(trace_len, sizeof(trace));
}

/*
 * Parses args (NULL-terminated, after the command's name) and returns what
 * ta_opts_next said, one token a call: "json", "tid=5", "arg:x",
 * "exit:2", "end@3" (the index of the next word).  The
 * output goes to got_out and got_err.
 */
static const char *parse(unsigned flags, const char *const *args)
{
	char *argv[32] = {strdup("t")};
	int argc = 1, id;
	struct ta_opts p;

	for (; args[argc - 1]; argc++)
		argv[argc] = strdup(args[argc - 1]);
	ta_opts_init(&p, "t", table, usage, argc, argv);
	p.flags = flags;
	trace_len = 0;
	trace[0] = 0;
	capture();
	while ((id = ta_opts_next(&p)) != TA_OPT_END && id != TA_OPT_EXIT) {
		if (id == TA_OPT_ARG) {
			ck_assert_ptr_null(p.opt);
			ck_assert_ptr_eq(p.arg, p.val);
			token("arg:%s", p.val);
			continue;
		}
		ck_assert_int_eq(id, p.opt->id);
		if (p.val)
			token("%s=%s", label(id), p.val);
		else
			token("%s", label(id));
	}
	if (id == TA_OPT_END)
		token("end@%d", p.i);
	else
		token("exit:%d", p.status);
	release();
	for (int k = 0; k < argc; k++)
		free(argv[k]);
	return trace;
}

#define ARGS(...) ((const char *const[]){__VA_ARGS__, NULL})
#define NOARGS	  ((const char *const[]){NULL})

/* The trace of args, with nothing printed. */
#define QUIET(flags, args, want)                                                                   \
	do {                                                                                       \
		ck_assert_str_eq(parse(flags, args), want);                                        \
		ck_assert_str_eq(got_out, "");                                                     \
		ck_assert_str_eq(got_err, "");                                                     \
	} while (0)

#define UNKNOWN(flags, args, want, opt)                                                            \
	do {                                                                                       \
		ck_assert_str_eq(parse(flags, args), want);                                        \
		ck_assert_str_eq(got_out, "");                                                     \
		ck_assert_str_eq(got_err, "traceagent t: unknown option '" opt                     \
					  "'; try 'traceagent t --help'\n");                       \
	} while (0)

START_TEST(options_and_values)
{
	QUIET(0, NOARGS, "end@1");
	QUIET(0, ARGS("--json", "dump"), "json arg:dump end@3");
	QUIET(0, ARGS("dump", "--json"), "arg:dump json end@3"); /* options after operands */
	/* "=" forms, an empty value, and a value holding '='. */
	QUIET(0, ARGS("--tid=5", "--tid=", "--function=a=b", "--time-range=1ms-2ms"),
	      "tid=5 tid= function=a=b range=1ms-2ms end@5");
	/* A name that is the prefix of another. */
	QUIET(0, ARGS("--time", "--time-range=-1s"), "time range=-1s end@3");
	/* A value is the next word whatever it is, or after "=" (long) or
	 * attached (short), as getopt_long takes it; every kind alike. */
	QUIET(0, ARGS("-o", "f", "--output=g", "--output=", "d"), "out=f out=g out= arg:d end@6");
	QUIET(0, ARGS("-o", "--json", "-o", "--", "-o", "-h"), "out=--json out=-- out=-h end@7");
	QUIET(0, ARGS("-of", "-o=f", "--output", "g"), "out=f out==f out=g end@5");
	QUIET(0, ARGS("--top", "5", "--tid", "7", "--sort", "self", "--time-range", "1s-2s"),
	      "top=5 tid=7 sort=self range=1s-2s end@9");
	QUIET(0, ARGS("--depth", "--json"), "depth=--json end@3");
	QUIET(0, ARGS("--buffer", "4K", "--buffer=8K", "--buffer", "--json"),
	      "buffer=4K buffer=8K buffer=--json end@6");
	/* A flag never takes the next word. */
	QUIET(0, ARGS("--json", "5", "--time", "--tid=1"), "json arg:5 time tid=1 end@5");
}
END_TEST

START_TEST(arg_of_an_option)
{
	struct ta_opts p;
	char w0[] = "t", w1[] = "-o", w2[] = "x", w3[] = "--output=y";
	char *argv[] = {w0, w1, w2, w3, NULL};

	ta_opts_init(&p, "t", table, usage, 4, argv);
	ck_assert_int_eq(ta_opts_next(&p), TA_OPT_OUTPUT);
	ck_assert_str_eq(p.arg, "-o");
	ck_assert_str_eq(p.val, "x");
	ck_assert_ptr_eq(p.opt, &table[8]);
	ck_assert_int_eq(ta_opts_next(&p), TA_OPT_OUTPUT);
	ck_assert_str_eq(p.arg, "--output=y");
	ck_assert_str_eq(p.val, "y");
	ck_assert_ptr_eq(p.opt, &table[9]);
	ck_assert_int_eq(ta_opts_next(&p), TA_OPT_END);
	ck_assert_int_eq(ta_opts_next(&p), TA_OPT_END);
}
END_TEST

START_TEST(unknown_options)
{
	UNKNOWN(0, ARGS("--bogus"), "exit:2", "--bogus");
	UNKNOWN(0, ARGS("-x"), "exit:2", "-x");
	/* A flag given a value, a value option without "=", forms not declared. */
	UNKNOWN(0, ARGS("--json=1"), "exit:2", "--json=1");
	UNKNOWN(0, ARGS("--jsonx"), "exit:2", "--jsonx");
	UNKNOWN(0, ARGS("--tidx=5"), "exit:2", "--tidx=5");
	UNKNOWN(0, ARGS("--outputf"), "exit:2", "--outputf");
	UNKNOWN(0, ARGS("--time=1"), "exit:2", "--time=1");
	UNKNOWN(0, ARGS("---json"), "exit:2", "---json");
	UNKNOWN(0, ARGS("--=x"), "exit:2", "--=x");
	UNKNOWN(0, ARGS("--help=1"), "exit:2", "--help=1");
	/* In order: what came before is taken, nothing after is read. */
	UNKNOWN(0, ARGS("--json", "d", "--bogus", "--help"), "json arg:d exit:2", "--bogus");
}
END_TEST

#define MISSING(flags, args, want, opt)                                                            \
	do {                                                                                       \
		ck_assert_str_eq(parse(flags, args), want);                                        \
		ck_assert_str_eq(got_out, "");                                                     \
		ck_assert_str_eq(got_err, "traceagent t: option '" opt                             \
					  "' needs a value; try 'traceagent t --help'\n");         \
	} while (0)

START_TEST(missing_values)
{
	MISSING(0, ARGS("-o"), "exit:2", "-o");
	MISSING(0, ARGS("d", "--buffer"), "arg:d exit:2", "--buffer");
	MISSING(0, ARGS("--json", "--top"), "json exit:2", "--top");
	MISSING(0, ARGS("-j"), "exit:2", "-j");
	QUIET(0, ARGS("--buffer="), "buffer= end@2");
}
END_TEST

START_TEST(help)
{
	ck_assert_str_eq(parse(0, ARGS("--json", "--help", "--bogus")), "json exit:0");
	ck_assert_str_eq(got_out, "usage: traceagent t [OPTIONS] DUMP\n");
	ck_assert_str_eq(got_err, "");
	ck_assert_str_eq(parse(0, ARGS("-h")), "exit:0");
	ck_assert_str_eq(got_out, "usage: traceagent t [OPTIONS] DUMP\n");
	UNKNOWN(0, ARGS("-hx"), "exit:2", "-hx");
}
END_TEST

START_TEST(positional_words)
{
	/* A lone "-" and an empty word are operands; "--" makes every word
	 * after it one, "--" too. */
	QUIET(0, ARGS("-", "", "x"), "arg:- arg: arg:x end@4");
	QUIET(0, ARGS("a", "--", "--json", "-o", "--", "-"),
	      "arg:a arg:--json arg:-o arg:-- arg:- end@7");
	QUIET(0, ARGS("--"), "end@2");
	QUIET(0, ARGS("-o", "f", "--", "-o"), "out=f arg:-o end@5");
}
END_TEST

START_TEST(leading_options)
{
	/* Options up to the first word that is not one: i is that word. */
	QUIET(TA_OPTS_LEADING, ARGS("-o", "f", "prog", "--json", "-o"), "out=f end@3");
	QUIET(TA_OPTS_LEADING, ARGS("--buffer", "4K", "--", "-prog", "x"), "buffer=4K end@4");
	QUIET(TA_OPTS_LEADING, ARGS("--json"), "json end@2");
	QUIET(TA_OPTS_LEADING, ARGS("", "x"), "end@1");
	QUIET(TA_OPTS_LEADING, NOARGS, "end@1");
	MISSING(TA_OPTS_LEADING, ARGS("--buffer"), "exit:2", "--buffer");
	/* A lone "-" is an option there. */
	UNKNOWN(TA_OPTS_LEADING, ARGS("-", "prog"), "exit:2", "-");
	ck_assert_str_eq(parse(TA_OPTS_LEADING, ARGS("-h", "prog")), "exit:0");
}
END_TEST

/* ---- the shared values ----------------------------------------------------------------- */

/* A parser stopped at the option of the one argument a. */
static void at(struct ta_opts *p, const char *a)
{
	/* The words live until the next call: what a test checks after
	 * taking an option may point into them. */
	static char *argv[3];

	free(argv[0]);
	free(argv[1]);
	argv[0] = strdup("t");
	argv[1] = strdup(a);
	ta_opts_init(p, "t", table, usage, 2, argv);
	ck_assert_int_gt(ta_opts_next(p), TA_OPT_ARG);
}

START_TEST(numbers)
{
	struct ta_opts p;
	uint64_t n = 7;

	at(&p, "--tid=18446744073709551615");
	ck_assert_int_eq(ta_opts_u64(&p, "is not a thread id", &n), 0);
	ck_assert_uint_eq(n, UINT64_MAX);
	at(&p, "--tid=0");
	ck_assert_int_eq(ta_opts_u64(&p, "is not a thread id", &n), 0);
	ck_assert_uint_eq(n, 0);
	at(&p, "--top=01");
	ck_assert_int_eq(ta_opts_top(&p, &n), 0);
	ck_assert_uint_eq(n, 1);
	for (const char *const *v = ARGS("--tid=", "--tid=x", "--tid=-1", "--tid=+1", "--tid= 1",
					 "--tid=1x", "--tid=18446744073709551616");
	     *v; v++) {
		char want[128];

		at(&p, *v);
		capture();
		ck_assert_int_eq(ta_opts_u64(&p, "is not a thread id", &n), 2);
		release();
		snprintf(want, sizeof(want), "traceagent t: --tid: '%s' is not a thread id\n",
			 *v + 6);
		ck_assert_str_eq(got_out, "");
		ck_assert_str_eq(got_err, want);
	}
	for (const char *const *v = ARGS("--top=0", "--top=", "--top=00", "--top=-1"); *v; v++) {
		char want[128];

		at(&p, *v);
		capture();
		ck_assert_int_eq(ta_opts_top(&p, &n), 2);
		release();
		snprintf(want, sizeof(want), "traceagent t: --top: '%s' is not a positive number\n",
			 *v + 6);
		ck_assert_str_eq(got_err, want);
	}
}
END_TEST

START_TEST(choices)
{
	static const char *const two[] = {"chrome", "folded", NULL};
	static const char *const three[] = {"a", "b", "c", NULL};
	struct ta_opts p;
	enum ta_sort_key key = TA_SORT_TOTAL;
	int k = -1;

	at(&p, "--sort=name");
	ck_assert_int_eq(ta_opts_sort(&p, &key), 0);
	ck_assert_int_eq(key, TA_SORT_NAME);
	at(&p, "--sort=self");
	ck_assert_int_eq(ta_opts_sort(&p, &key), 0);
	ck_assert_int_eq(key, TA_SORT_SELF);
	at(&p, "--sort=Self");
	capture();
	ck_assert_int_eq(ta_opts_sort(&p, &key), 2);
	release();
	ck_assert_int_eq(key, TA_SORT_SELF);
	ck_assert_str_eq(got_err,
			 "traceagent t: --sort: 'Self' is not total, self, calls or name\n");
	at(&p, "--sort=");
	capture();
	ck_assert_int_eq(ta_opts_choice(&p, two, &k), 2);
	ck_assert_int_eq(ta_opts_choice(&p, three, &k), 2);
	release();
	ck_assert_int_eq(k, -1);
	ck_assert_str_eq(got_err, "traceagent t: --sort: '' is not chrome or folded\n"
				  "traceagent t: --sort: '' is not a, b or c\n");
	at(&p, "--sort=folded");
	ck_assert_int_eq(ta_opts_choice(&p, two, &k), 0);
	ck_assert_int_eq(k, 1);
}
END_TEST

START_TEST(dumps)
{
	struct ta_opts p;
	char w0[] = "t", w1[] = "a", w2[] = "b";
	char *argv[] = {w0, w1, w2, NULL};
	const char *path = NULL;

	ta_opts_init(&p, "t", table, usage, 3, argv);
	capture();
	ck_assert_int_eq(ta_opts_need_dump(&p, path), 2);
	ck_assert_int_eq(ta_opts_next(&p), TA_OPT_ARG);
	ck_assert_int_eq(ta_opts_dump(&p, &path), 0);
	ck_assert_int_eq(ta_opts_need_dump(&p, path), 0);
	ck_assert_int_eq(ta_opts_next(&p), TA_OPT_ARG);
	ck_assert_int_eq(ta_opts_dump(&p, &path), 2);
	release();
	ck_assert_str_eq(path, "a");
	ck_assert_str_eq(got_out, "");
	ck_assert_str_eq(got_err, "traceagent t: no dump given; try 'traceagent t --help'\n"
				  "traceagent t: one dump at a time ('a' and 'b')\n");
}
END_TEST

/* The shared options stored where the command says; the others, and those
 * without a target, returned as ta_opts_next returns them. */
START_TEST(shared_options_into)
{
	char w0[] = "t", w1[] = "--json", w2[] = "d", w3[] = "--top=3", w4[] = "--sort",
	     w5[] = "self", w6[] = "-o", w7[] = "f", w8[] = "--function=g*", w9[] = "--time",
	     w10[] = "--tid=5", w11[] = "--top=0";
	char *argv[] = {w0, w1, w2, w3, w4, w5, w6, w7, w8, w9, w10, w11, NULL};
	const char *dump = NULL, *out = NULL;
	enum ta_sort_key sort = TA_SORT_TOTAL;
	uint64_t top = 0;
	int json = 0;
	/* No target for --function: the command takes it (as replay's). */
	const struct ta_opts_into into = {
	    .dump = &dump, .json = &json, .top = &top, .sort = &sort, .output = &out};
	struct ta_opts p;

	ta_opts_init(&p, "t", table, usage, 12, argv);
	capture();
	ck_assert_int_eq(ta_opts_next_into(&p, &into), TA_OPT_FUNCTION);
	ck_assert_str_eq(p.val, "g*");
	ck_assert_int_eq(ta_opts_next_into(&p, &into), O_TIME);
	ck_assert_int_eq(ta_opts_next_into(&p, &into), TA_OPT_TID);
	ck_assert_str_eq(p.val, "5");
	ck_assert_uint_eq(top, 3);
	ck_assert_int_eq(ta_opts_next_into(&p, &into), TA_OPT_EXIT);
	ck_assert_int_eq(p.status, 2);
	ck_assert_int_eq(ta_opts_next_into(&p, &into), TA_OPT_END);
	release();
	ck_assert_int_eq(json, 1);
	ck_assert_str_eq(dump, "d");
	ck_assert_int_eq(sort, TA_SORT_SELF);
	ck_assert_str_eq(out, "f");
	ck_assert_str_eq(got_out, "");
	ck_assert_str_eq(got_err, "traceagent t: --top: '0' is not a positive number\n");
}
END_TEST

/* The filters timeline.c takes from the parser. */
START_TEST(filters)
{
	struct ta_tlopts o;
	struct ta_opts p;

	memset(&o, 0, sizeof(o));
	o.to = UINT64_MAX;
	at(&p, "--tid=3,4");
	ck_assert_int_eq(ta_tlopts_take(&o, &p), 0);
	ck_assert(ta_tidset_has(&o.tids, 4) && !ta_tidset_has(&o.tids, 5));
	at(&p, "--time-range=1ms-");
	ck_assert_int_eq(ta_tlopts_take(&o, &p), 0);
	ck_assert_uint_eq(o.from, 1000000);
	ck_assert_uint_eq(o.to, UINT64_MAX);
	at(&p, "--depth=12");
	ck_assert_int_eq(ta_tlopts_take(&o, &p), 0);
	ck_assert_uint_eq(o.max_depth, 12);
	at(&p, "--function=f*");
	ck_assert_int_eq(ta_tlopts_take(&o, &p), 0);
	ck_assert_str_eq(o.function, "f*");
	ck_assert_uint_eq(o.given,
			  TA_TLOPT_TID | TA_TLOPT_RANGE | TA_TLOPT_DEPTH | TA_TLOPT_FUNCTION);

	capture();
	at(&p, "--tid=x");
	ck_assert_int_eq(ta_tlopts_take(&o, &p), 2);
	at(&p, "--time-range=5");
	ck_assert_int_eq(ta_tlopts_take(&o, &p), 2);
	at(&p, "--depth=0");
	ck_assert_int_eq(ta_tlopts_take(&o, &p), 2);
	at(&p, "--depth=01");
	ck_assert_int_eq(ta_tlopts_take(&o, &p), 2);
	at(&p, "--depth=4294967296");
	ck_assert_int_eq(ta_tlopts_take(&o, &p), 2);
	at(&p, "--function=");
	ck_assert_int_eq(ta_tlopts_take(&o, &p), 2);
	release();
	ck_assert_uint_eq(o.max_depth, 12);
	ck_assert_str_eq(got_err,
			 "traceagent t: --tid: 'x' is not a list of thread ids\n"
			 "traceagent t: --time-range: '5' is not START-END (times such as 10ms, "
			 "1.5s, 200us; either side may be empty)\n"
			 "traceagent t: --depth: '0' is not a positive number\n"
			 "traceagent t: --depth: '01' is not a positive number\n"
			 "traceagent t: --depth: '4294967296' is not a positive number\n"
			 "traceagent t: --function: empty pattern\n");
	ta_tlopts_free(&o);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cmdopts");
	TCase *tc = tcase_create("parser");

	tcase_add_test(tc, options_and_values);
	tcase_add_test(tc, arg_of_an_option);
	tcase_add_test(tc, unknown_options);
	tcase_add_test(tc, missing_values);
	tcase_add_test(tc, help);
	tcase_add_test(tc, positional_words);
	tcase_add_test(tc, leading_options);
	tcase_add_test(tc, numbers);
	tcase_add_test(tc, choices);
	tcase_add_test(tc, dumps);
	tcase_add_test(tc, shared_options_into);
	tcase_add_test(tc, filters);
	suite_add_tcase(s, tc);
	return ta_check_run(s);
}
