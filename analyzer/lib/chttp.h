/* SPDX-License-Identifier: MIT */
/*
 * chttp.h - the little HTTP/1.1 a ClickHouse server's HTTP interface needs
 * (chttp.c): one POST of a query and its data on a connection of its own,
 * the answer's status and first bytes.  Plain http:// only (a tunnel or a
 * proxy for TLS); bounded in time and memory.
 */
#ifndef TA_CHTTP_H
#define TA_CHTTP_H

#include <stddef.h>
#include <stdint.h>

struct ta_ch_url {
	char host[256];
	char port[8];
	char path[256];	 /* from the '/' on, without the query */
	char query[512]; /* after '?', or empty: ClickHouse settings, database=... */
};

/* http://HOST[:PORT][/PATH][?QUERY] ([IPv6] in brackets; port 8123 by
 * default).  0, or -1 with *why. */
int ta_ch_url_parse(const char *url, struct ta_ch_url *u, const char **why);

/* The user and password of a credentials file (chsink.h reads it). */
struct ta_ch_auth {
	char user[128];
	char password[256];
};

/* What a POST came to. */
enum {
	TA_CH_OK = 0,
	TA_CH_DOWN = -1,    /* no connection, or it broke: worth a retry later */
	TA_CH_REFUSED = -2, /* ClickHouse answered with an error (why says it) */
};

/*
 * POSTs body (n bytes; may be empty) with sql as the query parameter
 * (ClickHouse reads the data of an INSERT ... FORMAT from the body).
 * timeout_ms bounds the connection and each wait for the server.  The
 * answer's body, up to out_size - 1 bytes, in out (NUL-terminated; out may
 * be NULL).  TA_CH_OK, or an error with why (why_size bytes) saying it.
 */
int ta_ch_post(const struct ta_ch_url *u, const struct ta_ch_auth *auth, const char *sql,
	       const void *body, size_t n, int timeout_ms, char *out, size_t out_size, char *why,
	       size_t why_size);

/* An answer of len bytes (a[len] must be writable: it is made NUL):
 * its status, and its body (de-chunked in place when it is chunked), at
 * *body for *blen bytes.  0, or -1 when it is no HTTP answer.  Whatever
 * the bytes, it reads and writes within a[0..len]. */
int ta_ch_answer(char *a, size_t len, int *status, char **body, size_t *blen);

#endif
