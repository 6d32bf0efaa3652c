/* SPDX-License-Identifier: MIT */
/*
 * htab.h - the analyzer's hash table: an index over rows a caller keeps
 * in an array of its own (functions, threads, call-tree nodes, live
 * blocks, symbol answers...).
 */
#ifndef TA_HTAB_H
#define TA_HTAB_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/*
 * Open addressing with linear probing over rows the caller keeps in an
 * array of its own, in the order they were added (the order outputs
 * follow, whatever the hashes): a slot holds a row's index + 1, 0 when
 * empty (so fewer than 2^32 - 1 rows).  ta_htab_reserve keeps it at most
 * half full, so probe runs stay short and always end at an empty slot.
 * Rows leave only through ta_htab_del (below).
 *
 * A row's position is its hash masked to the table's size: the caller's
 * hash must be well mixed in its low bits.  The lookup is inline and takes
 * its equality test as a function the compiler inlines into the probe
 * loop at -O2 (the callers are per-event loops), so a caller's table is
 * as fast as the loop it would write by hand.
 */
struct ta_htab {
	uint32_t *slot;
	size_t nslots; /* a power of two, or 0 before the first reserve */
};

/* The hash of row i of the caller's rows (ctx). */
typedef uint64_t ta_htab_hash_fn(const void *ctx, size_t i);
/* Whether row i of the caller's rows (ctx) has the key. */
typedef int ta_htab_eq_fn(const void *ctx, size_t i, const void *key);

/* Doubles the table (to first slots, a power of two, when it has none)
 * and puts rows [0, nrows) back with hash.  Returns 0, or -1 without
 * memory (the table is then unchanged). */
int ta_htab_grow(struct ta_htab *h, size_t nrows, size_t first, ta_htab_hash_fn *hash,
		 const void *ctx);
void ta_htab_free(struct ta_htab *h);

/* Makes room for one more row beside the nrows there are: call before
 * ta_htab_find when a row may be added.  0, or -1 without memory. */
static inline int ta_htab_reserve(struct ta_htab *h, size_t nrows, size_t first,
				  ta_htab_hash_fn *hash, const void *ctx)
{
	if ((nrows + 1) * 2 <= h->nslots)
		return 0;
	return ta_htab_grow(h, nrows, first, hash, ctx);
}

/*
 * The position of the slot holding the row with key (hash is the key's,
 * eq tells the row), or when no row has it, of the empty slot where it
 * goes (ta_htab_put).  The table must have slots: ta_htab_reserve first,
 * or check nslots for a lookup alone.
 */
static inline size_t ta_htab_find(const struct ta_htab *h, uint64_t hash, ta_htab_eq_fn *eq,
				  const void *ctx, const void *key)
{
	const size_t mask = h->nslots - 1;
	size_t k;

	for (k = (size_t)hash & mask; h->slot[k]; k = (k + 1) & mask)
		if (eq(ctx, h->slot[k] - 1, key))
			break;
	return k;
}

/* The row at position k: its index + 1, or 0 when the slot is empty. */
static inline uint32_t ta_htab_at(const struct ta_htab *h, size_t k)
{
	return h->slot[k];
}

/* Puts row i at the empty position k ta_htab_find gave (with no grow in
 * between: a grow moves the rows to other slots). */
static inline void ta_htab_put(struct ta_htab *h, size_t k, size_t i)
{
	h->slot[k] = (uint32_t)i + 1;
}

/* Empties the table, keeping its slots (a table refilled again and again). */
static inline void ta_htab_clear(struct ta_htab *h)
{
	if (h->nslots)
		memset(h->slot, 0, h->nslots * sizeof(*h->slot));
}

/*
 * Tables that hold only some of the caller's rows: rows taken out
 * (ta_htab_del), or rows never put in.  Rows [0, nrows) no longer tell
 * what the table holds, so such a table grows by putting back the rows
 * its slots hold (ta_htab_regrow), with nheld, the count of rows in it,
 * keeping it at most half full (ta_htab_reserve_held).
 */
int ta_htab_regrow(struct ta_htab *h, size_t first, ta_htab_hash_fn *hash, const void *ctx);

/* Makes room for one more row beside the nheld the table holds.  0, or -1
 * without memory. */
static inline int ta_htab_reserve_held(struct ta_htab *h, size_t nheld, size_t first,
				       ta_htab_hash_fn *hash, const void *ctx)
{
	while ((nheld + 1) * 2 > h->nslots)
		if (ta_htab_regrow(h, first, hash, ctx) < 0)
			return -1;
	return 0;
}

/*
 * Takes the row at position k out of the table (the caller's row stays
 * where it is).  The rows after it in its probe run move back into the
 * hole when their own run allows (backward shift), so that no lookup
 * stops short and no tombstone is left.  hash gives a row's hash, as for
 * the grows.
 */
static inline void ta_htab_del(struct ta_htab *h, size_t k, ta_htab_hash_fn *hash, const void *ctx)
{
	const size_t mask = h->nslots - 1;

	for (size_t j = (k + 1) & mask; h->slot[j]; j = (j + 1) & mask) {
		size_t home = (size_t)hash(ctx, h->slot[j] - 1) & mask;

		/* The row at j may fill the hole unless its home lies after
		 * the hole, up to j: it would then be found no more. */
		if (((j - home) & mask) >= ((j - k) & mask)) {
			h->slot[k] = h->slot[j];
			k = j;
		}
	}
	h->slot[k] = 0;
}

#endif /* TA_HTAB_H */
