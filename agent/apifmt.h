/* SPDX-License-Identifier: MIT */
/*
 * apifmt.h - TA_MESSAGE's formatting (apifmt.c): printf's conversions,
 * made safe for a program's format string.
 */
#ifndef TA_APIFMT_H
#define TA_APIFMT_H

#include <stdarg.h>
#include <stddef.h>

#include "compiler.h"

/* fmt with ap's arguments into out (at most cap bytes, no NUL): its
 * length, *cut 1 when the text did not fit or a conversion was cut.  The
 * caller holds the re-entry guard (snprintf is called). */
size_t ta_api_format(char *out, size_t cap, int *cut, const char *fmt, va_list ap) TA_HIDDEN;

#endif
