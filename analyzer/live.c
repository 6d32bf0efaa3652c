/* SPDX-License-Identifier: MIT */
/*
 * live.c - a dump aggregated as it arrives (see live.h).
 *
 * The per-event loop is the one that must keep up with the agent: events
 * come from ta_decoder_batch a few hundred at a time, each thread finds
 * its rows by address in an open-addressing table, and its stack holds
 * row indices, so an event costs a probe at most and never allocates.
 * Names are looked up only when a snapshot first meets a row.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <lz4.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "framestat.h"
#include "live.h"

#define BATCH 512
#define FRAMES_KEPT_MAX (1u << 20) /* frame times kept per interval */

/* One function or zone address on one thread; ticks. */
struct row {
	uint64_t addr;
	uint64_t calls, self;
	uint64_t pcalls, pself; /* at the previous snapshot */
	/* Self time since the previous snapshot's cut (struct proc): a chunk
	 * that comes late carries time from before it, which is in self (the
	 * totals) and not in the interval's. */
	uint64_t iself;
	int32_t fn;		/* index in L->fns once named, else -1 */
	int32_t other;		/* the thread's "(other functions)" */
};

/* The caps (live.h) hit, as bits of ta_live.capped. */
enum {
	CAP_PROCS = 1,
	CAP_THREADS = 2,
	CAP_ROWS = 4,
	CAP_STACK = 8,
	CAP_META = 16,
};

struct proc {
	uint32_t pid;
	long double ns_per_tick;
	size_t rate_nclock; /* the session's clock pairs the rate was taken from */
	int rate_known;
	uint64_t last_mark; /* of the frame set shown */
	int have_mark;
	uint64_t lost; /* LOST events in its threads' chunks */
	/* The stream's time: its first and latest event ticks, and the latest
	 * at the previous snapshot (the cut: the interval's self time is what
	 * comes after it, so no thread has more than the interval). */
	uint64_t first_ticks, max_ticks, cut_ticks;
	int have_ticks, have_cut;
};

struct thr {
	uint32_t pid;
	uint64_t tid;
	struct proc *proc;
	struct row *rows;
	size_t nrows, cap;
	struct ta_htab by_addr;
	uint32_t *stack; /* row indices, bottom first */
	uint32_t depth, scap;
	uint64_t deep;	  /* frames above the stack, past the stacks' budget */
	int64_t other_row; /* its "(other functions)" row, or -1 */
	uint64_t last_ticks;
	int have_last;
	uint64_t next_seq;
	uint64_t events, pevents, lost;
	const struct ta_sess_thread *sth; /* the session's, for its name and end */
};

struct ta_live {
	struct ta_stream st;
	struct ta_session *s;
	struct ta_resolver *res;
	struct ta_decoder dec;
	struct ta_event ev[BATCH];
	uint8_t *raw; /* decompressed payload */
	size_t raw_cap;
	uint64_t chunk_index;
	uint32_t pid;
	int have_header;

	struct thr **thr;
	size_t nthr, thr_cap;
	struct ta_htab thr_by_id;
	struct thr *other_thr; /* the threads past TA_LIVE_THREADS_MAX */
	struct proc **procs;
	size_t nprocs, procs_cap;
	struct proc *other_proc; /* the processes past TA_LIVE_PROCS_MAX */
	uint64_t nrows;		 /* over all threads */
	uint64_t stack_total;	 /* stack entries allocated over all threads */
	uint64_t meta;		 /* metadata given to the session (TA_LIVE_META_MAX) */
	unsigned capped, pcapped; /* CAP_ bits, and at the previous snapshot */
	char capmsg[480];
	int no_files;
	enum ta_demangle demangle;

	uint64_t events, pevents;

	/* Functions merged by (name, module) for snapshots. */
	struct ta_live_fn *fns;
	uint64_t *fn_hash;
	size_t nfns, fns_cap;
	struct ta_htab fn_by_name;
	char **own; /* names made up for addresses outside every module */
	size_t nown, own_cap;

	/* The frame set shown and the frame times of the interval, ns. */
	char *fset;
	uint64_t *ftimes;
	size_t nftimes, ftimes_cap;
	uint64_t frames, pframes;

	struct ta_live_thr *snap_thr;
	size_t snap_thr_cap;
	uint64_t snap_seq;
};

/* ---- hashing ------------------------------------------------------------------ */

static inline uint64_t mix(uint64_t x)
{
	x ^= x >> 31;
	x *= 0x9e3779b97f4a7c15ull;
	x ^= x >> 29;
	return x;
}

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

static uint64_t str_hash(const char *name, const char *module)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (const char *p = name; *p; p++)
		h = (h ^ (uint8_t)*p) * 0x100000001b3ull;
	h = (h ^ 0xff) * 0x100000001b3ull;
	for (const char *p = module; *p; p++)
		h = (h ^ (uint8_t)*p) * 0x100000001b3ull;
	return mix(h);
}

static uint64_t fn_hash_at(const void *ctx, size_t i)
{
	return ((const uint64_t *)ctx)[i];
}

struct fn_key {
	const struct ta_live *L;
	const char *name, *module;
};

static int fn_eq(const void *ctx, size_t i, const void *key)
{
	const struct fn_key *k = key;
	const struct ta_live_fn *f = &k->L->fns[i];

	(void)ctx;
	return !strcmp(f->name, k->name) && !strcmp(f->module, k->module);
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
		size_t cap = L->procs_cap ? 2 * L->procs_cap : 8;
		struct proc **n = realloc(L->procs, cap * sizeof(*n));

		if (!n)
			return NULL;
		L->procs = n;
		L->procs_cap = cap;
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
		size_t cap = L->thr_cap ? 2 * L->thr_cap : 16;
		struct thr **n = realloc(L->thr, cap * sizeof(*n));

		if (!n)
			return NULL;
		L->thr = n;
		L->thr_cap = cap;
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
		size_t cap = t->cap ? 2 * t->cap : 64;
		struct row *n = realloc(t->rows, cap * sizeof(*n));

		if (!n)
			return -1;
		t->rows = n;
		t->cap = cap;
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
		size_t cap = t->cap ? 2 * t->cap : 64;
		struct row *n = realloc(t->rows, cap * sizeof(*n));

		if (!n)
			return -1;
		t->rows = n;
		t->cap = cap;
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
	n = realloc(t->stack, cap * sizeof(*n));
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

/* ticks in ns at rate ns per tick, saturated: a stream's clock pairs can
 * claim any rate, and an out-of-range conversion is undefined. */
static uint64_t to_ns(uint64_t ticks, long double rate)
{
	long double v = (long double)ticks * rate;

	if (!(v > 0))
		return 0; /* negative or NaN */
	if (v >= 18446744073709551615.0L)
		return UINT64_MAX;
	return (uint64_t)v;
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
			size_t cap = L->ftimes_cap ? 2 * L->ftimes_cap : 256;
			uint64_t *n = realloc(L->ftimes, cap * sizeof(*n));

			if (n) {
				L->ftimes = n;
				L->ftimes_cap = cap;
			}
		}
		if (L->nftimes < L->ftimes_cap)
			L->ftimes[L->nftimes++] =
			    to_ns(ticks - p->last_mark, p->ns_per_tick);
		L->frames++;
	}
	p->last_mark = ticks;
	p->have_mark = 1;
}

/* ---- the clock --------------------------------------------------------------------- */

/* Sets p's ns per tick from the session's view of its clock: the slope of
 * its first and last CLOCK pairs, else its nominal frequency, else 1 (a
 * CLOCK_MONOTONIC process counts in ns). */
static void proc_rate(struct ta_live *L, struct proc *p)
{
	const struct ta_process *sp = ta_session_process(L->s, p->pid);

	if (!sp || (p->rate_known && sp->nclock == p->rate_nclock))
		return;
	if (sp->nclock >= 2) {
		const struct ta_clock_pair *a = &sp->clock[0], *b = &sp->clock[sp->nclock - 1];

		if (b->ticks > a->ticks && b->ns > a->ns) {
			p->ns_per_tick = (long double)(b->ns - a->ns) / (long double)(b->ticks - a->ticks);
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
		proc_rate(L, t->proc);
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
			uint8_t *n = realloc(L->raw, h->raw_size);

			if (!n)
				return -TA_E_NOMEM;
			L->raw = n;
			L->raw_cap = h->raw_size;
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
		proc_rate(L, p);
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

/* ---- naming ------------------------------------------------------------------------ */

/* A name made up for addr: "module+0xOFFSET" with a module's path, else
 * "0xADDR". */
static const char *own_name(struct ta_live *L, const char *path, uint64_t addr)
{
	char *s;
	int n;

	if (L->nown == L->own_cap) {
		size_t cap = L->own_cap ? 2 * L->own_cap : 16;
		char **o = realloc(L->own, cap * sizeof(*o));

		if (!o)
			return "?";
		L->own = o;
		L->own_cap = cap;
	}
	if (path) {
		const char *base = strrchr(path, '/');

		n = asprintf(&s, "%s+0x%" PRIx64, base ? base + 1 : path, addr);
	} else {
		n = asprintf(&s, "0x%" PRIx64, addr);
	}
	if (n < 0)
		return "?";
	L->own[L->nown++] = s;
	return s;
}

/* The module of process p whose ranges hold addr: the last loaded one
 * still mapped, else the last one. */
static const struct ta_sess_module *module_at(const struct ta_process *p, uint64_t addr)
{
	const struct ta_sess_module *found = NULL;

	for (size_t i = 0; i < p->nmodules; i++) {
		const struct ta_sess_module *m = &p->modules[i];

		for (size_t k = 0; k < m->nranges; k++)
			if (addr >= m->ranges[k].start && addr < m->ranges[k].end) {
				if (!found || m->unload_ticks == UINT64_MAX ||
				    found->unload_ticks != UINT64_MAX)
					found = m;
				break;
			}
	}
	return found;
}

/* Names addr of process pid as the views do (ta_view_name): a zone by its
 * site, a library call by the LIBCALLS chunk, a function by its module's
 * symbols. */
static void name_addr(struct ta_live *L, uint32_t pid, uint64_t addr, const char **name,
		      const char **module)
{
	struct ta_process *p = ta_session_process(L->s, pid);
	const struct ta_site *site = p && p->nsites ? ta_process_site(p, addr) : NULL;
	const struct ta_libcall *lc = p && p->nlibcalls && !site ? ta_process_libcall(p, addr) : NULL;
	const struct ta_sess_module *m = p && !site && !lc ? module_at(p, addr) : NULL;

	if (addr == TA_WAIT_KEY) {
		*name = TA_WAIT_NAME;
		*module = TA_AGENT_MODULE;
	} else if (site) {
		*name = site->name[0] ? site->name : "(zone)";
		*module = TA_ZONE_MODULE;
	} else if (lc) {
		*name = lc->name;
		*module = TA_LIBCALL_MODULE;
	} else if (m && L->no_files) {
		*name = own_name(L, m->path, addr - m->bias);
		*module = m->path;
	} else if (m) {
		const struct ta_resolved *rv =
			ta_resolve(L->res, m->path, m->build_id, m->build_id_len, addr - m->bias);

		/* A short name is its file's function's alone (ta_resolver_shorten):
		 * merging by name never merges two functions. */
		*name = L->demangle == TA_DEMANGLE_SIMPLE ? rv->short_name
			: L->demangle == TA_DEMANGLE_NO	  ? rv->raw
							  : rv->name;
		*module = m->path;
	} else {
		*name = own_name(L, NULL, addr);
		*module = "";
	}
}

/* The merged function of (name, module): its index, or -1 without memory. */
static int32_t fn_get(struct ta_live *L, const char *name, const char *module)
{
	struct fn_key key = {L, name, module};
	uint64_t h = str_hash(name, module);
	size_t k;

	if (ta_htab_reserve(&L->fn_by_name, L->nfns, 64, fn_hash_at, L->fn_hash) < 0)
		return -1;
	k = ta_htab_find(&L->fn_by_name, h, fn_eq, NULL, &key);
	if (ta_htab_at(&L->fn_by_name, k))
		return (int32_t)(ta_htab_at(&L->fn_by_name, k) - 1);
	if (L->nfns == L->fns_cap) {
		size_t cap = L->fns_cap ? 2 * L->fns_cap : 64;
		struct ta_live_fn *n = realloc(L->fns, cap * sizeof(*n));
		uint64_t *nh;

		if (!n)
			return -1;
		L->fns = n;
		nh = realloc(L->fn_hash, cap * sizeof(*nh));
		if (!nh)
			return -1;
		L->fn_hash = nh;
		L->fns_cap = cap;
	}
	L->fns[L->nfns] = (struct ta_live_fn){.name = name, .module = module};
	L->fn_hash[L->nfns] = h;
	ta_htab_put(&L->fn_by_name, k, L->nfns);
	return (int32_t)L->nfns++;
}

/* ---- snapshots ------------------------------------------------------------------------ */

/* The line naming the caps hit (live.h). */
static const char *cap_text(struct ta_live *L)
{
	char *o = L->capmsg, *end = L->capmsg + sizeof(L->capmsg);
	const char *sep = " ";

	if (!L->capped)
		return NULL;
#define ADD(...)                                                                          \
	do {                                                                              \
		int n_ = snprintf(o, (size_t)(end - o), __VA_ARGS__);                     \
		if (n_ > 0)                                                               \
			o += n_ < end - o ? n_ : end - o - 1;                             \
		sep = "; ";                                                               \
	} while (0)
	ADD("limits reached:");
	sep = " ";
	if (L->capped & CAP_THREADS)
		ADD("%s%u threads (the rest counted as " TA_LIVE_OTHER_THREADS ")", sep,
		    TA_LIVE_THREADS_MAX);
	if (L->capped & CAP_ROWS)
		ADD("%s%u functions over the threads (the rest counted as " TA_LIVE_OTHER_FNS ")",
		    sep, TA_LIVE_ROWS_MAX);
	if (L->capped & CAP_PROCS)
		ADD("%s%u processes (the rest unnamed)", sep, TA_LIVE_PROCS_MAX);
	if (L->capped & CAP_STACK)
		ADD("%s%u stack frames (deeper calls counted, their time charged below)", sep,
		    TA_LIVE_STACK_MAX);
	if (L->capped & CAP_META)
		ADD("%s%u MiB of metadata (the rest left out)", sep, TA_LIVE_META_MAX >> 20);
#undef ADD
	return L->capmsg;
}

int ta_live_snap(struct ta_live *L, uint64_t interval_ns, struct ta_live_snap *snap)
{
	memset(snap, 0, sizeof(*snap));
	snap->seq = ++L->snap_seq;
	snap->interval_ns = interval_ns;
	for (size_t i = 0; i < L->nprocs; i++)
		proc_rate(L, L->procs[i]);
	for (size_t i = 0; i < L->nfns; i++) {
		L->fns[i].icalls = L->fns[i].calls = 0;
		L->fns[i].iself_ns = L->fns[i].self_ns = 0;
	}
	size_t nthr = L->nthr + (L->other_thr != NULL);

	if (nthr > L->snap_thr_cap) {
		struct ta_live_thr *n = realloc(L->snap_thr, nthr * sizeof(*n));

		if (!n)
			return -TA_E_NOMEM;
		L->snap_thr = n;
		L->snap_thr_cap = nthr;
	}
	for (size_t i = 0; i < nthr; i++) {
		struct thr *t = i < L->nthr ? L->thr[i] : L->other_thr;
		struct ta_live_thr *o = &L->snap_thr[i];
		const long double rate = t->proc->ns_per_tick;
		uint64_t hot = 0;

		if (!t->sth && t != L->other_thr)
			t->sth = ta_session_thread(L->s, t->pid, t->tid);
		*o = (struct ta_live_thr){.pid = t->pid,
					  .tid = t->tid,
					  .name = t == L->other_thr		 ? TA_LIVE_OTHER_THREADS
						  : t->sth && t->sth->name ? t->sth->name
									   : "",
					  .ievents = t->events - t->pevents,
					  .events = t->events,
					  .lost = t->lost,
					  .hot = "",
					  .ended = t->sth && t->sth->has_end};
		t->pevents = t->events;
		for (size_t k = 0; k < t->nrows; k++) {
			struct row *r = &t->rows[k];
			struct ta_live_fn *f;

			if (r->fn < 0) {
				const char *name = TA_LIVE_OTHER_FNS, *module = "";

				if (!r->other)
					name_addr(L, t->pid, r->addr, &name, &module);
				r->fn = fn_get(L, name, module);
				if (r->fn < 0)
					return -TA_E_NOMEM;
			}
			f = &L->fns[r->fn];
			f->calls += r->calls;
			f->icalls += r->calls - r->pcalls;
			f->self_ns += to_ns(r->self, rate);
			f->iself_ns += to_ns(r->iself, rate);
			if (r->iself > hot) {
				hot = r->iself;
				o->hot = f->name;
				o->hot_self_ns = to_ns(hot, rate);
			}
			r->pcalls = r->calls;
			r->pself = r->self;
			r->iself = 0;
		}
	}
	snap->thr = L->snap_thr;
	snap->nthr = nthr;
	/* The stream time the interval covered: the longest of the processes'
	 * (a thread's self time in the interval is within its process's). */
	for (size_t i = 0; i < L->nprocs; i++) {
		struct proc *p = L->procs[i];
		uint64_t from = p->have_cut ? p->cut_ticks : p->first_ticks, span;

		if (!p->have_ticks)
			continue;
		span = to_ns(p->max_ticks > from ? p->max_ticks - from : 0, p->ns_per_tick);
		if (span > snap->span_ns)
			snap->span_ns = span;
		p->cut_ticks = p->max_ticks;
		p->have_cut = 1;
	}
	snap->capped = cap_text(L);
	snap->capped_new = L->capped != L->pcapped;
	L->pcapped = L->capped;
	snap->fns = L->fns;
	snap->nfns = L->nfns;
	snap->events = L->events;
	snap->ievents = L->events - L->pevents;
	L->pevents = L->events;

	snap->ended = L->s->nprocs > 0;
	snap->nprocs = L->s->nprocs;
	for (size_t i = 0; i < L->s->nprocs; i++) {
		const struct ta_process *p = L->s->procs[i];
		const struct proc *lp = NULL;

		for (size_t k = 0; k < L->nprocs; k++)
			if (L->procs[k]->pid == p->pid)
				lp = L->procs[k];
		if (p->has_end) {
			snap->lost += p->end_lost;
			for (unsigned c = 0; c <= TA_LOST_NCAUSES; c++)
				snap->lost_by[c] += p->end_lost_by[c];
		} else {
			snap->ended = 0;
			snap->lost += lp ? lp->lost : 0;
		}
	}
	for (size_t i = 0; i < L->s->nthreads; i++)
		snap->nthreads_live += !L->s->threads[i]->has_end && !L->s->threads[i]->over;

	if (L->fset) {
		struct ta_live_frames *fr = &snap->fr;

		fr->set = L->fset;
		fr->frames = L->frames;
		fr->iframes = L->frames - L->pframes;
		L->pframes = L->frames;
		if (L->nftimes) {
			uint64_t *d = L->ftimes;
			size_t n = L->nftimes;

			qsort(d, n, sizeof(*d), ta_fs_u64_cmp);
			fr->p50_ns = ta_fs_rank(d, n, 0, 50);
			fr->p99_ns = ta_fs_rank(d, n, 0, 99);
			fr->max_ns = d[n - 1];
			for (size_t i = 0; i < n; i++)
				fr->hitches += d[i] > 2 * fr->p50_ns;
		}
		L->nftimes = 0;
	}
	return 0;
}
