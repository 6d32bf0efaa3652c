/* SPDX-License-Identifier: MIT */
/*
 * x86_64/patchent_stub.S - the common entry of a function patched at its
 * patchable entry (agent/patchent.c) whose arguments are recorded
 * (agent/argregs.h).  Its stub calls it as the return stub's patcher calls
 * ta_patch_enter_common (patch_stub.S):
 *     push %r11; movabs $desc, %r11; call *common; pop %r11; jmp back
 * so that [rsp+16] is the function's return address.  It keeps every
 * register but rsp and rip (the reasons are patch_stub.S's), vector
 * registers included: the argument recorder is ordinary C.  It fills a
 * struct ta_argregs with the argument registers as the function's entry
 * found them and calls ta_patchent_on_enter_args(desc, &return address
 * slot, &regs).  Functions without a spec call ta_patch_enter_common and
 * pay nothing of this.
 */
	.text

/* 9 scratch registers (80 bytes), xmm0-15 (256), struct ta_argregs (136,
 * 144 with padding). */
#define GP   0
#define XMM  80
#define ARGS 336
#define SIZE 480

	.globl	ta_patchent_enter_args
	.hidden	ta_patchent_enter_args
	.type	ta_patchent_enter_args, @function
	.p2align 4
ta_patchent_enter_args:
	.cfi_startproc
	pushq	%rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	movq	%rsp, %rbp
	.cfi_def_cfa_register %rbp
	andq	$-16, %rsp
	subq	$SIZE, %rsp
	movq	%rax, GP+0(%rsp)
	movq	%rcx, GP+8(%rsp)
	movq	%rdx, GP+16(%rsp)
	movq	%rsi, GP+24(%rsp)
	movq	%rdi, GP+32(%rsp)
	movq	%r8, GP+40(%rsp)
	movq	%r9, GP+48(%rsp)
	movq	%r10, GP+56(%rsp)
	movq	%r11, GP+64(%rsp)
	movaps	%xmm0, XMM+0(%rsp)
	movaps	%xmm1, XMM+16(%rsp)
	movaps	%xmm2, XMM+32(%rsp)
	movaps	%xmm3, XMM+48(%rsp)
	movaps	%xmm4, XMM+64(%rsp)
	movaps	%xmm5, XMM+80(%rsp)
	movaps	%xmm6, XMM+96(%rsp)
	movaps	%xmm7, XMM+112(%rsp)
	movaps	%xmm8, XMM+128(%rsp)
	movaps	%xmm9, XMM+144(%rsp)
	movaps	%xmm10, XMM+160(%rsp)
	movaps	%xmm11, XMM+176(%rsp)
	movaps	%xmm12, XMM+192(%rsp)
	movaps	%xmm13, XMM+208(%rsp)
	movaps	%xmm14, XMM+224(%rsp)
	movaps	%xmm15, XMM+240(%rsp)
	/* struct ta_argregs: gp[8], fp[8], sp */
	movq	%rdi, ARGS+0(%rsp)
	movq	%rsi, ARGS+8(%rsp)
	movq	%rdx, ARGS+16(%rsp)
	movq	%rcx, ARGS+24(%rsp)
	movq	%r8, ARGS+32(%rsp)
	movq	%r9, ARGS+40(%rsp)
	movq	$0, ARGS+48(%rsp)
	movq	$0, ARGS+56(%rsp)
	movq	%xmm0, ARGS+64(%rsp)
	movq	%xmm1, ARGS+72(%rsp)
	movq	%xmm2, ARGS+80(%rsp)
	movq	%xmm3, ARGS+88(%rsp)
	movq	%xmm4, ARGS+96(%rsp)
	movq	%xmm5, ARGS+104(%rsp)
	movq	%xmm6, ARGS+112(%rsp)
	movq	%xmm7, ARGS+120(%rsp)
	leaq	24(%rbp), %rsi
	movq	%rsi, ARGS+128(%rsp)
	movq	%r11, %rdi
	leaq	ARGS(%rsp), %rdx
	call	ta_patchent_on_enter_args
	movaps	XMM+0(%rsp), %xmm0
	movaps	XMM+16(%rsp), %xmm1
	movaps	XMM+32(%rsp), %xmm2
	movaps	XMM+48(%rsp), %xmm3
	movaps	XMM+64(%rsp), %xmm4
	movaps	XMM+80(%rsp), %xmm5
	movaps	XMM+96(%rsp), %xmm6
	movaps	XMM+112(%rsp), %xmm7
	movaps	XMM+128(%rsp), %xmm8
	movaps	XMM+144(%rsp), %xmm9
	movaps	XMM+160(%rsp), %xmm10
	movaps	XMM+176(%rsp), %xmm11
	movaps	XMM+192(%rsp), %xmm12
	movaps	XMM+208(%rsp), %xmm13
	movaps	XMM+224(%rsp), %xmm14
	movaps	XMM+240(%rsp), %xmm15
	movq	GP+0(%rsp), %rax
	movq	GP+8(%rsp), %rcx
	movq	GP+16(%rsp), %rdx
	movq	GP+24(%rsp), %rsi
	movq	GP+32(%rsp), %rdi
	movq	GP+40(%rsp), %r8
	movq	GP+48(%rsp), %r9
	movq	GP+56(%rsp), %r10
	movq	GP+64(%rsp), %r11
	movq	%rbp, %rsp
	popq	%rbp
	.cfi_def_cfa %rsp, 8
	ret
	.cfi_endproc
	.size	ta_patchent_enter_args, .-ta_patchent_enter_args

	.section .note.GNU-stack, "", @progbits
