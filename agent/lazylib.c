/* SPDX-License-Identifier: MIT */
/*
 * lazylib.c - liblz4 and libunwind, opened with dlopen when the agent
 * starts (lazylib.h says why).  The sonames are those of the headers we
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

static pthread_once_t once = PTHREAD_ONCE_INIT;

/* name's address in h, into *slot (which stays NULL if it is not there). */
static int sym(void *h, const char *name, void *slot)
{
	void *f = dlsym(h, name);

	memcpy(slot, &f, sizeof(f));
	return f ? 0 : -1;
}

static void open_all(void)
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
	}
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
	}
}

void ta_lazy_open(void)
{
	pthread_once(&once, open_all);
}
