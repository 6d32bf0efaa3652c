/* SPDX-License-Identifier: MIT */
/*
 * grow.h - growing memory, the one way the tree does it: arrays whose
 * capacity doubles, and byte buffers that payloads are built in.
 *
 * The convention: a growth either succeeds or changes nothing (the old
 * memory still valid and the caller's, the capacity as it was) and says so
 * (NULL, or -1 with the buffer's oom set).  A count times an element size
 * that would not fit in a size_t fails as an allocation does; it never
 * wraps into a small allocation.  Doubling keeps appending one element at
 * a time linear.
 *
 * Both sides use them.  The agent does on its slow paths only (start,
 * modules, the flusher, the dump): they call realloc, and the hot path
 * allocates nothing.
 */
#ifndef TA_GROW_H
#define TA_GROW_H

#include <stddef.h>
#include <stdint.h>

/*
 * The capacity, in elements of size bytes, that holds need of them: cap
 * when it does; else cap doubled (from first when cap is 0) until it does,
 * at most max.  0 when need is over max or over the elements a size_t of
 * bytes can count.
 */
size_t ta_grow_cap(size_t cap, size_t need, size_t size, size_t first, size_t max);

/*
 * Room for need (>= 1) elements of size bytes in the array p, which has
 * room for *cap: p when it has; else p reallocated to ta_grow_cap's
 * capacity (first the first time) and *cap set to it.  NULL when out of
 * memory or when the bytes would not fit in a size_t: p is then unchanged
 * and still the caller's, and so is *cap.
 */
void *ta_vec_reserve(void *p, size_t need, size_t *cap, size_t size, size_t first);
/* The same with at most max elements (a bound on memory): NULL also when
 * need is over max. */
void *ta_vec_reserve_max(void *p, size_t need, size_t *cap, size_t size, size_t first, size_t max);

/*
 * A growable byte buffer: a payload being built.  All zeros is an empty
 * buffer.  A failed growth sets oom, and every append after it does
 * nothing: the builder appends without checking and looks at oom once at
 * the end, where the contents are then incomplete.
 */
struct ta_buf {
	uint8_t *p;
	size_t len, cap;
	size_t max; /* 0, or the most cap may be: a growth past it fails as one
		       out of memory does (bounds, and tests' fault injection) */
	int oom;
};

#define TA_BUF_FIRST 256 /* bytes, the first time */

/* ta_buf_reserve's growth: 0, or -1 with oom set. */
int ta_buf_grow(struct ta_buf *b, size_t more);

/* Room for more bytes at p + len: 0, or -1 with oom set. */
static inline int ta_buf_reserve(struct ta_buf *b, size_t more)
{
	if (!b->oom && more <= b->cap - b->len)
		return 0;
	return ta_buf_grow(b, more);
}

void ta_buf_put(struct ta_buf *b, const void *p, size_t n);
/* An unsigned LEB128 varint (format.h). */
void ta_buf_u(struct ta_buf *b, uint64_t v);
/* A string as the format writes one: u length, then the bytes. */
void ta_buf_str(struct ta_buf *b, const char *s, size_t len);
/* Frees the memory; the buffer is empty again (max kept). */
void ta_buf_free(struct ta_buf *b);

#endif /* TA_GROW_H */
