/* SPDX-License-Identifier: MIT */
/*
 * info.c - `traceagent info DUMP`: what a dump holds and how it was made.
 *
 * One pass of the session (events are decoded, so the counts are what the
 * dump really holds, not only what the writer claimed), then everything the
 * metadata chunks said, per process: command line, start, clock and its
 * calibration, the agent's settings, threads and modules; and for the file:
 * format version, chunks, stored and raw bytes, completeness and errors.
 *
 * The JSON is one object per process under "processes", each section an
 * object of its own, so later additions (crash reports, patch refusals)
 * become new keys without changing the existing ones.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "apiev.h"
#include "cmdopts.h"
#include "commands.h"
#include "common.h"

struct options {
	const char *path;
	int json;
};

static void usage(FILE *f)
{
	fprintf(f, "usage: traceagent info [--json] DUMP\n"
		   "\n"
		   "What a dump holds: per process the command line (each, in order, when\n"
		   "it exec'd), pid, start time, duration, clock and calibration, the\n"
		   "agent's settings, threads and modules; for the file its format version,\n"
		   "chunks, sizes, completeness and errors; the pauses and channel switches\n"
		   "made through `traceagent ctl`; and the manual API's events per channel\n"
		   "(zones, messages, instants, counter samples, frame marks, switches) and\n"
		   "zone ENDs without a zone.\n"
		   "After a crash, each thread's open calls take one line: a recursion of\n"
		   "more than 64 levels is one entry \"NAME (MODULE) [xN]\", and at most 64\n"
		   "entries are shown, \"... N more\" between the outermost and innermost 32.\n"
		   "\n"
		   "  --json          one JSON object instead of text\n"
		   "  -j N, --jobs=N  N threads read the dump (default: one per CPU\n"
		   "                  it may use, at most 64; N up to 1024)\n"
		   "  --demangle=MODE C++ names of the functions shown: simple\n"
		   "                  (default: without parameters and template\n"
		   "                  arguments; full for --json), full, or no (mangled)\n"
		   "  -h, --help      this help\n"
		   "\n"
		   "Exit status: 0 for a whole dump, 1 when it is damaged or incomplete (what\n"
		   "could be read is still shown), 2 for usage errors or a file that cannot\n"
		   "be opened.\n");
}

/* ---- the manual API's events, per channel ------------------------------------------ */

enum { CH_ZONES, CH_MESSAGES, CH_INSTANTS, CH_COUNTERS, CH_FRAMES, CH_SWITCHES, CH_NCOUNTS };

static const char *const ch_keys[CH_NCOUNTS] = {"zones",	  "messages",	 "instants",
						"counter_samples", "frame_marks", "switches"};

/* One process's counts by channel id: merged by name when printed, as
 * the ids of a program's own channels differ between processes. */
struct proc_channels {
	uint32_t pid;
	uint64_t n[TA_CHANNELS_MAX][CH_NCOUNTS];
};

struct api_counts {
	struct ta_view *v;
	struct proc_channels *pc;
	size_t npc;
	struct proc_channels *last; /* the one of the last event: threads come in runs */
	struct ta_process *last_p;
	uint64_t unmatched;
	int nomem;
	char text[TA_TEXT_MAX + 1];
};

/* A channel row of the output. */
struct channel_row {
	const char *name;
	uint64_t n[CH_NCOUNTS];
};

static struct proc_channels *proc_channels(struct api_counts *a, uint32_t pid)
{
	struct proc_channels *pc;

	if (a->last && a->last->pid == pid)
		return a->last;
	a->last_p = ta_session_process(a->v->s, pid);
	for (size_t i = 0; i < a->npc; i++)
		if (a->pc[i].pid == pid)
			return a->last = &a->pc[i];
	pc = realloc(a->pc, (a->npc + 1) * sizeof(*pc));
	if (!pc) {
		a->nomem = 1;
		return NULL;
	}
	a->pc = pc;
	pc = &a->pc[a->npc++];
	memset(pc, 0, sizeof(*pc));
	pc->pid = pid;
	return a->last = pc;
}

static uintptr_t api_enter(void *ctx, struct ta_sess_thread *t, uint64_t ticks, uint32_t depth,
			   uint64_t addr, unsigned flags)
{
	struct api_counts *a = ctx;
	struct proc_channels *pc;
	const struct ta_site *site;

	(void)ticks;
	(void)depth;
	(void)flags;
	/* Every function event comes here: only processes with sites pay
	 * for the search. */
	pc = proc_channels(a, t->pid);
	if (!pc || !a->last_p || !a->last_p->nsites)
		return 0;
	site = ta_process_site(a->last_p, ta_process_addr(a->last_p, addr));
	if (site && site->kind == TA_SITE_ZONE && site->channel < TA_CHANNELS_MAX)
		pc->n[site->channel][CH_ZONES]++;
	return 0;
}

static void api_ext(void *ctx, struct ta_sess_thread *t, uint64_t ticks, uint64_t kind,
		    const uint64_t *values, uint32_t n)
{
	struct api_counts *a = ctx;
	struct proc_channels *pc;
	struct ta_apiev e;
	int what;

	if (!ta_apiev_kind(kind) || !(pc = proc_channels(a, t->pid)))
		return;
	if (ta_apiev_decode(a->last_p, ticks, kind, values, n, &e, a->text) <= 0)
		return;
	switch (kind) {
	case TA_EXT_MESSAGE:
		what = CH_MESSAGES;
		break;
	case TA_EXT_INSTANT:
		what = CH_INSTANTS;
		break;
	case TA_EXT_COUNTER:
		what = CH_COUNTERS;
		break;
	case TA_EXT_FRAME:
		what = CH_FRAMES;
		break;
	case TA_EXT_CHANNEL:
		what = CH_SWITCHES;
		break;
	case TA_EXT_ZONE_UNMATCHED:
		a->unmatched++;
		return;
	default:
		return;
	}
	if (e.channel < TA_CHANNELS_MAX)
		pc->n[e.channel][what]++;
}

/* The rows by name, in the order of the first process's ids: every channel
 * a CHANNELS chunk named, and any other with events.  Returns the count
 * (rows has room for all), or -1 without memory. */
static long channel_rows(const struct api_counts *a, struct channel_row **out, char (*names)[32])
{
	const struct ta_session *s = a->v->s;
	size_t cap = (s->nprocs + a->npc) * TA_CHANNELS_MAX, n = 0;
	struct channel_row *rows = calloc(cap ? cap : 1, sizeof(*rows));

	if (!rows)
		return -1;
	for (size_t i = 0; i < s->nprocs; i++) {
		const struct ta_process *p = s->procs[i];
		const struct proc_channels *pc = NULL;

		for (size_t k = 0; k < a->npc; k++)
			if (a->pc[k].pid == p->pid)
				pc = &a->pc[k];
		for (uint32_t id = 0; id < TA_CHANNELS_MAX; id++) {
			uint64_t any = 0;
			const char *name;
			size_t r;

			for (int c = 0; pc && c < CH_NCOUNTS; c++)
				any |= pc->n[id][c];
			if (!p->channels[id].name && !any)
				continue;
			name = ta_process_channel_name(p, id, names[n]);
			for (r = 0; r < n; r++)
				if (!strcmp(rows[r].name, name))
					break;
			if (r == n)
				rows[n++].name = name; /* names[n] or the process's own */
			for (int c = 0; pc && c < CH_NCOUNTS; c++)
				rows[r].n[c] += pc->n[id][c];
		}
	}
	*out = rows;
	return (long)n;
}

/* ---- facts derived from the session ------------------------------------------------ */

static const char *clock_name(uint64_t source)
{
	switch (source) {
	case TA_CLOCK_RDTSC:
		return "rdtsc";
	case TA_CLOCK_CNTVCT:
		return "cntvct";
	case TA_CLOCK_MONOTONIC:
		return "monotonic";
	default:
		return "unknown";
	}
}

/* "2024-05-01T12:34:56.123456789Z" */
static const char *iso_time(char *buf, size_t n, uint64_t realtime_ns)
{
	time_t sec = (time_t)(realtime_ns / 1000000000u);
	struct tm tm;
	size_t k;

	if (!gmtime_r(&sec, &tm) || !(k = strftime(buf, n, "%Y-%m-%dT%H:%M:%S", &tm))) {
		snprintf(buf, n, "?");
		return buf;
	}
	snprintf(buf + k, n - k, ".%09" PRIu64 "Z", realtime_ns % 1000000000u);
	return buf;
}

/* The counter's rate as calibrated, 0 when nothing says. */
static double ticks_per_second(const struct ta_process *p)
{
	if (p->uncalibrated || p->ns_per_tick <= 0)
		return 0;
	return (double)(1e9L / p->ns_per_tick);
}

static uint64_t process_duration_ns(const struct ta_process *p)
{
	int64_t a, b;

	if (!p->have_ticks)
		return 0;
	a = ta_process_ticks_ns(p, p->min_ticks);
	b = ta_process_ticks_ns(p, p->max_ticks);
	return b > a ? (uint64_t)(b - a) : 0;
}

/* The recording's pauses (`traceagent ctl PID pause`): their number and
 * paused time; one still open at the dump's end (a pause never resumed
 * in a dump without END) counts up to the last time seen. */
static uint64_t paused_ns(const struct ta_process *p)
{
	uint64_t ticks = 0;

	for (size_t i = 0; i < p->npauses; i++) {
		const struct ta_pause *q = &p->pauses[i];
		uint64_t to = q->to != UINT64_MAX ? q->to : p->max_ticks;

		if (to > q->from)
			ticks += to - q->from;
	}
	return ta_process_dur_ns(p, ticks);
}

struct counts {
	uint64_t events, lost, threads;
};

static struct counts process_counts(const struct ta_session *s, const struct ta_process *p)
{
	struct counts c = {0, 0, 0};

	for (size_t i = 0; i < s->nthreads; i++) {
		const struct ta_sess_thread *t = s->threads[i];

		if (t->pid != p->pid)
			continue;
		c.events += t->events;
		c.lost += ta_thread_lost(t);
		c.threads++;
	}
	if (p->end_lost > c.lost)
		c.lost = p->end_lost;
	return c;
}

static void hex(char *buf, size_t n, const uint8_t *b, size_t len)
{
	buf[0] = 0;
	for (size_t i = 0; i < len && 2 * i + 2 < n; i++)
		snprintf(buf + 2 * i, 3, "%02x", b[i]);
}

/* The file's size; for a pipe (`info /dev/stdin`), which has none, the
 * bytes read from it. */
static uint64_t file_size(const struct ta_view *v)
{
	struct stat st;

	if (stat(v->path, &st) == 0 && S_ISREG(st.st_mode))
		return (uint64_t)st.st_size;
	return v->s->file_bytes;
}

/* "1.5 KiB" and so on. */
static const char *fmt_bytes(char *buf, size_t n, uint64_t b)
{
	static const char *unit[] = {"KiB", "MiB", "GiB", "TiB"};
	double v = (double)b;
	int u = -1;

	if (b < 1024) {
		snprintf(buf, n, "%" PRIu64 " bytes", b);
		return buf;
	}
	while (v >= 1024 && u < 3) {
		v /= 1024;
		u++;
	}
	snprintf(buf, n, "%.1f %s", v, unit[u]);
	return buf;
}

/* ---- text ------------------------------------------------------------------------------- */

/* An attached process's calls open when tracing started: the exits its
 * threads made without a recorded entry (FORMAT.md, END flag bit 3). */
static uint64_t open_at_start(const struct ta_session *s, const struct ta_process *p)
{
	uint64_t n = 0;

	for (size_t i = 0; i < s->nthreads; i++)
		if (s->threads[i]->pid == p->pid)
			n += s->threads[i]->unmatched;
	return n;
}

static const char *mode_name(uint64_t mode)
{
	return mode == 0 ? "lossless" : mode == 1 ? "drop" : mode == 2 ? "flight" : "unknown";
}

/* The library-call classes recorded, "alloc,lock,io,sleep" or "none". */
static const char *libcall_classes(char *buf, size_t n, uint64_t classes)
{
	static const char *const names[] = {"alloc", "lock", "io", "sleep"};
	size_t len = 0;

	buf[0] = 0;
	for (unsigned i = 0; i < 4; i++)
		if (classes & (1u << i))
			len += (size_t)snprintf(buf + len, n - len, "%s%s", len ? "," : "", names[i]);
	if (!len)
		snprintf(buf, n, "none");
	return buf;
}

/* "SIGSEGV", or "signal N". */
static const char *signal_name(char *buf, size_t n, uint64_t sig)
{
	const char *abbrev = sig < 65 ? sigabbrev_np((int)sig) : NULL;

	if (abbrev)
		snprintf(buf, n, "SIG%s", abbrev);
	else
		snprintf(buf, n, "signal %" PRIu64, sig);
	return buf;
}

/* A pc as "function (module)", for backtraces and stacks.  Return
 * addresses (every backtrace frame but the first) are named by the call
 * before them: after a call that does not return, the return address may
 * already be past the end of the function. */
static void text_pc(struct ta_view *v, uint32_t pid, uint64_t pc, int is_return)
{
	struct ta_fn_name fn;

	ta_view_name(v, pid, pc - (is_return ? 1 : 0), &fn);
	printf("%s (%s)", fn.name, ta_path_base(fn.module));
}

/* Past this many entries a thread's open calls show the outermost and the
 * innermost half of them, "... N more" between. */
#define OPEN_SHOWN 64

/*
 * A thread's open calls, outermost first, " > " between: a run of more
 * than TA_RUN_MAX calls at one address (a recursion) is one entry "fn
 * (module) [xN]", and the line is at most OPEN_SHOWN entries long.
 */
static void text_open_calls(struct ta_view *v, uint32_t pid, const uint64_t *pcs, uint32_t n)
{
	uint32_t entries = 0, e = 0, r;

	for (uint32_t k = 0; k < n; k += r) {
		for (r = 1; k + r < n && pcs[k + r] == pcs[k]; r++)
			;
		entries += r > TA_RUN_MAX ? 1 : r;
	}
	for (uint32_t k = 0; k < n; k += r) {
		uint32_t each;

		for (r = 1; k + r < n && pcs[k + r] == pcs[k]; r++)
			;
		each = r > TA_RUN_MAX ? 1 : r;
		for (uint32_t j = 0; j < each; j++, e++) {
			if (entries > OPEN_SHOWN && e >= OPEN_SHOWN / 2 &&
			    e < entries - OPEN_SHOWN / 2) {
				if (e == OPEN_SHOWN / 2)
					printf(" > ... %" PRIu32 " more", entries - OPEN_SHOWN);
				continue;
			}
			printf(e ? " > " : " ");
			text_pc(v, pid, pcs[k], 0);
			if (each < r)
				printf(" [x%" PRIu32 "]", r);
		}
	}
}

static void text_crash(struct ta_view *v, const struct ta_process *p)
{
	const struct ta_crash *c = p->crash;
	char b[32];

	printf("  crashed:     %s (code %" PRId64 ", address %#" PRIx64 ") in thread %" PRIu64
	       "\n",
	       signal_name(b, sizeof(b), c->signal), c->code, c->addr, c->tid);
	printf("  backtrace:\n");
	for (size_t i = 0; i < c->npcs; i++) {
		printf("    #%-2zu %#" PRIx64 "  ", i, c->pcs[i]);
		/* Named by the module mapped there when it crashed. */
		text_pc(v, p->pid, ta_process_addr_at(p, c->pcs[i] - (i > 0), c->ticks), 0);
		putchar('\n');
	}
	printf("  where each thread was (open calls, outermost first):\n");
	for (size_t i = 0; i < v->s->nthreads; i++) {
		const struct ta_sess_thread *t = v->s->threads[i];

		if (t->pid != p->pid)
			continue;
		printf("    thread %" PRIu64 "%s:", t->tid, t->tid == c->tid ? " (crashed)" : "");
		text_open_calls(v, p->pid, t->last_stack, t->last_depth);
		putchar('\n');
	}
}

static void text_patch(const struct ta_patch *pt)
{
	printf("  patched %" PRIu64 " functions, refused %" PRIu64 "%s\n", pt->patched,
	       pt->nrefused, pt->nrefused ? ":" : "");
	for (uint64_t i = 0; i < pt->nrefused; i++) {
		const struct ta_patch_refusal *f = &pt->refused[i];
		printf("    %s (%s, %#" PRIx64 "): %s\n", f->name, ta_path_base(f->module), f->addr,
		       f->reason);
	}
	if (pt->has_method) {
		printf("  relocated whole: %" PRIu64 "; with a return stub: %" PRIu64 "%s\n",
		       pt->relocated, pt->patched - pt->relocated, pt->nfallback ? ":" : "");
		for (uint64_t i = 0; i < pt->nfallback; i++)
			printf("    %" PRIu64 " %s\n", pt->fallback[i].count,
			       pt->fallback[i].reason);
	}
	if (pt->frames_without_exit)
		printf("  patched calls deeper than the return stack (exit not recorded): %" PRIu64
		       "\n",
		       pt->frames_without_exit);
}

static void json_patch(const struct ta_patch *pt)
{
	printf("    \"patch\": {\"patched\": %" PRIu64 ", \"refused_count\": %" PRIu64
	       ", \"frames_without_exit\": %" PRIu64 ", \"refused\": [",
	       pt->patched, pt->nrefused, pt->frames_without_exit);
	for (uint64_t i = 0; i < pt->nrefused; i++) {
		const struct ta_patch_refusal *f = &pt->refused[i];
		printf("%s\n      {\"module\": ", i ? "," : "");
		ta_json_str(stdout, f->module);
		printf(", \"name\": ");
		ta_json_str(stdout, f->name);
		printf(", \"address\": %" PRIu64 ", \"code\": %" PRIu64 ", \"reason\": ", f->addr,
		       f->code);
		ta_json_str(stdout, f->reason);
		putchar('}');
	}
	printf("]");
	if (pt->has_method) {
		printf(", \"relocated\": %" PRIu64 ", \"return_stub\": [", pt->relocated);
		for (uint64_t i = 0; i < pt->nfallback; i++) {
			const struct ta_patch_fallback *f = &pt->fallback[i];
			printf("%s{\"code\": %" PRIu64 ", \"count\": %" PRIu64 ", \"reason\": ",
			       i ? ", " : "", f->code, f->count);
			ta_json_str(stdout, f->reason);
			putchar('}');
		}
		putchar(']');
	}
	printf("},\n");
}

static uint64_t count_how(const struct ta_filter_info *f, uint32_t how)
{
	uint64_t n = 0;

	for (uint64_t i = 0; i < f->nfns; i++)
		n += f->fns[i].how == how;
	return n;
}

static const char *filter_kind(char *buf, size_t n, uint32_t kind)
{
	snprintf(buf, n, "%s%s%s%s", kind & TA_FILTER_KIND_FILTER ? "filter " : "",
		 kind & TA_FILTER_KIND_NOT ? "filter-! " : "",
		 kind & TA_FILTER_KIND_EXCLUDE ? "exclude " : "", kind ? "" : "? ");
	buf[strlen(buf) - 1] = 0; /* the last space */
	return buf;
}

/* The filters in force, and per way (patched out, at run time) the
 * functions they named. */
static void text_filter(struct ta_view *v, const struct ta_process *p)
{
	static const struct {
		uint32_t how;
		const char *what;
	} ways[] = {{TA_FILTER_HOW_PATCHED, "patched out"},
		    {TA_FILTER_HOW_RUNTIME, "filtered at run time"}};
	const struct ta_filter_info *f = p->filter;
	char b[2200], k[64];

	printf("  filters:     %s (recorded with filters: not a whole profile)\n",
	       ta_fmt_filters(b, sizeof(b), f));
	for (size_t w = 0; w < sizeof(ways) / sizeof(ways[0]); w++) {
		uint64_t n = 0;

		for (uint64_t i = 0; i < f->nfns; i++)
			n += f->fns[i].how == ways[w].how;
		printf("    %s: %" PRIu64 " functions%s", ways[w].what, n, n ? ":" : "");
		for (uint64_t i = 0, shown = 0; i < f->nfns; i++) {
			struct ta_fn_name fn;

			if (f->fns[i].how != ways[w].how)
				continue;
			ta_view_name(v, p->pid, f->fns[i].addr, &fn);
			printf("%s %s (%s)", shown++ ? "," : "", fn.name,
			       filter_kind(k, sizeof(k), f->fns[i].kind));
		}
		putchar('\n');
	}
}

static void json_filter(struct ta_view *v, const struct ta_process *p)
{
	const struct ta_filter_info *f = p->filter;

	printf("    \"filters\": {\"filter\": ");
	ta_json_str(stdout, f->filter);
	printf(", \"exclude\": ");
	ta_json_str(stdout, f->exclude);
	printf(", \"depth\": %" PRIu64 ", \"min_duration_ns\": %" PRIu64
	       ", \"patched_out\": %" PRIu64 ", \"run_time\": %" PRIu64 ", \"functions\": [",
	       f->depth, f->min_duration_ns, count_how(f, TA_FILTER_HOW_PATCHED),
	       count_how(f, TA_FILTER_HOW_RUNTIME));
	for (uint64_t i = 0; i < f->nfns; i++) {
		struct ta_fn_name fn;
		char k[64];

		ta_view_name(v, p->pid, f->fns[i].addr, &fn);
		printf("%s\n      {\"name\": ", i ? "," : "");
		ta_json_str(stdout, fn.name);
		printf(", \"module\": ");
		ta_json_str(stdout, fn.module);
		printf(", \"address\": %" PRIu64 ", \"how\": \"%s\", \"kind\": \"%s\"}",
		       f->fns[i].addr,
		       f->fns[i].how == TA_FILTER_HOW_PATCHED	? "patched"
		       : f->fns[i].how == TA_FILTER_HOW_RUNTIME ? "run-time"
								: "other",
		       filter_kind(k, sizeof(k), f->fns[i].kind));
	}
	printf("]},\n");
}

static void text_process(struct ta_view *v, const struct ta_process *p)
{
	const struct ta_session *s = v->s;
	struct counts c = process_counts(s, p);
	char b[4][64], pn[TA_PID_NAME_MAX];

	printf("\nprocess %s", ta_pid_name(s, p->pid, pn));
	if (p->has_info)
		printf(" (parent %" PRIu64 ")", p->ppid);
	putchar('\n');
	if (p->has_info) {
		/* Each image's command line, in order: the exec chain. */
		for (size_t k = 0; k < p->nimages; k++) {
			printf(k ? "\n             > " : "  command:     ");
			for (size_t i = 0; i < p->cmds[k].argc; i++)
				printf("%s%s", i ? " " : "", p->cmds[k].argv[i]);
		}
		printf("\n  executable:  %s\n  arch:        %s\n", p->exe, p->arch);
		if (p->nimages > 1) {
			printf("  images:      ");
			for (size_t i = 0; i < p->nimages; i++)
				printf("%s%s", i ? " > " : "", p->images[i]);
			printf(" (exec)\n");
		}
		printf("  started:     %s\n", iso_time(b[0], sizeof(b[0]), p->start_realtime_ns));
	} else {
		printf("  (no process chunk: command line and settings unknown)\n");
	}
	printf("  duration:    %s\n", ta_fmt_time(b[0], sizeof(b[0]), process_duration_ns(p)));
	printf("  clock:       %s, ", p->has_info ? clock_name(p->clock_source) : "unknown");
	if (p->uncalibrated)
		printf("not calibrated (times are in ticks)");
	else
		printf("%.0f ticks/s", ticks_per_second(p));
	printf(" from %zu clock pairs", p->nclock);
	if (p->nominal_hz)
		printf(" (nominal %" PRIu64 " Hz)", p->nominal_hz);
	putchar('\n');
	if (p->has_info)
		printf("  settings:    block %s, memory cap %s, flush every %" PRIu64 " ms, mode %s\n",
		       fmt_bytes(b[1], sizeof(b[1]), p->block_size),
		       fmt_bytes(b[2], sizeof(b[2]), p->memory_cap), p->flush_ms,
		       mode_name(p->mode));
	if (p->has_info) {
		char lc[64];

		printf("  libcalls:    %s\n", libcall_classes(lc, sizeof(lc), p->libcall_classes));
	}
	printf("  events:      %" PRIu64 ", lost %" PRIu64, c.events, c.lost);
	if (ta_process_lost_no_ring(s, p))
		printf(" (%" PRIu64 " by threads that could not get a ring)",
		       ta_process_lost_no_ring(s, p));
	putchar('\n');
	if (c.lost && ta_fmt_lost_by(b[0], sizeof(b[0]), p->end_lost_by)[0])
		printf("  lost by:     %s\n", b[0]);
	if (p->has_end) {
		char why[320] = "";

		if ((p->end_flags & 1) && p->end_failed_errno == ENOSPC)
			snprintf(why, sizeof(why), "; the disk was full at byte %" PRIu64,
				 p->end_failed_at);
		else if ((p->end_flags & 1) && p->end_failed_errno)
			snprintf(why, sizeof(why), "; could not write from byte %" PRIu64 " on: %s",
				 p->end_failed_at, strerror((int)p->end_failed_errno));
		else if (p->end_flags & 1)
			snprintf(why, sizeof(why), "; some data could not be written");
		printf("  end:         present (%" PRIu64 " events, %" PRIu64 " lost, %" PRIu64
		       " threads, by the writer)%s\n",
		       p->end_events, p->end_lost, p->end_threads, why);
		if ((p->end_flags & TA_END_F_SIGNAL) && p->end_signal)
			printf("  signal:      the process died of signal %" PRIu64 " (%s)\n",
			       p->end_signal, ta_signal_name((int)p->end_signal));
	} else if (p->cut_cause == TA_CUT_KILLED) {
		printf("  end:         missing (killed by signal %" PRIu64 " (%s) before the agent "
		       "could write it)\n",
		       p->cut_value, ta_signal_name((int)p->cut_value));
	} else if (p->cut_cause == TA_CUT_STREAM) {
		printf("  end:         missing (the stream was cut after %" PRIu64 " bytes: %s)\n",
		       p->cut_value, p->cut_text[0] ? p->cut_text : "no reason given");
	} else {
		printf("  end:         missing (the program was killed or is still running)\n");
	}
	if (p->end_reserve_blocks)
		printf("  reserve:     %" PRIu64 " blocks beyond the memory cap, taken by signal "
		       "handlers inside their thread's drain\n",
		       p->end_reserve_blocks);
	if (p->end_flags & TA_END_F_ATTACH)
		printf("  attached:    by traceagent attach; %" PRIu64
		       " calls were open when tracing started (their exits are ignored)\n",
		       open_at_start(s, p));
	if (p->chunks_missing)
		printf("  missing:     %" PRIu64 " chunks\n", p->chunks_missing);
	if (p->npauses || p->channel_marks)
		printf("  control:     pauses %zu, paused %s; channel switches %" PRIu64
		       " (traceagent ctl)\n",
		       p->npauses, ta_fmt_time(b[0], sizeof(b[0]), paused_ns(p)), p->channel_marks);
	if (p->crash)
		text_crash(v, p);
	if (p->patch)
		text_patch(p->patch);
	if (p->filter)
		text_filter(v, p);
	printf("  threads:     %" PRIu64 "\n", c.threads);
	printf("  %10s %10s %12s %8s %12s  %s\n", "tid", "parent", "events", "lost", "wait",
	       "name");
	for (size_t i = 0; i < s->nthreads; i++) {
		const struct ta_sess_thread *t = s->threads[i];

		if (t->pid != p->pid)
			continue;
		printf("  %10" PRIu64 " %10" PRIu64 " %12" PRIu64 " %8" PRIu64 " %12s  %s\n",
		       t->tid, t->parent_tid, t->events, ta_thread_lost(t),
		       ta_fmt_time(b[0], sizeof(b[0]), ta_process_dur_ns(p, t->wait_ticks)),
		       t->name ? t->name : "");
	}
	printf("  modules:     %zu\n", p->nmodules);
	for (size_t i = 0; i < p->nmodules; i++) {
		const struct ta_sess_module *m = &p->modules[i];
		char id[2 * 64 + 1];

		hex(id, sizeof(id), m->build_id, m->build_id_len);
		printf("    %#18" PRIx64 "  %-40s  %s%s%s\n", m->bias, id[0] ? id : "-", m->path,
		       m->flags & 1 ? "  (main)" : "",
		       m->unload_ticks != UINT64_MAX ? "  (unloaded)" : "");
	}
}

static void text_channels(const struct api_counts *a)
{
	struct channel_row *rows;
	char(*names)[32] = calloc((a->v->s->nprocs + a->npc) * TA_CHANNELS_MAX + 1, 32);
	long n = names ? channel_rows(a, &rows, names) : -1;
	uint64_t any = a->unmatched;

	if (n < 0) {
		free(names);
		return;
	}
	for (long r = 0; r < n; r++)
		for (int c = 0; c < CH_NCOUNTS; c++)
			any |= rows[r].n[c];
	/* Quiet for a dump without the manual API's events. */
	if (any) {
		printf("channels:      %-12s %8s %8s %8s %8s %8s %8s\n", "", "zones", "messages",
		       "instants", "counters", "frames", "switches");
		for (long r = 0; r < n; r++) {
			printf("               %-12s", rows[r].name);
			for (int c = 0; c < CH_NCOUNTS; c++)
				printf(" %8" PRIu64, rows[r].n[c]);
			putchar('\n');
		}
		printf("zone ENDs without a zone: %" PRIu64 "\n", a->unmatched);
	}
	free(rows);
	free(names);
}

static void json_channels(const struct api_counts *a)
{
	struct channel_row *rows;
	char(*names)[32] = calloc((a->v->s->nprocs + a->npc) * TA_CHANNELS_MAX + 1, 32);
	long n = names ? channel_rows(a, &rows, names) : -1;
	uint64_t switches = 0;

	printf(" \"channels\": [");
	for (long r = 0; r < n; r++) {
		printf("%s{\"name\": ", r ? ", " : "");
		ta_json_str(stdout, rows[r].name);
		for (int c = 0; c < CH_NCOUNTS; c++)
			printf(", \"%s\": %" PRIu64, ch_keys[c], rows[r].n[c]);
		putchar('}');
		switches += rows[r].n[CH_SWITCHES];
	}
	printf("], \"channel_switches\": %" PRIu64 ", \"zone_end_unmatched\": %" PRIu64 ",\n",
	       switches, a->unmatched);
	if (n >= 0)
		free(rows);
	free(names);
}

static void print_text(struct ta_view *v, const struct api_counts *a)
{
	const struct ta_session *s = v->s;
	const char *why = ta_view_incomplete(v);
	char b[3][64];

	printf("dump:          %s\n", v->path);
	printf("format:        %u.%u\n", s->fh.major, s->fh.minor);
	printf("size:          %s\n", fmt_bytes(b[0], sizeof(b[0]), file_size(v)));
	printf("complete:      %s%s\n", why ? "no: " : "yes", why ? why : "");
	printf("chunks:        %" PRIu64 " (%" PRIu64 " of events", s->chunks, s->events_chunks);
	if (s->unknown_chunks)
		printf(", %" PRIu64 " of unknown types", s->unknown_chunks);
	printf("), %s stored, %s raw", fmt_bytes(b[1], sizeof(b[1]), s->stored_bytes),
	       fmt_bytes(b[2], sizeof(b[2]), s->raw_bytes));
	if (s->stored_bytes)
		printf(" (compression %.2fx)", (double)s->raw_bytes / (double)s->stored_bytes);
	putchar('\n');
	printf("events:        %" PRIu64 ", lost %" PRIu64, v->events, v->lost);
	if (v->lost_no_ring)
		printf(" (%" PRIu64 " by threads that could not get a ring)", v->lost_no_ring);
	putchar('\n');
	if (v->lost && ta_fmt_lost_by(b[0], sizeof(b[0]), v->lost_by)[0])
		printf("lost by cause: %s\n", b[0]);
	printf("duration:      %s\n", ta_fmt_time(b[0], sizeof(b[0]), ta_session_duration_ns(s)));
	printf("processes:     %zu\n", s->nprocs);
	printf("errors:        %" PRIu64 "\n", s->errors_all + (v->fatal[0] ? 1 : 0));
	if (v->fatal[0])
		printf("  %s\n", v->fatal);
	for (size_t i = 0; i < s->nerrors; i++) {
		char buf[256];

		ta_error_text(buf, sizeof(buf), &s->errors[i]);
		printf("  %s\n", buf);
	}
	text_channels(a);
	for (size_t i = 0; i < s->nprocs; i++)
		text_process(v, s->procs[i]);
}

/* ---- JSON ------------------------------------------------------------------------------ */

/* pc as recorded, and the session's key of the function it is in (for a
 * return address, of the call before it). */
static void json_pc(struct ta_view *v, uint32_t pid, uint64_t pc, uint64_t key)
{
	struct ta_fn_name fn;

	ta_view_name(v, pid, key, &fn);
	printf("{\"pc\": %" PRIu64 ", \"function\": ", pc);
	ta_json_str(stdout, fn.name);
	printf(", \"module\": ");
	ta_json_str(stdout, fn.module);
	putchar('}');
}

static void json_crash(struct ta_view *v, const struct ta_process *p)
{
	const struct ta_crash *c = p->crash;
	char b[32];

	printf("    \"crash\": {\"signal\": %" PRIu64 ", \"signal_name\": \"%s\", \"code\": %" PRId64
	       ", \"address\": %" PRIu64 ", \"tid\": %" PRIu64 ",\n      \"backtrace\": [",
	       c->signal, signal_name(b, sizeof(b), c->signal), c->code, c->addr, c->tid);
	for (size_t i = 0; i < c->npcs; i++) {
		printf("%s", i ? ", " : "");
		json_pc(v, p->pid, c->pcs[i], ta_process_addr_at(p, c->pcs[i] - (i > 0), c->ticks));
	}
	printf("],\n      \"stacks\": [");
	for (size_t i = 0, first = 1; i < v->s->nthreads; i++) {
		const struct ta_sess_thread *t = v->s->threads[i];

		if (t->pid != p->pid)
			continue;
		printf("%s{\"tid\": %" PRIu64 ", \"open\": [", first ? "" : ", ", t->tid);
		for (uint32_t k = 0; k < t->last_depth; k++) {
			printf("%s", k ? ", " : "");
			json_pc(v, p->pid, ta_process_addr(p, t->last_stack[k]), t->last_stack[k]);
		}
		printf("]}");
		first = 0;
	}
	printf("]},\n");
}

static void json_process(struct ta_view *v, const struct ta_process *p)
{
	const struct ta_session *s = v->s;
	struct counts c = process_counts(s, p);
	char b[64], lcb[64];
	int first = 1;

	putchar('{');
	ta_json_pid(stdout, s, p->pid);
	printf(", ");
	if (p->has_info) {
		printf("\"ppid\": %" PRIu64 ", \"exe\": ", p->ppid);
		ta_json_str(stdout, p->exe);
		printf(", \"argv\": [");
		for (size_t i = 0; i < p->argc; i++) {
			printf("%s", i ? ", " : "");
			ta_json_str(stdout, p->argv[i]);
		}
		printf("], \"commands\": [");
		for (size_t k = 0; k < p->nimages; k++) {
			printf("%s[", k ? ", " : "");
			for (size_t i = 0; i < p->cmds[k].argc; i++) {
				printf("%s", i ? ", " : "");
				ta_json_str(stdout, p->cmds[k].argv[i]);
			}
			putchar(']');
		}
		printf("], \"arch\": ");
		ta_json_str(stdout, p->arch);
		printf(",\n    \"start_realtime_ns\": %" PRIu64 ", \"start_time\": \"%s\", ",
		       p->start_realtime_ns, iso_time(b, sizeof(b), p->start_realtime_ns));
	} else {
		printf("\"ppid\": null, \"exe\": null, \"argv\": null, \"commands\": null, "
		       "\"arch\": null,\n    "
		       "\"start_realtime_ns\": null, \"start_time\": null, ");
	}
	printf("\"duration_ns\": %" PRIu64 ",\n", process_duration_ns(p));
	printf("    \"clock\": {\"source\": \"%s\", \"nominal_hz\": %" PRIu64
	       ", \"pairs\": %zu, \"calibrated\": %s, \"ticks_per_second\": %.3f},\n",
	       p->has_info ? clock_name(p->clock_source) : "unknown", p->nominal_hz, p->nclock,
	       p->uncalibrated ? "false" : "true", ticks_per_second(p));
	if (p->has_info)
		printf("    \"settings\": {\"block_size\": %" PRIu64 ", \"memory_cap\": %" PRIu64
		       ", \"flush_ms\": %" PRIu64 ", \"mode\": \"%s\", \"libcalls\": \"%s\"},\n",
		       p->block_size, p->memory_cap, p->flush_ms, mode_name(p->mode),
		       libcall_classes(lcb, sizeof(lcb), p->libcall_classes));
	else
		printf("    \"settings\": null,\n");
	printf("    \"events\": %" PRIu64 ", \"lost\": %" PRIu64 ", \"lost_no_ring\": %" PRIu64
	       ", \"chunks_missing\": %" PRIu64 ", \"lost_by_cause\": ",
	       c.events, c.lost, ta_process_lost_no_ring(s, p), p->chunks_missing);
	ta_print_lost_by_json(p->end_lost_by);
	printf(",\n");
	printf("    \"pauses\": %zu, \"paused_ns\": %" PRIu64 ", \"ctl_channel_switches\": %" PRIu64
	       ",\n",
	       p->npauses, paused_ns(p), p->channel_marks);
	if (p->crash)
		json_crash(v, p);
	else
		printf("    \"crash\": null,\n");
	if (p->patch)
		json_patch(p->patch);
	else
		printf("    \"patch\": null,\n");
	if (p->filter)
		json_filter(v, p);
	else
		printf("    \"filters\": null,\n");
	if (p->has_end)
		printf("    \"end\": {\"events\": %" PRIu64 ", \"lost\": %" PRIu64
		       ", \"threads\": %" PRIu64 ", \"data_lost\": %s, \"reserve_blocks\": %" PRIu64
		       ", \"signal\": %" PRIu64 ", \"write_failed_at\": %" PRIu64
		       ", \"write_errno\": %" PRIu64 "},\n",
		       p->end_events, p->end_lost, p->end_threads,
		       p->end_flags & 1 ? "true" : "false", p->end_reserve_blocks,
		       (p->end_flags & TA_END_F_SIGNAL) ? p->end_signal : 0,
		       p->end_failed_errno ? p->end_failed_at : 0, p->end_failed_errno);
	else
		printf("    \"end\": null,\n");
	if (p->cut_cause) {
		printf("    \"cut\": {\"cause\": \"%s\", \"value\": %" PRIu64 ", \"why\": ",
		       p->cut_cause == TA_CUT_KILLED	 ? "killed"
		       : p->cut_cause == TA_CUT_STREAM ? "stream"
						       : "unknown",
		       p->cut_value);
		ta_json_str(stdout, p->cut_text);
		printf("},\n");
	} else {
		printf("    \"cut\": null,\n");
	}
	printf("    \"attached\": %s, \"open_at_start\": %" PRIu64 ",\n",
	       p->end_flags & TA_END_F_ATTACH ? "true" : "false",
	       p->end_flags & TA_END_F_ATTACH ? open_at_start(s, p) : 0);
	printf("    \"threads\": [");
	for (size_t i = 0; i < s->nthreads; i++) {
		const struct ta_sess_thread *t = s->threads[i];

		if (t->pid != p->pid)
			continue;
		printf("%s\n      {\"tid\": %" PRIu64 ", \"name\": ", first ? "" : ",", t->tid);
		ta_json_str(stdout, t->name ? t->name : "");
		printf(", \"parent_tid\": %" PRIu64 ", \"events\": %" PRIu64 ", \"lost\": %" PRIu64
		       ", \"wait_ns\": %" PRIu64 ", \"ended\": %s}",
		       t->parent_tid, t->events, ta_thread_lost(t),
		       ta_process_dur_ns(p, t->wait_ticks), t->has_end ? "true" : "false");
		first = 0;
	}
	printf("%s],\n    \"modules\": [", first ? "" : "\n    ");
	for (size_t i = 0; i < p->nmodules; i++) {
		const struct ta_sess_module *m = &p->modules[i];
		char id[2 * 64 + 1];

		hex(id, sizeof(id), m->build_id, m->build_id_len);
		printf("%s\n      {\"path\": ", i ? "," : "");
		ta_json_str(stdout, m->path);
		/* When it appeared and went, from the process's start. */
		printf(", \"bias\": %" PRIu64
		       ", \"build_id\": \"%s\", \"main\": %s, \"load_ns\": %" PRIu64
		       ", \"unload_ns\": ",
		       m->bias, id, m->flags & 1 ? "true" : "false",
		       ta_process_dur_ns(
			   p, m->load_ticks > p->start_ticks ? m->load_ticks - p->start_ticks : 0));
		if (m->unload_ticks != UINT64_MAX)
			printf("%" PRIu64,
			       ta_process_dur_ns(p, m->unload_ticks > p->start_ticks
							? m->unload_ticks - p->start_ticks
							: 0));
		else
			printf("null");
		printf(", \"ranges\": [");
		for (size_t k = 0; k < m->nranges; k++)
			printf("%s[%" PRIu64 ", %" PRIu64 "]", k ? ", " : "", m->ranges[k].start,
			       m->ranges[k].end);
		printf("]}");
	}
	printf("%s]}", p->nmodules ? "\n    " : "");
}

static void print_json(struct ta_view *v, const struct api_counts *a)
{
	const struct ta_session *s = v->s;
	const char *why = ta_view_incomplete(v);

	printf("{\"dump\": ");
	ta_json_str(stdout, v->path);
	printf(", \"format\": {\"major\": %u, \"minor\": %u}, \"file_bytes\": %" PRIu64 ",\n",
	       s->fh.major, s->fh.minor, file_size(v));
	printf(" \"complete\": %s, \"incomplete\": ", why ? "false" : "true");
	if (why)
		ta_json_str(stdout, why);
	else
		printf("null");
	printf(", \"errors\": ");
	ta_json_errors(stdout, v);
	printf(",\n \"chunks\": %" PRIu64 ", \"events_chunks\": %" PRIu64
	       ", \"unknown_chunks\": %" PRIu64 ", \"stored_bytes\": %" PRIu64
	       ", \"raw_bytes\": %" PRIu64 ", \"compression_ratio\": ",
	       s->chunks, s->events_chunks, s->unknown_chunks, s->stored_bytes, s->raw_bytes);
	if (s->stored_bytes)
		printf("%.3f", (double)s->raw_bytes / (double)s->stored_bytes);
	else
		printf("null");
	printf(",\n \"events\": %" PRIu64 ", \"lost\": %" PRIu64 ", \"lost_no_ring\": %" PRIu64
	       ", \"lost_by_cause\": ",
	       v->events, v->lost, v->lost_no_ring);
	ta_print_lost_by_json(v->lost_by);
	printf(", \"threads\": %zu, \"duration_ns\": %" PRIu64 ",\n", s->nthreads,
	       ta_session_duration_ns(s));
	json_channels(a);
	printf(" \"processes\": [");
	for (size_t i = 0; i < s->nprocs; i++) {
		printf("%s\n  ", i ? "," : "");
		json_process(v, s->procs[i]);
	}
	printf("%s]}\n", s->nprocs ? "\n " : "");
}

/* ---- the command ------------------------------------------------------------------------- */

static const struct ta_opt info_opts[] = {
    {"--json", TA_ARG_NONE, TA_OPT_JSON},
    {"--demangle", TA_ARG_EITHER, TA_OPT_DEMANGLE},
    {NULL, TA_ARG_NONE, 0},
};

static int parse_args(int argc, char **argv, struct options *o)
{
	struct ta_opts p;
	int demangle = -1;
	int id;

	memset(o, 0, sizeof(*o));
	ta_opts_init(&p, "info", info_opts, usage, argc, argv);
	while ((id = ta_opts_next(&p)) != TA_OPT_END) {
		switch (id) {
		case TA_OPT_DEMANGLE:
			if (ta_opts_demangle(&p, &demangle))
				return 2;
			break;
		case TA_OPT_EXIT:
			return p.status;
		case TA_OPT_ARG:
			if (ta_opts_dump(&p, &o->path))
				return 2;
			break;
		case TA_OPT_JSON:
			o->json = 1;
			break;
		}
	}
	/* Short names in what a reader reads, whole in what a tool does. */
	ta_view_set_demangle(demangle >= 0 ? (enum ta_demangle)demangle
			     : !o->json ? TA_DEMANGLE_SIMPLE
					    : TA_DEMANGLE_FULL);
	return ta_opts_need_dump(&p, o->path) ? 2 : -1;
}

int ta_cmd_info(int argc, char **argv)
{
	struct options opt;
	struct ta_view v;
	struct api_counts *a;
	struct ta_visitor vis;
	int rc = parse_args(argc, argv, &opt), status;

	if (rc >= 0)
		return rc;
	a = calloc(1, sizeof(*a));
	if (!a) {
		fprintf(stderr, "traceagent: out of memory\n");
		return 1;
	}
	a->v = &v;
	memset(&vis, 0, sizeof(vis));
	vis.ctx = a;
	vis.enter = api_enter;
	vis.ext = api_ext;
	if (ta_view_open(&v, opt.path, &vis) < 0) {
		status = v.status;
		ta_view_close(&v);
		free(a->pc);
		free(a);
		return status;
	}
	status = v.status;
	if (a->nomem) {
		fprintf(stderr, "traceagent: %s: out of memory: channel counts are short\n",
			opt.path);
		status = 1;
	}
	if (opt.json)
		print_json(&v, a);
	else
		print_text(&v, a);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "traceagent: writing the info: %s\n", strerror(errno));
		status = 1;
	}
	ta_view_close(&v);
	free(a->pc);
	free(a);
	return status;
}
