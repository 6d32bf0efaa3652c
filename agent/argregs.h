/* SPDX-License-Identifier: MIT */
/*
 * argregs.h - what an entry stub hands to the recording of arguments and
 * return values (args.c): the meeting point of the patchers (agent/patch,
 * patchable-entry builds) and the argument recorder, which know nothing
 * else of each other.
 *
 * Whether a function's arguments are recorded is decided once, when it is
 * patched (ta_args_find), never per call: a function without a spec keeps
 * the plain stub and pays nothing.  A function with one gets a stub that
 * saves the registers below and calls ta_args_entry after the function's
 * ENTER is appended, and ta_args_return before its EXIT: so the EXT events
 * describe the call on top of the thread's stack, as a library call's do.
 */
#ifndef TA_ARGREGS_H
#define TA_ARGREGS_H

#include <stdint.h>

#include "compiler.h"

/* The argument registers as the function's entry found them. */
struct ta_argregs {
	uint64_t gp[8]; /* x86-64: rdi rsi rdx rcx r8 r9 (gp[6], gp[7] unused); aarch64: x0-x7 */
	uint64_t fp[8]; /* the low 64 bits of xmm0-7 (x86-64) or of v0-v7 (aarch64) */
	uint64_t sp;	/* the stack pointer at entry (x86-64: [sp] is the return address) */
};

struct ta_argspec;

/*
 * The spec of the function at fn (its symbol `name`, NULL when unknown), or
 * NULL when none of its arguments nor its return value is asked.  Called by
 * the patchers outside any hook (they may allocate); the spec lives until
 * the process ends.
 */
const struct ta_argspec *ta_args_find(uint64_t fn, const char *name) TA_HIDDEN;

/* From a stub, on the thread that entered: records the arguments the spec
 * asks from r.  Hook rules: no lock, no syscall, no allocation. */
void ta_args_entry(const struct ta_argspec *spec, const struct ta_argregs *r) TA_HIDDEN;

/* From a stub, before the EXIT is appended: the return registers (x86-64
 * rax and the low 64 bits of xmm0; aarch64 x0 and d0).  Hook rules. */
void ta_args_return(const struct ta_argspec *spec, uint64_t gp, uint64_t fp) TA_HIDDEN;

#endif
