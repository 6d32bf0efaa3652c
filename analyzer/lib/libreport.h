/* SPDX-License-Identifier: MIT */
/*
 * libreport.h - the library calls' own numbers (report --alloc, --locks,
 * --io), gathered by a visitor that wraps another one.
 */
#ifndef TA_LIBREPORT_H
#define TA_LIBREPORT_H

#include <stdio.h>

#include "common.h"

struct ta_libstats;

/* A visitor (*out) that gathers the library calls' numbers and passes
 * every visit on to inner (may be NULL).  v is the view the dump is read
 * into (its session is used while reading).  NULL without memory. */
struct ta_libstats *ta_libstats_new(struct ta_view *v, const struct ta_visitor *inner,
				    struct ta_visitor *out);
void ta_libstats_free(struct ta_libstats *ls);
/* Prints the sections of the TA_LC_* classes in what (alloc, lock, io) as
 * text or as one JSON object to out, the first top rows of each table
 * (0: all); -1 without memory.  Totals count every row. */
int ta_libstats_print(struct ta_libstats *ls, unsigned what, int json, uint64_t top, FILE *out);

#endif
