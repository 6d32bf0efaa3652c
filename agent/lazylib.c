/* SPDX-License-Identifier: MIT */
/*
 * lazylib.c - liblz4 and libunwind, opened with dlopen by the flusher
 * when first needed (lazylib.h says why and when).  The sonames are those of the headers we
 * were built with: the functions' signatures are theirs.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>
#include <pthread.h>

#include "agent.h"
#include "lazylib.h"

struct ta_lazy ta_lazy;

#define LZ_STR_(x) #x
#define LZ_STR(x)  LZ_STR_(x)

static pthread_once_t lz4_once = PTHREAD_ONCE_INIT;
static pthread_once_t unw_once = PTHREAD_ONCE_INIT;
static uint32_t lz4_on;	  /* atomic: ta_lazy_lz4_on */
static uint32_t lz4_done; /* atomic: ta_lazy_lz4_settled */
static uint32_t unw_on;	  /* atomic: ta_lazy_unw_on */
static uint32_t unw_done; /* atomic: ta_lazy_unw_settled */
static uint32_t unw_want; /* atomic: ta_lazy_unw_request */

/* name's address in h, into *slot (which stays NULL if it is not there). */
static int sym(void *h, const char *name, void *slot)
{
	void *f = dlsym(h, name);

	memcpy(slot, &f, sizeof(f));
	return f ? 0 : -1;
}

static void open_lz4_once(void);

static void open_lz4(void)
{
	open_lz4_once();
	/* Release: after lz4_on, which a thread that reads this set then
	 * sees (pairs with the acquire in ta_lazy_lz4_settled). */
	__atomic_store_n(&lz4_done, 1, __ATOMIC_RELEASE);
}

static void open_lz4_once(void)
{
	void *h = dlopen("liblz4.so.1", RTLD_NOW | RTLD_LOCAL);
	int bad = !h;

	if (h)
		bad = sym(h, "LZ4_compressBound", &ta_lazy.lz4_bound) |
		      sym(h, "LZ4_compress_default", &ta_lazy.lz4_compress);
	if (bad) {
		ta_lazy.lz4_bound = NULL;
		ta_lazy.lz4_compress = NULL;
		ta_warn("cannot open liblz4.so.1 (%s): the dump's chunks are stored uncompressed",
			h ? "a function is missing" : dlerror());
		return;
	}
	/* Release: the pointers above before the flag (pairs with the
	 * acquire in ta_lazy_lz4_on). */
	__atomic_store_n(&lz4_on, 1, __ATOMIC_RELEASE);
}

int ta_lazy_lz4_on(void)
{
	return __atomic_load_n(&lz4_on, __ATOMIC_ACQUIRE);
}

int ta_lazy_lz4_settled(void)
{
	return __atomic_load_n(&lz4_done, __ATOMIC_ACQUIRE);
}

void ta_lazy_open_lz4(void)
{
	pthread_once(&lz4_once, open_lz4);
}

static void open_unwind(void)
{
	void *h;
	int bad;

	h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
	bad = !h;
	/* The names the header's macros give (_ULx86_64_step, ...). */
	if (h)
		bad = sym(h, LZ_STR(unw_init_local), &ta_lazy.u_init_local) |
		      sym(h, LZ_STR(unw_init_local2), &ta_lazy.u_init_local2) |
		      sym(h, LZ_STR(unw_get_reg), &ta_lazy.u_get_reg) |
		      sym(h, LZ_STR(unw_set_reg), &ta_lazy.u_set_reg) |
		      sym(h, LZ_STR(unw_step), &ta_lazy.u_step) |
#if defined(__x86_64__)
		      sym(h, LZ_STR(unw_tdep_getcontext), &ta_lazy.u_getcontext) |
#endif
		      sym(h, LZ_STR(unw_backtrace), &ta_lazy.u_backtrace);
	if (bad) {
		ta_lazy.u_init_local = NULL;
		ta_lazy.u_init_local2 = NULL;
		ta_lazy.u_get_reg = NULL;
		ta_lazy.u_set_reg = NULL;
		ta_lazy.u_step = NULL;
		ta_lazy.u_backtrace = NULL;
#if defined(__x86_64__)
		ta_lazy.u_getcontext = NULL;
#endif
		ta_warn("cannot open libunwind.so.8 (%s): crashes are recorded without their "
			"backtrace, caught exceptions without their frames",
			h ? "a function is missing" : dlerror());
	} else {
		/* libunwind's first use may allocate: done here rather than
		 * in a crash handler. */
		unw_context_t ctx;
		unw_cursor_t cursor;

#if defined(__x86_64__)
		ta_lazy.u_getcontext(&ctx);
#else
		unw_getcontext(&ctx); /* inline code, no library call */
#endif
		ta_lazy.u_init_local(&cursor, &ctx);
		/* Release: the pointers above before the flag (pairs with
		 * the acquire in ta_lazy_unw_on). */
		__atomic_store_n(&unw_on, 1, __ATOMIC_RELEASE);
	}
	/* Release: after unw_on (pairs with the acquire in
	 * ta_lazy_unw_settled, which a crash handler reads before
	 * unw_on). */
	__atomic_store_n(&unw_done, 1, __ATOMIC_RELEASE);
}

int ta_lazy_unw_on(void)
{
	return __atomic_load_n(&unw_on, __ATOMIC_ACQUIRE);
}

int ta_lazy_unw_settled(void)
{
	return __atomic_load_n(&unw_done, __ATOMIC_ACQUIRE);
}

void ta_lazy_unw_request(void)
{
	/* Relaxed: the flusher's futex wake that follows orders nothing it
	 * must see but this flag, which it reads again each pass. */
	__atomic_store_n(&unw_want, 1, __ATOMIC_RELAXED);
}

int ta_lazy_unw_wanted(void)
{
	return __atomic_load_n(&unw_want, __ATOMIC_RELAXED);
}

void ta_lazy_open(void)
{
	pthread_once(&unw_once, open_unwind);
}
