/* SPDX-License-Identifier: MIT */
/*
 * pkdeflate.h - a fast deflate (zlib format, RFC 1950/1951) for the
 * Perfetto export's bundles of packets, where zlib's level 1 spent more
 * than the rest of the export together (~33 instructions a byte).
 *
 * It searches nothing: the caller, who wrote the bytes, cuts them into
 * packets, each a body that may repeat an earlier one (a call's packet but
 * its timestamp) and a tail that does not.  A body is looked up whole in a
 * small hash table of the bodies before it in the stream; a hit whose
 * bytes compare equal goes out as one match, anything else as literals, all
 * with deflate's fixed Huffman codes in one block.  The Adler-32 of a
 * repeated body is its first copy's, kept in the table.  Any inflater
 * reads the result.
 *
 * Usage: ta_pkz_begin(z, base, n), ta_pkz_packet for packets from base's
 * start in order (what they leave goes out as literals), ta_pkz_end; the
 * stream is
 * appended to z->out (the caller empties it by setting z->len to 0).
 */
#ifndef TA_PKDEFLATE_H
#define TA_PKDEFLATE_H

#include <stddef.h>
#include <stdint.h>

#define TA_PKZ_HASH_BITS 12

/* A body seen before: where in all the streams so far (+ 1: 0 none, so
 * that the table is cleared once, not at each stream), and its Adler-32
 * sums. */
struct ta_pkz_slot {
	uint64_t at1;
	uint32_t s1, s2;
};

struct ta_pkz {
	uint8_t *out;
	size_t len, cap;
	uint64_t acc; /* bits not yet written, the first in bit 0 */
	unsigned nacc;
	const uint8_t *base;
	size_t n, pos;	 /* the stream's bytes, and those encoded so far */
	uint64_t start;	 /* the stream's first byte in all the streams so far */
	uint64_t s1, s2; /* Adler-32 so far */
	struct ta_pkz_slot tab[1u << TA_PKZ_HASH_BITS]; /* the last body of each hash */
	int nomem;
};

/* Opens a stream of the n bytes at base (which must stay until
 * ta_pkz_end).  -1 (and nomem) without memory for its output. */
int ta_pkz_begin(struct ta_pkz *z, const uint8_t *base, size_t n);
/* The next body + tail bytes, a packet: its body a copy of the last body
 * with the same bytes when there is one in deflate's 32 KiB window (and it
 * is 4 to 258 bytes long), literals otherwise; its tail literals. */
void ta_pkz_packet(struct ta_pkz *z, size_t body, size_t tail);
/* The bytes not in a run as literals, the end of the block, the Adler-32. */
void ta_pkz_end(struct ta_pkz *z);
void ta_pkz_free(struct ta_pkz *z);

#endif /* TA_PKDEFLATE_H */
