/* SPDX-License-Identifier: MIT */
/*
 * info_facts.c - what `traceagent info` derives from the session before it
 * prints: the manual API's events counted per channel (a visitor of the
 * walk), the processes' durations, pauses and counts, and the names and
 * formats of clocks, modes, signals, library-call classes, filters and
 * sizes, for both its text (info.c) and its JSON (info_json.c).
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "apiev.h"
#include "info_int.h"
#include "srcline.h"

/* ---- the manual API's events, per channel ------------------------------------------ */

static struct proc_channels *proc_channels(struct api_counts *a, uint32_t pid)
{
	struct proc_channels *pc;

	if (a->last && a->last->pid == pid)
		return a->last;
	a->last_p = ta_session_process(a->v->s, pid);
	for (size_t i = 0; i < a->npc; i++)
		if (a->pc[i].pid == pid)
			return a->last = &a->pc[i];
	pc = ta_vec_reserve(a->pc, a->npc + 1, &a->pc_cap, sizeof(*pc), 8);
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

uintptr_t ta_info_api_enter(void *ctx, struct ta_sess_thread *t, uint64_t ticks, uint32_t depth,
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

static int app_add(struct api_counts *a, uint32_t pid, const struct ta_apiev *e)
{
	struct app_info *v = ta_vec_reserve(a->app, a->napp + 1, &a->app_cap, sizeof(*v), 8);

	if (!v)
		return -1;
	a->app = v;
	v[a->napp] = (struct app_info){pid, e->cut, strdup(e->text)};
	if (!v[a->napp].text)
		return -1;
	a->napp++;
	return 0;
}

void ta_info_app_text(const struct api_counts *a)
{
	for (size_t k = 0; k < a->napp; k++) {
		/* A program's text: control characters shown, not obeyed. */
		printf("app info:      ");
		for (const char *p = a->app[k].text; *p; p++)
			putchar((unsigned char)*p < 0x20 || *p == 0x7f ? '?' : *p);
		printf("%s\n", a->app[k].cut ? " (cut)" : "");
	}
}

void ta_info_app_json(const struct api_counts *a)
{
	/* Only with some: a dump without keeps the keys it had. */
	if (!a->napp)
		return;
	printf(" \"app_info\": [");
	for (size_t k = 0; k < a->napp; k++) {
		printf("%s{\"pid\": %" PRIu32 ", \"text\": ", k ? ", " : "", a->app[k].pid);
		ta_json_str(stdout, a->app[k].text);
		printf(", \"cut\": %s}", a->app[k].cut ? "true" : "false");
	}
	printf("],\n");
}

void ta_info_app_free(struct api_counts *a)
{
	for (size_t k = 0; k < a->napp; k++)
		free(a->app[k].text);
	free(a->app);
}

void ta_info_api_ext(void *ctx, struct ta_sess_thread *t, uint64_t ticks, uint64_t kind,
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
	case TA_EXT_APP_INFO:
		if (app_add(a, t->pid, &e) < 0)
			a->nomem = 1;
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
long ta_info_channel_rows(const struct api_counts *a, struct channel_row **out, char (*names)[32])
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

const char *ta_info_clock_name(uint64_t source)
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
const char *ta_info_iso_time(char *buf, size_t n, uint64_t realtime_ns)
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
double ta_info_ticks_per_second(const struct ta_process *p)
{
	if (p->uncalibrated || p->ns_per_tick <= 0)
		return 0;
	return (double)(1e9L / p->ns_per_tick);
}

uint64_t ta_info_process_duration_ns(const struct ta_process *p)
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
uint64_t ta_info_paused_ns(const struct ta_process *p)
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

struct counts ta_info_process_counts(const struct ta_session *s, const struct ta_process *p)
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

void ta_info_hex(char *buf, size_t n, const uint8_t *b, size_t len)
{
	buf[0] = 0;
	for (size_t i = 0; i < len && 2 * i + 2 < n; i++)
		snprintf(buf + 2 * i, 3, "%02x", b[i]);
}

/* The file's size; for a pipe (`info /dev/stdin`), which has none, the
 * bytes read from it. */
uint64_t ta_info_file_size(const struct ta_view *v)
{
	struct stat st;

	if (stat(v->path, &st) == 0 && S_ISREG(st.st_mode))
		return (uint64_t)st.st_size;
	return v->s->file_bytes;
}

/* "1.5 KiB" and so on. */
const char *ta_info_fmt_bytes(char *buf, size_t n, uint64_t b)
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

/* An attached process's calls open when tracing started: the exits its
 * threads made without a recorded entry (FORMAT.md, END flag bit 3). */
uint64_t ta_info_open_at_start(const struct ta_session *s, const struct ta_process *p)
{
	uint64_t n = 0;

	for (size_t i = 0; i < s->nthreads; i++)
		if (s->threads[i]->pid == p->pid)
			n += s->threads[i]->unmatched;
	return n;
}

const char *ta_info_mode_name(uint64_t mode)
{
	return mode == 0 ? "lossless" : mode == 1 ? "drop" : mode == 2 ? "flight" : "unknown";
}

/* The library-call classes recorded, "alloc,lock,io,sleep" or "none". */
const char *ta_info_libcall_classes(char *buf, size_t n, uint64_t classes)
{
	static const char *const names[] = {"alloc", "lock", "io", "sleep"};
	size_t len = 0;

	buf[0] = 0;
	for (unsigned i = 0; i < 4; i++)
		if (classes & (1u << i))
			len +=
			    (size_t)snprintf(buf + len, n - len, "%s%s", len ? "," : "", names[i]);
	if (!len)
		snprintf(buf, n, "none");
	return buf;
}

/* "SIGSEGV", or "signal N". */
const char *ta_info_signal_name(char *buf, size_t n, uint64_t sig)
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
uint64_t ta_info_count_how(const struct ta_filter_info *f, uint32_t how)
{
	uint64_t n = 0;

	for (uint64_t i = 0; i < f->nfns; i++)
		n += f->fns[i].how == how;
	return n;
}

const char *ta_info_filter_kind(char *buf, size_t n, uint32_t kind)
{
	snprintf(buf, n, "%s%s%s%s", kind & TA_FILTER_KIND_FILTER ? "filter " : "",
		 kind & TA_FILTER_KIND_NOT ? "filter-! " : "",
		 kind & TA_FILTER_KIND_EXCLUDE ? "exclude " : "", kind ? "" : "? ");
	buf[strlen(buf) - 1] = 0; /* the last space */
	return buf;
}

/* The filters in force, and per way (patched out, at run time) the
 * functions they named. */

const struct ta_sym_origin *ta_info_symbols(struct ta_view *v, const struct ta_sess_module *m)
{
	return ta_resolver_origin(v->res, m->path, m->build_id, m->build_id_len);
}

const char *ta_info_symbols_from(enum ta_sym_source src)
{
	switch (src) {
	case TA_SYMS_FILE:
		return "file";
	case TA_SYMS_DEBUG_FILE:
		return "debug-file";
	case TA_SYMS_DEBUGINFOD:
		return "debuginfod";
	case TA_SYMS_STORED:
		return "stored";
	default:
		return "none";
	}
}

enum ta_sym_source ta_info_lines(const struct ta_sess_module *m, char **from)
{
	return ta_srcline_origin(m->path, m->build_id, m->build_id_len, from);
}
