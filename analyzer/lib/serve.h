/* SPDX-License-Identifier: MIT */
/*
 * serve.h - one client of `traceagent serve` (serve_conn.c): the bytes a
 * traced process streams, checked with stream.h and written to a
 * dump of its own as they are consumed.  No sockets here (serve.c has the
 * loop), so that a test can feed any bytes through it.
 *
 * The memory one client costs is bounded: the stream keeps at most
 * TA_SV_KEEP_MAX bytes of a chunk's payload, and the bytes that arrive
 * before the dump can be named (the file header and the PROCESS chunk) at
 * most TA_SV_PEND_MAX.
 */
#ifndef TA_SERVE_H
#define TA_SERVE_H

#include <stddef.h>
#include <stdint.h>

#include "stream.h"

/* The flusher's EVENTS chunks aim at 1 MiB raw: kept whole (compressed or
 * not) so that their events are counted. */
#define TA_SV_KEEP_MAX (1536u << 10)
#define TA_SV_PEND_MAX (256u << 10)

/* A dir_fd for a client whose dump is named and counted but written
 * nowhere: the dump is then the first c->written bytes fed (the fuzzer's
 * mode, tests/fuzz/fuzz_serve.c). */
#define TA_SV_NOWHERE (-2)

struct ta_sv_conn {
	struct ta_stream st;
	int dir_fd;	/* where the dumps go */
	char host[64];	/* the sender's host, as the dump's name says it */
	uint64_t quota; /* bytes of dump at most; 0: no limit */
	int fd;		/* the dump, or -1 before it is named or with TA_SV_NOWHERE */
	int named;	/* the dump was named (and created) */
	char file[256]; /* its name in the directory */
	uint8_t *pend;	/* bytes before the dump is named */
	size_t pend_len;
	uint64_t written;		  /* bytes consumed (the dump's size, pend included) */
	uint64_t keep;			  /* end of the last whole chunk within the quota */
	uint32_t hdr_pid;		  /* the file header's */
	uint64_t pid;			  /* the PROCESS chunk's (else hdr_pid) */
	char prog[48];			  /* its program's name, sanitised */
	uint64_t events, threads;	  /* counted from the chunks */
	uint64_t end_events, end_threads; /* the last END chunk's totals */
	int saw_end, last_end;		  /* an END came; the last chunk was one */
	int events_unknown;		  /* an EVENTS chunk could not be counted */
	uint32_t chunk_pid, next_seq;	  /* the last chunk's writer, its seq + 1 */
	uint64_t cut_bytes;		  /* the CUT chunk appended after written */
	int cut;			  /* cut off: nothing more is taken */
	char why[200];			  /* why it was cut off */
};

/* quota 0: none.  host: any text (sanitised for the file name).  dir_fd:
 * where the dumps go, or TA_SV_NOWHERE. */
void ta_sv_conn_init(struct ta_sv_conn *c, int dir_fd, const char *host, uint64_t quota);
/* Takes n bytes.  0, or a negative TA_E_* code once the client is cut off
 * (c->why says why; the dump keeps its whole chunks); later calls do
 * nothing and return the same. */
int ta_sv_conn_feed(struct ta_sv_conn *c, const uint8_t *p, size_t n);
/* 1 while the client owes bytes: before its file header or its first
 * chunk, or in the middle of a header or chunk (a client idle between
 * chunks is a program doing nothing, not a stalled one). */
int ta_sv_conn_midway(const struct ta_sv_conn *c);
/* Cuts the client off with the reason why (the dump cut back to its last
 * whole chunk); no effect on one already cut. */
void ta_sv_conn_cut(struct ta_sv_conn *c, const char *why);
/* The end: the dump cut back to its last whole chunk and closed.  Returns
 * 1 if it is complete (ends with END on a chunk boundary, not cut). */
int ta_sv_conn_close(struct ta_sv_conn *c);
/* The events the connection's line reports: the END's totals when it has
 * one, else those counted. */
uint64_t ta_sv_conn_events(const struct ta_sv_conn *c);
uint64_t ta_sv_conn_threads(const struct ta_sv_conn *c);
void ta_sv_conn_free(struct ta_sv_conn *c);

#endif
