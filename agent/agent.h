/* SPDX-License-Identifier: MIT */
/*
 * agent.h - what the agent's files share: settings, lifecycle, the dump
 * writer and the flusher.  Nothing here is exported from the library.
 */
#ifndef TA_AGENT_H
#define TA_AGENT_H

#include <stddef.h>
#include <stdint.h>

#include "format.h"
#include "ring.h"

/* ---- settings (settings.c) ------------------------------------------------ */

enum ta_mode {
	TA_MODE_LOSSLESS = 0, /* bounded memory; threads wait at the cap */
	TA_MODE_DROP,         /* never waits: drops at the cap, counted */
	TA_MODE_FLIGHT,       /* keeps each thread's last events; writes on demand */
};

struct ta_settings {
	char output[4096];     /* TRACEAGENT_OUTPUT, %p expanded */
	enum ta_mode mode;     /* TRACEAGENT_MODE */
	uint64_t flight_bytes; /* TRACEAGENT_FLIGHT_SIZE: kept per thread */
	int flight_signal;     /* TRACEAGENT_FLIGHT_SIGNAL */
	uint32_t block_bytes;  /* TRACEAGENT_BUFFER */
	uint64_t memory_cap;   /* TRACEAGENT_MEMORY */
	uint32_t flush_ms;     /* TRACEAGENT_FLUSH_MS */
	uint32_t libcalls;     /* TRACEAGENT_LIBCALLS: TA_LC_* classes */
};

#define TA_DEFAULT_OUTPUT "traceagent.%p.trace"
#define TA_DEFAULT_BLOCK (64u << 10)
#define TA_DEFAULT_MEMORY (256ull << 20)
#define TA_DEFAULT_FLUSH_MS 50u
#define TA_DEFAULT_FLIGHT (4ull << 20)
/* Library calls recorded unless TRACEAGENT_LIBCALLS says otherwise (see
 * the README's "Library calls" for the measurements behind the choice). */
#define TA_DEFAULT_LIBCALLS (TA_LC_IO | TA_LC_SLEEP)

/* Reads the environment (secure_getenv); prints one line per bad value and
 * keeps the default for it. */
void ta_settings_load(struct ta_settings *s) TA_HIDDEN;
/* Parses "64K", "1M", "2G", "4096"; 0 on success. */
int ta_parse_size(const char *s, uint64_t *out) TA_HIDDEN;
/* Expands %p and %% of a pattern; 0, or -1 if it does not fit. */
int ta_expand_output(const char *pattern, long pid, char *out, size_t size) TA_HIDDEN;

extern struct ta_settings ta_cfg TA_HIDDEN;

/* ---- lifecycle (agent.c) ----------------------------------------------------- */

enum ta_state {
	TA_S_UNINIT = 0, /* nothing done yet: the first hook starts the agent */
	TA_S_STARTING,   /* one thread is setting up */
	TA_S_RUNNING,
	TA_S_STOPPED,    /* finished, or could not start: hooks only return */
	TA_S_FORKED,     /* a forked child: the first hook restarts the agent */
};

extern uint32_t ta_state TA_HIDDEN; /* enum ta_state, atomic */

/* Starts the agent if nobody has; returns 1 when it is running. */
int ta_agent_ensure_started(void) TA_HIDDEN;
/* Final flush: stops the flusher, drains every ring, writes the end of
 * the dump.  Idempotent; safe from exit paths. */
void ta_agent_shutdown(void) TA_HIDDEN;
/* One line on stderr, prefixed "traceagent: ", without stdio buffering
 * that could mix with the program's. */
void ta_warn(const char *fmt, ...) TA_HIDDEN __attribute__((format(printf, 1, 2)));
/* libc's pthread_create, past our interposer. */
#include <pthread.h>
int ta_real_pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *),
			   void *arg) TA_HIDDEN;
/* The pid the agent records for; 0 before it started. */
extern uint32_t ta_pid TA_HIDDEN;

/* ---- library calls (libcalls.c) --------------------------------------------------- */

/* The TA_LC_* classes the interposers record right now: the settings'
 * classes while the agent runs, else 0 (relaxed atomic; the interposers
 * read it once a call). */
extern uint32_t ta_lc_on TA_HIDDEN;

/* Nonzero while the agent itself runs on this thread (its slow paths, its
 * wrappers' own work, the flusher thread, a thread after its registration
 * ended): the interposers then only call the real function, so nothing the
 * agent does is recorded and nothing recurses.  Initial-exec TLS like
 * ta_cur; counts, so that nested agent code keeps it set. */
extern __thread uint32_t ta_guard __attribute__((tls_model("initial-exec"))) TA_HIDDEN;
#define TA_GUARD_ENTER() (ta_guard++)
#define TA_GUARD_LEAVE() (ta_guard--)

/* Writes the LIBCALLS chunk (the interposed functions); defined only in
 * the preloaded library, where the interposers are. */
void ta_libcalls_dump(void) TA_HIDDEN __attribute__((weak));
/* Turns recording on for the settings' classes (the agent is running)
 * or off. */
void ta_libcalls_enable(int on) TA_HIDDEN;

/* ---- the dump writer (dump.c) -------------------------------------------------- */

/* A growable byte buffer for chunk payloads. */
struct ta_buf {
	uint8_t *p;
	size_t len, cap;
	int oom;
};

void ta_buf_u(struct ta_buf *b, uint64_t v) TA_HIDDEN;
void ta_buf_str(struct ta_buf *b, const char *s, size_t len) TA_HIDDEN;
void ta_buf_free(struct ta_buf *b) TA_HIDDEN;

/* Creates the dump (O_EXCL|O_NOFOLLOW, 0600) and writes its header;
 * 0 or -errno. */
int ta_dump_open(const char *path) TA_HIDDEN;
/* Compresses (when it pays) and appends one chunk; thread-safe. 0, or
 * -errno after which the dump is closed for writing (said once). */
int ta_dump_chunk(unsigned type, const void *payload, size_t len) TA_HIDDEN;
/* The same, compressing into the caller's scratch outside the file lock. */
struct ta_zbuf {
	uint8_t *p;
	size_t cap;
};
int ta_dump_chunk_z(unsigned type, const void *payload, size_t len, struct ta_zbuf *z) TA_HIDDEN;
void ta_zbuf_free(struct ta_zbuf *z) TA_HIDDEN;
void ta_dump_close(void) TA_HIDDEN;
/* Bytes of payload written, and chunks, for the statistics. */
uint64_t ta_dump_bytes(void) TA_HIDDEN;
int ta_dump_failed(void) TA_HIDDEN;
/* In a forked child: keep writing the shared dump (O_APPEND), as a new
 * writer with its own pid and chunk sequence. */
void ta_dump_fork_child(void) TA_HIDDEN;
/* The handover of the dump across exec: the variable that names the
 * descriptor, which is left open (not close-on-exec) for the new image. */
#define TA_HANDOVER_VAR "TRACEAGENT_DUMP_FD"
/* envp plus TA_HANDOVER_VAR (malloc'd; any older one left out), with the
 * descriptor made inheritable; envp itself when nothing is handed over. */
char **ta_dump_handover(char *const envp[]) TA_HIDDEN;
/* Undoes ta_dump_handover (the exec failed). */
void ta_dump_handover_cancel(char **env, char *const envp[]) TA_HIDDEN;
/* In a new image: 1 if the dump handed over by the previous one is taken
 * (writing goes on there, as a new image of the same process), else 0. */
int ta_dump_adopt(void) TA_HIDDEN;

/* Chunks built from the agent's state. */
void ta_dump_clock(void) TA_HIDDEN;
void ta_dump_process(void) TA_HIDDEN;
/* Module map from dl_iterate_phdr (modules.c): writes the objects not
 * written before, stamped with load_ticks (start, or when a dlopen began),
 * and a MODULE_UNLOAD stamped unload_ticks for each written before that is
 * gone (a dlclose returned by then). */
void ta_dump_modules(uint64_t load_ticks, uint64_t unload_ticks) TA_HIDDEN;

/* ---- the flusher (flusher.c) ------------------------------------------------------ */

int ta_flusher_start(void) TA_HIDDEN;
/* Stops and joins the flusher thread; returns when it is gone. */
void ta_flusher_stop(void) TA_HIDDEN;
/* Wakes the flusher early (blocks are piling up). */
void ta_flusher_kick(void) TA_HIDDEN;
/* Flight mode: asks the flusher to write what the rings hold (async-signal
 * safe). */
void ta_flusher_request_dump(void) TA_HIDDEN;
/* Drains every ring once (the flusher, or the final flush when the
 * flusher is stopped); at_end also closes live threads. */
void ta_flusher_drain(int at_end) TA_HIDDEN;
/* A producer drains its own ring when the backlog is high, if the flusher
 * is not draining it right now; returns 1 if it did. */
int ta_flusher_help(struct ta_thread *t) TA_HIDDEN;
/* Totals for the END chunk. */
void ta_flusher_totals(uint64_t *events, uint64_t *lost, uint64_t *threads) TA_HIDDEN;
/* In a forked child: the flusher thread does not exist there. */
void ta_flusher_forget(void) TA_HIDDEN;
/* Around fork: hold the drain lock so the child's copy of the encoders is
 * consistent. */
void ta_flusher_fork_prepare(void) TA_HIDDEN;
void ta_flusher_fork_parent(void) TA_HIDDEN;
/* The shadow stack the flusher's encoder has for t, or NULL. */
const struct ta_stack *ta_flusher_stack(struct ta_thread *t) TA_HIDDEN;
/* The setjmp points the flusher's encoder knows for t, or NULL. */
const struct ta_jmptab *ta_flusher_jmptab(struct ta_thread *t) TA_HIDDEN;
/* In a forked child: the module map is written again, under its pid. */
void ta_modules_forget(void) TA_HIDDEN;
/* Before an exec: writes everything recorded so far, and returns the
 * environment for the new image: envp, or (when it preloads the agent) a
 * malloc'd copy that hands the dump over to the new image's agent. */
char **ta_agent_before_exec(char *const envp[]) TA_HIDDEN;
/* The exec failed: takes the handover back (env is what
 * ta_agent_before_exec returned for envp). */
void ta_agent_exec_failed(char **env, char *const envp[]) TA_HIDDEN;
/* The END chunk with the totals so far. */
void ta_agent_write_end(uint64_t flags) TA_HIDDEN;
/* Tries a lock for up to ~200 ms (signal handlers: never wait forever on
 * a lock whose holder may be the interrupted code); 0 if taken. */
int ta_lock_bounded(pthread_mutex_t *m) TA_HIDDEN;
/* The agent's growable arrays: when *cap elements of size bytes are all in
 * use, p reallocated to twice as many (first, the first time) and *cap
 * updated; else p as it is.  NULL when out of memory, *cap unchanged (p
 * still valid, to be kept). */
void *ta_grow(void *p, size_t n, size_t *cap, size_t size, size_t first) TA_HIDDEN;

/* ---- crashes (crash.c) ------------------------------------------------------------- */

/* Takes SIGSEGV, SIGBUS, SIGILL, SIGFPE and SIGABRT where their action is
 * the default. */
void ta_crash_install(void) TA_HIDDEN;
/* Gives the calling thread an alternate signal stack of the agent's, if
 * it has none, so the crash handler runs even on an exhausted stack; once
 * per thread. */
void ta_crash_thread_start(void) TA_HIDDEN;
/* At thread exit: removes and frees that stack. */
void ta_crash_thread_exit(void) TA_HIDDEN;
/* 1 if sp is the base of the calling thread's agent-given stack. */
int ta_crash_altstack_is_ours(const void *sp) TA_HIDDEN;
/* From a crash handler: no lock is waited on without bound any more. */
void ta_dump_crash_mode(void) TA_HIDDEN;
/* From a crash handler: stops the flusher and drains what can be had. */
void ta_flusher_crash_drain(void) TA_HIDDEN;

/* ---- dynamic patching (patch.c) ----------------------------------------------------- */

/* The calling thread's patched frames get their real return addresses
 * back and are forgotten (before pthread_exit unwinds them, or a crash
 * handler walks them); record_exits: they end now (pthread_exit). */
void ta_patch_restore(int record_exits) TA_HIDDEN;
/* Before a C++ throw: the unwinder sees the real return addresses (the
 * frames are kept); after the catch, whose callee's return slot is at
 * `limit`, the frames unwound are exited and the others patched again. */
void ta_patch_unwind_begin(void) TA_HIDDEN;
void ta_patch_unwind_caught(uint64_t limit) TA_HIDDEN;
/* Writes the PATCH chunk (cumulative) when patching is on. */
void ta_patch_dump(void) TA_HIDDEN;
/* At the end: says on stderr what could not be recorded. */
void ta_patch_report_end(void) TA_HIDDEN;
/* After a dlopen: patches what the patterns name in the new modules. */
void ta_patch_after_dlopen(void) TA_HIDDEN;
/* After a dlclose: forgets the modules unloaded, to patch them again if
 * they come back. */
void ta_patch_after_dlclose(void) TA_HIDDEN;

#endif
