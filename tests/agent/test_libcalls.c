/* SPDX-License-Identifier: MIT */
/*
 * test_libcalls.c - agent/libcalls.c's interposers, linked into this
 * program as they are into a preloaded agent's: the functions of each
 * class (TA_LC_*) and any mask of them that `traceagent attach` asks for
 * (ta_libcalls_got_syms), each with the interposer's address, the real
 * function's (RTLD_NEXT's, libc's) and whether an unbound entry may be
 * taken; and, with no class armed, calls that go straight to libc with
 * its results and errno.  The lists here are written out, not taken from
 * libcalls.c, so that a function moved to another class fails the test.
 */
#define _GNU_SOURCE
#include <check.h>

#include "../check_run.h"
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format.h"
#include "got.h"
#include "libcalls.h"

static const char *const alloc_fns[] = {"malloc", "calloc",	    "realloc",	     "reallocarray",
					"free",	  "posix_memalign", "aligned_alloc", "memalign",
					"valloc", "pvalloc"};
static const char *const lock_fns[] = {"pthread_mutex_lock",
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
				       "sem_trywait"};
static const char *const io_fns[] = {
    "read",	"write",      "pread",	     "pread64",	      "pwrite",	    "pwrite64",
    "readv",	"writev",     "open",	     "open64",	      "openat",	    "openat64",
    "close",	"fsync",      "fdatasync",   "recv",	      "recvfrom",   "send",
    "sendto",	"__read_chk", "__pread_chk", "__pread64_chk", "__recv_chk", "__recvfrom_chk",
    "__open_2", "__open64_2", "__openat_2",  "__openat64_2"};
static const char *const sleep_fns[] = {"nanosleep",   "clock_nanosleep", "usleep", "sleep",
					"poll",	       "__poll_chk",	  "ppoll",  "epoll_wait",
					"epoll_pwait", "select",	  "pselect"};

#define N(a) (sizeof(a) / sizeof((a)[0]))

static const struct {
	uint32_t cls;
	const char *const *names;
	size_t n;
} classes[] = {
    {TA_LC_ALLOC, alloc_fns, N(alloc_fns)},
    {TA_LC_LOCK, lock_fns, N(lock_fns)},
    {TA_LC_IO, io_fns, N(io_fns)},
    {TA_LC_SLEEP, sleep_fns, N(sleep_fns)},
};

#define MAXSYMS 128

/* The expected rows for mask, in the table's order (classes in the
 * order above, which is libcalls.c's). */
static size_t expected(uint32_t mask, const char **out)
{
	size_t n = 0;

	for (size_t c = 0; c < N(classes); c++)
		if (classes[c].cls & mask)
			for (size_t i = 0; i < classes[c].n; i++)
				out[n++] = classes[c].names[i];
	return n;
}

static void check_mask(uint32_t mask)
{
	struct ta_got_sym got[MAXSYMS];
	const char *want[MAXSYMS];
	size_t n = ta_libcalls_got_syms(mask, got, MAXSYMS), nwant = expected(mask, want);

	ck_assert_msg(n == nwant, "mask %#x: %zu functions, want %zu", mask, n, nwant);
	for (size_t i = 0; i < n; i++) {
		void *own = dlsym(RTLD_DEFAULT, want[i]), *real = dlsym(RTLD_NEXT, want[i]);
		Dl_info di;

		ck_assert_str_eq(got[i].name, want[i]);
		/* The interposer: this program's definition, first in the
		 * lookup order. */
		ck_assert_msg(own && got[i].to == (uintptr_t)own, "%s: to %#lx, want %p", want[i],
			      (unsigned long)got[i].to, own);
		/* The real one: the next definition, in libc (or the loader's
		 * libraries for none). */
		ck_assert_msg(real && got[i].real == (uintptr_t)real, "%s: real %#lx, want %p",
			      want[i], (unsigned long)got[i].real, real);
		ck_assert(dladdr(real, &di) && di.dli_fname);
		ck_assert_msg(strstr(di.dli_fname, "libc.so"), "%s: real one in %s", want[i],
			      di.dli_fname);
		/* pthread_cond_* have two versions: an unbound entry is not
		 * taken, it may want the old one. */
		ck_assert_int_eq(got[i].lazy, strncmp(want[i], "pthread_cond_", 13) != 0);
	}
}

START_TEST(each_class)
{
	const uint32_t masks[] = {TA_LC_ALLOC, TA_LC_LOCK, TA_LC_IO, TA_LC_SLEEP};

	check_mask(masks[_i]);
}
END_TEST

START_TEST(masks)
{
	struct ta_got_sym got[MAXSYMS];

	check_mask(TA_LC_ALLOC | TA_LC_SLEEP);
	check_mask(TA_LC_LOCK | TA_LC_IO);
	check_mask(TA_LC_ALLOC | TA_LC_LOCK | TA_LC_IO | TA_LC_SLEEP);
	ck_assert_uint_eq(N(alloc_fns) + N(lock_fns) + N(io_fns) + N(sleep_fns), 65);
	/* No class, none; bits of no class, none. */
	ck_assert_uint_eq(ta_libcalls_got_syms(0, got, MAXSYMS), 0);
	ck_assert_uint_eq(ta_libcalls_got_syms(~(TA_LC_ALLOC | TA_LC_LOCK | TA_LC_IO | TA_LC_SLEEP),
					       got, MAXSYMS),
			  0);
	/* At most max, the first ones. */
	ck_assert_uint_eq(ta_libcalls_got_syms(TA_LC_IO, got, 3), 3);
	ck_assert_str_eq(got[0].name, "read");
	ck_assert_str_eq(got[2].name, "pread");
	ck_assert_uint_eq(ta_libcalls_got_syms(TA_LC_IO, got, 0), 0);
}
END_TEST

START_TEST(unarmed_calls_are_libcs)
{
	int fd[2];
	char buf[8];
	void *p;

	/* No class armed (TRACEAGENT_LIBCALLS unset): libc's answers. */
	ck_assert_int_eq(pipe(fd), 0);
	ck_assert_int_eq(write(fd[1], "abc", 3), 3);
	ck_assert_int_eq(read(fd[0], buf, sizeof(buf)), 3);
	ck_assert_int_eq(memcmp(buf, "abc", 3), 0);
	ck_assert_int_eq(close(fd[0]), 0);
	ck_assert_int_eq(close(fd[1]), 0);
	errno = 0;
	ck_assert_int_eq(read(fd[0], buf, 1), -1);
	ck_assert_int_eq(errno, EBADF);
	errno = 0;
	ck_assert_int_eq(close(-1), -1);
	ck_assert_int_eq(errno, EBADF);
	p = malloc(100);
	ck_assert_ptr_nonnull(p);
	memset(p, 1, 100);
	p = realloc(p, 1000);
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(((unsigned char *)p)[99], 1);
	free(p);
	ck_assert_int_eq(posix_memalign(&p, 4096, 10), 0);
	ck_assert_uint_eq((uintptr_t)p % 4096, 0);
	free(p);
	ck_assert_int_eq(posix_memalign(&p, 3, 10), EINVAL);
}
END_TEST

static Suite *libcalls_suite(void)
{
	Suite *s = suite_create("libcalls");
	TCase *tc = tcase_create("libcalls");

	tcase_add_loop_test(tc, each_class, 0, 4);
	tcase_add_test(tc, masks);
	tcase_add_test(tc, unarmed_calls_are_libcs);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ta_check_run(libcalls_suite());
}
