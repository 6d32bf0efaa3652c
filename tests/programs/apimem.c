/* SPDX-License-Identifier: MIT */
/*
 * apimem.c - the manual API's memory, lock-name and fiber macros with
 * known numbers (tests/e2e/test_apimem.py):
 *  - pool "arena": 10 blocks of 100 bytes from arena_get, 7 given back by
 *    arena_put: 3 blocks, 300 bytes live at the end; one free of a
 *    pointer it never gave, and one of NULL (not a free);
 *  - the default pool: 4 blocks of 64 bytes from scratch(), all freed;
 *  - "cache lock" (TA_LOCK_NAME) locked 5 times, "stats" 2 times, both
 *    named before; "late lock" 3 times, named only after them, at the end;
 *  - fiber "job A" runs job_step twice, once on the main thread and once
 *    on a second thread; "job B" once on the main thread; each job_step
 *    makes one zone "step".  A NULL and a 2000-byte name are hostile.
 */
#include <pthread.h>
#include <stddef.h>
#include <string.h>

#include <traceagent.h>

static char arena[1000];
static size_t arena_off;
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t late_lock = PTHREAD_MUTEX_INITIALIZER;
static char long_name[2001];
volatile int sink;
static int other;

__attribute__((noinline)) static void *arena_get(size_t n)
{
	void *p = arena + arena_off;

	arena_off += n;
	TA_ALLOC_NAMED("arena", p, n);
	return p;
}

__attribute__((noinline)) static void arena_put(void *p)
{
	TA_FREE_NAMED("arena", p);
}

__attribute__((noinline)) static void scratch(void)
{
	static char buf[4][64];

	for (int i = 0; i < 4; i++)
		TA_ALLOC(buf[i], 64);
	for (int i = 0; i < 4; i++)
		TA_FREE(buf[i]);
}

__attribute__((noinline)) static void job_step(void)
{
	TA_ZONE("step");
	sink++;
}

static void *other_thread(void *arg)
{
	(void)arg;
	TA_FIBER_ENTER("job A");
	job_step();
	TA_FIBER_LEAVE();
	return NULL;
}

int main(void)
{
	void *blocks[10];
	pthread_t th;

	for (int i = 0; i < 10; i++)
		blocks[i] = arena_get(100);
	for (int i = 0; i < 7; i++)
		arena_put(blocks[i]);
	arena_put(&other);
	arena_put(NULL);
	scratch();

	TA_LOCK_NAME(&cache_lock, "cache lock");
	TA_LOCK_NAME(&stats_lock, "stats");
	for (int i = 0; i < 5; i++) {
		pthread_mutex_lock(&cache_lock);
		sink++;
		pthread_mutex_unlock(&cache_lock);
	}
	for (int i = 0; i < 2; i++) {
		pthread_mutex_lock(&stats_lock);
		sink++;
		pthread_mutex_unlock(&stats_lock);
	}

	for (int i = 0; i < 3; i++) {
		pthread_mutex_lock(&late_lock);
		sink++;
		pthread_mutex_unlock(&late_lock);
	}

	TA_FIBER_ENTER("job A");
	job_step();
	TA_FIBER_LEAVE();
	if (pthread_create(&th, NULL, other_thread, NULL) != 0 || pthread_join(th, NULL) != 0)
		return 1;
	TA_FIBER_ENTER("job B");
	job_step();
	TA_FIBER_LEAVE();
	TA_FIBER_LEAVE(); /* no fiber: nothing */

	/* Hostile names: NULL, and longer than the agent keeps. */
	memset(long_name, 'x', sizeof(long_name) - 1);
	TA_FIBER_ENTER(NULL);
	TA_FIBER_LEAVE();
	TA_FIBER_ENTER(long_name);
	TA_FIBER_LEAVE();
	TA_LOCK_NAME(&other, NULL);
	TA_LOCK_NAME(&sink, long_name);
	TA_LOCK_NAME(&late_lock, "late lock");
	return 0;
}
