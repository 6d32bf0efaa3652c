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
 * The text is this file's; the JSON (info_json.c) is one object per
 * process under "processes", each section an object of its own, so later
 * additions (crash reports, patch refusals) become new keys without
 * changing the existing ones.
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
#include "info_int.h"

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
		   "  --symfs=DIR     look for each module's file under DIR, at its\n"
		   "                  recorded path (DIR/recorded/path)\n"
		   "  --debug-dir=DIR look for separate debug files in DIR too\n"
		   "                  (DIR/.build-id/, DIR/recorded/path.debug);\n"
		   "                  repeatable (see traceagent-symbols(7))\n"
		   "  -h, --help      this help\n"
		   "\n"
		   "Exit status: 0 for a whole dump, 1 when it is damaged or incomplete (what\n"
		   "could be read is still shown), 2 for usage errors or a file that cannot\n"
		   "be opened.\n");
}

/* ---- text ------------------------------------------------------------------------------- */

static void text_pc(struct ta_view *v, uint32_t pid, uint64_t pc, int is_return)
{
	struct ta_fn fn;

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

	printf("  crashed:     %s (code %" PRId64 ", address %#" PRIx64 ") in thread %" PRIu64 "\n",
	       ta_info_signal_name(b, sizeof(b), c->signal), c->code, c->addr, c->tid);
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
	if (pt->patchable_entry)
		printf("  at their patchable entries (-fpatchable-function-entry): %" PRIu64 "\n",
		       pt->patchable_entry);
	if (pt->frames_without_exit)
		printf("  patched calls deeper than the return stack (exit not recorded): %" PRIu64
		       "\n",
		       pt->frames_without_exit);
}

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
			struct ta_fn fn;

			if (f->fns[i].how != ways[w].how)
				continue;
			ta_view_name(v, p->pid, f->fns[i].addr, &fn);
			printf("%s %s (%s)", shown++ ? "," : "", fn.name,
			       ta_info_filter_kind(k, sizeof(k), f->fns[i].kind));
		}
		putchar('\n');
	}
}

/* Where a module's names come from, and whether its file is the one
 * recorded. */
static void text_symbols(const struct ta_sym_origin *o, const struct ta_sess_module *m)
{
	char *lines;
	enum ta_sym_source lsrc = ta_info_lines(m, &lines);

	const char *check = o->match > 0    ? "build-id matches"
			    : !o->match	    ? "build-id differs"
			    : o->dump_id[0] ? "no file to check"
					    : "no build-id recorded";

	printf("%22s symbols: %s%s%s (%s)\n", "", ta_info_symbols_from(o->source),
	       o->path ? " " : "", o->path ? o->path : "", check);
	printf("%22s lines:   %s%s%s\n", "", ta_info_symbols_from(lsrc), lines ? " " : "",
	       lines ? lines : "");
	free(lines);
}

static void text_process(struct ta_view *v, const struct ta_process *p)
{
	const struct ta_session *s = v->s;
	struct counts c = ta_info_process_counts(s, p);
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
		printf("  started:     %s\n",
		       ta_info_iso_time(b[0], sizeof(b[0]), p->start_realtime_ns));
	} else {
		printf("  (no process chunk: command line and settings unknown)\n");
	}
	printf("  duration:    %s\n",
	       ta_fmt_time(b[0], sizeof(b[0]), ta_info_process_duration_ns(p)));
	printf("  clock:       %s, ",
	       p->has_info ? ta_info_clock_name(p->clock_source) : "unknown");
	if (p->uncalibrated)
		printf("not calibrated (times are in ticks)");
	else
		printf("%.0f ticks/s", ta_info_ticks_per_second(p));
	printf(" from %zu clock pairs", p->nclock);
	if (p->nominal_hz)
		printf(" (nominal %" PRIu64 " Hz)", p->nominal_hz);
	putchar('\n');
	if (p->has_info)
		printf("  settings:    block %s, memory cap %s, flush every %" PRIu64
		       " ms, mode %s\n",
		       ta_info_fmt_bytes(b[1], sizeof(b[1]), p->block_size),
		       ta_info_fmt_bytes(b[2], sizeof(b[2]), p->memory_cap), p->flush_ms,
		       ta_info_mode_name(p->mode));
	if (p->has_info) {
		char lc[64];

		printf("  libcalls:    %s\n",
		       ta_info_libcall_classes(lc, sizeof(lc), p->libcall_classes));
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
		       ta_info_open_at_start(s, p));
	if (p->chunks_missing)
		printf("  missing:     %" PRIu64 " chunks\n", p->chunks_missing);
	if (p->npauses || p->channel_marks)
		printf("  control:     pauses %zu, paused %s; channel switches %" PRIu64
		       " (traceagent ctl)\n",
		       p->npauses, ta_fmt_time(b[0], sizeof(b[0]), ta_info_paused_ns(p)),
		       p->channel_marks);
	if (p->crash)
		text_crash(v, p);
	if (p->patch)
		text_patch(p->patch);
	if (p->filter)
		text_filter(v, p);
	if (p->keep) {
		const struct ta_keep_info *k = p->keep;
		char kb[32];

		printf("  keep:        slow frames of set \"%s\" over %s, %" PRIu64
		       " before each (TRACEAGENT_KEEP): frames seen %" PRIu64 ", slow %" PRIu64
		       ", kept %" PRIu64 " in %zu windows; events let go %" PRIu64 " (%" PRIu64
		       " before being judged: %" PRIu64 " windows kept in part)"
		       "; windows lost %" PRIu64 ", marks not judged %" PRIu64 "\n",
		       k->set, ta_fmt_time(kb, sizeof(kb), k->budget_ns), k->before, k->frames_seen,
		       k->frames_slow, k->frames_kept, k->nwin, k->let_go, k->let_go_early,
		       k->windows_partial, k->windows_lost, k->marks_unjudged);
	}
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

		ta_info_hex(id, sizeof(id), m->build_id, m->build_id_len);
		printf("    %#18" PRIx64 "  %-40s  %s%s%s\n", m->bias, id[0] ? id : "-", m->path,
		       m->flags & 1 ? "  (main)" : "",
		       m->unload_ticks != UINT64_MAX ? "  (unloaded)" : "");
		text_symbols(ta_info_symbols(v, m), m);
	}
}

static void text_channels(const struct api_counts *a)
{
	struct channel_row *rows;
	char(*names)[32] = calloc((a->v->s->nprocs + a->npc) * TA_CHANNELS_MAX + 1, 32);
	long n = names ? ta_info_channel_rows(a, &rows, names) : -1;
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

static void print_text(struct ta_view *v, const struct api_counts *a)
{
	const struct ta_session *s = v->s;
	const char *why = ta_view_incomplete(v);
	char b[3][64];

	printf("dump:          %s\n", v->path);
	printf("format:        %u.%u\n", s->fh.major, s->fh.minor);
	printf("size:          %s\n", ta_info_fmt_bytes(b[0], sizeof(b[0]), ta_info_file_size(v)));
	printf("complete:      %s%s\n", why ? "no: " : "yes", why ? why : "");
	printf("chunks:        %" PRIu64 " (%" PRIu64 " of events", s->chunks, s->events_chunks);
	if (s->unknown_chunks)
		printf(", %" PRIu64 " of unknown types", s->unknown_chunks);
	printf("), %s stored, %s raw", ta_info_fmt_bytes(b[1], sizeof(b[1]), s->stored_bytes),
	       ta_info_fmt_bytes(b[2], sizeof(b[2]), s->raw_bytes));
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
	ta_info_app_text(a);
	for (size_t i = 0; i < s->nprocs; i++)
		text_process(v, s->procs[i]);
}

/* ---- the command ------------------------------------------------------------------------- */

static const struct ta_opt info_opts[] = {
    {"--json", TA_ARG_NONE, TA_OPT_JSON},
    {"--demangle", TA_ARG_EITHER, TA_OPT_DEMANGLE},
    {"--symfs", TA_ARG_EITHER, TA_OPT_SYMFS},
    {"--debug-dir", TA_ARG_EITHER, TA_OPT_DEBUG_DIR},
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
		case TA_OPT_SYMFS:
		case TA_OPT_DEBUG_DIR:
			if (ta_opts_symfind(&p))
				return 2;
			break;
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
	ta_view_set_demangle(demangle, o->json);
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
	vis.enter = ta_info_api_enter;
	vis.ext = ta_info_api_ext;
	if (ta_view_open(&v, opt.path, &vis) < 0) {
		status = v.status;
		ta_view_close(&v);
		ta_info_app_free(a);
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
		ta_info_print_json(&v, a);
	else
		print_text(&v, a);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "traceagent: writing the info: %s\n", strerror(errno));
		status = 1;
	}
	ta_view_close(&v);
	ta_info_app_free(a);
	free(a->pc);
	free(a);
	return status;
}
