/* SPDX-License-Identifier: MIT */
/*
 * sha256.h - SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104) for the
 * collector's handshake (auth.h): the agent links no crypto library, so
 * both sides share this one.  Not for anything hot.
 */
#ifndef TA_SHA256_H
#define TA_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define TA_SHA256_SIZE	32
#define TA_SHA256_BLOCK 64

struct ta_sha256 {
	uint32_t h[8];
	uint64_t len; /* bytes taken */
	uint8_t buf[TA_SHA256_BLOCK];
	size_t fill;
};

void ta_sha256_init(struct ta_sha256 *s);
void ta_sha256_update(struct ta_sha256 *s, const void *p, size_t n);
void ta_sha256_final(struct ta_sha256 *s, uint8_t out[TA_SHA256_SIZE]);
void ta_sha256(const void *p, size_t n, uint8_t out[TA_SHA256_SIZE]);
/* HMAC-SHA256 of msg under key (any length: a longer one is hashed). */
void ta_hmac_sha256(const void *key, size_t klen, const void *msg, size_t mlen,
		    uint8_t out[TA_SHA256_SIZE]);
/* 1 when the n bytes are equal, in a time that does not depend on where
 * they differ. */
int ta_mem_equal_ct(const void *a, const void *b, size_t n);

#endif
