/* SPDX-License-Identifier: MIT */
/*
 * libreport.c - what the library calls say (`traceagent report --alloc,
 * --locks, --io`): bytes allocated and freed per calling function and the
 * bytes still live at the end by the call path that allocated them; lock
 * waits per caller and per lock; I/O bytes and time per fd and per caller.
 *
 * The numbers come from the EXT events the interposers write just before a
 * zone's exit (format.h: TA_EXT_ALLOC...), seen on top of the thread's
 * frames: the zone is the top frame, the caller the one below it.  Sums are
 * kept per (process, address) in ticks and named and converted at the end.
 * The live blocks are a hash from (process, pointer) to (size, path): that
 * memory grows with the blocks live at a time, which is inherent to finding
 * what was never freed.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "libreport.h"
#include "libreport_int.h"
#include "symbols.h"

/* ---- a table of sums keyed by three numbers ------------------------------------- */

static uint64_t mix3(const uint64_t k[3])
{
	uint64_t h = k[0] * 0x9e3779b97f4a7c15ull;

	h = (h ^ (h >> 29) ^ k[1]) * 0xbf58476d1ce4e5b9ull;
	h = (h ^ (h >> 31) ^ k[2]) * 0x94d049bb133111ebull;
	return h ^ (h >> 32);
}

static uint64_t agg_hash(const void *ctx, size_t i)
{
	return mix3(((const struct agg *)ctx)->rows[i].k);
}

static int agg_is(const void *ctx, size_t i, const void *key)
{
	const struct agg_row *r = &((const struct agg *)ctx)->rows[i];

	return !memcmp(r->k, key, sizeof(r->k));
}

/* The row for the key, created zeroed; NULL without memory. */
static struct agg_row *agg_get(struct agg *a, uint64_t k0, uint64_t k1, uint64_t k2)
{
	uint64_t k[3] = {k0, k1, k2};
	size_t i;

	if (ta_htab_reserve(&a->by_key, a->n, 64, agg_hash, a) < 0)
		return NULL;
	i = ta_htab_find(&a->by_key, mix3(k), agg_is, a, k);
	if (ta_htab_at(&a->by_key, i))
		return &a->rows[ta_htab_at(&a->by_key, i) - 1];
	if (a->n == a->cap) {
		struct agg_row *rows =
		    ta_vec_reserve(a->rows, a->n + 1, &a->cap, sizeof(*rows), 64);

		if (!rows)
			return NULL;
		a->rows = rows;
	}
	memset(&a->rows[a->n], 0, sizeof(a->rows[0]));
	memcpy(a->rows[a->n].k, k, sizeof(k));
	ta_htab_put(&a->by_key, i, a->n);
	return &a->rows[a->n++];
}

static void agg_free(struct agg *a)
{
	free(a->rows);
	ta_htab_free(&a->by_key);
}

/* ---- live blocks and the call paths that allocated them --------------------------- */

static uint64_t live_hash(uint64_t pid, uint64_t ptr)
{
	uint64_t k[3] = {pid, ptr, 0};

	return mix3(k);
}

static uint64_t live_row_hash(const void *ctx, size_t i)
{
	const struct live *e = &((const struct ta_libstats *)ctx)->live[i];

	return live_hash(e->pid, e->ptr);
}

struct live_key {
	uint64_t pid, ptr;
};

static inline int live_is(const void *ctx, size_t i, const void *key)
{
	const struct live *e = &((const struct ta_libstats *)ctx)->live[i];
	const struct live_key *k = key;

	return e->ptr == k->ptr && e->pid == k->pid;
}

/* The position of block (pid, ptr) in the index, or of the empty slot
 * where it goes; the index must have slots. */
static inline size_t live_find(const struct ta_libstats *ls, uint64_t pid, uint64_t ptr)
{
	struct live_key key = {pid, ptr};

	return ta_htab_find(&ls->live_index, live_hash(pid, ptr), live_is, ls, &key);
}

static void live_put(struct ta_libstats *ls, uint64_t pid, uint64_t ptr, uint64_t size,
		     uint32_t path)
{
	size_t k, i;

	if (ta_htab_reserve_held(&ls->live_index, ls->nlive, 1024, live_row_hash, ls) < 0) {
		ls->nomem = 1;
		return;
	}
	k = live_find(ls, pid, ptr);
	if (ta_htab_at(&ls->live_index, k)) {
		/* a block never seen freed: replaced */
		ls->live[ta_htab_at(&ls->live_index, k) - 1] = (struct live){pid, ptr, size, path};
		return;
	}
	if (ls->free_row) {
		i = ls->free_row - 1;
		ls->free_row = ls->live[i].size;
	} else {
		if (ls->nrows == ls->live_cap) {
			struct live *v = ta_vec_reserve(ls->live, ls->nrows + 1, &ls->live_cap,
							sizeof(*v), 1024);

			if (!v) {
				ls->nomem = 1;
				return;
			}
			ls->live = v;
		}
		i = ls->nrows++;
	}
	ls->live[i] = (struct live){pid, ptr, size, path};
	ta_htab_put(&ls->live_index, k, i);
	ls->nlive++;
}

/* Takes the block out; 1 with its size if it was live. */
static int live_take(struct ta_libstats *ls, uint64_t pid, uint64_t ptr, uint64_t *size)
{
	size_t k, i;

	if (!ls->nlive)
		return 0;
	k = live_find(ls, pid, ptr);
	if (!ta_htab_at(&ls->live_index, k))
		return 0;
	i = ta_htab_at(&ls->live_index, k) - 1;
	*size = ls->live[i].size;
	ta_htab_del(&ls->live_index, k, live_row_hash, ls);
	ls->nlive--;
	ls->live[i].ptr = 0;
	ls->live[i].size = ls->free_row;
	ls->free_row = i + 1;
	return 1;
}

/* Where a lock is looked for in the live blocks: blocks start on
 * malloc's 16-byte alignment, and a lock lies at most HEAP_REACH bytes
 * into one; an object is looked for at its first HEAP_TRIES waits (its
 * block may be allocated by a thread whose events come later). */
#define HEAP_ALIGN 16u
#define HEAP_REACH 16384u
#define HEAP_TRIES 4u

/* The live block of process pid holding addr: 1 with its path and addr's
 * offset in it. */
static int heap_block(const struct ta_libstats *ls, uint64_t pid, uint64_t addr, uint32_t *path,
		      uint64_t *off)
{
	if (!ls->nlive)
		return 0;
	for (uint64_t d = addr % HEAP_ALIGN; d <= HEAP_REACH && d < addr; d += HEAP_ALIGN) {
		uint32_t at = ta_htab_at(&ls->live_index, live_find(ls, pid, addr - d));

		if (!at)
			continue;
		/* Blocks do not overlap: none further down holds addr. */
		if (d >= ls->live[at - 1].size)
			return 0;
		*path = ls->live[at - 1].path;
		*off = d;
		return 1;
	}
	return 0;
}

static uint64_t path_hash(const void *ctx, size_t i)
{
	return ((const struct ta_libstats *)ctx)->paths[i].hash;
}

struct path_key {
	uint64_t hash;
	const struct ta_sess_thread *t;
	uint32_t depth;
};

static int path_is(const void *ctx, size_t i, const void *key)
{
	const struct path *p = &((const struct ta_libstats *)ctx)->paths[i];
	const struct path_key *k = key;
	uint32_t d;

	if (p->hash != k->hash || p->pid != k->t->pid || p->depth != k->depth)
		return 0;
	for (d = 0; d < k->depth && p->addr[d] == k->t->stack[d].addr; d++)
		;
	return d == k->depth;
}

/* The index of the path of frames [0, depth) of t, interned. */
static uint32_t path_of(struct ta_libstats *ls, const struct ta_sess_thread *t, uint32_t depth)
{
	uint64_t h[3] = {1469598103934665603ull, t->pid, depth};
	struct path_key key = {0, t, depth};
	struct path *p;
	size_t k;

	for (uint32_t i = 0; i < depth; i++)
		h[0] = (h[0] ^ t->stack[i].addr) * 1099511628211ull;
	key.hash = mix3(h);
	if (ta_htab_reserve(&ls->path_index, ls->npaths, 64, path_hash, ls) < 0) {
		ls->nomem = 1;
		return UINT32_MAX;
	}
	k = ta_htab_find(&ls->path_index, key.hash, path_is, ls, &key);
	if (ta_htab_at(&ls->path_index, k))
		return ta_htab_at(&ls->path_index, k) - 1;
	if (ls->npaths == ls->paths_cap) {
		struct path *np =
		    ta_vec_reserve(ls->paths, ls->npaths + 1, &ls->paths_cap, sizeof(*np), 64);

		if (!np) {
			ls->nomem = 1;
			return UINT32_MAX;
		}
		ls->paths = np;
	}
	p = &ls->paths[ls->npaths];
	p->addr = malloc((depth ? depth : 1) * sizeof(uint64_t));
	if (!p->addr) {
		ls->nomem = 1;
		return UINT32_MAX;
	}
	for (uint32_t i = 0; i < depth; i++)
		p->addr[i] = t->stack[i].addr;
	p->pid = t->pid;
	p->depth = depth;
	p->hash = key.hash;
	p->bytes = 0;
	p->blocks = 0;
	ta_htab_put(&ls->path_index, k, ls->npaths);
	return (uint32_t)ls->npaths++;
}

/* ---- the visitor ------------------------------------------------------------------------ */

static uintptr_t v_enter(void *ctx, struct ta_sess_thread *t, uint64_t ticks, uint32_t depth,
			 uint64_t addr, unsigned flags)
{
	struct ta_libstats *ls = ctx;

	return ls->inner.enter ? ls->inner.enter(ls->inner.ctx, t, ticks, depth, addr, flags) : 0;
}

static void v_exit(void *ctx, struct ta_sess_thread *t, const struct ta_exit_info *x)
{
	struct ta_libstats *ls = ctx;

	if (ls->inner.exit)
		ls->inner.exit(ls->inner.ctx, t, x);
}

static void v_lost(void *ctx, struct ta_sess_thread *t, uint64_t ticks, uint64_t count)
{
	struct ta_libstats *ls = ctx;

	if (ls->inner.lost)
		ls->inner.lost(ls->inner.ctx, t, ticks, count);
}

/* An allocation (pool 0: malloc's, else a pool's index + 1). */
static void add_alloc(struct ta_libstats *ls, const struct ta_sess_thread *t, uint64_t caller,
		      uint64_t size, uint64_t ptr, uint64_t pool)
{
	struct agg_row *r = agg_get(&ls->alloc_caller, t->pid, caller, pool);
	uint32_t path;

	if (!r) {
		ls->nomem = 1;
		return;
	}
	if (!ptr)
		return; /* failed */
	r->v[0]++;
	r->v[1] += size;
	path = path_of(ls, t, t->depth);
	if (path != UINT32_MAX)
		live_put(ls, t->pid | pool << 32, ptr, size, path);
}

/* A free; 0 when the block was not live. */
static int add_free(struct ta_libstats *ls, const struct ta_sess_thread *t, uint64_t caller,
		    uint64_t ptr, uint64_t pool)
{
	struct agg_row *r = agg_get(&ls->alloc_caller, t->pid, caller, pool);
	uint64_t size;

	if (!r) {
		ls->nomem = 1;
		return 1;
	}
	if (!ptr)
		return 1; /* free(NULL) */
	r->v[2]++;
	if (live_take(ls, t->pid | pool << 32, ptr, &size)) {
		r->v[3] += size;
		return 1;
	}
	if (!pool)
		ls->untracked_frees++;
	return 0;
}

/* The manual API's pools and lock names (TA_EXT_POOL_ALLOC ...): the
 * caller is the function on top, the one that used the macro. */
static void api_mem(struct ta_libstats *ls, const struct ta_sess_thread *t, uint64_t ticks,
		    uint64_t kind, const uint64_t *val, uint32_t n)
{
	uint64_t caller;
	struct ta_apiev e;
	long pool;

	if (ta_apiev_decode(ta_session_process(ls->v->s, t->pid), ticks, kind, val, n, &e,
			    ls->text) <= 0)
		return;
	if (kind == TA_EXT_LOCK_NAME) {
		if (ta_locknames_set(&ls->locknames, t->pid, e.ptr, e.text) < 0)
			ls->nomem = 1;
		return;
	}
	if (kind != TA_EXT_POOL_ALLOC && kind != TA_EXT_POOL_FREE)
		return;
	pool = ta_pnames_get(&ls->pools, t->pid, e.name[0] ? e.name : "?");
	if (pool < 0) {
		ls->nomem = 1;
		return;
	}
	caller = t->depth > t->inherited ? t->stack[t->depth - 1].addr : 0;
	if (kind == TA_EXT_POOL_ALLOC)
		add_alloc(ls, t, caller, e.size, e.ptr, (uint64_t)pool + 1);
	else if (!add_free(ls, t, caller, e.ptr, (uint64_t)pool + 1))
		ls->pools.r[pool].unknown++;
}

static void v_ext(void *ctx, struct ta_sess_thread *t, uint64_t ticks, uint64_t kind,
		  const uint64_t *val, uint32_t n)
{
	struct ta_libstats *ls = ctx;
	const struct ta_libcall *lc;
	const struct ta_frame *top;
	uint64_t caller, dur;
	struct agg_row *r;

	if (ls->inner.ext)
		ls->inner.ext(ls->inner.ctx, t, ticks, kind, val, n);
	if (!ta_apiev_mem_kind(kind) &&
	    (kind < TA_EXT_ALLOC || kind > TA_EXT_SLEEP || !t->depth || t->depth <= t->inherited))
		return;
	if (!ls->proc || ls->last_pid != t->pid) {
		ls->proc = ta_session_process(ls->v->s, t->pid);
		ls->last_pid = t->pid;
	}
	if (ta_apiev_mem_kind(kind)) {
		api_mem(ls, t, ticks, kind, val, n);
		return;
	}
	top = &t->stack[t->depth - 1];
	if (!ls->proc || !(lc = ta_process_libcall(ls->proc, top->addr)))
		return; /* not on top of a library call's zone: not ours */
	caller = t->depth >= 2 ? t->stack[t->depth - 2].addr : 0;
	dur = ticks > top->enter ? ticks - top->enter : 0;
	switch (kind) {
	case TA_EXT_ALLOC:
		if (n >= 2)
			add_alloc(ls, t, caller, val[0], val[1], 0);
		break;
	case TA_EXT_FREE:
		if (n >= 1)
			(void)add_free(ls, t, caller, val[0], 0);
		break;
	case TA_EXT_REALLOC:
		if (n < 3)
			break;
		if (!val[2] && val[1])
			break; /* failed: the old block stays */
		if (val[0])
			(void)add_free(ls, t, caller, val[0], 0);
		if (val[2])
			add_alloc(ls, t, caller, val[1], val[2], 0);
		break;
	case TA_EXT_LOCK:
		/* An unlock is not a wait. */
		if (n < 1 || strstr(lc->name, "unlock"))
			break;
		for (int i = 0; i < 2; i++) {
			r = i ? agg_get(&ls->lock_obj, t->pid, val[0], 0)
			      : agg_get(&ls->lock_caller, t->pid, caller, lc->index);
			if (!r) {
				ls->nomem = 1;
				return;
			}
			r->v[0]++;
			r->v[1] += dur;
			if (dur > r->v[2])
				r->v[2] = dur;
		}
		if (!r->v[3] && r->v[5] < HEAP_TRIES) {
			uint32_t path;
			uint64_t off;

			r->v[5]++;
			if (heap_block(ls, t->pid, val[0], &path, &off)) {
				r->v[3] = (uint64_t)path + 1;
				r->v[4] = off;
			}
		}
		break;
	case TA_EXT_IO:
		if (n < 4)
			break;
		for (int i = 0; i < 2; i++) {
			r = i ? agg_get(&ls->io_fd, t->pid, val[0], 0)
			      : agg_get(&ls->io_caller, t->pid, caller, 0);
			if (!r) {
				ls->nomem = 1;
				return;
			}
			r->v[0]++;
			r->v[1] += val[1];
			r->v[2] += val[2];
			r->v[3] += val[3] != 0;
			r->v[4] += dur;
		}
		break;
	default:
		break;
	}
}

struct ta_libstats *ta_libstats_new(struct ta_view *v, const struct ta_visitor *inner,
				    struct ta_visitor *out)
{
	struct ta_libstats *ls = calloc(1, sizeof(*ls));

	if (!ls)
		return NULL;
	ls->v = v;
	if (inner)
		ls->inner = *inner;
	memset(out, 0, sizeof(*out));
	out->ctx = ls;
	out->enter = v_enter;
	out->exit = v_exit;
	out->lost = v_lost;
	out->ext = v_ext;
	return ls;
}

void ta_libstats_free(struct ta_libstats *ls)
{
	if (!ls)
		return;
	agg_free(&ls->alloc_caller);
	ta_htab_free(&ls->path_index);
	agg_free(&ls->lock_caller);
	agg_free(&ls->lock_obj);
	agg_free(&ls->io_fd);
	agg_free(&ls->io_caller);
	for (size_t i = 0; i < ls->npaths; i++)
		free(ls->paths[i].addr);
	free(ls->paths);
	free(ls->live);
	ta_htab_free(&ls->live_index);
	for (size_t i = 0; i < ls->ndsyms; i++) {
		free(ls->dsyms[i].path);
		ta_symtab_free(ls->dsyms[i].tab);
	}
	free(ls->dsyms);
	ta_pnames_free(&ls->pools);
	ta_locknames_free(&ls->locknames);
	free(ls);
}
