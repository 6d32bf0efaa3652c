/* SPDX-License-Identifier: MIT */
/*
 * fuzz_live_entry.c - serve's client and top's aggregator under hostile
 * streams (see fuzz_live_entry.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_entry.h"
#include "fuzz_live_entry.h"
#include "live.h"
#include "serve.h"
#include "stream.h"

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "fuzz_live_entry.c:%d: check failed: %s\n", __LINE__,      \
				#cond);                                                            \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

struct input {
	const uint8_t *p; /* the stream */
	size_t n;
	uint8_t *owned; /* the repaired copy */
	unsigned opt;	/* byte 0, bits 2-3 */
	size_t largest; /* of a piece */
	uint32_t rng;
};

static int input_open(struct input *in, const uint8_t *data, size_t size)
{
	static const size_t largest[] = {SIZE_MAX, 1, 7, 64, 512, 4096, 65536, 3};
	unsigned mode;

	memset(in, 0, sizeof(*in));
	if (size < 2)
		return -1;
	mode = data[0] & 3;
	in->opt = (data[0] >> 2) & 3;
	in->largest = largest[(data[0] >> 4) & 7];
	in->rng = 0x9e3779b9u ^ ((uint32_t)data[1] * 0x01000193u);
	in->p = data + 2;
	in->n = size - 2;
	if (mode == 1 || mode == 2) {
		size_t len;

		if (ta_fuzz_repair(in->p, in->n, mode == 2, &in->owned, &len) < 0)
			return -1;
		in->p = in->owned;
		in->n = len;
	}
	return 0;
}

/* The next piece's size (xorshift32), at most left. */
static size_t piece(struct input *in, size_t left)
{
	size_t k;

	if (in->largest == SIZE_MAX)
		return left;
	in->rng ^= in->rng << 13;
	in->rng ^= in->rng >> 17;
	in->rng ^= in->rng << 5;
	k = 1 + in->rng % in->largest;
	return k < left ? k : left;
}

/* ---- serve ------------------------------------------------------------------------- */

int ta_fuzz_serve(const uint8_t *data, size_t size)
{
	static const uint64_t quotas[] = {0, 100, 4096, 65536};
	struct ta_sv_conn c;
	struct input in;
	size_t at = 0;
	int rc = 0;

	if (input_open(&in, data, size) < 0)
		return 0;
	ta_sv_conn_init(&c, TA_SV_NOWHERE, "fuzz/host\n", quotas[in.opt]);
	while (at < in.n) {
		size_t k = piece(&in, in.n - at);
		int r = ta_sv_conn_feed(&c, in.p + at, k);

		at += k;
		CHECK(c.pend_len <= TA_SV_PEND_MAX);
		CHECK(c.written <= at);
		CHECK(c.st.payload_len <= TA_SV_KEEP_MAX);
		if (rc < 0)
			CHECK(r == rc); /* cut off: it stays so */
		rc = r;
		CHECK((r < 0) == (c.cut != 0));
		if (r < 0)
			CHECK(c.why[0] && !ta_sv_conn_midway(&c));
		if (r < 0 && (at & 1))
			break; /* the loop stops reading it, as serve does */
	}
	if (!c.cut && (in.n & 4))
		ta_sv_conn_cut(&c, "stalled");
	(void)ta_sv_conn_close(&c);
	CHECK(c.written <= in.n);
	CHECK(!c.quota || c.written <= c.quota);
	CHECK(strlen(c.file) < sizeof(c.file) && !strchr(c.file, '/'));
	CHECK(c.file[0] ? c.named : !c.named);
	(void)ta_sv_conn_events(&c);
	(void)ta_sv_conn_threads(&c);
	if (c.named) {
		/* The dump kept is the first bytes fed, cut at a chunk's end: it
		 * reads back whole. */
		struct ta_stream st;
		size_t off = 0;

		ta_stream_init(&st, 0);
		while (off < c.written) {
			struct ta_stream_ev ev;

			off += ta_stream_feed(&st, in.p + off, (size_t)c.written - off, &ev);
			CHECK(ev.what != TA_STREAM_ERROR);
		}
		CHECK(ta_stream_at_boundary(&st));
		ta_stream_free(&st);
	}
	ta_sv_conn_free(&c);
	free(in.owned);
	return 0;
}

/* ---- top's aggregator ------------------------------------------------------------------ */

static void snap_check(struct ta_live *L, uint64_t *prev_events)
{
	struct ta_live_snap sn;
	uint64_t ievents = 0;

	if (ta_live_snap(L, 1000000000u, &sn) < 0)
		return;
	CHECK(sn.events == ta_live_events(L));
	CHECK(sn.events >= *prev_events && sn.ievents == sn.events - *prev_events);
	*prev_events = sn.events;
	CHECK(sn.nthr <= TA_LIVE_THREADS_MAX + 1);
	CHECK(sn.nprocs <= TA_LIVE_PROCS_MAX);
	CHECK(sn.nfns <= TA_LIVE_ROWS_MAX + sn.nthr);
	CHECK(!sn.capped_new || sn.capped);
	for (size_t i = 0; i < sn.nthr; i++) {
		CHECK(sn.thr[i].ievents <= sn.thr[i].events);
		CHECK(sn.thr[i].name && sn.thr[i].hot);
		ievents += sn.thr[i].ievents;
	}
	CHECK(ievents == sn.ievents);
	for (size_t i = 0; i < sn.nfns; i++) {
		CHECK(sn.fns[i].id.name && sn.fns[i].id.module);
		CHECK(sn.fns[i].icalls <= sn.fns[i].calls);
	}
	if (sn.fr.set)
		CHECK(sn.fr.p50_ns <= sn.fr.p99_ns && sn.fr.p99_ns <= sn.fr.max_ns);
}

int ta_fuzz_live(const uint8_t *data, size_t size)
{
	static const unsigned every[] = {1, 4, 64, 0};
	struct ta_live *L;
	struct input in;
	uint64_t prev = 0, off = 0;
	size_t at = 0;
	unsigned pieces = 0;

	if (input_open(&in, data, size) < 0)
		return 0;
	L = ta_live_new();
	CHECK(L);
	ta_live_no_files(L);
	while (at < in.n) {
		size_t k = piece(&in, in.n - at);
		int r = ta_live_feed(L, in.p + at, k, &off);

		at += k;
		if (r < 0) {
			/* top stops reading there and shows what it has. */
			CHECK(off <= at);
			break;
		}
		if (every[in.opt] && ++pieces % every[in.opt] == 0)
			snap_check(L, &prev);
	}
	(void)ta_live_at_boundary(L);
	(void)ta_live_ended(L);
	(void)ta_live_pid(L);
	snap_check(L, &prev);
	snap_check(L, &prev);
	ta_live_free(L);
	free(in.owned);
	return 0;
}
