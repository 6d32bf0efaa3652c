/* SPDX-License-Identifier: MIT */
/*
 * deep.c - a recursion DEPTH levels deep (default 100,000), run once: every
 * level calls step() and then itself, the last one leaf().  With "mutual",
 * ping() and pong() call each other instead, DEPTH levels in all.  The
 * views must stay linear in the events however deep the stack.  The
 * recursion runs on a thread with a stack large enough for any depth.
 *
 * Usage: deep [DEPTH [mutual]]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile long sink;

__attribute__((noipa)) static void leaf(void)
{
	sink++;
}

__attribute__((noipa)) static void step(void)
{
	sink += 2;
}

__attribute__((noipa)) static void down(long n)
{
	step();
	if (n > 1)
		down(n - 1);
	else
		leaf();
	sink--;
}

static void pong(long n);

__attribute__((noipa)) static void ping(long n)
{
	if (n > 1)
		pong(n - 1);
	sink--;
}

__attribute__((noipa)) static void pong(long n)
{
	if (n > 1)
		ping(n - 1);
	sink--;
}

static long depth;
static int mutual;

static void *run(void *arg)
{
	(void)arg;
	if (mutual)
		ping(depth);
	else
		down(depth);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_attr_t attr;
	pthread_t t;

	depth = argc > 1 ? atol(argv[1]) : 100000;
	mutual = argc > 2 && !strcmp(argv[2], "mutual");
	if (depth < 1 || depth > 10000000 || (argc > 2 && !mutual)) {
		fprintf(stderr, "usage: deep [DEPTH [mutual]], DEPTH from 1 to 10000000\n");
		return 2;
	}
	/* 256 bytes a level is far more than a frame and the hooks need. */
	if (pthread_attr_init(&attr) ||
	    pthread_attr_setstacksize(&attr, (size_t)depth * 256 + (1 << 20)) ||
	    pthread_create(&t, &attr, run, NULL) || pthread_join(t, NULL)) {
		fprintf(stderr, "deep: cannot run the recursion's thread\n");
		return 1;
	}
	printf("depth %ld\n", depth);
	return 0;
}
