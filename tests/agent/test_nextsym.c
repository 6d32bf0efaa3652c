/* SPDX-License-Identifier: MIT */
/*
 * test_nextsym.c - ta_next_sym (agent/nextsym.c) gives what
 * dlsym(RTLD_NEXT) gives, for every function the agent interposes: the
 * default version of a name libc has in several (pthread_cond_wait,
 * sem_wait, dlopen...), a definition in a library ahead of libc
 * (nextshim.c's usleep), nothing for a name nobody defines; it answers
 * for every one of them here (none is left to dlsym) and in a signal
 * handler without allocating.
 */
#define _GNU_SOURCE
#include <check.h>

#include "../check_run.h"
#include <dlfcn.h>
#include <malloc.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "nextsym.h"

extern int nextshim_calls;

/* What the agent interposes (libcalls.c, ctlflow.c, interpose.c, agent.c). */
static const char *const names[] = {"malloc",
				    "calloc",
				    "realloc",
				    "reallocarray",
				    "free",
				    "posix_memalign",
				    "aligned_alloc",
				    "memalign",
				    "valloc",
				    "pvalloc",
				    "pthread_mutex_lock",
				    "pthread_mutex_trylock",
				    "pthread_mutex_timedlock",
				    "pthread_mutex_unlock",
				    "pthread_rwlock_rdlock",
				    "pthread_rwlock_wrlock",
				    "pthread_rwlock_tryrdlock",
				    "pthread_rwlock_trywrlock",
				    "pthread_rwlock_timedrdlock",
				    "pthread_rwlock_timedwrlock",
				    "pthread_rwlock_unlock",
				    "pthread_cond_wait",
				    "pthread_cond_timedwait",
				    "sem_wait",
				    "sem_timedwait",
				    "sem_trywait",
				    "read",
				    "write",
				    "pread",
				    "pread64",
				    "pwrite",
				    "pwrite64",
				    "readv",
				    "writev",
				    "open",
				    "open64",
				    "openat",
				    "openat64",
				    "close",
				    "fsync",
				    "fdatasync",
				    "recv",
				    "recvfrom",
				    "send",
				    "sendto",
				    "__read_chk",
				    "__pread_chk",
				    "__pread64_chk",
				    "__recv_chk",
				    "__recvfrom_chk",
				    "__open_2",
				    "__open64_2",
				    "__openat_2",
				    "__openat64_2",
				    "nanosleep",
				    "clock_nanosleep",
				    "sleep",
				    "poll",
				    "__poll_chk",
				    "ppoll",
				    "epoll_wait",
				    "epoll_pwait",
				    "select",
				    "pselect",
				    "_setjmp",
				    "setjmp",
				    "__sigsetjmp",
				    "longjmp",
				    "_longjmp",
				    "siglongjmp",
				    "__longjmp_chk",
				    "pthread_create",
				    "pthread_setname_np",
				    "dlopen",
				    "dlclose",
				    "pthread_exit",
				    "execve",
				    "execvpe",
				    "fexecve",
				    "_exit",
				    "_Exit"};

START_TEST(same_as_dlsym)
{
	ck_assert_int_eq(ta_next_ready(), 1);
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		void *want = dlsym(RTLD_NEXT, names[i]);

		ck_assert_msg(want != NULL, "%s: not in libc?", names[i]);
		ck_assert_msg(ta_next_sym(names[i]) == want, "%s: %p, dlsym %p", names[i],
			      ta_next_sym(names[i]), want);
		ck_assert_ptr_eq(ta_next_fn(names[i]), want);
	}
}
END_TEST

START_TEST(default_version)
{
#if defined(__x86_64__)
	/* The condvar of glibc 2.3.2, not the old one dlsym once gave. */
	ck_assert_ptr_eq(ta_next_sym("pthread_cond_wait"),
			 dlvsym(RTLD_NEXT, "pthread_cond_wait", "GLIBC_2.3.2"));
	ck_assert_ptr_ne(ta_next_sym("pthread_cond_wait"),
			 dlvsym(RTLD_NEXT, "pthread_cond_wait", "GLIBC_2.2.5"));
#if !defined(__SANITIZE_ADDRESS__)
	/* (Under AddressSanitizer the next sem_wait is libasan's interceptor,
	 * which has no version: dlsym's answer too, not dlvsym's.) */
	ck_assert_ptr_eq(ta_next_sym("sem_wait"), dlvsym(RTLD_NEXT, "sem_wait", "GLIBC_2.34"));
#endif
#endif
}
END_TEST

START_TEST(library_ahead_of_libc)
{
	void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD);
	int (*f)(useconds_t) = (int (*)(useconds_t))ta_next_sym("usleep");

	ck_assert_ptr_nonnull(libc);
	ck_assert_ptr_eq((void *)f, (void *)usleep);
	ck_assert_ptr_ne((void *)f, dlsym(libc, "usleep"));
	ck_assert_int_eq(f(1), 0);
	ck_assert_int_eq(nextshim_calls, 1);
	dlclose(libc);
}
END_TEST

START_TEST(unknown_name)
{
	ck_assert_ptr_null(ta_next_sym("ta_nextsym_no_such_function"));
	ck_assert_ptr_null(ta_next_fn("ta_nextsym_no_such_function"));
}
END_TEST

/* In a handler: the same answer, and nothing allocated (the heap's
 * figures are the same after). */
static void *in_handler;

static void on_usr1(int sig)
{
	(void)sig;
	in_handler = ta_next_sym("siglongjmp");
}

START_TEST(in_signal_handler)
{
	struct mallinfo2 before, after;

	ck_assert_int_eq(ta_next_ready(), 1);
	signal(SIGUSR1, on_usr1);
	before = mallinfo2();
	raise(SIGUSR1);
	after = mallinfo2();
	ck_assert_ptr_eq(in_handler, dlsym(RTLD_NEXT, "siglongjmp"));
	ck_assert_uint_eq(before.uordblks, after.uordblks);
	ck_assert_uint_eq(before.hblks, after.hblks);
}
END_TEST

static Suite *nextsym_suite(void)
{
	Suite *s = suite_create("nextsym");
	TCase *tc = tcase_create("nextsym");

	tcase_add_test(tc, same_as_dlsym);
	tcase_add_test(tc, default_version);
	tcase_add_test(tc, library_ahead_of_libc);
	tcase_add_test(tc, unknown_name);
	tcase_add_test(tc, in_signal_handler);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ta_check_run(nextsym_suite());
}
