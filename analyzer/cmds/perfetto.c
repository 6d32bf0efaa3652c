/* SPDX-License-Identifier: MIT */
/*
 * perfetto.c - `traceagent export --format=perfetto`: the calls of a dump as
 * Perfetto's native trace (a perfetto.protos.Trace of TracePackets), which
 * Perfetto UI and trace_processor read without the JSON importer's limits.
 *
 * Each thread is a packet sequence of its own, and its calls TrackEvent
 * slices (a BEGIN and an END) on its thread track.  What makes the format
 * small is the sequence's incremental state, set up by the sequence's first
 * packet (SEQ_INCREMENTAL_STATE_CLEARED):
 *  - defaults: the thread's track, and timestamps on clock 64, a clock of
 *    the sequence declared incremental by a ClockSnapshot, so a timestamp
 *    is the delta from the packet before (a byte or two, not eight);
 *  - interned names: a function's name, category and module (a debug
 *    annotation "module", whose name and value are interned too) go out
 *    once per sequence (InternedData, in the packet that first uses them),
 *    events carry their ids.
 * The packets do not set SEQ_NEEDS_INCREMENTAL_STATE: every sequence is
 * whole from its first packet, so there is no lost state for a reader to
 * skip packets over.  A call's two packets are about 31 bytes; the
 * timestamp is each packet's last field, so that the rest repeats byte for
 * byte from call to call, and pkdeflate.c deflates that as one match and
 * the timestamp as literals: about 8 bytes a call in the file (Chrome
 * JSON: about 110).
 *
 * The timeline (timeline.c) hands each thread's calls in time order, so the
 * deltas are never negative; an event that would go back in time (a
 * damaged dump) goes out with an absolute time on CLOCK_MONOTONIC instead.
 * The frames go out after the run, each set on a sequence of its own in
 * time order (a frame's slice begins before its mark).  Track descriptors
 * (processes, threads, counters, frame sets) come last, when the threads'
 * names are known: trace processor reads them before it sorts the events.
 * Timestamps are ns on the dump's clock (CLOCK_MONOTONIC), declared the
 * trace's clock by the first packet.
 *
 * Memory: per thread, a bit per function, category and module whose name
 * went out on its sequence; the counters, zones still open, and every frame
 * mark (16 bytes). *
 * This file is the reader's side: records settled from the timeline, names
 * interned, the trace-wide packets, jobs written in order; a job's packets
 * are encoded and deflated by perfetto_pack.c (perfetto_int.h).
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "perfetto_int.h"

/* A bit set by index: 1 when bit i was already set; -1 without memory. */
static int bit_test_set(uint8_t **bits, uint32_t *n, uint32_t i)
{
	if (i >= *n) {
		/* *n counts bits in a uint32_t: at most 2^31 of them. */
		size_t bytes = *n / 8;
		uint8_t *b = ta_vec_reserve_max(*bits, i / 8 + 1, &bytes, 1, 32, (size_t)1 << 28);

		if (!b)
			return -1;
		memset(b + *n / 8, 0, bytes - *n / 8);
		*bits = b;
		*n = (uint32_t)(bytes * 8);
	}
	if ((*bits)[i / 8] & (1u << (i % 8)))
		return 1;
	(*bits)[i / 8] |= (uint8_t)(1u << (i % 8));
	return 0;
}

/* ---- sequences ------------------------------------------------------------------ */

static struct pf_thread *thread_of(struct pf *x, const struct ta_sess_thread *t)
{
	if (t->index >= x->nth) {
		size_t n = x->nth;
		struct pf_thread *th = ta_vec_reserve_max(x->th, (size_t)t->index + 1, &n,
							  sizeof(*th), 16, UINT32_MAX);

		if (!th) {
			x->nomem = 1;
			return NULL;
		}
		memset(th + x->nth, 0, (n - x->nth) * sizeof(*th));
		x->th = th;
		x->nth = (uint32_t)n;
	}
	return &x->th[t->index];
}

/* ---- in the reader ---------------------------------------------------------------- */

/* Writes a job's bundles, in order. */
static void job_retire(void *ctx, void *job)
{
	struct pf *x = ctx;
	struct zjob *j = job;

	if (j->fail)
		x->nomem = 1;
	else
		fwrite(j->z.out, 1, j->z.len, x->f);
	j->nr = 0;
	j->len = 0;
	j->nslots = 0;
	j->z.len = 0;
	if (j->z.cap > (16u << 20))
		ta_pkz_free(&j->z);
}

static void job_submit(struct pf *x)
{
	x->job->no = x->submitted++;
	x->job = ta_opool_submit(&x->q);
}

/* Hands the packets the reader encoded in x->pb (when there are enough of
 * them, or force) to a job that deflates them: its buffer and the
 * encoder's are swapped.  The records filled so far go first. */
static void flush(struct pf *x, int force)
{
	struct zjob *j;
	uint8_t *buf;
	size_t cap;

	if (ta_pb_failed(&x->pb) || !x->pb.len || (!force && x->pb.len < BUNDLE_BYTES))
		return;
	if (x->job->nr)
		job_submit(x);
	j = x->job;
	buf = j->in;
	cap = j->cap;
	j->in = x->pb.buf;
	j->cap = x->pb.cap;
	j->len = x->pb.len;
	x->pb.buf = buf;
	x->pb.cap = cap;
	ta_pb_reset(&x->pb);
	job_submit(x);
}

/* A new record of thread t in the current job: its slot and sequence set
 * (NULL without memory). */
static struct prec *rec(struct pf *x, const struct ta_sess_thread *t, unsigned kind)
{
	struct pf_thread *pt = thread_of(x, t);
	struct zjob *j = x->job;
	struct prec *r;

	/* The job's number will be the next submitted. */
	uint64_t stamp = x->submitted + 1;

	if (!pt)
		return NULL;
	if (pt->stamp != stamp) {
		if (j->nslots == j->slots_cap) {
			/* Three arrays of one capacity: slots_cap set once all have it. */
			size_t n = j->slots_cap;
			uint32_t *ti = ta_vec_reserve(j->tidx, j->nslots + 1, &n, sizeof(*ti), 16);
			int64_t *a = NULL, *b = NULL;

			if (ti) {
				j->tidx = ti;
				n = j->slots_cap;
				a = ta_vec_reserve(j->tmax, j->nslots + 1, &n, sizeof(*a), 16);
			}
			if (a) {
				j->tmax = a;
				n = j->slots_cap;
				b = ta_vec_reserve(j->tlast, j->nslots + 1, &n, sizeof(*b), 16);
			}
			if (b)
				j->tlast = b;
			if (!ti || !a || !b) {
				x->nomem = 1;
				return NULL;
			}
			j->slots_cap = n;
		}
		pt->stamp = stamp;
		pt->slot = (uint32_t)j->nslots;
		j->tidx[j->nslots++] = t->index;
	}
	r = &j->r[j->nr];
	/* What every kind reads; the rest is the caller's. */
	r->newseq = r->open = r->partial = r->cut = r->has_value = r->has_lock = 0;
	r->text = r->chan = r->cargs = NULL;
	r->iname = r->icat = r->imod = NULL;
	r->cat = r->mod = 0;
	r->ns = 0;
	r->kind = (unsigned char)kind;
	r->slot = pt->slot;
	r->tindex = t->index;
	if (!pt->seq) {
		pt->seq = x->next_seq++;
		r->newseq = 1;
	}
	r->seq = pt->seq;
	return r;
}

/* The record goes in: a full job is handed over. */
static void rec_done(struct pf *x)
{
	if (++x->job->nr == PJOB_RECS)
		job_submit(x);
}

/* ---- names ------------------------------------------------------------------------ */

const char *ta_export_category(const char *module, char *buf, size_t n)
{
	if (!strcmp(module, TA_LIBCALL_MODULE))
		return "libcall";
	if (!strcmp(module, TA_ZONE_MODULE))
		return "zone";
	if (!strcmp(module, TA_AGENT_MODULE))
		return "traceagent";
	snprintf(buf, n, "function,%s", ta_path_base(module));
	return buf;
}

/* The category iid of function fn (interned trace-wide), 0 without memory. */
static uint32_t category_of(struct pf *x, uint32_t fn)
{
	char buf[300];
	const char *name;
	uint32_t k;

	if (fn >= x->ncat) {
		size_t n = x->ncat;
		uint32_t *c =
		    ta_vec_reserve_max(x->cat, (size_t)fn + 1, &n, sizeof(*c), 256, UINT32_MAX);

		if (!c)
			return 0;
		memset(c + x->ncat, 0, (n - x->ncat) * sizeof(*c));
		x->cat = c;
		x->ncat = (uint32_t)n;
	}
	if (x->cat[fn])
		return x->cat[fn];
	name = ta_export_category(x->tl.fns.fn[fn].id.module, buf, sizeof(buf));
	for (k = 0; k < x->ncats && strcmp(x->cats[k], name); k++)
		;
	if (k == x->ncats) {
		char **c =
		    ta_vec_reserve(x->cats, (size_t)x->ncats + 1, &x->cats_cap, sizeof(*c), 16);

		if (!c)
			return 0;
		x->cats = c;
		c[k] = strdup(name);
		if (!c[k])
			return 0;
		x->ncats++;
	}
	return x->cat[fn] = k + 1;
}

/* The iid of function fn's module (its base name, interned trace-wide as
 * an annotation's value), 0 without memory. */
static uint32_t module_of(struct pf *x, uint32_t fn)
{
	const char *name;
	uint32_t k;

	if (fn >= x->nmod) {
		size_t n = x->nmod;
		uint32_t *m =
		    ta_vec_reserve_max(x->mod, (size_t)fn + 1, &n, sizeof(*m), 256, UINT32_MAX);

		if (!m)
			return 0;
		memset(m + x->nmod, 0, (n - x->nmod) * sizeof(*m));
		x->mod = m;
		x->nmod = (uint32_t)n;
	}
	if (x->mod[fn])
		return x->mod[fn];
	name = ta_path_base(x->tl.fns.fn[fn].id.module);
	for (k = 0; k < x->nmods && strcmp(x->mods[k], name); k++)
		;
	if (k == x->nmods) {
		const char **m =
		    ta_vec_reserve(x->mods, (size_t)x->nmods + 1, &x->mods_cap, sizeof(*m), 16);

		if (!m)
			return 0;
		x->mods = m;
		m[k] = name;
		x->nmods++;
	}
	return x->mod[fn] = k + 1;
}

/* What a slice's BEGIN interns on its sequence: its name, category and
 * module, each the first time. */
static void intern(struct pf *x, const struct ta_sess_thread *t, struct prec *r, uint32_t fn)
{
	struct pf_thread *pt = thread_of(x, t);
	uint32_t cat, mod;
	int had_name, had_cat, had_mod;

	/* Most calls: a name the sequence has, whose ids are known. */
	if (pt && fn < pt->nnamed && (pt->named[fn / 8] & (1u << (fn % 8)))) {
		r->cat = x->cat[fn];
		r->mod = x->mod[fn];
		return;
	}
	cat = category_of(x, fn);
	mod = module_of(x, fn);
	if (!cat || !mod || !pt) {
		x->nomem = 1;
		return;
	}
	r->cat = cat;
	r->mod = mod;
	had_name = bit_test_set(&pt->named, &pt->nnamed, fn);
	/* Each name brings its category and module: known when the name is. */
	if (had_name > 0)
		return;
	had_cat = bit_test_set(&pt->catted, &pt->ncatted, cat);
	had_mod = bit_test_set(&pt->modded, &pt->nmodded, mod);
	if (had_name < 0 || had_cat < 0 || had_mod < 0) {
		x->nomem = 1;
		return;
	}
	if (!had_cat)
		r->icat = x->cats[cat - 1];
	if (!had_mod)
		r->imod = x->mods[mod - 1];
	r->iname = x->tl.fns.fn[fn].id.name;
}

/* ---- calls ------------------------------------------------------------------------ */

/*
 * Whether a call's BEGIN is held back (1) or a held one comes out with its
 * END (2): a call begun while its thread runs a fiber may belong to the
 * fiber, which only its end tells (apimem.h), so it goes out whole then,
 * on the fiber's track or the thread's: a slice whose packets are after
 * its callees' in the sequence (with an absolute timestamp), as trace
 * processor sorts them.  0 otherwise; -1 without memory.
 */
static int fiber_hold(struct pf *x, const struct ta_tlcall *c)
{
	struct pf_thread *pt = thread_of(x, c->t);
	int set;

	if (!pt)
		return -1;
	if (c->kind == TA_TL_ENTER) {
		if (ta_fibers_owner(&x->fibers, c->t, c->enter) < 0)
			return 0;
		return bit_test_set(&pt->held, &pt->nheld, c->depth) < 0 ? -1 : 1;
	}
	if (c->kind != TA_TL_EXIT || c->depth >= pt->nheld)
		return 0;
	set = (pt->held[c->depth / 8] >> (c->depth % 8)) & 1;
	pt->held[c->depth / 8] &= (uint8_t) ~(1u << (c->depth % 8));
	return set ? 2 : 0;
}

static void emit(void *ctx, const struct ta_tlcall *c)
{
	struct pf *x = ctx;
	struct prec *r;
	unsigned kind = c->kind == TA_TL_ENTER	? PR_BEGIN
			: c->kind == TA_TL_EXIT ? PR_END
						: PR_CALL;
	int hold = x->fibers.names.n ? fiber_hold(x, c) : 0;
	long fiber;

	if (hold < 0) {
		x->nomem = 1;
		return;
	}
	if (hold == 1)
		return;
	if (hold == 2)
		kind = PR_CALL;
	fiber = kind == PR_CALL ? ta_fibers_owner(&x->fibers, c->t, c->enter) : -1;
	r = rec(x, c->t, kind);
	if (!r)
		return;
	r->track = (uint64_t)(fiber + 1);
	r->fn = c->fn;
	r->p = c->p;
	r->enter = c->enter;
	r->exit = c->exit;
	if (kind & PR_BEGIN)
		intern(x, c->t, r, c->fn);
	if (kind & PR_END) {
		r->open = !!(c->flags & TA_VISIT_OPEN);
		r->partial = !r->open && (c->flags & TA_VISIT_INCOMPLETE);
		/* Its recorded arguments: debug annotations of its end, which
		 * the slice shows with its own. */
		if (c->args && !(r->cargs = ta_callargs_lines(c->args)))
			x->nomem = 1;
		/* A lock call's lock, and its name. */
		r->has_lock = (unsigned char)c->has_lock;
		r->lock = c->lock;
		r->lock_name = c->lock_name;
		/* A zone's text and value, given while it ran. */
		if (x->zones.n) {
			struct ta_zone_arg z;
			int64_t start;
			uint64_t dur;

			ta_tlcall_times(&x->tl, c, &start, &dur);
			if (ta_zone_args_take(&x->zones, c->t, c->depth, start, &z)) {
				r->text = z.text;
				r->has_value = (unsigned char)z.has_value;
				r->value = z.value;
			}
		}
	}
	rec_done(x);
}

/* ---- the manual API ------------------------------------------------------------------ */

/* The counter track of (pid, name): its index, or -1 without memory. */
static long counter_of(struct pf *x, uint32_t pid, const char *name)
{
	struct pf_counter *c;

	for (size_t k = 0; k < x->ncounters; k++)
		if (x->counters[k].pid == pid && !strcmp(x->counters[k].name, name))
			return (long)k;
	c = ta_vec_reserve(x->counters, x->ncounters + 1, &x->counters_cap, sizeof(*c), 8);
	if (!c)
		return -1;
	x->counters = c;
	c[x->ncounters].pid = pid;
	c[x->ncounters].unit = 0;
	c[x->ncounters].name = strdup(name);
	if (!c[x->ncounters].name)
		return -1;
	return (long)x->ncounters++;
}

/* An instant on the thread's track, with its channel (NULL: none) and
 * whether the message was cut. */
static void instant(struct pf *x, const struct ta_tlapi *a, const char *name, const char *chan,
		    int cut)
{
	struct prec *r = rec(x, a->t, PR_INSTANT);

	if (!r)
		return;
	r->ns = a->ns;
	r->text = strdup(name);
	r->chan = chan ? strdup(chan) : NULL;
	r->cut = (unsigned char)cut;
	if (!r->text || (chan && !r->chan)) {
		free(r->text);
		free(r->chan);
		x->nomem = 1;
		return;
	}
	rec_done(x);
}

/*
 * The memory, lock-name and fiber events: a pool's live bytes on a
 * counter track of its process ("memory: POOL"); a lock's name and a
 * fiber's entry and exit instants of the thread.
 */
static void api_mem(struct pf *x, const struct ta_tlapi *a)
{
	const struct ta_apiev *ev = a->e;
	long f = ta_fibers_now(&x->fibers, a->t), k;
	struct prec *r;
	char name[320];

	switch (ev->kind) {
	case TA_EXT_POOL_ALLOC:
	case TA_EXT_POOL_FREE:
		k = ta_pools_take(&x->pools, a->t->pid, ev);
		if (k < 0) {
			x->nomem |= x->pools.nomem;
			break;
		}
		snprintf(name, sizeof(name), "memory: %s", x->pools.names.r[k].name);
		r = NULL;
		k = counter_of(x, a->t->pid, name) < 0 ? -1 : (long)x->pools.names.r[k].live;
		if (k < 0 || !(r = rec(x, a->t, PR_COUNTER))) {
			x->nomem |= k < 0;
			break;
		}
		r->ns = a->ns;
		r->track = (uint64_t)counter_of(x, a->t->pid, name);
		r->i = k;
		r->d = (double)k;
		rec_done(x);
		break;
	case TA_EXT_LOCK_NAME:
		snprintf(name, sizeof(name), "lock 0x%" PRIx64 " named %s", ev->ptr, ev->text);
		instant(x, a, name, NULL, ev->cut);
		break;
	case TA_EXT_FIBER_ENTER:
	case TA_EXT_FIBER_LEAVE:
		if (ta_fibers_take(&x->fibers, a->t, ev) < 0) {
			x->nomem = 1;
			break;
		}
		if (ev->kind == TA_EXT_FIBER_ENTER)
			f = ta_fibers_now(&x->fibers, a->t);
		if (f < 0)
			break;
		snprintf(name, sizeof(name), "fiber %s %s",
			 ev->kind == TA_EXT_FIBER_ENTER ? "enter" : "leave",
			 x->fibers.names.r[f].name);
		instant(x, a, name, NULL, 0);
		break;
	default:
		break;
	}
}

/*
 * Messages, instants, channel switches and zone ENDs without a zone are
 * instants of their thread; counters values on a counter track of their
 * process; frames slices on a track per set; zone texts and values wait
 * for their zone's END.
 */
static void api(void *ctx, const struct ta_tlapi *a)
{
	struct pf *x = ctx;
	const struct ta_apiev *ev = a->e;
	struct prec *r;
	char name[300];
	long k;

	switch (ev->kind) {
	case TA_EXT_MESSAGE:
		instant(x, a, ev->text, a->channel, ev->cut);
		break;
	case TA_EXT_INSTANT:
		instant(x, a, ev->name, a->channel, 0);
		break;
	case TA_EXT_CHANNEL:
		snprintf(name, 128, "channel %s %s", a->channel, ev->on ? "on" : "off");
		instant(x, a, name, NULL, 0);
		break;
	case TA_EXT_ZONE_UNMATCHED:
		instant(x, a, "zone end without a zone", NULL, 0);
		break;
	case TA_EXT_COUNTER:
		/* As in the Chrome export: a NaN or infinity is no point to draw. */
		if (ev->is_double && !isfinite(ev->d))
			break;
		k = counter_of(x, a->t->pid, ev->name);
		if (k < 0) {
			x->nomem = 1;
			break;
		}
		r = rec(x, a->t, PR_COUNTER);
		if (!r)
			break;
		r->ns = a->ns;
		r->track = (uint64_t)k;
		r->is_double = (unsigned char)!!ev->is_double;
		r->d = ev->d;
		r->i = ev->i;
		rec_done(x);
		break;
	case TA_EXT_FRAME:
	case TA_EXT_FRAME_BEGIN:
	case TA_EXT_FRAME_END:
	case TA_EXT_SECTION_ENTER:
	case TA_EXT_SECTION_LEAVE:
		/* Sliced after the run, when the marks are in time order. */
		if (ta_xframes_add(&x->xf, a) < 0)
			x->nomem = 1;
		break;
	case TA_EXT_ZONE_TEXT:
	case TA_EXT_ZONE_VALUE:
		if (a->zone_depth >= 0)
			if (ta_zone_args_add(&x->zones, a, strdup) < 0)
				x->nomem = 1;
		break;
	case TA_EXT_COUNTER_CONFIG:
		/* The unit goes in the counter track's descriptor. */
		k = counter_of(x, a->t->pid, ev->name);
		if (k < 0)
			x->nomem = 1;
		else
			x->counters[k].unit = ev->unit + 1;
		break;
	case TA_EXT_APP_INFO: {
		char info[TA_TEXT_MAX + 16];

		snprintf(info, sizeof(info), "app info: %s", ev->text);
		instant(x, a, info, NULL, ev->cut);
		break;
	}
	default:
		api_mem(x, a);
		break;
	}
}

/* ---- the trace-wide packets ------------------------------------------------------------ */

/* The dump's clock is the trace's: CLOCK_MONOTONIC, also given as
 * BOOTTIME for readers that do not take primary_trace_clock. */
static void trace_clock(struct pf *x)
{
	struct ta_pb *b = &x->pb;

	ta_pb_begin(b, TRACE_PACKET);
	ta_pb_varint(b, PK_SEQ_ID, SEQ_GLOBAL);
	ta_pb_begin(b, PK_CLOCK_SNAPSHOT);
	ta_perfetto_clock_entry(b, CLOCK_MONO, x->t0, 0);
	ta_perfetto_clock_entry(b, CLOCK_BOOT, x->t0, 0);
	ta_pb_varint(b, CS_PRIMARY, CLOCK_MONO);
	ta_pb_end(b);
	ta_pb_end(b);
}

/* Opens a TrackDescriptor packet (closed with two ta_pb_end). */
static void descriptor(struct pf *x, uint64_t uuid, uint64_t parent, const char *name)
{
	struct ta_pb *b = &x->pb;

	ta_pb_begin(b, TRACE_PACKET);
	ta_pb_varint(b, PK_SEQ_ID, SEQ_GLOBAL);
	ta_pb_begin(b, PK_TRACK_DESCRIPTOR);
	ta_pb_varint(b, TD_UUID, uuid);
	if (parent)
		ta_pb_varint(b, TD_PARENT, parent);
	if (name)
		ta_pb_str(b, TD_NAME, name);
}

static void descriptor_end(struct pf *x)
{
	ta_pb_end(&x->pb);
	ta_pb_end(&x->pb);
	flush(x, 0);
}

static void descriptors(struct pf *x)
{
	const struct ta_session *s = x->tl.v.s;
	struct ta_pb *b = &x->pb;
	char name[300];

	for (size_t i = 0; i < s->nprocs; i++) {
		const struct ta_process *p = s->procs[i];

		if (p->exe && p->exe[0])
			snprintf(name, sizeof(name), "%s", ta_path_base(p->exe));
		else {
			char pn[TA_PID_NAME_MAX];

			snprintf(name, sizeof(name), "process %s", ta_pid_name(s, p->pid, pn));
		}
		descriptor(x, UUID_PROCESS(p->pid), 0, NULL);
		ta_pb_begin(b, TD_PROCESS);
		ta_pb_varint(b, PD_PID, p->pid);
		for (size_t k = 0; k < p->argc; k++)
			ta_pb_str(b, PD_CMDLINE, p->argv[k]);
		ta_pb_str(b, PD_NAME, name);
		ta_pb_end(b);
		descriptor_end(x);
	}
	for (size_t i = 0; i < s->nthreads; i++) {
		const struct ta_sess_thread *t = s->threads[i];

		/* Only the threads that have a sequence: --tid left the others out. */
		if (t->index >= x->nth || !x->th[t->index].seq)
			continue;
		snprintf(name, sizeof(name), "thread %" PRIu64, t->tid);
		descriptor(x, UUID_THREAD(t->index), UUID_PROCESS(t->pid), NULL);
		ta_pb_begin(b, TD_THREAD);
		ta_pb_varint(b, THD_PID, t->pid);
		ta_pb_varint(b, THD_TID, t->tid);
		ta_pb_str(b, THD_NAME, t->name && t->name[0] ? t->name : name);
		ta_pb_end(b);
		descriptor_end(x);
	}
	for (size_t k = 0; k < x->ncounters; k++) {
		descriptor(x, UUID_COUNTER(k), UUID_PROCESS(x->counters[k].pid),
			   x->counters[k].name);
		ta_pb_begin(b, TD_COUNTER);
		if (x->counters[k].unit == TA_UNIT_BYTES_ + 1)
			ta_pb_varint(b, CD_UNIT, CD_UNIT_SIZE_BYTES);
		else if (x->counters[k].unit == TA_UNIT_PERCENT_ + 1)
			ta_pb_str(b, CD_UNIT_NAME, "%");
		else if (x->counters[k].unit)
			ta_pb_varint(b, CD_UNIT, CD_UNIT_COUNT);
		ta_pb_end(b);
		descriptor_end(x);
	}
	for (size_t k = 0; k < x->xf.n; k++) {
		ta_xframes_track(&x->xf.sets[k], name, sizeof(name));
		descriptor(x, UUID_FRAMES(k), UUID_PROCESS(x->xf.sets[k].pid), name);
		descriptor_end(x);
	}
	for (size_t k = 0; k < x->fibers.names.n; k++) {
		snprintf(name, sizeof(name), "fiber %s", x->fibers.names.r[k].name);
		descriptor(x, UUID_FIBER(k), UUID_PROCESS(x->fibers.names.r[k].pid), name);
		descriptor_end(x);
	}
}

/* A packet of a frame set's sequence at time at (from the dump's start),
 * opened: its timestamp a delta on the sequence's clock, *last. */
static void frame_packet(struct pf *x, uint32_t seq, int64_t at, int64_t *last)
{
	struct ta_pb *b = &x->pb;

	at += x->t0;
	/* Sorted, so only a damaged clock could put a frame before the
	 * dump's start: the sequence's clock never goes back. */
	if (at < *last)
		at = *last;
	ta_pb_begin(b, TRACE_PACKET);
	ta_pb_varint(b, PK_SEQ_ID, seq);
	ta_pb_varint(b, PK_TIMESTAMP, (uint64_t)(at - *last));
	*last = at;
	ta_pb_begin(b, PK_TRACK_EVENT);
}

/*
 * Each frame set's frames, slices on its track named by their index in
 * `traceagent frames`, on a sequence of the set's own: written after the
 * run, in time order, so that no thread's sequence goes back in time for
 * a frame that began before what it already holds.
 */
static void frames_out(struct pf *x)
{
	struct ta_pb *b = &x->pb;

	for (size_t k = 0; k < x->xf.n; k++) {
		const struct ta_xfset *set = &x->xf.sets[k];
		uint32_t seq = x->next_seq++;
		int64_t last = x->t0;
		struct ta_xspan *sp;
		size_t nsp;
		char name[300];

		if (ta_xframes_spans(&x->xf, k, &x->tl, &sp, &nsp) < 0) {
			free(sp);
			x->nomem = 1;
			return;
		}
		/* Its incremental state: timestamps on its clock, from t0. */
		ta_pb_begin(b, TRACE_PACKET);
		ta_pb_varint(b, PK_TIMESTAMP, (uint64_t)x->t0);
		ta_pb_varint(b, PK_CLOCK_ID, CLOCK_MONO);
		ta_pb_varint(b, PK_SEQ_ID, seq);
		ta_pb_varint(b, PK_SEQ_FLAGS, SEQ_CLEARED);
		ta_pb_begin(b, PK_DEFAULTS);
		ta_pb_varint(b, DEF_CLOCK_ID, CLOCK_SEQ);
		ta_pb_end(b);
		ta_pb_begin(b, PK_CLOCK_SNAPSHOT);
		ta_perfetto_clock_entry(b, CLOCK_MONO, x->t0, 0);
		ta_perfetto_clock_entry(b, CLOCK_SEQ, x->t0, 1);
		ta_pb_end(b);
		ta_pb_end(b);
		for (size_t i = 0; i < nsp; i++) {
			/* A section's stretches are its name; frames are numbered. */
			if (set->kind == TA_XF_SECTION)
				snprintf(name, sizeof(name), "%s", set->name);
			else
				snprintf(name, sizeof(name), "%s %zu", set->name, i);
			frame_packet(x, seq, sp[i].start, &last);
			ta_pb_varint(b, TE_TYPE, TYPE_BEGIN);
			ta_pb_varint(b, TE_TRACK_UUID, UUID_FRAMES(k));
			ta_pb_str(b, TE_NAME, name);
			ta_pb_end(b);
			ta_pb_end(b);
			frame_packet(x, seq, sp[i].end, &last);
			ta_pb_varint(b, TE_TYPE, TYPE_END);
			ta_pb_varint(b, TE_TRACK_UUID, UUID_FRAMES(k));
			ta_pb_end(b);
			ta_pb_end(b);
			flush(x, 0);
		}
		free(sp);
	}
}

/* ---- the export ------------------------------------------------------------------------- */

/* The timeline calls back before it tells the dump's start: the first
 * packet goes out at the first event, in a bundle of its own. */
static void start(struct pf *x)
{
	x->t0 = x->tl.start_ns;
	trace_clock(x);
	flush(x, 1);
}

static void emit_first(void *ctx, const struct ta_tlcall *c)
{
	struct pf *x = ctx;

	if (!x->next_seq) {
		x->next_seq = SEQ_GLOBAL + 1;
		start(x);
	}
	emit(ctx, c);
}

static void api_first(void *ctx, const struct ta_tlapi *a)
{
	struct pf *x = ctx;

	if (!x->next_seq) {
		x->next_seq = SEQ_GLOBAL + 1;
		start(x);
	}
	api(ctx, a);
}

/* The jobs: a few per worker, so that none waits for the reader. */
static int jobs_init(struct pf *x)
{
	unsigned workers = ta_session_jobs > 1 ? ta_session_jobs - 1 : 0;
	void **ptrs;

	pthread_mutex_init(&x->chain_mu, NULL);
	pthread_cond_init(&x->chain_cv, NULL);
	x->nzjobs = workers ? 2 * (size_t)workers + 2 : 1;
	x->zjobs = calloc(x->nzjobs, sizeof(*x->zjobs));
	ptrs = calloc(x->nzjobs, sizeof(*ptrs));
	if (!x->zjobs || !ptrs) {
		x->nzjobs = 0;
		free(ptrs);
		return -1;
	}
	for (size_t k = 0; k < x->nzjobs; k++) {
		x->zjobs[k].x = x;
		ta_pb_init(&x->zjobs[k].pb);
		x->zjobs[k].r = malloc(PJOB_RECS * sizeof(*x->zjobs[k].r));
		ptrs[k] = &x->zjobs[k];
		if (!x->zjobs[k].r) {
			free(ptrs);
			return -1;
		}
	}
	if (ta_opool_init(&x->q, workers, ptrs, x->nzjobs, ta_perfetto_job_work, job_retire, x) <
	    0) {
		free(ptrs);
		return -1;
	}
	x->job = ta_opool_current(&x->q);
	return 0;
}

static void jobs_free(struct pf *x)
{
	if (x->q.ready)
		ta_opool_drain(&x->q);
	ta_opool_free(&x->q);
	free(x->q.jobs);
	for (size_t k = 0; k < x->nzjobs; k++) {
		struct zjob *j = &x->zjobs[k];

		for (size_t i = 0; j->r && i < j->nr; i++) {
			free(j->r[i].text);
			free(j->r[i].chan);
			free(j->r[i].cargs);
		}
		ta_pb_free(&j->pb);
		free(j->r);
		free(j->tidx);
		free(j->tmax);
		free(j->tlast);
		free(j->in);
		ta_pkz_free(&j->z);
		free(j->runs);
	}
	free(x->zjobs);
	free(x->last);
	free(x->last_set);
	pthread_mutex_destroy(&x->chain_mu);
	pthread_cond_destroy(&x->chain_cv);
}

int ta_export_perfetto(FILE *f, const char *path, const struct ta_tlopts *o)
{
	struct pf x;
	int status;

	memset(&x, 0, sizeof(x));
	x.f = f;
	ta_pb_init(&x.pb);
	if (jobs_init(&x) < 0) {
		jobs_free(&x);
		fprintf(stderr, "traceagent: %s: out of memory\n", path);
		return 1;
	}
	/* The workers convert the calls' times. */
	x.tl.lazy = 1;
	x.tl.lock_names = 1;
	if (ta_timeline_run_api(&x.tl, path, o, emit_first, api_first, &x) < 0) {
		status = x.tl.v.status;
		goto out;
	}
	status = x.tl.v.status;
	if (!x.next_seq) {
		x.next_seq = SEQ_GLOBAL + 1;
		start(&x);
	}
	frames_out(&x);
	descriptors(&x);
	flush(&x, 1);
	if (x.job->nr)
		job_submit(&x);
	ta_opool_drain(&x.q);
	if (x.nomem || x.chain_nomem || ta_pb_failed(&x.pb)) {
		fprintf(stderr, "traceagent: %s: out of memory\n", path);
		status = status ? status : 1;
	}
	if (x.tl.v.s && x.tl.v.status < 2)
		ta_timeline_warnings(&x.tl);
out:
	jobs_free(&x);
	ta_timeline_close(&x.tl);
	ta_pb_free(&x.pb);
	for (uint32_t i = 0; i < x.nth; i++) {
		free(x.th[i].named);
		free(x.th[i].catted);
		free(x.th[i].modded);
		free(x.th[i].held);
	}
	free(x.th);
	free(x.cat);
	for (uint32_t i = 0; i < x.ncats; i++)
		free(x.cats[i]);
	free(x.cats);
	free(x.mod);
	free(x.mods);
	ta_pools_free(&x.pools);
	ta_fibers_free(&x.fibers);
	for (size_t i = 0; i < x.ncounters; i++)
		free(x.counters[i].name);
	free(x.counters);
	ta_xframes_free(&x.xf);
	ta_zone_args_free(&x.zones);
	return status;
}
