/* SPDX-License-Identifier: MIT */
/*
 * session_walk.c - the call-stack walk: each EVENTS chunk decoded and
 * replayed on its thread's stack of frames (pushes, pops, frames left by a
 * longjmp or an exception, the stack brought in line with the chunk's
 * snapshot after a loss), the closing of what is still open, addresses
 * tagged by the modules unloaded before them, and the profile visitor
 * (report's) with its duration histograms: the walk inlines the profile's
 * callbacks, so they stay in this file.  Here too the merge that takes a
 * -j worker's sums of a chunk (session_sums.c) or its EXT events
 * (session_ext.c) in place of walking it, on the same frames.
 */
#include "grow.h"
#include "session_int.h"

#include <stdlib.h>
#include <string.h>

#define FRAMES_MAX TA_SESSION_FRAMES_MAX

/* ---- the call-stack walk ----------------------------------------------------------- */

/* The profile's callbacks, which the walk calls directly (below). */
#define TA_INLINE inline __attribute__((always_inline))
static TA_INLINE uintptr_t profile_enter(void *ctx, struct ta_sess_thread *t, uint64_t ticks,
					 uint32_t depth, uint64_t addr, unsigned flags);
static TA_INLINE void profile_exit(void *ctx, struct ta_sess_thread *t,
				   const struct ta_exit_info *x);
static TA_INLINE void profile_exit_hist(void *ctx, struct ta_sess_thread *t,
					const struct ta_exit_info *x);

/* The stack is full: grow it, or count the frame as overflow (-1). */
static __attribute__((noinline)) int stack_grow(struct ta_sess_thread *t)
{
	size_t cap = t->cap;
	struct ta_frame *st;

	if (t->overflow || t->depth == FRAMES_MAX)
		return -1;
	st = ta_vec_reserve(t->stack, (size_t)t->cap + 1, &cap, sizeof(*st), 64);
	if (!st)
		return -TA_E_NOMEM;
	/* New slots hold no profile entry that frame_push could reuse
	 * (user 0). */
	memset(st + t->cap, 0, (cap - t->cap) * sizeof(*st));
	t->stack = st;
	t->cap = (uint32_t)cap;
	return 0;
}

/*
 * How the walk calls the visitor: the profile (report's visitor) by name,
 * so that its callbacks are inlined into the event loop, or whatever the
 * session's visitor is.  The event loop is compiled once for each, and
 * picks one per batch.
 */
enum walk { WALK_ANY, WALK_PROFILE, WALK_PROFILE_HIST };

/* Inlined into the event loop, as is frame_pop: two calls per event saved. */
static TA_INLINE int frame_push_w(struct ta_session *s, struct ta_sess_thread *t, uint64_t ticks,
				  uint64_t addr, unsigned flags, enum walk w)
{
	struct ta_frame *f;

	/* depth < cap implies depth < FRAMES_MAX (the cap stops there). */
	if (__builtin_expect(t->overflow || t->depth == t->cap, 0)) {
		int rc = stack_grow(t);

		if (rc < 0) {
			t->overflow++;
			return rc == -TA_E_NOMEM ? rc : 0;
		}
	}
	f = &t->stack[t->depth];
	/* The profile is the usual visitor: called by name it is inlined
	 * here, which saves an indirect call per event. */
	if (w != WALK_ANY || s->v.enter == profile_enter) {
		/* The slot still holds the frame that was last at this depth
		 * of this thread, and its profile entry: a loop or a
		 * recursion calls the same function there again and again,
		 * and then no hash lookup is needed. */
		if (f->addr == addr && f->user)
			((struct ta_profile *)s->v.ctx)->f[f->user - 1].active++;
		else
			f->user = profile_enter(s->v.ctx, t, ticks, t->depth, addr, flags);
	} else {
		f->user = s->v.enter ? s->v.enter(s->v.ctx, t, ticks, t->depth, addr, flags) : 0;
	}
	f->addr = addr;
	f->enter = ticks;
	f->child = 0;
	f->partial = 0;
	t->depth++;
	return 0;
}

static int frame_push(struct ta_session *s, struct ta_sess_thread *t, uint64_t ticks, uint64_t addr,
		      unsigned flags)
{
	return frame_push_w(s, t, ticks, addr, flags, WALK_ANY);
}

/* Removes the top frame at time ticks and visits its exit; the caller
 * knows there is one and that it is not inherited. */
static TA_INLINE void frame_pop_w(struct ta_session *s, struct ta_sess_thread *t, uint64_t ticks,
				  unsigned flags, enum walk w)
{
	struct ta_frame *f = &t->stack[--t->depth];
	struct ta_exit_info x;

	x.addr = f->addr;
	x.enter = f->enter;
	x.exit = ticks;
	x.duration = ta_sess_span(s->walk_proc, f->enter, ticks);
	x.self = x.duration > f->child ? x.duration - f->child : 0;
	x.depth = t->depth;
	x.flags = flags | (f->partial ? TA_VISIT_PARTIAL : 0);
	x.user = f->user;
	if (t->depth)
		t->stack[t->depth - 1].child += x.duration;
	if (w == WALK_PROFILE_HIST || (w == WALK_ANY && s->v.exit == profile_exit_hist))
		profile_exit_hist(s->v.ctx, t, &x);
	else if (w == WALK_PROFILE || s->v.exit == profile_exit)
		profile_exit(s->v.ctx, t, &x);
	else if (s->v.exit)
		s->v.exit(s->v.ctx, t, &x);
}

/* Removes n frames from the top at time ticks, visiting each exit. */
static void frames_pop(struct ta_session *s, struct ta_sess_thread *t, uint64_t n, uint64_t ticks,
		       unsigned flags)
{
	uint64_t k = n < t->overflow ? n : t->overflow;

	t->overflow -= k;
	n -= k;
	while (n-- && t->depth) {
		if (__builtin_expect(t->depth <= t->inherited, 0)) {
			/* The parent's frame: its call is the parent's. */
			t->inherited = --t->depth;
			continue;
		}
		frame_pop_w(s, t, ticks, flags, WALK_ANY);
	}
}

/*
 * Brings the thread's stack in line with the snapshot that starts the
 * chunk.  They agree unless chunks of this thread were lost: then frames
 * we have that the snapshot lacks ended somewhere in the gap (closed at the
 * last time we know), and frames it has that we lack began there (opened at
 * the chunk's first time).
 */
static void stack_sync(struct ta_session *s, struct ta_sess_thread *t, const struct ta_decoder *d,
		       const struct ta_process *p)
{
	uint32_t n = d->snapshot_depth, k = 0, lim = t->depth < n ? t->depth : n;
	uint64_t over = d->stack.overflow;
	uint64_t close_at = t->have_ticks ? t->last_ticks : d->first_ticks;

	while (k < lim && ta_process_addr(p, t->stack[k].addr) == d->snapshot[k])
		k++;
	/* depth + overflow == n + over, without the sums (a dump can make
	 * them wrap): k == n means depth >= n. */
	if (k == n && over >= t->overflow && over - t->overflow == t->depth - n)
		return;
	if (t->forked && !t->have_chunks && !t->depth && !t->overflow && d->chunk_seq == 0 &&
	    !over) {
		/* A forked child's first chunk starts inside the frames its
		 * parent entered: they open the stack, unvisited. */
		for (uint32_t i = 0; i < n; i++) {
			if (t->depth == t->cap && stack_grow(t) < 0)
				break;
			t->stack[t->depth].addr =
			    ta_process_addr_at(p, d->snapshot[i], d->first_ticks);
			t->stack[t->depth].enter = d->first_ticks;
			t->stack[t->depth].child = 0;
			t->stack[t->depth].user = 0;
			t->stack[t->depth].partial = 0;
			t->depth++;
		}
		t->inherited = t->depth;
		return;
	}
	/* The first chunk of a new thread may start inside functions (a
	 * flight recorder's cut): that is not a loss. */
	if (t->have_chunks || t->depth || t->overflow || d->chunk_seq != 0)
		t->resyncs++;
	/* The frames without data first (they are on top), then ours down
	 * to k; two calls, as their sum could wrap. */
	frames_pop(s, t, t->overflow, close_at, TA_VISIT_RESYNC);
	frames_pop(s, t, t->depth - k, close_at, TA_VISIT_RESYNC);
	for (uint32_t i = k; i < n; i++) {
		uint32_t depth = t->depth;

		(void)frame_push(s, t, d->first_ticks,
				 ta_process_addr_at(p, d->snapshot[i], d->first_ticks),
				 TA_VISIT_RESYNC);
		/* Entered before the chunk, when the dump does not say (a
		 * flight recorder's cut, lost chunks): a partial call. */
		if (t->depth > depth)
			t->stack[depth].partial = 1;
	}
	/* Frames the writer could not hold have no address: count them. */
	t->overflow += over;
}

static void tag_batch(const struct ta_process *p, struct ta_event *ev, size_t n);

/* A TA_EXT_SHORT's pairs (function, calls left out) to the visitor. */
static void walk_shorts(struct ta_session *s, struct ta_sess_thread *t, uint64_t ticks,
			const uint64_t *v, uint32_t n)
{
	for (uint32_t i = 0; i + 1 < n; i += 2) {
		s->short_calls += v[i + 1];
		if (s->v.shorts)
			s->v.shorts(s->v.ctx, t,
				    s->walk_proc ? ta_process_addr_at(s->walk_proc, v[i], ticks)
						 : v[i],
				    v[i + 1]);
	}
}
/* A TA_EXT_WAIT (start, length) at ticks: the agent's wait, a frame of its
 * own (TA_WAIT_KEY) on top of t's, from the event's time (its start, but
 * where a dump's ticks went backwards) for its length.  0, or
 * -TA_E_NOMEM. */
static int walk_wait(struct ta_session *s, struct ta_sess_thread *t, uint64_t ticks,
		     const uint64_t *v, uint32_t n)
{
	uint64_t end;

	if (n < 2)
		return 0; /* not a wait this reader knows */
	end = ticks + v[1] < ticks ? UINT64_MAX : ticks + v[1];
	if (frame_push(s, t, ticks, TA_WAIT_KEY, 0) < 0)
		return -TA_E_NOMEM;
	frames_pop(s, t, 1, end, 0);
	return 0;
}

/* Replays a batch of decoded events on t's stack: 0, or -TA_E_NOMEM. */
static TA_INLINE int walk(struct ta_session *s, struct ta_sess_thread *t,
			  const struct ta_event *evs, size_t n, enum walk w)
{
	for (size_t i = 0; i < n; i++) {
		const struct ta_event *ev = &evs[i];

		switch (ev->kind) {
		case TA_EV_ENTER:
			if (frame_push_w(s, t, ev->ticks, ev->addr, 0, w) < 0)
				return -TA_E_NOMEM;
			break;
		case TA_EV_EXIT:
			/* The usual exit, of the top frame, inline. */
			if (__builtin_expect(
				ev->popped == 1 && !t->overflow && t->depth > t->inherited, 1))
				frame_pop_w(s, t, ev->ticks, 0, w);
			else if (ev->popped)
				frames_pop(s, t, ev->popped, ev->ticks, 0);
			else {
				t->unmatched++;
				/* With nothing open on the thread: a call
				 * entered before its recording began (an
				 * attach window), partial.  Above a frame it
				 * is a hook's stray exit (one a throw
				 * through patched code makes, say): no
				 * call. */
				if (!t->depth && !t->overflow && s->v.partial)
					s->v.partial(s->v.ctx, t, ev->addr);
			}
			break;
		default:
			t->events--; /* not a function event */
			/* A longjmp or an exception: the frames it left end
			 * here, not at some later exit. */
			if (ev->popped)
				frames_pop(s, t, ev->popped, ev->ticks, TA_VISIT_UNWOUND);
			if (ev->ext == TA_EXT_LOST) {
				t->lost += ev->value;
				if (s->v.lost)
					s->v.lost(s->v.ctx, t, ev->ticks, ev->value);
			} else if (ev->ext == TA_EXT_SHORT) {
				walk_shorts(s, t, ev->ticks, s->dec.ext_values,
					    (uint32_t)ev->value);
			} else if (ev->ext == TA_EXT_WAIT) {
				if (walk_wait(s, t, ev->ticks, s->dec.ext_values,
					      (uint32_t)ev->value) < 0)
					return -TA_E_NOMEM;
			} else if (s->v.ext) {
				/* Always the batch's last: the decoder's
				 * ext_values are its values. */
				s->v.ext(s->v.ctx, t, ev->ticks, ev->ext, s->dec.ext_values,
					 (uint32_t)ev->value);
			}
			break;
		}
	}
	return 0;
}

/*
 * walk() for the profile, the report's visitor: the usual events (an enter
 * of the function last seen at that depth, an exit of the top frame) with
 * the thread's stack in registers, which the profile's stores would
 * otherwise force to be reloaded at every event; walk() for the others.
 */
static TA_INLINE int walk_profile(struct ta_session *s, struct ta_sess_thread *t,
				  const struct ta_event *evs, size_t n, enum walk w)
{
	struct ta_profile *p = s->v.ctx;
	size_t i = 0;

	while (i < n) {
		struct ta_frame *stk = t->stack;
		uint32_t depth = t->depth, cap = t->cap, inherited = t->inherited;

		/* Frames beyond the stack (overflow) leave it to walk(). */
		for (; i < n && !t->overflow; i++) {
			const struct ta_event *ev = &evs[i];
			struct ta_frame *f;
			struct ta_exit_info x;

			if (ev->kind == TA_EV_ENTER) {
				/* The stack is full, or was never allocated (stk NULL):
				 * walk() grows it.  Tested before the slot's address is
				 * formed, which NULL + 0 would make undefined. */
				if (depth == cap)
					break;
				f = &stk[depth];
				/* As in frame_push_w: the slot's last frame's entry. */
				if (f->addr != ev->addr || !f->user)
					break;
				p->f[f->user - 1].active++;
				f->enter = ev->ticks;
				f->child = 0;
				f->partial = 0;
				depth++;
				continue;
			}
			if (ev->kind != TA_EV_EXIT || ev->popped != 1 || depth <= inherited)
				break;
			/* As in frame_pop_w. */
			f = &stk[--depth];
			x.addr = f->addr;
			x.enter = f->enter;
			x.exit = ev->ticks;
			x.duration = ta_sess_span(s->walk_proc, f->enter, ev->ticks);
			x.self = x.duration > f->child ? x.duration - f->child : 0;
			x.depth = depth;
			x.flags = f->partial ? TA_VISIT_PARTIAL : 0;
			x.user = f->user;
			if (depth)
				stk[depth - 1].child += x.duration;
			if (w == WALK_PROFILE_HIST)
				profile_exit_hist(p, t, &x);
			else
				profile_exit(p, t, &x);
		}
		t->depth = depth;
		if (i < n) {
			int rc = walk(s, t, &evs[i], 1, w);

			if (rc < 0)
				return rc;
			i++;
		}
	}
	return 0;
}

int ta_sess_events_chunk(struct ta_session *s, const struct ta_chunk *c, struct ta_process *p)
{
	struct ta_decoder *d = &s->dec;
	struct ta_sess_thread *t;
	int rc, rc2;

	if (s->part) {
		/* A worker summed it already: taken unless it must be walked. */
		rc = ta_sess_part_apply(s, c, p, s->part);
		s->parts_taken += rc > 0;
		if (rc != 0)
			return rc < 0 ? rc : 0;
	} else if (s->vpart) {
		rc = s->v.chunks->apply(s->v.ctx, s, c, p, s->vpart);
		s->parts_taken += rc > 0;
		if (rc != 0)
			return rc < 0 ? rc : 0;
	}
	rc = ta_decoder_begin(d, c->payload, c->len);
	s->events_chunks++;
	if (rc < 0) {
		if (rc == -TA_E_NOMEM)
			return rc;
		ta_session_error(s, rc, c, d->r.err ? 0 : d->tid);
		return 0;
	}
	t = ta_sess_thread_get(s, p->pid, d->tid);
	if (!t)
		return -TA_E_NOMEM;
	if (t->have_chunks && d->chunk_seq != t->next_seq)
		t->chunks_missing += d->chunk_seq > t->next_seq ? d->chunk_seq - t->next_seq : 1;
	t->next_seq = d->chunk_seq + 1;
	s->walk_proc = p;
	stack_sync(s, t, d, p);
	t->have_chunks = 1;
	ta_sess_note_ticks(p, d->first_ticks);

	do {
		struct ta_event evs[256];
		size_t n = ta_decoder_batch(d, evs, 256, &rc);

		if (__builtin_expect(p->nunloaded != 0, 0))
			tag_batch(p, evs, n);
		if (s->v.enter == profile_enter && s->v.exit == profile_exit_hist)
			rc2 = walk_profile(s, t, evs, n, WALK_PROFILE_HIST);
		else if (s->v.enter == profile_enter && s->v.exit == profile_exit)
			rc2 = walk_profile(s, t, evs, n, WALK_PROFILE);
		else
			rc2 = walk(s, t, evs, n, WALK_ANY);
		if (rc2 < 0)
			return rc2;
		if (n) {
			t->events += n;
			t->last_ticks = evs[n - 1].ticks;
			t->have_ticks = 1;
		}
	} while (rc == 0);
	if (rc > 0)
		rc = 0;
	if (t->have_ticks)
		ta_sess_note_ticks(p, t->last_ticks);
	if (rc == -TA_E_NOMEM)
		return rc;
	if (rc < 0)
		ta_session_error(s, rc, c, t->tid); /* the next snapshot repairs the stack */
	return 0;
}

/* Closes what is still open on t at its last known time. */
void ta_sess_thread_close(struct ta_session *s, struct ta_sess_thread *t)
{
	uint64_t end = t->last_ticks;
	struct ta_process *p = ta_session_process(s, t->pid);

	s->walk_proc = p;
	if (t->has_end && (!t->have_ticks || t->end_ticks > end))
		end = t->end_ticks;
	if (p && p->crash) {
		/* The crashing thread's frames end at the crash, not when the
		 * handler was done writing; every thread's open frames are
		 * kept: where it was. */
		if (p->crash->tid == t->tid && p->crash->ticks >= t->last_ticks &&
		    p->crash->ticks < end)
			end = p->crash->ticks;
		free(t->last_stack);
		t->last_stack = t->depth ? malloc(t->depth * sizeof(uint64_t)) : NULL;
		t->last_depth = t->last_stack ? t->depth : 0;
		for (uint32_t i = 0; i < t->last_depth; i++)
			t->last_stack[i] = t->stack[i].addr;
	}
	/* In two calls: depth + overflow could wrap (a dump may claim any
	 * overflow). */
	frames_pop(s, t, t->overflow, end, TA_VISIT_OPEN);
	frames_pop(s, t, t->depth, end, TA_VISIT_OPEN);
}

/* ---- addresses of unloaded modules' code ---------------------------------------- */

uint64_t ta_process_addr_at(const struct ta_process *p, uint64_t addr, uint64_t ticks)
{
	uint64_t gen = 0;

	if (!p->nunloaded || addr > TA_ADDR_MASK)
		return addr;
	for (size_t i = 0; i < p->nunloaded; i++)
		gen += addr >= p->unloaded[i].start && addr < p->unloaded[i].end &&
		       p->unloaded[i].ticks <= ticks;
	if (gen > TA_ADDR_TAG_MAX)
		gen = TA_ADDR_TAG_MAX;
	return addr | gen << TA_ADDR_TAG_SHIFT;
}

uint64_t ta_process_addr(const struct ta_process *p, uint64_t key)
{
	return p->nunloaded ? key & TA_ADDR_MASK : key;
}

/* Out of line: only dumps where a module was unloaded come here. */
static __attribute__((noinline)) void tag_batch(const struct ta_process *p, struct ta_event *ev,
						size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (ev[i].kind == TA_EV_ENTER)
			ev[i].addr = ta_process_addr_at(p, ev[i].addr, ev[i].ticks);
}

/* ---- duration histograms ------------------------------------------------------------ */

int ta_hist_reserve(struct ta_hist *h, uint32_t b)
{
	uint32_t lo = b / TA_HIST_BLOCK * TA_HIST_BLOCK, hi = lo + TA_HIST_BLOCK;
	uint64_t *c;

	if (h->count) {
		if (h->lo < lo)
			lo = h->lo;
		if (h->hi > hi)
			hi = h->hi;
	}
	c = calloc(hi - lo, sizeof(*c));
	if (!c)
		return -TA_E_NOMEM;
	if (h->count)
		memcpy(c + (h->lo - lo), h->count, (h->hi - h->lo) * sizeof(*c));
	free(h->count);
	h->count = c;
	h->lo = lo;
	h->hi = hi;
	return 0;
}

void ta_hist_free(struct ta_hist *h)
{
	free(h->count);
	memset(h, 0, sizeof(*h));
}

/* ---- the profile visitor ------------------------------------------------------------- */

/* A frame's user value is its entry's index + 1, or NO_STAT when there is
 * none; frame_push relies on 0 meaning none (fresh and inherited frames). */
#define NO_STAT 0

static uint64_t fhash(uint32_t thread, uint64_t addr)
{
	return ((addr ^ ((uint64_t)thread << 47)) * 0x9e3779b97f4a7c15ull) >> 20;
}

static uint64_t fstat_hash(const void *ctx, size_t i)
{
	const struct ta_fstat *f = &((const struct ta_profile *)ctx)->f[i];

	return fhash(f->thread, f->addr);
}

struct fstat_key {
	uint32_t thread;
	uint64_t addr;
};

static inline int fstat_is(const void *ctx, size_t i, const void *key)
{
	const struct ta_fstat *f = &((const struct ta_profile *)ctx)->f[i];
	const struct fstat_key *k = key;

	return f->addr == k->addr && f->thread == k->thread;
}

/* A function not seen before on this thread: a new entry. */
static __attribute__((noinline)) uintptr_t profile_new(struct ta_profile *p,
						       struct ta_sess_thread *t, uint64_t addr)
{
	struct fstat_key key = {t->index, addr};
	struct ta_fstat *f;
	size_t k;

	if (ta_htab_reserve(&p->by_fn, p->n, 1024, fstat_hash, p) < 0)
		return NO_STAT;
	if (p->n == p->cap) {
		/* Entries are uint32_t indices, NO_STAT (UINT32_MAX) none: at most 2^31. */
		size_t cap = p->cap;
		struct ta_fstat *v =
		    ta_vec_reserve_max(p->f, p->n + 1, &cap, sizeof(*v), 256, (size_t)1 << 31);

		if (!v)
			return NO_STAT;
		p->f = v;
		p->cap = cap;
	}
	f = &p->f[p->n];
	memset(f, 0, sizeof(*f));
	f->thread = t->index;
	f->pid = t->pid;
	f->addr = addr;
	f->min = UINT64_MAX;
	f->active = 1;
	k = ta_htab_find(&p->by_fn, fhash(t->index, addr), fstat_is, p, &key);
	ta_htab_put(&p->by_fn, k, p->n);
	return ++p->n;
}

static TA_INLINE uintptr_t profile_enter(void *ctx, struct ta_sess_thread *t, uint64_t ticks,
					 uint32_t depth, uint64_t addr, unsigned flags)
{
	struct ta_profile *p = ctx;

	p->lookups++;
	if (__builtin_expect(p->by_fn.nslots != 0, 1)) {
		struct fstat_key key = {t->index, addr};
		uint32_t at = ta_htab_at(
		    &p->by_fn, ta_htab_find(&p->by_fn, fhash(t->index, addr), fstat_is, p, &key));

		if (at) {
			p->f[at - 1].active++;
			return at;
		}
	}
	return profile_new(p, t, addr);
}

static TA_INLINE void profile_exit(void *ctx, struct ta_sess_thread *t,
				   const struct ta_exit_info *x)
{
	struct ta_profile *p = ctx;
	struct ta_fstat *f;

	if (x->user == NO_STAT)
		return;
	f = &p->f[x->user - 1];
	f->calls++;
	f->self += x->self;
	/* Only the outermost activation adds to the total, so recursion
	 * is not counted twice. */
	if (--f->active == 0)
		f->total += x->duration;
	/* A call's known part is not its length: apart, in total and
	 * self only. */
	if (__builtin_expect(x->flags & TA_VISIT_INCOMPLETE, 0)) {
		if (x->flags & TA_VISIT_OPEN)
			f->open++;
		else
			f->partial++;
	} else {
		f->sum += x->duration;
		if (x->duration < f->min)
			f->min = x->duration;
		if (x->duration > f->max)
			f->max = x->duration;
	}
	if (x->flags & TA_VISIT_UNWOUND)
		f->unwound++;
}

static TA_INLINE void profile_exit_hist(void *ctx, struct ta_sess_thread *t,
					const struct ta_exit_info *x)
{
	struct ta_profile *p = ctx;

	profile_exit(ctx, t, x);
	if (x->user != NO_STAT && !(x->flags & TA_VISIT_INCOMPLETE))
		ta_hist_add(&p->f[x->user - 1].hist, x->duration);
}

static void profile_shorts(void *ctx, struct ta_sess_thread *t, uint64_t addr, uint64_t calls)
{
	struct ta_profile *p = ctx;
	uintptr_t u = profile_enter(p, t, 0, 0, addr, 0);

	if (u == NO_STAT)
		return;
	p->f[u - 1].active--;
	p->f[u - 1].calls += calls;
	p->f[u - 1].shorts += calls;
}

/* An exit without its entry: a call, partial, with no time. */
static void profile_partial(void *ctx, struct ta_sess_thread *t, uint64_t addr)
{
	struct ta_profile *p = ctx;
	uintptr_t u = profile_enter(p, t, 0, 0, addr, 0);

	if (u == NO_STAT)
		return;
	p->f[u - 1].active--;
	p->f[u - 1].calls++;
	p->f[u - 1].partial++;
}

void ta_profile_init(struct ta_profile *p)
{
	memset(p, 0, sizeof(*p));
}

void ta_profile_free(struct ta_profile *p)
{
	for (size_t i = 0; i < p->n; i++)
		ta_hist_free(&p->f[i].hist);
	free(p->f);
	ta_htab_free(&p->by_fn);
	ta_profile_init(p);
}

void ta_profile_visitor(struct ta_profile *p, struct ta_visitor *v)
{
	memset(v, 0, sizeof(*v));
	v->ctx = p;
	v->enter = profile_enter;
	v->exit = p->hist ? profile_exit_hist : profile_exit;
	v->shorts = profile_shorts;
	v->partial = profile_partial;
}

/* ---- a worker's sums taken in place of the walk (session_sums.c, session_ext.c) ---- */

int ta_sess_part_mode(const struct ta_session *s)
{
	if (s->v.enter != profile_enter || s->v.lost || s->v.ext)
		return 0;
	if (s->v.exit == profile_exit_hist)
		return 2;
	return s->v.exit == profile_exit ? 1 : 0;
}
/* The real profile entry of the chunk's function fn of thread t, made if
 * need be, its active count left to the caller: index + 1, or 0. */
static uint32_t part_real(struct ta_profile *p, struct ta_sess_thread *t, uint64_t addr)
{
	uintptr_t u = profile_enter(p, t, 0, 0, addr, 0);

	p->lookups--;
	if (u != NO_STAT)
		p->f[u - 1].active--;
	return (uint32_t)u;
}

/*
 * Takes a worker's sums for the EVENTS chunk c of process p in place of
 * walking it: 1 when taken, 0 when the chunk must be walked (nothing was
 * changed but the thread made), or -TA_E_NOMEM.
 */
int ta_sess_part_apply(struct ta_session *s, const struct ta_chunk *c, struct ta_process *p,
		       struct ta_chunk_part *cp)
{
	struct ta_profile *prof = s->v.ctx;
	struct ta_decoder *d = &cp->dec;
	struct ta_sess_thread *t;
	uint32_t *real;

	if (!cp->ok || ta_sess_part_mode(s) != 1 + cp->hist || p->nunloaded || p->npauses)
		return 0;
	t = ta_sess_thread_get(s, p->pid, d->tid);
	if (!t)
		return -TA_E_NOMEM;
	/* What stack_sync takes as is: the stack is the snapshot, every frame
	 * with its profile entry (so its function's active count holds it). */
	if (t->overflow || t->inherited || t->depth != d->snapshot_depth)
		return 0;
	for (uint32_t k = 0; k < t->depth; k++)
		if (t->stack[k].addr != d->snapshot[k] || t->stack[k].user == NO_STAT)
			return 0;
	real = cp->nfns ? malloc(cp->nfns * sizeof(*real)) : NULL;
	if (cp->nfns && !real)
		return -TA_E_NOMEM;
	/* In the order the walk would have made them. */
	for (size_t i = 0; i < cp->nfns; i++) {
		real[i] = part_real(prof, t, cp->fns[i].addr);
		if (!real[i]) {
			free(real);
			return -TA_E_NOMEM;
		}
	}

	s->events_chunks++;
	if (t->have_chunks && d->chunk_seq != t->next_seq)
		t->chunks_missing += d->chunk_seq > t->next_seq ? d->chunk_seq - t->next_seq : 1;
	t->next_seq = d->chunk_seq + 1;
	s->walk_proc = p;
	t->have_chunks = 1;
	ta_sess_note_ticks(p, d->first_ticks);

	/* The frames of before that ended here, in order, on the real stack. */
	for (size_t i = 0; i < cp->nedges; i++) {
		t->stack[t->depth - 1].child += cp->edges[i].child;
		frame_pop_w(s, t, cp->edges[i].ticks, cp->edges[i].flags, WALK_ANY);
	}
	for (size_t i = 0; i < cp->nfns; i++) {
		const struct ta_part_sum *pf = &cp->fns[i];
		struct ta_fstat *f = &prof->f[real[i] - 1];

		if (!pf->calls)
			continue;
		f->calls += pf->calls;
		f->shorts += pf->shorts;
		f->sum += pf->sum;
		f->self += pf->self;
		f->total += pf->total;
		f->unwound += pf->unwound;
		f->partial += pf->partial;
		if (pf->min < f->min)
			f->min = pf->min;
		if (pf->max > f->max)
			f->max = pf->max;
		if (pf->hist.count) {
			/* Room for the chunk's buckets, if there is none yet. */
			if ((!f->hist.count || pf->hist.lo < f->hist.lo ||
			     pf->hist.hi > f->hist.hi) &&
			    (ta_hist_reserve(&f->hist, pf->hist.lo) < 0 ||
			     ta_hist_reserve(&f->hist, pf->hist.hi - 1) < 0)) {
				free(real);
				return -TA_E_NOMEM;
			}
			for (uint32_t b = pf->hist.lo; b < pf->hist.hi; b++)
				f->hist.count[b - f->hist.lo] += pf->hist.count[b - pf->hist.lo];
		}
	}
	/* What is left of the snapshot's frames got time in callees here. */
	for (uint32_t k = 0; k < cp->nph; k++)
		t->stack[k].child += cp->stack[k].child;
	/* The frames opened here and still open. */
	for (uint32_t k = cp->nph; k < cp->depth; k++) {
		const struct ta_part_frame *pf = &cp->stack[k];
		struct ta_frame *f;

		if (t->depth == t->cap && stack_grow(t) < 0) {
			free(real);
			return -TA_E_NOMEM;
		}
		f = &t->stack[t->depth++];
		f->addr = pf->addr;
		f->enter = pf->enter;
		f->child = pf->child;
		f->partial = 0;
		f->user = real[pf->fn - 1];
		prof->f[f->user - 1].active++;
	}
	free(real);
	t->unmatched += cp->unmatched;
	t->lost += cp->lost;
	s->short_calls += cp->shorts;
	t->events += cp->events;
	if (cp->have_ticks) {
		t->last_ticks = cp->last_ticks;
		t->have_ticks = 1;
	}
	if (t->have_ticks)
		ta_sess_note_ticks(p, t->last_ticks);
	return 1;
}

/* ---- parts of other visitors (ta_chunk_ops) --------------------------------------- */

struct ta_sess_thread *ta_session_part_thread(struct ta_session *s, const struct ta_chunk *c,
					      const struct ta_process *p,
					      const struct ta_decoder *d, int *nomem)
{
	struct ta_sess_thread *t;

	*nomem = 0;
	if (p->nunloaded || p->npauses || d->stack.overflow)
		return NULL;
	t = ta_sess_thread_get(s, p->pid, d->tid);
	if (!t) {
		*nomem = 1;
		return NULL;
	}
	/* What stack_sync takes as is. */
	if (t->overflow || t->inherited || t->depth != d->snapshot_depth)
		return NULL;
	for (uint32_t k = 0; k < t->depth; k++)
		if (t->stack[k].addr != d->snapshot[k])
			return NULL;
	return t;
}

int ta_session_part_take(struct ta_session *s, struct ta_sess_thread *t, struct ta_process *p,
			 const struct ta_part_walk *w, const uintptr_t *user)
{
	const struct ta_decoder *d = w->dec;

	/* As ta_sess_events_chunk before its walk. */
	s->events_chunks++;
	if (t->have_chunks && d->chunk_seq != t->next_seq)
		t->chunks_missing += d->chunk_seq > t->next_seq ? d->chunk_seq - t->next_seq : 1;
	t->next_seq = d->chunk_seq + 1;
	s->walk_proc = p;
	t->have_chunks = 1;
	ta_sess_note_ticks(p, d->first_ticks);

	/* The frames of before that ended here, in order, on the real stack. */
	for (size_t i = 0; i < w->nedges; i++) {
		t->stack[t->depth - 1].child += w->edges[i].child;
		frame_pop_w(s, t, w->edges[i].ticks, w->edges[i].flags, WALK_ANY);
	}
	/* What is left of the snapshot's frames got time in callees here. */
	for (uint32_t k = 0; k < w->nph; k++)
		t->stack[k].child += w->stack[k].child;
	/* The frames opened here and still open, as the visitor's enter left
	 * them. */
	for (uint32_t k = w->nph; k < w->depth; k++) {
		const struct ta_part_open *pf = &w->stack[k];
		struct ta_frame *f;

		if (t->depth == t->cap && stack_grow(t) < 0)
			return -TA_E_NOMEM;
		f = &t->stack[t->depth++];
		f->addr = pf->addr;
		f->enter = pf->enter;
		f->child = pf->child;
		f->partial = 0;
		f->user = user[pf->user];
	}
	t->unmatched += w->unmatched;
	t->lost += w->lost;
	t->events += w->events;
	if (w->have_ticks) {
		t->last_ticks = w->last_ticks;
		t->have_ticks = 1;
	}
	if (t->have_ticks)
		ta_sess_note_ticks(p, t->last_ticks);
	return 0;
}
