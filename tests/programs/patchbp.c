/* SPDX-License-Identifier: MIT */
/*
 * patchbp.c - dlopens the library argv[1] (patchbplib.c: breakpoints set
 * by its constructor, a debugger's handler), calls bp_entry(21),
 * bp_endbr(21), bp_inner(21) and bp_plain(21) once each, and prints their
 * results and how many breakpoints were hit (3: each where it was set).  Not
 * instrumented: for dynamic patching, which patches the library before
 * dlopen returns.
 */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	static const char *const names[] = {"bp_entry", "bp_endbr", "bp_inner", "bp_plain"};
	int (*hits)(void);
	void *lib;

	if (argc < 2) {
		fprintf(stderr, "usage: patchbp LIBRARY\n");
		return 2;
	}
	lib = dlopen(argv[1], RTLD_NOW);
	if (!lib) {
		fprintf(stderr, "patchbp: %s\n", dlerror());
		return 1;
	}
	for (int i = 0; i < 4; i++) {
		int (*f)(int) = (int (*)(int))dlsym(lib, names[i]);

		if (!f) {
			fprintf(stderr, "patchbp: %s\n", dlerror());
			return 1;
		}
		printf("%s(21) = %d\n", names[i], f(21));
	}
	hits = (int (*)(void))dlsym(lib, "bp_hits");
	printf("breakpoints hit: %d\n", hits ? hits() : -1);
	return 0;
}
