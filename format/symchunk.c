/* SPDX-License-Identifier: MIT */
/*
 * symchunk.c - the SYMBOLS chunk's encoder and decoder (format.h,
 * FORMAT.md "19 SYMBOLS"), and the rule that picks one name per address,
 * so that the agent stores the names a reader of the file would show.
 */
#include <stdlib.h>
#include <string.h>

#include "format.h"

static int raw_cmp(const void *a, const void *b)
{
	const struct ta_syms_raw *x = a, *y = b;

	if (x->value != y->value)
		return x->value < y->value ? -1 : 1;
	/* Sized before size 0, then by binding, then table order. */
	if (!x->size != !y->size)
		return x->size ? -1 : 1;
	if (x->rank != y->rank)
		return x->rank - y->rank;
	return x->order < y->order ? -1 : x->order > y->order;
}

size_t ta_syms_pick(struct ta_syms_raw *r, size_t n)
{
	size_t k = 0;

	if (n > 1)
		qsort(r, n, sizeof(*r), raw_cmp);
	for (size_t i = 0; i < n; i++)
		if (!k || r[k - 1].value != r[i].value)
			r[k++] = r[i];
	return k;
}

/* ---- encoding ------------------------------------------------------------- */

struct enc {
	struct ta_buf head, body;
	uint64_t count, prev_value, names;
	const char *prev;
	size_t prev_len;
};

static void enc_start(struct enc *c)
{
	c->body.len = 0;
	c->count = c->prev_value = c->names = 0;
	c->prev = "";
	c->prev_len = 0;
}

/* The chunk so far (head, count, entries) to emit. */
static int enc_flush(struct enc *c, size_t head_len,
		     int (*emit)(void *arg, const void *payload, size_t len), void *arg)
{
	struct ta_buf out = {0};
	int rc;

	ta_buf_put(&out, c->head.p, head_len);
	ta_buf_u(&out, c->count);
	ta_buf_put(&out, c->body.p, c->body.len);
	rc = out.oom ? -TA_E_NOMEM : emit(arg, out.p, out.len);
	ta_buf_free(&out);
	return rc;
}

int ta_syms_encode(const uint8_t *build_id, size_t build_id_len, uint64_t bias, const char *path,
		   unsigned source, const struct ta_syms_entry *e, size_t n,
		   int (*emit)(void *arg, const void *payload, size_t len), void *arg)
{
	struct enc c = {{0}, {0}, 0, 0, 0, NULL, 0};
	size_t head_len;
	int rc = 0;

	ta_buf_str(&c.head, (const char *)build_id, build_id_len);
	ta_buf_u(&c.head, bias);
	ta_buf_str(&c.head, path, strlen(path));
	ta_buf_u(&c.head, source);
	head_len = c.head.len;
	enc_start(&c);
	for (size_t i = 0; i < n && !rc; i++) {
		size_t len = strlen(e[i].name), shared = 0, before;

		if (len > TA_SYMS_NAME_MAX || (c.count && e[i].value <= c.prev_value))
			continue;
		if (c.count &&
		    c.body.len + head_len + 5 * TA_VARINT_MAX + len > TA_SYMS_CHUNK_BYTES) {
			rc = enc_flush(&c, head_len, emit, arg);
			enc_start(&c);
		}
		while (shared < len && shared < c.prev_len && e[i].name[shared] == c.prev[shared])
			shared++;
		before = head_len + 1 + c.body.len; /* the count takes a byte at least */
		/* The decoder's bound on the names a chunk makes: a name
		 * written whole always keeps within it. */
		if (c.names + len > (uint64_t)TA_SYMS_NAME_RATIO * (before + 4 + len - shared))
			shared = 0;
		ta_buf_u(&c.body, e[i].value - c.prev_value);
		ta_buf_u(&c.body, e[i].size);
		ta_buf_u(&c.body, shared);
		ta_buf_str(&c.body, e[i].name + shared, len - shared);
		c.count++;
		c.names += len;
		c.prev_value = e[i].value;
		c.prev = e[i].name;
		c.prev_len = len;
	}
	if (!rc && (c.count || !n))
		rc = enc_flush(&c, head_len, emit, arg);
	if (!rc && (c.head.oom || c.body.oom))
		rc = -TA_E_NOMEM;
	ta_buf_free(&c.head);
	ta_buf_free(&c.body);
	return rc;
}

/* ---- decoding ------------------------------------------------------------- */

void ta_syms_free(struct ta_syms *s)
{
	free(s->build_id);
	free(s->path);
	free(s->e);
	free(s->pool);
	memset(s, 0, sizeof(*s));
}

/* One pass over the entries: with pool NULL it checks them and counts
 * their names' bytes (*names), else it fills e and pool. */
static int entries(struct ta_reader r, uint64_t n, struct ta_syms_entry *e, char *pool,
		   uint64_t *names)
{
	uint64_t value = 0, at = 0, prev_at = 0, prev_len = 0;

	for (uint64_t i = 0; i < n; i++) {
		uint64_t delta, size, shared, rest;
		const uint8_t *s;

		ta_get_varint(&r, &delta);
		ta_get_varint(&r, &size);
		ta_get_varint(&r, &shared);
		ta_get_bytes(&r, &s, &rest);
		if (r.err || shared > prev_len || rest > TA_SYMS_NAME_MAX ||
		    shared + rest > TA_SYMS_NAME_MAX || (i && !delta) || delta > UINT64_MAX - value)
			return -TA_E_PAYLOAD;
		value += delta;
		if (pool) {
			memmove(pool + at, pool + prev_at, (size_t)shared);
			if (rest)
				memcpy(pool + at + shared, s, (size_t)rest);
			pool[at + shared + rest] = 0;
			e[i].value = value;
			e[i].size = size;
			e[i].name = pool + at;
		}
		prev_at = at;
		prev_len = shared + rest;
		at += prev_len + 1;
	}
	*names = at;
	return 0;
}

int ta_syms_decode(const void *payload, size_t len, struct ta_syms *out)
{
	struct ta_reader r;
	const uint8_t *id, *path;
	uint64_t idlen, pathlen, source, n, names;

	memset(out, 0, sizeof(*out));
	ta_reader_init(&r, payload, len);
	ta_get_bytes(&r, &id, &idlen);
	ta_get_varint(&r, &out->bias);
	ta_get_bytes(&r, &path, &pathlen);
	ta_get_varint(&r, &source);
	ta_get_varint(&r, &n);
	/* Each entry is four varints of a byte at least. */
	if (r.err || n > (uint64_t)(r.end - r.p) / 4)
		return -TA_E_PAYLOAD;
	if (entries(r, n, NULL, NULL, &names) < 0 || names > (uint64_t)TA_SYMS_NAME_RATIO * len + n)
		return -TA_E_PAYLOAD;
	out->build_id = malloc(idlen ? (size_t)idlen : 1);
	out->path = malloc((size_t)pathlen + 1);
	out->e = malloc((n ? (size_t)n : 1) * sizeof(*out->e));
	out->pool = malloc(names ? (size_t)names : 1);
	if (!out->build_id || !out->path || !out->e || !out->pool) {
		ta_syms_free(out);
		return -TA_E_NOMEM;
	}
	if (idlen)
		memcpy(out->build_id, id, (size_t)idlen);
	out->build_id_len = (size_t)idlen;
	if (pathlen)
		memcpy(out->path, path, (size_t)pathlen);
	out->path[pathlen] = 0;
	out->source = source > 0xffff ? 0xffff : (unsigned)source;
	entries(r, n, out->e, out->pool, &names);
	out->n = (size_t)n;
	/* Trailing bytes: a later minor version's additions. */
	return 0;
}
