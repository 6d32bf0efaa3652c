/* SPDX-License-Identifier: MIT */
/*
 * test_report.c - `traceagent report` (analyzer/report.c), run as the real
 * command on synthetic dumps: the table, the JSON, sorting, per-thread
 * numbers, messages and exit statuses.  The dumps name functions of this
 * test executable, so the report resolves real symbols.
 */
#define _GNU_SOURCE
#include <check.h>
#include <fcntl.h>
#include <link.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dumpgen.h"
#include "testutil.h"

__attribute__((noinline, noclone, used)) static int report_fn_a(int x)
{
	__asm__ volatile("" ::: "memory");
	return x + 1;
}

__attribute__((noinline, noclone, used)) static int report_fn_b(int x)
{
	__asm__ volatile("" ::: "memory");
	return x + 2;
}

__attribute__((noinline, noclone, used)) static int report_fn_c(int x)
{
	__asm__ volatile("" ::: "memory");
	return x + 3;
}

static char self_path[4096];
static uint64_t bias, fa, fb, fc; /* runtime addresses */

static int bias_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	(void)data;
	bias = info->dlpi_addr;
	return 1;
}

static void setup(void)
{
	int (*volatile f)(int);
	ssize_t n = readlink("/proc/self/exe", self_path, sizeof(self_path) - 1);

	ck_assert_int_gt(n, 0);
	self_path[n] = 0;
	dl_iterate_phdr(bias_cb, NULL);
	f = report_fn_a;
	fa = (uint64_t)(uintptr_t)f;
	f = report_fn_b;
	fb = (uint64_t)(uintptr_t)f;
	f = report_fn_c;
	fc = (uint64_t)(uintptr_t)f;
}

struct out {
	int status;
	char out[65536];
	char err[65536];
};

static void slurp(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY);
	ssize_t n;
	size_t len = 0;

	ck_assert_int_ge(fd, 0);
	while ((n = read(fd, buf + len, size - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = 0;
	close(fd);
	unlink(path);
}

/* Runs traceagent with the arguments (NULL-terminated). */
static void run(struct out *o, const char *arg, ...)
{
	const char *exe = getenv("TRACEAGENT");
	const char *argv[16];
	char out_path[64], err_path[64];
	int n = 0, fo, fe, status;
	va_list ap;
	pid_t pid;

	ck_assert_msg(exe != NULL, "TRACEAGENT is not set");
	argv[n++] = exe;
	va_start(ap, arg);
	for (const char *a = arg; a && n < 15; a = va_arg(ap, const char *))
		argv[n++] = a;
	va_end(ap);
	argv[n] = NULL;
	dg_write_bytes_tmp("", 0, out_path);
	dg_write_bytes_tmp("", 0, err_path);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		fo = open(out_path, O_WRONLY);
		fe = open(err_path, O_WRONLY);
		dup2(fo, 1);
		dup2(fe, 2);
		execv(exe, (char *const *)(uintptr_t)argv);
		_exit(127);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	o->status = WEXITSTATUS(status);
	slurp(out_path, o->out, sizeof(o->out));
	slurp(err_path, o->err, sizeof(o->err));
}

static void ev(struct ta_encoder *e, uint64_t t, uint64_t addr, int is_exit)
{
	REQUIRE(ta_encoder_event(e, t, addr, is_exit) == 0, "event");
}

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

static void fn_json(char *buf, size_t n, const char *name, uint64_t addr, uint64_t calls,
		    uint64_t total, uint64_t self, uint64_t min, uint64_t max, uint64_t avg)
{
	snprintf(buf, n,
		 "{\"name\": \"%s\", \"module\": \"%s\", \"offset\": %llu, \"calls\": %llu, "
		 "\"total_ns\": %llu, \"self_ns\": %llu, \"min_ns\": %llu, \"max_ns\": %llu, "
		 "\"avg_ns\": %llu, \"open\": 0}",
		 name, self_path, (unsigned long long)(addr - bias), (unsigned long long)calls,
		 (unsigned long long)total, (unsigned long long)self, (unsigned long long)min,
		 (unsigned long long)max, (unsigned long long)avg);
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
				     "\"lost\": 0, \"processes\": 1, \"duration_ns\": 135,"),
		      "%s", o->out);
	ck_assert_ptr_nonnull(strstr(o->out, "\"errors\": []"));
	/* a: 200 ticks, self 90; b: 50 + 60, self 80; c: 30 (thread 10), 20
	 * and 40 (thread 11); all halved by the clock. */
	fn_json(want, sizeof(want), "report_fn_a", fa, 1, 100, 45, 100, 100, 100);
	at_a = strstr(o->out, want);
	ck_assert_msg(at_a != NULL, "want %s in %s", want, o->out);
	fn_json(want, sizeof(want), "report_fn_b", fb, 2, 55, 40, 25, 30, 27);
	at_b = strstr(o->out, want);
	ck_assert_msg(at_b != NULL, "want %s in %s", want, o->out);
	fn_json(want, sizeof(want), "report_fn_c", fc, 3, 45, 45, 10, 20, 15);
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
	t10 = strstr(o->out, "{\"tid\": 10, \"pid\": 100, \"name\": \"main\", \"events\": 8, "
			     "\"lost\": 0, \"functions\": [");
	t11 = strstr(o->out, "{\"tid\": 11, \"pid\": 100, \"name\": \"worker\", \"events\": 4, "
			     "\"lost\": 0, \"functions\": [");
	ck_assert_msg(t10 && t11 && t10 < t11, "%s", o->out);
	/* Thread 11 has only c: 2 calls, 30 ns. */
	fn_json(want, sizeof(want), "report_fn_c", fc, 2, 30, 30, 10, 20, 15);
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
	ck_assert_str_eq(line, "     calls        total         self          min          max"
			       "          avg  function  module");
	line = strtok(NULL, "\n");
	{
		char want[512];

		snprintf(want, sizeof(want),
			 "         1       100 ns        45 ns       100 ns       100 ns"
			 "       100 ns  report_fn_a  %s",
			 base);
		ck_assert_str_eq(line, want);
		line = strtok(NULL, "\n");
		snprintf(want, sizeof(want),
			 "         2        55 ns        40 ns        25 ns        30 ns"
			 "        27 ns  report_fn_b  %s",
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
	/* Whole, but no END chunk: the program was killed. Exit 0, a warning. */
	struct dumpgen g;
	struct out *o = malloc(sizeof(*o));
	char path[64];
	size_t off[2];

	setup();
	sample(&g, 0, off);
	dg_write_tmp(&g, path);
	run(o, "report", "--json", path, NULL);
	unlink(path);
	ck_assert_int_eq(o->status, 0);
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
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(report_suite());
	int failed;

	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
