/* SPDX-License-Identifier: MIT */
/*
 * graph.c - `traceagent graph`: the call tree aggregated by call path.
 *
 * Without a function: every path from the roots, with its calls, total and
 * self time, children by total.  With one (a glob on the names): for each
 * function it matches, the paths that lead to it from the roots and the
 * tree of what it calls, merged over all the places it is called from.
 * The tree itself comes from calltree.c, built in one streaming pass.
 *
 * With --args, the same pass gathers the calls whose arguments were
 * recorded (argsgroup.c, as report --args does), each with its call path;
 * once the tree is named, each path's node lists its most frequent values.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "argsgroup.h"
#include "cmdopts.h"
#include "commands.h"
#include "srcline.h"
#include "timeline.h"

struct graph {
	const char *path, *function;
	int json, threads, srcline;
	struct ta_tlopts o; /* --tid and --depth */
	struct ta_treeview tv;
	struct ta_calltree *ct;
	struct ta_srclines *sl;
	struct ta_spaces indent;
	/* --args: the values shown per node (--top), the gathering, the
	 * calls' paths by thread and address, the calls keyed by the tree's
	 * nodes, and their groups. */
	int args;
	uint64_t top;
	struct ta_argrec rec;
	struct ta_ctree paths;
	struct ta_argcall *ac;
	size_t nac;
	struct ta_argkey *ak;
	size_t nak;
};

/* A call's path that the tree does not have. */
#define NO_NODE UINT32_MAX

/* One printing of a tree: the graph, the tree it walks, the indentation
 * of its JSON. */
struct print {
	struct graph *g;
	const struct ta_ctree *t;
	uint32_t json_base;
	uint32_t *map; /* merging: the merged node at each depth */
	uint32_t nmap;
	struct ta_ctree *into;
	int fail;
	uint64_t key;	 /* finding: the function */
	uint32_t *found; /* its outermost nodes */
	uint32_t nfound, found_cap;
	const struct ta_argcall *ac; /* --args: the calls, and their values by node of t */
	struct ta_argkey *ak;
	size_t nak;
	uint32_t *to_sub;	   /* merging: the merged node of each node */
	struct ta_argcall *merged; /* merging: the calls keyed by the merged nodes */
};

static void usage(FILE *f)
{
	fprintf(f, "usage: traceagent graph [OPTIONS] DUMP [FUNCTION]\n"
		   "\n"
		   "The call tree aggregated by call path: calls, total and self time of\n"
		   "each path, children by total.  With FUNCTION (a glob on the demangled\n"
		   "names: '*', '?', [set]), for each function it matches: the paths that\n"
		   "lead to it from the roots, and the tree of its callees merged over\n"
		   "all of them.\n"
		   "\n"
		   "  --threads           one tree per thread (default: paths merged across\n"
		   "                      threads)\n"
		   "  --tid=TID[,TID...]  only these threads\n"
		   "  --depth=N           show N levels\n"
		   "  --srcline           the source file:line of each function\n"
		   "  --args              under each call path, its calls' most frequent\n"
		   "                      recorded argument values\n"
		   "  --top=N             with --args, N values a path (default 5)\n"
		   "  --json              one JSON object\n"
		   "  --section=NAME      only the time inside the program's section NAME\n"
		   "  -j N, --jobs=N      N threads read the dump (default: one per CPU\n"
		   "                      it may use, at most 64; N up to 1024)\n"
		   "  --demangle=MODE     C++ names: simple (default: without parameters\n"
		   "                      and template arguments; full for --json), full,\n"
		   "                      or no (mangled)\n"
		   "  --symfs=DIR         look for each module's file under DIR, at its\n"
		   "                      recorded path (DIR/recorded/path)\n"
		   "  --debug-dir=DIR     look for separate debug files in DIR too\n"
		   "                      (DIR/.build-id/, DIR/recorded/path.debug);\n"
		   "                      repeatable (see traceagent-symbols(7))\n"
		   "  -h, --help          this help\n"
		   "\n"
		   "Total counts every call on the path once (a recursive function's deeper\n"
		   "calls are other paths).  A function calling itself more than 64 levels\n"
		   "deep is one path \"NAME [xN]\": the N levels' calls and self time summed,\n"
		   "the outermost call's total, what they called under it.  Paths deeper\n"
		   "than 1000 levels are cut there: the rest is one \"[deeper than 1000\n"
		   "levels]\", said on stderr.\n"
		   "\n"
		   "Exit status: 0 for a whole dump, 1 when it is damaged or incomplete (what\n"
		   "could be read is shown), 2 for usage errors or a file that cannot be\n"
		   "opened.\n");
}

static const char *indent(struct graph *g, uint32_t depth)
{
	return ta_spaces(&g->indent, 2 * (size_t)depth);
}

static int shown(const struct graph *g, uint32_t depth)
{
	return !g->o.max_depth || depth <= g->o.max_depth;
}

/* ---- text ------------------------------------------------------------------------- */

static void text_header(const char *what)
{
	printf("%10s %12s %12s  %s\n", "calls", "total", "self", what);
}

/* A node's calls that are not whole, as report counts them apart. */
static void marks(const struct ta_ctnode *n)
{
	if (n->open)
		printf("  (%" PRIu64 " open at the end)", n->open);
	if (n->partial)
		printf("  (%" PRIu64 " partial)", n->partial);
}

static void text_row(struct graph *g, const struct ta_ctnode *n, uint32_t depth, const char *name)
{
	const struct ta_sess_thread *th = ta_calltree_thread(g->ct, n->key);
	const char *src = th ? NULL : g->ct->fns.fn[n->key].id.srcline;
	char t[2][32], calls[24];

	snprintf(calls, sizeof(calls), "%" PRIu64, n->calls);
	printf("%10s %12s %12s  %s%s", th ? "" : calls, ta_fmt_time(t[0], sizeof(t[0]), n->total),
	       th ? "" : ta_fmt_time(t[1], sizeof(t[1]), n->self), indent(g, depth), name);
	if (!th && !strcmp(g->ct->fns.fn[n->key].id.module, TA_LIBCALL_MODULE))
		fputs("  " TA_LIBCALL_MODULE, stdout);
	if (src)
		printf("  [%s]", src);
	marks(n);
	putchar('\n');
}

/* The values of node n's calls (--args), one line each under it: calls,
 * total, and the call as replay shows it; the rest summed in one line. */
static void text_values(struct print *p, uint32_t n, uint32_t depth)
{
	const struct ta_argkey *k = ta_argkeys_find(p->ak, p->nak, n);
	const struct ta_argcall *c = p->ac;
	uint64_t rest = 0;
	size_t rest_calls = 0;
	char t[32];

	if (!k)
		return;
	for (size_t i = 0; i < k->ng; i++) {
		const struct ta_argvalue *v = &k->g[i];
		const struct ta_argcall *first = &c[v->first];

		if (i >= p->g->top) {
			rest += v->total;
			rest_calls += v->calls;
			continue;
		}
		printf("%10zu %12s %12s  %s%s(%s)\n", v->calls, ta_fmt_time(t, sizeof(t), v->total),
		       "", indent(p->g, depth),
		       first->fn >= 0 ? p->g->ct->fns.fn[first->fn].id.name : "?", first->text);
	}
	if (rest_calls)
		printf("%10zu %12s %12s  %s(%zu more value%s)\n", rest_calls,
		       ta_fmt_time(t, sizeof(t), rest), "", indent(p->g, depth),
		       k->ng - (size_t)p->g->top, k->ng - p->g->top == 1 ? "" : "s");
}

static int text_open(void *ctx, uint32_t n, uint32_t depth)
{
	struct print *p = ctx;
	const struct ta_ctnode *node = &p->t->n[n];
	char buf[128];

	if (!depth)
		return 1;
	if (!shown(p->g, depth))
		return 0;
	text_row(p->g, node, depth - 1, ta_calltree_label(p->g->ct, node->key, buf, sizeof(buf)));
	if (p->g->args)
		text_values(p, n, depth);
	return 1;
}

/* ---- JSON ------------------------------------------------------------------------- */

static void json_fn(const struct graph *g, uint64_t key)
{
	const struct ta_ct_entry *e = &g->ct->fns.fn[key];
	const struct ta_fn *fn = &e->id;

	printf("\"name\": ");
	ta_json_str(stdout, fn->name);
	printf(", \"module\": ");
	ta_json_str(stdout, fn->module);
	printf(", \"offset\": %" PRIu64, fn->offset);
	if (e->repeat)
		printf(", \"repeat\": %" PRIu32, e->repeat);
	if (g->srcline) {
		printf(", \"srcline\": ");
		if (fn->srcline)
			ta_json_str(stdout, fn->srcline);
		else
			printf("null");
	}
}

static void json_sums(const struct ta_ctnode *n)
{
	printf("\"calls\": %" PRIu64 ", \"total_ns\": %" PRIu64 ", \"self_ns\": %" PRIu64
	       ", \"open\": %" PRIu64 ", \"partial\": %" PRIu64,
	       n->calls, n->total, n->self, n->open, n->partial);
}

/* --args: "args", node n's most frequent values, and "args_values", how
 * many values its calls had. */
static void json_values(const struct print *p, uint32_t n)
{
	const struct ta_argkey *k = ta_argkeys_find(p->ak, p->nak, n);

	if (!k)
		return;
	printf(", \"args_values\": %zu, \"args\": [", k->ng);
	for (size_t i = 0; i < k->ng && i < p->g->top; i++) {
		const struct ta_argvalue *v = &k->g[i];

		printf("%s{\"args\": ", i ? ", " : "");
		ta_json_str(stdout, p->ac[v->first].text);
		printf(", \"calls\": %zu, \"total_ns\": %" PRIu64 "}", v->calls, v->total);
	}
	putchar(']');
}

static int json_open(void *ctx, uint32_t n, uint32_t depth)
{
	struct print *p = ctx;
	const struct ta_ctnode *node = &p->t->n[n];
	const struct ta_sess_thread *th = ta_calltree_thread(p->g->ct, node->key);

	if (!depth)
		return 1;
	if (!shown(p->g, depth))
		return 0;
	printf("%s\n%s{", p->t->n[node->parent].child == n ? "" : ",",
	       indent(p->g, p->json_base + depth));
	if (th) {
		printf("\"thread\": {\"tid\": %" PRIu64 ", \"pid\": %" PRIu32 ", \"name\": ",
		       th->tid, th->pid);
		ta_json_str(stdout, th->name ? th->name : "");
		printf("}, ");
	} else {
		json_fn(p->g, node->key);
		printf(", ");
	}
	json_sums(node);
	if (p->g->args)
		json_values(p, n);
	printf(", \"children\": [");
	return 1;
}

static void json_close(void *ctx, uint32_t n, uint32_t depth)
{
	struct print *p = ctx;
	const struct ta_ctnode *node = &p->t->n[n];

	if (!depth || !shown(p->g, depth))
		return;
	if (node->child && shown(p->g, depth + 1))
		printf("\n%s]}", indent(p->g, p->json_base + depth));
	else
		printf("]}");
}

static void json_head(struct graph *g)
{
	printf("{\"dump\": ");
	ta_json_str(stdout, g->path);
	printf(", \"complete\": %s, \"threads\": %" PRIu32 ", \"split\": %s",
	       g->tv.v.status || ta_session_incomplete(g->tv.v.s) ? "false" : "true",
	       g->ct->threads, g->threads ? "true" : "false");
}

/* ---- the whole tree ------------------------------------------------------------------ */

static void whole(struct graph *g)
{
	struct print p = {
	    .g = g, .t = &g->ct->tree, .json_base = 1, .ac = g->ac, .ak = g->ak, .nak = g->nak};

	if (g->json) {
		json_head(g);
		printf(",\n \"tree\": [");
		ta_ctree_walk(p.t, 0, json_open, json_close, &p);
		printf("%s]}\n", g->ct->tree.n[0].child ? "\n " : "");
		return;
	}
	printf("call paths of %s: %" PRIu32 " thread%s, %s\n", g->path, g->ct->threads,
	       g->ct->threads == 1 ? "" : "s",
	       g->threads ? "one tree each" : "merged (--threads splits them)");
	text_header("function");
	ta_ctree_walk(p.t, 0, text_open, NULL, &p);
}

/* ---- one function ------------------------------------------------------------------- */

/* Whether a node's key is function fn, or a collapsed run of it. */
static int is_fn(const struct graph *g, uint64_t key, uint64_t fn)
{
	return !(key & TA_CT_THREAD) && g->ct->fns.fn[key].base == fn;
}

static int find_open(void *ctx, uint32_t n, uint32_t depth)
{
	struct print *p = ctx;

	if (!depth || !is_fn(p->g, p->t->n[n].key, p->key))
		return 1;
	if (p->nfound == p->found_cap) {
		size_t cap = p->found_cap;
		uint32_t *v = ta_vec_reserve(p->found, (size_t)p->nfound + 1, &cap, sizeof(*v), 16);

		if (!v) {
			p->fail = 1;
			return 0;
		}
		p->found = v;
		p->found_cap = (uint32_t)cap;
	}
	p->found[p->nfound++] = n;
	return 0; /* deeper calls of it are in its own tree */
}

static void add_sums(struct ta_ctnode *to, const struct ta_ctnode *from)
{
	to->calls += from->calls;
	to->open += from->open;
	to->partial += from->partial;
	to->total += from->total;
	to->self += from->self;
}

static int merge_open(void *ctx, uint32_t n, uint32_t depth)
{
	struct print *p = ctx;
	uint32_t m;

	if (depth >= p->nmap) {
		size_t cap = p->nmap;
		uint32_t *v = ta_vec_reserve(p->map, (size_t)depth + 1, &cap, sizeof(*v), 64);

		if (!v) {
			p->fail = 1;
			return 0;
		}
		p->map = v;
		p->nmap = (uint32_t)cap;
	}
	m = depth ? ta_ctree_child(p->into, p->map[depth - 1], p->t->n[n].key) : p->map[0];
	if (!m) {
		p->fail = 1;
		return 0;
	}
	add_sums(&p->into->n[m], &p->t->n[n]);
	p->map[depth] = m;
	if (p->to_sub)
		p->to_sub[n] = m;
	return 1;
}

static int found_cmp(const void *a, const void *b, void *ctx)
{
	const struct ta_ctree *t = ctx;
	const struct ta_ctnode *x = &t->n[*(const uint32_t *)a], *y = &t->n[*(const uint32_t *)b];

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return *(const uint32_t *)a < *(const uint32_t *)b ? -1 : 1;
}

static void print_path(struct graph *g, uint32_t n)
{
	const struct ta_ctree *t = &g->ct->tree;
	uint32_t depth = 0, *up;
	char buf[128];

	for (uint32_t k = n; k; k = t->n[k].parent)
		depth++;
	up = malloc(depth * sizeof(*up));
	if (!up)
		return;
	for (uint32_t k = n, i = depth; k; k = t->n[k].parent)
		up[--i] = k;
	if (g->json)
		putchar('[');
	for (uint32_t i = 0; i < depth; i++) {
		const char *name = ta_calltree_label(g->ct, t->n[up[i]].key, buf, sizeof(buf));

		if (g->json) {
			if (i)
				printf(", ");
			ta_json_str(stdout, name);
		} else {
			printf("%s%s", i ? " > " : "", name);
		}
	}
	if (g->json)
		putchar(']');
	free(up);
}

/* --args: the calls under the nodes merged into p->into, keyed by the
 * merged nodes, and their values (p->ac, p->ak); -1 without memory. */
static int merged_values(struct graph *g, struct print *p)
{
	struct ta_argcall *c = malloc((g->nac ? g->nac : 1) * sizeof(*c));
	size_t n = 0;

	if (!c)
		return -1;
	for (size_t i = 0; i < g->nac; i++)
		if (g->ac[i].key != NO_NODE && p->to_sub[g->ac[i].key]) {
			c[n] = g->ac[i];
			c[n++].key = p->to_sub[g->ac[i].key];
		}
	/* The texts stay g's. */
	p->ac = p->merged = c;
	return ta_argcalls_group(c, n, TA_ARGS_BY_CALLS, NULL, NULL, &p->ak, &p->nak);
}

/* What one matching function shows; -1 without memory. */
static int one_function(struct graph *g, uint64_t key, int first)
{
	const struct ta_ctree *t = &g->ct->tree;
	struct print p = {.g = g, .t = t, .key = key, .json_base = 3};
	struct ta_ctnode all;
	struct ta_ctree sub;
	int rc = -1;

	memset(&all, 0, sizeof(all));
	if (ta_ctree_init(&sub) < 0)
		return -1;
	ta_ctree_walk(t, 0, find_open, NULL, &p);
	/* Every call of it counts and so does its self time; the total only
	 * once per outermost call. */
	for (uint32_t i = 1; i < t->len; i++)
		if (is_fn(g, t->n[i].key, key)) {
			all.calls += t->n[i].calls;
			all.self += t->n[i].self;
			all.open += t->n[i].open;
			all.partial += t->n[i].partial;
		}
	if (p.fail)
		goto out;
	qsort_r(p.found, p.nfound, sizeof(*p.found), found_cmp, (void *)(uintptr_t)t);

	p.into = &sub;
	if (g->args && !(p.to_sub = calloc(t->len, sizeof(*p.to_sub))))
		goto out;
	p.nmap = 64;
	p.map = malloc(p.nmap * sizeof(*p.map));
	if (!p.map || !(p.map[0] = ta_ctree_child(&sub, 0, key)))
		goto out;
	for (uint32_t i = 0; i < p.nfound && !p.fail; i++) {
		all.total += t->n[p.found[i]].total;
		ta_ctree_walk(t, p.found[i], merge_open, NULL, &p);
	}
	if (p.fail || ta_ctree_sort(&sub, ta_calltree_cmp, g->ct) < 0)
		goto out;
	if (g->args && merged_values(g, &p) < 0)
		goto out;

	if (g->json) {
		printf("%s\n  {", first ? "" : ",");
		json_fn(g, key);
		printf(", ");
		json_sums(&all);
		printf(",\n   \"callers\": [");
		for (uint32_t i = 0; i < p.nfound; i++) {
			printf("%s\n    {\"path\": ", i ? "," : "");
			print_path(g, p.found[i]);
			printf(", ");
			json_sums(&t->n[p.found[i]]);
			putchar('}');
		}
		printf("%s],\n   \"tree\": ", p.nfound ? "\n   " : "");
		p.t = &sub;
		ta_ctree_walk(&sub, 0, json_open, json_close, &p);
		putchar('}');
	} else {
		char a[3][32];

		printf("%s%s: %" PRIu64 " calls, total %s, self %s", first ? "" : "\n",
		       g->ct->fns.fn[key].id.name, all.calls,
		       ta_fmt_time(a[0], sizeof(a[0]), all.total),
		       ta_fmt_time(a[1], sizeof(a[1]), all.self));
		marks(&all);
		putchar('\n');
		printf("\npaths to it:\n");
		text_header("path");
		for (uint32_t i = 0; i < p.nfound; i++) {
			const struct ta_ctnode *n = &t->n[p.found[i]];

			printf("%10" PRIu64 " %12s %12s  ", n->calls,
			       ta_fmt_time(a[0], sizeof(a[0]), n->total),
			       ta_fmt_time(a[1], sizeof(a[1]), n->self));
			print_path(g, p.found[i]);
			marks(n);
			putchar('\n');
		}
		printf("\ncalls under it:\n");
		text_header("function");
		p.t = &sub;
		ta_ctree_walk(&sub, 0, text_open, NULL, &p);
	}
	rc = 0;
out:
	free(p.found);
	free(p.map);
	free(p.to_sub);
	ta_argkeys_free(p.ak, p.nak);
	free(p.merged);
	ta_ctree_free(&sub);
	return rc;
}

struct match {
	uint32_t id;
	uint64_t total;
};

static int match_cmp(const void *a, const void *b)
{
	const struct match *x = a, *y = b;

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return x->id < y->id ? -1 : x->id > y->id;
}

static int by_function(struct graph *g)
{
	const struct ta_ctree *t = &g->ct->tree;
	const struct ta_fn_index *fns = &g->ct->fns;
	struct match *m = calloc(fns->n ? fns->n : 1, sizeof(*m));
	uint32_t nm = 0;
	int rc = 0;

	if (!m)
		return -1;
	/* A function's weight: the total of its outermost calls. */
	for (uint32_t i = 0; i < fns->n; i++) {
		struct print p = {.g = g, .t = t, .key = i};

		if (fns->fn[i].base != i || !ta_fn_glob(g->function, &fns->fn[i].id))
			continue;
		ta_ctree_walk(t, 0, find_open, NULL, &p);
		m[nm].id = i;
		for (uint32_t k = 0; k < p.nfound; k++)
			m[nm].total += t->n[p.found[k]].total;
		nm++;
		free(p.found);
		if (p.fail)
			rc = -1;
	}
	qsort(m, nm, sizeof(*m), match_cmp);
	if (g->json) {
		json_head(g);
		printf(",\n \"function\": ");
		ta_json_str(stdout, g->function);
		printf(",\n \"matches\": [");
	}
	for (uint32_t j = 0; j < nm && rc == 0; j++)
		rc = one_function(g, m[j].id, j == 0);
	if (g->json)
		printf("%s]}\n", nm ? "\n " : "");
	if (!nm)
		ta_view_warn(&g->tv.v, "no function matches '%s'", g->function);
	free(m);
	return rc;
}

/* ---- --args ---------------------------------------------------------------------------- */

/* Where a call is counted: its path under its thread, by
 * address, as calltree_rec.c records it; 0 for a thread left out. */
static uint64_t args_where(void *ctx, const struct ta_sess_thread *t, const struct ta_exit_info *x)
{
	struct graph *g = ctx;
	uint32_t n;

	if (!ta_tidset_has(&g->o.tids, t->tid))
		return 0;
	n = ta_ctree_child(&g->paths, 0, TA_CT_THREAD | t->index);
	for (uint32_t k = 0; n && k < x->depth && k < t->depth; k++)
		n = ta_ctree_child(&g->paths, n, t->stack[k].addr);
	return n ? ta_ctree_child(&g->paths, n, x->addr) : 0;
}

/*
 * The node of the named tree under node at for function fn: its child of
 * that function; at itself when at is a collapsed recursion of fn (the
 * deeper calls are in its line) or the cut's node; else the child that is
 * a collapsed recursion of fn, or the cut.  NO_NODE when there is none.
 */
static uint32_t args_step(const struct ta_calltree *ct, uint32_t at, int64_t fn)
{
	const struct ta_ctree *t = &ct->tree;
	uint32_t loose = NO_NODE;

	if (fn < 0)
		return NO_NODE;
	if (at && !(t->n[at].key & TA_CT_THREAD)) {
		const struct ta_ct_entry *e = &ct->fns.fn[t->n[at].key];

		if ((e->repeat && e->base == fn) || e->base == UINT32_MAX)
			return at;
	}
	for (uint32_t c = t->n[at].child; c; c = t->n[c].next) {
		const struct ta_ct_entry *e;

		if (t->n[c].key & TA_CT_THREAD)
			continue;
		if (t->n[c].key == (uint64_t)fn)
			return c;
		e = &ct->fns.fn[t->n[c].key];
		if ((e->repeat && e->base == fn) || e->base == UINT32_MAX)
			loose = c;
	}
	return loose;
}

/* The named tree's node of each call path gathered (parents come before
 * their children in paths). */
static uint32_t *args_map(struct graph *g, const struct ta_session *s)
{
	const struct ta_ctree *t = &g->paths;
	uint32_t *map = malloc((size_t)t->len * sizeof(*map));
	uint32_t *thr = malloc((size_t)t->len * sizeof(*thr));

	if (!map || !thr) {
		free(map);
		free(thr);
		return NULL;
	}
	map[0] = NO_NODE;
	for (uint32_t i = 1; i < t->len; i++) {
		const struct ta_ctnode *n = &t->n[i];

		if (!n->parent) {
			thr[i] = (uint32_t)(n->key & ~TA_CT_THREAD);
			/* Merged, the threads' paths are the root's. */
			map[i] = 0;
			if (g->threads) {
				map[i] = NO_NODE;
				for (uint32_t c = g->ct->tree.n[0].child; c;
				     c = g->ct->tree.n[c].next)
					if (g->ct->tree.n[c].key == n->key)
						map[i] = c;
			}
			continue;
		}
		thr[i] = thr[n->parent];
		map[i] =
		    map[n->parent] == NO_NODE
			? NO_NODE
			: args_step(g->ct, map[n->parent],
				    ta_fn_index_id(&g->ct->fns, s->threads[thr[i]]->pid, n->key));
	}
	free(thr);
	return map;
}

static int args_kept(void *ctx, uint64_t key)
{
	(void)ctx;
	return key != NO_NODE;
}

/* The calls gathered, keyed by the nodes of the named tree, and grouped
 * (g->ac, g->ak).  0, or -1 without memory. */
static int args_group(struct graph *g)
{
	uint32_t *map;
	int rc = -1;

	if (g->rec.nomem || g->paths.nomem || !(map = args_map(g, g->tv.v.s)))
		return -1;
	if (!(g->ac = ta_argrec_calls(&g->rec, &g->tv.v, &g->ct->fns)))
		goto out;
	g->nac = g->rec.n;
	for (size_t i = 0; i < g->nac; i++)
		g->ac[i].key = map[g->ac[i].key];
	rc = ta_argcalls_group(g->ac, g->nac, TA_ARGS_BY_CALLS, args_kept, NULL, &g->ak, &g->nak);
out:
	free(map);
	return rc;
}

/* ---- the command ---------------------------------------------------------------------- */

enum { O_ARGS = TA_OPT_OWN };

static const struct ta_opt graph_opts[] = {
    {"--section", TA_ARG_EITHER, TA_OPT_SECTION},
    {"--threads", TA_ARG_NONE, TA_OPT_THREADS},
    {"--tid", TA_ARG_EQ, TA_OPT_TID},	  /* ta_tlopts_take */
    {"--depth", TA_ARG_EQ, TA_OPT_DEPTH}, /* ta_tlopts_take */
    {"--srcline", TA_ARG_NONE, TA_OPT_SRCLINE},
    {"--args", TA_ARG_NONE, O_ARGS},
    {"--top", TA_ARG_EQ, TA_OPT_TOP},
    {"--json", TA_ARG_NONE, TA_OPT_JSON},
    {"--demangle", TA_ARG_EITHER, TA_OPT_DEMANGLE},
    {"--symfs", TA_ARG_EITHER, TA_OPT_SYMFS},
    {"--debug-dir", TA_ARG_EITHER, TA_OPT_DEBUG_DIR},
    {NULL, TA_ARG_NONE, 0},
};

static int parse_args(int argc, char **argv, struct graph *g)
{
	struct ta_opts p;
	int demangle = -1;
	int id;
	const struct ta_opts_into into = {.demangle = &demangle,
					  .json = &g->json,
					  .threads = &g->threads,
					  .srcline = &g->srcline,
					  .top = &g->top};

	ta_opts_init(&p, "graph", graph_opts, usage, argc, argv);
	while ((id = ta_opts_next_into(&p, &into)) != TA_OPT_END) {
		switch (id) {
		case TA_OPT_EXIT:
			return p.status;
		case O_ARGS:
			g->args = 1;
			break;
		case TA_OPT_ARG:
			if (!g->path) {
				g->path = p.val;
			} else if (!g->function) {
				g->function = p.val;
			} else {
				fprintf(stderr, "traceagent graph: one dump and one function at a "
						"time\n");
				return 2;
			}
			break;
		case TA_OPT_TID:
		case TA_OPT_DEPTH:
			if (ta_tlopts_take(&g->o, &p))
				return 2;
			break;
		}
	}
	ta_view_set_demangle(demangle, g->json);
	if (ta_opts_need_dump(&p, g->path))
		return 2;
	if (g->top && !g->args) {
		fprintf(stderr, "traceagent graph: --top is the values shown with --args\n");
		return 2;
	}
	if (!g->top)
		g->top = 5;
	return -1;
}

int ta_cmd_graph(int argc, char **argv)
{
	struct graph g;
	int status;

	memset(&g, 0, sizeof(g));
	status = parse_args(argc, argv, &g);
	if (status >= 0)
		goto out;
	if (g.args) {
		struct ta_visitor vis;

		g.rec.where = args_where;
		g.rec.where_ctx = &g;
		ta_argrec_visitor(&g.rec, &vis);
		if (ta_ctree_init(&g.paths) < 0) {
			fprintf(stderr, "traceagent: out of memory\n");
			status = 1;
			goto out;
		}
		if (ta_treeview_open_also(&g.tv, g.path, &g.o.tids, g.threads, &vis) < 0) {
			status = g.tv.v.status;
			goto out;
		}
	} else if (ta_treeview_open(&g.tv, g.path, &g.o.tids, g.threads) < 0) {
		status = g.tv.v.status;
		goto out;
	}
	status = g.tv.v.status;
	g.ct = &g.tv.ct;
	if (g.srcline) {
		g.sl = ta_srclines_new();
		ta_fn_index_srclines(&g.ct->fns, g.sl);
	}
	if (g.args && args_group(&g) < 0) {
		fprintf(stderr, "traceagent: %s: out of memory\n", g.path);
		status = 1;
		goto out;
	}
	if (g.function) {
		if (by_function(&g) < 0) {
			fprintf(stderr, "traceagent: %s: out of memory\n", g.path);
			status = 1;
		}
	} else {
		whole(&g);
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "traceagent: writing the graph: %s\n", strerror(errno));
		status = 1;
	}
out:
	ta_treeview_close(&g.tv);
	ta_srclines_free(g.sl);
	ta_tlopts_free(&g.o);
	ta_spaces_free(&g.indent);
	ta_argkeys_free(g.ak, g.nak);
	ta_argcalls_free(g.ac, g.nac);
	ta_ctree_free(&g.paths);
	ta_argrec_free(&g.rec);
	return status;
}
