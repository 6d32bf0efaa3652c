/* SPDX-License-Identifier: MIT */
/*
 * session_sums.c - an EVENTS chunk summed alone, as the profile visitor
 * would sum it, by a worker of the parallel reader (session_par.c, -j):
 * the calls that begin and end in the chunk per function, and the exits of
 * the frames open at its start kept in order, for the merge
 * (ta_sess_part_apply, in session_walk.c beside the walk it stands in for)
 * to end on the real frames.
 */
#include "grow.h"
#include "session_int.h"

#include <stdlib.h>
#include <string.h>

#define TA_INLINE  inline __attribute__((always_inline))
#define FRAMES_MAX TA_SESSION_FRAMES_MAX

/* ---- per-chunk profiles, for the parallel reader ------------------------------------ */

/*
 * A worker sums one EVENTS chunk as the profile would, from the chunk's
 * snapshot as the stack, with no state but its own: the calls that begin
 * and end in the chunk are summed per function; the exits of frames that
 * were open at its start (the snapshot's) are kept in order, with the time
 * their callees took in the chunk, for the merge to end them on the real
 * frames, whose enter times only it knows; the frames still open at the
 * end are pushed by the merge.  A function's outermost activation is found
 * as in the walk: the snapshot says how many of its frames are open at the
 * start.  The merge takes the result only where the walk would have done
 * the same (ta_sess_part_apply's checks); anything else is walked again.
 */
int ta_part_edge_add(struct ta_part_edge **edges, size_t *n, size_t *cap, uint64_t ticks,
		     uint64_t child, unsigned flags)
{
	if (*n == *cap) {
		struct ta_part_edge *e = ta_vec_reserve(*edges, *n + 1, cap, sizeof(*e), 64);

		if (!e)
			return -1;
		*edges = e;
	}
	(*edges)[*n].ticks = ticks;
	(*edges)[*n].child = child;
	(*edges)[*n].flags = flags;
	(*n)++;
	return 0;
}

void ta_sess_part_init(struct ta_chunk_part *cp)
{
	memset(cp, 0, sizeof(*cp));
	ta_decoder_init(&cp->dec);
}

static void part_reset(struct ta_chunk_part *cp)
{
	for (size_t i = 0; i < cp->nfns; i++)
		ta_hist_free(&cp->fns[i].hist);
	cp->nfns = 0;
	ta_htab_clear(&cp->by_addr);
	/* Stale slots must not look like the frame before (the fast push
	 * below reuses a slot's function). */
	for (uint32_t i = 0; i < cp->used && i < cp->cap; i++)
		cp->stack[i].fn = 0;
	cp->used = 0;
	cp->depth = cp->nph = 0;
	cp->nedges = 0;
	cp->events = cp->unmatched = cp->lost = cp->last_ticks = 0;
	cp->shorts = 0;
	cp->have_ticks = 0;
	cp->ok = 0;
}

void ta_sess_part_free(struct ta_chunk_part *cp)
{
	part_reset(cp);
	free(cp->fns);
	ta_htab_free(&cp->by_addr);
	free(cp->stack);
	free(cp->edges);
	ta_decoder_free(&cp->dec);
	memset(cp, 0, sizeof(*cp));
}

static uint64_t part_hash(uint64_t addr)
{
	return (addr * 0x9e3779b97f4a7c15ull) >> 20;
}

static uint64_t part_fn_hash(const void *ctx, size_t i)
{
	return part_hash(((const struct ta_chunk_part *)ctx)->fns[i].addr);
}

static inline int part_fn_is(const void *ctx, size_t i, const void *key)
{
	return ((const struct ta_chunk_part *)ctx)->fns[i].addr == *(const uint64_t *)key;
}

/* The chunk's entry of addr (index + 1), a new one if need be; 0 without
 * memory. */
static __attribute__((noinline)) uint32_t part_fn(struct ta_chunk_part *cp, uint64_t addr)
{
	struct ta_part_sum *f;
	size_t k;

	if (ta_htab_reserve(&cp->by_addr, cp->nfns, 256, part_fn_hash, cp) < 0)
		return 0;
	k = ta_htab_find(&cp->by_addr, part_hash(addr), part_fn_is, cp, &addr);
	if (ta_htab_at(&cp->by_addr, k))
		return ta_htab_at(&cp->by_addr, k);
	if (cp->nfns == cp->fns_cap) {
		struct ta_part_sum *v =
		    ta_vec_reserve(cp->fns, cp->nfns + 1, &cp->fns_cap, sizeof(*v), 64);

		if (!v)
			return 0;
		cp->fns = v;
	}
	f = &cp->fns[cp->nfns];
	memset(f, 0, sizeof(*f));
	f->addr = addr;
	f->min = UINT64_MAX;
	ta_htab_put(&cp->by_addr, k, cp->nfns);
	return (uint32_t)++cp->nfns;
}

static __attribute__((noinline)) int part_grow(struct ta_chunk_part *cp)
{
	size_t cap = cp->cap;
	/* The walk would count frames past FRAMES_MAX as overflow: the merge
	 * walks such a chunk again. */
	struct ta_part_frame *st =
	    ta_vec_reserve_max(cp->stack, (size_t)cp->cap + 1, &cap, sizeof(*st), 64, FRAMES_MAX);

	if (!st)
		return -1;
	memset(st + cp->cap, 0, (cap - cp->cap) * sizeof(*st));
	cp->stack = st;
	cp->cap = (uint32_t)cap;
	return 0;
}

/* Ends the top frame at ticks, as frame_pop_w would. */
static TA_INLINE int part_pop(struct ta_chunk_part *cp, uint64_t ticks, unsigned flags, int hist)
{
	struct ta_part_frame *f = &cp->stack[--cp->depth];
	struct ta_part_sum *fn = &cp->fns[f->fn - 1];
	uint64_t dur, self;

	if (cp->depth < cp->nph) {
		/* Opened before the chunk: the merge ends it. */
		if (ta_part_edge_add(&cp->edges, &cp->nedges, &cp->edges_cap, ticks, f->child,
				     flags) < 0)
			return -1;
		cp->nph = cp->depth;
		fn->active--;
		return 0;
	}
	dur = ticks > f->enter ? ticks - f->enter : 0;
	self = dur > f->child ? dur - f->child : 0;
	if (cp->depth)
		cp->stack[cp->depth - 1].child += dur;
	fn->calls++;
	fn->sum += dur;
	fn->self += self;
	if (dur < fn->min)
		fn->min = dur;
	if (dur > fn->max)
		fn->max = dur;
	if (--fn->active == 0)
		fn->total += dur;
	if (flags & TA_VISIT_UNWOUND)
		fn->unwound++;
	if (hist)
		ta_hist_add(&fn->hist, dur);
	return 0;
}

static TA_INLINE int part_pops(struct ta_chunk_part *cp, uint64_t n, uint64_t ticks, unsigned flags,
			       int hist)
{
	while (n-- && cp->depth)
		if (part_pop(cp, ticks, flags, hist) < 0)
			return -1;
	return 0;
}

static TA_INLINE int part_events(struct ta_chunk_part *cp, const struct ta_event *evs, size_t n,
				 int hist)
{
	for (size_t i = 0; i < n; i++) {
		const struct ta_event *ev = &evs[i];
		struct ta_part_frame *f;

		switch (ev->kind) {
		case TA_EV_ENTER:
			if (cp->depth == cp->cap && part_grow(cp) < 0)
				return -1;
			f = &cp->stack[cp->depth];
			if (f->addr != ev->addr || !f->fn) {
				f->fn = part_fn(cp, ev->addr);
				if (!f->fn)
					return -1;
				f->addr = ev->addr;
			}
			cp->fns[f->fn - 1].active++;
			f->enter = ev->ticks;
			f->child = 0;
			cp->depth++;
			if (cp->depth > cp->used)
				cp->used = cp->depth;
			break;
		case TA_EV_EXIT:
			if (__builtin_expect(ev->popped == 1 && cp->depth, 1)) {
				if (part_pop(cp, ev->ticks, 0, hist) < 0)
					return -1;
			} else if (ev->popped) {
				if (part_pops(cp, ev->popped, ev->ticks, 0, hist) < 0)
					return -1;
			} else {
				cp->unmatched++;
				/* As the walk's: a partial call when nothing
				 * is open (the stack holds the snapshot's
				 * frames too). */
				if (!cp->depth) {
					uint32_t fn = part_fn(cp, ev->addr);

					if (!fn)
						return -1;
					cp->fns[fn - 1].calls++;
					cp->fns[fn - 1].partial++;
				}
			}
			break;
		default:
			cp->events--; /* not a function event */
			if (ev->popped &&
			    part_pops(cp, ev->popped, ev->ticks, TA_VISIT_UNWOUND, hist) < 0)
				return -1;
			if (ev->ext == TA_EXT_LOST) {
				cp->lost += ev->value;
			} else if (ev->ext == TA_EXT_WAIT) {
				return -1; /* a frame of the walk's: walked */
			} else if (ev->ext == TA_EXT_SHORT) {
				/* Always the batch's last: the decoder's
				 * values are its own. */
				for (uint64_t k = 0; k + 1 < ev->value; k += 2) {
					uint32_t fn = part_fn(cp, cp->dec.ext_values[k]);

					if (!fn)
						return -1;
					cp->fns[fn - 1].calls += cp->dec.ext_values[k + 1];
					cp->fns[fn - 1].shorts += cp->dec.ext_values[k + 1];
					cp->shorts += cp->dec.ext_values[k + 1];
				}
			}
			break;
		}
	}
	return 0;
}

void ta_sess_part_build(struct ta_chunk_part *cp, const uint8_t *payload, size_t len, int hist)
{
	struct ta_decoder *d = &cp->dec;
	int rc;

	part_reset(cp);
	cp->hist = hist;
	if (ta_decoder_begin(d, payload, len) < 0 || d->stack.overflow)
		return;
	for (uint32_t i = 0; i < d->snapshot_depth; i++) {
		struct ta_part_frame *f;

		if (cp->depth == cp->cap && part_grow(cp) < 0)
			return;
		f = &cp->stack[cp->depth++];
		f->addr = d->snapshot[i];
		f->fn = part_fn(cp, f->addr);
		if (!f->fn)
			return;
		cp->fns[f->fn - 1].active0++;
		cp->fns[f->fn - 1].active++;
		f->enter = f->child = 0;
	}
	cp->nph = cp->used = cp->depth;
	do {
		struct ta_event evs[256];
		size_t n = ta_decoder_batch(d, evs, 256, &rc);

		cp->events += n;
		if (hist ? part_events(cp, evs, n, 1) < 0 : part_events(cp, evs, n, 0) < 0)
			return;
		if (n) {
			cp->last_ticks = evs[n - 1].ticks;
			cp->have_ticks = 1;
		}
	} while (rc == 0);
	/* A malformed chunk is walked again, which reports it. */
	cp->ok = rc > 0;
}
