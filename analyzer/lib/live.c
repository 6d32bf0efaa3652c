/* SPDX-License-Identifier: MIT */
/*
 * live.c - a dump aggregated as it arrives (see live.h).
 *
 * The per-event loop is the one that must keep up with the agent: events
 * come from ta_decoder_batch a few hundred at a time, each thread finds
 * its rows by address in an open-addressing table, and its stack holds
 * row indices, so an event costs a probe at most and never allocates.
 * Names are looked up only when a snapshot first meets a row (live_snap.c).
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <lz4.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "framestat.h"
#include "live_int.h"

/* ---- hashing ------------------------------------------------------------------ */

static uint64_t row_hash(const void *ctx, size_t i)
{
	return mix(((const struct row *)ctx)[i].addr);
}

static inline int row_eq(const void *ctx, size_t i, const void *key)
{
	return ((const struct row *)ctx)[i].addr == *(const uint64_t *)key;
}

static uint64_t thr_key(uint32_t pid, uint64_t tid)
{
	return mix(((uint64_t)pid << 40) ^ tid);
}

static uint64_t thr_hash(const void *ctx, size_t i)
{
	const struct thr *t = ((struct thr *const *)ctx)[i];

	return thr_key(t->pid, t->tid);
}

struct thr_id {
	uint32_t pid;
	uint64_t tid;
};

static int thr_eq(const void *ctx, size_t i, const void *key)
{
	const struct thr *t = ((struct thr *const *)ctx)[i];
	const struct thr_id *k = key;

	return t->pid == k->pid && t->tid == k->tid;
}

/* ---- life ----------------------------------------------------------------------- */

struct ta_live *ta_live_new(void)
{
	struct ta_live *L = calloc(1, sizeof(*L));

	if (!L)
		return NULL;
	ta_stream_init(&L->st, TA_CHUNK_MAX_PAYLOAD);
	ta_decoder_init(&L->dec);
	L->s = ta_session_new(NULL);
	L->res = ta_resolver_new();
	if (!L->s || !L->res) {
		ta_live_free(L);
		return NULL;
	}
	ta_session_stored_names(L->s, L->res);
	L->demangle = TA_DEMANGLE_FULL;
	return L;
}

static void thr_free(struct thr *t)
{
	free(t->rows);
	free(t->stack);
	ta_htab_free(&t->by_addr);
	free(t);
}

void ta_live_demangle(struct ta_live *L, enum ta_demangle mode)
{
	L->demangle = mode;
	ta_resolver_shorten(L->res, mode == TA_DEMANGLE_SIMPLE);
}

void ta_live_no_files(struct ta_live *L)
{
	L->no_files = 1;
}

void ta_live_free(struct ta_live *L)
{
	if (!L)
		return;
	ta_stream_free(&L->st);
	ta_decoder_free(&L->dec);
	if (L->s)
		ta_session_free(L->s);
	if (L->res)
		ta_resolver_free(L->res);
	free(L->raw);
	for (size_t i = 0; i < L->nthr; i++)
		thr_free(L->thr[i]);
	free(L->thr);
	if (L->other_thr)
		thr_free(L->other_thr);
	ta_htab_free(&L->thr_by_id);
	for (size_t i = 0; i < L->nprocs; i++)
		free(L->procs[i]);
	free(L->procs);
	free(L->other_proc);
	free(L->fns);
	free(L->fn_hash);
	ta_htab_free(&L->fn_by_name);
	for (size_t i = 0; i < L->nown; i++)
		free(L->own[i]);
	free(L->own);
	free(L->fset);
	free(L->ftimes);
	free(L->snap_thr);
	free(L);
}

/* ---- processes and threads ------------------------------------------------------- */

static struct proc *proc_get(struct ta_live *L, uint32_t pid)
{
	struct proc *p;

	/* Few processes: a dump holds one, and its forked children. */
	for (size_t i = 0; i < L->nprocs; i++)
		if (L->procs[i]->pid == pid)
			return L->procs[i];
	if (L->nprocs >= TA_LIVE_PROCS_MAX) {
		L->capped |= CAP_PROCS;
		if (!L->other_proc) {
			L->other_proc = calloc(1, sizeof(*L->other_proc));
			if (L->other_proc)
				L->other_proc->ns_per_tick = 1;
		}
		return L->other_proc;
	}
	if (L->nprocs == L->procs_cap) {
		struct proc **n =
		    ta_vec_reserve(L->procs, L->nprocs + 1, &L->procs_cap, sizeof(*n), 8);

		if (!n)
			return NULL;
		L->procs = n;
	}
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->pid = pid;
	p->ns_per_tick = 1;
	L->procs[L->nprocs++] = p;
	return p;
}

static struct thr *thr_alloc(struct ta_live *L, uint32_t pid, uint64_t tid)
{
	struct thr *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->pid = pid;
	t->tid = tid;
	t->other_row = -1;
	t->proc = proc_get(L, pid);
	if (!t->proc) {
		free(t);
		return NULL;
	}
	return t;
}

static struct thr *thr_get(struct ta_live *L, uint32_t pid, uint64_t tid)
{
	struct thr_id key = {pid, tid};
	struct thr *t;
	size_t k;

	if (ta_htab_reserve(&L->thr_by_id, L->nthr, 64, thr_hash, L->thr) < 0)
		return NULL;
	k = ta_htab_find(&L->thr_by_id, thr_key(pid, tid), thr_eq, L->thr, &key);
	if (ta_htab_at(&L->thr_by_id, k))
		return L->thr[ta_htab_at(&L->thr_by_id, k) - 1];
	if (L->nthr >= TA_LIVE_THREADS_MAX) {
		/* One thread for all the others: its stack is whichever
		 * chunk came last, its rows their sum. */
		L->capped |= CAP_THREADS;
		if (!L->other_thr)
			L->other_thr = thr_alloc(L, 0, UINT64_MAX);
		return L->other_thr;
	}
	if (L->nthr == L->thr_cap) {
		struct thr **n = ta_vec_reserve(L->thr, L->nthr + 1, &L->thr_cap, sizeof(*n), 16);

		if (!n)
			return NULL;
		L->thr = n;
	}
	t = thr_alloc(L, pid, tid);
	if (!t)
		return NULL;
	ta_htab_put(&L->thr_by_id, k, L->nthr);
	L->thr[L->nthr++] = t;
	return t;
}

static int rows_room(struct thr *t)
{
	if (t->nrows == t->cap) {
		struct row *n = ta_vec_reserve(t->rows, t->nrows + 1, &t->cap, sizeof(*n), 64);

		if (!n)
			return -1;
		t->rows = n;
	}
	return 0;
}

/* Past TA_LIVE_ROWS_MAX: the thread's "(other functions)" row, made the
 * first time (out of the table: no address finds it). */
static int64_t row_other(struct ta_live *L, struct thr *t)
{
	L->capped |= CAP_ROWS;
	if (t->other_row < 0) {
		if (rows_room(t) < 0)
			return -1;
		t->rows[t->nrows] = (struct row){.fn = -1, .other = 1};
		t->other_row = (int64_t)t->nrows++;
	}
	return t->other_row;
}

/* The row of addr on thread t, added when new: its index, or -1 without
 * memory. */
static inline int64_t row_get(struct ta_live *L, struct thr *t, uint64_t addr)
{
	size_t k;

	if (L->nrows >= TA_LIVE_ROWS_MAX) {
		/* No row is added any more: the table has room as it is. */
		if (t->by_addr.nslots) {
			k = ta_htab_find(&t->by_addr, mix(addr), row_eq, t->rows, &addr);
			if (ta_htab_at(&t->by_addr, k))
				return ta_htab_at(&t->by_addr, k) - 1;
		}
		return row_other(L, t);
	}
	if (ta_htab_reserve(&t->by_addr, t->nrows, 64, row_hash, t->rows) < 0)
		return -1;
	k = ta_htab_find(&t->by_addr, mix(addr), row_eq, t->rows, &addr);
	if (ta_htab_at(&t->by_addr, k))
		return ta_htab_at(&t->by_addr, k) - 1;
	if (t->nrows == t->cap) {
		struct row *n = ta_vec_reserve(t->rows, t->nrows + 1, &t->cap, sizeof(*n), 64);

		if (!n)
			return -1;
		t->rows = n;
	}
	t->rows[t->nrows] = (struct row){.addr = addr, .fn = -1};
	ta_htab_put(&t->by_addr, k, t->nrows);
	L->nrows++;
	return (int64_t)t->nrows++;
}

/* Room for need stack entries on t: 0, 1 when the stacks' budget allows
 * less (t->scap is what there is; the first 64 of a thread are always
 * allowed), or -1 without memory. */
static int stack_room(struct ta_live *L, struct thr *t, uint32_t need)
{
	uint64_t cap = t->scap ? t->scap : 64;
	uint32_t *n;

	if (need <= t->scap)
		return 0;
	while (cap < need)
		cap *= 2;
	while (cap > 64 && L->stack_total - t->scap + cap > TA_LIVE_STACK_MAX)
		cap /= 2;
	if (cap <= t->scap) {
		L->capped |= CAP_STACK;
		return 1;
	}
	/* Exactly cap (max cap): the budget, not doubling, sets the size. */
	size_t have = t->scap;

	n = ta_vec_reserve_max(t->stack, (size_t)cap, &have, sizeof(*n), (size_t)cap, (size_t)cap);
	if (!n)
		return -1;
	L->stack_total += cap - t->scap;
	t->stack = n;
	t->scap = (uint32_t)cap;
	if (cap < need) {
		L->capped |= CAP_STACK;
		return 1;
	}
	return 0;
}

/* Pops n frames: those past the budget first. */
static void stack_pop(struct thr *t, uint64_t n)
{
	uint64_t d = n < t->deep ? n : t->deep;

	t->deep -= d;
	n -= d;
	t->depth -= n < t->depth ? (uint32_t)n : t->depth;
}

/* ---- frames ------------------------------------------------------------------------ */

static void frame_mark(struct ta_live *L, struct thr *t, uint64_t ticks, uint64_t site)
{
	struct ta_process *sp = ta_session_process(L->s, t->pid);
	const struct ta_site *st = sp && sp->nsites ? ta_process_site(sp, site) : NULL;
	const char *name = st && st->name[0] ? st->name : "frame";
	struct proc *p = t->proc;

	if (!L->fset || (strcmp(L->fset, "frame") && !strcmp(name, "frame"))) {
		char *n = strdup(name);

		if (!n)
			return;
		free(L->fset);
		L->fset = n;
		L->nftimes = 0;
		for (size_t i = 0; i < L->nprocs; i++)
			L->procs[i]->have_mark = 0;
	} else if (strcmp(L->fset, name)) {
		return;
	}
	if (p->have_mark && ticks >= p->last_mark) {
		if (L->nftimes == L->ftimes_cap && L->ftimes_cap < FRAMES_KEPT_MAX) {
			uint64_t *n = ta_vec_reserve(L->ftimes, L->nftimes + 1, &L->ftimes_cap,
						     sizeof(*n), 256);

			if (n)
				L->ftimes = n;
		}
		if (L->nftimes < L->ftimes_cap)
			L->ftimes[L->nftimes++] = to_ns(ticks - p->last_mark, p->ns_per_tick);
		L->frames++;
	}
	p->last_mark = ticks;
	p->have_mark = 1;
}

/* ---- the clock --------------------------------------------------------------------- */

/* Sets p's ns per tick from the session's view of its clock: the slope of
 * its first and last CLOCK pairs, else its nominal frequency, else 1 (a
 * CLOCK_MONOTONIC process counts in ns). */
void ta_live_proc_rate(struct ta_live *L, struct proc *p)
{
	const struct ta_process *sp = ta_session_process(L->s, p->pid);

	if (!sp || (p->rate_known && sp->nclock == p->rate_nclock))
		return;
	if (sp->nclock >= 2) {
		const struct ta_clock_pair *a = &sp->clock[0], *b = &sp->clock[sp->nclock - 1];

		if (b->ticks > a->ticks && b->ns > a->ns) {
			p->ns_per_tick =
			    (long double)(b->ns - a->ns) / (long double)(b->ticks - a->ticks);
			p->rate_known = 1;
		}
	}
	if (!p->rate_known && sp->nominal_hz)
		p->ns_per_tick = 1e9L / (long double)sp->nominal_hz;
	else if (!p->rate_known && sp->clock_source == TA_CLOCK_MONOTONIC)
		p->ns_per_tick = 1;
	p->rate_nclock = sp->nclock;
}

/* ---- EVENTS ------------------------------------------------------------------------- */

/* The stream's time of process p has reached ticks. */
static void stream_time(struct proc *p, uint64_t ticks)
{
	if (!p->have_ticks) {
		p->first_ticks = p->max_ticks = ticks;
		p->have_ticks = 1;
	} else if (ticks > p->max_ticks) {
		p->max_ticks = ticks;
	}
}

/* The time [from, to) of thread t in row r: all in its self, the part
 * after the previous snapshot's cut in the interval's. */
static void add_self(const struct thr *t, struct row *r, uint64_t from, uint64_t to)
{
	uint64_t in = from;

	r->self += to - from;
	if (t->proc->have_cut && in < t->proc->cut_ticks)
		in = t->proc->cut_ticks;
	if (to > in)
		r->iself += to - in;
}

static int events_chunk(struct ta_live *L, uint32_t pid, const uint8_t *payload, size_t len)
{
	struct ta_decoder *d = &L->dec;
	struct thr *t;
	int rc = ta_decoder_begin(d, payload, len);
	uint64_t last;

	if (rc < 0)
		return 0; /* a malformed chunk: nothing of it is shown */
	t = thr_get(L, pid, d->tid);
	if (!t || stack_room(L, t, d->snapshot_depth + 1) < 0)
		return -TA_E_NOMEM;
	if (!t->proc->rate_known)
		ta_live_proc_rate(L, t->proc);
	/* The stack from the chunk's snapshot.  The time since the thread's
	 * previous chunk was on top of this same stack, so it is charged
	 * from the last event of that chunk when none went missing. */
	t->depth = 0;
	t->deep = 0;
	for (uint32_t i = 0; i < d->snapshot_depth; i++) {
		int64_t r;

		if (t->depth == t->scap) {
			t->deep += d->snapshot_depth - i;
			break;
		}
		r = row_get(L, t, d->snapshot[i]);
		if (r < 0)
			return -TA_E_NOMEM;
		t->stack[t->depth++] = (uint32_t)r;
	}
	last = t->have_last && d->chunk_seq == t->next_seq && t->last_ticks <= d->first_ticks
		   ? t->last_ticks
		   : d->first_ticks;
	t->next_seq = d->chunk_seq + 1;
	for (;;) {
		size_t n = ta_decoder_batch(d, L->ev, BATCH, &rc);
		uint64_t nev = 0;

		for (size_t i = 0; i < n; i++) {
			const struct ta_event *e = &L->ev[i];

			if (e->ticks > last) {
				if (t->depth)
					add_self(t, &t->rows[t->stack[t->depth - 1]], last,
						 e->ticks);
				last = e->ticks;
			}
			stream_time(t->proc, last);
			switch (e->kind) {
			case TA_EV_ENTER: {
				int64_t r = row_get(L, t, e->addr);
				int room = 0;

				if (r < 0)
					return -TA_E_NOMEM;
				if (t->deep || (t->depth == t->scap &&
						(room = stack_room(L, t, t->depth + 1)) != 0)) {
					if (room < 0)
						return -TA_E_NOMEM;
					t->deep++;
				} else {
					t->stack[t->depth++] = (uint32_t)r;
				}
				t->rows[r].calls++;
				nev++;
				break;
			}
			case TA_EV_EXIT:
				stack_pop(t, e->popped);
				nev++;
				break;
			default:
				if (e->ext == TA_EXT_LOST) {
					t->lost += e->value;
					t->proc->lost += e->value;
				} else if (e->ext == TA_EXT_FRAME && e->value >= 1) {
					frame_mark(L, t, e->ticks, d->ext_values[0]);
				} else if (e->ext == TA_EXT_LONGJMP || e->ext == TA_EXT_CATCH) {
					stack_pop(t, e->popped);
				} else if (e->ext == TA_EXT_WAIT && e->value >= 2) {
					/* The agent's wait (the session's walk makes
					 * it a frame): its time is its own row's, not
					 * the function's on top. */
					int64_t r = row_get(L, t, TA_WAIT_KEY);
					uint64_t wl = d->ext_values[1];

					if (r < 0)
						return -TA_E_NOMEM;
					t->rows[r].calls++;
					add_self(t, &t->rows[r], last,
						 last + wl < last ? UINT64_MAX : last + wl);
					last = last + wl < last ? UINT64_MAX : last + wl;
					stream_time(t->proc, last);
				}
				break;
			}
		}
		t->events += nev;
		L->events += nev;
		if (rc)
			break;
	}
	t->last_ticks = last;
	t->have_last = 1;
	return 0;
}

/* ---- chunks -------------------------------------------------------------------------- */

static int take_chunk(struct ta_live *L, const struct ta_stream_ev *ev)
{
	const struct ta_chunk_header *h = &ev->chunk;
	struct ta_chunk c = {.h = *h, .index = L->chunk_index++, .offset = ev->offset};
	const uint8_t *payload = ev->payload;
	size_t len = h->stored_size;

	if (!payload)
		return 0; /* over keep_max: cannot happen with TA_CHUNK_MAX_PAYLOAD */
	if (h->flags & TA_CHUNK_F_LZ4) {
		if (h->raw_size > L->raw_cap) {
			/* Exactly raw_size (max raw_size): a chunk's, not doubled. */
			uint8_t *n = ta_vec_reserve_max(L->raw, h->raw_size, &L->raw_cap, 1,
							h->raw_size, h->raw_size);

			if (!n)
				return -TA_E_NOMEM;
			L->raw = n;
		}
		if (LZ4_decompress_safe((const char *)payload, (char *)L->raw, (int)h->stored_size,
					(int)h->raw_size) != (int)h->raw_size)
			return 0; /* a bad block: the chunk is left out */
		payload = L->raw;
		len = h->raw_size;
	}
	if (h->type == TA_CHUNK_EVENTS)
		return events_chunk(L, h->pid, payload, len);
	/* What the session keeps grows with the metadata it is given: a
	 * process, a thread, or bytes past their caps are left out (an END
	 * is small and says the process ended). */
	if (L->s->nprocs >= TA_LIVE_PROCS_MAX && !ta_session_process(L->s, h->pid)) {
		L->capped |= CAP_PROCS;
		return 0;
	}
	if ((h->type == TA_CHUNK_THREAD_START || h->type == TA_CHUNK_THREAD_NAME) &&
	    L->s->nthreads >= TA_LIVE_THREADS_MAX) {
		L->capped |= CAP_THREADS;
		return 0;
	}
	if (h->type != TA_CHUNK_END) {
		if (L->meta + len + 256 > TA_LIVE_META_MAX) {
			L->capped |= CAP_META;
			return 0;
		}
		L->meta += len + 256;
	}
	c.payload = payload;
	c.len = len;
	if (ta_session_chunk(L->s, &c) < 0)
		return -TA_E_NOMEM;
	if (h->type == TA_CHUNK_CLOCK || h->type == TA_CHUNK_PROCESS) {
		struct proc *p = proc_get(L, h->pid);

		if (!p)
			return -TA_E_NOMEM;
		p->rate_known = 0;
		ta_live_proc_rate(L, p);
	}
	return 0;
}

int ta_live_feed(struct ta_live *L, const uint8_t *p, size_t n, uint64_t *off)
{
	while (n) {
		struct ta_stream_ev ev;
		size_t took = ta_stream_feed(&L->st, p, n, &ev);
		int rc = 0;

		p += took;
		n -= took;
		switch (ev.what) {
		case TA_STREAM_HEADER:
			L->have_header = 1;
			L->pid = ev.file.pid;
			L->s->fh = ev.file;
			break;
		case TA_STREAM_CHUNK:
			rc = take_chunk(L, &ev);
			break;
		case TA_STREAM_ERROR:
			*off = ev.offset;
			return ev.err;
		case TA_STREAM_MORE:
			break;
		}
		if (rc < 0) {
			*off = ev.offset;
			return rc;
		}
	}
	return 0;
}

int ta_live_at_boundary(const struct ta_live *L)
{
	return ta_stream_at_boundary(&L->st);
}

int ta_live_ended(const struct ta_live *L)
{
	for (size_t i = 0; i < L->s->nprocs; i++)
		if (!L->s->procs[i]->has_end)
			return 0;
	return L->s->nprocs > 0;
}

uint64_t ta_live_events(const struct ta_live *L)
{
	return L->events;
}

uint32_t ta_live_pid(const struct ta_live *L)
{
	return L->have_header ? L->pid : 0;
}
