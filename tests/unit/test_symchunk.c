/* SPDX-License-Identifier: MIT */
/*
 * test_symchunk.c - the SYMBOLS chunk (format/symchunk.c): the exact bytes
 * of a small table, its round trip, the alias rule, a table split over
 * chunks, hostile payloads refused (truncated, values not increasing, a
 * shared prefix longer than the previous name, names past the bound), and
 * the analyzer's store naming a module whose file does not exist.
 */
#include <check.h>

#include "../check_run.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "symbols.h"
#include "storedsyms.h"

struct got {
	uint8_t *p[64];
	size_t len[64];
	int n;
};

static int keep(void *arg, const void *payload, size_t len)
{
	struct got *g = arg;

	ck_assert_int_lt(g->n, 64);
	g->p[g->n] = malloc(len);
	memcpy(g->p[g->n], payload, len);
	g->len[g->n++] = len;
	return 0;
}

static void got_free(struct got *g)
{
	for (int i = 0; i < g->n; i++)
		free(g->p[i]);
	g->n = 0;
}

static const uint8_t id[] = {0xab, 0xcd};
static const struct ta_syms_entry three[] = {
    {0x1120, 16, "alpha"}, {0x1130, 8, "alphabet"}, {0x1200, 0, "beta"}};

START_TEST(syms_exact_bytes)
{
	static const uint8_t want[] = {2, 0xab, 0xcd, 0x80, 0x20, 4, '/', 'x', '/', 'p', 1, 3,
				       /* 0x1120, 16, shared 0, "alpha" */
				       0xa0, 0x22, 16, 0, 5, 'a', 'l', 'p', 'h', 'a',
				       /* +0x10, 8, shared 5, "bet" */
				       0x10, 8, 5, 3, 'b', 'e', 't',
				       /* +0xd0, 0, shared 0, "beta" */
				       0xd0, 0x01, 0, 0, 4, 'b', 'e', 't', 'a'};
	struct got g = {0};
	struct ta_syms s;

	ck_assert_int_eq(ta_syms_encode(id, 2, 0x1000, "/x/p", TA_SYMS_SYMTAB, three, 3, keep, &g),
			 0);
	ck_assert_int_eq(g.n, 1);
	ck_assert_uint_eq(g.len[0], sizeof(want));
	ck_assert_mem_eq(g.p[0], want, sizeof(want));
	ck_assert_int_eq(ta_syms_decode(g.p[0], g.len[0], &s), 0);
	ck_assert_uint_eq(s.build_id_len, 2);
	ck_assert_mem_eq(s.build_id, id, 2);
	ck_assert_uint_eq(s.bias, 0x1000);
	ck_assert_str_eq(s.path, "/x/p");
	ck_assert_uint_eq(s.source, TA_SYMS_SYMTAB);
	ck_assert_uint_eq(s.n, 3);
	for (int i = 0; i < 3; i++) {
		ck_assert_uint_eq(s.e[i].value, three[i].value);
		ck_assert_uint_eq(s.e[i].size, three[i].size);
		ck_assert_str_eq(s.e[i].name, three[i].name);
	}
	ta_syms_free(&s);
	/* Every truncation is refused. */
	for (size_t cut = 0; cut < sizeof(want); cut++)
		ck_assert_int_eq(ta_syms_decode(want, cut, &s), -TA_E_PAYLOAD);
	got_free(&g);
}
END_TEST

START_TEST(syms_hostile)
{
	uint8_t p[] = {0, 0, 0, 0, 2, 5, 0, 0, 1, 'a', 0, 0, 0, 1, 'b'};
	struct ta_syms s;

	/* Two entries at one value (the second's delta 0). */
	ck_assert_int_eq(ta_syms_decode(p, sizeof(p), &s), -TA_E_PAYLOAD);
	p[10] = 1;
	ck_assert_int_eq(ta_syms_decode(p, sizeof(p), &s), 0);
	ck_assert_str_eq(s.e[1].name, "b");
	ck_assert_uint_eq(s.e[1].value, 6);
	ta_syms_free(&s);
	/* Sharing two bytes of a one-byte name. */
	p[12] = 2;
	ck_assert_int_eq(ta_syms_decode(p, sizeof(p), &s), -TA_E_PAYLOAD);
	p[12] = 1;
	ck_assert_int_eq(ta_syms_decode(p, sizeof(p), &s), 0);
	ck_assert_str_eq(s.e[1].name, "ab");
	ta_syms_free(&s);
	/* A count beyond what the bytes can hold. */
	p[4] = 4;
	ck_assert_int_eq(ta_syms_decode(p, sizeof(p), &s), -TA_E_PAYLOAD);
}
END_TEST

/* Names that share all of a long prefix: the writer's chunks stay within
 * the reader's bound on the names a payload makes, and read back whole. */
START_TEST(syms_bound_and_split)
{
	enum { N = 50000, LEN = 2000 };
	struct ta_syms_entry *e = calloc(N, sizeof(*e));
	char *names = malloc((size_t)N * (LEN + 1));
	struct got g = {0};
	size_t total = 0;

	for (int i = 0; i < N; i++) {
		char *n = names + (size_t)i * (LEN + 1);

		memset(n, 'x', LEN);
		snprintf(n + LEN - 8, 9, "%08d", i);
		e[i].value = 16 * (uint64_t)(i + 1);
		e[i].size = 16;
		e[i].name = n;
	}
	ck_assert_int_eq(ta_syms_encode(NULL, 0, 0, "/p", TA_SYMS_DYNSYM, e, N, keep, &g), 0);
	ck_assert_int_gt(g.n, 1);
	for (int c = 0; c < g.n; c++) {
		struct ta_syms s;

		ck_assert_uint_le(g.len[c], TA_SYMS_CHUNK_BYTES);
		ck_assert_int_eq(ta_syms_decode(g.p[c], g.len[c], &s), 0);
		for (size_t i = 0; i < s.n; i++) {
			ck_assert_uint_eq(s.e[i].value, e[total + i].value);
			ck_assert_str_eq(s.e[i].name, e[total + i].name);
		}
		total += s.n;
		ta_syms_free(&s);
	}
	ck_assert_uint_eq(total, N);
	got_free(&g);
	free(names);
	free(e);
}
END_TEST

START_TEST(syms_pick_rule)
{
	struct ta_syms_raw r[] = {
	    {0x20, 0, "label", 0, 0}, {0x20, 8, "local", 1, 2},	 {0x20, 8, "weak", 2, 1},
	    {0x10, 4, "first", 3, 0}, {0x20, 8, "global", 4, 0}, {0x20, 8, "global2", 5, 0},
	};
	size_t n = ta_syms_pick(r, 6);

	ck_assert_uint_eq(n, 2);
	ck_assert_str_eq(r[0].name, "first");
	ck_assert_str_eq(r[1].name, "global");
}
END_TEST

/* The analyzer's side: a module whose file is not there is named from
 * the store, demangled. */
START_TEST(store_names_module)
{
	static const struct ta_syms_entry cxx[] = {{0x1100, 32, "_ZN2ns5twiceEi"},
						   {0x1200, 16, "main"}};
	struct ta_symstore *st = NULL;
	struct ta_resolver *r = ta_resolver_new();
	const struct ta_resolved *rv;
	struct got g = {0};

	ck_assert_int_eq(
	    ta_syms_encode(id, 2, 0, "/nonexistent/prog", TA_SYMS_SYMTAB, cxx, 2, keep, &g), 0);
	/* Stored twice (two processes): one table. */
	ck_assert_int_eq(ta_symstore_chunk(&st, g.p[0], g.len[0]), 0);
	ck_assert_int_eq(ta_symstore_chunk(&st, g.p[0], g.len[0]), 0);
	ck_assert_int_eq(ta_symstore_has(st, "/elsewhere", id, 2), 1);
	ck_assert_int_eq(ta_symstore_has(st, "/nonexistent/prog", id, 1), 0);
	ta_resolver_stored(r, ta_symstore_table, &st);
	rv = ta_resolve(r, "/moved/prog", id, 2, 0x1108);
	ck_assert_int_eq(rv->found, 1);
	ck_assert_str_eq(rv->raw, "_ZN2ns5twiceEi");
	ck_assert_str_eq(rv->name, "ns::twice(int)");
	ck_assert_uint_eq(rv->offset, 0x1100);
	rv = ta_resolve(r, "/moved/prog", id, 2, 0x1200);
	ck_assert_str_eq(rv->name, "main");
	rv = ta_resolve(r, "/moved/prog", id, 2, 0x1300);
	ck_assert_int_eq(rv->found, 0);
	ck_assert_str_eq(rv->name, "prog+0x1300");
	ta_resolver_free(r);
	ta_symstore_free(st);
	got_free(&g);
	/* An empty table names nothing: the resolver goes to the file. */
	st = NULL;
	ck_assert_int_eq(ta_syms_encode(id, 2, 0, "/p", 0, NULL, 0, keep, &g), 0);
	ck_assert_int_eq(g.n, 1);
	ck_assert_int_eq(ta_symstore_chunk(&st, g.p[0], g.len[0]), 0);
	ck_assert_int_eq(ta_symstore_has(st, "/p", id, 2), 0);
	ck_assert_ptr_null(ta_symstore_table(&st, "/p", id, 2));
	ta_symstore_free(st);
	got_free(&g);
}
END_TEST

static Suite *symchunk_suite(void)
{
	Suite *s = suite_create("symchunk");
	TCase *tc = tcase_create("symchunk");

	tcase_add_test(tc, syms_exact_bytes);
	tcase_add_test(tc, syms_hostile);
	tcase_add_test(tc, syms_bound_and_split);
	tcase_add_test(tc, syms_pick_rule);
	tcase_add_test(tc, store_names_module);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ta_check_run(symchunk_suite());
}
