/* SPDX-License-Identifier: MIT */
/*
 * timeline.h - calls one at a time, in each thread's time order, for
 * `replay` and the Chrome export.
 *
 * A call's duration is known only at its exit, yet a replay shows a call's
 * first line before its callees.  The timeline decides at each exit whether
 * the call is shown (thread, depth, time range, minimum duration, under a
 * --function match) and, when it is, first emits the opening lines of the
 * callers not shown yet.  Every filter keeps a shown call's callers shown
 * (they start earlier, end later and are shallower), so the open callers are
 * always a run of the thread's stack and nothing is buffered but a count per
 * thread: memory grows with threads, never with events or depth.
 *
 * Times and names are needed while the events stream, but the clock pairs
 * that convert ticks come through the whole dump (the last at its end) and
 * modules may be loaded late: a first pass reads only the metadata chunks,
 * which costs a fraction of the real one.
 */
#ifndef TA_TIMELINE_H
#define TA_TIMELINE_H

#include <pthread.h>
#include <stdint.h>

#include "apiev.h"
#include "apimem.h"
#include "argsview.h"
#include "calltree.h"
#include "common.h"

/* The filters (each command takes the ones that make sense to it). */
struct ta_tlopts {
	struct ta_tidset tids;
	uint64_t from, to;     /* --time-range in ns from the dump start; to = UINT64_MAX */
	uint64_t min_duration; /* ns */
	uint32_t max_depth;    /* --depth: levels shown; 0 = all */
	const char *function;  /* --function glob, or NULL */
	unsigned given;	       /* TA_TLOPT_* of the options given */
};

#define TA_TLOPT_TID	  1u
#define TA_TLOPT_RANGE	  2u
#define TA_TLOPT_MINDUR	  4u
#define TA_TLOPT_DEPTH	  8u
#define TA_TLOPT_FUNCTION 16u

struct ta_opts;
/*
 * Takes the option ta_opts_next returned, one of the filters a command's
 * table lists (TA_OPT_TID, TA_OPT_TIME_RANGE, TA_OPT_MIN_DURATION,
 * TA_OPT_DEPTH, TA_OPT_FUNCTION of cmdopts.h).  Returns 0, or 2 when its
 * value is bad (the message was printed).
 */
int ta_tlopts_take(struct ta_tlopts *o, const struct ta_opts *p);
void ta_tlopts_free(struct ta_tlopts *o);

enum ta_tlkind {
	TA_TL_ENTER, /* the first line of a call whose callees follow */
	TA_TL_EXIT,  /* the last line of such a call: its duration is known */
	TA_TL_CALL   /* a call shown whole (none of its callees are) */
};

struct ta_tlcall {
	enum ta_tlkind kind;
	const struct ta_sess_thread *t;
	uint32_t depth;	  /* below the first shown level of its thread or --function match */
	uint32_t fn;	  /* id in the timeline's fns */
	int64_t start_ns; /* from the dump start */
	uint64_t dur_ns, self_ns; /* 0 for TA_TL_ENTER */
	unsigned flags; /* TA_VISIT_* of the exit (TA_VISIT_OPEN: still open at the end) */
	/* The call's process (the metadata pass's; NULL: ticks are ns) and
	 * ends in its ticks (exit: that of TA_TL_EXIT and TA_TL_CALL), from
	 * which ta_tlcall_times gives start_ns and dur_ns anywhere. */
	const struct ta_process *p;
	uint64_t enter, exit;
	/* What the call carried (argsview.h), or NULL; valid during the
	 * emit only. */
	const struct ta_callargs *args;
	/* A library call of the lock class (TA_EXT_LOCK: a wait, an unlock):
	 * the lock's address, and its name (apimem.h) when the timeline was
	 * run with lock_names and the dump gave it one, else NULL; the name
	 * lives as long as the timeline, lock_id is its row in the
	 * timeline's locks (-1: none). */
	int has_lock;
	uint64_t lock;
	const char *lock_name;
	long lock_id;
};

/* An event of the manual API (apiev.h) at its place in the thread's
 * timeline: its callers' first lines went out before it. */
struct ta_tlapi {
	const struct ta_sess_thread *t;
	uint32_t depth; /* as a call's: the level of a callee of the innermost frame */
	int64_t ns;	/* from the dump start */
	uint64_t ticks; /* the same time on its process's counter */
	const struct ta_apiev *e;
	const char *channel; /* the name of e->channel */
	/* The innermost zone open on the thread (what ZONE_TEXT and
	 * ZONE_VALUE are for): its depth and start, zone_depth -1 for none. */
	int64_t zone_depth;
	int64_t zone_start_ns;
	uint32_t zone_fn; /* its function id */
};

struct ta_timeline {
	struct ta_view meta;	/* the metadata pass: names and clocks during the walk */
	struct ta_view v;	/* the real pass */
	struct ta_fn_index fns; /* named through meta */
	int64_t start_ns;	/* the dump's start on CLOCK_MONOTONIC */
	const struct ta_tlopts *o;
	void (*emit)(void *ctx, const struct ta_tlcall *c);
	void (*api)(void *ctx, const struct ta_tlapi *a); /* may be NULL */
	void *ctx;
	int nomem;
	/* Set before the run: the calls' start_ns, dur_ns and self_ns are
	 * not computed (the emitter converts p, enter and exit itself, with
	 * ta_tlcall_times, possibly in another thread). */
	int lazy;
	/* Set before the run: the lock calls' names (ta_tlcall.lock_name),
	 * the last name TA_LOCK_NAME gave each lock anywhere in the dump, as
	 * `report --locks` names them; read by a pass of its own over the
	 * EXT events when a process both named locks and recorded their
	 * calls (ta_locknames_wanted). */
	int lock_names;
	struct ta_locknames locks;

	struct ta_tlthread *th; /* by ta_thread.index */
	uint32_t nth;
	uint8_t *match; /* by function id: 0 not known yet, 1 no, 2 matches --function */
	uint32_t nmatch;
	char text[TA_TEXT_MAX + 1]; /* an API event's text, while api has it */
	struct ta_callargs *ca;	    /* the args of the call being emitted */
	struct ta_enumcache *enums; /* the enums' names read (argsdwarf.h) */
};

/*
 * Reads the dump at path and emits the calls that pass the filters of o.
 * Prints the errors of the dump.  Returns 0 when the dump could be read
 * (tl->v.status says whether it was damaged), else -1 with the exit status
 * in tl->v.status.  Call ta_timeline_warnings after the output, and
 * ta_timeline_close in any case.
 */
int ta_timeline_run(struct ta_timeline *tl, const char *path, const struct ta_tlopts *o,
		    void (*emit)(void *ctx, const struct ta_tlcall *c), void *ctx);
/*
 * The same, and the manual API's events to api as they come, each after
 * the first lines of its callers.  An event is shown where a call would
 * be: in the threads, time range, depth and --function match chosen; not
 * with --min-duration, which judges calls (the callers of an event shown
 * would be shown whatever they lasted).
 */
int ta_timeline_run_api(struct ta_timeline *tl, const char *path, const struct ta_tlopts *o,
			void (*emit)(void *ctx, const struct ta_tlcall *c),
			void (*api)(void *ctx, const struct ta_tlapi *a), void *ctx);
void ta_timeline_warnings(struct ta_timeline *tl);
/*
 * The first event read so far of the thread whose ta_sess_thread.index is
 * thread (the earliest enter of a call it exited or had open at an API
 * event, or an API event), whatever the filters, in ns from the dump's
 * start into ns: where the first frame of a set it marked begins, as in
 * `traceagent frames`.  -1 when there was none.
 */
int ta_timeline_first_ns(const struct ta_timeline *tl, uint32_t thread, int64_t *ns);
/* The same on its process's counter (what a KEEP chunk's windows are in). */
int ta_timeline_first_ticks(const struct ta_timeline *tl, uint32_t thread, uint64_t *ticks);
void ta_timeline_close(struct ta_timeline *tl);

/* ---- what the manual API gives an open zone (the exports) ---- */

/* What TA_ZONE_TEXT and TA_ZONE_VALUE gave a zone still open, kept for
 * its call's end (its thread, depth and start tell it). */
struct ta_zone_arg {
	const struct ta_sess_thread *t;
	uint32_t depth;
	int64_t start_ns;
	char *text; /* as the caller's conversion made it, or NULL */
	int has_value;
	uint64_t value;
};

struct ta_zone_args {
	struct ta_zone_arg *v;
	size_t n, cap;
};

/*
 * Takes an API event a of kind TA_EXT_ZONE_TEXT or TA_EXT_ZONE_VALUE for
 * the zone open at it: a value, or the text as conv makes it (a malloc'd
 * string; NULL without memory) in place of an earlier one, as a zone shows
 * one.  Returns 0, or -1 without memory.
 */
int ta_zone_args_add(struct ta_zone_args *za, const struct ta_tlapi *a,
		     char *(*conv)(const char *text));
/* The args of the zone call of thread t at depth that started at start_ns
 * into out, taken out of za (out->text is the caller's to free): 1, or 0
 * when it has none. */
int ta_zone_args_take(struct ta_zone_args *za, const struct ta_sess_thread *t, uint32_t depth,
		      int64_t start_ns, struct ta_zone_arg *out);
void ta_zone_args_free(struct ta_zone_args *za);

/* A time of process p (may be NULL: ticks are ns) in ns from the dump's start. */
int64_t ta_timeline_rel(const struct ta_timeline *tl, const struct ta_process *p, uint64_t ticks);

/* A call's start_ns and dur_ns from its ticks (as the timeline computes
 * them); reads only tl's start and the process: callable from any thread
 * during the walk. */
void ta_tlcall_times(const struct ta_timeline *tl, const struct ta_tlcall *c, int64_t *start_ns,
		     uint64_t *dur_ns);

/* ---- ordered jobs: work on several cores, results taken in order ---- */

/*
 * A ring of n jobs (the caller's) that worker threads work on while the
 * caller fills the next ones; the caller takes the results (retire) in the
 * order it submitted the jobs, so an output written by retire is the one
 * of a single thread.  Without workers the work is done at submission.
 * Memory: the n jobs, whatever the length of the stream.
 */
struct ta_opool {
	pthread_mutex_t mu;
	pthread_cond_t work_cv, done_cv; /* a job was queued (or quit); one is done */
	int ready;			 /* initialized */
	void **jobs;
	unsigned char *state;
	size_t n;
	uint64_t head, tail, next; /* retire, submit, and the next to hand out */
	int quit;
	void (*work)(void *ctx, void *job);   /* in a worker, or the caller */
	void (*retire)(void *ctx, void *job); /* in the caller, in order */
	void *ctx;
	pthread_t *tids;
	unsigned nworkers;
};

/* Starts worker threads (0: none) on jobs[0..n).  0, or -1 without
 * memory. */
int ta_opool_init(struct ta_opool *q, unsigned workers, void **jobs, size_t n,
		  void (*work)(void *ctx, void *job), void (*retire)(void *ctx, void *job),
		  void *ctx);
/* The job to fill next (free: retired, or never used). */
void *ta_opool_current(const struct ta_opool *q);
/* Submits the current job; returns the next one to fill, once it was
 * retired. */
void *ta_opool_submit(struct ta_opool *q);
/* Retires every job submitted, in order. */
void ta_opool_drain(struct ta_opool *q);
/* Stops the workers (after ta_opool_drain, or to drop what is left). */
void ta_opool_free(struct ta_opool *q);

#endif /* TA_TIMELINE_H */
