/* SPDX-License-Identifier: MIT */
/*
 * test_filter.c - the FILTER chunk's decoder (format/filterchunk.c): a round
 * trip of what the agent writes, every truncation refused, counts that lie
 * refused before anything is allocated, trailing bytes of a later version
 * ignored, and a seeded fuzz (the seed is printed on failure).
 */
#include <check.h>

#include "../check_run.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dumpgen.h"
#include "format.h"

/* What filter.c writes: the strings, depth, min-duration, n functions. */
static void payload(struct pb *b, uint64_t n)
{
	pb_str(b, "work,!noise,lib*.so:hash*");
	pb_str(b, "leaf");
	pb_u(b, 3);
	pb_u(b, 10000);
	pb_u(b, n);
	for (uint64_t i = 0; i < n; i++) {
		pb_u(b, 0x555555554000ull + 16 * i);
		pb_u(b, i % 2 ? TA_FILTER_HOW_PATCHED : TA_FILTER_HOW_RUNTIME);
		pb_u(b, (uint64_t)1 << (i % 3));
	}
}

START_TEST(filter_round_trip)
{
	struct pb b = {0};
	struct ta_filter_info f;

	payload(&b, 5);
	ck_assert_int_eq(ta_filter_decode(b.p, b.len, &f), 0);
	ck_assert_str_eq(f.filter, "work,!noise,lib*.so:hash*");
	ck_assert_str_eq(f.exclude, "leaf");
	ck_assert_uint_eq(f.depth, 3);
	ck_assert_uint_eq(f.min_duration_ns, 10000);
	ck_assert_uint_eq(f.nfns, 5);
	for (uint64_t i = 0; i < 5; i++) {
		ck_assert_uint_eq(f.fns[i].addr, 0x555555554000ull + 16 * i);
		ck_assert_uint_eq(f.fns[i].how,
				  i % 2 ? TA_FILTER_HOW_PATCHED : TA_FILTER_HOW_RUNTIME);
		ck_assert_uint_eq(f.fns[i].kind, 1u << (i % 3));
	}
	ta_filter_info_free(&f);
	ck_assert_ptr_null(f.fns);
	/* A later minor version's trailing field. */
	pb_u(&b, 77);
	ck_assert_int_eq(ta_filter_decode(b.p, b.len, &f), 0);
	ck_assert_uint_eq(f.nfns, 5);
	ta_filter_info_free(&f);
	pb_free(&b);
}
END_TEST

START_TEST(filter_empty)
{
	struct pb b = {0};
	struct ta_filter_info f;

	pb_str(&b, "");
	pb_str(&b, "");
	pb_u(&b, 0);
	pb_u(&b, 0);
	pb_u(&b, 0);
	ck_assert_int_eq(ta_filter_decode(b.p, b.len, &f), 0);
	ck_assert_str_eq(f.filter, "");
	ck_assert_str_eq(f.exclude, "");
	ck_assert_uint_eq(f.nfns, 0);
	ta_filter_info_free(&f);
	pb_free(&b);
}
END_TEST

/* Every prefix of a whole payload is refused, and leaves nothing owned. */
START_TEST(filter_truncated)
{
	struct pb b = {0};
	struct ta_filter_info f;

	payload(&b, 4);
	for (size_t n = 0; n < b.len; n++) {
		ck_assert_int_eq(ta_filter_decode(b.p, n, &f), -TA_E_PAYLOAD);
		ck_assert_ptr_null(f.fns);
		ck_assert_ptr_null(f.filter);
	}
	pb_free(&b);
}
END_TEST

/* A count larger than the bytes left could hold: refused, not allocated. */
START_TEST(filter_lying_count)
{
	struct pb b = {0};
	struct ta_filter_info f;

	pb_str(&b, "a");
	pb_str(&b, "");
	pb_u(&b, 0);
	pb_u(&b, 0);
	pb_u(&b, UINT64_MAX);
	pb_u(&b, 1);
	pb_u(&b, 2);
	pb_u(&b, 1);
	ck_assert_int_eq(ta_filter_decode(b.p, b.len, &f), -TA_E_PAYLOAD);
	b.len = 0;
	pb_str(&b, "a");
	pb_str(&b, "");
	pb_u(&b, 0);
	pb_u(&b, 0);
	pb_u(&b, 2); /* two announced, one there */
	pb_u(&b, 1);
	pb_u(&b, 2);
	pb_u(&b, 1);
	ck_assert_int_eq(ta_filter_decode(b.p, b.len, &f), -TA_E_PAYLOAD);
	/* A string longer than the payload. */
	b.len = 0;
	pb_u(&b, 1000);
	pb_u(&b, 0);
	ck_assert_int_eq(ta_filter_decode(b.p, b.len, &f), -TA_E_PAYLOAD);
	pb_free(&b);
}
END_TEST

START_TEST(filter_fuzz)
{
	uint64_t seed = 0x5eed0021u;
	struct pb b = {0};
	uint8_t *m;

	payload(&b, 40);
	m = malloc(b.len);
	ck_assert_ptr_nonnull(m);
	for (int round = 0; round < 20000; round++) {
		struct ta_filter_info f;
		size_t n = b.len;
		int rc;

		memcpy(m, b.p, b.len);
		for (int k = 0; k < 1 + round % 6; k++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			m[(seed >> 17) % n] = (uint8_t)(seed >> 40);
		}
		if (round % 4 == 0)
			n = (size_t)(seed >> 11) % (b.len + 1);
		rc = ta_filter_decode(m, n, &f);
		ck_assert_msg(rc == 0 || rc == -TA_E_PAYLOAD, "seed %llx: rc %d",
			      (unsigned long long)seed, rc);
		if (rc == 0) {
			ck_assert_msg(f.nfns <= n / 3, "seed %llx", (unsigned long long)seed);
			ck_assert_ptr_nonnull(f.filter);
			ck_assert_ptr_nonnull(f.exclude);
			ta_filter_info_free(&f);
		}
	}
	free(m);
	pb_free(&b);
}
END_TEST

static Suite *filter_suite(void)
{
	Suite *s = suite_create("filter");
	TCase *tc = tcase_create("filter");

	tcase_add_test(tc, filter_round_trip);
	tcase_add_test(tc, filter_empty);
	tcase_add_test(tc, filter_truncated);
	tcase_add_test(tc, filter_lying_count);
	tcase_add_test(tc, filter_fuzz);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ta_check_run(filter_suite());
}
