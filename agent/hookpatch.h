/* SPDX-License-Identifier: MIT */
/*
 * hookpatch.h - excluded code costs nothing (hookpatch.c): an instrumented
 * function's calls to __cyg_profile_func_enter/exit rewritten into no-ops
 * of the same length in the loaded code, and put back.
 */
#ifndef TA_HOOKPATCH_H
#define TA_HOOKPATCH_H

#include <stdint.h>

#include "compiler.h"

/*
 * Rewrites, in the loaded code of the instrumented function [fn_start,
 * fn_end), every call to the hooks made with the function's own address
 * (the calls an inlined callee makes with its address stay): a call
 * becomes a no-op of its length, a tail jump to the exit hook a `ret`
 * (then no-ops).  Forms: x86-64 `call rel32` to the module's PLT entry or
 * to the hook, `call *GOT(%rip)` (-fno-plt), `jmp` to either as a tail
 * call; aarch64 `bl` to the PLT entry or the hook, `blr` through the GOT
 * entry (-fno-plt), `b` or `br` as a tail call.
 *
 * Returns 0 when every such call was found and rewritten (at least one to
 * each hook), or when the function was rewritten before; otherwise nothing
 * is written and the function keeps calling the hooks (the caller filters
 * it at run time instead):
 *   -EINVAL   the range is not inside one executable segment of a loaded
 *             module
 *   -ENOENT   no call to the enter hook, or none to the exit hook, with the
 *             function's address
 *   -ENOTSUP  a call to a hook in a form not rewritten (conditional, through
 *             a register, an argument that cannot be known), one that
 *             cannot be written atomically here, or a jump to a part of the
 *             function outside the range (GCC's NAME.cold)
 *   -EILSEQ   the body cannot be decoded
 *   -ENOSYS   no decoder (capstone could not be opened) or another
 *             architecture
 *   other     mprotect's errno
 * The original bytes are kept for ta_hookpatch_restore_all.
 *
 * errno is kept.  Thread-safe (an internal lock, taken before the
 * loader's: never call it from inside a dl_iterate_phdr callback) and safe
 * while other threads run the function: each rewrite is one atomic store,
 * or steps separated by membarrier(SYNC_CORE) (hookpatch.c says why).
 * Called from agent code inside TA_GUARD_ENTER/LEAVE, never from a hook or
 * a signal handler: it calls libc, allocates, may dlopen capstone, and
 * makes the pages writable for a moment, so nothing else may change their
 * protections meanwhile (patch.c's patcher does, under its own lock: do not
 * run both at once on one module).
 */
int ta_hookpatch_nop(uintptr_t fn_start, uintptr_t fn_end) TA_HIDDEN;

/*
 * The analyses of one module's functions kept on disk (hookpatch_cache.h),
 * by its build-id, in the directory TRACEAGENT_CACHE names (default
 * $XDG_CACHE_HOME/traceagent, else ~/.cache/traceagent; "off": none):
 * between begin (the module's file `path`, `addr` an address of its code)
 * and end, ta_hookpatch_nop on that module's functions takes the calls of a
 * function analysed before from the file (no decoder loaded: capstone's
 * relocations are most of an exclusion's start-up), and end writes the
 * file again if a function was analysed.  No directory, no build-id, a
 * file that cannot be read or written: the functions are decoded, as
 * without a cache, and nothing is said.  Same requirements as
 * ta_hookpatch_nop.
 */
void ta_hookpatch_cache_begin(const char *path, uintptr_t addr) TA_HIDDEN;
void ta_hookpatch_cache_end(void) TA_HIDDEN;

/* Puts back every call rewritten, byte for byte, in modules still loaded
 * (and whose bytes are still the ones written); forgets them all.  Returns
 * how many calls were put back, or a negative errno (mprotect's) for the
 * first that could not be (the others are still tried).  Same requirements
 * as ta_hookpatch_nop. */
int ta_hookpatch_restore_all(void) TA_HIDDEN;

/* After a dlclose: forgets the calls rewritten in modules no longer loaded
 * (a module loaded again is new code). */
void ta_hookpatch_forget_unloaded(void) TA_HIDDEN;

#endif
