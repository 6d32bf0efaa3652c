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

#endif
