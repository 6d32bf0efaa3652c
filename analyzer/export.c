/* SPDX-License-Identifier: MIT */
/*
 * export.c - `traceagent export`: the calls of a dump for other viewers.
 *
 * --format=chrome writes Chrome Trace Event JSON, one complete ("X") event
 * per call as the call ends (viewers sort them), then the process and
 * thread names; it streams through the timeline (timeline.c), so memory
 * stays flat whatever the size of the dump.  --format=folded writes folded
 * stacks, one line per distinct call path of the call tree (calltree.c).
 * --format=perfetto (perfetto.c) and --format=pprof (pprof.c) write
 * protocol buffers.
 *
 * Viewers show a Chrome event's args as part of its name (speedscope
 * names a frame "main {\"module\":...}", and "main {}" for empty args):
 * no slice has args.  A call's module goes in its category, a call still
 * open at the end adds ",open" to it (",partial" for one whose start is a
 * guess), and a zone's text and value go in an
 * instant event of their own at the zone's start (cat "zone,args"), which
 * speedscope ignores and Perfetto and chrome://tracing show on the track.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmdopts.h"
#include "commands.h"
#include "export_pb.h"
#include "srcline.h"
#include "timeline.h"

/* Where viewers of Chrome traces start to fail (chrome://tracing) or
 * crawl: say so once when an export goes past either. */
#define BIG_EVENTS 1000000u
#define BIG_BYTES  (256ull << 20)

enum format { FMT_NONE, FMT_CHROME, FMT_FOLDED, FMT_PERFETTO, FMT_PPROF };

struct export
{
	const char *path, *out;
	enum format fmt;
	int by_calls, threads, srcline;
	int folded_only; /* --by or --threads was given */
	struct ta_tlopts o;
	FILE *f;

	/* chrome */
	struct ta_timeline tl;
	char **jname, **jcat; /* by function id: JSON name and category, once made */
	uint32_t nj;
	uint64_t events, bytes;
	int warned, nomem;

	/* chrome: the manual API's events */
	struct zone_args *za; /* texts and values waiting for their zone's slice */
	size_t nza, za_cap;
	struct ta_xframes xf; /* the frame marks: slices after the run */

	/* chrome: the lines are formatted by jobs (-j: on the workers), the
	 * timeline filling the current one; see chrome_rec. */
	struct ta_opool q;
	struct cjob *jobs;
	size_t njobs;
	struct cjob *job; /* being filled */
	FILE *of;	  /* the output (f is the current job's text during api) */

	/* folded */
	char *buf;
	size_t len, cap;
	size_t *at; /* by depth: where the frame's name starts in buf */
	uint32_t nat;
};

/* What TA_ZONE_TEXT and TA_ZONE_VALUE gave a zone still open: put in its
 * slice's args when it ends (its thread, depth and start tell it). */
struct zone_args {
	const struct ta_sess_thread *t;
	uint32_t depth;
	int64_t start_ns;
	char *text; /* a JSON string, or NULL */
	int has_value;
	uint64_t value;
};

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
	uint64_t enter, exit; /* ticks */
	uint64_t events;      /* the export's events after this call's */
	char *zone;	      /* the zone's args (", ..."), or NULL */
	size_t off, len;      /* REC_TEXT: its bytes in the job's text */
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

static void usage(FILE *f)
{
	fprintf(f,
		"usage: traceagent export --format=chrome|folded|perfetto|pprof -o FILE [OPTIONS] DUMP\n"
		"\n"
		"  --format=chrome       Chrome Trace Event JSON (Perfetto UI, chrome://tracing,\n"
		"                        speedscope): one complete event per call, times in us\n"
		"  --format=folded       folded stacks (flamegraph.pl, speedscope): one line\n"
		"                        per distinct call path, \"root;...;leaf VALUE\"\n"
		"  --format=perfetto     Perfetto's native trace (protobuf; Perfetto UI,\n"
		"                        trace_processor): slices per thread, interned names\n"
		"  --format=pprof        pprof's profile (gzip'd protobuf; go tool pprof,\n"
		"                        speedscope, Pyroscope): one sample per call path,\n"
		"                        values calls, total and self time in ns\n"
		"  -o FILE, --output=FILE  where to write ('-' for the standard output)\n"
		"  --tid=TID[,TID...]    only these threads\n"
		"  -j N, --jobs=N        N threads read the dump (default: one per CPU\n"
		"                        it may use, at most 64; N up to 1024)\n"
		"  --demangle=MODE       C++ names: full (default, but for folded),\n"
		"                        simple (default for folded: without parameters\n"
		"                        and template arguments), or no (mangled)\n"
		"  -h, --help            this help\n"
		"\n"
		"chrome and perfetto:\n"
		"  --time-range=START-END  only calls that overlap this time, from the\n"
		"                        dump's start (10ms-1.5s, 200us-, -2s)\n"
		"  --min-duration=TIME   only calls that lasted at least TIME (10us)\n"
		"  The manual API: messages, instants and channel switches are instant\n"
		"  events (\"i\"), counters counter events (\"C\"), the frames of each set\n"
		"  slices on a track \"frames: SET\" (\"SET N\": frame N as traceagent\n"
		"  frames counts them, frame 0 from the first event of the thread that\n"
		"  marked it), zones slices (cat \"zone\"), their text and value in args\n"
		"  of an instant at the zone's start (cat \"zone,args\").  A call's\n"
		"  category is \"function,MODULE\", \"libcall\", \"zone\" or, for the agent's\n"
		"  waits (\"[traceagent wait]\"), \"traceagent\", with \",open\" for a call\n"
		"  still open at the end, \",partial\" for one whose start is a guess\n"
		"  (begun before the dump's first chunk of its thread); slices have no\n"
		"  args (speedscope would glue them to the names).  Calls with no entry\n"
		"  recorded (an attach window began inside them) have no slice.\n"
		"\n"
		"pprof:\n"
		"  --srcline             each function's source file and line\n"
		"\n"
		"folded:\n"
		"  --by=time|calls       VALUE is the path's self time in ns (default) or\n"
		"                        its number of calls\n"
		"  --threads             one root per thread instead of merging the threads\n"
		"\n"
		"folded and pprof: a function calling itself more than 64 levels deep is\n"
		"one frame \"NAME [xN]\" (the N levels' calls and self time summed, what\n"
		"they called above it); paths deeper than 1000 levels are cut there, the\n"
		"rest one frame \"[deeper than 1000 levels]\", said on stderr.\n"
		"\n"
		"Exit status: 0 for a whole dump, 1 when it is damaged or incomplete (what\n"
		"could be read is exported) or the output cannot be written, 2 for usage\n"
		"errors or a dump that cannot be opened.\n");
}

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
	const struct ta_fn *fn = &e->tl.fns.fn[id];
	char cat[300];

	if (id >= e->nj) {
		uint32_t n = e->nj ? e->nj : 256;
		char **a, **b;

		while (n <= id)
			n *= 2;
		a = realloc(e->jname, n * sizeof(*a));
		if (a)
			e->jname = a;
		b = realloc(e->jcat, n * sizeof(*b));
		if (b)
			e->jcat = b;
		if (!a || !b)
			return -1;
		memset(e->jname + e->nj, 0, (n - e->nj) * sizeof(*a));
		memset(e->jcat + e->nj, 0, (n - e->nj) * sizeof(*b));
		e->nj = n;
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
	buf[0] = 0;
	for (size_t k = 0; k < e->nza; k++) {
		struct zone_args *z = &e->za[k];
		size_t len = 0;

		if (z->t != c->t || z->depth != c->depth || z->start_ns != start_ns)
			continue;
		if (z->text)
			len += (size_t)snprintf(buf, n, ", \"text\": %s", z->text);
		if (z->has_value && len < n)
			snprintf(buf + len, n - len, ", \"value\": %" PRIu64, z->value);
		free(z->text);
		e->za[k] = e->za[--e->nza];
		break;
	}
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
		size_t cap = j->cap ? j->cap : (1u << 20);
		char *b;

		while (cap < j->len + n)
			cap *= 2;
		b = realloc(j->out, cap);
		if (!b)
			return -1;
		j->out = b;
		j->cap = cap;
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
	if (job_room(j, nname + ncat + 168) < 0) {
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
	if (e->nza) {
		int64_t start;
		uint64_t dur;

		ta_tlcall_times(&e->tl, c, &start, &dur);
		zone = zone_args(e, c, start, args, sizeof(args));
	}
	r->zone = NULL;
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

static void zone_arg(struct export *e, const struct ta_tlapi *a)
{
	struct zone_args *z = NULL;

	for (size_t k = 0; k < e->nza; k++)
		if (e->za[k].t == a->t && e->za[k].depth == (uint32_t)a->zone_depth &&
		    e->za[k].start_ns == a->zone_start_ns)
			z = &e->za[k];
	if (!z) {
		if (e->nza == e->za_cap) {
			size_t cap = e->za_cap ? 2 * e->za_cap : 8;
			struct zone_args *n = realloc(e->za, cap * sizeof(*n));

			if (!n) {
				e->nomem = 1;
				return;
			}
			e->za = n;
			e->za_cap = cap;
		}
		z = &e->za[e->nza++];
		memset(z, 0, sizeof(*z));
		z->t = a->t;
		z->depth = (uint32_t)a->zone_depth;
		z->start_ns = a->zone_start_ns;
	}
	if (a->e->kind == TA_EXT_ZONE_VALUE) {
		z->has_value = 1;
		z->value = a->e->value;
		return;
	}
	/* A later text replaces an earlier one, as a zone shows one. */
	free(z->text);
	z->text = json_text(a->e->text);
	if (!z->text)
		e->nomem = 1;
}

long ta_xframes_add(struct ta_xframes *x, const struct ta_tlapi *a)
{
	struct ta_xfset *set = NULL;
	size_t k;

	for (k = 0; k < x->n; k++)
		if (x->sets[k].pid == a->t->pid && !strcmp(x->sets[k].name, a->e->name)) {
			set = &x->sets[k];
			break;
		}
	if (!set) {
		struct ta_xfset *sets = realloc(x->sets, (x->n + 1) * sizeof(*sets));
		char *name = strdup(a->e->name);

		if (sets)
			x->sets = sets;
		if (!sets || !name) {
			free(name);
			return -1;
		}
		set = &x->sets[x->n++];
		memset(set, 0, sizeof(*set));
		set->pid = a->t->pid;
		set->name = name;
	}
	if (set->n == set->cap) {
		size_t cap = set->cap ? set->cap * 2 : 64;
		struct ta_xmark *m = realloc(set->marks, cap * sizeof(*m));

		if (!m)
			return -1;
		set->marks = m;
		set->cap = cap;
	}
	set->marks[set->n++] = (struct ta_xmark){a->ns, a->t->index};
	return (long)(set - x->sets);
}

static int xmark_cmp(const void *a, const void *b)
{
	const struct ta_xmark *x = a, *y = b;

	return x->ns < y->ns ? -1 : x->ns > y->ns;
}

int ta_xframes_bounds(struct ta_xframes *x, size_t k, const struct ta_timeline *tl,
		      int64_t **bounds)
{
	struct ta_xfset *set = &x->sets[k];
	int64_t *b = malloc((set->n + 1) * sizeof(*b)), first;

	*bounds = b;
	if (!b)
		return -1;
	/* The threads' marks come thread by thread, not in time order. */
	qsort(set->marks, set->n, sizeof(*set->marks), xmark_cmp);
	b[0] = set->marks[0].ns;
	if (ta_timeline_first_ns(tl, set->marks[0].thread, &first) == 0 && first < b[0])
		b[0] = first;
	/* With --time-range, the marks are those in it: so is the first
	 * frame's start. */
	if (tl->o && tl->o->from && b[0] < (int64_t)tl->o->from)
		b[0] = (int64_t)tl->o->from;
	for (size_t i = 0; i < set->n; i++)
		b[i + 1] = set->marks[i].ns;
	return 0;
}

void ta_xframes_free(struct ta_xframes *x)
{
	for (size_t k = 0; k < x->n; k++) {
		free(x->sets[k].name);
		free(x->sets[k].marks);
	}
	free(x->sets);
	memset(x, 0, sizeof(*x));
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
		/* Sliced after the run, when the marks are in time order. */
		if (ta_xframes_add(&e->xf, a) < 0)
			e->nomem = 1;
		break;
	case TA_EXT_ZONE_TEXT:
	case TA_EXT_ZONE_VALUE:
		if (a->zone_depth >= 0)
			zone_arg(e, a);
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

static void chrome_jobs_free(struct export *e)
{
	ta_opool_free(&e->q);
	free(e->q.jobs);
	for (size_t k = 0; k < e->njobs; k++) {
		struct cjob *j = &e->jobs[k];

		for (size_t i = 0; i < j->nr; i++)
			free(j->r[i].zone);
		if (j->tf)
			fclose(j->tf);
		free(j->text);
		free(j->r);
		free(j->sizes);
		free(j->out);
	}
	free(e->jobs);
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
		int64_t *b;

		if (ta_xframes_bounds(&e->xf, k, &e->tl, &b) < 0) {
			e->nomem = 1;
			return;
		}
		for (size_t i = 0; i < set->n; i++) {
			char name[300], ts[32], dur[32];

			snprintf(name, sizeof(name), "%s %zu", set->name, i);
			fprintf(e->f, "%s{\"ph\": \"X\", \"name\": ", e->events ? ",\n" : "\n");
			ta_json_str(e->f, name);
			/* No args (the set is the track's name): viewers would
			 * glue them to the slice's name. */
			fprintf(e->f,
				", \"cat\": \"frame\", \"pid\": %" PRIu32 ", \"tid\": %" PRIu64
				", \"ts\": %s, \"dur\": %s}",
				set->pid, (uint64_t)FRAME_TID_BASE + k,
				fmt_us(ts, sizeof(ts), b[i]),
				fmt_us(dur, sizeof(dur), b[i + 1] - b[i]));
			e->events++;
		}
		free(b);
	}
}

static int chrome(struct export *e)
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

		snprintf(name, sizeof(name), "frames: %s", e->xf.sets[k].name);
		chrome_meta(e, "thread_name", e->xf.sets[k].pid, FRAME_TID_BASE + k, name);
	}
	fputs("\n],\n\"displayTimeUnit\": \"ns\"}\n", e->f);
	if (e->nomem) {
		fprintf(stderr, "traceagent: %s: out of memory\n", e->path);
		return 1;
	}
	return e->tl.v.status;
}

/* ---- folded ------------------------------------------------------------------------ */

static int buf_room(struct export *e, size_t n)
{
	if (e->len + n > e->cap) {
		size_t cap = e->cap ? e->cap : 4096;
		char *b;

		while (cap < e->len + n)
			cap *= 2;
		b = realloc(e->buf, cap);
		if (!b)
			return -1;
		e->buf = b;
		e->cap = cap;
	}
	return 0;
}

/* Appends a frame name: ';' separates frames and a line ends the stack,
 * so neither may be in a name. */
static void buf_frame(struct export *e, const char *name)
{
	for (const char *p = name; *p; p++) {
		unsigned char c = (unsigned char)*p;

		e->buf[e->len++] = c == ';' ? ',' : c < 0x20 || c == 0x7f ? '?' : (char)c;
	}
}

struct folded {
	struct export *e;
	struct ta_treeview *tv;
	int fail;
};

static int folded_open(void *ctx, uint32_t n, uint32_t depth)
{
	struct folded *fo = ctx;
	struct export *e = fo->e;
	const struct ta_calltree *ct = &fo->tv->ct;
	const struct ta_ctnode *node = &ct->tree.n[n];
	char tbuf[128];
	const char *name;

	if (!depth)
		return 1;
	if (depth >= e->nat) {
		uint32_t k = e->nat ? e->nat * 2 : 64;
		size_t *at = realloc(e->at, k * sizeof(*at));

		if (!at) {
			fo->fail = 1;
			return 0;
		}
		e->at = at;
		e->nat = k;
	}
	name = ta_calltree_label(ct, node->key, tbuf, sizeof(tbuf));
	e->len = depth > 1 ? e->at[depth - 1] : 0;
	if (buf_room(e, strlen(name) + 2) < 0) {
		fo->fail = 1;
		return 0;
	}
	if (depth > 1)
		e->buf[e->len++] = ';';
	buf_frame(e, name);
	e->at[depth] = e->len;
	if (!ta_calltree_thread(ct, node->key)) {
		fwrite(e->buf, 1, e->len, e->f);
		fprintf(e->f, " %" PRIu64 "\n", e->by_calls ? node->calls : node->self);
	}
	return 1;
}

static int folded(struct export *e)
{
	struct ta_treeview tv;
	struct folded fo = {e, &tv, 0};
	int status;

	if (ta_treeview_open(&tv, e->path, &e->o.tids, e->threads) < 0) {
		status = tv.v.status;
		goto out;
	}
	status = tv.v.status;
	ta_ctree_walk(&tv.ct.tree, 0, folded_open, NULL, &fo);
	if (fo.fail) {
		fprintf(stderr, "traceagent: %s: out of memory\n", e->path);
		status = 1;
	}
out:
	ta_treeview_close(&tv);
	return status;
}

/* ---- the command ---------------------------------------------------------------------- */

enum { O_FORMAT = TA_OPT_OWN, O_BY };

static const struct ta_opt export_opts[] = {
    {"--format", TA_ARG_EQ, O_FORMAT},
    {"-o", TA_ARG_NEXT, TA_OPT_OUTPUT},
    {"--output", TA_ARG_EQ, TA_OPT_OUTPUT},
    {"--tid", TA_ARG_EQ, TA_OPT_TID},			/* ta_tlopts_take */
    {"--time-range", TA_ARG_EQ, TA_OPT_TIME_RANGE},	/* ta_tlopts_take */
    {"--min-duration", TA_ARG_EQ, TA_OPT_MIN_DURATION}, /* ta_tlopts_take */
    {"--by", TA_ARG_EQ, O_BY},
    {"--threads", TA_ARG_NONE, TA_OPT_THREADS},
    {"--srcline", TA_ARG_NONE, TA_OPT_SRCLINE},
    {"--demangle", TA_ARG_EITHER, TA_OPT_DEMANGLE},
    {NULL, TA_ARG_NONE, 0},
};

static int parse_args(int argc, char **argv, struct export *e)
{
	static const char *const formats[] = {"chrome", "folded", "perfetto", "pprof", NULL};
	static const enum format fmts[] = {FMT_CHROME, FMT_FOLDED, FMT_PERFETTO, FMT_PPROF};
	static const char *const bys[] = {"time", "calls", NULL};
	const unsigned chrome_only = TA_TLOPT_RANGE | TA_TLOPT_MINDUR;
	struct ta_opts p;
	int demangle = -1;
	int id, k;

	ta_opts_init(&p, "export", export_opts, usage, argc, argv);
	while ((id = ta_opts_next(&p)) != TA_OPT_END) {
		switch (id) {
		case TA_OPT_DEMANGLE:
			if (ta_opts_demangle(&p, &demangle))
				return 2;
			break;
		case TA_OPT_EXIT:
			return p.status;
		case TA_OPT_ARG:
			if (ta_opts_dump(&p, &e->path))
				return 2;
			break;
		case O_FORMAT:
			if (ta_opts_choice(&p, formats, &k))
				return 2;
			e->fmt = fmts[k];
			break;
		case TA_OPT_OUTPUT:
			e->out = p.val;
			break;
		case O_BY:
			if (ta_opts_choice(&p, bys, &k))
				return 2;
			e->by_calls = k == 1;
			e->folded_only = 1;
			break;
		case TA_OPT_THREADS:
			e->threads = 1;
			e->folded_only = 1;
			break;
		case TA_OPT_SRCLINE:
			if (!ta_srcline_built("export"))
				return 2;
			e->srcline = 1;
			break;
		case TA_OPT_TID:
		case TA_OPT_TIME_RANGE:
		case TA_OPT_MIN_DURATION:
			if (ta_tlopts_take(&e->o, &p))
				return 2;
			break;
		}
	}
	/* Short names in what a reader reads (folded stacks, drawn as a
	 * flame graph), whole in what a tool does. */
	ta_view_set_demangle(demangle >= 0 ? (enum ta_demangle)demangle
			     : e->fmt == FMT_FOLDED ? TA_DEMANGLE_SIMPLE
						    : TA_DEMANGLE_FULL);
	if (e->fmt == FMT_NONE) {
		ta_usage_error("export", "say --format=chrome, folded, perfetto or pprof");
		return 2;
	}
	if ((e->fmt == FMT_FOLDED || e->fmt == FMT_PPROF) && (e->o.given & chrome_only)) {
		fprintf(stderr, "traceagent export: --time-range and --min-duration are for "
				"--format=chrome and perfetto (%s sums the whole run)\n",
			e->fmt == FMT_PPROF ? "a profile" : "folded stacks");
		return 2;
	}
	if (e->fmt != FMT_FOLDED && e->folded_only) {
		fprintf(stderr, "traceagent export: --by and --threads are for --format=folded\n");
		return 2;
	}
	if (e->fmt != FMT_PPROF && e->srcline) {
		fprintf(stderr, "traceagent export: --srcline is for --format=pprof\n");
		return 2;
	}
	if (!e->out) {
		fprintf(stderr, "traceagent export: no output file given (-o FILE, or -o - for "
				"the standard output)\n");
		return 2;
	}
	return ta_opts_need_dump(&p, e->path) ? 2 : -1;
}

int ta_cmd_export(int argc, char **argv)
{
	struct export e;
	int status, fd;

	memset(&e, 0, sizeof(e));
	e.o.to = UINT64_MAX;
	status = parse_args(argc, argv, &e);
	if (status >= 0)
		goto out;
	/* A dump that cannot be opened leaves no empty output behind. */
	fd = open(e.path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "traceagent: %s: %s\n", e.path, strerror(errno));
		status = 2;
		goto out;
	}
	close(fd);
	e.f = strcmp(e.out, "-") ? fopen(e.out, "w") : stdout;
	if (!e.f) {
		fprintf(stderr, "traceagent: %s: %s\n", e.out, strerror(errno));
		status = 2;
		goto out;
	}
	switch (e.fmt) {
	case FMT_CHROME:
		status = chrome(&e);
		break;
	case FMT_FOLDED:
		status = folded(&e);
		break;
	case FMT_PERFETTO:
		status = ta_export_perfetto(e.f, e.path, &e.o);
		break;
	default:
		status = ta_export_pprof(e.f, e.path, &e.o.tids, e.srcline);
		break;
	}
	if (fflush(e.f) != 0 || ferror(e.f) || (e.f != stdout && fclose(e.f) != 0)) {
		fprintf(stderr, "traceagent: %s: %s\n", e.out, strerror(errno));
		status = status ? status : 1;
	}
	if (e.fmt == FMT_CHROME && e.tl.v.s && e.tl.v.status < 2)
		ta_timeline_warnings(&e.tl);
out:
	if (e.fmt == FMT_CHROME) {
		chrome_jobs_free(&e);
		ta_timeline_close(&e.tl);
	}
	for (uint32_t i = 0; i < e.nj; i++) {
		free(e.jname[i]);
		free(e.jcat[i]);
	}
	free(e.jname);
	free(e.jcat);
	for (size_t i = 0; i < e.nza; i++)
		free(e.za[i].text);
	free(e.za);
	ta_xframes_free(&e.xf);
	free(e.buf);
	free(e.at);
	ta_tlopts_free(&e.o);
	return status;
}
