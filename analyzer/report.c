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
#include "common.h"

enum sort_key { SORT_TOTAL, SORT_SELF, SORT_CALLS, SORT_NAME };

struct options {
	const char *path;
	int json;
	int threads;
	enum sort_key sort;
};

/* Where a profiled address lands: one per ta_fstat. */
#define fn_id ta_fn_name

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
	struct ta_view v;
	struct ta_session *s; /* v.s */
	struct ta_profile prof;
	struct fn_id *ids; /* parallel to prof.f */
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

/* ---- naming and converting ---------------------------------------------------------- */

static int name_functions(struct report *r)
{
	r->ids = calloc(r->prof.n ? r->prof.n : 1, sizeof(*r->ids));
	if (!r->ids)
		return -1;
	for (size_t i = 0; i < r->prof.n; i++)
		ta_view_name(&r->v, r->prof.f[i].pid, r->prof.f[i].addr, &r->ids[i]);
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

static void text_rows(const struct rows *rs)
{
	char t[6][32];

	printf("%10s %12s %12s %12s %12s %12s  %-s  %s\n", "calls", "total", "self", "min", "max",
	       "avg", "function", "module");
	for (size_t i = 0; i < rs->n; i++) {
		const struct row *w = &rs->v[i];

		printf("%10" PRIu64 " %12s %12s %12s %12s %12s  %s  %s\n", w->calls,
		       ta_fmt_time(t[0], sizeof(t[0]), w->total),
		       ta_fmt_time(t[1], sizeof(t[1]), w->self), ta_fmt_time(t[2], sizeof(t[2]), w->min),
		       ta_fmt_time(t[3], sizeof(t[3]), w->max),
		       ta_fmt_time(t[4], sizeof(t[4]), w->sum / w->calls), w->id->name,
		       ta_base_name(w->id->module));
	}
}

/* ---- JSON --------------------------------------------------------------------------- */

static void json_rows(const struct rows *rs, const char *indent)
{
	putchar('[');
	for (size_t i = 0; i < rs->n; i++) {
		const struct row *w = &rs->v[i];

		printf("%s\n%s{\"name\": ", i ? "," : "", indent);
		ta_json_str(stdout, w->id->name);
		printf(", \"module\": ");
		ta_json_str(stdout, w->id->module);
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

static void print_json(struct report *r, const struct rows *all, const char *fatal)
{
	const struct ta_session *s = r->s;
	char buf[256];

	printf("{\"dump\": ");
	ta_json_str(stdout, r->opt.path);
	printf(",\n  \"complete\": %s, \"events\": %" PRIu64
	       ", \"threads\": %zu, \"lost\": %" PRIu64
	       ", \"processes\": %zu, \"duration_ns\": %" PRIu64 ",\n  \"errors\": [",
	       !fatal && !ta_session_incomplete(s) ? "true" : "false", r->v.events, s->nthreads,
	       r->v.lost, s->nprocs, ta_session_duration_ns(s));
	if (fatal)
		ta_json_str(stdout, fatal);
	for (size_t i = 0; i < s->nerrors; i++) {
		if (i || fatal)
			printf(", ");
		ta_error_text(buf, sizeof(buf), &s->errors[i]);
		ta_json_str(stdout, buf);
	}
	if (s->errors_all > s->nerrors) {
		snprintf(buf, sizeof(buf), "%" PRIu64 " more errors", s->errors_all - s->nerrors);
		printf(", ");
		ta_json_str(stdout, buf);
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
			ta_json_str(stdout, t->name ? t->name : "");
			printf(", \"events\": %" PRIu64 ", \"lost\": %" PRIu64 ", \"functions\": ",
			       t->events, ta_thread_lost(t));
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
		       t->tid, t->name ? t->name : "", t->pid, t->events, ta_thread_lost(t));
		text_rows(&rs);
		rows_free(&rs);
	}
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
	int rc, status;

	memset(&r, 0, sizeof(r));
	rc = parse_args(argc, argv, &r.opt);
	if (rc >= 0)
		return rc;
	ta_profile_init(&r.prof);
	ta_profile_visitor(&r.prof, &v);
	if (ta_view_open(&r.v, r.opt.path, &v) < 0) {
		status = r.v.status;
		goto out;
	}
	r.s = r.v.s;
	status = r.v.status;
	if (name_functions(&r) < 0 || rows_build(&r, &all, UINT32_MAX) < 0) {
		fprintf(stderr, "traceagent: %s: out of memory\n", r.opt.path);
		status = 1;
		goto out;
	}
	rows_sort(&all, &r.opt.sort);
	ta_view_warnings(&r.v);
	if (r.opt.json)
		print_json(&r, &all, r.v.fatal[0] ? r.v.fatal : NULL);
	else
		print_text(&r, &all);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "traceagent: writing the report: %s\n", strerror(errno));
		status = 1;
	}
out:
	rows_free(&all);
	free(r.ids);
	ta_view_close(&r.v);
	ta_profile_free(&r.prof);
	return status;
}
