/* SPDX-License-Identifier: MIT */
/*
 * aarch64/ctlflow.S - the setjmp family's trampolines (see agent/ctlflow.c
 * and x86_64/ctlflow.S for why they are not C).
 *
 * The caller's return address is in x30 and its frame pointer in x29: both
 * are saved around the call to ta_ctl_setjmp_hook(env, which) with the
 * argument registers, and restored, with sp, before the jump to the real
 * function through x16 (a register a `bti c` landing pad accepts an
 * indirect branch from).  The hook preserves x19-x28 and d8-d15.  The
 * numbers are ctlflow.c's REAL_*.
 */
	.text

/* A frame record of `size` bytes (x29, x30 at its bottom), with its CFI;
 * FRAME_POP takes it down. */
.macro FRAME_PUSH size
	hint #34			/* bti c */
	stp x29, x30, [sp, #-\size]!
	.cfi_def_cfa_offset \size
	.cfi_offset 29, -\size
	.cfi_offset 30, -(\size - 8)
	mov x29, sp
.endm

.macro FRAME_POP size
	ldp x29, x30, [sp], #\size
	.cfi_restore 29
	.cfi_restore 30
	.cfi_def_cfa_offset 0
.endm

.macro TRAMPOLINE name, which
	.globl \name
	.type \name, %function
	.p2align 2
\name:
	.cfi_startproc
	FRAME_PUSH 32
	stp x0, x1, [sp, #16]		/* env, savemask of __sigsetjmp */
	mov w1, #\which
	bl ta_ctl_setjmp_hook
	mov x16, x0
	ldp x0, x1, [sp, #16]
	FRAME_POP 32
	br x16				/* the real one, with the caller's sp and x30 */
	.cfi_endproc
	.size \name, . - \name
.endm

	TRAMPOLINE _setjmp, 0
	TRAMPOLINE setjmp, 1
	TRAMPOLINE __sigsetjmp, 2

/* uintptr_t ta_jmp_probe(void *buf, void *setjmp_fn): calls the real
 * _setjmp on buf and returns the sp it was called with, which glibc stores
 * mangled; ctlflow.c works out the pointer guard from the two. */
	.globl ta_jmp_probe
	.hidden ta_jmp_probe
	.globl ta_jmp_probe_ret
	.hidden ta_jmp_probe_ret
	.type ta_jmp_probe, %function
	.p2align 2
ta_jmp_probe:
	.cfi_startproc
	FRAME_PUSH 16
	blr x1
ta_jmp_probe_ret:
	mov x0, sp			/* as it was at the blr */
	FRAME_POP 16
	ret
	.cfi_endproc
	.size ta_jmp_probe, . - ta_jmp_probe

	.section .note.GNU-stack, "", %progbits
