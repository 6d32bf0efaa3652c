/* SPDX-License-Identifier: MIT */
/*
 * bigdump.c - streams a valid dump of any size to stdout, for testing the
 * analyzer past 4 GiB without the disk (tests/e2e/test_bigdump.py pipes it
 * into `traceagent info /dev/stdin` and `report`):
 *   bigdump BYTES [--damage]
 *
 * One process, one thread.  Its EVENTS chunks (LZ4, calls of two functions,
 * main calling work) are spread through the file; between them, chunks of
 * a type no reader knows, stored uncompressed (16 MiB each), which a reader
 * checks (sizes, CRC) and skips: they make the file's offsets grow at the
 * speed of a pipe.  An EVENTS chunk is placed across 2^31 and another
 * across 2^32, when the dump reaches them, so their headers and payloads
 * lie on both sides.  --damage spoils the CRC of a small filler chunk
 * after the one across 2^32 (or the last filler when the dump is smaller).
 *
 * What a reader should find is written to stderr as one JSON object: the
 * file's bytes, the chunks (of events, of unknown types), payload bytes as
 * stored and raw, the events, and where each EVENTS chunk and the damaged
 * chunk are.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dumpgen.h"

#define PID	    4242u
#define BASE	    0x555555554000ull
#define FN_MAIN	    (BASE + 0x1100)
#define FN_WORK	    (BASE + 0x1200)
#define FILLER_TYPE 0x7ffeu	   /* no reader knows it */
#define CALLS	    8192u	   /* main -> work calls per EVENTS chunk: 4 events each */
#define SPREAD	    (256ull << 20) /* an EVENTS chunk about every SPREAD bytes */

static struct dumpgen g;
static uint64_t at; /* file offset of g.buf[0] */
static uint64_t chunks, unknown, events_chunks, stored, raw, events, ticks = 2000000;
static uint64_t ev_off[64];
static size_t nev;
static uint64_t damaged_chunk = UINT64_MAX, damaged_off, damaged_len;
static uint8_t *filler;
static struct ta_encoder enc;

static void drain(void)
{
	const uint8_t *p = g.buf;
	size_t n = g.len;

	while (n) {
		ssize_t w = write(1, p, n);

		if (w <= 0) {
			perror("bigdump: write");
			exit(1);
		}
		p += w;
		n -= (size_t)w;
	}
	at += g.len;
	g.len = 0;
}

static uint64_t here(void)
{
	return at + g.len;
}

/* The chunk dumpgen just appended at buffer offset off. */
static void count(size_t off)
{
	struct ta_chunk_header h;

	if (ta_chunk_header_decode(g.buf + off, &h) < 0)
		abort();
	chunks++;
	stored += h.stored_size;
	raw += h.raw_size;
}

static void events_chunk(void)
{
	size_t off;

	ta_encoder_begin(&enc, ticks);
	for (unsigned i = 0; i < CALLS; i++) {
		ta_encoder_event(&enc, ticks += 3, FN_MAIN, 0);
		ta_encoder_event(&enc, ticks += 5, FN_WORK, 0);
		ta_encoder_event(&enc, ticks += 100, FN_WORK, 1);
		ta_encoder_event(&enc, ticks += 2, FN_MAIN, 1);
	}
	events += 4 * CALLS;
	if (nev < sizeof(ev_off) / sizeof(ev_off[0]))
		ev_off[nev++] = here();
	off = dg_events(&g, &enc);
	count(off);
	events_chunks++;
	drain();
}

/* A filler chunk whose whole extent (header and payload) is len bytes. */
static void filler_chunk(uint64_t len, int damage)
{
	size_t off = g.len;

	if (len < TA_CHUNK_HEADER_SIZE)
		abort();
	/* dg_init's pid is the first in dumpgen's table (the PROCESS chunk
	 * took its seq 0). */
	dg_chunk_seq(&g, FILLER_TYPE, filler, (size_t)(len - TA_CHUNK_HEADER_SIZE), g.seqs[0]++, 0);
	if (damage) {
		g.buf[off + TA_CHUNK_HEADER_SIZE] ^= 1;
		damaged_chunk = chunks;
		damaged_off = here() - len;
		damaged_len = len;
	} else {
		count(off);
		unknown++;
	}
	drain();
}

/* Filler up to the offset to (at least a header's worth ahead). */
static void fill_to(uint64_t to)
{
	const uint64_t max = TA_CHUNK_HEADER_SIZE + TA_CHUNK_MAX_PAYLOAD;

	while (here() < to) {
		uint64_t rem = to - here(), len = rem;

		if (len > max)
			len = rem - max < TA_CHUNK_HEADER_SIZE ? max - TA_CHUNK_HEADER_SIZE : max;
		filler_chunk(len, 0);
	}
}

int main(int argc, char **argv)
{
	static const uint64_t pairs[2][2] = {{1000000, 500000},
					     {3000001000000ull, 1000000500000ull}};
	const uint64_t marks[] = {1ull << 31, 1ull << 32};
	uint64_t bytes, next;
	int damage;
	char *end;

	if (argc < 2 || argc > 3 || (argc == 3 && strcmp(argv[2], "--damage"))) {
		fprintf(stderr, "usage: bigdump BYTES [--damage] >DUMP\n");
		return 2;
	}
	bytes = strtoull(argv[1], &end, 0);
	if (*end || bytes < (64u << 20)) {
		fprintf(stderr, "bigdump: BYTES must be a number of at least 64 MiB\n");
		return 2;
	}
	damage = argc == 3;
#ifdef F_SETPIPE_SZ
	fcntl(1, F_SETPIPE_SZ, 1 << 20); /* fewer switches; a file ignores it */
#endif
	filler = calloc(1, TA_CHUNK_MAX_PAYLOAD);
	if (!filler)
		abort();
	dg_init(&g, PID);
	g.lz4 = 1;
	at = 0;
	count(dg_process(&g, ticks, TA_CLOCK_RDTSC, 0, "/nonexistent/bigdump"));
	count(dg_clock(&g, 2, pairs));
	count(dg_module(&g, "/nonexistent/bigdump", BASE, 1, BASE + 0x1000, BASE + 0x3000));
	count(dg_thread_start(&g, PID, ticks, "main"));
	drain();
	ta_encoder_init(&enc, PID);
	events_chunk();
	/* The body: filler with an EVENTS chunk every SPREAD bytes, and one
	 * across each mark.  The last 1 MiB is for the end. */
	next = SPREAD;
	for (size_t m = 0;;) {
		uint64_t to = next;

		if (m < 2 && marks[m] <= to)
			to = marks[m] - 100; /* the chunk's header before the mark */
		if (to + (1u << 20) > bytes)
			break;
		fill_to(to);
		events_chunk();
		if (m < 2 && to == marks[m] - 100) {
			if (here() <= marks[m])
				abort(); /* the chunk was to cross it */
			if (m == 1 && damage) {
				filler_chunk(4096, 1);
				damage = 0;
			}
			m++;
		} else {
			next += SPREAD;
		}
	}
	if (damage) {
		filler_chunk(4096, 1);
		damage = 0;
	}
	fill_to(bytes - (64u << 10));
	events_chunk();
	{
		size_t o1 = dg_thread_end(&g, PID, ticks + 10, events, 0);
		size_t o2 = dg_end(&g, ticks + 20, 1000000500000ull, events, 0, 1, 0);

		count(o1);
		count(o2);
		drain();
	}
	ta_encoder_free(&enc);
	fprintf(stderr,
		"{\"bytes\": %" PRIu64 ", \"chunks\": %" PRIu64 ", \"events_chunks\": %" PRIu64
		", \"unknown_chunks\": %" PRIu64 ", \"stored_bytes\": %" PRIu64
		", \"raw_bytes\": %" PRIu64 ", \"events\": %" PRIu64 ", \"calls\": %" PRIu64,
		here(), chunks, events_chunks, unknown, stored, raw, events, events / 4);
	fprintf(stderr, ", \"events_offsets\": [");
	for (size_t i = 0; i < nev; i++)
		fprintf(stderr, "%s%" PRIu64, i ? ", " : "", ev_off[i]);
	fprintf(stderr, "]");
	if (damaged_chunk != UINT64_MAX)
		fprintf(stderr,
			", \"damaged\": {\"chunk\": %" PRIu64 ", \"offset\": %" PRIu64
			", \"bytes\": %" PRIu64 "}",
			damaged_chunk, damaged_off, damaged_len);
	fprintf(stderr, "}\n");
	dg_free(&g);
	free(filler);
	return 0;
}
