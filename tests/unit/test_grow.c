/* SPDX-License-Identifier: MIT */
/*
 * test_grow.c - growable arrays and byte buffers (format/grow.c): the
 * capacities exactly, sizes that would overflow a size_t refused without
 * touching the array, a buffer's limit and its sticky failure.
 */
#include <check.h>

#include "../check_run.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"

START_TEST(capacities)
{
	/* From first, doubled until need fits. */
	ck_assert_uint_eq(ta_grow_cap(0, 1, 8, 16, SIZE_MAX), 16);
	ck_assert_uint_eq(ta_grow_cap(0, 17, 8, 16, SIZE_MAX), 32);
	ck_assert_uint_eq(ta_grow_cap(16, 17, 8, 16, SIZE_MAX), 32);
	ck_assert_uint_eq(ta_grow_cap(16, 100, 8, 16, SIZE_MAX), 128);
	ck_assert_uint_eq(ta_grow_cap(0, 5, 1, 0, SIZE_MAX), 8); /* first 0: from 1 */
	/* Room already: as it is, whatever the limit. */
	ck_assert_uint_eq(ta_grow_cap(64, 64, 8, 16, SIZE_MAX), 64);
	ck_assert_uint_eq(ta_grow_cap(64, 10, 8, 16, 32), 64);
	/* A limit: the doubling stops at it; past it, 0. */
	ck_assert_uint_eq(ta_grow_cap(4096, 5000, 1, 4096, 6000), 6000);
	ck_assert_uint_eq(ta_grow_cap(0, 100, 1, 4096, 6000), 4096);
	ck_assert_uint_eq(ta_grow_cap(0, 100, 1, 8192, 6000), 6000);
	ck_assert_uint_eq(ta_grow_cap(4096, 6001, 1, 4096, 6000), 0);
	/* Bytes that a size_t cannot count: 0, never a wrapped product. */
	ck_assert_uint_eq(ta_grow_cap(0, 3, SIZE_MAX / 2, 1, SIZE_MAX), 0);
	ck_assert_uint_eq(ta_grow_cap(0, SIZE_MAX / 8 + 1, 8, 16, SIZE_MAX), 0);
	ck_assert_uint_eq(ta_grow_cap(0, SIZE_MAX / 8, 8, 16, SIZE_MAX), SIZE_MAX / 8);
	/* Doubling past half the most: the most, not a wrap to 0. */
	ck_assert_uint_eq(ta_grow_cap(SIZE_MAX / 2 + 1, SIZE_MAX / 2 + 2, 1, 1, SIZE_MAX),
			  SIZE_MAX);
}
END_TEST

START_TEST(arrays)
{
	uint64_t *a = NULL, *b;
	size_t cap = 0;

	for (size_t n = 0; n < 1000; n++) {
		b = ta_vec_reserve(a, n + 1, &cap, sizeof(*a), 16);
		ck_assert_ptr_nonnull(b);
		a = b;
		a[n] = n;
		/* Doubled from 16: a power of two, at most twice what is used. */
		ck_assert_uint_ge(cap, n + 1);
		ck_assert_uint_eq(cap & (cap - 1), 0);
		ck_assert_uint_le(cap, 2 * (n + 1) > 16 ? 2 * (n + 1) : 16);
	}
	ck_assert_uint_eq(cap, 1024);
	/* Room already: the same array. */
	ck_assert_ptr_eq(ta_vec_reserve(a, 1024, &cap, sizeof(*a), 16), a);
	/* Too many bytes for a size_t: NULL, the array and cap as they were. */
	ck_assert_ptr_null(ta_vec_reserve(a, SIZE_MAX / 4, &cap, sizeof(*a), 16));
	ck_assert_uint_eq(cap, 1024);
	for (size_t n = 0; n < 1000; n++)
		ck_assert_uint_eq(a[n], n);
	/* A bound: the doubling stops at it; past it, NULL. */
	b = ta_vec_reserve_max(a, 1025, &cap, sizeof(*a), 16, 1500);
	ck_assert_ptr_nonnull(b);
	a = b;
	ck_assert_uint_eq(cap, 1500);
	ck_assert_ptr_null(ta_vec_reserve_max(a, 1501, &cap, sizeof(*a), 16, 1500));
	ck_assert_uint_eq(cap, 1500);
	ck_assert_uint_eq(a[999], 999);
	free(a);
}
END_TEST

START_TEST(byte_buffer)
{
	static const uint8_t want[] = {0x05, 0xac, 0x02, 3, 'a', 'b', 'c', 0xff};
	struct ta_buf b = {0};
	uint8_t big[300];

	ta_buf_u(&b, 5);
	ta_buf_u(&b, 300);
	ta_buf_str(&b, "abc", 3);
	ta_buf_put(&b, "\xff", 1);
	ck_assert_int_eq(b.oom, 0);
	ck_assert_uint_eq(b.len, sizeof(want));
	ck_assert_mem_eq(b.p, want, sizeof(want));
	ck_assert_uint_eq(b.cap, TA_BUF_FIRST);
	memset(big, 7, sizeof(big));
	ta_buf_put(&b, big, sizeof(big));
	ck_assert_uint_eq(b.cap, 2 * TA_BUF_FIRST);
	ck_assert_uint_eq(b.len, sizeof(want) + sizeof(big));
	ck_assert_mem_eq(b.p + sizeof(want), big, sizeof(big));
	ta_buf_free(&b);
	ck_assert_ptr_null(b.p);
	ck_assert_uint_eq(b.len + b.cap, 0);
}
END_TEST

START_TEST(byte_buffer_limit)
{
	struct ta_buf b = {.max = 300};
	uint8_t big[200];

	memset(big, 1, sizeof(big));
	ta_buf_put(&b, big, sizeof(big));
	ck_assert_uint_eq(b.cap, TA_BUF_FIRST);
	ta_buf_put(&b, big, 100);
	ck_assert_uint_eq(b.cap, 300); /* the doubling stops at the limit */
	ck_assert_uint_eq(b.len, 300);
	ck_assert_int_eq(b.oom, 0);
	/* Past it: refused, and every append after it too. */
	ck_assert_int_eq(ta_buf_reserve(&b, 1), -1);
	ck_assert_int_eq(b.oom, 1);
	ck_assert_uint_eq(b.len, 300);
	ta_buf_u(&b, 1);
	ta_buf_put(&b, "x", 1);
	ck_assert_uint_eq(b.len, 300);
	ck_assert_uint_eq(b.cap, 300);
	/* Freed: empty, the limit kept. */
	ta_buf_free(&b);
	ck_assert_int_eq(b.oom, 0);
	ck_assert_uint_eq(b.max, 300);
	/* A size that would wrap len + more: refused. */
	ta_buf_put(&b, "y", 1);
	ck_assert_int_eq(ta_buf_reserve(&b, SIZE_MAX), -1);
	ck_assert_int_eq(b.oom, 1);
	ck_assert_uint_eq(b.len, 1);
	ta_buf_free(&b);
}
END_TEST

static Suite *grow_suite(void)
{
	Suite *s = suite_create("grow");
	TCase *tc = tcase_create("grow");

	tcase_add_test(tc, capacities);
	tcase_add_test(tc, arrays);
	tcase_add_test(tc, byte_buffer);
	tcase_add_test(tc, byte_buffer_limit);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ta_check_run(grow_suite());
}
