/* SPDX-License-Identifier: MIT */
/*
 * sink.h - the dump sent to a collector (sink.c): connecting to the
 * address TRACEAGENT_OUTPUT names (tcp://HOST:PORT, unix:PATH) and
 * sending whole chunks on the connection.
 */
#ifndef TA_SINK_H
#define TA_SINK_H

#include <stddef.h>
#include <stdint.h>

#include "compiler.h"

/* How long a connection may take to be made (a collector that is down
 * answers at once; one that is unreachable is given this much). */
#define TA_SINK_CONNECT_MS 3000
/* How long a send may make no progress before the collector is given up
 * (one that reads, however slowly, is waited for: lossless mode then
 * waits at the memory cap, as with a slow disk). */
#define TA_SINK_STALL_S 30

/* Connects to addr (blocking, bounded by TA_SINK_CONNECT_MS), close-on-
 * exec, sends bounded by TA_SINK_STALL_S.  The descriptor, or -errno with
 * *why naming a failure that has no errno (a bad address, a name that
 * does not resolve), else NULL. */
int ta_sink_connect(const char *addr, const char **why) TA_HIDDEN;
/* Sends all n bytes of the iovecs (MSG_NOSIGNAL: never a SIGPIPE to the
 * program); 0 or -errno (-EAGAIN: no progress for TA_SINK_STALL_S).  When
 * the collector's side is full, before waiting for it, calls stalled (if
 * not NULL) once. */
struct iovec;
int ta_sink_send(int fd, struct iovec *iov, int niov, void (*stalled)(void)) TA_HIDDEN;
/* The handshake of format/auth.h on a connection just made, when
 * TRACEAGENT_TOKEN names a token file (sinkauth.c); nothing without one.
 * 0, or -errno with *why saying more when it can (the file unreadable,
 * the secret refused, a collector that does not shake hands). */
int ta_sink_auth(int fd, int64_t deadline, const char **why) TA_HIDDEN;

#endif
