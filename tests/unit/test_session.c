/* SPDX-License-Identifier: MIT */
/*
 * test_session.c - the decoded model and the call-stack walk
 * (analyzer/lib/session*.c) on synthetic dumps with known events: exact calls,
 * total, self, min and max in ticks and in ns, recursion, open frames,
 * skipped frames, lost chunks, threads, processes and clocks.
 */
#include <check.h>

#include "../check_run.h"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dumpgen.h"
#include "session.h"
#include "testutil.h"

#define A 0x11000u
#define B 0x11100u
#define C 0x11200u
#define D 0x11300u

struct run {
	struct ta_session *s;
	struct ta_profile prof;
};

static int run_dump(const struct dumpgen *g, struct run *r)
{
	char path[64];
	struct ta_visitor v;
	int rc;

	dg_write_tmp(g, path);
	ta_profile_init(&r->prof);
	ta_profile_visitor(&r->prof, &v);
	r->s = ta_session_new(&v);
	ck_assert_ptr_nonnull(r->s);
	rc = ta_session_read(r->s, path, NULL);
	unlink(path);
	ta_session_finish(r->s);
	return rc;
}

static void run_free(struct run *r)
{
	ta_session_free(r->s);
	ta_profile_free(&r->prof);
}

static struct ta_sess_thread *thread_of(const struct run *r, uint32_t pid, uint64_t tid)
{
	for (size_t i = 0; i < r->s->nthreads; i++)
		if (r->s->threads[i]->pid == pid && r->s->threads[i]->tid == tid)
			return r->s->threads[i];
	ck_abort_msg("no thread %llu", (unsigned long long)tid);
	return NULL;
}

static const struct ta_fstat *fstat_of(const struct run *r, uint32_t pid, uint64_t tid,
				       uint64_t addr)
{
	const struct ta_sess_thread *t = thread_of(r, pid, tid);

	for (size_t i = 0; i < r->prof.n; i++)
		if (r->prof.f[i].thread == t->index && r->prof.f[i].addr == addr)
			return &r->prof.f[i];
	return NULL;
}

static void check_stat(const struct run *r, uint64_t tid, uint64_t addr, uint64_t calls,
		       uint64_t total, uint64_t self, uint64_t min, uint64_t max, uint64_t open)
{
	const struct ta_fstat *f = fstat_of(r, 100, tid, addr);

	ck_assert_msg(f != NULL, "no stats for %llx", (unsigned long long)addr);
	ck_assert_uint_eq(f->calls, calls);
	ck_assert_uint_eq(f->total, total);
	ck_assert_uint_eq(f->self, self);
	ck_assert_uint_eq(f->min, min);
	ck_assert_uint_eq(f->max, max);
	ck_assert_uint_eq(f->open, open);
	ck_assert_uint_eq(f->active, 0);
}

/* Of a function's calls: those with only part of their time known. */
static void check_partial(const struct run *r, uint64_t tid, uint64_t addr, uint64_t partial)
{
	const struct ta_fstat *f = fstat_of(r, 100, tid, addr);

	ck_assert_msg(f != NULL, "no stats for %llx", (unsigned long long)addr);
	ck_assert_uint_eq(f->partial, partial);
}

/* A dump of process 100 with 0.5 ns per tick and one module. */
static void start_dump(struct dumpgen *g, int lz4)
{
	static const uint64_t pairs[3][2] = {{1000, 0}, {3000, 1000}, {5000, 2000}};

	dg_init(g, 100);
	g->lz4 = lz4;
	dg_process(g, 50, TA_CLOCK_RDTSC, 0, "/bin/prog");
	dg_clock(g, 3, pairs);
	dg_module(g, "/bin/prog", 0x10000, 1, 0x11000, 0x20000);
}

static void ev(struct ta_encoder *e, uint64_t t, uint64_t addr, int is_exit)
{
	REQUIRE(ta_encoder_event(e, t, addr, is_exit) == 0, "event");
}

START_TEST(exact_times)
{
	struct dumpgen g;
	struct ta_encoder e;
	struct run r;
	const struct ta_process *p;
	const struct ta_fstat *f;

	start_dump(&g, _i);
	dg_thread_start(&g, 10, 90, "main");
	ta_encoder_init(&e, 10);
	ta_encoder_begin(&e, 100);
	ev(&e, 100, A, 0);
	ev(&e, 110, B, 0);
	ev(&e, 120, C, 0);
	ev(&e, 150, C, 1);
	dg_events(&g, &e);
	/* The rest in a second chunk. */
	ta_encoder_begin(&e, 150);
	ev(&e, 160, B, 1);
	ev(&e, 200, B, 0);
	ev(&e, 260, B, 1);
	ev(&e, 300, A, 1);
	dg_events(&g, &e);
	ta_encoder_free(&e);
	dg_thread_end(&g, 10, 310, 8, 0);
	dg_end(&g, 320, 0, 8, 0, 1, 0);
	ck_assert_int_eq(run_dump(&g, &r), 0);

	ck_assert_uint_eq(r.s->nerrors, 0);
	ck_assert_ptr_null(ta_session_incomplete(r.s));
	ck_assert_uint_eq(r.s->nthreads, 1);
	ck_assert_uint_eq(r.s->threads[0]->events, 8);
	ck_assert_uint_eq(r.s->threads[0]->resyncs, 0);
	ck_assert_str_eq(r.s->threads[0]->name, "main");
	/*        calls total self min max open */
	check_stat(&r, 10, A, 1, 200, 90, 200, 200, 0);
	check_stat(&r, 10, B, 2, 110, 80, 50, 60, 0);
	check_stat(&r, 10, C, 1, 30, 30, 30, 30, 0);
	f = fstat_of(&r, 100, 10, B);
	ck_assert_uint_eq(f->sum, 110);

	/* Through the clock: 0.5 ns per tick, ns = ticks / 2 - 500. */
	p = ta_session_process(r.s, 100);
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(p->calibrated, 1);
	ck_assert_uint_eq(ta_process_dur_ns(p, 200), 100);
	ck_assert_uint_eq(ta_process_dur_ns(p, 90), 45);
	ck_assert_uint_eq(ta_process_dur_ns(p, 110), 55);
	ck_assert_uint_eq(ta_process_dur_ns(p, 80), 40);
	ck_assert_uint_eq(ta_process_dur_ns(p, 50), 25);
	ck_assert_uint_eq(ta_process_dur_ns(p, 30), 15);
	ck_assert_int_eq(ta_process_ticks_ns(p, 3000), 1000);
	ck_assert_int_eq(ta_process_ticks_ns(p, 100), -450);
	ck_assert_uint_eq(p->min_ticks, 50);
	ck_assert_uint_eq(p->max_ticks, 320);
	run_free(&r);
	dg_free(&g);
}
END_TEST

START_TEST(recursion_counted_once)
{
	struct dumpgen g;
	struct ta_encoder e;
	struct run r;

	start_dump(&g, 0);
	ta_encoder_init(&e, 10);
	ta_encoder_begin(&e, 0);
	/* A -> A -> A: 50, 30, 10 ticks. */
	ev(&e, 0, A, 0);
	ev(&e, 10, A, 0);
	ev(&e, 20, A, 0);
	ev(&e, 30, A, 1);
	ev(&e, 40, A, 1);
	ev(&e, 50, A, 1);
	/* B -> C -> B -> C (mutual): B 100 and 60, C 80 and 20. */
	ev(&e, 100, B, 0);
	ev(&e, 110, C, 0);
	ev(&e, 120, B, 0);
	ev(&e, 130, C, 0);
	ev(&e, 150, C, 1);
	ev(&e, 180, B, 1);
	ev(&e, 190, C, 1);
	ev(&e, 200, B, 1);
	dg_events(&g, &e);
	ta_encoder_free(&e);
	dg_end(&g, 300, 0, 14, 0, 1, 0);
	ck_assert_int_eq(run_dump(&g, &r), 0);
	/* Total is the outermost activation; self sums all; min/max over all. */
	check_stat(&r, 10, A, 3, 50, 50, 10, 50, 0);
	check_stat(&r, 10, B, 2, 100, 20 + 40, 60, 100, 0);
	check_stat(&r, 10, C, 2, 80, 20 + 20, 20, 80, 0);
	run_free(&r);
	dg_free(&g);
}
END_TEST

START_TEST(open_frames_at_thread_end)
{
	struct dumpgen g;
	struct ta_encoder e;
	struct run r;

	start_dump(&g, 0);
	ta_encoder_init(&e, 10);
	ta_encoder_begin(&e, 100);
	ev(&e, 100, A, 0);
	ev(&e, 150, B, 0);
	dg_events(&g, &e);
	ta_encoder_free(&e);
	dg_thread_end(&g, 10, 400, 2, 0);
	ck_assert_int_eq(run_dump(&g, &r), 0);
	/* Closed at THREAD_END's time, counted as calls and as open: their
	 * known part in total and self, not in min, max nor sum. */
	check_stat(&r, 10, A, 1, 300, 50, UINT64_MAX, 0, 1);
	check_stat(&r, 10, B, 1, 250, 250, UINT64_MAX, 0, 1);
	ck_assert_uint_eq(fstat_of(&r, 100, 10, A)->sum, 0);
	check_partial(&r, 10, A, 0);
	/* No END chunk: incomplete, but not damaged. */
	ck_assert_uint_eq(r.s->errors_all, 0);
	ck_assert_ptr_nonnull(ta_session_incomplete(r.s));
	run_free(&r);
	dg_free(&g);
}
END_TEST

START_TEST(open_frames_at_last_event)
{
	struct dumpgen g;
	struct ta_encoder e;
	struct run r;

	start_dump(&g, 0);
	ta_encoder_init(&e, 10);
	ta_encoder_begin(&e, 100);
	ev(&e, 100, A, 0);
	ev(&e, 150, B, 0);
	ev(&e, 170, C, 0);
	ev(&e, 175, C, 1);
	dg_events(&g, &e);
	ta_encoder_free(&e);
	ck_assert_int_eq(run_dump(&g, &r), 0);
	/* No THREAD_END: the last event is the last time known. */
	check_stat(&r, 10, A, 1, 75, 50, UINT64_MAX, 0, 1);
	check_stat(&r, 10, B, 1, 25, 20, UINT64_MAX, 0, 1);
	check_stat(&r, 10, C, 1, 5, 5, 5, 5, 0);
	run_free(&r);
	dg_free(&g);
}
END_TEST

START_TEST(skipped_frames_and_unmatched_exits)
{
	struct dumpgen g;
	struct ta_encoder e;
	struct run r;

	start_dump(&g, 0);
	ta_encoder_init(&e, 10);
	ta_encoder_begin(&e, 0);
	ev(&e, 5, D, 1); /* never entered */
	ev(&e, 10, A, 0);
	ev(&e, 20, B, 0);
	ev(&e, 30, C, 0);
	ev(&e, 60, A, 1); /* longjmp back into A's caller */
	ev(&e, 70, D, 1); /* never entered */
	dg_events(&g, &e);
	ta_encoder_free(&e);
	dg_end(&g, 100, 0, 6, 0, 1, 0);
	ck_assert_int_eq(run_dump(&g, &r), 0);
	check_stat(&r, 10, A, 1, 50, 10, 50, 50, 0);
	check_stat(&r, 10, B, 1, 40, 10, 40, 40, 0);
	check_stat(&r, 10, C, 1, 30, 30, 30, 30, 0);
	/* D's exits without entries: partial calls, with no time. */
	check_stat(&r, 10, D, 2, 0, 0, UINT64_MAX, 0, 0);
	check_partial(&r, 10, D, 2);
	check_partial(&r, 10, A, 0);
	ck_assert_uint_eq(r.s->threads[0]->unmatched, 2);
	ck_assert_uint_eq(r.s->threads[0]->events, 6);
	run_free(&r);
	dg_free(&g);
}
END_TEST

/* A longjmp and a catch close the frames they left at their own time,
 * flagged unwound: B and C at the LONGJMP (ticks 40), not at A's exit;
 * then, after a catch in the outer of two activations of B, the inner B and
 * C at the CATCH (ticks 80).  Markers are not function events (8 here). */
START_TEST(unwound_frames_close_at_the_marker)
{
	struct dumpgen g;
	struct ta_encoder e;
	struct run r;
	uint64_t env = 0x7ff0, v[2];

	start_dump(&g, 0);
	ta_encoder_init(&e, 10);
	ta_encoder_begin(&e, 0);
	ev(&e, 10, A, 0);
	REQUIRE(ta_encoder_ext(&e, 15, TA_EXT_SETJMP, &env, 1) == 0, "setjmp");
	ev(&e, 20, B, 0);
	ev(&e, 30, C, 0);
	REQUIRE(ta_encoder_ext(&e, 40, TA_EXT_LONGJMP, &env, 1) == 0, "longjmp");
	ev(&e, 50, B, 0);
	ev(&e, 60, B, 0);
	ev(&e, 70, C, 0);
	v[0] = B;
	v[1] = 1; /* the outer B catches */
	REQUIRE(ta_encoder_ext(&e, 80, TA_EXT_CATCH, v, 2) == 0, "catch");
	ev(&e, 90, B, 1);
	ev(&e, 100, A, 1);
	dg_events(&g, &e);
	ta_encoder_free(&e);
	dg_end(&g, 100, 0, 8, 0, 1, 0);
	ck_assert_int_eq(run_dump(&g, &r), 0);
	/* A: 10-100, children B (20-40, 50-90): self 90 - 20 - 40 = 30. */
	check_stat(&r, 10, A, 1, 90, 30, 90, 90, 0);
	/* B: 20-40 (child C 30-40), 50-90 (outer, child B 60-80), 60-80
	 * (child C 70-80). */
	check_stat(&r, 10, B, 3, 20 + 40, 10 + 20 + 10, 20, 40, 0);
	check_stat(&r, 10, C, 2, 20, 20, 10, 10, 0);
	ck_assert_uint_eq(fstat_of(&r, 100, 10, A)->unwound, 0);
	ck_assert_uint_eq(fstat_of(&r, 100, 10, B)->unwound, 2);
	ck_assert_uint_eq(fstat_of(&r, 100, 10, C)->unwound, 2);
	ck_assert_uint_eq(r.s->threads[0]->unmatched, 0);
	ck_assert_uint_eq(r.s->threads[0]->events, 8);
	run_free(&r);
	dg_free(&g);
}
END_TEST

START_TEST(lost_chunk_resync)
{
	struct dumpgen g;
	struct ta_encoder e;
	struct run r;
	const uint8_t *p;
	size_t len;
	const struct ta_sess_thread *t;

	start_dump(&g, 0);
	ta_encoder_init(&e, 10);
	ta_encoder_begin(&e, 0);
	ev(&e, 0, A, 0);
	ev(&e, 10, B, 0);
	dg_events(&g, &e);
	/* This chunk never reaches the dump. */
	ta_encoder_begin(&e, 10);
	ev(&e, 20, B, 1);
	ev(&e, 30, C, 0);
	ta_encoder_end(&e, &p, &len);
	/* This one starts from the stack [A, C]. */
	ta_encoder_begin(&e, 35);
	ev(&e, 40, C, 1);
	ev(&e, 50, A, 1);
	dg_events(&g, &e);
	ta_encoder_free(&e);
	dg_end(&g, 100, 0, 6, 0, 1, 0);
	ck_assert_int_eq(run_dump(&g, &r), 0);
	t = r.s->threads[0];
	ck_assert_uint_eq(t->resyncs, 1);
	ck_assert_uint_eq(t->chunks_missing, 1);
	ck_assert_str_eq(ta_session_incomplete(r.s), "chunks are missing");
	/* B ended in the gap: closed at the last time known (10); C began in
	 * it: opened at the chunk's first time (35). */
	check_stat(&r, 10, A, 1, 50, 45, 50, 50, 0);
	/* Both partial: B's end and C's start are guesses. */
	check_stat(&r, 10, B, 1, 0, 0, UINT64_MAX, 0, 0);
	check_stat(&r, 10, C, 1, 5, 5, UINT64_MAX, 0, 0);
	check_partial(&r, 10, B, 1);
	check_partial(&r, 10, C, 1);
	check_partial(&r, 10, A, 0);
	run_free(&r);
	dg_free(&g);
}
END_TEST

START_TEST(damaged_chunk_resync)
{
	/* The same through the reader: a chunk damaged on disk. */
	struct dumpgen g;
	struct ta_encoder e;
	struct run r;
	size_t bad;

	start_dump(&g, 1);
	ta_encoder_init(&e, 10);
	ta_encoder_begin(&e, 0);
	ev(&e, 0, A, 0);
	ev(&e, 10, B, 0);
	dg_events(&g, &e);
	ta_encoder_begin(&e, 10);
	ev(&e, 20, B, 1);
	ev(&e, 30, C, 0);
	bad = dg_events(&g, &e);
	ta_encoder_begin(&e, 35);
	ev(&e, 40, C, 1);
	ev(&e, 50, A, 1);
	dg_events(&g, &e);
	ta_encoder_free(&e);
	dg_end(&g, 100, 0, 6, 0, 1, 0);
	g.buf[bad + TA_CHUNK_HEADER_SIZE + 1] ^= 0x40;
	ck_assert_int_eq(run_dump(&g, &r), 0);
	ck_assert_uint_eq(r.s->nerrors, 1);
	ck_assert_int_eq(r.s->errors[0].code, -TA_E_CHECKSUM);
	ck_assert_uint_eq(r.s->errors[0].offset, bad);
	ck_assert_uint_eq(r.s->errors[0].chunk, 4);
	ck_assert_str_eq(ta_session_incomplete(r.s), "the dump is damaged");
	ck_assert_uint_eq(r.s->threads[0]->resyncs, 1);
	check_stat(&r, 10, A, 1, 50, 45, 50, 50, 0);
	check_stat(&r, 10, C, 1, 5, 5, UINT64_MAX, 0, 0);
	check_partial(&r, 10, C, 1);
	/* The END after the damage was read. */
	ck_assert_int_eq(ta_session_process(r.s, 100)->has_end, 1);
	run_free(&r);
	dg_free(&g);
}
END_TEST

START_TEST(deep_recursion_across_chunks)
{
	/* Deeper than the shadow stack, with chunk boundaries both while
	 * entering and while leaving: no resync, every activation counted. */
	enum { N = 70000 };
	struct dumpgen g;
	struct ta_encoder e;
	struct run r;
	uint64_t t = 0;

	start_dump(&g, 1);
	ta_encoder_init(&e, 10);
	ta_encoder_begin(&e, 0);
	for (int i = 0; i < N; i++) {
		ev(&e, t++, A, 0);
		if (i == N / 2 || i == N - 10) {
			dg_events(&g, &e);
			ta_encoder_begin(&e, t);
		}
	}
	for (int i = 0; i < N; i++) {
		ev(&e, t++, A, 1);
		if (i == 3 || i == 5000 || i == N - 2) {
			dg_events(&g, &e);
			ta_encoder_begin(&e, t);
		}
	}
	dg_events(&g, &e);
	ta_encoder_free(&e);
	dg_end(&g, t, 0, 2 * N, 0, 1, 0);
	ck_assert_int_eq(run_dump(&g, &r), 0);
	ck_assert_uint_eq(r.s->nerrors, 0);
	ck_assert_uint_eq(r.s->threads[0]->resyncs, 0);
	ck_assert_uint_eq(r.s->threads[0]->events, 2 * N);
	/* Outermost: 2N - 1 ticks; innermost: 1; each level adds 2 to self
	 * of ... each activation's self is 2 except the innermost's 1. */
	check_stat(&r, 10, A, N, 2 * N - 1, 2 * (N - 1) + 1, 1, 2 * N - 1, 0);
	run_free(&r);
	dg_free(&g);
}
END_TEST

/* A visitor that records what it is told, to check depth and flags. */
struct seen {
	char log[2048];
};

static uintptr_t seen_enter(void *ctx, struct ta_sess_thread *t, uint64_t ticks, uint32_t depth,
			    uint64_t addr, unsigned flags)
{
	struct seen *s = ctx;
	size_t n = strlen(s->log);

	snprintf(s->log + n, sizeof(s->log) - n, "+%llx@%llu/%u%s ", (unsigned long long)addr,
		 (unsigned long long)ticks, depth, flags & TA_VISIT_RESYNC ? "r" : "");
	return (uintptr_t)addr + 1;
}

static void seen_exit(void *ctx, struct ta_sess_thread *t, const struct ta_exit_info *x)
{
	struct seen *s = ctx;
	size_t n = strlen(s->log);

	ck_assert_uint_eq(x->user, x->addr + 1);
	snprintf(s->log + n, sizeof(s->log) - n, "-%llx@%llu/%u:%llu,%llu%s%s ",
		 (unsigned long long)x->addr, (unsigned long long)x->exit, x->depth,
		 (unsigned long long)x->duration, (unsigned long long)x->self,
		 x->flags & TA_VISIT_OPEN ? "o" : "", x->flags & TA_VISIT_RESYNC ? "r" : "");
}

static void seen_lost(void *ctx, struct ta_sess_thread *t, uint64_t ticks, uint64_t count)
{
	struct seen *s = ctx;
	size_t n = strlen(s->log);

	snprintf(s->log + n, sizeof(s->log) - n, "lost%llu@%llu ", (unsigned long long)count,
		 (unsigned long long)ticks);
}

START_TEST(visitor_sequence)
{
	struct dumpgen g;
	struct ta_encoder e;
	struct seen seen = {""};
	struct ta_visitor v = {&seen, seen_enter, seen_exit, seen_lost, NULL, NULL, NULL, NULL};
	struct ta_session *s;
	const uint8_t *p;
	size_t len;
	char path[64];

	start_dump(&g, 0);
	ta_encoder_init(&e, 10);
	ta_encoder_begin(&e, 0);
	ev(&e, 1, A, 0);
	ev(&e, 2, B, 0);
	ta_encoder_lost(&e, 3, 7);
	ev(&e, 4, C, 0);
	dg_events(&g, &e);
	ta_encoder_begin(&e, 4); /* lost: C exits, D enters */
	ev(&e, 5, C, 1);
	ev(&e, 6, D, 0);
	ta_encoder_end(&e, &p, &len);
	ta_encoder_begin(&e, 8);
	ev(&e, 9, D, 1);
	dg_events(&g, &e);
	ta_encoder_free(&e);
	dg_thread_end(&g, 10, 20, 7, 7);
	dg_write_tmp(&g, path);
	s = ta_session_new(&v);
	ck_assert_int_eq(ta_session_read(s, path, NULL), 0);
	unlink(path);
	ta_session_finish(s);
	ck_assert_str_eq(seen.log, "+11000@1/0 +11100@2/1 lost7@3 +11200@4/2 "
				   "-11200@4/2:0,0r +11300@8/2r -11300@9/2:1,1 "
				   "-11100@20/1:18,17o -11000@20/0:19,1o ");
	ck_assert_uint_eq(s->threads[0]->lost, 7);
	ta_session_free(s);
	dg_free(&g);
}
END_TEST

START_TEST(threads_and_names)
{
	struct dumpgen g;
	struct ta_encoder e;
	struct run r;

	start_dump(&g, 0);
	dg_thread_start(&g, 10, 1, "main");
	dg_thread_start(&g, 11, 2, "worker");
	dg_thread_name(&g, 11, 3, "renamed");
	for (uint64_t tid = 10; tid <= 11; tid++) {
		ta_encoder_init(&e, tid);
		ta_encoder_begin(&e, 0);
		ev(&e, 10, A, 0);
		ev(&e, 10 + 10 * tid, A, 1);
		dg_events(&g, &e);
		ta_encoder_free(&e);
	}
	/* Thread 12 ends, and its tid is used again by a new thread. */
	for (int round = 0; round < 2; round++) {
		dg_thread_start(&g, 12, 300, round ? "second" : "first");
		ta_encoder_init(&e, 12);
		ta_encoder_begin(&e, 300);
		ev(&e, 300, B, 0);
		ev(&e, 300 + 50 * (uint64_t)(round + 1), B, 1);
		ev(&e, 400, C, 0); /* left open */
		dg_events(&g, &e);
		ta_encoder_free(&e);
		dg_thread_end(&g, 12, 500 + 100 * (uint64_t)round, 3, 0);
	}
	dg_end(&g, 1000, 0, 10, 0, 4, 0);
	ck_assert_int_eq(run_dump(&g, &r), 0);
	ck_assert_uint_eq(r.s->nthreads, 4);
	ck_assert_str_eq(r.s->threads[0]->name, "main");
	ck_assert_str_eq(r.s->threads[1]->name, "renamed");
	ck_assert_str_eq(r.s->threads[2]->name, "first");
	ck_assert_str_eq(r.s->threads[3]->name, "second");
	check_stat(&r, 10, A, 1, 100, 100, 100, 100, 0);
	check_stat(&r, 11, A, 1, 110, 110, 110, 110, 0);
	/* The first thread 12 was closed when the second began. */
	for (int i = 2; i < 4; i++) {
		const struct ta_fstat *fb = NULL, *fc = NULL;

		for (size_t k = 0; k < r.prof.n; k++) {
			if (r.prof.f[k].thread != r.s->threads[i]->index)
				continue;
			if (r.prof.f[k].addr == B)
				fb = &r.prof.f[k];
			if (r.prof.f[k].addr == C)
				fc = &r.prof.f[k];
		}
		ck_assert_ptr_nonnull(fb);
		ck_assert_ptr_nonnull(fc);
		ck_assert_uint_eq(fb->total, 50 * (uint64_t)(i - 1));
		ck_assert_uint_eq(fc->total, 100 + 100 * (uint64_t)(i - 2));
		ck_assert_uint_eq(fc->open, 1);
	}
	run_free(&r);
	dg_free(&g);
}
END_TEST

START_TEST(forked_child)
{
	/* A second process in the same dump whose first chunk starts inside
	 * functions inherited from its parent: not a loss. */
	struct dumpgen g;
	struct ta_encoder e;
	struct run r;

	start_dump(&g, 0);
	ta_encoder_init(&e, 100);
	ta_encoder_begin(&e, 0);
	ev(&e, 10, A, 0);
	ev(&e, 20, B, 0);
	g.pid = 200;
	dg_process(&g, 25, TA_CLOCK_RDTSC, 0, "/bin/prog");
	/* The child's thread inherits the parent's stack. */
	e.tid = 200;
	e.chunk_seq = 0;
	ta_encoder_begin(&e, 30);
	ev(&e, 40, B, 1);
	ev(&e, 50, A, 1);
	dg_events(&g, &e);
	dg_end(&g, 60, 0, 2, 0, 1, 0);
	ta_encoder_free(&e);
	ck_assert_int_eq(run_dump(&g, &r), 0);
	ck_assert_uint_eq(r.s->nprocs, 2);
	ck_assert_uint_eq(thread_of(&r, 200, 200)->resyncs, 0);
	ck_assert_uint_eq(fstat_of(&r, 200, 200, B)->calls, 1);
	ck_assert_uint_eq(fstat_of(&r, 200, 200, B)->total, 10);
	/* The child has no CLOCK of its own: it borrows its parent's. */
	ck_assert_int_eq(ta_session_process(r.s, 200)->calibrated, 0);
	ck_assert_int_eq(ta_session_process(r.s, 200)->uncalibrated, 0);
	ck_assert_uint_eq(ta_process_dur_ns(ta_session_process(r.s, 200), 10), 5);
	/* The parent has no END chunk. */
	ck_assert_ptr_nonnull(ta_session_incomplete(r.s));
	run_free(&r);
	dg_free(&g);
}
END_TEST

/* fstat_of, which must find one. */
static const struct ta_fstat *stat_of(const struct run *r, uint32_t pid, uint64_t tid,
				      uint64_t addr)
{
	const struct ta_fstat *f = fstat_of(r, pid, tid, addr);

	if (!f)
		ck_abort_msg("no stats for %llx", (unsigned long long)addr);
	return f;
}

/* THREAD_START of a forked child's thread (TA_THREAD_F_INHERITED). */
static void thread_start_inherited(struct dumpgen *g, uint64_t tid, uint64_t ticks)
{
	uint8_t b[64], *q = b;

	q = ta_varint_put(q, tid);
	q = ta_varint_put(q, 0);
	q = ta_varint_put(q, ticks);
	q = ta_varint_put(q, 4);
	memcpy(q, "kid!", 4);
	q += 4;
	q = ta_varint_put(q, TA_THREAD_F_INHERITED);
	dg_chunk(g, TA_CHUNK_THREAD_START, b, (size_t)(q - b));
}

START_TEST(profile_reuses_frame_entries)
{
	/* An enter finds its function's entry in the stack slot when the
	 * frame last there was the same function's; otherwise (another
	 * function, a fresh slot, an inherited frame) it looks it up. */
	struct dumpgen g;
	struct ta_encoder e;
	struct run r;
	uint64_t t = 0, a_end;
	const struct ta_fstat *f;

	start_dump(&g, 0);
	ta_encoder_init(&e, 10);
	ta_encoder_begin(&e, 0);
	ev(&e, t++, A, 0); /* lookup 1 */
	for (int i = 0; i < 1000; i++) {
		ev(&e, t++, B, 0); /* lookup 2, then the slot's */
		ev(&e, t++, B, 1);
	}
	ev(&e, t++, C, 0); /* lookup 3: the slot held B */
	ev(&e, t++, C, 1);
	ev(&e, t++, B, 0); /* lookup 4: the slot held C */
	ev(&e, t++, B, 1);
	for (int i = 0; i < 3; i++) {
		ev(&e, t++, A, 0); /* lookups 5 and 6 (depths 1 and 2), once */
		ev(&e, t++, A, 0);
		ev(&e, t++, A, 1);
		ev(&e, t++, A, 1);
	}
	a_end = t;
	ev(&e, t++, A, 1);
	dg_events(&g, &e);
	/* The child of a fork inherits [A, B] (never visited), leaves
	 * them, then enters A and B at the same depths: lookups 7, 8. */
	g.pid = 200;
	dg_process(&g, t, TA_CLOCK_RDTSC, 0, "/bin/prog");
	thread_start_inherited(&g, 200, t);
	ta_encoder_free(&e);
	ta_encoder_init(&e, 200);
	ev(&e, t, A, 0);
	ev(&e, t, B, 0);
	ta_encoder_begin(&e, t);
	ev(&e, t++, B, 1);
	ev(&e, t++, A, 1);
	ev(&e, t++, A, 0);
	ev(&e, t++, B, 0);
	ev(&e, t + 5, B, 1);
	ev(&e, t + 7, A, 1);
	dg_events(&g, &e);
	ta_encoder_free(&e);
	dg_end(&g, t + 10, 0, 2 + 2000 + 4 + 12 + 6, 0, 2, 0);
	ck_assert_int_eq(run_dump(&g, &r), 0);
	ck_assert_uint_eq(r.s->nerrors, 0);
	ck_assert_uint_eq(r.prof.lookups, 8);
#define STAT(pid, tid, fn) (f = stat_of(&r, pid, tid, fn))
	ck_assert_uint_eq(STAT(100, 10, A)->calls, 7);
	ck_assert_uint_eq(f->total, a_end);
	ck_assert_uint_eq(f->active, 0);
	ck_assert_uint_eq(STAT(100, 10, B)->calls, 1001);
	ck_assert_uint_eq(f->sum, 1001);
	ck_assert_uint_eq(STAT(100, 10, C)->calls, 1);
	ck_assert_uint_eq(STAT(200, 200, A)->calls, 1);
	ck_assert_uint_eq(f->total, 9);
	ck_assert_uint_eq(STAT(200, 200, B)->calls, 1);
	ck_assert_uint_eq(f->total, 6);
	ck_assert_uint_eq(f->self, 6);
#undef STAT
	run_free(&r);
	dg_free(&g);
}
END_TEST

static const struct ta_process *process_with(uint64_t source, uint64_t hz, size_t n,
					     const uint64_t pairs[][2], struct run *r)
{
	struct dumpgen g;

	dg_init(&g, 100);
	dg_process(&g, 0, source, hz, "/bin/prog");
	if (n)
		dg_clock(&g, n, pairs);
	dg_end(&g, 10, 0, 0, 0, 0, 0);
	ck_assert_int_eq(run_dump(&g, r), 0);
	dg_free(&g);
	return ta_session_process(r->s, 100);
}

START_TEST(clock_least_squares)
{
	static const uint64_t pairs[4][2] = {{0, 0}, {1000, 1001}, {2000, 1999}, {3000, 3000}};
	struct run r;
	const struct ta_process *p = process_with(TA_CLOCK_RDTSC, 0, 4, pairs, &r);

	/* Sxy / Sxx = 4999000 / 5000000. */
	ck_assert_uint_eq(ta_process_dur_ns(p, 1000000), 999800);
	run_free(&r);
}
END_TEST

START_TEST(clock_monotonic_is_ns)
{
	static const uint64_t pairs[2][2] = {{5000, 5000}, {9000, 9000}};
	struct run r;
	const struct ta_process *p = process_with(TA_CLOCK_MONOTONIC, 0, 2, pairs, &r);

	ck_assert_uint_eq(ta_process_dur_ns(p, 123456789), 123456789);
	ck_assert_int_eq(ta_process_ticks_ns(p, 777), 777);
	run_free(&r);
	p = process_with(TA_CLOCK_MONOTONIC, 0, 0, NULL, &r);
	ck_assert_int_eq(p->calibrated, 1);
	ck_assert_uint_eq(ta_process_dur_ns(p, 42), 42);
	run_free(&r);
}
END_TEST

START_TEST(clock_nominal_frequency)
{
	static const uint64_t pairs[1][2] = {{1000, 7000}};
	struct run r;
	const struct ta_process *p = process_with(TA_CLOCK_CNTVCT, 25000000, 1, pairs, &r);

	/* 25 MHz: 40 ns per tick, through the one pair. */
	ck_assert_uint_eq(ta_process_dur_ns(p, 3), 120);
	ck_assert_int_eq(ta_process_ticks_ns(p, 1010), 7400);
	run_free(&r);
}
END_TEST

START_TEST(clock_unknown)
{
	struct run r;
	const struct ta_process *p = process_with(TA_CLOCK_RDTSC, 0, 0, NULL, &r);

	ck_assert_int_eq(p->calibrated, 0);
	ck_assert_int_eq(p->uncalibrated, 1);
	ck_assert_uint_eq(ta_process_dur_ns(p, 42), 42);
	run_free(&r);
}
END_TEST

START_TEST(end_flags_incomplete)
{
	struct dumpgen g;
	struct run r;

	dg_init(&g, 100);
	dg_process(&g, 0, TA_CLOCK_MONOTONIC, 0, "/bin/prog");
	dg_end(&g, 10, 0, 0, 5, 0, 1);
	ck_assert_int_eq(run_dump(&g, &r), 0);
	ck_assert_str_eq(ta_session_incomplete(r.s), "the agent could not write all of its data");
	ck_assert_uint_eq(ta_session_process(r.s, 100)->end_lost, 5);
	run_free(&r);
	dg_free(&g);
	/* A header and nothing else. */
	dg_init(&g, 100);
	ck_assert_int_eq(run_dump(&g, &r), 0);
	ck_assert_ptr_nonnull(ta_session_incomplete(r.s));
	ck_assert_uint_eq(r.s->nprocs, 0);
	run_free(&r);
	dg_free(&g);
}
END_TEST

START_TEST(modules_and_metadata)
{
	struct dumpgen g;
	struct run r;
	const struct ta_process *p;
	struct pb b = {0};

	dg_init(&g, 100);
	dg_process(&g, 7, TA_CLOCK_RDTSC, 0, "/bin/prog");
	dg_module(&g, "/bin/prog", 0x10000, 1, 0x11000, 0x20000);
	dg_module(&g, "/lib/libx.so", 0x7f0000000000, 0, 0x7f0000001000, 0x7f0000002000);
	/* A chunk type from a later minor version: skipped. */
	pb_u(&b, 1);
	dg_chunk(&g, 77, b.p, b.len);
	pb_free(&b);
	/* A known chunk with a malformed payload: an error, reading goes on. */
	dg_chunk(&g, TA_CHUNK_MODULE, "\x01\x02\x50", 3);
	dg_end(&g, 10, 0, 0, 0, 0, 0);
	ck_assert_int_eq(run_dump(&g, &r), 0);
	p = ta_session_process(r.s, 100);
	ck_assert_str_eq(p->exe, "/bin/prog");
	ck_assert_str_eq(p->arch, "x86_64");
	ck_assert_uint_eq(p->argc, 2);
	ck_assert_str_eq(p->argv[1], "--arg");
	ck_assert_uint_eq(p->start_ticks, 7);
	ck_assert_uint_eq(p->nmodules, 2);
	ck_assert_str_eq(ta_process_module_at(p, 0x11000)->path, "/bin/prog");
	ck_assert_str_eq(ta_process_module_at(p, 0x1ffff)->path, "/bin/prog");
	ck_assert_ptr_null(ta_process_module_at(p, 0x20000));
	ck_assert_ptr_null(ta_process_module_at(p, 0x10fff));
	ck_assert_str_eq(ta_process_module_at(p, 0x7f0000001800)->path, "/lib/libx.so");
	ck_assert_uint_eq(ta_process_module_at(p, 0x7f0000001800)->bias, 0x7f0000000000);
	ck_assert_uint_eq(r.s->unknown_chunks, 1);
	ck_assert_uint_eq(r.s->nerrors, 1);
	ck_assert_int_eq(r.s->errors[0].code, -TA_E_PAYLOAD);
	ck_assert_uint_eq(r.s->errors[0].type, TA_CHUNK_MODULE);
	ck_assert_uint_eq(r.s->errors[0].chunk, 4);
	run_free(&r);
	dg_free(&g);
}
END_TEST

/* A module chunk with its load time (dg_module writes 0). */
static void module_at(struct dumpgen *g, const char *path, uint64_t load, uint64_t bias,
		      uint64_t start, uint64_t end)
{
	struct pb b = {0};

	pb_u(&b, load);
	pb_u(&b, bias);
	pb_str(&b, path);
	pb_str(&b, "");
	pb_u(&b, 0);
	pb_u(&b, 1);
	pb_u(&b, start);
	pb_u(&b, end);
	dg_chunk(g, TA_CHUNK_MODULE, b.p, b.len);
	pb_free(&b);
}

#define LIB_BIAS 0x7f0000000000ull
#define LIB_FN	 0x7f0000001100ull

START_TEST(module_unloaded_and_replaced)
{
	struct dumpgen g;
	struct ta_encoder e;
	struct run r;
	const struct ta_process *p;
	const struct ta_fstat *f[2] = {NULL, NULL};
	struct pb b = {0};
	size_t nf = 0;

	start_dump(&g, 0);
	module_at(&g, "/lib/a.so", 1000, LIB_BIAS, LIB_BIAS + 0x1000, LIB_BIAS + 0x2000);
	pb_u(&b, 1500);
	pb_u(&b, LIB_BIAS);
	pb_str(&b, "/lib/a.so");
	dg_chunk(&g, TA_CHUNK_MODULE_UNLOAD, b.p, b.len);
	pb_free(&b);
	/* Another library where a.so was, its function at the same address. */
	module_at(&g, "/lib/b.so", 1600, LIB_BIAS, LIB_BIAS + 0x1000, LIB_BIAS + 0x2000);
	ta_encoder_init(&e, 100);
	REQUIRE(ta_encoder_begin(&e, 1100) == 0, "begin");
	ev(&e, 1100, LIB_FN, 0);
	ev(&e, 1200, LIB_FN, 1);
	ev(&e, 1700, LIB_FN, 0);
	ev(&e, 1800, LIB_FN, 1);
	dg_events(&g, &e);
	ta_encoder_free(&e);
	dg_end(&g, 2000, 0, 4, 0, 1, 0);
	ck_assert_int_eq(run_dump(&g, &r), 0);
	p = ta_session_process(r.s, 100);
	ck_assert_uint_eq(p->nmodules, 3);
	ck_assert_uint_eq(p->modules[1].unload_ticks, 1500);
	ck_assert_uint_eq(p->modules[2].unload_ticks, UINT64_MAX);
	/* Two functions, one call each, told apart by the library's time. */
	for (size_t i = 0; i < r.prof.n; i++)
		if (ta_process_addr(p, r.prof.f[i].addr) == LIB_FN) {
			ck_assert_uint_lt(nf, 2);
			f[nf++] = &r.prof.f[i];
		}
	ck_assert_uint_eq(nf, 2);
	ck_assert_uint_ne(f[0]->addr, f[1]->addr);
	ck_assert_uint_eq(f[0]->calls, 1);
	ck_assert_uint_eq(f[1]->calls, 1);
	ck_assert_str_eq(ta_process_module_at(p, f[0]->addr)->path, "/lib/a.so");
	ck_assert_str_eq(ta_process_module_at(p, f[1]->addr)->path, "/lib/b.so");
	ck_assert_str_eq(ta_process_module_at(p, ta_process_addr_at(p, LIB_FN, 1499))->path,
			 "/lib/a.so");
	ck_assert_str_eq(ta_process_module_at(p, ta_process_addr_at(p, LIB_FN, 1700))->path,
			 "/lib/b.so");
	/* The program's own addresses are untouched. */
	ck_assert_uint_eq(ta_process_addr_at(p, A, 1700), A);
	ck_assert_ptr_null(ta_session_incomplete(r.s));
	run_free(&r);
	dg_free(&g);
}
END_TEST

/* A PROCESS chunk with the clock and module start_dump gives. */
static void start_image(struct dumpgen *g, uint64_t ticks, const char *exe)
{
	static const uint64_t pairs[3][2] = {{1000, 0}, {3000, 1000}, {5000, 2000}};

	dg_process(g, ticks, TA_CLOCK_RDTSC, 0, exe);
	dg_clock(g, 3, pairs);
	dg_module(g, exe, 0x10000, 1, 0x11000, 0x20000);
}

/* Two processes given pid 100 in one clock tick after boot (the same
 * boot_start), told apart by PROCESS's start_ns (1.8); an exec'd image
 * keeps its start_ns and stays the process it was. */
START_TEST(reused_pid_same_tick)
{
	struct dumpgen g;
	struct ta_encoder e;
	struct run r;
	const struct ta_process *p1, *p2;
	char pn[TA_PID_NAME_MAX];
	const uint64_t starts[3] = {111000, 111000, 222000};
	const char *exes[3] = {"/bin/prog", "/bin/next", "/bin/prog"};
	const int calls[3] = {1, 2, 3};

	dg_init(&g, 100);
	g.boot_start = 5000;
	for (int k = 0; k < 3; k++) {
		uint64_t t = 1000 + 1000 * (uint64_t)k;

		g.seqs[0] = 0;
		g.start_ns = starts[k];
		start_image(&g, t, exes[k]);
		dg_thread_start(&g, 100, t + 10, "prog");
		ta_encoder_init(&e, 100);
		REQUIRE(ta_encoder_begin(&e, t + 20) == 0, "begin");
		for (int i = 0; i < calls[k]; i++) {
			ev(&e, t + 20 + 10 * (uint64_t)i, A, 0);
			ev(&e, t + 25 + 10 * (uint64_t)i, A, 1);
		}
		dg_events(&g, &e);
		ta_encoder_free(&e);
		dg_thread_end(&g, 100, t + 500, 2 * (uint64_t)calls[k], 0);
		dg_end(&g, t + 600, 0, 2 * (uint64_t)calls[k], 0, 1, k == 0 ? TA_END_F_EXEC : 0);
	}
	ck_assert_int_eq(run_dump(&g, &r), 0);
	ck_assert_ptr_null(ta_session_incomplete(r.s));
	ck_assert_uint_eq(r.s->nprocs, 2);
	p1 = r.s->procs[0];
	p2 = r.s->procs[1];
	ck_assert_uint_eq(p1->nth, 1);
	ck_assert_uint_eq(p1->start_ns, 111000);
	ck_assert_uint_eq(p1->nimages, 2);
	ck_assert_uint_eq(p2->os_pid, 100);
	ck_assert_uint_eq(p2->nth, 2);
	ck_assert_uint_eq(p2->boot_start, 5000);
	ck_assert_uint_eq(p2->start_ns, 222000);
	ck_assert_uint_eq(p2->nimages, 1);
	ck_assert_uint_eq(p2->end_events, 6);
	ck_assert_str_eq(ta_pid_name(r.s, p2->pid, pn), "100 (2)");
	ck_assert_uint_eq(r.s->nthreads, 3);
	ck_assert_uint_eq(r.s->threads[0]->pid, p1->pid);
	ck_assert_uint_eq(r.s->threads[1]->pid, p1->pid);
	ck_assert_uint_eq(r.s->threads[2]->pid, p2->pid);
	ck_assert_uint_eq(r.s->threads[2]->events, 6);
	run_free(&r);
	dg_free(&g);
}
END_TEST

/* A long run forks more processes than pid_max: two processes given pid
 * 100, told apart by PROCESS's boot_start (1.7), stay two processes, each
 * with its own threads and totals; an exec'd image keeps its boot_start and
 * stays the same process. */
START_TEST(reused_pid_is_another_process)
{
	struct dumpgen g;
	struct ta_encoder e;
	struct run r;
	const struct ta_process *p1, *p2;
	char pn[TA_PID_NAME_MAX];

	dg_init(&g, 100);
	g.boot_start = 5000;
	start_image(&g, 50, "/bin/prog");
	dg_thread_start(&g, 100, 60, "prog");
	ta_encoder_init(&e, 100);
	REQUIRE(ta_encoder_begin(&e, 1000) == 0, "begin");
	ev(&e, 1000, A, 0);
	ev(&e, 1100, B, 0);
	ev(&e, 1200, B, 1);
	dg_events(&g, &e);
	ta_encoder_free(&e);
	dg_end(&g, 1300, 0, 3, 0, 1, TA_END_F_EXEC);
	/* Its exec'd image: the same boot_start. */
	g.seqs[0] = 0;
	start_image(&g, 1350, "/bin/next");
	dg_thread_start(&g, 100, 1360, "next");
	ta_encoder_init(&e, 100);
	REQUIRE(ta_encoder_begin(&e, 1370) == 0, "begin");
	ev(&e, 1370, A, 0);
	ev(&e, 1380, A, 1);
	dg_events(&g, &e);
	ta_encoder_free(&e);
	dg_thread_end(&g, 100, 1390, 2, 0);
	dg_end(&g, 1395, 0, 2, 0, 1, 0);
	/* Another process given pid 100 later (the first was gone). */
	g.seqs[0] = 0;
	g.boot_start = 7000;
	start_image(&g, 1400, "/bin/prog");
	dg_thread_start(&g, 100, 1450, "again");
	ta_encoder_init(&e, 100);
	REQUIRE(ta_encoder_begin(&e, 1500) == 0, "begin");
	ev(&e, 1500, A, 0);
	ev(&e, 1550, C, 0);
	ev(&e, 1560, C, 1);
	ev(&e, 1600, A, 1);
	dg_events(&g, &e);
	ta_encoder_free(&e);
	dg_thread_end(&g, 100, 1700, 4, 0);
	dg_end(&g, 1800, 0, 4, 0, 1, 0);
	ck_assert_int_eq(run_dump(&g, &r), 0);
	ck_assert_ptr_null(ta_session_incomplete(r.s));
	ck_assert_uint_eq(r.s->nprocs, 2);
	p1 = r.s->procs[0];
	p2 = r.s->procs[1];
	ck_assert_uint_eq(p1->os_pid, 100);
	ck_assert_uint_eq(p1->pid, 100);
	ck_assert_uint_eq(p1->nth, 1);
	ck_assert_uint_eq(p1->boot_start, 5000);
	ck_assert_uint_eq(p1->nimages, 2);
	ck_assert_uint_eq(p1->end_events, 5);
	ck_assert_uint_eq(p2->os_pid, 100);
	ck_assert_uint_ne(p2->pid, 100);
	ck_assert_uint_eq(p2->nth, 2);
	ck_assert_uint_eq(p2->boot_start, 7000);
	ck_assert_uint_eq(p2->nimages, 1);
	ck_assert_str_eq(p2->images[0], "/bin/prog");
	ck_assert_uint_eq(p2->end_events, 4);
	ck_assert_uint_eq(p2->end_threads, 1);
	ck_assert_uint_eq(p2->chunks_missing, 0);
	ck_assert_ptr_eq(ta_session_process(r.s, 100), p1);
	ck_assert_ptr_eq(ta_session_process(r.s, p2->pid), p2);
	ck_assert_str_eq(ta_pid_name(r.s, p1->pid, pn), "100");
	ck_assert_str_eq(ta_pid_name(r.s, p2->pid, pn), "100 (2)");
	ck_assert_uint_eq(ta_pid_os(r.s, p2->pid), 100);
	/* Three threads: one per image of the first, one of the second. */
	ck_assert_uint_eq(r.s->nthreads, 3);
	ck_assert_uint_eq(r.s->threads[0]->pid, p1->pid);
	ck_assert_uint_eq(r.s->threads[0]->events, 3);
	ck_assert_uint_eq(r.s->threads[1]->pid, p1->pid);
	ck_assert_uint_eq(r.s->threads[1]->events, 2);
	ck_assert_uint_eq(r.s->threads[2]->pid, p2->pid);
	ck_assert_uint_eq(r.s->threads[2]->events, 4);
	ck_assert_uint_eq(r.s->threads[2]->chunks_missing, 0);
	ck_assert_uint_eq(r.s->threads[2]->resyncs, 0);
	ck_assert_uint_eq(r.s->threads[2]->unmatched, 0);
	ck_assert_str_eq(r.s->threads[2]->name, "again");
	/* C was called by the second process only, under its own key. */
	for (size_t i = 0; i < r.prof.n; i++) {
		const struct ta_fstat *f = &r.prof.f[i];

		if (ta_process_addr(ta_session_process(r.s, f->pid), f->addr) == C) {
			ck_assert_uint_eq(f->pid, p2->pid);
			ck_assert_uint_eq(f->calls, 1);
		}
	}
	run_free(&r);
	dg_free(&g);
}
END_TEST

START_TEST(exec_starts_new_image)
{
	struct dumpgen g;
	struct ta_encoder e;
	struct run r;
	const struct ta_process *p;

	start_dump(&g, 0);
	dg_thread_start(&g, 100, 60, "prog");
	ta_encoder_init(&e, 100);
	REQUIRE(ta_encoder_begin(&e, 1000) == 0, "begin");
	ev(&e, 1000, A, 0); /* main, which exec's */
	ev(&e, 1100, B, 0);
	ev(&e, 1200, B, 1);
	dg_events(&g, &e);
	ta_encoder_free(&e);
	dg_end(&g, 1300, 0, 3, 0, 1, TA_END_F_EXEC);
	/* The new image: the same pid, chunks numbered from 0 again, a
	 * thread with the same tid, another program at the same addresses. */
	g.seqs[0] = 0;
	dg_process(&g, 1400, TA_CLOCK_RDTSC, 0, "/bin/next");
	module_at(&g, "/bin/next", 1400, 0x10000, 0x11000, 0x20000);
	dg_thread_start(&g, 100, 1450, "next");
	ta_encoder_init(&e, 100);
	REQUIRE(ta_encoder_begin(&e, 1500) == 0, "begin");
	ev(&e, 1500, A, 0);
	ev(&e, 1600, A, 1);
	dg_events(&g, &e);
	ta_encoder_free(&e);
	dg_thread_end(&g, 100, 1700, 2, 0);
	dg_end(&g, 1800, 0, 2, 0, 1, 0);
	ck_assert_int_eq(run_dump(&g, &r), 0);
	ck_assert_ptr_null(ta_session_incomplete(r.s));
	ck_assert_uint_eq(r.s->nprocs, 1);
	p = ta_session_process(r.s, 100);
	ck_assert_uint_eq(p->nimages, 2);
	ck_assert_str_eq(p->images[0], "/bin/prog");
	ck_assert_str_eq(p->images[1], "/bin/next");
	ck_assert_str_eq(p->exe, "/bin/next");
	ck_assert_uint_eq(p->end_events, 5);
	ck_assert_uint_eq(p->end_threads, 2);
	ck_assert_uint_eq(p->chunks_missing, 0);
	/* Two threads 100: the first image's, closed at its last event with
	 * main open, and the new one's, with no chunk missing or repair. */
	ck_assert_uint_eq(r.s->nthreads, 2);
	ck_assert_uint_eq(r.s->threads[0]->events, 3);
	ck_assert_uint_eq(r.s->threads[1]->events, 2);
	ck_assert_uint_eq(r.s->threads[1]->chunks_missing, 0);
	ck_assert_uint_eq(r.s->threads[1]->resyncs, 0);
	/* main of each image: the same address, another module. */
	for (size_t i = 0; i < r.prof.n; i++) {
		const struct ta_fstat *f = &r.prof.f[i];

		if (ta_process_addr(p, f->addr) != A)
			continue;
		ck_assert_uint_eq(f->calls, 1);
		ck_assert_uint_eq(f->open, f->thread == 0 ? 1 : 0);
		ck_assert_str_eq(ta_process_module_at(p, f->addr)->path,
				 f->thread == 0 ? "/bin/prog" : "/bin/next");
	}
	run_free(&r);
	dg_free(&g);
}
END_TEST

/* A writer's chunk sequence (32 bits) wraps after 2^32 chunks: counted on
 * past it, gaps and chunks out of order found as before. */
START_TEST(chunk_seq_wraps)
{
	static const uint32_t seqs[] = {0xfffffffeu, 0xffffffffu, 0, 1, 3, 2, 4};
	struct dumpgen g;
	struct ta_session *s = ta_session_new(NULL);
	struct ta_process *p;
	struct ta_dumpfile *d;
	struct ta_chunk c;

	ck_assert_ptr_nonnull(s);
	dg_init(&g, 100);
	dg_process(&g, 0, TA_CLOCK_MONOTONIC, 0, "/bin/prog");
	for (size_t i = 0; i < sizeof(seqs) / sizeof(seqs[0]); i++) {
		uint8_t pad[1] = {0};

		dg_chunk_seq(&g, 0x7ffe, pad, 1, seqs[i], 0);
	}
	ck_assert_int_eq(ta_dumpfile_memopen(g.buf, g.len, &d), 0);
	ck_assert_int_eq(ta_dumpfile_next(d, &c), 1);
	ck_assert_int_eq(ta_session_chunk(s, &c), 0);
	/* As if 2^32 - 2 chunks had been read since. */
	p = ta_session_process(s, 100);
	p->next_chunk_seq = 0xfffffffeu;
	while (ta_dumpfile_next(d, &c) == 1)
		ck_assert_int_eq(ta_session_chunk(s, &c), 0);
	ck_assert_uint_eq(p->chunks_missing, 1); /* 2 came after 3 */
	ck_assert_uint_eq(p->next_chunk_seq, (1ull << 32) + 5);
	ta_dumpfile_close(d);
	ta_session_free(s);
	dg_free(&g);

	/* A first chunk seen far into the sequence (those before were lost)
	 * is ahead, not behind. */
	s = ta_session_new(NULL);
	dg_init(&g, 100);
	dg_chunk_seq(&g, 0x7ffe, "x", 1, 0xc0000000u, 0);
	dg_chunk_seq(&g, 0x7ffe, "x", 1, 0xc0000002u, 0);
	ck_assert_int_eq(ta_dumpfile_memopen(g.buf, g.len, &d), 0);
	while (ta_dumpfile_next(d, &c) == 1)
		ck_assert_int_eq(ta_session_chunk(s, &c), 0);
	p = ta_session_process(s, 100);
	ck_assert_uint_eq(p->chunks_missing, 0xc0000001u);
	ck_assert_uint_eq(p->next_chunk_seq, 0xc0000003u);
	ta_dumpfile_close(d);
	ta_session_free(s);
	dg_free(&g);
}
END_TEST

/* ---- the manual API's chunks (SITES, CHANNELS) ------------------------------- */

static void site_entry(struct pb *b, uint64_t addr, uint64_t kind, uint64_t ch, const char *name,
		       const char *file, uint64_t line)
{
	pb_u(b, addr);
	pb_u(b, kind);
	pb_u(b, ch);
	pb_str(b, name);
	pb_str(b, file);
	pb_u(b, line);
}

START_TEST(sites_later_description_replaces)
{
	struct dumpgen g;
	struct pb b = {0};
	struct run r;
	const struct ta_site *st;
	struct ta_process *p;

	start_dump(&g, 0);
	pb_u(&b, 2);
	site_entry(&b, 0x5000, TA_SITE_ZONE, TA_CHANNEL_USER, "old", "a.c", 10);
	site_entry(&b, 0x6000, TA_SITE_COUNTER, 7, "depth", "b.c", 20);
	dg_chunk(&g, TA_CHUNK_SITES, b.p, b.len);
	b.len = 0;
	/* A library unloaded, another at its place: 0x5000 described again. */
	pb_u(&b, 1);
	site_entry(&b, 0x5000, TA_SITE_INSTANT, 99, "new", "c.c", 30);
	dg_chunk(&g, TA_CHUNK_SITES, b.p, b.len);
	b.len = 0;
	pb_u(&b, 3);
	pb_u(&b, TA_CHANNEL_FUNCTIONS);
	pb_str(&b, "functions");
	pb_u(&b, 1);
	pb_u(&b, 6);
	pb_str(&b, "net");
	pb_u(&b, 0);
	pb_u(&b, 1000); /* beyond TA_CHANNELS_MAX: ignored */
	pb_str(&b, "far");
	pb_u(&b, 1);
	dg_chunk(&g, TA_CHUNK_CHANNELS, b.p, b.len);
	b.len = 0;
	/* A later description of a channel: the first holds. */
	pb_u(&b, 1);
	pb_u(&b, 6);
	pb_str(&b, "other");
	pb_u(&b, 1);
	dg_chunk(&g, TA_CHUNK_CHANNELS, b.p, b.len);
	dg_end(&g, 100, 0, 0, 0, 0, 0);
	ck_assert_int_eq(run_dump(&g, &r), 0);
	ck_assert_uint_eq(r.s->nerrors, 0);
	p = ta_session_process(r.s, 100);
	st = ta_process_site(p, 0x5000);
	ck_assert_ptr_nonnull(st);
	ck_assert_str_eq(st->name, "new");
	ck_assert_str_eq(st->file, "c.c");
	ck_assert_uint_eq(st->kind, TA_SITE_INSTANT);
	ck_assert_uint_eq(st->line, 30);
	/* A channel id beyond the limit reads as user. */
	ck_assert_uint_eq(st->channel, TA_CHANNEL_USER);
	st = ta_process_site(p, 0x6000);
	ck_assert_ptr_nonnull(st);
	ck_assert_str_eq(st->name, "depth");
	ck_assert_uint_eq(st->channel, 7);
	ck_assert_ptr_null(ta_process_site(p, 0x7000));
	ck_assert_uint_eq(p->nsites, 2);
	ck_assert_str_eq(p->channels[0].name, "functions");
	ck_assert_int_eq(p->channels[0].on, 1);
	ck_assert_str_eq(p->channels[6].name, "net");
	ck_assert_int_eq(p->channels[6].on, 0);
	run_free(&r);
	pb_free(&b);
	dg_free(&g);
}
END_TEST

/* Each malformed payload is an error of its chunk, never a crash. */
START_TEST(api_chunks_malformed)
{
	static const struct {
		unsigned type;
		uint8_t bytes[16];
		size_t len;
	} bad[] = {
	    {TA_CHUNK_SITES, {0}, 0},				  /* no count */
	    {TA_CHUNK_SITES, {0xff, 0xff, 0xff, 0x7f}, 4},	  /* a count beyond the bytes */
	    {TA_CHUNK_SITES, {1, 0x10, 1, 1, 5, 'a'}, 6},	  /* a name cut short */
	    {TA_CHUNK_SITES, {1, 0x10, 1, 1, 1, 'a', 1, 'b'}, 8}, /* no line */
	    {TA_CHUNK_SITES, {1, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80}, 7}, /* a varint unended */
	    {TA_CHUNK_CHANNELS, {0}, 0},
	    {TA_CHUNK_CHANNELS, {9, 1, 0, 1}, 4},
	    {TA_CHUNK_CHANNELS, {1, 6, 3, 'n', 'e'}, 5},
	    {TA_CHUNK_CHANNELS, {1, 6, 3, 'n', 'e', 't'}, 6}, /* no state */
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct dumpgen g;
		struct run r;

		start_dump(&g, 0);
		dg_chunk(&g, bad[i].type, bad[i].bytes, bad[i].len);
		dg_end(&g, 100, 0, 0, 0, 0, 0);
		ck_assert_int_eq(run_dump(&g, &r), 0);
		ck_assert_msg(r.s->nerrors == 1, "case %zu: %zu errors", i, r.s->nerrors);
		ck_assert_msg(r.s->errors[0].code == -TA_E_PAYLOAD, "case %zu: error %d", i,
			      r.s->errors[0].code);
		run_free(&r);
		dg_free(&g);
	}
}
END_TEST

static Suite *session_suite(void)
{
	Suite *s = suite_create("session");
	TCase *tc = tcase_create("walk");

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, exact_times, 0, 2);
	tcase_add_test(tc, recursion_counted_once);
	tcase_add_test(tc, open_frames_at_thread_end);
	tcase_add_test(tc, open_frames_at_last_event);
	tcase_add_test(tc, skipped_frames_and_unmatched_exits);
	tcase_add_test(tc, unwound_frames_close_at_the_marker);
	tcase_add_test(tc, lost_chunk_resync);
	tcase_add_test(tc, damaged_chunk_resync);
	tcase_add_test(tc, deep_recursion_across_chunks);
	tcase_add_test(tc, visitor_sequence);
	tcase_add_test(tc, threads_and_names);
	tcase_add_test(tc, forked_child);
	tcase_add_test(tc, profile_reuses_frame_entries);
	tcase_add_test(tc, clock_least_squares);
	tcase_add_test(tc, clock_monotonic_is_ns);
	tcase_add_test(tc, clock_nominal_frequency);
	tcase_add_test(tc, clock_unknown);
	tcase_add_test(tc, end_flags_incomplete);
	tcase_add_test(tc, modules_and_metadata);
	tcase_add_test(tc, module_unloaded_and_replaced);
	tcase_add_test(tc, exec_starts_new_image);
	tcase_add_test(tc, reused_pid_is_another_process);
	tcase_add_test(tc, reused_pid_same_tick);
	tcase_add_test(tc, chunk_seq_wraps);
	tcase_add_test(tc, sites_later_description_replaces);
	tcase_add_test(tc, api_chunks_malformed);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ta_check_run(session_suite());
}
