/* SPDX-License-Identifier: MIT */
/*
 * x86_64/arch.h - what x86-64 offers (the list: arch.h).
 */
#ifndef TA_ARCH_X86_64_H
#define TA_ARCH_X86_64_H

#include <stdint.h>

#define TA_ARCH_NAME "x86_64"
/* The names (EM_*, R_*) are <elf.h>'s, expanded where they are used.  x32
 * (ILP32) as the loader has always told it. */
#define TA_ARCH_ELF_MACHINE (sizeof(void *) == 8 ? EM_X86_64 : EM_386)
#define TA_ARCH_R_JUMP_SLOT R_X86_64_JUMP_SLOT
#define TA_ARCH_R_GLOB_DAT  R_X86_64_GLOB_DAT

#define TA_ARCH_HAS_COUNTER  1
#define TA_ARCH_CLOCK_SOURCE TA_CLOCK_RDTSC
static inline __attribute__((always_inline)) uint64_t ta_arch_counter(void)
{
	uint32_t lo, hi;

	/* Plain rdtsc, not rdtscp or lfence;rdtsc: ordering against the
	 * traced code costs ~20 cycles and buys nothing at function
	 * granularity.  The TSC is invariant on every CPU we target. */
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return (uint64_t)hi << 32 | lo;
}

/* The TSC's frequency is stated nowhere a process can read it. */
static inline uint64_t ta_arch_counter_hz(void)
{
	return 0;
}

/* A compare with memory, a branch and a store: no flag or register lives
 * between them that a signal handler could see half set. */
#define TA_ARCH_HAS_CLAIM_ASM 1
#define TA_ARCH_CLAIM(word, label)                                                                 \
	__asm__ goto("cmpq $0, %0\n\tjne %l[" #label "]\n\tmovq %%rsp, %0"                         \
		     :                                                                             \
		     : "m"(word)                                                                   \
		     : "cc", "memory"                                                              \
		     : label)
#define TA_ARCH_READ_SP(v) __asm__("movq %%rsp, %0" : "=r"(v))

/* One instruction from the base register, the index register and a
 * constant.  prefetchw is a NOP on x86 CPUs without it. */
#define TA_ARCH_HAS_PREFETCHW 1
#define TA_ARCH_PREFETCHW(base, index, disp)                                                       \
	__asm__("prefetchw %c2(%0,%1)" : : "r"(base), "r"(index), "i"(disp))

#define TA_ARCH_DLOPEN_TLS_ALIGN 64

/* _Ux86_64_getcontext, in libunwind itself. */
#define TA_ARCH_UNW_GETCONTEXT_CALL 1

#define TA_ARCH_HAS_SETJMP_TRAMPOLINES 1
#define TA_ARCH_HAS_JMPBUF_SP	       1

#define TA_ARCH_HAS_PATCHING 1
#define TA_ARCH_KEEPS_REGS   __attribute__((no_caller_saved_registers))

#define TA_ARCH_CODE_FIXED_WORDS 0
#define TA_ARCH_HAS_HOOKPATCH	 1

#define TA_ARCH_HAS_INJECT 1
#define TA_ARCH_PTRACE_H   "x86_64/regs.h"

#define TA_ARCH_HAS_CRC32C 1

#define TA_ARCH_HAS_ARGS_COPY 1
#define TA_ARCH_UC_PC(uc)     ((uc)->uc_mcontext.gregs[REG_RIP])
#define TA_ARCH_GP_ARG_REGS   6

#endif
