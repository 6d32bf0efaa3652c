/* SPDX-License-Identifier: MIT */
/*
 * hookvictim.c - instrumented functions for test_hookpatch.c, built once
 * per form of hook call (meson.build): -O0, -O2, -O3 in the test program
 * (direct calls to its hooks), -O2 in a shared library (through the PLT),
 * -O2 -fno-plt (through the GOT), and by Clang.  SFX names each copy.
 */
#include <stddef.h>

#define CAT_(a, b) a##b
#define CAT(a, b)  CAT_(a, b)
#define V(name)	   CAT(name, SFX)

/* No inlining or cloning of the functions counted, so that their calls
 * exist at every level (GCC's noipa; Clang does not clone them). */
#ifdef __clang__
#define KEEP __attribute__((noinline))
#else
#define KEEP __attribute__((noipa))
#endif

void __cyg_profile_func_enter(void *fn, void *site);
void __cyg_profile_func_exit(void *fn, void *site);

extern volatile int hv_sink;

int V(leaf)(int x);
int V(mid)(int x);
long V(fib)(int n);
void V(vtail)(int x);
extern int (*V(inl_ptr))(int);
int V(outer)(int x);
void V(manual)(void *fn);
int V(withcold)(int x);

KEEP int V(leaf)(int x)
{
	hv_sink += x;
	return x * 3 + 1;
}

/* leaf twice. */
KEEP int V(mid)(int x)
{
	return V(leaf)(x) + V(leaf)(x + 1);
}

KEEP long V(fib)(int n)
{
	if (n < 2)
		return n;
	return V(fib)(n - 1) + V(fib)(n - 2);
}

/* void: at -O2 its exit hook is a tail jump. */
KEEP void V(vtail)(int x)
{
	hv_sink += V(leaf)(x);
}

/* Inlined in outer at -O2 with its own hook calls (its address taken
 * below, so it also exists on its own). */
static inline int V(inl)(int x)
{
	return V(leaf)(x) + 2;
}
int (*V(inl_ptr))(int) = V(inl);

/* inl twice: its hook calls, made with inl's address, must stay. */
KEEP int V(outer)(int x)
{
	return V(inl)(x) + V(inl)(x + 1);
}

/* Hook calls whose argument the rewriter cannot know: refused. */
__attribute__((no_instrument_function, noinline)) void V(manual)(void *fn)
{
	__cyg_profile_func_enter(fn, NULL);
	hv_sink++;
	__cyg_profile_func_exit(fn, NULL);
}

/* GCC (-O2 and up) moves the unlikely branch to withcold.cold, outside
 * the function's symbol: refused (its hook calls could be there). */
__attribute__((cold, noinline, no_instrument_function)) static void V(rare)(int x)
{
	hv_sink = x;
}

KEEP int V(withcold)(int x)
{
	if (__builtin_expect(x == 12345, 0)) {
		V(rare)(x);
		return hv_sink * 2;
	}
	return x + 1;
}
