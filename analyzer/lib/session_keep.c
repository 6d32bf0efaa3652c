/* SPDX-License-Identifier: MIT */
/*
 * session_keep.c - the KEEP chunk (format/FORMAT.md, since 1.10): a dump
 * recorded with TRACEAGENT_KEEP=slow-frames:... holds only the kept
 * windows' events; the chunk says the judging's settings and counts and
 * the windows, so the views can tell a kept frame from a gap.
 */
#include "session_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ta_keep_info_free(struct ta_keep_info *k)
{
	if (!k)
		return;
	free(k->set);
	free(k->lo);
	free(k->hi);
	free(k);
}

int ta_sess_keep_chunk(struct ta_process *p, struct ta_reader *r)
{
	struct ta_keep_info *k = calloc(1, sizeof(*k));
	const uint8_t *name;
	uint64_t namelen, n, at = 0;

	if (!k)
		return -TA_E_NOMEM;
	ta_get_varint(r, &k->budget_ns);
	ta_get_varint(r, &k->before);
	ta_get_bytes(r, &name, &namelen);
	ta_get_varint(r, &k->frames_seen);
	ta_get_varint(r, &k->frames_slow);
	ta_get_varint(r, &k->frames_kept);
	ta_get_varint(r, &k->let_go);
	ta_get_varint(r, &k->let_go_early);
	ta_get_varint(r, &k->windows_partial);
	ta_get_varint(r, &k->windows_lost);
	ta_get_varint(r, &k->marks_unjudged);
	ta_get_varint(r, &n);
	/* Each window takes two bytes at least: a larger count is a lie. */
	if (r->err || n > (uint64_t)(r->end - r->p) / 2)
		goto bad;
	k->set = malloc(namelen + 1);
	k->lo = malloc((n ? n : 1) * sizeof(*k->lo));
	k->hi = malloc((n ? n : 1) * sizeof(*k->hi));
	if (!k->set || !k->lo || !k->hi) {
		ta_keep_info_free(k);
		return -TA_E_NOMEM;
	}
	memcpy(k->set, name, namelen);
	k->set[namelen] = 0;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t lo, len;

		ta_get_varint(r, &lo);
		ta_get_varint(r, &len);
		/* In order and apart, as the agent writes them: what the
		 * views' search needs. */
		if (r->err || lo < at || lo + len < lo)
			goto bad;
		k->lo[i] = lo;
		k->hi[i] = lo + len;
		at = lo + len + 1;
	}
	k->nwin = (size_t)n;
	ta_keep_info_free(p->keep);
	p->keep = k;
	return 0;
bad:
	ta_keep_info_free(k);
	return -TA_E_PAYLOAD;
}

int ta_keep_kept(const struct ta_keep_info *k, uint64_t from, uint64_t to)
{
	size_t lo = 0, hi = k->nwin;

	/* The last window starting at or before from. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (k->lo[mid] <= from)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 && to <= k->hi[lo - 1];
}

const char *ta_keep_line(char *buf, size_t n, const struct ta_keep_info *k)
{
	double ms = (double)k->budget_ns / 1e6;

	snprintf(buf, n,
		 "kept only the slow frames at record time (TRACEAGENT_KEEP: frames of set "
		 "\"%s\" over %g ms and %" PRIu64 " before each): %" PRIu64 " of %" PRIu64
		 " frames seen kept, %" PRIu64 " slow; the rest was let go: this is not a "
		 "whole profile",
		 k->set, ms, k->before, k->frames_kept, k->frames_seen, k->frames_slow);
	return buf;
}

const struct ta_keep_info *ta_session_keep(const struct ta_session *s)
{
	for (size_t i = 0; i < s->nprocs; i++)
		if (s->procs[i]->keep)
			return s->procs[i]->keep;
	return NULL;
}
