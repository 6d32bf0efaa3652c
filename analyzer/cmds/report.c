/* SPDX-License-Identifier: MIT */
/*
 * report.c - `traceagent report`: calls, total, self, min, max, mean and
 * percentile times per function, from one streaming pass over a dump.
 *
 * The session walks the events and the profile visitor sums them per
 * thread and function in ticks, with a bounded histogram of durations for
 * the percentiles; common.c converts the sums to ns with each process's
 * clock, names them from the modules' symbols and merges them per function
 * (module and offset, so a function forked into several processes is one
 * row).  Here the rows are filtered, sorted and printed as a table, CSV or
 * JSON.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmdopts.h"
#include "commands.h"
#include "common.h"
#include "framestat.h"
#include "libreport.h"
#include "srcline.h"

enum out_form { OUT_TEXT, OUT_JSON, OUT_CSV };

struct options {
	const char *path; /* what messages name: the DUMP, DIR or the words joined */
	/* The dumps to read (DIR's files sorted), and what was allocated. */
	const char **paths;
	size_t npaths, paths_cap;
	char **own;
	size_t nown, own_cap;
	int args; /* DUMP or DIR words given */
	enum out_form form;
	int threads;
	enum ta_sort_key sort;
	int have_tid;
	uint64_t tid;
	int have_pid;
	uint64_t pid;
	const char *function; /* glob over demangled names */
	uint64_t top;	      /* rows per table, 0 = all */
	int srcline;
	unsigned libcalls;    /* --alloc, --locks, --io: TA_LC_* sections */
	const char *channels; /* --channel, or NULL */
	int frames;	      /* --frames: per frame of a frame set */
	int by_args;	      /* --args: calls grouped by their arguments' values */
	const char *set;      /* --set */
};

struct report {
	struct options opt;
	struct ta_view v;
	struct ta_session *s; /* v.s */
	struct ta_profile prof;
	struct ta_fn *ids; /* parallel to prof.f */
	struct ta_srclines *src;
	uint32_t thread;	   /* the table being built: a thread index, or UINT32_MAX */
	struct ta_rfibers *fibers; /* the rows per fiber, or NULL: none */
};

/* ---- messages ------------------------------------------------------------------ */

static void usage(FILE *f)
{
	fprintf(f, "usage: traceagent report [--json | --csv] [--sort=total|self|calls|name]\n"
		   "                         [--threads] [--tid=TID] [--pid=PID] [--function=GLOB] "
		   "[--top=N]\n"
		   "                         [--srcline] [--alloc] [--locks] [--io]\n"
		   "                         [--channel=LIST] DUMP|DIR...\n"
		   "       traceagent report --frames [--set=NAME] [--json] [--function=GLOB] "
		   "[--top=N] DUMP\n"
		   "       traceagent report --args [--json] [--function=GLOB] [--top=N] DUMP\n"
		   "\n"
		   "Calls and times per function in a dump written by the agent.  Several\n"
		   "dumps (a recording with %%p: one per process) are one report, their\n"
		   "processes summed as those of one dump; a DIR gives every *.trace file in it.\n"
		   "\n"
		   "  --json           one JSON object instead of a table\n"
		   "  --csv            a header line and one line per function (RFC 4180\n"
		   "                   quoting); with --threads, one line per thread and\n"
		   "                   function, led by tid, pid and thread name\n"
		   "  --sort=KEY       order rows by total (default), self, calls or name\n"
		   "  --threads        also break the numbers down per thread\n"
		   "  --tid=TID        only the calls made by thread TID\n"
		   "  --pid=PID        only the calls of process PID (a dump holds forked\n"
		   "                   children too; by default they are summed)\n"
		   "  --function=GLOB  only functions whose (demangled) name matches GLOB:\n"
		   "                   * any characters, ? one, [a-z] one of a set\n"
		   "  --top=N          the first N rows of each table\n"
		   "  --srcline        the source file and line of each function (DWARF)\n"
		   "  --demangle=MODE  C++ names: simple (default for the table: without\n"
		   "                   parameters and template arguments), full (default\n"
		   "                   for --json and --csv), or no (mangled)\n"
		   "  --symfs=DIR      look for each module's file under DIR, at its\n"
		   "                   recorded path (DIR/recorded/path)\n"
		   "  --debug-dir=DIR  look for separate debug files in DIR too\n"
		   "                   (DIR/.build-id/, DIR/recorded/path.debug);\n"
		   "                   repeatable (see traceagent-symbols(7))\n"
		   "  --alloc          library calls: bytes allocated and freed per calling\n"
		   "                   function, and the bytes live at the end (never freed)\n"
		   "                   by the call path that allocated them\n"
		   "  --locks          library calls: lock wait time per caller and per lock\n"
		   "                   (named by its variable, the call path that allocated\n"
		   "                   it, or its address)\n"
		   "  --io             library calls: I/O bytes and time per fd and per caller\n"
		   "                   (these three replace the table of functions; a class\n"
		   "                   the dump did not record is said, with how to record it)\n"
		   "  --channel=LIST   only rows of these channels, a list as the agent's\n"
		   "                   TRACEAGENT_CHANNELS takes (\"functions,user\", \"-io\"):\n"
		   "                   functions are channel functions, library calls their\n"
		   "                   class (alloc, lock, io, sleep), zones their site's\n"
		   "                   channel (user or the program's own)\n"
		   "  --frames         per frame instead of totals: calls per frame and self\n"
		   "                   time per frame (avg, p99, max over the frames of the\n"
		   "                   set \"frame\", else of the first set; see `traceagent\n"
		   "                   frames`)\n"
		   "  --set=NAME       with --frames: the frames of the set NAME\n"
		   "  --section=NAME   only the time inside the program's section NAME\n"
		   "  --args           the calls of each function whose arguments were recorded,\n"
		   "                   grouped by their values: calls, total, p50 and p99 of\n"
		   "                   each value (--top: the first N values of a function)\n"
		   "  -j N, --jobs=N   N threads read the dump (default: one per CPU\n"
		   "                   it may use, at most 64; N up to 1024)\n"
		   "  -h, --help       this help\n"
		   "\n"
		   "Total counts only the outermost activation of a recursive function;\n"
		   "self is a call's own time without its direct callees; min, max, avg and\n"
		   "the percentiles p50, p90 and p99 are over every activation whose whole\n"
		   "time is known (percentiles from a histogram, within 0.4%%; min and max\n"
		   "are exact).  Calls still running when the dump ends (open) and calls\n"
		   "already running when it begins (partial) are counted apart, in calls,\n"
		   "total and self only (\"-\" where no call's whole time is known).\n"
		   "A dump whose program ran fibers (TA_FIBER_ENTER) gets a row per fiber\n"
		   "under the table: its runs, the calls made inside them (whichever thread\n"
		   "ran them), their time, its run time and its threads (JSON \"fibers\").\n"
		   "Exit status: 0 for a whole dump, 1 when it is damaged or incomplete (what\n"
		   "could be read is still reported), 2 for usage errors or a file that\n"
		   "cannot be opened.\n");
}

/* ---- choosing and sorting rows ------------------------------------------------------- */

/* The channel of a row: a zone's site's, a library call's class, else
 * "functions". */
static const char *row_channel(const struct report *r, const struct ta_fstat *f,
			       const struct ta_fn *id, char buf[32])
{
	struct ta_process *p = ta_session_process(r->s, f->pid);

	if (!p)
		return "functions";
	if (ta_fn_is_zone(id)) {
		const struct ta_site *site = ta_process_site(p, ta_process_addr(p, f->addr));

		return site ? ta_process_channel_name(p, site->channel, buf) : "user";
	}
	if (ta_fn_is_libcall(id)) {
		const struct ta_libcall *lc = ta_process_libcall(p, ta_process_addr(p, f->addr));

		switch (lc ? lc->cls : 0) {
		case TA_LC_ALLOC:
			return "alloc";
		case TA_LC_LOCK:
			return "lock";
		case TA_LC_IO:
			return "io";
		case TA_LC_SLEEP:
			return "sleep";
		}
	}
	return "functions";
}

static int keep_fstat(void *ctx, const struct ta_fstat *f, const struct ta_fn *id)
{
	const struct report *r = ctx;
	char buf[32];

	if (r->thread != UINT32_MAX && f->thread != r->thread)
		return 0;
	if (r->opt.have_tid && r->s->threads[f->thread]->tid != r->opt.tid)
		return 0;
	if (r->opt.have_pid && ta_pid_os(r->s, f->pid) != r->opt.pid)
		return 0;
	if (r->opt.channels && !ta_channel_list_has(r->opt.channels, row_channel(r, f, id, buf)))
		return 0;
	return !r->opt.function || ta_fn_glob(r->opt.function, id);
}

/* The rows of one thread (by index), or of all when thread is UINT32_MAX. */
static int table_build(struct report *r, struct ta_prof_table *t, uint32_t thread)
{
	r->thread = thread;
	return ta_prof_table_build(t, &r->v, &r->prof, &r->ids, keep_fstat, r);
}

static int row_cmp(const void *a, const void *b, void *ctx)
{
	const struct ta_prof_row *x = a, *y = b;
	const enum ta_sort_key *key = ctx;
	int c;

	switch (*key) {
	case TA_SORT_SELF:
		if (x->self != y->self)
			return x->self > y->self ? -1 : 1;
		break;
	case TA_SORT_CALLS:
		if (x->calls != y->calls)
			return x->calls > y->calls ? -1 : 1;
		break;
	case TA_SORT_NAME:
		break;
	default:
		if (x->total != y->total)
			return x->total > y->total ? -1 : 1;
		break;
	}
	c = strcmp(x->id.name, y->id.name);
	if (c)
		return c;
	c = strcmp(x->id.module, y->id.module);
	if (c)
		return c;
	return x->id.offset < y->id.offset ? -1 : x->id.offset > y->id.offset;
}

/* Sorts and cuts to --top. */
static void table_sort(struct report *r, struct ta_prof_table *t)
{
	if (t->n) /* qsort_r wants an array, even for nothing */
		qsort_r(t->rows, t->n, sizeof(*t->rows), row_cmp, &r->opt.sort);
	if (r->opt.top && t->n > r->opt.top)
		t->n = (size_t)r->opt.top;
}

static const char *srcline_of(struct report *r, const struct ta_prof_row *w)
{
	if (!r->src || !w->id.module[0])
		return NULL;
	if (w->id.where)
		return w->id.where; /* a zone: its site's */
	return ta_srcline(r->src, w->id.module, w->id.offset);
}

/* ---- text --------------------------------------------------------------------------- */

/* Whether a row of t has calls open at the end or partial. */
static int rows_incomplete(const struct ta_prof_table *t)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->rows[i].open || t->rows[i].partial)
			return 1;
	return 0;
}

/* A duration of a row whose calls' times are all unknown is "-". */
static const char *row_time(char *buf, size_t n, const struct ta_prof_row *w, uint64_t ns)
{
	if (!ta_prof_row_timed(w)) {
		snprintf(buf, n, "-");
		return buf;
	}
	return ta_fmt_time(buf, n, ns);
}

/* The table; the columns open and partial when a row has such calls.
 * Returns whether it had them. */
static int text_rows(struct report *r, const struct ta_prof_table *t)
{
	char b[8][32];
	int inc = rows_incomplete(t);

	printf("%10s %12s %12s %12s %12s %12s %12s %12s %12s", "calls", "total", "self", "min",
	       "max", "avg", "p50", "p90", "p99");
	if (inc)
		printf(" %8s %8s", "open", "partial");
	printf("  %-s  %s%s\n", "function", "module", r->src ? "  source" : "");
	for (size_t i = 0; i < t->n; i++) {
		const struct ta_prof_row *w = &t->rows[i];
		const char *line = srcline_of(r, w);

		printf("%10" PRIu64 " %12s %12s %12s %12s %12s %12s %12s %12s", w->calls,
		       ta_fmt_time(b[0], sizeof(b[0]), w->total),
		       ta_fmt_time(b[1], sizeof(b[1]), w->self),
		       row_time(b[2], sizeof(b[2]), w, w->min),
		       row_time(b[3], sizeof(b[3]), w, w->max),
		       row_time(b[4], sizeof(b[4]), w, ta_prof_row_avg(w)),
		       row_time(b[5], sizeof(b[5]), w, w->p50),
		       row_time(b[6], sizeof(b[6]), w, w->p90),
		       row_time(b[7], sizeof(b[7]), w, w->p99));
		if (inc)
			printf(" %8" PRIu64 " %8" PRIu64, w->open, w->partial);
		printf("  %s  %s", w->id.name, ta_path_base(w->id.module));
		if (r->src)
			printf("  %s", line ? line : "?");
		putchar('\n');
	}
	return inc;
}

/* Under a table with open or partial calls: what they are. */
static void text_incomplete(void)
{
	printf("open: calls still running when the dump ends; partial: calls already "
	       "running when it\nbegins (or cut by lost events).  Neither is in min, max, "
	       "avg or the percentiles;\ntheir known part is in total and self.\n");
}

/* Whether the agent left short calls out (TRACEAGENT_MIN_DURATION): its
 * threshold, or calls it counted as such. */
static int min_duration_on(const struct report *r)
{
	return r->s->min_duration_ns || r->s->short_calls;
}

/* Under the table: what the calls and times of a filtered dump mean. */
static void text_min_duration(const struct report *r)
{
	static const struct {
		const char *unit;
		uint64_t ns;
	} units[] = {
	    {"s", 1000000000},
	    {"ms", 1000000},
	    {"us", 1000},
	    {"ns", 1},
	};
	uint64_t ns = r->s->min_duration_ns;
	char t[40] = "the minimum duration";

	if (!min_duration_on(r))
		return;
	for (size_t i = 0; ns && i < sizeof(units) / sizeof(units[0]); i++) {
		if (ns % units[i].ns == 0) {
			snprintf(t, sizeof(t), "%" PRIu64 "%s", ns / units[i].ns, units[i].unit);
			break;
		}
	}
	printf("calls shorter than %s were not recorded (their counts are exact, their times "
	       "are not in total/self)\n",
	       t);
}

/* ---- CSV ------------------------------------------------------------------------------ */

/* A field as RFC 4180 wants it: quoted when it holds a comma, a quote or a
 * line break, quotes doubled. */
static void csv_field(const char *s)
{
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, stdout);
		return;
	}
	putchar('"');
	for (; *s; s++) {
		if (*s == '"')
			putchar('"');
		putchar(*s);
	}
	putchar('"');
}

static void csv_header(const struct report *r)
{
	if (r->opt.threads)
		fputs("tid,pid,thread,", stdout);
	fputs("name,module,offset,calls,total_ns,self_ns,min_ns,max_ns,avg_ns,p50_ns,p90_ns,"
	      "p99_ns,open,partial",
	      stdout);
	puts(r->src ? ",srcline" : "");
}

static void csv_rows(struct report *r, const struct ta_prof_table *t,
		     const struct ta_sess_thread *th)
{
	for (size_t i = 0; i < t->n; i++) {
		const struct ta_prof_row *w = &t->rows[i];

		if (th) {
			char pn[TA_PID_NAME_MAX];

			printf("%" PRIu64 ",%s,", th->tid, ta_pid_name(r->s, th->pid, pn));
			csv_field(th->name ? th->name : "");
			putchar(',');
		}
		csv_field(w->id.name);
		putchar(',');
		csv_field(w->id.module);
		printf(",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64, w->id.offset, w->calls,
		       w->total, w->self);
		/* No whole time known: empty fields. */
		if (ta_prof_row_timed(w))
			printf(",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
			       ",%" PRIu64,
			       w->min, w->max, ta_prof_row_avg(w), w->p50, w->p90, w->p99);
		else
			fputs(",,,,,,", stdout);
		printf(",%" PRIu64 ",%" PRIu64, w->open, w->partial);
		if (r->src) {
			const char *line = srcline_of(r, w);

			putchar(',');
			csv_field(line ? line : "");
		}
		putchar('\n');
	}
}

/* ---- JSON --------------------------------------------------------------------------- */

static void json_rows(struct report *r, const struct ta_prof_table *t, const char *indent)
{
	putchar('[');
	for (size_t i = 0; i < t->n; i++) {
		const struct ta_prof_row *w = &t->rows[i];

		printf("%s\n%s{\"name\": ", i ? "," : "", indent);
		ta_json_str(stdout, w->id.name);
		printf(", \"module\": ");
		ta_json_str(stdout, w->id.module);
		printf(", \"offset\": %" PRIu64 ", \"calls\": %" PRIu64 ", \"total_ns\": %" PRIu64
		       ", \"self_ns\": %" PRIu64,
		       w->id.offset, w->calls, w->total, w->self);
		/* No whole time known: null, not 0. */
		if (ta_prof_row_timed(w))
			printf(", \"min_ns\": %" PRIu64 ", \"max_ns\": %" PRIu64
			       ", \"avg_ns\": %" PRIu64 ", \"p50_ns\": %" PRIu64
			       ", \"p90_ns\": %" PRIu64 ", \"p99_ns\": %" PRIu64,
			       w->min, w->max, ta_prof_row_avg(w), w->p50, w->p90, w->p99);
		else
			printf(", \"min_ns\": null, \"max_ns\": null, \"avg_ns\": null, "
			       "\"p50_ns\": null, \"p90_ns\": null, \"p99_ns\": null");
		printf(", \"open\": %" PRIu64 ", \"partial\": %" PRIu64 ", \"unwound\": %" PRIu64,
		       w->open, w->partial, w->unwound);
		if (min_duration_on(r))
			printf(", \"short_calls\": %" PRIu64, w->shorts);
		if (r->src) {
			const char *line = srcline_of(r, w);

			printf(", \"srcline\": ");
			if (line)
				ta_json_str(stdout, line);
			else
				printf("null");
		}
		putchar('}');
	}
	/* The bracket goes one step left of the rows. */
	printf("%s%.*s]", t->n ? "\n" : "", t->n ? (int)strlen(indent) - 1 : 0, indent);
}

/* ---- the whole dump ------------------------------------------------------------------- */

/* Whether --pid names a process of the dump (each of its processes, when
 * the run reused it, is selected). */
static int pid_known(const struct report *r)
{
	for (size_t i = 0; i < r->s->nprocs; i++)
		if (r->s->procs[i]->os_pid == r->opt.pid)
			return 1;
	return 0;
}

/* The threads a per-thread breakdown shows: all, or those of --tid. */
static int thread_shown(const struct report *r, const struct ta_sess_thread *t)
{
	return (!r->opt.have_tid || t->tid == r->opt.tid) &&
	       (!r->opt.have_pid || ta_pid_os(r->s, t->pid) == r->opt.pid);
}

/* Builds, sorts and hands to emit the table of each thread shown, in
 * order; -1 without memory.  `first` tells emit whether it is the first. */
static int each_thread(struct report *r,
		       void (*emit)(struct report *r, const struct ta_sess_thread *t,
				    const struct ta_prof_table *rs, int first))
{
	int first = 1;

	for (size_t i = 0; i < r->s->nthreads; i++) {
		const struct ta_sess_thread *t = r->s->threads[i];
		struct ta_prof_table rs;

		if (!thread_shown(r, t))
			continue;
		if (table_build(r, &rs, t->index) < 0) {
			ta_prof_table_free(&rs);
			return -1;
		}
		table_sort(r, &rs);
		emit(r, t, &rs, first);
		ta_prof_table_free(&rs);
		first = 0;
	}
	return first ? 0 : 1;
}

static void json_thread(struct report *r, const struct ta_sess_thread *t,
			const struct ta_prof_table *rs, int first)
{
	printf("%s\n   {\"tid\": %" PRIu64 ", ", first ? "" : ",", t->tid);
	ta_json_pid(stdout, r->s, t->pid);
	printf(", \"name\": ");
	ta_json_str(stdout, t->name ? t->name : "");
	printf(", \"events\": %" PRIu64 ", \"lost\": %" PRIu64 ", \"functions\": ", t->events,
	       ta_thread_lost(t));
	json_rows(r, rs, "    ");
	printf("}");
}

static void text_thread(struct report *r, const struct ta_sess_thread *t,
			const struct ta_prof_table *rs, int first)
{
	char pn[TA_PID_NAME_MAX];

	(void)first;
	printf("\nthread %" PRIu64 " (%s) of process %s: %" PRIu64 " events, %" PRIu64 " lost\n",
	       t->tid, t->name ? t->name : "", ta_pid_name(r->s, t->pid, pn), t->events,
	       ta_thread_lost(t));
	(void)text_rows(r, rs);
}

static void csv_thread(struct report *r, const struct ta_sess_thread *t,
		       const struct ta_prof_table *rs, int first)
{
	(void)first;
	csv_rows(r, rs, t);
}

static int print_json(struct report *r, const struct ta_prof_table *all)
{
	const struct ta_session *s = r->s;

	printf("{\"dump\": ");
	ta_json_str(stdout, r->opt.path);
	if (r->opt.npaths > 1) {
		printf(", \"dumps\": [");
		for (size_t i = 0; i < r->opt.npaths; i++) {
			printf(i ? ", " : "");
			ta_json_str(stdout, r->opt.paths[i]);
		}
		putchar(']');
	}
	printf(",\n  \"complete\": %s, \"events\": %" PRIu64
	       ", \"threads\": %zu, \"lost\": %" PRIu64 ", \"lost_no_ring\": %" PRIu64
	       ", \"processes\": %zu, \"duration_ns\": %" PRIu64 ",\n  \"errors\": ",
	       ta_view_incomplete(&r->v) ? "false" : "true", r->v.events, s->nthreads, r->v.lost,
	       r->v.lost_no_ring, s->nprocs, ta_session_duration_ns(s));
	ta_json_errors(stdout, &r->v);
	printf(",\n  \"lost_by_cause\": ");
	ta_print_lost_by_json(r->v.lost_by);
	/* Recorded with filters (FILTER chunk): not a whole profile. */
	printf(",\n  \"filters\": ");
	ta_print_filters_json(stdout, ta_session_filters(s));
	if (ta_session_keep(s)) {
		printf(",\n  \"keep\": ");
		ta_keep_json(stdout, ta_session_keep(s));
	}
	if (min_duration_on(r))
		printf(",\n  \"min_duration_ns\": %" PRIu64 ", \"short_calls\": %" PRIu64,
		       s->min_duration_ns, s->short_calls);
	/* Every process recorded (a forked child writes into its parent's
	 * dump): the functions above are summed over them, or --pid's. */
	printf(",\n  \"process_list\": [");
	for (size_t i = 0; i < s->nprocs; i++) {
		const struct ta_process *p = s->procs[i];
		uint64_t events = 0, threads = 0;

		for (size_t k = 0; k < s->nthreads; k++)
			if (s->threads[k]->pid == p->pid) {
				events += s->threads[k]->events;
				threads++;
			}
		printf("%s{", i ? ", " : "");
		ta_json_pid(stdout, s, p->pid);
		printf(", \"ppid\": %" PRIu64 ", \"exe\": ", p->ppid);
		ta_json_str(stdout, p->exe ? p->exe : "");
		/* Each image, when the program exec'd traced programs. */
		printf(", \"images\": [");
		for (size_t k = 0; k < p->nimages; k++) {
			printf("%s", k ? ", " : "");
			ta_json_str(stdout, p->images[k]);
		}
		printf("], \"threads\": %" PRIu64 ", \"events\": %" PRIu64 ", \"crashed\": %s}",
		       threads, events, p->crash ? "true" : "false");
	}
	printf("],\n  \"functions\": ");
	json_rows(r, all, "   ");
	printf(",\n  \"fibers\": ");
	ta_report_fibers_json(r->fibers, r->opt.have_pid ? &r->opt.pid : NULL);
	if (r->opt.threads) {
		int any;

		printf(",\n  \"per_thread\": [");
		if ((any = each_thread(r, json_thread)) < 0)
			return -1;
		printf("%s]", any ? "\n  " : "");
	}
	printf("}\n");
	return 0;
}

static int print_text(struct report *r, const struct ta_prof_table *all)
{
	const struct ta_filter_info *f = ta_session_filters(r->s);

	if (f) {
		char line[2400];

		printf("%s\n", ta_fmt_filtered_line(line, sizeof(line), f));
	}
	if (ta_session_keep(r->s)) {
		char line[400];

		printf("%s\n", ta_keep_line(line, sizeof(line), ta_session_keep(r->s)));
	}
	if (text_rows(r, all))
		text_incomplete();
	text_min_duration(r);
	ta_report_fibers_text(r->fibers, r->opt.have_pid ? &r->opt.pid : NULL);
	if (!r->opt.threads)
		return 0;
	return each_thread(r, text_thread) < 0 ? -1 : 0;
}

static int print_csv(struct report *r, const struct ta_prof_table *all)
{
	csv_header(r);
	if (!r->opt.threads) {
		csv_rows(r, all, NULL);
		return 0;
	}
	if (each_thread(r, csv_thread) < 0)
		return -1;
	return 0;
}

/* ---- arguments -------------------------------------------------------------------------- */

enum { O_ALLOC = TA_OPT_OWN, O_LOCKS, O_IO, O_CHANNEL, O_FRAMES, O_SET, O_ARGS };

static const struct ta_opt report_opts[] = {
    {"--section", TA_ARG_EITHER, TA_OPT_SECTION},
    {"--json", TA_ARG_NONE, TA_OPT_JSON},
    {"--csv", TA_ARG_NONE, TA_OPT_CSV},
    {"--sort", TA_ARG_EQ, TA_OPT_SORT},
    {"--threads", TA_ARG_NONE, TA_OPT_THREADS},
    {"--tid", TA_ARG_EQ, TA_OPT_TID},
    {"--pid", TA_ARG_EQ, TA_OPT_PID},
    {"--function", TA_ARG_EQ, TA_OPT_FUNCTION},
    {"--top", TA_ARG_EQ, TA_OPT_TOP},
    {"--srcline", TA_ARG_NONE, TA_OPT_SRCLINE},
    {"--alloc", TA_ARG_NONE, O_ALLOC},
    {"--locks", TA_ARG_NONE, O_LOCKS},
    {"--io", TA_ARG_NONE, O_IO},
    {"--channel", TA_ARG_EQ, O_CHANNEL},
    {"--frames", TA_ARG_NONE, O_FRAMES},
    {"--args", TA_ARG_NONE, O_ARGS},
    {"--set", TA_ARG_EQ, O_SET},
    {"--demangle", TA_ARG_EITHER, TA_OPT_DEMANGLE},
    {"--symfs", TA_ARG_EITHER, TA_OPT_SYMFS},
    {"--debug-dir", TA_ARG_EITHER, TA_OPT_DEBUG_DIR},
    {NULL, TA_ARG_NONE, 0},
};

static int keep(struct options *o, char *p)
{
	char **n = p ? ta_vec_reserve(o->own, o->nown + 1, &o->own_cap, sizeof(*n), 16) : NULL;

	if (!n) {
		free(p);
		fprintf(stderr, "traceagent: out of memory\n");
		return -1;
	}
	o->own = n;
	o->own[o->nown++] = p;
	return 0;
}

static int add_path(struct options *o, const char *path)
{
	const char **n = ta_vec_reserve(o->paths, o->npaths + 1, &o->paths_cap, sizeof(*n), 16);

	if (!n) {
		fprintf(stderr, "traceagent: out of memory\n");
		return -1;
	}
	o->paths = n;
	o->paths[o->npaths++] = path;
	return 0;
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* DIR's files named *.trace, in name order, said on stderr. */
static int add_dir(struct options *o, const char *dir, DIR *d)
{
	size_t first = o->nown, len = strlen(dir);
	const char *sep = len && dir[len - 1] == '/' ? "" : "/";
	struct dirent *e;
	int rc = 0;

	while (rc == 0 && (e = readdir(d))) {
		size_t n = strlen(e->d_name);
		struct stat st;
		char *p;

		if (n <= 6 || strcmp(e->d_name + n - 6, ".trace"))
			continue;
		if (asprintf(&p, "%s%s%s", dir, sep, e->d_name) < 0)
			p = NULL;
		if (keep(o, p) < 0)
			rc = -1;
		else if (stat(p, &st) < 0 || !S_ISREG(st.st_mode))
			free(o->own[--o->nown]); /* a directory or a dangling link */
	}
	closedir(d);
	if (rc < 0)
		return -1;
	if (o->nown == first) {
		fprintf(stderr, "traceagent report: %s: no dump in it (no file named *.trace)\n",
			dir);
		return -1;
	}
	qsort(o->own + first, o->nown - first, sizeof(*o->own), name_cmp);
	fprintf(stderr, "traceagent report: %s: reading %zu dumps:", dir, o->nown - first);
	for (size_t i = first; i < o->nown; i++) {
		fprintf(stderr, " %s", o->own[i] + len + strlen(sep));
		if (add_path(o, o->own[i]) < 0)
			return -1;
	}
	fputc('\n', stderr);
	return 0;
}

/* A DUMP or DIR word. */
static int add_dump_arg(struct options *o, const char *arg)
{
	DIR *d = opendir(arg);

	if (!o->args++)
		o->path = arg;
	if (d)
		return add_dir(o, arg, d);
	return add_path(o, arg);
}

/* The words given, joined: what messages name for several. */
static const char *join_args(struct options *o)
{
	size_t len = 0;
	char *s;

	for (size_t i = 0; i < o->npaths; i++)
		len += strlen(o->paths[i]) + 2;
	if (!(s = malloc(len + 1)) || keep(o, s) < 0)
		return NULL;
	s[0] = 0;
	for (size_t i = 0; i < o->npaths; i++)
		strcat(strcat(s, i ? ", " : ""), o->paths[i]);
	return s;
}

static void options_free(struct options *o)
{
	for (size_t i = 0; i < o->nown; i++)
		free(o->own[i]);
	free(o->own);
	free(o->paths);
}

static int parse_args(int argc, char **argv, struct options *o)
{
	struct ta_opts p;
	int demangle = -1;
	int json = 0, csv = 0, id;
	const struct ta_opts_into into = {.demangle = &demangle,
					  .json = &json,
					  .csv = &csv,
					  .threads = &o->threads,
					  .srcline = &o->srcline,
					  .function = &o->function,
					  .top = &o->top,
					  .sort = &o->sort};

	memset(o, 0, sizeof(*o));
	ta_opts_init(&p, "report", report_opts, usage, argc, argv);
	while ((id = ta_opts_next_into(&p, &into)) != TA_OPT_END) {
		switch (id) {
		case TA_OPT_EXIT:
			return p.status;
		case TA_OPT_ARG:
			if (add_dump_arg(o, p.val) < 0)
				return 2;
			break;
		case O_ALLOC:
			o->libcalls |= TA_LC_ALLOC;
			break;
		case O_LOCKS:
			o->libcalls |= TA_LC_LOCK;
			break;
		case O_IO:
			o->libcalls |= TA_LC_IO;
			break;
		case O_CHANNEL:
			/* Any name: a program's own channels are not known here. */
			if (!p.val[strspn(p.val, " ,-")])
				return ta_opts_bad(&p, "is not a list of channels");
			o->channels = p.val;
			break;
		case O_FRAMES:
			o->frames = 1;
			break;
		case O_ARGS:
			o->by_args = 1;
			break;
		case O_SET:
			if (!p.val[0])
				return ta_opts_bad(&p, "is not a frame set's name");
			o->set = p.val;
			break;
		case TA_OPT_TID:
			if (ta_opts_u64(&p, "is not a thread id", &o->tid))
				return 2;
			o->have_tid = 1;
			break;
		case TA_OPT_PID:
			if (ta_opts_u64(&p, "is not a process id", &o->pid))
				return 2;
			o->have_pid = 1;
			break;
		}
	}
	ta_view_set_demangle(demangle, json || csv);
	if (o->libcalls && csv) {
		fprintf(stderr,
			"traceagent report: --alloc, --locks and --io print text or --json, "
			"not --csv\n");
		return 2;
	}
	if (o->set && !o->frames) {
		fprintf(stderr, "traceagent report: --set goes with --frames\n");
		return 2;
	}
	if (o->frames && (csv || o->threads || o->libcalls || o->srcline || o->have_tid ||
			  o->have_pid || o->sort != TA_SORT_TOTAL)) {
		fprintf(stderr, "traceagent report: --frames takes only --set, --json, --function "
				"and --top\n");
		return 2;
	}
	if (o->by_args && (o->frames || csv || o->threads || o->libcalls || o->srcline ||
			   o->have_tid || o->have_pid || o->sort != TA_SORT_TOTAL)) {
		fprintf(stderr,
			"traceagent report: --args takes only --json, --function and --top\n");
		return 2;
	}
	if (json && csv) {
		fprintf(stderr, "traceagent report: --json or --csv, not both\n");
		return 2;
	}
	o->form = json ? OUT_JSON : csv ? OUT_CSV : OUT_TEXT;
	if (ta_opts_need_dump(&p, o->path))
		return 2;
	if ((o->frames || o->by_args) && o->npaths > 1) {
		fprintf(stderr, "traceagent report: %s reads one dump, not %zu\n",
			o->frames ? "--frames" : "--args", o->npaths);
		return 2;
	}
	if (o->args > 1 && !(o->path = join_args(o)))
		return 1;
	return -1;
}

/* Is there a thread --tid names? */
static int tid_known(const struct report *r)
{
	for (size_t i = 0; i < r->s->nthreads; i++)
		if (r->s->threads[i]->tid == r->opt.tid)
			return 1;
	return 0;
}

static int libcalls_recorded(const struct ta_session *s)
{
	for (size_t i = 0; i < s->nprocs; i++)
		if (s->procs[i]->nlibcalls)
			return 1;
	return 0;
}

int ta_cmd_report(int argc, char **argv)
{
	struct report r;
	struct ta_visitor v;
	struct ta_prof_table all = {0};
	struct ta_libstats *ls = NULL;
	int rc, status;

	memset(&r, 0, sizeof(r));
	rc = parse_args(argc, argv, &r.opt);
	if (rc >= 0) {
		options_free(&r.opt);
		return rc;
	}
	if (r.opt.by_args) {
		status = ta_report_args(r.opt.paths[0], r.opt.function, r.opt.top,
					r.opt.form == OUT_JSON);
		options_free(&r.opt);
		return status;
	}
	if (r.opt.frames) {
		status = ta_report_frames(r.opt.path, r.opt.paths[0], r.opt.set, r.opt.function,
					  r.opt.top, r.opt.form == OUT_JSON);
		options_free(&r.opt);
		return status;
	}
	ta_profile_init(&r.prof);
	r.prof.hist = 1;
	ta_profile_visitor(&r.prof, &v);
	if (r.opt.libcalls) {
		struct ta_visitor inner = v;

		if (!(ls = ta_libstats_new(&r.v, &inner, &v))) {
			fprintf(stderr, "traceagent: out of memory\n");
			options_free(&r.opt);
			return 1;
		}
	}
	if (ta_view_open_many(&r.v, r.opt.paths, r.opt.npaths, r.opt.path, &v) < 0) {
		status = r.v.status;
		goto out;
	}
	r.s = r.v.s;
	status = r.v.status;
	if (r.opt.have_pid && !pid_known(&r)) {
		fprintf(stderr, "traceagent: %s: no process %" PRIu64 " in the dump%s\n",
			r.opt.path, r.opt.pid, r.opt.npaths > 1 ? "s" : "");
		status = 2;
		goto out;
	}
	if (r.opt.have_tid && !tid_known(&r)) {
		fprintf(stderr, "traceagent: %s: no thread %" PRIu64 " in the dump%s\n", r.opt.path,
			r.opt.tid, r.opt.npaths > 1 ? "s" : "");
		status = 2;
		goto out;
	}
	if (r.opt.srcline && !(r.src = ta_srclines_new()))
		goto nomem;
	if (table_build(&r, &all, UINT32_MAX) < 0)
		goto nomem;
	/* CSV has one kind of line: the functions'. */
	if (!ls && r.opt.form != OUT_CSV &&
	    ta_report_fibers_read(r.opt.paths, r.opt.npaths, r.s,
				  r.opt.have_tid ? &r.opt.tid : NULL, &r.fibers) < 0)
		goto nomem;
	table_sort(&r, &all);
	/* The text report says it on its first line. */
	r.v.filters_shown = !ls && r.opt.form == OUT_TEXT;
	r.v.partial_counted = !ls;
	ta_view_warnings(&r.v);
	if (ls && !libcalls_recorded(r.s))
		fprintf(stderr,
			"traceagent: %s: no library calls were recorded (TRACEAGENT_LIBCALLS=none, "
			"or an agent without them)\n",
			r.opt.path);
	if (ls)
		rc = ta_libstats_print(ls, r.opt.libcalls, r.opt.form == OUT_JSON, r.opt.top,
				       stdout);
	else if (r.opt.form == OUT_JSON)
		rc = print_json(&r, &all);
	else if (r.opt.form == OUT_CSV)
		rc = print_csv(&r, &all);
	else
		rc = print_text(&r, &all);
	if (rc < 0)
		goto nomem;
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "traceagent: writing the report: %s\n", strerror(errno));
		status = 1;
	}
	goto out;
nomem:
	fflush(stdout);
	fprintf(stderr, "traceagent: %s: out of memory\n", r.opt.path);
	status = 1;
out:
	ta_prof_table_free(&all);
	ta_report_fibers_free(r.fibers);
	ta_libstats_free(ls);
	free(r.ids);
	ta_srclines_free(r.src);
	ta_view_close(&r.v);
	ta_profile_free(&r.prof);
	options_free(&r.opt);
	return status;
}
