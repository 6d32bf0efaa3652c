/* SPDX-License-Identifier: MIT */
/*
 * test_pkdeflate.c - the Perfetto export's deflater (analyzer/cmds/pkdeflate.c):
 * random packets (bodies drawn from a few, so that they repeat near and
 * far, of every length around the limits; random tails; bytes left out of
 * any packet) inflated back by zlib, which checks the Adler-32 too.
 */
#include <check.h>

#include "../check_run.h"
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "pkdeflate.h"
#include "testutil.h"

static void round_trip(struct ta_pkz *z, const uint8_t *in, size_t n, const size_t *body,
		       const size_t *tail, size_t npk)
{
	uLongf outn = (uLongf)n + 1;
	uint8_t *out = malloc(outn);
	size_t at = z->len;

	ck_assert_ptr_nonnull(out);
	ck_assert_int_eq(ta_pkz_begin(z, in, n), 0);
	for (size_t k = 0; k < npk; k++)
		ta_pkz_packet(z, body[k], tail[k]);
	ta_pkz_end(z);
	ck_assert_int_eq(uncompress(out, &outn, z->out + at, (uLong)(z->len - at)), Z_OK);
	ck_assert_uint_eq(outn, n);
	ck_assert(!memcmp(out, in, n));
	free(out);
}

START_TEST(random_packets)
{
	struct rng seed = {test_seed("random_packets")};
	struct ta_pkz *z = calloc(1, sizeof(*z));

	ck_assert_ptr_nonnull(z);
	for (int round = 0; round < 200; round++) {
		size_t cap = 1u << 20, n = 0, npk = 0;
		uint8_t *in = malloc(cap + 300);
		size_t *body = malloc(sizeof(size_t) * cap), *tail = malloc(sizeof(size_t) * cap);
		uint8_t shapes[8][300];
		size_t shape_len[8];
		size_t want = rng_next(&seed) % (round < 100 ? 4096 : cap);

		for (int s = 0; s < 8; s++) {
			/* Lengths around the limits: under 4, 4-8, 258, over 258. */
			static const size_t lens[] = {1, 3, 4, 7, 8, 9, 257, 258, 259, 280};

			shape_len[s] =
			    rng_next(&seed) % 2 ? lens[rng_next(&seed) % 10] : rng_next(&seed) % 40;
			for (size_t i = 0; i < shape_len[s]; i++)
				shapes[s][i] = (uint8_t)(rng_next(&seed) % 4 ? rng_next(&seed) : 0);
		}
		while (n < want) {
			int s = (int)(rng_next(&seed) % 8);
			size_t t = rng_next(&seed) % 17;

			memcpy(in + n, shapes[s], shape_len[s]);
			for (size_t i = 0; i < t; i++)
				in[n + shape_len[s] + i] = (uint8_t)rng_next(&seed);
			body[npk] = shape_len[s];
			tail[npk++] = t;
			n += shape_len[s] + t;
			/* Now and then a long stretch of new bytes: matches far back. */
			if (rng_next(&seed) % 500 == 0 && n + 40000 < cap) {
				for (size_t i = 0; i < 40000; i++)
					in[n + i] = (uint8_t)rng_next(&seed);
				body[npk] = 40000;
				tail[npk++] = 0;
				n += 40000;
			}
		}
		/* The last packets left out: ta_pkz_end writes them as literals. */
		npk -= npk ? rng_next(&seed) % (npk < 3 ? npk : 3) : 0;
		/* Streams appended one after another, as a job's bundles are. */
		if (round % 10 == 0)
			z->len = 0;
		round_trip(z, in, n, body, tail, npk);
		free(in);
		free(body);
		free(tail);
	}
	ta_pkz_free(z);
	free(z);
}
END_TEST

/* The fib export's case: two bodies alternating, a 1-2 byte tail. */
START_TEST(calls)
{
	static const uint8_t begin[] = {0x0a, 0x14, 0x50, 0x02, 0x5a, 0x0e, 0x18, 0x01, 0x48, 0x01,
					0x50, 0x02, 0x22, 0x06, 0x08, 0x01, 0x88, 0x01, 0x01};
	static const uint8_t end[] = {0x0a, 0x08, 0x50, 0x02, 0x5a, 0x02, 0x48, 0x02};
	size_t n = 0, npk = 0, body[20000], tail[20000];
	uint8_t *in = malloc(20000 * 24);
	struct ta_pkz *z = calloc(1, sizeof(*z));

	ck_assert_ptr_nonnull(in);
	ck_assert_ptr_nonnull(z);
	for (int k = 0; k < 20000; k++) {
		const uint8_t *b = k % 2 ? end : begin;
		size_t bl = k % 2 ? sizeof(end) : sizeof(begin);

		memcpy(in + n, b, bl);
		in[n + bl] = 0x40;
		in[n + bl + 1] = (uint8_t)(k % 100);
		body[npk] = bl;
		tail[npk++] = 2;
		n += bl + 2;
	}
	round_trip(z, in, n, body, tail, npk);
	/* A match and two literals a packet: about 4 bytes. */
	ck_assert_uint_lt(z->len, 20000 * 5);
	ta_pkz_free(z);
	free(z);
	free(in);
}
END_TEST

static Suite *pkdeflate_suite(void)
{
	Suite *s = suite_create("pkdeflate");
	TCase *tc = tcase_create("deflate");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, random_packets);
	tcase_add_test(tc, calls);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ta_check_run(pkdeflate_suite());
}
