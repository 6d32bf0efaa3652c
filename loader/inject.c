/* SPDX-License-Identifier: MIT */
/*
 * inject.c - `traceagent attach`'s injection: one thread of the target
 * stopped with ptrace where it holds no lock the loader needs (the safe
 * point), made to call dlopen(agent) and ta_attach_start(settings) on its
 * own stack and given back its registers and signals exactly; --patch's
 * calls with every thread stopped.  The registers and the calling
 * convention are the architecture layer's (arch/ptrace.h).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elf.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "inject.h"
#include "grow.h"
#include "ptrace.h"

#if TA_ARCH_HAS_INJECT
/*
 * Signals while we hold a thread.  Around our calls its mask blocks every
 * signal but the faults (calls_mask): one sent meanwhile stays pending in
 * the kernel with its siginfo, to the thread or the process it was sent
 * to, and is delivered once the mask is given back, as to a thread that
 * was busy for a moment (a system call it was stopped in then returns
 * EINTR or restarts as the handler's SA_RESTART says).  The faults stay
 * open: a fault on a blocked signal resets its handler to SIG_DFL, and
 * our call's return to address 0 is one.  A fault signal that another
 * process sends while we hold the thread (kill -SEGV), and SIGSTOP, stop
 * it on their way: held here with their siginfo and given back at the
 * end (release).
 */
static siginfo_t pending[64];
static int npending;
/* The thread is at a signal-delivery-stop (our call's SIGSEGV): the first
 * signal held is given back through it, siginfo and all. */
static int at_signal_stop;
/* A call did not return in time: the thread is left in it (remote_call). */
static int stuck;

static void keep_signal(pid_t tid, int sig)
{
	siginfo_t si;

	if (ptrace(PTRACE_GETSIGINFO, tid, NULL, &si) < 0) {
		memset(&si, 0, sizeof(si));
		si.si_signo = sig;
		si.si_code = SI_USER;
	}
	/* Beyond 64 (a flood of kill -SEGV while we call dlopen) the
	 * kernel's own queue would have merged them too. */
	if (npending < 64)
		pending[npending++] = si;
}

#define FAULT_SIGNALS                                                                              \
	((1ull << (SIGSEGV - 1)) | (1ull << (SIGBUS - 1)) | (1ull << (SIGILL - 1)) |               \
	 (1ull << (SIGFPE - 1)) | (1ull << (SIGTRAP - 1)) | (1ull << (SIGSYS - 1)))

/* Thread tid's mask (the kernel's 64 bits) into *old, and every signal
 * but the faults blocked; 0, or -1. */
static int calls_mask(pid_t tid, uint64_t *old)
{
	uint64_t m = ~FAULT_SIGNALS;

	if (ptrace(PTRACE_GETSIGMASK, tid, (void *)sizeof(*old), old) < 0 ||
	    ptrace(PTRACE_SETSIGMASK, tid, (void *)sizeof(m), &m) < 0)
		return -1;
	return 0;
}

/*
 * Detaches thread tid of process pid (stopped; its mask given back first
 * when old is not NULL) and gives back the signals held: the first
 * through the signal-delivery-stop it is at, its siginfo put in place
 * (the kernel delivers it as it came: a CLD_EXITED's si_pid, a
 * sigqueue's value); the others queued to the thread again, with their
 * siginfo by rt_tgsigqueueinfo where the kernel lets another process
 * (codes below 0: sigqueue, timers, AIO, SIGIO), by tgkill otherwise
 * (their sender then reads as us: two faults sent by other processes
 * within one attach).
 */
static void release(pid_t pid, pid_t tid, const uint64_t *old)
{
	int sig = 0, first = 0;

	if (old && ptrace(PTRACE_SETSIGMASK, tid, (void *)sizeof(*old), old) < 0)
		ta_att_fail("thread %d: cannot give back its signal mask: %s", tid,
			    strerror(errno));
	if (npending && at_signal_stop && ptrace(PTRACE_SETSIGINFO, tid, NULL, &pending[0]) == 0) {
		sig = pending[0].si_signo;
		first = 1;
	}
	ptrace(PTRACE_DETACH, tid, NULL, (void *)(uintptr_t)sig);
	for (int i = first; i < npending; i++) {
		siginfo_t *si = &pending[i];

		if (si->si_code >= 0 || si->si_code == SI_TKILL ||
		    syscall(SYS_rt_tgsigqueueinfo, pid, tid, si->si_signo, si) < 0)
			syscall(SYS_tgkill, pid, tid, si->si_signo);
	}
	npending = 0;
	at_signal_stop = 0;
}

static void syscall_note(pid_t pid, pid_t tid, struct ta_sysnote *n)
{
	char path[96], buf[512];
	int fd;
	ssize_t got = -1;

	n->nr = -1;
	snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", pid, tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		got = read(fd, buf, sizeof(buf) - 1);
		close(fd);
	}
	if (got <= 0)
		return;
	buf[got] = 0;
	if (sscanf(buf, "%ld %llx %llx %llx %llx %llx %llx %llx %llx", &n->nr, &n->args[0],
		   &n->args[1], &n->args[2], &n->args[3], &n->args[4], &n->args[5], &n->sp,
		   &n->pc) != 9)
		n->nr = -1;
}

/* What the architecture layer (arch/ptrace.h) calls back. */
static const struct ta_ptrace_env ptrace_env = {keep_signal, ta_att_fail};

/* Thread tid's registers as they are to be given back, in saved (before:
 * its note, or NULL); 0, or -1 (said). */
static int regs_save(pid_t tid, ta_regs *saved, const struct ta_sysnote *before)
{
	if (ta_regs_get(tid, saved) < 0)
		return ta_att_fail("process %d: cannot read the registers: %s", tid,
				   strerror(errno));
	/* An epoll_wait's EINTR undone in the thread itself: on aarch64 it
	 * is then at its svc, which ta_regs_syscall_park lets it enter. */
	if (ta_regs_syscall_unintr(saved, before) && ta_regs_set(tid, saved) < 0)
		return ta_att_fail("process %d: cannot write the registers: %s", tid,
				   strerror(errno));
	return ta_regs_syscall_park(tid, saved, &ptrace_env) < 0 ? -1 : 0;
}

/*
 * The safe point.  dlopen, and the agent's start after it, take the
 * loader's locks and malloc's: a thread stopped while it holds one of
 * them (inside malloc, inside dlopen or dlsym, inside libc with a lock
 * dlopen needs) would wait for itself in our call.  So the thread we call
 * through is stopped where it holds none: its pc outside the text of
 * libc.so.6 and the dynamic loader (and of an agent a window before this
 * one left loaded: a hook's slow path holds the agent's locks, and a
 * claimed block), or blocked there in one of the long waits below (libc's
 * wrapper holds no lock of its own there) while the loader is consistent
 * (r_debug's r_state RT_CONSISTENT in every namespace): a dlopen or
 * dlclose half done may be this thread's own, waiting in a read or a
 * futex inside the loader's work with its lock held.  A thread outside
 * that text is not in that work whatever the loader's state (a library
 * being mapped is mapped by the loader's code, in another thread which
 * runs on: our dlopen waits for it).  Elsewhere the thread is let run 1 ms
 * and stopped again (seize_safe says for how long).  Not seen: a lock held
 * by the program's code around (a dl_iterate_phdr callback, a signal
 * handler that interrupted malloc, another malloc than glibc's): the
 * call's timeout says so (remote_call).
 */
#define SAFE_TRY_MS  4000
#define SAFE_TURN_MS 100

struct safety {
	struct {
		uint64_t lo, hi;
		const char *what;
	} text[16];
	int n;
	uint64_t r_debug; /* _r_debug in the process; 0: not known */
	char ld[PATH_MAX];
	uint64_t ld_base;
};

static int safety_one(const struct map_line *m, void *arg)
{
	struct safety *s = arg;
	const char *b = strrchr(m->path, '/');
	int libc, ld, agent;

	b = b ? b + 1 : m->path;
	libc = !strcmp(b, "libc.so.6");
	ld = !strncmp(b, "ld-linux", 8);
	agent = !strncmp(b, "libtraceagent", 13);
	if (!libc && !ld && !agent)
		return 0;
	if (ld && m->off == 0 && !s->ld_base && strlen(m->path) < sizeof(s->ld)) {
		s->ld_base = m->lo;
		memcpy(s->ld, m->path, strlen(m->path) + 1);
	}
	if (m->perms[2] == 'x' && s->n < 16) {
		s->text[s->n].lo = m->lo;
		s->text[s->n].hi = m->hi;
		s->text[s->n].what = libc ? "libc" : ld ? "the dynamic loader" : "the agent";
		s->n++;
	}
	return 0;
}

static void safety_init(pid_t pid, struct safety *s)
{
	char seen[PATH_MAX + 32];
	uint64_t off;

	memset(s, 0, sizeof(*s));
	(void)ta_att_maps_each(pid, safety_one, s);
	snprintf(seen, sizeof(seen), "/proc/%d/root%s", pid, s->ld);
	off = s->ld_base ? ta_att_elf_sym(seen, "_r_debug", STT_OBJECT) : 0;
	s->r_debug = off ? s->ld_base + off : 0;
}

/* The system calls a thread waits in for long, holding no lock of libc's
 * (restart_syscall: a nanosleep or futex wait resumed after a stop). */
static int long_wait(long nr)
{
	static const long waits[] = {
	    __NR_read,
	    __NR_readv,
	    __NR_pread64,
	    __NR_nanosleep,
	    __NR_clock_nanosleep,
	    __NR_futex,
	    __NR_epoll_pwait,
	    __NR_ppoll,
	    __NR_pselect6,
	    __NR_wait4,
	    __NR_waitid,
	    __NR_accept,
	    __NR_accept4,
	    __NR_connect,
	    __NR_recvfrom,
	    __NR_recvmsg,
	    __NR_recvmmsg,
	    __NR_rt_sigtimedwait,
	    __NR_rt_sigsuspend,
	    __NR_msgrcv,
	    __NR_semtimedop,
	    __NR_io_getevents,
	    __NR_mq_timedreceive,
	    __NR_restart_syscall,
#ifdef __NR_epoll_pwait2
	    __NR_epoll_pwait2,
#endif
#ifdef __NR_epoll_wait /* x86-64's older calls; aarch64 has the p versions only */
	    __NR_epoll_wait,
	    __NR_poll,
	    __NR_select,
	    __NR_pause,
	    __NR_semop,
#endif
	};

	for (size_t i = 0; i < sizeof(waits) / sizeof(waits[0]); i++)
		if (waits[i] == nr)
			return 1;
	return 0;
}

/* r_state of the first namespace's r_debug and, from glibc 2.35 on
 * (r_version 2), of the others' (r_debug_extended's r_next after it);
 * RT_CONSISTENT if all are, -1 if it cannot be read. */
static int loader_state(pid_t pid, uint64_t at)
{
	for (int k = 0; at && k < 64; k++) {
		struct {
			struct r_debug r;
			uint64_t next;
		} d;
		struct iovec l = {&d, sizeof(d)}, rm = {(void *)(uintptr_t)at, sizeof(d)};

		if (process_vm_readv(pid, &l, 1, &rm, 1, 0) != (ssize_t)sizeof(d))
			return -1;
		if (d.r.r_state != RT_CONSISTENT)
			return (int)d.r.r_state;
		at = d.r.r_version >= 2 ? d.next : 0;
	}
	return RT_CONSISTENT;
}

/* 1 if the thread stopped with registers r is at a safe point; else 0
 * with the reason in why. */
static int safe_point(pid_t pid, pid_t tid, const struct safety *s, const ta_regs *r, char *why,
		      size_t size)
{
	uint64_t pc = TA_REGS_PC(*r);
	long nr = ta_regs_at_syscall(tid, r);
	int state, waits = 0;

	for (int i = 0; i < s->n; i++) {
		if (pc < s->text[i].lo || pc >= s->text[i].hi)
			continue;
		if (nr >= 0 && long_wait(nr)) {
			waits = 1;
			continue;
		}
		if (nr >= 0)
			snprintf(why, size, "it was in %s, in system call %ld", s->text[i].what,
				 nr);
		else
			snprintf(why, size, "it was inside %s (pc %#llx)", s->text[i].what,
				 (unsigned long long)pc);
		return 0;
	}
	if (!waits)
		return 1;
	state = loader_state(pid, s->r_debug);
	if (state != RT_CONSISTENT) {
		snprintf(why, size, "%s",
			 state < 0 ? "its dynamic loader's state (r_debug) cannot be read"
				   : "its dynamic loader was loading or unloading a library");
		return 0;
	}
	return 1;
}

static uint64_t mono_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

/* waitpid(pid) until a change, or -2 after deadline (mono_ms). */
static int wait_until(pid_t pid, int *st, uint64_t deadline)
{
	long ns = 20000;

	for (;;) {
		pid_t got = waitpid(pid, st, __WALL | WNOHANG);

		if (got != 0)
			return got < 0 ? -1 : 0;
		if (mono_ms() >= deadline)
			return -2;
		nanosleep(&(struct timespec){0, ns}, NULL);
		if (ns < 5000000)
			ns *= 2;
	}
}

/*
 * Stops thread tid of process pid (seized, running) at a safe point, its
 * note taken just before (the epoll_wait it may have been stopped in made
 * to restart, as hold does).  A signal on its way is delivered as it came
 * (its handler runs first; the stop follows).  0 when stopped there; 2
 * when it was not within budget_ms (why says where it was last; stopped,
 * as it was: to be detached); 1 on an error (said).
 */
static int stop_safe(pid_t pid, pid_t tid, struct ta_sysnote *note, uint64_t budget_ms, char *why,
		     size_t size)
{
	struct safety s;
	uint64_t t0 = mono_ms();

	safety_init(pid, &s);
	for (;;) {
		ta_regs r;
		int st;

		syscall_note(pid, tid, note);
		if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) < 0)
			return ta_att_fail("process %d: PTRACE_INTERRUPT of thread %d: %s", pid,
					   tid, strerror(errno));
		for (;;) {
			/* A stop comes within microseconds; a thread that never
			 * stops (in an uninterruptible wait) is said so. */
			int w = wait_until(tid, &st, mono_ms() + 5000);

			if (w == -2)
				return ta_att_fail(
				    "process %d: its thread %d did not stop in 5 s (state "
				    "D?); try again",
				    pid, tid);
			if (w < 0)
				return ta_att_fail("process %d: waitpid: %s", pid, strerror(errno));
			if (WIFEXITED(st) || WIFSIGNALED(st))
				return ta_att_fail("process %d ended during the attach", pid);
			if (!WIFSTOPPED(st))
				continue;
			if (st >> 16 != 0)
				break;
			if (ptrace(PTRACE_CONT, tid, NULL, (void *)(uintptr_t)WSTOPSIG(st)) < 0)
				return ta_att_fail("process %d: %s", pid, strerror(errno));
		}
		if (ta_regs_get(tid, &r) < 0 ||
		    (ta_regs_syscall_unintr(&r, note) && ta_regs_set(tid, &r) < 0))
			return ta_att_fail("process %d: cannot read the registers of thread %d: %s",
					   pid, tid, strerror(errno));
		if (safe_point(pid, tid, &s, &r, why, size))
			return 0;
		if (mono_ms() - t0 >= budget_ms)
			return 2;
		if (ptrace(PTRACE_CONT, tid, NULL, NULL) < 0)
			return ta_att_fail("process %d: %s", pid, strerror(errno));
		nanosleep(&(struct timespec){0, 1000 * 1000}, NULL);
	}
}

/* Thread tid's turn: seized and given SAFE_TURN_MS to be stopped at a safe
 * point.  0: it is (kept stopped); 2: not (let go, or gone); 1: an error
 * (said). */
static int safe_turn(pid_t pid, pid_t tid, struct ta_sysnote *note, char *why, size_t size)
{
	int rc;

	if (ptrace(PTRACE_SEIZE, tid, NULL, (void *)(uintptr_t)TA_REGS_SEIZE_OPTIONS) < 0)
		return tid == pid ? (ta_att_denied(pid, errno), 1) : 2; /* a thread gone since */
	rc = stop_safe(pid, tid, note, SAFE_TURN_MS, why, size);
	if (rc != 0)
		release(pid, tid, NULL);
	return rc;
}

/*
 * A thread of process pid seized and stopped at a safe point, to call
 * through: the threads in turn, the main thread first, SAFE_TURN_MS each,
 * round after round until SAFE_TRY_MS (a main thread that lives in malloc,
 * as a busy allocator's does, is seldom caught outside it; the others
 * often wait in a system call, or run the program's own code, and are
 * taken at their first stop).  Its tid, or 0 when none was within
 * SAFE_TRY_MS or on an error (said; every thread let go as it was).
 */
static pid_t seize_safe(pid_t pid, struct ta_sysnote *note)
{
	char why[160] = "", other[160], path[64];
	uint64_t t0 = mono_ms();
	int rc = 2;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return ta_att_fail("process %d: cannot list its threads: %s", pid, strerror(errno)),
		       0;
	while (rc == 2 && mono_ms() - t0 < SAFE_TRY_MS) {
		struct dirent *e;
		pid_t tid = pid;

		rewinddir(d);
		rc = safe_turn(pid, pid, note, why, sizeof(why));
		while (rc == 2 && mono_ms() - t0 < SAFE_TRY_MS && (e = readdir(d)) != NULL) {
			tid = (pid_t)atoi(e->d_name);
			if (tid > 0 && tid != pid)
				rc = safe_turn(pid, tid, note, other, sizeof(other));
		}
		if (rc == 0) {
			closedir(d);
			return tid;
		}
	}
	closedir(d);
	if (rc == 2)
		ta_att_fail(
		    "process %d: none of its threads left libc or the dynamic loader in %d ms "
		    "(the main thread last %s), where loading the agent could wait for a lock it "
		    "holds; the process was left as it was: try again",
		    pid, SAFE_TRY_MS, why);
	return 0;
}

/* How long a call in the process may take (dlopen of the agent and its
 * start take milliseconds): TRACEAGENT_ATTACH_TIMEOUT seconds, 10. */
static uint64_t call_timeout_ms(void)
{
	const char *v = getenv("TRACEAGENT_ATTACH_TIMEOUT");
	double s = v ? strtod(v, NULL) : 0;

	return s > 0 ? (uint64_t)(s * 1000) : 10000;
}

/*
 * A call that does not return: the thread waits inside it (for a lock
 * that a thread of the program holds and that we could not see, or for
 * that thread).  Its registers cannot be given back (the call may hold
 * the loader's lock by now, and its frames are on the stack), nor can it
 * be let run to the end of the call (it would return to address 0 and
 * crash).  The least harm: the whole process stopped (SIGSTOP), as it is,
 * for its user to look at (gdb -p, gcore) or to end.
 */
static void leave_stuck(pid_t pid, uint64_t fn, uint64_t ms)
{
	int st;

	stuck = 1;
	kill(pid, SIGSTOP);
	if (wait_until(pid, &st, mono_ms() + 2000) == 0 && WIFSTOPPED(st))
		ptrace(PTRACE_DETACH, pid, NULL, (void *)(uintptr_t)SIGSTOP);
	ta_att_fail(
	    "thread %d: the call into it (at %#llx) did not return in %llu ms: it waits "
	    "inside it, perhaps for a lock another thread holds; its process cannot go on "
	    "safely and is left stopped (SIGSTOP) to be looked at (gdb -p, gcore) or ended; "
	    "kill -CONT lets it go on, but it crashes if that call returns",
	    pid, (unsigned long long)fn, (unsigned long long)ms);
}

/* Calls fn(a0, a1) in the stopped thread, on its stack below sp_base;
 * the result in *ret.  0, or 1 (said; stuck set if the thread was left
 * in the call). */
static int remote_call(pid_t pid, const ta_regs *saved, uint64_t sp_base, uint64_t fn, uint64_t a0,
		       uint64_t a1, uint64_t *ret)
{
	ta_regs r = *saved;
	uint64_t limit = call_timeout_ms(), deadline = mono_ms() + limit;
	int st, w;

	at_signal_stop = 0;
	if (ta_regs_call_setup(pid, &r, sp_base, fn, a0, a1) < 0 || ta_regs_set(pid, &r) < 0 ||
	    ptrace(PTRACE_CONT, pid, NULL, NULL) < 0)
		return ta_att_fail("process %d: cannot set up the call: %s", pid, strerror(errno));
	for (;;) {
		w = wait_until(pid, &st, deadline);
		if (w == -2) {
			leave_stuck(pid, fn, limit);
			return 1;
		}
		if (w < 0)
			return ta_att_fail("process %d: waitpid: %s", pid, strerror(errno));
		if (WIFEXITED(st) || WIFSIGNALED(st))
			return ta_att_fail("process %d ended during the attach", pid);
		if (!WIFSTOPPED(st))
			continue;
		if (WSTOPSIG(st) == SIGSEGV && st >> 16 == 0) {
			siginfo_t si;

			/* A fault, not a kill -SEGV (si_code <= 0), which is
			 * held as any signal. */
			if (ptrace(PTRACE_GETSIGINFO, pid, NULL, &si) < 0 || si.si_code > 0) {
				if (ta_regs_get(pid, &r) < 0)
					return ta_att_fail(
					    "process %d: cannot read the registers: %s", pid,
					    strerror(errno));
				if (TA_REGS_PC(r) != 0)
					return ta_att_fail(
					    "process %d crashed in the attach's call at "
					    "%#llx",
					    pid, (unsigned long long)TA_REGS_PC(r));
				*ret = ta_regs_call_result(&r);
				at_signal_stop = 1;
				return 0;
			}
		}
		/* Another signal (a fault or SIGSTOP: calls_mask blocks the
		 * rest): held with its siginfo for later (its handler must
		 * not run on our call's frame); an event stop: go on. */
		if (st >> 16 == 0)
			keep_signal(pid, WSTOPSIG(st));
		if (ptrace(PTRACE_CONT, pid, NULL, NULL) < 0)
			return ta_att_fail("process %d: %s", pid, strerror(errno));
	}
}

static int put_string(pid_t pid, uint64_t at, const char *s)
{
	struct iovec l = {(void *)(uintptr_t)s, strlen(s) + 1};
	struct iovec rm = {(void *)(uintptr_t)at, strlen(s) + 1};

	return process_vm_writev(pid, &l, 1, &rm, 1, 0) == (ssize_t)(strlen(s) + 1) ? 0 : -1;
}

/* A thread held stopped, and the signal to give back when it is let go
 * (0: hold delivers a signal that comes first before the stop). */
struct held {
	pid_t tid;
	int sig;
	uint64_t pc;
};

/* Seizes and stops thread tid of process pid; 0, or -1 (it ended, or
 * cannot be held). */
static int hold(pid_t pid, pid_t tid, struct held *h)
{
	ta_regs r;
	struct ta_sysnote note;
	int st;

	h->tid = tid;
	h->sig = 0;
	if (ptrace(PTRACE_SEIZE, tid, NULL, (void *)(uintptr_t)TA_REGS_SEIZE_OPTIONS) < 0)
		return -1;
	syscall_note(pid, tid, &note);
	if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) < 0)
		goto fail;
	for (;;) {
		if (waitpid(tid, &st, __WALL) < 0 || WIFEXITED(st) || WIFSIGNALED(st))
			return -1;
		if (!WIFSTOPPED(st))
			continue;
		if (st >> 16 != 0)
			break;
		/* A signal on its way: delivered as it came (its handler runs
		 * first), the interrupt's stop follows. */
		if (ptrace(PTRACE_CONT, tid, NULL, (void *)(uintptr_t)WSTOPSIG(st)) < 0)
			goto fail;
	}
	if (ta_regs_get(tid, &r) < 0 ||
	    (ta_regs_syscall_unintr(&r, &note) && ta_regs_set(tid, &r) < 0))
		goto fail;
	h->pc = TA_REGS_PC(r);
	return 0;
fail:
	ptrace(PTRACE_DETACH, tid, NULL, (void *)(uintptr_t)h->sig);
	return -1;
}

/*
 * Calls fn(a0 or the string s, a1) in process pid (on its main thread)
 * with every one of its threads stopped (pcs: the threads' program
 * counters passed as a0, their count as a1, when s is NULL and with_pcs).
 * For --patch: the entries are written while no thread runs, those
 * created while we stop the others included.  0 with the result in *ret,
 * or 1 (said).
 */
static int call_all_stopped(pid_t pid, uint64_t fn, const char *str, int with_pcs, uint64_t *ret)
{
	struct held *hs = NULL, *mainh = NULL;
	size_t n = 0, cap = 0;
	char dir[64];
	DIR *d;
	struct dirent *e;
	ta_regs saved;
	uint64_t sp, at, mask;
	int rc = 1, masked = 0;

	snprintf(dir, sizeof(dir), "/proc/%d/task", pid);
	/* Listed again until a listing finds no thread not held: one that a
	 * thread created before we stopped it is there by the next listing
	 * (a stopped thread creates none). */
	for (int again = 1; again;) {
		again = 0;
		d = opendir(dir);
		if (!d) {
			ta_att_fail("process %d: cannot list its threads: %s", pid,
				    strerror(errno));
			goto out;
		}
		while ((e = readdir(d))) {
			pid_t tid = (pid_t)atoi(e->d_name);
			struct held *nh;
			int known = 0;

			if (tid <= 0)
				continue;
			for (size_t i = 0; i < n && !known; i++)
				known = hs[i].tid == tid;
			if (known)
				continue;
			nh = ta_vec_reserve(hs, n + 1, &cap, sizeof(*nh), 16);
			if (!nh) {
				closedir(d);
				ta_att_fail("process %d: out of memory", pid);
				goto out;
			}
			hs = nh;
			if (hold(pid, tid, &hs[n]) == 0) {
				n++;
				again = 1;
			}
		}
		closedir(d);
	}
	for (size_t i = 0; i < n; i++)
		if (hs[i].tid == pid)
			mainh = &hs[i];
	if (!mainh) {
		ta_att_fail("process %d: cannot stop its main thread", pid);
		goto out;
	}
	if (calls_mask(pid, &mask) < 0) {
		ta_att_fail("process %d: cannot set its signal mask: %s", pid, strerror(errno));
		goto out;
	}
	masked = 1;
	if (regs_save(pid, &saved, NULL) < 0)
		goto out;
	sp = (TA_REGS_SP(saved) - 1024) & ~15ull;
	at = sp - 8192 - ((with_pcs ? n * 8 : 0) & ~15ull);
	if (str && put_string(pid, at, str) < 0) {
		ta_att_fail("process %d: cannot write to its stack: %s", pid, strerror(errno));
		goto out;
	}
	if (!str && with_pcs) {
		for (size_t i = 0; i < n; i++) {
			struct iovec l = {&hs[i].pc, 8}, rm = {(void *)(uintptr_t)(at + 8 * i), 8};
			if (process_vm_writev(pid, &l, 1, &rm, 1, 0) != 8) {
				ta_att_fail("process %d: cannot write to its stack: %s", pid,
					    strerror(errno));
				goto out;
			}
		}
	}
	if (remote_call(pid, &saved, at - 256, fn, at, with_pcs ? n : 0, ret) == 0)
		rc = 0;
	if (!stuck && ta_regs_set(pid, &saved) < 0)
		rc = ta_att_fail("process %d: cannot restore the registers: %s", pid,
				 strerror(errno));
out:
	for (size_t i = 0; i < n; i++) {
		if (hs[i].tid != pid)
			ptrace(PTRACE_DETACH, hs[i].tid, NULL, (void *)(uintptr_t)hs[i].sig);
		else if (!stuck)
			release(pid, pid, masked ? &mask : NULL);
	}
	free(hs);
	return rc;
}

/* The address of the agent's function name in process pid; 0 if not
 * there (said). */
static uint64_t agent_fn(pid_t pid, const char *agent, const char *name)
{
	char seen[PATH_MAX + 32];
	uintptr_t base = ta_att_map_base(pid, NULL, agent, NULL, 0);
	uint64_t off;

	snprintf(seen, sizeof(seen), "/proc/%d/root%s", pid, agent);
	off = base ? ta_att_elf_dynsym(seen, name) : 0;
	if (!off)
		ta_att_fail("process %d: the agent %s has no %s there", pid, agent, name);
	return off ? base + off : 0;
}

/* --patch: planned with the threads running (the patcher allocates and
 * decodes), written with them all stopped (mprotect and stores only).
 * later: for the modules loaded since the last call, in the window; 2 when
 * the process was inside a dlopen (to be asked again). */
int ta_att_patch_in(pid_t pid, const char *agent, const char *spec, int later)
{
	uint64_t prep = agent_fn(pid, agent, "ta_attach_patch_prepare");
	uint64_t commit = agent_fn(pid, agent, "ta_attach_patch_commit");
	uint64_t ret;
	int n, done;

	if (!prep || !commit)
		return 1;
	/* One thread stopped (the others go on) for the planning, which
	 * allocates: at a safe point. */
	{
		struct ta_sysnote note;
		ta_regs saved;
		uint64_t at, mask;
		int rc = 1, masked = 0;

		pid_t tid = seize_safe(pid, &note);

		if (!tid)
			return ta_att_fail("process %d: cannot stop it to patch", pid);
		if (calls_mask(tid, &mask) == 0) {
			masked = 1;
			if (regs_save(tid, &saved, &note) == 0) {
				at = ((TA_REGS_SP(saved) - 1024) & ~15ull) - 8192;
				if (put_string(pid, at, spec) == 0 &&
				    remote_call(tid, &saved, at - 256, prep, at, 0, &ret) == 0)
					rc = 0;
				if (!stuck)
					ta_regs_set(tid, &saved);
			}
		}
		if (stuck)
			return 1;
		release(pid, tid, masked ? &mask : NULL);
		if (rc)
			return 1;
	}
	n = (int)ret;
	if (n == -EAGAIN)
		return 2;
	if (n < 0)
		return ta_att_fail("process %d: --patch %s: %s (said on its stderr)", pid, spec,
				   strerror(-n));
	if (n == 0) {
		if (!later)
			fprintf(stderr,
				"traceagent: attach: --patch %s: no function to patch in "
				"process %d\n",
				spec, pid);
		return 0;
	}
	if (call_all_stopped(pid, commit, NULL, 1, &ret))
		return 1;
	done = (int)ret;
	/* An entry a thread was stopped inside is written at a later stop
	 * (the agent writes only those not written yet): a few tries, 1 ms
	 * apart, and a thread spinning through a tiny function is elsewhere. */
	for (int tries = 0; done < n && tries < 20; tries++) {
		struct timespec ms = {0, 1000 * 1000};

		nanosleep(&ms, NULL);
		if (call_all_stopped(pid, commit, NULL, 1, &ret))
			break;
		done += (int)ret;
	}
	fprintf(stderr, "traceagent: attach: patched %d functions in process %d%s", done, pid,
		later ? " (in modules loaded during the window)" : "");
	if (done < n)
		fprintf(stderr,
			" (%d left alone: a thread was inside their first bytes, or they changed "
			"since they were planned: a breakpoint)",
			n - done);
	fputc('\n', stderr);
	return 0;
}

/* The patched entries as they were, all threads stopped. */
int ta_att_patch_out(pid_t pid, const char *agent)
{
	uint64_t restore = agent_fn(pid, agent, "ta_attach_patch_restore");
	uint64_t ret;

	if (!restore)
		return 1;
	return call_all_stopped(pid, restore, NULL, 0, &ret);
}

/* dlopen(agent) and ta_attach_start(settings) in process pid.  0, or 1
 * after saying why. */
int ta_att_inject(pid_t pid, const char *agent, const char *settings)
{
	char libc[PATH_MAX], libc_seen[PATH_MAX + 32], agent_seen[PATH_MAX + 32];
	ta_regs saved;
	struct ta_sysnote note;
	uintptr_t libc_base, agent_base;
	uint64_t dlopen_off, start_off, sp, path_at, set_at, ret, mask;
	int masked = 0, rc = 1;
	pid_t tid;

	{
		/* Its maps are read under the same rule as ptrace (a
		 * non-dumpable process's are not): said as such, not as a
		 * missing libc below. */
		char maps[64];
		int fd;

		snprintf(maps, sizeof(maps), "/proc/%d/maps", pid);
		fd = open(maps, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return errno == ENOENT
				   ? ta_att_fail("process %d ended during the attach", pid)
				   : ta_att_denied(pid, errno);
		close(fd);
	}
	libc_base = ta_att_map_base(pid, "/libc.so.6", NULL, libc, sizeof(libc));
	if (!libc_base)
		return ta_att_fail(
		    "process %d is statically linked (no libc.so.6 in its maps): the "
		    "agent cannot be loaded into it",
		    pid);
	/* The files as the target sees them (its mount namespace). */
	snprintf(libc_seen, sizeof(libc_seen), "/proc/%d/root%s", pid, libc);
	snprintf(agent_seen, sizeof(agent_seen), "/proc/%d/root%s", pid, agent);
	if (access(agent_seen, R_OK) < 0)
		return ta_att_fail(
		    "process %d cannot reach the agent %s (in its mount namespace): %s", pid, agent,
		    strerror(errno));
	dlopen_off = ta_att_elf_dynsym(libc_seen, "dlopen");
	if (!dlopen_off)
		return ta_att_fail("process %d: no dlopen in %s (glibc 2.34 or later is needed)",
				   pid, libc);
	start_off = ta_att_elf_dynsym(agent_seen, "ta_attach_start");
	if (!start_off)
		return ta_att_fail("the agent %s has no ta_attach_start", agent);
	tid = seize_safe(pid, &note);
	if (!tid)
		return 1;
	if (calls_mask(tid, &mask) < 0) {
		ta_att_fail("process %d: cannot set its signal mask: %s", pid, strerror(errno));
		goto detach;
	}
	masked = 1;
	if (regs_save(tid, &saved, &note) < 0)
		goto detach;
	/* Below the red zone (128 bytes on x86-64), with room to spare. */
	sp = (TA_REGS_SP(saved) - 1024) & ~15ull;
	path_at = sp - 4096;
	set_at = path_at - 8192;
	if (put_string(pid, path_at, agent) < 0 || put_string(pid, set_at, settings) < 0) {
		ta_att_fail("process %d: cannot write to its stack: %s", pid, strerror(errno));
		goto restore;
	}
	if (remote_call(tid, &saved, set_at - 256, libc_base + dlopen_off, path_at, RTLD_NOW,
			&ret) != 0)
		goto restore;
	if (!ret) {
		/* dlerror's message, from the process's memory. */
		uint64_t err_off = ta_att_elf_dynsym(libc_seen, "dlerror");
		char why[512] = "";

		if (err_off &&
		    remote_call(tid, &saved, set_at - 256, libc_base + err_off, 0, 0, &ret) == 0 &&
		    ret) {
			struct iovec l = {why, sizeof(why) - 1};
			struct iovec rm = {(void *)(uintptr_t)ret, sizeof(why) - 1};

			if (process_vm_readv(pid, &l, 1, &rm, 1, 0) <= 0)
				why[0] = 0;
			why[sizeof(why) - 1] = 0;
		}
		ta_att_fail("process %d: dlopen of the agent %s failed in the process%s%s", pid,
			    agent, why[0] ? ": " : "", why);
		goto restore;
	}
	agent_base = ta_att_map_base(pid, NULL, agent, NULL, 0);
	if (!agent_base) {
		ta_att_fail("process %d: the agent %s is not in its maps after dlopen", pid, agent);
		goto restore;
	}
	if (remote_call(tid, &saved, set_at - 256, agent_base + start_off, set_at, 0, &ret) != 0)
		goto restore;
	if ((int)ret == -EBUSY)
		ta_att_fail("process %d is being traced by another attach already", pid);
	else if ((int)ret < 0)
		ta_att_fail(
		    "process %d: the agent could not start there (%s); see the process's stderr",
		    pid, strerror(-(int)ret));
	else
		rc = 0;
restore:
	/* Left stopped inside the call (remote_call): nothing to give back. */
	if (stuck)
		return 1;
	if (ta_regs_set(tid, &saved) < 0)
		ta_att_fail("process %d: cannot restore the registers: %s", pid, strerror(errno));
detach:
	release(pid, tid, masked ? &mask : NULL);
	return rc;
}
#endif
