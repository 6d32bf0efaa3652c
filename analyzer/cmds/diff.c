/* SPDX-License-Identifier: MIT */
/*
 * diff.c - `traceagent diff BASE NEW`: per function, calls, total and self
 * time in two dumps and how they changed.
 *
 * Each dump is profiled as the report does it (common.c's per-function
 * table); the two tables are then matched by function name and module base
 * name, because addresses, load places and even module directories differ
 * between builds and runs.  Rows of one dump with the same name and module
 * base name (static functions of the same name, one library at two paths)
 * are summed before matching.  A function seen in one dump only has zeros
 * on the other side.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmdopts.h"
#include "commands.h"
#include "common.h"

struct options {
	const char *path[2]; /* base, new */
	int json;
	enum ta_sort_key sort;
	uint64_t top;
	const char *function;
};

/* One side of one function. */
struct side {
	uint64_t calls, total, self; /* ns */
	/* Of calls: still running at the end, and begun before the dump says
	 * (report's open and partial); their known part is in total and self. */
	uint64_t open, partial;
};

struct entry {
	const char *name, *module; /* module: base name */
	/* What the dumps' functions are matched by: the whole name, so that
	 * a short name that shows whole or with its parameters in one build
	 * (a new overload) is still the same function. */
	const char *full;
	struct side s[2];
};

struct one {
	struct ta_view v;
	struct ta_profile prof;
	struct ta_fn *ids;
	struct ta_prof_table t;
};

struct diff {
	struct options opt;
	struct one d[2];
	struct entry *e;
	size_t n;
};

static void usage(FILE *f)
{
	fprintf(f, "usage: traceagent diff [--json] [--sort=total|self|calls|name] [--top=N]\n"
		   "                      [--function=GLOB] BASE NEW\n"
		   "\n"
		   "Per function: calls, total and self time in the dumps BASE and NEW, and\n"
		   "the change from BASE to NEW.  Functions are matched by name and module\n"
		   "file name, so two builds of a program compare.\n"
		   "\n"
		   "  --json           one JSON object instead of a table\n"
		   "  --sort=KEY       by the largest change of total (default), self or\n"
		   "                   calls, or by name\n"
		   "  --top=N          the first N rows\n"
		   "  --function=GLOB  only functions whose (demangled) name matches GLOB\n"
		   "  --section=NAME   only the time inside the program's section NAME\n"
		   "  -j N, --jobs=N   N threads read each dump (default: one per CPU\n"
		   "                   it may use, at most 64; N up to 1024)\n"
		   "  --demangle=MODE  C++ names: simple (default: without\n"
		   "                   parameters and template arguments; full for\n"
		   "                   --json), full, or no (mangled)\n"
		   "  --symfs=DIR      look for each module's file under DIR, at its\n"
		   "                   recorded path (DIR/recorded/path)\n"
		   "  --debug-dir=DIR  look for separate debug files in DIR too\n"
		   "                   (DIR/.build-id/, DIR/recorded/path.debug);\n"
		   "                   repeatable (see traceagent-symbols(7))\n"
		   "  -h, --help       this help\n"
		   "\n"
		   "Exit status: 0 when both dumps are whole, 1 when one is damaged or\n"
		   "incomplete (what could be read is still compared), 2 for usage errors or\n"
		   "a file that cannot be opened.\n");
}

/* ---- building ------------------------------------------------------------------- */

static int keep_name(void *ctx, const struct ta_fstat *f, const struct ta_fn *id)
{
	const char *glob = ctx;

	(void)f;
	return !glob || ta_fn_glob(glob, id);
}

static int load(struct diff *df, int k)
{
	struct one *o = &df->d[k];
	struct ta_visitor v;

	ta_profile_init(&o->prof);
	ta_profile_visitor(&o->prof, &v);
	if (ta_view_open(&o->v, df->opt.path[k], &v) < 0)
		return -1;
	if (ta_prof_table_build(&o->t, &o->v, &o->prof, &o->ids, keep_name,
				(void *)(uintptr_t)df->opt.function) < 0) {
		fprintf(stderr, "traceagent: %s: out of memory\n", df->opt.path[k]);
		o->v.status = 1;
		return -1;
	}
	return 0;
}

static int entry_key_cmp(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	int c = strcmp(x->full, y->full);

	return c ? c : strcmp(x->module, y->module);
}

/* Both tables as entries, sorted by (name, module), then the entries with
 * the same key merged. */
static int match(struct diff *df)
{
	size_t n = df->d[0].t.n + df->d[1].t.n, w = 0;

	df->e = calloc(n ? n : 1, sizeof(*df->e));
	if (!df->e)
		return -1;
	for (int k = 0; k < 2; k++)
		for (size_t i = 0; i < df->d[k].t.n; i++) {
			const struct ta_prof_row *r = &df->d[k].t.rows[i];
			struct entry *e = &df->e[df->n++];

			e->name = r->id.name;
			e->full = r->id.full ? r->id.full : r->id.name;
			e->module = r->id.module[0] ? ta_path_base(r->id.module) : "";
			e->s[k].calls = r->calls;
			e->s[k].total = r->total;
			e->s[k].self = r->self;
			e->s[k].open = r->open;
			e->s[k].partial = r->partial;
		}
	if (df->n)
		qsort(df->e, df->n, sizeof(*df->e), entry_key_cmp);
	for (size_t i = 0; i < df->n; i++) {
		if (w && !entry_key_cmp(&df->e[w - 1], &df->e[i])) {
			for (int k = 0; k < 2; k++) {
				df->e[w - 1].s[k].calls += df->e[i].s[k].calls;
				df->e[w - 1].s[k].total += df->e[i].s[k].total;
				df->e[w - 1].s[k].self += df->e[i].s[k].self;
				df->e[w - 1].s[k].open += df->e[i].s[k].open;
				df->e[w - 1].s[k].partial += df->e[i].s[k].partial;
			}
		} else {
			df->e[w++] = df->e[i];
		}
	}
	df->n = w;
	return 0;
}

/* |new - base| */
static uint64_t change(uint64_t base, uint64_t now)
{
	return now > base ? now - base : base - now;
}

static int entry_cmp(const void *a, const void *b, void *ctx)
{
	const struct entry *x = a, *y = b;
	const enum ta_sort_key *key = ctx;
	uint64_t cx = 0, cy = 0;

	switch (*key) {
	case TA_SORT_SELF:
		cx = change(x->s[0].self, x->s[1].self);
		cy = change(y->s[0].self, y->s[1].self);
		break;
	case TA_SORT_CALLS:
		cx = change(x->s[0].calls, x->s[1].calls);
		cy = change(y->s[0].calls, y->s[1].calls);
		break;
	case TA_SORT_NAME:
		if (strcmp(x->name, y->name))
			return strcmp(x->name, y->name);
		break;
	default:
		cx = change(x->s[0].total, x->s[1].total);
		cy = change(y->s[0].total, y->s[1].total);
		break;
	}
	if (cx != cy)
		return cx > cy ? -1 : 1;
	return entry_key_cmp(a, b);
}

/* ---- printing ----------------------------------------------------------------------- */

/* "+1.500 ms", "-20 ns", "0 ns" */
static const char *fmt_change(char *buf, size_t n, uint64_t base, uint64_t now)
{
	char t[32];

	ta_fmt_time(t, sizeof(t), change(base, now));
	snprintf(buf, n, "%s%s", now > base ? "+" : now < base ? "-" : "", t);
	return buf;
}

/* "+12.5%", "-100.0%", "new" (nothing before), "0.0%" */
static const char *fmt_pct(char *buf, size_t n, uint64_t base, uint64_t now)
{
	if (!base)
		snprintf(buf, n, "%s", now ? "new" : "0.0%");
	else
		snprintf(buf, n, "%+.1f%%", ((double)now - (double)base) * 100.0 / (double)base);
	return buf;
}

static void print_text(const struct diff *df)
{
	char b[10][40];
	int apart = 0;

	/* Open and partial calls, as report shows them: columns of their own
	 * when a row has any. */
	for (size_t i = 0; i < df->n && !apart; i++)
		for (int k = 0; k < 2; k++)
			apart |= df->e[i].s[k].open || df->e[i].s[k].partial;
	printf("base: %s\nnew:  %s\n\n", df->opt.path[0], df->opt.path[1]);
	printf("%10s %10s %12s %12s %13s %8s %12s %12s %13s %8s", "base calls", "new calls",
	       "base total", "new total", "total diff", "total%", "base self", "new self",
	       "self diff", "self%");
	if (apart)
		printf(" %9s %9s %12s %12s", "base open", "new open", "base partial",
		       "new partial");
	printf("  %s  %s\n", "function", "module");
	for (size_t i = 0; i < df->n; i++) {
		const struct entry *e = &df->e[i];
		const struct side *x = &e->s[0], *y = &e->s[1];

		printf("%10" PRIu64 " %10" PRIu64 " %12s %12s %13s %8s %12s %12s %13s %8s",
		       x->calls, y->calls, ta_fmt_time(b[0], sizeof(b[0]), x->total),
		       ta_fmt_time(b[1], sizeof(b[1]), y->total),
		       fmt_change(b[2], sizeof(b[2]), x->total, y->total),
		       fmt_pct(b[3], sizeof(b[3]), x->total, y->total),
		       ta_fmt_time(b[4], sizeof(b[4]), x->self),
		       ta_fmt_time(b[5], sizeof(b[5]), y->self),
		       fmt_change(b[6], sizeof(b[6]), x->self, y->self),
		       fmt_pct(b[7], sizeof(b[7]), x->self, y->self));
		if (apart)
			printf(" %9" PRIu64 " %9" PRIu64 " %12" PRIu64 " %12" PRIu64, x->open,
			       y->open, x->partial, y->partial);
		printf("  %s  %s\n", e->name, e->module[0] ? e->module : "?");
	}
	if (apart)
		printf("open: calls still running when the dump ends; partial: calls already "
		       "running when it\nbegins (or cut by lost events).  Both are in calls, "
		       "their known part in total\nand self.\n");
}

static void json_pct(uint64_t base, uint64_t now)
{
	if (base)
		printf("%.2f", ((double)now - (double)base) * 100.0 / (double)base);
	else
		printf("null");
}

static void json_dump(const struct one *o, const char *key)
{
	printf("\"%s\": {\"dump\": ", key);
	ta_json_str(stdout, o->v.path);
	printf(", \"complete\": %s, \"events\": %" PRIu64 ", \"duration_ns\": %" PRIu64 "}",
	       ta_view_incomplete(&o->v) ? "false" : "true", o->v.events,
	       ta_session_duration_ns(o->v.s));
}

static void print_json(const struct diff *df)
{
	putchar('{');
	json_dump(&df->d[0], "base");
	printf(",\n ");
	json_dump(&df->d[1], "new");
	printf(",\n \"functions\": [");
	for (size_t i = 0; i < df->n; i++) {
		const struct entry *e = &df->e[i];
		const struct side *x = &e->s[0], *y = &e->s[1];

		printf("%s\n  {\"name\": ", i ? "," : "");
		ta_json_str(stdout, e->name);
		printf(", \"module\": ");
		ta_json_str(stdout, e->module);
		printf(", \"base_calls\": %" PRIu64 ", \"new_calls\": %" PRIu64
		       ", \"base_total_ns\": %" PRIu64 ", \"new_total_ns\": %" PRIu64
		       ", \"base_self_ns\": %" PRIu64 ", \"new_self_ns\": %" PRIu64
		       ", \"base_open\": %" PRIu64 ", \"new_open\": %" PRIu64
		       ", \"base_partial\": %" PRIu64 ", \"new_partial\": %" PRIu64
		       ", \"total_change_ns\": %" PRId64 ", \"total_change_pct\": ",
		       x->calls, y->calls, x->total, y->total, x->self, y->self, x->open, y->open,
		       x->partial, y->partial, (int64_t)(y->total - x->total));
		json_pct(x->total, y->total);
		printf(", \"self_change_ns\": %" PRId64 ", \"self_change_pct\": ",
		       (int64_t)(y->self - x->self));
		json_pct(x->self, y->self);
		printf("}");
	}
	printf("%s]}\n", df->n ? "\n " : "");
}

/* ---- arguments ---------------------------------------------------------------------- */

static const struct ta_opt diff_opts[] = {
    {"--section", TA_ARG_EITHER, TA_OPT_SECTION},
    {"--json", TA_ARG_NONE, TA_OPT_JSON},
    {"--sort", TA_ARG_EQ, TA_OPT_SORT},
    {"--top", TA_ARG_EQ, TA_OPT_TOP},
    {"--function", TA_ARG_EQ, TA_OPT_FUNCTION},
    {"--demangle", TA_ARG_EITHER, TA_OPT_DEMANGLE},
    {"--symfs", TA_ARG_EITHER, TA_OPT_SYMFS},
    {"--debug-dir", TA_ARG_EITHER, TA_OPT_DEBUG_DIR},
    {NULL, TA_ARG_NONE, 0},
};

static int parse_args(int argc, char **argv, struct options *o)
{
	struct ta_opts p;
	int demangle = -1;
	int npaths = 0, id;
	const struct ta_opts_into into = {.demangle = &demangle,
					  .json = &o->json,
					  .function = &o->function,
					  .top = &o->top,
					  .sort = &o->sort};

	memset(o, 0, sizeof(*o));
	ta_opts_init(&p, "diff", diff_opts, usage, argc, argv);
	while ((id = ta_opts_next_into(&p, &into)) != TA_OPT_END) {
		switch (id) {
		case TA_OPT_EXIT:
			return p.status;
		case TA_OPT_ARG:
			if (npaths == 2) {
				fprintf(stderr,
					"traceagent diff: two dumps, BASE and NEW ('%s' is a "
					"third)\n",
					p.val);
				return 2;
			}
			o->path[npaths++] = p.val;
			break;
		}
	}
	ta_view_set_demangle(demangle, o->json);
	if (npaths != 2) {
		ta_usage_error("diff", "two dumps are needed, BASE and NEW");
		return 2;
	}
	return -1;
}

int ta_cmd_diff(int argc, char **argv)
{
	struct diff df;
	int rc, status = 0;

	memset(&df, 0, sizeof(df));
	rc = parse_args(argc, argv, &df.opt);
	if (rc >= 0)
		return rc;
	for (int k = 0; k < 2; k++) {
		rc = load(&df, k);
		if (df.d[k].v.status > status)
			status = df.d[k].v.status;
		if (rc < 0)
			goto out;
	}
	if (match(&df) < 0) {
		fprintf(stderr, "traceagent diff: out of memory\n");
		status = 1;
		goto out;
	}
	if (df.n)
		qsort_r(df.e, df.n, sizeof(*df.e), entry_cmp, &df.opt.sort);
	if (df.opt.top && df.n > df.opt.top)
		df.n = (size_t)df.opt.top;
	/* The profile counts exits without an entry as partial calls. */
	df.d[0].v.partial_counted = df.d[1].v.partial_counted = 1;
	ta_view_warnings(&df.d[0].v);
	ta_view_warnings(&df.d[1].v);
	if (df.opt.json)
		print_json(&df);
	else
		print_text(&df);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "traceagent: writing the diff: %s\n", strerror(errno));
		status = 1;
	}
out:
	free(df.e);
	for (int k = 0; k < 2; k++) {
		struct one *o = &df.d[k];

		ta_prof_table_free(&o->t);
		free(o->ids);
		ta_view_close(&o->v); /* also after a failed or no open */
		ta_profile_free(&o->prof);
	}
	return status;
}
