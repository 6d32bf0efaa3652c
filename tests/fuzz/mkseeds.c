/* SPDX-License-Identifier: MIT */
/*
 * mkseeds.c - the fuzzer's seed inputs (see fuzz_entry.h for their first
 * byte): synthetic dumps made with the unit tests' dumpgen, covering every
 * chunk type and the walk's corner cases, and real dumps given on the
 * command line, each both as it is and with its chunks decompressed (so
 * that the repairing modes mutate the payloads themselves).
 *
 * usage: mkseeds OUTDIR [DUMP...]
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dumpfile.h"
#include "dumpgen.h"
#include "format.h"

/* First bytes: mode in bits 0-1, visitor in bits 2-3 (fuzz_entry.h). */
#define AS_IS	   (0u | 2u << 2) /* the checking visitor */
#define REPAIRED   (1u | 2u << 2)
#define RECOMPRESS (2u | 1u << 2)

static const char *outdir;

static void die(const char *what)
{
	fprintf(stderr, "mkseeds: %s: %s\n", what, strerror(errno));
	exit(1);
}

static void seed(const char *name, unsigned first, const uint8_t *p, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/seed-%s", outdir, name);
	f = fopen(path, "wb");
	if (!f || fputc((int)first, f) == EOF || fwrite(p, 1, len, f) != len || fclose(f) != 0)
		die(path);
}

/* The dump with every chunk stored uncompressed (CRCs recomputed). */
static void decompressed(const uint8_t *in, size_t len, struct dumpgen *g)
{
	struct ta_dumpfile *d;
	struct ta_chunk c;
	int rc;

	memset(g, 0, sizeof(*g));
	dg_raw(g, in, len < TA_FILE_HEADER_SIZE ? len : TA_FILE_HEADER_SIZE);
	if (ta_dumpfile_memopen(in, len, &d) < 0)
		return;
	while ((rc = ta_dumpfile_next(d, &c)) != 0) {
		uint8_t h[TA_CHUNK_HEADER_SIZE];
		struct ta_chunk_header ch = c.h;

		if (rc < 0)
			continue;
		ch.flags &= (uint16_t)~TA_CHUNK_F_LZ4;
		ch.stored_size = ch.raw_size = (uint32_t)c.len;
		ta_chunk_header_encode(h, &ch, c.payload);
		dg_raw(g, h, sizeof(h));
		dg_raw(g, c.payload, c.len);
	}
	ta_dumpfile_close(d);
}

static void real_dump(const char *path)
{
	struct dumpgen g;
	struct stat st;
	const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	char name[256];
	uint8_t *p;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &st) < 0)
		die(path);
	p = malloc((size_t)st.st_size + 1);
	if (!p || read(fd, p, (size_t)st.st_size) != st.st_size)
		die(path);
	close(fd);
	snprintf(name, sizeof(name), "%s", base);
	seed(name, AS_IS, p, (size_t)st.st_size);
	decompressed(p, (size_t)st.st_size, &g);
	snprintf(name, sizeof(name), "%s-raw", base);
	seed(name, REPAIRED, g.buf, g.len);
	dg_free(&g);
	free(p);
}

/* ---- synthetic dumps ------------------------------------------------------------ */

#define BIAS  0x555555550000ull
#define FN(i) (BIAS + 0x1000 + 0x40 * (i))

static void preamble(struct dumpgen *g, uint64_t ticks)
{
	static const uint64_t pairs[2][2] = {{1000, 5000000}, {3001000, 6000000}};

	dg_process(g, ticks, TA_CLOCK_RDTSC, 3000000000u, "/usr/bin/prog");
	dg_clock(g, 2, pairs);
	dg_module(g, "/usr/bin/prog", BIAS, 1, BIAS + 0x1000, BIAS + 0x9000);
	dg_module(g, "/usr/lib/libx.so", 0x7f0000000000ull, 0, 0x7f0000001000ull,
		  0x7f0000005000ull);
}

static void emit(const char *name, struct dumpgen *g)
{
	struct dumpgen r;
	char n[128];

	seed(name, REPAIRED, g->buf, g->len);
	decompressed(g->buf, g->len, &r);
	/* The same dump LZ4-compressed by the harness. */
	snprintf(n, sizeof(n), "%s-lz4", name);
	seed(n, RECOMPRESS, r.buf, r.len);
	dg_free(&r);
}

/* One thread: nested calls, an exit skipping frames (longjmp), an exit
 * never entered, a lost-events mark, a name change, an end. */
static void one_thread(void)
{
	struct dumpgen g;
	struct ta_encoder e;
	uint64_t t = 2000;

	dg_init(&g, 100);
	preamble(&g, 1500);
	dg_thread_start(&g, 100, 1600, "main");
	ta_encoder_init(&e, 100);
	ta_encoder_begin(&e, t);
	ta_encoder_event(&e, t += 10, FN(0), 0);
	ta_encoder_event(&e, t += 10, FN(1), 0);
	ta_encoder_event(&e, t += 10, FN(2), 0);
	ta_encoder_event(&e, t += 10, FN(3), 0);
	ta_encoder_event(&e, t += 10, FN(1), 1); /* pops 3 and 2 with it */
	ta_encoder_event(&e, t += 10, FN(7), 1); /* never entered */
	ta_encoder_lost(&e, t += 10, 42);
	ta_encoder_event(&e, t += 10, 0x7f0000001234ull, 0);
	ta_encoder_event(&e, t += 10, 0x7f0000001234ull, 1);
	ta_encoder_event(&e, t += 10, 0x1234, 0); /* outside every module */
	ta_encoder_event(&e, t += 10, 0x1234, 1);
	dg_events(&g, &e);
	dg_thread_name(&g, 100, t, "renamed");
	ta_encoder_begin(&e, t += 100);
	ta_encoder_event(&e, t += 10, FN(0), 1);
	dg_events(&g, &e);
	ta_encoder_free(&e);
	dg_thread_end(&g, 100, t + 5, 13, 42);
	dg_end(&g, t + 10, 7000000, 13, 42, 1, 0);
	emit("one-thread", &g);
	dg_free(&g);
}

/* Two processes (a fork) and two threads each, chunks interleaved; the
 * child starts inside its parent's frames; a tid is reused after its end. */
static void two_processes(void)
{
	struct dumpgen g;
	struct ta_encoder a, b, c;
	uint64_t t = 5000;

	dg_init(&g, 200);
	preamble(&g, 4000);
	dg_thread_start(&g, 200, 4100, "parent");
	ta_encoder_init(&a, 200);
	ta_encoder_begin(&a, t);
	ta_encoder_event(&a, t += 3, FN(0), 0);
	ta_encoder_event(&a, t += 3, FN(1), 0);
	dg_events(&g, &a);

	g.pid = 201;
	preamble(&g, t);
	ta_encoder_init(&c, 201);
	c.stack = a.stack; /* inherited frames */
	ta_stack_init(&a.stack);
	ta_stack_push(&a.stack, FN(0));
	ta_stack_push(&a.stack, FN(1));
	ta_encoder_begin(&c, t += 1);
	ta_encoder_event(&c, t += 5, FN(2), 0);
	ta_encoder_event(&c, t += 5, FN(2), 1);
	ta_encoder_event(&c, t += 5, FN(1), 1);
	dg_events(&g, &c);
	dg_thread_end(&g, 201, t, 3, 0);
	dg_end(&g, t, 6500000, 3, 0, 1, 0);

	g.pid = 200;
	dg_thread_start(&g, 300, t, "worker");
	ta_encoder_init(&b, 300);
	ta_encoder_begin(&b, t);
	for (int i = 0; i < 20; i++)
		ta_encoder_event(&b, t += 2, FN(3 + i % 2), i & 1);
	dg_events(&g, &b);
	dg_thread_end(&g, 300, t, 20, 0);
	dg_thread_start(&g, 300, t + 1, "reused");
	ta_encoder_free(&b);
	ta_encoder_init(&b, 300);
	ta_encoder_begin(&b, t += 2);
	ta_encoder_event(&b, t += 2, FN(5), 0);
	dg_events(&g, &b); /* left open */
	ta_encoder_begin(&a, t);
	ta_encoder_event(&a, t += 3, FN(1), 1);
	ta_encoder_event(&a, t += 3, FN(0), 1);
	dg_events(&g, &a);
	dg_thread_end(&g, 200, t, 4, 0);
	dg_end(&g, t + 1, 6600000, 25, 0, 3, 0);
	ta_encoder_free(&a);
	ta_encoder_free(&b);
	ta_encoder_free(&c);
	emit("two-processes", &g);
	dg_free(&g);
}

/* A lost chunk: the next one's stack snapshot repairs the stack; then a
 * recursion deep enough to matter, and an END saying data was lost. */
static void gap_and_recursion(void)
{
	struct dumpgen g, skip;
	struct ta_encoder e;
	uint64_t t = 100;

	dg_init(&g, 300);
	dg_process(&g, 50, TA_CLOCK_MONOTONIC, 0, "/bin/rec");
	dg_module(&g, "/bin/rec", 0, 1, 0x400000, 0x500000);
	ta_encoder_init(&e, 300);
	ta_encoder_begin(&e, t);
	ta_encoder_event(&e, t += 1, 0x401000, 0);
	dg_events(&g, &e);
	ta_encoder_begin(&e, t);
	ta_encoder_event(&e, t += 1, 0x402000, 0);
	ta_encoder_event(&e, t += 1, 0x403000, 0);
	dg_init(&skip, 300);
	dg_events(&skip, &e); /* never reaches the dump */
	dg_free(&skip);
	g.seqs[0]++;
	ta_encoder_begin(&e, t += 50);
	for (int i = 0; i < 64; i++)
		ta_encoder_event(&e, t += 1, 0x404000, 0);
	for (int i = 0; i < 64; i++)
		ta_encoder_event(&e, t += 1, 0x404000, 1);
	ta_encoder_event(&e, t += 1, 0x402000, 1);
	dg_events(&g, &e);
	ta_encoder_free(&e);
	dg_end(&g, t, t, 132, 0, 1, 1);
	emit("gap-recursion", &g);
	dg_free(&g);
}

/* Control flow: a setjmp, frames left by a longjmp and by a catch (the
 * encoder writes how many), then a LONGJMP whose count claims more frames
 * than there are, as a damaged dump could. */
static void control_flow(void)
{
	struct dumpgen g;
	struct ta_encoder e;
	uint64_t t = 2000, env = 0x7ffc0000ull, v[2];
	size_t at;

	dg_init(&g, 500);
	preamble(&g, 1500);
	dg_thread_start(&g, 500, 1600, "main");
	ta_encoder_init(&e, 500);
	ta_encoder_begin(&e, t);
	ta_encoder_event(&e, t += 10, FN(0), 0);
	ta_encoder_event(&e, t += 10, FN(1), 0);
	ta_encoder_ext(&e, t += 1, TA_EXT_SETJMP, &env, 1);
	for (int i = 2; i < 7; i++)
		ta_encoder_event(&e, t += 10, FN(i), 0);
	ta_encoder_ext(&e, t += 10, TA_EXT_LONGJMP, &env, 1); /* pops 5 */
	ta_encoder_event(&e, t += 10, FN(7), 0);
	ta_encoder_event(&e, t += 10, FN(8), 0);
	v[0] = FN(1);
	ta_encoder_ext(&e, t += 10, TA_EXT_CATCH, v, 1); /* pops 2 */
	ta_encoder_event(&e, t += 10, FN(9), 0);
	/* Written by hand through a subtype without a rule, then renamed:
	 * LONGJMP(env, 1000) with two frames open. */
	v[0] = env;
	v[1] = 1000;
	at = e.out.len + 1; /* after the one-byte dt | kind */
	ta_encoder_ext(&e, t += 10, 12, v, 2);
	e.out.p[at] = TA_EXT_LONGJMP;
	dg_events(&g, &e);
	ta_encoder_free(&e);
	dg_thread_end(&g, 500, t + 5, 10, 0);
	dg_end(&g, t + 10, 6600000, 10, 0, 1, 0);
	emit("control-flow", &g);
	dg_free(&g);
}

/* Library calls (format 1.3): a LIBCALLS chunk and zones with the values
 * of each EXT subtype, a block freed twice, one never allocated, values
 * outside any zone, and a subtype from the future. */
static void libcalls(void)
{
	static const struct dg_libcall lc[] = {
	    {FN(10), "malloc", TA_LC_ALLOC},  {FN(11), "free", TA_LC_ALLOC},
	    {FN(12), "realloc", TA_LC_ALLOC}, {FN(13), "pthread_mutex_lock", TA_LC_LOCK},
	    {FN(14), "read", TA_LC_IO},	      {FN(15), "nanosleep", TA_LC_SLEEP},
	};
	static const struct {
		unsigned fn, sub, n;
		uint64_t v[4];
	} calls[] = {
	    {10, TA_EXT_ALLOC, 2, {100, 0xa000}},
	    {10, TA_EXT_ALLOC, 2, {50, 0xb000}},
	    {12, TA_EXT_REALLOC, 3, {0xa000, 300, 0xc000}},
	    {12, TA_EXT_REALLOC, 3, {0, 30, 0xd000}},
	    {12, TA_EXT_REALLOC, 3, {0xd000, 60, 0}},
	    {11, TA_EXT_FREE, 1, {0xc000}},
	    {11, TA_EXT_FREE, 1, {0xc000}},
	    {11, TA_EXT_FREE, 1, {0xeeee}},
	    {11, TA_EXT_FREE, 1, {0}},
	    {13, TA_EXT_LOCK, 2, {0x5000, 0}},
	    {14, TA_EXT_IO, 4, {3, 100, 60, 0}},
	    {14, TA_EXT_IO, 4, {UINT64_MAX, 1, 0, 9}},
	    {15, TA_EXT_SLEEP, 3, {TA_LC_FOREVER, 0, 4}},
	};
	struct dumpgen g;
	struct ta_encoder e;
	uint64_t t = 2000;

	dg_init(&g, 500);
	preamble(&g, 1500);
	dg_libcalls(&g, TA_LC_ALL, sizeof(lc) / sizeof(lc[0]), lc);
	dg_thread_start(&g, 500, 1600, "main");
	ta_encoder_init(&e, 500);
	ta_encoder_begin(&e, t);
	ta_encoder_event(&e, t += 10, FN(0), 0);
	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++) {
		ta_encoder_event(&e, t += 10, FN(calls[i].fn), 0);
		ta_encoder_ext(&e, t += 10, calls[i].sub, calls[i].v, calls[i].n);
		ta_encoder_event(&e, t, FN(calls[i].fn), 1);
	}
	ta_encoder_ext(&e, t += 10, TA_EXT_ALLOC, (const uint64_t[]){1, 2}, 2);
	ta_encoder_ext(&e, t += 10, 15, (const uint64_t[]){1, 2, 3}, 3);
	ta_encoder_event(&e, t += 10, FN(0), 1);
	dg_events(&g, &e);
	ta_encoder_free(&e);
	dg_thread_end(&g, 500, t + 5, 28, 0);
	dg_end(&g, t + 10, 7000000, 28, 0, 1, 0);
	emit("libcalls", &g);
	dg_free(&g);
}

/* The manual API: SITES (one address described twice), CHANNELS, zones
 * as enters and exits of their sites, and every EXT kind of 1.5, a text
 * cut at TA_TEXT_MAX among them. */
static void api(void)
{
	static const struct {
		uint64_t addr, kind, ch;
		const char *name;
		uint64_t line;
	} sites[] = {
	    {BIAS + 0x8000, TA_SITE_ZONE, TA_CHANNEL_USER, "physics", 10},
	    {BIAS + 0x8040, TA_SITE_FRAME, TA_CHANNEL_USER, "frame", 11},
	    {BIAS + 0x8080, TA_SITE_COUNTER, 6, "depth", 12},
	    {BIAS + 0x80c0, TA_SITE_MESSAGE, TA_CHANNEL_USER, "message", 13},
	    {BIAS + 0x8100, TA_SITE_INSTANT, 6, "checkpoint", 14},
	    {BIAS + 0x8140, TA_SITE_TEXT, TA_CHANNEL_USER, "", 15},
	    {BIAS + 0x8180, TA_SITE_ZONE_END, TA_CHANNEL_USER, "", 16},
	    {BIAS + 0x8000, TA_SITE_ZONE, TA_CHANNEL_USER, "physics again", 17},
	};
	static char text[TA_TEXT_MAX];
	struct dumpgen g;
	struct ta_encoder e;
	struct pb b = {0};
	uint64_t v[TA_EXT_MAX_VALUES], t = 2000, d = 0x3ff0000000000000ull; /* 1.0 */
	uint32_t n;

	dg_init(&g, 600);
	preamble(&g, 1500);
	pb_u(&b, 3);
	pb_u(&b, TA_CHANNEL_FUNCTIONS);
	pb_str(&b, "functions");
	pb_u(&b, 1);
	pb_u(&b, TA_CHANNEL_USER);
	pb_str(&b, "user");
	pb_u(&b, 1);
	pb_u(&b, 6);
	pb_str(&b, "net");
	pb_u(&b, 0);
	dg_chunk(&g, TA_CHUNK_CHANNELS, b.p, b.len);
	b.len = 0;
	pb_u(&b, sizeof(sites) / sizeof(sites[0]));
	for (size_t i = 0; i < sizeof(sites) / sizeof(sites[0]); i++) {
		pb_u(&b, sites[i].addr);
		pb_u(&b, sites[i].kind);
		pb_u(&b, sites[i].ch);
		pb_str(&b, sites[i].name);
		pb_str(&b, "game.c");
		pb_u(&b, sites[i].line);
	}
	dg_chunk(&g, TA_CHUNK_SITES, b.p, b.len);
	pb_free(&b);
	dg_thread_start(&g, 600, 1600, "main");
	ta_encoder_init(&e, 600);
	ta_encoder_begin(&e, t);
	ta_encoder_event(&e, t += 10, FN(0), 0);
	ta_encoder_event(&e, t += 10, BIAS + 0x8000, 0); /* a zone */
	memset(text, 'x', sizeof(text));
	n = ta_text_pack(v, BIAS + 0x8140, text, TA_TEXT_MAX, TA_TEXT_F_CUT);
	ta_encoder_ext(&e, t += 10, TA_EXT_ZONE_TEXT, v, n);
	ta_encoder_ext(&e, t += 10, TA_EXT_ZONE_VALUE, (const uint64_t[]){42}, 1);
	ta_encoder_ext(&e, t += 10, TA_EXT_FRAME, (const uint64_t[]){BIAS + 0x8040}, 1);
	ta_encoder_ext(&e, t += 10, TA_EXT_COUNTER,
		       (const uint64_t[]){BIAS + 0x8080, TA_COUNTER_INT, (uint64_t)-5}, 3);
	ta_encoder_ext(&e, t += 10, TA_EXT_COUNTER,
		       (const uint64_t[]){BIAS + 0x8080, TA_COUNTER_DOUBLE, d}, 3);
	n = ta_text_pack(v, BIAS + 0x80c0, "level 3 loaded", 14, 0);
	ta_encoder_ext(&e, t += 10, TA_EXT_MESSAGE, v, n);
	ta_encoder_ext(&e, t += 10, TA_EXT_INSTANT, (const uint64_t[]){BIAS + 0x8100}, 1);
	ta_encoder_ext(&e, t += 10, TA_EXT_CHANNEL, (const uint64_t[]){6, 1}, 2);
	ta_encoder_ext(&e, t += 10, TA_EXT_CHANNEL, (const uint64_t[]){6, 0}, 2);
	ta_encoder_event(&e, t += 10, BIAS + 0x8000, 1);
	ta_encoder_ext(&e, t += 10, TA_EXT_ZONE_UNMATCHED, (const uint64_t[]){BIAS + 0x8180}, 1);
	/* A site no SITES chunk describes, a text whose length lies. */
	ta_encoder_ext(&e, t += 10, TA_EXT_INSTANT, (const uint64_t[]){BIAS + 0x9999}, 1);
	ta_encoder_ext(&e, t += 10, TA_EXT_MESSAGE, (const uint64_t[]){BIAS + 0x80c0, 900, 0}, 3);
	ta_encoder_event(&e, t += 10, FN(0), 1);
	dg_events(&g, &e);
	ta_encoder_free(&e);
	dg_thread_end(&g, 600, t + 5, 4, 0);
	dg_end(&g, t + 10, 7000000, 4, 0, 1, 0);
	emit("api", &g);
	dg_free(&g);
}

/* Format 1.10's API: a zone named at run time (a site of the agent's),
 * frames with gaps, the section "s" (fuzz_entry.c's --section) entered
 * twice over a call, once more never left, a LEAVE without an ENTER, a
 * unit and application info; an END without a BEGIN, a unit past the
 * known ones, a text whose length lies. */
static void apizone(void)
{
	static const struct {
		uint64_t addr, kind;
		const char *name;
	} sites[] = {
	    {BIAS + 0x8000, TA_SITE_ZONE_DYN, ""},
	    {0x7f0000001000ull, TA_SITE_ZONE, "item 3"},
	    {BIAS + 0x8040, TA_SITE_FRAME, "physics"},
	    {BIAS + 0x8080, TA_SITE_SECTION, "s"},
	    {BIAS + 0x80c0, TA_SITE_APP_INFO, "app-info"},
	    {BIAS + 0x8100, TA_SITE_COUNTER_CONFIG, "heap"},
	};
	struct dumpgen g;
	struct ta_encoder e;
	struct pb b = {0};
	uint64_t v[TA_EXT_MAX_VALUES], t = 2000;
	const uint64_t sec[] = {BIAS + 0x8080}, frm[] = {BIAS + 0x8040};
	uint32_t n;

	dg_init(&g, 700);
	preamble(&g, 1500);
	pb_u(&b, sizeof(sites) / sizeof(sites[0]));
	for (size_t i = 0; i < sizeof(sites) / sizeof(sites[0]); i++) {
		pb_u(&b, sites[i].addr);
		pb_u(&b, sites[i].kind);
		pb_u(&b, TA_CHANNEL_USER);
		pb_str(&b, sites[i].name);
		pb_str(&b, "game.c");
		pb_u(&b, 20 + i);
	}
	dg_chunk(&g, TA_CHUNK_SITES, b.p, b.len);
	pb_free(&b);
	dg_thread_start(&g, 700, 1600, "main");
	ta_encoder_init(&e, 700);
	ta_encoder_begin(&e, t);
	ta_encoder_ext(&e, t += 10, TA_EXT_FRAME_END, frm, 1);
	ta_encoder_ext(&e, t += 10, TA_EXT_SECTION_LEAVE, sec, 1);
	ta_encoder_event(&e, t += 10, FN(0), 0);
	ta_encoder_ext(&e, t += 10, TA_EXT_FRAME_BEGIN, frm, 1);
	ta_encoder_ext(&e, t += 10, TA_EXT_SECTION_ENTER, sec, 1);
	ta_encoder_event(&e, t += 10, 0x7f0000001000ull, 0);
	ta_encoder_event(&e, t += 10, FN(1), 0);
	ta_encoder_ext(&e, t += 10, TA_EXT_SECTION_ENTER, sec, 1);
	ta_encoder_ext(&e, t += 10, TA_EXT_FRAME_END, frm, 1);
	ta_encoder_event(&e, t += 10, FN(1), 1);
	ta_encoder_ext(&e, t += 10, TA_EXT_SECTION_LEAVE, sec, 1);
	ta_encoder_ext(&e, t += 10, TA_EXT_COUNTER_CONFIG,
		       (const uint64_t[]){BIAS + 0x8100, TA_UNIT_BYTES_}, 2);
	ta_encoder_ext(&e, t += 10, TA_EXT_COUNTER_CONFIG, (const uint64_t[]){BIAS + 0x8100, 99},
		       2);
	n = ta_text_pack(v, BIAS + 0x80c0, "build abc", 9, 0);
	ta_encoder_ext(&e, t += 10, TA_EXT_APP_INFO, v, n);
	ta_encoder_ext(&e, t += 10, TA_EXT_APP_INFO, (const uint64_t[]){BIAS + 0x80c0, 900, 0}, 3);
	ta_encoder_event(&e, t += 10, 0x7f0000001000ull, 1);
	ta_encoder_ext(&e, t += 10, TA_EXT_SECTION_LEAVE, sec, 1);
	ta_encoder_ext(&e, t += 10, TA_EXT_FRAME_BEGIN, frm, 1);
	ta_encoder_ext(&e, t += 10, TA_EXT_SECTION_ENTER, sec, 1);
	ta_encoder_event(&e, t += 10, FN(1), 0);
	ta_encoder_event(&e, t += 10, FN(1), 1);
	dg_events(&g, &e);
	ta_encoder_free(&e);
	dg_thread_end(&g, 700, t + 5, 6, 0);
	dg_end(&g, t + 10, 7000000, 6, 0, 1, 0);
	emit("apizone", &g);
	dg_free(&g);
}

/* The manual API's memory, lock names and fibers (format 1.10): pools'
 * blocks (a free of a pointer never given, of NULL), a lock named twice,
 * a fiber entered on two threads, a LEAVE with no fiber, and values that
 * do not make the events (too few, a text whose length lies). */
static void api_mem(void)
{
	static const struct {
		uint64_t addr, kind;
		const char *name;
	} sites[] = {
	    {BIAS + 0x8000, TA_SITE_ALLOC, "arena"},
	    {BIAS + 0x8040, TA_SITE_FREE, "arena"},
	    {BIAS + 0x8080, TA_SITE_LOCK_NAME, "lock name"},
	    {BIAS + 0x80c0, TA_SITE_FIBER, "fiber"},
	    {BIAS + 0x8100, TA_SITE_ZONE, "step"},
	};
	struct dumpgen g;
	struct ta_encoder e;
	struct pb b = {0};
	uint64_t v[TA_EXT_MAX_VALUES], t = 2000;
	uint32_t n;

	dg_init(&g, 700);
	preamble(&g, 1500);
	pb_u(&b, sizeof(sites) / sizeof(sites[0]));
	for (size_t i = 0; i < sizeof(sites) / sizeof(sites[0]); i++) {
		pb_u(&b, sites[i].addr);
		pb_u(&b, sites[i].kind);
		pb_u(&b, TA_CHANNEL_USER);
		pb_str(&b, sites[i].name);
		pb_str(&b, "engine.c");
		pb_u(&b, 20 + i);
	}
	dg_chunk(&g, TA_CHUNK_SITES, b.p, b.len);
	pb_free(&b);
	for (uint64_t tid = 700; tid <= 701; tid++) {
		dg_thread_start(&g, tid, 1600, tid == 700 ? "main" : "worker");
		ta_encoder_init(&e, tid);
		ta_encoder_begin(&e, t);
		ta_encoder_event(&e, t += 10, FN(0), 0);
		ta_encoder_ext(&e, t += 10, TA_EXT_POOL_ALLOC,
			       (const uint64_t[]){BIAS + 0x8000, 0x1000 + tid, 100}, 3);
		ta_encoder_ext(&e, t += 10, TA_EXT_POOL_ALLOC,
			       (const uint64_t[]){BIAS + 0x8000, 0x1000 + tid, 50}, 3);
		ta_encoder_ext(&e, t += 10, TA_EXT_POOL_FREE, (const uint64_t[]){BIAS + 0x8040, 7},
			       2);
		ta_encoder_ext(&e, t += 10, TA_EXT_POOL_FREE, (const uint64_t[]){BIAS + 0x8040, 0},
			       2);
		ta_encoder_ext(&e, t += 10, TA_EXT_POOL_ALLOC, (const uint64_t[]){BIAS + 0x8000},
			       1);
		n = ta_text_pack(v, 0x2000, "cache lock", 10, 0);
		ta_encoder_ext(&e, t += 10, TA_EXT_LOCK_NAME, v, n);
		n = ta_text_pack(v, 0x2000, "renamed", 7, TA_TEXT_F_CUT);
		ta_encoder_ext(&e, t += 10, TA_EXT_LOCK_NAME, v, n);
		ta_encoder_ext(&e, t += 10, TA_EXT_LOCK_NAME, (const uint64_t[]){0x2000, 900, 0},
			       3);
		n = ta_text_pack(v, BIAS + 0x80c0, "job A", 5, 0);
		ta_encoder_ext(&e, t += 10, TA_EXT_FIBER_ENTER, v, n);
		ta_encoder_event(&e, t += 10, FN(1), 0);
		ta_encoder_event(&e, t += 10, BIAS + 0x8100, 0);
		ta_encoder_event(&e, t += 10, BIAS + 0x8100, 1);
		ta_encoder_ext(&e, t += 10, TA_EXT_FIBER_LEAVE, (const uint64_t[]){BIAS + 0x80c0},
			       1);
		ta_encoder_ext(&e, t += 10, TA_EXT_FIBER_LEAVE, (const uint64_t[]){BIAS + 0x80c0},
			       1);
		ta_encoder_event(&e, t += 10, FN(1), 1);
		ta_encoder_ext(&e, t += 10, TA_EXT_FIBER_ENTER, (const uint64_t[]){BIAS + 0x80c0},
			       1);
		ta_encoder_event(&e, t += 10, FN(0), 1);
		dg_events(&g, &e);
		ta_encoder_free(&e);
		dg_thread_end(&g, tid, t + 5, 6, 0);
	}
	dg_end(&g, t + 10, 7000000, 12, 0, 2, 0);
	emit("api-mem", &g);
	dg_free(&g);
}

/* Arguments and return values (EXT 22, 23): every format, a string copied
 * and cut, NULL and unreadable ones, a bad item after good ones. */
static void args(void)
{
	struct dumpgen g;
	struct ta_encoder e;
	uint64_t t = 2000;
	const uint64_t a[] = {
	    TA_ARGI_HEAD(TA_ARGF_INT, 4, 1, 0, 0, 0, 0),
	    (uint64_t)-7,
	    TA_ARGI_HEAD(TA_ARGF_HEX, 8, 2, 0, 0, 0, 0),
	    0xbeef,
	    TA_ARGI_HEAD(TA_ARGF_STR, 8, 3, 0, TA_ARGS_OK, 1, 10),
	    0x1000,
	    0x6968222079617322ull,
	    0x0a22ull,
	    TA_ARGI_HEAD(TA_ARGF_STR, 8, 4, 0, TA_ARGS_NULL, 0, 0),
	    0,
	    TA_ARGI_HEAD(TA_ARGF_STR, 8, 5, 0, TA_ARGS_UNREADABLE, 0, 0),
	    0x10,
	    TA_ARGI_HEAD(TA_ARGF_FLOAT, 4, 1, 1, 0, 0, 0),
	    0x3e800000,
	    TA_ARGI_HEAD(TA_ARGF_ENUM, 4, 6, 0, 0, 0, 0),
	    5,
	    TA_ARGI_HEAD(TA_ARGF_CHAR, 1, 7, 0, 0, 0, 0),
	    '\'',
	};
	const uint64_t r[] = {TA_ARGI_HEAD(TA_ARGF_PTR, 8, 0, 0, 0, 0, 0), 0x5555};
	const uint64_t bad[] = {TA_ARGI_HEAD(TA_ARGF_UINT, 2, 1, 0, 0, 0, 0), 7, 99};

	dg_init(&g, 100);
	preamble(&g, 1500);
	dg_thread_start(&g, 100, 1600, "main");
	ta_encoder_init(&e, 100);
	ta_encoder_begin(&e, t);
	ta_encoder_event(&e, t += 10, FN(0), 0);
	ta_encoder_ext(&e, t += 10, TA_EXT_ARGS, a, sizeof(a) / sizeof(a[0]));
	ta_encoder_event(&e, t += 10, FN(1), 0);
	ta_encoder_ext(&e, t += 10, TA_EXT_ARGS, bad, 3);
	ta_encoder_ext(&e, t += 10, TA_EXT_RETVAL, r, 2);
	ta_encoder_event(&e, t += 10, FN(1), 1);
	ta_encoder_ext(&e, t += 10, TA_EXT_RETVAL, r, 2);
	ta_encoder_event(&e, t += 10, FN(0), 1);
	dg_events(&g, &e);
	ta_encoder_free(&e);
	dg_thread_end(&g, 100, t + 5, 8, 0);
	dg_end(&g, t + 10, 7000000, 8, 0, 1, 0);
	emit("args", &g);
	dg_free(&g);
}

/* Filters (format 1.7): a FILTER chunk, a second one replacing it, and
 * one whose function count lies. */
static void filters(void)
{
	struct dumpgen g;
	struct pb b = {0};
	uint64_t t = 100;
	struct ta_encoder e;

	dg_init(&g, 700);
	preamble(&g, 50);
	pb_str(&b, "work,!noise");
	pb_str(&b, "hash*");
	pb_u(&b, 3);
	pb_u(&b, 10000);
	pb_u(&b, 2);
	pb_u(&b, FN(0));
	pb_u(&b, TA_FILTER_HOW_RUNTIME);
	pb_u(&b, TA_FILTER_KIND_FILTER);
	pb_u(&b, FN(1));
	pb_u(&b, TA_FILTER_HOW_PATCHED);
	pb_u(&b, TA_FILTER_KIND_EXCLUDE | TA_FILTER_KIND_NOT);
	dg_chunk(&g, TA_CHUNK_FILTER, b.p, b.len);
	dg_chunk(&g, TA_CHUNK_FILTER, b.p, b.len);
	b.len = 0;
	pb_str(&b, "");
	pb_str(&b, "");
	pb_u(&b, 0);
	pb_u(&b, 0);
	pb_u(&b, 1000000);
	dg_chunk(&g, TA_CHUNK_FILTER, b.p, b.len);
	pb_free(&b);
	dg_thread_start(&g, 700, 60, "main");
	ta_encoder_init(&e, 700);
	ta_encoder_begin(&e, t);
	ta_encoder_event(&e, t += 10, FN(0), 0);
	ta_encoder_event(&e, t += 10, FN(0), 1);
	dg_events(&g, &e);
	ta_encoder_free(&e);
	dg_thread_end(&g, 700, t + 5, 2, 0);
	dg_end(&g, t + 10, 7000000, 2, 0, 1, 0);
	emit("filter", &g);
	dg_free(&g);
}

/* Keep mode (format 1.10): a KEEP chunk with two windows, one replacing
 * it, one whose windows overlap and one whose window count lies; frame
 * marks inside and between the windows. */
static void keep_payload(struct pb *b, uint64_t n, uint64_t lo0, uint64_t lo1)
{
	b->len = 0;
	pb_u(b, 20000000);
	pb_u(b, 1);
	pb_str(b, "frame");
	pb_u(b, 200);
	pb_u(b, 2);
	pb_u(b, 4);
	pb_u(b, 1000);
	pb_u(b, 10);
	pb_u(b, 1);
	pb_u(b, 0);
	pb_u(b, 0);
	pb_u(b, n);
	pb_u(b, lo0);
	pb_u(b, 30);
	pb_u(b, lo1);
	pb_u(b, 30);
}

static void keep(void)
{
	struct dumpgen g;
	struct pb b = {0};
	uint64_t t = 100;
	struct ta_encoder e;

	dg_init(&g, 800);
	preamble(&g, 50);
	keep_payload(&b, 2, 150, 300);
	dg_chunk(&g, TA_CHUNK_KEEP, b.p, b.len);
	dg_chunk(&g, TA_CHUNK_KEEP, b.p, b.len);
	keep_payload(&b, 2, 150, 160);
	dg_chunk(&g, TA_CHUNK_KEEP, b.p, b.len);
	keep_payload(&b, 1000, 150, 300);
	dg_chunk(&g, TA_CHUNK_KEEP, b.p, b.len);
	keep_payload(&b, 2, 150, 300);
	dg_chunk(&g, TA_CHUNK_KEEP, b.p, b.len);
	dg_thread_start(&g, 800, 60, "main");
	ta_encoder_init(&e, 800);
	ta_encoder_begin(&e, t);
	ta_encoder_event(&e, t += 10, FN(0), 0);
	for (int i = 0; i < 6; i++) {
		uint64_t v = BIAS + 0x8040;

		ta_encoder_event(&e, t += 10, FN(1), 0);
		ta_encoder_event(&e, t += 5, FN(1), 1);
		ta_encoder_ext(&e, t += 5, TA_EXT_FRAME, &v, 1);
		if (i == 2)
			t += 100;
	}
	ta_encoder_event(&e, t += 10, FN(0), 1);
	dg_events(&g, &e);
	ta_encoder_free(&e);
	dg_thread_end(&g, 800, t + 5, 14, 0);
	dg_end(&g, t + 10, 7000000, 14, 0, 1, 0);
	emit("keep", &g);
	dg_free(&g);
	pb_free(&b);
}

static int add_chunk(void *arg, const void *payload, size_t len)
{
	dg_chunk(arg, TA_CHUNK_SYMBOLS, payload, len);
	return 0;
}

/* Stored symbols (format 1.9): the program's functions, front-coded C++
 * names, and the same table again (a second process's). */
static void symbols(void)
{
	static const struct ta_syms_entry syms[] = {
	    {0x1000, 0x40, "main"},
	    {0x1040, 0x40, "_ZN2ns5Klass6methodEv"},
	    {0x1080, 0x40, "_ZN2ns5KlassC2Ev"},
	    {0x10c0, 0, "_ZN2ns5twiceEi"},
	};
	struct dumpgen g;
	uint64_t t = 100;
	struct ta_encoder e;

	dg_init(&g, 800);
	preamble(&g, 50);
	ta_syms_encode(NULL, 0, BIAS, "/usr/bin/prog", TA_SYMS_SYMTAB, syms, 4, add_chunk, &g);
	ta_syms_encode(NULL, 0, BIAS, "/usr/bin/prog", TA_SYMS_SYMTAB, syms, 4, add_chunk, &g);
	dg_thread_start(&g, 800, 60, "main");
	ta_encoder_init(&e, 800);
	ta_encoder_begin(&e, t);
	ta_encoder_event(&e, t += 10, FN(0), 0);
	ta_encoder_event(&e, t += 10, FN(1), 0);
	ta_encoder_event(&e, t += 10, FN(1), 1);
	ta_encoder_event(&e, t += 10, FN(3), 0);
	ta_encoder_event(&e, t += 10, FN(3), 1);
	ta_encoder_event(&e, t += 10, FN(0), 1);
	dg_events(&g, &e);
	ta_encoder_free(&e);
	dg_thread_end(&g, 800, t + 5, 6, 0);
	dg_end(&g, t + 10, 7000000, 6, 0, 1, 0);
	emit("symbols", &g);
	dg_free(&g);
}

/* Garbage between chunks, an unknown chunk type, a truncated tail. */
static void damaged(void)
{
	struct dumpgen g;
	static const char junk[] = "TAch....garbage";

	dg_init(&g, 400);
	g.lz4 = 1;
	preamble(&g, 10);
	dg_raw(&g, junk, sizeof(junk));
	dg_chunk(&g, 99, "future", 6);
	dg_thread_start(&g, 400, 20, "t");
	dg_end(&g, 30, 30, 0, 0, 1, 0);
	g.len -= 5;
	seed("damaged", AS_IS, g.buf, g.len);
	dg_free(&g);
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: mkseeds OUTDIR [DUMP...]\n");
		return 2;
	}
	outdir = argv[1];
	if (mkdir(outdir, 0755) < 0 && errno != EEXIST)
		die(outdir);
	one_thread();
	two_processes();
	gap_and_recursion();
	control_flow();
	libcalls();
	api();
	api_mem();
	apizone();
	args();
	filters();
	symbols();
	keep();
	damaged();
	for (int i = 2; i < argc; i++)
		real_dump(argv[i]);
	return 0;
}
