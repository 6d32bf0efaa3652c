/* SPDX-License-Identifier: MIT */
/*
 * crash.c - calls work() 7 times, then crashes inside deeper() > fault()
 * the way argv[1] says: segv, abort, fpe, ill or bus.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static volatile int sink;

__attribute__((noipa)) static void work(void)
{
	sink++;
}

__attribute__((noipa)) static void fault(const char *how)
{
	if (!strcmp(how, "segv")) {
		volatile uintptr_t bad = 16;
		*(volatile int *)bad = 1;
	} else if (!strcmp(how, "abort")) {
		abort();
	} else if (!strcmp(how, "fpe")) {
		volatile int zero = 0;
		sink = 10 / zero;
	} else if (!strcmp(how, "ill")) {
#if defined(__aarch64__)
		/* __builtin_trap is brk there: SIGTRAP.  udf is undefined. */
		__asm__ volatile("udf #0");
#else
		__builtin_trap();
#endif
	} else if (!strcmp(how, "bus")) {
		/* A mapping past the end of its file. */
		FILE *f = tmpfile();
		volatile char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fileno(f), 0);
		p[0] = 1;
	}
}

__attribute__((noipa)) static void deeper(const char *how)
{
	work();
	fault(how);
}

int main(int argc, char **argv)
{
	for (int i = 0; i < 7; i++)
		work();
	fflush(stdout);
	deeper(argc > 1 ? argv[1] : "segv");
	return 0;
}
