/* SPDX-License-Identifier: MIT */
/*
 * patch.h - what the patcher (patch.c), its hot path (patch_hot.c, built
 * with -mgeneral-regs-only) and its stubs (patch_stub.S) share.  x86-64.
 */
#ifndef TA_PATCH_H
#define TA_PATCH_H

#include <stdint.h>

#include "ring.h"

/* Patched frames a thread keeps return addresses for; deeper ones are
 * entered and counted, their exits not recorded. */
#define TA_PATCH_RSTACK_DEPTH 1024

/* A patched function's descriptor, the first word of its slot in the
 * pool (patch.c); the stub passes its address. */
struct ta_patch_desc {
	uint64_t fn; /* entry address, recorded as the event's */
};

/* patch_stub.S */
void ta_patch_enter_common(void) TA_HIDDEN;
void ta_patch_ret_stub(void) TA_HIDDEN;
/* Calls fn(a, b) keeping xmm0-15. */
void *ta_patch_vcall(void *(*fn)(void *, void *), void *a, void *b) TA_HIDDEN;
/* ta_record_slow through ta_patch_vcall. */
void ta_patch_record_slow(uint64_t addr, uint64_t ticks) TA_HIDDEN;

/* patch_hot.c: called by the stubs with only the general-purpose
 * registers saved. */
void ta_patch_on_enter(const struct ta_patch_desc *d, uint64_t *slot) TA_HIDDEN;
uint64_t ta_patch_on_return(uint64_t slot) TA_HIDDEN;
/* Creates the thread key that unmaps a thread's return stack; 0 or -1. */
int ta_patch_hot_init(void) TA_HIDDEN;
/* Calls of patched functions whose exits could not be recorded (relaxed). */
extern uint64_t ta_patch_frames_without_exit TA_HIDDEN;

#endif
