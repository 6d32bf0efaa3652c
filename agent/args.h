/* SPDX-License-Identifier: MIT */
/*
 * args.h - what the parts of the argument recorder share: a function's spec
 * (args.c parses the settings into specs), the hot path that records what
 * a spec asks (args_hot.c), and the fault-safe copy of a string
 * (args_copy.c).  The patchers see only argregs.h.
 */
#ifndef TA_ARGS_H
#define TA_ARGS_H

#include <stdint.h>

#include "compiler.h"
#include "format.h"

struct ta_patterns;

/* One argument or the return value, as asked: a format (TA_ARGF_*), the
 * value's size in bytes, the register (1-based among the integer or the
 * floating-point ones; 0 for the return value) and whether it is a
 * floating-point one. */
struct ta_argitem {
	uint8_t fmt, size, reg, fp;
};

#define TA_ARGS_MAX_ITEMS 16

struct ta_argspec {
	uint8_t nargs, has_ret;
	struct ta_argitem a[TA_ARGS_MAX_ITEMS];
	struct ta_argitem ret;
};

/* The most bytes of a string kept (TRACEAGENT_ARGS_STRLEN), read when the
 * specs are parsed. */
extern uint32_t ta_args_strmax TA_HIDDEN;

/* Adds the patterns of TRACEAGENT_ARGS and TRACEAGENT_RETVAL to ps (the
 * functions the patcher patches); returns how many were added. */
size_t ta_args_add_patterns(struct ta_patterns *ps) TA_HIDDEN;
/* Parses the settings again: those of the attach that is starting
 * (ta_settings_attach), which replace what was asked before.  Only where
 * no patching runs meanwhile: an injected agent patches in the attach's
 * plans alone (ta_attach_patch_prepare), after its start.  The specs of
 * the functions patched before are copies, and stay. */
void ta_args_reload(void) TA_HIDDEN;
/* Whether any argument or return value is asked. */
int ta_args_wanted(void) TA_HIDDEN;

/* Copies the NUL-terminated string at src into dst, at most max bytes;
 * returns how many bytes before the NUL were copied (max when none was
 * met), or -1 when src (or a byte of it before the NUL) cannot be read.
 * Never faults: a fault in the copy is taken by the agent's SIGSEGV and
 * SIGBUS handler (ta_args_fixup), where it holds those signals
 * (ta_crash_fault_guard); elsewhere nothing is read and -2 is returned. */
int ta_args_copy_str(char *dst, const char *src, uint32_t max) TA_HIDDEN;
/* From the agent's SIGSEGV/SIGBUS handler: 1 if the fault is the copy's
 * (uc is then set to resume at its failure exit), else 0. */
int ta_args_fixup(int sig, void *uc) TA_HIDDEN;

#endif
