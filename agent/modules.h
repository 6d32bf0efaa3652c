/* SPDX-License-Identifier: MIT */
/*
 * modules.h - the module map (modules.c): the loaded objects, written to
 * the dump as they come and go.
 */
#ifndef TA_MODULES_H
#define TA_MODULES_H

#include <link.h>
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
/* The GNU build-id note of a loaded object (*id into its memory): its
 * length, or 0 without one. */
size_t ta_module_build_id(const struct dl_phdr_info *info, const uint8_t **id) TA_HIDDEN;
/* In a forked child: the module map is written again, under its pid. */
void ta_modules_forget(void) TA_HIDDEN;

/* The module's GOT entries for the two hooks: each JUMP_SLOT (its PLT's
 * entry) or GLOB_DAT (-fno-plt, or an address taken) relocation against
 * __cyg_profile_func_enter (is_exit 0) or __cyg_profile_func_exit (1),
 * with relro: the entry is in the module's RELRO (read-only after
 * relocation).  Stops at the first call that returns non-zero and returns
 * that; 0 when all were seen (none, for a module without a dynamic
 * section).  Reads the module's dynamic section only: no lock, no
 * allocation.  attach.c points the entries at the agent's hooks,
 * hookpatch.c recognises the PLT stubs and -fno-plt calls that go
 * through them. */
typedef int ta_hook_slot_fn(void *arg, uintptr_t *at, int is_exit, int relro);
int ta_module_hook_slots(const struct dl_phdr_info *info, ta_hook_slot_fn *fn, void *arg) TA_HIDDEN;
/* The same walk for every JUMP_SLOT and GLOB_DAT relocation, with the
 * symbol's name: `traceagent attach` points the manual API's weak
 * references and the library calls' entries at the agent (got.c's
 * ta_gotset). */
typedef int ta_got_slot_fn(void *arg, const char *name, uintptr_t *at, int jump_slot, int relro);
int ta_module_got_slots(const struct dl_phdr_info *info, ta_got_slot_fn *fn, void *arg) TA_HIDDEN;

#endif
