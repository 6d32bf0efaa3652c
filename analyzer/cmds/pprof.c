/* SPDX-License-Identifier: MIT */
/*
 * pprof.c - `traceagent export --format=pprof`: the call tree of a dump as
 * pprof's profile (a gzip'd perftools.profiles.Profile), which `go tool
 * pprof`, speedscope and the continuous profilers (Pyroscope, Parca,
 * Grafana) read.
 *
 * A trace knows more than a sampling profiler: every call.  Each distinct
 * call path (a node of the call tree, calltree.c, threads merged) is one
 * sample whose values are the path's calls, total and self time in ns
 * (sample types calls/count, total/nanoseconds, self/nanoseconds; self is
 * the default, the one whose sums along stacks pprof's cumulative numbers
 * assume).  A function is one Location and one Function (its name, and its
 * file and line with --srcline), a module one Mapping with its build-id;
 * the mappings say their functions are named, so pprof never tries to
 * symbolize the addresses (offsets in the module).
 *
 * The profile is encoded (pbenc.c) and compressed (zlib, gzip framing) in
 * pieces as it is made: memory is the call tree's and the string table's.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "grow.h"
#include "calltree.h"
#include "export_pb.h"
#include "pbenc.h"

/* perftools.profiles field numbers (github.com/google/pprof,
 * proto/profile.proto). */
enum {
	PR_SAMPLE_TYPE = 1,
	PR_SAMPLE = 2,
	PR_MAPPING = 3,
	PR_LOCATION = 4,
	PR_FUNCTION = 5,
	PR_STRING_TABLE = 6,
	PR_TIME_NANOS = 9,
	PR_DURATION_NANOS = 10,
	PR_COMMENT = 13,
	PR_DEFAULT_SAMPLE_TYPE = 14,
	VT_TYPE = 1,
	VT_UNIT = 2,
	SA_LOCATION_ID = 1,
	SA_VALUE = 2,
	MA_ID = 1,
	MA_START = 2,
	MA_LIMIT = 3,
	MA_FILENAME = 5,
	MA_BUILD_ID = 6,
	MA_HAS_FUNCTIONS = 7,
	MA_HAS_FILENAMES = 8,
	MA_HAS_LINES = 9,
	LO_ID = 1,
	LO_MAPPING_ID = 2,
	LO_ADDRESS = 3,
	LO_LINE = 4,
	LI_FUNCTION_ID = 1,
	LI_LINE = 2,
	FN_ID = 1,
	FN_NAME = 2,
	FN_SYSTEM_NAME = 3,
	FN_FILENAME = 4,
	FN_START_LINE = 5,
};

#define FLUSH_BYTES (1u << 16)

/* The string table: strings by index (0 is ""), found by a hash index. */
struct strtab {
	char **s;
	size_t n, cap;
	struct ta_htab h;
};

struct module {
	const char *path;
	uint64_t limit; /* past the largest function offset */
	char *build_id; /* hex, or NULL */
};

struct pp {
	FILE *f;
	const char *out_err; /* "out of memory" or a zlib message, once */
	struct ta_pb pb;
	z_stream z;
	int z_ready;
	uint8_t zbuf[1 << 16];
	int fail;

	struct ta_treeview tv;
	struct strtab st;
	struct module *mods;
	size_t nmods, mods_cap;
	uint32_t *mod_of; /* by function id: its module's index + 1, 0 none */
	uint64_t *stack;  /* location ids by depth */
	uint32_t nstack;
};

/* ---- strings -------------------------------------------------------------------- */

static uint64_t str_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h ^ h >> 29;
}

static uint64_t st_row_hash(const void *ctx, size_t i)
{
	return str_hash(((const struct strtab *)ctx)->s[i]);
}

static int st_eq(const void *ctx, size_t i, const void *key)
{
	return !strcmp(((const struct strtab *)ctx)->s[i], key);
}

/* The index of s in the table, added when missing; -1 without memory. */
static int64_t str_id(struct strtab *st, const char *s)
{
	size_t k;

	if (ta_htab_reserve(&st->h, st->n, 256, st_row_hash, st) < 0)
		return -1;
	k = ta_htab_find(&st->h, str_hash(s), st_eq, st, s);
	if (ta_htab_at(&st->h, k))
		return ta_htab_at(&st->h, k) - 1;
	if (st->n == st->cap) {
		char **a = ta_vec_reserve(st->s, st->n + 1, &st->cap, sizeof(*a), 256);

		if (!a)
			return -1;
		st->s = a;
	}
	st->s[st->n] = strdup(s);
	if (!st->s[st->n])
		return -1;
	ta_htab_put(&st->h, k, st->n);
	return (int64_t)st->n++;
}

static void strtab_free(struct strtab *st)
{
	for (size_t i = 0; i < st->n; i++)
		free(st->s[i]);
	free(st->s);
	ta_htab_free(&st->h);
}

/* str_id, remembering a failure in x. */
static uint64_t sid(struct pp *x, const char *s)
{
	int64_t id = str_id(&x->st, s);

	if (id < 0) {
		x->fail = 1;
		x->out_err = "out of memory";
		return 0;
	}
	return (uint64_t)id;
}

/* ---- output ---------------------------------------------------------------------- */

/* Compresses what the encoder holds (all of it, and the gzip trailer, at
 * the end). */
static void drain(struct pp *x, int finish)
{
	if (x->fail)
		return;
	if (ta_pb_failed(&x->pb)) {
		x->fail = 1;
		x->out_err = "out of memory";
		return;
	}
	if (!finish && x->pb.len < FLUSH_BYTES)
		return;
	x->z.next_in = x->pb.buf;
	x->z.avail_in = (uInt)x->pb.len;
	for (;;) {
		int r;

		x->z.next_out = x->zbuf;
		x->z.avail_out = sizeof(x->zbuf);
		r = deflate(&x->z, finish ? Z_FINISH : Z_NO_FLUSH);
		if (r == Z_STREAM_ERROR) {
			x->fail = 1;
			x->out_err = "compression failed";
			return;
		}
		fwrite(x->zbuf, 1, sizeof(x->zbuf) - x->z.avail_out, x->f);
		if (finish ? r == Z_STREAM_END : x->z.avail_in == 0 && x->z.avail_out != 0)
			break;
	}
	ta_pb_reset(&x->pb);
}

/* ---- samples ----------------------------------------------------------------------- */

static int sample_open(void *ctx, uint32_t n, uint32_t depth)
{
	struct pp *x = ctx;
	const struct ta_ctnode *node = &x->tv.ct.tree.n[n];
	struct ta_pb *b = &x->pb;

	if (!depth)
		return 1;
	if (ta_calltree_thread(&x->tv.ct, node->key))
		return 0; /* merged: none; but never a frame */
	if (depth > x->nstack) {
		size_t k = x->nstack;
		uint64_t *s = ta_vec_reserve(x->stack, depth, &k, sizeof(*s), 64);

		if (!s) {
			x->fail = 1;
			x->out_err = "out of memory";
			return 0;
		}
		x->stack = s;
		x->nstack = (uint32_t)k;
	}
	x->stack[depth - 1] = node->key + 1;
	ta_pb_begin(b, PR_SAMPLE);
	/* Packed: the leaf first. */
	ta_pb_begin(b, SA_LOCATION_ID);
	for (uint32_t d = depth; d > 0; d--)
		ta_pb_raw_varint(b, x->stack[d - 1]);
	ta_pb_end(b);
	ta_pb_begin(b, SA_VALUE);
	ta_pb_raw_varint(b, node->calls);
	ta_pb_raw_varint(b, node->total);
	ta_pb_raw_varint(b, node->self);
	ta_pb_end(b);
	ta_pb_end(b);
	drain(x, 0);
	return !x->fail;
}

/* ---- mappings, locations, functions ---------------------------------------------------- */

static char *hex(const uint8_t *p, size_t n)
{
	char *s = malloc(2 * n + 1);

	if (!s)
		return NULL;
	for (size_t i = 0; i < n; i++)
		snprintf(s + 2 * i, 3, "%02x", p[i]);
	s[2 * n] = 0;
	return s;
}

/* The build-id of the module at path in any process of the dump. */
static char *build_id(const struct ta_session *s, const char *path)
{
	for (size_t i = 0; i < s->nprocs; i++)
		for (size_t k = 0; k < s->procs[i]->nmodules; k++) {
			const struct ta_sess_module *m = &s->procs[i]->modules[k];

			if (m->build_id_len && m->path && !strcmp(m->path, path))
				return hex(m->build_id, m->build_id_len);
		}
	return NULL;
}

/* Numbers the modules of the functions; -1 without memory. */
static int modules(struct pp *x)
{
	const struct ta_fn_index *ft = &x->tv.ct.fns;

	x->mod_of = calloc(ft->n ? ft->n : 1, sizeof(*x->mod_of));
	if (!x->mod_of)
		return -1;
	for (uint32_t i = 0; i < ft->n; i++) {
		const struct ta_fn *fn = &ft->fn[i].id;
		size_t k;

		if (!fn->module[0])
			continue;
		for (k = 0; k < x->nmods && strcmp(x->mods[k].path, fn->module); k++)
			;
		if (k == x->nmods) {
			struct module *m =
			    ta_vec_reserve(x->mods, x->nmods + 1, &x->mods_cap, sizeof(*m), 8);

			if (!m)
				return -1;
			x->mods = m;
			memset(&m[k], 0, sizeof(*m));
			m[k].path = fn->module;
			if (fn->module[0] != '[')
				m[k].build_id = build_id(x->tv.v.s, fn->module);
			x->nmods++;
		}
		if (fn->offset + 1 > x->mods[k].limit)
			x->mods[k].limit = fn->offset + 1;
		x->mod_of[i] = (uint32_t)k + 1;
	}
	return 0;
}

/* "file:line" split: the file's string id and the line (0 when none). */
static void srcline_parts(struct pp *x, const char *src, uint64_t *file, int64_t *line)
{
	const char *colon = strrchr(src, ':');
	char *name;

	*file = 0;
	*line = 0;
	if (!colon) {
		*file = sid(x, src);
		return;
	}
	name = strndup(src, (size_t)(colon - src));
	if (!name) {
		x->fail = 1;
		x->out_err = "out of memory";
		return;
	}
	*file = sid(x, name);
	*line = strtoll(colon + 1, NULL, 10);
	free(name);
}

static void tables(struct pp *x, int srcline)
{
	const struct ta_fn_index *ft = &x->tv.ct.fns;
	struct ta_pb *b = &x->pb;

	for (size_t k = 0; k < x->nmods; k++) {
		const struct module *m = &x->mods[k];

		ta_pb_begin(b, PR_MAPPING);
		ta_pb_varint(b, MA_ID, k + 1);
		ta_pb_varint(b, MA_START, 0);
		ta_pb_varint(b, MA_LIMIT, m->limit);
		ta_pb_varint(b, MA_FILENAME, sid(x, m->path));
		if (m->build_id)
			ta_pb_varint(b, MA_BUILD_ID, sid(x, m->build_id));
		ta_pb_varint(b, MA_HAS_FUNCTIONS, 1);
		if (srcline) {
			ta_pb_varint(b, MA_HAS_FILENAMES, 1);
			ta_pb_varint(b, MA_HAS_LINES, 1);
		}
		ta_pb_end(b);
		drain(x, 0);
	}
	for (uint32_t i = 0; i < ft->n; i++) {
		const struct ta_fn *fn = &ft->fn[i].id;
		uint64_t name = sid(x, fn->name), file = 0;
		int64_t line = 0;

		if (fn->srcline)
			srcline_parts(x, fn->srcline, &file, &line);
		ta_pb_begin(b, PR_FUNCTION);
		ta_pb_varint(b, FN_ID, (uint64_t)i + 1);
		ta_pb_varint(b, FN_NAME, name);
		ta_pb_varint(b, FN_SYSTEM_NAME, name);
		if (file)
			ta_pb_varint(b, FN_FILENAME, file);
		if (line)
			ta_pb_varint(b, FN_START_LINE, (uint64_t)line);
		ta_pb_end(b);
		ta_pb_begin(b, PR_LOCATION);
		ta_pb_varint(b, LO_ID, (uint64_t)i + 1);
		if (x->mod_of[i]) {
			ta_pb_varint(b, LO_MAPPING_ID, x->mod_of[i]);
			ta_pb_varint(b, LO_ADDRESS, fn->offset);
		}
		ta_pb_begin(b, LO_LINE);
		ta_pb_varint(b, LI_FUNCTION_ID, (uint64_t)i + 1);
		if (line)
			ta_pb_varint(b, LI_LINE, (uint64_t)line);
		ta_pb_end(b);
		ta_pb_end(b);
		drain(x, 0);
	}
}

static void value_type(struct pp *x, const char *type, const char *unit)
{
	struct ta_pb *b = &x->pb;

	ta_pb_begin(b, PR_SAMPLE_TYPE);
	ta_pb_varint(b, VT_TYPE, sid(x, type));
	ta_pb_varint(b, VT_UNIT, sid(x, unit));
	ta_pb_end(b);
}

/* The time of the dump's start (UTC, the earliest process) and its length. */
static void times(struct pp *x)
{
	const struct ta_session *s = x->tv.v.s;
	uint64_t start = 0;

	for (size_t i = 0; i < s->nprocs; i++) {
		uint64_t t = s->procs[i]->start_realtime_ns;

		if (t && (!start || t < start))
			start = t;
	}
	if (start)
		ta_pb_varint(&x->pb, PR_TIME_NANOS, start);
}

int ta_export_pprof(FILE *f, const char *path, const struct ta_tidset *tids, int srcline)
{
	struct pp *x = calloc(1, sizeof(*x));
	struct ta_srclines *sl = NULL;
	int status;

	if (!x) {
		fprintf(stderr, "traceagent: %s: out of memory\n", path);
		return 1;
	}
	x->f = f;
	ta_pb_init(&x->pb);
	if (ta_treeview_open(&x->tv, path, tids, 0) < 0) {
		status = x->tv.v.status;
		goto out;
	}
	status = x->tv.v.status;
	if (srcline) {
		sl = ta_srclines_new();
		if (sl)
			ta_fn_index_srclines(&x->tv.ct.fns, sl);
	}
	/* windowBits 15 + 16: the gzip framing pprof reads. */
	if (deflateInit2(&x->z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK) {
		fprintf(stderr, "traceagent: %s: out of memory\n", path);
		status = 1;
		goto out;
	}
	x->z_ready = 1;
	/* The string table's entry 0 must be "". */
	sid(x, "");
	value_type(x, "calls", "count");
	value_type(x, "total", "nanoseconds");
	value_type(x, "self", "nanoseconds");
	ta_pb_varint(&x->pb, PR_DEFAULT_SAMPLE_TYPE, sid(x, "self"));
	times(x);
	if (modules(x) < 0) {
		x->fail = 1;
		x->out_err = "out of memory";
	}
	if (!x->fail)
		ta_ctree_walk(&x->tv.ct.tree, 0, sample_open, NULL, x);
	if (!x->fail)
		tables(x, srcline);
	/* Strings last: everything before named the ones it needs. */
	for (size_t i = 0; i < x->st.n && !x->fail; i++) {
		ta_pb_str(&x->pb, PR_STRING_TABLE, x->st.s[i]);
		drain(x, 0);
	}
	drain(x, 1);
	if (x->fail) {
		fprintf(stderr, "traceagent: %s: %s\n", path, x->out_err);
		status = status ? status : 1;
	}
out:
	if (x->z_ready)
		deflateEnd(&x->z);
	ta_srclines_free(sl);
	ta_treeview_close(&x->tv);
	ta_pb_free(&x->pb);
	strtab_free(&x->st);
	for (size_t k = 0; k < x->nmods; k++)
		free(x->mods[k].build_id);
	free(x->mods);
	free(x->mod_of);
	free(x->stack);
	free(x);
	return status;
}
