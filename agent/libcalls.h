/* SPDX-License-Identifier: MIT */
/*
 * libcalls.h - what the library-call interposers (libcalls.c) offer the
 * rest of the agent: their LIBCALLS chunk.
 */
#ifndef TA_LIBCALLS_H
#define TA_LIBCALLS_H

#include "compiler.h"

/* Writes the LIBCALLS chunk (the interposed functions); defined only in
 * the preloaded library, where the interposers are. */
void ta_libcalls_dump(void) TA_HIDDEN __attribute__((weak));

#endif
