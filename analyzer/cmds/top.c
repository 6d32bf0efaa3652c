/* SPDX-License-Identifier: MIT */
/*
 * top.c - `traceagent top`: a live view of a traced program, refreshed
 * every interval: per function and zone, calls/s and self time in the
 * last interval and since the start, the run's events/s, threads, lost
 * events and frame times.
 *
 * The numbers come from live.c; top_source.c gets the bytes (a dump
 * followed like `tail -f`, a program it runs itself, a stream from a traced
 * process that connects to it, or one asked of a process over its control
 * socket) and this file shows them: on the terminal (ANSI escapes, raw
 * mode put back on every way out) or, with --batch, as plain-text
 * snapshots.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cmdopts.h"
#include "commands.h"
#include "common.h"
#include "live.h"
#include "top_int.h"

#define FOLLOW_POLL_MS 10 /* a file's growth is looked for this often */
#define DEFAULT_SERVE  "tcp://127.0.0.1:7070"
#define FILTER_MAX     64
#define BATCH_TOP      30

/* The sort columns' names (enum col). */
static const char *const col_keys[] = {"calls", "self", "calls-all", "self-all", "name", NULL};

/* The terminal and the keys' state. */
struct screen {
	int on;
	int tty; /* the terminal (/dev/tty), where the keys come from */
	struct termios saved;
	int rows, cols;
	int threads, paused;
	int filtering;
	char filter[FILTER_MAX + 1];
	char edit[FILTER_MAX + 1];
	size_t edit_len;
};

static struct screen scr;
static int sig_pipe[2] = {-1, -1};

/* ---- signals ---------------------------------------------------------------------- */

/* Every signal top waits for arrives through a pipe, read in the loop. */
static void on_signal(int sig)
{
	int saved = errno;
	char c = (char)sig;

	if (write(sig_pipe[1], &c, 1) < 0) {
		/* The pipe is full: signals are already waiting. */
	}
	errno = saved;
}

static int signals_setup(void)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGCHLD, SIGWINCH};
	struct sigaction sa;

	if (pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	return 0;
}

/* ---- the terminal ------------------------------------------------------------------- */

static void term_size(void)
{
	struct winsize ws;

	scr.rows = 24;
	scr.cols = 80;
	if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row && ws.ws_col) {
		scr.rows = ws.ws_row;
		scr.cols = ws.ws_col;
	}
}

/* Puts the terminal back: the main screen, the cursor, the line mode. */
static void term_restore(void)
{
	static const char leave[] = "\033[?25h\033[?1049l";

	if (!scr.on)
		return;
	scr.on = 0;
	(void)ta_write_all(STDOUT_FILENO, leave, sizeof(leave) - 1);
	tcsetattr(scr.tty, TCSAFLUSH, &scr.saved);
}

static int term_setup(void)
{
	static const char enter[] = "\033[?1049h\033[?25l\033[H\033[2J";
	struct termios raw;

	/* The keys come from the terminal, not from standard input: a
	 * program top runs may have its input redirected (top -- prog < f),
	 * and top's own may be a pipe. */
	if (!isatty(STDOUT_FILENO) || (scr.tty = open("/dev/tty", O_RDWR | O_CLOEXEC)) < 0) {
		fprintf(stderr, "traceagent top: not on a terminal (use --batch)\n");
		return -1;
	}
	if (tcgetattr(scr.tty, &scr.saved) < 0) {
		fprintf(stderr, "traceagent top: the terminal: %s\n", strerror(errno));
		return -1;
	}
	raw = scr.saved;
	/* Keys one at a time without echo; ^C still a signal, which ends top
	 * through the same path as q. */
	raw.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	raw.c_iflag &= ~(tcflag_t)(IXON | ICRNL);
	raw.c_cc[VMIN] = 0;
	raw.c_cc[VTIME] = 0;
	if (tcsetattr(scr.tty, TCSAFLUSH, &raw) < 0) {
		fprintf(stderr, "traceagent top: the terminal: %s\n", strerror(errno));
		return -1;
	}
	scr.on = 1;
	atexit(term_restore);
	term_size();
	(void)ta_write_all(STDOUT_FILENO, enter, sizeof(enter) - 1);
	return 0;
}

/* ---- options ------------------------------------------------------------------------ */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: traceagent top [OPTIONS] -- PROG [ARGS...]\n"
		"       traceagent top [OPTIONS] DUMP\n"
		"       traceagent top [OPTIONS] --serve[=ADDR]\n"
		"       traceagent top [OPTIONS] -p PID\n"
		"\n"
		"A live view of a traced program: per function and zone, calls/s and self\n"
		"time in the last interval and since the start; the run's events/s,\n"
		"threads, lost events and frame times.\n"
		"\n"
		"  --interval=TIME  refresh every TIME (\"0.25\" seconds, \"250ms\", \"1s\";\n"
		"                   default 1 s)\n"
		"  --batch          one plain-text snapshot per interval on stdout\n"
		"  -n COUNT         stop after COUNT snapshots\n"
		"  --top=N          rows per snapshot in --batch (default 30)\n"
		"  --sort=KEY       calls, self (default), calls-all, self-all or name\n"
		"  -o FILE          with -- PROG: keep the program's dump in FILE\n"
		"  --serve[=ADDR]   wait for a traced process streaming to ADDR\n"
		"                   (tcp://HOST:PORT or unix:PATH; default %s)\n"
		"  -p PID           ask the traced process PID for a stream\n"
		"  --demangle=MODE  C++ names: simple (default: without\n"
		"                   parameters and template arguments), full,\n"
		"                   or no (mangled)\n"
		"  --symfs=DIR      look for each module's file under DIR, at its\n"
		"                   recorded path (DIR/recorded/path)\n"
		"  --debug-dir=DIR  look for separate debug files in DIR too\n"
		"                   (DIR/.build-id/, DIR/recorded/path.debug);\n"
		"                   repeatable (see traceagent-symbols(7))\n"
		"  -h, --help       this help\n"
		"\n"
		"DUMP is followed as it grows, like tail -f.  With -- PROG, top runs PROG\n"
		"with the agent and ends with its exit status (--batch) or waits for q.\n"
		"Keys: c s C S sort by calls/s, self, calls and self since the start;\n"
		"< > move the sort column; / filter by name; t threads; p or space\n"
		"pause; q quit.  The keys are read from the terminal, so standard input\n"
		"may be redirected (PROG keeps it; PROG reading the terminal gets\n"
		"/dev/null).\n",
		DEFAULT_SERVE);
}

enum { O_INTERVAL = TA_OPT_OWN, O_BATCH, O_COUNT, O_SERVE, O_PID, O_KEEP };

static const struct ta_opt opt_table[] = {
    {"--interval", TA_ARG_EITHER, O_INTERVAL},
    {"--batch", TA_ARG_NONE, O_BATCH},
    {"-n", TA_ARG_NEXT, O_COUNT},
    {"--top", TA_ARG_EITHER, TA_OPT_TOP},
    {"--sort", TA_ARG_EITHER, TA_OPT_SORT},
    {"-o", TA_ARG_NEXT, O_KEEP},
    {"--serve", TA_ARG_NONE, O_SERVE},
    {"--serve", TA_ARG_EQ, O_SERVE},
    {"-p", TA_ARG_NEXT, O_PID},
    {"--demangle", TA_ARG_EITHER, TA_OPT_DEMANGLE},
    {"--symfs", TA_ARG_EITHER, TA_OPT_SYMFS},
    {"--debug-dir", TA_ARG_EITHER, TA_OPT_DEBUG_DIR},
    {NULL, 0, 0},
};

/* "0.25" is seconds; anything with a unit is ta_parse_time's. */
static int parse_interval(const char *s, uint64_t *ns)
{
	char buf[64];

	if (*s && strspn(s, "0123456789.") == strlen(s)) {
		if (strlen(s) + 2 > sizeof(buf))
			return -1;
		snprintf(buf, sizeof(buf), "%ss", s);
		s = buf;
	}
	return ta_parse_time(s, ns) < 0 || *ns < 1000000 ? -1 : 0;
}

static int parse_args(int argc, char **argv, struct options *o)
{
	struct ta_opts p;
	int id, k, sources = 0;
	uint64_t n;
	const struct ta_opts_into into = {.demangle = &o->demangle, .top = &o->top};

	memset(o, 0, sizeof(*o));
	o->interval_ns = 1000000000ull;
	o->sort = COL_SELF;
	o->top = BATCH_TOP;
	ta_opts_init(&p, "top", opt_table, usage, argc, argv);
	p.flags = TA_OPTS_LEADING;
	while ((id = ta_opts_next_into(&p, &into)) != TA_OPT_END) {
		switch (id) {
		case TA_OPT_EXIT:
			/* -1 after --help: done, exit 0 (0 would mean go on). */
			return p.status ? p.status : -1;
		case O_INTERVAL:
			if (parse_interval(p.val, &o->interval_ns) < 0)
				return ta_opts_bad(
				    &p, "is not a time of 1ms or more (0.25, 250ms, 1s)");
			break;
		case O_BATCH:
			o->batch = 1;
			break;
		case O_COUNT:
			if (ta_opts_u64(&p, "is not a count", &o->count))
				return 2;
			if (!o->count)
				return ta_opts_bad(&p, "is not a count above 0");
			break;
		case TA_OPT_SORT:
			if (ta_opts_choice(&p, col_keys, &k))
				return 2;
			o->sort = (enum col)k;
			break;
		case O_KEEP:
			o->keep = p.val;
			break;
		case O_SERVE:
			o->kind = SRC_SERVE;
			o->serve = p.val ? p.val : DEFAULT_SERVE;
			sources++;
			break;
		case O_PID:
			if (ta_opts_u64(&p, "is not a process id", &n))
				return 2;
			if (!n || n > INT_MAX)
				return ta_opts_bad(&p, "is not a process id");
			o->kind = SRC_PID;
			o->pid = (long)n;
			sources++;
			break;
		default:
			break;
		}
	}
	if (p.i < argc) {
		if (!strcmp(argv[p.i - 1], "--")) {
			o->kind = SRC_PROG;
			o->argv = argv + p.i;
		} else if (p.i + 1 == argc) {
			o->kind = SRC_DUMP;
			o->dump = argv[p.i];
		} else {
			fprintf(stderr, "traceagent top: one dump at a time ('%s')\n",
				argv[p.i + 1]);
			return 2;
		}
		sources++;
	} else if (p.i == argc && p.i > 0 && !strcmp(argv[p.i - 1], "--")) {
		fprintf(stderr, "traceagent top: no program after --\n");
		return 2;
	}
	if (sources != 1) {
		ta_usage_error("top", "%s",
			       sources ? "one source at a time: -- PROG, DUMP, --serve or -p"
				       : "nothing to watch: give -- PROG, DUMP, --serve or -p");
		return 2;
	}
	if (o->keep && o->kind != SRC_PROG) {
		fprintf(stderr, "traceagent top: -o is for -- PROG\n");
		return 2;
	}
	return 0;
}

/* ---- rows -------------------------------------------------------------------------- */

static enum col sort_col;

static int fn_cmp(const void *a, const void *b)
{
	const struct ta_live_row *x = *(const struct ta_live_row *const *)a;
	const struct ta_live_row *y = *(const struct ta_live_row *const *)b;
	uint64_t u = 0, v = 0;
	int c;

	switch (sort_col) {
	case COL_CALLS:
		u = x->icalls, v = y->icalls;
		break;
	case COL_SELF:
		u = x->iself_ns, v = y->iself_ns;
		break;
	case COL_CALLS_ALL:
		u = x->calls, v = y->calls;
		break;
	case COL_SELF_ALL:
		u = x->self_ns, v = y->self_ns;
		break;
	default:
		break;
	}
	if (u != v)
		return u > v ? -1 : 1;
	/* Ties, and the name column: by name. */
	c = strcmp(x->id.name, y->id.name);
	return c ? c : strcmp(x->id.module, y->id.module);
}

/* The functions to show, sorted and filtered: how many into *out (owned by
 * the caller), or -1 without memory. */
static long sorted_fns(const struct ta_live_snap *sn, enum col col, const char *filter,
		       const struct ta_live_row ***out)
{
	const struct ta_live_row **v = malloc((sn->nfns ? sn->nfns : 1) * sizeof(*v));
	size_t n = 0;

	if (!v)
		return -1;
	for (size_t i = 0; i < sn->nfns; i++) {
		const struct ta_live_row *f = &sn->fns[i];

		if (!f->calls && !f->self_ns)
			continue;
		if (filter[0] && !strstr(f->id.name, filter))
			continue;
		v[n++] = f;
	}
	sort_col = col;
	qsort(v, n, sizeof(*v), fn_cmp);
	*out = v;
	return (long)n;
}

static double per_s(uint64_t n, uint64_t ns)
{
	return ns ? (double)n * 1e9 / (double)ns : 0;
}

static const char *module_label(const char *module)
{
	return module[0] ? ta_path_base(module) : "-";
}

/* ---- batch ---------------------------------------------------------------------------- */

/* A function's self time in the interval, in % of the program time the
 * interval covered (never more than 100 for one thread's function). */
static double self_pct(const struct ta_live_snap *sn, const struct ta_live_row *f)
{
	return sn->span_ns ? 100.0 * (double)f->iself_ns / (double)sn->span_ns : 0;
}

static void batch_print(const struct ta_live_snap *sn, const struct options *o, uint64_t since_ns,
			const struct source *s)
{
	const struct ta_live_row **v;
	long n = sorted_fns(sn, o->sort, "", &v);
	char lost[200];

	printf("snapshot %" PRIu64 " time %.3f interval %.3f sort %s\n", sn->seq,
	       (double)since_ns / 1e9, (double)sn->interval_ns / 1e9, col_keys[o->sort]);
	ta_fmt_lost_by(lost, sizeof(lost), sn->lost_by);
	printf("events/s %.0f events %" PRIu64 " threads %zu processes %zu lost %" PRIu64
	       "%s%s%s\n",
	       per_s(sn->ievents, sn->interval_ns), sn->events, sn->nthreads_live, sn->nprocs,
	       sn->lost, lost[0] ? " (" : "", lost, lost[0] ? ")" : "");
	/* Once, when a cap on what the stream claims is first hit (live.h). */
	if (sn->capped && sn->capped_new)
		printf("%s\n", sn->capped);
	if (sn->fr.set)
		printf("frames %s count %" PRIu64 " interval %" PRIu64 " p50_ns %" PRIu64
		       " p99_ns %" PRIu64 " max_ns %" PRIu64 " hitches %" PRIu64 "\n",
		       sn->fr.set, sn->fr.frames, sn->fr.iframes, sn->fr.p50_ns, sn->fr.p99_ns,
		       sn->fr.max_ns, sn->fr.hitches);
	if (s->child_done || s->eof || s->bad) {
		if (s->kind == SRC_PROG && WIFEXITED(s->child_status))
			printf("ended exit %d\n", WEXITSTATUS(s->child_status));
		else if (s->kind == SRC_PROG)
			printf("ended signal %d\n", WTERMSIG(s->child_status));
		else
			printf("ended %s\n", s->bad	 ? "damaged"
					     : sn->ended ? "complete"
							 : "incomplete");
	}
	printf("%12s %12s %14s %7s %14s %16s  %s  %s\n", "calls/s", "calls", "self_ns", "self%",
	       "calls_all", "self_ns_all", "module", "name");
	for (long i = 0; i < n && (uint64_t)i < o->top; i++) {
		const struct ta_live_row *f = v[i];

		printf("%12.0f %12" PRIu64 " %14" PRIu64 " %7.1f %14" PRIu64 " %16" PRIu64
		       "  %s  %s\n",
		       per_s(f->icalls, sn->interval_ns), f->icalls, f->iself_ns, self_pct(sn, f),
		       f->calls, f->self_ns, module_label(f->id.module), f->id.name);
	}
	for (size_t i = 0; i < sn->nthr; i++) {
		const struct ta_live_thr *t = &sn->thr[i];

		printf("thread %" PRIu32 " %" PRIu64 " events/s %.0f events %" PRIu64
		       " lost %" PRIu64 " %s hot %s name %s\n",
		       t->pid, t->tid, per_s(t->ievents, sn->interval_ns), t->events, t->lost,
		       t->ended ? "ended" : "running", t->hot[0] ? t->hot : "-",
		       t->name[0] ? t->name : "-");
	}
	printf("\n");
	fflush(stdout);
	free(v);
}

/* ---- the screen ----------------------------------------------------------------------- */

struct outbuf {
	char *p;
	size_t n, cap;
};

static void out_add(struct outbuf *o, const char *s, size_t n)
{
	if (o->n + n > o->cap) {
		char *p = ta_vec_reserve(o->p, o->n + n, &o->cap, 1, 8192);

		if (!p)
			return;
		o->p = p;
	}
	memcpy(o->p + o->n, s, n);
	o->n += n;
}

/* One line of the screen, cut to its width; inverse video when hi. */
static void __attribute__((format(printf, 3, 4)))
line(struct outbuf *o, int hi, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		n = 0;
	if ((size_t)n >= sizeof(buf))
		n = sizeof(buf) - 1;
	if (n > scr.cols)
		n = scr.cols;
	if (hi)
		out_add(o, "\033[7m", 4);
	out_add(o, buf, (size_t)n);
	if (hi) {
		/* The bar across the whole width. */
		for (int i = n; i < scr.cols; i++)
			out_add(o, " ", 1);
		out_add(o, "\033[m", 3);
	}
	out_add(o, "\033[K\r\n", 5);
}

static const char *rate(char *buf, size_t n, double v)
{
	if (v >= 1e9)
		snprintf(buf, n, "%.2fG", v / 1e9);
	else if (v >= 1e6)
		snprintf(buf, n, "%.2fM", v / 1e6);
	else if (v >= 1e4)
		snprintf(buf, n, "%.1fk", v / 1e3);
	else
		snprintf(buf, n, "%.0f", v);
	return buf;
}

static void screen_draw(const struct ta_live_snap *sn, const struct options *o,
			const struct source *s, uint64_t since_ns)
{
	static const char *const heads[NCOLS] = {"CALLS/S", "SELF", "CALLS", "SELF-ALL", "NAME"};
	struct outbuf b = {0};
	char t[6][40], lost[200], what[PATH_MAX + 64];
	int used = 0, body;

	out_add(&b, "\033[H", 3);
	if (s->kind == SRC_PROG)
		snprintf(what, sizeof(what), "%s (pid %d)", o->argv[0], (int)s->child);
	else if (s->kind == SRC_PID)
		snprintf(what, sizeof(what), "pid %ld", o->pid);
	else if (s->kind == SRC_SERVE)
		snprintf(what, sizeof(what), "%s%s", o->serve, s->fd < 0 ? " (waiting)" : "");
	else
		snprintf(what, sizeof(what), "%s", s->path);
	/* What the keys change first: a narrow terminal cuts the rest. */
	line(&b, 1, "traceagent top   sort: %s%s%s%s   interval %s   %.1fs   %s", heads[o->sort],
	     scr.filter[0] ? "   filter: " : "", scr.filter, scr.paused ? "   [paused]" : "",
	     ta_fmt_time(t[0], sizeof(t[0]), o->interval_ns), (double)since_ns / 1e9, what);
	ta_fmt_lost_by(lost, sizeof(lost), sn->lost_by);
	line(&b, 0,
	     "events/s %s   events %" PRIu64 "   threads %zu   processes %zu   lost %" PRIu64
	     "%s%s%s",
	     rate(t[1], sizeof(t[1]), per_s(sn->ievents, sn->interval_ns)), sn->events,
	     sn->nthreads_live, sn->nprocs, sn->lost, lost[0] ? " (" : "", lost,
	     lost[0] ? ")" : "");
	if (sn->capped)
		line(&b, 0, "%s", sn->capped);
	if (sn->fr.set)
		line(&b, 0, "frames %s: %s/s   p50 %s   p99 %s   max %s   hitches %" PRIu64,
		     sn->fr.set, rate(t[2], sizeof(t[2]), per_s(sn->fr.iframes, sn->interval_ns)),
		     ta_fmt_time(t[3], sizeof(t[3]), sn->fr.p50_ns),
		     ta_fmt_time(t[4], sizeof(t[4]), sn->fr.p99_ns),
		     ta_fmt_time(t[5], sizeof(t[5]), sn->fr.max_ns), sn->fr.hitches);
	else
		line(&b, 0, "frames: none marked");
	if (s->child_done)
		line(&b, 0, "the program ended (%s %d): q quits",
		     WIFEXITED(s->child_status) ? "exit" : "signal",
		     WIFEXITED(s->child_status) ? WEXITSTATUS(s->child_status)
						: WTERMSIG(s->child_status));
	else if (s->bad || s->eof)
		line(&b, 0, "the stream ended%s%s", s->why[0] ? ": " : "", s->why);
	else
		line(&b, 0, "%s", "");
	used = 4;
	body = scr.rows - used - 2;
	if (scr.threads) {
		line(&b, 1, "%7s %8s %10s %12s %8s  %-16s %s", "PID", "TID", "EVENTS/S", "EVENTS",
		     "LOST", "NAME", "HOT (self in the interval)");
		for (size_t i = 0; i < sn->nthr && (int)i < body; i++) {
			const struct ta_live_thr *th = &sn->thr[i];

			line(&b, 0,
			     "%7" PRIu32 " %8" PRIu64 " %10s %12" PRIu64 " %8" PRIu64
			     "  %-16.16s %s%s",
			     th->pid, th->tid,
			     rate(t[0], sizeof(t[0]), per_s(th->ievents, sn->interval_ns)),
			     th->events, th->lost, th->name[0] ? th->name : "-", th->hot,
			     th->ended ? " (ended)" : "");
			used++;
		}
	} else {
		const struct ta_live_row **v;
		long n = sorted_fns(sn, o->sort, scr.filter, &v);
		char h[NCOLS][16];

		for (int c = 0; c < NCOLS; c++)
			snprintf(h[c], sizeof(h[c]), "%s%s", c == (int)o->sort ? ">" : "",
				 heads[c]);
		line(&b, 1, "%10s %10s %6s %12s %10s  %s", h[COL_CALLS], h[COL_SELF], "SELF%",
		     h[COL_CALLS_ALL], h[COL_SELF_ALL], h[COL_NAME]);
		for (long i = 0; i < n && i < body; i++) {
			const struct ta_live_row *f = v[i];

			line(&b, 0, "%10s %10s %5.1f%% %12" PRIu64 " %10s  %s [%s]",
			     rate(t[0], sizeof(t[0]), per_s(f->icalls, sn->interval_ns)),
			     ta_fmt_time(t[1], sizeof(t[1]), f->iself_ns), self_pct(sn, f),
			     f->calls, ta_fmt_time(t[2], sizeof(t[2]), f->self_ns), f->id.name,
			     module_label(f->id.module));
			used++;
		}
		free(v);
	}
	used++;
	out_add(&b, "\033[J", 3);
	/* The help line at the bottom. */
	{
		char pos[32];

		snprintf(pos, sizeof(pos), "\033[%d;1H", scr.rows);
		out_add(&b, pos, strlen(pos));
	}
	if (scr.filtering) {
		char l[FILTER_MAX + 32];
		int n = snprintf(l, sizeof(l), "filter: %s_", scr.edit);

		out_add(&b, l, (size_t)(n < scr.cols ? n : scr.cols));
	} else {
		static const char help[] = "q quit  c/s calls/self  C/S since start  </> column  / "
					   "filter  t threads  p pause";
		size_t n = strlen(help) < (size_t)scr.cols ? strlen(help) : (size_t)scr.cols;

		out_add(&b, "\033[7m", 4);
		out_add(&b, help, n);
		out_add(&b, "\033[m", 3);
	}
	out_add(&b, "\033[K", 3);
	(void)ta_write_all(STDOUT_FILENO, b.p, b.n);
	free(b.p);
	(void)used;
}

/* Takes one key; 1 when it asks to quit, 2 when the screen must be drawn
 * again. */
static int screen_key(int c, struct options *o)
{
	if (scr.filtering) {
		if (c == '\r' || c == '\n') {
			memcpy(scr.filter, scr.edit, scr.edit_len + 1);
			scr.filtering = 0;
		} else if (c == 27) {
			scr.filtering = 0;
		} else if ((c == 127 || c == 8) && scr.edit_len) {
			scr.edit[--scr.edit_len] = '\0';
		} else if (c >= 32 && c < 127 && scr.edit_len < FILTER_MAX) {
			scr.edit[scr.edit_len++] = (char)c;
			scr.edit[scr.edit_len] = '\0';
		}
		return 2;
	}
	switch (c) {
	case 'q':
	case 'Q':
		return 1;
	case 'c':
		o->sort = COL_CALLS;
		break;
	case 's':
		o->sort = COL_SELF;
		break;
	case 'C':
		o->sort = COL_CALLS_ALL;
		break;
	case 'S':
		o->sort = COL_SELF_ALL;
		break;
	case 'N':
		o->sort = COL_NAME;
		break;
	case '<':
		o->sort = o->sort ? o->sort - 1 : NCOLS - 1;
		break;
	case '>':
		o->sort = (o->sort + 1) % NCOLS;
		break;
	case 't':
		scr.threads = !scr.threads;
		break;
	case 'p':
	case ' ':
		scr.paused = !scr.paused;
		break;
	case '/':
		scr.filtering = 1;
		scr.edit_len = 0;
		scr.edit[0] = '\0';
		break;
	default:
		return 0;
	}
	return 2;
}

/* ---- the loop ----------------------------------------------------------------------------- */

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The status top ends with when its program ended. */
static int child_exit_status(const struct source *s)
{
	if (WIFEXITED(s->child_status))
		return WEXITSTATUS(s->child_status);
	return 128 + WTERMSIG(s->child_status);
}

static void reap(struct source *s)
{
	int st;

	if (s->child > 0 && !s->child_done && waitpid(s->child, &st, WNOHANG) == s->child) {
		s->child_status = st;
		s->child_done = 1;
	}
}

static int run(struct options *o, struct source *s, struct ta_live *L)
{
	uint8_t *buf = malloc(READ_SIZE);
	uint64_t start = now_ns(), last = start, next = start + o->interval_ns, shown = 0;
	uint64_t snap_offset = UINT64_MAX;
	struct ta_live_snap sn;
	int have_snap = 0, quit = 0, done = 0, status = 0, redraw = 0;

	if (!buf) {
		fprintf(stderr, "traceagent top: out of memory\n");
		return 1;
	}
	while (!quit) {
		struct pollfd pf[3];
		nfds_t npf = 0;
		uint64_t now;
		int timeout, got;

		got = ta_top_source_pump(s, L, buf);
		if (got < 0 && !scr.on)
			fprintf(stderr, "traceagent top: %s\n", s->why);
		reap(s);
		/* The end: the program ended and its dump is read to its end,
		 * or the stream closed. */
		if (!done &&
		    ((s->kind == SRC_PROG && s->child_done && got == 0) || s->eof || s->bad)) {
			if (s->kind == SRC_PROG && s->child_done)
				ta_top_source_pump(s, L, buf);
			done = 1;
			next = now_ns(); /* the final state now */
		}
		now = now_ns();
		/* --batch on a dump: its end is when every process in it wrote
		 * its END and nothing came for a whole interval (a forked
		 * child still running would have written by then). */
		if (now >= next && !done && o->batch && s->kind == SRC_DUMP &&
		    s->offset == snap_offset && ta_live_ended(L) && ta_live_at_boundary(L)) {
			s->eof = 1;
			done = 1;
		}
		if (now >= next && !(done && have_snap && done == 2)) {
			snap_offset = s->offset;
			if (ta_live_snap(L, now - last, &sn) < 0) {
				fprintf(stderr, "traceagent top: out of memory\n");
				status = 1;
				break;
			}
			have_snap = 1;
			last = now;
			next = now + o->interval_ns;
			shown++;
			if (o->batch)
				batch_print(&sn, o, now - start, s);
			else if (!scr.paused)
				screen_draw(&sn, o, s, now - start);
			if (done)
				done = 2; /* the final state is shown */
			if (o->batch && ((o->count && shown >= o->count) || done))
				break;
			if (!o->batch && o->count && shown >= o->count)
				break;
		} else if (redraw && have_snap) {
			screen_draw(&sn, o, s, now - start);
		}
		redraw = 0;
		if (got > 0 && !done)
			continue; /* more may be waiting: read before sleeping */
		pf[npf++] = (struct pollfd){.fd = sig_pipe[0], .events = POLLIN};
		if (scr.on)
			pf[npf++] = (struct pollfd){.fd = scr.tty, .events = POLLIN};
		if (!done && s->lfd >= 0)
			pf[npf++] = (struct pollfd){.fd = s->lfd, .events = POLLIN};
		else if (!done && s->fd >= 0 && (s->kind == SRC_SERVE || s->kind == SRC_PID))
			pf[npf++] = (struct pollfd){.fd = s->fd, .events = POLLIN};
		now = now_ns();
		timeout = done == 2 ? -1 : next > now ? (int)((next - now + 999999) / 1000000) : 0;
		/* A file gives no sign when it grows: look again soon. */
		if (!done && (s->kind == SRC_DUMP || s->kind == SRC_PROG) &&
		    timeout > FOLLOW_POLL_MS)
			timeout = FOLLOW_POLL_MS;
		if (done == 2 && o->batch)
			break;
		if (poll(pf, npf, timeout) < 0 && errno != EINTR)
			break;
		if (pf[0].revents & POLLIN) {
			char sigs[64];
			ssize_t n = read(sig_pipe[0], sigs, sizeof(sigs));

			for (ssize_t i = 0; i < n; i++) {
				if (sigs[i] == SIGWINCH) {
					term_size();
					redraw = 1;
				} else if (sigs[i] == SIGINT || sigs[i] == SIGTERM ||
					   sigs[i] == SIGHUP) {
					quit = 1;
					status = 128 + sigs[i];
				}
			}
		}
		if (scr.on && (pf[1].revents & (POLLIN | POLLHUP))) {
			unsigned char keys[64];
			ssize_t n = read(scr.tty, keys, sizeof(keys));

			for (ssize_t i = 0; i < n && !quit; i++) {
				int k = screen_key(keys[i], o);

				if (k == 1)
					quit = 1;
				else if (k == 2)
					redraw = 1;
			}
		}
	}
	free(buf);
	if (s->kind == SRC_PROG && s->child > 0 && !s->child_done) {
		/* top goes first (-n, q, a signal): the program with it, as
		 * when a terminal closes. */
		kill(s->child, SIGTERM);
		while (waitpid(s->child, &s->child_status, 0) < 0 && errno == EINTR)
			;
		s->child_done = 1;
		return status;
	}
	if (status)
		return status;
	if (s->kind == SRC_PROG && s->child_done)
		return child_exit_status(s);
	return s->bad ? 1 : 0;
}

int ta_cmd_top(int argc, char **argv)
{
	struct options o;
	struct source s = {.fd = -1, .lfd = -1};
	struct ta_live *L;
	int r = parse_args(argc, argv, &o);

	if (r)
		return r < 0 ? 0 : r;
	s.kind = o.kind;
	if (signals_setup() < 0) {
		fprintf(stderr, "traceagent top: pipe: %s\n", strerror(errno));
		return 1;
	}
	L = ta_live_new();
	if (!L) {
		fprintf(stderr, "traceagent top: out of memory\n");
		return 1;
	}
	ta_live_demangle(L, (enum ta_demangle)o.demangle);
	if (!o.batch && term_setup() < 0) {
		ta_live_free(L);
		return 2;
	}
	switch (o.kind) {
	case SRC_DUMP:
		r = ta_top_open_dump(&s, o.dump);
		break;
	case SRC_PROG:
		r = ta_top_start_prog(&s, &o, scr.on);
		break;
	case SRC_SERVE:
		r = ta_top_listen_on(&s, o.serve);
		break;
	case SRC_PID:
		r = ta_top_ask_stream(&s, o.pid);
		break;
	}
	if (r < 0) {
		term_restore();
		ta_top_source_close(&s);
		ta_live_free(L);
		return o.kind == SRC_PROG ? 127 : 1;
	}
	r = run(&o, &s, L);
	term_restore();
	if (s.bad && !o.batch)
		fprintf(stderr, "traceagent top: %s\n", s.why);
	if (o.keep && s.kind == SRC_PROG)
		fprintf(stderr, "traceagent top: dump kept in %s\n", s.path);
	ta_top_source_close(&s);
	ta_live_free(L);
	return r;
}
