/* SPDX-License-Identifier: MIT */
/*
 * auth.h - the handshake a traced process makes with a collector that
 * wants a shared secret (`traceagent serve --token-file`; the agent's
 * TRACEAGENT_TOKEN, `record --token-file`), before any byte of its dump:
 *
 *   client -> serve   TA_AUTH_HELLO                       8 bytes
 *   serve -> client   TA_AUTH_NONCE, then a random nonce  8 + 32 bytes
 *   client -> serve   HMAC-SHA256(token, nonce)           32 bytes
 *   serve -> client   TA_AUTH_OK or TA_AUTH_NO            8 bytes
 *
 * then the dump as without it.  The token never crosses the wire, and a
 * nonce is never asked twice, so an answer overheard is worth nothing.  A
 * client without a token sends its dump at once (its file header's magic
 * is no hello), as agents before the handshake do: a serve without a token
 * takes it, one with a token refuses it.
 */
#ifndef TA_AUTH_H
#define TA_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "sha256.h"

#define TA_AUTH_HELLO	   "TAAUTH01"
#define TA_AUTH_NONCE	   "TANONCE1"
#define TA_AUTH_OK	   "TAAUTHOK"
#define TA_AUTH_NO	   "TAAUTHNO"
#define TA_AUTH_MAGIC_LEN  8
#define TA_AUTH_NONCE_SIZE 32
#define TA_AUTH_MAC_SIZE   TA_SHA256_SIZE
/* A token file's bytes at most. */
#define TA_AUTH_TOKEN_MAX 4096

/* The secret in the file at path, into buf (TA_AUTH_TOKEN_MAX bytes): its
 * bytes without the line ends that end it.  0 and *len, or -errno
 * (-EINVAL: empty; -EFBIG: more than TA_AUTH_TOKEN_MAX bytes). */
int ta_auth_read_token(const char *path, uint8_t *buf, size_t *len);

#endif
