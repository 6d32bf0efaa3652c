/* SPDX-License-Identifier: MIT */
/*
 * aarch64/jmpbuf.c - a jmp_buf's stack pointer (arch/jmpbuf.h).
 */
#include "jmpbuf.h"

/* ctlflow.S: calls setjmp_fn(buf) and returns the sp it called it with;
 * ta_jmp_probe_ret is the return address the call left in x30. */
uintptr_t ta_jmp_probe(void *buf, void *setjmp_fn) __attribute__((visibility("hidden")));
extern const char ta_jmp_probe_ret[] __attribute__((visibility("hidden")));

/* glibc's pointer guard on aarch64 is a variable of ld.so, private to
 * glibc; a jmp_buf filled at a known sp gives it (sp ^ guard is what is
 * stored), checked on the saved return address.  0 until known, 1 when it
 * cannot be (a guard of exactly 1 then reads as unknown: harmless). */
static uintptr_t jmp_guard;

static uintptr_t guard_of(void *(*find_setjmp)(void))
{
	uintptr_t g = __atomic_load_n(&jmp_guard, __ATOMIC_RELAXED);
	struct __jmp_buf_tag probe[1];
	void *fn;

	if (g)
		return g;
	g = 1;
	fn = find_setjmp();
	if (fn) {
		uintptr_t sp = ta_jmp_probe(probe, fn);
		uintptr_t guess = (uintptr_t)probe->__jmpbuf[13] ^ sp;

		/* glibc's layout: x19-x28, x29, x30 (11), sp (13). */
		if (((uintptr_t)probe->__jmpbuf[11] ^ guess) == (uintptr_t)ta_jmp_probe_ret)
			g = guess;
	}
	/* Relaxed both ways: every thread computes the same value. */
	__atomic_store_n(&jmp_guard, g, __ATOMIC_RELAXED);
	return g;
}

/* glibc's PTR_MANGLE: xor with the guard. */
uintptr_t ta_arch_jmpbuf_sp(const struct __jmp_buf_tag *env, void *(*find_setjmp)(void))
{
	uintptr_t g = guard_of(find_setjmp);

	return g == 1 ? 0 : (uintptr_t)env->__jmpbuf[13] ^ g;
}
