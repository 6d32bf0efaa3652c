/* SPDX-License-Identifier: MIT */
/*
 * patch_stub.S - the two pieces of code every patched function goes
 * through (x86-64 only; see patch.c).
 *
 * ta_patch_enter_common: reached by a jmp from a function's own stub, with
 * r11 = the function's descriptor {entry address, trampoline} and the
 * caller's return address on top of the stack, exactly as at the
 * function's entry.  It saves everything the function may receive (the six
 * integer argument registers, rax for a varargs call's vector count, r10
 * for a static chain, xmm0-7), calls ta_patch_on_enter with the descriptor
 * and the address of the return-address slot, restores it all and jumps to
 * the trampoline (the relocated first instructions).  Flags carry nothing
 * into a function (the ABI), so they are not kept.
 *
 * ta_patch_ret_stub: where a patched function returns to, its return
 * address having been replaced.  It keeps the return values (rax, rdx,
 * xmm0, xmm1; the x87 stack is not touched by the C side), asks
 * ta_patch_on_return for the real return address of the frame whose slot
 * was just popped, and jumps there with the stack as the ret left it.
 *
 * Both realign the stack to 16 bytes themselves rather than assume the
 * caller did: a tail-called or asm-called function may be entered
 * misaligned.
 */
	.text

	.globl	ta_patch_enter_common
	.hidden	ta_patch_enter_common
	.type	ta_patch_enter_common, @function
	.p2align 4
ta_patch_enter_common:
	.cfi_startproc
	pushq	%rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	movq	%rsp, %rbp
	.cfi_def_cfa_register %rbp
	andq	$-16, %rsp
	subq	$208, %rsp
	movq	%rdi, 0(%rsp)
	movq	%rsi, 8(%rsp)
	movq	%rdx, 16(%rsp)
	movq	%rcx, 24(%rsp)
	movq	%r8, 32(%rsp)
	movq	%r9, 40(%rsp)
	movq	%rax, 48(%rsp)
	movq	%r10, 56(%rsp)
	movq	%r11, 64(%rsp)
	movaps	%xmm0, 80(%rsp)
	movaps	%xmm1, 96(%rsp)
	movaps	%xmm2, 112(%rsp)
	movaps	%xmm3, 128(%rsp)
	movaps	%xmm4, 144(%rsp)
	movaps	%xmm5, 160(%rsp)
	movaps	%xmm6, 176(%rsp)
	movaps	%xmm7, 192(%rsp)
	movq	%r11, %rdi
	leaq	8(%rbp), %rsi
	call	ta_patch_on_enter
	movq	0(%rsp), %rdi
	movq	8(%rsp), %rsi
	movq	16(%rsp), %rdx
	movq	24(%rsp), %rcx
	movq	32(%rsp), %r8
	movq	40(%rsp), %r9
	movq	48(%rsp), %rax
	movq	56(%rsp), %r10
	movq	64(%rsp), %r11
	movaps	80(%rsp), %xmm0
	movaps	96(%rsp), %xmm1
	movaps	112(%rsp), %xmm2
	movaps	128(%rsp), %xmm3
	movaps	144(%rsp), %xmm4
	movaps	160(%rsp), %xmm5
	movaps	176(%rsp), %xmm6
	movaps	192(%rsp), %xmm7
	movq	%rbp, %rsp
	popq	%rbp
	.cfi_def_cfa %rsp, 8
	jmpq	*8(%r11)
	.cfi_endproc
	.size	ta_patch_enter_common, .-ta_patch_enter_common

	.globl	ta_patch_ret_stub
	.hidden	ta_patch_ret_stub
	.type	ta_patch_ret_stub, @function
	.p2align 4
ta_patch_ret_stub:
	/* The ret that brought us here popped the slot at rsp - 8; the push
	 * below reuses it. */
	pushq	%rbp
	movq	%rsp, %rbp
	andq	$-16, %rsp
	subq	$48, %rsp
	movq	%rax, 0(%rsp)
	movq	%rdx, 8(%rsp)
	movaps	%xmm0, 16(%rsp)
	movaps	%xmm1, 32(%rsp)
	movq	%rbp, %rdi
	call	ta_patch_on_return
	movq	%rax, %r11
	movq	0(%rsp), %rax
	movq	8(%rsp), %rdx
	movaps	16(%rsp), %xmm0
	movaps	32(%rsp), %xmm1
	movq	%rbp, %rsp
	popq	%rbp
	jmpq	*%r11
	.size	ta_patch_ret_stub, .-ta_patch_ret_stub

	.section .note.GNU-stack, "", @progbits
