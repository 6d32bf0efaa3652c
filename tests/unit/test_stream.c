/* SPDX-License-Identifier: MIT */
/*
 * test_stream.c - the dump as a byte stream (analyzer/lib/stream.[ch]): whole
 * chunks out of pieces of every size, the same chunks the file reader
 * finds, errors at the end of the last good chunk, bounded payloads, and a
 * seeded fuzz.
 */
#include <check.h>

#include "../check_run.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dumpgen.h"
#include "format.h"
#include "stream.h"
#include "testutil.h"

/* A dump of a few chunks of every size class, LZ4 on or off. */
static void make_dump(struct dumpgen *g, int lz4)
{
	static uint8_t big[300000];
	struct pb b = {0};

	dg_init(g, 4242);
	g->lz4 = lz4;
	dg_process(g, 1000, TA_CLOCK_MONOTONIC, 1000000000, "/bin/prog");
	dg_module(g, "/bin/prog", 0x400000, 0, 0x400000, 0x500000);
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)(i * 7 + (i >> 9));
	dg_chunk(g, TA_CHUNK_THREAD_NAME, big, sizeof(big));
	dg_chunk(g, TA_CHUNK_THREAD_NAME, "", 0);
	pb_u(&b, 0);
	pb_u(&b, 1);
	dg_chunk(g, TA_CHUNK_CLOCK, b.p, b.len);
	pb_free(&b);
}

struct seen {
	size_t chunks, headers, kept, unkept;
	uint64_t offsets[16];
	uint16_t types[16];
};

/* Feeds the dump in pieces of the sizes step() gives; returns the error. */
static int feed_all(const uint8_t *p, size_t n, size_t keep_max, size_t (*step)(size_t),
		    struct seen *sn, uint64_t *err_off)
{
	struct ta_stream s;
	struct ta_stream_ev ev;
	size_t at = 0, k = 0;
	int err = 0;

	memset(sn, 0, sizeof(*sn));
	ta_stream_init(&s, keep_max);
	while (at < n && !err) {
		size_t piece = step(k++), used = 0;
		if (piece > n - at)
			piece = n - at;
		do {
			size_t u = ta_stream_feed(&s, p + at + used, piece - used, &ev);
			used += u;
			if (ev.what == TA_STREAM_HEADER)
				sn->headers++;
			if (ev.what == TA_STREAM_CHUNK) {
				if (sn->chunks < 16) {
					sn->offsets[sn->chunks] = ev.offset;
					sn->types[sn->chunks] = ev.chunk.type;
				}
				sn->chunks++;
				if (ev.payload)
					sn->kept++;
				else
					sn->unkept++;
			}
			if (ev.what == TA_STREAM_ERROR) {
				err = ev.err;
				*err_off = ev.offset;
				break;
			}
		} while (used < piece || ev.what != TA_STREAM_MORE);
		at += piece;
	}
	REQUIRE(err || ta_stream_at_boundary(&s), "ends between chunks");
	ta_stream_free(&s);
	return err;
}

static size_t step_one(size_t k)
{
	(void)k;
	return 1;
}
static size_t step_odd(size_t k)
{
	return 1 + (k * 7919) % 4099;
}
static size_t step_all(size_t k)
{
	(void)k;
	return SIZE_MAX;
}

START_TEST(stream_pieces)
{
	size_t (*steps[])(size_t) = {step_one, step_odd, step_all};
	struct dumpgen g;
	struct seen sn;
	uint64_t off;

	make_dump(&g, _i);
	for (size_t i = 0; i < 3; i++) {
		ck_assert_int_eq(feed_all(g.buf, g.len, 1 << 20, steps[i], &sn, &off), 0);
		ck_assert_uint_eq(sn.headers, 1);
		ck_assert_uint_eq(sn.chunks, 5);
		ck_assert_uint_eq(sn.kept, 5);
		ck_assert_uint_eq(sn.offsets[0], TA_FILE_HEADER_SIZE);
		ck_assert_uint_eq(sn.types[0], TA_CHUNK_PROCESS);
		ck_assert_uint_eq(sn.types[1], TA_CHUNK_MODULE);
		ck_assert_uint_eq(sn.types[4], TA_CHUNK_CLOCK);
	}
	dg_free(&g);
}
END_TEST

/* A chunk over keep_max is verified but not kept. */
START_TEST(stream_keep_max)
{
	struct dumpgen g;
	struct seen sn;
	uint64_t off;

	make_dump(&g, 0);
	ck_assert_int_eq(feed_all(g.buf, g.len, 4096, step_odd, &sn, &off), 0);
	ck_assert_uint_eq(sn.chunks, 5);
	ck_assert_uint_eq(sn.unkept, 1);
	dg_free(&g);
}
END_TEST

/* A flipped payload byte: the checksum error points at the chunk's start,
 * the end of the last good one, which is what a collector cuts back to. */
START_TEST(stream_corrupt)
{
	struct dumpgen g;
	struct seen sn;
	uint64_t off = 0;
	size_t third;

	make_dump(&g, 0);
	ck_assert_int_eq(feed_all(g.buf, g.len, 4096, step_all, &sn, &off), 0);
	third = (size_t)sn.offsets[2];
	g.buf[third + TA_CHUNK_HEADER_SIZE + 1000] ^= 0x40;
	ck_assert_int_eq(feed_all(g.buf, g.len, 4096, step_odd, &sn, &off), -TA_E_CHECKSUM);
	ck_assert_uint_eq(off, third);
	ck_assert_uint_eq(sn.chunks, 2);
	/* Garbage instead of a chunk header. */
	memset(g.buf + third, 'x', TA_CHUNK_HEADER_SIZE);
	ck_assert_int_eq(feed_all(g.buf, g.len, 4096, step_one, &sn, &off), -TA_E_BADMAGIC);
	ck_assert_uint_eq(off, third);
	/* Not a dump at all. */
	memcpy(g.buf, "GET / HTTP/1.1\r\n", 16);
	ck_assert_int_eq(feed_all(g.buf, g.len, 4096, step_odd, &sn, &off), -TA_E_BADMAGIC);
	ck_assert_uint_eq(off, 0);
	ck_assert_uint_eq(sn.headers, 0);
	dg_free(&g);
}
END_TEST

/* Seeded fuzz: random bytes, and a real dump with random bytes changed,
 * in random pieces; never more than keep_max kept, never a crash, and the
 * chunks reported before an error are those of the unchanged prefix. */
START_TEST(stream_fuzz)
{
	struct dumpgen g;
	uint64_t seed = 0x5eed5eedull;
	uint8_t *m;

	make_dump(&g, 1);
	m = malloc(g.len);
	ck_assert_ptr_nonnull(m);
	for (int round = 0; round < 3000; round++) {
		struct ta_stream s;
		struct ta_stream_ev ev;
		size_t at = 0, n = g.len;

		memcpy(m, g.buf, g.len);
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		if (round % 3 == 0) {
			for (size_t i = 0; i < 4096 && i < n; i++)
				m[i] = (uint8_t)((seed >> (i % 56)) ^ i);
			n = 4096;
		} else {
			for (int k = 0; k < 1 + round % 5; k++) {
				seed = seed * 6364136223846793005ull + 1442695040888963407ull;
				m[(seed >> 17) % n] = (uint8_t)(seed >> 40);
			}
		}
		ta_stream_init(&s, 1 << 16);
		while (at < n) {
			size_t piece = 1 + (size_t)((seed >> (at % 40)) % 9000);
			size_t u;
			if (piece > n - at)
				piece = n - at;
			u = ta_stream_feed(&s, m + at, piece, &ev);
			ck_assert_uint_le(u, piece);
			if (ev.what == TA_STREAM_ERROR)
				break;
			if (ev.what == TA_STREAM_CHUNK && ev.payload)
				ck_assert_uint_le(ev.chunk.stored_size, 1 << 16);
			at += u;
		}
		ck_assert_uint_le(s.good, at);
		ta_stream_free(&s);
	}
	free(m);
	dg_free(&g);
}
END_TEST

static Suite *stream_suite(void)
{
	Suite *s = suite_create("stream");
	TCase *tc = tcase_create("stream");

	tcase_add_loop_test(tc, stream_pieces, 0, 2);
	tcase_add_test(tc, stream_keep_max);
	tcase_add_test(tc, stream_corrupt);
	tcase_add_test(tc, stream_fuzz);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ta_check_run(stream_suite());
}
