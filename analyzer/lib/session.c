/* SPDX-License-Identifier: MIT */
/*
 * session.c - the decoded model of a dump: the session's lifetime, reading
 * a dump chunk by chunk, errors, and finishing (open frames closed, clocks
 * calibrated, module maps built).
 *
 * One pass: metadata chunks fill the process, module and thread tables;
 * EVENTS chunks are decoded with the format's own decoder and replayed on a
 * per-thread stack of frames, each frame visited once at enter and once at
 * exit.  The decoder tells how many frames an exit or a LONGJMP or CATCH
 * marker removed (frames left by longjmp or an exception go with these;
 * an exit never entered removes none),
 * so our stack always follows the writer's shadow-stack rule, and each
 * chunk's stack snapshot lets us notice and repair a lost chunk.
 *
 * The pieces, each using only those after it: session.c (this file: the
 * session's life, reading, finishing); session_par.c (-j: chunks taken
 * apart by workers, merged in order); session_ext.c and session_sums.c
 * (what a worker makes of a chunk: its EXT events, or its sums as the
 * profile would make them); session_chunk.c (each chunk to its decoder,
 * and the thread and end-of-image chunks); session_walk.c (EVENTS chunks
 * replayed on the threads' stacks, with the profile visitor, which the
 * walk inlines); session_procs.c (the process and thread tables, the API's
 * sites, channels and pauses); session_meta.c (the process's other
 * metadata chunks); session_base.c (errors, time, the payload's strings).
 */
#include "session_int.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storedsyms.h"

/* ---- reading a dump ----------------------------------------------------------- */

unsigned ta_session_jobs = 1;

int ta_session_read(struct ta_session *s, const char *path, uint64_t *err_offset)
{
	struct ta_dumpfile *d;
	struct ta_chunk c;
	int rc = ta_dumpfile_open(path, &d);

	if (err_offset)
		*err_offset = 0;
	if (rc < 0)
		return rc;
	s->fh = *ta_dumpfile_header(d);
	if (ta_session_jobs > 1) {
		rc = ta_sess_read_par(s, d, ta_session_jobs, err_offset);
		goto out;
	}
	for (;;) {
		rc = ta_dumpfile_next(d, &c);
		if (rc == 0)
			break;
		if (rc == -TA_E_IO || rc == -TA_E_NOMEM) {
			if (err_offset)
				*err_offset = ta_dumpfile_offset(d);
			break;
		}
		if (rc < 0) {
			ta_session_error(s, rc, &c, 0);
			continue;
		}
		rc = ta_session_chunk(s, &c);
		if (rc < 0) {
			if (err_offset)
				*err_offset = c.offset;
			break;
		}
	}
out:
	s->file_bytes = ta_dumpfile_offset(d);
	{
		int e = errno;

		ta_dumpfile_close(d);
		errno = e; /* for the caller's message about -TA_E_IO */
	}
	return rc;
}

/* ---- time ------------------------------------------------------------------------- */

/* The line through the process's clock pairs, or what else is known. */
static void calibrate(struct ta_process *p)
{
	long double mt = 0, mn = 0, sxx = 0, sxy = 0;
	size_t n = p->nclock;

	p->calibrated = 0;
	p->ns_per_tick = 1;
	p->ns_at_0 = 0;
	for (size_t i = 0; i < n; i++) {
		mt += p->clock[i].ticks;
		mn += p->clock[i].ns;
	}
	if (n) {
		mt /= n;
		mn /= n;
	}
	if (p->clock_source == TA_CLOCK_MONOTONIC) {
		/* Ticks are nanoseconds already. */
		p->ns_at_0 = mn - mt;
		p->calibrated = 1;
		return;
	}
	for (size_t i = 0; i < n; i++) {
		long double dt = p->clock[i].ticks - mt;

		sxx += dt * dt;
		sxy += dt * (p->clock[i].ns - mn);
	}
	/* Least squares: the counter is invariant, so one line fits all. */
	if (n >= 2 && sxx > 0 && sxy > 0 && isfinite((double)(sxy / sxx))) {
		p->ns_per_tick = sxy / sxx;
		p->ns_at_0 = mn - p->ns_per_tick * mt;
		p->calibrated = 1;
	} else if (p->nominal_hz) {
		p->ns_per_tick = 1e9L / p->nominal_hz;
		p->ns_at_0 = n ? mn - p->ns_per_tick * mt : 0;
		p->calibrated = 1;
	}
}

/* ---- finishing --------------------------------------------------------------------- */

static int modrange_cmp(const void *a, const void *b)
{
	const struct ta_modrange *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

static void build_map(struct ta_process *p)
{
	size_t n = 0;

	for (size_t i = 0; i < p->nmodules; i++)
		n += p->modules[i].nranges;
	free(p->map);
	p->nmap = 0;
	p->map = n ? malloc(n * sizeof(*p->map)) : NULL;
	if (!p->map)
		return;
	/* A module that replaced another at the same place (dlclose,
	 * dlopen) is told apart by the address's tag (ta_process_module_at). */
	for (size_t i = 0; i < p->nmodules; i++)
		for (size_t k = 0; k < p->modules[i].nranges; k++) {
			const struct ta_range *rg = &p->modules[i].ranges[k];

			if (rg->end <= rg->start)
				continue;
			p->map[p->nmap].start = rg->start;
			p->map[p->nmap].end = rg->end;
			p->map[p->nmap].m = &p->modules[i];
			p->nmap++;
		}
	qsort(p->map, p->nmap, sizeof(*p->map), modrange_cmp);
}

/* Modules in the order they were loaded (then as the dump lists them). */
static int load_order(const struct ta_sess_module *a, const struct ta_sess_module *b)
{
	if (a->load_ticks != b->load_ticks)
		return a->load_ticks < b->load_ticks ? -1 : 1;
	return a < b ? -1 : a > b;
}

#define CANDIDATES 32

const struct ta_sess_module *ta_process_module_at(const struct ta_process *p, uint64_t key)
{
	const struct ta_sess_module *cand[CANDIDATES];
	uint64_t addr = ta_process_addr(p, key);
	size_t lo = 0, hi = p->nmap, nc = 0, gen;

	/* The last range starting at or below addr. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p->map[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Ranges of different modules do not overlap in one address space at
	 * one time, but a dump may say otherwise, and modules unloaded and
	 * replaced did: look back a little. */
	for (size_t i = lo;
	     i-- > 0 && lo - i <= (p->nunloaded ? CANDIDATES : 8) && nc < CANDIDATES;)
		if (addr < p->map[i].end)
			cand[nc++] = p->map[i].m;
	if (nc <= 1 || !p->nunloaded)
		return nc ? cand[0] : NULL;
	/* Several instances held addr in turn: the tag says how many had
	 * been unloaded by the event's time, so it is the next one loaded. */
	for (size_t i = 1; i < nc; i++)
		for (size_t k = i; k > 0 && load_order(cand[k], cand[k - 1]) < 0; k--) {
			const struct ta_sess_module *x = cand[k];

			cand[k] = cand[k - 1];
			cand[k - 1] = x;
		}
	gen = (size_t)(key >> TA_ADDR_TAG_SHIFT) & TA_ADDR_TAG_MAX;
	return cand[gen < nc ? gen : nc - 1];
}

void ta_session_finish(struct ta_session *s)
{
	const struct ta_process *ref = NULL;

	if (s->finished)
		return;
	s->finished = 1;
	for (size_t i = 0; i < s->nthreads; i++) {
		struct ta_sess_thread *t = s->threads[i];
		struct ta_process *p = ta_session_process(s, t->pid);

		if (!t->over)
			ta_sess_thread_close(s, t);
		if (p && t->has_end)
			ta_sess_note_ticks(p, t->end_ticks);
	}
	for (size_t i = 0; i < s->nprocs; i++) {
		calibrate(s->procs[i]);
		build_map(s->procs[i]);
		if (s->procs[i]->calibrated && !ref)
			ref = s->procs[i];
	}
	/* A process without its own calibration (its CLOCK chunk lost) ran
	 * on the same machine as one with: borrow that line. */
	for (size_t i = 0; i < s->nprocs; i++) {
		struct ta_process *p = s->procs[i];

		if (p->calibrated)
			continue;
		if (ref) {
			p->ns_per_tick = ref->ns_per_tick;
			p->ns_at_0 = ref->ns_at_0;
		} else {
			p->uncalibrated = 1;
		}
	}
}

/* Why a process's dump stops without END, or with data left out, in
 * buf; NULL if it does not. */
static const char *process_incomplete(const struct ta_process *p, char *buf, size_t n)
{
	if (!p->has_end && p->cut_cause == TA_CUT_KILLED) {
		snprintf(buf, n,
			 "no end chunk: the program was killed by signal %" PRIu64
			 " (%s) before the agent could write it",
			 p->cut_value, ta_signal_name((int)p->cut_value));
		return buf;
	}
	if (!p->has_end && p->cut_cause == TA_CUT_STREAM) {
		snprintf(buf, n, "no end chunk: the stream was cut after %" PRIu64 " bytes (%s)",
			 p->cut_value, p->cut_text[0] ? p->cut_text : "no reason given");
		return buf;
	}
	if (!p->has_end)
		return "no end chunk: the program was killed or is still running";
	if ((p->end_flags & 1) && p->end_failed_errno == ENOSPC) {
		snprintf(buf, n,
			 "the disk was full at byte %" PRIu64
			 ": the agent could not write the rest of its data",
			 p->end_failed_at);
		return buf;
	}
	if ((p->end_flags & 1) && p->end_failed_errno) {
		snprintf(buf, n, "the agent could not write its data from byte %" PRIu64 " on: %s",
			 p->end_failed_at, strerror((int)p->end_failed_errno));
		return buf;
	}
	if (p->end_flags & 1)
		return "the agent could not write all of its data";
	return NULL;
}

const char *ta_session_incomplete(const struct ta_session *s)
{
	/* The views are single-threaded where they ask; a buffer per thread
	 * all the same. */
	static __thread char buf[320];

	if (s->errors_all)
		return "the dump is damaged";
	if (!s->nprocs)
		return "the dump holds no process (the program ended before writing any)";
	for (size_t i = 0; i < s->nprocs; i++) {
		const struct ta_process *p = s->procs[i];
		const char *why = process_incomplete(p, buf, sizeof(buf));

		if (why)
			return why;
		if (p->chunks_missing)
			return "chunks are missing";
	}
	for (size_t i = 0; i < s->nthreads; i++)
		if (s->threads[i]->chunks_missing)
			return "chunks are missing";
	return NULL;
}

/* ---- session lifetime --------------------------------------------------------------- */

struct ta_session *ta_session_new(const struct ta_visitor *v)
{
	struct ta_session *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	ta_decoder_init(&s->dec);
	if (v)
		s->v = *v;
	return s;
}

void ta_session_free(struct ta_session *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nthreads; i++)
		ta_sess_thread_free(s->threads[i]);
	free(s->threads);
	ta_htab_free(&s->thash);
	for (size_t i = 0; i < s->nprocs; i++)
		ta_sess_process_free(s->procs[i]);
	free(s->procs);
	ta_decoder_free(&s->dec);
	ta_symstore_free(s->stored);
	free(s);
}

void ta_session_stored_names(struct ta_session *s, struct ta_resolver *r)
{
	ta_resolver_stored(r, ta_symstore_table, &s->stored);
}
