/* SPDX-License-Identifier: MIT */
/*
 * compiler.h - the branch hints and the visibility attribute the agent's
 * headers and files share.
 */
#ifndef TA_COMPILER_H
#define TA_COMPILER_H

#define TA_LIKELY(x)   __builtin_expect(!!(x), 1)
#define TA_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define TA_HIDDEN      __attribute__((visibility("hidden")))

/* Zero-initialised data that every process the agent is preloaded into
 * touches before main (the constructors' state), kept in .data: its pages
 * are written by the loader's relocations anyway, where the same variables
 * in .bss would be three or four more page faults for a process that
 * never records. */
#define TA_STARTUP_DATA __attribute__((section(".data.ta_startup")))

#endif
