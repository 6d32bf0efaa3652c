/* SPDX-License-Identifier: MIT */
/*
 * arch.h - the one header that knows which machine the code is built for.
 * It includes that architecture's header (arch/<cpu>/arch.h), which
 * states what the machine offers as capability macros (each 0 or 1, or a
 * value) and the little inline code that has to be written per machine:
 * the counter read of the hot path, the thread's claim and the slot's
 * prefetch.  The rest of the tree includes this header and branches on
 * the capabilities, never on __x86_64__ or __aarch64__ (scripts/check-layout
 * enforces it); the per-architecture files (assembly, ptrace registers,
 * jmp_buf layout, CRC-32C instruction) live beside the headers and are
 * built for the target alone (arch/meson.build).
 *
 * Every architecture header defines:
 *   TA_ARCH_NAME                 "x86_64", "aarch64" or "generic"
 *   TA_ARCH_ELF_MACHINE          e_machine of the programs the agent runs in
 *                                (undefined: not known)
 *   TA_ARCH_R_JUMP_SLOT, TA_ARCH_R_GLOB_DAT
 *                                the PLT and GOT relocation types
 *   TA_ARCH_HAS_COUNTER          a cycle counter read inline: ta_arch_counter()
 *                                and TA_ARCH_CLOCK_SOURCE (format.h's name);
 *                                ta_arch_counter_hz() its stated frequency, or 0
 *   TA_ARCH_HAS_CLAIM_ASM        TA_ARCH_CLAIM(word, label): test word and
 *                                store the stack pointer in it in one
 *                                instruction sequence, jumping to label when
 *                                it was set (ring.h ta_claim)
 *   TA_ARCH_READ_SP(v)           v = the stack pointer
 *   TA_ARCH_HAS_PREFETCHW        TA_ARCH_PREFETCHW(base, index, disp):
 *                                prefetch for writing base + index + disp
 *                                (disp a constant)
 *   TA_ARCH_DLOPEN_TLS_ALIGN     the largest alignment a library dlopen'ed
 *                                into a running process gets for its static TLS
 *   TA_ARCH_UNW_GETCONTEXT_CALL  libunwind's unw_getcontext is a library
 *                                function (1) or inline code (0)
 *   TA_ARCH_HAS_SETJMP_TRAMPOLINES  ctlflow.S: the setjmp family's trampolines
 *   TA_ARCH_HAS_JMPBUF_SP        jmpbuf.c: ta_arch_jmpbuf_sp (jmpbuf.h)
 *   TA_ARCH_HAS_PATCHING         dynamic patching of uninstrumented code
 *                                (patch_stub.S; needs capstone: TA_HAVE_PATCH)
 *   TA_ARCH_KEEPS_REGS           the attribute of a function that saves every
 *                                register it uses (the patch stubs' callees)
 *   TA_ARCH_CODE_FIXED_WORDS     instructions are aligned 32-bit words,
 *                                decoded by hand as A64 (hookpatch.c); 0:
 *                                variable length, decoded with capstone as
 *                                x86-64
 *   TA_ARCH_HAS_HOOKPATCH        an excluded function's hook calls can be
 *                                rewritten (hookpatch.c; with variable-length
 *                                code only when capstone is there)
 *   TA_ARCH_HAS_INJECT           traceagent attach's ptrace injection
 *                                (ptrace.c, through arch/ptrace.h)
 *   TA_ARCH_HAS_CRC32C           crc32c.c: ta_arch_crc32c_hw/_update (crc32c.h)
 *   TA_ARCH_HAS_ARGS_COPY        args_copy.S: the fault-safe copy of a string
 *                                argument (agent/args_copy.c), and
 *                                TA_ARCH_UC_PC(uc): a ucontext_t's pc
 *   TA_ARCH_GP_ARG_REGS          integer argument registers (the arguments
 *                                after them are on the stack, above the
 *                                return address: agent/args_hot.c)
 */
#ifndef TA_ARCH_H
#define TA_ARCH_H

#if defined(__x86_64__)
#include "x86_64/arch.h"
#elif defined(__aarch64__)
#include "aarch64/arch.h"
#else
#include "generic/arch.h"
#endif

#endif
