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

#include "argsdwarf.h"
#include "argsview.h"
#include "calltree.h"
#include "commands.h"
#include "common.h"
#include "grow.h"
#include "session.h"

struct argcall {
	uint32_t pid;
	uint64_t addr;
	uint64_t *v; /* the TA_EXT_ARGS values, until the end */
	uint32_t nv;
	char *text; /* then the arguments as shown, "2, \"abc\"" */
	uint64_t ticks;
	uint64_t ns; /* at the end */
};

struct argrep {
	struct ta_argstack *stacks; /* by thread index */
	size_t nstacks;
	struct ta_callargs ca;
	struct argcall *c;
	size_t n, cap;
	int nomem;
};

static struct ta_argstack *stack_of(struct argrep *r, const struct ta_sess_thread *t)
{
	if (t->index >= r->nstacks) {
		size_t n = r->nstacks;
		struct ta_argstack *s = ta_vec_reserve_max(r->stacks, (size_t)t->index + 1, &n,
							   sizeof(*s), 16, UINT32_MAX);

		if (!s)
			return NULL;
		memset(s + r->nstacks, 0, (n - r->nstacks) * sizeof(*s));
		r->stacks = s;
		r->nstacks = n;
	}
	return &r->stacks[t->index];
}

static void args_ext(void *ctx, struct ta_sess_thread *t, uint64_t ticks, uint64_t kind,
		     const uint64_t *values, uint32_t n)
{
	struct argrep *r = ctx;
	struct ta_argstack *s;

	(void)ticks;
	if (kind != TA_EXT_ARGS || t->depth == 0)
		return;
	s = stack_of(r, t);
	if (!s ||
	    ta_argstack_put(s, t->depth - 1, t->stack[t->depth - 1].enter, kind, values, n) < 0)
		r->nomem = 1;
}

static void args_exit(void *ctx, struct ta_sess_thread *t, const struct ta_exit_info *x)
{
	struct argrep *r = ctx;
	struct ta_argstack *s = t->index < r->nstacks ? &r->stacks[t->index] : NULL;
	const struct ta_argframe *f;
	struct argcall *c;
	uint64_t *v;

	if (!s || !ta_argstack_get(s, x->depth, x->enter, &r->ca) || !r->ca.nargs ||
	    (x->flags & TA_VISIT_OPEN))
		return;
	/* Shown at the end, when the function's module is known (an enum's
	 * name comes from its DWARF). */
	f = &s->f[x->depth];
	v = malloc((size_t)f->an * sizeof(*v));
	if (!v || !(c = ta_vec_reserve(r->c, r->n + 1, &r->cap, sizeof(*c), 256))) {
		free(v);
		r->nomem = 1;
		return;
	}
	memcpy(v, f->av, (size_t)f->an * sizeof(*v));
	r->c = c;
	c[r->n].pid = t->pid;
	c[r->n].addr = x->addr;
	c[r->n].v = v;
	c[r->n].nv = f->an;
	c[r->n].text = NULL;
	c[r->n].ticks = x->duration;
	r->n++;
}

/* The arguments of call c as replay shows them (NULL without memory). */
static char *args_text(struct argrep *r, struct ta_fn_index *fi, struct ta_enumcache **enums,
		       const struct argcall *c)
{
	const char *why;
	char *text = NULL;
	size_t len = 0, used = 0;
	int64_t id = ta_fn_index_id(fi, c->pid, c->addr);
	int k = ta_args_decode(c->v, c->nv, r->ca.a, TA_CALLARGS_MAX, r->ca.bytes,
			       sizeof(r->ca.bytes), &used, &why);
	FILE *m;

	r->ca.nargs = k > 0 ? (uint32_t)k : 0;
	r->ca.has_ret = 0;
	for (uint32_t i = 0; i < r->ca.nargs && id >= 0; i++) {
		struct ta_argval *a = &r->ca.a[i];

		if (a->fmt == TA_ARGF_ENUM && !a->fp)
			a->name = ta_enum_name(enums, fi->fn[id].id.module, fi->fn[id].id.offset,
					       a->reg, ta_argval_signed(a));
	}
	m = open_memstream(&text, &len);
	if (!m)
		return NULL;
	ta_callargs_print(m, &r->ca);
	if (fclose(m) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

static int call_cmp(const void *a, const void *b)
{
	const struct argcall *x = a, *y = b;
	int k;

	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->addr != y->addr)
		return x->addr < y->addr ? -1 : 1;
	k = strcmp(x->text, y->text);
	if (k)
		return k;
	return x->ns < y->ns ? -1 : x->ns > y->ns;
}

/* A value's group: calls [first, first + calls) of the sorted records. */
struct group {
	size_t first, calls;
	uint64_t total;
};

struct fgroup {
	size_t first, n; /* its calls */
	uint64_t total;
	struct group *g;
	size_t ng, gcap;
};

static int group_cmp(const void *a, const void *b)
{
	const struct group *x = a, *y = b;

	return x->total > y->total ? -1 : x->total < y->total;
}

static int fgroup_cmp(const void *a, const void *b)
{
	const struct fgroup *x = a, *y = b;

	return x->total > y->total ? -1 : x->total < y->total;
}

/* The nearest-rank percentile q (of 100) of the sorted durations. */
static uint64_t pct(const struct argcall *c, size_t n, unsigned q)
{
	size_t k = (n * q + 99) / 100;

	return c[k ? k - 1 : 0].ns;
}

static void print(struct argrep *r, struct ta_fn_index *fi, struct fgroup *fg, size_t nf,
		  uint64_t top, int json)
{
	char a[32], b[32], c[32];

	if (json)
		printf("{\"functions\": [");
	else
		printf("%10s %12s %12s %12s  %s\n", "calls", "total", "p50", "p99", "call");
	for (size_t i = 0; i < nf; i++) {
		const struct argcall *first = &r->c[fg[i].first];
		int64_t id = ta_fn_index_id(fi, first->pid, first->addr);
		const struct ta_fn *fn = id >= 0 ? &fi->fn[id].id : NULL;
		const char *name = fn ? fn->name : "?";

		if (json) {
			printf("%s\n  {\"name\": ", i ? "," : "");
			ta_json_str(stdout, name);
			printf(", \"module\": ");
			ta_json_str(stdout, fn ? fn->module : "");
			printf(", \"calls\": %zu, \"total_ns\": %" PRIu64 ", \"values\": [",
			       fg[i].n, fg[i].total);
		}
		for (size_t k = 0; k < fg[i].ng && (!top || k < top); k++) {
			const struct group *g = &fg[i].g[k];
			const struct argcall *gc = &r->c[g->first];
			uint64_t p50 = pct(gc, g->calls, 50), p99 = pct(gc, g->calls, 99);

			if (json) {
				printf("%s\n    {\"args\": ", k ? "," : "");
				ta_json_str(stdout, gc->text);
				printf(", \"calls\": %zu, \"total_ns\": %" PRIu64
				       ", \"p50_ns\": %" PRIu64 ", \"p99_ns\": %" PRIu64 "}",
				       g->calls, g->total, p50, p99);
			} else {
				printf("%10zu %12s %12s %12s  %s(%s)\n", g->calls,
				       ta_fmt_time(a, sizeof(a), g->total),
				       ta_fmt_time(b, sizeof(b), p50),
				       ta_fmt_time(c, sizeof(c), p99), name, gc->text);
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
	struct argrep r;
	struct ta_visitor vis;
	struct ta_view v;
	struct ta_fn_index fi;
	struct fgroup *fg = NULL;
	struct ta_enumcache *enums = NULL;
	size_t nf = 0, fg_cap = 0;
	int status;

	memset(&r, 0, sizeof(r));
	memset(&vis, 0, sizeof(vis));
	memset(&v, 0, sizeof(v));
	vis.ctx = &r;
	vis.exit = args_exit;
	vis.ext = args_ext;
	if (ta_view_open(&v, dump, &vis) < 0) {
		status = v.status;
		goto out;
	}
	status = v.status;
	for (size_t i = 0; i < r.n; i++) {
		const struct ta_process *p = ta_session_process(v.s, r.c[i].pid);

		r.c[i].ns = p ? ta_process_dur_ns(p, r.c[i].ticks) : r.c[i].ticks;
	}
	ta_fn_index_init(&fi, &v);
	for (size_t i = 0; i < r.n; i++) {
		r.c[i].text = args_text(&r, &fi, &enums, &r.c[i]);
		free(r.c[i].v);
		r.c[i].v = NULL;
		if (!r.c[i].text) {
			r.nomem = 1;
			ta_fn_index_free(&fi);
			goto out;
		}
	}
	qsort(r.c, r.n, sizeof(*r.c), call_cmp);
	/* Functions, then their values. */
	for (size_t i = 0; i < r.n;) {
		size_t j = i;
		struct fgroup *f;
		int64_t id = ta_fn_index_id(&fi, r.c[i].pid, r.c[i].addr);

		while (j < r.n && r.c[j].pid == r.c[i].pid && r.c[j].addr == r.c[i].addr)
			j++;
		if (function && (id < 0 || !ta_fn_glob(function, &fi.fn[id].id))) {
			i = j;
			continue;
		}
		f = ta_vec_reserve(fg, nf + 1, &fg_cap, sizeof(*fg), 16);
		if (!f) {
			r.nomem = 1;
			break;
		}
		fg = f;
		f = &fg[nf++];
		memset(f, 0, sizeof(*f));
		f->first = i;
		f->n = j - i;
		for (size_t k = i; k < j;) {
			size_t e = k;
			struct group *g;

			while (e < j && !strcmp(r.c[e].text, r.c[k].text))
				e++;
			g = ta_vec_reserve(f->g, f->ng + 1, &f->gcap, sizeof(*g), 8);
			if (!g) {
				r.nomem = 1;
				break;
			}
			f->g = g;
			g = &f->g[f->ng++];
			g->first = k;
			g->calls = e - k;
			g->total = 0;
			for (size_t q = k; q < e; q++)
				g->total += r.c[q].ns;
			f->total += g->total;
			k = e;
		}
		qsort(f->g, f->ng, sizeof(*f->g), group_cmp);
		i = j;
	}
	qsort(fg, nf, sizeof(*fg), fgroup_cmp);
	ta_view_warnings(&v);
	if (!r.nomem) {
		print(&r, &fi, fg, nf, top, json);
		if (fflush(stdout) != 0 || ferror(stdout)) {
			fprintf(stderr, "traceagent: writing the report: %s\n", strerror(errno));
			status = 1;
		}
	}
	for (size_t i = 0; i < nf; i++)
		free(fg[i].g);
	free(fg);
	ta_fn_index_free(&fi);
out:
	if (r.nomem && status == 0) {
		fprintf(stderr, "traceagent: %s: out of memory\n", dump);
		status = 1;
	}
	ta_enumcache_free(enums);
	for (size_t i = 0; i < r.n; i++) {
		free(r.c[i].text);
		free(r.c[i].v);
	}
	free(r.c);
	for (size_t i = 0; i < r.nstacks; i++)
		ta_argstack_free(&r.stacks[i]);
	free(r.stacks);
	ta_view_close(&v);
	return status;
}
