/* SPDX-License-Identifier: MIT */
/*
 * dumpgen.c - synthetic dumps for the unit tests.  Aborts on any failure:
 * a test helper that cannot do its job must not pass silently.
 */
#include "dumpgen.h"

#include <lz4.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	if (!p)
		abort();
	return p;
}

static void reserve(uint8_t **buf, size_t *cap, size_t need)
{
	if (need <= *cap)
		return;
	size_t c = *cap ? *cap : 256;
	while (c < need)
		c *= 2;
	*buf = xrealloc(*buf, c);
	*cap = c;
}

void pb_u(struct pb *b, uint64_t v)
{
	reserve(&b->p, &b->cap, b->len + TA_VARINT_MAX);
	b->len = (size_t)(ta_varint_put(b->p + b->len, v) - b->p);
}

void pb_s(struct pb *b, int64_t v)
{
	pb_u(b, ta_zigzag(v));
}

void pb_bytes(struct pb *b, const void *s, size_t len)
{
	pb_u(b, len);
	reserve(&b->p, &b->cap, b->len + len);
	memcpy(b->p + b->len, s, len);
	b->len += len;
}

void pb_str(struct pb *b, const char *s)
{
	pb_bytes(b, s, strlen(s));
}

void pb_free(struct pb *b)
{
	free(b->p);
	memset(b, 0, sizeof(*b));
}

void dg_init(struct dumpgen *g, uint32_t pid)
{
	memset(g, 0, sizeof(*g));
	g->pid = pid;
	reserve(&g->buf, &g->cap, TA_FILE_HEADER_SIZE);
	ta_file_header_encode(g->buf, pid);
	g->len = TA_FILE_HEADER_SIZE;
}

void dg_free(struct dumpgen *g)
{
	free(g->buf);
	memset(g, 0, sizeof(*g));
}

void dg_raw(struct dumpgen *g, const void *p, size_t len)
{
	reserve(&g->buf, &g->cap, g->len + len);
	memcpy(g->buf + g->len, p, len);
	g->len += len;
}

static uint32_t next_seq(struct dumpgen *g)
{
	for (int i = 0; i < g->npids; i++)
		if (g->pids[i] == g->pid)
			return g->seqs[i]++;
	if (g->npids == DG_MAX_PIDS)
		abort();
	g->pids[g->npids] = g->pid;
	g->seqs[g->npids] = 1;
	g->npids++;
	return 0;
}

size_t dg_chunk_seq(struct dumpgen *g, unsigned type, const void *payload, size_t len, uint32_t seq,
		    int lz4)
{
	struct ta_chunk_header h = {0};
	size_t off = g->len;
	char *z = NULL;
	const void *stored = payload;
	size_t stored_len = len;

	if (lz4 && len) {
		int bound = LZ4_compressBound((int)len);
		z = xrealloc(NULL, (size_t)bound);
		int n = LZ4_compress_default(payload, z, (int)len, bound);
		if (n <= 0)
			abort();
		stored = z;
		stored_len = (size_t)n;
	}
	h.type = (uint16_t)type;
	h.flags = z ? TA_CHUNK_F_LZ4 : 0;
	h.stored_size = (uint32_t)stored_len;
	h.raw_size = (uint32_t)len;
	h.pid = g->pid;
	h.seq = seq;
	reserve(&g->buf, &g->cap, g->len + TA_CHUNK_HEADER_SIZE + stored_len);
	ta_chunk_header_encode(g->buf + g->len, &h, stored);
	memcpy(g->buf + g->len + TA_CHUNK_HEADER_SIZE, stored, stored_len);
	g->len += TA_CHUNK_HEADER_SIZE + stored_len;
	free(z);
	return off;
}

size_t dg_chunk(struct dumpgen *g, unsigned type, const void *payload, size_t len)
{
	return dg_chunk_seq(g, type, payload, len, next_seq(g), g->lz4);
}

static size_t put(struct dumpgen *g, unsigned type, struct pb *b)
{
	size_t off = dg_chunk(g, type, b->p, b->len);
	pb_free(b);
	return off;
}

size_t dg_process(struct dumpgen *g, uint64_t start_ticks, uint64_t clock_source,
		  uint64_t nominal_hz, const char *exe)
{
	struct pb b = {0};

	pb_u(&b, g->pid);
	pb_u(&b, 1);			/* ppid */
	pb_u(&b, 1700000000000000000u); /* start_realtime_ns */
	pb_u(&b, start_ticks);
	pb_u(&b, clock_source);
	pb_u(&b, nominal_hz);
	pb_str(&b, "x86_64");
	pb_str(&b, exe);
	pb_u(&b, 2);
	pb_str(&b, exe);
	pb_str(&b, "--arg");
	pb_u(&b, 65536);
	pb_u(&b, 256u << 20);
	pb_u(&b, 50);
	if (g->boot_start || g->start_ns) {
		pb_u(&b, 0); /* mode */
		pb_u(&b, g->boot_start);
	}
	if (g->start_ns)
		pb_u(&b, g->start_ns);
	return put(g, TA_CHUNK_PROCESS, &b);
}

size_t dg_clock(struct dumpgen *g, size_t n, const uint64_t pairs[][2])
{
	struct pb b = {0};

	pb_u(&b, n);
	for (size_t i = 0; i < n; i++) {
		pb_u(&b, pairs[i][0]);
		pb_u(&b, pairs[i][1]);
	}
	return put(g, TA_CHUNK_CLOCK, &b);
}

size_t dg_module(struct dumpgen *g, const char *path, uint64_t bias, uint64_t flags, uint64_t start,
		 uint64_t end)
{
	struct pb b = {0};

	pb_u(&b, 0);
	pb_u(&b, bias);
	pb_str(&b, path);
	pb_bytes(&b, "", 0);
	pb_u(&b, flags);
	pb_u(&b, 1);
	pb_u(&b, start);
	pb_u(&b, end);
	return put(g, TA_CHUNK_MODULE, &b);
}

size_t dg_libcalls(struct dumpgen *g, uint64_t classes, size_t n, const struct dg_libcall *lc)
{
	struct pb b = {0};

	pb_u(&b, classes);
	pb_u(&b, n);
	for (size_t i = 0; i < n; i++) {
		pb_u(&b, lc[i].addr);
		pb_str(&b, lc[i].name);
		pb_u(&b, lc[i].cls);
	}
	return put(g, TA_CHUNK_LIBCALLS, &b);
}

size_t dg_thread_start(struct dumpgen *g, uint64_t tid, uint64_t ticks, const char *name)
{
	struct pb b = {0};

	pb_u(&b, tid);
	pb_u(&b, 0);
	pb_u(&b, ticks);
	pb_str(&b, name);
	return put(g, TA_CHUNK_THREAD_START, &b);
}

size_t dg_thread_name(struct dumpgen *g, uint64_t tid, uint64_t ticks, const char *name)
{
	struct pb b = {0};

	pb_u(&b, tid);
	pb_u(&b, ticks);
	pb_str(&b, name);
	return put(g, TA_CHUNK_THREAD_NAME, &b);
}

size_t dg_thread_end(struct dumpgen *g, uint64_t tid, uint64_t end_ticks, uint64_t events,
		     uint64_t lost)
{
	struct pb b = {0};

	pb_u(&b, tid);
	pb_u(&b, end_ticks);
	pb_u(&b, events);
	pb_u(&b, lost);
	pb_u(&b, 0);
	return put(g, TA_CHUNK_THREAD_END, &b);
}

size_t dg_end(struct dumpgen *g, uint64_t end_ticks, uint64_t end_ns, uint64_t events,
	      uint64_t lost, uint64_t threads, uint64_t flags)
{
	struct pb b = {0};

	pb_u(&b, end_ticks);
	pb_u(&b, end_ns);
	pb_u(&b, events);
	pb_u(&b, lost);
	pb_u(&b, threads);
	pb_u(&b, flags);
	return put(g, TA_CHUNK_END, &b);
}

size_t dg_events(struct dumpgen *g, struct ta_encoder *e)
{
	const uint8_t *p;
	size_t len;

	if (ta_encoder_end(e, &p, &len) < 0)
		abort();
	return dg_chunk(g, TA_CHUNK_EVENTS, p, len);
}

void dg_write_bytes_tmp(const void *p, size_t len, char *path)
{
	const char *dir = getenv("TMPDIR");
	int fd;

	snprintf(path, 64, "%s/ta-unit-XXXXXX", dir && strlen(dir) < 40 ? dir : "/tmp");
	fd = mkstemp(path);
	if (fd < 0 || write(fd, p, len) != (ssize_t)len || close(fd) != 0)
		abort();
}

void dg_write_tmp(const struct dumpgen *g, char *path)
{
	dg_write_bytes_tmp(g->buf, g->len, path);
}
