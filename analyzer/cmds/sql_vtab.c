/* SPDX-License-Identifier: MIT */
/*
 * sql_vtab.c - a table of tracerows.h kept in columns in memory and shown
 * to SQLite as a virtual table (read-only), as Perfetto's trace processor
 * keeps its own: appending a row to arrays costs a fraction of inserting
 * it into a b-tree, so the slices of a big dump load several times faster
 * than into a table of SQLite's.  A row whose first column is a dense id
 * (slice.id) is kept at that place, so scans go in id order and a lookup
 * by id (parent_id joins) is one index; every other lookup is a scan.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "grow.h"
#include "htab.h"
#include "sql_int.h"

/* ---- the store --------------------------------------------------------------------- */

/* Interned texts: each kept once, a row holds its index + 1 (0: NULL). */
struct strpool {
	char **s;
	size_t n, cap;
	struct ta_htab by_text;
	/* The last text seen at a small hash of its pointer: most rows repeat
	 * a text of a few, at the same address. */
	struct {
		const char *p;
		uint32_t id;
	} recent[1024];
};

/*
 * A column's memory: address space reserved (PROT_NONE, which commits
 * nothing) and made writable as rows come, in steps of 2 MiB, with
 * transparent huge pages asked for.  Filling fresh memory costs a page
 * fault per page: with 4 KiB pages they took most of a load's time, in a
 * virtual machine above all.  When the reserve is full, a twice larger
 * one takes the data.
 */
struct region {
	uint8_t *p;
	size_t reserved, writable;
};

#define REGION_STEP  ((size_t)2 << 20)
#define REGION_FIRST ((size_t)1 << 30)

static void region_free(struct region *r)
{
	if (r->p)
		munmap(r->p, r->reserved);
	memset(r, 0, sizeof(*r));
}

/* Room for bytes [0, need): 0, or -1 without memory. */
static int region_reserve(struct region *r, size_t need)
{
	size_t want;

	if (need <= r->writable)
		return 0;
	if (need > r->reserved) {
		size_t size = r->reserved ? r->reserved : REGION_FIRST;
		struct region n = {0};
		void *p;

		while (size < need) {
			if (size > SIZE_MAX / 2)
				return -1;
			size *= 2;
		}
		p = mmap(NULL, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (p == MAP_FAILED)
			return -1;
		n.p = p;
		n.reserved = size;
		madvise(n.p, n.reserved, MADV_HUGEPAGE);
		if (r->writable) {
			if (mprotect(n.p, r->writable, PROT_READ | PROT_WRITE) < 0) {
				region_free(&n);
				return -1;
			}
			memcpy(n.p, r->p, r->writable);
			n.writable = r->writable;
		}
		region_free(r);
		*r = n;
	}
	want = (need + REGION_STEP - 1) / REGION_STEP * REGION_STEP;
	if (want > r->reserved)
		want = r->reserved;
	if (mprotect(r->p + r->writable, want - r->writable, PROT_READ | PROT_WRITE) < 0)
		return -1;
	r->writable = want;
	return 0;
}

struct ta_sqlstore {
	const struct ta_rows_table *t;
	int by_id;     /* rows at their id - 1 */
	size_t n, cap; /* rows (the largest id with by_id), room */
	/* Per column: ints or text ids, 32 bits each until a value needs 64
	 * (then wide); NULL for a hidden column, which SQLite does not see. */
	struct region *col;
	uint8_t *wide;
	uint8_t *absent; /* by_id: 1 for a row never given (a gap) */
	struct strpool pool;
	int nomem;
};

static uint64_t str_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h ^ (h >> 29);
}

static uint64_t pool_hash(const void *ctx, size_t i)
{
	const struct strpool *p = ctx;

	return str_hash(p->s[i]);
}

static int pool_eq(const void *ctx, size_t i, const void *key)
{
	const struct strpool *p = ctx;

	return !strcmp(p->s[i], key);
}

/* The id of text s (index + 1), 0 without memory. */
static uint32_t intern(struct strpool *p, const char *s)
{
	size_t r = ((uintptr_t)s >> 3) % (sizeof(p->recent) / sizeof(p->recent[0]));
	size_t k;
	char **v;

	if (p->recent[r].p == s && !strcmp(p->s[p->recent[r].id - 1], s))
		return p->recent[r].id;
	if (ta_htab_reserve(&p->by_text, p->n, 64, pool_hash, p) < 0)
		return 0;
	k = ta_htab_find(&p->by_text, str_hash(s), pool_eq, p, s);
	if (!ta_htab_at(&p->by_text, k)) {
		if (!(v = ta_vec_reserve(p->s, p->n + 1, &p->cap, sizeof(*v), 64)))
			return 0;
		p->s = v;
		if (!(p->s[p->n] = strdup(s)))
			return 0;
		ta_htab_put(&p->by_text, k, p->n++);
	}
	p->recent[r].p = s;
	p->recent[r].id = ta_htab_at(&p->by_text, k);
	return p->recent[r].id;
}

struct ta_sqlstore *ta_sqlstore_new(const struct ta_rows_table *t)
{
	struct ta_sqlstore *st = calloc(1, sizeof(*st));

	if (!st)
		return NULL;
	for (unsigned k = 0; k < t->ncols; k++)
		if (t->cols[k].type == TA_ROWS_DOUBLE) {
			free(st);
			return NULL;
		}
	st->t = t;
	st->by_id = !strcmp(t->cols[0].name, "id") && t->cols[0].type == TA_ROWS_INT;
	st->col = calloc(t->ncols, sizeof(*st->col));
	st->wide = calloc(t->ncols, 1);
	if (!st->col || !st->wide) {
		free(st->col);
		free(st->wide);
		free(st);
		return NULL;
	}
	return st;
}

void ta_sqlstore_free(struct ta_sqlstore *st)
{
	if (!st)
		return;
	for (unsigned k = 0; k < st->t->ncols; k++)
		region_free(&st->col[k]);
	free(st->col);
	free(st->wide);
	free(st->absent);
	for (size_t i = 0; i < st->pool.n; i++)
		free(st->pool.s[i]);
	free(st->pool.s);
	ta_htab_free(&st->pool.by_text);
	free(st);
}

/* Room for rows [0, need). */
static int reserve(struct ta_sqlstore *st, size_t need)
{
	size_t cap = ta_grow_cap(st->cap, need, 8, 65536, SIZE_MAX / 8);
	uint8_t *a;

	if (need <= st->cap)
		return 0;
	if (!cap)
		return -1;
	for (unsigned k = 0; k < st->t->ncols; k++)
		if (!st->t->cols[k].hidden &&
		    region_reserve(&st->col[k], cap * (st->wide[k] ? 8 : 4)) < 0)
			return -1;
	if (st->by_id) {
		if (!(a = ta_vec_reserve(st->absent, cap, &(size_t){st->cap}, 1, 65536)))
			return -1;
		st->absent = a;
		/* Every row is a gap until given. */
		memset(a + st->cap, 1, cap - st->cap);
	}
	st->cap = cap;
	return 0;
}

/* A null int: its column holds the lowest value of its width (a text's
 * NULL is id 0); an int of that value makes a narrow column wide. */
#define NULL_INT   INT64_MIN
#define NULL_INT32 INT32_MIN

/* Makes column k 64 bits wide: -1 without memory. */
static int widen(struct ta_sqlstore *st, unsigned k)
{
	struct region r = {0};
	const int32_t *v = (const int32_t *)st->col[k].p;
	int64_t *w;

	if (region_reserve(&r, (st->cap ? st->cap : 1) * sizeof(*w)) < 0)
		return -1;
	w = (int64_t *)r.p;
	/* The rows given (a gap's cells were never written). */
	for (size_t i = 0; i < st->n; i++)
		if (!st->by_id || !st->absent[i])
			w[i] = v[i] == NULL_INT32 ? NULL_INT : v[i];
	region_free(&st->col[k]);
	st->col[k] = r;
	st->wide[k] = 1;
	return 0;
}

static int64_t get(const struct ta_sqlstore *st, unsigned k, size_t row)
{
	int32_t v;

	if (st->wide[k])
		return ((const int64_t *)st->col[k].p)[row];
	v = ((const int32_t *)st->col[k].p)[row];
	return v == NULL_INT32 ? NULL_INT : v;
}

int ta_sqlstore_add(struct ta_sqlstore *st, const struct ta_rows_cell *cells)
{
	const struct ta_rows_table *t = st->t;
	size_t at = st->n;

	if (st->by_id) {
		if (cells[0].null || cells[0].i < 1 || (uint64_t)cells[0].i > UINT32_MAX)
			return -1;
		at = (size_t)cells[0].i - 1;
	}
	if (reserve(st, at + 1) < 0) {
		st->nomem = 1;
		return -1;
	}
	for (unsigned k = 0; k < t->ncols; k++) {
		const struct ta_rows_cell *x = &cells[k];
		int64_t v;

		if (t->cols[k].hidden)
			continue;
		if (t->cols[k].type == TA_ROWS_TEXT) {
			v = x->null ? 0 : intern(&st->pool, x->s);
			if (!x->null && !v) {
				st->nomem = 1;
				return -1;
			}
		} else if (x->null) {
			v = NULL_INT;
		} else if (t->cols[k].type == TA_ROWS_DOUBLE) {
			memcpy(&v, &x->d, sizeof(v));
		} else {
			v = x->i;
		}
		if (st->wide[k]) {
			((int64_t *)st->col[k].p)[at] = v;
		} else if (v != NULL_INT && (v <= NULL_INT32 || v > INT32_MAX)) {
			if (widen(st, k) < 0) {
				st->nomem = 1;
				return -1;
			}
			((int64_t *)st->col[k].p)[at] = v;
		} else {
			((int32_t *)st->col[k].p)[at] = v == NULL_INT ? NULL_INT32 : (int32_t)v;
		}
	}
	if (st->by_id) {
		st->absent[at] = 0;
		if (at + 1 > st->n)
			st->n = at + 1;
	} else {
		st->n++;
	}
	return 0;
}

/* ---- the virtual table ----------------------------------------------------------------- */

struct vtab {
	sqlite3_vtab base;
	struct ta_sqlstore *st;
};

struct cursor {
	sqlite3_vtab_cursor base;
	size_t row, end;
};

static const char *decl_type(enum ta_rows_type t)
{
	return t == TA_ROWS_INT ? "INTEGER" : t == TA_ROWS_DOUBLE ? "REAL" : "TEXT";
}

static int vt_connect(sqlite3 *db, void *aux, int argc, const char *const *argv, sqlite3_vtab **out,
		      char **err)
{
	struct ta_sqlstore *st = aux;
	struct vtab *vt;
	char decl[2048];
	size_t c = 0;
	int n = 0;

	(void)argc;
	(void)argv;
	(void)err;
	c += (size_t)snprintf(decl, sizeof(decl), "CREATE TABLE x(");
	for (unsigned k = 0; k < st->t->ncols; k++)
		if (!st->t->cols[k].hidden)
			c +=
			    (size_t)snprintf(decl + c, sizeof(decl) - c, "%s%s %s", n++ ? ", " : "",
					     st->t->cols[k].name, decl_type(st->t->cols[k].type));
	snprintf(decl + c, sizeof(decl) - c, ")");
	if (sqlite3_declare_vtab(db, decl) != SQLITE_OK)
		return SQLITE_ERROR;
	if (!(vt = sqlite3_malloc(sizeof(*vt))))
		return SQLITE_NOMEM;
	memset(vt, 0, sizeof(*vt));
	vt->st = st;
	*out = &vt->base;
	return SQLITE_OK;
}

static int vt_disconnect(sqlite3_vtab *v)
{
	sqlite3_free(v);
	return SQLITE_OK;
}

/* The column k of the declared table (hidden ones left out) in the store. */
static unsigned store_col(const struct ta_sqlstore *st, int k)
{
	unsigned i = 0;

	for (;; i++)
		if (!st->t->cols[i].hidden && k-- == 0)
			return i;
}

static int vt_best_index(sqlite3_vtab *v, sqlite3_index_info *info)
{
	struct ta_sqlstore *st = ((struct vtab *)v)->st;

	info->idxNum = 0;
	info->estimatedCost = (double)st->n + 1;
	info->estimatedRows = (sqlite3_int64)st->n + 1;
	for (int i = 0; st->by_id && i < info->nConstraint; i++) {
		const struct sqlite3_index_constraint *c = &info->aConstraint[i];

		if (c->usable && c->op == SQLITE_INDEX_CONSTRAINT_EQ &&
		    (c->iColumn == -1 || c->iColumn == 0)) {
			info->idxNum = 1;
			info->aConstraintUsage[i].argvIndex = 1;
			info->aConstraintUsage[i].omit = 1;
			info->estimatedCost = 1;
			info->estimatedRows = 1;
			info->idxFlags = SQLITE_INDEX_SCAN_UNIQUE;
			break;
		}
	}
	/* Rows go out in id order. */
	if (st->by_id && info->nOrderBy == 1 &&
	    (info->aOrderBy[0].iColumn == 0 || info->aOrderBy[0].iColumn == -1) &&
	    !info->aOrderBy[0].desc)
		info->orderByConsumed = 1;
	return SQLITE_OK;
}

static int vt_open(sqlite3_vtab *v, sqlite3_vtab_cursor **out)
{
	struct cursor *c = sqlite3_malloc(sizeof(*c));

	(void)v;
	if (!c)
		return SQLITE_NOMEM;
	memset(c, 0, sizeof(*c));
	*out = &c->base;
	return SQLITE_OK;
}

static int vt_close(sqlite3_vtab_cursor *c)
{
	sqlite3_free(c);
	return SQLITE_OK;
}

static void skip_gaps(struct cursor *c, const struct ta_sqlstore *st)
{
	while (st->by_id && c->row < c->end && st->absent[c->row])
		c->row++;
}

static int vt_filter(sqlite3_vtab_cursor *cur, int idx, const char *idxstr, int argc,
		     sqlite3_value **argv)
{
	struct cursor *c = (struct cursor *)cur;
	const struct ta_sqlstore *st = ((struct vtab *)cur->pVtab)->st;

	(void)idxstr;
	c->row = 0;
	c->end = st->n;
	if (idx == 1 && argc == 1) {
		int type = sqlite3_value_numeric_type(argv[0]);
		sqlite3_int64 id = sqlite3_value_int64(argv[0]);

		/* An id is an integer: 2.5 or 'x' is none. */
		if (type != SQLITE_INTEGER || id < 1 || (uint64_t)id > st->n) {
			c->end = 0;
		} else {
			c->row = (size_t)id - 1;
			c->end = c->row + 1;
		}
	}
	skip_gaps(c, st);
	return SQLITE_OK;
}

static int vt_next(sqlite3_vtab_cursor *cur)
{
	struct cursor *c = (struct cursor *)cur;

	c->row++;
	skip_gaps(c, ((struct vtab *)cur->pVtab)->st);
	return SQLITE_OK;
}

static int vt_eof(sqlite3_vtab_cursor *cur)
{
	const struct cursor *c = (const struct cursor *)cur;

	return c->row >= c->end;
}

static int vt_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int k)
{
	const struct cursor *c = (const struct cursor *)cur;
	const struct ta_sqlstore *st = ((struct vtab *)cur->pVtab)->st;
	unsigned i = store_col(st, k);
	int64_t v = get(st, i, c->row);
	double d;

	switch (st->t->cols[i].type) {
	case TA_ROWS_TEXT:
		if (v)
			sqlite3_result_text(ctx, st->pool.s[v - 1], -1, SQLITE_STATIC);
		else
			sqlite3_result_null(ctx);
		break;
	case TA_ROWS_DOUBLE:
		if (v == NULL_INT) {
			sqlite3_result_null(ctx);
			break;
		}
		memcpy(&d, &v, sizeof(d));
		sqlite3_result_double(ctx, d);
		break;
	default:
		if (v == NULL_INT)
			sqlite3_result_null(ctx);
		else
			sqlite3_result_int64(ctx, v);
	}
	return SQLITE_OK;
}

static int vt_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid)
{
	*rowid = (sqlite3_int64)((const struct cursor *)cur)->row + 1;
	return SQLITE_OK;
}

static const sqlite3_module vt_module = {
    .iVersion = 0,
    .xCreate = vt_connect,
    .xConnect = vt_connect,
    .xBestIndex = vt_best_index,
    .xDisconnect = vt_disconnect,
    .xDestroy = vt_disconnect,
    .xOpen = vt_open,
    .xClose = vt_close,
    .xFilter = vt_filter,
    .xNext = vt_next,
    .xEof = vt_eof,
    .xColumn = vt_column,
    .xRowid = vt_rowid,
};

int ta_sqlstore_attach(sqlite3 *db, struct ta_sqlstore *st)
{
	char module[64], sql[160];

	snprintf(module, sizeof(module), "ta_rows_%s", st->t->name);
	if (sqlite3_create_module_v2(db, module, &vt_module, st, NULL) != SQLITE_OK)
		return -1;
	snprintf(sql, sizeof(sql), "CREATE VIRTUAL TABLE %s USING %s", st->t->name, module);
	return sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -1;
}
