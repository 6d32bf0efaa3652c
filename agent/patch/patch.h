/* SPDX-License-Identifier: MIT */
/*
 * patch.h - dynamic patching: what it offers the rest of the agent (on
 * every architecture; without patching, patch_none.c's stand-ins), then what
 * the patcher (patch.c), its hot path (patch_hot.c, built with
 * -mgeneral-regs-only) and its stubs (patch_stub.S) share.  x86-64.
 */
#ifndef TA_PATCH_H
#define TA_PATCH_H

#include <stddef.h>
#include <stdint.h>

#include "arch.h"
#include "compiler.h"

/* ---- for the agent ------------------------------------------------------------------ */

/* The calling thread's patched frames get their real return addresses
 * back and are forgotten (before pthread_exit unwinds them, or a crash
 * handler walks them); record_exits: they end now (pthread_exit). */
void ta_patch_restore(int record_exits) TA_HIDDEN;
/* Before a C++ throw: the unwinder sees the real return addresses (the
 * frames are kept); after the catch, whose callee's return slot is at
 * `limit`, the frames unwound are exited and the others patched again. */
void ta_patch_unwind_begin(void) TA_HIDDEN;
void ta_patch_unwind_caught(uint64_t limit) TA_HIDDEN;
/* For a crash's backtrace: the address in the original code of pc in the
 * copy of a function relocated whole, or 0.  first: pc is where a thread
 * was stopped (else a return address, which is not translated into bytes
 * the patch replaced).  Async-signal-safe. */
uint64_t ta_patch_orig_pc(uint64_t pc, int first) TA_HIDDEN;
/* Writes the PATCH chunk (cumulative) when patching is on. */
void ta_patch_dump(void) TA_HIDDEN;
/* At the end: says on stderr what could not be recorded. */
void ta_patch_report_end(void) TA_HIDDEN;
/* After a dlopen: patches what the patterns name in the new modules. */
void ta_patch_after_dlopen(void) TA_HIDDEN;
/* After a dlclose: forgets the modules unloaded, to patch them again if
 * they come back. */
void ta_patch_after_dlclose(void) TA_HIDDEN;

/* `traceagent attach --patch` (attach.c): plans the patches of the
 * loaded modules not planned yet in this window, forgetting those
 * dlclose'd (threads running; returns how many new, -EAGAIN while a
 * dlopen is under way, or another -errno), writes the ones not written yet
 * while the loader has every thread stopped (no lock, no allocation; an
 * entry with a thread stopped inside its bytes is left alone for the next
 * commit; returns how many were written), puts the old bytes back
 * (threads stopped again), and forgets the modules patched so that a
 * later attach patches them anew. */
int ta_patch_attach_prepare(const char *spec) TA_HIDDEN;
int ta_patch_attach_commit(const uint64_t *pcs, size_t npcs) TA_HIDDEN;
void ta_patch_attach_restore(void) TA_HIDDEN;
void ta_patch_attach_forget(void) TA_HIDDEN;
/* ---- the patcher's own parts -------------------------------------------------------- */

/* Patched frames a thread keeps return addresses for; deeper ones are
 * entered and counted, their exits not recorded. */
#define TA_PATCH_RSTACK_DEPTH 1024

/* A patched function's descriptor, the first word of its slot in the
 * pool (patch.c); the stub passes its address. */
struct ta_patch_desc {
	uint64_t fn; /* entry address, recorded as the event's */
};

/* What the stubs call keeps every register it may use itself (where
 * patching is; elsewhere these are never called). */
#define TA_PATCH_KEEPS_REGS TA_ARCH_KEEPS_REGS

/* arch/x86_64/patch_stub.S */
void ta_patch_enter_common(void) TA_HIDDEN;
void ta_patch_ret_stub(void) TA_HIDDEN;
/* Calls fn(a, b) keeping xmm0-15. */
void *ta_patch_vcall(void *(*fn)(void *, void *), void *a, void *b) TA_HIDDEN;
/* ta_record_slow through ta_patch_vcall, keeping every register but rsp. */
void ta_patch_record_slow(uint64_t addr, uint64_t ticks) TA_HIDDEN TA_PATCH_KEEPS_REGS;

/* patch_hot.c: called by the stubs with only the general-purpose
 * registers saved. */
void ta_patch_on_enter(const struct ta_patch_desc *d, uint64_t *slot) TA_HIDDEN;
/* The same for a function whose arguments are recorded (argregs.h): its
 * return calls ta_patch_args_return before its EXIT. */
struct ta_argspec;
void ta_patch_on_enter_spec(const struct ta_patch_desc *d, uint64_t *slot,
			    const struct ta_argspec *spec) TA_HIDDEN;
/* gp, fp: the return registers as the function left them (argregs.h). */
uint64_t ta_patch_on_return(uint64_t slot, uint64_t gp, uint64_t fp) TA_HIDDEN;
/* Through ta_patch_vcall: ta_args_return(spec, v[0], v[1]) (patchent.c,
 * built with the vector registers). */
void *ta_patch_args_return(void *spec, void *v) TA_HIDDEN;
/* A function relocated whole: its entry, its exits. */
void ta_patch_rel_on_enter(uint64_t fn) TA_HIDDEN TA_PATCH_KEEPS_REGS;
void ta_patch_rel_on_exit(uint64_t fn) TA_HIDDEN TA_PATCH_KEEPS_REGS;
/* Creates the thread key that unmaps a thread's return stack; 0 or -1. */
int ta_patch_hot_init(void) TA_HIDDEN;
/* Calls of patched functions whose exits could not be recorded (relaxed). */
extern uint64_t ta_patch_frames_without_exit TA_HIDDEN;

#endif
