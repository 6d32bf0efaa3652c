/* SPDX-License-Identifier: MIT */
/*
 * argsgroup.c - calls with recorded arguments gathered during a walk,
 * shown as replay shows them and grouped by value (argsgroup.h).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "argsdwarf.h"
#include "argsgroup.h"
#include "grow.h"

static struct ta_argstack *stack_of(struct ta_argrec *r, const struct ta_sess_thread *t)
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

static void rec_ext(void *ctx, struct ta_sess_thread *t, uint64_t ticks, uint64_t kind,
		    const uint64_t *values, uint32_t n)
{
	struct ta_argrec *r = ctx;
	struct ta_argstack *s;

	(void)ticks;
	if (kind != TA_EXT_ARGS || t->depth == 0)
		return;
	s = stack_of(r, t);
	if (!s ||
	    ta_argstack_put(s, t->depth - 1, t->stack[t->depth - 1].enter, kind, values, n) < 0)
		r->nomem = 1;
}

static void rec_exit(void *ctx, struct ta_sess_thread *t, const struct ta_exit_info *x)
{
	struct ta_argrec *r = ctx;
	struct ta_argstack *s = t->index < r->nstacks ? &r->stacks[t->index] : NULL;
	const struct ta_argframe *f;
	struct ta_argrec_call *c;
	uint64_t where = 0;
	uint64_t *v;

	if (!s || !ta_argstack_get(s, x->depth, x->enter, &r->ca) || !r->ca.nargs ||
	    (x->flags & TA_VISIT_OPEN))
		return;
	if (r->where && !(where = r->where(r->where_ctx, t, x)))
		return;
	f = &s->f[x->depth];
	v = malloc((size_t)f->an * sizeof(*v));
	if (!v || !(c = ta_vec_reserve(r->c, r->n + 1, &r->cap, sizeof(*c), 256))) {
		free(v);
		r->nomem = 1;
		return;
	}
	memcpy(v, f->av, (size_t)f->an * sizeof(*v));
	r->c = c;
	c[r->n] = (struct ta_argrec_call){.pid = t->pid,
					  .addr = x->addr,
					  .v = v,
					  .nv = f->an,
					  .ticks = x->duration,
					  .where = where};
	r->n++;
}

void ta_argrec_visitor(struct ta_argrec *r, struct ta_visitor *v)
{
	memset(v, 0, sizeof(*v));
	v->ctx = r;
	v->exit = rec_exit;
	v->ext = rec_ext;
}

void ta_argrec_free(struct ta_argrec *r)
{
	for (size_t i = 0; i < r->n; i++)
		free(r->c[i].v);
	free(r->c);
	for (size_t i = 0; i < r->nstacks; i++)
		ta_argstack_free(&r->stacks[i]);
	free(r->stacks);
	r->c = NULL;
	r->stacks = NULL;
	r->n = r->nstacks = 0;
}

/* The arguments of call c as replay shows them (NULL without memory). */
static char *args_text(struct ta_argrec *r, struct ta_fn_index *fi, struct ta_enumcache **enums,
		       const struct ta_argrec_call *c, int64_t id)
{
	const char *why;
	char *text = NULL;
	size_t len = 0, used = 0;
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

struct ta_argcall *ta_argrec_calls(struct ta_argrec *r, struct ta_view *v, struct ta_fn_index *fi)
{
	struct ta_argcall *out = calloc(r->n ? r->n : 1, sizeof(*out));
	struct ta_enumcache *enums = NULL;

	if (!out)
		return NULL;
	for (size_t i = 0; i < r->n; i++) {
		struct ta_argrec_call *c = &r->c[i];
		const struct ta_process *p = ta_session_process(v->s, c->pid);

		out[i].key = c->where;
		out[i].fn = ta_fn_index_id(fi, c->pid, c->addr);
		out[i].ns = p ? ta_process_dur_ns(p, c->ticks) : c->ticks;
		out[i].text = args_text(r, fi, &enums, c, out[i].fn);
		free(c->v);
		c->v = NULL;
		if (!out[i].text) {
			ta_argcalls_free(out, r->n);
			out = NULL;
			break;
		}
	}
	ta_enumcache_free(enums);
	return out;
}

void ta_argcalls_free(struct ta_argcall *c, size_t n)
{
	if (!c)
		return;
	for (size_t i = 0; i < n; i++)
		free(c[i].text);
	free(c);
}

static int call_cmp(const void *a, const void *b)
{
	const struct ta_argcall *x = a, *y = b;
	int k;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	k = strcmp(x->text, y->text);
	if (k)
		return k;
	return x->ns < y->ns ? -1 : x->ns > y->ns;
}

/* Most total first; then more calls; then the text's order (first). */
static int by_total(const void *a, const void *b)
{
	const struct ta_argvalue *x = a, *y = b;

	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	if (x->calls != y->calls)
		return x->calls > y->calls ? -1 : 1;
	return x->first < y->first ? -1 : x->first > y->first;
}

/* Most calls first; then the text's order. */
static int by_calls(const void *a, const void *b)
{
	const struct ta_argvalue *x = a, *y = b;

	if (x->calls != y->calls)
		return x->calls > y->calls ? -1 : 1;
	return x->first < y->first ? -1 : x->first > y->first;
}

/* The values of calls [k->first, k->first + k->n). */
static int key_values(struct ta_argkey *k, const struct ta_argcall *c, enum ta_argorder order)
{
	size_t end = k->first + k->n;

	for (size_t i = k->first; i < end;) {
		size_t e = i;
		struct ta_argvalue *g;

		while (e < end && !strcmp(c[e].text, c[i].text))
			e++;
		g = ta_vec_reserve(k->g, k->ng + 1, &k->gcap, sizeof(*g), 8);
		if (!g)
			return -1;
		k->g = g;
		g = &k->g[k->ng++];
		g->first = i;
		g->calls = e - i;
		g->total = 0;
		for (size_t q = i; q < e; q++)
			g->total += c[q].ns;
		k->total += g->total;
		i = e;
	}
	qsort(k->g, k->ng, sizeof(*k->g), order == TA_ARGS_BY_CALLS ? by_calls : by_total);
	return 0;
}

int ta_argcalls_group(struct ta_argcall *c, size_t n, enum ta_argorder order,
		      int (*keep)(void *ctx, uint64_t key), void *ctx, struct ta_argkey **out,
		      size_t *nout)
{
	size_t cap = 0;

	*out = NULL;
	*nout = 0;
	qsort(c, n, sizeof(*c), call_cmp);
	for (size_t i = 0; i < n;) {
		size_t j = i;
		struct ta_argkey *k;

		while (j < n && c[j].key == c[i].key)
			j++;
		if (keep && !keep(ctx, c[i].key)) {
			i = j;
			continue;
		}
		k = ta_vec_reserve(*out, *nout + 1, &cap, sizeof(*k), 16);
		if (!k)
			return -1;
		*out = k;
		k = &k[(*nout)++];
		memset(k, 0, sizeof(*k));
		k->key = c[i].key;
		k->first = i;
		k->n = j - i;
		if (key_values(k, c, order) < 0)
			return -1;
		i = j;
	}
	return 0;
}

void ta_argkeys_free(struct ta_argkey *k, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(k[i].g);
	free(k);
}

const struct ta_argkey *ta_argkeys_find(const struct ta_argkey *k, size_t n, uint64_t key)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (k[mid].key == key)
			return &k[mid];
		if (k[mid].key < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

uint64_t ta_argvalue_pct(const struct ta_argcall *c, const struct ta_argvalue *g, unsigned q)
{
	size_t k = (g->calls * q + 99) / 100;

	return c[g->first + (k ? k - 1 : 0)].ns;
}
