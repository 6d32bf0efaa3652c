/* SPDX-License-Identifier: MIT */
/*
 * pkdeflate.c - deflate of caller-cut runs with fixed Huffman codes; see
 * pkdeflate.h.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "pkdeflate.h"

/* A code and its extra bits, as they go out (the first bit in bit 0). */
struct code {
	uint32_t bits;
	uint32_t n;
};

static struct code lit[256];	  /* literals */
static struct code len_code[259]; /* match lengths 3..258: code and extra bits */
static uint8_t dist_sym[512];	  /* distance - 1 < 256: by itself, else by >> 7 */
static uint8_t dist_code[30];	  /* the distance codes, 5 bits */
static const uint16_t dbase[30] = {1,	 2,    3,    4,	   5,	 7,    9,    13,    17,	   25,
				   33,	 49,   65,   97,   129,	 193,  257,  385,   513,   769,
				   1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
static const uint8_t dext[30] = {0, 0, 0, 0, 1, 1, 2, 2,  3,  3,  4,  4,  5,  5,  6,
				 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* Huffman codes go out from their most significant bit. */
static uint32_t reverse(uint32_t v, unsigned n)
{
	uint32_t r = 0;

	for (unsigned i = 0; i < n; i++, v >>= 1)
		r = r << 1 | (v & 1);
	return r;
}

/* The fixed literal/length code of symbol s (RFC 1951, 3.2.6). */
static struct code fixed(unsigned s)
{
	struct code c;

	if (s < 144)
		c.bits = reverse(0x30 + s, 8), c.n = 8;
	else if (s < 256)
		c.bits = reverse(0x190 + s - 144, 9), c.n = 9;
	else if (s < 280)
		c.bits = reverse(s - 256, 7), c.n = 7;
	else
		c.bits = reverse(0xc0 + s - 280, 8), c.n = 8;
	return c;
}

static void tables(void)
{
	static const uint16_t lbase[29] = {3,  4,  5,  6,   7,	 8,   9,   10,	11, 13,
					   15, 17, 19, 23,  27,	 31,  35,  43,	51, 59,
					   67, 83, 99, 115, 131, 163, 195, 227, 258};
	static const uint8_t lext[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
					 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};

	for (unsigned s = 0; s < 256; s++)
		lit[s] = fixed(s);
	/* Lengths by their code, the last (258) its own code 285. */
	for (unsigned k = 0; k < 29; k++) {
		unsigned top = k == 28 ? 258 : lbase[k] + (1u << lext[k]) - 1;

		if (k == 27)
			top = 257;
		for (unsigned l = lbase[k]; l <= top; l++) {
			struct code c = fixed(257 + k);

			len_code[l].bits = c.bits | (l - lbase[k]) << c.n;
			len_code[l].n = c.n + lext[k];
		}
	}
	for (unsigned k = 0; k < 30; k++) {
		dist_code[k] = (uint8_t)reverse(k, 5);
		for (unsigned d = dbase[k]; d < dbase[k] + (1u << dext[k]) && d <= 32768; d++) {
			if (d - 1 < 256)
				dist_sym[d - 1] = (uint8_t)k;
			else
				dist_sym[256 + ((d - 1) >> 7)] = (uint8_t)k;
		}
	}
}

/* The writer's state in locals while it runs (stores through the output
 * pointer would otherwise reload it from the struct at each byte). */
struct bits {
	uint64_t acc; /* bits not yet written, the first in bit 0 */
	unsigned n;
	uint8_t *o;
};

/* At most 32 bits; up to 63 are held, whole words written as they fill. */
static inline void put(struct bits *w, uint64_t bits, unsigned n)
{
	w->acc |= bits << w->n;
	w->n += n;
	if (w->n >= 32) {
		w->o[0] = (uint8_t)w->acc;
		w->o[1] = (uint8_t)(w->acc >> 8);
		w->o[2] = (uint8_t)(w->acc >> 16);
		w->o[3] = (uint8_t)(w->acc >> 24);
		w->o += 4;
		w->acc >>= 32;
		w->n -= 32;
	}
}

/* Adler-32's sums of a run alone: s1 its bytes' sum, s2 the sum of s1
 * after each byte. */
struct sums {
	uint64_t s1, s2;
};

/* n bytes at p as literals; their sums. */
static inline struct sums literals(struct bits *w, const uint8_t *p, size_t n)
{
	struct sums s = {0, 0};

	for (size_t i = 0; i < n; i++) {
		put(w, lit[p[i]].bits, lit[p[i]].n);
		s.s1 += p[i];
		s.s2 += s.s1;
	}
	return s;
}

/* The stream's Adler-32 sums (a[0], a[1]) after a run of n bytes with
 * sums s: each of the run's bytes adds the sum so far once more.  Reduced
 * modulo 65521 only when they grow large (a run adds under 2^53 to a[1]:
 * n < 2^20 and a[0] < 2^32 before it), and at the end. */
static inline void adler_add(uint64_t *a, struct sums s, size_t n)
{
	a[1] += (uint64_t)n * a[0] + s.s2;
	a[0] += s.s1;
	if (a[1] >= (1ull << 62) || a[0] >= (1ull << 32)) {
		a[1] %= 65521;
		a[0] %= 65521;
	}
}

int ta_pkz_begin(struct ta_pkz *z, const uint8_t *base, size_t n)
{
	/* Literals take at most 9 bits; a match fewer than its 3+ bytes'. */
	size_t need = z->len + n + n / 8 + 32;

	pthread_once(&once, tables);
	if (need > z->cap) {
		uint8_t *o = ta_vec_reserve(z->out, need, &z->cap, 1, 64u << 10);

		if (!o) {
			z->nomem = 1;
			return -1;
		}
		z->out = o;
	}
	/* The table's bodies are the stream's from here on. */
	z->start += z->n;
	z->base = base;
	z->n = n;
	z->pos = 0;
	/* zlib's header: deflate, 32 KiB window, the fastest level (a
	 * multiple of 31); then a last block of fixed codes. */
	z->out[z->len++] = 0x78;
	z->out[z->len++] = 0x01;
	z->s1 = 1;
	z->s2 = 0;
	/* Its first bits (BFINAL, BTYPE 01), held until the first run. */
	z->acc = 1 | 1 << 1;
	z->nacc = 3;
	return 0;
}

static inline uint64_t load64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static inline uint32_t load32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

/* n >= 4 bytes at p and q equal: a word at a time, the last one ending at
 * the end (memcmp's call costs more than these short bodies). */
static inline int same(const uint8_t *p, const uint8_t *q, size_t n)
{
	size_t i;

	if (n < 8)
		return load32(p) == load32(q) && load32(p + n - 4) == load32(q + n - 4);
	for (i = 0; i + 8 < n; i += 8)
		if (load64(p + i) != load64(q + i))
			return 0;
	return load64(p + n - 8) == load64(q + n - 8);
}

void ta_pkz_packet(struct ta_pkz *z, size_t body, size_t tail)
{
	struct bits w = {z->acc, z->nacc, z->out + z->len};
	uint64_t a[2] = {z->s1, z->s2};
	const uint8_t *p = z->base + z->pos;
	struct ta_pkz_slot *slot = NULL;
	struct sums s;
	uint64_t h;
	size_t d = 0;

	if (body + tail > z->n - z->pos)
		return;
	/* The body's ends and its length pick the slot (the loads read inside
	 * it); equal bytes are checked, so a collision costs only size. */
	if (body >= 8 && body <= 258) {
		h = load64(p) ^ (load64(p + body - 8) << 7 | load64(p + body - 8) >> 57);
		h = (h ^ body) * 0x9e3779b97f4a7c15ull;
		slot = &z->tab[h >> (64 - TA_PKZ_HASH_BITS)];
	} else if (body >= 4 && body < 8) {
		h = load32(p) ^ (uint64_t)load32(p + body - 4) << 29;
		h = (h ^ body) * 0x9e3779b97f4a7c15ull;
		slot = &z->tab[h >> (64 - TA_PKZ_HASH_BITS)];
	}
	/* A body of this stream (an earlier one's is 1 + start + pos away). */
	if (slot)
		d = z->start + z->pos + 1 - slot->at1;
	if (slot && d <= z->pos && d <= 32768 && same(p - d, p, body)) {
		unsigned k = d - 1 < 256 ? dist_sym[d - 1] : dist_sym[256 + ((d - 1) >> 7)];

		put(&w, len_code[body].bits, len_code[body].n);
		put(&w, dist_code[k] | (uint64_t)(d - dbase[k]) << 5, 5 + dext[k]);
		s.s1 = slot->s1;
		s.s2 = slot->s2;
	} else {
		s = literals(&w, p, body);
		if (slot) {
			slot->s1 = (uint32_t)s.s1;
			slot->s2 = (uint32_t)s.s2;
		}
	}
	if (slot)
		slot->at1 = z->start + z->pos + 1;
	{
		/* The tail's sums appended to the body's: one update. */
		struct sums t = literals(&w, p + body, tail);

		s.s2 += tail * s.s1 + t.s2;
		s.s1 += t.s1;
		adler_add(a, s, body + tail);
	}
	z->s1 = a[0];
	z->s2 = a[1];
	z->pos += body + tail;
	z->acc = w.acc;
	z->nacc = w.n;
	z->len = (size_t)(w.o - z->out);
}

void ta_pkz_end(struct ta_pkz *z)
{
	struct bits w = {z->acc, z->nacc, z->out + z->len};
	uint64_t sums[2] = {z->s1, z->s2};
	size_t rest = z->n - z->pos;
	uint32_t a;

	adler_add(sums, literals(&w, z->base + z->pos, rest), rest);
	put(&w, 0, 7); /* end of block: code 256, seven 0 bits */
	for (; w.n > 0; w.n = w.n > 8 ? w.n - 8 : 0) {
		*w.o++ = (uint8_t)w.acc;
		w.acc >>= 8;
	}
	z->len = (size_t)(w.o - z->out);
	a = (uint32_t)(sums[1] % 65521 << 16 | sums[0] % 65521);
	z->out[z->len++] = (uint8_t)(a >> 24);
	z->out[z->len++] = (uint8_t)(a >> 16);
	z->out[z->len++] = (uint8_t)(a >> 8);
	z->out[z->len++] = (uint8_t)a;
}

void ta_pkz_free(struct ta_pkz *z)
{
	free(z->out);
	z->out = NULL;
	z->len = z->cap = 0;
}
