/* SPDX-License-Identifier: MIT */
/*
 * phdrwalk.c - calls dlsym and dladdr, and walks again, from inside its
 * own dl_iterate_phdr callback: legal in a program where no other thread
 * loads anything meanwhile, as here.  The first callback of each walk
 * sleeps MS milliseconds (argv[1]), long enough for the agent's flusher to
 * want a library of its own (libunwind, some 20 ms after the start) while
 * the walk holds the loader's list lock.  Prints one line per walk.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NI __attribute__((no_instrument_function))

struct walk {
	long ms;
	int objects;
	int nested;
	int dlsym_ok;
	int dladdr_ok;
};

NI static int count_one(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)info;
	(void)size;
	++*(int *)arg;
	return 0;
}

NI static int look(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct walk *w = arg;
	struct timespec ts = {w->ms / 1000, (w->ms % 1000) * 1000000L};
	Dl_info di;

	(void)info;
	(void)size;
	if (w->objects++)
		return 0;
	nanosleep(&ts, NULL);
	dl_iterate_phdr(count_one, &w->nested);
	w->dlsym_ok = dlsym(RTLD_DEFAULT, "puts") == (void *)&puts;
	w->dladdr_ok = dladdr((void *)&puts, &di) && di.dli_fname && strstr(di.dli_fname, "libc");
	return 0;
}

static int work(int n)
{
	return n < 2 ? n : work(n - 1) + work(n - 2);
}

int main(int argc, char **argv)
{
	long ms = argc > 1 ? strtol(argv[1], NULL, 10) : 200;

	for (int i = 1; i <= 3; i++) {
		struct walk w = {ms, 0, 0, 0, 0};

		dl_iterate_phdr(look, &w);
		printf("walk %d: nested %s, dlsym %s, dladdr %s, fib %d\n", i,
		       w.nested == w.objects ? "same" : "differs", w.dlsym_ok ? "ok" : "wrong",
		       w.dladdr_ok ? "ok" : "wrong", work(15));
	}
	return 0;
}
