/* SPDX-License-Identifier: MIT */
/*
 * test_walk.c - the agent's walks of the loaded objects against a fork
 * (agent/lazylib.c, walk.h): the fork's prepare step waits until a walk of
 * ta_walk_objects under way has ended, and a walk that would begin while a
 * fork is under way waits for it.  The test links the agent's core without
 * its interposers, so its calls reach libc's dl_iterate_phdr directly, as an
 * injected agent's do: the count must come from ta_walk_objects itself.
 */
#define _GNU_SOURCE
#include <check.h>

#include "../check_run.h"
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include "lazylib.h"
#include "walk.h"

static int in_walk;	 /* atomic: the walker's callback began */
static uint64_t cb_done; /* atomic: when its slow first call ended (ns) */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The first object takes 200 ms: a walk a fork could land in. */
static int slow_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	struct timespec nap = {0, 200 * 1000 * 1000};

	(void)info;
	(void)size;
	(void)data;
	if (__atomic_exchange_n(&in_walk, 1, __ATOMIC_SEQ_CST))
		return 0;
	nanosleep(&nap, NULL);
	__atomic_store_n(&cb_done, now_ns(), __ATOMIC_SEQ_CST);
	return 0;
}

static void *walker(void *arg)
{
	(void)arg;
	ta_walk_objects(slow_cb, NULL);
	return NULL;
}

START_TEST(a_fork_waits_for_a_walk_under_way)
{
	pthread_t t;
	uint64_t prepared;

	ck_assert_int_eq(pthread_create(&t, NULL, walker, NULL), 0);
	for (int ms = 0; ms < 10000 && !__atomic_load_n(&in_walk, __ATOMIC_SEQ_CST); ms++)
		usleep(1000);
	ck_assert_int_eq(__atomic_load_n(&in_walk, __ATOMIC_SEQ_CST), 1);
	ta_lazy_fork_prepare();
	prepared = now_ns();
	ta_lazy_fork_parent();
	/* The walk's slow call ended before the fork could go on. */
	ck_assert_uint_ne(__atomic_load_n(&cb_done, __ATOMIC_SEQ_CST), 0);
	ck_assert_uint_le(__atomic_load_n(&cb_done, __ATOMIC_SEQ_CST), prepared);
	pthread_join(t, NULL);
}
END_TEST

START_TEST(a_walk_waits_for_a_fork_under_way)
{
	pthread_t t;
	struct timespec nap = {0, 100 * 1000 * 1000};

	ta_lazy_fork_prepare();
	ck_assert_int_eq(pthread_create(&t, NULL, walker, NULL), 0);
	nanosleep(&nap, NULL);
	ck_assert_int_eq(__atomic_load_n(&in_walk, __ATOMIC_SEQ_CST), 0);
	ta_lazy_fork_parent();
	pthread_join(t, NULL);
	ck_assert_int_eq(__atomic_load_n(&in_walk, __ATOMIC_SEQ_CST), 1);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("walk");
	TCase *tc = tcase_create("walk");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, a_fork_waits_for_a_walk_under_way);
	tcase_add_test(tc, a_walk_waits_for_a_fork_under_way);
	suite_add_tcase(s, tc);
	return ta_check_run(s);
}
