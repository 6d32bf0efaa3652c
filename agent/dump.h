/* SPDX-License-Identifier: MIT */
/*
 * dump.h - the dump writer (dump.c): the file and its chunks, the buffers
 * payloads are built in; the dump across processes, fork and exec
 * (dump_share.c); and the chunks built from the agent's state
 * (dump_process.c).
 */
#ifndef TA_DUMP_H
#define TA_DUMP_H

#include <stddef.h>
#include <stdint.h>

#include "compiler.h"
#include "grow.h" /* struct ta_buf: the chunk payloads are built in them */

/*
 * The dump's call up: it knows no file above it, only this table, which
 * the conductor (agent.c) defines (statically, as the ring's: ring.h).
 */
struct ta_dump_up {
	/* Under the dump's lock, for every chunk made (hdr encoded for the
	 * dump, stored the payload as stored): a copy for a control-socket
	 * stream's reader (tap.c); 1 when the chunk is for the reader alone,
	 * and the dump must not get it, else 0. */
	int (*tee)(const uint8_t *hdr, const void *stored, size_t stored_len);
	/* Under the dump's lock, outside a crash: the collector takes no
	 * more for now, and the writer is about to wait for it. */
	void (*stalled)(void);
};
extern const struct ta_dump_up ta_dump_up TA_HIDDEN;

/* Creates the dump (O_EXCL|O_NOFOLLOW, 0600), or connects to the
 * collector path names (tcp://HOST:PORT, unix:PATH: sink.h), and writes
 * its header; 0 or -errno. */
int ta_dump_open(const char *path) TA_HIDDEN;
/* After a failed ta_dump_open: what the errno alone does not say (an
 * address that does not parse or resolve), else NULL. */
const char *ta_dump_open_why(void) TA_HIDDEN;
/* 1 if the dump goes to a collector. */
int ta_dump_is_stream(void) TA_HIDDEN;
/* The dump's file or collector address. */
const char *ta_dump_where(void) TA_HIDDEN;
/* Compresses (when it pays) and appends one chunk; thread-safe. 0, or
 * -errno after which the dump is closed for writing (said once). */
int ta_dump_chunk(unsigned type, const void *payload, size_t len) TA_HIDDEN;
/* The same, compressing into the caller's scratch outside the file lock;
 * with store set, not compressing (the writer is short of CPU). */
struct ta_zbuf {
	uint8_t *p;
	size_t cap;
	int store;
};
int ta_dump_chunk_z(unsigned type, const void *payload, size_t len, struct ta_zbuf *z) TA_HIDDEN;
void ta_zbuf_free(struct ta_zbuf *z) TA_HIDDEN;
/* on: the chunks written from now on are held and written together (up
 * to 16 KiB in one write; a crash's are not held); off: what is held is
 * written.  For the bursts of small chunks at the start and the exit.
 * ta_dump_close writes what is held too. */
void ta_dump_batch(int on) TA_HIDDEN;
/* Writes what a batch holds, and closes the dump. */
void ta_dump_close(void) TA_HIDDEN;
/* Bytes of payload written, and chunks, for the statistics. */
uint64_t ta_dump_bytes(void) TA_HIDDEN;
int ta_dump_failed(void) TA_HIDDEN;
/* Where the first failed write's chunk began (a file offset, or the bytes
 * a stream had sent) and its errno; 0 and 0 when none failed. */
void ta_dump_failure(uint64_t *at, int *err) TA_HIDDEN;
/* The END chunk: after a failed write too, in the room kept for it. */
int ta_dump_end_chunk(const void *payload, size_t len) TA_HIDDEN;
/* An EVENTS chunk of the given number of function events, which the
 * dump's count takes in as the chunk is written (ta_dump_events). */
int ta_dump_events_chunk(const void *payload, size_t len, struct ta_zbuf *z,
			 uint64_t events) TA_HIDDEN;
/* The function events of the chunks written so far by this process (in
 * this attach window), and their count set back to 0 for the next. */
uint64_t ta_dump_events(void) TA_HIDDEN;
void ta_dump_events_forget(void) TA_HIDDEN;
/* Before an exec's END: from here on only the calling thread writes; every
 * other thread that writes a chunk waits until ta_dump_unseal (the exec
 * failed) or the exec ends it, so that the END is the image's last chunk
 * and ta_dump_events is the count it says. */
void ta_dump_seal(void) TA_HIDDEN;
/* Whether an exec is under way (sealed); relaxed, a hint. */
int ta_dump_sealed(void) TA_HIDDEN;
/* Lets the waiting writers go on, if this thread sealed the dump. */
void ta_dump_unseal(void) TA_HIDDEN;
/* In a forked child: keep writing the shared dump (O_APPEND), as a new
 * writer with its own pid and chunk sequence; a stream's is closed. */
void ta_dump_fork_child(void) TA_HIDDEN;
/* At a forked child's restart: a stream's child connects anew and sends
 * its own file header (0, or -errno as ta_dump_open); a file is kept (0). */
int ta_dump_child_open(void) TA_HIDDEN;
/* The handover of the dump across exec: the variable that names the
 * descriptor, which is left open (not close-on-exec) for the new image. */
#define TA_HANDOVER_VAR "TRACEAGENT_DUMP_FD"
/* The recording's file for the processes started after this one
 * ("DEV:INO:ID:REC:PATH": ID the hex FNV-1a of the output setting, REC the
 * recording's id in the file header; DEV and INO 0 while the file is still
 * to be created by the first process of the recording that traces): kept
 * in the process's environment, since children started by posix_spawn,
 * system() or vfork get environ without a call of the agent's. */
#define TA_DUMP_FILE_VAR "TRACEAGENT_DUMP_FILE"
/* Opens a file named without %p, the whole tree's: the recording's file
 * that the environment names (same setting, or a path naming that very
 * file; checked by device, inode and header), as a process of its own in
 * it, or creates it (its header in it before it appears, never over a file
 * that is there).  0, or -errno (-EEXIST: a file not the recording's). */
int ta_dump_open_shared(uint64_t output_id, const char *path) TA_HIDDEN;
/* After ta_dump_open_shared: names the file in the environment for this
 * process's descendants; 0 or -1. */
int ta_dump_share(uint64_t output_id) TA_HIDDEN;
/* The environment entry ("NAME=VALUE") an exec or spawn with envp is to
 * add: the process's own token, else a pending one for its setting; NULL
 * when envp has one, does not preload the agent, or the setting is not one
 * file.  No allocation (a vfork child's exec calls it). */
const char *ta_dump_pass_token(char *const envp[]) TA_HIDDEN;
/* Before system() or popen(), whose spawn no wrapper sees: the pending
 * token into the process's own environment when it has none. */
void ta_dump_token_to_environ(void) TA_HIDDEN;
/* envp plus TA_HANDOVER_VAR if with_fd (malloc'd; any older one left out),
 * with the descriptor made inheritable, and TA_DUMP_FILE_VAR when this
 * process shares its file; envp itself when nothing is handed over. */
char **ta_dump_handover(char *const envp[], int with_fd) TA_HIDDEN;
/* Undoes ta_dump_handover (the exec failed). */
void ta_dump_handover_cancel(char **env, char *const envp[]) TA_HIDDEN;
/* In a new image: 1 if the dump handed over by the previous one is taken
 * (writing goes on there, as a new image of the same process), else 0. */
int ta_dump_adopt(void) TA_HIDDEN;
/* From a crash handler: no lock is waited on without bound any more. */
void ta_dump_crash_mode(void) TA_HIDDEN;

/* Chunks built from the agent's state. */
void ta_dump_clock(void) TA_HIDDEN;
/* A CLOCK chunk of two pairs: (ticks0, ns0), taken earlier, and now. */
void ta_dump_clock_since(uint64_t ticks0, uint64_t ns0) TA_HIDDEN;
void ta_dump_process(void) TA_HIDDEN;

#endif
