/* SPDX-License-Identifier: MIT */
/*
 * test_dumpfile.c - the chunk reader (analyzer/lib/dumpfile.c) on synthetic
 * dumps: whole, truncated, damaged in the middle, bad file headers, sizes
 * out of range, short reads from a pipe, and a seeded fuzz.
 */
#include <check.h>

#include "../check_run.h"
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "dumpfile.h"
#include "dumpgen.h"
#include "session.h"
#include "testutil.h"

/* Three chunks with distinct payloads; offsets returned in off[]. */
static void three_chunks(struct dumpgen *g, size_t off[3], int lz4)
{
	static const char a[] = "first chunk payload", b[] = "second, in the middle",
			  c[] = "third and last";

	dg_init(g, 321);
	g->lz4 = lz4;
	off[0] = dg_chunk(g, 100, a, sizeof(a));
	off[1] = dg_chunk(g, 101, b, sizeof(b));
	off[2] = dg_chunk(g, 102, c, sizeof(c));
}

static struct ta_dumpfile *open_bytes(const void *p, size_t len)
{
	char path[64];
	struct ta_dumpfile *d;

	dg_write_bytes_tmp(p, len, path);
	ck_assert_int_eq(ta_dumpfile_open(path, &d), 0);
	unlink(path);
	return d;
}

static int open_bytes_rc(const void *p, size_t len)
{
	char path[64];
	struct ta_dumpfile *d;
	int rc;

	dg_write_bytes_tmp(p, len, path);
	rc = ta_dumpfile_open(path, &d);
	unlink(path);
	if (rc == 0)
		ta_dumpfile_close(d);
	else
		ck_assert_ptr_null(d);
	return rc;
}

static void expect_chunk(struct ta_dumpfile *d, unsigned type, uint64_t index, uint64_t offset)
{
	struct ta_chunk c;

	ck_assert_int_eq(ta_dumpfile_next(d, &c), 1);
	ck_assert_uint_eq(c.h.type, type);
	ck_assert_uint_eq(c.index, index);
	ck_assert_uint_eq(c.offset, offset);
}

static void expect_error(struct ta_dumpfile *d, int code, uint64_t index, uint64_t offset,
			 uint64_t skipped)
{
	struct ta_chunk c;

	ck_assert_int_eq(ta_dumpfile_next(d, &c), code);
	ck_assert_uint_eq(c.index, index);
	ck_assert_uint_eq(c.offset, offset);
	ck_assert_uint_eq(c.skipped, skipped);
}

static void expect_end(struct ta_dumpfile *d)
{
	struct ta_chunk c;

	ck_assert_int_eq(ta_dumpfile_next(d, &c), 0);
	ck_assert_int_eq(ta_dumpfile_next(d, &c), 0);
}

START_TEST(whole_dump)
{
	struct dumpgen g;
	struct ta_dumpfile *d;
	struct ta_chunk c;
	size_t off[3];

	three_chunks(&g, off, _i);
	ck_assert_uint_eq(off[0], TA_FILE_HEADER_SIZE);
	d = open_bytes(g.buf, g.len);
	ck_assert_uint_eq(ta_dumpfile_header(d)->pid, 321);
	ck_assert_int_eq(ta_dumpfile_next(d, &c), 1);
	ck_assert_uint_eq(c.h.type, 100);
	ck_assert_uint_eq(c.h.seq, 0);
	ck_assert_uint_eq(c.h.pid, 321);
	ck_assert_uint_eq(c.index, 0);
	ck_assert_uint_eq(c.offset, off[0]);
	ck_assert_uint_eq(c.len, sizeof("first chunk payload"));
	ck_assert_str_eq((const char *)c.payload, "first chunk payload");
	ck_assert_int_eq(ta_dumpfile_next(d, &c), 1);
	ck_assert_str_eq((const char *)c.payload, "second, in the middle");
	ck_assert_uint_eq(c.h.seq, 1);
	ck_assert_int_eq(ta_dumpfile_next(d, &c), 1);
	ck_assert_str_eq((const char *)c.payload, "third and last");
	ck_assert_uint_eq(c.index, 2);
	ck_assert_uint_eq(c.offset, off[2]);
	expect_end(d);
	ck_assert_uint_eq(ta_dumpfile_offset(d), g.len);
	ta_dumpfile_close(d);
	dg_free(&g);
}
END_TEST

START_TEST(header_only)
{
	struct dumpgen g;
	struct ta_dumpfile *d;

	dg_init(&g, 1);
	d = open_bytes(g.buf, g.len);
	expect_end(d);
	ta_dumpfile_close(d);
	dg_free(&g);
}
END_TEST

START_TEST(big_chunks)
{
	/* Chunks larger than the read buffer, up to the maximum size. */
	struct dumpgen g;
	struct ta_dumpfile *d;
	struct ta_chunk c;
	size_t sizes[] = {3u << 20, TA_CHUNK_MAX_PAYLOAD, 10};
	uint8_t *p = malloc(TA_CHUNK_MAX_PAYLOAD);

	ck_assert_ptr_nonnull(p);
	for (size_t i = 0; i < TA_CHUNK_MAX_PAYLOAD; i++)
		p[i] = (uint8_t)(i * 7 + (i >> 12));
	dg_init(&g, 2);
	g.lz4 = _i;
	for (int i = 0; i < 3; i++)
		dg_chunk(&g, TA_CHUNK_CLOCK, p, sizes[i]);
	d = open_bytes(g.buf, g.len);
	for (int i = 0; i < 3; i++) {
		ck_assert_int_eq(ta_dumpfile_next(d, &c), 1);
		ck_assert_uint_eq(c.len, sizes[i]);
		ck_assert_int_eq(memcmp(c.payload, p, sizes[i]), 0);
	}
	expect_end(d);
	ta_dumpfile_close(d);
	dg_free(&g);
	free(p);
}
END_TEST

START_TEST(truncated_last_chunk)
{
	struct dumpgen g;
	size_t off[3];

	three_chunks(&g, off, 0);
	/* Cut anywhere inside the last chunk: in its header or its payload. */
	for (size_t cut = off[2] + 1; cut < g.len; cut++) {
		struct ta_dumpfile *d = open_bytes(g.buf, cut);

		expect_chunk(d, 100, 0, off[0]);
		expect_chunk(d, 101, 1, off[1]);
		expect_error(d, -TA_E_TRUNCATED, 2, off[2], cut - off[2]);
		expect_end(d);
		ta_dumpfile_close(d);
	}
	dg_free(&g);
}
END_TEST

START_TEST(truncated_middle_chunk)
{
	struct dumpgen g;
	size_t off[3];
	struct ta_dumpfile *d;

	three_chunks(&g, off, 1);
	d = open_bytes(g.buf, off[1] + 40);
	expect_chunk(d, 100, 0, off[0]);
	expect_error(d, -TA_E_TRUNCATED, 1, off[1], 40);
	expect_end(d);
	ta_dumpfile_close(d);
	dg_free(&g);
}
END_TEST

START_TEST(crc_damage_resync)
{
	struct dumpgen g;
	size_t off[3];

	three_chunks(&g, off, _i);
	/* Any byte of the middle chunk (header or payload) except the
	 * magic: a checksum error, then the reader finds the third chunk. */
	for (size_t at = off[1] + 4; at < off[2]; at++) {
		struct ta_dumpfile *d;
		struct ta_chunk c;
		int rc;

		g.buf[at] ^= 0x20;
		d = open_bytes(g.buf, g.len);
		expect_chunk(d, 100, 0, off[0]);
		rc = ta_dumpfile_next(d, &c);
		/* Bytes 4..11 hold type, flags and sizes: a flag or size
		 * may be refused before the CRC is looked at. */
		if (at - off[1] < 16)
			ck_assert(rc == -TA_E_CHECKSUM || rc == -TA_E_HEADER || rc == -TA_E_TOOBIG);
		else
			ck_assert_int_eq(rc, -TA_E_CHECKSUM);
		ck_assert_uint_eq(c.index, 1);
		ck_assert_uint_eq(c.offset, off[1]);
		ck_assert_uint_eq(c.skipped, off[2] - off[1]);
		expect_chunk(d, 102, 2, off[2]);
		expect_end(d);
		ta_dumpfile_close(d);
		g.buf[at] ^= 0x20;
	}
	dg_free(&g);
}
END_TEST

START_TEST(bad_chunk_magic_resync)
{
	struct dumpgen g;
	size_t off[3];
	struct ta_dumpfile *d;

	three_chunks(&g, off, 0);
	g.buf[off[1]] = 'X';
	d = open_bytes(g.buf, g.len);
	expect_chunk(d, 100, 0, off[0]);
	expect_error(d, -TA_E_BADMAGIC, 1, off[1], off[2] - off[1]);
	expect_chunk(d, 102, 2, off[2]);
	expect_end(d);
	ta_dumpfile_close(d);
	dg_free(&g);
}
END_TEST

START_TEST(garbage_between_chunks)
{
	/* Garbage, including a fake chunk magic with a header that does not
	 * check out, between two good chunks. */
	struct dumpgen g;
	struct ta_dumpfile *d;
	size_t a, garbage, b;
	uint8_t junk[100];

	memset(junk, 0x5a, sizeof(junk));
	memcpy(junk + 10, "TAch", 4);
	memcpy(junk + 97, "TAc", 3); /* a magic cut by the next chunk */
	dg_init(&g, 3);
	a = dg_chunk(&g, 100, "a", 1);
	garbage = g.len;
	dg_raw(&g, junk, sizeof(junk));
	b = dg_chunk(&g, 101, "b", 1);
	d = open_bytes(g.buf, g.len);
	expect_chunk(d, 100, 0, a);
	expect_error(d, -TA_E_BADMAGIC, 1, garbage, b - garbage);
	expect_chunk(d, 101, 2, b);
	expect_end(d);
	ta_dumpfile_close(d);
	dg_free(&g);
}
END_TEST

START_TEST(garbage_at_end)
{
	struct dumpgen g;
	struct ta_dumpfile *d;
	size_t a, garbage;
	uint8_t junk[200];

	memset(junk, 0, sizeof(junk));
	dg_init(&g, 3);
	a = dg_chunk(&g, 100, "a", 1);
	garbage = g.len;
	dg_raw(&g, junk, sizeof(junk));
	d = open_bytes(g.buf, g.len);
	expect_chunk(d, 100, 0, a);
	expect_error(d, -TA_E_BADMAGIC, 1, garbage, sizeof(junk));
	expect_end(d);
	ta_dumpfile_close(d);
	dg_free(&g);
}
END_TEST

START_TEST(oversized_sizes)
{
	struct dumpgen g;
	size_t off[3];
	struct ta_dumpfile *d;
	uint8_t saved[8];

	three_chunks(&g, off, 0);
	memcpy(saved, g.buf + off[1] + 8, 8);
	/* Beyond the format's maximum: refused from the header alone. */
	ta_put_le32(g.buf + off[1] + 8, TA_CHUNK_MAX_PAYLOAD + 1);
	ta_put_le32(g.buf + off[1] + 12, TA_CHUNK_MAX_PAYLOAD + 1);
	d = open_bytes(g.buf, g.len);
	expect_chunk(d, 100, 0, off[0]);
	expect_error(d, -TA_E_TOOBIG, 1, off[1], off[2] - off[1]);
	expect_chunk(d, 102, 2, off[2]);
	expect_end(d);
	ta_dumpfile_close(d);
	/* Within the maximum but past the end of the file, with a good chunk
	 * after it: the size was wrong, the file is not cut. */
	ta_put_le32(g.buf + off[1] + 8, 1u << 20);
	ta_put_le32(g.buf + off[1] + 12, 1u << 20);
	d = open_bytes(g.buf, g.len);
	expect_chunk(d, 100, 0, off[0]);
	expect_error(d, -TA_E_TOOBIG, 1, off[1], off[2] - off[1]);
	expect_chunk(d, 102, 2, off[2]);
	expect_end(d);
	ta_dumpfile_close(d);
	/* The same on the last chunk: that is a cut file. */
	memcpy(g.buf + off[1] + 8, saved, 8);
	ta_put_le32(g.buf + off[2] + 8, 1u << 20);
	ta_put_le32(g.buf + off[2] + 12, 1u << 20);
	d = open_bytes(g.buf, g.len);
	expect_chunk(d, 100, 0, off[0]);
	expect_chunk(d, 101, 1, off[1]);
	expect_error(d, -TA_E_TRUNCATED, 2, off[2], g.len - off[2]);
	expect_end(d);
	ta_dumpfile_close(d);
	dg_free(&g);
}
END_TEST

START_TEST(bad_lz4_payload)
{
	/* A chunk whose CRC is right but whose LZ4 block does not give the
	 * raw size it claims: skipped alone, the next one is read. */
	struct dumpgen g;
	struct ta_chunk_header h = {.type = 100, .flags = TA_CHUNK_F_LZ4, .pid = 3, .seq = 1};
	static const uint8_t block[] = {0x50, 'h', 'e', 'l', 'l', 'o'}; /* "hello" */
	uint8_t hdr[TA_CHUNK_HEADER_SIZE];
	struct ta_dumpfile *d;
	struct ta_chunk c;
	size_t a, bad, b;

	dg_init(&g, 3);
	a = dg_chunk(&g, 100, "a", 1);
	/* The good form first: it decompresses to 5 bytes. */
	h.stored_size = sizeof(block);
	h.raw_size = 5;
	ta_chunk_header_encode(hdr, &h, block);
	dg_raw(&g, hdr, sizeof(hdr));
	dg_raw(&g, block, sizeof(block));
	bad = g.len;
	h.raw_size = 6;
	ta_chunk_header_encode(hdr, &h, block);
	dg_raw(&g, hdr, sizeof(hdr));
	dg_raw(&g, block, sizeof(block));
	h.raw_size = 4;
	ta_chunk_header_encode(hdr, &h, block);
	dg_raw(&g, hdr, sizeof(hdr));
	dg_raw(&g, block, sizeof(block));
	b = dg_chunk(&g, 101, "b", 1);
	d = open_bytes(g.buf, g.len);
	expect_chunk(d, 100, 0, a);
	ck_assert_int_eq(ta_dumpfile_next(d, &c), 1);
	ck_assert_uint_eq(c.len, 5);
	ck_assert_int_eq(memcmp(c.payload, "hello", 5), 0);
	expect_error(d, -TA_E_DECOMPRESS, 2, bad, TA_CHUNK_HEADER_SIZE + sizeof(block));
	expect_error(d, -TA_E_DECOMPRESS, 3, bad + TA_CHUNK_HEADER_SIZE + sizeof(block),
		     TA_CHUNK_HEADER_SIZE + sizeof(block));
	expect_chunk(d, 101, 4, b);
	expect_end(d);
	ta_dumpfile_close(d);
	dg_free(&g);
}
END_TEST

START_TEST(file_header_errors)
{
	struct dumpgen g;
	uint8_t b[TA_FILE_HEADER_SIZE];

	dg_init(&g, 9);
	dg_chunk(&g, 100, "a", 1);
	memcpy(b, g.buf, sizeof(b));
	/* Not a dump at all. */
	ck_assert_int_eq(open_bytes_rc("#!/bin/sh\necho this is not a dump at all\n", 40),
			 -TA_E_BADMAGIC);
	ck_assert_int_eq(open_bytes_rc("ELF", 3), -TA_E_BADMAGIC);
	/* Empty, or a header cut short. */
	ck_assert_int_eq(open_bytes_rc("", 0), -TA_E_TRUNCATED);
	ck_assert_int_eq(open_bytes_rc(g.buf, 5), -TA_E_TRUNCATED);
	ck_assert_int_eq(open_bytes_rc(g.buf, TA_FILE_HEADER_SIZE - 1), -TA_E_TRUNCATED);
	/* Another major version. */
	ta_put_le16(g.buf + 8, 2);
	ta_put_le32(g.buf + 28, ta_crc32c(0, g.buf, 28));
	ck_assert_int_eq(open_bytes_rc(g.buf, g.len), -TA_E_VERSION);
	/* A damaged header. */
	memcpy(g.buf, b, sizeof(b));
	g.buf[17] ^= 1;
	ck_assert_int_eq(open_bytes_rc(g.buf, g.len), -TA_E_CHECKSUM);
	memcpy(g.buf, b, sizeof(b));
	ck_assert_int_eq(open_bytes_rc(g.buf, g.len), 0);
	dg_free(&g);
}
END_TEST

START_TEST(open_errors)
{
	struct ta_dumpfile *d = (struct ta_dumpfile *)1;

	errno = 0;
	ck_assert_int_eq(ta_dumpfile_open("/nonexistent/dir/x.trace", &d), -TA_E_IO);
	ck_assert_int_eq(errno, ENOENT);
	ck_assert_ptr_null(d);
	/* A directory opens, but reading it fails. */
	ck_assert_int_eq(ta_dumpfile_open("/", &d), -TA_E_IO);
	ck_assert_int_eq(errno, EISDIR);
}
END_TEST

START_TEST(short_reads_from_pipe)
{
	/* A writer that trickles the dump in odd-sized pieces: every read
	 * returns less than asked. */
	struct dumpgen g;
	size_t off[3];
	struct ta_dumpfile *d;
	int fds[2];
	pid_t pid;
	int status;

	three_chunks(&g, off, 1);
	g.buf[off[1] + 40] ^= 1; /* and damage the middle, to resync too */
	ck_assert_int_eq(pipe(fds), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(fds[0]);
		for (size_t i = 0; i < g.len; i += 7) {
			size_t n = g.len - i < 7 ? g.len - i : 7;

			if (write(fds[1], g.buf + i, n) != (ssize_t)n)
				_exit(1);
			usleep(100);
		}
		_exit(0);
	}
	close(fds[1]);
	ck_assert_int_eq(ta_dumpfile_fdopen(fds[0], &d), 0);
	expect_chunk(d, 100, 0, off[0]);
	expect_error(d, -TA_E_CHECKSUM, 1, off[1], off[2] - off[1]);
	expect_chunk(d, 102, 2, off[2]);
	expect_end(d);
	ta_dumpfile_close(d);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	dg_free(&g);
}
END_TEST

/* ---- fuzz ------------------------------------------------------------------------- */

/* A realistic dump: metadata and a few EVENTS chunks of two threads. */
static void sample_dump(struct dumpgen *g, struct rng *r, int lz4)
{
	static const uint64_t pairs[2][2] = {{1000, 5000}, {1000000, 505000}};

	dg_init(g, 500);
	g->lz4 = lz4;
	dg_process(g, 1000, TA_CLOCK_RDTSC, 0, "/bin/prog");
	dg_clock(g, 2, pairs);
	dg_module(g, "/bin/prog", 0x10000, 1, 0x11000, 0x20000);
	for (uint64_t tid = 500; tid < 502; tid++) {
		struct ta_encoder e;
		uint64_t t = 2000;

		dg_thread_start(g, tid, t, tid == 500 ? "main" : "worker");
		ta_encoder_init(&e, tid);
		for (int chunk = 0; chunk < 3; chunk++) {
			ta_encoder_begin(&e, t);
			for (int i = 0; i < 200; i++) {
				t += 1 + rng_below(r, 100);
				ta_encoder_event(&e, t, 0x11000 + rng_below(r, 6) * 0x40,
						 (int)rng_below(r, 2));
			}
			dg_events(g, &e);
		}
		ta_encoder_free(&e);
		dg_thread_end(g, tid, t + 10, 600, 0);
	}
	dg_end(g, 1000000, 505000, 1200, 0, 2, 0);
}

/* Reads everything from a mutated dump; must end, and never claim more
 * chunks than the bytes could hold. */
static void read_all(const uint8_t *p, size_t len)
{
	char path[64];
	struct ta_dumpfile *d;
	struct ta_chunk c;
	uint64_t n = 0;
	int rc;

	dg_write_bytes_tmp(p, len, path);
	rc = ta_dumpfile_open(path, &d);
	if (rc == 0) {
		while ((rc = ta_dumpfile_next(d, &c)) != 0) {
			REQUIRE(rc == 1 || (rc < 0 && rc != -TA_E_IO && rc != -TA_E_NOMEM), "rc %d",
				rc);
			/* A good chunk takes 32 bytes or more, and an error
			 * is followed by a good chunk or the end. */
			REQUIRE(++n <= 2 * (len / TA_CHUNK_HEADER_SIZE) + 2, "too many chunks");
			REQUIRE(rc != 1 || c.len <= TA_CHUNK_MAX_PAYLOAD, "chunk too big");
		}
		ta_dumpfile_close(d);
	}
	unlink(path);
}

/* The same through a whole session with the profile visitor. */
static void session_all(const uint8_t *p, size_t len)
{
	char path[64];
	struct ta_profile prof;
	struct ta_visitor v;
	struct ta_session *s;

	dg_write_bytes_tmp(p, len, path);
	ta_profile_init(&prof);
	ta_profile_visitor(&prof, &v);
	s = ta_session_new(&v);
	ck_assert_ptr_nonnull(s);
	ta_session_read(s, path, NULL);
	ta_session_finish(s);
	(void)ta_session_incomplete(s);
	for (size_t i = 0; i < prof.n; i++)
		REQUIRE(prof.f[i].active == 0 && prof.f[i].calls >= prof.f[i].open, "stats %zu", i);
	ta_session_free(s);
	ta_profile_free(&prof);
	unlink(path);
}

START_TEST(dump_fuzz)
{
	uint64_t seed = test_seed("dump_fuzz");
	struct rng r = {seed};

	for (int round = 0; round < 400; round++) {
		struct dumpgen g;
		size_t len;

		sample_dump(&g, &r, (int)rng_below(&r, 2));
		len = g.len;
		switch (rng_below(&r, 4)) {
		case 0:
			for (uint64_t k = 1 + rng_below(&r, 16); k--;)
				g.buf[TA_FILE_HEADER_SIZE +
				      rng_below(&r, len - TA_FILE_HEADER_SIZE)] ^=
				    (uint8_t)(1u << rng_below(&r, 8));
			break;
		case 1:
			len = TA_FILE_HEADER_SIZE + rng_below(&r, len - TA_FILE_HEADER_SIZE + 1);
			break;
		case 2:
			/* Random bytes after a valid file header. */
			for (size_t i = TA_FILE_HEADER_SIZE; i < len; i++)
				g.buf[i] = (uint8_t)rng_next(&r);
			break;
		default:
			/* Runs of garbage over chunk boundaries. */
			for (uint64_t k = 1 + rng_below(&r, 4); k--;) {
				size_t at =
				    TA_FILE_HEADER_SIZE + rng_below(&r, len - TA_FILE_HEADER_SIZE);
				size_t n = rng_below(&r, 64);

				for (size_t i = at; i < at + n && i < len; i++)
					g.buf[i] = (uint8_t)rng_next(&r);
			}
			break;
		}
		read_all(g.buf, len);
		session_all(g.buf, len);
		dg_free(&g);
	}
}
END_TEST

START_TEST(session_payload_fuzz)
{
	/* Chunks whose CRC is right but whose payload is random or cut: the
	 * session must refuse them cleanly. */
	uint64_t seed = test_seed("session_payload_fuzz");
	struct rng r = {seed};
	struct ta_profile prof;
	struct ta_visitor v;

	ta_profile_init(&prof);
	ta_profile_visitor(&prof, &v);
	for (int round = 0; round < 300; round++) {
		struct ta_session *s = ta_session_new(&v);
		uint8_t buf[512];

		ck_assert_ptr_nonnull(s);
		for (int i = 0; i < 50; i++) {
			struct ta_chunk c;
			size_t len = rng_below(&r, sizeof(buf));

			memset(&c, 0, sizeof(c));
			for (size_t k = 0; k < len; k++)
				buf[k] =
				    (uint8_t)(rng_below(&r, 4) ? rng_below(&r, 8) : rng_next(&r));
			c.h.type = (uint16_t)(1 + rng_below(&r, 9));
			c.h.pid = (uint32_t)rng_below(&r, 3);
			c.h.seq = (uint32_t)i;
			c.payload = buf;
			c.len = len;
			c.index = (uint64_t)i;
			REQUIRE(ta_session_chunk(s, &c) == 0, "chunk %d", i);
		}
		ta_session_finish(s);
		ta_session_free(s);
	}
	ta_profile_free(&prof);
}
END_TEST

static Suite *dumpfile_suite(void)
{
	Suite *s = suite_create("dumpfile");
	TCase *tc = tcase_create("reader");

	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, whole_dump, 0, 2);
	tcase_add_test(tc, header_only);
	tcase_add_loop_test(tc, big_chunks, 0, 2);
	tcase_add_test(tc, truncated_last_chunk);
	tcase_add_test(tc, truncated_middle_chunk);
	tcase_add_loop_test(tc, crc_damage_resync, 0, 2);
	tcase_add_test(tc, bad_chunk_magic_resync);
	tcase_add_test(tc, garbage_between_chunks);
	tcase_add_test(tc, garbage_at_end);
	tcase_add_test(tc, oversized_sizes);
	tcase_add_test(tc, bad_lz4_payload);
	tcase_add_test(tc, file_header_errors);
	tcase_add_test(tc, open_errors);
	tcase_add_test(tc, short_reads_from_pipe);
	tcase_add_test(tc, dump_fuzz);
	tcase_add_test(tc, session_payload_fuzz);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ta_check_run(dumpfile_suite());
}
