/* SPDX-License-Identifier: MIT */
/*
 * grow.c - growable arrays and byte buffers (grow.h).
 */
#include "grow.h"

#include <stdlib.h>
#include <string.h>

#include "format.h"

size_t ta_grow_cap(size_t cap, size_t need, size_t size, size_t first, size_t max)
{
	size_t most = SIZE_MAX / (size ? size : 1);

	if (max > most)
		max = most;
	if (need <= cap)
		return cap;
	if (need > max)
		return 0;
	if (!cap)
		cap = first ? first : 1;
	while (cap < need)
		cap = cap > max / 2 ? max : 2 * cap;
	return cap < max ? cap : max;
}

void *ta_vec_reserve(void *p, size_t need, size_t *cap, size_t size, size_t first)
{
	return ta_vec_reserve_max(p, need, cap, size, first, SIZE_MAX);
}

void *ta_vec_reserve_max(void *p, size_t need, size_t *cap, size_t size, size_t first, size_t max)
{
	size_t c;
	void *q;

	if (need <= *cap)
		return p;
	c = ta_grow_cap(*cap, need, size, first, max);
	if (!c)
		return NULL;
	q = realloc(p, c * size);
	if (q)
		*cap = c;
	return q;
}

int ta_buf_grow(struct ta_buf *b, size_t more)
{
	size_t cap;
	uint8_t *p;

	if (b->oom)
		return -1;
	if (more <= b->cap - b->len)
		return 0;
	if (more > SIZE_MAX - b->len)
		goto fail;
	cap = ta_grow_cap(b->cap, b->len + more, 1, TA_BUF_FIRST, b->max ? b->max : SIZE_MAX);
	if (!cap)
		goto fail;
	p = realloc(b->p, cap);
	if (!p)
		goto fail;
	b->p = p;
	b->cap = cap;
	return 0;
fail:
	b->oom = 1;
	return -1;
}

void ta_buf_put(struct ta_buf *b, const void *p, size_t n)
{
	if (!n || ta_buf_reserve(b, n) < 0)
		return;
	memcpy(b->p + b->len, p, n);
	b->len += n;
}

void ta_buf_u(struct ta_buf *b, uint64_t v)
{
	if (ta_buf_reserve(b, TA_VARINT_MAX) < 0)
		return;
	b->len = (size_t)(ta_varint_put(b->p + b->len, v) - b->p);
}

void ta_buf_str(struct ta_buf *b, const char *s, size_t len)
{
	ta_buf_u(b, len);
	ta_buf_put(b, s, len);
}

void ta_buf_free(struct ta_buf *b)
{
	size_t max = b->max;

	free(b->p);
	memset(b, 0, sizeof(*b));
	b->max = max;
}
