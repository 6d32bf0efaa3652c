/* SPDX-License-Identifier: MIT */
/*
 * filterchunk.c - the FILTER chunk's decoder (format.h, FORMAT.md "16 FILTER").
 */
#include <stdlib.h>
#include <string.h>

#include "format.h"

static char *dup_bytes(const uint8_t *s, uint64_t n)
{
	char *c = malloc((size_t)n + 1);

	if (c) {
		if (n)
			memcpy(c, s, (size_t)n);
		c[n] = 0;
	}
	return c;
}

void ta_filter_info_free(struct ta_filter_info *f)
{
	free(f->filter);
	free(f->exclude);
	free(f->fns);
	memset(f, 0, sizeof(*f));
}

int ta_filter_decode(const void *payload, size_t len, struct ta_filter_info *out)
{
	struct ta_reader r;
	const uint8_t *fs, *es;
	uint64_t fl, el, n;

	memset(out, 0, sizeof(*out));
	ta_reader_init(&r, payload, len);
	ta_get_bytes(&r, &fs, &fl);
	ta_get_bytes(&r, &es, &el);
	ta_get_varint(&r, &out->depth);
	ta_get_varint(&r, &out->min_duration_ns);
	ta_get_varint(&r, &n);
	/* Each function is three varints of a byte at least. */
	if (r.err || n > TA_FILTER_MAX_FUNCS || n > (uint64_t)(r.end - r.p) / 3)
		return -TA_E_PAYLOAD;
	out->filter = dup_bytes(fs, fl);
	out->exclude = dup_bytes(es, el);
	out->fns = calloc(n ? (size_t)n : 1, sizeof(*out->fns));
	if (!out->filter || !out->exclude || !out->fns) {
		ta_filter_info_free(out);
		return -TA_E_NOMEM;
	}
	for (uint64_t i = 0; i < n; i++) {
		uint64_t how, kind;

		ta_get_varint(&r, &out->fns[i].addr);
		ta_get_varint(&r, &how);
		ta_get_varint(&r, &kind);
		out->fns[i].how = how > UINT32_MAX ? UINT32_MAX : (uint32_t)how;
		out->fns[i].kind = (uint32_t)(kind & 0xffffffffu);
	}
	if (r.err) {
		ta_filter_info_free(out);
		return -TA_E_PAYLOAD;
	}
	out->nfns = n;
	/* Trailing bytes: a later minor version's additions. */
	return 0;
}
