/* SPDX-License-Identifier: MIT */
/*
 * test_hpcache.c - hookpatch's analyses on disk (agent/hookpatch_cache.c):
 * an image read back gives exactly the entries written; every truncation,
 * every byte changed (seeded random mutations too), another build-id,
 * another file size or another version is refused whole; store and load
 * through a directory, made when missing; no directory where one cannot be
 * made; the directory chosen from the settings.
 */
#include <check.h>

#include "../check_run.h"
#include "../testdir.h"
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "hookpatch_cache.h"

static void key_of(struct ta_hpc_key *k, uint8_t seed, uint64_t size)
{
	memset(k, 0, sizeof(*k));
	k->idlen = 20;
	for (int i = 0; i < 20; i++)
		k->id[i] = (uint8_t)(seed + i * 7);
	k->file_size = size;
}

static struct ta_hpc_site site(uint64_t off, uint8_t len, uint8_t kind)
{
	struct ta_hpc_site s;

	memset(&s, 0, sizeof(s));
	s.at_off = off;
	s.len = len;
	s.kind = kind;
	for (int i = 0; i < len; i++) {
		s.orig[i] = (uint8_t)(0xe8 + i);
		s.repl[i] = 0x90;
	}
	return s;
}

/* A cache of three functions, added out of order: two with calls, one
 * refused. */
static void fill(struct ta_hpc *c)
{
	struct ta_hpc_site a[2] = {site(0x1004, 5, 0), site(0x1030, 5, 1)};
	/* The last: a value read from the module's data (a GOT entry). */
	struct ta_hpc_site b[4] = {site(0x504, 6, 0), site(0x520, 6, 1), site(0x540, 5, 2),
				   site(0x3008, 8, TA_HPC_READ)};

	memset(c, 0, sizeof(*c));
	key_of(&c->key, 3, 123456);
	ck_assert_int_eq(ta_hpc_add(c, 0x1000, 0x40, 0x103a, 0x1111, 2, 0, a), 0);
	ck_assert_int_eq(ta_hpc_add(c, 0x2000, 0x80, 0, 0x2222, -ENOTSUP, 0, NULL), 0);
	ck_assert_int_eq(ta_hpc_add(c, 0x500, 0x50, 0, 0x3333, 3, 1, b), 0);
}

static void same(const struct ta_hpc *x, const struct ta_hpc *y)
{
	static const uint64_t offs[] = {0x500, 0x1000, 0x2000};

	ck_assert_uint_eq(x->n, y->n);
	for (size_t i = 0; i < 3; i++) {
		const struct ta_hpc_ent *a = ta_hpc_find(x, offs[i],
							 i == 0	  ? 0x50
							 : i == 1 ? 0x40
								  : 0x80);
		const struct ta_hpc_ent *b = ta_hpc_find(y, offs[i], a ? a->fn_size : 0);

		ck_assert_ptr_nonnull(a);
		ck_assert_ptr_nonnull(b);
		ck_assert_int_eq(a->result, b->result);
		ck_assert_uint_eq(a->ret_off, b->ret_off);
		ck_assert_uint_eq(a->code_hash, b->code_hash);
		ck_assert_uint_eq(a->nreads, b->nreads);
		ck_assert_uint_eq(a->nreads, i == 0 ? 1 : 0);
		for (int k = 0; k < (a->result > 0 ? a->result : 0) + (int)a->nreads; k++)
			ck_assert_mem_eq(&x->sites[a->first + (uint32_t)k],
					 &y->sites[b->first + (uint32_t)k],
					 sizeof(struct ta_hpc_site));
	}
}

START_TEST(hpc_round_trip)
{
	struct ta_hpc c, r;
	size_t len;
	uint8_t *img;
	const struct ta_hpc_ent *e;

	fill(&c);
	img = ta_hpc_image(&c, &len);
	ck_assert_ptr_nonnull(img);
	ck_assert_uint_eq(len, 80 + 3 * 40 + 6 * 32);
	memset(&r, 0, sizeof(r));
	r.key = c.key;
	ck_assert_int_eq(ta_hpc_parse(&r, img, len), 0);
	ck_assert_int_eq(r.dirty, 0);
	same(&c, &r);
	e = ta_hpc_find(&r, 0x2000, 0x80);
	ck_assert_int_eq(e->result, -ENOTSUP);
	/* Same offset, another size: another function (a rebuilt module
	 * with the same build-id is refused before, by its file's size). */
	ck_assert_ptr_null(ta_hpc_find(&r, 0x1000, 0x41));
	ck_assert_ptr_null(ta_hpc_find(&r, 0x1001, 0x40));
	/* Parsed into a cache that has entries: refused, nothing added. */
	ck_assert_int_eq(ta_hpc_parse(&r, img, len), -1);
	ck_assert_uint_eq(r.n, 3);
	ta_hpc_free(&r);
	ta_hpc_free(&c);
	free(img);
}
END_TEST

START_TEST(hpc_refuses_foreign)
{
	struct ta_hpc c, r;
	size_t len;
	uint8_t *img;

	fill(&c);
	img = ta_hpc_image(&c, &len);
	memset(&r, 0, sizeof(r));
	key_of(&r.key, 4, 123456); /* another build-id */
	ck_assert_int_eq(ta_hpc_parse(&r, img, len), -1);
	key_of(&r.key, 3, 123457); /* another file size */
	ck_assert_int_eq(ta_hpc_parse(&r, img, len), -1);
	r.key = c.key;
	r.key.idlen = 16; /* a prefix of the build-id */
	ck_assert_int_eq(ta_hpc_parse(&r, img, len), -1);
	r.key = c.key;
	img[8] = TA_HPC_VERSION + 1; /* another version */
	ck_assert_int_eq(ta_hpc_parse(&r, img, len), -1);
	ck_assert_uint_eq(r.n, 0);
	ta_hpc_free(&c);
	free(img);
}
END_TEST

START_TEST(hpc_refuses_truncated_and_changed)
{
	struct ta_hpc c, r;
	size_t len;
	uint8_t *img;

	fill(&c);
	img = ta_hpc_image(&c, &len);
	memset(&r, 0, sizeof(r));
	r.key = c.key;
	for (size_t n = 0; n < len; n++)
		ck_assert_int_eq(ta_hpc_parse(&r, img, n), -1);
	for (size_t i = 0; i < len; i++)
		for (unsigned bit = 0; bit < 8; bit++) {
			img[i] ^= (uint8_t)(1u << bit);
			ck_assert_msg(ta_hpc_parse(&r, img, len) == -1, "byte %zu bit %u", i, bit);
			img[i] ^= (uint8_t)(1u << bit);
		}
	ck_assert_uint_eq(r.n, 0);
	ck_assert_int_eq(ta_hpc_parse(&r, img, len), 0);
	ta_hpc_free(&r);
	ta_hpc_free(&c);
	free(img);
}
END_TEST

/* Seeded random images: mutated bytes, lengths and counts with the
 * checksum made right again, so that the checks behind it are reached;
 * whatever they hold, the reader keeps within the image and keeps only
 * entries whose calls it holds. */
START_TEST(hpc_fuzz)
{
	struct ta_hpc c;
	size_t len;
	uint8_t *img, *buf;
	uint64_t seed = 0x9e3779b97f4a7c15ull * (uint64_t)(_i + 1);

	fill(&c);
	img = ta_hpc_image(&c, &len);
	buf = malloc(len + 64);
	for (int round = 0; round < 20000; round++) {
		struct ta_hpc r;
		size_t n = len;
		uint64_t h = 0xcbf29ce484222325ull;

		memcpy(buf, img, len);
		for (int k = 0; k < 1 + round % 4; k++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			buf[(seed >> 33) % len] = (uint8_t)(seed >> 20);
		}
		if (round % 5 == 0) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			n = 80 + (size_t)((seed >> 33) % (len + 64 - 80));
			if (n > len)
				memset(buf + len, (int)(seed >> 13), n - len);
		}
		if (n >= 80) {
			for (size_t i = 80; i < n; i++)
				h = (h ^ buf[i]) * 0x100000001b3ull;
			memcpy(buf + 72, &h, 8);
		}
		memset(&r, 0, sizeof(r));
		r.key = c.key;
		if (ta_hpc_parse(&r, buf, n) == 0) {
			size_t used = 0;

			for (size_t i = 0; i < r.n; i++) {
				ck_assert_int_le(r.e[i].result, TA_HPC_MAX_SITES);
				ck_assert_uint_le(r.e[i].nreads, TA_HPC_MAX_READS);
				ck_assert_uint_eq(r.e[i].first, used);
				used +=
				    (r.e[i].result > 0 ? (size_t)r.e[i].result : 0) + r.e[i].nreads;
				if (i)
					ck_assert_uint_gt(r.e[i].fn_off, r.e[i - 1].fn_off);
			}
			ck_assert_uint_eq(used, r.nsites);
			for (size_t i = 0; i < r.nsites; i++)
				ck_assert(r.sites[i].len >= 1 && r.sites[i].len <= 8);
		}
		ta_hpc_free(&r);
	}
	free(buf);
	free(img);
	ta_hpc_free(&c);
}
END_TEST

START_TEST(hpc_store_load)
{
	char dir[4200], name[80], path[4300];
	struct ta_hpc c, r;
	struct stat st;
	FILE *f;

	snprintf(dir, sizeof(dir), "%s/a/b", ta_test_dir("hpcache"));
	fill(&c);
	/* The directory is made (both levels), the file named by the build-id. */
	ck_assert_int_eq(ta_hpc_store(&c, dir), 0);
	ck_assert_int_eq(ta_hpc_name(name, sizeof(name), &c.key), 0);
	ck_assert_str_eq(name, "030a11181f262d343b424950575e656c737a8188.hpc");
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_uint_eq((uint64_t)st.st_size, 80 + 3 * 40 + 6 * 32);
	memset(&r, 0, sizeof(r));
	r.key = c.key;
	ck_assert_int_eq(ta_hpc_load(&r, dir), 0);
	same(&c, &r);
	ta_hpc_free(&r);
	/* Truncated on disk: refused. */
	ck_assert_int_eq(truncate(path, st.st_size - 1), 0);
	ck_assert_int_eq(ta_hpc_load(&r, dir), -1);
	ck_assert_uint_eq(r.n, 0);
	/* Another build-id: its own file, absent. */
	key_of(&r.key, 9, 123456);
	ck_assert_int_eq(ta_hpc_load(&r, dir), -1);
	/* Where no directory can be made (under a regular file): -1, nothing
	 * made. */
	snprintf(path, sizeof(path), "%s/plain", ta_test_dir("hpcache"));
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	snprintf(dir, sizeof(dir), "%s/plain/sub", ta_test_dir("hpcache"));
	ck_assert_int_eq(ta_hpc_store(&c, dir), -1);
	ck_assert_int_eq(ta_hpc_load(&c, dir), -1);
	/* No build-id: no file. */
	c.key.idlen = 0;
	ck_assert_int_eq(ta_hpc_name(name, sizeof(name), &c.key), -1);
	ck_assert_int_eq(ta_hpc_store(&c, ta_test_dir("hpcache")), -1);
	ta_hpc_free(&c);
}
END_TEST

START_TEST(hpc_dir)
{
	char d[64];

	ck_assert_int_eq(ta_hpc_dir(d, sizeof(d), "/x/y", "/xdg", "/home/u"), 0);
	ck_assert_str_eq(d, "/x/y");
	ck_assert_int_eq(ta_hpc_dir(d, sizeof(d), NULL, "/xdg", "/home/u"), 0);
	ck_assert_str_eq(d, "/xdg/traceagent");
	ck_assert_int_eq(ta_hpc_dir(d, sizeof(d), "", NULL, "/home/u"), 0);
	ck_assert_str_eq(d, "/home/u/.cache/traceagent");
	/* A relative XDG_CACHE_HOME is to be ignored (the spec's words). */
	ck_assert_int_eq(ta_hpc_dir(d, sizeof(d), NULL, "rel", "/home/u"), 0);
	ck_assert_str_eq(d, "/home/u/.cache/traceagent");
	ck_assert_int_eq(ta_hpc_dir(d, sizeof(d), "off", "/xdg", "/home/u"), -1);
	ck_assert_int_eq(ta_hpc_dir(d, sizeof(d), NULL, NULL, NULL), -1);
	ck_assert_int_eq(ta_hpc_dir(d, sizeof(d), NULL, NULL, "rel"), -1);
	ck_assert_int_eq(ta_hpc_dir(d, 8, "/a/long/path", NULL, NULL), -1);
}
END_TEST

static Suite *hpc_suite(void)
{
	Suite *s = suite_create("hpcache");
	TCase *tc = tcase_create("hpcache");

	tcase_add_test(tc, hpc_round_trip);
	tcase_add_test(tc, hpc_refuses_foreign);
	tcase_add_test(tc, hpc_refuses_truncated_and_changed);
	tcase_add_loop_test(tc, hpc_fuzz, 0, 4);
	tcase_add_test(tc, hpc_store_load);
	tcase_add_test(tc, hpc_dir);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ta_check_run(hpc_suite());
}
