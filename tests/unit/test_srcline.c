/* SPDX-License-Identifier: MIT */
/*
 * test_srcline.c - source lines from DWARF (analyzer/lib/srcline.c), asked about
 * this test executable's own functions (built with -g in every build type):
 * the file and the line of each function's name, for its first byte and one
 * inside it, full normalised paths, and no answer where there is none; and
 * the normalising of paths (ta_path_normalise) on buffers of exactly the
 * path's size (AddressSanitizer's build sees any byte read or written past
 * them) and on buffers with bytes that are not NUL right after the path's
 * end (any build sees them read).
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

static const struct {
	const char *in, *out;
} paths[] = {
    {"/a/b/c.c", "/a/b/c.c"},
    {"a/b/c.c", "a/b/c.c"},
    {"x", "x"},
    {"/a/./b/../c.c", "/a/c.c"},
    {"/work/build/../tests/programs/nest.c", "/work/tests/programs/nest.c"},
    {"../x/../y", "../y"},
    {"../../a", "../../a"},
    {"a/../../b", "../b"},
    {"a/..", "."},
    {"./", "."},
    {".", "."},
    {"..", ".."},
    {"/..", "/"},
    {"/../a", "/a"},
    {"/", "/"},
    {"//a//b//", "/a/b"},
    {"a/b/", "a/b"},
    {"/usr/src/./../lib/./x.c", "/usr/lib/x.c"},
    {"", ""},
};

/* Every path in a buffer of exactly its size: a byte read or written past
 * it is AddressSanitizer's heap-buffer-overflow. */
START_TEST(normalise_exact)
{
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		char *p = strdup(paths[i].in);

		ck_assert_ptr_nonnull(p);
		ta_path_normalise(p);
		ck_assert_msg(!strcmp(p, paths[i].out), "\"%s\" gave \"%s\", want \"%s\"",
			      paths[i].in, p, paths[i].out);
		free(p);
	}
	/* Every length of a last component, with the allocator's rounding
	 * on either side of it. */
	for (int n = 1; n <= 80; n++) {
		char in[128], want[128], *p;

		snprintf(in, sizeof(in), "/src/build/../%.*s", n,
			 "fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"
			 "fffffff");
		snprintf(want, sizeof(want), "/src/%.*s", n,
			 "fffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"
			 "fffffff");
		p = strdup(in);
		ck_assert_ptr_nonnull(p);
		ta_path_normalise(p);
		ck_assert_msg(!strcmp(p, want), "\"%s\" gave \"%s\"", in, p);
		free(p);
	}
}
END_TEST

/* Every path followed, past its NUL, by bytes that are not NUL nor '/':
 * the result is the same, and those bytes are neither read into it nor
 * written. */
START_TEST(normalise_junk_after)
{
	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		char buf[96];
		size_t n = strlen(paths[i].in);

		memset(buf, 'Z', sizeof(buf));
		memcpy(buf, paths[i].in, n + 1);
		ta_path_normalise(buf);
		ck_assert_msg(!strcmp(buf, paths[i].out), "\"%s\" gave \"%s\", want \"%s\"",
			      paths[i].in, buf, paths[i].out);
		for (size_t k = n + 1; k < sizeof(buf); k++)
			ck_assert_msg(buf[k] == 'Z', "\"%s\": byte %zu past its end written",
				      paths[i].in, k - n);
	}
}
END_TEST

int main(void)
{
	Suite *su = suite_create("srcline");
	TCase *tc = tcase_create("dwarf"), *tp = tcase_create("paths");

	tcase_add_test(tp, normalise_exact);
	tcase_add_test(tp, normalise_junk_after);
	suite_add_tcase(su, tp);
	tcase_add_test(tc, own_functions);
	tcase_add_test(tc, no_answer);
#if TA_HAVE_SRCLINE
	suite_add_tcase(su, tc);
#else
	/* The paths' tests run in every build; this one reads no DWARF
	 * (meson -Dsrcline=disabled). */
	puts("this build has no source lines (meson -Dsrcline=disabled): DWARF tests left out");
#endif
	return ta_check_run(su);
}
