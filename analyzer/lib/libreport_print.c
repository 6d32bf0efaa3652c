/* SPDX-License-Identifier: MIT */
/*
 * libreport_print.c - the library calls' sums (libreport.c) named and
 * printed: `report --alloc`, `--locks` and `--io` as tables or JSON.
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
	struct ta_fn id;

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
			char *ns = ta_vec_reserve(s, len + add + 1, &cap, 1, 64);

			if (!ns)
				break;
			s = ns;
		}
		len += (size_t)sprintf(s + len, "%s%s", d ? " > " : "", nm);
	}
	return s;
}

/* Whether pool index + 1 `pool` (0: malloc's) is the pool being printed. */
static int pool_is(struct ta_libstats *ls, uint64_t pool, uint64_t pid, const char *name)
{
	const struct ta_pname *pn;

	if (!pool || !name)
		return !pool && !name;
	pn = &ls->pools.r[pool - 1];
	(void)pid;
	return !strcmp(pn->name, name);
}

/* malloc's allocations (pool NULL), or those of the pools named pool in
 * every process. */
static int print_alloc(struct ta_libstats *ls, int json, const char *pool)
{
	struct out_row *rows = rows_alloc(ls->alloc_caller.n), *pr;
	uint64_t tot[4] = {0}, live_bytes = 0, live_blocks = 0, unknown = 0;
	size_t nrows = 0;
	long n, np;

	if (!rows)
		return -1;
	for (size_t i = 0; i < ls->alloc_caller.n; i++) {
		const struct agg_row *r = &ls->alloc_caller.rows[i];

		if (!pool_is(ls, r->k[2], r->k[0], pool))
			continue;
		rows[nrows].name = caller_name(ls, (uint32_t)r->k[0], r->k[1]);
		memcpy(rows[nrows].v, r->v, sizeof(r->v));
		for (int k = 0; k < 4; k++)
			tot[k] += r->v[k];
		nrows++;
	}
	for (size_t i = 0; pool && i < ls->pools.n; i++)
		if (!strcmp(ls->pools.r[i].name, pool))
			unknown += ls->pools.r[i].unknown;
	n = cut(merge_rows(rows, nrows, 0, 1, &rows));
	/* The live blocks, summed per path. */
	for (size_t i = 0; i < ls->npaths; i++)
		ls->paths[i].bytes = ls->paths[i].blocks = 0;
	for (size_t i = 0; i < ls->nrows; i++) {
		const struct live *e = &ls->live[i];

		if (!e->ptr || !pool_is(ls, e->pid >> 32, e->pid, pool))
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
		if (json && pool) {
			fprintf(lo, "%s",
				ls->pools.n && strcmp(pool, ls->pools.r[0].name)
				    ? ",\n    {\"pool\": "
				    : "{\"pool\": ");
			ta_json_str(lo, pool);
			fprintf(lo,
				", \"allocations\": %" PRIu64 ", \"bytes_allocated\": %" PRIu64
				", \"frees\": %" PRIu64 ", \"bytes_freed\": %" PRIu64
				", \"unknown_frees\": %" PRIu64 ", \"live_bytes\": %" PRIu64
				", \"live_blocks\": %" PRIu64 ",\n    \"callers\": [",
				tot[0], tot[1], tot[2], tot[3], unknown, live_bytes, live_blocks);
		} else if (json) {
			fprintf(lo,
				"  \"alloc\": {\"recorded\": true, \"allocations\": %" PRIu64
				", \"bytes_allocated\": %" PRIu64 ", \"frees\": %" PRIu64
				", \"bytes_freed\": %" PRIu64 ", \"untracked_frees\": %" PRIu64
				", \"live_bytes\": %" PRIu64 ", \"live_blocks\": %" PRIu64
				",\n    \"callers\": [",
				tot[0], tot[1], tot[2], tot[3], ls->untracked_frees, live_bytes,
				live_blocks);
		}
		if (json) {
			for (long i = 0; i < n; i++) {
				json_row_name("function", rows[i].name, i == 0);
				fprintf(lo,
					", \"allocations\": %" PRIu64
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
			if (pool)
				fprintf(lo, "pool %s (TA_ALLOC): ", pool);
			fprintf(lo, "allocations by calling function:\n%10s %14s %10s %14s  %s\n",
				"allocs", "bytes", "frees", "bytes freed", "function");
			for (long i = 0; i < n; i++)
				fprintf(lo,
					"%10" PRIu64 " %14" PRIu64 " %10" PRIu64 " %14" PRIu64
					"  %s\n",
					rows[i].v[0], rows[i].v[1], rows[i].v[2], rows[i].v[3],
					rows[i].name);
			fprintf(
			    lo,
			    "\nlive at the end (allocated, never freed), by call path:\n%14s %10s  "
			    "%s\n",
			    "bytes", "blocks", "path");
			for (long i = 0; i < np; i++)
				fprintf(lo, "%14" PRIu64 " %10" PRIu64 "  %s\n", merged[i].v[0],
					merged[i].v[1], merged[i].name);
			fprintf(lo,
				"\ntotal: %" PRIu64 " allocations, %" PRIu64 " bytes; %" PRIu64
				" frees, %" PRIu64 " bytes; %" PRIu64 " bytes in %" PRIu64
				" blocks live at the end\n",
				tot[0], tot[1], tot[2], tot[3], live_bytes, live_blocks);
			if (pool && unknown)
				fprintf(lo, "%" PRIu64 " frees of pointers the pool did not hold\n",
					unknown);
			if (!pool && ls->untracked_frees)
				fprintf(lo,
					"%" PRIu64
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

/* Each pool of the manual API (by name, over the processes), after
 * malloc's: text sections, or JSON's "pools" list. */
static int print_pools(struct ta_libstats *ls, int json)
{
	if (json)
		fprintf(lo, ",\n  \"pools\": [");
	for (size_t i = 0; i < ls->pools.n; i++) {
		size_t k;

		for (k = 0; k < i && strcmp(ls->pools.r[k].name, ls->pools.r[i].name); k++)
			;
		if (k < i)
			continue; /* printed with an earlier process's */
		if (!json)
			fputc('\n', lo);
		if (print_alloc(ls, json, ls->pools.r[i].name) < 0)
			return -1;
	}
	if (json)
		fprintf(lo, "]");
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
	v = ta_vec_reserve(ls->dsyms, ls->ndsyms + 1, &ls->dsyms_cap, sizeof(*v), 8);
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
enum { LOCK_STATIC, LOCK_HEAP, LOCK_ADDRESS, LOCK_NAMED };
static const char *const lock_kinds[] = {"static", "heap", "address", "named"};

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

/* A lock's name (malloc'd, NULL without memory): the name TA_LOCK_NAME
 * gave it, else the variable it is
 * ("cache_lock", "stats+0x8"), else the call path that allocated the block
 * it is in ("allocated at main > f > malloc", "+0x10" after it when not at
 * the block's start), else its address. */
static char *lock_name(struct ta_libstats *ls, const struct agg_row *r, int *kind)
{
	const char *named = ta_locknames_get(&ls->locknames, r->k[0], r->k[1]);
	char *s;

	/* The program's own name for it (TA_LOCK_NAME) first. */
	if (named) {
		*kind = LOCK_NAMED;
		return strdup(named);
	}
	s = static_name(ls, r->k[0], r->k[1]);
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
			fprintf(lo,
				", \"calls\": %" PRIu64 ", \"wait_ns\": %" PRIu64
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

		fprintf(lo, "lock waits by caller (unlocks left out):\n%10s %12s %12s  %s\n",
			"calls", "wait", "max", "function: call");
		for (long i = 0; i < nc; i++)
			fprintf(lo, "%10" PRIu64 " %12s %12s  %s: %s\n", rc[i].v[0],
				ta_fmt_time(a, sizeof(a), rc[i].v[1]),
				ta_fmt_time(b, sizeof(b), rc[i].v[2]), rc[i].name, rc[i].extra);
		fprintf(lo,
			"\nlock waits by lock (mutex, rwlock, condition or semaphore: its "
			"TA_LOCK_NAME,\n"
			"its variable, the call path that allocated it, or its address):\n"
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
			fprintf(lo,
				", \"calls\": %" PRIu64 ", \"bytes_asked\": %" PRIu64
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
		else if (print_alloc(ls, json, NULL) < 0)
			return -1;
		if (print_pools(ls, json) < 0)
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
