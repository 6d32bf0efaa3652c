/* SPDX-License-Identifier: MIT */
/*
 * test_serve.c - one client of serve (analyzer/lib/serve_conn.c) without
 * sockets: a whole stream in pieces becomes the same bytes in a dump
 * named by its PROCESS chunk, counted; a quota keeps whole chunks; and a
 * seeded fuzz of random and mutated streams never crashes, never keeps
 * more than the bounds, and always leaves a dump cut at a chunk end.
 */
#define _GNU_SOURCE
#include <check.h>

#include "../check_run.h"
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dumpgen.h"
#include "format.h"
#include "serve.h"

static char dir[] = "/tmp/ta-test-serve-XXXXXX";
static int dir_fd = -1;

/* A dump of one thread: 3 EVENTS chunks of 20 events, then END. */
static void make_dump(struct dumpgen *g, int lz4, int with_end)
{
	struct ta_encoder e;

	dg_init(g, 4242);
	g->lz4 = lz4;
	dg_process(g, 1000, TA_CLOCK_MONOTONIC, 1000000000, "/usr/bin/my prog!");
	dg_module(g, "/usr/bin/my prog!", 0x400000, 0, 0x400000, 0x500000);
	dg_thread_start(g, 10, 1000, "main");
	ta_encoder_init(&e, 10);
	for (int c = 0; c < 3; c++) {
		ta_encoder_begin(&e, 1000 + (uint64_t)c * 100);
		for (int i = 0; i < 10; i++) {
			ta_encoder_event(&e, 1000 + (uint64_t)(c * 100 + i * 2), 0x401000, 0);
			ta_encoder_event(&e, 1001 + (uint64_t)(c * 100 + i * 2), 0x401000, 1);
		}
		dg_events(g, &e);
	}
	ta_encoder_free(&e);
	dg_thread_end(g, 10, 2000, 60, 0);
	if (with_end)
		dg_end(g, 2000, 0, 60, 0, 1, 0);
}

static off_t file_size(const char *name)
{
	struct stat st;

	ck_assert_int_eq(fstatat(dir_fd, name, &st, 0), 0);
	return st.st_size;
}

static void feed_pieces(struct ta_sv_conn *c, const uint8_t *p, size_t n, size_t piece)
{
	for (size_t at = 0; at < n; at += piece)
		if (ta_sv_conn_feed(c, p + at, n - at < piece ? n - at : piece) < 0)
			break;
}

START_TEST(serve_whole)
{
	static const size_t pieces[] = {1, 7, 33, 4096, 1 << 20};
	struct ta_sv_conn c;
	struct dumpgen g;
	char prev[sizeof(c.file)] = "";
	uint8_t *back;
	int fd;

	make_dump(&g, _i & 1, 1);
	for (size_t k = 0; k < 5; k++) {
		ta_sv_conn_init(&c, dir_fd, "host/x", 0);
		feed_pieces(&c, g.buf, g.len, pieces[k]);
		ck_assert_int_eq(c.cut, 0);
		ck_assert_int_eq(ta_sv_conn_close(&c), 1);
		ck_assert_uint_eq(ta_sv_conn_events(&c), 60);
		ck_assert_uint_eq(c.events, 60);
		ck_assert_uint_eq(ta_sv_conn_threads(&c), 1);
		ck_assert_uint_eq(c.pid, 4242);
		ck_assert_str_eq(c.prog, "my_prog_");
		ck_assert_int_eq(strncmp(c.file, "host_x-my_prog_-4242-", 21), 0);
		ck_assert_int_eq(file_size(c.file), (off_t)g.len);
		back = malloc(g.len);
		fd = openat(dir_fd, c.file, O_RDONLY);
		ck_assert_int_eq(read(fd, back, g.len), (ssize_t)g.len);
		ck_assert_int_eq(memcmp(back, g.buf, g.len), 0);
		close(fd);
		free(back);
		/* Never overwritten: the next one of that name has a suffix. */
		if (k > 0)
			ck_assert_str_ne(c.file, prev);
		if (_i == 0 && k == 1)
			ck_assert_ptr_nonnull(strstr(c.file, "-2.trace"));
		memcpy(prev, c.file, sizeof(prev));
		ta_sv_conn_free(&c);
	}
	dg_free(&g);
}
END_TEST

/* Without END, and cut in the middle of a chunk: whole chunks kept. */
START_TEST(serve_incomplete_and_quota)
{
	struct ta_sv_conn c;
	struct dumpgen g;

	make_dump(&g, 0, 0);
	ta_sv_conn_init(&c, dir_fd, "h", 0);
	ck_assert_int_eq(ta_sv_conn_feed(&c, g.buf, g.len - 5), 0);
	ck_assert_int_eq(ta_sv_conn_midway(&c), 1);
	ck_assert_int_eq(ta_sv_conn_close(&c), 0);
	ck_assert_uint_eq(c.written, c.st.good);
	/* The whole chunks, then a CUT chunk saying why the dump stops. */
	ck_assert_uint_gt(c.cut_bytes, 0);
	ck_assert_int_eq(file_size(c.file), (off_t)(c.st.good + c.cut_bytes));
	/* Counted from the EVENTS chunks: the END was cut. */
	ck_assert_uint_eq(ta_sv_conn_events(&c), 60);
	ta_sv_conn_free(&c);

	ta_sv_conn_init(&c, dir_fd, "h", g.len - 100);
	ck_assert_int_lt(ta_sv_conn_feed(&c, g.buf, g.len), 0);
	ck_assert_ptr_nonnull(strstr(c.why, "quota"));
	ck_assert_uint_le(c.written, g.len - 100);
	ck_assert_int_eq(ta_sv_conn_close(&c), 0);
	ck_assert_int_eq(file_size(c.file), (off_t)(c.written + c.cut_bytes));
	ta_sv_conn_free(&c);
	dg_free(&g);
}
END_TEST

/* Without END, a stream counts its function events as the saved dump's
 * report does: its EXT events (an agent's wait, a library call's values)
 * are not function events, raw or compressed. */
START_TEST(serve_cut_stream_counts_function_events)
{
	struct ta_sv_conn c;
	struct dumpgen g;
	struct ta_encoder e;
	const uint64_t wait[2] = {1005, 3}, io[4] = {1, 10, 10, 0};

	dg_init(&g, 4242);
	g.lz4 = _i;
	dg_process(&g, 1000, TA_CLOCK_MONOTONIC, 1000000000, "/usr/bin/prog");
	dg_thread_start(&g, 10, 1000, "main");
	ta_encoder_init(&e, 10);
	for (int k = 0; k < 3; k++) {
		ta_encoder_begin(&e, 1000 + (uint64_t)k * 100);
		for (int i = 0; i < 10; i++) {
			ta_encoder_event(&e, 1000 + (uint64_t)(k * 100 + i * 10), 0x401000, 0);
			ta_encoder_ext(&e, 1001 + (uint64_t)(k * 100 + i * 10), TA_EXT_WAIT, wait,
				       2);
			ta_encoder_ext(&e, 1005 + (uint64_t)(k * 100 + i * 10), TA_EXT_IO, io, 4);
			ta_encoder_event(&e, 1006 + (uint64_t)(k * 100 + i * 10), 0x401000, 1);
		}
		dg_events(&g, &e);
	}
	ta_encoder_free(&e);
	ta_sv_conn_init(&c, dir_fd, "h", 0);
	ck_assert_int_eq(ta_sv_conn_feed(&c, g.buf, g.len), 0);
	ck_assert_int_eq(ta_sv_conn_close(&c), 0);
	ck_assert_uint_eq(ta_sv_conn_events(&c), 60);
	ck_assert_int_eq(c.events_unknown, 0);
	ta_sv_conn_free(&c);
	dg_free(&g);
}
END_TEST

/* Seeded fuzz: random bytes, and the dump with random bytes changed, in
 * random pieces. */
START_TEST(serve_fuzz)
{
	uint64_t seed = 0x5e7e5e7eull;
	struct dumpgen g;
	uint8_t *m;

	make_dump(&g, 1, 1);
	m = malloc(g.len);
	for (int round = 0; round < 3000; round++) {
		struct ta_sv_conn c;
		size_t at = 0, n = g.len;

		memcpy(m, g.buf, g.len);
		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		if (round % 4 == 0) {
			for (size_t i = 0; i < n; i++)
				m[i] = (uint8_t)((seed >> (i % 56)) ^ (i * 131));
		} else {
			for (int k = 0; k < 1 + round % 6; k++) {
				seed = seed * 6364136223846793005ull + 1442695040888963407ull;
				m[(seed >> 17) % n] = (uint8_t)(seed >> 40);
			}
		}
		ta_sv_conn_init(&c, dir_fd, "fz", round % 5 == 0 ? 1 + (seed >> 20) % 4000 : 0);
		while (at < n) {
			size_t piece = 1 + (size_t)((seed >> (at % 40)) % 700);
			if (piece > n - at)
				piece = n - at;
			if (ta_sv_conn_feed(&c, m + at, piece) < 0)
				break;
			ck_assert_uint_le(c.pend_len, TA_SV_PEND_MAX);
			at += piece;
		}
		ta_sv_conn_close(&c);
		ck_assert_uint_le(c.written, g.len);
		if (c.file[0]) {
			/* The dump ends where the stream was last good. */
			ck_assert_int_eq(file_size(c.file), (off_t)(c.written + c.cut_bytes));
			ck_assert_uint_le(c.written, c.st.good);
			if (c.quota)
				ck_assert_uint_le(c.written, c.quota);
			unlinkat(dir_fd, c.file, 0);
		}
		ta_sv_conn_free(&c);
	}
	free(m);
	dg_free(&g);
}
END_TEST

static void setup(void)
{
	ck_assert_ptr_nonnull(mkdtemp(dir));
	dir_fd = open(dir, O_RDONLY | O_DIRECTORY);
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd) != 0) {
		/* Left in /tmp. */
	}
}

static Suite *serve_suite(void)
{
	Suite *s = suite_create("serve");
	TCase *tc = tcase_create("serve");

	tcase_add_unchecked_fixture(tc, setup, teardown);
	tcase_add_loop_test(tc, serve_whole, 0, 2);
	tcase_add_test(tc, serve_incomplete_and_quota);
	tcase_add_loop_test(tc, serve_cut_stream_counts_function_events, 0, 2);
	tcase_add_test(tc, serve_fuzz);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ta_check_run(serve_suite());
}
