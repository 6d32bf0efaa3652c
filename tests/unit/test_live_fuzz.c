/* SPDX-License-Identifier: MIT */
/*
 * test_live_fuzz.c - the live side under hostile streams: the fuzzers'
 * regression corpora of serve's client and top's aggregator
 * (tests/fuzz/corpus-serve/, corpus-live/) replayed through their entry
 * points built with the normal compiler, and a stream claiming a million
 * distinct functions over 100,000 threads aggregated within the caps of
 * live.h: exact totals, the rest under "(other threads)" and
 * "(other functions)", the caps said, and the peak RSS bounded.
 */
#define _GNU_SOURCE
#include <check.h>

#include "../check_run.h"
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dumpgen.h"
#include "format.h"
#include "fuzz_live_entry.h"
#include "live.h"

/* ---- the corpora ------------------------------------------------------------------- */

/* Runs every file of the directory named by the variable var through fn;
 * how many. */
static size_t replay(const char *var, int (*fn)(const uint8_t *, size_t))
{
	const char *dir = getenv(var);
	struct dirent *de;
	size_t n = 0;
	DIR *d;

	ck_assert_msg(dir, "%s is not set", var);
	d = opendir(dir);
	ck_assert_msg(d, "%s: cannot open", dir);
	while ((de = readdir(d))) {
		char path[4096];
		uint8_t *buf;
		long len;
		FILE *f;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		f = fopen(path, "rb");
		ck_assert_msg(f, "%s: cannot open", path);
		ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
		len = ftell(f);
		rewind(f);
		buf = malloc(len > 0 ? (size_t)len : 1);
		ck_assert_ptr_nonnull(buf);
		ck_assert_uint_eq(fread(buf, 1, (size_t)len, f), (size_t)len);
		fclose(f);
		fn(buf, (size_t)len); /* aborts when an invariant breaks */
		free(buf);
		n++;
	}
	closedir(d);
	return n;
}

START_TEST(corpus_serve)
{
	ck_assert_uint_gt(replay("TA_FUZZ_CORPUS_SERVE", ta_fuzz_serve), 0);
}
END_TEST

START_TEST(corpus_live)
{
	ck_assert_uint_gt(replay("TA_FUZZ_CORPUS_LIVE", ta_fuzz_live), 0);
}
END_TEST

/* ---- the caps ------------------------------------------------------------------------ */

#define THREADS	       100000u
#define FNS_PER_THREAD 10u /* distinct over the stream: 1,000,000 functions */
/* The peak RSS the aggregator may reach on that stream (measured: about
 * 105 MiB with the caps; without them the 100,000 threads' rows, tables and
 * stacks alone would take some 400 MiB, and grow with any longer stream). */
#define HWM_MAX_KB (256u << 10)

static uint64_t vm_hwm_kb(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	uint64_t kb = 0;

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "VmHWM: %" SCNu64, &kb) == 1)
			break;
	fclose(f);
	return kb;
}

/* Hands over what g holds and empties it: the stream never sits whole in
 * memory. */
static void feed(struct ta_live *L, struct dumpgen *g)
{
	uint64_t off = 0;

	ck_assert_int_eq(ta_live_feed(L, g->buf, g->len, &off), 0);
	g->len = 0;
}

START_TEST(caps_hold)
{
	struct ta_live *L = ta_live_new();
	struct ta_live_snap sn;
	struct dumpgen g;
	uint64_t calls = 0, ievents = 0, other_thr_events = 0, other_fn_calls = 0;
	int others = 0;

	ck_assert_ptr_nonnull(L);
	ta_live_no_files(L);
	dg_init(&g, 4242);
	dg_process(&g, 1000, TA_CLOCK_MONOTONIC, 1000000000, "/usr/bin/hostile");
	feed(L, &g);
	for (uint32_t t = 0; t < THREADS; t++) {
		struct ta_encoder e;
		uint64_t tid = 10000 + t;

		dg_thread_start(&g, tid, 1000, "worker");
		ta_encoder_init(&e, tid);
		ta_encoder_begin(&e, 2000);
		for (uint32_t f = 0; f < FNS_PER_THREAD; f++) {
			uint64_t addr = 0x1000000 + ((uint64_t)t * FNS_PER_THREAD + f) * 16;

			ta_encoder_event(&e, 2000 + f * 2, addr, 0);
			ta_encoder_event(&e, 2001 + f * 2, addr, 1);
		}
		dg_events(&g, &e);
		ta_encoder_free(&e);
		feed(L, &g);
	}
	ck_assert_int_eq(ta_live_snap(L, 1000000000u, &sn), 0);

	/* Every event counted, over the threads kept and the one for the rest. */
	ck_assert_uint_eq(sn.events, (uint64_t)THREADS * FNS_PER_THREAD * 2);
	ck_assert_uint_eq(sn.nthr, TA_LIVE_THREADS_MAX + 1);
	for (size_t i = 0; i < sn.nthr; i++) {
		ievents += sn.thr[i].ievents;
		if (!strcmp(sn.thr[i].name, TA_LIVE_OTHER_THREADS)) {
			others++;
			other_thr_events = sn.thr[i].events;
		}
	}
	ck_assert_int_eq(others, 1);
	ck_assert_uint_eq(ievents, sn.events);
	ck_assert_uint_eq(other_thr_events,
			  (uint64_t)(THREADS - TA_LIVE_THREADS_MAX) * FNS_PER_THREAD * 2);

	/* Every call counted: the rows past the cap under "(other functions)". */
	ck_assert_uint_le(sn.nfns, TA_LIVE_ROWS_MAX + 1);
	for (size_t i = 0; i < sn.nfns; i++) {
		calls += sn.fns[i].calls;
		if (!strcmp(sn.fns[i].id.name, TA_LIVE_OTHER_FNS))
			other_fn_calls = sn.fns[i].calls;
	}
	ck_assert_uint_eq(calls, (uint64_t)THREADS * FNS_PER_THREAD);
	ck_assert_uint_eq(other_fn_calls, (uint64_t)THREADS * FNS_PER_THREAD - TA_LIVE_ROWS_MAX);

	/* Said once. */
	ck_assert_ptr_nonnull(sn.capped);
	ck_assert_int_eq(sn.capped_new, 1);
	ck_assert_str_eq(
	    sn.capped, "limits reached: 4096 threads (the rest counted as (other threads)); "
		       "524288 functions over the threads (the rest counted as (other functions))");
	ck_assert_int_eq(ta_live_snap(L, 1000000000u, &sn), 0);
	ck_assert_ptr_nonnull(sn.capped);
	ck_assert_int_eq(sn.capped_new, 0);

	fprintf(stderr, "caps_hold: VmHWM %" PRIu64 " KiB\n", vm_hwm_kb());
#if !defined(__SANITIZE_ADDRESS__)
	/* AddressSanitizer's shadow and quarantine are no measure of ours. */
	ck_assert_uint_lt(vm_hwm_kb(), HWM_MAX_KB);
#endif
	ta_live_free(L);
	dg_free(&g);
}
END_TEST

/* Under the caps, nothing is said. */
START_TEST(caps_quiet)
{
	struct ta_live *L = ta_live_new();
	struct ta_live_snap sn;
	struct ta_encoder e;
	struct dumpgen g;

	ta_live_no_files(L);
	dg_init(&g, 7);
	dg_process(&g, 1000, TA_CLOCK_MONOTONIC, 1000000000, "/usr/bin/quiet");
	dg_thread_start(&g, 7, 1000, "main");
	ta_encoder_init(&e, 7);
	ta_encoder_begin(&e, 2000);
	ta_encoder_event(&e, 2000, 0x401000, 0);
	ta_encoder_event(&e, 2010, 0x401000, 1);
	dg_events(&g, &e);
	ta_encoder_free(&e);
	feed(L, &g);
	ck_assert_int_eq(ta_live_snap(L, 1000000000u, &sn), 0);
	ck_assert_ptr_null(sn.capped);
	ck_assert_uint_eq(sn.nthr, 1);
	ck_assert_uint_eq(sn.nfns, 1);
	ck_assert_str_eq(sn.fns[0].id.name, "0x401000");
	ck_assert_uint_eq(sn.fns[0].calls, 1);
	ck_assert_uint_eq(sn.fns[0].self_ns, 10);
	ta_live_free(L);
	dg_free(&g);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("live-fuzz");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, corpus_serve);
	tcase_add_test(tc, corpus_live);
	tcase_add_test(tc, caps_hold);
	tcase_add_test(tc, caps_quiet);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ta_check_run(suite());
}
