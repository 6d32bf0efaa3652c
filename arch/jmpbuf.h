/* SPDX-License-Identifier: MIT */
/*
 * jmpbuf.h - the stack pointer a glibc jmp_buf restores, read through the
 * pointer mangling of the architecture (arch/<cpu>/jmpbuf.c, where
 * TA_ARCH_HAS_JMPBUF_SP).
 */
#ifndef TA_ARCH_JMPBUF_H
#define TA_ARCH_JMPBUF_H

#include <setjmp.h>
#include <stdint.h>

/* The stack pointer env restores, unmangled as glibc mangles it; 0 if not
 * known.  find_setjmp gives libc's _setjmp (NULL if none), for an
 * architecture that learns the mangling by calling it once. */
uintptr_t ta_arch_jmpbuf_sp(const struct __jmp_buf_tag *env, void *(*find_setjmp)(void))
    __attribute__((visibility("hidden")));

#endif
