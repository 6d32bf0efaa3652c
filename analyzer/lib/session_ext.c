/* SPDX-License-Identifier: MIT */
/*
 * session_ext.c - the parallel reader's parts for visitors that want only
 * the manual API's EXT events (ta_session_ext_chunks): a worker decodes an
 * EVENTS chunk into its EXT events and the exits of the frames open at its
 * start; the reader hands them to the visitor in order and keeps the stack
 * as the walk would (ta_session_part_take).
 */
#include "grow.h"
#include "session_int.h"

#include <stdlib.h>
#include <string.h>

#define FRAMES_MAX TA_SESSION_FRAMES_MAX

/* ---- EXT events per chunk, for ext-only visitors (ta_session_ext_chunks) ---------- */

/* An EXT event, or (kind EXT_ENTER) the chunk's first enter. */
struct ext_ev {
	uint64_t ticks, kind, addr;
	uint32_t n, depth;
	size_t at; /* its values in vals */
};

#define EXT_ENTER UINT64_MAX

struct ext_part {
	int ok;
	struct ta_decoder dec;
	struct ta_part_open *stack;
	uint32_t depth, cap, nph;
	struct ta_part_edge *edges;
	size_t nedges, edges_cap;
	struct ext_ev *evs;
	size_t nevs, evs_cap;
	uint64_t *vals;
	size_t nvals, vals_cap;
	int entered;
	uint64_t events, unmatched, lost, last_ticks;
	int have_ticks;
};

static void *ext_make(void *ctx)
{
	struct ext_part *xp = calloc(1, sizeof(*xp));

	(void)ctx;
	if (xp)
		ta_decoder_init(&xp->dec);
	return xp;
}

static void ext_drop(void *part)
{
	struct ext_part *xp = part;

	if (!xp)
		return;
	ta_decoder_free(&xp->dec);
	free(xp->stack);
	free(xp->edges);
	free(xp->evs);
	free(xp->vals);
	free(xp);
}

/* Grows *v (n elements of size sz, capacity *cap) for one more: 0 or -1. */
static int ext_room(void **v, size_t n, size_t *cap, size_t sz, size_t more)
{
	void *nv;

	if (n + more <= *cap)
		return 0;
	nv = ta_vec_reserve(*v, n + more, cap, sz, 64);
	if (!nv)
		return -1;
	*v = nv;
	return 0;
}

static int ext_push(struct ext_part *xp, uint64_t ticks, uint64_t addr)
{
	struct ta_part_open *f;

	if (xp->depth == xp->cap) {
		size_t cap = xp->cap;
		/* As part_grow: past the walk's limit the chunk is walked. */
		struct ta_part_open *st = ta_vec_reserve_max(xp->stack, (size_t)xp->cap + 1, &cap,
							     sizeof(*st), 64, FRAMES_MAX);

		if (!st)
			return -1;
		xp->stack = st;
		xp->cap = (uint32_t)cap;
	}
	f = &xp->stack[xp->depth++];
	f->addr = addr;
	f->enter = ticks;
	f->child = 0;
	f->user = 0;
	return 0;
}

static int ext_pops(struct ext_part *xp, uint64_t n, uint64_t ticks, unsigned flags)
{
	while (n-- && xp->depth) {
		struct ta_part_open *f = &xp->stack[--xp->depth];
		uint64_t dur;

		if (xp->depth < xp->nph) {
			if (ta_part_edge_add(&xp->edges, &xp->nedges, &xp->edges_cap, ticks,
					     f->child, flags) < 0)
				return -1;
			xp->nph = xp->depth;
			continue;
		}
		dur = ticks > f->enter ? ticks - f->enter : 0;
		if (xp->depth)
			xp->stack[xp->depth - 1].child += dur;
	}
	return 0;
}

static int ext_note(struct ext_part *xp, uint64_t ticks, uint64_t kind, uint64_t addr,
		    const uint64_t *vals, uint32_t n)
{
	struct ext_ev *e;

	if (ext_room((void **)&xp->evs, xp->nevs, &xp->evs_cap, sizeof(*xp->evs), 1) < 0 ||
	    ext_room((void **)&xp->vals, xp->nvals, &xp->vals_cap, sizeof(*xp->vals), n) < 0)
		return -1;
	e = &xp->evs[xp->nevs++];
	e->ticks = ticks;
	e->kind = kind;
	e->addr = addr;
	e->n = n;
	e->depth = xp->depth;
	e->at = xp->nvals;
	if (n)
		memcpy(xp->vals + xp->nvals, vals, n * sizeof(*vals));
	xp->nvals += n;
	return 0;
}

static void ext_build(void *part, const uint8_t *payload, size_t len)
{
	struct ext_part *xp = part;
	struct ta_decoder *d = &xp->dec;
	int rc;

	xp->ok = 0;
	xp->depth = xp->nph = 0;
	xp->nedges = xp->nevs = xp->nvals = 0;
	xp->entered = 0;
	xp->events = xp->unmatched = xp->lost = xp->last_ticks = 0;
	xp->have_ticks = 0;
	if (ta_decoder_begin(d, payload, len) < 0 || d->stack.overflow)
		return;
	for (uint32_t i = 0; i < d->snapshot_depth; i++)
		if (ext_push(xp, 0, d->snapshot[i]) < 0)
			return;
	xp->nph = xp->depth;
	do {
		struct ta_event evs[256];
		size_t n = ta_decoder_batch(d, evs, 256, &rc);

		xp->events += n;
		for (size_t i = 0; i < n; i++) {
			const struct ta_event *ev = &evs[i];

			switch (ev->kind) {
			case TA_EV_ENTER:
				if (!xp->entered) {
					xp->entered = 1;
					if (ext_note(xp, ev->ticks, EXT_ENTER, ev->addr, NULL, 0) <
					    0)
						return;
				}
				if (ext_push(xp, ev->ticks, ev->addr) < 0)
					return;
				break;
			case TA_EV_EXIT:
				if (!ev->popped)
					xp->unmatched++;
				else if (ext_pops(xp, ev->popped, ev->ticks, 0) < 0)
					return;
				break;
			default:
				xp->events--;
				if (ev->popped &&
				    ext_pops(xp, ev->popped, ev->ticks, TA_VISIT_UNWOUND) < 0)
					return;
				if (ev->ext == TA_EXT_LOST)
					xp->lost += ev->value;
				else if (ev->ext == TA_EXT_WAIT)
					return; /* a frame the walk visits: walked */
				/* The batch's last: ext_values are its values. */
				else if (ext_note(xp, ev->ticks, ev->ext, 0, d->ext_values,
						  (uint32_t)ev->value) < 0)
					return;
				break;
			}
		}
		if (n) {
			xp->last_ticks = evs[n - 1].ticks;
			xp->have_ticks = 1;
		}
	} while (rc == 0);
	xp->ok = rc > 0;
}

static int ext_apply(void *ctx, struct ta_session *s, const struct ta_chunk *c,
		     struct ta_process *p, void *part)
{
	static const uintptr_t none[1] = {0};
	struct ext_part *xp = part;
	struct ta_part_walk w;
	struct ta_sess_thread *t;
	int nomem;

	if (!xp->ok || s->v.exit || s->v.lost)
		return 0;
	t = ta_session_part_thread(s, c, p, &xp->dec, &nomem);
	if (!t)
		return nomem ? -TA_E_NOMEM : 0;
	/* The walk gives the ext values as is (ext_values holds at most
	 * TA_EXT_MAX_VALUES). */
	for (size_t i = 0; i < xp->nevs; i++) {
		const struct ext_ev *e = &xp->evs[i];

		if (e->kind == EXT_ENTER) {
			if (s->v.enter)
				(void)s->v.enter(ctx, t, e->ticks, e->depth, e->addr, 0);
		} else if (s->v.ext) {
			s->v.ext(ctx, t, e->ticks, e->kind, xp->vals + e->at, e->n);
		}
	}
	memset(&w, 0, sizeof(w));
	w.dec = &xp->dec;
	w.edges = xp->edges;
	w.nedges = xp->nedges;
	w.stack = xp->stack;
	w.nph = xp->nph;
	w.depth = xp->depth;
	w.events = xp->events;
	w.unmatched = xp->unmatched;
	w.lost = xp->lost;
	w.last_ticks = xp->last_ticks;
	w.have_ticks = xp->have_ticks;
	return ta_session_part_take(s, t, p, &w, none) < 0 ? -TA_E_NOMEM : 1;
}

const struct ta_chunk_ops ta_session_ext_chunks = {
    .make = ext_make,
    .drop = ext_drop,
    .build = ext_build,
    .apply = ext_apply,
};
