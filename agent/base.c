/* SPDX-License-Identifier: MIT */
/*
 * base.c - the services every file of the agent uses (base.h).  It calls
 * no other file of the agent: what it needs it does with libc alone.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base.h"

uint32_t ta_state;
uint32_t ta_pid;
__thread uint32_t ta_guard __attribute__((tls_model("initial-exec")));

void ta_warn(const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	int n;

	/* vsnprintf, not vfprintf(stderr): no stdio lock or buffer shared
	 * with the program; one write keeps the line whole. */
	memcpy(line, "traceagent: ", 12);
	va_start(ap, fmt);
	n = vsnprintf(line + 12, sizeof(line) - 13, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	n += 12;
	if ((size_t)n > sizeof(line) - 2)
		n = (int)sizeof(line) - 2;
	line[n++] = '\n';
	TA_GUARD_ENTER(); /* the agent's write, not the program's */
	if (write(STDERR_FILENO, line, (size_t)n) < 0) {
		/* Nowhere left to say it. */
	}
	TA_GUARD_LEAVE();
}

int ta_lock_bounded(pthread_mutex_t *m)
{
	for (int i = 0; i < 2000; i++) {
		struct timespec ts = {0, 100000};
		if (pthread_mutex_trylock(m) == 0)
			return 0;
		nanosleep(&ts, NULL);
	}
	return -1;
}

size_t ta_exe_path(char *out, size_t size)
{
	static char path[4096];
	static size_t len;
	static uint32_t state; /* 0: not read, 1: being read, 2: in path */
	uint32_t s = 0;
	ssize_t n;

	/* Acquire: pairs with the release below (path and len). */
	if (__atomic_load_n(&state, __ATOMIC_ACQUIRE) != 2) {
		n = readlink("/proc/self/exe", out, size - 1);
		out[n > 0 ? n : 0] = 0;
		/* Only the first reader keeps it (a reader beside it, or a
		 * signal handler inside it, only reads its own). */
		if (n > 0 && (size_t)n < sizeof(path) &&
		    __atomic_compare_exchange_n(&state, &s, 1, 0, __ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED)) {
			memcpy(path, out, (size_t)n + 1);
			len = (size_t)n;
			/* Release: pairs with the acquire above. */
			__atomic_store_n(&state, 2, __ATOMIC_RELEASE);
		}
		return n > 0 ? (size_t)n : 0;
	}
	if (len >= size)
		return (size_t)(out[0] = 0);
	memcpy(out, path, len + 1);
	return len;
}
