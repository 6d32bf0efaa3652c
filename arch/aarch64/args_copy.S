/* SPDX-License-Identifier: MIT */
/*
 * aarch64/args_copy.S - int ta_args_copy_str(char *dst, const char *src,
 * uint32_t max): the copy of a string argument whose one load,
 * ta_args_copy_load, may fault; the agent's handler then resumes at
 * ta_args_copy_failed, which returns -1 (agent/args_copy.c says why).
 * x0 dst, x1 src, w2 max; w0: the bytes before the NUL (max if none).
 */
	.text
	.globl	ta_args_copy_str
	.hidden	ta_args_copy_str
	.type	ta_args_copy_str, %function
	.p2align 4
ta_args_copy_str:
	mov	x3, #0
	cbz	w2, 2f
1:
	.globl	ta_args_copy_load
	.hidden	ta_args_copy_load
ta_args_copy_load:
	ldrb	w4, [x1, x3]
	cbz	w4, 2f
	strb	w4, [x0, x3]
	add	x3, x3, #1
	cmp	w3, w2
	b.lo	1b
2:
	mov	w0, w3
	ret
	.globl	ta_args_copy_failed
	.hidden	ta_args_copy_failed
ta_args_copy_failed:
	mov	w0, #-1
	ret
	.size	ta_args_copy_str, .-ta_args_copy_str

	.section .note.GNU-stack, "", %progbits
