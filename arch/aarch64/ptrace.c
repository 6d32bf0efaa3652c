/* SPDX-License-Identifier: MIT */
/*
 * aarch64/ptrace.c - traceagent attach's architecture layer (arch/ptrace.h).
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

int ta_regs_get(pid_t tid, ta_regs *r)
{
	struct iovec io = {r, sizeof(*r)};

	return ptrace(PTRACE_GETREGSET, tid, (void *)NT_PRSTATUS, &io) < 0 ? -1 : 0;
}

int ta_regs_set(pid_t tid, const ta_regs *r)
{
	struct iovec io = {(void *)(uintptr_t)r, sizeof(*r)};

	return ptrace(PTRACE_SETREGSET, tid, (void *)NT_PRSTATUS, &io) < 0 ? -1 : 0;
}

/* The return address 0 is in the link register; no red zone on aarch64,
 * the same margin all the same. */
int ta_regs_call_setup(pid_t pid, ta_regs *r, uint64_t sp_base, uint64_t fn, uint64_t a0,
		       uint64_t a1)
{
	(void)pid;
	r->sp = sp_base & ~15ull;
	r->pc = fn;
	r->regs[0] = a0;
	r->regs[1] = a1;
	r->regs[30] = 0;
	return 0;
}

uint64_t ta_regs_call_result(const ta_regs *r)
{
	return r->regs[0];
}

/* The system call the thread is stopped at, or -1 (in its own code): at
 * an svc (a call interrupted by the stop: the kernel rewound pc to it,
 * ta_regs_syscall_park below) or just after one (a call that returned), x8 holds
 * its number. */
long ta_regs_at_syscall(pid_t tid, const ta_regs *r)
{
	for (uint64_t back = 0; back <= 4; back += 4) {
		long insn;

		errno = 0;
		insn = ptrace(PTRACE_PEEKTEXT, tid, (void *)(uintptr_t)(r->pc - back), NULL);
		if (!errno && (uint32_t)insn == 0xd4000001) /* svc #0 */
			return (long)r->regs[8];
	}
	return -1;
}

/* Waits for thread tid's next system-call stop (PTRACE_SYSCALL'ed),
 * holding the signals that come first; 0, or -1 (it ended). */
static int syscall_stop(pid_t tid, const struct ta_ptrace_env *env)
{
	int st;

	for (;;) {
		if (waitpid(tid, &st, __WALL) < 0 || WIFEXITED(st) || WIFSIGNALED(st))
			return -1;
		if (!WIFSTOPPED(st))
			continue;
		if (WSTOPSIG(st) == (SIGTRAP | 0x80))
			return 0;
		if (st >> 16 == 0)
			env->keep_signal(tid, WSTOPSIG(st));
		if (ptrace(PTRACE_SYSCALL, tid, NULL, NULL) < 0)
			return -1;
	}
}

/*
 * arm64's do_signal prepares a restart before the stop, so that a
 * debugger sees it: a thread stopped in read, futex or nanosleep is
 * already at its svc again, x0 its first argument (from orig_x0, which
 * user_pt_regs has not), its system call forgotten (syscallno -1).  What
 * it does after the stop, and only if pc is still at that svc, is the
 * -ERESTART_RESTARTBLOCK case (nanosleep, a futex wait with a timeout):
 * x8 = __NR_restart_syscall, which resumes the wait where it was instead
 * of waiting its whole time again.  So a thread at an svc is let run to
 * it (PTRACE_SYSCALL, the kernel finishing its restart on the way), the
 * call skipped at its entry (NT_ARM_SYSTEM_CALL -1), and the x8 it
 * entered with kept in saved: given back, the thread enters the same call
 * as the kernel would have made it.  The rest of saved is the stop's (at
 * a system-call stop the kernel shows x7 as the stop's direction).  A
 * thread that is not at an svc (in its own code, or in a call that
 * returned -EINTR, which the kernel does not restart) is left as it is.
 */
int ta_regs_syscall_park(pid_t tid, ta_regs *saved, const struct ta_ptrace_env *env)
{
	ta_regs entry;
	int skip = -1;
	struct iovec io = {&skip, sizeof(skip)};
	long insn;

	errno = 0;
	insn = ptrace(PTRACE_PEEKTEXT, tid, (void *)(uintptr_t)saved->pc, NULL);
	if (errno || (uint32_t)insn != 0xd4000001) /* svc #0 */
		return 0;
	if (ptrace(PTRACE_SYSCALL, tid, NULL, NULL) < 0 || syscall_stop(tid, env) < 0)
		return env->fail("process %d: thread %d ended during the attach", tid, tid);
	if (ta_regs_get(tid, &entry) < 0 || entry.pc != saved->pc + 4)
		return env->fail(
		    "thread %d: not at the system call it was stopped before (pc %#llx, "
		    "not %#llx)",
		    tid, (unsigned long long)entry.pc, (unsigned long long)saved->pc + 4);
	if (ptrace(PTRACE_SETREGSET, tid, (void *)NT_ARM_SYSTEM_CALL, &io) < 0 ||
	    ptrace(PTRACE_SYSCALL, tid, NULL, NULL) < 0 || syscall_stop(tid, env) < 0)
		return env->fail("thread %d: cannot hold its system call: %s", tid,
				 strerror(errno));
	saved->regs[8] = entry.regs[8];
	return 0;
}

/* At the stop the kernel has forgotten the call (syscallno -1) and x0,
 * its first argument, holds -EINTR: both come from the note taken just
 * before the stop, when the thread was blocked in the call: the same call
 * if x8, pc (after the svc), sp and x1-x5 are the note's.  Rewound to the
 * svc with x0 back, the thread enters it again.  1 if r was changed. */
int ta_regs_syscall_unintr(ta_regs *r, const struct ta_sysnote *before)
{
	if (!before || (before->nr != __NR_epoll_pwait && before->nr != __NR_epoll_pwait2) ||
	    r->regs[0] != (uint64_t)-EINTR || r->regs[8] != (uint64_t)before->nr ||
	    r->pc != before->pc || r->sp != before->sp)
		return 0;
	for (int i = 1; i < 6; i++)
		if (r->regs[i] != before->args[i])
			return 0;
	r->regs[0] = before->args[0];
	r->pc -= 4;
	return 1;
}
