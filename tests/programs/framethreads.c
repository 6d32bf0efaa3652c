/* SPDX-License-Identifier: MIT */
/*
 * framethreads.c - frames marked by the main thread while a worker runs
 * the same heavy function beside it (for `traceagent frames`' culprits).
 *
 * The main thread runs FRAMES = 20 frames and marks each with
 * TA_FRAME_MARK() at its end.  A frame calls light() (500 us), except
 * frame SLOW = 10: there the main thread wakes the worker, calls heavy()
 * (20 ms), then waits for the worker before it marks.  The worker, in the
 * meantime, calls heavy() (20 ms) and then worker_only() (5 ms).  So
 * frame 10 lasts about 25 ms, of which the main thread spent 20 ms in
 * heavy(); both threads' heavy() together are 40 ms, more than the frame.
 * light 19 calls, heavy 2 (one a thread), worker_only 1.
 *
 * The waits and the busy loops are not instrumented (the main thread
 * waiting for the worker is the self time of nothing).  It prints one line
 * that does not depend on timing and exits 0.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "traceagent.h"

#define FRAMES	 20
#define SLOW	 10
#define LIGHT_US 500
#define HEAVY_US 20000
#define ONLY_US	 5000

#define NI __attribute__((no_instrument_function))

static sem_t go, done;
static uint64_t sum;

NI static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Busy for us microseconds of wall time. */
NI static void spin(uint64_t us)
{
	uint64_t end = now_ns() + us * 1000;

	while (now_ns() < end)
		;
}

NI static void wait_sem(sem_t *s)
{
	while (sem_wait(s) != 0)
		;
}

__attribute__((noinline)) static void light(int f)
{
	spin(LIGHT_US);
	sum += (uint64_t)f;
}

__attribute__((noinline)) static void heavy(int who)
{
	spin(HEAVY_US);
	sum += (uint64_t)who;
}

__attribute__((noinline)) static void worker_only(void)
{
	spin(ONLY_US);
	sum += 1;
}

NI static void *worker_main(void *arg)
{
	(void)arg;
	wait_sem(&go);
	heavy(2);
	worker_only();
	sem_post(&done);
	return NULL;
}

NI int main(void)
{
	pthread_t worker;

	sem_init(&go, 0, 0);
	sem_init(&done, 0, 0);
	if (pthread_create(&worker, NULL, worker_main, NULL)) {
		fprintf(stderr, "framethreads: cannot start the worker\n");
		return 1;
	}
	for (int f = 0; f < FRAMES; f++) {
		if (f == SLOW) {
			sem_post(&go);
			heavy(1);
			wait_sem(&done);
		} else {
			light(f);
		}
		TA_FRAME_MARK();
	}
	pthread_join(worker, NULL);
	printf("framethreads: %d frames, sum %llu\n", FRAMES, (unsigned long long)sum);
	return 0;
}
