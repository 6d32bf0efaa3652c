/* SPDX-License-Identifier: MIT */
/*
 * ctlflow_aarch64.S - the setjmp family's trampolines (see ctlflow.c and
 * ctlflow_x86_64.S for why they are not C).
 *
 * The caller's return address is in x30 and its frame pointer in x29: both
 * are saved around the call to ta_ctl_setjmp_hook(env, which) with the
 * argument registers, and restored, with sp, before the jump to the real
 * function through x16 (a register a `bti c` landing pad accepts an
 * indirect branch from).  The hook preserves x19-x28 and d8-d15.  The
 * numbers are ctlflow.c's REAL_*.
 */
	.text

.macro TRAMPOLINE name, which
	.globl \name
	.type \name, %function
	.p2align 2
\name:
	.cfi_startproc
	hint #34			/* bti c */
	stp x29, x30, [sp, #-32]!
	.cfi_def_cfa_offset 32
	.cfi_offset 29, -32
	.cfi_offset 30, -24
	mov x29, sp
	stp x0, x1, [sp, #16]		/* env, savemask of __sigsetjmp */
	mov w1, #\which
	bl ta_ctl_setjmp_hook
	mov x16, x0
	ldp x0, x1, [sp, #16]
	ldp x29, x30, [sp], #32
	.cfi_restore 29
	.cfi_restore 30
	.cfi_def_cfa_offset 0
	br x16				/* the real one, with the caller's sp and x30 */
	.cfi_endproc
	.size \name, . - \name
.endm

	TRAMPOLINE _setjmp, 0
	TRAMPOLINE setjmp, 1
	TRAMPOLINE __sigsetjmp, 2

	.section .note.GNU-stack, "", %progbits
