/* SPDX-License-Identifier: MIT */
/*
 * args_copy.c - copying a string argument whatever its pointer, from the
 * hot path: no system call, no lock, and never a fault the program sees.
 *
 * The copy is a byte loop in assembly whose one load is at a known
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
 * at all (TA_ARGS_UNCHECKED, ta_args_guarded); so is a string where the
 * agent runs without its crash handlers.  What remains (docs/arguments.md):
 * a bad pointer met while the thread blocks SIGSEGV (a signal handler
 * whose mask holds it) kills the process, as the kernel does with any
 * fault it cannot deliver.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <ucontext.h>

#include "args.h"

#if defined(__x86_64__)
/* rdi dst, rsi src, edx max; eax: the count, or -1. */
__asm__(".text\n"
	".globl ta_args_copy_str\n"
	".hidden ta_args_copy_str\n"
	".type ta_args_copy_str, @function\n"
	".p2align 4\n"
	"ta_args_copy_str:\n"
	"	xorl %eax, %eax\n"
	"	testl %edx, %edx\n"
	"	je 2f\n"
	"1:\n"
	".globl ta_args_copy_load\n"
	".hidden ta_args_copy_load\n"
	"ta_args_copy_load:\n"
	"	movzbl (%rsi,%rax), %ecx\n"
	"	testb %cl, %cl\n"
	"	je 2f\n"
	"	movb %cl, (%rdi,%rax)\n"
	"	addq $1, %rax\n"
	"	cmpl %edx, %eax\n"
	"	jb 1b\n"
	"2:\n"
	"	ret\n"
	".globl ta_args_copy_failed\n"
	".hidden ta_args_copy_failed\n"
	"ta_args_copy_failed:\n"
	"	movl $-1, %eax\n"
	"	ret\n"
	".size ta_args_copy_str, .-ta_args_copy_str\n");
#define TA_ARGS_COPY_ASM 1
#define UC_PC(uc)	 ((uc)->uc_mcontext.gregs[REG_RIP])
#elif defined(__aarch64__)
/* x0 dst, x1 src, w2 max; w0: the count, or -1. */
__asm__(".text\n"
	".globl ta_args_copy_str\n"
	".hidden ta_args_copy_str\n"
	".type ta_args_copy_str, %function\n"
	".p2align 4\n"
	"ta_args_copy_str:\n"
	"	mov x3, #0\n"
	"	cbz w2, 2f\n"
	"1:\n"
	".globl ta_args_copy_load\n"
	".hidden ta_args_copy_load\n"
	"ta_args_copy_load:\n"
	"	ldrb w4, [x1, x3]\n"
	"	cbz w4, 2f\n"
	"	strb w4, [x0, x3]\n"
	"	add x3, x3, #1\n"
	"	cmp w3, w2\n"
	"	b.lo 1b\n"
	"2:\n"
	"	mov w0, w3\n"
	"	ret\n"
	".globl ta_args_copy_failed\n"
	".hidden ta_args_copy_failed\n"
	"ta_args_copy_failed:\n"
	"	mov w0, #-1\n"
	"	ret\n"
	".size ta_args_copy_str, .-ta_args_copy_str\n");
#define TA_ARGS_COPY_ASM 1
#define UC_PC(uc)	 ((uc)->uc_mcontext.pc)
#endif

#if TA_ARGS_COPY_ASM
extern const char ta_args_copy_load[] TA_HIDDEN;
extern const char ta_args_copy_failed[] TA_HIDDEN;

int ta_args_fixup(int sig, void *ucv)
{
	ucontext_t *uc = ucv;

	if ((sig != SIGSEGV && sig != SIGBUS) || !uc ||
	    (uintptr_t)UC_PC(uc) != (uintptr_t)ta_args_copy_load)
		return 0;
	UC_PC(uc) = (uintptr_t)ta_args_copy_failed;
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
