/* SPDX-License-Identifier: MIT */
/*
 * fuzz_entry.c - one fuzz input through the dump reader, the session with
 * the profile, the report's tables and its library-call sections; see
 * fuzz_entry.h.
 */
#define _GNU_SOURCE
#include "fuzz_entry.h"

#include <inttypes.h>
#include <lz4.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiev.h"
#include "apimem.h"
#include "argsview.h"
#include "common.h"
#include "dumpfile.h"
#include "libreport.h"
#include "section.h"
#include "session.h"

/* An invariant broken: crash where the fuzzer and ASan report it. */
#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			fprintf(stderr, "fuzz_entry.c:%d: check failed: %s\n", __LINE__, #cond);   \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

/* ---- the manual API's memory, lock-name and fiber events -------------------------- */

/* What the views keep of them (apimem.h), fed every such event: a visitor
 * around another. */
struct memchk {
	struct ta_visitor inner;
	struct ta_session *s;
	struct ta_pools pools;
	struct ta_fibers fibers;
	struct ta_locknames locks;
	char text[TA_TEXT_MAX + 1];
};

static uintptr_t mem_enter(void *ctx, struct ta_sess_thread *t, uint64_t ticks, uint32_t depth,
			   uint64_t addr, unsigned flags)
{
	struct memchk *m = ctx;

	return m->inner.enter ? m->inner.enter(m->inner.ctx, t, ticks, depth, addr, flags) : 0;
}

static void mem_exit(void *ctx, struct ta_sess_thread *t, const struct ta_exit_info *x)
{
	struct memchk *m = ctx;

	if (m->inner.exit)
		m->inner.exit(m->inner.ctx, t, x);
	(void)ta_fibers_owner(&m->fibers, t, x->enter);
}

static void mem_lost(void *ctx, struct ta_sess_thread *t, uint64_t ticks, uint64_t count)
{
	struct memchk *m = ctx;

	if (m->inner.lost)
		m->inner.lost(m->inner.ctx, t, ticks, count);
}

static void mem_ext(void *ctx, struct ta_sess_thread *t, uint64_t ticks, uint64_t kind,
		    const uint64_t *v, uint32_t n)
{
	struct memchk *m = ctx;
	struct ta_apiev e;
	long k;

	if (m->inner.ext)
		m->inner.ext(m->inner.ctx, t, ticks, kind, v, n);
	if (!ta_apiev_mem_kind(kind) ||
	    ta_apiev_decode(ta_session_process(m->s, t->pid), ticks, kind, v, n, &e, m->text) <= 0)
		return;
	/* Texts stay within the decoder's bound. */
	CHECK(!e.text || strlen(e.text) == e.text_len);
	CHECK(e.text_len <= TA_TEXT_MAX);
	k = ta_pools_take(&m->pools, t->pid, &e);
	CHECK(k < 0 || (size_t)k < m->pools.names.n);
	if (ta_fibers_take(&m->fibers, t, &e) > 0)
		CHECK(ta_fibers_now(&m->fibers, t) < (long)m->fibers.names.n);
	if (e.kind == TA_EXT_LOCK_NAME && ta_locknames_set(&m->locks, t->pid, e.ptr, e.text) == 0)
		CHECK(!strcmp(ta_locknames_get(&m->locks, t->pid, e.ptr), e.text));
}

/* ---- inputs with their checksums repaired -------------------------------------- */

struct out {
	uint8_t *p;
	size_t len, cap;
};

static int out_reserve(struct out *o, size_t n)
{
	size_t cap = o->cap ? o->cap : 4096;
	uint8_t *p;

	if (o->len + n <= o->cap)
		return 0;
	while (cap < o->len + n)
		cap *= 2;
	p = realloc(o->p, cap);
	if (!p)
		return -1;
	o->p = p;
	o->cap = cap;
	return 0;
}

static int out_put(struct out *o, const void *p, size_t n)
{
	if (out_reserve(o, n) < 0)
		return -1;
	if (n)
		memcpy(o->p + o->len, p, n);
	o->len += n;
	return 0;
}

/*
 * Rewrites in as a dump whose checksums hold: each 32-byte chunk header
 * keeps its fields but gets a stored size no larger than the bytes that
 * follow (and a raw size equal to it when uncompressed) and the CRC of what
 * it then covers.  With compress, uncompressed payloads are LZ4-compressed.
 * Trailing bytes shorter than a header are kept as they are.
 */
static int repair(const uint8_t *in, size_t n, int compress, struct out *o)
{
	size_t pos = TA_FILE_HEADER_SIZE;
	char *z = NULL;
	int rc = -1;

	if (n < TA_FILE_HEADER_SIZE)
		return out_put(o, in, n);
	if (out_put(o, in, TA_FILE_HEADER_SIZE) < 0)
		return -1;
	ta_put_le32(o->p + 28, ta_crc32c(0, o->p, 28));
	while (n - pos >= TA_CHUNK_HEADER_SIZE) {
		const uint8_t *payload = in + pos + TA_CHUNK_HEADER_SIZE;
		size_t avail = n - pos - TA_CHUNK_HEADER_SIZE;
		size_t stored = ta_get_le32(in + pos + 8), at = o->len;
		uint16_t flags = ta_get_le16(in + pos + 6);
		uint8_t *h;

		if (stored > avail)
			stored = avail;
		pos += TA_CHUNK_HEADER_SIZE + stored;
		if (out_put(o, in + pos - TA_CHUNK_HEADER_SIZE - stored, TA_CHUNK_HEADER_SIZE) < 0)
			goto out;
		if (compress && !(flags & TA_CHUNK_F_LZ4) && stored) {
			int bound = LZ4_compressBound((int)stored), k;

			free(z);
			z = malloc((size_t)bound);
			if (!z)
				goto out;
			k = LZ4_compress_default((const char *)payload, z, (int)stored, bound);
			if (k <= 0)
				goto out;
			h = o->p + at;
			ta_put_le16(h + 6, (uint16_t)(flags | TA_CHUNK_F_LZ4));
			ta_put_le32(h + 12, (uint32_t)stored);
			payload = (const uint8_t *)z;
			stored = (size_t)k;
		} else if (!(flags & TA_CHUNK_F_LZ4)) {
			ta_put_le32(o->p + at + 12, (uint32_t)stored);
		}
		if (out_put(o, payload, stored) < 0)
			goto out;
		h = o->p + at;
		ta_put_le32(h + 8, (uint32_t)stored);
		ta_put_le32(h + 28,
			    ta_crc32c(ta_crc32c(0, h, 28), h + TA_CHUNK_HEADER_SIZE, stored));
	}
	rc = out_put(o, in + pos, n - pos);
out:
	free(z);
	return rc;
}

int ta_fuzz_repair(const uint8_t *in, size_t n, int compress, uint8_t **out, size_t *len)
{
	struct out o = {0};

	if (repair(in, n, compress, &o) < 0) {
		free(o.p);
		return -1;
	}
	*out = o.p;
	*len = o.len;
	return 0;
}

static FILE *sink_open(void);

/* ---- a visitor that checks the walk --------------------------------------------- */

struct checker {
	struct ta_visitor inner; /* the profile's */
	struct ta_argstack args; /* recorded arguments (argsview.h), by depth */
	struct ta_callargs ca;
	int64_t *open; /* per thread index: frames entered, not yet exited */
	size_t n;
	const struct ta_session *s; /* its walk_proc: the pauses of the exits' process */
};

/* The ticks of [a, b) inside p's pauses, summed pause by pause (not from
 * their running totals, as ta_process_paused does). */
static uint64_t paused_in(const struct ta_process *p, uint64_t a, uint64_t b)
{
	uint64_t sum = 0;

	for (size_t i = 0; p && i < p->npauses; i++) {
		uint64_t from = p->pauses[i].from > a ? p->pauses[i].from : a;
		uint64_t to = p->pauses[i].to < b ? p->pauses[i].to : b;

		if (to > from)
			sum += to - from;
	}
	return sum;
}

static uintptr_t check_enter(void *ctx, struct ta_sess_thread *t, uint64_t ticks, uint32_t depth,
			     uint64_t addr, unsigned flags)
{
	struct checker *c = ctx;

	if (t->index >= c->n) {
		size_t n = (size_t)t->index + 64;
		int64_t *v = realloc(c->open, n * sizeof(*v));

		CHECK(v);
		memset(v + c->n, 0, (n - c->n) * sizeof(*v));
		c->open = v;
		c->n = n;
	}
	/* The depth given is the number of frames kept below this one. */
	CHECK(depth == t->depth);
	c->open[t->index]++;
	return c->inner.enter(c->inner.ctx, t, ticks, depth, addr, flags);
}

static void check_exit(void *ctx, struct ta_sess_thread *t, const struct ta_exit_info *x)
{
	struct checker *c = ctx;
	uint64_t span = x->exit > x->enter ? x->exit - x->enter : 0;
	/* A call open across a pause of the recording is not charged the
	 * paused time (MARK chunks: `traceagent ctl PID pause`). */
	uint64_t paused = paused_in(c->s->walk_proc, x->enter, x->exit);

	CHECK(t->index < c->n && c->open[t->index] > 0);
	c->open[t->index]--;
	CHECK(x->depth == t->depth);
	CHECK(paused <= span && x->duration == span - paused);
	CHECK(x->self <= x->duration);
	/* The arguments of the call, decoded and shown as the views do. */
	if (ta_argstack_get(&c->args, x->depth, x->enter, &c->ca)) {
		char *j = ta_callargs_json(&c->ca), *l = ta_callargs_lines(&c->ca);

		CHECK(c->ca.nargs <= TA_CALLARGS_MAX);
		ta_callargs_print(sink_open(), &c->ca);
		if (c->ca.has_ret)
			ta_argval_print(sink_open(), &c->ca.ret);
		if (j)
			fputs(j, sink_open());
		if (l)
			fputs(l, sink_open());
		free(j);
		free(l);
	}
	c->inner.exit(c->inner.ctx, t, x);
}

/* The manual API's EXT events decoded as the views decode them: a decoded
 * one holds what it claims. */
static void check_ext(void *ctx, struct ta_sess_thread *t, uint64_t ticks, uint64_t kind,
		      const uint64_t *values, uint32_t n)
{
	struct checker *c = ctx;
	struct ta_process *p = ta_session_process(c->s, t->pid);
	char text[TA_TEXT_MAX + 1];
	struct ta_apiev e;

	if (ta_apiev_kind(kind) && ta_apiev_decode(p, ticks, kind, values, n, &e, text) > 0) {
		CHECK(e.name != NULL);
		CHECK(e.unit <= TA_UNIT_PERCENT_);
		if (e.text)
			CHECK(e.text_len <= TA_TEXT_MAX && strlen(e.text) == e.text_len);
		CHECK(strcmp(ta_apiev_kind_name(kind), "unknown"));
	}
	if ((kind == TA_EXT_ARGS || kind == TA_EXT_RETVAL) && t->depth > 0 && t->depth < 4096)
		CHECK(ta_argstack_put(&c->args, t->depth - 1, t->stack[t->depth - 1].enter, kind,
				      values, n) == 0);
	if (c->inner.ext)
		c->inner.ext(c->inner.ctx, t, ticks, kind, values, n);
}

/* The chunks of the dump (len bytes) into s, as ta_session_read does with
 * a file. */
static void feed(struct ta_session *s, const uint8_t *dump, size_t len)
{
	struct ta_dumpfile *d;
	struct ta_chunk c;
	int rc;

	if (ta_dumpfile_memopen(dump, len, &d) != 0)
		return;
	s->fh = *ta_dumpfile_header(d);
	while ((rc = ta_dumpfile_next(d, &c)) != 0) {
		if (rc == -TA_E_IO || rc == -TA_E_NOMEM)
			break;
		if (rc < 0) {
			ta_session_error(s, rc, &c, 0);
			continue;
		}
		if (ta_session_chunk(s, &c) < 0)
			break;
	}
	ta_dumpfile_close(d);
}

/* --section FUZZ_SECTION: its stretches found in the dump, and in *v the
 * visitor that clips the calls to them in front of inner (NULL without
 * memory). */
#define FUZZ_SECTION "s"
static struct ta_section *section_of(const uint8_t *dump, size_t len,
				     const struct ta_visitor *inner, struct ta_visitor *v)
{
	struct ta_section *sec = ta_section_new();
	struct ta_session *s = ta_session_new(NULL);
	struct ta_visitor ev;

	CHECK(sec && s);
	ta_section_set(FUZZ_SECTION);
	ta_section_edges(sec, s, &ev);
	s->v = ev;
	feed(s, dump, len);
	ta_session_finish(s);
	ta_session_free(s);
	ta_section_set(NULL);
	CHECK(ta_section_edges_done(sec) == 0);
	ta_section_visitor(sec, inner, v);
	return sec;
}

/* ---- the report's tables, named without ELF files -------------------------------- */

/* "module+0xOFFSET" or "0xADDR", as the report names what it cannot
 * resolve; the strings go into names[] for the caller to free. */
static void name_functions(struct ta_session *s, const struct ta_profile *prof, struct ta_fn *ids,
			   char **names)
{
	for (size_t i = 0; i < prof->n; i++) {
		const struct ta_process *p = ta_session_process(s, prof->f[i].pid);
		const struct ta_sess_module *m =
		    p ? ta_process_module_at(p, prof->f[i].addr) : NULL;
		uint64_t off = m ? prof->f[i].addr - m->bias : prof->f[i].addr;

		if (asprintf(&names[i], "%s+0x%" PRIx64, m ? ta_path_base(m->path) : "", off) < 0)
			names[i] = NULL;
		ids[i].name = names[i] ? names[i] : "?";
		ids[i].module = m ? m->path : "";
		ids[i].offset = off;
	}
}

static void report(struct ta_session *s, const struct ta_profile *prof, FILE *sink)
{
	struct ta_view v;
	struct ta_prof_table t;
	struct ta_fn *ids = calloc(prof->n + 1, sizeof(*ids));
	char **names = calloc(prof->n + 1, sizeof(*names));
	char buf[64];

	memset(&v, 0, sizeof(v));
	v.path = "fuzz";
	v.s = s;
	if (!ids || !names)
		goto out;
	name_functions(s, prof, ids, names);
	if (ta_prof_table_build(&t, &v, prof, &ids, NULL, NULL) == 0) {
		for (size_t i = 0; i < t.n; i++) {
			const struct ta_prof_row *w = &t.rows[i];

			CHECK(w->open <= w->calls);
			CHECK(w->min <= w->max);
			fprintf(sink, "%" PRIu64 " %s %s %s %" PRIu64 " %" PRIu64 " %" PRIu64,
				w->calls, ta_fmt_time(buf, sizeof(buf), w->total),
				ta_fmt_time(buf, sizeof(buf), w->self),
				ta_fmt_time(buf, sizeof(buf), w->calls ? w->sum / w->calls : 0),
				w->p50, w->p90, w->p99);
			ta_json_str(sink, w->id.name);
			ta_json_str(sink, ta_path_base(w->id.module));
		}
	}
	ta_prof_table_free(&t);
out:
	for (size_t i = 0; names && i < prof->n; i++)
		free(names[i]);
	free(names);
	free(ids);
}

/* What the report's header, --threads and the error lines print. */
static void summary(struct ta_session *s, FILE *sink)
{
	const char *why = ta_session_incomplete(s);
	char buf[256];

	fprintf(sink, "%s %" PRIu64 "\n", why ? why : "whole", ta_session_duration_ns(s));
	for (size_t i = 0; i < s->nerrors; i++) {
		ta_error_text(buf, sizeof(buf), &s->errors[i]);
		fputs(buf, sink);
	}
	for (size_t i = 0; i < s->nthreads; i++) {
		const struct ta_sess_thread *t = s->threads[i];
		const struct ta_process *p = ta_session_process(s, t->pid);

		CHECK(t->depth == 0 && t->overflow == 0); /* finish closed everything */
		CHECK(p);
		fprintf(sink, "%" PRIu64 " %" PRIu64 " %" PRId64, t->tid, ta_thread_lost(t),
			ta_process_ticks_ns(p, t->start_ticks));
		ta_json_str(sink, t->name ? t->name : "");
	}
	for (size_t i = 0; i < s->nprocs; i++) {
		const struct ta_process *p = s->procs[i];

		ta_json_str(sink, p->exe ? p->exe : "");
		for (size_t k = 0; k < p->argc; k++)
			ta_json_str(sink, p->argv[k]);
		for (size_t k = 0; k < p->nmodules; k++)
			ta_json_str(sink, ta_path_base(p->modules[k].path));
		fprintf(sink, "%" PRIu64 "\n", ta_process_dur_ns(p, p->max_ticks - p->min_ticks));
	}
}

/* ---- the entry point --------------------------------------------------------------- */

/* The report's text goes nowhere, but through stdio all the same. */
static FILE *sink_open(void)
{
	static FILE *sink;

	if (!sink)
		sink = fopen("/dev/null", "w");
	CHECK(sink);
	return sink;
}

/* Two chunks read are the same: outcome, place and payload. */
static void same_chunk(int ra, const struct ta_chunk *a, int rb, const struct ta_chunk *b)
{
	CHECK(ra == rb);
	CHECK(a->offset == b->offset && a->skipped == b->skipped);
	CHECK(a->len == b->len);
	CHECK(!a->len || memcmp(a->payload, b->payload, a->len) == 0);
}

/*
 * The reader's other ways through a dump agree with ta_dumpfile_next: the
 * stored payload decompressed by ta_chunk_decompress (the parallel
 * reader's), and a seek back to each chunk read (the chunk again, the
 * chunks' index counting on); then a seek past the end reads the end.
 */
static void reread(const uint8_t *dump, size_t len)
{
	struct ta_dumpfile *a, *b, *c;
	struct ta_chunk ca, cb, cc;
	uint8_t *raw = NULL;
	size_t raw_cap = 0;
	int ra, rb, rc;

	if (ta_dumpfile_memopen(dump, len, &a) < 0)
		return;
	CHECK(ta_dumpfile_memopen(dump, len, &b) == 0);
	CHECK(ta_dumpfile_memopen(dump, len, &c) == 0);
	do {
		ra = ta_dumpfile_next(a, &ca);
		rb = ta_dumpfile_next_stored(b, &cb);
		if (rb == 1) {
			int z = ta_chunk_decompress(&cb, &raw, &raw_cap);

			CHECK(z == 0 || z == -TA_E_DECOMPRESS);
			if (z < 0)
				rb = z;
		}
		same_chunk(ra, &ca, rb, &cb);
		CHECK(ca.index == cb.index);
		rc = ta_dumpfile_next(c, &cc);
		same_chunk(ra, &ca, rc, &cc);
		if (rc == 1) {
			uint64_t after = ta_dumpfile_offset(c);

			CHECK(ta_dumpfile_seek(c, cc.offset) == 0);
			rc = ta_dumpfile_next(c, &cc);
			same_chunk(ra, &ca, rc, &cc);
			CHECK(ta_dumpfile_offset(c) == after);
		}
	} while (ra != 0 && ra != -TA_E_NOMEM);
	CHECK(ra != 0 || ta_dumpfile_offset(a) == len);
	CHECK(ta_dumpfile_seek(c, (uint64_t)len + 100) == 0);
	CHECK(ta_dumpfile_next(c, &cc) == 0);
	free(raw);
	ta_dumpfile_close(a);
	ta_dumpfile_close(b);
	ta_dumpfile_close(c);
}

int ta_fuzz_dump(const uint8_t *data, size_t size)
{
	struct out fixed = {0};
	const uint8_t *dump;
	size_t len;
	struct ta_profile prof;
	struct ta_libstats *ls = NULL;
	struct ta_view lv;
	struct checker chk;
	struct ta_visitor v, *vp = &v, clipped;
	struct ta_section *sec = NULL;
	struct memchk mem;
	struct ta_session *s;
	struct ta_dumpfile *d;
	struct ta_chunk c;
	unsigned mode, visit;
	int rc;

	if (size < 1)
		return 0;
	mode = data[0] & 3;
	visit = (data[0] >> 2) & 3;
	dump = data + 1;
	len = size - 1;
	if (mode == 1 || mode == 2) {
		if (repair(dump, len, mode == 2, &fixed) < 0) {
			free(fixed.p);
			return 0;
		}
		dump = fixed.p;
		len = fixed.len;
	}

	memset(&lv, 0, sizeof(lv));
	ta_profile_init(&prof);
	prof.hist = visit != 0;
	ta_profile_visitor(&prof, &v);
	memset(&chk, 0, sizeof(chk));
	if (visit == 2) {
		/* The session's walk checked, then clipped to a section
		 * (--section), then the profile. */
		sec = section_of(dump ? dump : (const uint8_t *)"", len, &v, &clipped);
		chk.inner = clipped;
		memset(&v, 0, sizeof(v));
		v.ctx = &chk;
		v.enter = check_enter;
		v.exit = check_exit;
		v.ext = check_ext;
	} else if (visit == 3) {
		vp = NULL;
	} else if (visit == 1) {
		/* report --alloc --locks --io: the library calls' visitor
		 * around the profile, and what the views keep of the
		 * memory, lock-name and fiber events. */
		struct ta_visitor inner;

		memset(&mem, 0, sizeof(mem));
		mem.inner = v;
		memset(&inner, 0, sizeof(inner));
		inner.ctx = &mem;
		inner.enter = mem_enter;
		inner.exit = mem_exit;
		inner.lost = mem_lost;
		inner.ext = mem_ext;
		lv.path = "fuzz";
		ls = ta_libstats_new(&lv, &inner, &v);
		CHECK(ls);
	}
	s = ta_session_new(vp);
	CHECK(s);
	lv.s = s;
	mem.s = s;
	chk.s = s;
	if (sec)
		ta_section_session(sec, s);

	/* As ta_session_read does with a file. */
	rc = ta_dumpfile_memopen(dump ? dump : (const uint8_t *)"", len, &d);
	if (rc == 0) {
		s->fh = *ta_dumpfile_header(d);
		while ((rc = ta_dumpfile_next(d, &c)) != 0) {
			if (rc == -TA_E_IO || rc == -TA_E_NOMEM)
				break;
			if (rc < 0) {
				ta_session_error(s, rc, &c, 0);
				continue;
			}
			/* A payload is exactly what the header says. */
			CHECK(c.len == c.h.raw_size);
			if (ta_session_chunk(s, &c) < 0)
				break;
		}
		CHECK(rc != -TA_E_IO); /* memory cannot fail to read */
		ta_dumpfile_close(d);
		reread(dump ? dump : (const uint8_t *)"", len);
	}
	ta_session_finish(s);

	summary(s, sink_open());
	if (visit != 3)
		report(s, &prof, sink_open());
	if (ls) {
		/* Named without a resolver: addresses stay numbers. */
		(void)ta_libstats_print(ls, TA_LC_ALL, 0, 0, sink_open());
		(void)ta_libstats_print(ls, TA_LC_ALL, 1, 0, sink_open());
		ta_libstats_free(ls);
		ta_pools_free(&mem.pools);
		ta_fibers_free(&mem.fibers);
		ta_locknames_free(&mem.locks);
		for (size_t i = 0; i < lv.nown; i++)
			free(lv.own[i]);
		free(lv.own);
	}
	if (visit == 2)
		for (size_t i = 0; i < chk.n; i++)
			CHECK(chk.open[i] == 0); /* every frame entered was exited */

	free(chk.open);
	ta_argstack_free(&chk.args);
	ta_profile_free(&prof);
	ta_session_free(s);
	ta_section_free(sec);
	free(fixed.p);
	return 0;
}
