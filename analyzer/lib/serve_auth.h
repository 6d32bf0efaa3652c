/* SPDX-License-Identifier: MIT */
/*
 * serve_auth.h - serve's side of the handshake of format/auth.h, before a
 * client's dump (serve_auth.c).  No sockets but the one reply written, so
 * that a test or a fuzzer can feed any bytes through it.
 */
#ifndef TA_SERVE_AUTH_H
#define TA_SERVE_AUTH_H

#include <stddef.h>
#include <stdint.h>

#include "auth.h"
#include "serve.h"

enum { TA_SV_AUTH_HELLO, TA_SV_AUTH_MAC, TA_SV_AUTH_DONE, TA_SV_AUTH_REFUSED };

struct ta_sv_auth {
	const uint8_t *token; /* the secret asked for; NULL: none */
	size_t token_len;
	int state;
	uint8_t nonce[TA_AUTH_NONCE_SIZE];
	uint8_t got[TA_AUTH_MAC_SIZE]; /* the hello's or the answer's bytes so far */
	size_t have;
	int shook;     /* the client made the handshake */
	char why[160]; /* why it was refused */
};

/* token NULL: any client is taken, one that shakes hands too (its answer
 * unchecked: there is nothing to check it against). */
void ta_sv_auth_init(struct ta_sv_auth *a, const uint8_t *token, size_t token_len,
		     const uint8_t nonce[TA_AUTH_NONCE_SIZE]);

#define TA_SV_REFUSED 1
/*
 * A client's n bytes: the handshake's while it lasts (the replies written
 * to fd; fd < 0: to nowhere), then the dump's into c.  0 while the client
 * goes on; TA_SV_REFUSED once it is refused (a->why says why: nothing of
 * its dump taken); a negative TA_E_* once c cut it off (ta_sv_conn_feed).
 */
int ta_sv_client_feed(struct ta_sv_auth *a, struct ta_sv_conn *c, int fd, const uint8_t *p,
		      size_t n);

/* The secret of a token file, for serve --token-file: 0, or -1 after a
 * line on stderr naming the file and what is wrong. */
int ta_sv_token_load(const char *path, uint8_t *buf, size_t *len);
/* 1 when the listening socket fd is local only (loopback or unix). */
int ta_sv_listen_is_local(int fd);
/* A fresh nonce (getrandom); 0 or -1. */
int ta_sv_nonce(uint8_t nonce[TA_AUTH_NONCE_SIZE]);

#endif
