/* SPDX-License-Identifier: MIT */
/*
 * tracerows.c - a dump as rows of Perfetto-shaped tables; see tracerows.h.
 *
 * One timeline walk gives the slices (a call's id is taken when its first
 * line comes, so a parent's id is below its callees' and parent_id is known
 * at every row), the instants, counters, zone arguments and frame marks;
 * what needs the whole dump (processes, threads, tracks, frames) goes out
 * after it.  function_stats comes from a second, quiet read into report's
 * profile, so that its numbers are exactly report's.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "grow.h"
#include "timeline.h"
#include "tracerows.h"

/* ---- the tables -------------------------------------------------------------------- */

#define I    TA_ROWS_INT
#define D    TA_ROWS_DOUBLE
#define T    TA_ROWS_TEXT
#define N(a) (sizeof(a) / sizeof((a)[0]))

static const struct ta_rows_column process_cols[] = {
    {"upid", I, 0, 0},	 {"pid", I, 0, 0},	   {"name", T, 1, 0},	 {"start_ts", I, 1, 0},
    {"end_ts", I, 1, 0}, {"parent_upid", I, 1, 0}, {"cmdline", T, 1, 0},
};
static const struct ta_rows_column thread_cols[] = {
    {"utid", I, 0, 0},	   {"tid", I, 0, 0},	{"name", T, 1, 0},	     {"upid", I, 1, 0},
    {"start_ts", I, 1, 0}, {"end_ts", I, 1, 0}, {"is_main_thread", I, 0, 0},
};
static const struct ta_rows_column track_cols[] = {
    {"id", I, 0, 0},
    {"name", T, 1, 0},
    {"type", T, 0, 0},
};
static const struct ta_rows_column thread_track_cols[] = {
    {"id", I, 0, 0},
    {"name", T, 1, 0},
    {"utid", I, 0, 0},
};
static const struct ta_rows_column counter_track_cols[] = {
    {"id", I, 0, 0},
    {"name", T, 0, 0},
    {"upid", I, 1, 0},
};
static const struct ta_rows_column slice_cols[] = {
    {"id", I, 0, 0},	     {"ts", I, 0, 0},	    {"dur", I, 0, 0},	     {"depth", I, 0, 0},
    {"name", T, 0, 0},	     {"category", T, 1, 0}, {"track_id", I, 0, 0},   {"parent_id", I, 1, 0},
    {"arg_set_id", I, 1, 0}, {"self_dur", I, 0, 0}, {"incomplete", I, 0, 0}, {"pid", I, 0, 1},
};
static const struct ta_rows_column instant_cols[] = {
    {"id", I, 0, 0},	   {"ts", I, 0, 0},   {"track_id", I, 0, 0}, {"name", T, 0, 0},
    {"category", T, 1, 0}, {"kind", T, 0, 0}, {"pid", I, 0, 1},
};
static const struct ta_rows_column counter_cols[] = {
    {"id", I, 0, 0}, {"ts", I, 0, 0}, {"track_id", I, 0, 0}, {"value", D, 0, 0}, {"pid", I, 0, 1},
};
static const struct ta_rows_column args_cols[] = {
    {"arg_set_id", I, 0, 0}, {"flat_key", T, 0, 0},	{"key", T, 0, 0},
    {"int_value", I, 1, 0},  {"string_value", T, 1, 0}, {"real_value", D, 1, 0},
    {"value_type", T, 0, 0},
};
static const struct ta_rows_column function_stats_cols[] = {
    {"name", T, 0, 0},	   {"module", T, 0, 0},	 {"offset", I, 0, 0},  {"calls", I, 0, 0},
    {"total_ns", I, 0, 0}, {"self_ns", I, 0, 0}, {"min_ns", I, 1, 0},  {"max_ns", I, 1, 0},
    {"avg_ns", I, 1, 0},   {"p50_ns", I, 1, 0},	 {"p90_ns", I, 1, 0},  {"p99_ns", I, 1, 0},
    {"open", I, 0, 0},	   {"partial", I, 0, 0}, {"unwound", I, 0, 0}, {"short_calls", I, 0, 0},
};
static const struct ta_rows_column frame_cols[] = {
    {"id", I, 0, 0},	 {"ts", I, 0, 0},   {"dur", I, 0, 0},  {"name", T, 0, 0},
    {"number", I, 0, 0}, {"upid", I, 1, 0}, {"utid", I, 0, 0},
};
static const struct ta_rows_column trace_bounds_cols[] = {
    {"start_ts", I, 0, 0},
    {"end_ts", I, 0, 0},
};

const struct ta_rows_table ta_rows_tables[TA_ROWS_NTABLES] = {
    {TA_ROWS_PROCESS, "process", process_cols, N(process_cols), "a process of the dump"},
    {TA_ROWS_THREAD, "thread", thread_cols, N(thread_cols), "a thread of a process"},
    {TA_ROWS_TRACK, "track", track_cols, N(track_cols),
     "a track: a thread's (slices, instants) or a counter's"},
    {TA_ROWS_THREAD_TRACK, "thread_track", thread_track_cols, N(thread_track_cols),
     "the track of a thread's slices and instants"},
    {TA_ROWS_COUNTER_TRACK, "counter_track", counter_track_cols, N(counter_track_cols),
     "a counter (TA_COUNTER) of a process"},
    {TA_ROWS_SLICE, "slice", slice_cols, N(slice_cols),
     "a call of a function, a zone or a library call"},
    {TA_ROWS_INSTANT, "instant", instant_cols, N(instant_cols),
     "a message, instant, channel switch or unmatched zone end of the manual API"},
    {TA_ROWS_COUNTER, "counter", counter_cols, N(counter_cols), "a value of a counter"},
    {TA_ROWS_ARGS, "args", args_cols, N(args_cols), "a zone's text or value"},
    {TA_ROWS_FUNCTION_STATS, "function_stats", function_stats_cols, N(function_stats_cols),
     "a function's numbers, as traceagent report gives them"},
    {TA_ROWS_FRAME, "frame", frame_cols, N(frame_cols), "a frame of a frame set"},
    {TA_ROWS_TRACE_BOUNDS, "trace_bounds", trace_bounds_cols, N(trace_bounds_cols),
     "the dump's first and last times"},
};

#undef I
#undef D
#undef T

#define MAXCOLS 16

/* ---- the walk's state ---------------------------------------------------------------- */

struct rthread {
	int64_t track; /* its thread track's id, 0 until its first row */
	int64_t *ids;  /* the slice ids of its open calls shown, by depth */
	uint32_t n;    /* of them */
	size_t cap;
};

struct rcounter {
	uint32_t pid;
	char *name;
	int64_t track;
};

struct rmark {
	int64_t ns;	/* from the dump's start */
	uint64_t ticks; /* the same on its process's counter */
	uint32_t thread;
};

struct rset {
	uint32_t pid;
	char *name;
	struct rmark *marks;
	size_t n, cap;
};

struct rw {
	const struct ta_rows_opts *o;
	const struct ta_rows_sink *sink;
	struct ta_rows_counts counts;
	struct ta_timeline tl;
	struct ta_tlopts tlo;
	int stop, nomem;
	int64_t next_slice, next_track, next_instant, next_counter, next_args;
	struct rthread *th;
	size_t nth;
	struct rcounter *ctr;
	size_t nctr, ctr_cap;
	struct rset *sets;
	size_t nsets, sets_cap;
	struct ta_zone_args zones;
	uint64_t file_size, since_progress;
	struct ta_rows_cell c[MAXCOLS];
};

/* Hands the cells set for table id to the sink. */
static void put(struct rw *w, enum ta_rows_table_id id)
{
	if (w->stop)
		return;
	if (w->sink->row(w->sink->ctx, &ta_rows_tables[id], w->c))
		w->stop = 1;
	else
		w->counts.rows[id]++;
}

static void set_i(struct rw *w, unsigned k, int64_t v)
{
	w->c[k] = (struct ta_rows_cell){.i = v};
}

static void set_d(struct rw *w, unsigned k, double v)
{
	w->c[k] = (struct ta_rows_cell){.d = v};
}

/* A text, null for NULL. */
static void set_s(struct rw *w, unsigned k, const char *s)
{
	w->c[k] = (struct ta_rows_cell){.null = !s, .s = s};
}

static void set_null(struct rw *w, unsigned k)
{
	w->c[k] = (struct ta_rows_cell){.null = 1};
}

/* An id, null for 0. */
static void set_id(struct rw *w, unsigned k, int64_t v)
{
	w->c[k] = (struct ta_rows_cell){.null = !v, .i = v};
}

static struct rthread *rthread_of(struct rw *w, const struct ta_sess_thread *t)
{
	if (t->index >= w->nth) {
		size_t n = w->nth;
		struct rthread *th = ta_vec_reserve_max(w->th, (size_t)t->index + 1, &n,
							sizeof(*th), 16, UINT32_MAX);

		if (!th) {
			w->nomem = 1;
			return NULL;
		}
		memset(th + w->nth, 0, (n - w->nth) * sizeof(*th));
		w->th = th;
		w->nth = n;
	}
	return &w->th[t->index];
}

static int64_t track_of(struct rw *w, struct rthread *th)
{
	if (!th->track)
		th->track = ++w->next_track;
	return th->track;
}

static void progress(struct rw *w, int last)
{
	const struct ta_session *s = w->tl.v.s;

	if (!w->o->progress)
		return;
	if (last)
		w->o->progress(w->o->progress_ctx, w->file_size, w->file_size);
	else if (s)
		w->o->progress(w->o->progress_ctx,
			       s->stored_bytes < w->file_size ? s->stored_bytes : w->file_size,
			       w->file_size);
}

/* ---- slices ---------------------------------------------------------------------------- */

/* The rows of a zone's text and value: its arg_set_id, or 0 for none. */
static int64_t zone_args(struct rw *w, const struct ta_tlcall *c, int64_t start_ns)
{
	struct ta_zone_arg z;
	int64_t set;

	if (!w->zones.n || !ta_zone_args_take(&w->zones, c->t, c->depth, start_ns, &z))
		return 0;
	set = ++w->next_args;
	if (z.text) {
		set_i(w, 0, set);
		set_s(w, 1, "debug.text");
		set_s(w, 2, "debug.text");
		set_null(w, 3);
		set_s(w, 4, z.text);
		set_null(w, 5);
		set_s(w, 6, "string");
		put(w, TA_ROWS_ARGS);
		free(z.text);
	}
	if (z.has_value) {
		set_i(w, 0, set);
		set_s(w, 1, "debug.value");
		set_s(w, 2, "debug.value");
		/* The agent's 64 bits, as SQL's signed integers hold them. */
		set_i(w, 3, (int64_t)z.value);
		set_null(w, 4);
		set_null(w, 5);
		set_s(w, 6, "int");
		put(w, TA_ROWS_ARGS);
	}
	return set;
}

static void emit(void *ctx, const struct ta_tlcall *c)
{
	struct rw *w = ctx;
	struct rthread *th = rthread_of(w, c->t);
	const struct ta_fn *fn = &w->tl.fns.fn[c->fn].id;
	int64_t id, parent;

	if (!th)
		return;
	if (c->kind == TA_TL_ENTER) {
		size_t need = (size_t)c->depth + 1;
		int64_t *ids = ta_vec_reserve(th->ids, need, &th->cap, sizeof(*ids), 16);

		if (!ids) {
			w->nomem = 1;
			return;
		}
		th->ids = ids;
		ids[c->depth] = ++w->next_slice;
		th->n = c->depth + 1;
		return;
	}
	parent = c->depth && c->depth - 1 < th->n ? th->ids[c->depth - 1] : 0;
	if (c->kind == TA_TL_EXIT && c->depth < th->n) {
		id = th->ids[c->depth];
		th->n = c->depth;
	} else {
		id = ++w->next_slice;
	}
	if (w->stop)
		return;
	set_i(w, 0, id);
	set_i(w, 1, w->tl.start_ns + c->start_ns);
	set_i(w, 2, (int64_t)c->dur_ns);
	set_i(w, 3, c->depth);
	set_s(w, 4, fn->name);
	set_s(w, 5, fn->module[0] ? ta_path_base(fn->module) : NULL);
	set_i(w, 6, track_of(w, th));
	set_id(w, 7, parent);
	set_i(w, 9, (int64_t)c->self_ns);
	set_i(w, 10, c->flags & TA_VISIT_OPEN ? 1 : c->flags & TA_VISIT_INCOMPLETE ? 2 : 0);
	set_i(w, 11, ta_pid_os(w->tl.v.s, c->t->pid));
	/* Its arguments' rows first: they use the cells. */
	{
		struct ta_rows_cell keep[12];
		int64_t set;

		memcpy(keep, w->c, sizeof(keep));
		set = zone_args(w, c, c->start_ns);
		memcpy(w->c, keep, sizeof(keep));
		set_id(w, 8, set);
	}
	put(w, TA_ROWS_SLICE);
	if (++w->since_progress >= 65536) {
		w->since_progress = 0;
		progress(w, 0);
	}
}

/* ---- the manual API ------------------------------------------------------------------ */

static void instant(struct rw *w, const struct ta_tlapi *a, const char *name, const char *channel,
		    const char *kind)
{
	struct rthread *th = rthread_of(w, a->t);

	if (!th)
		return;
	set_i(w, 0, ++w->next_instant);
	set_i(w, 1, w->tl.start_ns + a->ns);
	set_i(w, 2, track_of(w, th));
	set_s(w, 3, name);
	set_s(w, 4, channel);
	set_s(w, 5, kind);
	set_i(w, 6, ta_pid_os(w->tl.v.s, a->t->pid));
	put(w, TA_ROWS_INSTANT);
}

/* The track of counter name of process pid; 0 without memory. */
static int64_t counter_track(struct rw *w, uint32_t pid, const char *name)
{
	struct rcounter *c;

	for (size_t k = 0; k < w->nctr; k++)
		if (w->ctr[k].pid == pid && !strcmp(w->ctr[k].name, name))
			return w->ctr[k].track;
	c = ta_vec_reserve(w->ctr, w->nctr + 1, &w->ctr_cap, sizeof(*c), 8);
	if (!c)
		return 0;
	w->ctr = c;
	c += w->nctr;
	c->pid = pid;
	c->name = strdup(name);
	if (!c->name)
		return 0;
	c->track = ++w->next_track;
	w->nctr++;
	return c->track;
}

static int frame_mark(struct rw *w, const struct ta_tlapi *a)
{
	struct rset *set = NULL;
	struct rmark *m;

	for (size_t k = 0; k < w->nsets; k++)
		if (w->sets[k].pid == a->t->pid && !strcmp(w->sets[k].name, a->e->name)) {
			set = &w->sets[k];
			break;
		}
	if (!set) {
		struct rset *sets =
		    ta_vec_reserve(w->sets, w->nsets + 1, &w->sets_cap, sizeof(*sets), 8);
		char *name = strdup(a->e->name);

		if (sets)
			w->sets = sets;
		if (!sets || !name) {
			free(name);
			return -1;
		}
		set = &w->sets[w->nsets++];
		memset(set, 0, sizeof(*set));
		set->pid = a->t->pid;
		set->name = name;
	}
	m = ta_vec_reserve(set->marks, set->n + 1, &set->cap, sizeof(*m), 64);
	if (!m)
		return -1;
	set->marks = m;
	m[set->n++] = (struct rmark){a->ns, a->ticks, a->t->index};
	return 0;
}

static void api(void *ctx, const struct ta_tlapi *a)
{
	struct rw *w = ctx;
	const struct ta_apiev *ev = a->e;
	char name[300];
	int64_t track;

	switch (ev->kind) {
	case TA_EXT_MESSAGE:
		instant(w, a, ev->text, a->channel, "message");
		break;
	case TA_EXT_INSTANT:
		instant(w, a, ev->name, a->channel, "instant");
		break;
	case TA_EXT_CHANNEL:
		snprintf(name, 128, "channel %s %s", a->channel, ev->on ? "on" : "off");
		instant(w, a, name, NULL, "channel");
		break;
	case TA_EXT_ZONE_UNMATCHED:
		instant(w, a, "zone end without a zone", NULL, "zone_end");
		break;
	case TA_EXT_COUNTER:
		/* As the exports: a NaN or an infinity is no value to sum. */
		if (ev->is_double && !isfinite(ev->d))
			break;
		if (!(track = counter_track(w, a->t->pid, ev->name))) {
			w->nomem = 1;
			break;
		}
		set_i(w, 0, ++w->next_counter);
		set_i(w, 1, w->tl.start_ns + a->ns);
		set_i(w, 2, track);
		set_d(w, 3, ev->d);
		set_i(w, 4, ta_pid_os(w->tl.v.s, a->t->pid));
		put(w, TA_ROWS_COUNTER);
		break;
	case TA_EXT_FRAME:
		if (frame_mark(w, a) < 0)
			w->nomem = 1;
		break;
	case TA_EXT_ZONE_TEXT:
	case TA_EXT_ZONE_VALUE:
		if (a->zone_depth >= 0 && ta_zone_args_add(&w->zones, a, strdup) < 0)
			w->nomem = 1;
		break;
	}
}

/* ---- after the walk ------------------------------------------------------------------- */

/* The upid of process key pid (its index + 1), or 0. */
static int64_t upid_of(const struct ta_session *s, uint32_t key)
{
	for (size_t i = 0; i < s->nprocs; i++)
		if (s->procs[i]->pid == key)
			return (int64_t)i + 1;
	return 0;
}

/* The command line, its words joined by spaces; NULL without one. */
static char *cmdline(const struct ta_process *p)
{
	size_t len = 0;
	char *s;

	if (!p->argc)
		return NULL;
	for (size_t i = 0; i < p->argc; i++)
		len += strlen(p->argv[i]) + 1;
	if (!(s = malloc(len)))
		return NULL;
	s[0] = 0;
	for (size_t i = 0; i < p->argc; i++)
		strcat(strcat(s, i ? " " : ""), p->argv[i]);
	return s;
}

static void processes(struct rw *w)
{
	const struct ta_session *s = w->tl.v.s;

	for (size_t i = 0; i < s->nprocs; i++) {
		const struct ta_process *p = s->procs[i];
		int64_t parent = 0;
		char *cl = cmdline(p);

		/* The latest process before it of its parent's pid. */
		for (size_t k = i; k-- > 0;)
			if (p->ppid && s->procs[k]->os_pid == p->ppid) {
				parent = (int64_t)k + 1;
				break;
			}
		set_i(w, 0, (int64_t)i + 1);
		set_i(w, 1, p->os_pid);
		set_s(w, 2, p->exe ? ta_path_base(p->exe) : NULL);
		if (p->has_info && p->start_ticks)
			set_i(w, 3, ta_process_ticks_ns(p, p->start_ticks));
		else
			set_null(w, 3);
		if (p->has_end)
			set_i(w, 4, ta_process_ticks_ns(p, p->end_ticks));
		else
			set_null(w, 4);
		set_id(w, 5, parent);
		set_s(w, 6, cl);
		if (p->argc && !cl)
			w->nomem = 1;
		put(w, TA_ROWS_PROCESS);
		free(cl);
	}
}

static void threads(struct rw *w)
{
	const struct ta_session *s = w->tl.v.s;

	for (size_t i = 0; i < s->nthreads; i++) {
		const struct ta_sess_thread *t = s->threads[i];
		const struct ta_process *p = ta_session_process(s, t->pid);
		int64_t upid = upid_of(s, t->pid);

		set_i(w, 0, (int64_t)t->index + 1);
		set_i(w, 1, (int64_t)t->tid);
		set_s(w, 2, t->name);
		set_id(w, 3, upid);
		if (p && t->has_start)
			set_i(w, 4, ta_process_ticks_ns(p, t->start_ticks));
		else
			set_null(w, 4);
		if (p && t->has_end)
			set_i(w, 5, ta_process_ticks_ns(p, t->end_ticks));
		else
			set_null(w, 5);
		set_i(w, 6, p && t->tid == p->os_pid);
		put(w, TA_ROWS_THREAD);
	}
}

static void tracks(struct rw *w)
{
	const struct ta_session *s = w->tl.v.s;

	for (size_t i = 0; i < w->nth && i < s->nthreads; i++) {
		const struct ta_sess_thread *t = s->threads[i];

		if (!w->th[i].track)
			continue;
		set_i(w, 0, w->th[i].track);
		set_s(w, 1, t->name);
		set_s(w, 2, "thread");
		put(w, TA_ROWS_TRACK);
		set_i(w, 0, w->th[i].track);
		set_s(w, 1, t->name);
		set_i(w, 2, (int64_t)t->index + 1);
		put(w, TA_ROWS_THREAD_TRACK);
	}
	for (size_t k = 0; k < w->nctr; k++) {
		set_i(w, 0, w->ctr[k].track);
		set_s(w, 1, w->ctr[k].name);
		set_s(w, 2, "counter");
		put(w, TA_ROWS_TRACK);
		set_i(w, 0, w->ctr[k].track);
		set_s(w, 1, w->ctr[k].name);
		set_id(w, 2, upid_of(s, w->ctr[k].pid));
		put(w, TA_ROWS_COUNTER_TRACK);
	}
}

static int mark_cmp(const void *a, const void *b)
{
	const struct rmark *x = a, *y = b;

	return x->ns < y->ns ? -1 : x->ns > y->ns;
}

/* Frame i of a set runs from mark i - 1 to mark i in time order, frame 0
 * from the first event of the thread that made the first mark (as
 * `traceagent frames` cuts them); a keep dump's are those inside one of
 * its windows, numbered among them (the time between two windows was let
 * go: a frame across it never was). */
static void frames(struct rw *w)
{
	int64_t id = 0;

	for (size_t k = 0; k < w->nsets; k++) {
		struct rset *set = &w->sets[k];
		const struct ta_process *p = ta_session_process(w->tl.v.s, set->pid);
		const struct ta_keep_info *keep = p ? p->keep : NULL;
		int64_t from, first, number = 0;
		uint64_t from_ticks;

		qsort(set->marks, set->n, sizeof(*set->marks), mark_cmp);
		from = set->marks[0].ns;
		if (ta_timeline_first_ns(&w->tl, set->marks[0].thread, &first) == 0 && first < from)
			from = first;
		if (ta_timeline_first_ticks(&w->tl, set->marks[0].thread, &from_ticks) < 0 ||
		    from_ticks > set->marks[0].ticks)
			from_ticks = set->marks[0].ticks;
		for (size_t i = 0; i < set->n; i++) {
			if (!keep || ta_keep_kept(keep, from_ticks, set->marks[i].ticks)) {
				set_i(w, 0, ++id);
				set_i(w, 1, w->tl.start_ns + from);
				set_i(w, 2, set->marks[i].ns - from);
				set_s(w, 3, set->name);
				set_i(w, 4, number++);
				set_id(w, 5, upid_of(w->tl.v.s, set->pid));
				set_i(w, 6, (int64_t)set->marks[i].thread + 1);
				put(w, TA_ROWS_FRAME);
			}
			from = set->marks[i].ns;
			from_ticks = set->marks[i].ticks;
		}
	}
}

static int keep_fn(void *ctx, const struct ta_fstat *f, const struct ta_fn *id)
{
	const struct rw *w = ctx;

	(void)f;
	return !w->o->function || ta_fn_glob(w->o->function, id);
}

/*
 * report's table of functions, from a read of its own into report's
 * profile: quiet, the timeline's read said what is wrong with the dump.
 */
static void function_stats(struct rw *w, const char *path)
{
	struct ta_profile prof;
	struct ta_visitor vis;
	struct ta_view v;
	struct ta_prof_table t = {0};
	struct ta_fn *ids = NULL;

	ta_profile_init(&prof);
	prof.hist = 1;
	ta_profile_visitor(&prof, &vis);
	memset(&v, 0, sizeof(v));
	v.path = path;
	v.s = ta_session_new(&vis);
	v.res = ta_resolver_new();
	ta_view_naming(&v);
	if (!v.s || !v.res)
		goto nomem;
	ta_session_stored_names(v.s, v.res);
	/* What could not be read, the timeline's read said. */
	(void)ta_session_read(v.s, path, NULL);
	ta_session_finish(v.s);
	if (ta_prof_table_build(&t, &v, &prof, &ids, keep_fn, w) < 0)
		goto nomem;
	for (size_t i = 0; i < t.n; i++) {
		const struct ta_prof_row *r = &t.rows[i];
		int timed = ta_prof_row_timed(r) != 0;
		const uint64_t tv[] = {r->min, r->max, ta_prof_row_avg(r), r->p50, r->p90, r->p99};

		set_s(w, 0, r->id.name);
		set_s(w, 1, r->id.module);
		set_i(w, 2, (int64_t)r->id.offset);
		set_i(w, 3, (int64_t)r->calls);
		set_i(w, 4, (int64_t)r->total);
		set_i(w, 5, (int64_t)r->self);
		for (unsigned k = 0; k < N(tv); k++) {
			if (timed)
				set_i(w, 6 + k, (int64_t)tv[k]);
			else
				set_null(w, 6 + k);
		}
		set_i(w, 12, (int64_t)r->open);
		set_i(w, 13, (int64_t)r->partial);
		set_i(w, 14, (int64_t)r->unwound);
		set_i(w, 15, (int64_t)r->shorts);
		put(w, TA_ROWS_FUNCTION_STATS);
	}
	goto out;
nomem:
	w->nomem = 1;
out:
	ta_prof_table_free(&t);
	free(ids);
	ta_view_close(&v);
	ta_profile_free(&prof);
}

/* ---- the walk --------------------------------------------------------------------------- */

static void rw_free(struct rw *w)
{
	for (size_t i = 0; i < w->nth; i++)
		free(w->th[i].ids);
	free(w->th);
	for (size_t k = 0; k < w->nctr; k++)
		free(w->ctr[k].name);
	free(w->ctr);
	for (size_t k = 0; k < w->nsets; k++) {
		free(w->sets[k].name);
		free(w->sets[k].marks);
	}
	free(w->sets);
	ta_zone_args_free(&w->zones);
	ta_tlopts_free(&w->tlo);
}

int ta_rows_walk(const char *path, const struct ta_rows_opts *o, const struct ta_rows_sink *sink,
		 struct ta_rows_counts *counts)
{
	static const struct ta_rows_opts none;
	struct rw *w = calloc(1, sizeof(*w));
	struct stat st;
	int status;

	if (!w) {
		fprintf(stderr, "traceagent: out of memory\n");
		return 1;
	}
	w->o = o ? o : &none;
	w->sink = sink;
	w->tlo.to = UINT64_MAX;
	w->tlo.function = w->o->function;
	w->tlo.min_duration = w->o->min_duration_ns;
	if (w->o->function)
		w->tlo.given |= TA_TLOPT_FUNCTION;
	if (w->o->min_duration_ns)
		w->tlo.given |= TA_TLOPT_MINDUR;
	if (stat(path, &st) == 0)
		w->file_size = (uint64_t)st.st_size;
	for (unsigned k = 0; k < TA_ROWS_NTABLES && !w->stop; k++)
		if (sink->table(sink->ctx, &ta_rows_tables[k]))
			w->stop = 1;
	if (w->stop) {
		status = 1;
		goto out;
	}
	if (ta_timeline_run_api(&w->tl, path, &w->tlo, emit, api, w) < 0) {
		status = w->tl.v.status;
		ta_timeline_close(&w->tl);
		goto out;
	}
	status = w->tl.v.status;
	processes(w);
	threads(w);
	tracks(w);
	frames(w);
	function_stats(w, path);
	set_i(w, 0, w->tl.start_ns);
	set_i(w, 1, w->tl.start_ns + (int64_t)ta_session_duration_ns(w->tl.v.s));
	put(w, TA_ROWS_TRACE_BOUNDS);
	progress(w, 1);
	ta_timeline_warnings(&w->tl);
	if (w->nomem)
		fprintf(stderr, "traceagent: %s: out of memory: rows are missing\n", path);
	if (w->nomem || w->stop)
		status = status > 1 ? status : 1;
	ta_timeline_close(&w->tl);
out:
	if (counts)
		*counts = w->counts;
	rw_free(w);
	free(w);
	return status;
}
