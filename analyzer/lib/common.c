/* SPDX-License-Identifier: MIT */
/*
 * common.c - the parts every analysis command shares; see common.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "common.h"
#include "section.h"

/* ---- messages ---------------------------------------------------------------- */

void ta_error_text(char *buf, size_t n, const struct ta_session_error *e)
{
	size_t k = (size_t)snprintf(buf, n, "chunk %" PRIu64 " at offset %" PRIu64 ": %s", e->chunk,
				    e->offset, ta_strerror(e->code));

	if (k >= n)
		return;
	if (e->code == -TA_E_PAYLOAD || e->code == -TA_E_DECOMPRESS) {
		if (e->type == TA_CHUNK_EVENTS && e->tid)
			snprintf(buf + k, n - k, " (events of thread %" PRIu64 ")", e->tid);
		else
			snprintf(buf + k, n - k, " (%s chunk)", ta_chunk_type_name(e->type));
	} else if (e->code != -TA_E_TRUNCATED && e->skipped) {
		snprintf(buf + k, n - k, "; skipped %" PRIu64 " bytes", e->skipped);
	}
}

const char *ta_view_incomplete(const struct ta_view *v)
{
	if (v->fatal[0])
		return "the file could not be read to its end";
	return ta_session_incomplete(v->s);
}

void ta_json_errors(FILE *f, const struct ta_view *v)
{
	const struct ta_session *s = v->s;
	char buf[256];
	int n = 0;

	fputc('[', f);
	if (v->fatal[0]) {
		ta_json_str(f, v->fatal);
		n++;
	}
	for (size_t i = 0; i < s->nerrors; i++) {
		ta_error_text(buf, sizeof(buf), &s->errors[i]);
		fputs(n++ ? ", " : "", f);
		ta_json_str(f, buf);
	}
	if (s->errors_all > s->nerrors) {
		snprintf(buf, sizeof(buf), "%" PRIu64 " more errors", s->errors_all - s->nerrors);
		fputs(n ? ", " : "", f);
		ta_json_str(f, buf);
	}
	fputc(']', f);
}

void ta_view_warn(const struct ta_view *v, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "traceagent: %s: warning: ", v->path);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static void symbol_failure(void *ctx, const char *path, int code, int errnum)
{
	const struct ta_view *v = ctx;

	if (path[0] != '/')
		return; /* the vDSO and the like: nothing to read */
	if (code == -TA_E_IO)
		ta_view_warn(v, "%s: cannot read symbols: %s", path, strerror(errnum));
	else
		ta_view_warn(v, "%s: cannot read symbols: %s", path,
			     code == -TA_E_PAYLOAD ? "not an ELF file" : ta_strerror(code));
}

/* A module whose file is not the one recorded: its names would be another
 * program's. */
static void symbol_refused(void *ctx, const char *path, const struct ta_sym_origin *o)
{
	const struct ta_view *v = ctx;

	ta_view_warn(v, "%s: build-id %s of the file is not the dump's %s: its %s are not used",
		     path, o->file_id[0] ? o->file_id : "(none)", o->dump_id,
		     o->source == TA_SYMS_STORED ? "source lines (the names are the dump's)"
						 : "names and source lines");
}

/* ---- opening ------------------------------------------------------------------- */

uint64_t ta_thread_lost(const struct ta_sess_thread *t)
{
	return t->lost > t->end_lost ? t->lost : t->end_lost;
}

const char *ta_fmt_lost_by(char *buf, size_t n, const uint64_t *by)
{
	size_t len = 0;

	buf[0] = 0;
	for (unsigned c = 0; c <= TA_LOST_NCAUSES && len < n; c++) {
		int w;

		if (!by[c])
			continue;
		w = snprintf(buf + len, n - len, "%s%s %" PRIu64, len ? ", " : "",
			     c < TA_LOST_NCAUSES ? ta_lost_cause_name(c) : "other", by[c]);
		if (w < 0)
			break;
		len += (size_t)w;
	}
	return buf;
}

void ta_print_lost_by_json(const uint64_t *by)
{
	putchar('{');
	for (unsigned c = 0; c < TA_LOST_NCAUSES; c++)
		printf("%s\"%s\": %" PRIu64, c ? ", " : "", ta_lost_cause_name(c), by[c]);
	if (by[TA_LOST_NCAUSES])
		printf(", \"other\": %" PRIu64, by[TA_LOST_NCAUSES]);
	putchar('}');
}

uint64_t ta_process_lost_no_ring(const struct ta_session *s, const struct ta_process *p)
{
	uint64_t threads = 0;

	for (size_t i = 0; i < s->nthreads; i++)
		if (s->threads[i]->pid == p->pid)
			threads += ta_thread_lost(s->threads[i]);
	/* A dump cut short has no END, and a damaged one may count less
	 * than its threads: nothing is then said to be without a thread. */
	return p->has_end && p->end_lost > threads ? p->end_lost - threads : 0;
}

static void count(struct ta_view *v)
{
	uint64_t lost = 0, end_lost = 0;

	for (size_t i = 0; i < v->s->nthreads; i++) {
		v->events += v->s->threads[i]->events;
		lost += ta_thread_lost(v->s->threads[i]);
	}
	for (size_t i = 0; i < v->s->nprocs; i++) {
		end_lost += v->s->procs[i]->end_lost;
		for (unsigned c = 0; c <= TA_LOST_NCAUSES; c++)
			v->lost_by[c] += v->s->procs[i]->end_lost_by[c];
		v->lost_no_ring += ta_process_lost_no_ring(v->s, v->s->procs[i]);
	}
	v->lost = lost > end_lost ? lost : end_lost;
}

/* The errors of the session from the stored one first on, and those not
 * stored past the count all0 had, named by path. */
static void print_errors(struct ta_view *v, const char *path, size_t first, uint64_t all0)
{
	for (size_t i = first; i < v->s->nerrors; i++) {
		char buf[256];

		ta_error_text(buf, sizeof(buf), &v->s->errors[i]);
		fprintf(stderr, "traceagent: %s: %s\n", path, buf);
	}
	if (v->s->errors_all - all0 > v->s->nerrors - first)
		fprintf(stderr, "traceagent: %s: %" PRIu64 " more errors\n", path,
			v->s->errors_all - all0 - (v->s->nerrors - first));
}

/* Reads one dump into the view's session: 0, or -1 when it cannot be
 * opened (or, one of several, is not a dump), the message printed.  Its
 * reason to stop early goes to fatal. */
static int read_one(struct ta_view *v, const char *path, int several, char *fatal, size_t n)
{
	uint64_t at, chunks0 = v->s->chunks, all0 = v->s->errors_all;
	int rc = ta_session_read(v->s, path, &at);
	int nothing = v->s->chunks == chunks0 && v->s->errors_all == all0;

	fatal[0] = 0;
	if (rc == -TA_E_IO && nothing) {
		fprintf(stderr, "traceagent: %s: %s\n", path, strerror(errno));
		v->status = 2;
		return -1;
	}
	if (rc == -TA_E_IO)
		snprintf(fatal, n, "read error at offset %" PRIu64 ": %s", at, strerror(errno));
	else if (rc < 0 && nothing && rc != -TA_E_NOMEM)
		snprintf(fatal, n, "file header at offset 0: %s", ta_strerror(rc));
	else if (rc < 0)
		snprintf(fatal, n, "at offset %" PRIu64 ": %s", at, ta_strerror(rc));
	/* Several dumps are one view only when each is one: a file that is
	 * not a dump among them is a mistake, not a damaged dump. */
	if (several && fatal[0] && nothing) {
		fprintf(stderr, "traceagent: %s: not a dump (%s)\n", path, fatal);
		v->status = 2;
		return -1;
	}
	return 0;
}

int ta_view_open(struct ta_view *v, const char *path, const struct ta_visitor *vis)
{
	return ta_view_open_many(v, &path, 1, path, vis);
}

/* The command's --demangle, for every view it opens. */
static enum ta_demangle demangle_mode = TA_DEMANGLE_FULL;

void ta_view_set_demangle(int asked, int tool)
{
	demangle_mode = asked >= 0 ? (enum ta_demangle)asked
			: tool	   ? TA_DEMANGLE_FULL
				   : TA_DEMANGLE_SIMPLE;
}

void ta_view_naming(struct ta_view *v)
{
	v->demangle = demangle_mode;
	if (v->res)
		ta_resolver_shorten(v->res, v->demangle == TA_DEMANGLE_SIMPLE);
}

int ta_view_open_many(struct ta_view *v, const char *const *paths, size_t n, const char *label,
		      const struct ta_visitor *vis)
{
	uint64_t bytes = 0, all0 = 0;
	size_t first = 0;
	struct ta_visitor clipped;

	memset(v, 0, sizeof(*v));
	v->path = label;
	/* --section: the view's visitor sees the section's time only. */
	if (vis && ta_section_wrap(paths, n, vis, &clipped, &v->section, &v->status) < 0)
		return -1;
	if (v->section)
		vis = &clipped;
	v->s = ta_session_new(vis);
	if (v->section && v->s)
		ta_section_session(v->section, v->s);
	v->res = ta_resolver_new();
	ta_view_naming(v);
	if (!v->s || !v->res) {
		fprintf(stderr, "traceagent: out of memory\n");
		v->status = 1;
		return -1;
	}
	ta_session_stored_names(v->s, v->res);
	/* One session: every dump's processes side by side, as the processes
	 * of one dump are. */
	for (size_t k = 0; k < n; k++) {
		char fatal[sizeof(v->fatal)];

		if (read_one(v, paths[k], n > 1, fatal, sizeof(fatal)) < 0)
			return -1;
		bytes += v->s->file_bytes;
		if (fatal[0])
			memcpy(v->fatal, fatal, sizeof(fatal));
		if (n > 1) {
			if (fatal[0])
				fprintf(stderr, "traceagent: %s: %s\n", paths[k], fatal);
			print_errors(v, paths[k], first, all0);
			first = v->s->nerrors;
			all0 = v->s->errors_all;
		}
	}
	v->s->file_bytes = bytes;
	ta_session_finish(v->s);
	count(v);

	if (n == 1 && v->fatal[0])
		fprintf(stderr, "traceagent: %s: %s\n", label, v->fatal);
	print_errors(v, label, first, all0);
	/* A dump without its END (the program killed, a stream cut) or that
	 * says data could not be written (a full disk) is shown as far as
	 * it goes, and the status says it is not whole. */
	if (v->fatal[0] || v->s->errors_all || ta_session_incomplete(v->s))
		v->status = 1;
	return 0;
}

void ta_view_close(struct ta_view *v)
{
	for (size_t i = 0; i < v->nown; i++)
		free(v->own[i]);
	free(v->own);
	ta_resolver_free(v->res);
	ta_session_free(v->s);
	ta_section_free(v->section);
	memset(v, 0, sizeof(*v));
}

const struct ta_filter_info *ta_session_filters(const struct ta_session *s)
{
	for (size_t i = 0; i < s->nprocs; i++)
		if (s->procs[i]->filter)
			return s->procs[i]->filter;
	return NULL;
}

/* "10us", "2ms", "1s", "1500ns": the largest unit that divides it. */
static void fmt_duration(char *buf, size_t n, uint64_t ns)
{
	if (ns && ns % 1000000000u == 0)
		snprintf(buf, n, "%" PRIu64 "s", ns / 1000000000u);
	else if (ns && ns % 1000000u == 0)
		snprintf(buf, n, "%" PRIu64 "ms", ns / 1000000u);
	else if (ns && ns % 1000u == 0)
		snprintf(buf, n, "%" PRIu64 "us", ns / 1000u);
	else
		snprintf(buf, n, "%" PRIu64 "ns", ns);
}

const char *ta_fmt_filters(char *buf, size_t n, const struct ta_filter_info *f)
{
	size_t len = 0;
	char d[32];

	buf[0] = 0;
#define ADD(...)                                                                                   \
	do {                                                                                       \
		if (len < n) {                                                                     \
			int k = snprintf(buf + len, n - len, __VA_ARGS__);                         \
			len += k > 0 ? (size_t)k : 0;                                              \
		}                                                                                  \
	} while (0)
	if (f->filter && f->filter[0])
		ADD("filter=%s", f->filter);
	if (f->exclude && f->exclude[0])
		ADD("%sexclude=%s", len ? ", " : "", f->exclude);
	if (f->depth)
		ADD("%sdepth=%" PRIu64, len ? ", " : "", f->depth);
	if (f->min_duration_ns) {
		fmt_duration(d, sizeof(d), f->min_duration_ns);
		ADD("%smin-duration=%s", len ? ", " : "", d);
	}
#undef ADD
	return buf;
}

void ta_print_filters_json(FILE *out, const struct ta_filter_info *f)
{
	if (!f) {
		fputs("null", out);
		return;
	}
	fputs("{\"filter\": ", out);
	ta_json_str(out, f->filter);
	fputs(", \"exclude\": ", out);
	ta_json_str(out, f->exclude);
	fprintf(out, ", \"depth\": %" PRIu64 ", \"min_duration_ns\": %" PRIu64 "}", f->depth,
		f->min_duration_ns);
}

void ta_keep_json(FILE *out, const struct ta_keep_info *k)
{
	fprintf(out,
		"{\"budget_ns\": %" PRIu64 ", \"before\": %" PRIu64 ", \"set\": ", k->budget_ns,
		k->before);
	ta_json_str(out, k->set);
	fprintf(out,
		", \"frames_seen\": %" PRIu64 ", \"frames_slow\": %" PRIu64
		", \"frames_kept\": %" PRIu64 ", \"events_let_go\": %" PRIu64
		", \"events_let_go_early\": %" PRIu64 ", \"windows\": %zu"
		", \"windows_partial\": %" PRIu64 ", \"windows_lost\": %" PRIu64
		", \"marks_unjudged\": %" PRIu64 "}",
		k->frames_seen, k->frames_slow, k->frames_kept, k->let_go, k->let_go_early, k->nwin,
		k->windows_partial, k->windows_lost, k->marks_unjudged);
}

const char *ta_fmt_filtered_line(char *buf, size_t n, const struct ta_filter_info *f)
{
	char what[2200];

	snprintf(buf, n, "filtered at record time: %s: this is not a whole profile",
		 ta_fmt_filters(what, sizeof(what), f));
	return buf;
}

void ta_view_warnings(struct ta_view *v)
{
	const struct ta_session *s = v->s;
	const char *why = ta_session_incomplete(s);
	uint64_t resyncs = 0, flight_gaps = 0, unmatched = 0, missing = 0, open_at_attach = 0;

	/* Damage was reported already, and explains the rest. */
	if (why && !s->errors_all && !v->fatal[0])
		ta_view_warn(v, "incomplete dump: %s", why);
	if (v->lost) {
		char by[160];

		ta_fmt_lost_by(by, sizeof(by), v->lost_by);
		ta_view_warn(v,
			     "%" PRIu64 " events were lost (the agent could not record them)%s%s",
			     v->lost, by[0] ? "; by cause: " : "", by);
	}
	if (v->lost_no_ring)
		ta_view_warn(v,
			     "%" PRIu64 " events lost by threads that could not get a ring (no "
			     "record for them, or an older agent at its memory cap; in no thread's "
			     "count)",
			     v->lost_no_ring);
	for (size_t i = 0; i < s->nthreads; i++) {
		const struct ta_process *p = ta_session_process(s, s->threads[i]->pid);

		/* A flight recorder keeps only its newest events at each
		 * snapshot: the stacks after its gaps come from the chunks. */
		if (p && p->mode == 2 && !s->threads[i]->chunks_missing)
			flight_gaps += s->threads[i]->resyncs;
		else
			resyncs += s->threads[i]->resyncs;
		/* A flight recorder's streams start inside calls on purpose;
		 * an attached process's threads were inside calls when
		 * `traceagent attach` came (END flag TA_END_F_ATTACH). */
		if (p && (p->end_flags & TA_END_F_ATTACH))
			open_at_attach += s->threads[i]->unmatched;
		else if (!p || p->mode != 2)
			unmatched += s->threads[i]->unmatched;
		missing += s->threads[i]->chunks_missing;
	}
	if (missing && resyncs)
		ta_view_warn(v,
			     "%" PRIu64 " event chunks missing; call stacks rebuilt %" PRIu64
			     " times from chunk snapshots (times around the gaps are estimates)",
			     missing, resyncs);
	else if (missing)
		ta_view_warn(v,
			     "%" PRIu64 " event chunks missing (times around the gaps are "
			     "estimates)",
			     missing);
	else if (resyncs)
		ta_view_warn(v,
			     "call stacks rebuilt %" PRIu64 " times from chunk snapshots that did "
			     "not follow on from the events before them (times there are "
			     "estimates)",
			     resyncs);
	if (flight_gaps)
		ta_view_warn(v,
			     "%" PRIu64 " gaps between the stretches of events the flight "
			     "recorder kept (its newest at each snapshot): the call stacks after "
			     "them come from chunk snapshots (times across the gaps are estimates)",
			     flight_gaps);
	for (size_t i = 0; i < s->nprocs; i++) {
		const struct ta_crash *c = s->procs[i]->crash;
		char pn[TA_PID_NAME_MAX];

		if (c)
			ta_view_warn(v,
				     "process %s crashed with signal %" PRIu64
				     " (%s) in thread %" PRIu64 "; 'traceagent info' shows where",
				     ta_pid_name(s, s->procs[i]->pid, pn), c->signal,
				     strsignal((int)c->signal), c->tid);
		else if (s->procs[i]->has_end && (s->procs[i]->end_flags & TA_END_F_SIGNAL))
			ta_view_warn(v, "process %s died of signal %" PRIu64 " (%s)",
				     ta_pid_name(s, s->procs[i]->pid, pn), s->procs[i]->end_signal,
				     ta_signal_name((int)s->procs[i]->end_signal));
	}
	if (open_at_attach)
		ta_view_warn(v,
			     "%" PRIu64 " calls were open when tracing started (the process was "
			     "attached to while inside them): %s",
			     open_at_attach,
			     v->partial_counted ? "counted as partial, with no time"
						: "their exits were ignored");
	if (unmatched)
		ta_view_warn(v, "%" PRIu64 " function exits without a recorded entry %s", unmatched,
			     v->partial_counted ? "were counted as partial calls, with no time"
						: "were ignored");
	for (size_t i = 0; i < s->nprocs; i++) {
		char pn[TA_PID_NAME_MAX];

		if (s->procs[i]->uncalibrated && s->procs[i]->have_ticks)
			ta_view_warn(v, "process %s: no clock calibration; times are in ticks",
				     ta_pid_name(s, s->procs[i]->pid, pn));
	}
	if (!v->filters_shown && ta_session_keep(s)) {
		char line[400];

		ta_view_warn(v, "%s", ta_keep_line(line, sizeof(line), ta_session_keep(s)));
	}
	if (!v->filters_shown && ta_session_filters(s)) {
		char line[2400];

		ta_view_warn(v, "%s",
			     ta_fmt_filtered_line(line, sizeof(line), ta_session_filters(s)));
	}
	ta_resolver_failures(v->res, symbol_failure, v);
	ta_resolver_refused(v->res, symbol_refused, v);
}

/* ---- naming ---------------------------------------------------------------------- */

static const char *own_name(struct ta_view *v, uint64_t addr)
{
	char *s;

	if (v->nown == v->own_cap) {
		char **o = ta_vec_reserve(v->own, v->nown + 1, &v->own_cap, sizeof(*o), 16);

		if (!o)
			return "?";
		v->own = o;
	}
	if (asprintf(&s, "0x%" PRIx64, addr) < 0)
		return "?";
	v->own[v->nown++] = s;
	return s;
}

void ta_view_name(struct ta_view *v, uint32_t pid, uint64_t addr, struct ta_fn *out)
{
	struct ta_process *p = ta_session_process(v->s, pid);
	/* addr is the session's key: the address, tagged when a module was
	 * unloaded there (the module found is the one mapped then). */
	const uint64_t key = addr;
	const struct ta_site *site;

	if (key == TA_WAIT_KEY) {
		out->name = TA_WAIT_NAME;
		out->module = TA_AGENT_MODULE;
		out->offset = 0;
		out->where = NULL;
		out->srcline = NULL;
		out->full = out->name;
		return;
	}
	site = p && p->nsites ? ta_process_site(p, ta_process_addr(p, key)) : NULL;
	const struct ta_libcall *lc =
	    p && p->nlibcalls && !site ? ta_process_libcall(p, ta_process_addr(p, key)) : NULL;
	/* Without a resolver (the fuzzer's views), addresses stay numbers. */
	const struct ta_sess_module *m =
	    p && !lc && !site && v->res ? ta_process_module_at(p, key) : NULL;

	if (p)
		addr = ta_process_addr(p, addr);
	out->where = NULL;
	out->srcline = NULL;
	out->full = NULL;
	if (site) {
		out->where = site->where;
		out->name = site->name[0] ? site->name : "(zone)";
		out->module = TA_ZONE_MODULE;
		out->offset = site->id;
	} else if (lc) {
		out->name = lc->name;
		out->module = TA_LIBCALL_MODULE;
		out->offset = lc->index;
	} else if (m) {
		const struct ta_resolved *rv =
		    ta_resolve(v->res, m->path, m->build_id, m->build_id_len, addr - m->bias);

		out->name = v->demangle == TA_DEMANGLE_SIMPLE ? rv->short_name
			    : v->demangle == TA_DEMANGLE_NO   ? rv->raw
							      : rv->name;
		out->full = rv->name;
		out->module = m->path;
		out->offset = rv->offset;
	} else {
		out->name = own_name(v, addr);
		out->module = "";
		out->offset = addr;
	}
	if (!out->full)
		out->full = out->name;
}

int ta_fn_glob(const char *glob, const struct ta_fn *id)
{
	return ta_glob_match(glob, id->name) ||
	       (id->full && id->full != id->name && ta_glob_match(glob, id->full));
}

struct ta_fn *ta_view_name_profile(struct ta_view *v, const struct ta_profile *prof)
{
	struct ta_fn *ids = calloc(prof->n ? prof->n : 1, sizeof(*ids));

	if (!ids)
		return NULL;
	for (size_t i = 0; i < prof->n; i++)
		ta_view_name(v, prof->f[i].pid, prof->f[i].addr, &ids[i]);
	return ids;
}

/* ---- a hash index over a caller's rows ------------------------------------------------ */

/* ---- per-function tables ------------------------------------------------------------ */

static uint64_t str_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */

	while (*s)
		h = (h ^ (unsigned char)*s++) * 1099511628211ull;
	return h;
}

/* Taken from the product's middle: its low bits depend on the low bits of
 * the offset alone. */
static uint64_t fn_hash(const struct ta_fn *id)
{
	return ((str_hash(id->module) ^ id->offset) * 0x9e3779b97f4a7c15ull) >> 24;
}

static uint64_t row_hash(const void *ctx, size_t i)
{
	const struct ta_prof_table *t = ctx;

	return fn_hash(&t->rows[i].id);
}

static int row_is(const void *ctx, size_t i, const void *key)
{
	const struct ta_fn *a = &((const struct ta_prof_table *)ctx)->rows[i].id, *b = key;

	return a->offset == b->offset && !strcmp(a->module, b->module) &&
	       (a->module[0] || !strcmp(a->name, b->name));
}

/* Adds fstat i (converted to ns) to the row of its function. */
static int rows_add(struct ta_prof_table *t, const struct ta_fn *id, const struct ta_fstat *f,
		    uint32_t i, const struct ta_process *p)
{
	struct ta_prof_row *w;
	size_t k;
	/* A function whose every call was left out, open or partial has no
	 * min nor max. */
	int timed = f->calls > f->shorts + f->open + f->partial;
	uint64_t min = timed ? ta_process_dur_ns(p, f->min) : UINT64_MAX;
	uint64_t max = timed ? ta_process_dur_ns(p, f->max) : 0;

	if (!f->calls)
		return 0; /* entered, never closed: cannot happen after finish */
	if (ta_htab_reserve(&t->by_fn, t->n, 256, row_hash, t) < 0)
		return -1;
	k = ta_htab_find(&t->by_fn, fn_hash(id), row_is, t, id);
	if (ta_htab_at(&t->by_fn, k)) {
		w = &t->rows[ta_htab_at(&t->by_fn, k) - 1];
	} else {
		if (t->n == t->cap) {
			struct ta_prof_row *v =
			    ta_vec_reserve(t->rows, t->n + 1, &t->cap, sizeof(*v), 64);

			if (!v)
				return -1;
			t->rows = v;
		}
		w = &t->rows[t->n];
		memset(w, 0, sizeof(*w));
		w->id = *id;
		w->min = UINT64_MAX;
		ta_htab_put(&t->by_fn, k, t->n++);
	}
	w->calls += f->calls;
	w->open += f->open;
	w->partial += f->partial;
	w->unwound += f->unwound;
	w->shorts += f->shorts;
	w->total += ta_process_dur_ns(p, f->total);
	w->self += ta_process_dur_ns(p, f->self);
	w->sum += ta_process_dur_ns(p, f->sum);
	if (min < w->min)
		w->min = min;
	if (max > w->max)
		w->max = max;
	t->next[i] = w->first;
	w->first = i + 1;
	return 0;
}

/* A histogram bucket as a duration in ns, with how many fell in it. */
struct hpoint {
	uint64_t ns, count;
};

static int hpoint_cmp(const void *a, const void *b)
{
	const struct hpoint *x = a, *y = b;

	return x->ns < y->ns ? -1 : x->ns > y->ns;
}

/*
 * A bucket stands for the middle of the values it can hold, which the
 * exact min and max may narrow (so the percentiles of a narrow distribution
 * come out exact), converted with the process's clock.
 */
static uint64_t bucket_ns(const struct ta_process *p, const struct ta_fstat *f, uint32_t b)
{
	uint64_t lo = ta_hist_low(b), hi = lo + (ta_hist_width(b) - 1);
	long double ns;

	if (lo < f->min)
		lo = f->min;
	if (hi > f->max)
		hi = f->max;
	if (lo >= hi)
		return ta_process_dur_ns(p, lo);
	ns = (lo + (hi - lo) / 2.0L) * p->ns_per_tick;
	return ns >= 18446744073709551615.0L ? UINT64_MAX : (uint64_t)llroundl(ns);
}

static int row_percentiles(struct ta_prof_table *t, struct ta_view *v,
			   const struct ta_profile *prof, struct ta_prof_row *w,
			   struct hpoint **buf, size_t *cap)
{
	static const unsigned pct[3] = {50, 90, 99};
	uint64_t *out[3] = {&w->p50, &w->p90, &w->p99};
	uint64_t total = 0, seen = 0;
	size_t n = 0, from = 0;
	int sources = 0;

	for (uint32_t i = w->first; i; i = t->next[i - 1]) {
		const struct ta_fstat *f = &prof->f[i - 1];
		const struct ta_process *p = ta_session_process(v->s, f->pid);
		const struct ta_hist *h = &f->hist;

		if (!h->count || !p)
			continue;
		sources++;
		for (uint32_t b = h->lo; b < h->hi; b++) {
			if (!h->count[b - h->lo])
				continue;
			if (n == *cap) {
				struct hpoint *nb =
				    ta_vec_reserve(*buf, n + 1, cap, sizeof(*nb), 256);

				if (!nb)
					return -1;
				*buf = nb;
			}
			(*buf)[n].ns = bucket_ns(p, f, b);
			(*buf)[n].count = h->count[b - h->lo];
			total += (*buf)[n].count;
			n++;
		}
	}
	/* One source's buckets are in order already. */
	if (sources > 1)
		qsort(*buf, n, sizeof(**buf), hpoint_cmp);
	for (int k = 0; k < 3; k++) {
		/* The smallest value with at least pct% of them at or below. */
		uint64_t rank = (total * pct[k] + 99) / 100;

		if (!total) {
			*out[k] = 0;
			continue;
		}
		/* The first and the last value are known exactly. */
		if (rank <= 1 || rank >= total) {
			*out[k] = rank <= 1 ? w->min : w->max;
			continue;
		}
		while (from < n && seen + (*buf)[from].count < rank)
			seen += (*buf)[from++].count;
		*out[k] = (*buf)[from < n ? from : n - 1].ns;
	}
	return 0;
}

int ta_prof_table_build(struct ta_prof_table *t, struct ta_view *v, const struct ta_profile *prof,
			struct ta_fn **names,
			int (*keep)(void *ctx, const struct ta_fstat *f, const struct ta_fn *id),
			void *ctx)
{
	struct hpoint *buf = NULL;
	const struct ta_fn *ids;
	size_t cap = 0;
	int rc = 0;

	memset(t, 0, sizeof(*t));
	if (!*names && !(*names = ta_view_name_profile(v, prof)))
		return -1;
	ids = *names;
	t->next = calloc(prof->n ? prof->n : 1, sizeof(*t->next));
	if (!t->next)
		return -1;
	for (size_t i = 0; i < prof->n; i++) {
		const struct ta_fstat *f = &prof->f[i];
		const struct ta_process *p = ta_session_process(v->s, f->pid);

		if (keep && !keep(ctx, f, &ids[i]))
			continue;
		if (p && rows_add(t, &ids[i], f, (uint32_t)i, p) < 0)
			return -1;
	}
	for (size_t i = 0; i < t->n && !rc; i++) {
		/* Every call left out (minimum duration), open or partial:
		 * no whole time known (ta_prof_row_timed 0). */
		if (t->rows[i].min == UINT64_MAX)
			t->rows[i].min = 0;
		rc = row_percentiles(t, v, prof, &t->rows[i], &buf, &cap);
	}
	free(buf);
	return rc;
}

void ta_prof_table_free(struct ta_prof_table *t)
{
	free(t->rows);
	ta_htab_free(&t->by_fn);
	free(t->next);
	memset(t, 0, sizeof(*t));
}

uint64_t ta_session_duration_ns(const struct ta_session *s)
{
	int64_t lo = 0, hi = 0;
	int any = 0;

	for (size_t i = 0; i < s->nprocs; i++) {
		const struct ta_process *p = s->procs[i];
		int64_t a, b;

		if (!p->have_ticks)
			continue;
		a = ta_process_ticks_ns(p, p->min_ticks);
		b = ta_process_ticks_ns(p, p->max_ticks);
		if (!any || a < lo)
			lo = a;
		if (!any || b > hi)
			hi = b;
		any = 1;
	}
	/* In unsigned arithmetic: the span of two int64 values may not fit one. */
	return any && hi > lo ? (uint64_t)hi - (uint64_t)lo : 0;
}

/* ---- formatting -------------------------------------------------------------------- */

const char *ta_fmt_time(char *buf, size_t n, uint64_t ns)
{
	if (ns < 1000)
		snprintf(buf, n, "%" PRIu64 " ns", ns);
	else if (ns < 1000000)
		snprintf(buf, n, "%.3f us", (double)ns / 1e3);
	else if (ns < 1000000000)
		snprintf(buf, n, "%.3f ms", (double)ns / 1e6);
	else
		snprintf(buf, n, "%.3f s", (double)ns / 1e9);
	return buf;
}

const char *ta_path_base(const char *path)
{
	const char *s = strrchr(path, '/');

	if (!path[0])
		return "?";
	return s ? s + 1 : path;
}

int ta_name_has_params(const char *name)
{
	/* What the demangler may write after the list: qualifiers of a
	 * member function, and GCC's names of its copies. */
	static const char *const after[] = {"const", "volatile", "restrict", "noexcept", "&&", "&"};
	const char *s = strrchr(name, ')');

	if (!s || !memchr(name, '(', (size_t)(s - name)))
		return 0;
	for (s++; *s;) {
		size_t i, n = 0;

		if (*s == ' ') {
			s++;
			continue;
		}
		if (!strncmp(s, "[clone ", 7)) {
			const char *e = strchr(s, ']');

			if (!e)
				return 0;
			s = e + 1;
			continue;
		}
		for (i = 0; i < sizeof(after) / sizeof(after[0]); i++) {
			n = strlen(after[i]);
			if (!strncmp(s, after[i], n))
				break;
		}
		if (i == sizeof(after) / sizeof(after[0]))
			return 0;
		s += n;
	}
	return 1;
}

/* Length of a valid UTF-8 sequence at s, or 0. */
size_t ta_utf8_len(const unsigned char *s)
{
	size_t n;
	uint32_t c;

	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0)
		n = 2, c = s[0] & 0x1f;
	else if ((s[0] & 0xf0) == 0xe0)
		n = 3, c = s[0] & 0x0f;
	else if ((s[0] & 0xf8) == 0xf0)
		n = 4, c = s[0] & 0x07;
	else
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	/* Overlong forms, surrogates and beyond U+10FFFF are not UTF-8. */
	if ((n == 2 && c < 0x80) || (n == 3 && c < 0x800) || (n == 4 && c < 0x10000) ||
	    (c >= 0xd800 && c < 0xe000) || c > 0x10ffff)
		return 0;
	return n;
}

void ta_json_pid(FILE *f, const struct ta_session *s, uint32_t key)
{
	const struct ta_process *p = ta_session_process(s, key);

	fprintf(f, "\"pid\": %" PRIu32 ", \"pid_nth\": %" PRIu32 ", \"boot_start\": ",
		p ? p->os_pid : key, p ? p->nth : 1);
	if (p && p->boot_start)
		fprintf(f, "%" PRIu64, p->boot_start);
	else
		fputs("null", f);
}

void ta_json_str(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	fputc('"', f);
	while (*s) {
		size_t n = ta_utf8_len(s);

		if (!n) {
			fputs("\\ufffd", f);
			s++;
		} else if (*s == '"' || *s == '\\') {
			fprintf(f, "\\%c", *s++);
		} else if (*s < 0x20) {
			fprintf(f, "\\u%04x", *s++);
		} else {
			fwrite(s, 1, n, f);
			s += n;
		}
	}
	fputc('"', f);
}
