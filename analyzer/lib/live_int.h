/* SPDX-License-Identifier: MIT */
/*
 * live_int.h - what the aggregator's two files share: live.c (the stream
 * fed in, chunks and events summed per thread and address) and
 * live_snap.c (the rows named, merged per function and handed out as a
 * snapshot).  The aggregator's state, and the hash and the tick
 * conversion both use.
 */
#ifndef TA_LIVE_INT_H
#define TA_LIVE_INT_H

#include <stdint.h>

#include "live.h"
#include "stream.h"

#define BATCH		512
#define FRAMES_KEPT_MAX (1u << 20) /* frame times kept per interval */

/* One function or zone address on one thread; ticks. */
struct row {
	uint64_t addr;
	uint64_t calls, self;
	uint64_t pcalls, pself; /* at the previous snapshot */
	/* Self time since the previous snapshot's cut (struct proc): a chunk
	 * that comes late carries time from before it, which is in self (the
	 * totals) and not in the interval's. */
	uint64_t iself;
	int32_t fn;    /* index in L->fns once named, else -1 */
	int32_t other; /* the thread's "(other functions)" */
};

/* The caps (live.h) hit, as bits of ta_live.capped. */
enum {
	CAP_PROCS = 1,
	CAP_THREADS = 2,
	CAP_ROWS = 4,
	CAP_STACK = 8,
	CAP_META = 16,
};

struct proc {
	uint32_t pid;
	long double ns_per_tick;
	size_t rate_nclock; /* the session's clock pairs the rate was taken from */
	int rate_known;
	uint64_t last_mark; /* of the frame set shown */
	int have_mark;
	uint64_t lost; /* LOST events in its threads' chunks */
	/* The stream's time: its first and latest event ticks, and the latest
	 * at the previous snapshot (the cut: the interval's self time is what
	 * comes after it, so no thread has more than the interval). */
	uint64_t first_ticks, max_ticks, cut_ticks;
	int have_ticks, have_cut;
};

struct thr {
	uint32_t pid;
	uint64_t tid;
	struct proc *proc;
	struct row *rows;
	size_t nrows, cap;
	struct ta_htab by_addr;
	uint32_t *stack; /* row indices, bottom first */
	uint32_t depth, scap;
	uint64_t deep;	   /* frames above the stack, past the stacks' budget */
	int64_t other_row; /* its "(other functions)" row, or -1 */
	uint64_t last_ticks;
	int have_last;
	uint64_t next_seq;
	uint64_t events, pevents, lost;
	const struct ta_sess_thread *sth; /* the session's, for its name and end */
};

struct ta_live {
	struct ta_stream st;
	struct ta_session *s;
	struct ta_resolver *res;
	struct ta_decoder dec;
	struct ta_event ev[BATCH];
	uint8_t *raw; /* decompressed payload */
	size_t raw_cap;
	uint64_t chunk_index;
	uint32_t pid;
	int have_header;

	struct thr **thr;
	size_t nthr, thr_cap;
	struct ta_htab thr_by_id;
	struct thr *other_thr; /* the threads past TA_LIVE_THREADS_MAX */
	struct proc **procs;
	size_t nprocs, procs_cap;
	struct proc *other_proc;  /* the processes past TA_LIVE_PROCS_MAX */
	uint64_t nrows;		  /* over all threads */
	uint64_t stack_total;	  /* stack entries allocated over all threads */
	uint64_t meta;		  /* metadata given to the session (TA_LIVE_META_MAX) */
	unsigned capped, pcapped; /* CAP_ bits, and at the previous snapshot */
	char capmsg[480];
	int no_files;
	enum ta_demangle demangle;

	uint64_t events, pevents;

	/* Functions merged by (name, module) for snapshots. */
	struct ta_live_row *fns;
	uint64_t *fn_hash;
	size_t nfns, fns_cap;
	struct ta_htab fn_by_name;
	char **own; /* names made up for addresses outside every module */
	size_t nown, own_cap;

	/* The frame set shown and the frame times of the interval, ns. */
	char *fset;
	uint64_t *ftimes;
	size_t nftimes, ftimes_cap;
	uint64_t frames, pframes;

	struct ta_live_thr *snap_thr;
	size_t snap_thr_cap;
	uint64_t snap_seq;
};

/* The hash of an address (and of the rest of the keys). */
static inline uint64_t mix(uint64_t x)
{
	x ^= x >> 31;
	x *= 0x9e3779b97f4a7c15ull;
	x ^= x >> 29;
	return x;
}
/* ticks in ns at rate ns per tick, saturated: a stream's clock pairs can
 * claim any rate, and an out-of-range conversion is undefined. */
static inline uint64_t to_ns(uint64_t ticks, long double rate)
{
	long double v = (long double)ticks * rate;

	if (!(v > 0))
		return 0; /* negative or NaN */
	if (v >= 18446744073709551615.0L)
		return UINT64_MAX;
	return (uint64_t)v;
}

/* live.c: sets p's ns per tick from the session's view of its clock. */
void ta_live_proc_rate(struct ta_live *L, struct proc *p);

#endif
