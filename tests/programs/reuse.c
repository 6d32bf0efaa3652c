/* SPDX-License-Identifier: MIT */
/*
 * reuse.c - reuse ALPHA K BETA M: dlopens ALPHA, calls its alpha_work() K
 * times, dlcloses it, dlopens BETA, which the kernel usually maps where
 * ALPHA was, and calls its beta_work() M times.  Exits 3, before BETA's
 * calls, if BETA landed elsewhere (the test then tries again).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>

/* Opens path and calls name() n times; returns its load base, 0 on error. */
static uintptr_t open_call(const char *path, const char *name, int n, uintptr_t want, long *sum,
			   void **handle)
{
	struct link_map *lm;
	int (*fn)(int);
	void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);

	if (!lib || dlinfo(lib, RTLD_DI_LINKMAP, &lm) != 0) {
		fprintf(stderr, "reuse: %s: %s\n", path, dlerror());
		return 0;
	}
	if (want && lm->l_addr != want) {
		fprintf(stderr, "reuse: %s was mapped at %#lx, not at %#lx\n", path,
			(unsigned long)lm->l_addr, (unsigned long)want);
		exit(3);
	}
	*(void **)&fn = dlsym(lib, name);
	if (!fn) {
		fprintf(stderr, "reuse: %s\n", dlerror());
		return 0;
	}
	for (int i = 0; i < n; i++)
		*sum += fn(i);
	*handle = lib;
	return lm->l_addr;
}

int main(int argc, char **argv)
{
	long sum = 0;
	uintptr_t base;
	void *lib;

	if (argc < 5) {
		fprintf(stderr, "usage: reuse ALPHA K BETA M\n");
		return 2;
	}
	base = open_call(argv[1], "alpha_work", atoi(argv[2]), 0, &sum, &lib);
	if (!base || dlclose(lib) != 0)
		return 1;
	if (!open_call(argv[3], "beta_work", atoi(argv[4]), base, &sum, &lib) || dlclose(lib) != 0)
		return 1;
	printf("reuse: same base, sum %ld\n", sum);
	return 0;
}
