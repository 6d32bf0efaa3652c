/* SPDX-License-Identifier: MIT */
/*
 * modules.h - the module map (modules.c): the loaded objects, written to
 * the dump as they come and go.
 */
#ifndef TA_MODULES_H
#define TA_MODULES_H

#include <stdint.h>

#include "compiler.h"

/* Module map from dl_iterate_phdr (modules.c): writes the objects not
 * written before, stamped with load_ticks (start, or when a dlopen began),
 * and a MODULE_UNLOAD stamped unload_ticks for each written before that is
 * gone (a dlclose returned by then). */
void ta_dump_modules(uint64_t load_ticks, uint64_t unload_ticks) TA_HIDDEN;
/* Every object loaded now, stamped load_ticks, for a control-socket
 * stream's reader (tap.c): what the dump knows is left as it is. */
void ta_dump_modules_all(uint64_t load_ticks) TA_HIDDEN;
/* In a forked child: the module map is written again, under its pid. */
void ta_modules_forget(void) TA_HIDDEN;

#endif
