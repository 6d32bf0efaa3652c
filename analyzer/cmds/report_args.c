/* SPDX-License-Identifier: MIT */
/*
 * report_args.c - `traceagent report --args`: the calls of each function
 * whose arguments were recorded, grouped by the arguments' values (as
 * replay shows them): calls, total, p50 and p99 of each value, the values
 * of most total time first, the top N of each function.
 *
 * One pass: each call with arguments becomes a record (its function, its
 * values' text, its duration), sorted and grouped at the end; memory grows
 * with those calls only.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "argsgroup.h"
#include "commands.h"
#include "common.h"

/* Keeps the functions that --function names. */
struct want {
	const char *function;
	struct ta_fn_index *fi;
};

static int wanted(void *ctx, uint64_t key)
{
	const struct want *w = ctx;

	return !w->function || ta_fn_glob(w->function, &w->fi->fn[key].id);
}

static int fn_cmp(const void *a, const void *b)
{
	const struct ta_argkey *x = a, *y = b;

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return x->key < y->key ? -1 : x->key > y->key;
}

static void print(const struct ta_argcall *c, struct ta_fn_index *fi, const struct ta_argkey *fk,
		  size_t nf, uint64_t top, int json)
{
	char a[32], b[32], d[32];

	if (json)
		printf("{\"functions\": [");
	else
		printf("%10s %12s %12s %12s  %s\n", "calls", "total", "p50", "p99", "call");
	for (size_t i = 0; i < nf; i++) {
		const struct ta_fn *fn = &fi->fn[fk[i].key].id;

		if (json) {
			printf("%s\n  {\"name\": ", i ? "," : "");
			ta_json_str(stdout, fn->name);
			printf(", \"module\": ");
			ta_json_str(stdout, fn->module);
			printf(", \"calls\": %zu, \"total_ns\": %" PRIu64 ", \"values\": [",
			       fk[i].n, fk[i].total);
		}
		for (size_t k = 0; k < fk[i].ng && (!top || k < top); k++) {
			const struct ta_argvalue *g = &fk[i].g[k];
			const char *text = c[g->first].text;
			uint64_t p50 = ta_argvalue_pct(c, g, 50), p99 = ta_argvalue_pct(c, g, 99);

			if (json) {
				printf("%s\n    {\"args\": ", k ? "," : "");
				ta_json_str(stdout, text);
				printf(", \"calls\": %zu, \"total_ns\": %" PRIu64
				       ", \"p50_ns\": %" PRIu64 ", \"p99_ns\": %" PRIu64 "}",
				       g->calls, g->total, p50, p99);
			} else {
				printf("%10zu %12s %12s %12s  %s(%s)\n", g->calls,
				       ta_fmt_time(a, sizeof(a), g->total),
				       ta_fmt_time(b, sizeof(b), p50),
				       ta_fmt_time(d, sizeof(d), p99), fn->name, text);
			}
		}
		if (json)
			printf("]}");
	}
	if (json)
		printf("%s]}\n", nf ? "\n" : "");
}

int ta_report_args(const char *dump, const char *function, uint64_t top, int json)
{
	struct ta_argrec r;
	struct ta_visitor vis;
	struct ta_view v;
	struct ta_fn_index fi;
	struct ta_argcall *c = NULL;
	struct ta_argkey *fk = NULL;
	struct want w = {.function = function, .fi = &fi};
	size_t nf = 0;
	int status, nomem = 0;

	memset(&r, 0, sizeof(r));
	memset(&v, 0, sizeof(v));
	ta_argrec_visitor(&r, &vis);
	if (ta_view_open(&v, dump, &vis) < 0) {
		status = v.status;
		nomem = r.nomem;
		goto out;
	}
	status = v.status;
	ta_fn_index_init(&fi, &v);
	c = ta_argrec_calls(&r, &v, &fi);
	nomem = r.nomem || !c;
	for (size_t i = 0; c && i < r.n && !nomem; i++) {
		if (c[i].fn < 0)
			nomem = 1;
		c[i].key = (uint64_t)c[i].fn;
	}
	if (!nomem && ta_argcalls_group(c, r.n, TA_ARGS_BY_TOTAL, wanted, &w, &fk, &nf) < 0)
		nomem = 1;
	qsort(fk, nf, sizeof(*fk), fn_cmp);
	ta_view_warnings(&v);
	if (!nomem) {
		print(c, &fi, fk, nf, top, json);
		if (fflush(stdout) != 0 || ferror(stdout)) {
			fprintf(stderr, "traceagent: writing the report: %s\n", strerror(errno));
			status = 1;
		}
	}
	ta_argkeys_free(fk, nf);
	ta_argcalls_free(c, r.n);
	ta_fn_index_free(&fi);
out:
	if (nomem && status == 0) {
		fprintf(stderr, "traceagent: %s: out of memory\n", dump);
		status = 1;
	}
	ta_argrec_free(&r);
	ta_view_close(&v);
	return status;
}
