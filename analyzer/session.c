/* SPDX-License-Identifier: MIT */
/*
 * session.c - the decoded model of a dump and the call-stack walk.
 *
 * One pass: metadata chunks fill the process, module and thread tables;
 * EVENTS chunks are decoded with the format's own decoder and replayed on a
 * per-thread stack of frames, each frame visited once at enter and once at
 * exit.  The decoder tells how many frames an exit or a LONGJMP or CATCH
 * marker removed (frames left by longjmp or an exception go with these;
 * an exit never entered removes none),
 * so our stack always follows the writer's shadow-stack rule, and each
 * chunk's stack snapshot lets us notice and repair a lost chunk.
 */
#include "session.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Frames kept with their data per thread; deeper ones are only counted.
 * Far beyond TA_STACK_MAX, yet bounded whatever a dump claims. */
#define FRAMES_MAX (16u * TA_STACK_MAX)

/* ---- small helpers ----------------------------------------------------------- */

static char *str_from_bytes(const uint8_t *s, uint64_t len)
{
	char *p = malloc((size_t)len + 1);

	if (!p)
		return NULL;
	memcpy(p, s, (size_t)len);
	p[len] = 0;
	/* A NUL inside would cut the name short silently; make it visible. */
	for (uint64_t i = 0; i < len; i++)
		if (!p[i])
			p[i] = '?';
	return p;
}

static int get_str(struct ta_reader *r, char **out)
{
	const uint8_t *s;
	uint64_t len;

	if (ta_get_bytes(r, &s, &len) < 0)
		return -TA_E_PAYLOAD;
	*out = str_from_bytes(s, len);
	return *out ? 0 : -TA_E_NOMEM;
}

static void note_ticks(struct ta_process *p, uint64_t ticks)
{
	if (!p->have_ticks) {
		p->min_ticks = p->max_ticks = ticks;
		p->have_ticks = 1;
		return;
	}
	if (ticks < p->min_ticks)
		p->min_ticks = ticks;
	if (ticks > p->max_ticks)
		p->max_ticks = ticks;
}

/* ---- errors -------------------------------------------------------------------- */

void ta_session_error(struct ta_session *s, int code, const struct ta_chunk *c, uint64_t tid)
{
	struct ta_session_error *e;

	s->errors_all++;
	if (s->nerrors == TA_SESSION_MAX_ERRORS)
		return;
	e = &s->errors[s->nerrors++];
	e->code = code;
	e->chunk = c->index;
	e->offset = c->offset;
	e->skipped = c->skipped;
	e->type = c->h.type;
	e->tid = tid;
}

/* ---- processes ------------------------------------------------------------------ */

struct ta_process *ta_session_process(const struct ta_session *s, uint32_t pid)
{
	for (size_t i = 0; i < s->nprocs; i++)
		if (s->procs[i]->pid == pid)
			return s->procs[i];
	return NULL;
}

static struct ta_process *process_get(struct ta_session *s, uint32_t pid)
{
	struct ta_process *p = ta_session_process(s, pid), **v;

	if (p)
		return p;
	p = calloc(1, sizeof(*p));
	v = realloc(s->procs, (s->nprocs + 1) * sizeof(*v));
	if (!p || !v) {
		free(p);
		if (v)
			s->procs = v;
		return NULL;
	}
	s->procs = v;
	p->pid = pid;
	s->procs[s->nprocs++] = p;
	return p;
}

static void patch_free(struct ta_patch *pt);

static void process_free(struct ta_process *p)
{
	free(p->arch);
	free(p->exe);
	for (size_t i = 0; i < p->argc; i++)
		free(p->argv[i]);
	free(p->argv);
	for (size_t i = 0; i < p->nimages; i++)
		free(p->images[i]);
	free(p->images);
	free(p->clock);
	if (p->crash)
		free(p->crash->pcs);
	free(p->crash);
	patch_free(p->patch);
	for (size_t i = 0; i < p->nmodules; i++) {
		free(p->modules[i].path);
		free(p->modules[i].build_id);
		free(p->modules[i].ranges);
	}
	free(p->modules);
	for (size_t i = 0; i < p->nlibcalls; i++)
		free(p->libcalls[i].name);
	free(p->libcalls);
	free(p->map);
	free(p->unloaded);
	free(p);
}

/* ---- threads --------------------------------------------------------------------- */

static size_t thash(uint32_t pid, uint64_t tid, size_t size)
{
	uint64_t h = (tid ^ ((uint64_t)pid << 32)) * 0x9e3779b97f4a7c15ull;

	return (size_t)(h >> 32) & (size_t)(size - 1);
}

static int thash_grow(struct ta_session *s)
{
	size_t size = s->thash_size ? s->thash_size * 2 : 64;
	struct ta_thread **h = calloc(size, sizeof(*h));

	if (!h)
		return -TA_E_NOMEM;
	for (size_t i = 0; i < s->thash_size; i++) {
		struct ta_thread *t = s->thash[i], *next;

		for (; t; t = next) {
			size_t b = thash(t->pid, t->tid, size);

			next = t->hnext;
			t->hnext = h[b];
			h[b] = t;
		}
	}
	free(s->thash);
	s->thash = h;
	s->thash_size = size;
	return 0;
}

static struct ta_thread *thread_find(const struct ta_session *s, uint32_t pid, uint64_t tid)
{
	struct ta_thread *t;

	if (!s->thash_size)
		return NULL;
	for (t = s->thash[thash(pid, tid, s->thash_size)]; t; t = t->hnext)
		if (t->pid == pid && t->tid == tid)
			return t;
	return NULL;
}

/* Adds a new thread instance, replacing any previous one with the same ids
 * in the hash (a tid the kernel reused after the first thread ended); the
 * old one stays in s->threads. */
static struct ta_thread *thread_new(struct ta_session *s, uint32_t pid, uint64_t tid)
{
	struct ta_thread *t, **b, **pp;

	if (s->nthreads >= s->thash_size && thash_grow(s) < 0)
		return NULL;
	if (s->nthreads == s->threads_cap) {
		size_t cap = s->threads_cap ? s->threads_cap * 2 : 16;
		struct ta_thread **v = realloc(s->threads, cap * sizeof(*v));

		if (!v)
			return NULL;
		s->threads = v;
		s->threads_cap = cap;
	}
	t = calloc(1, sizeof(*t));
	if (!t)
		return NULL;
	t->index = (uint32_t)s->nthreads;
	t->pid = pid;
	t->tid = tid;
	b = &s->thash[thash(pid, tid, s->thash_size)];
	for (pp = b; *pp; pp = &(*pp)->hnext) {
		if ((*pp)->pid == pid && (*pp)->tid == tid) {
			*pp = (*pp)->hnext;
			break;
		}
	}
	t->hnext = *b;
	*b = t;
	s->threads[s->nthreads++] = t;
	return t;
}

static struct ta_thread *thread_get(struct ta_session *s, uint32_t pid, uint64_t tid)
{
	struct ta_thread *t = thread_find(s, pid, tid);

	return t ? t : thread_new(s, pid, tid);
}

static void thread_free(struct ta_thread *t)
{
	free(t->name);
	free(t->stack);
	free(t->last_stack);
	free(t);
}

/* ---- the call-stack walk ----------------------------------------------------------- */

/* The profile's callbacks, which the walk calls directly (below). */
#define TA_INLINE inline __attribute__((always_inline))
static TA_INLINE uintptr_t profile_enter(void *ctx, struct ta_thread *t, uint64_t ticks,
					 uint32_t depth, uint64_t addr, unsigned flags);
static TA_INLINE void profile_exit(void *ctx, struct ta_thread *t, const struct ta_exit_info *x);
static TA_INLINE void profile_exit_hist(void *ctx, struct ta_thread *t,
					const struct ta_exit_info *x);

/* The stack is full: grow it, or count the frame as overflow (-1). */
static __attribute__((noinline)) int stack_grow(struct ta_thread *t)
{
	uint32_t cap = t->cap ? t->cap * 2 : 64;
	struct ta_frame *st;

	if (t->overflow || t->depth == FRAMES_MAX)
		return -1;
	st = realloc(t->stack, cap * sizeof(*st));
	if (!st)
		return -TA_E_NOMEM;
	/* New slots hold no profile entry that frame_push could reuse
	 * (user 0). */
	memset(st + t->cap, 0, (cap - t->cap) * sizeof(*st));
	t->stack = st;
	t->cap = cap;
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
static TA_INLINE int frame_push_w(struct ta_session *s, struct ta_thread *t, uint64_t ticks,
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
	t->depth++;
	return 0;
}

static int frame_push(struct ta_session *s, struct ta_thread *t, uint64_t ticks, uint64_t addr,
		      unsigned flags)
{
	return frame_push_w(s, t, ticks, addr, flags, WALK_ANY);
}

/* Removes the top frame at time ticks and visits its exit; the caller
 * knows there is one and that it is not inherited. */
static TA_INLINE void frame_pop_w(struct ta_session *s, struct ta_thread *t, uint64_t ticks,
				  unsigned flags, enum walk w)
{
	struct ta_frame *f = &t->stack[--t->depth];
	struct ta_exit_info x;

	x.addr = f->addr;
	x.enter = f->enter;
	x.exit = ticks;
	x.duration = ticks > f->enter ? ticks - f->enter : 0;
	x.self = x.duration > f->child ? x.duration - f->child : 0;
	x.depth = t->depth;
	x.flags = flags;
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
static void frames_pop(struct ta_session *s, struct ta_thread *t, uint64_t n, uint64_t ticks,
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
static void stack_sync(struct ta_session *s, struct ta_thread *t, const struct ta_decoder *d,
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
	for (uint32_t i = k; i < n; i++)
		(void)frame_push(s, t, d->first_ticks,
				 ta_process_addr_at(p, d->snapshot[i], d->first_ticks),
				 TA_VISIT_RESYNC);
	/* Frames the writer could not hold have no address: count them. */
	t->overflow += over;
}

static void tag_batch(const struct ta_process *p, struct ta_event *ev, size_t n);
/* Replays a batch of decoded events on t's stack: 0, or -TA_E_NOMEM. */
static TA_INLINE int walk(struct ta_session *s, struct ta_thread *t, const struct ta_event *evs,
			  size_t n, enum walk w)
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
			else
				t->unmatched++;
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
static TA_INLINE int walk_profile(struct ta_session *s, struct ta_thread *t,
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
				f = &stk[depth];
				/* As in frame_push_w: the slot's last frame's entry. */
				if (depth == cap || f->addr != ev->addr || !f->user)
					break;
				p->f[f->user - 1].active++;
				f->enter = ev->ticks;
				f->child = 0;
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
			x.duration = ev->ticks > f->enter ? ev->ticks - f->enter : 0;
			x.self = x.duration > f->child ? x.duration - f->child : 0;
			x.depth = depth;
			x.flags = 0;
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

static int events_chunk(struct ta_session *s, const struct ta_chunk *c, struct ta_process *p)
{
	struct ta_decoder *d = &s->dec;
	struct ta_thread *t;
	int rc = ta_decoder_begin(d, c->payload, c->len), rc2;

	s->events_chunks++;
	if (rc < 0) {
		if (rc == -TA_E_NOMEM)
			return rc;
		ta_session_error(s, rc, c, d->r.err ? 0 : d->tid);
		return 0;
	}
	t = thread_get(s, c->h.pid, d->tid);
	if (!t)
		return -TA_E_NOMEM;
	if (t->have_chunks && d->chunk_seq != t->next_seq)
		t->chunks_missing += d->chunk_seq > t->next_seq ? d->chunk_seq - t->next_seq : 1;
	t->next_seq = d->chunk_seq + 1;
	stack_sync(s, t, d, p);
	t->have_chunks = 1;
	note_ticks(p, d->first_ticks);

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
		note_ticks(p, t->last_ticks);
	if (rc == -TA_E_NOMEM)
		return rc;
	if (rc < 0)
		ta_session_error(s, rc, c, t->tid); /* the next snapshot repairs the stack */
	return 0;
}

/* Closes what is still open on t at its last known time. */
static void thread_close(struct ta_session *s, struct ta_thread *t)
{
	uint64_t end = t->last_ticks;
	struct ta_process *p = ta_session_process(s, t->pid);

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

/* ---- metadata chunks ------------------------------------------------------------------ */

static int process_chunk(struct ta_process *p, struct ta_reader *r)
{
	uint64_t pid, argc;
	char *arch = NULL, *exe = NULL, **argv = NULL;
	int rc = -TA_E_PAYLOAD;

	ta_get_varint(r, &pid);
	ta_get_varint(r, &p->ppid);
	ta_get_varint(r, &p->start_realtime_ns);
	ta_get_varint(r, &p->start_ticks);
	ta_get_varint(r, &p->clock_source);
	ta_get_varint(r, &p->nominal_hz);
	if (r->err)
		return -TA_E_PAYLOAD;
	if ((rc = get_str(r, &arch)) < 0 || (rc = get_str(r, &exe)) < 0)
		goto fail;
	rc = -TA_E_PAYLOAD;
	/* Each argument takes at least one byte. */
	if (ta_get_varint(r, &argc) < 0 || argc > (uint64_t)(r->end - r->p))
		goto fail;
	argv = calloc((size_t)argc + 1, sizeof(*argv));
	if (!argv) {
		rc = -TA_E_NOMEM;
		goto fail;
	}
	for (uint64_t i = 0; i < argc; i++)
		if ((rc = get_str(r, &argv[i])) < 0)
			goto fail;
	ta_get_varint(r, &p->block_size);
	ta_get_varint(r, &p->memory_cap);
	ta_get_varint(r, &p->flush_ms);
	if (r->err) {
		rc = -TA_E_PAYLOAD;
		goto fail;
	}
	p->mode = 0;
	if (r->p < r->end && ta_get_varint(r, &p->mode) < 0) { /* since 1.1 */
		rc = -TA_E_PAYLOAD;
		goto fail;
	}
	/* A second PROCESS chunk (exec in place) replaces the first. */
	free(p->arch);
	free(p->exe);
	for (size_t i = 0; i < p->argc; i++)
		free(p->argv[i]);
	free(p->argv);
	p->arch = arch;
	p->exe = exe;
	p->argv = argv;
	p->argc = (size_t)argc;
	p->has_info = 1;
	{
		char **v = realloc(p->images, (p->nimages + 1) * sizeof(*v));

		if (!v)
			return -TA_E_NOMEM;
		p->images = v;
		p->images[p->nimages] = strdup(exe);
		if (!p->images[p->nimages])
			return -TA_E_NOMEM;
		p->nimages++;
	}
	note_ticks(p, p->start_ticks);
	return 0;
fail:
	if (argv)
		for (uint64_t i = 0; i < argc; i++)
			free(argv[i]);
	free(argv);
	free(arch);
	free(exe);
	return rc;
}

static int clock_chunk(struct ta_process *p, struct ta_reader *r)
{
	uint64_t count;

	/* Each pair takes at least two bytes. */
	if (ta_get_varint(r, &count) < 0 || count > (uint64_t)(r->end - r->p) / 2)
		return -TA_E_PAYLOAD;
	if (p->nclock + count > p->clock_cap) {
		size_t cap = p->clock_cap ? p->clock_cap : 16;
		struct ta_clock_pair *v;

		while (cap < p->nclock + count)
			cap *= 2;
		v = realloc(p->clock, cap * sizeof(*v));
		if (!v)
			return -TA_E_NOMEM;
		p->clock = v;
		p->clock_cap = cap;
	}
	for (uint64_t i = 0; i < count; i++) {
		struct ta_clock_pair *cp = &p->clock[p->nclock];

		ta_get_varint(r, &cp->ticks);
		ta_get_varint(r, &cp->ns);
		if (r->err)
			return -TA_E_PAYLOAD;
		p->nclock++;
	}
	return 0;
}

static int module_chunk(struct ta_process *p, struct ta_reader *r)
{
	struct ta_module m;
	const uint8_t *bid;
	uint64_t bid_len, n;
	int rc;

	memset(&m, 0, sizeof(m));
	m.unload_ticks = UINT64_MAX;
	ta_get_varint(r, &m.load_ticks);
	ta_get_varint(r, &m.bias);
	if ((rc = get_str(r, &m.path)) < 0)
		goto fail;
	rc = -TA_E_PAYLOAD;
	if (ta_get_bytes(r, &bid, &bid_len) < 0)
		goto fail;
	ta_get_varint(r, &m.flags);
	/* Each range takes at least two bytes. */
	if (ta_get_varint(r, &n) < 0 || n > (uint64_t)(r->end - r->p) / 2)
		goto fail;
	m.build_id = malloc(bid_len ? (size_t)bid_len : 1);
	m.ranges = malloc(n ? (size_t)n * sizeof(*m.ranges) : 1);
	if (!m.build_id || !m.ranges) {
		rc = -TA_E_NOMEM;
		goto fail;
	}
	memcpy(m.build_id, bid, (size_t)bid_len);
	m.build_id_len = (size_t)bid_len;
	for (uint64_t i = 0; i < n; i++) {
		ta_get_varint(r, &m.ranges[i].start);
		ta_get_varint(r, &m.ranges[i].end);
	}
	m.nranges = (size_t)n;
	if (r->err)
		goto fail;
	if (p->nmodules == p->modules_cap) {
		size_t cap = p->modules_cap ? p->modules_cap * 2 : 16;
		struct ta_module *v = realloc(p->modules, cap * sizeof(*v));

		if (!v) {
			rc = -TA_E_NOMEM;
			goto fail;
		}
		p->modules = v;
		p->modules_cap = cap;
	}
	p->modules[p->nmodules++] = m;
	return 0;
fail:
	free(m.path);
	free(m.build_id);
	free(m.ranges);
	return rc;
}

/* MODULE_UNLOAD: the latest instance of that module still loaded ends. */
static int module_gone(struct ta_process *p, struct ta_module *m, uint64_t ticks);

static int module_unload_chunk(struct ta_process *p, struct ta_reader *r)
{
	const uint8_t *path;
	uint64_t ticks, bias, len;
	struct ta_module *m = NULL;

	ta_get_varint(r, &ticks);
	ta_get_varint(r, &bias);
	if (ta_get_bytes(r, &path, &len) < 0)
		return -TA_E_PAYLOAD;
	for (size_t i = p->nmodules; i-- > 0;) {
		struct ta_module *c = &p->modules[i];

		if (c->bias == bias && c->unload_ticks == UINT64_MAX && strlen(c->path) == len &&
		    memcmp(c->path, path, (size_t)len) == 0) {
			m = c;
			break;
		}
	}
	if (!m)
		return 0; /* its MODULE chunk was lost: nothing to end */
	note_ticks(p, ticks);
	return module_gone(p, m, ticks);
}

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

static int libcall_cmp(const void *a, const void *b)
{
	const struct ta_libcall *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* u classes, u count, count x (u addr, str name, u class). */
static int libcalls_chunk(struct ta_process *p, struct ta_reader *r)
{
	struct ta_libcall *lc;
	uint64_t classes, n, i;
	int rc = -TA_E_PAYLOAD;

	ta_get_varint(r, &classes);
	/* Each entry takes three bytes at least. */
	if (ta_get_varint(r, &n) < 0 || n > (uint64_t)(r->end - r->p) / 3)
		return -TA_E_PAYLOAD;
	lc = calloc(n ? (size_t)n : 1, sizeof(*lc));
	if (!lc)
		return -TA_E_NOMEM;
	for (i = 0; i < n; i++) {
		uint64_t cls;

		ta_get_varint(r, &lc[i].addr);
		if ((rc = get_str(r, &lc[i].name)) < 0)
			goto fail;
		rc = -TA_E_PAYLOAD;
		if (ta_get_varint(r, &cls) < 0)
			goto fail;
		lc[i].cls = (uint32_t)(cls & TA_LC_ALL);
		lc[i].index = (uint32_t)i;
	}
	qsort(lc, (size_t)n, sizeof(*lc), libcall_cmp);
	for (i = 0; i < p->nlibcalls; i++)
		free(p->libcalls[i].name);
	free(p->libcalls);
	p->libcalls = lc;
	p->nlibcalls = (size_t)n;
	p->libcall_classes = classes;
	return 0;
fail:
	for (uint64_t k = 0; k <= i && k < n; k++)
		free(lc[k].name);
	free(lc);
	return rc;
}

const struct ta_libcall *ta_process_libcall(const struct ta_process *p, uint64_t addr)
{
	size_t lo = 0, hi = p->nlibcalls;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->libcalls[mid].addr == addr)
			return &p->libcalls[mid];
		if (p->libcalls[mid].addr < addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static void patch_free(struct ta_patch *pt)
{
	if (!pt)
		return;
	for (uint64_t i = 0; i < pt->nrefused; i++) {
		free(pt->refused[i].module);
		free(pt->refused[i].name);
		free(pt->refused[i].reason);
	}
	free(pt->refused);
	free(pt);
}

/* Each PATCH chunk is cumulative (written at start, after a dlopen that
 * patched more, and at the end): the last one replaces the others. */
static int patch_chunk(struct ta_process *p, struct ta_reader *r)
{
	struct ta_patch *pt = calloc(1, sizeof(*pt));
	uint64_t n;
	int rc = -TA_E_PAYLOAD;

	if (!pt)
		return -TA_E_NOMEM;
	ta_get_varint(r, &pt->patched);
	ta_get_varint(r, &n);
	ta_get_varint(r, &pt->frames_without_exit);
	/* A refusal takes 5 bytes at least: a larger count is a lie. */
	if (r->err || n > (uint64_t)(r->end - r->p) / 5)
		goto fail;
	pt->refused = n ? calloc((size_t)n, sizeof(*pt->refused)) : NULL;
	if (n && !pt->refused) {
		rc = -TA_E_NOMEM;
		goto fail;
	}
	for (uint64_t i = 0; i < n; i++) {
		struct ta_patch_refusal *f = &pt->refused[i];
		pt->nrefused = i + 1;
		if ((rc = get_str(r, &f->module)) < 0 || (rc = get_str(r, &f->name)) < 0)
			goto fail;
		ta_get_varint(r, &f->addr);
		ta_get_varint(r, &f->code);
		if ((rc = get_str(r, &f->reason)) < 0)
			goto fail;
		rc = -TA_E_PAYLOAD;
		if (r->err)
			goto fail;
	}
	patch_free(p->patch);
	p->patch = pt;
	return 0;
fail:
	patch_free(pt);
	return rc;
}

static int crash_chunk(struct ta_process *p, struct ta_reader *r)
{
	struct ta_crash *c = calloc(1, sizeof(*c));
	uint64_t code, n;

	if (!c)
		return -TA_E_NOMEM;
	ta_get_varint(r, &c->tid);
	ta_get_varint(r, &c->ticks);
	ta_get_varint(r, &c->signal);
	ta_get_varint(r, &code);
	ta_get_varint(r, &c->addr);
	ta_get_varint(r, &n);
	/* Each pc takes a byte at least: a larger count is a lie. */
	if (r->err || n > (uint64_t)(r->end - r->p)) {
		free(c);
		return -TA_E_PAYLOAD;
	}
	c->code = (int64_t)code;
	c->pcs = n ? malloc(n * sizeof(uint64_t)) : NULL;
	if (n && !c->pcs) {
		free(c);
		return -TA_E_NOMEM;
	}
	for (uint64_t i = 0; i < n; i++)
		ta_get_varint(r, &c->pcs[i]);
	if (r->err) {
		free(c->pcs);
		free(c);
		return -TA_E_PAYLOAD;
	}
	c->npcs = (size_t)n;
	if (p->crash) { /* one crash a process; a second chunk replaces it */
		free(p->crash->pcs);
		free(p->crash);
	}
	p->crash = c;
	note_ticks(p, c->ticks);
	return 0;
}

static int thread_start_chunk(struct ta_session *s, struct ta_process *p, struct ta_reader *r)
{
	uint64_t tid, parent, ticks;
	char *name;
	struct ta_thread *t;
	int rc;

	ta_get_varint(r, &tid);
	ta_get_varint(r, &parent);
	ta_get_varint(r, &ticks);
	if (r->err)
		return -TA_E_PAYLOAD;
	if ((rc = get_str(r, &name)) < 0)
		return rc;
	t = thread_find(s, p->pid, tid);
	if (t && t->has_end) {
		/* The tid was reused: the old thread is over. */
		thread_close(s, t);
		t = NULL;
	}
	if (!t)
		t = thread_new(s, p->pid, tid);
	if (!t) {
		free(name);
		return -TA_E_NOMEM;
	}
	free(t->name);
	t->name = name;
	t->parent_tid = parent;
	t->start_ticks = ticks;
	t->has_start = 1;
	if (r->p < r->end) { /* flags, since 1.1 */
		uint64_t flags;
		if (ta_get_varint(r, &flags) < 0)
			return -TA_E_PAYLOAD;
		t->forked = (flags & TA_THREAD_F_INHERITED) != 0;
	}
	note_ticks(p, ticks);
	return 0;
}

static int thread_name_chunk(struct ta_session *s, struct ta_process *p, struct ta_reader *r)
{
	uint64_t tid, ticks;
	char *name;
	struct ta_thread *t;
	int rc;

	ta_get_varint(r, &tid);
	ta_get_varint(r, &ticks);
	if (r->err)
		return -TA_E_PAYLOAD;
	if ((rc = get_str(r, &name)) < 0)
		return rc;
	t = thread_get(s, p->pid, tid);
	if (!t) {
		free(name);
		return -TA_E_NOMEM;
	}
	free(t->name);
	t->name = name;
	return 0;
}

static int thread_end_chunk(struct ta_session *s, struct ta_process *p, struct ta_reader *r)
{
	uint64_t tid, end, events, lost, wait;
	struct ta_thread *t;

	ta_get_varint(r, &tid);
	ta_get_varint(r, &end);
	ta_get_varint(r, &events);
	ta_get_varint(r, &lost);
	ta_get_varint(r, &wait);
	if (r->err)
		return -TA_E_PAYLOAD;
	t = thread_get(s, p->pid, tid);
	if (!t)
		return -TA_E_NOMEM;
	t->has_end = 1;
	t->end_ticks = end;
	t->end_events = events;
	t->end_lost = lost;
	t->wait_ticks = wait;
	note_ticks(p, end);
	return 0;
}

static int end_chunk(struct ta_process *p, struct ta_reader *r)
{
	uint64_t v[6];

	for (int i = 0; i < 6; i++)
		ta_get_varint(r, &v[i]);
	if (r->err)
		return -TA_E_PAYLOAD;
	p->end_ticks = v[0];
	p->end_ns = v[1];
	p->end_events = p->base_events + v[2];
	p->end_lost = p->base_lost + v[3];
	p->end_threads = p->base_threads + v[4];
	p->end_flags = v[5];
	p->has_end = 1;
	note_ticks(p, p->end_ticks);
	return 0;
}

#define UNLOADED_MAX 4096

/* Marks m unloaded at ticks: its ranges join the process's unloaded
 * ones, which tell instances at one address apart (ta_process_addr_at). */
static int module_gone(struct ta_process *p, struct ta_module *m, uint64_t ticks)
{
	m->unload_ticks = ticks;
	for (size_t k = 0; k < m->nranges; k++) {
		/* Each is looked at for every later event: a dump claiming
		 * more is not followed (its addresses may then be misnamed). */
		if (m->ranges[k].end <= m->ranges[k].start || p->nunloaded == UNLOADED_MAX)
			continue;
		if (p->nunloaded == p->unloaded_cap) {
			size_t cap = p->unloaded_cap ? 2 * p->unloaded_cap : 8;
			struct ta_unloaded *v = realloc(p->unloaded, cap * sizeof(*v));

			if (!v)
				return -TA_E_NOMEM;
			p->unloaded = v;
			p->unloaded_cap = cap;
		}
		p->unloaded[p->nunloaded].start = m->ranges[k].start;
		p->unloaded[p->nunloaded].end = m->ranges[k].end;
		p->unloaded[p->nunloaded].ticks = ticks;
		p->nunloaded++;
	}
	return 0;
}

/*
 * A PROCESS chunk for a pid already described: the program exec'd and the
 * new image's agent took the dump over (or, in a long run, the pid was
 * reused).  The old image is over: its threads are closed where they were
 * (their tids start afresh), its modules unloaded at its end, its totals
 * kept, and the new writer's chunk sequence starts from 0.
 */
static int new_image(struct ta_session *s, struct ta_process *p)
{
	uint64_t at = p->has_end ? p->end_ticks : p->max_ticks;

	for (size_t i = 0; i < s->nthreads; i++) {
		struct ta_thread *t = s->threads[i], **pp;

		if (t->pid != p->pid || t->over)
			continue;
		thread_close(s, t);
		t->over = 1;
		for (pp = &s->thash[thash(t->pid, t->tid, s->thash_size)]; *pp; pp = &(*pp)->hnext)
			if (*pp == t) {
				*pp = t->hnext;
				break;
			}
	}
	for (size_t i = 0; i < p->nmodules; i++)
		if (p->modules[i].unload_ticks == UINT64_MAX &&
		    module_gone(p, &p->modules[i], at) < 0)
			return -TA_E_NOMEM;
	if (p->has_end) {
		p->base_events = p->end_events;
		p->base_lost = p->end_lost;
		p->base_threads = p->end_threads;
	}
	p->has_end = 0;
	p->next_chunk_seq = 0;
	return 0;
}

int ta_session_chunk(struct ta_session *s, const struct ta_chunk *c)
{
	struct ta_process *p = process_get(s, c->h.pid);
	struct ta_reader r;
	int rc;

	if (!p)
		return -TA_E_NOMEM;
	if (c->h.type == TA_CHUNK_PROCESS && p->has_info && new_image(s, p) < 0)
		return -TA_E_NOMEM;
	s->chunks++;
	s->stored_bytes += c->h.stored_size;
	s->raw_bytes += c->h.raw_size;
	/* The writer numbers its chunks: a gap is chunks we never saw. */
	if (c->h.seq > p->next_chunk_seq)
		p->chunks_missing += c->h.seq - p->next_chunk_seq;
	if (c->h.seq >= p->next_chunk_seq)
		p->next_chunk_seq = (uint64_t)c->h.seq + 1;
	ta_reader_init(&r, c->payload, c->len);
	switch (c->h.type) {
	case TA_CHUNK_EVENTS:
		return events_chunk(s, c, p);
	case TA_CHUNK_PROCESS:
		rc = process_chunk(p, &r);
		break;
	case TA_CHUNK_CLOCK:
		rc = clock_chunk(p, &r);
		break;
	case TA_CHUNK_MODULE:
		rc = module_chunk(p, &r);
		break;
	case TA_CHUNK_THREAD_START:
		rc = thread_start_chunk(s, p, &r);
		break;
	case TA_CHUNK_THREAD_NAME:
		rc = thread_name_chunk(s, p, &r);
		break;
	case TA_CHUNK_THREAD_END:
		rc = thread_end_chunk(s, p, &r);
		break;
	case TA_CHUNK_END:
		rc = end_chunk(p, &r);
		break;
	case TA_CHUNK_CRASH:
		rc = crash_chunk(p, &r);
		break;
	case TA_CHUNK_MODULE_UNLOAD:
		rc = module_unload_chunk(p, &r);
		break;
	case TA_CHUNK_LIBCALLS:
		rc = libcalls_chunk(p, &r);
		break;
	case TA_CHUNK_PATCH:
		rc = patch_chunk(p, &r);
		break;
	default:
		s->unknown_chunks++; /* a later minor version's addition */
		return 0;
	}
	/* Fields after the known ones are a later minor version's
	 * additions, and ignored. */
	if (rc == -TA_E_NOMEM)
		return rc;
	if (rc < 0)
		ta_session_error(s, rc, c, 0);
	return 0;
}

int ta_session_read(struct ta_session *s, const char *path, uint64_t *err_offset)
{
	struct ta_dump *d;
	struct ta_chunk c;
	int rc = ta_dump_open(path, &d);

	if (err_offset)
		*err_offset = 0;
	if (rc < 0)
		return rc;
	s->fh = *ta_dump_header(d);
	for (;;) {
		rc = ta_dump_next(d, &c);
		if (rc == 0)
			break;
		if (rc == -TA_E_IO || rc == -TA_E_NOMEM) {
			if (err_offset)
				*err_offset = ta_dump_offset(d);
			break;
		}
		if (rc < 0) {
			ta_session_error(s, rc, &c, 0);
			continue;
		}
		rc = ta_session_chunk(s, &c);
		if (rc < 0) {
			if (err_offset)
				*err_offset = c.offset;
			break;
		}
	}
	{
		int e = errno;

		ta_dump_close(d);
		errno = e; /* for the caller's message about -TA_E_IO */
	}
	return rc;
}

/* ---- time ------------------------------------------------------------------------- */

/* The line through the process's clock pairs, or what else is known. */
static void calibrate(struct ta_process *p)
{
	long double mt = 0, mn = 0, sxx = 0, sxy = 0;
	size_t n = p->nclock;

	p->calibrated = 0;
	p->ns_per_tick = 1;
	p->ns_at_0 = 0;
	for (size_t i = 0; i < n; i++) {
		mt += p->clock[i].ticks;
		mn += p->clock[i].ns;
	}
	if (n) {
		mt /= n;
		mn /= n;
	}
	if (p->clock_source == TA_CLOCK_MONOTONIC) {
		/* Ticks are nanoseconds already. */
		p->ns_at_0 = mn - mt;
		p->calibrated = 1;
		return;
	}
	for (size_t i = 0; i < n; i++) {
		long double dt = p->clock[i].ticks - mt;

		sxx += dt * dt;
		sxy += dt * (p->clock[i].ns - mn);
	}
	/* Least squares: the counter is invariant, so one line fits all. */
	if (n >= 2 && sxx > 0 && sxy > 0 && isfinite((double)(sxy / sxx))) {
		p->ns_per_tick = sxy / sxx;
		p->ns_at_0 = mn - p->ns_per_tick * mt;
		p->calibrated = 1;
	} else if (p->nominal_hz) {
		p->ns_per_tick = 1e9L / p->nominal_hz;
		p->ns_at_0 = n ? mn - p->ns_per_tick * mt : 0;
		p->calibrated = 1;
	}
}

uint64_t ta_process_dur_ns(const struct ta_process *p, uint64_t ticks)
{
	long double ns = ticks * p->ns_per_tick;

	return ns >= 18446744073709551615.0L ? UINT64_MAX : (uint64_t)llroundl(ns);
}

int64_t ta_process_ticks_ns(const struct ta_process *p, uint64_t ticks)
{
	long double ns = p->ns_at_0 + ticks * p->ns_per_tick;

	if (ns >= 9223372036854775807.0L)
		return INT64_MAX;
	if (ns <= -9223372036854775807.0L)
		return -INT64_MAX;
	return (int64_t)llroundl(ns);
}

/* ---- finishing --------------------------------------------------------------------- */

static int modrange_cmp(const void *a, const void *b)
{
	const struct ta_modrange *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static void build_map(struct ta_process *p)
{
	size_t n = 0;

	for (size_t i = 0; i < p->nmodules; i++)
		n += p->modules[i].nranges;
	free(p->map);
	p->nmap = 0;
	p->map = n ? malloc(n * sizeof(*p->map)) : NULL;
	if (!p->map)
		return;
	/* A module that replaced another at the same place (dlclose,
	 * dlopen) is told apart by the address's tag (ta_process_module_at). */
	for (size_t i = 0; i < p->nmodules; i++)
		for (size_t k = 0; k < p->modules[i].nranges; k++) {
			const struct ta_range *rg = &p->modules[i].ranges[k];

			if (rg->end <= rg->start)
				continue;
			p->map[p->nmap].start = rg->start;
			p->map[p->nmap].end = rg->end;
			p->map[p->nmap].m = &p->modules[i];
			p->nmap++;
		}
	qsort(p->map, p->nmap, sizeof(*p->map), modrange_cmp);
}

/* Modules in the order they were loaded (then as the dump lists them). */
static int load_order(const struct ta_module *a, const struct ta_module *b)
{
	if (a->load_ticks != b->load_ticks)
		return a->load_ticks < b->load_ticks ? -1 : 1;
	return a < b ? -1 : a > b;
}

#define CANDIDATES 32

const struct ta_module *ta_process_module_at(const struct ta_process *p, uint64_t key)
{
	const struct ta_module *cand[CANDIDATES];
	uint64_t addr = ta_process_addr(p, key);
	size_t lo = 0, hi = p->nmap, nc = 0, gen;

	/* The last range starting at or below addr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->map[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Ranges of different modules do not overlap in one address space at
	 * one time, but a dump may say otherwise, and modules unloaded and
	 * replaced did: look back a little. */
	for (size_t i = lo;
	     i-- > 0 && lo - i <= (p->nunloaded ? CANDIDATES : 8) && nc < CANDIDATES;)
		if (addr < p->map[i].end)
			cand[nc++] = p->map[i].m;
	if (nc <= 1 || !p->nunloaded)
		return nc ? cand[0] : NULL;
	/* Several instances held addr in turn: the tag says how many had
	 * been unloaded by the event's time, so it is the next one loaded. */
	for (size_t i = 1; i < nc; i++)
		for (size_t k = i; k > 0 && load_order(cand[k], cand[k - 1]) < 0; k--) {
			const struct ta_module *x = cand[k];

			cand[k] = cand[k - 1];
			cand[k - 1] = x;
		}
	gen = (size_t)(key >> TA_ADDR_TAG_SHIFT) & TA_ADDR_TAG_MAX;
	return cand[gen < nc ? gen : nc - 1];
}

void ta_session_finish(struct ta_session *s)
{
	const struct ta_process *ref = NULL;

	if (s->finished)
		return;
	s->finished = 1;
	for (size_t i = 0; i < s->nthreads; i++) {
		struct ta_thread *t = s->threads[i];
		struct ta_process *p = ta_session_process(s, t->pid);

		if (!t->over)
			thread_close(s, t);
		if (p && t->has_end)
			note_ticks(p, t->end_ticks);
	}
	for (size_t i = 0; i < s->nprocs; i++) {
		calibrate(s->procs[i]);
		build_map(s->procs[i]);
		if (s->procs[i]->calibrated && !ref)
			ref = s->procs[i];
	}
	/* A process without its own calibration (its CLOCK chunk lost) ran
	 * on the same machine as one with: borrow that line. */
	for (size_t i = 0; i < s->nprocs; i++) {
		struct ta_process *p = s->procs[i];

		if (p->calibrated)
			continue;
		if (ref) {
			p->ns_per_tick = ref->ns_per_tick;
			p->ns_at_0 = ref->ns_at_0;
		} else {
			p->uncalibrated = 1;
		}
	}
}

const char *ta_session_incomplete(const struct ta_session *s)
{
	if (s->errors_all)
		return "the dump is damaged";
	if (!s->nprocs)
		return "the dump holds no process (the program ended before writing any)";
	for (size_t i = 0; i < s->nprocs; i++) {
		const struct ta_process *p = s->procs[i];

		if (!p->has_end)
			return "no end chunk: the program was killed or is still running";
		if (p->end_flags & 1)
			return "the agent could not write all of its data";
		if (p->chunks_missing)
			return "chunks are missing";
	}
	for (size_t i = 0; i < s->nthreads; i++)
		if (s->threads[i]->chunks_missing)
			return "chunks are missing";
	return NULL;
}

/* ---- session lifetime --------------------------------------------------------------- */

struct ta_session *ta_session_new(const struct ta_visitor *v)
{
	struct ta_session *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	ta_decoder_init(&s->dec);
	if (v)
		s->v = *v;
	return s;
}

void ta_session_free(struct ta_session *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nthreads; i++)
		thread_free(s->threads[i]);
	free(s->threads);
	free(s->thash);
	for (size_t i = 0; i < s->nprocs; i++)
		process_free(s->procs[i]);
	free(s->procs);
	ta_decoder_free(&s->dec);
	free(s);
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

static size_t fslot(uint32_t thread, uint64_t addr, size_t nslots)
{
	uint64_t h = (addr ^ ((uint64_t)thread << 47)) * 0x9e3779b97f4a7c15ull;

	return (size_t)(h >> 20) & (nslots - 1);
}

static int profile_grow(struct ta_profile *p)
{
	size_t n = p->nslots ? p->nslots * 2 : 1024;
	uint32_t *slot = calloc(n, sizeof(*slot));

	if (!slot)
		return -1;
	for (size_t i = 0; i < p->n; i++) {
		size_t k = fslot(p->f[i].thread, p->f[i].addr, n);

		while (slot[k])
			k = (k + 1) & (n - 1);
		slot[k] = (uint32_t)i + 1;
	}
	free(p->slot);
	p->slot = slot;
	p->nslots = n;
	return 0;
}

/* A function not seen before on this thread: a new entry. */
static __attribute__((noinline)) uintptr_t profile_new(struct ta_profile *p, struct ta_thread *t,
						       uint64_t addr)
{
	struct ta_fstat *f;
	size_t k;

	/* Keep the table at most half full. */
	if ((p->n + 1) * 2 > p->nslots && profile_grow(p) < 0)
		return NO_STAT;
	if (p->n == p->cap) {
		size_t cap = p->cap ? p->cap * 2 : 256;
		struct ta_fstat *v;

		if (cap > UINT32_MAX - 1)
			return NO_STAT;
		v = realloc(p->f, cap * sizeof(*v));
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
	for (k = fslot(t->index, addr, p->nslots); p->slot[k]; k = (k + 1) & (p->nslots - 1))
		;
	p->slot[k] = (uint32_t)++p->n;
	return p->n;
}

static TA_INLINE uintptr_t profile_enter(void *ctx, struct ta_thread *t, uint64_t ticks,
					 uint32_t depth, uint64_t addr, unsigned flags)
{
	struct ta_profile *p = ctx;

	p->lookups++;
	if (__builtin_expect(p->nslots != 0, 1)) {
		for (size_t k = fslot(t->index, addr, p->nslots); p->slot[k];
		     k = (k + 1) & (p->nslots - 1)) {
			struct ta_fstat *f = &p->f[p->slot[k] - 1];

			if (f->addr == addr && f->thread == t->index) {
				f->active++;
				return p->slot[k];
			}
		}
	}
	return profile_new(p, t, addr);
}

static TA_INLINE void profile_exit(void *ctx, struct ta_thread *t, const struct ta_exit_info *x)
{
	struct ta_profile *p = ctx;
	struct ta_fstat *f;

	if (x->user == NO_STAT)
		return;
	f = &p->f[x->user - 1];
	f->calls++;
	f->sum += x->duration;
	f->self += x->self;
	if (x->duration < f->min)
		f->min = x->duration;
	if (x->duration > f->max)
		f->max = x->duration;
	/* Only the outermost activation adds to the total, so recursion
	 * is not counted twice. */
	if (--f->active == 0)
		f->total += x->duration;
	if (x->flags & TA_VISIT_OPEN)
		f->open++;
	if (x->flags & TA_VISIT_UNWOUND)
		f->unwound++;
}

static TA_INLINE void profile_exit_hist(void *ctx, struct ta_thread *t,
					const struct ta_exit_info *x)
{
	struct ta_profile *p = ctx;

	profile_exit(ctx, t, x);
	if (x->user != NO_STAT)
		ta_hist_add(&p->f[x->user - 1].hist, x->duration);
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
	free(p->slot);
	ta_profile_init(p);
}

void ta_profile_visitor(struct ta_profile *p, struct ta_visitor *v)
{
	memset(v, 0, sizeof(*v));
	v->ctx = p;
	v->enter = profile_enter;
	v->exit = p->hist ? profile_exit_hist : profile_exit;
}
