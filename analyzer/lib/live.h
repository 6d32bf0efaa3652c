/* SPDX-License-Identifier: MIT */
/*
 * live.h - a dump aggregated as it arrives (live.c), for `traceagent top`.
 *
 * Bytes of a dump, in pieces of any size (the growing end of a file, a
 * socket), go through stream.c into whole chunks.  The metadata
 * chunks go to a session (session.h), which names things; EVENTS chunks
 * are decoded here, in batches, into per-thread rows: calls and self
 * time (time on top of the thread's stack, up to the chunk's last event)
 * per function or zone address.  A snapshot (ta_live_snap) merges the
 * rows by name over threads and processes and gives, per function, what
 * the last interval added and the totals since the start.
 *
 * Each EVENTS chunk carries its stack snapshot, so any chunk decodes
 * alone; a thread's state carries over between its chunks only to charge
 * the time between them.  Nothing is allocated per event: rows grow with
 * functions and threads, not with the trace's length.
 *
 * The stream is hostile (a socket anyone of the user's can write to): what
 * it claims is capped, so that the memory stays bounded whatever it sends.
 * Past a cap the rest is counted, not dropped: threads beyond
 * TA_LIVE_THREADS_MAX under one "(other threads)" thread, addresses beyond
 * TA_LIVE_ROWS_MAX (thread x function pairs) under "(other functions)" of
 * their thread; processes beyond TA_LIVE_PROCS_MAX and metadata beyond
 * TA_LIVE_META_MAX are left out of the session (names, clocks); a stack
 * deeper than the stacks' budget counts its calls and charges their time to
 * the deepest frame kept.  ta_live_snap says which caps were hit.
 */
#ifndef TA_LIVE_H
#define TA_LIVE_H

#include <stddef.h>
#include <stdint.h>

#include "common.h"
#include "stream.h"

#define TA_LIVE_PROCS_MAX   256u       /* processes per stream */
#define TA_LIVE_THREADS_MAX 4096u      /* threads per stream */
#define TA_LIVE_ROWS_MAX    (1u << 19) /* distinct (thread, address) pairs */
#define TA_LIVE_STACK_MAX   (4u << 20) /* stack entries over all threads */
#define TA_LIVE_META_MAX                                                                           \
	(64u << 20) /* metadata bytes given to the session                                         \
		       (payload + 256 per chunk) */

/* The name of what is counted past a cap. */
#define TA_LIVE_OTHER_THREADS "(other threads)"
#define TA_LIVE_OTHER_FNS     "(other functions)"

/* One function or zone, merged over threads and processes, in a snapshot. */
struct ta_live_row {
	/* name and module (path, "[zone]", "[libcall]" or ""), what rows
	 * merge by; no full name, no offset */
	struct ta_fn id;
	uint64_t icalls, iself_ns; /* the last interval */
	uint64_t calls, self_ns;   /* since the start */
};

/* One thread in a snapshot. */
struct ta_live_thr {
	uint32_t pid;
	uint64_t tid;
	const char *name; /* its THREAD_NAME, or "" */
	uint64_t ievents, events, lost;
	const char *hot; /* its function with the most self time in the interval, or "" */
	uint64_t hot_self_ns;
	int ended;
};

/* The frame marks (TA_FRAME_MARK) of the last interval, of one frame set:
 * the first named "frame", else the first seen. */
struct ta_live_frames {
	const char *set; /* NULL: the program marks no frames */
	uint64_t frames, iframes;
	uint64_t p50_ns, p99_ns, max_ns;
	uint64_t hitches; /* frames of the interval over twice its median
			     (framestat's default, `frames --hitch=2`) */
};

struct ta_live_snap {
	uint64_t seq;	      /* 1, 2, ... */
	uint64_t interval_ns; /* wall time since the previous snapshot */
	/* The program's time the interval's events covered (the longest of
	 * the processes'): what the self times of the interval are shares of
	 * (a dump read whole covers more than the wall time). */
	uint64_t span_ns;
	uint64_t ievents, events;
	uint64_t lost;
	uint64_t lost_by[TA_LOST_NCAUSES + 1]; /* as the processes' END chunks say */
	size_t nprocs, nthreads_live;
	int ended; /* every process seen wrote its END */
	struct ta_live_row *fns;
	size_t nfns;
	struct ta_live_thr *thr;
	size_t nthr;
	struct ta_live_frames fr;
	/* NULL, or which caps were hit since the start, as one line of text
	 * ("limits reached: ..."); capped_new: hit since the last snapshot. */
	const char *capped;
	int capped_new;
};

struct ta_live;

/* A new aggregator, or NULL without memory. */
struct ta_live *ta_live_new(void);
void ta_live_free(struct ta_live *L);
/* Names functions without reading any file (a module's functions become
 * "module+0xOFFSET"): for the fuzzer, which must not open the paths a
 * stream names.  Call before the first snapshot. */
void ta_live_no_files(struct ta_live *L);
/* How C++ names are shown (--demangle; TA_DEMANGLE_FULL until set).  Call
 * before the first snapshot. */
void ta_live_demangle(struct ta_live *L, enum ta_demangle mode);
/*
 * Takes n more bytes of the dump.  Returns 0, or a negative TA_E_ code
 * when the stream is unusable from there on (*off: where; the chunks
 * before it were taken).  A partial chunk at the end is kept for the next
 * call.
 */
int ta_live_feed(struct ta_live *L, const uint8_t *p, size_t n, uint64_t *off);
/* Whether the bytes fed so far end between chunks. */
int ta_live_at_boundary(const struct ta_live *L);
/* Whether every process seen so far wrote its END chunk (none: 0). */
int ta_live_ended(const struct ta_live *L);
/* Function events decoded so far (the throughput's measure). */
uint64_t ta_live_events(const struct ta_live *L);
/* The pid of the dump's file header, 0 before it arrived. */
uint32_t ta_live_pid(const struct ta_live *L);
/*
 * Closes an interval of interval_ns and fills snap (its arrays owned by L,
 * valid until the next ta_live_snap).  Returns 0, or -TA_E_NOMEM.
 */
int ta_live_snap(struct ta_live *L, uint64_t interval_ns, struct ta_live_snap *snap);

#endif
