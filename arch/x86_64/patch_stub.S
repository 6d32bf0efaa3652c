/* SPDX-License-Identifier: MIT */
/*
 * x86_64/patch_stub.S - the two pieces of code every function patched with the
 * return stub goes through (see agent/patch/patch.c; a function relocated
 * whole calls ta_patch_rel_on_enter/on_exit of patch_hot.c from its own
 * stubs instead), and the calls out that keep the registers.
 *
 * Both keep every register but rsp and rip as they found them, not only
 * those the ABI says a call preserves: GCC's interprocedural register
 * allocation (-fipa-ra) lets the caller of a static function keep values
 * in the caller-saved registers the callee is known not to touch.  The C
 * side (ta_patch_on_enter, ta_patch_on_return) is compiled to use no
 * vector register, so the stubs save only rax, rcx, rdx, rsi, rdi and
 * r8-r11; where it calls out (the ring's slow path, mapping a return
 * stack) ta_patch_vcall keeps xmm0-15 around the call.  Flags carry
 * nothing across a call boundary.  (The upper halves of ymm/zmm registers
 * are not saved: see docs/limits.md.)
 *
 * ta_patch_enter_common: called from a function's own stub,
 *     push %r11; movabs $desc, %r11; call *common; pop %r11; <trampoline>
 * so that [rsp] is the return into the stub, [rsp+8] the saved r11 and
 * [rsp+16] the function's return address, as at its entry.  It calls
 * ta_patch_on_enter(desc, &return address slot) and returns to the stub,
 * which restores r11 and falls into the relocated first instructions.
 *
 * ta_patch_ret_stub: where a patched function returns to, its return
 * address having been replaced.  It makes room for the real return
 * address where the ret popped it from, asks ta_patch_on_return for it
 * (with rax and the low half of xmm0, for a function whose return value
 * is recorded), and returns there: the stack ends as the function's ret
 * left it.
 *
 * Both realign the stack to 16 bytes themselves rather than assume the
 * caller did: a tail-called or asm-called function may be entered
 * misaligned.
 */
	.text

#define SAVE_SCRATCH(base)		\
	movq	%rax, base+0(%rsp);	\
	movq	%rcx, base+8(%rsp);	\
	movq	%rdx, base+16(%rsp);	\
	movq	%rsi, base+24(%rsp);	\
	movq	%rdi, base+32(%rsp);	\
	movq	%r8, base+40(%rsp);	\
	movq	%r9, base+48(%rsp);	\
	movq	%r10, base+56(%rsp);	\
	movq	%r11, base+64(%rsp)

#define RESTORE_SCRATCH(base)		\
	movq	base+0(%rsp), %rax;	\
	movq	base+8(%rsp), %rcx;	\
	movq	base+16(%rsp), %rdx;	\
	movq	base+24(%rsp), %rsi;	\
	movq	base+32(%rsp), %rdi;	\
	movq	base+40(%rsp), %r8;	\
	movq	base+48(%rsp), %r9;	\
	movq	base+56(%rsp), %r10;	\
	movq	base+64(%rsp), %r11

#define SAVE_XMM(base)			\
	movaps	%xmm0, base+0(%rsp);	\
	movaps	%xmm1, base+16(%rsp);	\
	movaps	%xmm2, base+32(%rsp);	\
	movaps	%xmm3, base+48(%rsp);	\
	movaps	%xmm4, base+64(%rsp);	\
	movaps	%xmm5, base+80(%rsp);	\
	movaps	%xmm6, base+96(%rsp);	\
	movaps	%xmm7, base+112(%rsp);	\
	movaps	%xmm8, base+128(%rsp);	\
	movaps	%xmm9, base+144(%rsp);	\
	movaps	%xmm10, base+160(%rsp);	\
	movaps	%xmm11, base+176(%rsp);	\
	movaps	%xmm12, base+192(%rsp);	\
	movaps	%xmm13, base+208(%rsp);	\
	movaps	%xmm14, base+224(%rsp);	\
	movaps	%xmm15, base+240(%rsp)

#define RESTORE_XMM(base)		\
	movaps	base+0(%rsp), %xmm0;	\
	movaps	base+16(%rsp), %xmm1;	\
	movaps	base+32(%rsp), %xmm2;	\
	movaps	base+48(%rsp), %xmm3;	\
	movaps	base+64(%rsp), %xmm4;	\
	movaps	base+80(%rsp), %xmm5;	\
	movaps	base+96(%rsp), %xmm6;	\
	movaps	base+112(%rsp), %xmm7;	\
	movaps	base+128(%rsp), %xmm8;	\
	movaps	base+144(%rsp), %xmm9;	\
	movaps	base+160(%rsp), %xmm10;	\
	movaps	base+176(%rsp), %xmm11;	\
	movaps	base+192(%rsp), %xmm12;	\
	movaps	base+208(%rsp), %xmm13;	\
	movaps	base+224(%rsp), %xmm14;	\
	movaps	base+240(%rsp), %xmm15

/* 9 registers (72 bytes, 80 with padding). */
#define FRAME 80

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
	subq	$FRAME, %rsp
	SAVE_SCRATCH(0)
	movq	%r11, %rdi
	leaq	24(%rbp), %rsi
	call	ta_patch_on_enter
	RESTORE_SCRATCH(0)
	movq	%rbp, %rsp
	popq	%rbp
	.cfi_def_cfa %rsp, 8
	ret
	.cfi_endproc
	.size	ta_patch_enter_common, .-ta_patch_enter_common

	.globl	ta_patch_ret_stub
	.hidden	ta_patch_ret_stub
	.type	ta_patch_ret_stub, @function
	.p2align 4
ta_patch_ret_stub:
	/* The ret that brought us here popped the slot at rsp - 8: the real
	 * return address goes back there. */
	subq	$8, %rsp
	pushq	%rbp
	movq	%rsp, %rbp
	andq	$-16, %rsp
	subq	$FRAME, %rsp
	SAVE_SCRATCH(0)
	leaq	8(%rbp), %rdi
	movq	%rax, %rsi
	movq	%xmm0, %rdx
	call	ta_patch_on_return
	movq	%rax, 8(%rbp)
	RESTORE_SCRATCH(0)
	movq	%rbp, %rsp
	popq	%rbp
	ret
	.size	ta_patch_ret_stub, .-ta_patch_ret_stub

/*
 * ta_patch_enter_args: ta_patch_enter_common's part for a function whose
 * arguments or return value are recorded (agent/argregs.h): the slot's
 * spec at TA_PATCH_SPEC_AT (128).  It keeps xmm0-15 as well (the
 * arguments in them, and args_hot.c is compiled as any C), hands
 * ta_patch_on_enter_args the spec and, when the enter was recorded,
 * ta_args_entry the argument registers as the entry found them.
 */
#define ARGS_XMM  80
#define ARGS_REGS 336	/* struct ta_argregs: gp[8], fp[8], sp */
#define ARGS_FRAME 480

	.globl	ta_patch_enter_args
	.hidden	ta_patch_enter_args
	.type	ta_patch_enter_args, @function
	.p2align 4
ta_patch_enter_args:
	.cfi_startproc
	pushq	%rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	movq	%rsp, %rbp
	.cfi_def_cfa_register %rbp
	andq	$-16, %rsp
	subq	$ARGS_FRAME, %rsp
	SAVE_SCRATCH(0)
	SAVE_XMM(ARGS_XMM)
	movq	%rdi, ARGS_REGS+0(%rsp)
	movq	%rsi, ARGS_REGS+8(%rsp)
	movq	%rdx, ARGS_REGS+16(%rsp)
	movq	%rcx, ARGS_REGS+24(%rsp)
	movq	%r8, ARGS_REGS+32(%rsp)
	movq	%r9, ARGS_REGS+40(%rsp)
	movq	$0, ARGS_REGS+48(%rsp)
	movq	$0, ARGS_REGS+56(%rsp)
	movq	%xmm0, ARGS_REGS+64(%rsp)
	movq	%xmm1, ARGS_REGS+72(%rsp)
	movq	%xmm2, ARGS_REGS+80(%rsp)
	movq	%xmm3, ARGS_REGS+88(%rsp)
	movq	%xmm4, ARGS_REGS+96(%rsp)
	movq	%xmm5, ARGS_REGS+104(%rsp)
	movq	%xmm6, ARGS_REGS+112(%rsp)
	movq	%xmm7, ARGS_REGS+120(%rsp)
	leaq	24(%rbp), %rsi
	movq	%rsi, ARGS_REGS+128(%rsp)
	movq	%r11, %rdi
	movq	128(%r11), %rdx
	call	ta_patch_on_enter_args
	testl	%eax, %eax
	je	1f
	movq	64(%rsp), %r11
	movq	128(%r11), %rdi
	leaq	ARGS_REGS(%rsp), %rsi
	call	ta_args_entry
1:
	RESTORE_XMM(ARGS_XMM)
	RESTORE_SCRATCH(0)
	movq	%rbp, %rsp
	popq	%rbp
	.cfi_def_cfa %rsp, 8
	ret
	.cfi_endproc
	.size	ta_patch_enter_args, .-ta_patch_enter_args

/* void ta_patch_args_return(spec, gp, fp): ta_args_return with xmm0-15
 * as they were (the return value in xmm0, and the caller's). */
	.globl	ta_patch_args_return
	.hidden	ta_patch_args_return
	.type	ta_patch_args_return, @function
	.p2align 4
ta_patch_args_return:
	.cfi_startproc
	pushq	%rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	movq	%rsp, %rbp
	.cfi_def_cfa_register %rbp
	andq	$-16, %rsp
	subq	$256, %rsp
	SAVE_XMM(0)
	call	ta_args_return
	RESTORE_XMM(0)
	movq	%rbp, %rsp
	popq	%rbp
	.cfi_def_cfa %rsp, 8
	ret
	.cfi_endproc
	.size	ta_patch_args_return, .-ta_patch_args_return

/* void *ta_patch_vcall(void *(*fn)(void *, void *), void *a, void *b):
 * fn(a, b), with xmm0-15 as they were. */
	.globl	ta_patch_vcall
	.hidden	ta_patch_vcall
	.type	ta_patch_vcall, @function
	.p2align 4
ta_patch_vcall:
	.cfi_startproc
	pushq	%rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	movq	%rsp, %rbp
	.cfi_def_cfa_register %rbp
	andq	$-16, %rsp
	subq	$256, %rsp
	SAVE_XMM(0)
	movq	%rdi, %rax
	movq	%rsi, %rdi
	movq	%rdx, %rsi
	call	*%rax
	RESTORE_XMM(0)
	movq	%rbp, %rsp
	popq	%rbp
	.cfi_def_cfa %rsp, 8
	ret
	.cfi_endproc
	.size	ta_patch_vcall, .-ta_patch_vcall

/* void ta_patch_record_slow(uint64_t addr, uint64_t ticks): the ring's
 * slow path, through ta_patch_vcall, keeping every register but rsp: the
 * hot functions of a relocated function (patch_hot.c) are declared
 * no_caller_saved_registers and save only what their fast path uses.
 * Realigns the stack (they may be entered misaligned). */
	.globl	ta_patch_record_slow
	.hidden	ta_patch_record_slow
	.type	ta_patch_record_slow, @function
	.p2align 4
ta_patch_record_slow:
	.cfi_startproc
	pushq	%rbp
	.cfi_def_cfa_offset 16
	.cfi_offset %rbp, -16
	movq	%rsp, %rbp
	.cfi_def_cfa_register %rbp
	andq	$-16, %rsp
	subq	$FRAME, %rsp
	SAVE_SCRATCH(0)
	movq	%rsi, %rdx
	movq	%rdi, %rsi
	leaq	ta_record_slow(%rip), %rdi
	call	ta_patch_vcall
	RESTORE_SCRATCH(0)
	movq	%rbp, %rsp
	popq	%rbp
	.cfi_def_cfa %rsp, 8
	ret
	.cfi_endproc
	.size	ta_patch_record_slow, .-ta_patch_record_slow

	.section .note.GNU-stack, "", @progbits
