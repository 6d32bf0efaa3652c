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
#include "symbols.h"

/* ---- a table of sums keyed by three numbers ------------------------------------- */

#define NV 6
struct agg_row {
	uint64_t k[3];
	uint64_t v[NV];
};

struct agg {
	struct agg_row *rows;
	size_t n, cap;
	struct ta_htab by_key;
};

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
		size_t cap = a->cap ? 2 * a->cap : 64;
		struct agg_row *rows = realloc(a->rows, cap * sizeof(*rows));
		if (!rows)
			return NULL;
		a->rows = rows;
		a->cap = cap;
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

struct path {
	uint32_t pid, depth;
	uint64_t *addr;		/* bottom first, the allocating function last */
	uint64_t bytes, blocks; /* live at the end */
};

struct live {
	uint64_t pid, ptr; /* ptr 0: empty */
	uint64_t size;
	uint32_t path;
};

/* A module's data symbols (lock_name). */
struct data_syms {
	char *path;
	struct ta_symtab *tab; /* NULL when it could not be read */
};

struct ta_libstats {
	struct ta_view *v;
	struct ta_visitor inner; /* the visitor this one wraps */
	int nomem;
	const struct ta_process *proc; /* of last_pid */
	uint32_t last_pid;

	/* alloc: (pid, caller) -> allocs, bytes, frees, freed bytes */
	struct agg alloc_caller;
	uint64_t untracked_frees; /* of blocks allocated before recording */
	struct path *paths;
	size_t npaths, paths_cap;
	struct agg path_index; /* (hash, pid, depth) -> v[0] = path index + 1, chained by v[1] */
	struct live *live;
	size_t nlive, live_slots;

	/* locks: (pid, caller, function index) and (pid, object, 0) -> calls,
	 * wait ticks, max ticks; an object's row also the live block holding
	 * it (path index + 1, 0: none found), its offset there, and how many
	 * times the block was looked for (heap_block) */
	struct agg lock_caller, lock_obj;
	/* The data symbols of the modules, read when locks are named. */
	struct data_syms *dsyms;
	size_t ndsyms;
	/* io: (pid, fd, 0) and (pid, caller, 0) -> calls, asked, done, errors,
	 * ticks */
	struct agg io_fd, io_caller;
};

static uint64_t live_hash(uint64_t pid, uint64_t ptr)
{
	uint64_t k[3] = {pid, ptr, 0};

	return mix3(k);
}

static int live_grow(struct ta_libstats *ls)
{
	size_t n = ls->live_slots ? ls->live_slots * 2 : 1024;
	struct live *t = calloc(n, sizeof(*t));

	if (!t)
		return -1;
	for (size_t i = 0; i < ls->live_slots; i++) {
		struct live *e = &ls->live[i];
		size_t k;

		if (!e->ptr)
			continue;
		for (k = (size_t)live_hash(e->pid, e->ptr) & (n - 1); t[k].ptr;
		     k = (k + 1) & (n - 1))
			;
		t[k] = *e;
	}
	free(ls->live);
	ls->live = t;
	ls->live_slots = n;
	return 0;
}

static void live_put(struct ta_libstats *ls, uint64_t pid, uint64_t ptr, uint64_t size,
		     uint32_t path)
{
	size_t k;

	if ((ls->nlive + 1) * 2 > ls->live_slots && live_grow(ls) < 0) {
		ls->nomem = 1;
		return;
	}
	for (k = (size_t)live_hash(pid, ptr) & (ls->live_slots - 1); ls->live[k].ptr;
	     k = (k + 1) & (ls->live_slots - 1))
		if (ls->live[k].pid == pid && ls->live[k].ptr == ptr)
			break; /* a block never seen freed: replaced */
	if (!ls->live[k].ptr)
		ls->nlive++;
	ls->live[k] = (struct live){pid, ptr, size, path};
}

/* Takes the block out; 1 with its size if it was live. */
static int live_take(struct ta_libstats *ls, uint64_t pid, uint64_t ptr, uint64_t *size)
{
	size_t mask = ls->live_slots - 1, k, j;

	if (!ls->live_slots)
		return 0;
	for (k = (size_t)live_hash(pid, ptr) & mask; ls->live[k].ptr; k = (k + 1) & mask)
		if (ls->live[k].pid == pid && ls->live[k].ptr == ptr)
			break;
	if (!ls->live[k].ptr)
		return 0;
	*size = ls->live[k].size;
	ls->nlive--;
	/* Backward-shift deletion keeps every probe run unbroken. */
	for (j = (k + 1) & mask; ls->live[j].ptr; j = (j + 1) & mask) {
		size_t home = (size_t)live_hash(ls->live[j].pid, ls->live[j].ptr) & mask;
		if ((j > k && (home <= k || home > j)) || (j < k && home <= k && home > j)) {
			ls->live[k] = ls->live[j];
			k = j;
		}
	}
	ls->live[k].ptr = 0;
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
	size_t mask = ls->live_slots - 1;

	if (!ls->nlive)
		return 0;
	for (uint64_t d = addr % HEAP_ALIGN; d <= HEAP_REACH && d < addr; d += HEAP_ALIGN) {
		uint64_t ptr = addr - d;
		size_t k;

		for (k = (size_t)live_hash(pid, ptr) & mask; ls->live[k].ptr; k = (k + 1) & mask)
			if (ls->live[k].pid == pid && ls->live[k].ptr == ptr)
				break;
		if (!ls->live[k].ptr)
			continue;
		/* Blocks do not overlap: none further down holds addr. */
		if (d >= ls->live[k].size)
			return 0;
		*path = ls->live[k].path;
		*off = d;
		return 1;
	}
	return 0;
}

/* The index of the path of frames [0, depth) of t, interned. */
static uint32_t path_of(struct ta_libstats *ls, const struct ta_sess_thread *t, uint32_t depth)
{
	uint64_t h = 1469598103934665603ull;
	struct agg_row *r;
	struct path *p;

	for (uint32_t i = 0; i < depth; i++)
		h = (h ^ t->stack[i].addr) * 1099511628211ull;
	/* Paths with the same hash are chained through v[1]. */
	r = agg_get(&ls->path_index, h, t->pid, depth);
	if (!r) {
		ls->nomem = 1;
		return UINT32_MAX;
	}
	for (uint64_t i = r->v[0]; i; i = ls->paths[i - 1].bytes) {
		p = &ls->paths[i - 1];
		uint32_t d;
		for (d = 0; d < depth && p->addr[d] == t->stack[d].addr; d++)
			;
		if (d == depth)
			return (uint32_t)(i - 1);
	}
	if (ls->npaths == ls->paths_cap) {
		size_t cap = ls->paths_cap ? 2 * ls->paths_cap : 64;
		struct path *np = realloc(ls->paths, cap * sizeof(*np));
		if (!np) {
			ls->nomem = 1;
			return UINT32_MAX;
		}
		ls->paths = np;
		ls->paths_cap = cap;
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
	/* While reading, bytes chains the paths of one hash (index + 1);
	 * it is reset before the live blocks are summed. */
	p->bytes = r->v[0];
	p->blocks = 0;
	r->v[0] = ++ls->npaths;
	return (uint32_t)(ls->npaths - 1);
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

static void add_alloc(struct ta_libstats *ls, const struct ta_sess_thread *t, uint64_t caller,
		      uint64_t size, uint64_t ptr)
{
	struct agg_row *r = agg_get(&ls->alloc_caller, t->pid, caller, 0);
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
		live_put(ls, t->pid, ptr, size, path);
}

static void add_free(struct ta_libstats *ls, const struct ta_sess_thread *t, uint64_t caller,
		     uint64_t ptr)
{
	struct agg_row *r = agg_get(&ls->alloc_caller, t->pid, caller, 0);
	uint64_t size;

	if (!r) {
		ls->nomem = 1;
		return;
	}
	if (!ptr)
		return; /* free(NULL) */
	r->v[2]++;
	if (live_take(ls, t->pid, ptr, &size))
		r->v[3] += size;
	else
		ls->untracked_frees++;
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
	if (kind < TA_EXT_ALLOC || kind > TA_EXT_SLEEP || !t->depth || t->depth <= t->inherited)
		return;
	if (!ls->proc || ls->last_pid != t->pid) {
		ls->proc = ta_session_process(ls->v->s, t->pid);
		ls->last_pid = t->pid;
	}
	top = &t->stack[t->depth - 1];
	if (!ls->proc || !(lc = ta_process_libcall(ls->proc, top->addr)))
		return; /* not on top of a library call's zone: not ours */
	caller = t->depth >= 2 ? t->stack[t->depth - 2].addr : 0;
	dur = ticks > top->enter ? ticks - top->enter : 0;
	switch (kind) {
	case TA_EXT_ALLOC:
		if (n >= 2)
			add_alloc(ls, t, caller, val[0], val[1]);
		break;
	case TA_EXT_FREE:
		if (n >= 1)
			add_free(ls, t, caller, val[0]);
		break;
	case TA_EXT_REALLOC:
		if (n < 3)
			break;
		if (!val[2] && val[1])
			break; /* failed: the old block stays */
		if (val[0])
			add_free(ls, t, caller, val[0]);
		if (val[2])
			add_alloc(ls, t, caller, val[1], val[2]);
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
	agg_free(&ls->path_index);
	agg_free(&ls->lock_caller);
	agg_free(&ls->lock_obj);
	agg_free(&ls->io_fd);
	agg_free(&ls->io_caller);
	for (size_t i = 0; i < ls->npaths; i++)
		free(ls->paths[i].addr);
	free(ls->paths);
	free(ls->live);
	for (size_t i = 0; i < ls->ndsyms; i++) {
		free(ls->dsyms[i].path);
		ta_symtab_free(ls->dsyms[i].tab);
	}
	free(ls->dsyms);
	free(ls);
}

/* ---- printing ------------------------------------------------------------------------------- */

/* Where the sections go (ta_libstats_print's out). */
static FILE *lo;
/* --top: rows shown of each table, 0 = all (set with lo). */
static uint64_t ltop;

/* n rows cut to --top. */
static long cut(long n)
{
	return ltop && n > 0 && (uint64_t)n > ltop ? (long)ltop : n;
}

/* A row ready to print: a name and up to NV numbers (times in ns). */
struct out_row {
	const char *name;
	const char *extra; /* the library function (locks by caller) */
	char *own;	   /* name, when the row owns it */
	uint64_t v[NV];
};

static const char *caller_name(struct ta_libstats *ls, uint32_t pid, uint64_t addr)
{
	struct ta_fn_name id;

	if (!addr)
		return "(no caller)";
	ta_view_name(ls->v, pid, addr, &id);
	return id.name;
}

static const struct ta_process *proc_of(struct ta_libstats *ls, uint64_t pid)
{
	return ta_session_process(ls->v->s, (uint32_t)pid);
}

static int out_cmp_name(const void *a, const void *b)
{
	const struct out_row *x = a, *y = b;
	int c = strcmp(x->name, y->name);

	return c ? c : strcmp(x->extra ? x->extra : "", y->extra ? y->extra : "");
}

static int sort_key; /* the value rows are sorted on, descending */

static int out_cmp_value(const void *a, const void *b)
{
	const struct out_row *x = a, *y = b;

	if (x->v[sort_key] != y->v[sort_key])
		return x->v[sort_key] > y->v[sort_key] ? -1 : 1;
	return out_cmp_name(a, b);
}

/*
 * Rows of a table by name (processes and addresses naming the same
 * function merged): v[i] summed, except the indices in max_mask which take
 * the largest.  Sorted by v[key] descending, then name.  Returns the count,
 * *out malloc'd; -1 without memory.
 */
static long merge_rows(struct out_row *rows, size_t n, unsigned max_mask, int key,
		       struct out_row **out)
{
	size_t m = 0;

	qsort(rows, n, sizeof(*rows), out_cmp_name);
	for (size_t i = 0; i < n; i++) {
		if (m && !out_cmp_name(&rows[m - 1], &rows[i])) {
			for (int k = 0; k < NV; k++)
				if (max_mask & (1u << k))
					rows[m - 1].v[k] = rows[m - 1].v[k] > rows[i].v[k]
							       ? rows[m - 1].v[k]
							       : rows[i].v[k];
				else
					rows[m - 1].v[k] += rows[i].v[k];
		} else {
			rows[m++] = rows[i];
		}
	}
	sort_key = key;
	qsort(rows, m, sizeof(*rows), out_cmp_value);
	*out = rows;
	return (long)m;
}

static struct out_row *rows_alloc(size_t n)
{
	return calloc(n ? n : 1, sizeof(struct out_row));
}

static void json_row_name(const char *key, const char *name, int first)
{
	fprintf(lo, "%s\n      {\"%s\": ", first ? "" : ",", key);
	ta_json_str(lo, name);
}

/* Names made for numbers (fds, lock addresses): the caller frees them. */
static char *num_name(int hex, uint64_t v)
{
	char *s;

	if ((hex ? asprintf(&s, "0x%" PRIx64, v) : asprintf(&s, "%" PRId64, (int64_t)v)) < 0)
		return NULL;
	return s;
}

/* "main > f > malloc" for path p, after prefix (malloc'd; NULL without
 * memory). */
static char *path_name(struct ta_libstats *ls, const struct path *p, const char *prefix)
{
	size_t len = strlen(prefix), cap = len + 64;
	char *s = malloc(cap);

	if (!s)
		return NULL;
	memcpy(s, prefix, len + 1);
	for (uint32_t d = 0; d < p->depth; d++) {
		const char *nm = caller_name(ls, p->pid, p->addr[d]);
		size_t add = strlen(nm) + 3;
		if (len + add + 1 > cap) {
			char *ns;
			while (len + add + 1 > cap)
				cap *= 2;
			ns = realloc(s, cap);
			if (!ns)
				break;
			s = ns;
		}
		len += (size_t)sprintf(s + len, "%s%s", d ? " > " : "", nm);
	}
	return s;
}

static int print_alloc(struct ta_libstats *ls, int json)
{
	struct out_row *rows = rows_alloc(ls->alloc_caller.n), *pr;
	uint64_t tot[4] = {0}, live_bytes = 0, live_blocks = 0;
	long n, np;

	if (!rows)
		return -1;
	for (size_t i = 0; i < ls->alloc_caller.n; i++) {
		const struct agg_row *r = &ls->alloc_caller.rows[i];
		rows[i].name = caller_name(ls, (uint32_t)r->k[0], r->k[1]);
		memcpy(rows[i].v, r->v, sizeof(r->v));
		for (int k = 0; k < 4; k++)
			tot[k] += r->v[k];
	}
	n = cut(merge_rows(rows, ls->alloc_caller.n, 0, 1, &rows));
	/* The live blocks, summed per path. */
	for (size_t i = 0; i < ls->npaths; i++)
		ls->paths[i].bytes = ls->paths[i].blocks = 0;
	for (size_t i = 0; i < ls->live_slots; i++) {
		const struct live *e = &ls->live[i];
		if (!e->ptr)
			continue;
		ls->paths[e->path].bytes += e->size;
		ls->paths[e->path].blocks++;
		live_bytes += e->size;
		live_blocks++;
	}
	pr = rows_alloc(ls->npaths);
	if (!pr) {
		free(rows);
		return -1;
	}
	np = 0;
	for (size_t i = 0; i < ls->npaths; i++) {
		const struct path *p = &ls->paths[i];
		char *s;

		if (!p->blocks)
			continue;
		s = path_name(ls, p, "");
		if (!s)
			break;
		pr[np].name = pr[np].own = s;
		pr[np].v[0] = p->bytes;
		pr[np].v[1] = p->blocks;
		np++;
	}
	{
		struct out_row *merged;
		/* Names are owned by pr: merging only drops duplicates'
		 * pointers, which the loop below frees from a copy. */
		struct out_row *copy = rows_alloc((size_t)np);
		if (!copy) {
			free(rows);
			free(pr);
			return -1;
		}
		long np_all = np;

		memcpy(copy, pr, (size_t)np * sizeof(*pr));
		np = cut(merge_rows(pr, (size_t)np, 0, 0, &merged));
		if (json) {
			fprintf(lo,
				"  \"alloc\": {\"recorded\": true, \"allocations\": %" PRIu64
				", \"bytes_allocated\": %" PRIu64 ", \"frees\": %" PRIu64
				", \"bytes_freed\": %" PRIu64 ", \"untracked_frees\": %" PRIu64
				", \"live_bytes\": %" PRIu64 ", \"live_blocks\": %" PRIu64
				",\n    \"callers\": [",
				tot[0], tot[1], tot[2], tot[3], ls->untracked_frees, live_bytes,
				live_blocks);
			for (long i = 0; i < n; i++) {
				json_row_name("function", rows[i].name, i == 0);
				fprintf(lo, ", \"allocations\": %" PRIu64
				       ", \"bytes_allocated\": %" PRIu64 ", \"frees\": %" PRIu64
				       ", \"bytes_freed\": %" PRIu64 "}",
				       rows[i].v[0], rows[i].v[1], rows[i].v[2], rows[i].v[3]);
			}
			fprintf(lo, "],\n    \"live\": [");
			for (long i = 0; i < np; i++) {
				json_row_name("path", merged[i].name, i == 0);
				fprintf(lo, ", \"bytes\": %" PRIu64 ", \"blocks\": %" PRIu64 "}",
				       merged[i].v[0], merged[i].v[1]);
			}
			fprintf(lo, "]}");
		} else {
			fprintf(lo, "allocations by calling function:\n%10s %14s %10s %14s  %s\n",
			       "allocs", "bytes", "frees", "bytes freed", "function");
			for (long i = 0; i < n; i++)
				fprintf(lo, "%10" PRIu64 " %14" PRIu64 " %10" PRIu64 " %14" PRIu64
				       "  %s\n",
				       rows[i].v[0], rows[i].v[1], rows[i].v[2], rows[i].v[3],
				       rows[i].name);
			fprintf(lo, 
			    "\nlive at the end (allocated, never freed), by call path:\n%14s %10s  "
			    "%s\n",
			    "bytes", "blocks", "path");
			for (long i = 0; i < np; i++)
				fprintf(lo, "%14" PRIu64 " %10" PRIu64 "  %s\n", merged[i].v[0],
				       merged[i].v[1], merged[i].name);
			fprintf(lo, "\ntotal: %" PRIu64 " allocations, %" PRIu64 " bytes; %" PRIu64
			       " frees, %" PRIu64 " bytes; %" PRIu64 " bytes in %" PRIu64
			       " blocks live at the end\n",
			       tot[0], tot[1], tot[2], tot[3], live_bytes, live_blocks);
			if (ls->untracked_frees)
				fprintf(lo, "%" PRIu64
				       " frees of blocks allocated before recording (size "
				       "unknown)\n",
				       ls->untracked_frees);
		}
		for (long i = 0; i < np_all; i++)
			free(copy[i].own);
		free(copy);
	}
	free(rows);
	free(pr);
	return 0;
}

/* The data symbols of module m, read the first time (NULL when they
 * cannot be). */
static const struct ta_symtab *data_syms(struct ta_libstats *ls, const struct ta_sess_module *m)
{
	struct data_syms *v;

	for (size_t i = 0; i < ls->ndsyms; i++)
		if (!strcmp(ls->dsyms[i].path, m->path))
			return ls->dsyms[i].tab;
	v = realloc(ls->dsyms, (ls->ndsyms + 1) * sizeof(*v));
	if (!v)
		return NULL;
	ls->dsyms = v;
	v = &ls->dsyms[ls->ndsyms];
	v->tab = NULL;
	if (!(v->path = strdup(m->path)))
		return NULL;
	ls->ndsyms++;
	/* Modules without a file (the vDSO) have no path to read. */
	if (m->path[0] == '/' &&
	    ta_symtab_load_data(m->path, m->build_id, m->build_id_len, &v->tab) < 0)
		v->tab = NULL;
	return v->tab;
}

/* How a lock is named (lock_name), and its JSON "kind". */
enum { LOCK_STATIC, LOCK_HEAP, LOCK_ADDRESS };
static const char *const lock_kinds[] = {"static", "heap", "address"};

/* The variable of a module of process pid at addr: its name, with
 * "+0xOFF" when addr is inside it (malloc'd), or NULL. */
static char *static_name(struct ta_libstats *ls, uint64_t pid, uint64_t addr)
{
	/* Without a resolver (the fuzzer's views), no file is read. */
	const struct ta_process *p = ls->v->res ? proc_of(ls, pid) : NULL;

	/* The modules loaded at the end first, then those unloaded. */
	for (int pass = 0; p && pass < 2; pass++)
		for (size_t i = 0; i < p->nmodules; i++) {
			const struct ta_sess_module *m = &p->modules[i];
			const struct ta_symtab *tab;
			const struct ta_sym *sym;
			uint64_t off = addr - m->bias;
			char *dm, *out;
			int rc;

			if ((m->unload_ticks != UINT64_MAX) != pass || addr < m->bias ||
			    !(tab = data_syms(ls, m)) || !ta_symtab_maps(tab, off))
				continue;
			sym = ta_symtab_lookup(tab, off);
			if (!sym || !sym->size)
				continue;
			dm = ta_demangle(sym->name);
			if (off == sym->value)
				rc = asprintf(&out, "%s", dm ? dm : sym->name);
			else
				rc = asprintf(&out, "%s+0x%" PRIx64, dm ? dm : sym->name,
					      off - sym->value);
			free(dm);
			return rc < 0 ? NULL : out;
		}
	return NULL;
}

/* A lock's name (malloc'd, NULL without memory): the variable it is
 * ("cache_lock", "stats+0x8"), else the call path that allocated the block
 * it is in ("allocated at main > f > malloc", "+0x10" after it when not at
 * the block's start), else its address. */
static char *lock_name(struct ta_libstats *ls, const struct agg_row *r, int *kind)
{
	char *s = static_name(ls, r->k[0], r->k[1]);

	if (s) {
		*kind = LOCK_STATIC;
		return s;
	}
	if (r->v[3] && r->v[3] <= ls->npaths) {
		*kind = LOCK_HEAP;
		s = path_name(ls, &ls->paths[r->v[3] - 1], "allocated at ");
		if (s && r->v[4]) {
			char *t;

			if (asprintf(&t, "%s +0x%" PRIx64, s, r->v[4]) < 0)
				t = NULL;
			free(s);
			s = t;
		}
		return s;
	}
	*kind = LOCK_ADDRESS;
	return num_name(1, r->k[1]);
}

static int print_locks(struct ta_libstats *ls, int json)
{
	struct out_row *rc = rows_alloc(ls->lock_caller.n), *ro = rows_alloc(ls->lock_obj.n);
	char **objnames = calloc(ls->lock_obj.n ? ls->lock_obj.n : 1, sizeof(char *));
	long nc, no;

	if (!rc || !ro || !objnames) {
		free(rc);
		free(ro);
		free(objnames);
		return -1;
	}
	for (size_t i = 0; i < ls->lock_caller.n; i++) {
		const struct agg_row *r = &ls->lock_caller.rows[i];
		const struct ta_process *p = proc_of(ls, r->k[0]);
		rc[i].name = caller_name(ls, (uint32_t)r->k[0], r->k[1]);
		rc[i].extra = "?";
		for (size_t k = 0; p && k < p->nlibcalls; k++)
			if (p->libcalls[k].index == r->k[2])
				rc[i].extra = p->libcalls[k].name;
		rc[i].v[0] = r->v[0];
		rc[i].v[1] = p ? ta_process_dur_ns(p, r->v[1]) : r->v[1];
		rc[i].v[2] = p ? ta_process_dur_ns(p, r->v[2]) : r->v[2];
	}
	for (size_t i = 0; i < ls->lock_obj.n; i++) {
		const struct agg_row *r = &ls->lock_obj.rows[i];
		const struct ta_process *p = proc_of(ls, r->k[0]);
		int kind = LOCK_ADDRESS;

		objnames[i] = lock_name(ls, r, &kind);
		ro[i].name = objnames[i] ? objnames[i] : "?";
		ro[i].v[0] = r->v[0];
		ro[i].v[1] = p ? ta_process_dur_ns(p, r->v[1]) : r->v[1];
		ro[i].v[2] = p ? ta_process_dur_ns(p, r->v[2]) : r->v[2];
		ro[i].v[3] = (uint64_t)kind; /* one name, one kind: kept whole */
	}
	nc = cut(merge_rows(rc, ls->lock_caller.n, 4u, 1, &rc));
	no = cut(merge_rows(ro, ls->lock_obj.n, 4u | 8u, 1, &ro));
	if (json) {
		fprintf(lo, "  \"locks\": {\"recorded\": true, \"callers\": [");
		for (long i = 0; i < nc; i++) {
			json_row_name("function", rc[i].name, i == 0);
			fprintf(lo, ", \"call\": ");
			ta_json_str(lo, rc[i].extra);
			fprintf(lo, ", \"calls\": %" PRIu64 ", \"wait_ns\": %" PRIu64
			       ", \"max_ns\": %" PRIu64 "}",
			       rc[i].v[0], rc[i].v[1], rc[i].v[2]);
		}
		fprintf(lo, "],\n    \"locks\": [");
		for (long i = 0; i < no; i++) {
			json_row_name("lock", ro[i].name, i == 0);
			fprintf(lo,
				", \"kind\": \"%s\", \"calls\": %" PRIu64 ", \"wait_ns\": %" PRIu64
				", \"max_ns\": %" PRIu64 "}",
				lock_kinds[ro[i].v[3]], ro[i].v[0], ro[i].v[1], ro[i].v[2]);
		}
		fprintf(lo, "]}");
	} else {
		char a[32], b[32];

		fprintf(lo, "lock waits by caller (unlocks left out):\n%10s %12s %12s  %s\n", "calls",
		       "wait", "max", "function: call");
		for (long i = 0; i < nc; i++)
			fprintf(lo, "%10" PRIu64 " %12s %12s  %s: %s\n", rc[i].v[0],
			       ta_fmt_time(a, sizeof(a), rc[i].v[1]),
			       ta_fmt_time(b, sizeof(b), rc[i].v[2]), rc[i].name, rc[i].extra);
		fprintf(
		    lo,
		    "\nlock waits by lock (mutex, rwlock, condition or semaphore: its variable,\n"
		    "the call path that allocated it, or its address):\n"
		    "%10s %12s %12s  %s\n",
		    "calls", "wait", "max", "lock");
		for (long i = 0; i < no; i++)
			fprintf(lo, "%10" PRIu64 " %12s %12s  %s\n", ro[i].v[0],
			       ta_fmt_time(a, sizeof(a), ro[i].v[1]),
			       ta_fmt_time(b, sizeof(b), ro[i].v[2]), ro[i].name);
	}
	for (size_t i = 0; i < ls->lock_obj.n; i++)
		free(objnames[i]);
	free(objnames);
	free(rc);
	free(ro);
	return 0;
}

static void io_rows(struct ta_libstats *ls, const struct agg *a, struct out_row *rows, int by_fd,
		    char **names)
{
	for (size_t i = 0; i < a->n; i++) {
		const struct agg_row *r = &a->rows[i];
		const struct ta_process *p = proc_of(ls, r->k[0]);

		if (by_fd) {
			names[i] = num_name(0, r->k[1]);
			rows[i].name = names[i] ? names[i] : "?";
		} else {
			rows[i].name = caller_name(ls, (uint32_t)r->k[0], r->k[1]);
		}
		memcpy(rows[i].v, r->v, sizeof(r->v));
		rows[i].v[4] = p ? ta_process_dur_ns(p, r->v[4]) : r->v[4];
	}
}

static void io_print(const char *title, const char *what, const char *jkey,
		     const struct out_row *rows, long n, int json)
{
	if (json) {
		fprintf(lo, "\"%s\": [", jkey);
		for (long i = 0; i < n; i++) {
			json_row_name(what, rows[i].name, i == 0);
			fprintf(lo, ", \"calls\": %" PRIu64 ", \"bytes_asked\": %" PRIu64
			       ", \"bytes_done\": %" PRIu64 ", \"errors\": %" PRIu64
			       ", \"time_ns\": %" PRIu64 "}",
			       rows[i].v[0], rows[i].v[1], rows[i].v[2], rows[i].v[3],
			       rows[i].v[4]);
		}
		fprintf(lo, "]");
		return;
	}
	fprintf(lo, "%s:\n%10s %14s %14s %8s %12s  %s\n", title, "calls", "asked", "done", "errors",
	       "time", what);
	for (long i = 0; i < n; i++) {
		char t[32];
		fprintf(lo, "%10" PRIu64 " %14" PRIu64 " %14" PRIu64 " %8" PRIu64 " %12s  %s\n",
		       rows[i].v[0], rows[i].v[1], rows[i].v[2], rows[i].v[3],
		       ta_fmt_time(t, sizeof(t), rows[i].v[4]), rows[i].name);
	}
}

static int print_io(struct ta_libstats *ls, int json)
{
	struct out_row *rf = rows_alloc(ls->io_fd.n), *rc = rows_alloc(ls->io_caller.n);
	char **names = calloc(ls->io_fd.n ? ls->io_fd.n : 1, sizeof(char *));
	long nf, nc;

	if (!rf || !rc || !names) {
		free(rf);
		free(rc);
		free(names);
		return -1;
	}
	io_rows(ls, &ls->io_fd, rf, 1, names);
	io_rows(ls, &ls->io_caller, rc, 0, NULL);
	nf = cut(merge_rows(rf, ls->io_fd.n, 0, 2, &rf));
	nc = cut(merge_rows(rc, ls->io_caller.n, 0, 2, &rc));
	if (json)
		fprintf(lo, "  \"io\": {\"recorded\": true, ");
	io_print("I/O by file descriptor", "fd", "fds", rf, nf, json);
	if (json)
		fprintf(lo, ",\n    ");
	else
		fputc('\n', lo);
	io_print("I/O by calling function", "function", "callers", rc, nc, json);
	if (json)
		fprintf(lo, "}");
	for (size_t i = 0; i < ls->io_fd.n; i++)
		free(names[i]);
	free(names);
	free(rf);
	free(rc);
	return 0;
}

/* Whether a process of the dump recorded the library calls of class cls
 * (its LIBCALLS chunk names the class). */
static int recorded(const struct ta_libstats *ls, unsigned cls)
{
	const struct ta_session *s = ls->v->s;

	for (size_t i = 0; i < s->nprocs; i++)
		if (s->procs[i]->libcall_classes & cls)
			return 1;
	return 0;
}

/* A section of a class the dump did not record: said, with how to record
 * it (text), or "recorded": false and empty lists (JSON). */
static void not_recorded(const char *calls, const char *cls, const char *json_body, int json)
{
	if (json)
		fprintf(lo, "%s", json_body);
	else
		fprintf(lo, "no %s calls in this dump: record with --libcalls=%s\n", calls, cls);
}

int ta_libstats_print(struct ta_libstats *ls, unsigned what, int json, uint64_t top, FILE *out)
{
	int first = 1;

	lo = out;
	ltop = top;
	if (ls->nomem)
		return -1;
	if (json)
		fprintf(lo, "{\n");
	if (what & TA_LC_ALLOC) {
		if (!recorded(ls, TA_LC_ALLOC))
			not_recorded(
			    "allocation", "alloc",
			    "  \"alloc\": {\"recorded\": false, \"allocations\": 0, "
			    "\"bytes_allocated\": 0, \"frees\": 0, \"bytes_freed\": 0, "
			    "\"untracked_frees\": 0, \"live_bytes\": 0, \"live_blocks\": 0,\n"
			    "    \"callers\": [],\n    \"live\": []}",
			    json);
		else if (print_alloc(ls, json) < 0)
			return -1;
		first = 0;
	}
	if (what & TA_LC_LOCK) {
		fputs(first ? "" : json ? ",\n" : "\n", lo);
		if (!recorded(ls, TA_LC_LOCK))
			not_recorded("lock", "lock",
				     "  \"locks\": {\"recorded\": false, \"callers\": [],\n"
				     "    \"locks\": []}",
				     json);
		else if (print_locks(ls, json) < 0)
			return -1;
		first = 0;
	}
	if (what & TA_LC_IO) {
		fputs(first ? "" : json ? ",\n" : "\n", lo);
		if (!recorded(ls, TA_LC_IO))
			not_recorded("I/O", "io",
				     "  \"io\": {\"recorded\": false, \"fds\": [],\n"
				     "    \"callers\": []}",
				     json);
		else if (print_io(ls, json) < 0)
			return -1;
	}
	if (json)
		fprintf(lo, "\n}\n");
	return 0;
}
