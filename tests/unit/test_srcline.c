/* SPDX-License-Identifier: MIT */
/*
 * test_srcline.c - source lines from DWARF (analyzer/srcline.c), asked about
 * this test executable's own functions (built with -g in every build type):
 * the file and the line of each function's name, for its first byte and one
 * inside it, full normalised paths, and no answer where there is none.
 */
#include "cmdtest.h"
#include "srcline.h"
#include "ta_config.h"
#include "../check_run.h"

/* The name on a line of its own, below its return type. */
// clang-format off
enum { LOCAL_LINE = __LINE__ + 2 };
__attribute__((noinline, noclone, used)) static int
local_function(int x)
// clang-format on
{
	__asm__ volatile("" ::: "memory");
	return x * 3;
}

static uint64_t offset_of(int (*f)(int))
{
	int (*volatile v)(int) = f;

	return (uint64_t)(uintptr_t)v - bias;
}

/* "…/tail:line" */
static void check_line(const char *got, const char *tail, int line)
{
	char want[256];
	size_t n, k;

	ck_assert_ptr_nonnull(got);
	snprintf(want, sizeof(want), "%s:%d", tail, line);
	n = strlen(got);
	k = strlen(want);
	ck_assert_msg(n > k && !strcmp(got + n - k, want), "got %s, want …%s", got, want);
	/* A full path, with no "." or ".." left in it. */
	ck_assert_msg(got[0] == '/' && !strstr(got, "/../") && !strstr(got, "/./"), "%s", got);
}

START_TEST(own_functions)
{
	struct ta_srclines *s = ta_srclines_new();
	const char *a;

	setup();
	ck_assert_ptr_nonnull(s);
	a = ta_srcline(s, self_path, offset_of(report_fn_a));
	check_line(a, "/tests/unit/cmdtest.h", REPORT_FN_A_LINE);
	check_line(ta_srcline(s, self_path, offset_of(report_fn_b)), "/tests/unit/cmdtest.h",
		   REPORT_FN_B_LINE);
	check_line(ta_srcline(s, self_path, offset_of(report_fn_c)), "/tests/unit/cmdtest.h",
		   REPORT_FN_C_LINE);
	/* The line of the name, not of the return type above it. */
	check_line(ta_srcline(s, self_path, offset_of(local_function)),
		   "/tests/unit/test_srcline.c", LOCAL_LINE);
	/* Inside a function: the same answer, the same string. */
	ck_assert_ptr_eq(ta_srcline(s, self_path, offset_of(report_fn_a) + 1), a);
	ck_assert_ptr_eq(ta_srcline(s, self_path, offset_of(report_fn_a)), a);
	ta_srclines_free(s);
}
END_TEST

START_TEST(no_answer)
{
	struct ta_srclines *s = ta_srclines_new();

	setup();
	/* Before any code, a module that is not there, one that is not ELF,
	 * a relative path (the vDSO and the like). */
	ck_assert_ptr_null(ta_srcline(s, self_path, 0));
	ck_assert_ptr_null(ta_srcline(s, "/nonexistent/lib.so", 0x1000));
	ck_assert_ptr_null(ta_srcline(s, "/dev/null", 0x1000));
	ck_assert_ptr_null(ta_srcline(s, "linux-vdso.so.1", 0x1000));
	ck_assert_ptr_null(ta_srcline(NULL, self_path, offset_of(report_fn_a)));
	/* Asking again is answered from the cache, the same way. */
	ck_assert_ptr_null(ta_srcline(s, "/nonexistent/lib.so", 0x1000));
	ck_assert_ptr_nonnull(ta_srcline(s, self_path, offset_of(report_fn_a)));
	ta_srclines_free(s);
	ta_srclines_free(NULL);
}
END_TEST

int main(void)
{
#if !TA_HAVE_SRCLINE
	/* 77: meson's "skipped". */
	puts("skipped: this build has no source lines (meson -Dsrcline=disabled)");
	return 77;
#endif
	Suite *su = suite_create("srcline");
	TCase *tc = tcase_create("dwarf");

	tcase_add_test(tc, own_functions);
	tcase_add_test(tc, no_answer);
	suite_add_tcase(su, tc);
	return ta_check_run(su);
}
