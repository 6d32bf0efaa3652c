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

/* Touches rax only: a caller may count on the rest (GCC does so for
 * static functions, -fipa-ra), so the patch's stubs must keep every
 * other register. */
	.globl	ta_leaf
	.type	ta_leaf, @function
ta_leaf:
	movl	$7, %eax
	ret
	.size	ta_leaf, .-ta_leaf

/* Returns 1 if every caller-saved register but rax survived the call of
 * ta_leaf, else 0. */
	.globl	ta_keeper
	.type	ta_keeper, @function
ta_keeper:
	pushq	%rbx
	movq	$0x1111, %rcx
	movq	$0x2222, %rdx
	movq	$0x3333, %rsi
	movq	$0x4444, %rdi
	movq	$0x5555, %r8
	movq	$0x6666, %r9
	movq	$0x7777, %r10
	movq	$0x8888, %r11
	movq	%rcx, %xmm1
	movq	%rdx, %xmm7
	movq	%rsi, %xmm8
	movq	%rdi, %xmm15
	call	ta_leaf
	cmpq	$0x1111, %rcx
	jne	1f
	cmpq	$0x2222, %rdx
	jne	1f
	cmpq	$0x3333, %rsi
	jne	1f
	cmpq	$0x4444, %rdi
	jne	1f
	cmpq	$0x5555, %r8
	jne	1f
	cmpq	$0x6666, %r9
	jne	1f
	cmpq	$0x7777, %r10
	jne	1f
	cmpq	$0x8888, %r11
	jne	1f
	movq	%xmm1, %rbx
	cmpq	$0x1111, %rbx
	jne	1f
	movq	%xmm7, %rbx
	cmpq	$0x2222, %rbx
	jne	1f
	movq	%xmm8, %rbx
	cmpq	$0x3333, %rbx
	jne	1f
	movq	%xmm15, %rbx
	cmpq	$0x4444, %rbx
	jne	1f
	movl	$1, %eax
	popq	%rbx
	ret
1:	xorl	%eax, %eax
	popq	%rbx
	ret
	.size	ta_keeper, .-ta_keeper

/* Callee pops its argument (ret 8), as V8's builtins do: refused.
 * ta_retn_caller passes 5 and returns what ta_retn returns: 5. */
	.globl	ta_retn
	.type	ta_retn, @function
ta_retn:
	movq	8(%rsp), %rax
	ret	$8
	.size	ta_retn, .-ta_retn

	.globl	ta_retn_caller
	.type	ta_retn_caller, @function
ta_retn_caller:
	pushq	$5
	call	ta_retn
	ret
	.size	ta_retn_caller, .-ta_retn_caller

/* Reads its own return address (as __builtin_return_address(0) does):
 * refused, else it would see the return stub. */
	.globl	ta_whereami
	.type	ta_whereami, @function
ta_whereami:
	movq	(%rsp), %rax
	ret
	.size	ta_whereami, .-ta_whereami

/* GCC's hot/cold split, by hand: ta_hot jumps to ta_hot.cold, which is
 * not called: refused.  ta_hot(0) is 2, else 1. */
	.globl	ta_hot
	.type	ta_hot, @function
ta_hot:
	testl	%edi, %edi
	jz	ta_hot.cold
	movl	$1, %eax
	ret
	.size	ta_hot, .-ta_hot

	.type	ta_hot.cold, @function
ta_hot.cold:
	movl	$2, %eax
	ret
	.size	ta_hot.cold, .-ta_hot.cold

/* A RIP-relative SSE load first (capstone 4 gives no displacement offset
 * for it): patched, the displacement found by its bytes.  Returns 42. */
	.globl	ta_sse
	.type	ta_sse, @function
ta_sse:
	movdqa	sse_data(%rip), %xmm0
	movd	%xmm0, %eax
	ret
	.size	ta_sse, .-ta_sse

/* Tail calls, relocated whole: ta_tail(x) jumps to ta_leaf (7);
 * ta_ctail(x) jumps to ta_leaf when x != 0 (a conditional tail call),
 * else returns 3.  Their exits come before ta_leaf's entry. */
	.globl	ta_tail
	.type	ta_tail, @function
ta_tail:
	addq	$1, ta_tail_count(%rip)
	jmp	ta_leaf
	.size	ta_tail, .-ta_tail

	.globl	ta_ctail
	.type	ta_ctail, @function
ta_ctail:
	addq	$1, ta_tail_count(%rip)
	testl	%edi, %edi
	jnz	ta_leaf
	movl	$3, %eax
	ret
	.size	ta_ctail, .-ta_ctail

/* Takes its own address (as a function registering itself as a
 * callback does): relocated all the same, the address its entry's. */
	.globl	ta_selfaddr
	.type	ta_selfaddr, @function
ta_selfaddr:
	leaq	ta_selfaddr(%rip), %rax
	addq	$1, ta_tail_count(%rip)
	ret
	.size	ta_selfaddr, .-ta_selfaddr

/* A jump table (an indirect jump into its own body): not relocated, the
 * return stub instead.  ta_table(k) is 10 + k for k in 0..3. */
	.globl	ta_table
	.type	ta_table, @function
ta_table:
	addq	$1, ta_tail_count(%rip)
	andl	$3, %edi
	leaq	table(%rip), %rax
	jmp	*(%rax,%rdi,8)
1:	movl	$10, %eax
	ret
2:	movl	$11, %eax
	ret
3:	movl	$12, %eax
	ret
4:	movl	$13, %eax
	ret
	.size	ta_table, .-ta_table

/* ta_deep_ind(n): n + 1 nested calls with an indirect jump in each (so
 * with the return stub, whose depth is limited); returns n. */
	.globl	ta_deep_ind
	.type	ta_deep_ind, @function
ta_deep_ind:
	addq	$1, ta_deep_count(%rip)
	leaq	deep_next(%rip), %rax
	jmp	*(%rax)
5:	testl	%edi, %edi
	jz	6f
	pushq	%rdi
	subl	$1, %edi
	call	ta_deep_ind
	popq	%rdi
	addl	$1, %eax
	ret
6:	xorl	%eax, %eax
	ret
	.size	ta_deep_ind, .-ta_deep_ind

	.section .data.rel.ro, "aw"
	.p2align 3
table:
	.quad	1b, 2b, 3b, 4b
deep_next:
	.quad	5b

	.bss
	.p2align 3
	.globl	ta_tail_count, ta_deep_count
ta_tail_count:
	.zero	8
ta_deep_count:
	.zero	8

	.section .rodata
	.p2align 4
sse_data:
	.long	42, 0, 0, 0
	.p2align 2
forty_two:
	.long	42

	.section .note.GNU-stack, "", @progbits
