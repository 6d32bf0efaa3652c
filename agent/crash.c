/* SPDX-License-Identifier: MIT */
/*
 * crash.c - a program that crashes keeps its trace: on SIGSEGV, SIGBUS,
 * SIGILL, SIGFPE or SIGABRT the agent writes every ring and a CRASH chunk
 * (signal, faulting address, thread, backtrace), then lets the signal take
 * its default action as if the agent were not there: same exit status, same
 * core dump.
 *
 * Only signals whose disposition is the default when the agent starts are
 * taken: a program's own handler (a garbage collector's write barrier, a
 * crash reporter) is never second-guessed.  If the program installs one
 * later, it replaces ours, and its handler decides.
 *
 * A handler may not take locks another thread holds forever, nor wait on
 * itself: every lock here is tried for a bounded time, and what cannot be
 * had is skipped.
 *
 * The signals whose default action ends the process (SIGTERM, SIGINT,
 * SIGHUP, SIGPIPE, SIGQUIT, SIGALRM, SIGUSR1, SIGUSR2) are taken the same
 * way: what was recorded and an END naming the signal are written, then
 * the process dies of it (same status, same core dump for SIGQUIT).  The
 * writing is the flusher's (it blocks every signal, may allocate and take
 * the agent's locks): the thread that took the signal may have been
 * stopped holding malloc's lock, so it only asks and waits, a bounded
 * time.
 *
 * The program never sees these handlers (sigaction and signal are
 * interposed, interpose.c): while the agent holds a signal the program
 * is told the action is the default, and what it sets is its own.  A
 * handler or SIG_IGN it installs replaces ours; SIG_DFL it sets (again)
 * is held by the agent, as at the start.
 *
 * A thread that overflows its stack has no room left for a handler: each
 * thread the agent records gets an alternate signal stack of the agent's
 * own when it has none (never replacing the program's), and the handler
 * runs on whichever is there (SA_ONSTACK).  sigaltstack (interpose.c) does
 * not show ours to the program: it sees no alternate stack, as untraced.
 */
#define _GNU_SOURCE
#define UNW_LOCAL_ONLY
#include <errno.h>
#include <libunwind.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "agent.h"
#include "api.h"
#include "args.h"
#include "clock.h"
#include "crash.h"
#include "dump.h"
#include "flusher.h"
#include "format.h"
#include "lazylib.h"
#include "nextsym.h"
#include "patch.h"
#include "ring.h"

#define MAX_FRAMES 64

/* libunwind, the final drain (the encoder, LZ4's state) and the writes,
 * with room to spare; pages never touched cost nothing. */
#define ALTSTACK_BYTES (256u << 10)
#define GUARD_BYTES    (64u << 10) /* below it: an overflow there faults */

/* This thread's alternate stack (the mapping, guard included), when the
 * agent gave it one; tried once per thread. */
static __thread uint8_t *altstack __attribute__((tls_model("initial-exec")));
static __thread int altstack_tried __attribute__((tls_model("initial-exec")));

static const int crash_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
static uint32_t crashing; /* atomic: only the first crash is recorded */

/* libunwind is opened by the flusher some time after the start
 * (lazylib.h); a crash before that asks for it now and waits for it, a
 * bounded time: the flusher may be the crashing thread, or need a lock the
 * crashing thread holds (the loader's, malloc's).  Past that the crash is
 * recorded without its backtrace, and the line below says so. */
#define UNWIND_WAIT_MS 2000

static int unwinder_ready(void)
{
	static const char msg[] = "traceagent: libunwind was not loaded in time: the crash is "
				  "recorded without its backtrace\n";

	if (!ta_lazy_unw_settled() && ta_flusher_can_open_unwind()) {
		ta_lazy_unw_request();
		ta_flusher_kick();
		for (int i = 0; i < UNWIND_WAIT_MS && !ta_lazy_unw_settled(); i++) {
			struct timespec ms = {0, 1000000};

			syscall(SYS_nanosleep, &ms, NULL);
		}
	}
	if (ta_lazy_unw_on())
		return 1;
	if (!ta_lazy_unw_settled() && syscall(SYS_write, 2, msg, sizeof(msg) - 1) < 0) {
		/* Nowhere left to say it. */
	}
	return 0;
}

/* The backtrace of the crashing thread, from the signal's own context so
 * the first frame is the faulting instruction. */
static unsigned backtrace_from(void *uc, uint64_t pcs[MAX_FRAMES])
{
	unw_cursor_t cursor;
	unsigned n = 0;
	/* A copy: the faulting frame's address may be rewritten below, and
	 * the thread must resume where it faulted. */
	ucontext_t ucc = *(ucontext_t *)uc;

	if (!unwinder_ready() || !ta_lazy.u_init_local2 ||
	    ta_lazy.u_init_local2(&cursor, (unw_context_t *)&ucc, UNW_INIT_SIGNAL_FRAME) < 0)
		return 0;
	do {
		unw_word_t ip;
		uint64_t orig;
		if (ta_lazy.u_get_reg(&cursor, UNW_REG_IP, &ip) < 0 || !ip)
			break;
		/* A function relocated whole runs from a copy that has no
		 * unwind information: the walk goes on from the same place
		 * in the original, whose frame the copy keeps.  Above the
		 * first frame this rewrites a return address on the stack to
		 * the original code, which does the same (the agent records
		 * nothing after a crash). */
		if ((orig = ta_patch_orig_pc(ip, n == 0)) && ta_lazy.u_set_reg &&
		    ta_lazy.u_set_reg(&cursor, UNW_REG_IP, orig) == 0)
			ip = orig;
		pcs[n++] = ip;
	} while (n < MAX_FRAMES && ta_lazy.u_step(&cursor) > 0);
	return n;
}

static void record_crash(int sig, const siginfo_t *si, void *uc)
{
	uint64_t pcs[MAX_FRAMES];
	uint64_t ticks = ta_ticks();
	unsigned n = backtrace_from(uc, pcs);
	struct ta_buf b = {0};
	uint32_t running = TA_S_RUNNING;

	/* From here no thread waits for ring memory or starts anything;
	 * what the threads have recorded is drained below. */
	if (!__atomic_compare_exchange_n(&ta_state, &running, TA_S_STOPPED, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return;
	ta_dump_crash_mode();
	ta_flusher_crash_drain();
	ta_buf_u(&b, (uint64_t)syscall(SYS_gettid));
	ta_buf_u(&b, ticks);
	ta_buf_u(&b, (uint64_t)sig);
	ta_buf_u(&b, (uint64_t)(int64_t)si->si_code);
	ta_buf_u(&b, (uint64_t)(uintptr_t)si->si_addr);
	ta_buf_u(&b, n);
	for (unsigned i = 0; i < n; i++)
		ta_buf_u(&b, pcs[i]);
	if (!b.oom)
		ta_dump_chunk(TA_CHUNK_CRASH, b.p, b.len);
	ta_buf_free(&b);
	ta_dump_clock();
	ta_agent_write_end(TA_END_F_CRASH);
}

static void crash_handler(int sig, siginfo_t *si, void *uc)
{
	struct sigaction dfl;
	int saved = errno;

	/* A string argument's copy read what cannot be read: it resumes at
	 * its failure exit (args_copy.c), as if nothing happened. */
	if (ta_args_fixup(sig, uc))
		return;
	/* This thread records nothing more (it may have been in a hook),
	 * library calls included.  Its patched frames get their return
	 * addresses back, for the backtrace below and for the core dump. */
	ta_cur_stop();
	TA_GUARD_ENTER();
	ta_libcalls_enable(0);
	ta_patch_restore(0);
	if (__atomic_exchange_n(&crashing, 1, __ATOMIC_ACQ_REL) == 0 &&
	    (uint32_t)getpid() == __atomic_load_n(&ta_pid, __ATOMIC_RELAXED))
		record_crash(sig, si, uc);

	/* Hand the signal on as if we had never been here.  A fault returns
	 * to the faulting instruction and faults again, now with the default
	 * action (same core dump, same status); a signal that was sent (or
	 * raised by abort) is raised again: blocked until we return. */
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	ta_real_sigaction(sig, &dfl, NULL);
	if (si->si_code <= 0 || sig == SIGABRT)
		syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), sig);
	errno = saved;
}

void ta_crash_thread_start(void)
{
	stack_t cur, ss;
	void *p;

	if (altstack_tried)
		return;
	altstack_tried = 1;
	/* Raw syscalls: our sigaltstack wrapper hides ours from the program. */
	if (syscall(SYS_sigaltstack, NULL, &cur) < 0 || !(cur.ss_flags & SS_DISABLE))
		return; /* the program's own: it stays */
	p = mmap(NULL, GUARD_BYTES + ALTSTACK_BYTES, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
	if (p == MAP_FAILED)
		return; /* the handler then runs on the thread's stack */
	if (mprotect(p, GUARD_BYTES, PROT_NONE) < 0) {
		munmap(p, GUARD_BYTES + ALTSTACK_BYTES);
		return;
	}
	memset(&ss, 0, sizeof(ss));
	ss.ss_sp = (uint8_t *)p + GUARD_BYTES;
	ss.ss_size = ALTSTACK_BYTES;
	if (syscall(SYS_sigaltstack, &ss, NULL) < 0) {
		munmap(p, GUARD_BYTES + ALTSTACK_BYTES);
		return;
	}
	altstack = p;
}

int ta_crash_altstack_is_ours(const void *sp)
{
	return altstack && sp == altstack + GUARD_BYTES;
}

void ta_crash_thread_exit(void)
{
	stack_t cur, off;

	if (!altstack)
		return;
	if (syscall(SYS_sigaltstack, NULL, &cur) == 0 && ta_crash_altstack_is_ours(cur.ss_sp) &&
	    !(cur.ss_flags & SS_DISABLE)) {
		if (cur.ss_flags & SS_ONSTACK)
			return; /* running on it (a handler ends the thread): keep it */
		memset(&off, 0, sizeof(off));
		off.ss_flags = SS_DISABLE;
		if (syscall(SYS_sigaltstack, &off, NULL) < 0)
			return;
	}
	/* Not (or no longer) in use: the program may have put its own. */
	munmap(altstack, GUARD_BYTES + ALTSTACK_BYTES);
	altstack = NULL;
}

/* ---- the signals the agent holds ------------------------------------------ */

static const int term_signals[] = {SIGTERM, SIGINT,  SIGHUP,  SIGPIPE,
				   SIGQUIT, SIGALRM, SIGUSR1, SIGUSR2};

/* A signal held: the agent's handler is installed while the program was
 * told (or found) that the action is the default; prog is that action as
 * the program set it (its mask and flags), for its queries.  Under
 * act_lock. */
static struct {
	uint8_t held;
	struct sigaction prog;
} held[_NSIG];

uint32_t ta_crash_fault_guard;

/* Whether the agent's handler takes both SIGSEGV and SIGBUS (under
 * act_lock): the copy of a string argument relies on it. */
static void fault_guard_update(void)
{
	/* Relaxed: read by the hot path of arguments, which a late view of
	 * a change only makes skip a string or read one a moment longer. */
	__atomic_store_n(&ta_crash_fault_guard, held[SIGSEGV].held && held[SIGBUS].held,
			 __ATOMIC_RELAXED);
}
/* A spin lock, taken with every signal blocked in the thread (sigaction
 * is called from handlers, the program's re-raise idiom among them). */
static uint32_t act_lock;
/* Set while the agent takes the default actions (from its start to a
 * detach): a SIG_DFL the program sets is then held.  Under act_lock. */
static int taking;

/* The first death by a held signal: its number (atomic, only the first
 * is recorded), and 1 once its END is written or given up. */
static uint32_t dying;
static uint32_t death_over;

/* How long a dying thread waits for the flusher to write what was
 * recorded: the drain of a full ring at the memory cap takes well under
 * a second; past this the process dies with its dump incomplete. */
#define DEATH_WAIT_MS 20000

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);
static sigaction_fn real_sigaction_fn;

int ta_real_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	/* Relaxed: a function's address, the same whoever finds it; found
	 * at the install, before any handler may need it. */
	sigaction_fn f = __atomic_load_n(&real_sigaction_fn, __ATOMIC_RELAXED);

	if (!f) {
		f = (sigaction_fn)ta_next_fn("sigaction");
		__atomic_store_n(&real_sigaction_fn, f, __ATOMIC_RELAXED);
	}
	if (!f) {
		errno = ENOSYS;
		return -1;
	}
	return f(sig, act, old);
}

static int is_crash_signal(int sig)
{
	for (size_t i = 0; i < sizeof(crash_signals) / sizeof(crash_signals[0]); i++)
		if (crash_signals[i] == sig)
			return 1;
	return 0;
}

static int is_term_signal(int sig)
{
	for (size_t i = 0; i < sizeof(term_signals) / sizeof(term_signals[0]); i++)
		if (term_signals[i] == sig)
			return 1;
	return 0;
}

static int is_default(const struct sigaction *a)
{
	/* sa_handler and sa_sigaction share their storage; SIG_DFL is 0. */
	return a->sa_handler == SIG_DFL;
}

static void act_lock_take(sigset_t *old)
{
	sigset_t all;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, old);
	/* Acquire: pairs with the release in act_lock_drop (the table). */
	while (__atomic_exchange_n(&act_lock, 1, __ATOMIC_ACQUIRE))
		sched_yield();
}

static void act_lock_drop(const sigset_t *old)
{
	__atomic_store_n(&act_lock, 0, __ATOMIC_RELEASE);
	pthread_sigmask(SIG_SETMASK, old, NULL);
}

/* The bounded wait of a handler for a flag another thread sets. */
static void wait_flag(const uint32_t *flag, unsigned ms)
{
	for (unsigned i = 0; i < ms && !__atomic_load_n(flag, __ATOMIC_ACQUIRE); i++) {
		struct timespec one = {0, 1000000};

		syscall(SYS_nanosleep, &one, NULL);
	}
}

void ta_death_write(void)
{
	uint32_t sig = __atomic_load_n(&dying, __ATOMIC_ACQUIRE);

	if (!sig || __atomic_load_n(&death_over, __ATOMIC_ACQUIRE))
		return;
	/* Bounded: a thread stopped by the signal in the agent's code keeps
	 * what it holds. */
	ta_dump_crash_mode();
	ta_flusher_crash_drain();
	ta_dump_clock();
	ta_agent_end_signal(sig);
	ta_agent_write_end(TA_END_F_SIGNAL);
	/* Release: pairs with the dying thread's acquire (wait_flag). */
	__atomic_store_n(&death_over, 1, __ATOMIC_RELEASE);
}

uint32_t ta_death_pending(void)
{
	return __atomic_load_n(&dying, __ATOMIC_ACQUIRE) &&
	       !__atomic_load_n(&death_over, __ATOMIC_ACQUIRE);
}

/* A held signal's default action is to end the process: the flusher
 * writes what was recorded and the END, then the signal is delivered
 * again with its default action.  Async-signal-safe on this side: atomics,
 * futex and nanosleep, sigaction and tgkill. */
static void term_handler(int sig, siginfo_t *si, void *uc)
{
	struct sigaction dfl;
	uint32_t none = 0, running = TA_S_RUNNING;
	int saved = errno;

	(void)si;
	(void)uc;
	/* This thread records nothing more (it may have been in a hook);
	 * its patched frames get their return addresses back (a core dump
	 * of SIGQUIT shows the program's). */
	ta_cur_stop();
	TA_GUARD_ENTER();
	ta_patch_restore(0);
	if ((uint32_t)getpid() == __atomic_load_n(&ta_pid, __ATOMIC_RELAXED)) {
		if (__atomic_compare_exchange_n(&dying, &none, (uint32_t)sig, 0, __ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE)) {
			/* From here no thread waits for ring memory and the
			 * exit writes no second END. */
			if (__atomic_compare_exchange_n(&ta_state, &running, TA_S_STOPPED, 0,
							__ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
				ta_libcalls_enable(0);
				ta_flusher_kick();
			} else {
				/* Not recording (ended, never started): nothing
				 * to write, or the exit is writing it. */
				__atomic_store_n(&death_over, 1, __ATOMIC_RELEASE);
			}
		}
		/* Every thread a held signal reaches waits for the END. */
		wait_flag(&death_over, DEATH_WAIT_MS);
		/* The exit writing the END on another thread ends first. */
		ta_agent_wait_shutdown(DEATH_WAIT_MS);
	}
	/* The default action, on this thread when the handler returns (the
	 * signal is blocked until then). */
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	ta_real_sigaction(sig, &dfl, NULL);
	syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), sig);
	errno = saved;
}

/* The agent's action for a signal it holds. */
static void ours(int sig, struct sigaction *sa)
{
	memset(sa, 0, sizeof(*sa));
	if (is_crash_signal(sig))
		sa->sa_sigaction = crash_handler;
	else
		sa->sa_sigaction = term_handler;
	/* Everything blocked while we write: no other handler runs on top
	 * of the flush. */
	sigfillset(&sa->sa_mask);
	sa->sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
}

/* Whether the kernel has the agent's handler for sig: what libc does
 * without the interposer (sigset, system's) or the kernel itself
 * (SA_RESETHAND) changes it unseen. */
static int ours_installed(int sig)
{
	struct sigaction cur;

	return ta_real_sigaction(sig, NULL, &cur) == 0 && (cur.sa_flags & SA_SIGINFO) &&
	       (cur.sa_sigaction == crash_handler || cur.sa_sigaction == term_handler);
}

static int covered(int sig)
{
	return sig > 0 && sig < _NSIG && (is_crash_signal(sig) || is_term_signal(sig));
}

int ta_signal_action(int sig, const struct sigaction *act, struct sigaction *old)
{
	struct sigaction prog_old, sa;
	sigset_t mask;
	int rc, err;

	if (!covered(sig))
		return ta_real_sigaction(sig, act, old);
	act_lock_take(&mask);
	if (held[sig].held && !ours_installed(sig))
		held[sig].held = 0;
	if (held[sig].held) {
		prog_old = held[sig].prog;
		rc = 0;
		if (act && !is_default(act)) {
			/* The program's own handler (or SIG_IGN): it decides. */
			rc = ta_real_sigaction(sig, act, NULL);
			if (rc == 0)
				held[sig].held = 0;
		} else if (act) {
			held[sig].prog = *act;
		}
		if (rc == 0 && old)
			*old = prog_old;
	} else if (act && is_default(act) && taking) {
		ours(sig, &sa);
		rc = ta_real_sigaction(sig, &sa, old);
		if (rc == 0) {
			held[sig].held = 1;
			held[sig].prog = *act;
		}
	} else {
		rc = ta_real_sigaction(sig, act, old);
	}
	err = errno;
	fault_guard_update();
	act_lock_drop(&mask);
	errno = err;
	return rc;
}

void ta_crash_install(void)
{
	const int *lists[2] = {crash_signals, term_signals};
	const size_t counts[2] = {sizeof(crash_signals) / sizeof(crash_signals[0]),
				  sizeof(term_signals) / sizeof(term_signals[0])};
	sigset_t mask;

	act_lock_take(&mask);
	taking = 1;
	for (int l = 0; l < 2; l++) {
		for (size_t i = 0; i < counts[l]; i++) {
			int sig = lists[l][i];
			struct sigaction old, sa;

			/* Only a default action: the program's own handlers
			 * and SIG_IGN (nohup's) stay. */
			if (held[sig].held || ta_real_sigaction(sig, NULL, &old) < 0 ||
			    !is_default(&old))
				continue;
			ours(sig, &sa);
			if (ta_real_sigaction(sig, &sa, NULL) == 0) {
				held[sig].held = 1;
				held[sig].prog = old;
			}
		}
	}
	fault_guard_update();
	act_lock_drop(&mask);
}

void ta_signal_default_if(int sig, uintptr_t ours_fn)
{
	struct sigaction cur, dfl;

	/* Only ours: a handler the program set since stays. */
	if (ta_real_sigaction(sig, NULL, &cur) < 0 ||
	    (cur.sa_flags & SA_SIGINFO ? (uintptr_t)cur.sa_sigaction : (uintptr_t)cur.sa_handler) !=
		ours_fn)
		return;
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	ta_real_sigaction(sig, &dfl, NULL);
}

void ta_crash_uninstall(void)
{
	sigset_t mask;

	/* The program's actions as it set them (all defaults), where the
	 * handler is still ours: an injected agent interposes nothing, and
	 * a handler the program set meanwhile stays. */
	act_lock_take(&mask);
	taking = 0;
	for (int sig = 1; sig < _NSIG; sig++) {
		if (!held[sig].held)
			continue;
		held[sig].held = 0;
		if (ours_installed(sig))
			ta_real_sigaction(sig, &held[sig].prog, NULL);
	}
	fault_guard_update();
	act_lock_drop(&mask);
}
