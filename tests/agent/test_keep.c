/* SPDX-License-Identifier: MIT */
/*
 * test_keep.c - keep mode's judging and filter (agent/keep.[ch]) on
 * hand-made marks and records: the windows a slow frame keeps, the
 * horizon before which records are let go, the entries of calls open at a
 * window's start and the exits of calls written, the records that wait
 * for the marks to come, the ones let go early (a ring over its window)
 * and the windows that reach back to them, and the counts.
 */
#include <check.h>

#include "../check_run.h"
#include <stdint.h>
#include <string.h>

#include "format.h"
#include "keep.h"

#define EN(t, a) ((struct ta_raw){(t), (a)})
#define EX(t, a) ((struct ta_raw){(t), (a) | TA_RAW_EXIT})

static void expect(const struct ta_keepf *k, const struct ta_raw *want, size_t n)
{
	ck_assert_uint_eq(k->out_len, n);
	for (size_t i = 0; i < n; i++) {
		ck_assert_uint_eq(k->out[i].ticks, want[i].ticks);
		ck_assert_uint_eq(k->out[i].addr, want[i].addr);
	}
}

static void mark(const char *set, uint64_t pre)
{
	ta_keep_mark(TA_KEEP_MARK, set, pre, pre + 1);
}

static void start(uint32_t before)
{
	memset(&ta_keep_cfg, 0, sizeof(ta_keep_cfg));
	ta_keep_cfg.on = 1;
	ta_keep_cfg.before = before;
	ta_keep_cfg.budget_ns = 1000;
	ta_keep_start();
	ta_keep_test_budget(150);
}

START_TEST(keep_windows_and_filter)
{
	struct ta_keepf k = {0};
	struct ta_keep_counts c;
	const struct ta_raw a[] = {EN(50, 0xa0),  EN(150, 0xb0), EX(160, 0xb0), EN(190, 0xc0),
				   EN(250, 0xd0), EX(260, 0xd0), EX(450, 0xc0), EN(520, 0xe0),
				   EX(530, 0xe0), EX(590, 0xa0)};
	const struct ta_raw early[] = {EN(610, 0xf0), EX(620, 0xf0)};
	const struct ta_raw later[] = {EN(700, 0x10), EX(710, 0x10), EN(950, 0x20)};

	start(1);
	/* Frames 1..4 of "frame": 100, 100, 200 (slow), 100 ticks; another
	 * set's marks are not judged. */
	mark("frame", 100);
	mark("frame", 200);
	mark("physics", 250);
	mark("frame", 300);
	mark("frame", 500);
	mark("frame", 600);
	ta_keep_pass();
	/* Window [200, 501): before it, let go; in it, written with the
	 * entries of A and C open at its start; after it and after the
	 * horizon (600's mark - K = 500), waiting. */
	ck_assert_int_eq(ta_keep_filter(&k, a, 10, 0), 7);
	expect(&k,
	       (const struct ta_raw[]){EN(50, 0xa0), EN(190, 0xc0), EN(250, 0xd0), EX(260, 0xd0),
				       EX(450, 0xc0)},
	       5);
	/* The next mark moves the horizon to 600: E is let go, A's exit
	 * written (its entry was). */
	mark("frame", 700);
	ta_keep_pass();
	ck_assert_int_eq(ta_keep_filter(&k, a + 7, 3, 0), 3);
	expect(&k, (const struct ta_raw[]){EX(590, 0xa0)}, 1);
	ck_assert_uint_eq(k.depth, 0);
	/* Over the window: judged early, let go, counted. */
	ck_assert_int_eq(ta_keep_filter(&k, early, 2, 2), 2);
	ck_assert_uint_eq(k.out_len, 0);
	/* Frame 6 slow: its window [600, 901) reaches back to them. */
	mark("frame", 900);
	ta_keep_pass();
	ck_assert_int_eq(ta_keep_filter(&k, later, 3, 0), 2);
	expect(&k, later, 2);
	/* At the end every record is judged. */
	ck_assert_int_eq(ta_keep_filter(&k, later + 2, 1, 1), 1);
	ck_assert_uint_eq(k.out_len, 0);
	/* A record back in time (a handler's, appended late) is judged
	 * against every window, the first one too (I, left open above,
	 * put aside: its entry would come first). */
	k.depth = 0;
	ck_assert_int_eq(ta_keep_filter(&k, (const struct ta_raw[]){EN(300, 0x30)}, 1, 0), 1);
	expect(&k, (const struct ta_raw[]){EN(300, 0x30)}, 1);
	ta_keep_counts(&c);
	ck_assert_uint_eq(c.frames_seen, 6);
	ck_assert_uint_eq(c.frames_slow, 2);
	ck_assert_uint_eq(c.frames_kept, 4);
	ck_assert_uint_eq(c.nwin, 2);
	ck_assert_uint_eq(c.let_go, 4 + 2 + 2 + 1);
	ck_assert_uint_eq(c.let_go_early, 2);
	ck_assert_uint_eq(c.windows_partial, 1);
	ck_assert_uint_eq(c.windows_lost + c.marks_unjudged, 0);
	ta_keepf_free(&k);
}
END_TEST

START_TEST(keep_before_0_and_merge)
{
	struct ta_keepf k = {0};
	struct ta_keep_counts c;
	const struct ta_raw r[] = {EN(150, 0xa0), EX(250, 0xa0), EN(350, 0xb0),
				   EX(450, 0xb0), EN(650, 0xc0), EX(660, 0xc0)};

	start(0);
	/* Frames 1..4: 200 (slow), 200 (slow), 100, 100: K = 0 keeps the
	 * slow ones alone, their windows merged. */
	mark("frame", 100);
	mark("frame", 300);
	mark("frame", 500);
	mark("frame", 600);
	mark("frame", 700);
	ta_keep_pass();
	ck_assert_int_eq(ta_keep_filter(&k, r, 6, 0), 6);
	expect(&k, r, 4);
	ta_keep_counts(&c);
	ck_assert_uint_eq(c.frames_seen, 4);
	ck_assert_uint_eq(c.frames_slow, 2);
	ck_assert_uint_eq(c.frames_kept, 2);
	ck_assert_uint_eq(c.nwin, 1);
	ck_assert_uint_eq(c.let_go, 2);
	ta_keepf_free(&k);
}
END_TEST

static void bound(enum ta_keep_kind kind, const char *set, uint64_t pre)
{
	ta_keep_mark(kind, set, pre, pre + 1);
}

START_TEST(keep_gaps)
{
	struct ta_keepf k = {0};
	struct ta_keep_counts c;
	/* A open across all; one call in each frame and each gap: B frame 1,
	 * C gap 1, D frame 2, E gap 2, F frame 3, G gap 3, H frame 4, I
	 * frame 5, J frame 6. */
	const struct ta_raw r[] = {EN(50, 0xa0),   EN(120, 0xb0),  EX(140, 0xb0),  EN(200, 0xc0),
				   EX(250, 0xc0),  EN(350, 0xd0),  EX(360, 0xd0),  EN(450, 0xe0),
				   EX(470, 0xe0),  EN(700, 0xf0),  EX(750, 0xf0),  EN(850, 0x10),
				   EX(860, 0x10),  EN(920, 0x20),  EX(930, 0x20),  EN(1100, 0x30),
				   EX(1110, 0x30), EN(1220, 0x40), EX(1230, 0x40), EX(1300, 0xa0)};

	start(1);
	/* Frames BEGIN..END of "frame": 50, 100 ticks, the gaps between
	 * them (200 after frame 2) in none. */
	bound(TA_KEEP_END, "frame", 90); /* no frame open: none */
	bound(TA_KEEP_BEGIN, "frame", 100);
	bound(TA_KEEP_END, "frame", 150);
	bound(TA_KEEP_BEGIN, "frame", 300);
	bound(TA_KEEP_BEGIN, "physics", 320); /* another set */
	bound(TA_KEEP_END, "frame", 400);
	ta_keep_pass();
	/* The horizon: frame 3, if slow, keeps from frame 2's BEGIN (300);
	 * D waits. */
	ck_assert_int_eq(ta_keep_filter(&k, r, 20, 0), 5);
	ck_assert_uint_eq(k.out_len, 0);
	/* Frame 3: 200 (slow), a TA_FRAME_MARK of the same name is another
	 * set; frame 4: 50; frame 5 ended by the next BEGIN at 200 (slow);
	 * frame 6: 50. */
	bound(TA_KEEP_BEGIN, "frame", 600);
	mark("frame", 650);
	bound(TA_KEEP_END, "frame", 800);
	bound(TA_KEEP_BEGIN, "frame", 900);
	bound(TA_KEEP_END, "frame", 950);
	bound(TA_KEEP_BEGIN, "frame", 1000);
	bound(TA_KEEP_BEGIN, "frame", 1200);
	bound(TA_KEEP_END, "frame", 1250);
	ta_keep_pass();
	/* Windows [300, 801) (frames 2, 3 and the gap between them) and
	 * [900, 1201) (frames 4, 5): G, in the gap between the windows, and
	 * J are let go. */
	ck_assert_int_eq(ta_keep_filter(&k, r + 5, 15, 1), 15);
	expect(&k,
	       (const struct ta_raw[]){EN(50, 0xa0), EN(350, 0xd0), EX(360, 0xd0), EN(450, 0xe0),
				       EX(470, 0xe0), EN(700, 0xf0), EX(750, 0xf0), EN(920, 0x20),
				       EX(930, 0x20), EN(1100, 0x30), EX(1110, 0x30),
				       EX(1300, 0xa0)},
	       12);
	ta_keep_counts(&c);
	ck_assert_uint_eq(c.frames_seen, 6);
	ck_assert_uint_eq(c.frames_slow, 2);
	ck_assert_uint_eq(c.frames_kept, 4);
	ck_assert_uint_eq(c.nwin, 2);
	ck_assert_uint_eq(c.let_go, 1 + 2 + 2 + 2 + 2);
	ck_assert_uint_eq(c.windows_lost + c.marks_unjudged + c.let_go_early, 0);
	ta_keepf_free(&k);
}
END_TEST

START_TEST(keep_gaps_before_0)
{
	struct ta_keepf k = {0};
	struct ta_keep_counts c;
	const struct ta_raw r[] = {EN(200, 0xa0), EX(210, 0xa0), EN(450, 0xb0), EX(460, 0xb0)};

	start(0);
	/* Frame 1: 300 (slow), alone in its window [100, 401). */
	bound(TA_KEEP_BEGIN, "load", 100);
	bound(TA_KEEP_END, "load", 400);
	ta_keep_pass();
	/* B, after the END, waits for the next BEGIN: with K = 0 no frame
	 * to come keeps the gap. */
	ck_assert_int_eq(ta_keep_filter(&k, r, 4, 0), 2);
	expect(&k, r, 2);
	bound(TA_KEEP_BEGIN, "load", 500);
	ta_keep_pass();
	ck_assert_int_eq(ta_keep_filter(&k, r + 2, 2, 0), 2);
	ck_assert_uint_eq(k.out_len, 0);
	ta_keep_counts(&c);
	ck_assert_uint_eq(c.frames_seen, 1);
	ck_assert_uint_eq(c.frames_slow, 1);
	ck_assert_uint_eq(c.frames_kept, 1);
	ck_assert_uint_eq(c.nwin, 1);
	ck_assert_uint_eq(c.let_go, 2);
	ta_keepf_free(&k);
}
END_TEST

/* A window is [pre of its first mark, post of its last): a record at the
 * tick it starts is in it, one at the tick it ends is not, whatever the
 * thread (a coarse counter ties them; the marking thread's own records
 * are kept off both ticks by ta_frame_mark_). */
START_TEST(keep_ties)
{
	struct ta_keepf k = {0};
	const struct ta_raw r[] = {EN(150, 0xc0), EX(199, 0xc0), EN(200, 0xa0),
				   EX(400, 0xa0), EN(401, 0xb0), EX(402, 0xb0)};

	start(0);
	/* Frames 1..3: 100, 200 (slow), 100: the window [200, 401). */
	mark("frame", 100);
	mark("frame", 200);
	mark("frame", 400);
	mark("frame", 500);
	ta_keep_pass();
	ck_assert_int_eq(ta_keep_filter(&k, r, 6, 0), 6);
	expect(&k, (const struct ta_raw[]){EN(200, 0xa0), EX(400, 0xa0)}, 2);
	ta_keepf_free(&k);
}
END_TEST

START_TEST(keep_parse)
{
	struct ta_keep_cfg c;
	const char *why;

	ck_assert_int_eq(ta_keep_parse("slow-frames:16.7ms", &c, &why), 0);
	ck_assert_uint_eq(c.budget_ns, 16700000);
	ck_assert_uint_eq(c.before, TA_KEEP_BEFORE_DEFAULT);
	ck_assert_str_eq(c.set, "");
	ck_assert_int_eq(ta_keep_parse("slow-frames:500us,set=physics,before=0", &c, &why), 0);
	ck_assert_uint_eq(c.budget_ns, 500000);
	ck_assert_uint_eq(c.before, 0);
	ck_assert_str_eq(c.set, "physics");
	ck_assert_int_eq(ta_keep_parse("slow-frames:", &c, &why), -1);
	ck_assert_int_eq(ta_keep_parse("slow-frames:0ms", &c, &why), -1);
	ck_assert_int_eq(ta_keep_parse("slow-frames:1ms,before=65", &c, &why), -1);
	ck_assert_int_eq(ta_keep_parse("slow-frames:1ms,before=-1", &c, &why), -1);
	ck_assert_int_eq(ta_keep_parse("slow-frames:1ms,after=2", &c, &why), -1);
	ck_assert_int_eq(ta_keep_parse("fast-frames:1ms", &c, &why), -1);
	ck_assert_int_eq(c.on, 0);
}
END_TEST

static Suite *keep_suite(void)
{
	Suite *s = suite_create("keep");
	TCase *tc = tcase_create("keep");

	tcase_add_test(tc, keep_windows_and_filter);
	tcase_add_test(tc, keep_before_0_and_merge);
	tcase_add_test(tc, keep_gaps);
	tcase_add_test(tc, keep_gaps_before_0);
	tcase_add_test(tc, keep_ties);
	tcase_add_test(tc, keep_parse);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ta_check_run(keep_suite());
}
