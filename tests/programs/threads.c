/* SPDX-License-Identifier: MIT */
/*
 * threads.c - 8 threads named worker-0 .. worker-7 run at once; thread i
 * calls work() i+1 times and each work() calls step() 10 times.  Per
 * thread: worker 1, work i+1, step 10*(i+1); in all: worker 8, work 36,
 * step 360.  The main thread calls only main.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>

#define NTHREADS 8
#define STEPS	 10

static pthread_barrier_t start;
static unsigned long results[NTHREADS];

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
	char name[16];
	unsigned long x = (unsigned long)id;

	snprintf(name, sizeof(name), "worker-%ld", id);
	pthread_setname_np(pthread_self(), name);
	/* All threads are alive and named before any works. */
	pthread_barrier_wait(&start);
	for (long i = 0; i <= id; i++)
		x = work(x);
	results[id] = x;
	return NULL;
}

int main(void)
{
	pthread_t t[NTHREADS];
	unsigned long sum = 0;

	pthread_barrier_init(&start, NULL, NTHREADS);
	for (long i = 0; i < NTHREADS; i++)
		if (pthread_create(&t[i], NULL, worker, (void *)i) != 0) {
			fprintf(stderr, "threads: cannot create thread %ld\n", i);
			return 1;
		}
	for (int i = 0; i < NTHREADS; i++) {
		pthread_join(t[i], NULL);
		sum += results[i];
	}
	printf("threads: %d done, checksum %lu\n", NTHREADS, sum);
	return 0;
}
