/* SPDX-License-Identifier: MIT */
/*
 * dumpgen.h - builds synthetic dumps in memory for the unit tests, with the
 * format's own encoders (format.c), chunk by chunk.
 */
#ifndef TA_DUMPGEN_H
#define TA_DUMPGEN_H

#include <stddef.h>
#include <stdint.h>

#include "format.h"

/* A payload being built: u, s and str fields as FORMAT.md defines them. */
struct pb {
	uint8_t *p;
	size_t len, cap;
};

void pb_u(struct pb *b, uint64_t v);
void pb_s(struct pb *b, int64_t v);
void pb_str(struct pb *b, const char *s);
void pb_bytes(struct pb *b, const void *s, size_t len);
void pb_free(struct pb *b);

#define DG_MAX_PIDS 8

struct dumpgen {
	uint8_t *buf;
	size_t len, cap;
	uint32_t pid;	     /* writer of the next chunks */
	int lz4;	     /* LZ4-compress the payloads */
	uint64_t boot_start; /* dg_process writes it (1.7) when not 0 */
	uint64_t start_ns;   /* and this after it (1.8) when not 0 */
	uint32_t pids[DG_MAX_PIDS], seqs[DG_MAX_PIDS];
	int npids;
};

/* Starts a dump (file header included) written by pid. */
void dg_init(struct dumpgen *g, uint32_t pid);
void dg_free(struct dumpgen *g);

/* Appends a chunk; returns its file offset.  LZ4 when g->lz4 is set. */
size_t dg_chunk(struct dumpgen *g, unsigned type, const void *payload, size_t len);
/* The same with the sequence number chosen by the caller. */
size_t dg_chunk_seq(struct dumpgen *g, unsigned type, const void *payload, size_t len, uint32_t seq,
		    int lz4);
/* Appends bytes as they are (garbage, partial chunks). */
void dg_raw(struct dumpgen *g, const void *p, size_t len);

size_t dg_process(struct dumpgen *g, uint64_t start_ticks, uint64_t clock_source,
		  uint64_t nominal_hz, const char *exe);
size_t dg_clock(struct dumpgen *g, size_t n, const uint64_t pairs[][2]);
size_t dg_module(struct dumpgen *g, const char *path, uint64_t bias, uint64_t flags, uint64_t start,
		 uint64_t end);
/* A LIBCALLS chunk: the interposed functions (format 1.3). */
struct dg_libcall {
	uint64_t addr;
	const char *name;
	uint32_t cls;
};
size_t dg_libcalls(struct dumpgen *g, uint64_t classes, size_t n, const struct dg_libcall *lc);
size_t dg_thread_start(struct dumpgen *g, uint64_t tid, uint64_t ticks, const char *name);
size_t dg_thread_name(struct dumpgen *g, uint64_t tid, uint64_t ticks, const char *name);
size_t dg_thread_end(struct dumpgen *g, uint64_t tid, uint64_t end_ticks, uint64_t events,
		     uint64_t lost);
size_t dg_end(struct dumpgen *g, uint64_t end_ticks, uint64_t end_ns, uint64_t events,
	      uint64_t lost, uint64_t threads, uint64_t flags);
/* Ends the encoder's open chunk and appends it as an EVENTS chunk. */
size_t dg_events(struct dumpgen *g, struct ta_encoder *e);

/* Writes the dump to a new temporary file; returns its path (static buffer
 * per call site is the caller's business: path must hold 64 bytes). */
void dg_write_tmp(const struct dumpgen *g, char *path);
/* Writes bytes to a new temporary file. */
void dg_write_bytes_tmp(const void *p, size_t len, char *path);

#endif
