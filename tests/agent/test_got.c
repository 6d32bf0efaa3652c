/* SPDX-License-Identifier: MIT */
/*
 * test_got.c - the hook entries of the modules pointed at other hooks and
 * put back (agent/got.c) while another thread dlopens and dlcloses an
 * instrumented library as fast as it can, as `traceagent attach` does on
 * a program that loads plugins: a put-back must never write into a module
 * dlclose'd meanwhile (a crash, or a write into what was mapped there
 * since), and an entry taken in a module that is still loaded is put back
 * exactly.
 */
#define _GNU_SOURCE
#include <check.h>

#include "../check_run.h"
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "got.h"

static unsigned long n_enter, n_exit;

static void my_enter(void *fn, void *site)
{
	(void)fn;
	(void)site;
	__atomic_fetch_add(&n_enter, 1, __ATOMIC_RELAXED);
}

static void my_exit(void *fn, void *site)
{
	(void)fn;
	(void)site;
	__atomic_fetch_add(&n_exit, 1, __ATOMIC_RELAXED);
}

static int stop;
static unsigned long loads;

static void *dlloop(void *arg)
{
	const char *lib = arg;

	/* Acquire: pairs with the release in the test's end. */
	while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
		void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
		int (*square)(int);

		ck_assert_msg(h != NULL, "dlopen %s: %s", lib, dlerror());
		square = (int (*)(int))(uintptr_t)dlsym(h, "sample_square");
		ck_assert_int_eq(square(7), 49);
		dlclose(h);
		loads++;
	}
	return NULL;
}

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

START_TEST(restore_races_dlclose)
{
	const char *lib = getenv("TA_LIBSAMPLE");
	struct ta_got g = {(uintptr_t)&my_enter, (uintptr_t)&my_exit, NULL, 0, 0};
	pthread_t th;
	unsigned long rounds = 0, taken = 0;
	double t0 = now();

	ck_assert_msg(lib != NULL, "TA_LIBSAMPLE is not set");
	ck_assert_int_eq(pthread_create(&th, NULL, dlloop, (void *)(uintptr_t)lib), 0);
	/* 3 s, or 200,000 rounds: the window between a look at the loaded
	 * modules and a write is some instructions long, and the dlclose's
	 * unmapping lands in it within a second here. */
	while (now() - t0 < 3 && rounds < 200000) {
		ck_assert_int_eq(ta_got_redirect(&g), 0);
		taken += g.n;
		ta_got_restore(&g);
		ck_assert_uint_eq(g.n, 0);
		rounds++;
	}
	/* Release: pairs with the acquire in dlloop. */
	__atomic_store_n(&stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	free(g.slots);
	/* Both raced: the library's entries were taken in some rounds. */
	ck_assert_uint_gt(loads, 10);
	ck_assert_uint_gt(taken, 0);
}
END_TEST

START_TEST(restore_exact)
{
	const char *lib = getenv("TA_LIBSAMPLE");
	struct ta_got g = {(uintptr_t)&my_enter, (uintptr_t)&my_exit, NULL, 0, 0};
	void *h;
	int (*square)(int);

	ck_assert_msg(lib != NULL, "TA_LIBSAMPLE is not set");
	h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	ck_assert_msg(h != NULL, "dlopen %s: %s", lib, dlerror());
	square = (int (*)(int))(uintptr_t)dlsym(h, "sample_square");
	ck_assert_int_eq(ta_got_redirect(&g), 0);
	/* sample_square calls sample_twice: two entries, two exits. */
	ck_assert_int_eq(square(3), 9);
	ck_assert_uint_eq(n_enter, 2);
	ck_assert_uint_eq(n_exit, 2);
	ta_got_restore(&g);
	ck_assert_int_eq(square(3), 9);
	ck_assert_uint_eq(n_enter, 2);
	ck_assert_uint_eq(n_exit, 2);
	/* A module dlclose'd before the put-back: nothing written there. */
	ck_assert_int_eq(ta_got_redirect(&g), 0);
	dlclose(h);
	ta_got_restore(&g);
	ck_assert_uint_eq(g.n, 0);
	free(g.slots);
}
END_TEST

static Suite *got_suite(void)
{
	Suite *s = suite_create("got");
	TCase *tc = tcase_create("got");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, restore_exact);
	tcase_add_test(tc, restore_races_dlclose);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ta_check_run(got_suite());
}
