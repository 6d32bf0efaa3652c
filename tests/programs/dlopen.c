/* SPDX-License-Identifier: MIT */
/*
 * dlopen.c - loads the library named by argv[1] after the program started
 * and calls its sample_square() argv[2] times: the agent must learn of a
 * module that was not there at start.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	int (*square)(int);
	void *lib;
	long sum = 0;
	int n;

	if (argc < 3) {
		fprintf(stderr, "usage: dlopen LIBRARY N\n");
		return 2;
	}
	n = atoi(argv[2]);
	lib = dlopen(argv[1], RTLD_NOW);
	if (!lib) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	*(void **)&square = dlsym(lib, "sample_square");
	if (!square) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 1;
	}
	for (int i = 0; i < n; i++)
		sum += square(i);
	printf("dlopen: %d calls, sum %ld\n", n, sum);
	dlclose(lib);
	return 0;
}
