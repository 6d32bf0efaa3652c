/* SPDX-License-Identifier: MIT */
/*
 * serve_conn.c - one client of `traceagent serve` (serve.h).
 *
 * The dump holds exactly the bytes consumed, from the file header on, so
 * the stream's offsets are the file's: on an error the file is cut back to
 * the end of the last good chunk (ta_stream.good) and stays a dump every
 * command reads, without its END (incomplete).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <lz4.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common.h"
#include "serve.h"

/* The first bytes of a compressed payload, decompressed here (one client
 * at a time: serve has one thread): the fields that are counted or named
 * lie at the start of their chunks (PROCESS's exe within 8 KiB). */
static char scratch[8192];

/* The first bytes (at most sizeof(scratch)) of a chunk's raw payload, or
 * NULL when they cannot be had (not kept, or not decompressing). */
static const uint8_t *head(const struct ta_stream_ev *ev, size_t *len)
{
	size_t want = ev->chunk.raw_size < sizeof(scratch) ? ev->chunk.raw_size : sizeof(scratch);
	int n;

	if (!ev->payload)
		return NULL;
	if (!(ev->chunk.flags & TA_CHUNK_F_LZ4)) {
		*len = ev->chunk.stored_size;
		return ev->payload;
	}
	n = LZ4_decompress_safe_partial((const char *)ev->payload, scratch,
					(int)ev->chunk.stored_size, (int)want,
					(int)sizeof(scratch));
	if (n < 0)
		return NULL;
	*len = (size_t)n < want ? (size_t)n : want;
	return (const uint8_t *)scratch;
}

static void sanitise(char *out, size_t size, const uint8_t *s, size_t n)
{
	size_t o = 0;

	for (size_t i = 0; i < n && o + 1 < size; i++) {
		uint8_t ch = s[i];
		int ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
			 (ch >= '0' && ch <= '9') || ch == '_' || ch == '+' || ch == '-' ||
			 (ch == '.' && o > 0);
		out[o++] = ok ? (char)ch : '_';
	}
	if (o == 0 && size > 7) {
		memcpy(out, "unknown", 7);
		o = 7;
	}
	out[o] = 0;
}

void ta_sv_conn_init(struct ta_sv_conn *c, int dir_fd, const char *host, uint64_t quota)
{
	memset(c, 0, sizeof(*c));
	ta_stream_init(&c->st, TA_SV_KEEP_MAX);
	c->dir_fd = dir_fd;
	c->fd = -1;
	c->quota = quota;
	sanitise(c->host, sizeof(c->host), (const uint8_t *)host, strlen(host));
	memcpy(c->prog, "unknown", 8);
}

static int cut(struct ta_sv_conn *c, int err, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Back to the last whole chunk within the quota: the dump stays whole. */
static void cut_back(struct ta_sv_conn *c, uint64_t to)
{
	if (c->named && c->written > to && (c->fd < 0 || ftruncate(c->fd, (off_t)to) == 0))
		c->written = to;
	if (!c->named && c->pend_len > to) {
		c->pend_len = (size_t)to;
		c->written = to;
	}
}

static int cut(struct ta_sv_conn *c, int err, const char *fmt, ...)
{
	va_list ap;

	if (c->cut)
		return c->cut;
	va_start(ap, fmt);
	vsnprintf(c->why, sizeof(c->why), fmt, ap);
	va_end(ap);
	c->cut = err;
	cut_back(c, c->quota ? c->keep : c->st.good);
	return err;
}

void ta_sv_conn_cut(struct ta_sv_conn *c, const char *why)
{
	cut(c, -TA_E_TRUNCATED, "%s", why);
}

/* The dump's name: HOST-PROG-PID-YYYYmmddTHHMMSS.trace (UTC), with -2,
 * -3... when a file is there already (never overwritten). */
static int create_dump(struct ta_sv_conn *c, uint64_t start_ns)
{
	time_t t = (time_t)(start_ns / 1000000000u);
	char stamp[32];
	struct tm tm;

	if (!start_ns)
		t = time(NULL);
	if (!gmtime_r(&t, &tm) || !strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%S", &tm))
		strcpy(stamp, "0");
	if (c->dir_fd == TA_SV_NOWHERE) {
		snprintf(c->file, sizeof(c->file), "%s-%s-%" PRIu64 "-%s.trace", c->host, c->prog,
			 c->pid, stamp);
		c->named = 1;
		goto written;
	}
	for (unsigned i = 1; i <= 1000; i++) {
		if (i == 1)
			snprintf(c->file, sizeof(c->file), "%s-%s-%" PRIu64 "-%s.trace", c->host,
				 c->prog, c->pid, stamp);
		else
			snprintf(c->file, sizeof(c->file), "%s-%s-%" PRIu64 "-%s-%u.trace", c->host,
				 c->prog, c->pid, stamp, i);
		c->fd = openat(c->dir_fd, c->file,
			       O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (c->fd >= 0)
			break;
		if (errno != EEXIST)
			return cut(c, -TA_E_IO, "cannot create %s: %s", c->file, strerror(errno));
	}
	if (c->fd < 0)
		return cut(c, -TA_E_IO, "cannot create %s: 1000 dumps of that name are there",
			   c->file);
	c->named = 1;
	if (ta_write_all(c->fd, c->pend, c->pend_len) < 0)
		return cut(c, -TA_E_IO, "cannot write %s: %s", c->file, strerror(errno));
written:
	free(c->pend);
	c->pend = NULL;
	c->pend_len = 0;
	return 0;
}

/* Bytes consumed go to the dump (or wait for its name). */
static int emit(struct ta_sv_conn *c, const uint8_t *p, size_t n)
{
	if (c->named) {
		if (c->fd >= 0 && ta_write_all(c->fd, p, n) < 0)
			return cut(c, -TA_E_IO, "cannot write %s at byte %" PRIu64 ": %s", c->file,
				   c->written, strerror(errno));
	} else {
		if (c->pend_len + n > TA_SV_PEND_MAX)
			return cut(c, -TA_E_TOOBIG, "no PROCESS chunk in the first %u bytes",
				   TA_SV_PEND_MAX);
		if (!c->pend) {
			c->pend = malloc(TA_SV_PEND_MAX);
			if (!c->pend)
				return cut(c, -TA_E_NOMEM, "out of memory");
		}
		memcpy(c->pend + c->pend_len, p, n);
		c->pend_len += n;
	}
	c->written += n;
	return 0;
}

static void on_process(struct ta_sv_conn *c, const struct ta_stream_ev *ev, uint64_t *start_ns)
{
	uint64_t pid, ppid, v, exe_len;
	const uint8_t *p, *exe, *arch;
	struct ta_reader r;
	size_t len;

	p = head(ev, &len);
	if (!p)
		return;
	ta_reader_init(&r, p, len);
	ta_get_varint(&r, &pid);
	ta_get_varint(&r, &ppid);
	ta_get_varint(&r, start_ns);
	ta_get_varint(&r, &v); /* ticks */
	ta_get_varint(&r, &v); /* clock source */
	ta_get_varint(&r, &v); /* nominal hz */
	ta_get_bytes(&r, &arch, &v);
	if (ta_get_bytes(&r, &exe, &exe_len) < 0) {
		*start_ns = 0;
		return;
	}
	c->pid = pid;
	if (exe_len) {
		const uint8_t *slash = exe + exe_len;
		while (slash > exe && slash[-1] != '/')
			slash--;
		exe_len -= (uint64_t)(slash - exe);
		exe = slash;
	}
	sanitise(c->prog, sizeof(c->prog), exe, exe_len > 40 ? 40 : exe_len);
}

/* The fixed fields of EVENTS (tid, seq, first ticks, n_events) and END
 * (ticks, ns, events, lost, threads). */
static int get_fields(const struct ta_stream_ev *ev, uint64_t *f, int n)
{
	struct ta_reader r;
	const uint8_t *p;
	size_t len;

	p = head(ev, &len);
	if (!p)
		return -1;
	ta_reader_init(&r, p, len);
	for (int i = 0; i < n; i++)
		ta_get_varint(&r, &f[i]);
	return r.err ? -1 : 0;
}

/* A chunk's whole raw payload and a decoder, for the function events of
 * EVENTS (one client at a time, as scratch).  At most RAW_MAX bytes: the
 * flusher's chunks aim at 1 MiB raw. */
#define RAW_MAX (4u << 20)
static uint8_t *raw_buf;
static size_t raw_cap;
static struct ta_decoder raw_dec;
static int raw_dec_ready;

/* The function events of an EVENTS chunk, as report and END count them:
 * its n_events without its EXT events (lost counts, library calls' values,
 * the manual API's events, the agent's waits).  -1 when it cannot be
 * decoded whole. */
static int64_t function_events(const struct ta_stream_ev *ev)
{
	const uint8_t *p = ev->payload;
	size_t len = ev->chunk.stored_size;
	struct ta_event evs[256];
	int64_t n = 0;
	int rc;

	if (!p)
		return -1;
	if (ev->chunk.flags & TA_CHUNK_F_LZ4) {
		size_t raw = ev->chunk.raw_size;

		if (raw > RAW_MAX || len > INT32_MAX)
			return -1;
		if (raw > raw_cap) {
			/* Exactly raw (max raw): one chunk's, not doubled. */
			uint8_t *b = ta_vec_reserve_max(raw_buf, raw, &raw_cap, 1, raw, raw);

			if (!b)
				return -1;
			raw_buf = b;
		}
		if (LZ4_decompress_safe((const char *)p, (char *)raw_buf, (int)len, (int)raw) !=
		    (int)raw)
			return -1;
		p = raw_buf;
		len = raw;
	}
	if (!raw_dec_ready) {
		ta_decoder_init(&raw_dec);
		raw_dec_ready = 1;
	}
	if (ta_decoder_begin(&raw_dec, p, len) < 0)
		return -1;
	do {
		size_t k = ta_decoder_batch(&raw_dec, evs, sizeof(evs) / sizeof(evs[0]), &rc);

		for (size_t i = 0; i < k; i++)
			n += evs[i].kind != TA_EV_EXT;
	} while (rc == 0);
	return rc < 0 ? -1 : n;
}

static int on_chunk(struct ta_sv_conn *c, const struct ta_stream_ev *ev)
{
	uint64_t f[5];
	/* Counted only when kept: a chunk past the quota is cut off the
	 * dump (cut_back), and the line says what the dump holds. */
	int kept = !c->quota || c->st.good <= c->quota;
	int64_t fn;

	if (kept) {
		c->last_end = 0;
		c->chunk_pid = ev->chunk.pid;
		c->next_seq = ev->chunk.seq + 1;
		switch (ev->chunk.type) {
		case TA_CHUNK_EVENTS:
			/* Function events, as the saved dump's report counts
			 * them; a chunk that does not decode, by its n_events. */
			if ((fn = function_events(ev)) >= 0)
				c->events += (uint64_t)fn;
			else if (get_fields(ev, f, 4) == 0)
				c->events += f[3];
			else
				c->events_unknown = 1;
			break;
		case TA_CHUNK_THREAD_START:
			c->threads++;
			break;
		case TA_CHUNK_END:
			if (get_fields(ev, f, 5) == 0) {
				c->end_events = f[2];
				c->end_threads = f[4];
				c->saw_end = 1;
				c->last_end = 1;
			}
			break;
		default:
			break;
		}
	}
	if (!c->named) {
		uint64_t start_ns = 0;

		/* The first chunk names the dump: the agent's is PROCESS. */
		c->pid = c->hdr_pid;
		if (ev->chunk.type == TA_CHUNK_PROCESS)
			on_process(c, ev, &start_ns);
		if (create_dump(c, start_ns) < 0)
			return c->cut;
	}
	if (kept)
		c->keep = c->st.good;
	return 0;
}

int ta_sv_conn_feed(struct ta_sv_conn *c, const uint8_t *p, size_t n)
{
	size_t off = 0;

	if (c->cut)
		return c->cut;
	for (;;) {
		struct ta_stream_ev ev;
		size_t k = ta_stream_feed(&c->st, p + off, n - off, &ev);

		if (k && emit(c, p + off, k) < 0)
			return c->cut;
		off += k;
		switch (ev.what) {
		case TA_STREAM_MORE:
			break;
		case TA_STREAM_HEADER:
			c->hdr_pid = ev.file.pid;
			if (!c->quota || c->st.good <= c->quota)
				c->keep = c->st.good;
			break;
		case TA_STREAM_CHUNK:
			if (on_chunk(c, &ev) < 0)
				return c->cut;
			break;
		case TA_STREAM_ERROR:
			return cut(c, ev.err, "not a dump stream at byte %" PRIu64 ": %s",
				   c->st.offset, ta_strerror(ev.err));
		}
		if (c->quota && c->written > c->quota)
			return cut(c, -TA_E_TOOBIG, "over the quota of %" PRIu64 " bytes",
				   c->quota);
		if (ev.what == TA_STREAM_MORE)
			return 0;
	}
}

int ta_sv_conn_midway(const struct ta_sv_conn *c)
{
	return !c->cut && (!c->named || !ta_stream_at_boundary(&c->st));
}

/* A CUT chunk (format.h) after the last whole one: the saved dump says
 * why it stops, for every reader (cut_bytes: written counts the stream's
 * bytes). */
static void append_cut(struct ta_sv_conn *c)
{
	uint8_t buf[TA_CUT_CHUNK_SIZE(sizeof(c->why))];
	size_t n;
	const char *why = c->cut			   ? c->why
			  : !ta_stream_at_boundary(&c->st) ? "closed in the middle of a chunk"
							   : "closed without END";

	n = ta_cut_chunk_encode(buf, c->chunk_pid, c->next_seq, TA_CUT_STREAM, c->written, why,
				strlen(why));
	/* At the end of what was kept (the file may have been cut back
	 * below its write offset). */
	if (pwrite(c->fd, buf, n, (off_t)c->written) == (ssize_t)n)
		c->cut_bytes = n;
	/* Else the dump stays readable, without the reason. */
}

int ta_sv_conn_close(struct ta_sv_conn *c)
{
	int complete = !c->cut && c->last_end && ta_stream_at_boundary(&c->st);

	if (!c->cut)
		cut_back(c, c->st.good);
	/* Only after a chunk of the process: a dump without any says
	 * nothing of one. */
	if (!complete && c->fd >= 0 && c->next_seq)
		append_cut(c);
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	return complete;
}

uint64_t ta_sv_conn_events(const struct ta_sv_conn *c)
{
	return c->saw_end && c->last_end ? c->end_events : c->events;
}

uint64_t ta_sv_conn_threads(const struct ta_sv_conn *c)
{
	return c->saw_end && c->last_end ? c->end_threads : c->threads;
}

void ta_sv_conn_free(struct ta_sv_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	ta_stream_free(&c->st);
	free(c->pend);
	c->pend = NULL;
}
