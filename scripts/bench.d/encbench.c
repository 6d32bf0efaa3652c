/* SPDX-License-Identifier: MIT */
/*
 * encbench.c - the flusher's per-event work, alone and repeatable.
 *
 * Reads a dump, decodes one thread's EVENTS chunks back to the raw 16-byte
 * records the agent's rings hold (enter {ticks, addr}, exit {ticks, addr |
 * TA_RAW_EXIT}, a gap {ticks, TA_RAW_LOST | count}), then does on them what
 * agent/flusher.c does with a ring: ta_encoder_raw on blocks of BLOCK
 * records, chunks cut at CHUNK bytes, each chunk compressed with LZ4 and
 * checksummed (its header) as dump.c's ta_dump_chunk_z does; nothing is
 * written.  The tick deltas are those of the run that made the dump (a
 * native run), not those of a run under valgrind.
 *
 *   encbench DUMP [-r ROUNDS] [-b BLOCK] [-c CHUNK] [-a ACCEL] [-x] [-m TICKS]
 *            [-z lz4|raw] [-v] [-w FILE]
 *
 * -m: through the minimum-duration filter first (agent/mindur.c, as
 * TRACEAGENT_MIN_DURATION has the flusher do), calls shorter than TICKS
 * left out; its time counts as encoding, per event read from the ring.
 *
 * Prints events, bytes per event (compressed chunks with their headers),
 * a checksum of the encoded payloads (equal before and after a change of
 * the encoder that must not change the bytes), and ns per event of the
 * best round and the medians over the rounds, split into encoding, LZ4
 * and CRC (the thread's CPU time).  -z raw stores the chunks
 * uncompressed (no LZ4, as the flusher does when the
 * program keeps every CPU busy); -v checks that liblz4 decompresses each
 * block back to its payload (untimed);
 * -w writes the chunks to FILE (emptied at each round) with one writev
 * each, as dump.c does, and times it (the system time is the thread's).  For instructions per
 * event, run one round under valgrind --tool=callgrind and divide each
 * function's inclusive Ir by the events.
 *
 * scripts/bench builds it (any run, into scripts/.cache/bench/encbench)
 * against build-bench's libta_format.a and libta_agent_core.a (the release
 * build's format files and agent/mindur.c); by hand, with the release build's
 * flags:
 *   gcc -O3 -fPIC -fvisibility=hidden -DNDEBUG -pthread -Iformat -Iagent -Iarch \
 *       -o encbench scripts/bench.d/encbench.c format/[a-z]*.c agent/mindur.c \
 *       arch/x86_64/crc32c.c -llz4
 */
#define _GNU_SOURCE
#include <lz4.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "chunkread.h"
#include "format.h"
#include "grow.h"
#include "mindur.h"
#include "slots.h"

static uint64_t min_ticks; /* -m */
static int cross;	   /* -x */
static int store_raw;	   /* -z raw: chunks stored uncompressed */
static int out_fd = -1;	   /* -w FILE: the chunks written there */
static int verify;	   /* -v: each block decompressed and compared */

static struct ta_mindur md;
static size_t md_out; /* records the filter let through, last round */

static void die(const char *what)
{
	fprintf(stderr, "encbench: %s\n", what);
	exit(1);
}

struct raws {
	struct ta_raw *ev;
	size_t n, cap;
};

static void push(struct raws *r, uint64_t ticks, uint64_t addr)
{
	struct ta_raw *ev = ta_vec_reserve(r->ev, r->n + 1, &r->cap, sizeof(*ev), 1 << 20);

	if (!ev)
		die("out of memory");
	r->ev = ev;
	r->ev[r->n].ticks = ticks;
	r->ev[r->n].addr = addr;
	r->n++;
}

/* The first thread's events, as raw records, read by format's chunk
 * reader. */
static void load(const char *path, struct raws *out)
{
	struct ta_dumpfile *df;
	struct ta_decoder d;
	struct ta_chunk c;
	uint64_t tid = 0;
	int have_tid = 0, got;

	if (ta_dumpfile_open(path, &df) < 0)
		die("cannot read the dump's header");
	ta_decoder_init(&d);
	while ((got = ta_dumpfile_next(df, &c)) != 0) {
		struct ta_event ev;
		int rc;

		if (got < 0) {
			fprintf(stderr, "encbench: %s: chunk %llu at offset %llu: %s\n", path,
				(unsigned long long)c.index, (unsigned long long)c.offset,
				ta_strerror(got));
			exit(1);
		}
		if (c.h.type != TA_CHUNK_EVENTS)
			continue;
		if (ta_decoder_begin(&d, c.payload, c.len) < 0)
			die("bad EVENTS payload");
		if (!have_tid) {
			tid = d.tid;
			have_tid = 1;
		}
		if (d.tid != tid)
			continue;
		while ((rc = ta_decoder_next(&d, &ev)) > 0) {
			if (ev.kind == TA_EV_ENTER)
				push(out, ev.ticks, ev.addr);
			else if (ev.kind == TA_EV_EXIT)
				push(out, ev.ticks, ev.addr | TA_RAW_EXIT);
			else if (ev.ext == TA_EXT_LOST)
				push(out, ev.ticks, ev.value | TA_RAW_LOST);
			/* Other EXT events (library calls): none in fib. */
		}
		if (rc < 0)
			die("bad event");
	}
	ta_decoder_free(&d);
	ta_dumpfile_close(df);
}

/* The thread's CPU time: the machine is shared, and a round preempted by
 * another job's process must not count the time it waited.  It is a
 * system call (~0.5 us on a VM): read per chunk and per round only, the
 * encoding's time being the round's less the chunks'.  -x reads the
 * monotonic clock around each block instead (the waits for the producer
 * spin, and would count as CPU time). */
static clockid_t clock_id = CLOCK_THREAD_CPUTIME_ID;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(clock_id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

struct run {
	uint64_t enc_ns, lz4_ns, crc_ns, write_ns;
	uint64_t untimed_ns; /* -v's checks, taken out of the round's time */
	uint64_t payload_bytes, stored_bytes, chunks;
	uint32_t sum; /* CRC-32C of every encoded payload, in order */
};

static uint8_t *zbuf;
static size_t zcap;

/* flusher.c's flush_chunk and dump.c's ta_dump_chunk_z (the write with -w). */
static void flush(struct ta_encoder *e, struct run *r, int accel)
{
	const uint8_t *p;
	size_t len;
	uint8_t hdr[TA_CHUNK_HEADER_SIZE];
	struct ta_chunk_header h = {0};
	const void *stored;
	size_t stored_len;
	uint64_t t0, t1, t2;
	int n;

	if (!e->open)
		return;
	ta_encoder_end(e, &p, &len);
	r->sum = ta_crc32c(r->sum, p, len);
	t0 = now_ns();
	stored = p;
	stored_len = len;
	if ((size_t)LZ4_compressBound((int)len) > zcap) {
		zcap = (size_t)LZ4_compressBound((int)len);
		zbuf = realloc(zbuf, zcap);
		if (!zbuf)
			die("out of memory");
	}
	if (store_raw)
		n = 0;
	else
		n = LZ4_compress_fast((const char *)p, (char *)zbuf, (int)len, (int)zcap, accel);
	if (n > 0 && (size_t)n < len) {
		stored = zbuf;
		stored_len = (size_t)n;
		h.flags = TA_CHUNK_F_LZ4;
	}
	t1 = now_ns();
	h.type = TA_CHUNK_EVENTS;
	h.stored_size = (uint32_t)stored_len;
	h.raw_size = (uint32_t)len;
	ta_chunk_header_encode(hdr, &h, stored);
	t2 = now_ns();
	r->lz4_ns += t1 - t0;
	r->crc_ns += t2 - t1;
	if (out_fd >= 0) {
		/* As dump.c's write_chunk: header and payload in one writev. */
		struct iovec iov[2] = {{hdr, sizeof(hdr)}, {(void *)stored, stored_len}};

		if (writev(out_fd, iov, 2) != (ssize_t)(sizeof(hdr) + stored_len))
			die("cannot write the chunk");
		r->write_ns += now_ns() - t2;
	}
	if (verify && h.flags) {
		/* liblz4 must read it back exactly (-v, outside the timing). */
		static uint8_t *back;
		static size_t back_cap;
		uint64_t t3 = now_ns();

		if (len > back_cap && !(back = realloc(back, back_cap = len)))
			die("out of memory");
		if (LZ4_decompress_safe((const char *)zbuf, (char *)back, n, (int)len) !=
			(int)len ||
		    memcmp(back, p, len))
			die("the LZ4 block does not decompress to the payload");
		r->untimed_ns += now_ns() - t3;
	}
	r->payload_bytes += len;
	r->stored_bytes += TA_CHUNK_HEADER_SIZE + stored_len;
	r->chunks++;
}

/* flusher.c's encode(): n records of a block, in chunks cut at chunk. */
static void encode(struct ta_encoder *e, const struct ta_raw *ev, size_t n, size_t chunk, int accel,
		   struct run *r)
{
	size_t i = 0;

	while (i < n) {
		uint64_t t0 = cross ? now_ns() : 0;
		size_t k = ta_encoder_raw(e, ev + i, n - i, chunk);

		if (cross)
			r->enc_ns += now_ns() - t0;
		if (!k)
			die("encoder out of memory");
		i += k;
		if (e->out.len >= chunk)
			flush(e, r, accel);
	}
}

static void one_round(const struct raws *raw, size_t block, size_t chunk, int accel, struct run *r)
{
	struct ta_encoder e;

	uint64_t t0;

	memset(r, 0, sizeof(*r));
	t0 = now_ns();
	ta_encoder_init(&e, 1);
	ta_mindur_init(&md, min_ticks);
	md_out = 0;
	for (size_t b = 0; b < raw->n; b += block) {
		size_t to = b + block < raw->n ? b + block : raw->n;

		if (min_ticks) {
			if (ta_mindur_filter(&md, raw->ev + b, to - b) < 0)
				die("filter out of memory");
			md_out += md.out_len;
			encode(&e, md.out, md.out_len, chunk, accel, r);
			continue;
		}
		encode(&e, raw->ev + b, to - b, chunk, accel, r);
	}
	if (min_ticks) {
		md.out_len = 0;
		(void)ta_mindur_flush(&md);
		(void)ta_mindur_counts(&md);
		md_out += md.out_len;
		encode(&e, md.out, md.out_len, chunk, accel, r);
	}
	ta_mindur_free(&md);
	flush(&e, r, accel);
	ta_encoder_free(&e);
	r->enc_ns = now_ns() - t0 - r->lz4_ns - r->crc_ns - r->write_ns - r->untimed_ns;
}

/*
 * -x: the records come from another CPU, as in the agent: a producer
 * thread pinned to CPU 1 writes them record by record into a ring of
 * NB blocks and publishes each block (a release store of its head); this
 * thread, pinned to CPU 0, encodes each block once published, so its
 * loads find the lines in the other core's cache as the flusher does.
 * Only the encoding, LZ4 and CRC are timed, not the waits.
 */
enum { NB = 8 };

struct xring {
	const struct raws *raw;
	size_t block;
	struct ta_raw *blk[NB];
	uint32_t head[NB]; /* records published in the block (atomic) */
	uint32_t busy[NB]; /* 1 while the producer may write it (atomic) */
};

static void pin(int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	(void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void *producer(void *arg)
{
	struct xring *x = arg;
	const struct raws *raw = x->raw;

	pin(1);
	for (size_t b = 0, k = 0; b < raw->n; b += x->block, k = (k + 1) % NB) {
		size_t m = raw->n - b < x->block ? raw->n - b : x->block;
		volatile struct ta_raw *dst = x->blk[k];

		/* Acquire: pairs with the consumer's release when done. */
		while (__atomic_load_n(&x->busy[k], __ATOMIC_ACQUIRE))
			;
		__atomic_store_n(&x->busy[k], 1, __ATOMIC_RELAXED);
		for (size_t i = 0; i < m; i++) {
			dst[i].ticks = raw->ev[b + i].ticks;
			dst[i].addr = raw->ev[b + i].addr;
		}
		/* Release: the records before the head. */
		__atomic_store_n(&x->head[k], (uint32_t)m, __ATOMIC_RELEASE);
	}
	return NULL;
}

static void one_round_x(const struct raws *raw, size_t block, size_t chunk, int accel,
			struct run *r)
{
	static struct xring x;
	struct ta_encoder e;
	pthread_t th;

	memset(r, 0, sizeof(*r));
	x.raw = raw;
	x.block = block;
	for (int k = 0; k < NB; k++) {
		if (!x.blk[k] && !(x.blk[k] = aligned_alloc(64, block * sizeof(struct ta_raw))))
			die("out of memory");
		x.head[k] = 0;
		x.busy[k] = 0;
	}
	pin(0);
	if (pthread_create(&th, NULL, producer, &x))
		die("cannot start the producer thread");
	ta_encoder_init(&e, 1);
	for (size_t b = 0, k = 0; b < raw->n; b += block, k = (k + 1) % NB) {
		size_t to;
		uint32_t h;

		/* Acquire: pairs with the producer's release of the head. */
		while (!(h = __atomic_load_n(&x.head[k], __ATOMIC_ACQUIRE)))
			;
		to = h;
		encode(&e, x.blk[k], to, chunk, accel, r);
		__atomic_store_n(&x.head[k], 0, __ATOMIC_RELAXED);
		/* Release: done reading the block. */
		__atomic_store_n(&x.busy[k], 0, __ATOMIC_RELEASE);
	}
	flush(&e, r, accel);
	ta_encoder_free(&e);
	pthread_join(th, NULL);
}

#define USAGE                                                                                      \
	"usage: encbench DUMP [-r ROUNDS] [-b BLOCK] [-c CHUNK] [-a ACCEL] [-x] [-m TICKS] "       \
	"[-z lz4|raw] [-v] [-w FILE]"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	size_t block = 4092, chunk = 1u << 20; /* a 64 KiB block; flusher.c's CHUNK_TARGET */
	int rounds = 5, accel = 1;
	const char *path = NULL, *out_path = NULL;
	struct raws raw = {0};
	struct run best = {0}, r;
	uint64_t best_ns = UINT64_MAX;
	struct run *all;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-r") && i + 1 < argc)
			rounds = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-b") && i + 1 < argc)
			block = strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "-c") && i + 1 < argc)
			chunk = strtoul(argv[++i], NULL, 0);
		else if (!strcmp(argv[i], "-a") && i + 1 < argc)
			accel = atoi(argv[++i]);
		else if (!strcmp(argv[i], "-x"))
			cross = 1;
		else if (!strcmp(argv[i], "-z") && i + 1 < argc && !strcmp(argv[i + 1], "raw"))
			store_raw = 1, i++;
		else if (!strcmp(argv[i], "-z") && i + 1 < argc && !strcmp(argv[i + 1], "lz4"))
			store_raw = 0, i++;
		else if (!strcmp(argv[i], "-w") && i + 1 < argc)
			out_path = argv[++i];
		else if (!strcmp(argv[i], "-v"))
			verify = 1;
		else if (!strcmp(argv[i], "-m") && i + 1 < argc)
			min_ticks = strtoull(argv[++i], NULL, 0);
		else if (argv[i][0] != '-' && !path)
			path = argv[i];
		else
			die(USAGE);
	}
	if (cross && min_ticks)
		die("-m and -x: one or the other");
	if (!path || rounds < 1 || !block || !chunk)
		die(USAGE);
	if (cross)
		clock_id = CLOCK_MONOTONIC;
	if (out_path)
		out_fd = open(out_path, O_WRONLY | O_CREAT | O_APPEND, 0600);
	if (out_path && out_fd < 0)
		die("cannot open the -w file");
	load(path, &raw);
	if (!raw.n)
		die("no events in the dump");
	all = calloc((size_t)rounds, sizeof(*all));
	if (!all)
		die("out of memory");
	for (int k = 0; k < rounds; k++) {
		uint64_t total;

		/* Each round writes its file anew, as a run would. */
		if (out_fd >= 0 && ftruncate(out_fd, 0) < 0)
			die("cannot truncate the -w file");
		if (cross)
			one_round_x(&raw, block, chunk, accel, &r);
		else
			one_round(&raw, block, chunk, accel, &r);
		all[k] = r;
		total = r.enc_ns + r.lz4_ns + r.crc_ns + r.write_ns;
		if (total < best_ns) {
			best_ns = total;
			best = r;
		}
	}
	printf("events %zu chunks %llu payload %.3f B/event stored %.3f B/event sum %08x\n", raw.n,
	       (unsigned long long)best.chunks, (double)best.payload_bytes / (double)raw.n,
	       (double)best.stored_bytes / (double)raw.n, best.sum);
	if (min_ticks)
		printf("min-duration %llu ticks: %zu of %zu records written\n",
		       (unsigned long long)min_ticks, md_out, raw.n);
	printf("best of %d: %.2f ns/event (encode %.2f, lz4 %.2f, crc %.2f, write %.2f)\n", rounds,
	       (double)best_ns / (double)raw.n, (double)best.enc_ns / (double)raw.n,
	       (double)best.lz4_ns / (double)raw.n, (double)best.crc_ns / (double)raw.n,
	       (double)best.write_ns / (double)raw.n);
	{
		uint64_t med[4];
		uint64_t *v = calloc((size_t)rounds, sizeof(*v));

		if (!v)
			die("out of memory");
		for (int f = 0; f < 4; f++) {
			for (int k = 0; k < rounds; k++)
				v[k] = f == 0	? all[k].enc_ns
				       : f == 1 ? all[k].lz4_ns
				       : f == 2 ? all[k].crc_ns
						: all[k].write_ns;
			qsort(v, (size_t)rounds, sizeof(*v), cmp_u64);
			med[f] = v[rounds / 2];
		}
		printf(
		    "median of %d: %.2f ns/event (encode %.2f, lz4 %.2f, crc %.2f, write %.2f)\n",
		    rounds, (double)(med[0] + med[1] + med[2] + med[3]) / (double)raw.n,
		    (double)med[0] / (double)raw.n, (double)med[1] / (double)raw.n,
		    (double)med[2] / (double)raw.n, (double)med[3] / (double)raw.n);
		free(v);
	}
	free(all);
	free(raw.ev);
	free(zbuf);
	return 0;
}
