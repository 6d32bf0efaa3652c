/* SPDX-License-Identifier: MIT */
/*
 * interpose.c - libc functions the agent wraps: thread creation and
 * naming (thread identity in the dump) and the exits that skip
 * destructors (so every event reaches the dump).
 *
 * Each wrapper finds the real function with dlsym(RTLD_NEXT) once and
 * preserves errno as the real function left it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent.h"

#define TA_PUBLIC __attribute__((visibility("default")))

struct start_args {
	void *(*fn)(void *);
	void *arg;
	uint64_t ptid;
};

static void *thread_start(void *p)
{
	struct start_args a = *(struct start_args *)p;

	free(p);
	ta_thread_set_parent(a.ptid);
	return a.fn(a.arg);
}

TA_PUBLIC int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *),
			     void *arg)
{
	struct start_args *a = malloc(sizeof(*a));
	struct ta_thread *me = ta_thread_self();
	int err;

	if (!a) /* no wrapper: the thread runs, its parent is unknown */
		return ta_real_pthread_create(t, attr, fn, arg);
	a->fn = fn;
	a->arg = arg;
	a->ptid = me ? me->tid : (uint64_t)syscall(SYS_gettid);
	err = ta_real_pthread_create(t, attr, thread_start, a);
	if (err)
		free(a);
	return err;
}

TA_PUBLIC int pthread_setname_np(pthread_t thread, const char *name)
{
	static int (*real_pthread_setname_np)(pthread_t, const char *);
	int err;

	if (!real_pthread_setname_np)
		real_pthread_setname_np =
			(int (*)(pthread_t, const char *))dlsym(RTLD_NEXT, "pthread_setname_np");

	if (!real_pthread_setname_np)
		return ENOSYS;
	err = real_pthread_setname_np(thread, name);
	if (!err)
		ta_thread_set_name((unsigned long)thread, name);
	return err;
}

TA_PUBLIC int prctl(int option, ...)
{
	unsigned long a[4];
	va_list ap;
	long ret;

	/* prctl is variadic; every option takes at most four more words,
	 * and passing unused ones is what libc does too. */
	va_start(ap, option);
	for (int i = 0; i < 4; i++)
		a[i] = va_arg(ap, unsigned long);
	va_end(ap);
	ret = syscall(SYS_prctl, option, a[0], a[1], a[2], a[3]);
	if (ret == 0 && option == PR_SET_NAME && a[0]) {
		int saved = errno;
		ta_thread_set_name((unsigned long)pthread_self(), (const char *)a[0]);
		errno = saved;
	}
	return (int)ret;
}

/* A library loaded later joins the module map, so its addresses resolve. */
TA_PUBLIC void *dlopen(const char *file, int mode)
{
	static void *(*real_dlopen)(const char *, int);
	uint64_t t0 = ta_ticks();
	void *h;

	if (!real_dlopen)
		real_dlopen = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");
	if (!real_dlopen)
		return NULL;
	h = real_dlopen(file, mode);
	if (h && __atomic_load_n(&ta_state, __ATOMIC_ACQUIRE) == TA_S_RUNNING) {
		int saved = errno;
		ta_dump_modules(t0);
		errno = saved;
	}
	return h;
}

static __attribute__((noreturn)) void exit_now(const char *name, int status)
{
	void (*real)(int) = (void (*)(int))dlsym(RTLD_NEXT, name);

	ta_agent_shutdown();
	if (real)
		real(status);
	syscall(SYS_exit_group, status);
	__builtin_unreachable();
}

TA_PUBLIC void _exit(int status)
{
	exit_now("_exit", status);
}

TA_PUBLIC void _Exit(int status)
{
	exit_now("_Exit", status);
}
