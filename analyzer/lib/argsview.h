/* SPDX-License-Identifier: MIT */
/*
 * argsview.h - recorded arguments and return values (format.h's
 * TA_EXT_ARGS and TA_EXT_RETVAL) for the views: decoded, kept for the
 * call they belong to while its thread's walk goes on, and written as
 * replay shows them ("2", "0x1f", "\"abc\"", "NULL").
 */
#ifndef TA_ARGSVIEW_H
#define TA_ARGSVIEW_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "format.h"

struct ta_argval {
	unsigned fmt, size, reg, fp, state, cut, len;
	uint64_t raw;	  /* the register's bits (a string's pointer) */
	const char *str;  /* a copied string's len bytes (not NUL-terminated) */
	const char *name; /* an enum value's name (the views find it), or NULL */
};

#define TA_CALLARGS_MAX 64

/* What one call carried. */
struct ta_callargs {
	uint32_t nargs;
	int has_ret;
	struct ta_argval a[TA_CALLARGS_MAX];
	struct ta_argval ret;
	char bytes[2 * TA_EXT_READ_MAX * 8]; /* the strings of a and ret */
};

/*
 * Decodes the items of one event (v[0..n)) into out[0..max) and the
 * strings' bytes into buf[*used..size); returns the count, or -1 when the
 * values are not items (what is wrong in *why).
 */
int ta_args_decode(const uint64_t *v, uint32_t n, struct ta_argval *out, uint32_t max, char *buf,
		   size_t size, size_t *used, const char **why);

/* The value's bits as a signed integer of its size. */
int64_t ta_argval_signed(const struct ta_argval *a);
/* The value as replay shows it. */
void ta_argval_print(FILE *f, const struct ta_argval *a);
/* The same, into buf (cut to size). */
const char *ta_argval_text(const struct ta_argval *a, char *buf, size_t size);
/* "2, \"abc\"": a call's arguments, as replay shows them between parens. */
void ta_callargs_print(FILE *f, const struct ta_callargs *ca);
/* The argument's name for the exports: "arg1", "fparg2", "retval". */
const char *ta_argval_name(const struct ta_argval *a, char *buf, size_t size);

/* The call's args as JSON members, "\"arg1\": \"2\", \"retval\": \"5\""
 * (each value the text replay shows): malloc'd, NULL without memory. */
char *ta_callargs_json(const struct ta_callargs *ca);

/* The same as lines "arg1\t2\n" (the texts have no tab nor newline:
 * they are escaped). */
char *ta_callargs_lines(const struct ta_callargs *ca);

/* ---- the calls open on a thread: their events wait for their ends ---- */

struct ta_argframe {
	uint64_t enter; /* the call's enter, in ticks: which call of that depth */
	int has_a, has_r;
	uint64_t *av, *rv;
	uint32_t an, rn, acap, rcap;
};

struct ta_argstack {
	struct ta_argframe *f; /* by depth */
	size_t n;
};

/* Keeps an event (kind TA_EXT_ARGS or TA_EXT_RETVAL) for the call at
 * depth (its index on the thread's stack) that entered at enter: 0, or -1
 * without memory. */
int ta_argstack_put(struct ta_argstack *s, uint32_t depth, uint64_t enter, uint64_t kind,
		    const uint64_t *v, uint32_t n);
/* The call's arguments decoded into out: 1, 0 when it has none (or they
 * are damaged: not shown). */
int ta_argstack_get(const struct ta_argstack *s, uint32_t depth, uint64_t enter,
		    struct ta_callargs *out);
void ta_argstack_free(struct ta_argstack *s);

#endif
