/* SPDX-License-Identifier: MIT */
/*
 * test_common.c - the option parsers shared by the analysis commands
 * (analyzer/common.c): durations, time ranges and globs.
 */
#include <check.h>

#include "../check_run.h"
#include <stdint.h>
#include <stdlib.h>

#include "common.h"

static uint64_t time_of(const char *s)
{
	uint64_t ns = 12345;

	ck_assert_msg(ta_parse_time(s, &ns) == 0, "\"%s\" refused", s);
	return ns;
}

static void refused(const char *s)
{
	uint64_t ns = 12345;

	ck_assert_msg(ta_parse_time(s, &ns) < 0, "\"%s\" accepted", s);
	ck_assert_uint_eq(ns, 12345);
}

START_TEST(parse_time_units)
{
	ck_assert_uint_eq(time_of("0"), 0);
	ck_assert_uint_eq(time_of("300"), 300);
	ck_assert_uint_eq(time_of("300ns"), 300);
	ck_assert_uint_eq(time_of("200us"), 200000);
	ck_assert_uint_eq(time_of("10ms"), 10000000);
	ck_assert_uint_eq(time_of("1.5s"), 1500000000);
	ck_assert_uint_eq(time_of("2s"), 2000000000);
	ck_assert_uint_eq(time_of("2min"), 120000000000ull);
	ck_assert_uint_eq(time_of(".5ms"), 500000);
	ck_assert_uint_eq(time_of("1.ms"), 1000000);
	ck_assert_uint_eq(time_of("0.000000001s"), 1);
	ck_assert_uint_eq(time_of("1.250000000000000000s"), 1250000000);
	ck_assert_uint_eq(time_of("0.1min"), 6000000000ull);
	ck_assert_uint_eq(time_of("18446744073709551615"), UINT64_MAX);
	ck_assert_uint_eq(time_of("18446744073ns"), 18446744073ull);
}
END_TEST

START_TEST(parse_time_refusals)
{
	refused("");
	refused("ms");
	refused(".");
	refused("-1");
	refused("10 ms");
	refused("10m");
	refused("10MS");
	refused("10msx");
	refused("1.5"); /* half a nanosecond */
	refused("1.5ns");
	refused("0.0000000001s");
	refused("18446744073709551616");
	refused("18446744074s");
	refused("1.1.1s");
	refused("0.1234567890123456789s"); /* too many decimals */
}
END_TEST

START_TEST(parse_time_range)
{
	uint64_t lo = 1, hi = 2;

	ck_assert_int_eq(ta_parse_time_range("10ms-20ms", &lo, &hi), 0);
	ck_assert_uint_eq(lo, 10000000);
	ck_assert_uint_eq(hi, 20000000);
	ck_assert_int_eq(ta_parse_time_range("1.5s-", &lo, &hi), 0);
	ck_assert_uint_eq(lo, 1500000000);
	ck_assert_uint_eq(hi, UINT64_MAX);
	ck_assert_int_eq(ta_parse_time_range("-300", &lo, &hi), 0);
	ck_assert_uint_eq(lo, 0);
	ck_assert_uint_eq(hi, 300);
	ck_assert_int_eq(ta_parse_time_range("-", &lo, &hi), 0);
	ck_assert_uint_eq(lo, 0);
	ck_assert_uint_eq(hi, UINT64_MAX);
	ck_assert_int_eq(ta_parse_time_range("5us-5us", &lo, &hi), 0);
	ck_assert_uint_eq(lo, 5000);
	ck_assert_uint_eq(hi, 5000);

	ck_assert_int_lt(ta_parse_time_range("", &lo, &hi), 0);
	ck_assert_int_lt(ta_parse_time_range("10ms", &lo, &hi), 0);
	ck_assert_int_lt(ta_parse_time_range("20ms-10ms", &lo, &hi), 0);
	ck_assert_int_lt(ta_parse_time_range("10xs-20ms", &lo, &hi), 0);
	ck_assert_int_lt(ta_parse_time_range("10ms-20xs", &lo, &hi), 0);
	ck_assert_int_lt(ta_parse_time_range("1-2-3", &lo, &hi), 0);
}
END_TEST

START_TEST(glob)
{
	ck_assert(ta_glob_match("*", ""));
	ck_assert(ta_glob_match("*", "anything"));
	ck_assert(ta_glob_match("", ""));
	ck_assert(!ta_glob_match("", "a"));
	ck_assert(ta_glob_match("main", "main"));
	ck_assert(!ta_glob_match("main", "mains"));
	ck_assert(!ta_glob_match("main", "mai"));
	ck_assert(ta_glob_match("fib*", "fib"));
	ck_assert(ta_glob_match("fib*", "fibonacci"));
	ck_assert(!ta_glob_match("fib*", "xfib"));
	ck_assert(ta_glob_match("*fib", "xfib"));
	ck_assert(ta_glob_match("*a*b*c", "xxaxxbxxbxc"));
	ck_assert(!ta_glob_match("*a*b*c", "xxaxxbxxbxcd"));
	ck_assert(ta_glob_match("a**b", "ab"));
	ck_assert(ta_glob_match("?", "x"));
	ck_assert(!ta_glob_match("?", ""));
	ck_assert(!ta_glob_match("?", "xy"));
	ck_assert(ta_glob_match("f?b", "fib"));
	ck_assert(ta_glob_match("level[0-9]", "level7"));
	ck_assert(!ta_glob_match("level[0-9]", "levelx"));
	ck_assert(ta_glob_match("level[!0-9]", "levelx"));
	ck_assert(!ta_glob_match("level[^0-9]", "level3"));
	ck_assert(ta_glob_match("[abc]x", "bx"));
	ck_assert(ta_glob_match("[]]", "]"));
	ck_assert(ta_glob_match("[a-]", "-"));
	/* C++ names: an unclosed '[' is literal; '\\' quotes. */
	ck_assert(ta_glob_match("Foo::operator[*", "Foo::operator[](unsigned long)"));
	ck_assert(ta_glob_match("Foo::operator\\[\\]*", "Foo::operator[](int)"));
	ck_assert(ta_glob_match("ns::*::get(*)", "ns::Box<int>::get(int) const") == 0);
	ck_assert(ta_glob_match("ns::*::get(*)*", "ns::Box<int>::get(int) const"));
	ck_assert(ta_glob_match("\\*", "*"));
	ck_assert(!ta_glob_match("\\*", "x"));
}
END_TEST

int main(void)
{
	Suite *s = suite_create("common");
	TCase *tc = tcase_create("options");

	tcase_add_test(tc, parse_time_units);
	tcase_add_test(tc, parse_time_refusals);
	tcase_add_test(tc, parse_time_range);
	tcase_add_test(tc, glob);
	suite_add_tcase(s, tc);
	return ta_check_run(s);
}
