/* SPDX-License-Identifier: MIT */
/*
 * crowd.c - N threads (argv[1], default 320) alive at once: each makes its
 * first instrumented call (worker) before any goes on, then calls work()
 * 5 times, each calling step() 10 times.  Per thread: worker 1, work 5,
 * step 50, that is 112 events; main adds 2.  With more threads than the
 * agent's memory cap has blocks, some threads cannot get a ring.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define WORKS 5
#define STEPS 10

static pthread_barrier_t all_in;
static unsigned long *results;

__attribute__((noipa)) static unsigned long step(unsigned long x)
{
	return x * 2654435761u + 1;
}

__attribute__((noipa)) static unsigned long work(unsigned long x)
{
	for (int i = 0; i < STEPS; i++)
		x = step(x);
	return x;
}

__attribute__((noipa)) static void *worker(void *arg)
{
	long id = (long)arg;
	unsigned long x = (unsigned long)id;

	/* Every thread has made its first call, and holds its ring if it
	 * got one, before any goes on. */
	pthread_barrier_wait(&all_in);
	for (int i = 0; i < WORKS; i++)
		x = work(x);
	results[id] = x;
	return NULL;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 320;
	pthread_t *t = calloc((size_t)n, sizeof(*t));
	pthread_attr_t attr;
	unsigned long sum = 0;

	results = calloc((size_t)n, sizeof(*results));
	if (n < 1 || !t || !results)
		return 2;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 << 10);
	pthread_barrier_init(&all_in, NULL, (unsigned)n);
	for (long i = 0; i < n; i++)
		if (pthread_create(&t[i], &attr, worker, (void *)i) != 0) {
			fprintf(stderr, "crowd: cannot create thread %ld\n", i);
			return 1;
		}
	for (long i = 0; i < n; i++) {
		pthread_join(t[i], NULL);
		sum += results[i];
	}
	printf("crowd: %ld threads done, checksum %lu\n", n, sum);
	return 0;
}
