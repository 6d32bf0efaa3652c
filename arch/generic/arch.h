/* SPDX-License-Identifier: MIT */
/*
 * generic/arch.h - a machine traceagent has no code for: it builds and
 * records with the vDSO clock, without attach, patching or the setjmp
 * trampolines (the list: arch.h).
 */
#ifndef TA_ARCH_GENERIC_H
#define TA_ARCH_GENERIC_H

#include <stdint.h>

#define TA_ARCH_NAME "generic"
/* The machine the agent (built with this compiler) runs on, where known:
 * record refuses a program of another. */
#if defined(__i386__)
#define TA_ARCH_ELF_MACHINE EM_386
#elif defined(__arm__)
#define TA_ARCH_ELF_MACHINE EM_ARM
#elif defined(__riscv)
#define TA_ARCH_ELF_MACHINE EM_RISCV
#elif defined(__powerpc64__)
#define TA_ARCH_ELF_MACHINE EM_PPC64
#elif defined(__s390x__)
#define TA_ARCH_ELF_MACHINE EM_S390
#endif

#define TA_ARCH_HAS_COUNTER	 0
#define TA_ARCH_HAS_CLAIM_ASM	 0
#define TA_ARCH_READ_SP(v)	 ((v) = (uintptr_t)__builtin_frame_address(0))
#define TA_ARCH_HAS_PREFETCHW	 0
#define TA_ARCH_DLOPEN_TLS_ALIGN 64

#define TA_ARCH_UNW_GETCONTEXT_CALL    0
#define TA_ARCH_HAS_SETJMP_TRAMPOLINES 0
#define TA_ARCH_HAS_JMPBUF_SP	       0
#define TA_ARCH_HAS_PATCHING	       0
#define TA_ARCH_KEEPS_REGS
#define TA_ARCH_CODE_FIXED_WORDS 0
#define TA_ARCH_HAS_HOOKPATCH	 0
#define TA_ARCH_HAS_INJECT	 0
#define TA_ARCH_HAS_CRC32C	 0
#define TA_ARCH_HAS_ARGS_COPY	 0
#define TA_ARCH_GP_ARG_REGS	 8

#endif
