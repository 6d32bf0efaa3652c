/* SPDX-License-Identifier: MIT */
/*
 * section.c - `--section NAME`: the section's stretches, and the visitor
 * that clips a view's calls to them (section.h).
 */
#define _GNU_SOURCE
#include "grow.h"
#include "section.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "apiev.h"

static const char *section_name;
static int warned;

void ta_section_set(const char *name)
{
	section_name = name;
}

const char *ta_section_get(void)
{
	return section_name;
}

/* ---- the stretches ------------------------------------------------------------------ */

/* An ENTER (+1) or LEAVE (-1) of the section in process pid. */
struct sec_edge {
	uint32_t pid;
	int step;
	uint64_t ticks, seq;
};

struct sec_win {
	uint64_t start, end; /* ticks: [start, end) */
};

/* An event that holds for the whole run (a counter's unit, a line of
 * application info) made outside the stretches: handed in inside the next
 * one any thread of its process is in. */
struct sec_pend {
	uint64_t kind;
	uint32_t n;
	uint64_t *v;
};
#define SEC_PEND_MAX 4096 /* per process; more are left out */

struct sec_proc {
	uint32_t pid;
	struct sec_win *w;
	size_t n;
	struct sec_pend *pend;
	size_t npend, pend_cap;
};

struct sec_frame {
	uint64_t addr, clip, child; /* clip: where its visited part began */
	uintptr_t user;
	int ghost; /* a frame the session did not visit (inherited): never handed in */
};

struct sec_thread {
	int ready;
	struct sec_proc *proc; /* NULL: never inside */
	size_t wi;	       /* the stretch inside or next */
	int in;
	struct sec_frame *f;
	uint32_t depth, cap;
};

struct ta_section {
	struct ta_visitor in;
	const struct ta_session *walk; /* the view's session (its walk_proc's pauses) */
	struct sec_proc *procs;
	size_t nprocs;
	struct sec_thread *th; /* by ta_sess_thread.index */
	size_t nth;
	/* While reading the edges. */
	struct ta_session *s;
	struct sec_edge *edges;
	size_t nedges, edges_cap;
	int nomem;
};

static void edge_ext(void *ctx, struct ta_sess_thread *t, uint64_t ticks, uint64_t kind,
		     const uint64_t *values, uint32_t n)
{
	struct ta_section *sec = ctx;
	struct ta_process *p;
	const struct ta_site *site;

	if ((kind != TA_EXT_SECTION_ENTER && kind != TA_EXT_SECTION_LEAVE) || n < 1)
		return;
	p = ta_session_process(sec->s, t->pid);
	site = p ? ta_process_site(p, values[0]) : NULL;
	if (!site || !site->name || strcmp(site->name, section_name))
		return;
	if (sec->nedges == sec->edges_cap) {
		struct sec_edge *e =
		    ta_vec_reserve(sec->edges, sec->nedges + 1, &sec->edges_cap, sizeof(*e), 64);

		if (!e) {
			sec->nomem = 1;
			return;
		}
		sec->edges = e;
	}
	sec->edges[sec->nedges] = (struct sec_edge){t->pid, kind == TA_EXT_SECTION_ENTER ? 1 : -1,
						    ticks, (uint64_t)sec->nedges};
	sec->nedges++;
}

static int edge_cmp(const void *a, const void *b)
{
	const struct sec_edge *x = a, *y = b;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->ticks != y->ticks)
		return x->ticks < y->ticks ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The stretches of each process from the edges. */
static int make_windows(struct ta_section *sec)
{
	if (sec->nedges)
		qsort(sec->edges, sec->nedges, sizeof(*sec->edges), edge_cmp);
	sec->procs = calloc(sec->nedges ? sec->nedges : 1, sizeof(*sec->procs));
	if (!sec->procs)
		return -1;
	for (size_t i = 0, j; i < sec->nedges; i = j) {
		struct sec_proc *pr = &sec->procs[sec->nprocs++];
		uint64_t depth = 0;

		for (j = i; j < sec->nedges && sec->edges[j].pid == sec->edges[i].pid; j++)
			;
		pr->pid = sec->edges[i].pid;
		pr->w = malloc((j - i) * sizeof(*pr->w));
		if (!pr->w)
			return -1;
		for (size_t k = i; k < j; k++) {
			const struct sec_edge *e = &sec->edges[k];

			if (e->step > 0 && depth++ == 0)
				pr->w[pr->n++] = (struct sec_win){e->ticks, UINT64_MAX};
			else if (e->step < 0 && depth && --depth == 0)
				pr->w[pr->n - 1].end = e->ticks;
			/* A LEAVE without its ENTER is left out. */
		}
	}
	return 0;
}

struct ta_section *ta_section_new(void)
{
	return calloc(1, sizeof(struct ta_section));
}

void ta_section_edges(struct ta_section *sec, struct ta_session *s, struct ta_visitor *v)
{
	memset(v, 0, sizeof(*v));
	v->ctx = sec;
	v->ext = edge_ext;
	v->chunks = &ta_session_ext_chunks;
	sec->s = s;
}

int ta_section_edges_done(struct ta_section *sec)
{
	sec->s = NULL;
	return sec->nomem || make_windows(sec) < 0 ? -1 : 0;
}

static int read_windows(struct ta_section *sec, const char *const *paths, size_t n)
{
	struct ta_visitor vis;
	struct ta_session *s = ta_session_new(NULL);

	if (!s)
		return -1;
	ta_section_edges(sec, s, &vis);
	s->v = vis;
	/* Damage is told by the view's own pass, which reads the same bytes. */
	for (size_t k = 0; k < n; k++)
		(void)ta_session_read(s, paths[k], NULL);
	ta_session_finish(s);
	ta_session_free(s);
	return ta_section_edges_done(sec);
}

/* ---- the clipping visitor --------------------------------------------------------------- */

static struct sec_thread *thread_of(struct ta_section *sec, const struct ta_sess_thread *t)
{
	struct sec_thread *st;

	if (t->index >= sec->nth) {
		size_t n = sec->nth;
		struct sec_thread *th =
		    ta_vec_reserve(sec->th, (size_t)t->index + 1, &n, sizeof(*th), 16);

		if (!th) {
			sec->nomem = 1;
			return NULL;
		}
		memset(th + sec->nth, 0, (n - sec->nth) * sizeof(*th));
		sec->th = th;
		sec->nth = n;
	}
	st = &sec->th[t->index];
	if (!st->ready) {
		st->ready = 1;
		for (size_t k = 0; k < sec->nprocs; k++)
			if (sec->procs[k].pid == t->pid)
				st->proc = &sec->procs[k];
	}
	return st;
}

/* The events of the whole run waiting for a stretch, handed in on t at
 * ticks (inside one). */
static void pend_flush(struct ta_section *sec, struct sec_proc *pr, struct ta_sess_thread *t,
		       uint64_t ticks)
{
	for (size_t k = 0; k < pr->npend; k++) {
		if (sec->in.ext)
			sec->in.ext(sec->in.ctx, t, ticks, pr->pend[k].kind, pr->pend[k].v,
				    pr->pend[k].n);
		free(pr->pend[k].v);
	}
	pr->npend = 0;
}

static void pend_add(struct ta_section *sec, struct sec_proc *pr, uint64_t kind,
		     const uint64_t *values, uint32_t n)
{
	struct sec_pend *p;

	if (pr->npend >= SEC_PEND_MAX)
		return;
	p = ta_vec_reserve(pr->pend, pr->npend + 1, &pr->pend_cap, sizeof(*p), 8);
	if (!p || !(p[pr->npend].v = malloc((n ? n : 1) * sizeof(*values)))) {
		if (p)
			pr->pend = p;
		sec->nomem = 1;
		return;
	}
	pr->pend = p;
	p[pr->npend].kind = kind;
	p[pr->npend].n = n;
	memcpy(p[pr->npend].v, values, n * sizeof(*values));
	pr->npend++;
}

/* The frames open on the thread handed in as entered at ticks. */
static void open_all(struct ta_section *sec, struct sec_thread *st, struct ta_sess_thread *t,
		     uint64_t ticks)
{
	for (uint32_t i = 0; i < st->depth; i++) {
		struct sec_frame *f = &st->f[i];

		if (f->ghost)
			continue;
		f->clip = ticks;
		f->child = 0;
		f->user = sec->in.enter ? sec->in.enter(sec->in.ctx, t, ticks, i, f->addr, 0) : 0;
		/* Where the views find a caller's value (a callee's parent)
		 * and the start of the call they are in: the visited one's. */
		if (i < t->depth) {
			t->stack[i].user = f->user;
			t->stack[i].enter = ticks;
		}
	}
	pend_flush(sec, st->proc, t, ticks);
}

static void hand_exit(struct ta_section *sec, struct sec_thread *st, struct ta_sess_thread *t,
		      uint32_t i, uint64_t ticks, unsigned flags)
{
	struct sec_frame *f = &st->f[i];
	struct ta_exit_info x = {0};

	if (f->ghost)
		return;
	x.addr = f->addr;
	x.enter = f->clip;
	x.exit = ticks > f->clip ? ticks : f->clip;
	x.duration = x.exit - x.enter;
	/* As the session's: a pause of the recording is in no call. */
	if (sec->walk && sec->walk->walk_proc && sec->walk->walk_proc->npauses) {
		uint64_t g = ta_process_paused(sec->walk->walk_proc, x.enter, x.exit);

		x.duration = g < x.duration ? x.duration - g : 0;
	}
	x.self = x.duration > f->child ? x.duration - f->child : 0;
	x.depth = i;
	x.flags = flags;
	x.user = f->user;
	if (sec->in.exit)
		sec->in.exit(sec->in.ctx, t, &x);
	if (i && !st->f[i - 1].ghost)
		st->f[i - 1].child += x.duration;
}

/* The thread's time moves on to ticks: the stretches crossed on the way
 * close and open its frames. */
static void advance(struct ta_section *sec, struct sec_thread *st, struct ta_sess_thread *t,
		    uint64_t ticks)
{
	const struct sec_proc *pr = st->proc;

	while (pr && st->wi < pr->n) {
		const struct sec_win *w = &pr->w[st->wi];

		if (st->in) {
			if (ticks < w->end)
				return;
			for (uint32_t i = st->depth; i-- > 0;)
				hand_exit(sec, st, t, i, w->end, 0);
			st->in = 0;
			st->wi++;
		} else {
			if (ticks < w->start)
				return;
			open_all(sec, st, t, w->start);
			st->in = 1;
		}
	}
}

static uintptr_t sec_enter(void *ctx, struct ta_sess_thread *t, uint64_t ticks, uint32_t depth,
			   uint64_t addr, unsigned flags)
{
	struct ta_section *sec = ctx;
	struct sec_thread *st = thread_of(sec, t);
	struct sec_frame *f;

	if (!st)
		return 0;
	advance(sec, st, t, ticks);
	if (depth >= st->cap) {
		size_t cap = st->cap;
		struct sec_frame *nf =
		    ta_vec_reserve_max(st->f, (size_t)depth + 1, &cap, sizeof(*nf), 64, UINT32_MAX);

		if (!nf) {
			sec->nomem = 1;
			return 0;
		}
		st->f = nf;
		st->cap = (uint32_t)cap;
	}
	/* Frames below depth the session did not visit here. */
	for (uint32_t i = st->depth; i < depth; i++)
		st->f[i] = (struct sec_frame){0, 0, 0, 0, 1};
	f = &st->f[depth];
	*f = (struct sec_frame){addr, ticks, 0, 0, 0};
	st->depth = depth + 1;
	if (st->in && sec->in.enter)
		f->user = sec->in.enter(sec->in.ctx, t, ticks, depth, addr, flags);
	/* The session keeps it in its frame, where the views look. */
	return f->user;
}

static void sec_exit(void *ctx, struct ta_sess_thread *t, const struct ta_exit_info *x)
{
	struct ta_section *sec = ctx;
	struct sec_thread *st = thread_of(sec, t);

	if (!st)
		return;
	advance(sec, st, t, x->exit);
	if (x->depth >= st->depth)
		return; /* never entered here */
	if (st->in && st->f[x->depth].addr == x->addr)
		hand_exit(sec, st, t, x->depth, x->exit, x->flags);
	st->depth = x->depth;
}

static void sec_lost(void *ctx, struct ta_sess_thread *t, uint64_t ticks, uint64_t count)
{
	struct ta_section *sec = ctx;

	if (sec->in.lost)
		sec->in.lost(sec->in.ctx, t, ticks, count);
}

static void sec_ext(void *ctx, struct ta_sess_thread *t, uint64_t ticks, uint64_t kind,
		    const uint64_t *values, uint32_t n)
{
	struct ta_section *sec = ctx;
	struct sec_thread *st = thread_of(sec, t);

	if (!st)
		return;
	advance(sec, st, t, ticks);
	if (st->in) {
		pend_flush(sec, st->proc, t, ticks);
		if (sec->in.ext)
			sec->in.ext(sec->in.ctx, t, ticks, kind, values, n);
	} else if (st->proc && (kind == TA_EXT_COUNTER_CONFIG || kind == TA_EXT_APP_INFO)) {
		pend_add(sec, st->proc, kind, values, n);
	}
}

static void sec_shorts(void *ctx, struct ta_sess_thread *t, uint64_t addr, uint64_t calls)
{
	struct ta_section *sec = ctx;
	struct sec_thread *st = thread_of(sec, t);

	if (st && st->in)
		sec->in.shorts(sec->in.ctx, t, addr, calls);
}

static void sec_partial(void *ctx, struct ta_sess_thread *t, uint64_t addr)
{
	struct ta_section *sec = ctx;
	struct sec_thread *st = thread_of(sec, t);

	if (st && st->in)
		sec->in.partial(sec->in.ctx, t, addr);
}

int ta_section_wrap(const char *const *paths, size_t n, const struct ta_visitor *in,
		    struct ta_visitor *out, struct ta_section **secp, int *status)
{
	struct ta_section *sec;
	struct stat st;

	*secp = NULL;
	*out = *in;
	if (!section_name)
		return 0;
	for (size_t k = 0; k < n; k++)
		if (stat(paths[k], &st) == 0 && !S_ISREG(st.st_mode)) {
			fprintf(stderr,
				"traceagent: %s: not a regular file: --section reads the dump "
				"twice\n",
				paths[k]);
			*status = 2;
			return -1;
		}
	sec = ta_section_new();
	if (!sec || read_windows(sec, paths, n) < 0) {
		ta_section_free(sec);
		fprintf(stderr, "traceagent: out of memory\n");
		*status = 1;
		return -1;
	}
	/* Once: frames reads the dump twice. */
	if (!sec->nprocs && !warned++)
		fprintf(stderr, "traceagent: %s: no section '%s' in the dump\n",
			n == 1 ? paths[0] : "the dumps", section_name);
	ta_section_visitor(sec, in, out);
	*secp = sec;
	return 0;
}

void ta_section_visitor(struct ta_section *sec, const struct ta_visitor *in, struct ta_visitor *out)
{
	sec->in = *in;
	memset(out, 0, sizeof(*out));
	out->ctx = sec;
	out->enter = sec_enter;
	out->exit = sec_exit;
	out->lost = sec_lost;
	out->ext = sec_ext;
	/* No chunk ops: the clipping follows each thread's time, event by
	 * event. */
	out->shorts = in->shorts ? sec_shorts : NULL;
	out->partial = in->partial ? sec_partial : NULL;
}

void ta_section_session(struct ta_section *sec, const struct ta_session *s)
{
	sec->walk = s;
}

void ta_section_free(struct ta_section *sec)
{
	if (!sec)
		return;
	for (size_t k = 0; k < sec->nprocs; k++) {
		free(sec->procs[k].w);
		for (size_t i = 0; i < sec->procs[k].npend; i++)
			free(sec->procs[k].pend[i].v);
		free(sec->procs[k].pend);
	}
	free(sec->procs);
	for (size_t i = 0; i < sec->nth; i++)
		free(sec->th[i].f);
	free(sec->th);
	free(sec->edges);
	free(sec);
}
