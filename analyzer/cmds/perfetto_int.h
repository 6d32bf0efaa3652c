/* SPDX-License-Identifier: MIT */
/*
 * perfetto_int.h - what the Perfetto export's two halves share: the reader
 * (perfetto.c: the timeline's calls and API events settled into records,
 * names interned, the trace-wide packets, the jobs written in order) and
 * the workers (perfetto_pack.c: a job's records encoded as packets and
 * deflated in bundles).  The protos' field numbers, the records and the
 * export's state.
 */
#ifndef TA_PERFETTO_INT_H
#define TA_PERFETTO_INT_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#include "apimem.h"
#include "export_pb.h"
#include "pbenc.h"
#include "pkdeflate.h"

/* Field numbers of perfetto.protos (protos/perfetto/trace/...; the subset
 * used is tests/perfetto_subset.proto). */
enum {
	TRACE_PACKET = 1,
	/* TracePacket */
	PK_TIMESTAMP = 8,
	PK_CLOCK_ID = 58,
	PK_SEQ_ID = 10,
	PK_SEQ_FLAGS = 13,
	PK_INTERNED = 12,
	PK_DEFAULTS = 59,
	PK_CLOCK_SNAPSHOT = 6,
	PK_TRACK_EVENT = 11,
	PK_TRACK_DESCRIPTOR = 60,
	PK_COMPRESSED = 50,
	/* TracePacketDefaults */
	DEF_CLOCK_ID = 58,
	DEF_TRACK_EVENT = 11,
	/* TrackEventDefaults, TrackEvent */
	TE_TRACK_UUID = 11,
	TE_CATEGORY_IIDS = 3,
	TE_DEBUG = 4,
	TE_TYPE = 9,
	TE_NAME_IID = 10,
	TE_NAME = 23,
	TE_COUNTER_VALUE = 30,
	TE_DOUBLE_COUNTER_VALUE = 44,
	/* ClockSnapshot, ClockSnapshot.Clock */
	CS_CLOCKS = 1,
	CS_PRIMARY = 2,
	CLK_ID = 1,
	CLK_TIMESTAMP = 2,
	CLK_INCREMENTAL = 3,
	/* InternedData; EventCategory, EventName, DebugAnnotationName and
	 * InternedString: iid 1, name (str) 2 */
	IN_CATEGORIES = 1,
	IN_NAMES = 2,
	IN_DA_NAMES = 3,
	IN_DA_STRINGS = 29,
	IID = 1,
	IID_NAME = 2,
	/* DebugAnnotation */
	DA_NAME = 10,
	DA_NAME_IID = 1,
	DA_STRING_IID = 17,
	DA_BOOL = 2,
	DA_UINT = 3,
	DA_STRING = 6,
	/* TrackDescriptor, ProcessDescriptor, ThreadDescriptor */
	TD_UUID = 1,
	TD_PARENT = 5,
	TD_NAME = 2,
	TD_PROCESS = 3,
	TD_THREAD = 4,
	TD_COUNTER = 8,
	/* CounterDescriptor */
	CD_UNIT = 3,
	CD_UNIT_NAME = 6,
	CD_UNIT_COUNT = 2,
	CD_UNIT_SIZE_BYTES = 3,
	PD_PID = 1,
	PD_CMDLINE = 2,
	PD_NAME = 6,
	THD_PID = 1,
	THD_TID = 2,
	THD_NAME = 5,
};

enum { SEQ_CLEARED = 1 };
/* The one interned debug annotation name. */
enum { DA_MODULE = 1 };
enum { TYPE_BEGIN = 1, TYPE_END = 2, TYPE_INSTANT = 3, TYPE_COUNTER = 4 };
enum { CLOCK_MONO = 3, CLOCK_BOOT = 6, CLOCK_SEQ = 64 };

/* Track uuids: one range per kind of track. */
#define UUID_PROCESS(pid)  ((1ull << 32) | (pid))
#define UUID_THREAD(index) ((2ull << 32) | (index))
#define UUID_COUNTER(k)	   ((3ull << 32) | (k))
#define UUID_FRAMES(k)	   ((4ull << 32) | (k))
#define UUID_FIBER(k)	   ((5ull << 32) | (k))

/* The sequence of the trace-wide packets (clock, descriptors). */
#define SEQ_GLOBAL 1u

/* Packets are deflated in bundles of this many bytes: each bundle's
 * packet must stay under 512 KiB, and pkdeflate.c's output is at most 9/8
 * of its input (literals of 8 or 9 bits). */
#define BUNDLE_BYTES (256u << 10)

struct pf_thread {
	uint32_t seq;	 /* 0 until its first packet */
	uint8_t *named;	 /* bit per function id: its EventName went out */
	uint32_t nnamed; /* bits */
	uint8_t *catted; /* bit per category iid */
	uint32_t ncatted;
	uint8_t *modded; /* bit per module iid */
	uint32_t nmodded;
	uint64_t stamp; /* the job (its number + 1) whose slot is slot */
	uint32_t slot;
	/* Bit per depth: the BEGIN of the call open there was held back, its
	 * thread running a fiber (the call goes out whole at its end, on the
	 * fiber's track if it ended in the same run). */
	uint8_t *held;
	uint32_t nheld;
};

/* A counter of a process: a counter track. */
struct pf_counter {
	uint32_t pid;
	char *name;
	/* TA_COUNTER_CONFIG's unit + 1 (TA_UNIT_*_), 0: none given */
	uint32_t unit;
};

/*
 * The packets are made by jobs (-j: on the workers), a stretch of events
 * each: the reader settles in a record what depends on the events before
 * (the sequence, the names interned, a zone's args, the counter tracks), a
 * worker converts the times, encodes the packets and deflates them in
 * bundles, and the reader writes the jobs' bytes in order.  The one thing a
 * job needs from the jobs before is each sequence's clock (the time the
 * next delta starts from): the running maximum of its packets' times, which
 * each job takes from the one before and passes on (pf_chain) once its
 * times are known, before it encodes.
 */
enum { PR_BEGIN = 1, PR_END = 2, PR_CALL = 3, PR_INSTANT, PR_COUNTER };

struct prec {
	unsigned char kind, newseq, open, cut;
	unsigned char partial; /* started before the dump says (TA_VISIT_PARTIAL) */
	unsigned char is_double, has_value;
	unsigned char has_lock; /* END: a lock call: lock, and lock_name (or NULL) */
	uint32_t slot;		/* the thread's in the job */
	uint32_t seq, tindex;
	uint32_t fn, cat, mod;		 /* BEGIN: name iid - 1, category and module iids */
	const char *iname, *icat, *imod; /* BEGIN: to intern first, or NULL */
	const struct ta_process *p;
	uint64_t enter, exit;  /* a call's, in ticks */
	int64_t ns;	       /* the API's event */
	char *text;	       /* owned: END: the zone's text; the instant's or frame's name */
	char *chan;	       /* owned: an instant's channel, or NULL */
	char *cargs;	       /* owned: END: the call's recorded arguments, "NAME\tVALUE\n"... */
	const char *lock_name; /* the timeline's */
	uint64_t lock;
	uint64_t value, track; /* a counter's; a call's: 0, or its fiber's index + 1 */
	double d;
	int64_t i;
	int64_t at[2]; /* the packets' times on CLOCK_MONOTONIC (the worker's) */
};

/* Records per job. */
#define PJOB_RECS 1024u

struct zjob {
	uint64_t no; /* in submission order */
	/* Either packets the reader encoded (in, len), or records. */
	uint8_t *in;
	size_t len, cap;
	struct prec *r;
	size_t nr;
	/* The threads of the records: index, latest time, clock at the start. */
	uint32_t *tidx;
	int64_t *tmax, *tlast;
	size_t nslots, slots_cap;
	struct ta_pb pb;
	/* The packets in pb, for the deflater: each its body's length << 5 |
	 * its tail's (the timestamp, < 32 bytes); covered: their bytes. */
	uint32_t *runs;
	size_t nruns, runs_cap, covered;
	struct ta_pkz z; /* its out: the bundles, deflated and framed */
	int fail;
	uint8_t tail[16]; /* the open packet's timestamp */
	size_t ntail;
	struct pf *x;
};

struct pf {
	FILE *f;
	struct ta_pb pb;
	struct ta_opool q;
	struct zjob *zjobs;
	size_t nzjobs;
	struct zjob *job; /* being filled */
	uint64_t submitted;
	/* The chain of clocks: jobs take turns in order (chained = the jobs
	 * that did), each sequence's clock by ta_thread.index in last. */
	pthread_mutex_t chain_mu;
	pthread_cond_t chain_cv;
	uint64_t chained;
	int64_t *last;
	uint8_t *last_set;
	uint32_t nlast;
	int chain_nomem;

	struct ta_timeline tl;
	int64_t t0; /* the dump's start on CLOCK_MONOTONIC */
	uint32_t next_seq;
	int nomem;

	struct pf_thread *th; /* by ta_thread.index */
	uint32_t nth;
	uint32_t *cat; /* by function id: its category's iid, 0 not known yet */
	uint32_t ncat;
	char **cats; /* category names by iid - 1 */
	uint32_t ncats;
	size_t cats_cap;
	uint32_t *mod; /* by function id: its module's iid, 0 not known yet */
	uint32_t nmod;
	const char **mods; /* module names by iid - 1 (the function table's) */
	uint32_t nmods;
	size_t mods_cap;
	struct pf_counter *counters;
	size_t ncounters, counters_cap;
	struct ta_xframes xf; /* the frame marks: slices after the run */
	/* What TA_ZONE_TEXT and TA_ZONE_VALUE gave a zone still open, for its
	 * END (trace processor merges the args of a BEGIN and its END). */
	struct ta_zone_args zones;
	/* The pools' live bytes (counter tracks "memory: POOL"), the fiber
	 * each thread runs (apimem.h). */
	struct ta_pools pools;
	struct ta_fibers fibers;
};

/* perfetto_pack.c: a ClockSnapshot.Clock of id at ts in b (incremental: the
 * sequence's own clock, of deltas). */
void ta_perfetto_clock_entry(struct ta_pb *b, uint32_t id, int64_t ts, int incremental);
/* perfetto_pack.c: makes a job's packets (the ordered pool's work, on a
 * worker): ctx unused, job a struct zjob. */
void ta_perfetto_job_work(void *ctx, void *job);

#endif
