/* SPDX-License-Identifier: MIT */
/*
 * firehose.c - events as fast as the agent takes them, and badly
 * compressible: THREADS threads call 4096 distinct functions in a
 * pseudo-random order (each thread its own xorshift), two deep, so the
 * dump's address deltas and times are close to noise.  scripts/bigdump runs
 * it until the dump passes a size (a real agent-written dump past 4 GiB);
 * not run by meson test.
 *
 * usage: firehose THREADS SECONDS [DUMP BYTES]
 *
 * With DUMP and BYTES it stops as soon as the file DUMP (the agent's
 * TRACEAGENT_OUTPUT) holds BYTES, looking every 100 ms.  Prints "calls N"
 * (each call is an entry and an exit: 2N events).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define NOINST __attribute__((no_instrument_function))

static volatile uint64_t sink;

/* 4096 functions: F16 makes 16 of them from a prefix, F256 256...  1 KiB
 * apart: the address deltas between two random ones take 4 bytes. */
/* The tables read best in rows of 16, as written. */
/* clang-format off */
#define F1(n)                                                                                  \
	__attribute__((noipa, aligned(1024))) static void fn_##n(uint64_t x)                   \
	{                                                                                      \
		sink += x;                                                                     \
	}
#define F16(p)                                                                                 \
	F1(p##0) F1(p##1) F1(p##2) F1(p##3) F1(p##4) F1(p##5) F1(p##6) F1(p##7) F1(p##8)      \
		F1(p##9) F1(p##a) F1(p##b) F1(p##c) F1(p##d) F1(p##e) F1(p##f)
#define F256(p)                                                                                \
	F16(p##0) F16(p##1) F16(p##2) F16(p##3) F16(p##4) F16(p##5) F16(p##6) F16(p##7)       \
		F16(p##8) F16(p##9) F16(p##a) F16(p##b) F16(p##c) F16(p##d) F16(p##e)         \
			F16(p##f)
#define F4096                                                                                  \
	F256(0) F256(1) F256(2) F256(3) F256(4) F256(5) F256(6) F256(7) F256(8) F256(9)       \
		F256(a) F256(b) F256(c) F256(d) F256(e) F256(f)
F4096

#define R1(n) fn_##n,
#define R16(p)                                                                                 \
	R1(p##0) R1(p##1) R1(p##2) R1(p##3) R1(p##4) R1(p##5) R1(p##6) R1(p##7) R1(p##8)      \
		R1(p##9) R1(p##a) R1(p##b) R1(p##c) R1(p##d) R1(p##e) R1(p##f)
#define R256(p)                                                                                \
	R16(p##0) R16(p##1) R16(p##2) R16(p##3) R16(p##4) R16(p##5) R16(p##6) R16(p##7)       \
		R16(p##8) R16(p##9) R16(p##a) R16(p##b) R16(p##c) R16(p##d) R16(p##e)         \
			R16(p##f)
static void (*const fns[4096])(uint64_t) = {
	R256(0) R256(1) R256(2) R256(3) R256(4) R256(5) R256(6) R256(7) R256(8) R256(9)
		R256(a) R256(b) R256(c) R256(d) R256(e) R256(f)};
/* clang-format on */

static double seconds;
static volatile int stop;
static uint64_t total;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

/* Calls one random function, which may call another from inside (two
 * deep half of the time). */
__attribute__((noipa)) static void outer(uint64_t r)
{
	fns[r & 4095](r);
	if (r & (1u << 12))
		fns[(r >> 13) & 4095](r >> 13);
}

NOINST static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

NOINST static void *run(void *arg)
{
	uint64_t s = 0x9e3779b97f4a7c15ull * ((uintptr_t)arg + 1), calls = 0;
	double end = now() + seconds;

	do {
		for (int i = 0; i < 4096; i++) {
			s ^= s << 13;
			s ^= s >> 7;
			s ^= s << 17;
			outer(s);
			calls += 2 + ((s >> 12) & 1);
		}
	} while (now() < end && !stop);
	pthread_mutex_lock(&mu);
	total += calls;
	pthread_mutex_unlock(&mu);
	return NULL;
}

NOINST int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 2;
	pthread_t t[64];

	seconds = argc > 2 ? atof(argv[2]) : 10;
	if (n < 1 || n > 64) {
		fprintf(stderr, "firehose: THREADS is 1 to 64\n");
		return 2;
	}
	for (int i = 0; i < n; i++)
		if (pthread_create(&t[i], NULL, run, (void *)(uintptr_t)i) != 0) {
			fprintf(stderr, "firehose: cannot create thread %d\n", i);
			return 1;
		}
	if (argc > 4) {
		unsigned long long want = strtoull(argv[4], NULL, 10);
		double end = now() + seconds;
		struct stat st;

		while (now() < end &&
		       !(stat(argv[3], &st) == 0 && (unsigned long long)st.st_size >= want))
			usleep(100000);
		stop = 1;
	}
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	printf("calls %llu\n", (unsigned long long)total);
	return 0;
}
