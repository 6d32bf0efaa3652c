/* SPDX-License-Identifier: MIT */
/*
 * mt.c - many threads making tiny calls at once, for scripts/bench.
 *
 * Usage: mt THREADS N TOTAL.  TOTAL evaluations of fib(N) are shared out
 * among THREADS threads (the first TOTAL % THREADS take one more), so the
 * work is the same whatever the number of threads.  Calls made:
 * main + THREADS workers + TOTAL * (2*F(N+1) - 1).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

struct job {
	pthread_t thread;
	int n;
	int reps;
	long sum;
};

__attribute__((noipa)) static long fib(int n)
{
	return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

static void *worker(void *arg)
{
	struct job *j = arg;

	for (int r = 0; r < j->reps; r++)
		j->sum += fib(j->n);
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: mt THREADS N TOTAL\n");
		return 2;
	}
	int threads = atoi(argv[1]), n = atoi(argv[2]), total = atoi(argv[3]);
	if (threads < 1 || n < 0 || total < 0) {
		fprintf(stderr, "mt: bad arguments\n");
		return 2;
	}
	struct job *jobs = calloc((size_t)threads, sizeof(*jobs));
	if (!jobs)
		return 1;
	for (int i = 0; i < threads; i++) {
		jobs[i].n = n;
		jobs[i].reps = total / threads + (i < total % threads);
		if (pthread_create(&jobs[i].thread, NULL, worker, &jobs[i]) != 0) {
			fprintf(stderr, "mt: pthread_create failed\n");
			return 1;
		}
	}
	long sum = 0;
	for (int i = 0; i < threads; i++) {
		pthread_join(jobs[i].thread, NULL);
		sum += jobs[i].sum;
	}
	printf("%ld\n", sum);
	free(jobs);
	return 0;
}
