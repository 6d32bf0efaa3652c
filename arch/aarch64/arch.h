/* SPDX-License-Identifier: MIT */
/*
 * aarch64/arch.h - what 64-bit Arm offers (the list: arch.h).
 */
#ifndef TA_ARCH_AARCH64_H
#define TA_ARCH_AARCH64_H

#include <stdint.h>

#define TA_ARCH_NAME "aarch64"
/* The names (EM_*, R_*) are <elf.h>'s, expanded where they are used. */
#define TA_ARCH_ELF_MACHINE EM_AARCH64
#define TA_ARCH_R_JUMP_SLOT R_AARCH64_JUMP_SLOT
#define TA_ARCH_R_GLOB_DAT  R_AARCH64_GLOB_DAT

#define TA_ARCH_HAS_COUNTER  1
#define TA_ARCH_CLOCK_SOURCE TA_CLOCK_CNTVCT
static inline __attribute__((always_inline)) uint64_t ta_arch_counter(void)
{
	uint64_t v;

	/* The isb keeps the counter read from being speculated ahead of
	 * the code before the hook. */
	__asm__ volatile("isb\n\tmrs %0, cntvct_el0" : "=r"(v)::"memory");
	return v;
}

/* CNTFRQ_EL0: the frequency the firmware states. */
static inline uint64_t ta_arch_counter_hz(void)
{
	uint64_t hz;

	__asm__ volatile("mrs %0, cntfrq_el0" : "=r"(hz));
	return hz;
}

/* No compare-and-store with the stack pointer in one sequence: ring.h
 * claims with a load, a test and a store. */
#define TA_ARCH_HAS_CLAIM_ASM 0
#define TA_ARCH_READ_SP(v)    __asm__("mov %0, sp" : "=r"(v))

/* The base (with the index) in one register, the constant in the
 * instruction. */
#define TA_ARCH_HAS_PREFETCHW 1
#define TA_ARCH_PREFETCHW(base, index, disp)                                                       \
	__asm__("prfm pstl1keep, [%0, %1]" : : "r"((const char *)(base) + (index)), "i"(disp))

/* glibc gives a library dlopen'ed into a running process (traceagent
 * attach) no static TLS aligned to more ("cannot allocate memory in static
 * TLS block"). */
#define TA_ARCH_DLOPEN_TLS_ALIGN 16

/* unw_getcontext is inline assembly in libunwind's header. */
#define TA_ARCH_UNW_GETCONTEXT_CALL 0

#define TA_ARCH_HAS_SETJMP_TRAMPOLINES 1
#define TA_ARCH_HAS_JMPBUF_SP	       1

#define TA_ARCH_HAS_PATCHING 0
#define TA_ARCH_KEEPS_REGS

#define TA_ARCH_CODE_FIXED_WORDS 1
#define TA_ARCH_HAS_HOOKPATCH	 1

#define TA_ARCH_HAS_INJECT 1
#define TA_ARCH_PTRACE_H   "aarch64/regs.h"

#define TA_ARCH_HAS_CRC32C 0

#define TA_ARCH_HAS_ARGS_COPY 1
#define TA_ARCH_UC_PC(uc)     ((uc)->uc_mcontext.pc)
#define TA_ARCH_GP_ARG_REGS   8

#endif
