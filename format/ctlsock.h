/* SPDX-License-Identifier: MIT */
/*
 * ctlsock.h - the control socket a traced process listens on (ctlsock.c):
 * where it is and what is said on it, shared by the agent and
 * `traceagent ctl` / `traceagent top -p`.
 *
 * Where: $XDG_RUNTIME_DIR/traceagent/PID.sock when XDG_RUNTIME_DIR is set
 * (an absolute path), else /tmp/traceagent-UID/PID.sock; the directory is
 * the user's own, mode 0700.  The agent also checks each peer's uid
 * (SO_PEERCRED) and answers only its own user.
 *
 * What: a stream socket; one request per connection.  The client sends one
 * line (at most TA_CTL_LINE_MAX bytes with its '\n'): a command and its
 * arguments, separated by spaces.  The agent answers with lines; the last
 * one is "ok" (perhaps followed by a space and a word) or "error: WHY".
 *   pause            stop recording (hooks cost a load and a branch)
 *   resume           start again
 *   channels LIST    switch channels as TRACEAGENT_CHANNELS says
 *   flush            write what is buffered now
 *   dump             flight mode: write the rings now
 *   status           "KEY VALUE" lines: events, lost, threads, memory,
 *                    output, channels, paused, mode
 *   attach           `traceagent attach`: a window begins (recording
 *                    resumed; an injected agent's hooks put in place);
 *                    "error: the process is being traced by another
 *                    attach already" while one holds it
 *   detach           the window ends: hooks taken out, paused, flushed;
 *                    "error: the process is not being attached to"
 *   stream           "ok stream", then a whole dump (file header, the
 *                    process's state, then every chunk from now on) on
 *                    the same connection until either side closes
 *
 * Exact answers (agent/control.c):
 *   pause, resume, channels LIST, flush, dump: "ok\n" once done (flush and
 *     dump: once the rings are in the dump; the same in every mode).
 *   status: these lines, in this order, then "ok\n":
 *     events N          function events written to the dump so far
 *     lost N
 *     threads N         threads whose events were written
 *     memory USED/CAP   ring bytes in use / TRACEAGENT_MEMORY
 *     output PATH
 *     mode lossless|drop|flight
 *     paused yes|no
 *     channels NAME=on|off,...   what each channel wants (resume restores it)
 *     stream on|off DROPPED      a stream's reader, chunks dropped for it
 *   stream: "ok stream\n" then the dump's bytes; "error: a stream is being
 *     sent already (one reader at a time)" when there is one.
 *   errors: "error: permission denied" (another uid), "error: unknown
 *     command 'WORD' (...)", "error: the line is longer than 1024 bytes",
 *     "error: the line has no end ('\n')" (closed before it), "error: X
 *     takes no arguments", "error: channels needs a list, ...", "error: the
 *     agent is not recording (it is stopping)".  A client silent for 2 s is
 *     closed without an answer.
 */
#ifndef TA_CTLSOCK_H
#define TA_CTLSOCK_H

#include <stddef.h>
#include <sys/types.h>

#define TA_CTL_LINE_MAX 1024

/* The socket's directory for the user uid, given XDG_RUNTIME_DIR's value
 * (NULL or not absolute: the /tmp one); 0, or -1 if it does not fit. */
int ta_ctl_dir(char *out, size_t size, const char *xdg_runtime_dir, uid_t uid);
/* The socket of process pid in dir; 0, or -1 if it does not fit in a
 * sockaddr_un's path. */
int ta_ctl_path(char *out, size_t size, const char *dir, long pid);

#endif
