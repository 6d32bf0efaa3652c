/* SPDX-License-Identifier: MIT */
/*
 * pbenc.c - the protocol buffers encoder of the exports; see pbenc.h.
 */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "pbenc.h"

#include "common.h"

enum { WIRE_VARINT = 0, WIRE_I64 = 1, WIRE_LEN = 2 };

void ta_pb_init(struct ta_pb *b)
{
	memset(b, 0, sizeof(*b));
}

void ta_pb_free(struct ta_pb *b)
{
	free(b->buf);
	memset(b, 0, sizeof(*b));
}

void ta_pb_reset(struct ta_pb *b)
{
	if (b->depth)
		b->bad = 1;
	b->len = 0;
}

/* Room for n more bytes; 0, or -1 (and nomem) without memory. */
static int room(struct ta_pb *b, size_t n)
{
	uint8_t *p;

	if (b->nomem || b->bad)
		return -1;
	if (b->len + n <= b->cap)
		return 0;
	p = ta_vec_reserve(b->buf, b->len + n, &b->cap, 1, 4096);
	if (!p) {
		b->nomem = 1;
		return -1;
	}
	b->buf = p;
	return 0;
}

static size_t varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* Writes v at p (room was made); returns the bytes written. */
static size_t put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

void ta_pb_raw_varint(struct ta_pb *b, uint64_t v)
{
	if (room(b, 10) < 0)
		return;
	b->len += put_varint(b->buf + b->len, v);
}

void ta_pb_raw(struct ta_pb *b, const void *p, size_t n)
{
	if (!n || room(b, n) < 0)
		return;
	memcpy(b->buf + b->len, p, n);
	b->len += n;
}

uint8_t *ta_pb_reserve_slow(struct ta_pb *b, size_t n)
{
	return room(b, n) < 0 ? NULL : b->buf + b->len;
}

static void key(struct ta_pb *b, uint32_t field, unsigned wire)
{
	ta_pb_raw_varint(b, (uint64_t)field << 3 | wire);
}

void ta_pb_varint(struct ta_pb *b, uint32_t field, uint64_t v)
{
	key(b, field, WIRE_VARINT);
	ta_pb_raw_varint(b, v);
}

void ta_pb_double(struct ta_pb *b, uint32_t field, double d)
{
	uint64_t u;

	key(b, field, WIRE_I64);
	if (room(b, 8) < 0)
		return;
	memcpy(&u, &d, sizeof(u));
	/* Little-endian on the wire, whatever the host. */
	for (int i = 0; i < 8; i++)
		b->buf[b->len++] = (uint8_t)(u >> (8 * i));
}

void ta_pb_bytes(struct ta_pb *b, uint32_t field, const void *p, size_t n)
{
	key(b, field, WIRE_LEN);
	ta_pb_raw_varint(b, n);
	if (room(b, n) < 0)
		return;
	if (n)
		memcpy(b->buf + b->len, p, n);
	b->len += n;
}

void ta_pb_str(struct ta_pb *b, uint32_t field, const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t len = 0, bad = 0, n;
	char *fixed;

	/* A protobuf string is UTF-8 (protoc and trace processor refuse
	 * others), a program's names and texts need not be: bytes that are
	 * not become U+FFFD, as in the JSON outputs. */
	for (; u[len]; len += n ? n : 1)
		bad += (n = ta_utf8_len(u + len)) == 0;
	if (!bad) {
		ta_pb_bytes(b, field, s, len);
		return;
	}
	fixed = malloc(len + 2 * bad);
	if (!fixed) {
		b->nomem = 1;
		return;
	}
	n = 0;
	for (size_t i = 0, k; i < len; i += k ? k : 1) {
		k = ta_utf8_len(u + i);
		if (k) {
			memcpy(fixed + n, u + i, k);
			n += k;
		} else {
			memcpy(fixed + n, "\xef\xbf\xbd", 3);
			n += 3;
		}
	}
	ta_pb_bytes(b, field, fixed, n);
	free(fixed);
}

void ta_pb_begin(struct ta_pb *b, uint32_t field)
{
	if (b->depth == TA_PB_DEPTH) {
		b->bad = 1;
		return;
	}
	key(b, field, WIRE_LEN);
	/* One byte for the length, the usual case; ta_pb_end makes more. */
	if (room(b, 1) < 0)
		return;
	b->len++;
	b->open[b->depth++] = b->len;
}

void ta_pb_end(struct ta_pb *b)
{
	size_t start, body, n;

	if (!b->depth) {
		b->bad = 1;
		return;
	}
	start = b->open[--b->depth];
	if (b->nomem || b->bad)
		return;
	body = b->len - start;
	n = varint_len(body);
	if (n > 1) {
		if (room(b, n - 1) < 0)
			return;
		memmove(b->buf + start + n - 1, b->buf + start, body);
		b->len += n - 1;
	}
	put_varint(b->buf + start - 1, body);
}
