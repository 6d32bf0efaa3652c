/* SPDX-License-Identifier: MIT */
/*
 * timeline.c - calls one at a time for replay and the Chrome export; see
 * timeline.h.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "argsdwarf.h"
#include "argsview.h"
#include "cmdopts.h"
#include "dumpfile.h"
#include "grow.h"
#include "timeline.h"

struct ta_tlthread {
	const struct ta_process *p; /* the metadata pass's process, or NULL */
	int ready;		    /* the fields below are set */
	int skip;		    /* left out by --tid */
	int inside;		    /* a --function match is on the stack */
	uint32_t base;		    /* depth of the first shown level */
	uint32_t opened;	    /* frames base..opened-1 had their first line */
	/* The filters in the process's ticks, so that calls are judged
	 * without converting them: shown when enter < to_ticks and exit >=
	 * from_ticks.  --min-duration judges the duration shown (shown_dur),
	 * which comes from two rounded ends and so may be 1 ns off the
	 * duration's own rounding: min_ticks only lets through the calls that
	 * can reach it, the few near the limit are converted. */
	uint64_t min_ticks, from_ticks, to_ticks;
	/* The thread's first event seen (the earliest enter of the calls
	 * it exited or had open at an API event, or an API event), whatever
	 * the filters: where its first frame begins (ta_timeline_first_ns). */
	int has_first;
	uint64_t first;
	/* The recorded arguments of its open calls (argsview.h). */
	struct ta_argstack args;
	/* The lock of the library call on top (TA_EXT_LOCK, written just
	 * before its exit): that call's depth and enter, has_lock 0 when
	 * none waits for its exit. */
	int has_lock;
	uint32_t lock_depth;
	uint64_t lock_enter, lock;
};

/* ---- options ------------------------------------------------------------------ */

int ta_tlopts_take(struct ta_tlopts *o, const struct ta_opts *p)
{
	const char *val = p->val;

	switch (p->opt->id) {
	case TA_OPT_TID:
		if (ta_tidset_parse(&o->tids, val) < 0)
			return ta_opts_bad(p, "is not a list of thread ids");
		o->given |= TA_TLOPT_TID;
		break;
	case TA_OPT_TIME_RANGE:
		if (ta_parse_time_range(val, &o->from, &o->to) < 0)
			return ta_opts_bad(p, "is not START-END (times such as 10ms, 1.5s, 200us; "
					      "either side may be empty)");
		o->given |= TA_TLOPT_RANGE;
		break;
	case TA_OPT_MIN_DURATION:
		if (ta_parse_time(val, &o->min_duration) < 0)
			return ta_opts_bad(p, "is not a time (such as 10us)");
		o->given |= TA_TLOPT_MINDUR;
		break;
	case TA_OPT_DEPTH: {
		char *end;
		unsigned long n = strtoul(val, &end, 10);

		if (*val < '1' || *val > '9' || *end || n > UINT32_MAX)
			return ta_opts_bad(p, "is not a positive number");
		o->max_depth = (uint32_t)n;
		o->given |= TA_TLOPT_DEPTH;
		break;
	}
	case TA_OPT_FUNCTION:
		/* report's and diff's --function take an empty glob; these
		 * commands always refused it. */
		if (!*val) {
			fprintf(stderr, "traceagent %s: --function: empty pattern\n", p->cmd);
			return 2;
		}
		o->function = val;
		o->given |= TA_TLOPT_FUNCTION;
		break;
	}
	return 0;
}

void ta_tlopts_free(struct ta_tlopts *o)
{
	ta_tidset_free(&o->tids);
}

/* ---- the metadata pass ------------------------------------------------------------ */

/*
 * Reads every chunk but the events into a session of its own, and finishes
 * it: clocks, modules and threads as the whole dump states them.  Quiet:
 * the real pass reports what is wrong with the file.
 */
static int meta_read(struct ta_view *m, const char *path)
{
	struct ta_dumpfile *d;
	struct ta_chunk c;

	memset(m, 0, sizeof(*m));
	m->path = path;
	m->s = ta_session_new(NULL);
	m->res = ta_resolver_new();
	ta_view_naming(m);
	if (!m->s || !m->res)
		return -1;
	ta_session_stored_names(m->s, m->res);
	if (ta_dumpfile_open(path, &d) == 0) {
		for (;;) {
			int rc = ta_dumpfile_next(d, &c);

			if (rc == 0 || rc == -TA_E_IO || rc == -TA_E_NOMEM)
				break;
			if (rc < 0 || c.h.type == TA_CHUNK_EVENTS)
				continue;
			if (ta_session_chunk(m->s, &c) < 0)
				break;
		}
		ta_dumpfile_close(d);
	}
	ta_session_finish(m->s);
	return 0;
}

/* ---- the walk ----------------------------------------------------------------------- */

/* Time from the dump's start, wide enough for any ticks. */
static __int128 rel_ns(const struct ta_timeline *tl, const struct ta_process *p, uint64_t ticks)
{
	return p ? (__int128)ta_process_ticks_ns(p, ticks) - tl->start_ns : (__int128)ticks;
}

int64_t ta_timeline_rel(const struct ta_timeline *tl, const struct ta_process *p, uint64_t ticks)
{
	__int128 t = rel_ns(tl, p, ticks);

	/* Only a damaged clock gets near the limits. */
	return t > INT64_MAX ? INT64_MAX : t < -INT64_MAX ? -INT64_MAX : (int64_t)t;
}

/*
 * The smallest ticks value whose time (a duration when dur, else a time
 * from the dump's start) reaches v, or UINT64_MAX when none does.  Both
 * conversions never decrease with the ticks, so a binary search finds it,
 * once per thread.
 */
static uint64_t ticks_reaching(const struct ta_timeline *tl, const struct ta_process *p, int dur,
			       __int128 v)
{
	uint64_t lo = 0, hi = UINT64_MAX;

	while (lo < hi) {
		uint64_t mid = lo + (hi - lo) / 2;
		__int128 t =
		    dur ? (__int128)(p ? ta_process_dur_ns(p, mid) : mid) : rel_ns(tl, p, mid);

		if (t >= v)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

static void thread_filters(const struct ta_timeline *tl, struct ta_tlthread *th)
{
	const struct ta_tlopts *o = tl->o;

	/* A shown duration of at least min_duration means an exact one above
	 * min_duration - 1 (each end is rounded by at most half a ns), so a
	 * rounded one of at least min_duration - 1; one more ns of slack for
	 * the long double products. */
	if (!th->p)
		th->min_ticks = o->min_duration; /* ticks are ns */
	else if (o->min_duration > 2)
		th->min_ticks = ticks_reaching(tl, th->p, 1, (__int128)o->min_duration - 2);
	else
		th->min_ticks = 0;
	th->from_ticks = o->from ? ticks_reaching(tl, th->p, 0, o->from) : 0;
	/* The first ticks past the end of the range. */
	th->to_ticks =
	    o->to == UINT64_MAX ? UINT64_MAX : ticks_reaching(tl, th->p, 0, (__int128)o->to + 1);
}

static __attribute__((noinline)) struct ta_tlthread *thread_setup(struct ta_timeline *tl,
								  const struct ta_sess_thread *t)
{
	struct ta_tlthread *th;

	if (t->index >= tl->nth) {
		size_t n = tl->nth;

		th = ta_vec_reserve_max(tl->th, (size_t)t->index + 1, &n, sizeof(*th), 16,
					UINT32_MAX);
		if (!th) {
			tl->nomem = 1;
			return NULL;
		}
		memset(th + tl->nth, 0, (n - tl->nth) * sizeof(*th));
		tl->th = th;
		tl->nth = (uint32_t)n;
	}
	th = &tl->th[t->index];
	if (!th->ready) {
		th->ready = 1;
		th->p = ta_session_process(tl->meta.s, t->pid);
		th->skip = !ta_tidset_has(&tl->o->tids, t->tid);
		thread_filters(tl, th);
	}
	return th;
}

static inline struct ta_tlthread *thread_state(struct ta_timeline *tl,
					       const struct ta_sess_thread *t)
{
	if (t->index < tl->nth && tl->th[t->index].ready)
		return &tl->th[t->index];
	return thread_setup(tl, t);
}

/* The function id of addr, or -1 (without memory: the walk goes on, the
 * command reports it). */
static int64_t fn_id(struct ta_timeline *tl, const struct ta_sess_thread *t, uint64_t addr)
{
	int64_t id = ta_fn_index_id(&tl->fns, t->pid, addr);

	if (id < 0)
		tl->nomem = 1;
	return id;
}

static int fn_matches(struct ta_timeline *tl, int64_t id)
{
	if (id < 0)
		return 0;
	if ((uint64_t)id >= tl->nmatch) {
		size_t n = tl->nmatch;
		uint8_t *m = ta_vec_reserve_max(tl->match, (size_t)id + 1, &n, 1, 256, UINT32_MAX);

		if (!m) {
			tl->nomem = 1;
			return 0;
		}
		memset(m + tl->nmatch, 0, n - tl->nmatch);
		tl->match = m;
		tl->nmatch = (uint32_t)n;
	}
	if (!tl->match[id])
		tl->match[id] = ta_fn_glob(tl->o->function, &tl->fns.fn[id].id) ? 2 : 1;
	return tl->match[id] == 2;
}

static uintptr_t tl_enter(void *ctx, struct ta_sess_thread *t, uint64_t ticks, uint32_t depth,
			  uint64_t addr, unsigned flags)
{
	struct ta_timeline *tl = ctx;
	struct ta_tlthread *th = thread_state(tl, t);

	(void)ticks;
	(void)flags;
	if (!th || th->skip || !tl->o->function || th->inside)
		return 0;
	if (fn_matches(tl, fn_id(tl, t, addr))) {
		th->inside = 1;
		th->base = depth;
		th->opened = depth;
	}
	return 0;
}

/* The arguments recorded for the call at depth that entered at enter, or
 * NULL (valid until the next call). */
static const struct ta_callargs *call_args(struct ta_timeline *tl, struct ta_tlthread *th,
					   const struct ta_sess_thread *t, uint32_t depth,
					   uint64_t enter, uint64_t addr)
{
	struct ta_callargs *ca = tl->ca;
	int64_t id;

	if (!th->args.n)
		return NULL;
	if (!ca && !(ca = tl->ca = malloc(sizeof(*tl->ca)))) {
		tl->nomem = 1;
		return NULL;
	}
	if (!ta_argstack_get(&th->args, depth, enter, ca))
		return NULL;
	/* An enum's value by its name, from the module's DWARF. */
	id = -1;
	for (uint32_t i = 0; i <= ca->nargs; i++) {
		struct ta_argval *a = i < ca->nargs ? &ca->a[i] : &ca->ret;

		if ((i == ca->nargs && !ca->has_ret) || a->fmt != TA_ARGF_ENUM || a->fp)
			continue;
		if (id < 0 && (id = fn_id(tl, t, addr)) < 0)
			break;
		a->name = ta_enum_name(&tl->enums, tl->fns.fn[id].id.module,
				       tl->fns.fn[id].id.offset, a->reg, ta_argval_signed(a));
	}
	return ca;
}

static void emit_open(struct ta_timeline *tl, struct ta_tlthread *th,
		      const struct ta_sess_thread *t, uint32_t depth)
{
	for (uint32_t k = th->opened; k < depth; k++) {
		const struct ta_frame *f = &t->stack[k];
		struct ta_tlcall c;
		int64_t id = fn_id(tl, t, f->addr);

		if (id < 0)
			continue;
		memset(&c, 0, sizeof(c));
		c.kind = TA_TL_ENTER;
		c.lock_id = -1;
		c.t = t;
		c.depth = k - th->base;
		c.fn = (uint32_t)id;
		c.p = th->p;
		c.enter = f->enter;
		c.args = call_args(tl, th, t, k, f->enter, f->addr);
		if (!tl->lazy)
			c.start_ns = ta_timeline_rel(tl, th->p, f->enter);
		tl->emit(tl->ctx, &c);
	}
	th->opened = depth;
}

/*
 * The duration shown for a call, in ns: from both rounded ends, not a
 * duration rounded on its own, so that a child that ends on the same tick
 * as its parent (coarse counters: 16 ns on some Arm boards) does not end a
 * nanosecond after it.  --min-duration judges this value too: a call
 * shown with a duration is kept exactly when that duration reaches the
 * limit.
 */
static uint64_t shown_dur(const struct ta_timeline *tl, const struct ta_tlthread *th,
			  const struct ta_exit_info *x)
{
	if (!th->p)
		return x->duration;
	return (uint64_t)(ta_timeline_rel(tl, th->p, x->exit) -
			  ta_timeline_rel(tl, th->p, x->enter));
}

void ta_tlcall_times(const struct ta_timeline *tl, const struct ta_tlcall *c, int64_t *start_ns,
		     uint64_t *dur_ns)
{
	*start_ns = ta_timeline_rel(tl, c->p, c->enter);
	/* shown_dur's, from the two rounded ends. */
	*dur_ns =
	    c->p ? (uint64_t)(ta_timeline_rel(tl, c->p, c->exit) - *start_ns) : c->exit - c->enter;
}

static void tl_exit(void *ctx, struct ta_sess_thread *t, const struct ta_exit_info *x)
{
	struct ta_timeline *tl = ctx;
	const struct ta_tlopts *o = tl->o;
	struct ta_tlthread *th = thread_state(tl, t);
	struct ta_tlcall c;
	int64_t id;

	if (th && (!th->has_first || x->enter < th->first)) {
		th->first = x->enter;
		th->has_first = 1;
	}
	c.has_lock = 0;
	if (th && th->has_lock && x->depth <= th->lock_depth) {
		c.has_lock = x->depth == th->lock_depth && x->enter == th->lock_enter;
		th->has_lock = 0;
	}
	if (!th || th->skip || (o->function && !th->inside) || x->depth < th->base)
		return;
	if (x->depth < th->opened) {
		/* Its first line went out: a callee was shown, so it is. */
		c.kind = TA_TL_EXIT;
		th->opened = x->depth;
	} else if ((!o->max_depth || x->depth - th->base < o->max_depth) &&
		   x->duration >= th->min_ticks && x->enter < th->to_ticks &&
		   x->exit >= th->from_ticks &&
		   (!o->min_duration || shown_dur(tl, th, x) >= o->min_duration)) {
		emit_open(tl, th, t, x->depth);
		c.kind = TA_TL_CALL;
	} else {
		goto out;
	}
	c.t = t;
	c.depth = x->depth - th->base;
	c.p = th->p;
	c.enter = x->enter;
	c.exit = x->exit;
	if (tl->lazy) {
		c.start_ns = 0;
		c.dur_ns = c.self_ns = 0;
	} else {
		c.start_ns = ta_timeline_rel(tl, th->p, x->enter);
		c.dur_ns = shown_dur(tl, th, x);
		c.self_ns = th->p ? ta_process_dur_ns(th->p, x->self) : x->self;
		if (c.self_ns > c.dur_ns) /* rounded apart: never more than the whole */
			c.self_ns = c.dur_ns;
	}
	c.flags = x->flags;
	c.args = call_args(tl, th, t, x->depth, x->enter, x->addr);
	c.lock = c.has_lock ? th->lock : 0;
	c.lock_id = c.has_lock ? ta_locknames_index(&tl->locks, t->pid, th->lock) : -1;
	c.lock_name = c.lock_id >= 0 ? tl->locks.r[c.lock_id].name : NULL;
	id = fn_id(tl, t, x->addr);
	if (id >= 0) {
		c.fn = (uint32_t)id;
		tl->emit(tl->ctx, &c);
	}
out:
	if (o->function && x->depth == th->base) {
		th->inside = 0;
		th->base = th->opened = 0;
	}
}

static void tl_ext(void *ctx, struct ta_sess_thread *t, uint64_t ticks, uint64_t kind,
		   const uint64_t *values, uint32_t n)
{
	struct ta_timeline *tl = ctx;
	const struct ta_tlopts *o = tl->o;
	struct ta_tlthread *th;
	struct ta_tlapi a;
	struct ta_apiev e;
	char chbuf[32];

	th = thread_state(tl, t);
	/* A call's arguments and return value wait for its lines. */
	if (kind == TA_EXT_ARGS || kind == TA_EXT_RETVAL) {
		if (th && !th->skip && t->depth > 0 &&
		    ta_argstack_put(&th->args, t->depth - 1, t->stack[t->depth - 1].enter, kind,
				    values, n) < 0)
			tl->nomem = 1;
		return;
	}
	/* A lock call's lock waits for its exit: on top of the library
	 * call's zone, as `report --locks` takes it. */
	if (kind == TA_EXT_LOCK) {
		const struct ta_process *p;

		if (th && !th->skip && n >= 1 && t->depth > t->inherited &&
		    (p = ta_session_process(tl->v.s, t->pid)) &&
		    ta_process_libcall(p, t->stack[t->depth - 1].addr)) {
			th->has_lock = 1;
			th->lock_depth = t->depth - 1;
			th->lock_enter = t->stack[t->depth - 1].enter;
			th->lock = values[0];
		}
	}
	if (!tl->api)
		return;
	if (th) {
		/* The bottom call entered on this thread (a forked child's
		 * inherited frames were its parent's). */
		uint64_t first = t->depth > t->inherited ? t->stack[t->inherited].enter : ticks;

		if (ticks < first)
			first = ticks;
		if (!th->has_first || first < th->first) {
			th->first = first;
			th->has_first = 1;
		}
	}
	if (!ta_apiev_kind(kind) || o->min_duration)
		return;
	if (!th || th->skip || (o->function && !th->inside) || t->depth < th->base ||
	    ticks < th->from_ticks || ticks >= th->to_ticks ||
	    (o->max_depth && t->depth - th->base > o->max_depth))
		return;
	/* The metadata pass's process: it knows every site, even one a
	 * SITES chunk describes after a damaged stretch. */
	if (ta_apiev_decode(ta_session_process(tl->meta.s, t->pid), ticks, kind, values, n, &e,
			    tl->text) <= 0)
		return;
	emit_open(tl, th, t, t->depth);
	memset(&a, 0, sizeof(a));
	a.t = t;
	a.depth = t->depth - th->base;
	a.ns = ta_timeline_rel(tl, th->p, ticks);
	a.ticks = ticks;
	a.e = &e;
	a.channel = th->p ? ta_process_channel_name(th->p, e.channel, chbuf) : "user";
	a.zone_depth = -1;
	for (uint32_t k = t->depth; k-- > th->base;) {
		int64_t id = fn_id(tl, t, t->stack[k].addr);

		if (id >= 0 && !strcmp(tl->fns.fn[id].id.module, TA_ZONE_MODULE)) {
			a.zone_depth = k - th->base;
			a.zone_start_ns = ta_timeline_rel(tl, th->p, t->stack[k].enter);
			a.zone_fn = (uint32_t)id;
			break;
		}
	}
	tl->api(tl->ctx, &a);
}

int ta_timeline_first_ns(const struct ta_timeline *tl, uint32_t thread, int64_t *ns)
{
	const struct ta_tlthread *th = thread < tl->nth ? &tl->th[thread] : NULL;

	if (!th || !th->ready || !th->has_first)
		return -1;
	*ns = ta_timeline_rel(tl, th->p, th->first);
	return 0;
}

int ta_timeline_first_ticks(const struct ta_timeline *tl, uint32_t thread, uint64_t *ticks)
{
	const struct ta_tlthread *th = thread < tl->nth ? &tl->th[thread] : NULL;

	if (!th || !th->ready || !th->has_first)
		return -1;
	*ticks = th->first;
	return 0;
}

int ta_timeline_run(struct ta_timeline *tl, const char *path, const struct ta_tlopts *o,
		    void (*emit)(void *ctx, const struct ta_tlcall *c), void *ctx)
{
	return ta_timeline_run_api(tl, path, o, emit, NULL, ctx);
}

int ta_timeline_run_api(struct ta_timeline *tl, const char *path, const struct ta_tlopts *o,
			void (*emit)(void *ctx, const struct ta_tlcall *c),
			void (*api)(void *ctx, const struct ta_tlapi *a), void *ctx)
{
	struct ta_visitor vis;

	struct stat st;

	int lazy = tl->lazy, lock_names = tl->lock_names;

	memset(tl, 0, sizeof(*tl));
	tl->lazy = lazy;
	tl->lock_names = lock_names;
	tl->o = o;
	tl->emit = emit;
	tl->api = api;
	tl->ctx = ctx;
	/* Two passes: a pipe would be empty for the second (report, info and
	 * the views without a timeline read a dump once, and take one). */
	if (stat(path, &st) == 0 &&
	    (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode) || S_ISCHR(st.st_mode))) {
		fprintf(stderr,
			"traceagent: %s: not a file: this view reads the dump twice (report and "
			"info read it from a pipe)\n",
			path);
		tl->v.status = 2;
		return -1;
	}
	if (meta_read(&tl->meta, path) < 0) {
		fprintf(stderr, "traceagent: out of memory\n");
		tl->v.status = 1;
		return -1;
	}
	if (tl->lock_names && ta_locknames_wanted(tl->meta.s) &&
	    ta_locknames_read(&tl->locks, path) < 0) {
		fprintf(stderr, "traceagent: %s: out of memory\n", path);
		tl->v.status = 1;
		return -1;
	}
	tl->start_ns = ta_session_start_ns(tl->meta.s);
	ta_fn_index_init(&tl->fns, &tl->meta);
	memset(&vis, 0, sizeof(vis));
	vis.ctx = tl;
	/* Only --function looks at the enters (a thread's state is made at
	 * its first exit as well). */
	vis.enter = o->function ? tl_enter : NULL;
	vis.exit = tl_exit;
	/* The API's events, and the calls' arguments. */
	vis.ext = tl_ext;
	if (ta_view_open(&tl->v, path, &vis) < 0)
		return -1;
	if (tl->nomem) {
		fprintf(stderr, "traceagent: %s: out of memory\n", path);
		tl->v.status = 1;
	}
	return 0;
}

void ta_timeline_warnings(struct ta_timeline *tl)
{
	/* Names came from the metadata pass's resolver: its failures are the
	 * ones to tell. */
	struct ta_resolver *res = tl->v.res;

	tl->v.res = tl->meta.res;
	ta_view_warnings(&tl->v);
	tl->v.res = res;
	ta_tidset_warn(&tl->o->tids, &tl->v);
}

void ta_timeline_close(struct ta_timeline *tl)
{
	ta_fn_index_free(&tl->fns);
	for (uint32_t i = 0; i < tl->nth; i++)
		ta_argstack_free(&tl->th[i].args);
	free(tl->ca);
	ta_enumcache_free(tl->enums);
	free(tl->th);
	free(tl->match);
	ta_locknames_free(&tl->locks);
	ta_view_close(&tl->v);
	ta_view_close(&tl->meta);
}

/* ---- ordered jobs ------------------------------------------------------------------- */

enum { JOB_FREE, JOB_QUEUED, JOB_RUNNING, JOB_DONE };

#define Q_MU(q)	  (&(q)->mu)
#define Q_WORK(q) (&(q)->work_cv)
#define Q_DONE(q) (&(q)->done_cv)

/* The next queued job, marked running, or -1.  Under the lock. */
static long opool_take(struct ta_opool *q)
{
	while (q->next < q->tail) {
		size_t i = q->next++ % q->n;

		if (q->state[i] == JOB_QUEUED) {
			q->state[i] = JOB_RUNNING;
			return (long)i;
		}
	}
	return -1;
}

/* Works job i outside the lock, and says it is done.  Called locked. */
static void opool_run(struct ta_opool *q, long i)
{
	pthread_mutex_unlock(Q_MU(q));
	q->work(q->ctx, q->jobs[i]);
	pthread_mutex_lock(Q_MU(q));
	q->state[i] = JOB_DONE;
	pthread_cond_broadcast(Q_DONE(q));
}

static void *opool_worker(void *arg)
{
	struct ta_opool *q = arg;

	pthread_mutex_lock(Q_MU(q));
	for (;;) {
		long i = opool_take(q);

		if (i >= 0)
			opool_run(q, i);
		else if (q->quit)
			break;
		else
			pthread_cond_wait(Q_WORK(q), Q_MU(q));
	}
	pthread_mutex_unlock(Q_MU(q));
	return NULL;
}

int ta_opool_init(struct ta_opool *q, unsigned workers, void **jobs, size_t n,
		  void (*work)(void *ctx, void *job), void (*retire)(void *ctx, void *job),
		  void *ctx)
{
	memset(q, 0, sizeof(*q));
	q->jobs = jobs;
	q->n = n;
	q->work = work;
	q->retire = retire;
	q->ctx = ctx;
	q->state = calloc(n, 1);
	q->tids = calloc(workers ? workers : 1, sizeof(*q->tids));
	if (!q->state || !q->tids) {
		free(q->state);
		free(q->tids);
		/* jobs stay the caller's. */
		memset(q, 0, sizeof(*q));
		return -1;
	}
	pthread_mutex_init(Q_MU(q), NULL);
	pthread_cond_init(Q_WORK(q), NULL);
	pthread_cond_init(Q_DONE(q), NULL);
	q->ready = 1;
	for (unsigned i = 0; i < workers; i++) {
		/* Fewer workers only make it slower. */
		if (pthread_create(&q->tids[i], NULL, opool_worker, q) != 0)
			break;
		q->nworkers++;
	}
	return 0;
}

void *ta_opool_current(const struct ta_opool *q)
{
	return q->jobs[q->tail % q->n];
}

/* Retires the oldest job submitted, working on it (or on a later one
 * nobody took) while it is not done. */
static void opool_retire(struct ta_opool *q)
{
	size_t i = q->head % q->n;

	pthread_mutex_lock(Q_MU(q));
	while (q->state[i] != JOB_DONE) {
		long mine = opool_take(q);

		if (mine >= 0)
			opool_run(q, mine);
		else
			pthread_cond_wait(Q_DONE(q), Q_MU(q));
	}
	q->state[i] = JOB_FREE;
	pthread_mutex_unlock(Q_MU(q));
	q->retire(q->ctx, q->jobs[i]);
	q->head++;
}

void *ta_opool_submit(struct ta_opool *q)
{
	size_t i = q->tail % q->n;

	pthread_mutex_lock(Q_MU(q));
	q->state[i] = JOB_QUEUED;
	q->tail++;
	pthread_cond_signal(Q_WORK(q));
	pthread_mutex_unlock(Q_MU(q));
	/* Without workers, or with the ring full, the oldest goes out. */
	while (q->tail - q->head >= (q->nworkers ? q->n : 1))
		opool_retire(q);
	return ta_opool_current(q);
}

void ta_opool_drain(struct ta_opool *q)
{
	while (q->head < q->tail)
		opool_retire(q);
}

void ta_opool_free(struct ta_opool *q)
{
	if (!q->ready)
		return;
	pthread_mutex_lock(Q_MU(q));
	q->quit = 1;
	q->next = q->tail;
	pthread_cond_broadcast(Q_WORK(q));
	pthread_mutex_unlock(Q_MU(q));
	for (unsigned i = 0; i < q->nworkers; i++)
		pthread_join(q->tids[i], NULL);
	pthread_mutex_destroy(Q_MU(q));
	pthread_cond_destroy(Q_WORK(q));
	pthread_cond_destroy(Q_DONE(q));
	free(q->state);
	free(q->tids);
	q->ready = 0;
}

/* ---- zone args ---- */

int ta_zone_args_add(struct ta_zone_args *za, const struct ta_tlapi *a,
		     char *(*conv)(const char *text))
{
	struct ta_zone_arg *z = NULL;

	for (size_t k = 0; k < za->n; k++)
		if (za->v[k].t == a->t && za->v[k].depth == (uint32_t)a->zone_depth &&
		    za->v[k].start_ns == a->zone_start_ns)
			z = &za->v[k];
	if (!z) {
		z = ta_vec_reserve(za->v, za->n + 1, &za->cap, sizeof(*z), 8);
		if (!z)
			return -1;
		za->v = z;
		z = &za->v[za->n++];
		memset(z, 0, sizeof(*z));
		z->t = a->t;
		z->depth = (uint32_t)a->zone_depth;
		z->start_ns = a->zone_start_ns;
	}
	if (a->e->kind == TA_EXT_ZONE_VALUE) {
		z->has_value = 1;
		z->value = a->e->value;
		return 0;
	}
	free(z->text);
	z->text = conv(a->e->text);
	return z->text ? 0 : -1;
}

int ta_zone_args_take(struct ta_zone_args *za, const struct ta_sess_thread *t, uint32_t depth,
		      int64_t start_ns, struct ta_zone_arg *out)
{
	for (size_t k = 0; k < za->n; k++) {
		const struct ta_zone_arg *z = &za->v[k];

		if (z->t != t || z->depth != depth || z->start_ns != start_ns)
			continue;
		*out = *z;
		za->v[k] = za->v[--za->n];
		return 1;
	}
	return 0;
}

void ta_zone_args_free(struct ta_zone_args *za)
{
	for (size_t i = 0; i < za->n; i++)
		free(za->v[i].text);
	free(za->v);
	memset(za, 0, sizeof(*za));
}
