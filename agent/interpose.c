/* SPDX-License-Identifier: MIT */
/*
 * interpose.c - libc functions the agent wraps: thread creation and
 * naming (thread identity in the dump), dlopen and dlclose (the module map,
 * patching new modules), dl_iterate_phdr (the agent's own dlopen waits for
 * the program's walks, lazylib.c), sigaltstack and sigaction (the agent's own
 * alternate stacks and signal handlers stay unseen), the exec family (what
 * was recorded is written before the image goes), the exits that skip
 * destructors (so every event reaches the dump), and what unwinds the stack
 * (C++ exceptions, pthread_exit: patched frames get their return addresses
 * back first).
 *
 * Each wrapper finds the real function, RTLD_NEXT's, once (nextsym.h) and
 * preserves errno as the real function left it.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "agent.h"
#include "clock.h"
#include "crash.h"
#include "dump.h"
#include "filter.h"
#include "got.h"
#include "lazylib.h"
#include "modules.h"
#include "nextsym.h"
#include "patch.h"
#include "ring.h"

#define TA_PUBLIC __attribute__((visibility("default")))

/* The next definition of name (libc's, or another preloaded library's),
 * looked up at the first call (nextsym.h: without dlsym where it can,
 * which _exit or execve from a signal handler needs). */
#define REAL_FN(var, name, type)                                                                   \
	static type var;                                                                           \
	if (!var)                                                                                  \
	var = (type)ta_next_fn(name)

struct start_args {
	void *(*fn)(void *);
	void *arg;
	uint64_t ptid;
};

static void *thread_start(void *p)
{
	struct start_args a = *(struct start_args *)p;

	TA_GUARD_ENTER(); /* the agent's own allocation */
	free(p);
	TA_GUARD_LEAVE();
	ta_thread_set_parent(a.ptid);
	return a.fn(a.arg);
}

TA_PUBLIC int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *),
			     void *arg)
{
	struct start_args *a;
	struct ta_thread *me = ta_thread_self();
	int err;

	TA_GUARD_ENTER(); /* the agent's own allocation */
	a = malloc(sizeof(*a));
	TA_GUARD_LEAVE();
	if (!a) /* no wrapper: the thread runs, its parent is unknown */
		return ta_real_pthread_create(t, attr, fn, arg);
	a->fn = fn;
	a->arg = arg;
	a->ptid = me ? me->tid : (uint64_t)syscall(SYS_gettid);
	err = ta_real_pthread_create(t, attr, thread_start, a);
	if (err) {
		TA_GUARD_ENTER();
		free(a);
		TA_GUARD_LEAVE();
	}
	return err;
}

typedef int (*setname_fn)(pthread_t, const char *);

TA_PUBLIC int pthread_setname_np(pthread_t thread, const char *name)
{
	int err;

	REAL_FN(real_pthread_setname_np, "pthread_setname_np", setname_fn);
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
typedef void *(*dlopen_fn)(const char *, int);
typedef int (*dlclose_fn)(void *);

TA_PUBLIC void *dlopen(const char *file, int mode)
{
	uint64_t t0 = ta_ticks();
	void *h;

	REAL_FN(real_dlopen, "dlopen", dlopen_fn);
	if (!real_dlopen)
		return NULL;
	h = real_dlopen(file, mode);
	if (h && __atomic_load_n(&ta_state, __ATOMIC_ACQUIRE) == TA_S_RUNNING) {
		int saved = errno, own = ta_guard != 0;
		/* Loads from when the dlopen began (constructors ran inside
		 * it); anything gone went before it. */
		TA_GUARD_ENTER();
		ta_dump_modules(t0, t0);
		/* Its hooks' entries bound, as the start binds the others
		 * (not for the agent's own loads: they make no hook calls). */
		if (!own)
			ta_got_bind_hooks();
		TA_GUARD_LEAVE();
		errno = saved;
	}
	/* Before dlopen returns, the program cannot know the new functions'
	 * addresses from it (see patch.c for what remains). */
	/* Not for the agent's own loads (inside agent code), which the next
	 * load of the program's looks at: capstone is opened while filter.c
	 * rewrites an excluded function of a library just loaded, under the
	 * lock this would take again; and the flusher's load of libunwind
	 * would wait here for the patchers' lock while a program thread,
	 * patching what its own dlopen brought under that lock, waits in its
	 * walk of the loaded objects for the flusher's load to end. */
	if (h && !ta_guard) {
		ta_patch_after_dlopen();
		ta_filter_after_dlopen();
	}
	return h;
}

/* A library unloaded leaves the module map at the time dlclose returned:
 * its code is gone by then, and another may be mapped at its place. */
TA_PUBLIC int dlclose(void *handle)
{
	int rc;

	REAL_FN(real_dlclose, "dlclose", dlclose_fn);
	if (!real_dlclose)
		return -1;
	rc = real_dlclose(handle);
	if (rc == 0) {
		ta_patch_after_dlclose(); /* loaded again, patched again */
		ta_filter_after_dlclose();
	}
	if (rc == 0 && __atomic_load_n(&ta_state, __ATOMIC_ACQUIRE) == TA_S_RUNNING) {
		int saved = errno;
		uint64_t now = ta_ticks();

		TA_GUARD_ENTER();
		ta_dump_modules(now, now);
		TA_GUARD_LEAVE();
		errno = saved;
	}
	return rc;
}

typedef int (*walk_cb)(struct dl_phdr_info *, size_t, void *);
typedef int (*walk_fn)(walk_cb, void *);

/* A walk of the loaded objects: the program's counted, so that the
 * agent's dlopen never runs beside it; the agent's own (in its guard)
 * counted apart, so that a fork never copies one half done (lazylib.c).  The real one by dlsym, not
 * ta_next_fn: finding symbols without dlsym walks the objects itself (nextsym.c), through here. */
TA_PUBLIC int dl_iterate_phdr(walk_cb cb, void *data)
{
	static walk_fn real_walk_at;
	/* Relaxed: each thread that finds none looks it up itself, the same
	 * pointer. */
	walk_fn real_walk = __atomic_load_n(&real_walk_at, __ATOMIC_RELAXED);
	int rc;

	if (!real_walk) {
		real_walk = (walk_fn)dlsym(RTLD_NEXT, "dl_iterate_phdr");
		if (!real_walk)
			return 0;
		__atomic_store_n(&real_walk_at, real_walk, __ATOMIC_RELAXED);
	}
	if (ta_guard) {
		ta_lazy_own_enter();
		rc = real_walk(cb, data);
		ta_lazy_own_leave();
		return rc;
	}
	ta_lazy_walk_enter();
	rc = real_walk(cb, data);
	ta_lazy_walk_leave();
	return rc;
}

/* The alternate signal stack the agent gives a thread (crash.c) is not
 * the program's: asked, we say there is none, as untraced.  While a
 * handler runs on it, the truth (it is in use) is told. */
TA_PUBLIC int sigaltstack(const stack_t *ss, stack_t *old)
{
	long rc = syscall(SYS_sigaltstack, ss, old);

	if (rc == 0 && old && !(old->ss_flags & (SS_ONSTACK | SS_DISABLE)) &&
	    ta_crash_altstack_is_ours(old->ss_sp)) {
		old->ss_sp = NULL;
		old->ss_size = 0;
		old->ss_flags = SS_DISABLE;
	}
	return (int)rc;
}

/* ---- signal actions: the agent's handlers stay unseen (crash.c) ---------- */

TA_PUBLIC int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	return ta_signal_action(sig, act, old);
}

/* signal() as glibc has it (BSD semantics): the handler stays, the signal
 * is blocked while it runs, system calls restart. */
static sighandler_t signal_with(int sig, sighandler_t h, int flags)
{
	struct sigaction sa, old;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = h;
	sigemptyset(&sa.sa_mask);
	if (!(flags & SA_NODEFER) && sig > 0 && sig < _NSIG)
		sigaddset(&sa.sa_mask, sig);
	sa.sa_flags = flags;
	if (h == SIG_ERR || ta_signal_action(sig, &sa, &old) < 0) {
		if (h == SIG_ERR)
			errno = EINVAL;
		return SIG_ERR;
	}
	return old.sa_handler;
}

TA_PUBLIC sighandler_t signal(int sig, sighandler_t h)
{
	return signal_with(sig, h, SA_RESTART);
}

TA_PUBLIC sighandler_t bsd_signal(int sig, sighandler_t h);
sighandler_t bsd_signal(int sig, sighandler_t h)
{
	return signal_with(sig, h, SA_RESTART);
}

/* System V semantics: the action back to the default at delivery, the
 * signal not blocked in its handler. */
TA_PUBLIC sighandler_t sysv_signal(int sig, sighandler_t h)
{
	return signal_with(sig, h, SA_RESETHAND | SA_NODEFER);
}

TA_PUBLIC sighandler_t __sysv_signal(int sig, sighandler_t h);
sighandler_t __sysv_signal(int sig, sighandler_t h)
{
	return signal_with(sig, h, SA_RESETHAND | SA_NODEFER);
}

/* ---- unwinding through patched frames ------------------------------------
 *
 * A patched frame's return address is the agent's return stub, which the
 * unwinder cannot unwind through: before a C++ exception is raised (throw,
 * rethrow, std::rethrow_exception) the real addresses go back; when it is
 * caught, the frames still alive are patched again.  pthread_exit unwinds
 * the thread's stack too.  (pthread_cancel's unwinding is not seen:
 * docs/limits.md.)
 */

struct _Unwind_Exception;
typedef int (*raise_fn)(struct _Unwind_Exception *);
typedef void (*pthread_exit_fn)(void *);

TA_PUBLIC int _Unwind_RaiseException(struct _Unwind_Exception *e);
TA_PUBLIC int _Unwind_Resume_or_Rethrow(struct _Unwind_Exception *e);

int _Unwind_RaiseException(struct _Unwind_Exception *e)
{
	REAL_FN(real, "_Unwind_RaiseException", raise_fn);
	ta_patch_unwind_begin();
	return real ? real(e) : 5 /* _URC_FATAL_PHASE1_ERROR */;
}

int _Unwind_Resume_or_Rethrow(struct _Unwind_Exception *e)
{
	REAL_FN(real, "_Unwind_Resume_or_Rethrow", raise_fn);
	ta_patch_unwind_begin();
	return real ? real(e) : 5;
}

TA_PUBLIC void pthread_exit(void *ret)
{
	REAL_FN(real, "pthread_exit", pthread_exit_fn);
	/* The frames end here; the unwinder must see their real return
	 * addresses. */
	ta_patch_restore(1);
	if (real)
		real(ret);
	syscall(SYS_exit, 0);
	__builtin_unreachable();
}

/* ---- exec: what was recorded reaches the dump before the image goes ---- */

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);

/* Every variant goes through one with an explicit environment: the new
 * image's is the program's, plus the agent's handover of the dump
 * (ta_agent_before_exec); the program's own environment is not touched. */
static int exec_with(execve_fn real_path, fexecve_fn real_fd, const char *path, int fd,
		     char *const argv[], char *const envp[])
{
	char **env, **run;
	const char *token;
	int rc, err;

	if (!(real_path || real_fd)) {
		errno = ENOSYS;
		return -1;
	}
	env = run = ta_agent_before_exec(envp);
	/* Nothing handed over (no agent running here, a vfork child): the
	 * recording's file still goes to the new image, on this stack (no
	 * allocation in a vfork child; the exec replaces it). */
	if (env == (char **)(uintptr_t)envp && (token = ta_dump_pass_token(envp))) {
		size_t n = 0;

		while (envp[n])
			n++;
		if (n < (1u << 16)) {
			run = __builtin_alloca((n + 2) * sizeof(*run));
			memcpy(run, envp, n * sizeof(*run));
			run[n] = (char *)(uintptr_t)token;
			run[n + 1] = NULL;
		}
	}
	rc = real_path ? real_path(path, argv, run) : real_fd(fd, argv, run);
	/* Only a failed exec returns: recording goes on here. */
	err = errno;
	ta_agent_exec_failed(env, envp);
	errno = err;
	return rc;
}

/* ---- posix_spawn: the recording's file to the child ---- */

typedef int (*spawn_fn)(pid_t *, const char *, const posix_spawn_file_actions_t *,
			const posix_spawnattr_t *, char *const[], char *const[]);

/* The child's environment: envp plus the recording's file when it lacks
 * it (the agent's own token, or the one this process's children are to
 * share); a program's environment of its own making included. */
static int spawn_with(spawn_fn real, pid_t *pid, const char *path,
		      const posix_spawn_file_actions_t *fa, const posix_spawnattr_t *attr,
		      char *const argv[], char *const envp[])
{
	const char *token;
	char **env = NULL;
	size_t n = 0;
	int rc;

	if (!real)
		return ENOSYS;
	TA_GUARD_ENTER(); /* the agent's allocation, not the program's */
	token = ta_dump_pass_token(envp);
	if (token) {
		while (envp[n])
			n++;
		env = malloc((n + 2) * sizeof(*env));
		if (env) {
			memcpy(env, envp, n * sizeof(*env));
			env[n] = (char *)(uintptr_t)token;
			env[n + 1] = NULL;
		}
	}
	TA_GUARD_LEAVE();
	rc = real(pid, path, fa, attr, argv, env ? env : envp);
	TA_GUARD_ENTER();
	free(env);
	TA_GUARD_LEAVE();
	return rc;
}

TA_PUBLIC int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
			  const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	REAL_FN(real, "posix_spawn", spawn_fn);
	return spawn_with(real, pid, path, fa, attr, argv, envp);
}

typedef int (*system_fn)(const char *);
typedef FILE *(*popen_fn)(const char *, const char *);

/* system() and popen() spawn their shell inside libc with environ: a
 * process that has not traced puts the recording's pending token there
 * first (one that traced has its own token there already). */
TA_PUBLIC int system(const char *command)
{
	REAL_FN(real, "system", system_fn);
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	TA_GUARD_ENTER();
	ta_dump_token_to_environ();
	TA_GUARD_LEAVE();
	return real(command);
}

TA_PUBLIC FILE *popen(const char *command, const char *type)
{
	REAL_FN(real, "popen", popen_fn);
	if (!real) {
		errno = ENOSYS;
		return NULL;
	}
	TA_GUARD_ENTER();
	ta_dump_token_to_environ();
	TA_GUARD_LEAVE();
	return real(command, type);
}

TA_PUBLIC int posix_spawnp(pid_t *pid, const char *file, const posix_spawn_file_actions_t *fa,
			   const posix_spawnattr_t *attr, char *const argv[], char *const envp[])
{
	REAL_FN(real, "posix_spawnp", spawn_fn);
	return spawn_with(real, pid, file, fa, attr, argv, envp);
}

TA_PUBLIC int execve(const char *path, char *const argv[], char *const envp[])
{
	REAL_FN(real, "execve", execve_fn);
	return exec_with(real, NULL, path, -1, argv, envp);
}

TA_PUBLIC int execv(const char *path, char *const argv[])
{
	REAL_FN(real, "execve", execve_fn);
	return exec_with(real, NULL, path, -1, argv, environ);
}

TA_PUBLIC int execvp(const char *file, char *const argv[])
{
	REAL_FN(real, "execvpe", execve_fn);
	return exec_with(real, NULL, file, -1, argv, environ);
}

TA_PUBLIC int execvpe(const char *file, char *const argv[], char *const envp[])
{
	REAL_FN(real, "execvpe", execve_fn);
	return exec_with(real, NULL, file, -1, argv, envp);
}

TA_PUBLIC int fexecve(int fd, char *const argv[], char *const envp[])
{
	REAL_FN(real, "fexecve", fexecve_fn);
	return exec_with(NULL, real, NULL, fd, argv, envp);
}

/* The execl family passes its arguments as a list: gather them (the
 * count is bounded by the caller's own call) and go through execve/execvp. */
#define GATHER_ARGS(first, ap, argv)                                                               \
	do {                                                                                       \
		size_t n_ = 1;                                                                     \
		va_list c_;                                                                        \
		va_copy(c_, ap);                                                                   \
		while (va_arg(c_, char *))                                                         \
			n_++;                                                                      \
		va_end(c_);                                                                        \
		argv = __builtin_alloca((n_ + 1) * sizeof(char *));                                \
		argv[0] = (char *)(uintptr_t)(first);                                              \
		for (size_t i_ = 1; i_ <= n_; i_++) /* the NULL included */                        \
			argv[i_] = va_arg(ap, char *);                                             \
	} while (0)

TA_PUBLIC int execl(const char *path, const char *arg, ...)
{
	char **argv;
	va_list ap;

	va_start(ap, arg);
	GATHER_ARGS(arg, ap, argv);
	va_end(ap);
	return execv(path, argv);
}

TA_PUBLIC int execlp(const char *file, const char *arg, ...)
{
	char **argv;
	va_list ap;

	va_start(ap, arg);
	GATHER_ARGS(arg, ap, argv);
	va_end(ap);
	return execvp(file, argv);
}

TA_PUBLIC int execle(const char *path, const char *arg, ...)
{
	char **argv, **envp;
	va_list ap;

	va_start(ap, arg);
	GATHER_ARGS(arg, ap, argv);
	envp = va_arg(ap, char **); /* follows the list's NULL */
	va_end(ap);
	return execve(path, argv, envp);
}

static __attribute__((noreturn)) void exit_now(const char *name, int status)
{
	void (*real)(int) = (void (*)(int))ta_next_fn(name);

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
