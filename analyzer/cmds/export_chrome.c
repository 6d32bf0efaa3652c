/* SPDX-License-Identifier: MIT */
/*
 * export_chrome.c - `traceagent export --format=chrome`: Chrome Trace
 * Event JSON, one complete ("X") event per call as the call ends, streamed
 * through the timeline; its lines formatted by jobs (-j: on the workers)
 * and written in order; the manual API's events (zones' args, instants,
 * counters, frames) in their place among them; the process and thread
 * names at the end.  export.c has the command and what the args in the
 * events mean for viewers.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "export_int.h"

/* Where viewers of Chrome traces start to fail (chrome://tracing) or
 * crawl: say so once when an export goes past either. */
#define BIG_EVENTS 1000000u
#define BIG_BYTES  (256ull << 20)

/*
 * A stretch of the Chrome export's lines: the calls the timeline emitted,
 * their names and order-dependent parts (separator, a zone's args, the
 * count for the warning) settled by the reader, their times converted and
 * the lines written by a worker (chrome_work); the API's events written
 * by the reader into text, in their place among them.
 */
struct crec {
	unsigned char kind; /* REC_CALL, REC_TEXT */
	unsigned char open, first;
	unsigned char partial; /* started before the dump says (TA_VISIT_PARTIAL) */
	uint32_t pid;
	uint64_t tid;
	const char *name, *cat; /* JSON strings */
	const struct ta_process *p;
	uint64_t enter, exit;	/* ticks */
	uint64_t events;	/* the export's events after this call's */
	char *zone;		/* the zone's args (", ..."), or NULL */
	char *cargs;		/* the call's recorded arguments (JSON members), or NULL */
	unsigned char has_lock; /* a lock call: lock, and lock_json (export's) or NULL */
	uint64_t lock;
	const char *lock_json;
	size_t off, len; /* REC_TEXT: its bytes in the job's text */
};

enum { REC_CALL, REC_TEXT };

/* Records per job: half a MB of lines, enough that the handing over is
 * nothing beside the formatting. */
#define JOB_RECS 4096u

struct cjob {
	struct crec *r;
	size_t nr;
	uint32_t *sizes; /* each call's bytes, for the warning */
	char *text;	 /* the API's events, while filled through tf */
	size_t textlen;
	FILE *tf;
	char *out; /* the formatted lines */
	size_t len, cap;
	int nomem;
	struct export *e;
};

/* Above the largest pid_max (2^22), so no real thread shares a frame
 * set's track. */
#define FRAME_TID_BASE 4194304u
/* The tracks of the fibers (apimem.h): one per fiber, after the frames'. */
#define FIBER_TID_BASE 8388608u

/* ---- chrome --------------------------------------------------------------------- */

static char *json_dup(const char *s)
{
	char *p = NULL;
	size_t n;
	FILE *m = open_memstream(&p, &n);

	if (!m)
		return NULL;
	ta_json_str(m, s);
	if (fclose(m) != 0) {
		free(p);
		return NULL;
	}
	return p;
}

/* The JSON strings of function id; 0, or -1 without memory. */
static int json_names(struct export *e, uint32_t id)
{
	const struct ta_fn *fn = &e->tl.fns.fn[id].id;
	char cat[300];

	if (id >= e->nj) {
		/* Two arrays of one capacity: nj set once both have it. */
		size_t n = e->nj;
		char **a, **b;

		a = ta_vec_reserve(e->jname, (size_t)id + 1, &n, sizeof(*a), 256);
		if (a)
			e->jname = a;
		n = e->nj;
		b = ta_vec_reserve(e->jcat, (size_t)id + 1, &n, sizeof(*b), 256);
		if (b)
			e->jcat = b;
		if (!a || !b)
			return -1;
		memset(e->jname + e->nj, 0, (n - e->nj) * sizeof(*a));
		memset(e->jcat + e->nj, 0, (n - e->nj) * sizeof(*b));
		e->nj = (uint32_t)n;
	}
	if (!e->jname[id]) {
		e->jname[id] = json_dup(fn->name);
		e->jcat[id] = json_dup(ta_export_category(fn->module, cat, sizeof(cat)));
		if (!e->jname[id] || !e->jcat[id]) {
			free(e->jname[id]);
			free(e->jcat[id]);
			e->jname[id] = e->jcat[id] = NULL;
			return -1;
		}
	}
	return 0;
}

/* ns as microseconds with three decimals, exactly. */
static const char *fmt_us(char *buf, size_t n, int64_t ns)
{
	uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;

	snprintf(buf, n, "%s%" PRIu64 ".%03u", ns < 0 ? "-" : "", a / 1000, (unsigned)(a % 1000));
	return buf;
}

/* The zone args of a slice, removed from the waiting ones: ", \"text\": ..."
 * into buf (the args of the instant written before the slice), or "". */
static const char *zone_args(struct export *e, const struct ta_tlcall *c, int64_t start_ns,
			     char *buf, size_t n)
{
	struct ta_zone_arg z;
	size_t len = 0;

	buf[0] = 0;
	if (!ta_zone_args_take(&e->za, c->t, c->depth, start_ns, &z))
		return buf;
	if (z.text)
		len += (size_t)snprintf(buf, n, ", \"text\": %s", z.text);
	if (z.has_value && len < n)
		snprintf(buf + len, n - len, ", \"value\": %" PRIu64, z.value);
	free(z.text);
	return buf;
}

static void warn_big(struct export *e)
{
	e->warned = 1;
	fprintf(stderr,
		"traceagent export: %s: over %s so far; chrome://tracing and Perfetto "
		"struggle past about 1M events or 256 MB: --time-range, --min-duration "
		"or --tid make a smaller export (or --format=perfetto)\n",
		e->out, e->events > BIG_EVENTS ? "1M events" : "256 MB");
}

/* ---- a job's lines (in a worker) ---- */

static char *put_str(char *p, const char *s, size_t n)
{
	memcpy(p, s, n);
	return p + n;
}

#define PUT_LIT(p, lit) put_str(p, lit, sizeof(lit) - 1)

static char *put_u64(char *p, uint64_t v)
{
	char tmp[24];
	int n = 0;

	do
		tmp[n++] = (char)('0' + v % 10);
	while (v /= 10);
	while (n)
		*p++ = tmp[--n];
	return p;
}

static char *put_hex(char *p, uint64_t v)
{
	char tmp[16];
	int n = 0;

	do
		tmp[n++] = "0123456789abcdef"[v & 15];
	while (v >>= 4);
	while (n)
		*p++ = tmp[--n];
	return p;
}

/* fmt_us's: ns as microseconds with three decimals. */
static char *put_us(char *p, int64_t ns)
{
	uint64_t a = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
	unsigned r = (unsigned)(a % 1000);

	if (ns < 0)
		*p++ = '-';
	p = put_u64(p, a / 1000);
	*p++ = '.';
	*p++ = (char)('0' + r / 100);
	*p++ = (char)('0' + r / 10 % 10);
	*p++ = (char)('0' + r % 10);
	return p;
}

static int job_room(struct cjob *j, size_t n)
{
	if (j->len + n > j->cap) {
		char *b = ta_vec_reserve(j->out, j->len + n, &j->cap, 1, (size_t)1 << 20);

		if (!b)
			return -1;
		j->out = b;
	}
	return 0;
}

/* A call's lines: the instant of its zone's args, if any, and its
 * complete event, as one fprintf each would write them. */
static void call_lines(struct cjob *j, struct crec *r, uint32_t *size)
{
	struct ta_tlcall c;
	int64_t start;
	uint64_t dur;
	size_t nname = strlen(r->name), ncat = strlen(r->cat) - (r->open || r->partial ? 1 : 0);
	char ts[32], *p;
	int n;

	memset(&c, 0, sizeof(c));
	c.p = r->p;
	c.enter = r->enter;
	c.exit = r->exit;
	ta_tlcall_times(&j->e->tl, &c, &start, &dur);
	*size = 0;
	if (r->zone) {
		char *line = NULL;

		fmt_us(ts, sizeof(ts), start);
		n = asprintf(&line,
			     "%s{\"ph\": \"i\", \"s\": \"t\", \"name\": %s, \"cat\": "
			     "\"zone,args\", \"pid\": %" PRIu32 ", \"tid\": %" PRIu64
			     ", \"ts\": %s, \"args\": {%s}}",
			     r->first ? "\n" : ",\n", r->name, r->pid, r->tid, ts, r->zone + 2);
		if (n < 0 || job_room(j, (size_t)n) < 0) {
			free(line);
			j->nomem = 1;
			return;
		}
		memcpy(j->out + j->len, line, (size_t)n);
		j->len += (size_t)n;
		*size += (uint32_t)n;
		free(line);
	}
	if (job_room(j, nname + ncat + 168 + (r->cargs ? strlen(r->cargs) + 12 : 0) +
			    (r->has_lock ? 64 + (r->lock_json ? strlen(r->lock_json) : 0) : 0)) <
	    0) {
		j->nomem = 1;
		return;
	}
	p = j->out + j->len;
	if (r->first && !r->zone)
		p = PUT_LIT(p, "\n{\"ph\": \"X\", \"name\": ");
	else
		p = PUT_LIT(p, ",\n{\"ph\": \"X\", \"name\": ");
	p = put_str(p, r->name, nname);
	p = PUT_LIT(p, ", \"cat\": ");
	p = put_str(p, r->cat, ncat);
	if (r->open)
		p = PUT_LIT(p, ",open\"");
	else if (r->partial)
		p = PUT_LIT(p, ",partial\"");
	p = PUT_LIT(p, ", \"pid\": ");
	p = put_u64(p, r->pid);
	p = PUT_LIT(p, ", \"tid\": ");
	p = put_u64(p, r->tid);
	p = PUT_LIT(p, ", \"ts\": ");
	p = put_us(p, start);
	p = PUT_LIT(p, ", \"dur\": ");
	p = put_us(p, (int64_t)dur);
	if (r->cargs || r->has_lock) {
		p = PUT_LIT(p, ", \"args\": {");
		if (r->cargs)
			p = put_str(p, r->cargs, strlen(r->cargs));
		/* A lock call's lock, and its name. */
		if (r->has_lock) {
			if (r->cargs)
				p = PUT_LIT(p, ", ");
			p = PUT_LIT(p, "\"lock\": \"0x");
			p = put_hex(p, r->lock);
			*p++ = '"';
			if (r->lock_json) {
				p = PUT_LIT(p, ", \"lock_name\": ");
				p = put_str(p, r->lock_json, strlen(r->lock_json));
			}
		}
		*p++ = '}';
	}
	*p++ = '}';
	*size += (uint32_t)(p - (j->out + j->len));
	j->len = (size_t)(p - j->out);
}

static void chrome_work(void *ctx, void *job)
{
	struct cjob *j = job;

	(void)ctx;
	j->len = 0;
	for (size_t k = 0; k < j->nr; k++) {
		struct crec *r = &j->r[k];

		if (r->kind == REC_CALL) {
			call_lines(j, r, &j->sizes[k]);
		} else if (job_room(j, r->len) == 0) {
			memcpy(j->out + j->len, j->text + r->off, r->len);
			j->len += r->len;
		} else {
			j->nomem = 1;
		}
		free(r->zone);
		r->zone = NULL;
		free(r->cargs);
		r->cargs = NULL;
	}
}

/* ---- in the reader ---- */

/* Writes a job's lines, in order, and tells when the export grew big. */
static void chrome_retire(void *ctx, void *job)
{
	struct export *e = ctx;
	struct cjob *j = job;

	fwrite(j->out, 1, j->len, e->of);
	for (size_t k = 0; k < j->nr && !e->warned; k++) {
		if (j->r[k].kind != REC_CALL)
			continue;
		e->bytes += j->sizes[k];
		if (j->r[k].events > BIG_EVENTS || e->bytes > BIG_BYTES) {
			/* The count as it was after that call. */
			uint64_t now = e->events;

			e->events = j->r[k].events;
			warn_big(e);
			e->events = now;
		}
	}
	if (j->nomem)
		e->nomem = 1;
	j->nomem = 0;
	j->nr = 0;
	j->len = 0;
	free(j->text);
	j->text = NULL;
	j->textlen = 0;
	/* The buffer of an outsized stretch is not kept. */
	if (j->cap > (64u << 20)) {
		free(j->out);
		j->out = NULL;
		j->cap = 0;
	}
}

/* Hands the current job over (its text closed first). */
static void chrome_submit(struct export *e)
{
	struct cjob *j = e->job;

	if (j->tf) {
		if (fclose(j->tf) != 0)
			e->nomem = 1;
		j->tf = NULL;
	}
	e->job = ta_opool_submit(&e->q);
}

/* The JSON string of the name of the timeline's lock row id, made once;
 * NULL without memory. */
static const char *lock_json(struct export *e, const struct ta_tlcall *c)
{
	if ((size_t)c->lock_id >= e->nljson) {
		size_t n = e->nljson;
		char **v = ta_vec_reserve(e->ljson, (size_t)c->lock_id + 1, &n, sizeof(*v), 16);

		if (!v)
			return NULL;
		memset(v + e->nljson, 0, (n - e->nljson) * sizeof(*v));
		e->ljson = v;
		e->nljson = n;
	}
	if (!e->ljson[c->lock_id])
		e->ljson[c->lock_id] = json_dup(c->lock_name);
	return e->ljson[c->lock_id];
}

static void chrome_event(struct export *e, const struct ta_tlcall *c)
{
	char args[TA_TEXT_MAX * 6 + 64];
	const char *zone = "";
	struct cjob *j = e->job;
	struct crec *r;

	if (c->kind == TA_TL_ENTER)
		return;
	if (json_names(e, c->fn) < 0) {
		e->nomem = 1;
		return;
	}
	r = &j->r[j->nr];
	r->first = e->events == 0;
	if (e->za.n) {
		int64_t start;
		uint64_t dur;

		ta_tlcall_times(&e->tl, c, &start, &dur);
		zone = zone_args(e, c, start, args, sizeof(args));
	}
	r->zone = NULL;
	r->cargs = NULL;
	if (c->args && !(r->cargs = ta_callargs_json(c->args))) {
		e->nomem = 1;
		return;
	}
	r->has_lock = (unsigned char)c->has_lock;
	r->lock = c->lock;
	r->lock_json = NULL;
	if (c->has_lock && c->lock_id >= 0 && !(r->lock_json = lock_json(e, c))) {
		free(r->cargs);
		r->cargs = NULL;
		e->nomem = 1;
		return;
	}
	if (*zone) {
		r->zone = strdup(zone);
		if (!r->zone) {
			e->nomem = 1;
			return;
		}
		e->events++;
	}
	e->events++;
	r->kind = REC_CALL;
	r->open = !!(c->flags & TA_VISIT_OPEN);
	r->partial = !r->open && (c->flags & TA_VISIT_INCOMPLETE);
	r->pid = c->t->pid;
	r->tid = c->t->tid;
	{
		long f = ta_fibers_owner(&e->fibers, c->t, c->enter);

		if (f >= 0)
			r->tid = FIBER_TID_BASE + (uint64_t)f;
	}
	r->name = e->jname[c->fn];
	r->cat = e->jcat[c->fn];
	r->p = c->p;
	r->enter = c->enter;
	r->exit = c->exit;
	r->events = e->events;
	if (++j->nr == JOB_RECS)
		chrome_submit(e);
}

static void emit(void *ctx, const struct ta_tlcall *c)
{
	chrome_event(ctx, c);
}

/* The JSON string of s (NULL without memory). */
static char *json_text(const char *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);

	if (!m)
		return NULL;
	ta_json_str(m, s);
	if (fclose(m) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* The start of an event of the API: its separator, phase, name, category
 * and place. */
static void api_head(struct export *e, const char *ph, const char *name, const char *cat,
		     const struct ta_tlapi *a, uint64_t tid)
{
	char ts[32];

	fprintf(e->f, "%s{\"ph\": \"%s\", \"name\": ", e->events ? ",\n" : "\n", ph);
	ta_json_str(e->f, name);
	fprintf(e->f, ", \"cat\": \"%s\", \"pid\": %" PRIu32 ", \"tid\": %" PRIu64 ", \"ts\": %s",
		cat, a->t->pid, tid, fmt_us(ts, sizeof(ts), a->ns));
	e->events++;
}

/*
 * The memory, lock-name and fiber events: a pool's live bytes a counter
 * track of its process ("memory: POOL"); a lock's name and a fiber's
 * entry and exit instant events of the thread (the fiber's calls go on
 * its own track, FIBER_TID_BASE + its index).
 */
static void api_mem_lines(struct export *e, const struct ta_tlapi *a)
{
	const struct ta_apiev *ev = a->e;
	long f = ta_fibers_now(&e->fibers, a->t);
	char name[300];
	long k;

	switch (ev->kind) {
	case TA_EXT_POOL_ALLOC:
	case TA_EXT_POOL_FREE:
		k = ta_pools_take(&e->pools, a->t->pid, ev);
		if (k < 0) {
			e->nomem |= e->pools.nomem;
			break;
		}
		snprintf(name, sizeof(name), "memory: %s", e->pools.names.r[k].name);
		api_head(e, "C", name, "memory", a, a->t->tid);
		fprintf(e->f, ", \"args\": {\"bytes\": %" PRIu64 "}}", e->pools.names.r[k].live);
		break;
	case TA_EXT_LOCK_NAME:
		snprintf(name, sizeof(name), "lock 0x%" PRIx64 " named", ev->ptr);
		api_head(e, "i", name, "lock", a, a->t->tid);
		fprintf(e->f, ", \"s\": \"t\", \"args\": {\"lock\": \"0x%" PRIx64 "\", \"name\": ",
			ev->ptr);
		ta_json_str(e->f, ev->text);
		fputs("}}", e->f);
		break;
	case TA_EXT_FIBER_ENTER:
	case TA_EXT_FIBER_LEAVE:
		if (ta_fibers_take(&e->fibers, a->t, ev) < 0) {
			e->nomem = 1;
			break;
		}
		if (ev->kind == TA_EXT_FIBER_ENTER)
			f = ta_fibers_now(&e->fibers, a->t);
		if (f < 0)
			break; /* a LEAVE with no fiber running */
		snprintf(name, sizeof(name), "fiber %s %s",
			 ev->kind == TA_EXT_FIBER_ENTER ? "enter" : "leave",
			 e->fibers.names.r[f].name);
		api_head(e, "i", name, "fiber", a, a->t->tid);
		fputs(", \"s\": \"t\", \"args\": {\"fiber\": ", e->f);
		ta_json_str(e->f, e->fibers.names.r[f].name);
		fputs("}}", e->f);
		break;
	default:
		break;
	}
}

/*
 * Messages, instants, channel switches and zone ENDs without a zone are
 * instant events of their thread; counters counter events of their
 * process; frames slices on a track per set; zone texts and values wait
 * for their zone's slice.
 */
static void api_lines(void *ctx, const struct ta_tlapi *a)
{
	struct export *e = ctx;
	const struct ta_apiev *ev = a->e;
	char name[128];

	switch (ev->kind) {
	case TA_EXT_MESSAGE:
		api_head(e, "i", ev->text, "message", a, a->t->tid);
		fprintf(e->f, ", \"s\": \"t\", \"args\": {\"text\": ");
		ta_json_str(e->f, ev->text);
		fprintf(e->f, ", \"channel\": ");
		ta_json_str(e->f, a->channel);
		fprintf(e->f, "%s}}", ev->cut ? ", \"cut\": true" : "");
		break;
	case TA_EXT_INSTANT:
		api_head(e, "i", ev->name, "instant", a, a->t->tid);
		fprintf(e->f, ", \"s\": \"t\", \"args\": {\"channel\": ");
		ta_json_str(e->f, a->channel);
		fputs("}}", e->f);
		break;
	case TA_EXT_CHANNEL:
		snprintf(name, sizeof(name), "channel %s %s", a->channel, ev->on ? "on" : "off");
		api_head(e, "i", name, "channel", a, a->t->tid);
		fputs(", \"s\": \"t\", \"args\": {}}", e->f);
		break;
	case TA_EXT_ZONE_UNMATCHED:
		api_head(e, "i", "zone end without a zone", "zone", a, a->t->tid);
		fputs(", \"s\": \"t\", \"args\": {}}", e->f);
		break;
	case TA_EXT_COUNTER:
		/* JSON has no NaN or infinity: such samples are left out. */
		if (ev->is_double && !isfinite(ev->d))
			break;
		api_head(e, "C", ev->name, "counter", a, a->t->tid);
		fprintf(e->f, ", \"args\": {");
		ta_json_str(e->f, ev->name);
		if (ev->is_double)
			fprintf(e->f, ": %.17g}}", ev->d);
		else
			fprintf(e->f, ": %" PRId64 "}}", ev->i);
		break;
	case TA_EXT_FRAME:
	case TA_EXT_FRAME_BEGIN:
	case TA_EXT_FRAME_END:
	case TA_EXT_SECTION_ENTER:
	case TA_EXT_SECTION_LEAVE:
		/* Sliced after the run, when the marks are in time order. */
		if (ta_xframes_add(&e->xf, a) < 0)
			e->nomem = 1;
		break;
	case TA_EXT_COUNTER_CONFIG:
		if (ta_xmeta_unit(&e->meta, ev->name, ev->unit) < 0)
			e->nomem = 1;
		break;
	case TA_EXT_APP_INFO:
		/* In the trace's otherData, and an instant where it was said. */
		if (ta_xmeta_info(&e->meta, ev->text) < 0)
			e->nomem = 1;
		api_head(e, "i", "app info", "app-info", a, a->t->tid);
		fprintf(e->f, ", \"s\": \"t\", \"args\": {\"text\": ");
		ta_json_str(e->f, ev->text);
		fprintf(e->f, "%s}}", ev->cut ? ", \"cut\": true" : "");
		break;
	case TA_EXT_ZONE_TEXT:
	case TA_EXT_ZONE_VALUE:
		if (a->zone_depth >= 0)
			if (ta_zone_args_add(&e->za, a, json_text) < 0)
				e->nomem = 1;
		break;
	default:
		api_mem_lines(e, a);
		break;
	}
}

/* The API's event written by api_lines into the current job's text, in
 * its place among the calls. */
static void api(void *ctx, const struct ta_tlapi *a)
{
	struct export *e = ctx;
	struct cjob *j = e->job;
	size_t off;

	if (!j->tf) {
		j->tf = open_memstream(&j->text, &j->textlen);
		if (!j->tf) {
			e->nomem = 1;
			return;
		}
	}
	if (fflush(j->tf) != 0) {
		e->nomem = 1;
		return;
	}
	off = j->textlen;
	e->f = j->tf;
	api_lines(e, a);
	e->f = e->of;
	if (fflush(j->tf) != 0) {
		e->nomem = 1;
		return;
	}
	if (j->textlen == off)
		return;
	j->r[j->nr].kind = REC_TEXT;
	j->r[j->nr].zone = NULL;
	j->r[j->nr].cargs = NULL;
	j->r[j->nr].off = off;
	j->r[j->nr].len = j->textlen - off;
	if (++j->nr == JOB_RECS)
		chrome_submit(e);
}

/* The jobs: a few per worker, so that none waits for the reader. */
static int chrome_jobs(struct export *e)
{
	unsigned workers = ta_session_jobs > 1 ? ta_session_jobs - 1 : 0;
	void **ptrs;

	e->njobs = workers ? 2 * (size_t)workers + 2 : 1;
	e->jobs = calloc(e->njobs, sizeof(*e->jobs));
	ptrs = calloc(e->njobs, sizeof(*ptrs));
	if (!e->jobs || !ptrs) {
		free(ptrs);
		return -1;
	}
	for (size_t k = 0; k < e->njobs; k++) {
		struct cjob *j = &e->jobs[k];

		j->e = e;
		j->r = malloc(JOB_RECS * sizeof(*j->r));
		j->sizes = malloc(JOB_RECS * sizeof(*j->sizes));
		ptrs[k] = j;
		if (!j->r || !j->sizes) {
			free(ptrs);
			return -1;
		}
	}
	if (ta_opool_init(&e->q, workers, ptrs, e->njobs, chrome_work, chrome_retire, e) < 0) {
		free(ptrs);
		return -1;
	}
	e->job = ta_opool_current(&e->q);
	return 0;
}

void ta_export_chrome_free(struct export *e)
{
	ta_xmeta_free(&e->meta);
	ta_opool_free(&e->q);
	free(e->q.jobs);
	for (size_t k = 0; k < e->njobs; k++) {
		struct cjob *j = &e->jobs[k];

		for (size_t i = 0; i < j->nr; i++) {
			free(j->r[i].zone);
			free(j->r[i].cargs);
		}
		if (j->tf)
			fclose(j->tf);
		free(j->text);
		free(j->r);
		free(j->sizes);
		free(j->out);
	}
	free(e->jobs);
	for (uint32_t i = 0; i < e->nj; i++) {
		free(e->jname[i]);
		free(e->jcat[i]);
	}
	free(e->jname);
	free(e->jcat);
	ta_zone_args_free(&e->za);
	ta_xframes_free(&e->xf);
	ta_pools_free(&e->pools);
	ta_fibers_free(&e->fibers);
	for (size_t k = 0; k < e->nljson; k++)
		free(e->ljson[k]);
	free(e->ljson);
}

static void chrome_meta(struct export *e, const char *what, uint32_t pid, uint64_t tid,
			const char *name)
{
	fprintf(e->f,
		"%s{\"ph\": \"M\", \"name\": \"%s\", \"pid\": %" PRIu32 ", \"tid\": %" PRIu64
		", \"args\": {\"name\": ",
		e->events ? ",\n" : "\n", what, pid, tid);
	ta_json_str(e->f, name);
	fputs("}}", e->f);
	e->events++;
}

/* Each set's frames, a slice each on the set's track ("frames: SET"),
 * named by their index in `traceagent frames`. */
static void chrome_frames(struct export *e)
{
	for (size_t k = 0; k < e->xf.n; k++) {
		const struct ta_xfset *set = &e->xf.sets[k];
		struct ta_xspan *sp;
		size_t nsp;

		if (ta_xframes_spans(&e->xf, k, &e->tl, &sp, &nsp) < 0) {
			free(sp);
			e->nomem = 1;
			return;
		}
		for (size_t i = 0; i < nsp; i++) {
			char name[300], ts[32], dur[32];

			/* A section's stretches are its name; frames are numbered. */
			if (set->kind == TA_XF_SECTION)
				snprintf(name, sizeof(name), "%s", set->name);
			else
				snprintf(name, sizeof(name), "%s %zu", set->name, i);
			fprintf(e->f, "%s{\"ph\": \"X\", \"name\": ", e->events ? ",\n" : "\n");
			ta_json_str(e->f, name);
			/* No args (the set is the track's name): viewers would
			 * glue them to the slice's name. */
			fprintf(e->f,
				", \"cat\": \"%s\", \"pid\": %" PRIu32 ", \"tid\": %" PRIu64
				", \"ts\": %s, \"dur\": %s}",
				set->kind == TA_XF_SECTION ? "section" : "frame", set->pid,
				(uint64_t)FRAME_TID_BASE + k, fmt_us(ts, sizeof(ts), sp[i].start),
				fmt_us(dur, sizeof(dur), sp[i].end - sp[i].start));
			e->events++;
		}
		free(sp);
	}
}

int ta_export_chrome(struct export *e)
{
	const struct ta_session *s;
	int rc;

	fputs("{\"traceEvents\": [", e->f);
	e->of = e->f;
	if (chrome_jobs(e) < 0) {
		fprintf(stderr, "traceagent: %s: out of memory\n", e->path);
		fputs("],\n\"displayTimeUnit\": \"ns\"}\n", e->f);
		return 1;
	}
	/* The workers convert the times. */
	e->tl.lazy = 1;
	e->tl.lock_names = 1;
	rc = ta_timeline_run_api(&e->tl, e->path, &e->o, emit, api, e);
	if (e->job->nr || e->job->tf)
		chrome_submit(e);
	ta_opool_drain(&e->q);
	if (rc < 0) {
		/* Not a dump after all: the output is still JSON. */
		fputs("],\n\"displayTimeUnit\": \"ns\"}\n", e->f);
		return e->tl.v.status;
	}
	chrome_frames(e);
	s = e->tl.v.s;
	for (size_t i = 0; i < s->nprocs; i++) {
		const struct ta_process *p = s->procs[i];
		char name[64];

		if (p->exe && p->exe[0])
			chrome_meta(e, "process_name", p->pid, p->pid, ta_path_base(p->exe));
		else {
			char pn[TA_PID_NAME_MAX];

			snprintf(name, sizeof(name), "process %s", ta_pid_name(s, p->pid, pn));
			chrome_meta(e, "process_name", p->pid, p->pid, name);
		}
	}
	for (size_t i = 0; i < s->nthreads; i++) {
		const struct ta_sess_thread *t = s->threads[i];
		char name[64];

		if (!ta_tidset_has(&e->o.tids, t->tid))
			continue;
		snprintf(name, sizeof(name), "thread %" PRIu64, t->tid);
		chrome_meta(e, "thread_name", t->pid, t->tid,
			    t->name && t->name[0] ? t->name : name);
	}
	for (size_t k = 0; k < e->xf.n; k++) {
		char name[300];

		ta_xframes_track(&e->xf.sets[k], name, sizeof(name));
		chrome_meta(e, "thread_name", e->xf.sets[k].pid, FRAME_TID_BASE + k, name);
	}
	for (size_t k = 0; k < e->fibers.names.n; k++) {
		char *name;

		if (asprintf(&name, "fiber %s", e->fibers.names.r[k].name) < 0) {
			e->nomem = 1;
			break;
		}
		chrome_meta(e, "thread_name", e->fibers.names.r[k].pid, FIBER_TID_BASE + k, name);
		free(name);
	}
	fputs("\n],\n", e->f);
	ta_xmeta_chrome(&e->meta, e->f);
	fputs("\"displayTimeUnit\": \"ns\"}\n", e->f);
	if (e->nomem) {
		fprintf(stderr, "traceagent: %s: out of memory\n", e->path);
		return 1;
	}
	return e->tl.v.status;
}
