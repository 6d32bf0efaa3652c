/* SPDX-License-Identifier: MIT */
/*
 * tap.h - a control-socket stream's reader (tap.c): `traceagent ctl PID
 * stream` and `traceagent top -p PID` get a whole dump on the connection,
 * a copy of what the dump gets, without ever slowing the program.
 */
#ifndef TA_TAP_H
#define TA_TAP_H

#include <stddef.h>
#include <stdint.h>

#include "compiler.h"

/* Bytes queued for the reader at most; past it whole chunks are dropped
 * for the reader alone, and counted. */
#define TA_TAP_QUEUE (8u << 20)

/*
 * From dump.c (its ta_dump_up.tee), under its lock, for every chunk made (hdr encoded for the
 * dump, stored the payload as stored): queues a copy when a reader is
 * there.  Returns 1 when the chunk is for the reader alone (the control
 * thread is building the reader's state: the dump must not get it), else 0.
 */
int ta_tap_chunk(const uint8_t *hdr, const void *stored, size_t stored_len) TA_HIDDEN;

/* The control thread (control.c) only: */
/* Takes fd (a connected stream socket, made non-blocking here) as the
 * reader: queues the file header and the process's state; 0, or -1 (fd
 * left to the caller) when a reader is there already or without memory. */
int ta_tap_open(int fd, int wake_fd) TA_HIDDEN;
/* The reader's descriptor, or -1; and whether bytes wait for it. */
int ta_tap_fd(int *want_out) TA_HIDDEN;
/* Sends what the socket takes now (never waits); ends the tap on an error
 * or when the reader closed (readable: it said something or hung up). */
void ta_tap_pump(int readable) TA_HIDDEN;
/* At the end: gives the reader up to max_ms to take what is queued, then
 * closes it. */
void ta_tap_finish(int max_ms) TA_HIDDEN;
/* Chunks dropped for the reader (a full queue), and bytes sent. */
void ta_tap_stats(uint64_t *dropped, uint64_t *sent) TA_HIDDEN;
/* In a forked child: the parent's reader is not ours. */
void ta_tap_fork_child(void) TA_HIDDEN;

#endif
