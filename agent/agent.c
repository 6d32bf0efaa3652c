/* SPDX-License-Identifier: MIT */
/*
 * agent.c - the agent's life: started by the first hook, finished by the
 * process's exit paths.
 *
 * Starting lazily, at the first instrumented call rather than in a
 * constructor, means a process that runs no instrumented code (a shell
 * under `traceagent record`, a program it executes) creates no dump and
 * prints nothing: loading the agent changes nothing for it.  Library calls
 * of the classes TRACEAGENT_LIBCALLS names explicitly start it too
 * (libcalls.c), the default classes do not.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <malloc.h>
#include <sys/auxv.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "addr.h"
#include "agent.h"
#include "api.h"
#include "attach.h"
#include "clock.h"
#include "crash.h"
#include "ctl.h"
#include "describe.h"
#include "dump.h"
#include "flusher.h"
#include "filter.h"
#include "keep.h"
#include "lazylib.h"
#include "format.h"
#include "got.h"
#include "libcalls.h"
#include "modules.h"
#include "nextsym.h"
#include "patch.h"
#include "ring.h"
#include "settings.h"
#include "symstore.h"
#include "tap.h"

/* The forking thread took the flusher's lock (prepare): its parent and
 * child handlers let it go whatever the state is by then.  An attach
 * window may end during the fork (its detach, on the control thread, waits
 * for the flusher, which waits for that lock): judged by the state again,
 * the lock stayed held and the detach never ended. */
static __thread int fork_locked __attribute__((tls_model("initial-exec")));
/* This thread is inside ta_agent_ensure_started's start or restart (a
 * signal handler of it that forks must not wait for it). */
static __thread int starting_here __attribute__((tls_model("initial-exec")));

/* A fork while another thread starts the agent (or restarts it in a forked
 * child) waits for the start to end: the child would otherwise hold a start
 * half done that no thread of it finishes, and every thread of it that
 * records would wait for it for ever.  It takes milliseconds (seconds to
 * reach a collector): bounded all the same, the child then not traced
 * (on_fork_child). */
static void fork_wait_start(void)
{
	struct timespec nap = {0, 200 * 1000};

	/* Acquire: pairs with ta_agent_ensure_started's release of the
	 * state, after which the start's work is seen (and copied whole). */
	for (int i = 0; i < 50000 && !starting_here &&
			__atomic_load_n(&ta_state, __ATOMIC_ACQUIRE) == TA_S_STARTING;
	     i++)
		nanosleep(&nap, NULL);
}

static void on_fork_prepare(void)
{
	TA_GUARD_ENTER();
	fork_wait_start();
	if (__atomic_load_n(&ta_state, __ATOMIC_ACQUIRE) == TA_S_RUNNING) {
		ta_flusher_fork_prepare();
		fork_locked = 1;
	}
	/* After the flusher's lock: the flusher takes this one under it. */
	ta_api_fork_prepare();
	/* Last: a walk or load that begins from here on waits for the fork
	 * to end, and the flusher may begin one holding its lock (taken
	 * above, so it cannot be there now); one under way holding a lock
	 * taken above only delays the fork by the wait's bound. */
	ta_lazy_fork_prepare();
	TA_GUARD_LEAVE();
}

static void on_fork_parent(void)
{
	TA_GUARD_ENTER();
	ta_lazy_fork_parent();
	ta_api_fork_release();
	if (fork_locked) {
		fork_locked = 0;
		ta_flusher_fork_parent();
	}
	TA_GUARD_LEAVE();
}

static void on_fork_child(void)
{
	int locked = fork_locked;
	uint32_t starting = TA_S_STARTING;

	ta_api_fork_release();
	ta_lazy_fork_child();
	fork_locked = 0;
	/* Forked in the middle of a start the fork did not wait for (a
	 * signal handler of the starting thread forked, or the start took
	 * longer than the wait): nobody here can finish it. */
	if (__atomic_compare_exchange_n(&ta_state, &starting, TA_S_STOPPED, 0, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE)) {
		starting_here = 0;
		ta_api_stop();
		ta_warn("process %d was forked while the agent was starting in its parent; not "
			"tracing it",
			(int)getpid());
		return;
	}
	/* The child has one thread, no flusher, and copies of the rings,
	 * whose contents the parent writes.  It goes on recording into the
	 * same dump as a process of its own: the first hook restarts the
	 * agent (a thread cannot be created safely from here). */
	if (__atomic_load_n(&ta_state, __ATOMIC_ACQUIRE) != TA_S_RUNNING) {
		/* Stopped or detached during the fork: the lock let go, as in
		 * the parent (this thread took it). */
		if (locked)
			ta_flusher_fork_parent();
		return;
	}
	/* Library calls wait for the restart too; the classes asked for
	 * explicitly make it, as they start the agent (libcalls.c). */
	__atomic_store_n(&ta_lc_on, ta_lc_asked, __ATOMIC_RELAXED);
	TA_GUARD_ENTER();
	ta_pid = (uint32_t)getpid();
	ta_flusher_forget();
	ta_control_fork_child();
	ta_symstore_fork_child();
	ta_dump_fork_child();
	ta_modules_forget();
	ta_ring_fork_child();
	/* Paused or with functions off, the hooks would never get to the
	 * restart: the child would have no socket to be resumed on. */
	ta_api_fork_child();
	ta_attach_fork_child();
	__atomic_store_n(&ta_state, TA_S_FORKED, __ATOMIC_RELEASE);
	TA_GUARD_LEAVE();
}

/* Under `traceagent attach` (settings of the attach, or an injected agent):
 * the program ran before, the flusher's first pass comes at once. */
static int attaching(void)
{
	return ta_settings_attach != NULL || __atomic_load_n(&ta_attach_injected, __ATOMIC_RELAXED);
}

/*
 * Opens the dump: the file, or the connection to the collector (a forked
 * child's own, in_child).  A collector that cannot be reached is said in
 * one line; the program then runs untraced, or with
 * TRACEAGENT_OUTPUT_FALLBACK=file writes the usual file instead.
 */
static int open_output(int in_child)
{
	char file[sizeof(ta_cfg.output)];
	const char *why;
	int err, ferr;

	/* A file named without %p is the recording's, shared by the
	 * program's tree: a process started after the one that created it
	 * (posix_spawn, system(), vfork or fork and exec) appends to it, as
	 * the environment's token names it (dump_share.c).  Not an attach
	 * window's: its file is the attach's own. */
	int shared =
	    !ta_settings_attach && !ta_cfg.output_per_process && !ta_addr_is_stream(ta_cfg.output);

	if (in_child)
		err = ta_dump_child_open();
	else if (shared && (err = ta_dump_open_shared(ta_cfg.output_id, ta_cfg.output)) == 0)
		(void)ta_dump_share(ta_cfg.output_id);
	else if (!shared)
		err = ta_dump_open(ta_cfg.output);
	if (err == 0)
		return 0;
	if (!ta_addr_is_stream(ta_cfg.output)) {
		ta_warn("cannot create the dump %s: %s; not tracing", ta_cfg.output,
			err == -EEXIST ? "a file is already there (not overwritten)"
				       : strerror(-err));
		return err;
	}
	why = ta_dump_open_why();
	if (!why)
		why = strerror(-err);
	if (!ta_cfg.output_fallback) {
		ta_warn("cannot send the dump of process %d to the collector %s: %s; not tracing "
			"(TRACEAGENT_OUTPUT_FALLBACK=file writes a file instead)",
			(int)getpid(), ta_cfg.output, why);
		return err;
	}
	ta_expand_output(TA_DEFAULT_OUTPUT, (long)getpid(), file, sizeof(file));
	/* why may be gai_strerror's or the open's: said before the next open. */
	ferr = ta_dump_open(file);
	if (ferr == 0) {
		ta_warn("cannot send the dump of process %d to the collector %s: %s; writing %s "
			"instead",
			(int)getpid(), ta_cfg.output, why, file);
		return 0;
	}
	ta_warn("cannot send the dump of process %d to the collector %s: %s, nor create %s: %s; "
		"not tracing",
		(int)getpid(), ta_cfg.output, why, file,
		ferr == -EEXIST ? "a file is already there (not overwritten)" : strerror(-ferr));
	return ferr;
}

/* The forked child's start: its own process record, clock and module map,
 * and a flusher; the dump is the parent's file, or a stream of its own. */
static int restart_in_child(void)
{
	int err;

	err = open_output(1);
	if (err < 0)
		return err;
	/* The description in one write. */
	ta_dump_batch(1);
	ta_describe_process(TA_DESCRIBE_CLOCK, 0, ta_filter_dump);
	ta_api_write(1);
	ta_dump_batch(0);
	err = ta_flusher_start(attaching());
	if (err < 0) {
		ta_warn("cannot start the flusher thread in process %d: %s; not tracing it",
			(int)getpid(), strerror(-err));
		return err;
	}
	/* The hooks' gate as the parent's pause and channels had it. */
	ta_api_restarted();
	/* Its own control socket, under its own pid; an attach window's
	 * child answers at once, as its parent does. */
	ta_control_start(ta_attach_injected);
	return 0;
}

static void flight_signal_handler(int sig)
{
	(void)sig;
	ta_flusher_request_dump();
}

/* The flight recorder's trigger, where the program leaves the signal at
 * its default (which would kill it: the program cannot be using it). */
static void flight_signal_install(void)
{
	struct sigaction old, sa;

	if (sigaction(ta_cfg.flight_signal, NULL, &old) < 0 || (old.sa_flags & SA_SIGINFO) ||
	    old.sa_handler != SIG_DFL) {
		ta_warn("signal %d has a handler already; the flight recorder writes only at exit "
			"and on a crash",
			ta_cfg.flight_signal);
		return;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = flight_signal_handler;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(ta_cfg.flight_signal, &sa, NULL);
}

/* The agent's signal handlers: the crash handler, and the flight
 * recorder's signal in flight mode. */
static void signals_install(void)
{
	/* The flight signal's handler replaces the hold the crash install
	 * puts on its default action (through the interposed sigaction). */
	ta_crash_install();
	if (ta_cfg.mode == TA_MODE_FLIGHT)
		flight_signal_install();
}

/* Those of them still the agent's back to SIG_DFL (one the program set
 * since stays): an attach window's process as it was. */
static void signals_uninstall(void)
{
	ta_crash_uninstall();
	ta_signal_default_if(ta_cfg.flight_signal, (uintptr_t)&flight_signal_handler);
}

/* Between the modules and LIBCALLS in the first description: the hooks'
 * entries bound now, not by each instrumented function's first call;
 * before the filters point them at theirs.  An attach points every entry
 * at the hooks itself (attach.c). */
static void bind_and_filter(void)
{
	if (!ta_settings_attach)
		ta_got_bind_hooks();
	ta_filter_start();
}

static int start(void)
{
	uint64_t clock_t0, clock_n0;
	int err;

	/* A setuid or setgid program is never traced: the settings come
	 * from a less privileged environment. */
	if (getauxval(AT_SECURE))
		return -EPERM;
	/* The first calibration pair; the start's CLOCK chunk has a second,
	 * taken as it ends (below). */
	ta_clock_pair(&clock_t0, &clock_n0);
	ta_pid = (uint32_t)getpid();
	ta_settings_load(&ta_cfg);
	ta_keep_setting(&ta_cfg);
	/* An injected agent opens libunwind at once, as the first window
	 * starts: its cost is no process's start-up, and its dlopen then
	 * comes before the filters and patching set up for the window
	 * rather than in the middle of it. */
	if (ta_settings_attach)
		ta_lazy_open();
	err = ta_ring_init(ta_cfg.block_bytes, ta_cfg.memory_cap, (int)ta_cfg.mode,
			   ta_cfg.flight_bytes);
	if (err < 0) {
		ta_warn("cannot reserve %llu bytes of ring memory: %s; not tracing",
			(unsigned long long)ta_cfg.memory_cap, strerror(-err));
		return err;
	}
	/* After an exec, the previous image's dump goes on. */
	err = ta_dump_adopt() ? 0 : open_output(0);
	if (err < 0)
		return err;
	/* The process's description (a dozen small chunks) in one write. */
	ta_dump_batch(1);
	ta_describe_process(0, 0, bind_and_filter);
	ta_api_start();
	/* Registered now, before the program's own (if it registers after its
	 * first instrumented call), so it runs after them: quick_exit leaves
	 * through libc's internal _exit, which no wrapper sees. */
	at_quick_exit(ta_agent_shutdown);
	signals_install();
	/* Two pairs the start's length apart: a process killed before the
	 * flusher's first pair (10 ms on) still has its counter's rate. */
	ta_dump_clock_since(clock_t0, clock_n0);
	ta_dump_batch(0);
	err = ta_flusher_start(attaching());
	if (err < 0) {
		ta_warn("cannot start the flusher thread: %s; not tracing", strerror(-err));
		ta_dump_close();
		return err;
	}
	/* Its thread is the flusher's to start, or ta_attach_start's. */
	ta_control_start(0);
	return 0;
}

/*
 * Tells `traceagent record` that this process started the agent, so that
 * the loader can say why the program it ran wrote no dump when it never did
 * (loader/record.c).  TRACEAGENT_RECORD_NOTIFY names a pipe of the loader's
 * (/proc/PID/fd/N): one 8-byte record, pid and outcome, written whole
 * (below PIPE_BUF), never waited for; anything but a pipe is left alone.
 */
static void tell_loader(int ok)
{
	const char *path = secure_getenv("TRACEAGENT_RECORD_NOTIFY");
	uint32_t rec[2] = {(uint32_t)getpid(), (uint32_t)ok};
	struct stat st;
	int fd;

	if (!path || !*path)
		return;
	TA_GUARD_ENTER(); /* the agent's open and write, not the program's */
	fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (fd >= 0) {
		if (fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode) &&
		    write(fd, rec, sizeof(rec)) < 0) {
			/* A loader gone or a full pipe: it only loses a remark. */
		}
		close(fd);
	}
	TA_GUARD_LEAVE();
}

int ta_agent_ensure_started(void)
{
	uint32_t s = __atomic_load_n(&ta_state, __ATOMIC_ACQUIRE);

	if ((s == TA_S_UNINIT || s == TA_S_FORKED) &&
	    __atomic_compare_exchange_n(&ta_state, &s, TA_S_STARTING, 0, __ATOMIC_ACQ_REL,
					__ATOMIC_ACQUIRE)) {
		int saved = errno, ok;

		starting_here = 1;
		/* A child of an attach window that has ended: not traced. */
		ok = s == TA_S_FORKED && ta_attach_child_closed()
			 ? 0
			 : (s == TA_S_FORKED ? restart_in_child() : start()) == 0;
		starting_here = 0;
		errno = saved;
		/* Release: threads waiting below then see the pool and dump. */
		__atomic_store_n(&ta_state, ok ? TA_S_RUNNING : TA_S_STOPPED, __ATOMIC_RELEASE);
		/* Off when it could not start: the classes that were to start
		 * it would otherwise try again at every call, and the manual
		 * API's macros would call in at every use to find it out. */
		ta_libcalls_enable(ok);
		if (!ok)
			ta_api_stop();
		tell_loader(ok);
		errno = saved;
		return ok;
	}
	/* Another thread is starting the agent: it takes milliseconds. */
	while (s == TA_S_STARTING) {
		sched_yield();
		s = __atomic_load_n(&ta_state, __ATOMIC_ACQUIRE);
	}
	return s == TA_S_RUNNING;
}

/* A thread's registration ends: the API's and the filters' state of it
 * first, its ring after (ring.c). */
static void thread_exit_above(void)
{
	ta_api_thread_exit();
	ta_filter_thread_exit();
}

/* The ring's calls up (ring.h). */
const struct ta_ring_up ta_ring_up = {
    .ensure_started = ta_agent_ensure_started,
    .thread_start = ta_crash_thread_start,
    .thread_exit = thread_exit_above,
    .thread_gone = ta_crash_thread_exit,
    .kick = ta_flusher_kick,
    .help = ta_flusher_help,
    .stack = ta_flusher_stack,
    .jmptab = ta_flusher_jmptab,
};

/* The sites of the API the events of a chunk name, before the chunk. */
static void api_sites(void)
{
	ta_api_write(0);
}

/* A held signal's thread waits for the flusher to write what was recorded
 * (crash.c); 1 when it did. */
static int death_write(void)
{
	if (!ta_death_pending())
		return 0;
	ta_death_write();
	return 1;
}

/* The flusher's calls up (flusher.h). */
const struct ta_flusher_up ta_flusher_up = {
    .before_events = api_sites,
    .death = death_write,
    .late_start = ta_control_start_thread,
    .pass = ta_attach_poll,
};

/* A collector that stops reading holds the flusher in its send, maybe
 * before the control thread's late start: started now, so that `traceagent
 * ctl` reaches a program that waits for its collector. */
static void collector_stalled(void)
{
	(void)ta_flusher_forksafe(ta_control_start_thread);
}

/* The dump's calls up (dump.h). */
const struct ta_dump_up ta_dump_up = {
    .tee = ta_tap_chunk,
    .stalled = collector_stalled,
};

/* The signal a held signal's handler dies of (crash.c). */
static uint32_t end_signal;

void ta_agent_end_signal(uint32_t sig)
{
	__atomic_store_n(&end_signal, sig, __ATOMIC_RELAXED);
}

void ta_agent_write_end(uint64_t flags)
{
	struct ta_buf b = {0};
	uint64_t events, lost, threads, ticks, ns, by[TA_LOST_NCAUSES], failed_at;
	int failed_errno;

	/* The modules the flusher had not got to (a short run). */
	ta_symstore_flush(0);
	/* What keep mode kept of the frames, before the END that closes. */
	ta_keep_write_summary();

	ta_flusher_totals(&events, &lost, &threads);
	ta_clock_pair(&ticks, &ns);
	ta_buf_u(&b, ticks);
	ta_buf_u(&b, ns);
	ta_buf_u(&b, events);
	ta_buf_u(&b, lost);
	ta_buf_u(&b, threads);
	ta_buf_u(
	    &b, flags | (ta_dump_failed() || ta_flusher_out_of_memory() ? TA_END_F_INCOMPLETE : 0) |
		    (ta_attach_injected ? TA_END_F_ATTACH : 0));
	/* 1.4: the lost events by cause (format.h). */
	ta_flusher_lost_by(by);
	ta_buf_u(&b, TA_LOST_NCAUSES);
	for (unsigned c = 0; c < TA_LOST_NCAUSES; c++)
		ta_buf_u(&b, by[c]);
	/* 1.7: blocks taken beyond the cap (ring_pool.c's emergency reserve). */
	ta_buf_u(&b, ta_ring_reserve_taken());
	/* 1.8: the signal the process dies of (0: none), and where and why
	 * the dump could not be written (offset 0: it could). */
	ta_buf_u(&b,
		 (flags & TA_END_F_SIGNAL) ? __atomic_load_n(&end_signal, __ATOMIC_RELAXED) : 0);
	ta_dump_failure(&failed_at, &failed_errno);
	ta_buf_u(&b, failed_at);
	ta_buf_u(&b, (uint64_t)failed_errno);
	if (!b.oom)
		ta_dump_end_chunk(b.p, b.len);
	ta_buf_free(&b);
}

char **ta_agent_before_exec(char *const envp[])
{
	uint32_t s = __atomic_load_n(&ta_state, __ATOMIC_ACQUIRE);
	int saved = errno;
	char **env;

	/* A forked child that has not restarted wrote nothing: its new image
	 * gets the recording's file (an environment of the program's making
	 * may lack it), not the descriptor, and is a process of its own. */
	if (s == TA_S_FORKED && (uint32_t)getpid() == ta_pid) {
		TA_GUARD_ENTER();
		env = ta_dump_handover(envp, 0);
		TA_GUARD_LEAVE();
		errno = saved;
		return env;
	}
	/* Not from a vfork child: the memory, rings included, is the
	 * parent's, and so is the recording (environ's token goes on). */
	if (s != TA_S_RUNNING || (uint32_t)getpid() != ta_pid)
		return (char **)(uintptr_t)envp;
	/* Everything recorded reaches the dump before the image goes; if
	 * the exec fails, recording just goes on (and a later END follows). */
	TA_GUARD_ENTER();
	ta_flusher_drain(0);
	ta_dump_clock();
	ta_dump_seal();
	ta_agent_write_end(TA_END_F_EXEC);
	/* The new image, if it preloads the agent, goes on in this dump. */
	env = ta_dump_handover(envp, 1);
	TA_GUARD_LEAVE();
	errno = saved;
	return env;
}

void ta_agent_exec_failed(char **env, char *const envp[])
{
	ta_dump_unseal();
	if (env != (char **)(uintptr_t)envp)
		ta_dump_handover_cancel(env, envp);
}

int ta_agent_detach(void)
{
	uint32_t s = TA_S_RUNNING;

	/* From here hooks (a thread that read the GOT entry just before it
	 * was restored) find the agent not running and return. */
	if (!__atomic_compare_exchange_n(&ta_state, &s, TA_S_DETACHED, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return -1;
	ta_libcalls_enable(0);
	TA_GUARD_ENTER();
	/* The slow paths that saw the agent running end before the drain, so
	 * that what they link and append is in the dump. */
	if (ta_ring_quiesce() < 0)
		ta_warn("detach: a thread stayed 2 s in the agent's slow path (stopped?): the "
			"memory it may still write to is not reused");
	ta_api_stop();
	ta_flusher_stop();
	/* Every thread's events, and a THREAD_END for each (its end is
	 * now), then the END: the dump is whole. */
	ta_flusher_drain(1);
	ta_dump_clock();
	ta_patch_dump();
	ta_agent_write_end(0);
	ta_dump_close();
	ta_ring_detach();
	ta_flusher_release();
	ta_modules_forget();
	ta_symstore_forget();
	/* The program's signal dispositions as they were before the window. */
	signals_uninstall();
	/* What the agent freed (the encoders' buffers, ~1 MiB a thread at
	 * most) back to the system, not kept in malloc's arenas. */
	malloc_trim(0);
	TA_GUARD_LEAVE();
	return 0;
}

int ta_agent_reattach(void)
{
	uint32_t s = TA_S_DETACHED;
	int err;

	if (!__atomic_compare_exchange_n(&ta_state, &s, TA_S_STARTING, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return -EALREADY;
	TA_GUARD_ENTER();
	/* The block size and memory cap are the first window's (the pool
	 * is reserved once); the rest is this attach's. */
	ta_settings_load(&ta_cfg);
	ta_keep_setting(&ta_cfg);
	ta_ring_reattach((int)ta_cfg.mode, ta_cfg.flight_bytes);
	err = open_output(0);
	if (err == 0) {
		ta_describe_process(TA_DESCRIBE_CLOCK, 0, ta_filter_start);
		ta_api_rewind();
		ta_api_start();
		signals_install();
		err = ta_flusher_start(attaching());
		if (err < 0) {
			ta_warn("cannot start the flusher thread: %s; not tracing", strerror(-err));
			ta_dump_close();
		}
	}
	/* Release: hooks that see RUNNING see the pool and the dump. */
	__atomic_store_n(&ta_state, err == 0 ? TA_S_RUNNING : TA_S_DETACHED, __ATOMIC_RELEASE);
	if (err == 0) {
		ta_libcalls_enable(1);
	} else {
		signals_uninstall();
	}
	TA_GUARD_LEAVE();
	return err;
}

/* The exit writing the END: 1 while it does, 2 once done.  A held
 * signal (crash.c) that reaches another thread meanwhile waits for it. */
static uint32_t shutdown_phase;

void ta_agent_wait_shutdown(unsigned ms)
{
	for (unsigned i = 0; i < ms && __atomic_load_n(&shutdown_phase, __ATOMIC_ACQUIRE) == 1;
	     i++) {
		struct timespec one = {0, 1000000};

		syscall(SYS_nanosleep, &one, NULL);
	}
}

void ta_agent_shutdown(void)
{
	uint32_t s = TA_S_RUNNING;
	int saved = errno;
	sigset_t async, old_mask;

	/* A vfork child shares our memory: it must not finish the parent's
	 * dump when it calls _exit. */
	if ((uint32_t)getpid() != __atomic_load_n(&ta_pid, __ATOMIC_RELAXED))
		return;
	/* Only the first caller, and only if the agent ran.  From here on
	 * hooks stop recording (they see the state in their slow path). */
	if (!__atomic_compare_exchange_n(&ta_state, &s, TA_S_STOPPED, 0, __ATOMIC_ACQ_REL,
					 __ATOMIC_ACQUIRE))
		return;
	/* A signal sent now waits until the END is written, then has its
	 * default action (its handler sees the agent stopped): the dump is
	 * whole and the process dies of it as it would have.  The faults
	 * stay deliverable. */
	sigfillset(&async);
	sigdelset(&async, SIGSEGV);
	sigdelset(&async, SIGBUS);
	sigdelset(&async, SIGILL);
	sigdelset(&async, SIGFPE);
	sigdelset(&async, SIGTRAP);
	sigdelset(&async, SIGSYS);
	pthread_sigmask(SIG_BLOCK, &async, &old_mask);
	/* Release: pairs with the acquire in ta_agent_wait_shutdown. */
	__atomic_store_n(&shutdown_phase, 1, __ATOMIC_RELEASE);
	/* Library calls made from here on (later destructors, other
	 * threads) go straight to libc. */
	ta_libcalls_enable(0);
	TA_GUARD_ENTER();
	/* An idle flusher is not waited for (the drain below is this
	 * thread's), and is told to end now: it does while this thread
	 * writes the end, rather than when exit_group makes it, which the
	 * process's parent would wait for. */
	ta_flusher_stop_at_exit();
	/* No command runs while the end is written (a resume would open
	 * the gates again). */
	ta_control_stop();
	ta_api_stop();
	/* The exiting thread's own frames are done: end its ring so that it
	 * is drained as exited. */
	ta_thread_exit();
	/* The last chunks in one write (ta_dump_close's). */
	ta_dump_batch(1);
	ta_flusher_drain(1);
	ta_dump_clock();
	ta_patch_dump();
	ta_agent_write_end(0);
	ta_dump_close();
	/* A stream's reader gets the end too. */
	ta_control_finish();
	ta_patch_report_end();
	ta_filter_report_end();
	__atomic_store_n(&shutdown_phase, 2, __ATOMIC_RELEASE);
	pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
	TA_GUARD_LEAVE();
	errno = saved;
}

/* The fork handlers from the agent's load on, not from its start: a fork
 * made while another thread starts it is one they must see
 * (fork_wait_start).  Before the start they do nothing. */
__attribute__((constructor)) static void agent_init(void)
{
	pthread_atfork(on_fork_prepare, on_fork_parent, on_fork_child);
}

/* Runs from exit(), after the program's atexit handlers and destructors
 * (the preloaded agent was initialised before the program, so it is
 * finalised after it). */
__attribute__((destructor)) static void agent_fini(void)
{
	ta_agent_shutdown();
}
