/* SPDX-License-Identifier: MIT */
/*
 * args_copy.c - copying a string argument whatever its pointer, from the
 * hot path: no system call, no lock, and never a fault the program sees.
 *
 * The copy is a byte loop in assembly (arch/MACHINE/args_copy.S) whose one
 * load is at a known
 * address, as the Linux kernel's copy_from_user with its exception table:
 * a load that faults (an unmapped page, a pointer into nothing, a page
 * unmapped by another thread between any check and the load) raises
 * SIGSEGV or SIGBUS, the agent's handler (crash.c) finds the faulting pc
 * at that load (ta_args_fixup) and resumes the copy at its failure exit,
 * which returns -1.  Nothing is asked of the kernel beforehand and no map
 * of the address space is kept, so memory mapped a moment ago is read and
 * memory unmapped a moment ago is not.
 *
 * The handler must be there: the agent holds SIGSEGV and SIGBUS where
 * their action is the default (crash.c).  A program that installs its own
 * handler for either takes them over, and its strings are then not read
 * at all (TA_ARGS_UNCHECKED, ta_crash_fault_guard); so is a string where the
 * agent runs without its crash handlers.  What remains (docs/arguments.md):
 * a bad pointer met while the thread blocks SIGSEGV (a signal handler
 * whose mask holds it) kills the process, as the kernel does with any
 * fault it cannot deliver.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <ucontext.h>

#include "arch.h"
#include "args.h"

#if TA_ARCH_HAS_ARGS_COPY
extern const char ta_args_copy_load[] TA_HIDDEN;
extern const char ta_args_copy_failed[] TA_HIDDEN;

int ta_args_fixup(int sig, void *ucv)
{
	ucontext_t *uc = ucv;

	if ((sig != SIGSEGV && sig != SIGBUS) || !uc ||
	    (uintptr_t)TA_ARCH_UC_PC(uc) != (uintptr_t)ta_args_copy_load)
		return 0;
	TA_ARCH_UC_PC(uc) = (uintptr_t)ta_args_copy_failed;
	return 1;
}
#else
/* No copy without its fixup: strings are not read here. */
int ta_args_copy_str(char *dst, const char *src, uint32_t max)
{
	(void)dst;
	(void)src;
	(void)max;
	return -2;
}

int ta_args_fixup(int sig, void *uc)
{
	(void)sig;
	(void)uc;
	return 0;
}
#endif
