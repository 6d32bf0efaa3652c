/* SPDX-License-Identifier: MIT */
/*
 * ptrace.h - traceagent attach's architecture layer (where
 * TA_ARCH_HAS_INJECT; arch/<cpu>/ptrace.c): a thread's registers (ta_regs,
 * ta_regs_get, ta_regs_set, TA_REGS_PC, TA_REGS_SP), a call set up in them
 * (ta_regs_call_setup: fn(a0, a1) returning to address 0, where it stops
 * with SIGSEGV), its result (ta_regs_call_result), the system call the
 * thread was stopped in made ready to be entered again once the registers
 * are given back (ta_regs_syscall_park), and epoll_wait's EINTR undone
 * (ta_regs_syscall_unintr).
 *
 * epoll_wait (and epoll_pwait, epoll_pwait2) returns -EINTR to any stop,
 * a ptrace one too, whether a handler runs or not (signal(7)): the program
 * would see an EINTR that only the attach caused.  Such a call is made to
 * restart as a call interrupted with -ERESTARTNOHAND is: entered again, as
 * no handler runs.  A signal that came meanwhile is sent again after the
 * attach and interrupts the call then, as it would have.
 */
#ifndef TA_ARCH_PTRACE_H_
#define TA_ARCH_PTRACE_H_

#include "arch.h"

#if TA_ARCH_HAS_INJECT
#include <stdint.h>
#include <sys/types.h>

/* ta_regs, TA_REGS_PC(r), TA_REGS_SP(r) and TA_REGS_SEIZE_OPTIONS (the
 * PTRACE_SEIZE options the layer needs). */
#include TA_ARCH_PTRACE_H

/* What /proc/PID/task/TID/syscall said just before the thread was
 * stopped: the system call it was blocked in, its arguments, sp and pc
 * (nr -1: none, or not known). */
struct ta_sysnote {
	long nr;
	unsigned long long args[6], sp, pc;
};

/* What the layer needs of the loader: a signal that stopped a thread
 * while we wait for it held (and given back later), and a failure said. */
struct ta_ptrace_env {
	void (*keep_signal)(pid_t tid, int sig);
	int (*fail)(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
};

/* 0, or -1 (errno says). */
int ta_regs_get(pid_t tid, ta_regs *r);
int ta_regs_set(pid_t tid, const ta_regs *r);

/* r made to call fn(a0, a1) on a stack below sp_base, returning to
 * address 0; 0, or -1. */
int ta_regs_call_setup(pid_t pid, ta_regs *r, uint64_t sp_base, uint64_t fn, uint64_t a0,
		       uint64_t a1);
uint64_t ta_regs_call_result(const ta_regs *r);

/* The system call the thread is stopped in (or at the end of), or -1 (in
 * its own code). */
long ta_regs_at_syscall(pid_t tid, const ta_regs *r);

/* The system call the thread was stopped in made ready to be entered
 * again once saved is given back; what env->fail returned, or 0. */
int ta_regs_syscall_park(pid_t tid, ta_regs *saved, const struct ta_ptrace_env *env);

/* An epoll_wait's EINTR the stop caused undone in r (before: the note
 * taken before the stop, or NULL); 1 if r was changed. */
int ta_regs_syscall_unintr(ta_regs *r, const struct ta_sysnote *before);
#endif

#endif
