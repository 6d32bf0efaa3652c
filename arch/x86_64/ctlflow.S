/* SPDX-License-Identifier: MIT */
/*
 * x86_64/ctlflow.S - the setjmp family's trampolines (see agent/ctlflow.c).
 *
 * setjmp saves its caller's callee-saved registers, stack pointer and
 * return address, and returns a second time through them: a C wrapper would
 * save its own frame instead, which is gone when longjmp comes back.  Each
 * trampoline keeps the argument registers, calls ta_ctl_setjmp_hook(env,
 * which) to record the marker and get the real function, puts the stack
 * back exactly as it found it and jumps there: the real setjmp sees the
 * caller's return address at (%rsp) and the caller's registers (the hook
 * preserves the callee-saved ones, and the caller expects the others to be
 * clobbered by a call anyway).  The numbers are ctlflow.c's REAL_*.
 */
	.text

.macro TRAMPOLINE name, which
	.globl \name
	.type \name, @function
	.p2align 4
\name:
	.cfi_startproc
	endbr64
	pushq %rdi			/* env */
	.cfi_adjust_cfa_offset 8
	pushq %rsi			/* savemask of __sigsetjmp */
	.cfi_adjust_cfa_offset 8
	subq $8, %rsp			/* %rsp is 16-byte aligned for the call */
	.cfi_adjust_cfa_offset 8
	movl $\which, %esi
	call ta_ctl_setjmp_hook
	addq $8, %rsp
	.cfi_adjust_cfa_offset -8
	popq %rsi
	.cfi_adjust_cfa_offset -8
	popq %rdi
	.cfi_adjust_cfa_offset -8
	jmp *%rax			/* the real one, with the caller's stack */
	.cfi_endproc
	.size \name, . - \name
.endm

	TRAMPOLINE _setjmp, 0
	TRAMPOLINE setjmp, 1
	TRAMPOLINE __sigsetjmp, 2

	.section .note.GNU-stack, "", @progbits
