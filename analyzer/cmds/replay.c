/* SPDX-License-Identifier: MIT */
/*
 * replay.c - `traceagent replay`: the calls of each thread in time order,
 * indented by depth, with their durations.
 *
 * A call with shown callees takes two lines, "fn() {" when it starts and
 * "} /+ fn +/" with its duration when it ends; a call shown alone takes one,
 * "fn();".  The timeline (timeline.c) streams them, each thread's in its
 * time order, the threads as the agent flushed them: they are sorted by
 * time at the end (or, with --per-thread, printed as they come).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "grow.h"
#include "cmdopts.h"
#include "commands.h"
#include "srcline.h"
#include "apimem.h"
#include "timeline.h"

struct replay {
	const char *path;
	struct ta_tlopts o;
	int json, srcline, time;
	int header; /* the column titles went out */
	struct ta_timeline tl;
	struct ta_srclines *sl;
	const char **src; /* by function id, once looked up */
	uint8_t *src_done;
	uint32_t nsrc;
	struct ta_spaces indent;
	FILE *out; /* where a line is written: stdout, or line with interleaving */

	/* Interleaving (without --per-thread): each thread's lines come in its
	 * time order but the threads one after another, so every line goes to
	 * a temporary file and an index of its time and place, sorted at the
	 * end: memory grows by an index entry per line, the lines stay on
	 * disk. */
	int per_thread;
	FILE *line; /* the line being written (open_memstream) */
	char *line_buf;
	size_t line_len;
	int tmp;	   /* the temporary file, unlinked; -1 for none */
	uint64_t tmp_size; /* bytes written to it */
	struct replay_line *lines;
	size_t nlines, cap;
	int failed; /* a line was lost (no memory, the file could not be written) */
	/* The fiber each thread runs (apimem.h): its calls' lines name it. */
	struct ta_fibers fibers;
};

/* A line in the temporary file: when it happened and where it is. */
struct replay_line {
	int64_t t;
	uint64_t off; /* in the file: the order lines of the same time keep */
	uint64_t len;
};

static void usage(FILE *f)
{
	fprintf(f, "usage: traceagent replay [OPTIONS] DUMP\n"
		   "\n"
		   "The calls of each thread in time order, indented by depth, with their\n"
		   "durations: \"fn() {\" ... \"} /* fn */\" around shown callees, \"fn();\"\n"
		   "for a call shown alone.  The lines of all threads interleave by time\n"
		   "(a call's start; its end on \"} /* fn */\"), each with its thread id.\n"
		   "Past 64 levels the indentation stops and a line says its depth\n"
		   "instead: \"[depth 100000] fn();\".\n"
		   "\n"
		   "  --tid=TID[,TID...]     only these threads\n"
		   "  --time-range=START-END only calls that overlap this time, from the\n"
		   "                         dump's start (10ms-1.5s, 200us-, -2s)\n"
		   "  --depth=N              only N levels of calls\n"
		   "  --min-duration=TIME    only calls that lasted at least TIME (10us)\n"
		   "  --function=GLOB        only calls made under a function matching GLOB\n"
		   "                         (demangled names; '*', '?', [set]); its\n"
		   "                         calls start at depth 0\n"
		   "  --time                 add a column with the time of each line\n"
		   "  --per-thread           the lines in the order the agent wrote them:\n"
		   "                         threads in blocks, not interleaved by time\n"
		   "  --srcline              the source file:line of each function\n"
		   "  --json                 one JSON object per call, in the order the\n"
		   "                         calls end (all threads; with --per-thread,\n"
		   "                         each block's): tid, pid, depth, name, module,\n"
		   "                         start_ns, duration_ns, self_ns, open,\n"
		   "                         partial (its start a guess), unwound (left\n"
		   "                         by longjmp or an exception)\n"
		   "  --section=NAME         only the time inside the program's section NAME\n"
		   "  -j N, --jobs=N         N threads read the dump (default: one per CPU\n"
		   "                         it may use, at most 64; N up to 1024)\n"
		   "  --demangle=MODE        C++ names: simple (default: without\n"
		   "                         parameters and template arguments; full for\n"
		   "                         --json), full, or no (mangled)\n"
		   "  --symfs=DIR            look for each module's file under DIR, at its\n"
		   "                         recorded path (DIR/recorded/path)\n"
		   "  --debug-dir=DIR        look for separate debug files in DIR too\n"
		   "                         (DIR/.build-id/, DIR/recorded/path.debug);\n"
		   "                         repeatable (see traceagent-symbols(7))\n"
		   "  -h, --help             this help\n"
		   "\n"
		   "The manual API's events take one line each at their time, under the\n"
		   "call they happened in: \"! message TEXT\", \"* instant NAME\", \"# counter\n"
		   "NAME = VALUE\", \"| frame SET\", \"+ zone text TEXT\", \"+ zone value N\",\n"
		   "\"~ channel NAME on|off\", \"? zone end without a zone begun\" (texts quoted\n"
		   "and escaped; a channel other than user named after it as [NAME]); with\n"
		   "--json, objects with an \"event\" key.  --min-duration hides them.\n"
		   "\n"
		   "A call is shown with its callers, which the filters never hide.  Exit\n"
		   "status: 0 for a whole dump, 1 when it is damaged or incomplete, 2 for\n"
		   "usage errors or a file that cannot be opened.\n");
	fprintf(f, "\n"
		   "Memory, lock names and fibers: \"@ alloc POOL 0xPTR N bytes\", \"@ free\n"
		   "POOL 0xPTR\", \"= lock 0xADDR named NAME\", \"> fiber NAME\", \"< fiber\n"
		   "NAME\"; an event made inside a fiber, and the last line of a call made\n"
		   "inside one run of a fiber, end with [fiber NAME] (a \"fiber\" key with\n"
		   "--json).\n");
}

static const char *srcline(struct replay *r, uint32_t id)
{
	const struct ta_fn *fn = &r->tl.fns.fn[id].id;

	if (id >= r->nsrc) {
		/* Two arrays of one capacity: nsrc set once both have it. */
		size_t n = r->nsrc;
		const char **s =
		    ta_vec_reserve_max(r->src, (size_t)id + 1, &n, sizeof(*s), 256, UINT32_MAX);
		uint8_t *d;

		if (s)
			r->src = s;
		n = r->nsrc;
		d = ta_vec_reserve_max(r->src_done, (size_t)id + 1, &n, 1, 256, UINT32_MAX);
		if (d)
			r->src_done = d;
		if (!s || !d)
			return NULL;
		memset(r->src_done + r->nsrc, 0, n - r->nsrc);
		r->nsrc = (uint32_t)n;
	}
	if (!r->src_done[id]) {
		r->src_done[id] = 1;
		r->src[id] = fn->module[0] ? ta_srcline(r->sl, fn->module, fn->offset) : NULL;
	}
	return r->src[id];
}

/* A line begins that happened at t (ns from the dump's start). */
static void line_begin(struct replay *r, int64_t t)
{
	if (r->per_thread)
		return;
	rewind(r->line);
	if (r->nlines == r->cap) {
		struct replay_line *l =
		    ta_vec_reserve(r->lines, r->nlines + 1, &r->cap, sizeof(*l), 4096);

		if (!l) {
			r->failed = ENOMEM;
			return;
		}
		r->lines = l;
	}
	r->lines[r->nlines].t = t;
}

/* The line ends (its '\n' was written): to the file, and indexed. */
static void line_end(struct replay *r)
{
	struct replay_line *l;
	size_t done = 0;

	if (r->per_thread || r->failed)
		return;
	if (fflush(r->line) != 0) {
		r->failed = ENOMEM;
		return;
	}
	while (done < r->line_len) {
		ssize_t n = write(r->tmp, r->line_buf + done, r->line_len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			r->failed = n < 0 ? errno : ENOSPC;
			return;
		}
		done += (size_t)n;
	}
	l = &r->lines[r->nlines++];
	l->off = r->tmp_size;
	l->len = r->line_len;
	r->tmp_size += r->line_len;
}

static int line_cmp(const void *a, const void *b)
{
	const struct replay_line *x = a, *y = b;

	if (x->t != y->t)
		return x->t < y->t ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* Sets up the interleaving: a temporary file in $TMPDIR (or /tmp).  0, or
 * -1 with the message printed.  Without a temporary file the view is
 * still shown, in --per-thread's order, which needs none: one line on
 * stderr says so. */
static int lines_open(struct replay *r)
{
	const char *dir = getenv("TMPDIR");
	char *path;

	if (!dir || !*dir)
		dir = "/tmp";
	if (asprintf(&path, "%s/traceagent-replay-XXXXXX", dir) < 0) {
		fprintf(stderr, "traceagent replay: out of memory\n");
		return -1;
	}
	r->tmp = mkstemp(path);
	if (r->tmp < 0) {
		fprintf(stderr,
			"traceagent replay: %s: cannot create a temporary file to interleave the "
			"threads (%s): the lines are in the order the agent wrote them, as with "
			"--per-thread (TMPDIR names the directory)\n",
			dir, strerror(errno));
		free(path);
		r->per_thread = 1;
		return 0;
	}
	unlink(path);
	free(path);
	r->line = open_memstream(&r->line_buf, &r->line_len);
	if (!r->line) {
		fprintf(stderr, "traceagent replay: out of memory\n");
		return -1;
	}
	r->out = r->line;
	return 0;
}

/* Writes the lines in time order.  0, or -1 with the message printed. */
static int lines_write(struct replay *r)
{
	char *map;

	if (r->failed) {
		fprintf(stderr, "traceagent replay: interleaving the threads' lines: %s\n",
			strerror(r->failed));
		return -1;
	}
	if (!r->nlines)
		return 0;
	qsort(r->lines, r->nlines, sizeof(*r->lines), line_cmp);
	map = mmap(NULL, r->tmp_size, PROT_READ, MAP_PRIVATE, r->tmp, 0);
	if (map == MAP_FAILED) {
		fprintf(stderr, "traceagent replay: reading back the threads' lines: %s\n",
			strerror(errno));
		return -1;
	}
	for (size_t k = 0; k < r->nlines; k++)
		fwrite(map + r->lines[k].off, 1, r->lines[k].len, stdout);
	munmap(map, r->tmp_size);
	return 0;
}

/* Deeper than this, a line is indented as deep as this and says its depth
 * ("[depth N] "): a line stays short however deep the recursion. */
#define INDENT_MAX 64

static void indent(struct replay *r, uint32_t depth)
{
	fputs(ta_spaces(&r->indent, 2 * (size_t)(depth < INDENT_MAX ? depth : INDENT_MAX)), r->out);
	if (depth > INDENT_MAX)
		fprintf(r->out, "[depth %" PRIu32 "] ", depth);
}

/* A call whose start is a guess (begun before its thread's first chunk,
 * or where chunks were lost): its duration is not its length. */
static int is_partial(const struct ta_tlcall *c)
{
	return !(c->flags & TA_VISIT_OPEN) && (c->flags & TA_VISIT_INCOMPLETE);
}

/* The fiber the call belongs to (apimem.h), or NULL. */
static const char *fiber_of(struct replay *r, const struct ta_tlcall *c)
{
	long f = ta_fibers_owner(&r->fibers, c->t, c->enter);

	return f < 0 ? NULL : r->fibers.names.r[f].name;
}

static void fiber_key(struct replay *r, const struct ta_tlcall *c)
{
	const char *f = fiber_of(r, c);

	if (f) {
		fprintf(r->out, ", \"fiber\": ");
		ta_json_str(r->out, f);
	}
}

static void json_call(struct replay *r, const struct ta_tlcall *c)
{
	const struct ta_fn *fn = &r->tl.fns.fn[c->fn].id;
	FILE *out = r->out;

	/* An object is written when its call ends. */
	line_begin(r, c->start_ns + (int64_t)c->dur_ns);
	fprintf(out,
		"{\"tid\": %" PRIu64 ", \"pid\": %" PRIu32 ", \"depth\": %" PRIu32 ", \"name\": ",
		c->t->tid, c->t->pid, c->depth);
	ta_json_str(out, fn->name);
	fprintf(out, ", \"module\": ");
	ta_json_str(out, fn->module);
	fprintf(out,
		", \"start_ns\": %" PRId64 ", \"duration_ns\": %" PRIu64 ", \"self_ns\": %" PRIu64
		", \"open\": %s, \"partial\": %s, \"unwound\": %s",
		c->start_ns, c->dur_ns, c->self_ns, c->flags & TA_VISIT_OPEN ? "true" : "false",
		is_partial(c) ? "true" : "false", c->flags & TA_VISIT_UNWOUND ? "true" : "false");
	fiber_key(r, c);
	if (c->args) {
		char text[TA_ARGS_STR_MAX * 4 + 64];

		/* The values as the text lines show them. */
		fputs(", \"args\": [", out);
		for (uint32_t i = 0; i < c->args->nargs; i++) {
			fputs(i ? ", " : "", out);
			ta_json_str(out, ta_argval_text(&c->args->a[i], text, sizeof(text)));
		}
		fputc(']', out);
		if (c->args->has_ret) {
			fputs(", \"retval\": ", out);
			ta_json_str(out, ta_argval_text(&c->args->ret, text, sizeof(text)));
		}
	}
	if (r->srcline) {
		const char *s = srcline(r, c->fn);

		fprintf(out, ", \"srcline\": ");
		if (s)
			ta_json_str(out, s);
		else
			fprintf(out, "null");
	}
	fprintf(out, "}\n");
	line_end(r);
}

/* Printed with the first line, so that a dump that cannot be read shows
 * only its error. */
static void header(struct replay *r)
{
	if (r->json || r->header || !r->per_thread)
		return;
	r->header = 1;
	if (r->time)
		printf("%12s ", "time");
	printf("%12s %8s  %s\n", "duration", "tid", "function");
}

static void quoted(FILE *out, const char *s, uint32_t len);
/* "name(2, \"abc\")": the call's name with the arguments recorded (a
 * C++ name keeps its parameter list, the arguments follow it). */
static void call_name(FILE *out, const char *name, const char *parens, const struct ta_callargs *ca)
{
	fputs(name, out);
	if (!ca || !ca->nargs) {
		fputs(parens, out);
		return;
	}
	fputc('(', out);
	ta_callargs_print(out, ca);
	fputc(')', out);
}

/* " = 5" when the return value was recorded. */
static void call_ret(FILE *out, const struct ta_callargs *ca)
{
	if (!ca || !ca->has_ret)
		return;
	fputs(" = ", out);
	ta_argval_print(out, &ca->ret);
}

static void emit(void *ctx, const struct ta_tlcall *c)
{
	struct replay *r = ctx;
	const struct ta_fn *fn = &r->tl.fns.fn[c->fn].id;
	const char *src = r->srcline ? srcline(r, c->fn) : NULL, *parens;
	char dur[32], at[32];
	FILE *out = r->out;
	int64_t t = c->start_ns;

	if (r->json) {
		if (c->kind != TA_TL_ENTER)
			json_call(r, c);
		return;
	}
	header(r);
	if (c->kind == TA_TL_EXIT)
		t += (int64_t)c->dur_ns;
	line_begin(r, t);
	if (r->time) {
		ta_fmt_time(at, sizeof(at), t > 0 ? (uint64_t)t : 0);
		fprintf(out, "%12s ", at);
	}
	fprintf(out, "%12s %8" PRIu64 "  ",
		c->kind == TA_TL_ENTER ? "" : ta_fmt_time(dur, sizeof(dur), c->dur_ns), c->t->tid);
	indent(r, c->depth);
	/* A C++ name has its parameter list already. */
	parens = ta_name_has_params(fn->name) ? "" : "()";
	switch (c->kind) {
	case TA_TL_ENTER:
		call_name(out, fn->name, parens, c->args);
		fputs(" {", out);
		break;
	case TA_TL_EXIT:
		fputc('}', out);
		call_ret(out, c->args);
		fprintf(out, " /* %s */", fn->name);
		src = NULL; /* it was on the first line */
		break;
	case TA_TL_CALL:
		call_name(out, fn->name, parens, c->args);
		call_ret(out, c->args);
		fputc(';', out);
		break;
	}
	if (src)
		fprintf(out, " /* %s */", src);
	if (c->kind != TA_TL_EXIT && !strcmp(fn->module, TA_LIBCALL_MODULE))
		fputs(" " TA_LIBCALL_MODULE, out);
	if (c->kind != TA_TL_EXIT && !strcmp(fn->module, TA_ZONE_MODULE))
		fputs(" " TA_ZONE_MODULE, out);
	if (c->kind != TA_TL_ENTER && (c->flags & TA_VISIT_OPEN))
		fprintf(out, " (open at the end)");
	if (c->kind != TA_TL_ENTER && is_partial(c))
		fprintf(out, " (partial: begun before the dump says)");
	if (c->kind != TA_TL_ENTER && (c->flags & TA_VISIT_UNWOUND))
		fprintf(out, " (left by longjmp or an exception)");
	/* Known at the call's end: its first line cannot say. */
	if (c->kind != TA_TL_ENTER && fiber_of(r, c)) {
		fputs(" [fiber ", out);
		quoted(out, fiber_of(r, c), (uint32_t)strlen(fiber_of(r, c)));
		fputc(']', out);
	}
	fputc('\n', out);
	line_end(r);
}

/* The shortest of %.15g and %.17g that reads back as v (0.1, not
 * 0.10000000000000001). */
static void print_double(FILE *out, double v)
{
	char buf[40];

	snprintf(buf, sizeof(buf), "%.15g", v);
	if (strtod(buf, NULL) != v && isfinite(v))
		snprintf(buf, sizeof(buf), "%.17g", v);
	fputs(buf, out);
}

/* A text between quotes, as stored: control characters, quotes and
 * backslashes escaped, so that one event stays one line. */
static void quoted(FILE *out, const char *s, uint32_t len)
{
	fputc('"', out);
	for (uint32_t k = 0; k < len; k++) {
		unsigned char ch = (unsigned char)s[k];

		if (ch == '"' || ch == '\\')
			fprintf(out, "\\%c", ch);
		else if (ch == '\n')
			fputs("\\n", out);
		else if (ch == '\t')
			fputs("\\t", out);
		else if (ch < 0x20 || ch == 0x7f)
			fprintf(out, "\\x%02x", ch);
		else
			fputc(ch, out);
	}
	fputc('"', out);
}

static void json_api(struct replay *r, const struct ta_tlapi *a, const char *fiber)
{
	const struct ta_apiev *e = a->e;
	FILE *out = r->out;

	fprintf(out,
		"{\"tid\": %" PRIu64 ", \"pid\": %" PRIu32 ", \"depth\": %" PRIu32
		", \"event\": \"%s\", \"name\": ",
		a->t->tid, a->t->pid, a->depth, ta_apiev_kind_name(e->kind));
	ta_json_str(out, e->name);
	fprintf(out, ", \"channel\": ");
	ta_json_str(out, a->channel);
	fprintf(out, ", \"time_ns\": %" PRId64, a->ns);
	switch (e->kind) {
	case TA_EXT_COUNTER:
		if (e->is_double && !isfinite(e->d))
			fprintf(out, ", \"value\": null, \"non_finite\": \"%g\"", e->d);
		else if (e->is_double) {
			fprintf(out, ", \"value\": ");
			print_double(out, e->d);
		} else {
			fprintf(out, ", \"value\": %" PRId64, e->i);
		}
		break;
	case TA_EXT_MESSAGE:
	case TA_EXT_ZONE_TEXT:
	case TA_EXT_APP_INFO:
		fprintf(out, ", \"text\": ");
		ta_json_str(out, e->text);
		fprintf(out, ", \"cut\": %s", e->cut ? "true" : "false");
		break;
	case TA_EXT_ZONE_VALUE:
		fprintf(out, ", \"value\": %" PRIu64, e->value);
		break;
	case TA_EXT_CHANNEL:
		fprintf(out, ", \"on\": %s", e->on ? "true" : "false");
		break;
	case TA_EXT_COUNTER_CONFIG:
		fprintf(out, ", \"unit\": \"%s\"",
			e->unit == TA_UNIT_BYTES_     ? "bytes"
			: e->unit == TA_UNIT_PERCENT_ ? "percent"
						      : "number");
		break;
	case TA_EXT_POOL_ALLOC:
	case TA_EXT_POOL_FREE:
		fprintf(out, ", \"ptr\": %" PRIu64, e->ptr);
		if (e->kind == TA_EXT_POOL_ALLOC)
			fprintf(out, ", \"size\": %" PRIu64, e->size);
		break;
	case TA_EXT_LOCK_NAME:
		fprintf(out, ", \"lock\": %" PRIu64, e->ptr);
		/* fallthrough */
	case TA_EXT_FIBER_ENTER:
		fprintf(out, ", \"text\": ");
		ta_json_str(out, e->text);
		fprintf(out, ", \"cut\": %s", e->cut ? "true" : "false");
		break;
	}
	if (fiber)
		fprintf(out, ", \"fiber\": "), ta_json_str(out, fiber);
	fprintf(out, "}\n");
	line_end(r);
}

/*
 * One line per event, marked by its first character: "! message",
 * "* instant", "# counter", "| frame", "+ zone text/value", "~ channel",
 * "? zone end" (an END without a zone), "| frame begin/end" (frames with
 * gaps), "> section" and "< section" (entered, left), "# counter NAME
 * unit", "! app info", "@ alloc/free" (a pool's block), "= lock" (a
 * lock's name), "> fiber" and "< fiber" (a fiber entered and left; an
 * event inside one names it).  A channel other than "user" is named after
 * it.
 */
static void api(void *ctx, const struct ta_tlapi *a)
{
	struct replay *r = ctx;
	const struct ta_apiev *e = a->e;
	char at[32];
	FILE *out = r->out;
	long f = ta_fibers_now(&r->fibers, a->t);
	/* An event in a fiber is the fiber's; a LEAVE names the one left. */
	const char *fiber = f >= 0 ? r->fibers.names.r[f].name : NULL;

	if (ta_fibers_take(&r->fibers, a->t, e) > 0 && e->kind == TA_EXT_FIBER_ENTER)
		fiber = NULL;
	line_begin(r, a->ns);
	if (r->json) {
		json_api(r, a, fiber);
		return;
	}
	header(r);
	if (r->time)
		fprintf(out, "%12s ", ta_fmt_time(at, sizeof(at), a->ns > 0 ? (uint64_t)a->ns : 0));
	fprintf(out, "%12s %8" PRIu64 "  ", "", a->t->tid);
	indent(r, a->depth);
	switch (e->kind) {
	case TA_EXT_MESSAGE:
		fputs("! message ", out);
		quoted(out, e->text, e->text_len);
		break;
	case TA_EXT_INSTANT:
		fprintf(out, "* instant %s", e->name);
		break;
	case TA_EXT_COUNTER:
		fprintf(out, "# counter %s = ", e->name);
		if (e->is_double)
			print_double(out, e->d);
		else
			fprintf(out, "%" PRId64, e->i);
		break;
	case TA_EXT_FRAME:
		fprintf(out, "| frame %s", e->name);
		break;
	case TA_EXT_ZONE_TEXT:
		fputs("+ zone text ", out);
		quoted(out, e->text, e->text_len);
		break;
	case TA_EXT_ZONE_VALUE:
		fprintf(out, "+ zone value %" PRIu64, e->value);
		break;
	case TA_EXT_CHANNEL:
		fprintf(out, "~ channel %s %s", a->channel, e->on ? "on" : "off");
		break;
	case TA_EXT_ZONE_UNMATCHED:
		fputs("? zone end without a zone begun", out);
		if (e->site)
			fprintf(out, " (%s:%" PRIu32 ")", e->site->file, e->site->line);
		break;
	case TA_EXT_FRAME_BEGIN:
	case TA_EXT_FRAME_END:
		fprintf(out, "| frame %s %s", e->kind == TA_EXT_FRAME_BEGIN ? "begin" : "end",
			e->name);
		break;
	case TA_EXT_SECTION_ENTER:
	case TA_EXT_SECTION_LEAVE:
		fprintf(out, "%c section %s", e->kind == TA_EXT_SECTION_ENTER ? '>' : '<', e->name);
		break;
	case TA_EXT_COUNTER_CONFIG:
		fprintf(out, "# counter %s unit %s", e->name,
			e->unit == TA_UNIT_BYTES_     ? "bytes"
			: e->unit == TA_UNIT_PERCENT_ ? "percent"
						      : "number");
		break;
	case TA_EXT_APP_INFO:
		fputs("! app info ", out);
		quoted(out, e->text, e->text_len);
		break;
	case TA_EXT_POOL_ALLOC:
		fprintf(out, "@ alloc %s 0x%" PRIx64 " %" PRIu64 " bytes", e->name, e->ptr,
			e->size);
		break;
	case TA_EXT_POOL_FREE:
		fprintf(out, "@ free %s 0x%" PRIx64, e->name, e->ptr);
		break;
	case TA_EXT_LOCK_NAME:
		fprintf(out, "= lock 0x%" PRIx64 " named ", e->ptr);
		quoted(out, e->text, e->text_len);
		break;
	case TA_EXT_FIBER_ENTER:
		fputs("> fiber ", out);
		quoted(out, e->text, e->text_len);
		break;
	case TA_EXT_FIBER_LEAVE:
		fputs(fiber ? "< fiber" : "< fiber (none running)", out);
		break;
	}
	if (fiber) {
		fputs(e->kind == TA_EXT_FIBER_LEAVE ? " " : " [fiber ", out);
		quoted(out, fiber, (uint32_t)strlen(fiber));
		if (e->kind != TA_EXT_FIBER_LEAVE)
			fputc(']', out);
	}
	if (e->cut)
		fprintf(out, " (cut at %u bytes)",
			ta_apiev_mem_kind(e->kind) ? TA_NAME_MAX : TA_TEXT_MAX);
	if (e->kind != TA_EXT_CHANNEL && strcmp(a->channel, "user"))
		fprintf(out, " [%s]", a->channel);
	fputc('\n', out);
	line_end(r);
}

enum { O_TIME = TA_OPT_OWN, O_PER_THREAD };

static const struct ta_opt replay_opts[] = {
    {"--section", TA_ARG_EITHER, TA_OPT_SECTION},
    {"--tid", TA_ARG_EQ, TA_OPT_TID},			/* ta_tlopts_take */
    {"--time-range", TA_ARG_EQ, TA_OPT_TIME_RANGE},	/* ta_tlopts_take */
    {"--depth", TA_ARG_EQ, TA_OPT_DEPTH},		/* ta_tlopts_take */
    {"--min-duration", TA_ARG_EQ, TA_OPT_MIN_DURATION}, /* ta_tlopts_take */
    {"--function", TA_ARG_EQ, TA_OPT_FUNCTION},		/* ta_tlopts_take */
    {"--time", TA_ARG_NONE, O_TIME},
    {"--per-thread", TA_ARG_NONE, O_PER_THREAD},
    {"--srcline", TA_ARG_NONE, TA_OPT_SRCLINE},
    {"--json", TA_ARG_NONE, TA_OPT_JSON},
    {"--demangle", TA_ARG_EITHER, TA_OPT_DEMANGLE},
    {"--symfs", TA_ARG_EITHER, TA_OPT_SYMFS},
    {"--debug-dir", TA_ARG_EITHER, TA_OPT_DEBUG_DIR},
    {NULL, TA_ARG_NONE, 0},
};

static int parse_args(int argc, char **argv, struct replay *r)
{
	struct ta_opts p;
	int demangle = -1;
	int id;
	const struct ta_opts_into into = {
	    .demangle = &demangle, .dump = &r->path, .json = &r->json, .srcline = &r->srcline};

	ta_opts_init(&p, "replay", replay_opts, usage, argc, argv);
	while ((id = ta_opts_next_into(&p, &into)) != TA_OPT_END) {
		switch (id) {
		case TA_OPT_EXIT:
			return p.status;
		case O_TIME:
			r->time = 1;
			break;
		case O_PER_THREAD:
			r->per_thread = 1;
			break;
		case TA_OPT_TID:
		case TA_OPT_TIME_RANGE:
		case TA_OPT_MIN_DURATION:
		case TA_OPT_DEPTH:
		case TA_OPT_FUNCTION:
			if (ta_tlopts_take(&r->o, &p))
				return 2;
			break;
		}
	}
	ta_view_set_demangle(demangle, r->json);
	return ta_opts_need_dump(&p, r->path) ? 2 : -1;
}

int ta_cmd_replay(int argc, char **argv)
{
	struct replay r;
	int status, rc;

	memset(&r, 0, sizeof(r));
	r.o.to = UINT64_MAX;
	r.out = stdout;
	r.tmp = -1;
	status = parse_args(argc, argv, &r);
	if (status >= 0)
		goto out;
	if (!r.per_thread && lines_open(&r) < 0) {
		status = 1;
		goto out;
	}
	if (r.srcline)
		r.sl = ta_srclines_new();
	rc = ta_timeline_run_api(&r.tl, r.path, &r.o, emit, api, &r);
	status = r.tl.v.status;
	if (!r.per_thread) {
		/* What was read of a dump that stopped being readable is shown,
		 * as --per-thread shows it. */
		r.per_thread = 1;
		if (rc == 0 || r.nlines)
			header(&r);
		if (lines_write(&r) < 0 && status == 0)
			status = 1;
	}
	if (rc < 0)
		goto out;
	header(&r);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "traceagent: writing the replay: %s\n", strerror(errno));
		status = 1;
	}
	ta_timeline_warnings(&r.tl);
out:
	ta_timeline_close(&r.tl);
	ta_fibers_free(&r.fibers);
	ta_srclines_free(r.sl);
	ta_tlopts_free(&r.o);
	free(r.src);
	free(r.src_done);
	ta_spaces_free(&r.indent);
	if (r.line)
		fclose(r.line);
	free(r.line_buf);
	free(r.lines);
	if (r.tmp >= 0)
		close(r.tmp);
	return status;
}
