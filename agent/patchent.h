/* SPDX-License-Identifier: MIT */
/*
 * patchent.h - tracing builds made with -fpatchable-function-entry=N[,M]
 * (patchent.c): the no-op areas the compiler left at each function's entry,
 * listed by the module's __patchable_function_entries section, are given a
 * jump to a per-function stub at start (TRACEAGENT_PATCH), after a dlopen,
 * and by `traceagent attach --patch`, and put back byte for byte at detach.
 * No disassembler: a no-op area needs no relocation.
 *
 * The rest of the agent calls it through the patcher's entries (patch.c
 * where capstone is, patch_none.c elsewhere), which leave the modules it
 * owns (those with the section) to it.  Then the part of the patcher the
 * architecture's entry encoding (patchent_x86.c, patchent_a64.c) and the
 * stubs share.
 */
#ifndef TA_PATCHENT_H
#define TA_PATCHENT_H

#include <stddef.h>
#include <stdint.h>

#include "compiler.h"
#include "ta_config.h"

struct ta_buf;
struct ta_module;

/* ---- for the patcher's entries ---------------------------------------------------- */

/* At start: patches what spec (TRACEAGENT_PATCH) names in the modules that
 * have the section, says one summary line when any was, and returns how
 * many functions were patched or refused (0: nothing for it to do). */
uint64_t ta_patchent_start(const char *spec) TA_HIDDEN;
/* Whether module m has a __patchable_function_entries section: the other
 * patcher leaves it alone. */
int ta_patchent_owns(const struct ta_module *m) TA_HIDDEN;
/* After a dlopen / dlclose (the interposers, through patch.c). */
void ta_patchent_after_dlopen(void) TA_HIDDEN;
void ta_patchent_after_dlclose(void) TA_HIDDEN;
/* For the PATCH chunk: the functions patched and refused, and the first
 * `count` refused as the chunk lists them. */
void ta_patchent_counts(uint64_t *patched, uint64_t *refused) TA_HIDDEN;
void ta_patchent_put_refusals(struct ta_buf *b, uint64_t count) TA_HIDDEN;
/* The PATCH chunk of a build without the other patcher. */
void ta_patchent_dump(void) TA_HIDDEN;
/* `attach --patch`, as ta_patch_attach_* (patch.h). */
int ta_patchent_attach_prepare(const char *spec) TA_HIDDEN;
int ta_patchent_attach_commit(const uint64_t *pcs, size_t npcs) TA_HIDDEN;
void ta_patchent_attach_restore(void) TA_HIDDEN;
void ta_patchent_attach_forget(void) TA_HIDDEN;

/* ---- the patcher's own parts ------------------------------------------------------ */

/* Refusals, numbered after patch_int.h's (the PATCH chunk carries the text). */
#define TA_PE_REFUSALS(X)                                                                          \
	X(NONE, 14, "no patchable entry (a function built without one)")                           \
	X(OUTSIDE, 15, "its __patchable_function_entries address is outside the module's code")    \
	X(ROOM, 16, "its patchable entry has no room for a jump")                                  \
	X(NOT_NOPS, 17, "its patchable entry is not no-ops (patched already, or a breakpoint)")    \
	X(NO_MEMORY, 6, "no memory for a stub within reach")

enum ta_pe_refusal {
#define TA_X(name, code, text) TA_PE_##name = code,
	TA_PE_REFUSALS(TA_X)
#undef TA_X
};

/* Bytes written at a function: at most two places (the entry, and the
 * no-ops before the symbol that a short jump at the entry leads to). */
struct ta_pe_site {
	uint64_t at;
	unsigned len;
	uint8_t orig[16], repl[16];
};

struct ta_pe_plan {
	uint64_t fn;	 /* the symbol: the events' address */
	uint64_t resume; /* where the stub goes back to */
	uint64_t from;	 /* the branch to the stub, in site[0] */
	struct ta_pe_site site[2];
	unsigned nsite;
};

/* A function's slot in the pool: its descriptor (struct ta_patch_desc),
 * the common entry its stub calls, its argument spec, then its stub. */
#define TA_PE_SLOT_SIZE 64

/* patchent_x86.c / patchent_a64.c: the area of the function at fn whose
 * __patchable_function_entries address is area (size: the symbol's),
 * planned: 0, or a refusal. */
unsigned ta_pe_arch_plan(uint64_t area, uint64_t fn, uint64_t size,
			 struct ta_pe_plan *pl) TA_HIDDEN;
/* The stub in slot (its first 24 bytes written by the caller) and the
 * branch to it in the plan's sites: 0, or TA_PE_NO_MEMORY when out of
 * reach. */
unsigned ta_pe_arch_emit(struct ta_pe_plan *pl, uint8_t *slot) TA_HIDDEN;
/* How far a branch from the code reaches its stub. */
extern const uint64_t ta_pe_arch_reach TA_HIDDEN;
/* After code was written: the instruction cache made coherent. */
void ta_pe_arch_flush(uint64_t at, size_t len) TA_HIDDEN;

/* The common entry of a function with an argument spec (the arch's stub
 * file): saves the argument registers for patchent.c's
 * ta_patchent_on_enter_args. */
void ta_patchent_enter_args(void) TA_HIDDEN;
struct ta_patch_desc;
struct ta_argregs;
void ta_patchent_on_enter_args(const struct ta_patch_desc *d, uint64_t *slot,
			       const struct ta_argregs *r) TA_HIDDEN;

#endif
