/* SPDX-License-Identifier: MIT */
/*
 * argsgroup.h - the calls whose arguments were recorded, gathered during a
 * walk and grouped by the arguments' values: what `report --args` (by
 * function) and `graph --args` (by call path) share.
 *
 * A walk keeps each such call (its values, its duration, where the view
 * counts it); at the end the values become text as replay shows them,
 * once the modules are known (an enum's name comes from its DWARF), and
 * the calls are grouped by (key, text).  Memory grows with those calls
 * only.
 */
#ifndef TA_ARGSGROUP_H
#define TA_ARGSGROUP_H

#include <stddef.h>
#include <stdint.h>

#include "argsview.h"
#include "calltree.h"
#include "session.h"

/* One call with arguments, as the walk left it. */
struct ta_argrec_call {
	uint32_t pid;
	uint64_t addr;
	uint64_t *v; /* the TA_EXT_ARGS values */
	uint32_t nv;
	uint64_t ticks; /* its duration */
	uint64_t where; /* what where() said */
};

struct ta_argrec {
	struct ta_argstack *stacks; /* by thread index */
	size_t nstacks;
	struct ta_callargs ca;
	struct ta_argrec_call *c;
	size_t n, cap;
	int nomem;
	/* NULL, or where the view counts a call, asked at its exit (its
	 * thread's stack still holds its callers); 0 leaves the call out. */
	uint64_t (*where)(void *ctx, const struct ta_sess_thread *t, const struct ta_exit_info *x);
	void *where_ctx;
};

/* A visitor (*v overwritten) that gathers the calls into r, which must be
 * zeroed but for where and where_ctx.  Calls still open at the end are
 * left out. */
void ta_argrec_visitor(struct ta_argrec *r, struct ta_visitor *v);
void ta_argrec_free(struct ta_argrec *r);

/* A call as the views show it. */
struct ta_argcall {
	uint64_t key; /* what it is grouped under: where() at first */
	int64_t fn;   /* its function's id in the index, -1 without memory */
	char *text;   /* its arguments as replay shows them, "2, \"abc\"" */
	uint64_t ns;  /* its duration */
};

/*
 * The r->n calls of r shown (their values freed from r): an array the
 * caller frees with ta_argcalls_free, or NULL without memory.  fi names
 * the functions (in v).
 */
struct ta_argcall *ta_argrec_calls(struct ta_argrec *r, struct ta_view *v, struct ta_fn_index *fi);
void ta_argcalls_free(struct ta_argcall *c, size_t n);

/* A value's calls: [first, first + calls) of the sorted calls. */
struct ta_argvalue {
	size_t first, calls;
	uint64_t total;
};

/* A key's calls [first, first + n) and its values, most total first. */
struct ta_argkey {
	uint64_t key;
	size_t first, n;
	uint64_t total;
	struct ta_argvalue *g;
	size_t ng, gcap;
};

/* How a key's values are ordered. */
enum ta_argorder {
	TA_ARGS_BY_TOTAL, /* the most total first, then more calls, then by text */
	TA_ARGS_BY_CALLS  /* the most calls first, then by text */
};

/*
 * Sorts the n calls by key, text and duration and groups them: *out gets
 * one ta_argkey per key (keys ascending) for which keep(ctx, key) says 1
 * (keep NULL: all), each with its values in order.  Returns 0, or -1
 * without memory (*out then holds what was done; free it anyway).
 */
int ta_argcalls_group(struct ta_argcall *c, size_t n, enum ta_argorder order,
		      int (*keep)(void *ctx, uint64_t key), void *ctx, struct ta_argkey **out,
		      size_t *nout);
void ta_argkeys_free(struct ta_argkey *k, size_t n);
/* Key key's group among the n of k (ascending), or NULL. */
const struct ta_argkey *ta_argkeys_find(const struct ta_argkey *k, size_t n, uint64_t key);

/* The nearest-rank percentile q (of 100) of value g's durations. */
uint64_t ta_argvalue_pct(const struct ta_argcall *c, const struct ta_argvalue *g, unsigned q);

#endif /* TA_ARGSGROUP_H */
