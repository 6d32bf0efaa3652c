/* SPDX-License-Identifier: MIT */
/*
 * report.c - `traceagent report`: calls, total, self, min, max and mean time
 * per function, from one streaming pass over a dump.
 *
 * The session walks the events and the profile visitor sums them per
 * thread and function in ticks; here the sums are converted to ns with each
 * process's clock, named from the modules' symbols, merged per function
 * (module and offset, so a function forked into several processes is one
 * row) and printed as a table or as JSON.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "session.h"
#include "symbols.h"

enum sort_key { SORT_TOTAL, SORT_SELF, SORT_CALLS, SORT_NAME };

struct options {
	const char *path;
	int json;
	int threads;
	enum sort_key sort;
};

/* Where a profiled address lands: one per ta_fstat. */
struct fn_id {
	const char *name;   /* resolver's, or own */
	const char *module; /* module path, "" when no module holds it */
	uint64_t offset;
	char *own; /* a name we made, freed at the end */
};

struct row {
	const struct fn_id *id;
	uint64_t calls, open, total, self, min, max, sum; /* ns */
};

struct rows {
	struct row *v;
	size_t n, cap;
	uint32_t *slot; /* open addressing: index + 1 */
	size_t nslots;
};

struct report {
	struct options opt;
	struct ta_session *s;
	struct ta_profile prof;
	struct ta_resolver *res;
	struct fn_id *ids; /* parallel to prof.f */
	uint64_t events, lost;
};

/* ---- messages ------------------------------------------------------------------ */

static void usage(FILE *f)
{
	fprintf(f, "usage: traceagent report [--json] [--sort=total|self|calls|name] "
		   "[--threads] DUMP\n"
		   "\n"
		   "Calls and times per function in a dump written by the agent.\n"
		   "\n"
		   "  --json          one JSON object instead of a table\n"
		   "  --sort=KEY      order rows by total (default), self, calls or name\n"
		   "  --threads       also break the numbers down per thread\n"
		   "  -h, --help      this help\n"
		   "\n"
		   "Total counts only the outermost activation of a recursive function;\n"
		   "self is a call's own time without its direct callees; min, max and avg\n"
		   "are over every activation.  Exit status: 0 for a whole dump, 1 when it\n"
		   "is damaged or truncated (what could be read is still reported), 2 for\n"
		   "usage errors or a file that cannot be opened.\n");
}

/* The text of one error, without the "traceagent: FILE: " prefix. */
static void error_text(char *buf, size_t n, const struct ta_session_error *e)
{
	size_t k = (size_t)snprintf(buf, n, "chunk %" PRIu64 " at offset %" PRIu64 ": %s", e->chunk,
				    e->offset, ta_strerror(e->code));

	if (k >= n)
		return;
	if (e->code == -TA_E_PAYLOAD || e->code == -TA_E_DECOMPRESS) {
		if (e->type == TA_CHUNK_EVENTS && e->tid)
			snprintf(buf + k, n - k, " (events of thread %" PRIu64 ")", e->tid);
		else
			snprintf(buf + k, n - k, " (%s chunk)", ta_chunk_type_name(e->type));
	} else if (e->code != -TA_E_TRUNCATED && e->skipped) {
		snprintf(buf + k, n - k, "; skipped %" PRIu64 " bytes", e->skipped);
	}
}

static void warn(const struct report *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void warn(const struct report *r, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "traceagent: %s: warning: ", r->opt.path);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void symbol_failure(void *ctx, const char *path, int code, int errnum)
{
	const struct report *r = ctx;

	if (path[0] != '/')
		return; /* the vDSO and the like: nothing to read */
	if (code == -TA_E_IO)
		warn(r, "%s: cannot read symbols: %s", path, strerror(errnum));
	else
		warn(r, "%s: cannot read symbols: %s", path,
		     code == -TA_E_PAYLOAD ? "not an ELF file" : ta_strerror(code));
}

/* ---- naming and converting ---------------------------------------------------------- */

static int name_functions(struct report *r)
{
	r->ids = calloc(r->prof.n ? r->prof.n : 1, sizeof(*r->ids));
	if (!r->ids)
		return -1;
	for (size_t i = 0; i < r->prof.n; i++) {
		const struct ta_fstat *f = &r->prof.f[i];
		const struct ta_process *p = ta_session_process(r->s, f->pid);
		const struct ta_module *m = p ? ta_process_module_at(p, f->addr) : NULL;
		struct fn_id *id = &r->ids[i];

		if (m) {
			const struct ta_resolved *rv = ta_resolve(
			    r->res, m->path, m->build_id, m->build_id_len, f->addr - m->bias);

			id->name = rv->name;
			id->module = m->path;
			id->offset = rv->offset;
		} else {
			if (asprintf(&id->own, "0x%" PRIx64, f->addr) < 0)
				return -1;
			id->name = id->own;
			id->module = "";
			id->offset = f->addr;
		}
	}
	return 0;
}

static uint64_t str_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

static size_t row_slot(const struct fn_id *id, size_t nslots)
{
	uint64_t h = (str_hash(id->module) ^ id->offset) * 0x9e3779b97f4a7c15ull;

	return (size_t)(h >> 24) & (nslots - 1);
}

static int same_fn(const struct fn_id *a, const struct fn_id *b)
{
	return a->offset == b->offset && !strcmp(a->module, b->module) &&
	       (a->module[0] || !strcmp(a->name, b->name));
}

static int rows_grow(struct rows *rs)
{
	size_t n = rs->nslots ? rs->nslots * 2 : 256;
	uint32_t *slot = calloc(n, sizeof(*slot));

	if (!slot)
		return -1;
	for (size_t i = 0; i < rs->n; i++) {
		size_t k = row_slot(rs->v[i].id, n);

		while (slot[k])
			k = (k + 1) & (n - 1);
		slot[k] = (uint32_t)i + 1;
	}
	free(rs->slot);
	rs->slot = slot;
	rs->nslots = n;
	return 0;
}

/* Adds f (converted to ns) to the row of its function. */
static int rows_add(struct rows *rs, const struct fn_id *id, const struct ta_fstat *f,
		    const struct ta_process *p)
{
	struct row *w = NULL;
	size_t k;
	uint64_t min = ta_process_dur_ns(p, f->min), max = ta_process_dur_ns(p, f->max);

	if (!f->calls)
		return 0; /* entered, never closed: cannot happen after finish */
	if ((rs->n + 1) * 2 > rs->nslots && rows_grow(rs) < 0)
		return -1;
	for (k = row_slot(id, rs->nslots); rs->slot[k]; k = (k + 1) & (rs->nslots - 1)) {
		if (same_fn(rs->v[rs->slot[k] - 1].id, id)) {
			w = &rs->v[rs->slot[k] - 1];
			break;
		}
	}
	if (!w) {
		if (rs->n == rs->cap) {
			size_t cap = rs->cap ? rs->cap * 2 : 64;
			struct row *v = realloc(rs->v, cap * sizeof(*v));

			if (!v)
				return -1;
			rs->v = v;
			rs->cap = cap;
		}
		w = &rs->v[rs->n];
		memset(w, 0, sizeof(*w));
		w->id = id;
		w->min = UINT64_MAX;
		rs->slot[k] = (uint32_t)++rs->n;
	}
	w->calls += f->calls;
	w->open += f->open;
	w->total += ta_process_dur_ns(p, f->total);
	w->self += ta_process_dur_ns(p, f->self);
	w->sum += ta_process_dur_ns(p, f->sum);
	if (min < w->min)
		w->min = min;
	if (max > w->max)
		w->max = max;
	return 0;
}

/* The rows of one thread, or of all when thread is UINT32_MAX. */
static int rows_build(struct report *r, struct rows *rs, uint32_t thread)
{
	memset(rs, 0, sizeof(*rs));
	for (size_t i = 0; i < r->prof.n; i++) {
		const struct ta_fstat *f = &r->prof.f[i];
		const struct ta_process *p = ta_session_process(r->s, f->pid);

		if (thread != UINT32_MAX && f->thread != thread)
			continue;
		if (p && rows_add(rs, &r->ids[i], f, p) < 0)
			return -1;
	}
	return 0;
}

static void rows_free(struct rows *rs)
{
	free(rs->v);
	free(rs->slot);
}

static int row_cmp(const void *a, const void *b, void *ctx)
{
	const struct row *x = a, *y = b;
	const enum sort_key *key = ctx;
	int c;

	switch (*key) {
	case SORT_SELF:
		if (x->self != y->self)
			return x->self > y->self ? -1 : 1;
		break;
	case SORT_CALLS:
		if (x->calls != y->calls)
			return x->calls > y->calls ? -1 : 1;
		break;
	case SORT_NAME:
		break;
	default:
		if (x->total != y->total)
			return x->total > y->total ? -1 : 1;
		break;
	}
	c = strcmp(x->id->name, y->id->name);
	if (c)
		return c;
	c = strcmp(x->id->module, y->id->module);
	if (c)
		return c;
	return x->id->offset < y->id->offset ? -1 : x->id->offset > y->id->offset;
}

static void rows_sort(struct rows *rs, enum sort_key *key)
{
	if (rs->n) /* qsort_r wants an array, even for nothing */
		qsort_r(rs->v, rs->n, sizeof(*rs->v), row_cmp, key);
}

/* ---- text --------------------------------------------------------------------------- */

static const char *fmt_time(char *buf, size_t n, uint64_t ns)
{
	if (ns < 1000)
		snprintf(buf, n, "%" PRIu64 " ns", ns);
	else if (ns < 1000000)
		snprintf(buf, n, "%.3f us", (double)ns / 1e3);
	else if (ns < 1000000000)
		snprintf(buf, n, "%.3f ms", (double)ns / 1e6);
	else
		snprintf(buf, n, "%.3f s", (double)ns / 1e9);
	return buf;
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	if (!path[0])
		return "?";
	return s ? s + 1 : path;
}

static void text_rows(const struct rows *rs)
{
	char t[6][32];

	printf("%10s %12s %12s %12s %12s %12s  %-s  %s\n", "calls", "total", "self", "min", "max",
	       "avg", "function", "module");
	for (size_t i = 0; i < rs->n; i++) {
		const struct row *w = &rs->v[i];

		printf("%10" PRIu64 " %12s %12s %12s %12s %12s  %s  %s\n", w->calls,
		       fmt_time(t[0], sizeof(t[0]), w->total),
		       fmt_time(t[1], sizeof(t[1]), w->self), fmt_time(t[2], sizeof(t[2]), w->min),
		       fmt_time(t[3], sizeof(t[3]), w->max),
		       fmt_time(t[4], sizeof(t[4]), w->sum / w->calls), w->id->name,
		       base_name(w->id->module));
	}
}

/* ---- JSON --------------------------------------------------------------------------- */

/* Length of a valid UTF-8 sequence at s, or 0. */
static size_t utf8_len(const unsigned char *s)
{
	size_t n;
	uint32_t c;

	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0)
		n = 2, c = s[0] & 0x1f;
	else if ((s[0] & 0xf0) == 0xe0)
		n = 3, c = s[0] & 0x0f;
	else if ((s[0] & 0xf8) == 0xf0)
		n = 4, c = s[0] & 0x07;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	/* Overlong forms, surrogates and beyond U+10FFFF are not UTF-8. */
	if ((n == 2 && c < 0x80) || (n == 3 && c < 0x800) || (n == 4 && c < 0x10000) ||
	    (c >= 0xd800 && c < 0xe000) || c > 0x10ffff)
		return 0;
	return n;
}

/* Paths and names are bytes; bytes that are not UTF-8 become U+FFFD so the
 * output stays valid JSON. */
static void json_str(const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	putchar('"');
	while (*s) {
		size_t n = utf8_len(s);

		if (!n) {
			fputs("\\ufffd", stdout);
			s++;
		} else if (*s == '"' || *s == '\\') {
			printf("\\%c", *s++);
		} else if (*s < 0x20) {
			printf("\\u%04x", *s++);
		} else {
			fwrite(s, 1, n, stdout);
			s += n;
		}
	}
	putchar('"');
}

static void json_rows(const struct rows *rs, const char *indent)
{
	putchar('[');
	for (size_t i = 0; i < rs->n; i++) {
		const struct row *w = &rs->v[i];

		printf("%s\n%s{\"name\": ", i ? "," : "", indent);
		json_str(w->id->name);
		printf(", \"module\": ");
		json_str(w->id->module);
		printf(", \"offset\": %" PRIu64 ", \"calls\": %" PRIu64 ", \"total_ns\": %" PRIu64
		       ", \"self_ns\": %" PRIu64 ", \"min_ns\": %" PRIu64 ", \"max_ns\": %" PRIu64
		       ", \"avg_ns\": %" PRIu64 ", \"open\": %" PRIu64 "}",
		       w->id->offset, w->calls, w->total, w->self, w->min, w->max,
		       w->sum / w->calls, w->open);
	}
	/* The bracket goes one step left of the rows. */
	printf("%s%.*s]", rs->n ? "\n" : "", rs->n ? (int)strlen(indent) - 1 : 0, indent);
}

/* ---- the whole dump ------------------------------------------------------------------- */

static uint64_t duration_ns(const struct ta_session *s)
{
	int64_t lo = 0, hi = 0;
	int any = 0;

	for (size_t i = 0; i < s->nprocs; i++) {
		const struct ta_process *p = s->procs[i];
		int64_t a, b;

		if (!p->have_ticks)
			continue;
		a = ta_process_ticks_ns(p, p->min_ticks);
		b = ta_process_ticks_ns(p, p->max_ticks);
		if (!any || a < lo)
			lo = a;
		if (!any || b > hi)
			hi = b;
		any = 1;
	}
	return any && hi > lo ? (uint64_t)(hi - lo) : 0;
}

static uint64_t thread_lost(const struct ta_thread *t)
{
	return t->lost > t->end_lost ? t->lost : t->end_lost;
}

static void count(struct report *r)
{
	uint64_t lost = 0, end_lost = 0;

	for (size_t i = 0; i < r->s->nthreads; i++) {
		r->events += r->s->threads[i]->events;
		lost += thread_lost(r->s->threads[i]);
	}
	for (size_t i = 0; i < r->s->nprocs; i++)
		end_lost += r->s->procs[i]->end_lost;
	r->lost = lost > end_lost ? lost : end_lost;
}

static void print_json(struct report *r, const struct rows *all, const char *fatal)
{
	const struct ta_session *s = r->s;
	char buf[256];

	printf("{\"dump\": ");
	json_str(r->opt.path);
	printf(",\n  \"complete\": %s, \"events\": %" PRIu64
	       ", \"threads\": %zu, \"lost\": %" PRIu64
	       ", \"processes\": %zu, \"duration_ns\": %" PRIu64 ",\n  \"errors\": [",
	       !fatal && !ta_session_incomplete(s) ? "true" : "false", r->events, s->nthreads,
	       r->lost, s->nprocs, duration_ns(s));
	if (fatal)
		json_str(fatal);
	for (size_t i = 0; i < s->nerrors; i++) {
		if (i || fatal)
			printf(", ");
		error_text(buf, sizeof(buf), &s->errors[i]);
		json_str(buf);
	}
	if (s->errors_all > s->nerrors) {
		snprintf(buf, sizeof(buf), "%" PRIu64 " more errors", s->errors_all - s->nerrors);
		printf(", ");
		json_str(buf);
	}
	printf("],\n  \"functions\": ");
	json_rows(all, "   ");
	if (r->opt.threads) {
		printf(",\n  \"per_thread\": [");
		for (size_t i = 0; i < s->nthreads; i++) {
			const struct ta_thread *t = s->threads[i];
			struct rows rs;

			if (rows_build(r, &rs, t->index) < 0) {
				rows_free(&rs);
				break;
			}
			rows_sort(&rs, &r->opt.sort);
			printf("%s\n   {\"tid\": %" PRIu64 ", \"pid\": %" PRIu32 ", \"name\": ",
			       i ? "," : "", t->tid, t->pid);
			json_str(t->name ? t->name : "");
			printf(", \"events\": %" PRIu64 ", \"lost\": %" PRIu64 ", \"functions\": ",
			       t->events, thread_lost(t));
			json_rows(&rs, "    ");
			printf("}");
			rows_free(&rs);
		}
		printf("%s]", s->nthreads ? "\n  " : "");
	}
	printf("}\n");
}

static void print_text(struct report *r, const struct rows *all)
{
	const struct ta_session *s = r->s;

	text_rows(all);
	if (!r->opt.threads)
		return;
	for (size_t i = 0; i < s->nthreads; i++) {
		const struct ta_thread *t = s->threads[i];
		struct rows rs;

		if (rows_build(r, &rs, t->index) < 0) {
			rows_free(&rs);
			break;
		}
		rows_sort(&rs, &r->opt.sort);
		printf("\nthread %" PRIu64 " (%s) of process %" PRIu32 ": %" PRIu64
		       " events, %" PRIu64 " lost\n",
		       t->tid, t->name ? t->name : "", t->pid, t->events, thread_lost(t));
		text_rows(&rs);
		rows_free(&rs);
	}
}

/* Says on stderr what the numbers do not: loss, repairs, guesses. */
static void warnings(struct report *r, int fatal)
{
	const struct ta_session *s = r->s;
	const char *why = ta_session_incomplete(s);
	uint64_t resyncs = 0, unmatched = 0, missing = 0;

	/* Damage was reported already, and explains the rest. */
	if (why && !s->errors_all && !fatal)
		warn(r, "incomplete dump: %s", why);
	if (r->lost)
		warn(r, "%" PRIu64 " events were lost (the agent could not record them)", r->lost);
	for (size_t i = 0; i < s->nthreads; i++) {
		resyncs += s->threads[i]->resyncs;
		unmatched += s->threads[i]->unmatched;
		missing += s->threads[i]->chunks_missing;
	}
	if (missing || resyncs)
		warn(r,
		     "%" PRIu64 " event chunks missing; call stacks repaired %" PRIu64
		     " times from chunk snapshots (times around the gaps are estimates)",
		     missing, resyncs);
	if (unmatched)
		warn(r, "%" PRIu64 " function exits without a recorded entry were ignored",
		     unmatched);
	for (size_t i = 0; i < s->nprocs; i++)
		if (s->procs[i]->uncalibrated && s->procs[i]->have_ticks)
			warn(r, "process %" PRIu32 ": no clock calibration; times are in ticks",
			     s->procs[i]->pid);
	ta_resolver_failures(r->res, symbol_failure, r);
}

static int parse_args(int argc, char **argv, struct options *o)
{
	int only_files = 0;

	memset(o, 0, sizeof(*o));
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (only_files || a[0] != '-' || !a[1]) {
			if (o->path) {
				fprintf(stderr,
					"traceagent report: one dump at a time ('%s' and '%s')\n",
					o->path, a);
				return 2;
			}
			o->path = a;
		} else if (!strcmp(a, "--")) {
			only_files = 1;
		} else if (!strcmp(a, "--json")) {
			o->json = 1;
		} else if (!strcmp(a, "--threads")) {
			o->threads = 1;
		} else if (!strncmp(a, "--sort=", 7)) {
			const char *k = a + 7;

			if (!strcmp(k, "total"))
				o->sort = SORT_TOTAL;
			else if (!strcmp(k, "self"))
				o->sort = SORT_SELF;
			else if (!strcmp(k, "calls"))
				o->sort = SORT_CALLS;
			else if (!strcmp(k, "name"))
				o->sort = SORT_NAME;
			else {
				fprintf(stderr,
					"traceagent report: --sort: '%s' is not total, self, calls "
					"or name\n",
					k);
				return 2;
			}
		} else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			usage(stdout);
			return 0;
		} else {
			fprintf(stderr, "traceagent report: unknown option '%s'\n", a);
			usage(stderr);
			return 2;
		}
	}
	if (!o->path) {
		fprintf(stderr, "traceagent report: no dump given\n");
		usage(stderr);
		return 2;
	}
	return -1;
}

int ta_cmd_report(int argc, char **argv)
{
	struct report r;
	struct ta_visitor v;
	struct rows all = {0};
	char fatal[256] = "";
	uint64_t at;
	int rc, status = 0;

	memset(&r, 0, sizeof(r));
	rc = parse_args(argc, argv, &r.opt);
	if (rc >= 0)
		return rc;
	ta_profile_init(&r.prof);
	ta_profile_visitor(&r.prof, &v);
	r.s = ta_session_new(&v);
	r.res = ta_resolver_new();
	if (!r.s || !r.res) {
		fprintf(stderr, "traceagent: out of memory\n");
		ta_session_free(r.s);
		ta_resolver_free(r.res);
		return 1;
	}
	rc = ta_session_read(r.s, r.opt.path, &at);
	if (rc == -TA_E_IO && !r.s->chunks && !r.s->errors_all) {
		fprintf(stderr, "traceagent: %s: %s\n", r.opt.path, strerror(errno));
		status = 2;
		goto out;
	}
	if (rc == -TA_E_IO)
		snprintf(fatal, sizeof(fatal), "read error at offset %" PRIu64 ": %s", at,
			 strerror(errno));
	else if (rc < 0 && !r.s->chunks && !r.s->errors_all && rc != -TA_E_NOMEM)
		snprintf(fatal, sizeof(fatal), "file header at offset 0: %s", ta_strerror(rc));
	else if (rc < 0)
		snprintf(fatal, sizeof(fatal), "at offset %" PRIu64 ": %s", at, ta_strerror(rc));
	ta_session_finish(r.s);
	count(&r);

	if (fatal[0])
		fprintf(stderr, "traceagent: %s: %s\n", r.opt.path, fatal);
	for (size_t i = 0; i < r.s->nerrors; i++) {
		char buf[256];

		error_text(buf, sizeof(buf), &r.s->errors[i]);
		fprintf(stderr, "traceagent: %s: %s\n", r.opt.path, buf);
	}
	if (r.s->errors_all > r.s->nerrors)
		fprintf(stderr, "traceagent: %s: %" PRIu64 " more errors\n", r.opt.path,
			r.s->errors_all - r.s->nerrors);
	if (fatal[0] || r.s->errors_all)
		status = 1;

	if (name_functions(&r) < 0 || rows_build(&r, &all, UINT32_MAX) < 0) {
		fprintf(stderr, "traceagent: %s: out of memory\n", r.opt.path);
		status = 1;
		goto out;
	}
	rows_sort(&all, &r.opt.sort);
	warnings(&r, fatal[0] != 0);
	if (r.opt.json)
		print_json(&r, &all, fatal[0] ? fatal : NULL);
	else
		print_text(&r, &all);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "traceagent: writing the report: %s\n", strerror(errno));
		status = 1;
	}
out:
	rows_free(&all);
	if (r.ids)
		for (size_t i = 0; i < r.prof.n; i++)
			free(r.ids[i].own);
	free(r.ids);
	ta_resolver_free(r.res);
	ta_session_free(r.s);
	ta_profile_free(&r.prof);
	return status;
}
