/* SPDX-License-Identifier: MIT */
/*
 * test_report.c - `traceagent report` (analyzer/cmds/report.c), run as the real
 * command on synthetic dumps: the table, the JSON, the CSV, sorting,
 * per-thread numbers, percentiles, --tid, --function, --top, --srcline,
 * messages and exit statuses.  The dumps name functions of this test
 * executable (cmdtest.h), so the report resolves real symbols.
 */
#include "cmdtest.h"
#include "ta_config.h"
#include "../check_run.h"

#include <gelf.h>
#include <libelf.h>

/*
 * Process 100, clock in ns (0.5 per tick), this executable as its module;
 * thread 10: a(100) { b(50) { c(30) } b(60) } as in the session test, and
 * thread 11: c(10), c(20).  Returns the offsets of the EVENTS chunks.
 */
static void sample(struct dumpgen *g, int with_end, size_t *ev_off)
{
	static const uint64_t pairs[2][2] = {{1000, 0}, {3000, 1000}};
	struct ta_encoder e;

	dg_init(g, 100);
	g->lz4 = 1;
	dg_process(g, 50, TA_CLOCK_RDTSC, 0, self_path);
	dg_clock(g, 2, pairs);
	/* One range over everything: only the bias matters here. */
	dg_module(g, self_path, bias, 1, bias, bias + (1ull << 40));
	dg_thread_start(g, 10, 90, "main");
	dg_thread_start(g, 11, 90, "worker");
	ta_encoder_init(&e, 10);
	ta_encoder_begin(&e, 100);
	ev(&e, 100, fa, 0);
	ev(&e, 110, fb, 0);
	ev(&e, 120, fc, 0);
	ev(&e, 150, fc, 1);
	ev(&e, 160, fb, 1);
	ev(&e, 200, fb, 0);
	ev(&e, 260, fb, 1);
	ev(&e, 300, fa, 1);
	ev_off[0] = dg_events(g, &e);
	ta_encoder_free(&e);
	ta_encoder_init(&e, 11);
	ta_encoder_begin(&e, 100);
	ev(&e, 100, fc, 0);
	ev(&e, 120, fc, 1);
	ev(&e, 130, fc, 0);
	ev(&e, 170, fc, 1);
	ev_off[1] = dg_events(g, &e);
	ta_encoder_free(&e);
	dg_thread_end(g, 10, 310, 8, 0);
	dg_thread_end(g, 11, 310, 4, 0);
	if (with_end)
		dg_end(g, 320, 0, 12, 0, 2, 0);
}

/* One function's JSON; p[] = p50, p90, p99. */
static void fn_json(char *buf, size_t n, const char *name, uint64_t addr, uint64_t calls,
		    uint64_t total, uint64_t self, uint64_t min, uint64_t max, uint64_t avg,
		    const uint64_t p[3])
{
	snprintf(buf, n,
		 "{\"name\": \"%s\", \"module\": \"%s\", \"offset\": %llu, \"calls\": %llu, "
		 "\"total_ns\": %llu, \"self_ns\": %llu, \"min_ns\": %llu, \"max_ns\": %llu, "
		 "\"avg_ns\": %llu, \"p50_ns\": %llu, \"p90_ns\": %llu, \"p99_ns\": %llu, "
		 "\"open\": 0, \"partial\": 0, \"unwound\": 0}",
		 name, self_path, (unsigned long long)(addr - bias), (unsigned long long)calls,
		 (unsigned long long)total, (unsigned long long)self, (unsigned long long)min,
		 (unsigned long long)max, (unsigned long long)avg, (unsigned long long)p[0],
		 (unsigned long long)p[1], (unsigned long long)p[2]);
}

START_TEST(json_whole)
{
	struct dumpgen g;
	struct out *o = malloc(sizeof(*o));
	char path[64], want[8192], *at_a, *at_b, *at_c;
	size_t off[2];

	setup();
	sample(&g, 1, off);
	dg_write_tmp(&g, path);
	run(o, "report", "--json", path, NULL);
	unlink(path);
	ck_assert_int_eq(o->status, 0);
	ck_assert_str_eq(o->err, "");
	ck_assert_msg(strstr(o->out, "\"complete\": true, \"events\": 12, \"threads\": 2, "
				     "\"lost\": 0, \"lost_no_ring\": 0, \"processes\": 1, "
				     "\"duration_ns\": 135,"),
		      "%s", o->out);
	ck_assert_ptr_nonnull(strstr(o->out, "\"errors\": []"));
	/* a: 200 ticks, self 90; b: 50 + 60, self 80; c: 30 (thread 10), 20
	 * and 40 (thread 11); all halved by the clock. */
	fn_json(want, sizeof(want), "report_fn_a", fa, 1, 100, 45, 100, 100, 100,
		(const uint64_t[3]){100, 100, 100});
	at_a = strstr(o->out, want);
	ck_assert_msg(at_a != NULL, "want %s in %s", want, o->out);
	fn_json(want, sizeof(want), "report_fn_b", fb, 2, 55, 40, 25, 30, 27,
		(const uint64_t[3]){25, 30, 30});
	at_b = strstr(o->out, want);
	ck_assert_msg(at_b != NULL, "want %s in %s", want, o->out);
	fn_json(want, sizeof(want), "report_fn_c", fc, 3, 45, 45, 10, 20, 15,
		(const uint64_t[3]){15, 20, 20});
	at_c = strstr(o->out, want);
	ck_assert_msg(at_c != NULL, "want %s in %s", want, o->out);
	/* Sorted by total: a (100), b (55), c (45). */
	ck_assert(at_a < at_b && at_b < at_c);
	ck_assert_ptr_null(strstr(o->out, "per_thread"));
	free(o);
	dg_free(&g);
}
END_TEST

START_TEST(json_threads_and_sort)
{
	struct dumpgen g;
	struct out *o = malloc(sizeof(*o));
	char path[64], want[8192];
	const char *t10, *t11;
	size_t off[2];

	setup();
	sample(&g, 1, off);
	dg_write_tmp(&g, path);
	run(o, "report", "--json", "--threads", "--sort=calls", path, NULL);
	ck_assert_int_eq(o->status, 0);
	t10 = strstr(o->out, "{\"tid\": 10, \"pid\": 100, \"pid_nth\": 1, \"boot_start\": null, "
			     "\"name\": \"main\", \"events\": 8, "
			     "\"lost\": 0, \"functions\": [");
	t11 = strstr(o->out, "{\"tid\": 11, \"pid\": 100, \"pid_nth\": 1, \"boot_start\": null, "
			     "\"name\": \"worker\", \"events\": 4, "
			     "\"lost\": 0, \"functions\": [");
	ck_assert_msg(t10 && t11 && t10 < t11, "%s", o->out);
	/* Thread 11 has only c: 2 calls, 30 ns. */
	fn_json(want, sizeof(want), "report_fn_c", fc, 2, 30, 30, 10, 20, 15,
		(const uint64_t[3]){10, 20, 20});
	ck_assert_ptr_nonnull(strstr(t11, want));
	/* Sorted by calls overall: c (3) before b (2) before a (1). */
	{
		const char *c = strstr(o->out, "\"report_fn_c\"");
		const char *b = strstr(o->out, "\"report_fn_b\"");
		const char *a = strstr(o->out, "\"report_fn_a\"");

		ck_assert(c && b && a && c < b && b < a && a < t10);
	}
	run(o, "report", "--sort=name", path, NULL);
	ck_assert_int_eq(o->status, 0);
	{
		const char *a = strstr(o->out, "report_fn_a");
		const char *b = strstr(o->out, "report_fn_b");
		const char *c = strstr(o->out, "report_fn_c");

		ck_assert(a && b && c && a < b && b < c);
	}
	run(o, "report", "--sort=self", path, NULL);
	{
		const char *a = strstr(o->out, "report_fn_a");
		const char *b = strstr(o->out, "report_fn_b");
		const char *c = strstr(o->out, "report_fn_c");

		/* self: a 45, c 45 (the name breaks the tie), b 40 */
		ck_assert(a && b && c && a < c && c < b);
	}
	unlink(path);
	free(o);
	dg_free(&g);
}
END_TEST

START_TEST(text_table)
{
	struct dumpgen g;
	struct out *o = malloc(sizeof(*o));
	char path[64], *line;
	const char *base = strrchr(self_path, '/');
	size_t off[2];

	setup();
	base = strrchr(self_path, '/') + 1;
	sample(&g, 1, off);
	dg_write_tmp(&g, path);
	run(o, "report", path, NULL);
	unlink(path);
	ck_assert_int_eq(o->status, 0);
	ck_assert_str_eq(o->err, "");
	/* A header line, then one row per function. */
	line = strtok(o->out, "\n");
	ck_assert_str_eq(line,
			 "     calls        total         self          min          max"
			 "          avg          p50          p90          p99  function  module");
	line = strtok(NULL, "\n");
	{
		char want[512];

		snprintf(want, sizeof(want),
			 "         1       100 ns        45 ns       100 ns       100 ns"
			 "       100 ns       100 ns       100 ns       100 ns  report_fn_a  %s",
			 base);
		ck_assert_str_eq(line, want);
		line = strtok(NULL, "\n");
		snprintf(want, sizeof(want),
			 "         2        55 ns        40 ns        25 ns        30 ns"
			 "        27 ns        25 ns        30 ns        30 ns  report_fn_b  %s",
			 base);
		ck_assert_str_eq(line, want);
	}
	line = strtok(NULL, "\n");
	ck_assert_ptr_nonnull(strstr(line, "report_fn_c"));
	ck_assert_ptr_null(strtok(NULL, "\n"));
	free(o);
	dg_free(&g);
}
END_TEST

START_TEST(text_units)
{
	/* One function per unit: ns, us, ms, s (ticks are ns here). */
	static const uint64_t dur[4] = {999, 1500, 2500000, 3000000000u};
	static const char *want[4] = {"999 ns", "1.500 us", "2.500 ms", "3.000 s"};
	uint64_t addrs[4];
	struct dumpgen g;
	struct ta_encoder e;
	struct out *o = malloc(sizeof(*o));
	char path[64];
	uint64_t t = 1000;

	setup();
	addrs[0] = fa;
	addrs[1] = fb;
	addrs[2] = fc;
	addrs[3] = fa + 1; /* inside report_fn_a: named by its offset below */
	dg_init(&g, 100);
	dg_process(&g, 0, TA_CLOCK_MONOTONIC, 0, self_path);
	dg_module(&g, self_path, bias, 1, bias, bias + (1ull << 40));
	ta_encoder_init(&e, 10);
	ta_encoder_begin(&e, t);
	for (int i = 0; i < 4; i++) {
		ev(&e, t, addrs[i], 0);
		t += dur[i];
		ev(&e, t, addrs[i], 1);
	}
	dg_events(&g, &e);
	ta_encoder_free(&e);
	dg_end(&g, t, t, 8, 0, 1, 0);
	dg_write_tmp(&g, path);
	run(o, "report", "--sort=calls", path, NULL);
	unlink(path);
	ck_assert_int_eq(o->status, 0);
	for (int i = 0; i < 4; i++)
		ck_assert_msg(strstr(o->out, want[i]), "%s not in %s", want[i], o->out);
	/* fa + 1 is inside report_fn_a: the same function, offset of its start. */
	ck_assert_ptr_null(strstr(o->out, "+0x"));
	free(o);
	dg_free(&g);
}
END_TEST

START_TEST(damaged_dump)
{
	struct dumpgen g;
	struct out *o = malloc(sizeof(*o));
	char path[64], want[256];
	size_t off[2];

	setup();
	sample(&g, 1, off);
	/* Damage thread 11's events: thread 10's numbers are still there. */
	g.buf[off[1] + TA_CHUNK_HEADER_SIZE + 2] ^= 0x11;
	dg_write_tmp(&g, path);
	run(o, "report", "--json", path, NULL);
	ck_assert_int_eq(o->status, 1);
	snprintf(want, sizeof(want), "traceagent: %s: chunk 6 at offset %zu: checksum mismatch",
		 path, off[1]);
	ck_assert_msg(strstr(o->err, want), "want %s in %s", want, o->err);
	ck_assert_ptr_nonnull(strstr(o->out, "\"complete\": false"));
	ck_assert_ptr_nonnull(strstr(o->out, "\"errors\": [\"chunk 6 at offset"));
	ck_assert_ptr_nonnull(strstr(o->out, "\"name\": \"report_fn_a\""));
	ck_assert_ptr_nonnull(strstr(o->out, "\"events\": 8,"));
	unlink(path);
	/* Cut inside the last chunk. */
	dg_free(&g);
	sample(&g, 1, off);
	dg_write_bytes_tmp(g.buf, g.len - 3, path);
	run(o, "report", path, NULL);
	ck_assert_int_eq(o->status, 1);
	ck_assert_msg(strstr(o->err, ": truncated\n"), "%s", o->err);
	ck_assert_ptr_nonnull(strstr(o->out, "report_fn_a"));
	unlink(path);
	free(o);
	dg_free(&g);
}
END_TEST

START_TEST(incomplete_dump)
{
	/* Whole, but no END chunk: the program was killed.  Exit 1 (not a
	 * whole dump), a warning, what could be read. */
	struct dumpgen g;
	struct out *o = malloc(sizeof(*o));
	char path[64];
	size_t off[2];

	setup();
	sample(&g, 0, off);
	dg_write_tmp(&g, path);
	run(o, "report", "--json", path, NULL);
	unlink(path);
	ck_assert_int_eq(o->status, 1);
	ck_assert_msg(strstr(o->err, "warning: incomplete dump"), "%s", o->err);
	ck_assert_ptr_nonnull(strstr(o->out, "\"complete\": false"));
	ck_assert_ptr_nonnull(strstr(o->out, "\"errors\": []"));
	free(o);
	dg_free(&g);
}
END_TEST

START_TEST(bad_files_and_usage)
{
	struct out *o = malloc(sizeof(*o));
	char path[64];
	struct dumpgen g;

	run(o, "report", "/nonexistent/x.trace", NULL);
	ck_assert_int_eq(o->status, 2);
	ck_assert_str_eq(o->err, "traceagent: /nonexistent/x.trace: No such file or directory\n");
	run(o, "report", NULL);
	ck_assert_int_eq(o->status, 2);
	run(o, "report", "--bogus", "x", NULL);
	ck_assert_int_eq(o->status, 2);
	ck_assert_ptr_nonnull(strstr(o->err, "unknown option '--bogus'"));
	run(o, "report", "--sort=speed", "x", NULL);
	ck_assert_int_eq(o->status, 2);
	run(o, "report", "a", "b", NULL);
	ck_assert_int_eq(o->status, 2);
	run(o, "report", "--help", NULL);
	ck_assert_int_eq(o->status, 0);
	ck_assert_ptr_nonnull(strstr(o->out, "usage: traceagent report"));

	dg_write_bytes_tmp("this is not a dump, just some text\n", 35, path);
	run(o, "report", path, NULL);
	ck_assert_int_eq(o->status, 1);
	{
		char want[256];

		snprintf(
		    want, sizeof(want),
		    "traceagent: %s: file header at offset 0: not a traceagent dump (bad magic)\n",
		    path);
		ck_assert_str_eq(o->err, want);
	}
	unlink(path);
	dg_init(&g, 1);
	ta_put_le16(g.buf + 8, 9);
	ta_put_le32(g.buf + 28, ta_crc32c(0, g.buf, 28));
	dg_write_tmp(&g, path);
	run(o, "report", "--json", path, NULL);
	ck_assert_int_eq(o->status, 1);
	ck_assert_ptr_nonnull(strstr(o->err, "unsupported dump format version"));
	ck_assert_ptr_nonnull(strstr(o->out, "\"complete\": false"));
	unlink(path);
	dg_free(&g);
	free(o);
}
END_TEST

/* ---- percentiles, filters, CSV, source lines ------------------------------------- */

/* The durations of percentile_dump's report_fn_b: 1000 + 997 i ns. */
#define SPREAD_N 1000
static uint64_t spread_ns(unsigned i)
{
	return 1000 + 997ull * i;
}

/*
 * One thread, ticks in ns: report_fn_a 100 times, 60 of 100 ns, 35 of
 * 250 ns, 5 of 1000 ns in a fixed shuffle; report_fn_b SPREAD_N times
 * over a wide range, in another shuffle; report_fn_c once for 3000 s.
 */
static void percentile_dump(struct dumpgen *g)
{
	struct ta_encoder e;
	uint64_t t = 1000;

	dg_init(g, 100);
	g->lz4 = 1;
	dg_process(g, 0, TA_CLOCK_MONOTONIC, 0, self_path);
	dg_module(g, self_path, bias, 1, bias, bias + (1ull << 40));
	dg_thread_start(g, 10, t, "main");
	ta_encoder_init(&e, 10);
	ta_encoder_begin(&e, t);
	for (unsigned i = 0; i < 100; i++) {
		unsigned k = i * 37 % 100;

		ev(&e, t, fa, 0);
		t += k < 60 ? 100 : k < 95 ? 250 : 1000;
		ev(&e, t, fa, 1);
		t += 7;
	}
	for (unsigned i = 0; i < SPREAD_N; i++) {
		ev(&e, t, fb, 0);
		t += spread_ns(i * 7 % SPREAD_N);
		ev(&e, t, fb, 1);
	}
	ev(&e, t, fc, 0);
	t += 3000000000000ull;
	ev(&e, t, fc, 1);
	dg_events(g, &e);
	ta_encoder_free(&e);
	dg_thread_end(g, 10, t, 2 * (100 + SPREAD_N + 1), 0);
	dg_end(g, t, t, 2 * (100 + SPREAD_N + 1), 0, 1, 0);
}

/* The value of "key": N in the JSON object of function name. */
static uint64_t fn_field(const char *json, const char *name, const char *key)
{
	char want[128];
	const char *at, *end, *k;

	snprintf(want, sizeof(want), "{\"name\": \"%s\"", name);
	at = strstr(json, want);
	ck_assert_msg(at != NULL, "no %s in %s", name, json);
	end = strchr(at, '}');
	snprintf(want, sizeof(want), "\"%s\": ", key);
	k = strstr(at, want);
	ck_assert_msg(k && k < end, "no %s in %s's entry", key, name);
	return strtoull(k + strlen(want), NULL, 10);
}

START_TEST(percentiles)
{
	struct dumpgen g;
	struct out *o = malloc(sizeof(*o));
	char path[64], line[512];
	static const unsigned pct[3] = {50, 90, 99};
	static const char *keys[3] = {"p50_ns", "p90_ns", "p99_ns"};

	setup();
	percentile_dump(&g);
	dg_write_tmp(&g, path);
	run(o, "report", "--json", path, NULL);
	ck_assert_int_eq(o->status, 0);
	ck_assert_str_eq(o->err, "");
	/* Values below 256 ticks have buckets of their own, and the largest
	 * is the exact max: exact. */
	ck_assert_uint_eq(fn_field(o->out, "report_fn_a", "calls"), 100);
	ck_assert_uint_eq(fn_field(o->out, "report_fn_a", "p50_ns"), 100);
	ck_assert_uint_eq(fn_field(o->out, "report_fn_a", "p90_ns"), 250);
	ck_assert_uint_eq(fn_field(o->out, "report_fn_a", "p99_ns"), 1000);
	ck_assert_uint_eq(fn_field(o->out, "report_fn_a", "total_ns"), 19750);
	/* A wide spread: the nearest-rank value within 1/256 (0.4%). */
	for (int k = 0; k < 3; k++) {
		uint64_t truth = spread_ns((SPREAD_N * pct[k] + 99) / 100 - 1);
		uint64_t got = fn_field(o->out, "report_fn_b", keys[k]);
		uint64_t err = got > truth ? got - truth : truth - got;

		ck_assert_msg(err <= truth / 256 + 1, "%s: %llu, want %llu within 0.4%%", keys[k],
			      (unsigned long long)got, (unsigned long long)truth);
	}
	/* One value far up the range. */
	for (int k = 0; k < 3; k++)
		ck_assert_uint_eq(fn_field(o->out, "report_fn_c", keys[k]), 3000000000000ull);
	/* The text table has the columns. */
	run(o, "report", "--sort=name", path, NULL);
	ck_assert_int_eq(o->status, 0);
	snprintf(line, sizeof(line),
		 "       100    19.750 us    19.750 us       100 ns     1.000 us       197 ns"
		 "       100 ns       250 ns     1.000 us  report_fn_a  %s\n",
		 strrchr(self_path, '/') + 1);
	ck_assert_msg(strstr(o->out, line), "want\n%s\nin\n%s", line, o->out);
	unlink(path);
	free(o);
	dg_free(&g);
}
END_TEST

START_TEST(tid_and_function)
{
	struct dumpgen g;
	struct out *o = malloc(sizeof(*o));
	char path[64], want[8192];
	size_t off[2];

	setup();
	sample(&g, 1, off);
	dg_write_tmp(&g, path);
	/* Thread 11 ran only c: 20 and 40 ticks. */
	run(o, "report", "--json", "--tid=11", path, NULL);
	ck_assert_int_eq(o->status, 0);
	fn_json(want, sizeof(want), "report_fn_c", fc, 2, 30, 30, 10, 20, 15,
		(const uint64_t[3]){10, 20, 20});
	ck_assert_msg(strstr(o->out, want), "want %s in %s", want, o->out);
	ck_assert_ptr_null(strstr(o->out, "report_fn_a"));
	ck_assert_ptr_null(strstr(o->out, "report_fn_b"));
	/* The dump's own numbers stay whole. */
	ck_assert_ptr_nonnull(strstr(o->out, "\"events\": 12, \"threads\": 2,"));
	/* --threads shows only that thread. */
	run(o, "report", "--json", "--threads", "--tid=11", path, NULL);
	ck_assert_ptr_nonnull(strstr(o->out, "{\"tid\": 11,"));
	ck_assert_ptr_null(strstr(o->out, "{\"tid\": 10,"));
	/* A thread the dump does not have. */
	run(o, "report", "--tid=12", path, NULL);
	ck_assert_int_eq(o->status, 2);
	snprintf(want, sizeof(want), "traceagent: %s: no thread 12 in the dump\n", path);
	ck_assert_str_eq(o->err, want);
	ck_assert_str_eq(o->out, "");
	run(o, "report", "--tid=x", path, NULL);
	ck_assert_int_eq(o->status, 2);
	ck_assert_str_eq(o->err, "traceagent report: --tid: 'x' is not a thread id\n");

	/* Globs over the names; the numbers of what is kept do not change. */
	run(o, "report", "--json", "--function=report_fn_[ab]", path, NULL);
	ck_assert_int_eq(o->status, 0);
	fn_json(want, sizeof(want), "report_fn_b", fb, 2, 55, 40, 25, 30, 27,
		(const uint64_t[3]){25, 30, 30});
	ck_assert_msg(strstr(o->out, want), "want %s in %s", want, o->out);
	ck_assert_ptr_nonnull(strstr(o->out, "\"name\": \"report_fn_a\""));
	ck_assert_ptr_null(strstr(o->out, "report_fn_c"));
	run(o, "report", "--json", "--function=*_c", "--tid=10", path, NULL);
	fn_json(want, sizeof(want), "report_fn_c", fc, 1, 15, 15, 15, 15, 15,
		(const uint64_t[3]){15, 15, 15});
	ck_assert_msg(strstr(o->out, want), "want %s in %s", want, o->out);
	ck_assert_ptr_null(strstr(o->out, "report_fn_a"));
	/* Nothing matches: an empty list, not an error. */
	run(o, "report", "--json", "--function=nothing*", path, NULL);
	ck_assert_int_eq(o->status, 0);
	ck_assert_ptr_nonnull(strstr(o->out, "\"functions\": [],\n  \"fibers\": []}"));
	unlink(path);
	free(o);
	dg_free(&g);
}
END_TEST

START_TEST(top)
{
	struct dumpgen g;
	struct out *o = malloc(sizeof(*o));
	char path[64];
	size_t off[2];
	const char *t10, *t11;

	setup();
	sample(&g, 1, off);
	dg_write_tmp(&g, path);
	run(o, "report", "--json", "--top=2", path, NULL);
	ck_assert_int_eq(o->status, 0);
	ck_assert_ptr_nonnull(strstr(o->out, "\"report_fn_a\""));
	ck_assert_ptr_nonnull(strstr(o->out, "\"report_fn_b\""));
	ck_assert_ptr_null(strstr(o->out, "\"report_fn_c\""));
	/* After sorting: the two with the most calls. */
	run(o, "report", "--top=2", "--sort=calls", path, NULL);
	ck_assert_ptr_nonnull(strstr(o->out, "report_fn_c"));
	ck_assert_ptr_nonnull(strstr(o->out, "report_fn_b"));
	ck_assert_ptr_null(strstr(o->out, "report_fn_a"));
	/* Each table is cut: per thread too. */
	run(o, "report", "--json", "--threads", "--top=1", path, NULL);
	t10 = strstr(o->out, "{\"tid\": 10,");
	t11 = strstr(o->out, "{\"tid\": 11,");
	ck_assert(t10 && t11);
	ck_assert_ptr_nonnull(strstr(t10, "report_fn_a"));
	ck_assert_ptr_null(strstr(t10, "report_fn_b"));
	ck_assert_ptr_nonnull(strstr(t11, "report_fn_c"));
	run(o, "report", "--top=0", path, NULL);
	ck_assert_int_eq(o->status, 2);
	ck_assert_str_eq(o->err, "traceagent report: --top: '0' is not a positive number\n");
	run(o, "report", "--top=-1", path, NULL);
	ck_assert_int_eq(o->status, 2);
	unlink(path);
	free(o);
	dg_free(&g);
}
END_TEST

START_TEST(csv)
{
	struct dumpgen g;
	struct out *o = malloc(sizeof(*o));
	static char want[20000];
	char path[64];
	size_t off[2];
	uint64_t a = fa - bias, b = fb - bias, c = fc - bias;

	setup();
	a = fa - bias, b = fb - bias, c = fc - bias;
	ck_assert_msg(!strpbrk(self_path, ",\"\n"), "the build path needs quoting: %s", self_path);
	sample(&g, 1, off);
	dg_write_tmp(&g, path);
	run(o, "report", "--csv", path, NULL);
	ck_assert_int_eq(o->status, 0);
	ck_assert_str_eq(o->err, "");
	snprintf(want, sizeof(want),
		 "name,module,offset,calls,total_ns,self_ns,min_ns,max_ns,avg_ns,p50_ns,p90_ns,"
		 "p99_ns,open,partial\n"
		 "report_fn_a,%s,%llu,1,100,45,100,100,100,100,100,100,0,0\n"
		 "report_fn_b,%s,%llu,2,55,40,25,30,27,25,30,30,0,0\n"
		 "report_fn_c,%s,%llu,3,45,45,10,20,15,15,20,20,0,0\n",
		 self_path, (unsigned long long)a, self_path, (unsigned long long)b, self_path,
		 (unsigned long long)c);
	ck_assert_str_eq(o->out, want);
	run(o, "report", "--csv", "--threads", "--sort=name", path, NULL);
	ck_assert_int_eq(o->status, 0);
	snprintf(want, sizeof(want),
		 "tid,pid,thread,name,module,offset,calls,total_ns,self_ns,min_ns,max_ns,avg_ns,"
		 "p50_ns,p90_ns,p99_ns,open,partial\n"
		 "10,100,main,report_fn_a,%s,%llu,1,100,45,100,100,100,100,100,100,0,0\n"
		 "10,100,main,report_fn_b,%s,%llu,2,55,40,25,30,27,25,30,30,0,0\n"
		 "10,100,main,report_fn_c,%s,%llu,1,15,15,15,15,15,15,15,15,0,0\n"
		 "11,100,worker,report_fn_c,%s,%llu,2,30,30,10,20,15,10,20,20,0,0\n",
		 self_path, (unsigned long long)a, self_path, (unsigned long long)b, self_path,
		 (unsigned long long)c, self_path, (unsigned long long)c);
	ck_assert_str_eq(o->out, want);
	run(o, "report", "--csv", "--json", path, NULL);
	ck_assert_int_eq(o->status, 2);
	ck_assert_str_eq(o->err, "traceagent report: --json or --csv, not both\n");
	unlink(path);
	free(o);
	dg_free(&g);
}
END_TEST

START_TEST(csv_quoting)
{
	/* A module that cannot be read, with a comma and a quote in its name,
	 * and a thread named with both: RFC 4180 quotes those fields and
	 * doubles the quotes. */
	struct dumpgen g;
	struct ta_encoder e;
	struct out *o = malloc(sizeof(*o));
	char path[64];

	dg_init(&g, 7);
	dg_process(&g, 0, TA_CLOCK_MONOTONIC, 0, "/nonexistent/prog");
	dg_module(&g, "/nonexistent/we,ird\"lib.so", 0x10000, 0, 0x10000, 0x20000);
	dg_thread_start(&g, 7, 100, "a \"b\", c");
	ta_encoder_init(&e, 7);
	ta_encoder_begin(&e, 100);
	ev(&e, 100, 0x10010, 0);
	ev(&e, 150, 0x10010, 1);
	dg_events(&g, &e);
	ta_encoder_free(&e);
	dg_thread_end(&g, 7, 200, 2, 0);
	dg_end(&g, 200, 200, 2, 0, 1, 0);
	dg_write_tmp(&g, path);
	run(o, "report", "--csv", "--threads", path, NULL);
	ck_assert_int_eq(o->status, 0);
	ck_assert_str_eq(o->out,
			 "tid,pid,thread,name,module,offset,calls,total_ns,self_ns,min_ns,max_ns,"
			 "avg_ns,p50_ns,p90_ns,p99_ns,open,partial\n"
			 "7,7,\"a \"\"b\"\", c\",\"we,ird\"\"lib.so+0x10\","
			 "\"/nonexistent/we,ird\"\"lib.so\",16,1,50,50,50,50,50,50,50,50,0,0\n");
	unlink(path);
	free(o);
	dg_free(&g);
}
END_TEST

/*
 * Calls whose whole time the dump does not have.  Thread 10: a { b(40
 * ticks) } then b entered at 200, both open at its end (210).  Thread 11:
 * its first chunk begins inside c (its snapshot: a flight recorder's cut,
 * an attach window), which returns at 104; c(60 ticks); then an exit of b
 * whose entry is not in the dump.  0.5 ns a tick.  The open calls and the
 * partial ones are counted apart, in calls, total and self only: b's min
 * is its one whole call's 20 ns, not the 5 ns its open call had run, nor
 * 0; c's is 30, not 2; a has no whole call, so no min at all.
 */
START_TEST(open_and_partial)
{
	static const uint64_t pairs[2][2] = {{1000, 0}, {3000, 1000}};
	struct dumpgen g;
	struct ta_encoder e;
	struct out *o = malloc(sizeof(*o));
	static char want[8192];
	char path[64];

	setup();
	dg_init(&g, 100);
	dg_process(&g, 50, TA_CLOCK_RDTSC, 0, self_path);
	dg_clock(&g, 2, pairs);
	dg_module(&g, self_path, bias, 1, bias, bias + (1ull << 40));
	dg_thread_start(&g, 10, 90, "main");
	dg_thread_start(&g, 11, 90, "worker");
	ta_encoder_init(&e, 10);
	ta_encoder_begin(&e, 100);
	ev(&e, 100, fa, 0);
	ev(&e, 110, fb, 0);
	ev(&e, 150, fb, 1);
	ev(&e, 200, fb, 0);
	dg_events(&g, &e);
	ta_encoder_free(&e);
	ta_encoder_init(&e, 11);
	REQUIRE(ta_stack_push(&e.stack, fc) == 0, "push");
	ta_encoder_begin(&e, 100);
	ev(&e, 104, fc, 1);
	ev(&e, 110, fc, 0);
	ev(&e, 170, fc, 1);
	ev(&e, 180, fb, 1);
	dg_events(&g, &e);
	ta_encoder_free(&e);
	dg_thread_end(&g, 10, 210, 4, 0);
	dg_thread_end(&g, 11, 190, 4, 0);
	dg_end(&g, 210, 210, 8, 0, 2, 0);
	dg_write_tmp(&g, path);

	run(o, "report", "--json", path, NULL);
	snprintf(want, sizeof(want),
		 "traceagent: %s: warning: 1 function exits without a recorded entry were counted "
		 "as partial calls, with no time\n",
		 path);
	ck_assert_str_eq(o->err, want);
	ck_assert_int_eq(o->status, 0);
	snprintf(want, sizeof(want),
		 "\"calls\": 1, \"total_ns\": 55, \"self_ns\": 30, \"min_ns\": null, "
		 "\"max_ns\": null, \"avg_ns\": null, \"p50_ns\": null, \"p90_ns\": null, "
		 "\"p99_ns\": null, \"open\": 1, \"partial\": 0, \"unwound\": 0}");
	ck_assert_msg(strstr(o->out, want), "a: want %s in\n%s", want, o->out);
	snprintf(want, sizeof(want),
		 "\"calls\": 3, \"total_ns\": 25, \"self_ns\": 25, \"min_ns\": 20, "
		 "\"max_ns\": 20, \"avg_ns\": 20, \"p50_ns\": 20, \"p90_ns\": 20, "
		 "\"p99_ns\": 20, \"open\": 1, \"partial\": 1, \"unwound\": 0}");
	ck_assert_msg(strstr(o->out, want), "b: want %s in\n%s", want, o->out);
	snprintf(want, sizeof(want),
		 "\"calls\": 2, \"total_ns\": 32, \"self_ns\": 32, \"min_ns\": 30, "
		 "\"max_ns\": 30, \"avg_ns\": 30, \"p50_ns\": 30, \"p90_ns\": 30, "
		 "\"p99_ns\": 30, \"open\": 0, \"partial\": 1, \"unwound\": 0}");
	ck_assert_msg(strstr(o->out, want), "c: want %s in\n%s", want, o->out);

	/* The table: the two columns, "-" for a's times, what they mean. */
	run(o, "report", "--sort=name", path, NULL);
	ck_assert_int_eq(o->status, 0);
	ck_assert_msg(strstr(o->out, "         p99     open  partial  function  module\n"), "%s",
		      o->out);
	ck_assert_msg(strstr(o->out,
			     "         1        55 ns        30 ns            -            -"
			     "            -            -            -            -        1"
			     "        0  report_fn_a  "),
		      "%s", o->out);
	ck_assert_msg(strstr(o->out,
			     "         3        25 ns        25 ns        20 ns        20 ns"
			     "        20 ns        20 ns        20 ns        20 ns        1"
			     "        1  report_fn_b  "),
		      "%s", o->out);
	ck_assert_msg(strstr(o->out, "\nopen: calls still running when the dump ends; partial: "),
		      "%s", o->out);

	run(o, "report", "--csv", "--sort=name", path, NULL);
	ck_assert_int_eq(o->status, 0);
	snprintf(want, sizeof(want), "report_fn_a,%s,%llu,1,55,30,,,,,,,1,0\n", self_path,
		 (unsigned long long)(fa - bias));
	ck_assert_msg(strstr(o->out, want), "want %s in\n%s", want, o->out);
	unlink(path);
	free(o);
	dg_free(&g);
}
END_TEST

#if TA_HAVE_SRCLINE
/* Does this executable carry DWARF?  (Release builds have none.) */
static int have_dwarf(void)
{
	int fd = open(self_path, O_RDONLY), found = 0;
	Elf *e;
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	ck_assert_int_ge(fd, 0);
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	ck_assert_ptr_nonnull(e);
	ck_assert_int_eq(elf_getshdrstrndx(e, &shstrndx), 0);
	while (!found && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (gelf_getshdr(scn, &sh) && (name = elf_strptr(e, shstrndx, sh.sh_name)))
			found = !strcmp(name, ".debug_info");
	}
	elf_end(e);
	close(fd);
	return found;
}

START_TEST(srcline)
{
	struct dumpgen g;
	struct out *o = malloc(sizeof(*o));
	char path[64], want[256];
	size_t off[2];

	setup();
	sample(&g, 1, off);
	dg_write_tmp(&g, path);
	run(o, "report", "--json", "--srcline", path, NULL);
	ck_assert_int_eq(o->status, 0);
	if (have_dwarf()) {
		/* The header holding the functions, by its full path. */
		snprintf(want, sizeof(want), "/tests/unit/cmdtest.h:%d\"}", REPORT_FN_A_LINE);
		ck_assert_msg(strstr(o->out, want), "want %s in %s", want, o->out);
		ck_assert_ptr_nonnull(strstr(o->out, "\"srcline\": \"/"));
		snprintf(want, sizeof(want), "/tests/unit/cmdtest.h:%d\"}", REPORT_FN_C_LINE);
		ck_assert_msg(strstr(o->out, want), "want %s in %s", want, o->out);
		run(o, "report", "--srcline", "--function=report_fn_b", path, NULL);
		snprintf(want, sizeof(want), "  report_fn_b  %s  /", strrchr(self_path, '/') + 1);
		ck_assert_msg(strstr(o->out, want), "want %s in %s", want, o->out);
		snprintf(want, sizeof(want), "/tests/unit/cmdtest.h:%d\n", REPORT_FN_B_LINE);
		ck_assert_msg(strstr(o->out, want), "want %s in %s", want, o->out);
		ck_assert_ptr_nonnull(strstr(o->out, "  function  module  source\n"));
	} else {
		ck_assert_ptr_nonnull(strstr(o->out, "\"srcline\": null}"));
	}
	/* Without the option, no field. */
	run(o, "report", "--json", path, NULL);
	ck_assert_ptr_null(strstr(o->out, "srcline"));
	unlink(path);
	free(o);
	dg_free(&g);
}
END_TEST

START_TEST(srcline_without_dwarf)
{
	/* A module that cannot be read has no lines; the report goes on. */
	struct dumpgen g;
	struct ta_encoder e;
	struct out *o = malloc(sizeof(*o));
	char path[64];

	dg_init(&g, 7);
	dg_process(&g, 0, TA_CLOCK_MONOTONIC, 0, "/nonexistent/prog");
	dg_module(&g, "/nonexistent/lib.so", 0x10000, 0, 0x10000, 0x20000);
	ta_encoder_init(&e, 7);
	ta_encoder_begin(&e, 100);
	ev(&e, 100, 0x10010, 0);
	ev(&e, 150, 0x10010, 1);
	dg_events(&g, &e);
	ta_encoder_free(&e);
	dg_end(&g, 200, 200, 2, 0, 1, 0);
	dg_write_tmp(&g, path);
	run(o, "report", "--csv", "--srcline", path, NULL);
	ck_assert_int_eq(o->status, 0);
	ck_assert_str_eq(o->out,
			 "name,module,offset,calls,total_ns,self_ns,min_ns,max_ns,avg_ns,p50_ns,"
			 "p90_ns,p99_ns,open,partial,srcline\n"
			 "lib.so+0x10,/nonexistent/lib.so,16,1,50,50,50,50,50,50,50,50,0,0,\n");
	run(o, "report", "--srcline", path, NULL);
	ck_assert_ptr_nonnull(strstr(o->out, "  lib.so+0x10  lib.so  ?\n"));
	unlink(path);
	free(o);
	dg_free(&g);
}
END_TEST
#else
START_TEST(srcline_not_built)
{
	/* Built without libdw: --srcline is refused in one line, whatever
	 * the dump, and the report is not made. */
	struct dumpgen g;
	struct out *o = malloc(sizeof(*o));
	char path[64];
	size_t off[2];

	setup();
	sample(&g, 1, off);
	dg_write_tmp(&g, path);
	run(o, "report", "--json", "--srcline", path, NULL);
	ck_assert_int_eq(o->status, 2);
	ck_assert_str_eq(o->out, "");
	ck_assert_str_eq(o->err, "traceagent report: --srcline: this build has no source lines "
				 "(built without libdw: meson -Dsrcline)\n");
	run(o, "report", "--json", path, NULL);
	ck_assert_int_eq(o->status, 0);
	unlink(path);
	free(o);
	dg_free(&g);
}
END_TEST
#endif

/* ---- library calls (report --alloc, --locks, --io) ------------------------------ */

#define LC_MALLOC 0x7000u
#define LC_FREE	  0x7100u
#define LC_LOCK	  0x7200u
#define LC_UNLOCK 0x7300u
#define LC_READ	  0x7400u

static const struct dg_libcall lc_table[] = {
    {LC_MALLOC, "malloc", TA_LC_ALLOC},
    {LC_FREE, "free", TA_LC_ALLOC},
    {LC_LOCK, "pthread_mutex_lock", TA_LC_LOCK},
    {LC_UNLOCK, "pthread_mutex_unlock", TA_LC_LOCK},
    {LC_READ, "read", TA_LC_IO},
};

static void zone(struct ta_encoder *e, uint64_t t0, uint64_t t1, uint64_t addr, uint32_t sub,
		 const uint64_t *v, uint32_t n)
{
	ev(e, t0, addr, 0);
	REQUIRE(ta_encoder_ext(e, t1, sub, v, n) == 0, "ext");
	ev(e, t1, addr, 1);
}

/* Zones under report_fn_a (and one under report_fn_b); ticks are halved
 * into ns by the clock. */
static void libcall_dump(struct dumpgen *g)
{
	static const uint64_t pairs[2][2] = {{1000, 0}, {3000, 1000}};
	struct ta_encoder e;

	dg_init(g, 100);
	dg_process(g, 50, TA_CLOCK_RDTSC, 0, self_path);
	dg_clock(g, 2, pairs);
	dg_module(g, self_path, bias, 1, bias, bias + (1ull << 40));
	dg_libcalls(g, TA_LC_ALL, 5, lc_table);
	dg_thread_start(g, 10, 90, "main");
	ta_encoder_init(&e, 10);
	ta_encoder_begin(&e, 100);
	ev(&e, 100, fa, 0);
	zone(&e, 110, 120, LC_MALLOC, TA_EXT_ALLOC, (const uint64_t[]){100, 0xa000}, 2);
	zone(&e, 130, 140, LC_MALLOC, TA_EXT_ALLOC, (const uint64_t[]){50, 0xb000}, 2);
	zone(&e, 150, 152, LC_FREE, TA_EXT_FREE, (const uint64_t[]){0xa000}, 1);
	zone(&e, 160, 200, LC_LOCK, TA_EXT_LOCK, (const uint64_t[]){0xc000, 0}, 2);
	zone(&e, 210, 212, LC_UNLOCK, TA_EXT_LOCK, (const uint64_t[]){0xc000, 0}, 2);
	zone(&e, 220, 260, LC_READ, TA_EXT_IO, (const uint64_t[]){3, 1000, 600, 0}, 4);
	ev(&e, 270, fb, 0);
	zone(&e, 272, 282, LC_READ, TA_EXT_IO, (const uint64_t[]){3, 10, 0, 9}, 4);
	/* A later subtype, and values outside a library call: ignored. */
	REQUIRE(ta_encoder_ext(&e, 284, 14, (const uint64_t[]){1, 2}, 2) == 0, "ext");
	REQUIRE(ta_encoder_ext(&e, 285, TA_EXT_ALLOC, (const uint64_t[]){999, 0xd000}, 2) == 0,
		"ext");
	ev(&e, 290, fb, 1);
	ev(&e, 300, fa, 1);
	dg_events(g, &e);
	ta_encoder_free(&e);
	dg_thread_end(g, 10, 310, 18, 0);
	dg_end(g, 320, 0, 18, 0, 1, 0);
}

START_TEST(libcall_sections)
{
	struct dumpgen g;
	struct out *o = malloc(sizeof(*o));
	char path[64];

	setup();
	libcall_dump(&g);
	dg_write_tmp(&g, path);
	run(o, "report", "--json", "--alloc", "--locks", "--io", path, NULL);
	ck_assert_int_eq(o->status, 0);
	ck_assert_str_eq(o->err, "");
	ck_assert_msg(strstr(o->out, "\"alloc\": {\"recorded\": true, \"allocations\": 2, "
				     "\"bytes_allocated\": 150, "
				     "\"frees\": 1, \"bytes_freed\": 100, \"untracked_frees\": 0, "
				     "\"live_bytes\": 50, \"live_blocks\": 1,"),
		      "%s", o->out);
	ck_assert_msg(strstr(o->out,
			     "{\"function\": \"report_fn_a\", \"allocations\": 2, "
			     "\"bytes_allocated\": 150, \"frees\": 1, \"bytes_freed\": 100}"),
		      "%s", o->out);
	ck_assert_msg(strstr(o->out, "{\"path\": \"report_fn_a > malloc\", \"bytes\": 50, "
				     "\"blocks\": 1}"),
		      "%s", o->out);
	/* 40 ticks of wait = 20 ns; the unlock is not a wait. */
	ck_assert_msg(strstr(o->out,
			     "\"callers\": [\n      {\"function\": \"report_fn_a\", "
			     "\"call\": \"pthread_mutex_lock\", \"calls\": 1, \"wait_ns\": 20, "
			     "\"max_ns\": 20}]"),
		      "%s", o->out);
	/* In no module's data nor in a live block: its address. */
	ck_assert_msg(strstr(o->out, "{\"lock\": \"0xc000\", \"kind\": \"address\", \"calls\": 1, "
				     "\"wait_ns\": 20, \"max_ns\": 20}"),
		      "%s", o->out);
	ck_assert_msg(strstr(o->out, "{\"fd\": \"3\", \"calls\": 2, \"bytes_asked\": 1010, "
				     "\"bytes_done\": 600, \"errors\": 1, \"time_ns\": 25}"),
		      "%s", o->out);
	ck_assert_msg(strstr(o->out, "{\"function\": \"report_fn_b\", \"calls\": 1, "
				     "\"bytes_asked\": 10, \"bytes_done\": 0, \"errors\": 1, "
				     "\"time_ns\": 5}"),
		      "%s", o->out);

	/* The zones are functions named by the chunk, marked [libcall]. */
	run(o, "report", "--json", path, NULL);
	ck_assert_int_eq(o->status, 0);
	ck_assert_msg(strstr(o->out, "{\"name\": \"malloc\", \"module\": \"[libcall]\", "
				     "\"offset\": 0, \"calls\": 2, \"total_ns\": 10,"),
		      "%s", o->out);
	ck_assert_msg(strstr(o->out, "{\"name\": \"read\", \"module\": \"[libcall]\", "
				     "\"offset\": 4, \"calls\": 2, \"total_ns\": 25,"),
		      "%s", o->out);
	run(o, "report", "--csv", "--alloc", path, NULL);
	ck_assert_int_eq(o->status, 2);
	unlink(path);
	free(o);
	dg_free(&g);
}
END_TEST

START_TEST(libcall_chunk_malformed)
{
	struct dumpgen g;
	struct out *o = malloc(sizeof(*o));
	char path[64];
	/* Says 1000 entries, holds one. */
	static const uint8_t bad[] = {15, 0xe8, 0x07, 0x10, 1, 'm', 1};

	setup();
	dg_init(&g, 100);
	dg_process(&g, 50, TA_CLOCK_RDTSC, 0, self_path);
	dg_chunk(&g, TA_CHUNK_LIBCALLS, bad, sizeof(bad));
	dg_end(&g, 320, 0, 0, 0, 0, 0);
	dg_write_tmp(&g, path);
	run(o, "report", "--alloc", path, NULL);
	unlink(path);
	ck_assert_int_eq(o->status, 1);
	ck_assert_msg(strstr(o->err, "libcalls"), "%s", o->err);
	free(o);
	dg_free(&g);
}
END_TEST

static Suite *report_suite(void)
{
	Suite *s = suite_create("report");
	TCase *tc = tcase_create("command");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, json_whole);
	tcase_add_test(tc, json_threads_and_sort);
	tcase_add_test(tc, text_table);
	tcase_add_test(tc, text_units);
	tcase_add_test(tc, damaged_dump);
	tcase_add_test(tc, incomplete_dump);
	tcase_add_test(tc, bad_files_and_usage);
	tcase_add_test(tc, percentiles);
	tcase_add_test(tc, tid_and_function);
	tcase_add_test(tc, top);
	tcase_add_test(tc, csv);
	tcase_add_test(tc, csv_quoting);
	tcase_add_test(tc, open_and_partial);
#if TA_HAVE_SRCLINE
	tcase_add_test(tc, srcline);
	tcase_add_test(tc, srcline_without_dwarf);
#else
	tcase_add_test(tc, srcline_not_built);
#endif
	tcase_add_test(tc, libcall_sections);
	tcase_add_test(tc, libcall_chunk_malformed);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ta_check_run(report_suite());
}
