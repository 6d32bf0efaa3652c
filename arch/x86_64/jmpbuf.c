/* SPDX-License-Identifier: MIT */
/*
 * x86_64/jmpbuf.c - a jmp_buf's stack pointer (arch/jmpbuf.h).
 */
#include "jmpbuf.h"

/* glibc's PTR_MANGLE: xor with the guard in the thread control block at
 * %fs:0x30, then rotate left 17; the saved rsp is the jmp_buf's word 6. */
uintptr_t ta_arch_jmpbuf_sp(const struct __jmp_buf_tag *env, void *(*find_setjmp)(void))
{
	uintptr_t v = (uintptr_t)env->__jmpbuf[6], guard;

	(void)find_setjmp;
	__asm__("movq %%fs:0x30, %0" : "=r"(guard));
	return (v >> 17 | v << 47) ^ guard;
}
