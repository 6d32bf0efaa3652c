/* SPDX-License-Identifier: MIT */
/*
 * hooks.c - the entry points -finstrument-functions calls.
 *
 * Each is ta_record() inlined: one TLS load, a counter read, a check,
 * two stores of the slot and two of the head; before it, a load and a
 * branch on ta_fn_gate (the `functions` channel, api.h).  See ring.h for the
 * protocol and HOTPATH.md beside this file for the code the compiler makes
 * of it.
 */
#include <stdint.h>

#include "api.h"
#include "ring.h"

#define TA_PUBLIC __attribute__((visibility("default"), no_instrument_function))

TA_PUBLIC void __cyg_profile_func_enter(void *fn, void *call_site);
TA_PUBLIC void __cyg_profile_func_exit(void *fn, void *call_site);

void __cyg_profile_func_enter(void *fn, void *call_site)
{
	(void)call_site;
	if (ta_fn_on())
		ta_record((uint64_t)(uintptr_t)fn);
}

void __cyg_profile_func_exit(void *fn, void *call_site)
{
	(void)call_site;
	if (ta_fn_on())
		ta_record((uint64_t)(uintptr_t)fn | TA_REC_EXIT);
}

/* For `traceagent attach` (attach.c), which points the GOT entries of the
 * program's modules here: by name, a library loaded by dlopen would find
 * glibc's empty hooks first. */
extern __typeof(__cyg_profile_func_enter) ta_hook_enter
    __attribute__((alias("__cyg_profile_func_enter"), visibility("hidden")));
extern __typeof(__cyg_profile_func_exit) ta_hook_exit
    __attribute__((alias("__cyg_profile_func_exit"), visibility("hidden")));
