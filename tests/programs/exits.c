/* SPDX-License-Identifier: MIT */
/*
 * exits.c - the ways a program ends, and thread churn:
 *   exits thread N  - a second thread calls exit(N) inside inner() < outer()
 *                     while main keeps calling spin()
 *   exits quick N   - quick_exit(N) inside inner() < outer(), after an
 *                     at_quick_exit handler that calls handler_work()
 *   exits deep N    - exit(N) inside inner() < outer() on the main thread
 *   exits churn N   - N short threads, 8 at a time; thread i calls work()
 *                     i % 5 + 1 times; prints the total
 *   exits loop N    - calls work() N times, prints "ready", then spins
 *                     calling spin() until killed
 *   exits calls N   - calls work() N times and returns 0
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static volatile int sink;
static int code;

__attribute__((noipa)) static void work(void)
{
	sink++;
}

__attribute__((noipa)) static void spin(void)
{
	sink--;
}

__attribute__((noipa)) static void handler_work(void)
{
	sink++;
}

__attribute__((noipa)) static void on_quick_exit(void)
{
	handler_work();
}

__attribute__((noipa)) static void inner(const char *how)
{
	work();
	fflush(stdout);
	if (!strcmp(how, "quick"))
		quick_exit(code);
	exit(code);
}

__attribute__((noipa)) static void outer(const char *how)
{
	inner(how);
}

static void *exiter(void *arg)
{
	usleep(20000);
	outer(arg);
	return NULL;
}

static void *churner(void *arg)
{
	long n = (long)arg % 5 + 1;

	for (long i = 0; i < n; i++)
		work();
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	code = atoi(argv[2]) & 0xff;
	if (!strcmp(argv[1], "thread")) {
		static char how[] = "thread";
		pthread_t t;
		pthread_create(&t, NULL, exiter, how);
		for (;;)
			spin();
	}
	if (!strcmp(argv[1], "quick")) {
		at_quick_exit(on_quick_exit);
		outer("quick");
	}
	if (!strcmp(argv[1], "deep"))
		outer("deep");
	if (!strcmp(argv[1], "loop") || !strcmp(argv[1], "calls")) {
		long n = atol(argv[2]);
		for (long i = 0; i < n; i++)
			work();
		if (!strcmp(argv[1], "calls"))
			return 0;
		printf("ready\n");
		fflush(stdout);
		for (;;) {
			spin();
			usleep(1000);
		}
	}
	if (!strcmp(argv[1], "churn")) {
		long n = atol(argv[2]), total = 0;
		for (long i = 0; i < n; i += 8) {
			pthread_t t[8];
			int k = 0;
			for (; k < 8 && i + k < n; k++) {
				pthread_create(&t[k], NULL, churner, (void *)(i + k));
				total += (i + k) % 5 + 1;
			}
			while (k--)
				pthread_join(t[k], NULL);
		}
		printf("work %ld\n", total);
		return 0;
	}
	return 2;
}
