/* SPDX-License-Identifier: MIT */
/*
 * replay.c - `traceagent replay`: the calls of each thread in time order,
 * indented by depth, with their durations.
 *
 * A call with shown callees takes two lines, "fn() {" when it starts and
 * "} /+ fn +/" with its duration when it ends; a call shown alone takes one,
 * "fn();".  The timeline (timeline.c) streams them; lines of different
 * threads interleave as the agent flushed them, each with its thread id.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cmdopts.h"
#include "commands.h"
#include "srcline.h"
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
};

static void usage(FILE *f)
{
	fprintf(f, "usage: traceagent replay [OPTIONS] DUMP\n"
		   "\n"
		   "The calls of each thread in time order, indented by depth, with their\n"
		   "durations: \"fn() {\" ... \"} /* fn */\" around shown callees, \"fn();\"\n"
		   "for a call shown alone.  Lines of different threads interleave in the\n"
		   "order the agent wrote them, each with its thread id.  Past 64 levels\n"
		   "the indentation stops and a line says its depth instead:\n"
		   "\"[depth 100000] fn();\".\n"
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
		   "  --srcline              the source file:line of each function\n"
		   "  --json                 one JSON object per call, in the order the\n"
		   "                         calls end: tid, pid, depth, name, module,\n"
		   "                         start_ns, duration_ns, self_ns, open,\n"
		   "                         unwound (left by longjmp or an exception)\n"
		   "  -j N, --jobs=N         N threads read the dump (default: one per CPU\n"
		   "                         it may use, at most 64; N up to 1024)\n"
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
}

static const char *srcline(struct replay *r, uint32_t id)
{
	const struct ta_fn *fn = &r->tl.fns.fn[id];

	if (id >= r->nsrc) {
		uint32_t n = r->nsrc ? r->nsrc : 256;
		const char **s;
		uint8_t *d;

		while (n <= id)
			n *= 2;
		s = realloc(r->src, n * sizeof(*s));
		if (s)
			r->src = s;
		d = realloc(r->src_done, n);
		if (d)
			r->src_done = d;
		if (!s || !d)
			return NULL;
		memset(r->src_done + r->nsrc, 0, n - r->nsrc);
		r->nsrc = n;
	}
	if (!r->src_done[id]) {
		r->src_done[id] = 1;
		r->src[id] = fn->module[0] ? ta_srcline(r->sl, fn->module, fn->offset) : NULL;
	}
	return r->src[id];
}

/* Deeper than this, a line is indented as deep as this and says its depth
 * ("[depth N] "): a line stays short however deep the recursion. */
#define INDENT_MAX 64

static void indent(struct replay *r, uint32_t depth)
{
	fputs(ta_spaces(&r->indent, 2 * (size_t)(depth < INDENT_MAX ? depth : INDENT_MAX)), stdout);
	if (depth > INDENT_MAX)
		printf("[depth %" PRIu32 "] ", depth);
}

static void json_call(struct replay *r, const struct ta_tlcall *c)
{
	const struct ta_fn *fn = &r->tl.fns.fn[c->fn];

	printf("{\"tid\": %" PRIu64 ", \"pid\": %" PRIu32 ", \"depth\": %" PRIu32 ", \"name\": ",
	       c->t->tid, c->t->pid, c->depth);
	ta_json_str(stdout, fn->name);
	printf(", \"module\": ");
	ta_json_str(stdout, fn->module);
	printf(", \"start_ns\": %" PRId64 ", \"duration_ns\": %" PRIu64 ", \"self_ns\": %" PRIu64
	       ", \"open\": %s, \"unwound\": %s",
	       c->start_ns, c->dur_ns, c->self_ns, c->flags & TA_VISIT_OPEN ? "true" : "false",
	       c->flags & TA_VISIT_UNWOUND ? "true" : "false");
	if (r->srcline) {
		const char *s = srcline(r, c->fn);

		printf(", \"srcline\": ");
		if (s)
			ta_json_str(stdout, s);
		else
			printf("null");
	}
	printf("}\n");
}

/* Printed with the first line, so that a dump that cannot be read shows
 * only its error. */
static void header(struct replay *r)
{
	if (r->json || r->header)
		return;
	r->header = 1;
	if (r->time)
		printf("%12s ", "time");
	printf("%12s %8s  %s\n", "duration", "tid", "function");
}

static void emit(void *ctx, const struct ta_tlcall *c)
{
	struct replay *r = ctx;
	const struct ta_fn *fn = &r->tl.fns.fn[c->fn];
	const char *src = r->srcline ? srcline(r, c->fn) : NULL, *parens;
	char dur[32], at[32];

	if (r->json) {
		if (c->kind != TA_TL_ENTER)
			json_call(r, c);
		return;
	}
	header(r);
	if (r->time) {
		int64_t t = c->start_ns;

		if (c->kind == TA_TL_EXIT)
			t += (int64_t)c->dur_ns;
		ta_fmt_time(at, sizeof(at), t > 0 ? (uint64_t)t : 0);
		printf("%12s ", at);
	}
	printf("%12s %8" PRIu64 "  ",
	       c->kind == TA_TL_ENTER ? "" : ta_fmt_time(dur, sizeof(dur), c->dur_ns), c->t->tid);
	indent(r, c->depth);
	/* A C++ name has its parameter list already. */
	parens = ta_name_has_params(fn->name) ? "" : "()";
	switch (c->kind) {
	case TA_TL_ENTER:
		printf("%s%s {", fn->name, parens);
		break;
	case TA_TL_EXIT:
		printf("} /* %s */", fn->name);
		src = NULL; /* it was on the first line */
		break;
	case TA_TL_CALL:
		printf("%s%s;", fn->name, parens);
		break;
	}
	if (src)
		printf(" /* %s */", src);
	if (c->kind != TA_TL_EXIT && !strcmp(fn->module, TA_LIBCALL_MODULE))
		fputs(" " TA_LIBCALL_MODULE, stdout);
	if (c->kind != TA_TL_EXIT && !strcmp(fn->module, TA_ZONE_MODULE))
		fputs(" " TA_ZONE_MODULE, stdout);
	if (c->kind != TA_TL_ENTER && (c->flags & TA_VISIT_OPEN))
		printf(" (open at the end)");
	if (c->kind != TA_TL_ENTER && (c->flags & TA_VISIT_UNWOUND))
		printf(" (left by longjmp or an exception)");
	putchar('\n');
}

/* The shortest of %.15g and %.17g that reads back as v (0.1, not
 * 0.10000000000000001). */
static void print_double(double v)
{
	char buf[40];

	snprintf(buf, sizeof(buf), "%.15g", v);
	if (strtod(buf, NULL) != v && isfinite(v))
		snprintf(buf, sizeof(buf), "%.17g", v);
	fputs(buf, stdout);
}

/* A text between quotes, as stored: control characters, quotes and
 * backslashes escaped, so that one event stays one line. */
static void quoted(const char *s, uint32_t len)
{
	putchar('"');
	for (uint32_t k = 0; k < len; k++) {
		unsigned char ch = (unsigned char)s[k];

		if (ch == '"' || ch == '\\')
			printf("\\%c", ch);
		else if (ch == '\n')
			fputs("\\n", stdout);
		else if (ch == '\t')
			fputs("\\t", stdout);
		else if (ch < 0x20 || ch == 0x7f)
			printf("\\x%02x", ch);
		else
			putchar(ch);
	}
	putchar('"');
}

static void json_api(const struct ta_tlapi *a)
{
	const struct ta_apiev *e = a->e;

	printf("{\"tid\": %" PRIu64 ", \"pid\": %" PRIu32 ", \"depth\": %" PRIu32
	       ", \"event\": \"%s\", \"name\": ",
	       a->t->tid, a->t->pid, a->depth, ta_apiev_kind_name(e->kind));
	ta_json_str(stdout, e->name);
	printf(", \"channel\": ");
	ta_json_str(stdout, a->channel);
	printf(", \"time_ns\": %" PRId64, a->ns);
	switch (e->kind) {
	case TA_EXT_COUNTER:
		if (e->is_double && !isfinite(e->d))
			printf(", \"value\": null, \"non_finite\": \"%g\"", e->d);
		else if (e->is_double) {
			printf(", \"value\": ");
			print_double(e->d);
		} else {
			printf(", \"value\": %" PRId64, e->i);
		}
		break;
	case TA_EXT_MESSAGE:
	case TA_EXT_ZONE_TEXT:
		printf(", \"text\": ");
		ta_json_str(stdout, e->text);
		printf(", \"cut\": %s", e->cut ? "true" : "false");
		break;
	case TA_EXT_ZONE_VALUE:
		printf(", \"value\": %" PRIu64, e->value);
		break;
	case TA_EXT_CHANNEL:
		printf(", \"on\": %s", e->on ? "true" : "false");
		break;
	}
	printf("}\n");
}

/*
 * One line per event, marked by its first character: "! message",
 * "* instant", "# counter", "| frame", "+ zone text/value", "~ channel",
 * "? zone end" (an END without a zone).  A channel other than "user" is
 * named after it.
 */
static void api(void *ctx, const struct ta_tlapi *a)
{
	struct replay *r = ctx;
	const struct ta_apiev *e = a->e;
	char at[32];

	if (r->json) {
		json_api(a);
		return;
	}
	header(r);
	if (r->time)
		printf("%12s ", ta_fmt_time(at, sizeof(at), a->ns > 0 ? (uint64_t)a->ns : 0));
	printf("%12s %8" PRIu64 "  ", "", a->t->tid);
	indent(r, a->depth);
	switch (e->kind) {
	case TA_EXT_MESSAGE:
		fputs("! message ", stdout);
		quoted(e->text, e->text_len);
		break;
	case TA_EXT_INSTANT:
		printf("* instant %s", e->name);
		break;
	case TA_EXT_COUNTER:
		printf("# counter %s = ", e->name);
		if (e->is_double)
			print_double(e->d);
		else
			printf("%" PRId64, e->i);
		break;
	case TA_EXT_FRAME:
		printf("| frame %s", e->name);
		break;
	case TA_EXT_ZONE_TEXT:
		fputs("+ zone text ", stdout);
		quoted(e->text, e->text_len);
		break;
	case TA_EXT_ZONE_VALUE:
		printf("+ zone value %" PRIu64, e->value);
		break;
	case TA_EXT_CHANNEL:
		printf("~ channel %s %s", a->channel, e->on ? "on" : "off");
		break;
	case TA_EXT_ZONE_UNMATCHED:
		fputs("? zone end without a zone begun", stdout);
		if (e->site)
			printf(" (%s:%" PRIu32 ")", e->site->file, e->site->line);
		break;
	}
	if (e->cut)
		printf(" (cut at %u bytes)", TA_TEXT_MAX);
	if (e->kind != TA_EXT_CHANNEL && strcmp(a->channel, "user"))
		printf(" [%s]", a->channel);
	putchar('\n');
}

enum { O_TIME = TA_OPT_OWN };

static const struct ta_opt replay_opts[] = {
    {"--tid", TA_ARG_EQ, TA_OPT_TID},			/* ta_tlopts_take */
    {"--time-range", TA_ARG_EQ, TA_OPT_TIME_RANGE},	/* ta_tlopts_take */
    {"--depth", TA_ARG_EQ, TA_OPT_DEPTH},		/* ta_tlopts_take */
    {"--min-duration", TA_ARG_EQ, TA_OPT_MIN_DURATION}, /* ta_tlopts_take */
    {"--function", TA_ARG_EQ, TA_OPT_FUNCTION},		/* ta_tlopts_take */
    {"--time", TA_ARG_NONE, O_TIME},
    {"--srcline", TA_ARG_NONE, TA_OPT_SRCLINE},
    {"--json", TA_ARG_NONE, TA_OPT_JSON},
    {NULL, TA_ARG_NONE, 0},
};

static int parse_args(int argc, char **argv, struct replay *r)
{
	struct ta_opts p;
	int id;

	ta_opts_init(&p, "replay", replay_opts, usage, argc, argv);
	while ((id = ta_opts_next(&p)) != TA_OPT_END) {
		switch (id) {
		case TA_OPT_EXIT:
			return p.status;
		case TA_OPT_ARG:
			if (ta_opts_dump(&p, &r->path))
				return 2;
			break;
		case TA_OPT_JSON:
			r->json = 1;
			break;
		case TA_OPT_SRCLINE:
			if (!ta_srcline_built("replay"))
				return 2;
			r->srcline = 1;
			break;
		case O_TIME:
			r->time = 1;
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
	return ta_opts_need_dump(&p, r->path) ? 2 : -1;
}

int ta_cmd_replay(int argc, char **argv)
{
	struct replay r;
	int status;

	memset(&r, 0, sizeof(r));
	r.o.to = UINT64_MAX;
	status = parse_args(argc, argv, &r);
	if (status >= 0)
		goto out;
	if (r.srcline)
		r.sl = ta_srclines_new();
	if (ta_timeline_run_api(&r.tl, r.path, &r.o, emit, api, &r) < 0) {
		status = r.tl.v.status;
		goto out;
	}
	status = r.tl.v.status;
	header(&r);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "traceagent: writing the replay: %s\n", strerror(errno));
		status = 1;
	}
	ta_timeline_warnings(&r.tl);
out:
	ta_timeline_close(&r.tl);
	ta_srclines_free(r.sl);
	ta_tlopts_free(&r.o);
	free(r.src);
	free(r.src_done);
	ta_spaces_free(&r.indent);
	return status;
}
