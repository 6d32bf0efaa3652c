/* SPDX-License-Identifier: MIT */
/*
 * count.c - counts hook calls, for scripts/bench.
 *
 * A workload's number of calls (for ns per call and bytes per event) taken
 * independently of every tracer being measured.  At exit it writes
 * "ENTERS EXITS\n" to $BENCH_COUNT_OUTPUT.  Only used in untimed runs.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define HOOK __attribute__((visibility("default"), no_instrument_function))

static uint64_t enters, exits;

HOOK void __cyg_profile_func_enter(void *fn, void *call_site);
HOOK void __cyg_profile_func_exit(void *fn, void *call_site);

void __cyg_profile_func_enter(void *fn, void *call_site)
{
	(void)fn;
	(void)call_site;
	__atomic_fetch_add(&enters, 1, __ATOMIC_RELAXED);
}

void __cyg_profile_func_exit(void *fn, void *call_site)
{
	(void)fn;
	(void)call_site;
	__atomic_fetch_add(&exits, 1, __ATOMIC_RELAXED);
}

/* A destructor runs after main returned, while main's own exit hook has
 * already been counted; the workloads' threads are joined by then. */
__attribute__((destructor, no_instrument_function)) static void count_write(void)
{
	const char *path = getenv("BENCH_COUNT_OUTPUT");
	char line[64];
	int fd, n;

	if (!path)
		return;
	n = snprintf(line, sizeof(line), "%llu %llu\n",
		     (unsigned long long)__atomic_load_n(&enters, __ATOMIC_RELAXED),
		     (unsigned long long)__atomic_load_n(&exits, __ATOMIC_RELAXED));
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return;
	if (write(fd, line, (size_t)n) != n)
		n = -1;
	close(fd);
}
