/* SPDX-License-Identifier: MIT */
/*
 * ctlflow.c - control flow that leaves frames without their exit hooks:
 * setjmp/longjmp (every compiler) and C++ exceptions (Clang emits no exit
 * hook for a frame a throw leaves; GCC runs them while unwinding).
 *
 * The agent only says what happened, as EXT markers (format.h):
 *  - SETJMP(jmp_buf) from the setjmp family, interposed by the assembly
 *    trampolines of arch/<cpu>/ctlflow.S: setjmp returns twice and saves its
 *    caller's registers, return address and stack pointer, so no C
 *    function can stand between the program and the real one.  The
 *    trampoline calls ta_ctl_setjmp_hook with the arguments saved, then
 *    jumps to the real function with the caller's stack and registers as
 *    they were;
 *  - LONGJMP(jmp_buf) from the longjmp family, just before the jump;
 *  - CATCH(start of the catching function, its activations on the stack)
 *    from __cxa_begin_catch, which the catch clause calls: its return
 *    address is in the catcher.
 * The flusher's encoder knows the shadow stack and turns the markers into
 * frames popped (ta_ctl_apply in format.c).
 *
 * A thread that has recorded no function event yet records no marker (a
 * library's own setjmp in a thread that runs no instrumented code must not
 * make it a traced thread), and neither does a process where the agent is
 * not running: a marker never starts the agent (it restarts it in a forked
 * child, as the child's first event would).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arch.h"
#include "base.h"
#include "compiler.h"
#include "format.h"
#include "flusher.h"
#include "jmpbuf.h"
#include "lazylib.h"
#include "nextsym.h"
#include "patch.h"
#include "ring.h"

#define TA_PUBLIC __attribute__((visibility("default")))

static int recording(void)
{
	uint32_t s = __atomic_load_n(&ta_state, __ATOMIC_ACQUIRE);

	/* A forked child's agent restarts at its first event, which may be
	 * this marker (record_slow restarts it). */
	return (s == TA_S_RUNNING || s == TA_S_FORKED) && ta_thread_traced();
}

static void mark(uint32_t kind, const void *p)
{
	uint64_t v = (uint64_t)(uintptr_t)p;

	if (recording())
		ta_record_ext(kind, &v, 1);
}

/* The real functions, found at the first call by ta_next_sym, which is
 * safe in a signal handler (longjmp and siglongjmp often are called from
 * one).  Where that cannot answer, the constructor below resolves them
 * with dlsym, before main, so that those calls need no dlsym; a call that
 * comes earlier (another library's constructor) resolves on first use. */
enum {
	REAL_SETJMP_,
	REAL_SETJMP,
	REAL_SIGSETJMP,
	REAL_LONGJMP,
	REAL_LONGJMP_,
	REAL_SIGLONGJMP,
	REAL_LONGJMP_CHK,
	REAL_BEGIN_CATCH,
	REAL_N
};

static const char *const real_name[REAL_N] = {
    [REAL_SETJMP_] = "_setjmp",		  [REAL_SETJMP] = "setjmp",
    [REAL_SIGSETJMP] = "__sigsetjmp",	  [REAL_LONGJMP] = "longjmp",
    [REAL_LONGJMP_] = "_longjmp",	  [REAL_SIGLONGJMP] = "siglongjmp",
    [REAL_LONGJMP_CHK] = "__longjmp_chk", [REAL_BEGIN_CATCH] = "__cxa_begin_catch",
};

/* Written once with the same value by whoever resolves first (relaxed:
 * a function pointer from dlsym, nothing else published with it). */
static void *real_fn[REAL_N];

static void *real(unsigned which)
{
	void *f = __atomic_load_n(&real_fn[which], __ATOMIC_RELAXED);

	if (!f)
		f = ta_next_sym(real_name[which]);
	if (!f) {
		int saved = errno;

		TA_GUARD_ENTER();
		f = dlsym(RTLD_NEXT, real_name[which]);
		TA_GUARD_LEAVE();
		errno = saved;
	}
	if (f)
		__atomic_store_n(&real_fn[which], f, __ATOMIC_RELAXED);
	return f;
}

__attribute__((constructor)) static void ctlflow_init(void)
{
	/* Every library the program needs is loaded by now (a C program has
	 * no __cxa_begin_catch: looked up again if one is loaded later). */
	if (!ta_next_ready())
		for (unsigned i = 0; i < REAL_N; i++)
			(void)real(i);
}

/* ---- setjmp: called by the trampolines (arch/<cpu>/ctlflow.S) -------------------- */

#if TA_ARCH_HAS_SETJMP_TRAMPOLINES
void *ta_ctl_setjmp_hook(void *env, unsigned which) TA_HIDDEN;

/* Records SETJMP(env) and returns the real function the trampoline jumps
 * to.  Without one (no libc function by that name: cannot be, the program
 * was linked against it), there is nothing sensible to jump to. */
void *ta_ctl_setjmp_hook(void *env, unsigned which)
{
	void *f;

	mark(TA_EXT_SETJMP, env);
	f = which < REAL_LONGJMP ? real(which) : NULL;
	if (!f) {
		ta_warn("ctlflow.c: %s not found in the next libraries; aborting",
			which < REAL_LONGJMP ? real_name[which] : "setjmp");
		abort();
	}
	return f;
}
#endif

/* ---- longjmp ------------------------------------------------------------------------ */

#if TA_ARCH_HAS_JMPBUF_SP
/* libc's _setjmp, for the architectures that learn glibc's pointer
 * mangling by calling it (arch/<cpu>/jmpbuf.c). */
static void *find_setjmp(void)
{
	return real(REAL_SETJMP_);
}
#endif

/* The stack pointer a jmp_buf restores, unmangled as glibc mangles it;
 * 0 if not known. */
static uintptr_t jump_sp(const struct __jmp_buf_tag *env)
{
#if TA_ARCH_HAS_JMPBUF_SP
	return ta_arch_jmpbuf_sp(env, find_setjmp);
#else
	(void)env;
	return 0;
#endif
}

/* The frames between here and the setjmp go: the marker says which jmp_buf,
 * the encoder knows how deep the stack was when it was set.  A hook the
 * jump abandons (this is a signal handler that interrupted it) gives up
 * its claim first, so that the marker and what follows record directly. */
#define JUMP(which, env, val)                                                                      \
	do {                                                                                       \
		void (*f_)(struct __jmp_buf_tag *, int) =                                          \
		    (void (*)(struct __jmp_buf_tag *, int))real(which);                            \
		if (__atomic_load_n(&ta_hot.claim, __ATOMIC_RELAXED))                              \
			ta_ring_longjmp(jump_sp(env));                                             \
		mark(TA_EXT_LONGJMP, env);                                                         \
		f_(env, val);                                                                      \
		__builtin_unreachable();                                                           \
	} while (0)

TA_PUBLIC void longjmp(struct __jmp_buf_tag env[1], int val)
{
	JUMP(REAL_LONGJMP, env, val);
}

TA_PUBLIC void _longjmp(struct __jmp_buf_tag env[1], int val)
{
	JUMP(REAL_LONGJMP_, env, val);
}

TA_PUBLIC void siglongjmp(struct __jmp_buf_tag env[1], int val)
{
	JUMP(REAL_SIGLONGJMP, env, val);
}

/* What longjmp becomes with _FORTIFY_SOURCE. */
TA_PUBLIC __attribute__((noreturn)) void __longjmp_chk(struct __jmp_buf_tag env[1], int val);
void __longjmp_chk(struct __jmp_buf_tag env[1], int val)
{
	JUMP(REAL_LONGJMP_CHK, env, val);
}

/* ---- exceptions -------------------------------------------------------------------- */

/* Frames walked at most to count the catcher's activations (their return
 * addresses are on the stack of the catch, 4 KiB): a deeper stack gives 0,
 * unknown, and the innermost activation is taken. */
#define CATCH_WALK_MAX 512

/* libgcc's unwinder: the FDE that covers pc (what the exception itself was
 * unwound with), and the start of its function in bases.func. */
struct dwarf_eh_bases {
	void *tbase, *dbase, *func;
};
typedef const uint8_t *(*find_fde_fn)(void *pc, struct dwarf_eh_bases *bases);

struct range {
	uintptr_t start, end; /* end 0: not known */
};

/* The function holding pc, from its FDE: the start always, the end when the
 * FDE has the usual layout (a 32-bit length, then pc-relative 32-bit
 * pc_begin and a 32-bit pc_range: checked by finding the start there). */
static int catcher_range(void *pc, struct range *r)
{
	/* Set once with the same value by whoever looks first (relaxed, as
	 * real_fn). */
	static find_fde_fn find_fde_cached;
	find_fde_fn find_fde = __atomic_load_n(&find_fde_cached, __ATOMIC_RELAXED);
	struct dwarf_eh_bases bases;
	const uint8_t *fde;
	int32_t rel;
	uint32_t len, size;

	if (!find_fde) {
		find_fde = (find_fde_fn)dlsym(RTLD_DEFAULT, "_Unwind_Find_FDE");
		__atomic_store_n(&find_fde_cached, find_fde, __ATOMIC_RELAXED);
	}
	if (!find_fde || !(fde = find_fde(pc, &bases)) || !bases.func)
		return 0;
	r->start = (uintptr_t)bases.func;
	r->end = 0;
	memcpy(&len, fde, 4);
	if (len != 0xffffffffu && len >= 12) {
		memcpy(&rel, fde + 8, 4);
		memcpy(&size, fde + 12, 4);
		if ((uintptr_t)(fde + 8) + (uintptr_t)(intptr_t)rel == r->start)
			r->end = r->start + size;
	}
	return 1;
}

/*
 * The catch clause calls __cxa_begin_catch: the return address is in the
 * function that catches, and the unwind tables give its start, which is
 * the address -finstrument-functions hands to the hooks.  Which activation
 * of it catches (a recursive function may catch in an outer instance what
 * its inner ones threw) is counted from the bottom of the stack, where the
 * activations the exception left no longer are.  (A catch clause that GCC
 * moved to a function's .cold part has a start of its own; it is then not
 * found on the stack and pops nothing, which is right for GCC, whose exit
 * hooks ran while unwinding.)
 */
TA_PUBLIC void *__cxa_begin_catch(void *exc);
/* Never inlined, with a frame pointer: see the return slot below. */
__attribute__((noinline)) void *__cxa_begin_catch(void *exc)
{
	void *(*f)(void *) = (void *(*)(void *))real(REAL_BEGIN_CATCH);
	void *caught;

	if (recording()) {
		/* ret - 1: inside the call, in case it is the last
		 * instruction of its function. */
		char *ret = __builtin_extract_return_addr(__builtin_return_address(0));
		int saved = errno;
		struct range r;
		void *ips[CATCH_WALK_MAX];

		/* The unwinder's own reads and allocations are the agent's,
		 * not the program's library calls. */
		TA_GUARD_ENTER();
		if (catcher_range(ret - 1, &r)) {
			uint64_t v[2] = {r.start, 0};
			int n = 0;

			/* libunwind may not be open yet (lazylib.h): at
			 * once here, outside any signal handler. */
			if (r.end)
				ta_flusher_open_unwind();
			if (r.end && ta_lazy_unw_on() && ta_lazy.u_backtrace)
				n = ta_lazy.u_backtrace(ips, CATCH_WALK_MAX);

			/* The catcher's frame and those of its outer
			 * activations all return into its range. */
			for (int i = 0; n < CATCH_WALK_MAX && i < n; i++)
				if ((uintptr_t)ips[i] - 1 - r.start < r.end - r.start)
					v[1]++;
			ta_record_ext(TA_EXT_CATCH, v, 2);
		}
		TA_GUARD_LEAVE();
		errno = saved;
	}
	if (!f) {
		ta_warn("ctlflow.c: __cxa_begin_catch not found in the next libraries; aborting");
		abort();
	}
	caught = f(exc);
	/* Patched frames (patch.c): this call's return slot marks where the
	 * catcher's callees' frames ended; those still alive are patched
	 * again. */
	ta_patch_unwind_caught((uint64_t)(uintptr_t)__builtin_frame_address(0) + 8);
	return caught;
}
