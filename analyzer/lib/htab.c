/* SPDX-License-Identifier: MIT */
/*
 * htab.c - the hash index's growth and release (htab.h); its lookups are
 * inline in the header.
 */
#include <stdlib.h>

#include "htab.h"

int ta_htab_grow(struct ta_htab *h, size_t nrows, size_t first, ta_htab_hash_fn *hash,
		 const void *ctx)
{
	size_t n = h->nslots ? h->nslots * 2 : first;
	uint32_t *slot = calloc(n, sizeof(*slot));

	if (!slot)
		return -1;
	for (size_t i = 0; i < nrows; i++) {
		size_t k = (size_t)hash(ctx, i) & (n - 1);

		while (slot[k])
			k = (k + 1) & (n - 1);
		slot[k] = (uint32_t)i + 1;
	}
	free(h->slot);
	h->slot = slot;
	h->nslots = n;
	return 0;
}

int ta_htab_regrow(struct ta_htab *h, size_t first, ta_htab_hash_fn *hash, const void *ctx)
{
	size_t n = h->nslots ? h->nslots * 2 : first, k0 = 0;
	uint32_t *slot = calloc(n, sizeof(*slot));

	if (!slot)
		return -1;
	/* Read from an empty slot on, each probe run is met from its start
	 * and its rows are put back in their order. */
	while (k0 < h->nslots && h->slot[k0])
		k0++;
	for (size_t j = 0; j < h->nslots; j++) {
		uint32_t at = h->slot[(k0 + j) & (h->nslots - 1)];
		size_t k;

		if (!at)
			continue;
		for (k = (size_t)hash(ctx, at - 1) & (n - 1); slot[k]; k = (k + 1) & (n - 1))
			;
		slot[k] = at;
	}
	free(h->slot);
	h->slot = slot;
	h->nslots = n;
	return 0;
}

void ta_htab_free(struct ta_htab *h)
{
	free(h->slot);
	h->slot = NULL;
	h->nslots = 0;
}
