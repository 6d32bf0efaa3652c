/* SPDX-License-Identifier: MIT */
/*
 * gendump.c - writes a large synthetic dump, for measuring the analyzer:
 *   gendump FILE EVENTS [THREADS]
 * Each thread runs a recursive fib-like call tree over 64 functions, with
 * irregular time deltas, cut into LZ4 chunks of about 64 KiB of raw events as the agent's flusher
 * would, so the analyzer sees realistic deltas, depths and chunk sizes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dumpgen.h"

#define CHUNK_RAW (64u << 10)
#define BASE	  0x555555554000ull

struct walk {
	struct ta_encoder e;
	uint64_t ticks, events;
	uint64_t rng; /* xorshift: deltas as irregular as a real run's */
};

static uint64_t jitter(struct walk *w)
{
	w->rng ^= w->rng << 13;
	w->rng ^= w->rng >> 7;
	w->rng ^= w->rng << 17;
	return w->rng % 41;
}

static FILE *out;

static void flush(struct dumpgen *g, struct walk *w, int reopen)
{
	dg_events(g, &w->e);
	if (fwrite(g->buf, 1, g->len, out) != g->len) {
		perror("gendump: write");
		exit(1);
	}
	g->len = 0;
	if (reopen)
		ta_encoder_begin(&w->e, w->ticks);
}

static void call(struct dumpgen *g, struct walk *w, int n, uint64_t limit)
{
	uint64_t fn = BASE + 0x1000 + (uint64_t)(n & 63) * 0x40;

	if (w->events >= limit)
		return;
	w->ticks += 7 + jitter(w);
	ta_encoder_event(&w->e, w->ticks, fn, 0);
	w->events++;
	if (n > 1) {
		call(g, w, n - 1, limit);
		call(g, w, n - 2, limit);
	}
	w->ticks += 5 + jitter(w);
	ta_encoder_event(&w->e, w->ticks, fn, 1);
	w->events++;
	if (w->e.out.len >= CHUNK_RAW)
		flush(g, w, 1);
}

int main(int argc, char **argv)
{
	static const uint64_t pairs[2][2] = {{1000000, 500000},
					     {3000001000000ull, 1000000500000ull}};
	struct dumpgen g;
	uint64_t total, per;
	int threads;

	if (argc < 3) {
		fprintf(stderr, "usage: gendump FILE EVENTS [THREADS]\n");
		return 2;
	}
	total = strtoull(argv[2], NULL, 0);
	threads = argc > 3 ? atoi(argv[3]) : 1;
	if (threads < 1)
		threads = 1;
	per = total / (uint64_t)threads;
	out = fopen(argv[1], "wx");
	if (!out) {
		perror(argv[1]);
		return 1;
	}
	dg_init(&g, 4242);
	g.lz4 = 1;
	dg_process(&g, 1000000, TA_CLOCK_RDTSC, 0, "/usr/bin/fib");
	dg_clock(&g, 2, pairs);
	dg_module(&g, "/usr/bin/fib", BASE, 1, BASE + 0x1000, BASE + 0x3000);
	for (int t = 0; t < threads; t++) {
		struct walk w;

		memset(&w, 0, sizeof(w));
		w.ticks = 2000000;
		w.rng = 0x9e3779b97f4a7c15ull + (uint64_t)t;
		dg_thread_start(&g, 4242 + (uint64_t)t, w.ticks, t ? "worker" : "main");
		ta_encoder_init(&w.e, 4242 + (uint64_t)t);
		ta_encoder_begin(&w.e, w.ticks);
		while (w.events < per)
			call(&g, &w, 30, per);
		flush(&g, &w, 0);
		dg_thread_end(&g, 4242 + (uint64_t)t, w.ticks + 10, w.events, 0);
		ta_encoder_free(&w.e);
	}
	dg_end(&g, 3000001000000ull, 1000000500000ull, total, 0, (uint64_t)threads, 0);
	if (fwrite(g.buf, 1, g.len, out) != g.len || fclose(out) != 0) {
		perror("gendump: write");
		return 1;
	}
	dg_free(&g);
	return 0;
}
