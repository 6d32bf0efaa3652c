/* SPDX-License-Identifier: MIT */
/*
 * test_mindur.c - the minimum-duration filter (agent/mindur.[ch]): short
 * calls left out and counted, their ancestors written before a kept call,
 * EXT events forcing their frames out, pending entries kept across calls
 * (chunks) and written at a flush, the pending stack's bound, and a seeded
 * random check that the output stays in time order, nests, and counts
 * every call once.
 */
#include <check.h>

#include "../check_run.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "mindur.h"

#define EN(t, a) ((struct ta_raw){(t), (a)})
#define EX(t, a) ((struct ta_raw){(t), (a) | TA_RAW_EXIT})

static void expect(const struct ta_mindur *m, const struct ta_raw *want, size_t n)
{
	ck_assert_uint_eq(m->out_len, n);
	for (size_t i = 0; i < n; i++) {
		ck_assert_uint_eq(m->out[i].ticks, want[i].ticks);
		ck_assert_uint_eq(m->out[i].addr, want[i].addr);
	}
}

/* The count of addr in the TA_EXT_SHORT groups of m->out (and checks
 * the groups' shape). */
static uint64_t shorts_of(const struct ta_mindur *m, uint64_t addr)
{
	uint64_t n = 0;

	for (size_t i = 0; i < m->out_len; i++) {
		uint64_t h = m->out[i].addr;
		uint32_t nv;

		if (!ta_raw_is_ext(h))
			continue;
		nv = ta_raw_ext_n(h);
		ck_assert_uint_eq(ta_raw_ext_kind(h), TA_EXT_SHORT);
		ck_assert_uint_eq(nv % 2, 0);
		ck_assert_uint_le(nv, TA_EXT_MAX_VALUES);
		for (uint32_t j = 0; j < nv / 2; j++)
			if (m->out[i + 1 + j].ticks == addr)
				n += m->out[i + 1 + j].addr;
		i += TA_RAW_EXT_SLOTS(nv);
	}
	return n;
}

START_TEST(mindur_short_left_out)
{
	struct ta_mindur m;
	const struct ta_raw in[] = {EN(0, 0xa0),  EN(10, 0xb0), EN(11, 0xc0),  EX(12, 0xc0),
				    EX(15, 0xb0), EN(20, 0xb0), EX(130, 0xb0), EX(200, 0xa0)};
	/* b's second call is long: a (pending) goes out before it. */
	const struct ta_raw want[] = {EN(0, 0xa0), EN(20, 0xb0), EX(130, 0xb0), EX(200, 0xa0)};

	ta_mindur_init(&m, 100);
	ck_assert_int_eq(ta_mindur_filter(&m, in, 8), 0);
	expect(&m, want, 4);
	ck_assert_uint_eq(m.dropped, 2);
	m.out_len = 0;
	ck_assert_int_eq(ta_mindur_counts(&m), 0);
	ck_assert_uint_eq(shorts_of(&m, 0xb0), 1);
	ck_assert_uint_eq(shorts_of(&m, 0xc0), 1);
	/* At the newest record's time (nothing pending). */
	ck_assert_uint_eq(m.out[0].ticks, 200);
	/* Counted once: a second call has none left. */
	m.out_len = 0;
	ck_assert_int_eq(ta_mindur_counts(&m), 0);
	ck_assert_uint_eq(m.out_len, 0);
	ta_mindur_free(&m);
}
END_TEST

START_TEST(mindur_ext_forces)
{
	struct ta_mindur m;
	/* A message (2 values: one slot) inside a short b inside a: both
	 * entries go out before it, then everything after as it is. */
	const struct ta_raw in[] = {
	    EN(0, 0xa0), EN(1, 0xb0), {2, TA_RAW_EXT | (uint64_t)TA_EXT_MESSAGE << 8 | 2},
	    {7, 8},	 EX(3, 0xb0), EN(4, 0xc0),
	    EX(5, 0xc0), EX(6, 0xa0)};
	const struct ta_raw want[] = {in[0], in[1], in[2], in[3], in[4], in[7]};

	ta_mindur_init(&m, 100);
	ck_assert_int_eq(ta_mindur_filter(&m, in, 8), 0);
	expect(&m, want, 6);
	ck_assert_uint_eq(m.dropped, 1); /* c */
	ta_mindur_free(&m);
}
END_TEST

START_TEST(mindur_pending_across_chunks)
{
	struct ta_mindur m;
	const struct ta_raw in[] = {EN(0, 0xa0),  EN(10, 0xb0),	 EN(11, 0xc0),
				    EX(12, 0xc0), EX(150, 0xb0), EN(160, 0xd0)};
	const struct ta_raw want1[] = {EN(0, 0xa0), EN(10, 0xb0), EX(150, 0xb0)};
	const struct ta_raw want2[] = {EN(160, 0xd0)};

	ta_mindur_init(&m, 100);
	/* Cut after c's entry: a, b and c wait; c's exit drops it. */
	ck_assert_int_eq(ta_mindur_filter(&m, in, 3), 0);
	ck_assert_uint_eq(m.out_len, 0);
	ck_assert_uint_eq(m.npend, 3);
	ck_assert_int_eq(ta_mindur_filter(&m, in + 3, 3), 0);
	expect(&m, want1, 3);
	ck_assert_uint_eq(m.npend, 1);
	/* The end: d is open, its entry written. */
	m.out_len = 0;
	ck_assert_int_eq(ta_mindur_flush(&m), 0);
	expect(&m, want2, 1);
	ta_mindur_free(&m);
}
END_TEST

START_TEST(mindur_pending_bound)
{
	enum { DEPTH = TA_MINDUR_PENDING_MAX + 10 };
	struct ta_mindur m;
	struct ta_raw *in = malloc(2 * DEPTH * sizeof(*in));
	size_t written = 0;

	for (uint64_t i = 0; i < DEPTH; i++) {
		in[i] = EN(i, 0x1000 + 16 * i);
		in[2 * DEPTH - 1 - i] = EX(2 * DEPTH - 1 - i, 0x1000 + 16 * i);
	}
	ta_mindur_init(&m, 1000000);
	ck_assert_int_eq(ta_mindur_filter(&m, in, 2 * DEPTH), 0);
	/* The oldest half went out when the stack was full; their exits
	 * too; the others were short. */
	for (size_t i = 0; i < m.out_len; i++)
		written += !(m.out[i].addr & TA_RAW_EXIT);
	ck_assert_uint_eq(written, TA_MINDUR_PENDING_MAX / 2);
	ck_assert_uint_eq(m.out_len, TA_MINDUR_PENDING_MAX);
	ck_assert_uint_eq(m.dropped, DEPTH - TA_MINDUR_PENDING_MAX / 2);
	for (size_t i = 0; i < TA_MINDUR_PENDING_MAX / 2; i++)
		ck_assert_uint_eq(m.out[i].addr, 0x1000 + 16 * i);
	ta_mindur_free(&m);
	free(in);
}
END_TEST

/* More functions with dropped calls than the table holds: the counts go
 * out in the middle, every call counted once, the output in time order. */
START_TEST(mindur_counts_full)
{
	enum { FNS = TA_MINDUR_COUNTS_MAX + 1000 };
	struct ta_mindur m;
	struct ta_raw *in = malloc((2 * FNS + 2) * sizeof(*in));
	uint64_t total = 0, prev = 0;
	size_t n = 0, kept = 0;

	in[n++] = EN(0, 0x10);
	for (uint64_t i = 0; i < FNS; i++) {
		in[n++] = EN(1 + 2 * i, 0x100000 + 16 * i);
		in[n++] = EX(2 + 2 * i, 0x100000 + 16 * i);
	}
	in[n++] = EX(1000000, 0x10);
	ta_mindur_init(&m, 100);
	ck_assert_int_eq(ta_mindur_filter(&m, in, n), 0);
	kept = m.out_len;
	ck_assert_int_eq(ta_mindur_counts(&m), 0);
	for (size_t i = 0; i < m.out_len; i++) {
		uint32_t nv = ta_raw_ext_n(m.out[i].addr);

		if (!ta_raw_is_ext(m.out[i].addr))
			continue;
		ck_assert_uint_eq(ta_raw_ext_kind(m.out[i].addr), TA_EXT_SHORT);
		for (uint32_t j = 0; j < nv / 2; j++)
			total += m.out[i + 1 + j].addr;
		i += TA_RAW_EXT_SLOTS(nv);
	}
	ck_assert_uint_eq(total, FNS);
	ck_assert_uint_eq(m.dropped, FNS);
	/* The counts went out at the pending outer call's entry time (no
	 * frame needed: they belong to no call); the outer call, long, last;
	 * every record in time order. */
	ck_assert_uint_eq(m.out[kept - 2].addr, 0x10);
	ck_assert_uint_eq(m.out[kept - 1].addr, 0x10 | TA_RAW_EXIT);
	for (size_t i = 0; i < kept; i++) {
		ck_assert_uint_ge(m.out[i].ticks, prev);
		prev = m.out[i].ticks;
		if (ta_raw_is_ext(m.out[i].addr))
			i += TA_RAW_EXT_SLOTS(ta_raw_ext_n(m.out[i].addr));
	}
	ta_mindur_free(&m);
	free(in);
}
END_TEST

/*
 * Random call trees (seeded): the output is in time order, well nested,
 * and every call is either written (entry and exit) or counted; a written
 * call is long, forced by a message inside it, or holds a written one.
 */
START_TEST(mindur_random)
{
	unsigned seed = 12345u + (unsigned)_i;
	struct ta_mindur m;
	struct ta_raw *in = malloc(200000 * sizeof(*in));
	uint64_t *stack = malloc(10000 * sizeof(*stack)), t = 0, calls = 0, counted = 0;
	size_t n = 0, depth = 0;
	struct ta_raw *all = malloc(400000 * sizeof(*all));
	size_t nall = 0;

	srand(seed);
	while (n < 199000) {
		int r = rand() % 100;

		t += (uint64_t)(rand() % 50);
		if ((r < 48 && depth < 9000) || !depth) {
			stack[depth] = 0x1000 + 16 * (uint64_t)(rand() % 300);
			in[n++] = EN(t, stack[depth++]);
		} else if (r < 97) {
			in[n++] = EX(t, stack[--depth]);
			calls++;
		} else {
			in[n++] =
			    (struct ta_raw){t, TA_RAW_EXT | (uint64_t)TA_EXT_MESSAGE << 8 | 1};
			in[n++] = (struct ta_raw){0, 0};
		}
	}
	ta_mindur_init(&m, 400);
	/* Fed in pieces, as blocks come. */
	for (size_t at = 0; at < n;) {
		size_t k = (size_t)(rand() % 5000) + 1;

		if (at + k > n)
			k = n - at;
		/* Not inside an EXT group. */
		while (at + k < n && in[at + k - 1].addr & TA_RAW_EXT &&
		       !(in[at + k - 1].addr & (TA_RAW_EXIT | TA_RAW_LOST)))
			k++;
		ck_assert_int_eq(ta_mindur_filter(&m, in + at, k), 0);
		memcpy(all + nall, m.out, m.out_len * sizeof(*all));
		nall += m.out_len;
		at += k;
	}
	m.out_len = 0;
	ck_assert_int_eq(ta_mindur_flush(&m), 0);
	ck_assert_int_eq(ta_mindur_counts(&m), 0);
	memcpy(all + nall, m.out, m.out_len * sizeof(*all));
	nall += m.out_len;
	/* Replay what was written. */
	depth = 0;
	t = 0;
	{
		uint64_t *ent = malloc(10000 * sizeof(*ent));

		for (size_t i = 0; i < nall; i++) {
			uint64_t h = all[i].addr;

			if (ta_raw_is_ext(h)) {
				uint32_t nv = ta_raw_ext_n(h);

				ck_assert_uint_ge(all[i].ticks, t);
				t = all[i].ticks;
				if (ta_raw_ext_kind(h) == TA_EXT_SHORT)
					for (uint32_t j = 0; j < nv / 2; j++)
						counted += all[i + 1 + j].addr;
				i += TA_RAW_EXT_SLOTS(nv);
				continue;
			}
			if (all[i].ticks < t)
				ck_abort_msg("seed %u: time goes back at %zu", seed, i);
			t = all[i].ticks;
			if (!(h & TA_RAW_EXIT)) {
				ent[depth] = all[i].ticks;
				stack[depth++] = h;
				continue;
			}
			if (!depth || stack[depth - 1] != (h & ~TA_RAW_EXIT))
				ck_abort_msg("seed %u: exit of no written entry at %zu", seed, i);
			depth--;
			calls--;
		}
		free(ent);
	}
	/* Every call closed in the input is written or counted once. */
	ck_assert_uint_eq(counted, m.dropped);
	ck_assert_uint_eq(calls, counted);
	ta_mindur_free(&m);
	free(in);
	free(all);
	free(stack);
}
END_TEST

static Suite *mindur_suite(void)
{
	Suite *s = suite_create("mindur");
	TCase *tc = tcase_create("mindur");

	tcase_add_test(tc, mindur_short_left_out);
	tcase_add_test(tc, mindur_ext_forces);
	tcase_add_test(tc, mindur_pending_across_chunks);
	tcase_add_test(tc, mindur_pending_bound);
	tcase_add_test(tc, mindur_counts_full);
	tcase_add_loop_test(tc, mindur_random, 0, 4);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ta_check_run(mindur_suite());
}
