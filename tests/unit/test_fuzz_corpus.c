/* SPDX-License-Identifier: MIT */
/*
 * test_fuzz_corpus.c - replays the fuzzer's regression corpus
 * (tests/fuzz/corpus/, kept by scripts/fuzz) through the harness's entry
 * point, built with the normal compiler: no input may crash the analyzer or
 * break an invariant the harness checks (and, in a sanitizer build, none
 * may draw a report).  Also checks that the in-memory reader the fuzzer
 * uses reads every input exactly as the file reader does, so what is
 * fuzzed is what `traceagent report` runs.
 */
#include <check.h>

#include "../check_run.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dumpfile.h"
#include "dumpgen.h"
#include "fuzz_entry.h"

struct input {
	char *name;
	uint8_t *p;
	size_t len;
};

static struct input *inputs;
static size_t ninputs;

static int name_cmp(const void *a, const void *b)
{
	return strcmp(((const struct input *)a)->name, ((const struct input *)b)->name);
}

/* Every regular file of $TA_FUZZ_CORPUS, in name order. */
static void load_corpus(void)
{
	const char *dir = getenv("TA_FUZZ_CORPUS");
	DIR *d;
	struct dirent *e;
	size_t cap = 0;

	ck_assert_msg(dir && *dir, "TA_FUZZ_CORPUS is not set");
	d = opendir(dir);
	ck_assert_msg(d, "%s: %s", dir, strerror(errno));
	while ((e = readdir(d))) {
		char path[4096];
		struct stat st;
		struct input *in;
		char *name;
		int fd;

		snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
		if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
			continue;
		if (ninputs == cap) {
			cap = cap ? cap * 2 : 256;
			inputs = realloc(inputs, cap * sizeof(*inputs));
			ck_assert(inputs);
		}
		in = &inputs[ninputs++];
		in->name = name = strdup(e->d_name);
		in->len = (size_t)st.st_size;
		in->p = malloc(in->len + 1);
		fd = open(path, O_RDONLY);
		ck_assert_msg(name && in->p && fd >= 0, "%s: %s", path, strerror(errno));
		ck_assert_msg(read(fd, in->p, in->len) == (ssize_t)in->len, "%s: short read", path);
		close(fd);
	}
	closedir(d);
	qsort(inputs, ninputs, sizeof(*inputs), name_cmp);
}

static void free_corpus(void)
{
	for (size_t i = 0; i < ninputs; i++) {
		free(inputs[i].name);
		free(inputs[i].p);
	}
	free(inputs);
	inputs = NULL;
	ninputs = 0;
}

START_TEST(corpus_replays)
{
	load_corpus();
	/* An empty corpus would make this test pass without testing. */
	ck_assert_uint_ge(ninputs, 20);
	for (size_t i = 0; i < ninputs; i++) {
		/* Which input it was, should it crash (the log keeps stderr). */
		fprintf(stderr, "replaying %s (%zu bytes)\n", inputs[i].name, inputs[i].len);
		ck_assert_int_eq(ta_fuzz_dump(inputs[i].p, inputs[i].len), 0);
	}
	free_corpus();
}
END_TEST

/* The bytes after the mode byte, read as a file and from memory. */
static void same_chunks(const struct input *in)
{
	const uint8_t *p = in->len ? in->p + 1 : in->p;
	size_t len = in->len ? in->len - 1 : 0;
	struct ta_dumpfile *df, *dm;
	struct ta_chunk cf, cm;
	char path[64];
	int rf, rm;

	dg_write_bytes_tmp(p, len, path);
	rf = ta_dumpfile_open(path, &df);
	unlink(path);
	rm = ta_dumpfile_memopen(p, len, &dm);
	ck_assert_msg(rf == rm, "%s: open: file %d, memory %d", in->name, rf, rm);
	if (rf < 0)
		return;
	do {
		rf = ta_dumpfile_next(df, &cf);
		rm = ta_dumpfile_next(dm, &cm);
		ck_assert_msg(rf == rm, "%s: next: file %d, memory %d", in->name, rf, rm);
		ck_assert_msg(cf.index == cm.index && cf.offset == cm.offset &&
				  cf.skipped == cm.skipped && cf.len == cm.len &&
				  !memcmp(&cf.h, &cm.h, sizeof(cf.h)),
			      "%s: chunk %llu differs", in->name, (unsigned long long)cf.index);
		if (rf > 0)
			ck_assert_msg(!memcmp(cf.payload, cm.payload, cf.len),
				      "%s: payload differs", in->name);
		ck_assert_uint_eq(ta_dumpfile_offset(df), ta_dumpfile_offset(dm));
	} while (rf != 0 && rf != -TA_E_IO && rf != -TA_E_NOMEM);
	ta_dumpfile_close(df);
	ta_dumpfile_close(dm);
}

START_TEST(memory_reader_is_the_file_reader)
{
	load_corpus();
	for (size_t i = 0; i < ninputs; i++)
		same_chunks(&inputs[i]);
	free_corpus();
}
END_TEST

/* A dump larger than the memory reader's first buffer (and the file
 * reader's 1 MiB) is read alike, chunk by chunk. */
START_TEST(memory_reader_large)
{
	struct dumpgen g;
	static uint8_t payload[200000];
	static char name[] = "large";
	struct input in;

	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (uint8_t)(i * 7 + (i >> 9));
	dg_init(&g, 7);
	for (int i = 0; i < 12; i++)
		dg_chunk(&g, 100 + (unsigned)i, payload, sizeof(payload) - 1000u * (unsigned)i);
	dg_raw(&g, "\0", 1); /* the harness's mode byte goes first: shift by one */
	memmove(g.buf + 1, g.buf, g.len - 1);
	g.buf[0] = 0;
	in.name = name;
	in.p = g.buf;
	in.len = g.len;
	same_chunks(&in);
	ck_assert_int_eq(ta_fuzz_dump(in.p, in.len), 0);
	dg_free(&g);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("fuzz-corpus");
	TCase *tc = tcase_create("corpus");

	tcase_add_test(tc, corpus_replays);
	tcase_add_test(tc, memory_reader_is_the_file_reader);
	tcase_add_test(tc, memory_reader_large);
	suite_add_tcase(s, tc);
	return ta_check_run(s);
}
