/* SPDX-License-Identifier: MIT */
/*
 * test_crash.c - agent/crash.c's bookkeeping, in-process: which signals
 * the agent takes (only those whose action is the default), what the
 * program is told about them (the default, with the mask and flags it
 * set), a handler the program sets replacing the agent's and a default it
 * sets again being held again, the actions put back at an attach window's
 * end, and the alternate signal stack a thread is given and loses.  Each
 * test runs in its own process (Check's fork mode): the signal actions and
 * crash.c's table start afresh.  The handlers themselves (a death written
 * to the dump) are the end-to-end tests' (e2e-crash, e2e-sigdeath).
 */
#define _GNU_SOURCE
#include <check.h>

#include "../check_run.h"
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "crash.h"

/* What crash.h promises to take, where the action is the default. */
static const int taken[] = {SIGSEGV, SIGBUS,  SIGILL,  SIGFPE,	SIGABRT, SIGTERM, SIGINT,
			    SIGHUP,  SIGPIPE, SIGQUIT, SIGALRM, SIGUSR1, SIGUSR2};
#define NTAKEN (sizeof(taken) / sizeof(taken[0]))
/* Never taken, whatever their action. */
static const int left[] = {SIGCHLD, SIGTRAP, SIGWINCH, SIGURG, SIGCONT, SIGPROF};
#define NLEFT (sizeof(left) / sizeof(left[0]))

static void prog_handler(int sig)
{
	(void)sig;
}

static void other_handler(int sig)
{
	(void)sig;
}

/* The kernel's action for sig (libc's sigaction, not the agent's view). */
static struct sigaction real_action(int sig)
{
	struct sigaction sa;

	ck_assert_int_eq(ta_real_sigaction(sig, NULL, &sa), 0);
	return sa;
}

/* The agent's handler: SA_SIGINFO, every signal blocked while it runs,
 * on the alternate stack, restarting system calls. */
static void assert_agents(int sig)
{
	struct sigaction sa = real_action(sig);

	ck_assert_msg((sa.sa_flags & (SA_SIGINFO | SA_ONSTACK | SA_RESTART)) ==
			  (SA_SIGINFO | SA_ONSTACK | SA_RESTART),
		      "signal %d: flags %#x", sig, sa.sa_flags);
	ck_assert_msg(sa.sa_sigaction != NULL, "signal %d: no handler", sig);
	for (int s = 1; s < 32; s++) /* 32, 33: glibc's own */
		if (s != SIGKILL && s != SIGSTOP)
			ck_assert_msg(sigismember(&sa.sa_mask, s), "signal %d: %d not blocked", sig,
				      s);
}

static void set_real(int sig, void (*h)(int), int flags)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = h;
	sa.sa_flags = flags;
	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(ta_real_sigaction(sig, &sa, NULL), 0);
}

/* Each test's process starts with the defaults: Check's own handlers for
 * SIGTERM and SIGINT (its parent's, inherited through fork) go. */
static void defaults(void)
{
	for (size_t i = 0; i < NTAKEN; i++)
		set_real(taken[i], SIG_DFL, 0);
	for (size_t i = 0; i < NLEFT; i++)
		set_real(left[i], SIG_DFL, 0);
}

START_TEST(install_takes_defaults_only)
{
	struct sigaction seen, before[NTAKEN];

	/* The program's own handler and nohup's SIG_IGN stay. */
	set_real(SIGINT, prog_handler, 0);
	set_real(SIGHUP, SIG_IGN, 0);
	for (size_t i = 0; i < NTAKEN; i++)
		before[i] = real_action(taken[i]);
	ta_crash_install();
	for (size_t i = 0; i < NTAKEN; i++) {
		int sig = taken[i];

		if (sig == SIGINT) {
			ck_assert_ptr_eq(real_action(sig).sa_handler, prog_handler);
		} else if (sig == SIGHUP) {
			ck_assert_ptr_eq(real_action(sig).sa_handler, SIG_IGN);
		} else {
			assert_agents(sig);
			/* The program is told the default, as it found it. */
			ck_assert_int_eq(ta_signal_action(sig, NULL, &seen), 0);
			ck_assert_ptr_eq(seen.sa_handler, SIG_DFL);
			ck_assert_int_eq(seen.sa_flags, before[i].sa_flags);
		}
	}
	for (size_t i = 0; i < NLEFT; i++)
		ck_assert_ptr_eq(real_action(left[i]).sa_handler, SIG_DFL);
	/* What the program set is what it is told. */
	ck_assert_int_eq(ta_signal_action(SIGINT, NULL, &seen), 0);
	ck_assert_ptr_eq(seen.sa_handler, prog_handler);
}
END_TEST

START_TEST(program_handler_then_default_again)
{
	struct sigaction mine, dfl, old;

	ta_crash_install();
	memset(&mine, 0, sizeof(mine));
	mine.sa_handler = prog_handler;
	sigemptyset(&mine.sa_mask);
	/* The program's handler replaces the agent's; it was told SIG_DFL. */
	ck_assert_int_eq(ta_signal_action(SIGTERM, &mine, &old), 0);
	ck_assert_ptr_eq(old.sa_handler, SIG_DFL);
	ck_assert_ptr_eq(real_action(SIGTERM).sa_handler, prog_handler);
	/* Its SIG_DFL, with a mask and flags of its own, is held again: the
	 * agent's handler in the kernel, the program's action in its view. */
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	dfl.sa_flags = SA_RESTART | SA_NODEFER;
	sigemptyset(&dfl.sa_mask);
	sigaddset(&dfl.sa_mask, SIGUSR1);
	ck_assert_int_eq(ta_signal_action(SIGTERM, &dfl, &old), 0);
	ck_assert_ptr_eq(old.sa_handler, prog_handler);
	assert_agents(SIGTERM);
	ck_assert_int_eq(ta_signal_action(SIGTERM, NULL, &old), 0);
	ck_assert_ptr_eq(old.sa_handler, SIG_DFL);
	ck_assert_int_eq(old.sa_flags, SA_RESTART | SA_NODEFER);
	ck_assert(sigismember(&old.sa_mask, SIGUSR1));
	ck_assert(!sigismember(&old.sa_mask, SIGUSR2));
	/* SIG_IGN is the program's choice too: the agent lets go. */
	memset(&mine, 0, sizeof(mine));
	mine.sa_handler = SIG_IGN;
	ck_assert_int_eq(ta_signal_action(SIGTERM, &mine, NULL), 0);
	ck_assert_ptr_eq(real_action(SIGTERM).sa_handler, SIG_IGN);
	/* A signal the agent does not cover goes straight through. */
	memset(&mine, 0, sizeof(mine));
	mine.sa_handler = prog_handler;
	ck_assert_int_eq(ta_signal_action(SIGCHLD, &mine, NULL), 0);
	ck_assert_ptr_eq(real_action(SIGCHLD).sa_handler, prog_handler);
}
END_TEST

START_TEST(default_before_install_not_held)
{
	struct sigaction dfl;

	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	ck_assert_int_eq(ta_signal_action(SIGTERM, &dfl, NULL), 0);
	ck_assert_ptr_eq(real_action(SIGTERM).sa_handler, SIG_DFL);
}
END_TEST

START_TEST(uninstall_puts_back)
{
	struct sigaction dfl, mine;

	ta_crash_install();
	memset(&mine, 0, sizeof(mine));
	mine.sa_handler = prog_handler;
	sigemptyset(&mine.sa_mask);
	ck_assert_int_eq(ta_signal_action(SIGUSR1, &mine, NULL), 0);
	ta_crash_uninstall();
	/* The defaults the program had, where the handler was ours; the
	 * handler the program set meanwhile stays. */
	for (size_t i = 0; i < NTAKEN; i++)
		ck_assert_ptr_eq(real_action(taken[i]).sa_handler,
				 (taken[i] == SIGUSR1 ? prog_handler : SIG_DFL));
	/* After the window a SIG_DFL the program sets is not held. */
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	ck_assert_int_eq(ta_signal_action(SIGUSR1, &dfl, NULL), 0);
	ck_assert_ptr_eq(real_action(SIGUSR1).sa_handler, SIG_DFL);
	/* A second install takes them all again. */
	ta_crash_install();
	for (size_t i = 0; i < NTAKEN; i++)
		assert_agents(taken[i]);
}
END_TEST

START_TEST(default_if_only_ours)
{
	set_real(SIGUSR2, prog_handler, 0);
	ta_signal_default_if(SIGUSR2, (uintptr_t)other_handler);
	ck_assert_ptr_eq(real_action(SIGUSR2).sa_handler, prog_handler);
	ta_signal_default_if(SIGUSR2, (uintptr_t)prog_handler);
	ck_assert_ptr_eq(real_action(SIGUSR2).sa_handler, SIG_DFL);
}
END_TEST

static stack_t current_altstack(void)
{
	stack_t ss;

	/* The raw call: libc's may be an interposer's. */
	ck_assert_int_eq(syscall(SYS_sigaltstack, NULL, &ss), 0);
	return ss;
}

/* The permissions of the mapping holding addr ("rw-p"), from
 * /proc/self/maps (which qemu-user emulates too, unlike mincore on an
 * inaccessible page); 0 when no mapping holds it. */
static int perms_at(const void *addr, char perms[5])
{
	FILE *f = fopen("/proc/self/maps", "r");
	unsigned long lo, hi, a = (unsigned long)(uintptr_t)addr;
	char line[512];
	int found = 0;

	ck_assert_ptr_nonnull(f);
	while (!found && fgets(line, sizeof(line), f))
		if (sscanf(line, "%lx-%lx %4s", &lo, &hi, perms) == 3 && a >= lo && a < hi)
			found = 1;
	fclose(f);
	return found;
}

START_TEST(altstack_given_and_taken)
{
	stack_t ss;
	char perms[5];

	ck_assert(current_altstack().ss_flags & SS_DISABLE);
	ta_crash_thread_start();
	ss = current_altstack();
	ck_assert_int_eq(ss.ss_flags, 0);
	ck_assert_uint_eq(ss.ss_size, 256u << 10);
	ck_assert(ta_crash_altstack_is_ours(ss.ss_sp));
	ck_assert(!ta_crash_altstack_is_ours((char *)ss.ss_sp + 16));
	/* Writable, and a guard below it, mapped but inaccessible. */
	ck_assert(perms_at(ss.ss_sp, perms));
	ck_assert_str_eq(perms, "rw-p");
	ck_assert(perms_at((char *)ss.ss_sp - 1, perms));
	ck_assert_str_eq(perms, "---p");
	/* Once per thread. */
	ta_crash_thread_start();
	ck_assert_ptr_eq(current_altstack().ss_sp, ss.ss_sp);
	ta_crash_thread_exit();
	ck_assert(current_altstack().ss_flags & SS_DISABLE);
	ck_assert(!ta_crash_altstack_is_ours(ss.ss_sp));
	/* Unmapped, guard and all. */
	ck_assert(!perms_at(ss.ss_sp, perms));
	ck_assert(!perms_at((char *)ss.ss_sp - 1, perms));
}
END_TEST

START_TEST(altstack_program_own_stays)
{
	static char own[64 << 10];
	stack_t ss = {.ss_sp = own, .ss_size = sizeof(own), .ss_flags = 0};

	ck_assert_int_eq(syscall(SYS_sigaltstack, &ss, NULL), 0);
	ta_crash_thread_start();
	ck_assert_ptr_eq(current_altstack().ss_sp, own);
	ck_assert(!ta_crash_altstack_is_ours(own));
	ta_crash_thread_exit();
	ck_assert_ptr_eq(current_altstack().ss_sp, own);
	ck_assert_int_eq(current_altstack().ss_flags, 0);
}
END_TEST

static Suite *crash_suite(void)
{
	Suite *s = suite_create("crash");
	TCase *tc = tcase_create("crash");

	tcase_add_checked_fixture(tc, defaults, NULL);

	tcase_add_test(tc, install_takes_defaults_only);
	tcase_add_test(tc, program_handler_then_default_again);
	tcase_add_test(tc, default_before_install_not_held);
	tcase_add_test(tc, uninstall_puts_back);
	tcase_add_test(tc, default_if_only_ours);
	tcase_add_test(tc, altstack_given_and_taken);
	tcase_add_test(tc, altstack_program_own_stays);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ta_check_run(crash_suite());
}
