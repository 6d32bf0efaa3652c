/* SPDX-License-Identifier: MIT */
/*
 * patch_asm.S - functions crafted for the patcher's refusals (patchme.c).
 */
	.text

/* One byte: too short for a 5-byte jump. */
	.globl	ta_short
	.type	ta_short, @function
ta_short:
	ret
	.size	ta_short, .-ta_short

/* A loop back to its second instruction, inside the first 5 bytes:
 * returns n (n >= 1). */
	.globl	ta_jump_in
	.type	ta_jump_in, @function
ta_jump_in:
	xorl	%eax, %eax
1:	addl	$1, %eax
	cmpl	%edi, %eax
	jl	1b
	ret
	.size	ta_jump_in, .-ta_jump_in

/* jrcxz has no 32-bit form: it cannot be moved.  Returns 1 if n is 0,
 * else n + 2. */
	.globl	ta_jrcxz
	.type	ta_jrcxz, @function
ta_jrcxz:
	movq	%rdi, %rcx
	jrcxz	1f
	leaq	2(%rdi), %rax
	ret
1:	movl	$1, %eax
	ret
	.size	ta_jrcxz, .-ta_jrcxz

/* A RIP-relative load first: patched, its displacement rewritten.
 * Returns 42. */
	.globl	ta_ripload
	.type	ta_ripload, @function
ta_ripload:
	movl	forty_two(%rip), %eax
	ret
	.size	ta_ripload, .-ta_ripload

	.section .rodata
	.p2align 2
forty_two:
	.long	42

	.section .note.GNU-stack, "", @progbits
