/* SPDX-License-Identifier: MIT */
/*
 * export.c - `traceagent export`: the calls of a dump for other viewers.
 *
 * --format=chrome (export_chrome.c) writes Chrome Trace Event JSON, one
 * complete ("X") event per call as the call ends (viewers sort them), then
 * the process and thread names; it streams through the timeline
 * (timeline.c), so memory stays flat whatever the size of the dump.
 * --format=folded writes folded
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
#include "export_int.h"
#include "srcline.h"
#include "timeline.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: traceagent export --format=chrome|folded|perfetto|pprof -o FILE [OPTIONS] "
		"DUMP\n"
		"       traceagent export --format=clickhouse [OPTIONS] URL DUMP\n"
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
		"  --format=clickhouse URL DUMP  the dump's rows into ClickHouse's tables\n"
		"                        (traceagent export --format=clickhouse --help)\n"
		"  -o FILE, --output=FILE  where to write ('-' for the standard output)\n"
		"  --tid=TID[,TID...]    only these threads\n"
		"  --section=NAME        only the time inside the program's section NAME\n"
		"  -j N, --jobs=N        N threads read the dump (default: one per CPU\n"
		"                        it may use, at most 64; N up to 1024)\n"
		"  --demangle=MODE       C++ names: full (default, but for folded),\n"
		"                        simple (default for folded: without parameters\n"
		"                        and template arguments), or no (mangled)\n"
		"  --symfs=DIR           look for each module's file under DIR, at its\n"
		"                        recorded path (DIR/recorded/path)\n"
		"  --debug-dir=DIR       look for separate debug files in DIR too\n"
		"                        (DIR/.build-id/, DIR/recorded/path.debug);\n"
		"                        repeatable (see traceagent-symbols(7))\n"
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
		"clickhouse (the dump's rows into ClickHouse's tables at URL,\n"
		"http://HOST[:PORT][/?SETTINGS]; docs/clickhouse.md):\n"
		"  --host NAME           the host column (default: this host's name)\n"
		"  --recording ID        the recording column (default: the dump's file\n"
		"                        name without .trace)\n"
		"  --clickhouse-credentials FILE  user=NAME and password=SECRET lines\n"
		"  --schema [--cluster NAME]  print the tables' CREATE TABLE statements (with\n"
		"                        --cluster: NAME_local tables and Distributed ones)\n"
		"  Exit status 3: ClickHouse cannot be reached; 4: it refused an insert.\n"
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

/* ---- folded ------------------------------------------------------------------------ */

static int buf_room(struct export *e, size_t n)
{
	if (e->len + n > e->cap) {
		char *b = ta_vec_reserve(e->buf, e->len + n, &e->cap, 1, 4096);

		if (!b)
			return -1;
		e->buf = b;
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
		size_t k = e->nat;
		size_t *at = ta_vec_reserve(e->at, (size_t)depth + 1, &k, sizeof(*at), 64);

		if (!at) {
			fo->fail = 1;
			return 0;
		}
		e->at = at;
		e->nat = (uint32_t)k;
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
    {"--section", TA_ARG_EITHER, TA_OPT_SECTION},
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
    {"--symfs", TA_ARG_EITHER, TA_OPT_SYMFS},
    {"--debug-dir", TA_ARG_EITHER, TA_OPT_DEBUG_DIR},
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
	const struct ta_opts_into into = {
	    .demangle = &demangle, .dump = &e->path, .srcline = &e->srcline, .output = &e->out};

	ta_opts_init(&p, "export", export_opts, usage, argc, argv);
	while ((id = ta_opts_next_into(&p, &into)) != TA_OPT_END) {
		switch (id) {
		case TA_OPT_EXIT:
			return p.status;
		case O_FORMAT:
			if (ta_opts_choice(&p, formats, &k))
				return 2;
			e->fmt = fmts[k];
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
		case TA_OPT_TID:
		case TA_OPT_TIME_RANGE:
		case TA_OPT_MIN_DURATION:
			if (ta_tlopts_take(&e->o, &p))
				return 2;
			break;
		}
	}
	ta_view_set_demangle(demangle, e->fmt != FMT_FOLDED);
	if (e->fmt == FMT_NONE) {
		ta_usage_error("export", "say --format=chrome, folded, perfetto or pprof");
		return 2;
	}
	if ((e->fmt == FMT_FOLDED || e->fmt == FMT_PPROF) && (e->o.given & chrome_only)) {
		fprintf(stderr,
			"traceagent export: --time-range and --min-duration are for "
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

	if (ta_export_is_clickhouse(argc, argv))
		return ta_export_clickhouse(argc, argv);
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
		status = ta_export_chrome(&e);
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
		ta_export_chrome_free(&e);
		ta_timeline_close(&e.tl);
	}
	free(e.buf);
	free(e.at);
	ta_tlopts_free(&e.o);
	return status;
}
