/* SPDX-License-Identifier: MIT */
/*
 * report_fibers.c - report's rows per fiber (TA_FIBER_ENTER): the runs of
 * each fiber, the threads that ran them, and the calls and zones that
 * belong to it (apimem.h's attribution, the one replay and the exports
 * use: begun and ended inside one run), whichever thread made them.
 *
 * The profile is summed by the workers chunk by chunk (-j), which a
 * visitor of the API's events would stop; the fibers get a pass of their
 * own instead, only when a process of the dump described a fiber's site.
 * A pipe cannot be read twice: report says so and shows no fiber rows.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "apimem.h"
#include "commands.h"
#include "common.h"
#include "grow.h"
#include "section.h"

struct fiber_row {
	uint64_t runs, calls;
	uint64_t total, run; /* ticks: its outermost calls', its runs' */
	uint64_t total_ns, run_ns;
	uint8_t *on; /* bit per thread index: a thread that ran it */
	size_t non;  /* bytes */
	uint64_t threads;
};

struct ta_rfibers {
	struct ta_session *s; /* the pass's: names the processes */
	struct ta_fibers fibers;
	struct fiber_row *rows; /* by fiber index */
	size_t nrows, cap;
	int have_tid;
	uint64_t tid;
	int nomem;
	char text[TA_TEXT_MAX + 1];
};

/* The row of fiber f, made when new. */
static struct fiber_row *row_of(struct ta_rfibers *rf, long f)
{
	if ((size_t)f >= rf->nrows) {
		struct fiber_row *r =
		    ta_vec_reserve(rf->rows, (size_t)f + 1, &rf->cap, sizeof(*r), 16);

		if (!r) {
			rf->nomem = 1;
			return NULL;
		}
		rf->rows = r;
		memset(r + rf->nrows, 0, ((size_t)f + 1 - rf->nrows) * sizeof(*r));
		rf->nrows = (size_t)f + 1;
	}
	return &rf->rows[f];
}

static int thread_counted(const struct ta_rfibers *rf, const struct ta_sess_thread *t)
{
	return !rf->have_tid || t->tid == rf->tid;
}

static void fib_ext(void *ctx, struct ta_sess_thread *t, uint64_t ticks, uint64_t kind,
		    const uint64_t *val, uint32_t n)
{
	struct ta_rfibers *rf = ctx;
	struct fiber_row *r;
	struct ta_apiev e;
	long f;

	if (kind != TA_EXT_FIBER_ENTER && kind != TA_EXT_FIBER_LEAVE)
		return;
	if (ta_apiev_decode(ta_session_process(rf->s, t->pid), ticks, kind, val, n, &e, rf->text) <=
	    0)
		return;
	/* The run going on ends here (a LEAVE, or another fiber entered). */
	f = ta_fibers_now(&rf->fibers, t);
	if (f >= 0 && thread_counted(rf, t) && (r = row_of(rf, f)) &&
	    ticks > rf->fibers.th[t->index].since)
		r->run += ticks - rf->fibers.th[t->index].since;
	if (ta_fibers_take(&rf->fibers, t, &e) < 0) {
		rf->nomem = 1;
		return;
	}
	f = ta_fibers_now(&rf->fibers, t);
	if (kind != TA_EXT_FIBER_ENTER || f < 0 || !thread_counted(rf, t) || !(r = row_of(rf, f)))
		return;
	r->runs++;
	if (t->index / 8 >= r->non) {
		size_t cap = r->non;
		uint8_t *on = ta_vec_reserve(r->on, t->index / 8 + 1, &cap, 1, 8);

		if (!on) {
			rf->nomem = 1;
			return;
		}
		memset(on + r->non, 0, cap - r->non);
		r->on = on;
		r->non = cap;
	}
	if (!(r->on[t->index / 8] & (1u << (t->index % 8)))) {
		r->on[t->index / 8] |= (uint8_t)(1u << (t->index % 8));
		r->threads++;
	}
}

static void fib_exit(void *ctx, struct ta_sess_thread *t, const struct ta_exit_info *x)
{
	struct ta_rfibers *rf = ctx;
	long f = ta_fibers_owner(&rf->fibers, t, x->enter);
	struct fiber_row *r;

	if (f < 0 || !thread_counted(rf, t) || !(r = row_of(rf, f)))
		return;
	r->calls++;
	/* Its time once: the calls whose caller is not the fiber's (begun
	 * before the run). */
	if (!x->depth || t->stack[x->depth - 1].enter < rf->fibers.th[t->index].since)
		r->total += x->duration;
}

/* Whether a process of s described a fiber's site. */
static int fibers_seen(const struct ta_session *s)
{
	for (size_t i = 0; i < s->nprocs; i++)
		for (size_t k = 0; k < s->procs[i]->nsites; k++)
			if (s->procs[i]->sites[k].kind == TA_SITE_FIBER)
				return 1;
	return 0;
}

int ta_report_fibers_read(const char *const *paths, size_t n, const struct ta_session *view,
			  const uint64_t *tid, struct ta_rfibers **out)
{
	struct ta_visitor vis, clipped;
	struct ta_section *sec = NULL;
	struct ta_rfibers *rf;
	int status = 0;

	*out = NULL;
	if (!fibers_seen(view))
		return 0;
	for (size_t k = 0; k < n; k++) {
		struct stat st;

		if (stat(paths[k], &st) < 0 || !S_ISREG(st.st_mode)) {
			fprintf(stderr,
				"traceagent: %s: no rows per fiber: not a file, and they take a "
				"second pass over the dump\n",
				paths[k]);
			return 0;
		}
	}
	if (!(rf = calloc(1, sizeof(*rf))))
		return -1;
	*out = rf;
	rf->have_tid = tid != NULL;
	rf->tid = tid ? *tid : 0;
	memset(&vis, 0, sizeof(vis));
	vis.ctx = rf;
	vis.exit = fib_exit;
	vis.ext = fib_ext;
	/* --section: the fibers' calls inside it, as the functions'. */
	if (ta_section_wrap(paths, n, &vis, &clipped, &sec, &status) < 0)
		return -1;
	if (!(rf->s = ta_session_new(sec ? &clipped : &vis))) {
		ta_section_free(sec);
		return -1;
	}
	if (sec)
		ta_section_session(sec, rf->s);
	/* Quiet: the view's own pass told what is wrong with the files. */
	for (size_t k = 0; k < n; k++)
		(void)ta_session_read(rf->s, paths[k], NULL);
	ta_session_finish(rf->s);
	ta_section_free(sec);
	for (size_t f = 0; f < rf->nrows; f++) {
		const struct ta_process *p = ta_session_process(rf->s, rf->fibers.names.r[f].pid);
		struct fiber_row *r = &rf->rows[f];

		r->total_ns = p ? ta_process_dur_ns(p, r->total) : r->total;
		r->run_ns = p ? ta_process_dur_ns(p, r->run) : r->run;
	}
	return rf->nomem || rf->fibers.nomem ? -1 : 0;
}

/* Whether fiber f has a row: a run or a call counted, in --pid's process. */
static int shown(const struct ta_rfibers *rf, size_t f, const uint64_t *pid)
{
	return f < rf->nrows && (rf->rows[f].runs || rf->rows[f].calls) &&
	       (!pid || ta_pid_os(rf->s, rf->fibers.names.r[f].pid) == *pid);
}

void ta_report_fibers_text(const struct ta_rfibers *rf, const uint64_t *pid)
{
	char b[2][32], pn[TA_PID_NAME_MAX];
	int any = 0;

	for (size_t f = 0; rf && f < rf->fibers.names.n; f++) {
		const struct fiber_row *r = &rf->rows[f];

		if (!shown(rf, f, pid))
			continue;
		if (!any++)
			printf("\nper fiber (the calls made inside its runs, whichever thread ran "
			       "them):\n%10s %10s %12s %12s %8s  %s  %s\n",
			       "runs", "calls", "total", "run time", "threads", "fiber", "process");
		printf("%10" PRIu64 " %10" PRIu64 " %12s %12s %8" PRIu64 "  fiber %s  %s\n",
		       r->runs, r->calls, ta_fmt_time(b[0], sizeof(b[0]), r->total_ns),
		       ta_fmt_time(b[1], sizeof(b[1]), r->run_ns), r->threads,
		       rf->fibers.names.r[f].name,
		       ta_pid_name(rf->s, rf->fibers.names.r[f].pid, pn));
	}
}

void ta_report_fibers_json(const struct ta_rfibers *rf, const uint64_t *pid)
{
	int first = 1;

	putchar('[');
	for (size_t f = 0; rf && f < rf->fibers.names.n; f++) {
		const struct fiber_row *r = &rf->rows[f];

		if (!shown(rf, f, pid))
			continue;
		printf("%s\n   {\"name\": ", first ? "" : ",");
		ta_json_str(stdout, rf->fibers.names.r[f].name);
		printf(", ");
		ta_json_pid(stdout, rf->s, rf->fibers.names.r[f].pid);
		printf(", \"runs\": %" PRIu64 ", \"threads\": %" PRIu64 ", \"calls\": %" PRIu64
		       ", \"total_ns\": %" PRIu64 ", \"run_ns\": %" PRIu64 "}",
		       r->runs, r->threads, r->calls, r->total_ns, r->run_ns);
		first = 0;
	}
	printf("%s]", first ? "" : "\n  ");
}

void ta_report_fibers_free(struct ta_rfibers *rf)
{
	if (!rf)
		return;
	for (size_t f = 0; f < rf->nrows; f++)
		free(rf->rows[f].on);
	free(rf->rows);
	ta_fibers_free(&rf->fibers);
	if (rf->s)
		ta_session_free(rf->s);
	free(rf);
}
