/* SPDX-License-Identifier: MIT */
/*
 * test_chttp.c - the HTTP client ClickHouse is reached with
 * (analyzer/lib/chttp.c): URLs taken and refused (never credentials in
 * one), answers plain and chunked, and a seeded fuzz of hostile answers
 * that never reads or writes outside the answer.
 */
#define _GNU_SOURCE
#include <check.h>

#include "../check_run.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chttp.h"

START_TEST(urls)
{
	struct ta_ch_url u;
	const char *why;

	ck_assert_int_eq(ta_ch_url_parse("http://127.0.0.1:18123/", &u, &why), 0);
	ck_assert_str_eq(u.host, "127.0.0.1");
	ck_assert_str_eq(u.port, "18123");
	ck_assert_str_eq(u.path, "/");
	ck_assert_str_eq(u.query, "");
	ck_assert_int_eq(
	    ta_ch_url_parse("http://ch.example?database=t&insert_distributed_sync=1", &u, &why), 0);
	ck_assert_str_eq(u.host, "ch.example");
	ck_assert_str_eq(u.port, "8123");
	ck_assert_str_eq(u.path, "/");
	ck_assert_str_eq(u.query, "database=t&insert_distributed_sync=1");
	ck_assert_int_eq(ta_ch_url_parse("http://[::1]:9/x?y=1", &u, &why), 0);
	ck_assert_str_eq(u.host, "::1");
	ck_assert_str_eq(u.port, "9");
	ck_assert_str_eq(u.path, "/x");
	ck_assert_str_eq(u.query, "y=1");

	ck_assert_int_eq(ta_ch_url_parse("http://u:p@h/", &u, &why), -1);
	ck_assert_ptr_nonnull(strstr(why, "in a file"));
	ck_assert_int_eq(ta_ch_url_parse("https://h/", &u, &why), -1);
	ck_assert_int_eq(ta_ch_url_parse("ftp://h/", &u, &why), -1);
	ck_assert_int_eq(ta_ch_url_parse("http://", &u, &why), -1);
	ck_assert_int_eq(ta_ch_url_parse("http://h:0/", &u, &why), -1);
	ck_assert_int_eq(ta_ch_url_parse("http://h:65536/", &u, &why), -1);
	ck_assert_int_eq(ta_ch_url_parse("http://h:12x/", &u, &why), -1);
	ck_assert_int_eq(ta_ch_url_parse("http://[::1/", &u, &why), -1);
	ck_assert_int_eq(ta_ch_url_parse("http://h/a b", &u, &why), -1);
	ck_assert_int_eq(ta_ch_url_parse("http://h/?a\r\nX-Evil: 1", &u, &why), -1);
}
END_TEST

static int answer(const char *text, int *status, char *out, size_t out_size)
{
	size_t n = strlen(text), blen;
	char *a = malloc(n + 1), *b;
	int r;

	memcpy(a, text, n);
	r = ta_ch_answer(a, n, status, &b, &blen);
	if (r == 0)
		snprintf(out, out_size, "%.*s", (int)blen, b);
	free(a);
	return r;
}

START_TEST(answers)
{
	char body[256];
	int status;

	ck_assert_int_eq(
	    answer("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n1\n", &status, body, sizeof(body)),
	    0);
	ck_assert_int_eq(status, 200);
	ck_assert_str_eq(body, "1\n");
	ck_assert_int_eq(answer("HTTP/1.1 500 Internal Server Error\r\nTransfer-Encoding: "
				"chunked\r\n\r\n5\r\nCode:\r\n7\r\n 60, no\r\n0\r\n\r\n",
				&status, body, sizeof(body)),
			 0);
	ck_assert_int_eq(status, 500);
	ck_assert_str_eq(body, "Code: 60, no");
	/* A chunk that claims more than there is: what there is. */
	ck_assert_int_eq(answer("HTTP/1.0 404 x\r\ntransfer-encoding: chunked\r\n\r\nfff\r\nab",
				&status, body, sizeof(body)),
			 0);
	ck_assert_str_eq(body, "ab");
	ck_assert_int_eq(answer("SSH-2.0-OpenSSH\r\n", &status, body, sizeof(body)), -1);
	ck_assert_int_eq(answer("HTTP/1.1 200 OK\r\n", &status, body, sizeof(body)), -1);
	ck_assert_int_eq(answer("", &status, body, sizeof(body)), -1);
}
END_TEST

/* Random and mutated answers: the body always within the answer. */
START_TEST(answers_fuzz)
{
	static const char *const seeds[] = {
	    "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
	    "HTTP/1.1 500 E\r\nContent-Length: 4\r\n\r\nfail",
	};
	unsigned seed = 38;
	char *a = malloc(4097);

	for (int iter = 0; iter < 50000; iter++) {
		size_t n, blen;
		char *b;
		int status;

		if (iter % 2) {
			const char *s = seeds[rand_r(&seed) % 2];

			n = strlen(s);
			memcpy(a, s, n);
			for (int k = rand_r(&seed) % 6; k > 0; k--)
				a[(size_t)rand_r(&seed) % n] = (char)rand_r(&seed);
			n = (size_t)rand_r(&seed) % (n + 1);
		} else {
			n = (size_t)rand_r(&seed) % 4096;
			for (size_t i = 0; i < n; i++)
				a[i] = "HTP/1. 20\r\nchunked:Transfer-Encoding0123456789abcdef"
				    [rand_r(&seed) % 52];
		}
		if (ta_ch_answer(a, n, &status, &b, &blen) == 0) {
			ck_assert(b >= a && b <= a + n);
			ck_assert(blen <= (size_t)(a + n - b));
		}
	}
	free(a);
}
END_TEST

static Suite *chttp_suite(void)
{
	Suite *s = suite_create("chttp");
	TCase *tc = tcase_create("chttp");

	tcase_add_test(tc, urls);
	tcase_add_test(tc, answers);
	tcase_add_test(tc, answers_fuzz);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ta_check_run(chttp_suite());
}
