/* SPDX-License-Identifier: MIT */
/*
 * pbenc.h - a small protocol buffers encoder for the exports (Perfetto's
 * trace, pprof's profile): varints, fixed 64-bit values and length-delimited
 * fields, messages nested a bounded number of levels deep.
 *
 * Everything goes into one growing buffer that the caller drains (a whole
 * top-level message at a time) and empties with ta_pb_reset.  A nested
 * message's length is known only at its end: ta_pb_end writes it in front
 * of the body, moving the body when the length needs more than one byte, so
 * the encoding stays the shortest one (most messages here are small).
 *
 * Out of memory or a nesting deeper than TA_PB_DEPTH sets nomem/bad and
 * makes every later call do nothing: the caller checks once, at the end.
 */
#ifndef TA_PBENC_H
#define TA_PBENC_H

#include <stddef.h>
#include <stdint.h>

#define TA_PB_DEPTH 8

struct ta_pb {
	uint8_t *buf;
	size_t len, cap;
	size_t open[TA_PB_DEPTH]; /* where each open message's body starts */
	unsigned depth;
	int nomem; /* an allocation failed */
	int bad;   /* nesting too deep, or an end without a begin */
};

void ta_pb_init(struct ta_pb *b);
void ta_pb_free(struct ta_pb *b);
/* Forgets the bytes written (the buffer is kept); no message may be open. */
void ta_pb_reset(struct ta_pb *b);
/* 1 when something went wrong since ta_pb_init. */
static inline int ta_pb_failed(const struct ta_pb *b)
{
	return b->nomem || b->bad;
}

/* A varint field (int32, int64, uint32, uint64, bool, enum).  A negative
 * int64 is passed as its two's complement, as protobuf encodes it. */
void ta_pb_varint(struct ta_pb *b, uint32_t field, uint64_t v);
/* A double field (wire type 1). */
void ta_pb_double(struct ta_pb *b, uint32_t field, double d);
/* A length-delimited field of n bytes (bytes, string). */
void ta_pb_bytes(struct ta_pb *b, uint32_t field, const void *p, size_t n);
/* A string field: the bytes of the NUL-terminated s. */
void ta_pb_str(struct ta_pb *b, uint32_t field, const char *s);
/* Opens a nested message as field, to be closed by ta_pb_end. */
void ta_pb_begin(struct ta_pb *b, uint32_t field);
void ta_pb_end(struct ta_pb *b);
/* A raw varint, without a field key (inside a packed repeated field). */
void ta_pb_raw_varint(struct ta_pb *b, uint64_t v);
/* n bytes the caller encoded, as they are. */
void ta_pb_raw(struct ta_pb *b, const void *p, size_t n);
/* Room for n bytes at the end, for a caller that encodes them itself and
 * then adds what it wrote to b->len (NULL after a failure). */
uint8_t *ta_pb_reserve_slow(struct ta_pb *b, size_t n);
static inline uint8_t *ta_pb_reserve(struct ta_pb *b, size_t n)
{
	if (b->len + n <= b->cap && !b->nomem && !b->bad)
		return b->buf + b->len;
	return ta_pb_reserve_slow(b, n);
}

/* Writes v at p as a varint (at most 10 bytes); returns its length. */
static inline size_t ta_pb_put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	for (; v >= 0x80; v >>= 7)
		p[n++] = (uint8_t)(v | 0x80);
	p[n++] = (uint8_t)v;
	return n;
}

#endif /* TA_PBENC_H */
