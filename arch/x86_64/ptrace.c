/* SPDX-License-Identifier: MIT */
/*
 * x86_64/ptrace.c - traceagent attach's architecture layer (arch/ptrace.h).
 */
#define _GNU_SOURCE
#include <elf.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>

#include "ptrace.h"

/* Not in the user headers: the kernel's "restart unless a handler runs". */
#define K_ERESTARTNOHAND 514

int ta_regs_get(pid_t tid, ta_regs *r)
{
	return ptrace(PTRACE_GETREGS, tid, NULL, r) < 0 ? -1 : 0;
}

int ta_regs_set(pid_t tid, const ta_regs *r)
{
	return ptrace(PTRACE_SETREGS, tid, NULL, r) < 0 ? -1 : 0;
}

/* The return address 0 is pushed on the stack. */
int ta_regs_call_setup(pid_t pid, ta_regs *r, uint64_t sp_base, uint64_t fn, uint64_t a0,
		       uint64_t a1)
{
	uint64_t zero = 0;

	r->rsp = (sp_base & ~15ull) - 8; /* as after a call: rsp+8 16-aligned */
	r->rip = fn;
	r->rdi = a0;
	r->rsi = a1;
	r->rax = 0;
	/* No system call to restart into our call. */
	r->orig_rax = (uint64_t)-1;
	return ptrace(PTRACE_POKEDATA, pid, (void *)r->rsp, (void *)zero) < 0 ? -1 : 0;
}

uint64_t ta_regs_call_result(const ta_regs *r)
{
	return r->rax;
}

/* The system call the thread is stopped in (or at the end of), or -1 (in
 * its own code): orig_rax, which every entry to the kernel but a system
 * call's sets to -1. */
long ta_regs_at_syscall(pid_t tid, const ta_regs *r)
{
	(void)tid;
	return (long)r->orig_rax;
}

/* x86-64 restarts a system call after the stop (arch_do_signal_or_restart
 * looks at orig_rax and rax once get_signal returns): the registers given
 * back as they were, orig_rax among them, restart it.  Nothing to do. */
int ta_regs_syscall_park(pid_t tid, ta_regs *saved, const struct ta_ptrace_env *env)
{
	(void)tid;
	(void)saved;
	(void)env;
	return 0;
}

/* orig_rax tells the call exactly (-1 once the thread has entered the
 * kernel otherwise, or after a sigreturn); its arguments are still in
 * their registers.  1 if r was changed. */
int ta_regs_syscall_unintr(ta_regs *r, const struct ta_sysnote *before)
{
	long nr = (long)r->orig_rax;

	(void)before;
	if ((nr == __NR_epoll_wait || nr == __NR_epoll_pwait || nr == __NR_epoll_pwait2) &&
	    r->rax == (uint64_t)-EINTR) {
		r->rax = (uint64_t)-K_ERESTARTNOHAND;
		return 1;
	}
	return 0;
}
