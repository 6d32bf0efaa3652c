/* SPDX-License-Identifier: MIT */
/*
 * format_int.h - what the format library's files share and nothing outside
 * the library uses: the shadow stack's growth (the encoder grows the stack
 * in its runs as ta_stack_push does) and branch hints.
 */
#ifndef TA_FORMAT_INT_H
#define TA_FORMAT_INT_H

#include "format.h"

#define TA_LIKELY_(x)	__builtin_expect(!!(x), 1)
#define TA_UNLIKELY_(x) __builtin_expect(!!(x), 0)

/* Capacity for need frames (need <= TA_STACK_MAX), doubled from 64: 0 or
 * -TA_E_NOMEM, the stack as it was. */
int ta_stack_grow(struct ta_stack *s, size_t need);

#endif
