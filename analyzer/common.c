/* SPDX-License-Identifier: MIT */
/*
 * common.c - the parts every analysis command shares; see common.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"

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

/* ---- opening ------------------------------------------------------------------- */

uint64_t ta_thread_lost(const struct ta_thread *t)
{
	return t->lost > t->end_lost ? t->lost : t->end_lost;
}

static void count(struct ta_view *v)
{
	uint64_t lost = 0, end_lost = 0;

	for (size_t i = 0; i < v->s->nthreads; i++) {
		v->events += v->s->threads[i]->events;
		lost += ta_thread_lost(v->s->threads[i]);
	}
	for (size_t i = 0; i < v->s->nprocs; i++)
		end_lost += v->s->procs[i]->end_lost;
	v->lost = lost > end_lost ? lost : end_lost;
}

int ta_view_open(struct ta_view *v, const char *path, const struct ta_visitor *vis)
{
	uint64_t at;
	int rc;

	memset(v, 0, sizeof(*v));
	v->path = path;
	v->s = ta_session_new(vis);
	v->res = ta_resolver_new();
	if (!v->s || !v->res) {
		fprintf(stderr, "traceagent: out of memory\n");
		v->status = 1;
		return -1;
	}
	rc = ta_session_read(v->s, path, &at);
	if (rc == -TA_E_IO && !v->s->chunks && !v->s->errors_all) {
		fprintf(stderr, "traceagent: %s: %s\n", path, strerror(errno));
		v->status = 2;
		return -1;
	}
	if (rc == -TA_E_IO)
		snprintf(v->fatal, sizeof(v->fatal), "read error at offset %" PRIu64 ": %s", at,
			 strerror(errno));
	else if (rc < 0 && !v->s->chunks && !v->s->errors_all && rc != -TA_E_NOMEM)
		snprintf(v->fatal, sizeof(v->fatal), "file header at offset 0: %s",
			 ta_strerror(rc));
	else if (rc < 0)
		snprintf(v->fatal, sizeof(v->fatal), "at offset %" PRIu64 ": %s", at,
			 ta_strerror(rc));
	ta_session_finish(v->s);
	count(v);

	if (v->fatal[0])
		fprintf(stderr, "traceagent: %s: %s\n", path, v->fatal);
	for (size_t i = 0; i < v->s->nerrors; i++) {
		char buf[256];

		ta_error_text(buf, sizeof(buf), &v->s->errors[i]);
		fprintf(stderr, "traceagent: %s: %s\n", path, buf);
	}
	if (v->s->errors_all > v->s->nerrors)
		fprintf(stderr, "traceagent: %s: %" PRIu64 " more errors\n", path,
			v->s->errors_all - v->s->nerrors);
	if (v->fatal[0] || v->s->errors_all)
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
	memset(v, 0, sizeof(*v));
}

void ta_view_warnings(struct ta_view *v)
{
	const struct ta_session *s = v->s;
	const char *why = ta_session_incomplete(s);
	uint64_t resyncs = 0, unmatched = 0, missing = 0;

	/* Damage was reported already, and explains the rest. */
	if (why && !s->errors_all && !v->fatal[0])
		ta_view_warn(v, "incomplete dump: %s", why);
	if (v->lost)
		ta_view_warn(v, "%" PRIu64 " events were lost (the agent could not record them)",
			     v->lost);
	for (size_t i = 0; i < s->nthreads; i++) {
		resyncs += s->threads[i]->resyncs;
		unmatched += s->threads[i]->unmatched;
		missing += s->threads[i]->chunks_missing;
	}
	if (missing || resyncs)
		ta_view_warn(v,
			     "%" PRIu64 " event chunks missing; call stacks repaired %" PRIu64
			     " times from chunk snapshots (times around the gaps are estimates)",
			     missing, resyncs);
	if (unmatched)
		ta_view_warn(v, "%" PRIu64 " function exits without a recorded entry were ignored",
			     unmatched);
	for (size_t i = 0; i < s->nprocs; i++)
		if (s->procs[i]->uncalibrated && s->procs[i]->have_ticks)
			ta_view_warn(v, "process %" PRIu32 ": no clock calibration; times are in ticks",
				     s->procs[i]->pid);
	ta_resolver_failures(v->res, symbol_failure, v);
}

/* ---- naming ---------------------------------------------------------------------- */

static const char *own_name(struct ta_view *v, uint64_t addr)
{
	char *s;

	if (v->nown == v->own_cap) {
		size_t cap = v->own_cap ? 2 * v->own_cap : 16;
		char **o = realloc(v->own, cap * sizeof(*o));
		if (!o)
			return "?";
		v->own = o;
		v->own_cap = cap;
	}
	if (asprintf(&s, "0x%" PRIx64, addr) < 0)
		return "?";
	v->own[v->nown++] = s;
	return s;
}

void ta_view_name(struct ta_view *v, uint32_t pid, uint64_t addr, struct ta_fn_name *out)
{
	const struct ta_process *p = ta_session_process(v->s, pid);
	const struct ta_module *m = p ? ta_process_module_at(p, addr) : NULL;

	if (m) {
		const struct ta_resolved *rv =
			ta_resolve(v->res, m->path, m->build_id, m->build_id_len, addr - m->bias);

		out->name = rv->name;
		out->module = m->path;
		out->offset = rv->offset;
	} else {
		out->name = own_name(v, addr);
		out->module = "";
		out->offset = addr;
	}
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
	return any && hi > lo ? (uint64_t)(hi - lo) : 0;
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

const char *ta_base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	if (!path[0])
		return "?";
	return s ? s + 1 : path;
}

/* Length of a valid UTF-8 sequence at s, or 0. */
static size_t utf8_len(const unsigned char *s)
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

void ta_json_str(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;

	fputc('"', f);
	while (*s) {
		size_t n = utf8_len(s);

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
