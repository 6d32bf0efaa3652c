/* SPDX-License-Identifier: MIT */
/*
 * test_dump.c - the agent's dump writer (agent/dump.c) past 4 GiB: chunks
 * appended at offsets beyond 2^32 (the file made that long by a hole, so
 * the test takes no disk), read back from there, and a write that fails
 * there (the file size limit, as a full disk would) cut back to the chunk
 * boundary, with the offset in the warning.
 */
#define _GNU_SOURCE
#include <check.h>

#include "../check_run.h"
#include "../testdir.h"
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "chunkread.h"
#include "dump.h"
#include "format.h"

#define FAR ((1ull << 32) - 16) /* the next chunk's header crosses 2^32 */

static char path[PATH_MAX + 32];

/* In a directory of the test's own: a fixed name in the temporary
 * directory may be another run's. */
static void setup(void)
{
	ta_test_path(path, sizeof(path), "test-dump", "dump.trace");
}

static void teardown(void)
{
	unlink(path);
}

/* Makes the dump FAR bytes long: a hole after what the agent wrote. */
static void extend_by_a_hole(void)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, (off_t)FAR), 0);
	close(fd);
}

/* Bytes that LZ4 cannot shrink, so a chunk is stored as it is. */
static void noise(uint8_t *p, size_t n, uint64_t seed)
{
	for (size_t i = 0; i < n; i++) {
		seed ^= seed << 13;
		seed ^= seed >> 7;
		seed ^= seed << 17;
		p[i] = (uint8_t)seed;
	}
}

/* Reads the chunk at off back and checks it is whole: type, seq, payload.
 * Returns the offset after it. */
static uint64_t expect_chunk(uint64_t off, unsigned type, uint32_t seq, const uint8_t *payload,
			     size_t len)
{
	struct ta_dumpfile *d;
	struct ta_chunk c;
	uint64_t next;

	ck_assert_int_eq(ta_dumpfile_open(path, &d), 0);
	/* Straight there: the hole before it is 4 GiB of nothing. */
	ck_assert_int_eq(ta_dumpfile_seek(d, off), 0);
	ck_assert_int_eq(ta_dumpfile_next(d, &c), 1);
	ck_assert_uint_eq(c.offset, off);
	ck_assert_uint_eq(c.h.type, type);
	ck_assert_uint_eq(c.h.seq, seq);
	ck_assert_uint_eq(c.len, len);
	ck_assert_mem_eq(c.payload, payload, len);
	next = ta_dumpfile_offset(d);
	ck_assert_uint_eq(next, off + TA_CHUNK_HEADER_SIZE + c.h.stored_size);
	ta_dumpfile_close(d);
	return next;
}

static uint64_t file_size(void)
{
	struct stat st;

	ck_assert_int_eq(stat(path, &st), 0);
	return (uint64_t)st.st_size;
}

START_TEST(chunks_past_4gib)
{
	uint8_t a[3000], b[100000];
	uint64_t off, written;
	struct stat st;

	noise(a, sizeof(a), 1);
	memset(b, 'b', sizeof(b)); /* compressed */
	ck_assert_int_eq(ta_dump_open(path), 0);
	extend_by_a_hole();
	ck_assert_int_eq(ta_dump_chunk(TA_CHUNK_CLOCK, a, sizeof(a)), 0);
	ck_assert_int_eq(ta_dump_chunk(TA_CHUNK_EVENTS, b, sizeof(b)), 0);
	written = ta_dump_bytes();
	ta_dump_close();
	off = expect_chunk(FAR, TA_CHUNK_CLOCK, 0, a, sizeof(a));
	ck_assert_uint_gt(off, 1ull << 32);
	off = expect_chunk(off, TA_CHUNK_EVENTS, 1, b, sizeof(b));
	ck_assert_uint_eq(file_size(), off);
	/* What it wrote: the file header and the two chunks, not the hole. */
	ck_assert_uint_eq(written, TA_FILE_HEADER_SIZE + off - FAR);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_lt((long long)st.st_blocks * 512, 16ll << 20); /* sparse */
}
END_TEST

START_TEST(failed_write_past_4gib_is_cut_back)
{
	static uint8_t a[3000], big[8000];
	struct rlimit lim;
	char warn[PATH_MAX + 512];
	char want[PATH_MAX + 512];
	ssize_t n;
	uint64_t end;
	int err_fd, saved;

	noise(a, sizeof(a), 2);
	noise(big, sizeof(big), 3);
	ck_assert_int_eq(ta_dump_open(path), 0);
	extend_by_a_hole();
	ck_assert_int_eq(ta_dump_chunk(TA_CHUNK_CLOCK, a, sizeof(a)), 0);
	end = FAR + TA_CHUNK_HEADER_SIZE + sizeof(a);
	/* The file may grow 1000 bytes more: the next chunk is written in
	 * part, then refused (EFBIG, as ENOSPC on a full disk). */
	lim.rlim_cur = end + 1000;
	lim.rlim_max = RLIM_INFINITY;
	ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &lim), 0);
	signal(SIGXFSZ, SIG_IGN);
	/* The warning, caught in an unnamed file. */
	{
		char name[PATH_MAX + 64];

		snprintf(name, sizeof(name), "%s.err", path);
		err_fd = open(name, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
		ck_assert_int_ge(err_fd, 0);
		unlink(name);
	}
	saved = dup(2);
	dup2(err_fd, 2);
	ck_assert_int_eq(ta_dump_chunk(TA_CHUNK_EVENTS, big, sizeof(big)), -EFBIG);
	dup2(saved, 2);
	close(saved);
	ck_assert_int_eq(ta_dump_failed(), 1);
	/* Cut back to where the chunk began: the dump ends whole. */
	ck_assert_uint_eq(file_size(), end);
	ck_assert_int_eq(ta_dump_chunk(TA_CHUNK_CLOCK, a, sizeof(a)), -EBADF);
	ck_assert_uint_eq(file_size(), end);
	ta_dump_close();
	expect_chunk(FAR, TA_CHUNK_CLOCK, 0, a, sizeof(a));

	n = pread(err_fd, warn, sizeof(warn) - 1, 0);
	ck_assert_int_gt(n, 0);
	warn[n] = 0;
	snprintf(
	    want, sizeof(want),
	    "traceagent: cannot write to the dump %s: chunk 1 of process %ld at offset %" PRIu64
	    ": %s; the rest of this run is not recorded\n",
	    path, (long)getpid(), end, strerror(EFBIG));
	ck_assert_str_eq(warn, want);
	close(err_fd);
}
END_TEST

static Suite *dump_suite(void)
{
	Suite *s = suite_create("dump");
	TCase *tc = tcase_create("big");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, chunks_past_4gib);
	tcase_add_test(tc, failed_write_past_4gib_is_cut_back);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ta_check_run(dump_suite());
}
