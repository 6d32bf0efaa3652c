/* SPDX-License-Identifier: MIT */
/*
 * test_interpose.c - agent/interpose.c's wrappers, linked into this
 * program as they are into a preloaded agent's: the program's walks of the
 * loaded objects (dl_iterate_phdr) hold the agent's own dlopen back until
 * they end, counted once however nested, and the agent's own walks do not;
 * the walk's result and errno are the callback's; sigaltstack hides the
 * alternate stack the agent gave the thread and keeps errno as the kernel
 * set it; sigaction and signal show the program the actions it set while
 * the agent holds the signal.  Each test runs in its own process (Check's
 * fork mode).
 */
#define _GNU_SOURCE
#include <check.h>

#include "../check_run.h"
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "crash.h"
#include "lazylib.h"
#include "ring.h"

/* ---- the walks and the agent's dlopen ------------------------------------ */

/* What an agent dlopen on another thread got. */
struct open_try {
	void *handle;
	int later;
};

static void *agent_open(void *p)
{
	struct open_try *t = p;

	/* Already loaded: only the gate decides whether it waits. */
	t->handle = ta_lazy_dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD, &t->later);
	return NULL;
}

/* An agent dlopen on another thread while this one waits for it. */
static struct open_try open_from_other_thread(void)
{
	struct open_try t = {NULL, -1};
	pthread_t th;

	ck_assert_int_eq(pthread_create(&th, NULL, agent_open, &t), 0);
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	return t;
}

struct walk {
	int calls;
	int nested; /* walk again inside the first call */
	struct open_try inside, self;
};

static int during_walk(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct walk *w = arg;

	(void)info;
	(void)size;
	if (w->calls++)
		return 0;
	if (w->nested) {
		struct walk inner = {0};

		/* A nested walk ends: the outer one still counts. */
		ck_assert_int_eq(dl_iterate_phdr(during_walk, &inner), 0);
		ck_assert_int_gt(inner.calls, 1);
	}
	w->inside = open_from_other_thread();
	/* The walking thread itself loads without waiting. */
	w->self.handle = ta_lazy_dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD, &w->self.later);
	return 0;
}

/* The walk over: an agent dlopen on another thread loads at once. */
static void loads_once_walk_is_over(void)
{
	struct open_try after = open_from_other_thread();

	ck_assert_ptr_nonnull(after.handle);
	ck_assert_int_eq(after.later, 0);
	dlclose(after.handle);
}

START_TEST(program_walk_holds_agent_dlopen)
{
	struct walk w = {0};

	ck_assert_int_eq(dl_iterate_phdr(during_walk, &w), 0);
	/* Every object visited (the program, libc, the loader at least). */
	ck_assert_int_ge(w.calls, 3);
	/* Held back for the gate's 100 ms, then told to try later. */
	ck_assert_ptr_null(w.inside.handle);
	ck_assert_int_eq(w.inside.later, 1);
	ck_assert_ptr_nonnull(w.self.handle);
	ck_assert_int_eq(w.self.later, 0);
	dlclose(w.self.handle);
	loads_once_walk_is_over();
}
END_TEST

START_TEST(nested_walk_counted_once)
{
	struct walk w = {.nested = 1};

	ck_assert_int_eq(dl_iterate_phdr(during_walk, &w), 0);
	ck_assert_ptr_null(w.inside.handle);
	ck_assert_int_eq(w.inside.later, 1);
	dlclose(w.self.handle);
	loads_once_walk_is_over();
}
END_TEST

START_TEST(agent_walk_not_counted)
{
	struct walk w = {0};

	/* The agent's own walks (inside its guard) hold nothing back. */
	TA_GUARD_ENTER();
	ck_assert_int_eq(dl_iterate_phdr(during_walk, &w), 0);
	TA_GUARD_LEAVE();
	ck_assert_ptr_nonnull(w.inside.handle);
	ck_assert_int_eq(w.inside.later, 0);
	dlclose(w.inside.handle);
	dlclose(w.self.handle);
}
END_TEST

/* ---- a fork beside the agent's own walk --------------------------------------- */

static int walk_inside; /* atomic: the slow walk's first callback has begun */

static int slow_first(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)info;
	(void)size;
	(void)arg;
	if (!__atomic_exchange_n(&walk_inside, 1, __ATOMIC_ACQ_REL))
		usleep(300000);
	return 0;
}

static void *agent_walker(void *p)
{
	(void)p;
	TA_GUARD_ENTER();
	dl_iterate_phdr(slow_first, NULL);
	TA_GUARD_LEAVE();
	return NULL;
}

static int count_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)info;
	(void)size;
	++*(int *)arg;
	return 0;
}

/* glibc's forked child resets the loader's lock, not the list lock
 * dl_iterate_phdr holds: a fork while an agent thread walks (the flusher,
 * the control thread) must wait for the walk, or the child's first walk
 * waits for ever.  The handlers as agent.c registers them. */
START_TEST(fork_waits_for_agent_walk)
{
	pthread_t th;
	pid_t pid;
	int st = 0, objects = 0;

	ck_assert_int_eq(
	    pthread_atfork(ta_lazy_fork_prepare, ta_lazy_fork_parent, ta_lazy_fork_child), 0);
	ck_assert_int_eq(pthread_create(&th, NULL, agent_walker, NULL), 0);
	while (!__atomic_load_n(&walk_inside, __ATOMIC_ACQUIRE))
		usleep(1000);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		dl_iterate_phdr(count_object, &objects);
		_exit(objects >= 3 ? 0 : 1);
	}
	ck_assert_int_eq(pthread_join(th, NULL), 0);
	for (int i = 0; i < 1000 && waitpid(pid, &st, WNOHANG) == 0; i++)
		usleep(10000);
	if (waitpid(pid, &st, WNOHANG) == 0) {
		kill(pid, SIGKILL);
		waitpid(pid, &st, 0);
		ck_abort_msg("the child's walk still waits after 10 s");
	}
	ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}
END_TEST

static int stop_with_errno(struct dl_phdr_info *info, size_t size, void *arg)
{
	int *calls = arg;

	(void)info;
	(void)size;
	++*calls;
	errno = EDOM;
	return 42;
}

START_TEST(walk_result_and_errno_are_the_callbacks)
{
	int calls = 0;

	errno = 0;
	ck_assert_int_eq(dl_iterate_phdr(stop_with_errno, &calls), 42);
	ck_assert_int_eq(errno, EDOM);
	ck_assert_int_eq(calls, 1);
	/* And the gate was left: a dlopen goes through. */
	loads_once_walk_is_over();
}
END_TEST

/* ---- sigaltstack ------------------------------------------------------------- */

START_TEST(altstack_of_the_agent_unseen)
{
	static char own[64 << 10];
	stack_t ss, raw, bad = {.ss_sp = own, .ss_size = 1, .ss_flags = 0};

	ta_crash_thread_start();
	ck_assert_int_eq(syscall(SYS_sigaltstack, NULL, &raw), 0);
	ck_assert(ta_crash_altstack_is_ours(raw.ss_sp));
	/* Asked, the wrapper says there is none, as without the agent. */
	memset(&ss, 0xa5, sizeof(ss));
	ck_assert_int_eq(sigaltstack(NULL, &ss), 0);
	ck_assert_ptr_null(ss.ss_sp);
	ck_assert_uint_eq(ss.ss_size, 0);
	ck_assert_int_eq(ss.ss_flags, SS_DISABLE);
	/* The kernel's refusal, its errno kept: too small a stack. */
	errno = 0;
	ck_assert_int_eq(sigaltstack(&bad, NULL), -1);
	ck_assert_int_eq(errno, ENOMEM);
	/* The program's own stack is reported as it is. */
	ss.ss_sp = own;
	ss.ss_size = sizeof(own);
	ss.ss_flags = 0;
	ck_assert_int_eq(sigaltstack(&ss, NULL), 0);
	memset(&ss, 0, sizeof(ss));
	ck_assert_int_eq(sigaltstack(NULL, &ss), 0);
	ck_assert_ptr_eq(ss.ss_sp, own);
	ck_assert_uint_eq(ss.ss_size, sizeof(own));
	ck_assert_int_eq(ss.ss_flags, 0);
}
END_TEST

/* ---- sigaction and signal ---------------------------------------------------- */

static void prog_handler(int sig)
{
	(void)sig;
}

START_TEST(signal_actions_as_the_program_set_them)
{
	struct sigaction sa, real;

	/* Check's parent's SIGTERM handler, inherited, goes first. */
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = SIG_DFL;
	ck_assert_int_eq(ta_real_sigaction(SIGTERM, &sa, NULL), 0);
	ta_crash_install();
	ck_assert_int_eq(ta_real_sigaction(SIGTERM, NULL, &real), 0);
	ck_assert(real.sa_flags & SA_SIGINFO);
	ck_assert_int_eq(sigaction(SIGTERM, NULL, &sa), 0);
	ck_assert_ptr_eq(sa.sa_handler, SIG_DFL);
	/* signal(): the previous action as the program knew it. */
	ck_assert_ptr_eq(signal(SIGTERM, prog_handler), SIG_DFL);
	ck_assert_int_eq(ta_real_sigaction(SIGTERM, NULL, &real), 0);
	ck_assert_ptr_eq(real.sa_handler, prog_handler);
	ck_assert(real.sa_flags & SA_RESTART);
	ck_assert_ptr_eq(signal(SIGTERM, SIG_DFL), prog_handler);
	/* Held again: the agent's handler, the program told SIG_DFL. */
	ck_assert_int_eq(ta_real_sigaction(SIGTERM, NULL, &real), 0);
	ck_assert(real.sa_flags & SA_SIGINFO);
	ck_assert_ptr_eq(signal(SIGTERM, SIG_DFL), SIG_DFL);
	/* A bad signal number: libc's answer. */
	errno = 0;
	ck_assert_int_eq(sigaction(0, NULL, &sa), -1);
	ck_assert_int_eq(errno, EINVAL);
}
END_TEST

static Suite *interpose_suite(void)
{
	Suite *s = suite_create("interpose");
	TCase *tc = tcase_create("interpose");

	tcase_add_test(tc, program_walk_holds_agent_dlopen);
	tcase_add_test(tc, nested_walk_counted_once);
	tcase_add_test(tc, agent_walk_not_counted);
	tcase_add_test(tc, walk_result_and_errno_are_the_callbacks);
	tcase_add_test(tc, fork_waits_for_agent_walk);
	tcase_add_test(tc, altstack_of_the_agent_unseen);
	tcase_add_test(tc, signal_actions_as_the_program_set_them);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ta_check_run(interpose_suite());
}
