/* SPDX-License-Identifier: MIT */
/*
 * x86_64/args_copy.S - int ta_args_copy_str(char *dst, const char *src,
 * uint32_t max): the copy of a string argument whose one load,
 * ta_args_copy_load, may fault; the agent's handler then resumes at
 * ta_args_copy_failed, which returns -1 (agent/args_copy.c says why).
 * rdi dst, rsi src, edx max; eax: the bytes before the NUL (max if none).
 */
	.text
	.globl	ta_args_copy_str
	.hidden	ta_args_copy_str
	.type	ta_args_copy_str, @function
	.p2align 4
ta_args_copy_str:
	xorl	%eax, %eax
	testl	%edx, %edx
	je	2f
1:
	.globl	ta_args_copy_load
	.hidden	ta_args_copy_load
ta_args_copy_load:
	movzbl	(%rsi,%rax), %ecx
	testb	%cl, %cl
	je	2f
	movb	%cl, (%rdi,%rax)
	addq	$1, %rax
	cmpl	%edx, %eax
	jb	1b
2:
	ret
	.globl	ta_args_copy_failed
	.hidden	ta_args_copy_failed
ta_args_copy_failed:
	movl	$-1, %eax
	ret
	.size	ta_args_copy_str, .-ta_args_copy_str

	.section .note.GNU-stack, "", @progbits
