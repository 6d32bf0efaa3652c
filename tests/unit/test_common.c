/* SPDX-License-Identifier: MIT */
/*
 * test_common.c - the option parsers shared by the analysis commands
 * (analyzer/lib/common.c): durations, time ranges and globs; and the hash index
 * over a caller's rows (ta_htab) that the analyzer's tables use.
 */
#include <check.h>

#include "../check_run.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "testutil.h"

static uint64_t time_of(const char *s)
{
	uint64_t ns = 12345;

	ck_assert_msg(ta_parse_time(s, &ns) == 0, "\"%s\" refused", s);
	return ns;
}

static void refused(const char *s)
{
	uint64_t ns = 12345;

	ck_assert_msg(ta_parse_time(s, &ns) < 0, "\"%s\" accepted", s);
	ck_assert_uint_eq(ns, 12345);
}

START_TEST(parse_time_units)
{
	ck_assert_uint_eq(time_of("0"), 0);
	ck_assert_uint_eq(time_of("300"), 300);
	ck_assert_uint_eq(time_of("300ns"), 300);
	ck_assert_uint_eq(time_of("200us"), 200000);
	ck_assert_uint_eq(time_of("10ms"), 10000000);
	ck_assert_uint_eq(time_of("1.5s"), 1500000000);
	ck_assert_uint_eq(time_of("2s"), 2000000000);
	ck_assert_uint_eq(time_of("2min"), 120000000000ull);
	ck_assert_uint_eq(time_of(".5ms"), 500000);
	ck_assert_uint_eq(time_of("1.ms"), 1000000);
	ck_assert_uint_eq(time_of("0.000000001s"), 1);
	ck_assert_uint_eq(time_of("1.250000000000000000s"), 1250000000);
	ck_assert_uint_eq(time_of("0.1min"), 6000000000ull);
	ck_assert_uint_eq(time_of("18446744073709551615"), UINT64_MAX);
	ck_assert_uint_eq(time_of("18446744073ns"), 18446744073ull);
}
END_TEST

START_TEST(parse_time_refusals)
{
	refused("");
	refused("ms");
	refused(".");
	refused("-1");
	refused("10 ms");
	refused("10m");
	refused("10MS");
	refused("10msx");
	refused("1.5"); /* half a nanosecond */
	refused("1.5ns");
	refused("0.0000000001s");
	refused("18446744073709551616");
	refused("18446744074s");
	refused("1.1.1s");
	refused("0.1234567890123456789s"); /* too many decimals */
}
END_TEST

START_TEST(parse_time_range)
{
	uint64_t lo = 1, hi = 2;

	ck_assert_int_eq(ta_parse_time_range("10ms-20ms", &lo, &hi), 0);
	ck_assert_uint_eq(lo, 10000000);
	ck_assert_uint_eq(hi, 20000000);
	ck_assert_int_eq(ta_parse_time_range("1.5s-", &lo, &hi), 0);
	ck_assert_uint_eq(lo, 1500000000);
	ck_assert_uint_eq(hi, UINT64_MAX);
	ck_assert_int_eq(ta_parse_time_range("-300", &lo, &hi), 0);
	ck_assert_uint_eq(lo, 0);
	ck_assert_uint_eq(hi, 300);
	ck_assert_int_eq(ta_parse_time_range("-", &lo, &hi), 0);
	ck_assert_uint_eq(lo, 0);
	ck_assert_uint_eq(hi, UINT64_MAX);
	ck_assert_int_eq(ta_parse_time_range("5us-5us", &lo, &hi), 0);
	ck_assert_uint_eq(lo, 5000);
	ck_assert_uint_eq(hi, 5000);

	ck_assert_int_lt(ta_parse_time_range("", &lo, &hi), 0);
	ck_assert_int_lt(ta_parse_time_range("10ms", &lo, &hi), 0);
	ck_assert_int_lt(ta_parse_time_range("20ms-10ms", &lo, &hi), 0);
	ck_assert_int_lt(ta_parse_time_range("10xs-20ms", &lo, &hi), 0);
	ck_assert_int_lt(ta_parse_time_range("10ms-20xs", &lo, &hi), 0);
	ck_assert_int_lt(ta_parse_time_range("1-2-3", &lo, &hi), 0);
}
END_TEST

START_TEST(glob)
{
	ck_assert(ta_glob_match("*", ""));
	ck_assert(ta_glob_match("*", "anything"));
	ck_assert(ta_glob_match("", ""));
	ck_assert(!ta_glob_match("", "a"));
	ck_assert(ta_glob_match("main", "main"));
	ck_assert(!ta_glob_match("main", "mains"));
	ck_assert(!ta_glob_match("main", "mai"));
	ck_assert(ta_glob_match("fib*", "fib"));
	ck_assert(ta_glob_match("fib*", "fibonacci"));
	ck_assert(!ta_glob_match("fib*", "xfib"));
	ck_assert(ta_glob_match("*fib", "xfib"));
	ck_assert(ta_glob_match("*a*b*c", "xxaxxbxxbxc"));
	ck_assert(!ta_glob_match("*a*b*c", "xxaxxbxxbxcd"));
	ck_assert(ta_glob_match("a**b", "ab"));
	ck_assert(ta_glob_match("?", "x"));
	ck_assert(!ta_glob_match("?", ""));
	ck_assert(!ta_glob_match("?", "xy"));
	ck_assert(ta_glob_match("f?b", "fib"));
	ck_assert(ta_glob_match("level[0-9]", "level7"));
	ck_assert(!ta_glob_match("level[0-9]", "levelx"));
	ck_assert(ta_glob_match("level[!0-9]", "levelx"));
	ck_assert(!ta_glob_match("level[^0-9]", "level3"));
	ck_assert(ta_glob_match("[abc]x", "bx"));
	ck_assert(ta_glob_match("[]]", "]"));
	ck_assert(ta_glob_match("[a-]", "-"));
	/* C++ names: an unclosed '[' is literal; '\\' quotes. */
	ck_assert(ta_glob_match("Foo::operator[*", "Foo::operator[](unsigned long)"));
	ck_assert(ta_glob_match("Foo::operator\\[\\]*", "Foo::operator[](int)"));
	ck_assert(ta_glob_match("ns::*::get(*)", "ns::Box<int>::get(int) const") == 0);
	ck_assert(ta_glob_match("ns::*::get(*)*", "ns::Box<int>::get(int) const"));
	ck_assert(ta_glob_match("\\*", "*"));
	ck_assert(!ta_glob_match("\\*", "x"));
	/* A name given whole matches itself: the agent's waits. */
	ck_assert(ta_glob_match("[traceagent wait]", "[traceagent wait]"));
	ck_assert(ta_glob_match("[traceagent wait]", "t")); /* a set all the same */
	ck_assert(!ta_glob_match("[traceagent wait]", "[traceagent"));
}
END_TEST

/* ---- the hash index (ta_htab) ---------------------------------------------------------- */

/* A caller's rows: keys in the order added, hashed by the test's choice. */
struct keys {
	uint64_t *k;
	size_t n, cap;
	uint64_t (*hash)(uint64_t key);
	struct ta_htab h;
};

static uint64_t mixed(uint64_t key)
{
	key = (key ^ (key >> 30)) * 0xbf58476d1ce4e5b9ull;
	key = (key ^ (key >> 27)) * 0x94d049bb133111ebull;
	return key ^ (key >> 31);
}

/* Every key collides: one probe run holds them all. */
static uint64_t constant(uint64_t key)
{
	return 5;
}

/* Every key starts at the last slot, so the run wraps to slot 0. */
static uint64_t last(uint64_t key)
{
	return UINT64_MAX;
}

static uint64_t key_hash(const void *ctx, size_t i)
{
	const struct keys *ks = ctx;

	return ks->hash(ks->k[i]);
}

static int key_is(const void *ctx, size_t i, const void *key)
{
	return ((const struct keys *)ctx)->k[i] == *(const uint64_t *)key;
}

/* The index of key's row, added when add is set and it is missing;
 * SIZE_MAX when it is missing and not added. */
static size_t keys_get(struct keys *ks, uint64_t key, int add)
{
	size_t k;
	uint32_t at;

	if (add)
		REQUIRE(ta_htab_reserve(&ks->h, ks->n, 8, key_hash, ks) == 0, "no memory");
	else if (!ks->h.nslots)
		return SIZE_MAX;
	k = ta_htab_find(&ks->h, ks->hash(key), key_is, ks, &key);
	REQUIRE(k < ks->h.nslots, "position %zu of %zu slots", k, ks->h.nslots);
	at = ta_htab_at(&ks->h, k);
	if (at) {
		REQUIRE(at <= ks->n && ks->k[at - 1] == key, "key %llu: slot %zu holds row %u",
			(unsigned long long)key, k, at);
		return at - 1;
	}
	if (!add)
		return SIZE_MAX;
	if (ks->n == ks->cap) {
		ks->cap = ks->cap ? 2 * ks->cap : 16;
		ks->k = realloc(ks->k, ks->cap * sizeof(*ks->k));
		ck_assert_ptr_nonnull(ks->k);
	}
	ks->k[ks->n] = key;
	ta_htab_put(&ks->h, k, ks->n);
	return ks->n++;
}

/* Each row in exactly one slot, where a lookup of its key finds it; the
 * table a power of two at most half full. */
static void keys_check(const struct keys *ks)
{
	char *seen = calloc(ks->n + 1, 1);
	size_t used = 0;

	ck_assert_ptr_nonnull(seen);
	ck_assert_uint_ne(ks->h.nslots, 0);
	ck_assert_uint_eq(ks->h.nslots & (ks->h.nslots - 1), 0);
	ck_assert_uint_le(ks->n * 2, ks->h.nslots);
	for (size_t k = 0; k < ks->h.nslots; k++) {
		uint32_t at = ta_htab_at(&ks->h, k);

		if (!at)
			continue;
		REQUIRE(at <= ks->n, "slot %zu: row %u of %zu", k, at, ks->n);
		REQUIRE(!seen[at - 1], "row %u in two slots", at);
		seen[at - 1] = 1;
		used++;
	}
	ck_assert_uint_eq(used, ks->n);
	for (size_t i = 0; i < ks->n; i++) {
		size_t k = ta_htab_find(&ks->h, ks->hash(ks->k[i]), key_is, ks, &ks->k[i]);

		REQUIRE(ta_htab_at(&ks->h, k) == i + 1, "row %zu found at slot %zu (row %u)", i, k,
			ta_htab_at(&ks->h, k));
	}
	free(seen);
}

static void keys_free(struct keys *ks)
{
	free(ks->k);
	ks->k = NULL;
	ks->n = ks->cap = 0;
	ta_htab_free(&ks->h);
	ck_assert_ptr_null(ks->h.slot);
	ck_assert_uint_eq(ks->h.nslots, 0);
}

/* Many keys with a good hash: each added once, in order, found again
 * after every growth; absent keys are not found. */
START_TEST(htab_many)
{
	struct keys ks = {.hash = mixed};
	struct rng r = {test_seed("htab_many")};
	const size_t n = 100000;
	/* Keys from one random odd step: distinct, and unlike 0, 1, 2... */
	const uint64_t step = rng_next(&r) | 1, base = rng_next(&r);

	ck_assert_uint_eq(keys_get(&ks, 42, 0), SIZE_MAX); /* no slots yet */
	for (size_t i = 0; i < n; i++) {
		REQUIRE(keys_get(&ks, base + i * step, 1) == i, "key %zu not added as row %zu", i,
			i);
		if (!(i & (i + 1)))
			keys_check(&ks); /* after 1, 2, 4, 8... keys: around each growth */
	}
	keys_check(&ks);
	ck_assert_uint_eq(ks.n, n);
	/* The smallest power of two at least twice the rows. */
	ck_assert_uint_eq(ks.h.nslots, 262144);
	/* Adding them again finds each in its row, and adds nothing. */
	for (size_t i = 0; i < n; i++)
		REQUIRE(keys_get(&ks, base + i * step, 1) == i, "key %zu: another row", i);
	ck_assert_uint_eq(ks.n, n);
	for (size_t i = n; i < 2 * n; i++)
		REQUIRE(keys_get(&ks, base + i * step, 0) == SIZE_MAX, "absent key %zu found", i);
	ck_assert_uint_eq(ks.n, n);
	keys_free(&ks);
}
END_TEST

/* A hash that always collides: the equality test alone tells keys apart. */
START_TEST(htab_collisions)
{
	struct keys ks = {.hash = constant};
	const size_t n = 1000;

	for (size_t i = 0; i < n; i++)
		REQUIRE(keys_get(&ks, i * 3, 1) == i, "key %zu not added as row %zu", i, i);
	keys_check(&ks);
	ck_assert_uint_eq(ks.n, n);
	ck_assert_uint_eq(ks.h.nslots, 2048);
	for (size_t i = 0; i < n; i++) {
		REQUIRE(keys_get(&ks, i * 3, 0) == i, "key %zu: another row", i);
		REQUIRE(keys_get(&ks, i * 3 + 1, 0) == SIZE_MAX, "absent key %zu found", i * 3 + 1);
	}
	ck_assert_uint_eq(keys_get(&ks, 3 * n, 0), SIZE_MAX);
	/* The run starts at slot 5 and holds the rows in the order added. */
	for (size_t i = 0; i < n; i++)
		REQUIRE(ta_htab_at(&ks.h, 5 + i) == i + 1, "slot %zu", 5 + i);
	ck_assert_uint_eq(ta_htab_at(&ks.h, 4), 0);
	ck_assert_uint_eq(ta_htab_at(&ks.h, 5 + n), 0);
	keys_free(&ks);
}
END_TEST

/* The first size, when the table doubles, and a probe run that wraps past
 * the last slot. */
START_TEST(htab_growth)
{
	struct keys ks = {.hash = last};

	ck_assert_uint_eq(keys_get(&ks, 10, 1), 0);
	ck_assert_uint_eq(ks.h.nslots, 8);
	ck_assert_uint_eq(keys_get(&ks, 11, 1), 1);
	ck_assert_uint_eq(keys_get(&ks, 12, 1), 2);
	ck_assert_uint_eq(ta_htab_at(&ks.h, 7), 1);
	ck_assert_uint_eq(ta_htab_at(&ks.h, 0), 2);
	ck_assert_uint_eq(ta_htab_at(&ks.h, 1), 3);
	ck_assert_uint_eq(ta_htab_at(&ks.h, 2), 0);
	ck_assert_uint_eq(keys_get(&ks, 12, 0), 2);
	ck_assert_uint_eq(keys_get(&ks, 13, 0), SIZE_MAX);
	/* Four rows fill half of 8 slots; the fifth doubles the table. */
	ck_assert_uint_eq(keys_get(&ks, 13, 1), 3);
	ck_assert_uint_eq(ks.h.nslots, 8);
	ck_assert_uint_eq(keys_get(&ks, 14, 1), 4);
	ck_assert_uint_eq(ks.h.nslots, 16);
	keys_check(&ks);
	/* Put back in row order from the last slot of the new size. */
	ck_assert_uint_eq(ta_htab_at(&ks.h, 15), 1);
	for (size_t k = 0; k < 4; k++)
		ck_assert_uint_eq(ta_htab_at(&ks.h, k), k + 2);
	for (uint64_t key = 10; key < 15; key++)
		ck_assert_uint_eq(keys_get(&ks, key, 1), key - 10);
	ck_assert_uint_eq(ks.n, 5);
	keys_free(&ks);
	keys_free(&ks); /* freeing an empty table is harmless */
}
END_TEST

/* ta_htab_grow directly: rows the table never saw are all put in. */
START_TEST(htab_grow_rows)
{
	struct keys ks = {.hash = mixed};
	uint64_t k[300];

	for (size_t i = 0; i < 300; i++)
		k[i] = i * i;
	ks.k = k;
	ks.n = 300;
	ck_assert_int_eq(ta_htab_grow(&ks.h, ks.n, 1024, key_hash, &ks), 0);
	ck_assert_uint_eq(ks.h.nslots, 1024);
	keys_check(&ks);
	ck_assert_int_eq(ta_htab_grow(&ks.h, ks.n, 1024, key_hash, &ks), 0);
	ck_assert_uint_eq(ks.h.nslots, 2048);
	keys_check(&ks);
	ck_assert_uint_eq(keys_get(&ks, 2, 0), SIZE_MAX);
	ck_assert_uint_eq(keys_get(&ks, 299 * 299, 0), 299);
	ks.k = NULL;
	keys_free(&ks);
}
END_TEST

/* ---- rows taken out (ta_htab_del, ta_htab_regrow) ---- */

/* Keys that name their home: (home << 8) | id. */
static uint64_t homed(uint64_t key)
{
	return key >> 8;
}

/* Appends key as a new row and puts it in the table, which counts its
 * rows in *nheld (first size 16); the row's index. */
static size_t held_put(struct keys *ks, size_t *nheld, uint64_t key)
{
	size_t k;

	REQUIRE(ta_htab_reserve_held(&ks->h, *nheld, 16, key_hash, ks) == 0, "no memory");
	k = ta_htab_find(&ks->h, ks->hash(key), key_is, ks, &key);
	REQUIRE(!ta_htab_at(&ks->h, k), "key %llu already in", (unsigned long long)key);
	if (ks->n == ks->cap) {
		ks->cap = ks->cap ? 2 * ks->cap : 16;
		ks->k = realloc(ks->k, ks->cap * sizeof(*ks->k));
		ck_assert_ptr_nonnull(ks->k);
	}
	ks->k[ks->n] = key;
	ta_htab_put(&ks->h, k, ks->n);
	++*nheld;
	return ks->n++;
}

/* Takes key's row out of the table (the row stays in the array). */
static void held_del(struct keys *ks, size_t *nheld, uint64_t key)
{
	size_t k = ta_htab_find(&ks->h, ks->hash(key), key_is, ks, &key);

	REQUIRE(ta_htab_at(&ks->h, k), "key %llu not in", (unsigned long long)key);
	ta_htab_del(&ks->h, k, key_hash, ks);
	--*nheld;
}

/* The rows the slots hold from position from on, as index + 1 (0 empty). */
static void slots_are(const struct keys *ks, size_t from, const uint32_t *want, size_t n)
{
	for (size_t j = 0; j < n; j++) {
		size_t k = (from + j) & (ks->h.nslots - 1);

		REQUIRE(ta_htab_at(&ks->h, k) == want[j], "slot %zu holds %u, not %u", k,
			ta_htab_at(&ks->h, k), want[j]);
	}
}

/* Every key in: found at its row; every key out: not found; the slots hold
 * exactly the rows in. */
static void held_check(const struct keys *ks, const char *in, size_t nheld)
{
	size_t used = 0;

	for (size_t k = 0; k < ks->h.nslots; k++)
		if (ta_htab_at(&ks->h, k)) {
			REQUIRE(in[ta_htab_at(&ks->h, k) - 1], "slot %zu holds row %u, taken out",
				k, ta_htab_at(&ks->h, k) - 1);
			used++;
		}
	ck_assert_uint_eq(used, nheld);
	ck_assert_uint_le(nheld * 2, ks->h.nslots);
	for (size_t i = 0; i < ks->n; i++) {
		size_t k = ta_htab_find(&ks->h, ks->hash(ks->k[i]), key_is, ks, &ks->k[i]);

		REQUIRE(ta_htab_at(&ks->h, k) == (in[i] ? i + 1 : 0), "row %zu: slot %zu holds %u",
			i, k, ta_htab_at(&ks->h, k));
	}
}

/* One run of colliding keys: the rows after the hole move back one slot,
 * in their order; the run's end is emptied. */
START_TEST(htab_del_collisions)
{
	struct keys ks = {.hash = constant};
	size_t nheld = 0;
	char in[7] = {1, 1, 1, 1, 1, 1, 1};
	static const uint32_t after3[] = {0, 1, 2, 3, 5, 6, 7, 0};
	static const uint32_t after0[] = {0, 2, 3, 5, 6, 7, 0, 0};
	static const uint32_t after6[] = {0, 2, 3, 5, 6, 0};

	for (uint64_t i = 0; i < 7; i++)
		ck_assert_uint_eq(held_put(&ks, &nheld, 100 + i), i);
	ck_assert_uint_eq(ks.h.nslots, 16);
	held_del(&ks, &nheld, 103);
	in[3] = 0;
	slots_are(&ks, 4, after3, 8);
	held_check(&ks, in, nheld);
	held_del(&ks, &nheld, 100); /* the run's first */
	in[0] = 0;
	slots_are(&ks, 4, after0, 8);
	held_check(&ks, in, nheld);
	held_del(&ks, &nheld, 106); /* its last: nothing moves */
	in[6] = 0;
	slots_are(&ks, 4, after6, 6);
	held_check(&ks, in, nheld);
	ck_assert_uint_eq(nheld, 4);
	keys_free(&ks);
}
END_TEST

/* Runs of several homes that wrap past the last slot: a row moves back
 * only when the hole is not before its home. */
START_TEST(htab_del_homes)
{
	struct keys ks = {.hash = homed};
	size_t nheld = 0;
	char in[5] = {1, 1, 1, 1, 1};
	/* 14: A(14) 15: B(14) 0: C(15) 1: D(0) 2: E(14) */
	static const uint64_t key[5] = {14 << 8 | 1, 14 << 8 | 2, 15 << 8 | 3, 0 << 8 | 4,
					14 << 8 | 5};
	static const uint32_t start[] = {1, 2, 3, 4, 5, 0};
	static const uint32_t no_b[] = {1, 3, 4, 5, 0, 0};
	static const uint32_t no_a[] = {5, 3, 4, 0, 0};

	for (size_t i = 0; i < 5; i++)
		ck_assert_uint_eq(held_put(&ks, &nheld, key[i]), i);
	ck_assert_uint_eq(ks.h.nslots, 16);
	slots_are(&ks, 14, start, 6);
	/* C, D and E all move back: the hole at 15 is at or after each home. */
	held_del(&ks, &nheld, key[1]);
	in[1] = 0;
	slots_are(&ks, 14, no_b, 6);
	held_check(&ks, in, nheld);
	/* C (home 15) and D (home 0) stay: the hole at 14 is before their
	 * homes.  E (home 14) moves over them into it. */
	held_del(&ks, &nheld, key[0]);
	in[0] = 0;
	slots_are(&ks, 14, no_a, 5);
	held_check(&ks, in, nheld);
	keys_free(&ks);
}
END_TEST

/* Growth with rows taken out: the table holds and finds only the rows in,
 * sized by their count, and a run that wrapped keeps its order. */
START_TEST(htab_regrow)
{
	struct keys ks = {.hash = mixed};
	size_t nheld = 0;
	char *in = calloc(2000, 1);

	ck_assert_ptr_nonnull(in);
	for (size_t i = 0; i < 1000; i++) {
		ck_assert_uint_eq(held_put(&ks, &nheld, i * 7919 + 3), i);
		in[i] = 1;
	}
	ck_assert_uint_eq(ks.h.nslots, 2048);
	for (size_t i = 0; i < 1000; i++)
		if (i % 5 < 3) {
			held_del(&ks, &nheld, i * 7919 + 3);
			in[i] = 0;
			if (i % 97 == 0)
				held_check(&ks, in, nheld);
		}
	ck_assert_uint_eq(nheld, 400);
	held_check(&ks, in, nheld);
	for (size_t i = 1000; i < 2000; i++) {
		ck_assert_uint_eq(held_put(&ks, &nheld, i * 7919 + 3), i);
		in[i] = 1;
	}
	ck_assert_uint_eq(nheld, 1400);
	/* 2048 slots hold 1023 rows at most: 4096 (not the 8192 of rows 2000). */
	ck_assert_uint_eq(ks.h.nslots, 4096);
	held_check(&ks, in, nheld);
	keys_free(&ks);
	free(in);

	/* Home 15 of 16, then 31 of 32: the run wraps, and is put back from
	 * its start, not from slot 0. */
	struct keys w = {.hash = last};
	static const uint32_t run16[] = {1, 2, 4, 6, 0};
	static const uint32_t run32[] = {1, 2, 4, 6, 7, 8, 9, 10, 11, 0};
	char win[11] = {1, 1, 0, 1, 0, 1, 1, 1, 1, 1, 1};

	nheld = 0;
	for (uint64_t i = 0; i < 6; i++)
		held_put(&w, &nheld, 50 + i);
	held_del(&w, &nheld, 52);
	held_del(&w, &nheld, 54);
	ck_assert_uint_eq(w.h.nslots, 16);
	slots_are(&w, 15, run16, 5);
	for (uint64_t i = 6; i < 11; i++)
		held_put(&w, &nheld, 50 + i);
	ck_assert_uint_eq(w.h.nslots, 32);
	slots_are(&w, 31, run32, 10);
	held_check(&w, win, nheld);
	/* Cleared: the same slots, all empty, and filled again from nothing. */
	ta_htab_clear(&w.h);
	ck_assert_uint_eq(w.h.nslots, 32);
	for (size_t k = 0; k < 32; k++)
		ck_assert_uint_eq(ta_htab_at(&w.h, k), 0);
	memset(win, 0, sizeof(win));
	nheld = 0;
	held_check(&w, win, nheld);
	ck_assert_uint_eq(held_put(&w, &nheld, 70), 11);
	ck_assert_uint_eq(ta_htab_at(&w.h, 31), 12);
	ck_assert_uint_eq(w.h.nslots, 32);
	keys_free(&w);
}
END_TEST

/* replay writes "()" after the names without a parameter list only. */
START_TEST(name_params)
{
	static const char *const with[] = {
	    "ns::Klass::method(int)",
	    "ns::Klass::Klass(int)",
	    "int ns::twice<int>(int)",
	    "(anonymous namespace)::helper()",
	    "Container::size() const",
	    "Container::get() const &",
	    "Container::take() &&",
	    "V::f() const volatile",
	    "f(int) [clone .cold]",
	    "g(int) [clone .constprop.0] [clone .isra.0]",
	    "main::{lambda(int)#1}::operator()(int) const",
	    "std::vector<int, std::allocator<int> >::push_back(int const&)",
	    "operator()(int)",
	    "h() noexcept",
	};
	static const char *const without[] = {
	    "main",
	    "fib",
	    "f.part.0",
	    "f.cold",
	    "",
	    "(anonymous namespace)::helper",
	    "fib+0x40",
	    "Container::size() constant",
	    "f(int) [clone .cold",
	    "f(int) x",
	    ")(",
	};

	for (size_t i = 0; i < sizeof(with) / sizeof(with[0]); i++)
		ck_assert_msg(ta_name_has_params(with[i]), "%s", with[i]);
	for (size_t i = 0; i < sizeof(without) / sizeof(without[0]); i++)
		ck_assert_msg(!ta_name_has_params(without[i]), "%s", without[i]);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("common");
	TCase *tc = tcase_create("options");
	TCase *th = tcase_create("htab");

	tcase_add_test(tc, parse_time_units);
	tcase_add_test(tc, parse_time_refusals);
	tcase_add_test(tc, parse_time_range);
	tcase_add_test(tc, glob);
	tcase_add_test(tc, name_params);
	suite_add_tcase(s, tc);
	tcase_add_test(th, htab_many);
	tcase_add_test(th, htab_collisions);
	tcase_add_test(th, htab_growth);
	tcase_add_test(th, htab_grow_rows);
	tcase_add_test(th, htab_del_collisions);
	tcase_add_test(th, htab_del_homes);
	tcase_add_test(th, htab_regrow);
	suite_add_tcase(s, th);
	return ta_check_run(s);
}
