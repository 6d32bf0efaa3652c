/* SPDX-License-Identifier: MIT */
/*
 * libcalls.h - what the library-call interposers (libcalls.c) offer the
 * rest of the agent: their LIBCALLS chunk.
 */
#ifndef TA_LIBCALLS_H
#define TA_LIBCALLS_H

#include <stddef.h>
#include <stdint.h>

#include "compiler.h"

/* Writes the LIBCALLS chunk (the interposed functions); defined only in
 * the preloaded library, where the interposers are. */
void ta_libcalls_dump(void) TA_HIDDEN __attribute__((weak));

/* `traceagent attach` (attach.c): the interposers of the classes asked
 * (TA_LC_*), with the real functions they call, for the program's GOT
 * entries to be pointed at them (got.h).  Up to max into out; how many.
 * Defined only in the library, as above. */
struct ta_got_sym;
size_t ta_libcalls_got_syms(uint32_t classes, struct ta_got_sym *out, size_t max) TA_HIDDEN
    __attribute__((weak));

#endif
