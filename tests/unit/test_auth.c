/* SPDX-License-Identifier: MIT */
/*
 * test_auth.c - SHA-256 and HMAC-SHA256 (format/sha256.c) against FIPS
 * 180-4's and RFC 4231's vectors; serve's side of the handshake
 * (analyzer/lib/serve_auth.c): the right answer lets the dump through byte
 * for byte, a wrong one or none is refused before any byte of it is
 * taken, a client without a token is taken whole by a serve without one,
 * in any split of its bytes; and a seeded fuzz of hostile handshakes never
 * takes a client that does not know the secret.
 */
#define _GNU_SOURCE
#include <check.h>

#include "../check_run.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "dumpgen.h"
#include "format.h"
#include "serve_auth.h"
#include "sha256.h"

static void hex(const uint8_t *p, size_t n, char *out)
{
	for (size_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", p[i]);
}

static void check_sha(const void *p, size_t n, const char *want)
{
	uint8_t d[TA_SHA256_SIZE];
	char h[2 * TA_SHA256_SIZE + 1];

	ta_sha256(p, n, d);
	hex(d, sizeof(d), h);
	ck_assert_str_eq(h, want);
}

START_TEST(sha256_vectors)
{
	static const char two[] = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	struct ta_sha256 s;
	uint8_t d[TA_SHA256_SIZE], a[1000];
	char h[2 * TA_SHA256_SIZE + 1];

	check_sha("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	check_sha("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	check_sha(two, strlen(two),
		  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	/* A million 'a', in pieces that straddle the blocks. */
	memset(a, 'a', sizeof(a));
	ta_sha256_init(&s);
	for (int i = 0; i < 1000; i++)
		ta_sha256_update(&s, a, 1000);
	ta_sha256_final(&s, d);
	hex(d, sizeof(d), h);
	ck_assert_str_eq(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}
END_TEST

/* RFC 4231 section 4: test cases 1 to 7 (5's output truncated to 128 bits). */
START_TEST(hmac_rfc4231)
{
	static const char *const want[] = {
	    "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7",
	    "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
	    "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe",
	    "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b",
	    "a3b6167473100ee06e0c796c2955552b",
	    "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54",
	    "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2",
	};
	uint8_t key[131] = {0}, data[160] = {0}, mac[TA_SHA256_SIZE];
	size_t klen = 0, dlen = 0;
	char h[2 * TA_SHA256_SIZE + 1];
	const char *s;

	switch (_i) {
	case 0:
		memset(key, 0x0b, klen = 20);
		memcpy(data, "Hi There", dlen = 8);
		break;
	case 1:
		memcpy(key, "Jefe", klen = 4);
		s = "what do ya want for nothing?";
		memcpy(data, s, dlen = strlen(s));
		break;
	case 2:
		memset(key, 0xaa, klen = 20);
		memset(data, 0xdd, dlen = 50);
		break;
	case 3:
		for (klen = 0; klen < 25; klen++)
			key[klen] = (uint8_t)(klen + 1);
		memset(data, 0xcd, dlen = 50);
		break;
	case 4:
		memset(key, 0x0c, klen = 20);
		s = "Test With Truncation";
		memcpy(data, s, dlen = strlen(s));
		break;
	case 5:
		memset(key, 0xaa, klen = 131);
		s = "Test Using Larger Than Block-Size Key - Hash Key First";
		memcpy(data, s, dlen = strlen(s));
		break;
	case 6:
		memset(key, 0xaa, klen = 131);
		s = "This is a test using a larger than block-size key and a larger than "
		    "block-size data. The key needs to be hashed before being used by the HMAC "
		    "algorithm.";
		memcpy(data, s, dlen = strlen(s));
		break;
	}
	ta_hmac_sha256(key, klen, data, dlen, mac);
	hex(mac, strlen(want[_i]) / 2, h);
	ck_assert_str_eq(h, want[_i]);
}
END_TEST

static const uint8_t secret[] = "correct horse battery staple";
static const uint8_t nonce[TA_AUTH_NONCE_SIZE] = {1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11,
						  12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22,
						  23, 24, 25, 26, 27, 28, 29, 30, 31, 32};

static void make_dump(struct dumpgen *g)
{
	struct ta_encoder e;

	dg_init(g, 77);
	dg_process(g, 1000, TA_CLOCK_MONOTONIC, 1000000000, "/bin/prog");
	dg_thread_start(g, 77, 1000, "main");
	ta_encoder_init(&e, 77);
	ta_encoder_begin(&e, 1000);
	for (int i = 0; i < 10; i++) {
		ta_encoder_event(&e, 1000 + (uint64_t)i * 2, 0x401000, 0);
		ta_encoder_event(&e, 1001 + (uint64_t)i * 2, 0x401000, 1);
	}
	dg_events(g, &e);
	ta_encoder_free(&e);
	dg_thread_end(g, 77, 2000, 20, 0);
	dg_end(g, 2000, 0, 20, 0, 1, 0);
}

/* hello, the answer under key, then the dump: what an agent sends. */
static size_t client_bytes(uint8_t *out, const uint8_t *key, size_t klen, const struct dumpgen *g)
{
	size_t n = 0;

	memcpy(out, TA_AUTH_HELLO, TA_AUTH_MAGIC_LEN);
	n += TA_AUTH_MAGIC_LEN;
	ta_hmac_sha256(key, klen, nonce, sizeof(nonce), out + n);
	n += TA_AUTH_MAC_SIZE;
	memcpy(out + n, g->buf, g->len);
	return n + g->len;
}

static int feed_pieces(struct ta_sv_auth *a, struct ta_sv_conn *c, const uint8_t *p, size_t n,
		       size_t piece)
{
	int r = 0;

	for (size_t at = 0; at < n && r == 0; at += piece)
		r = ta_sv_client_feed(a, c, -1, p + at, n - at < piece ? n - at : piece);
	return r;
}

START_TEST(handshake)
{
	static const size_t pieces[] = {1, 3, 8, 9, 40, 41, 1 << 20};
	struct ta_sv_auth a;
	struct ta_sv_conn c;
	struct dumpgen g;
	uint8_t *buf;
	size_t n, klen = sizeof(secret) - 1;

	make_dump(&g);
	buf = malloc(g.len + 64);
	for (size_t k = 0; k < sizeof(pieces) / sizeof(pieces[0]); k++) {
		/* The right secret: the dump whole, complete. */
		n = client_bytes(buf, secret, klen, &g);
		ta_sv_conn_init(&c, TA_SV_NOWHERE, "h", 0);
		ta_sv_auth_init(&a, secret, klen, nonce);
		ck_assert_int_eq(feed_pieces(&a, &c, buf, n, pieces[k]), 0);
		ck_assert_int_eq(a.state, TA_SV_AUTH_DONE);
		ck_assert_int_eq(a.shook, 1);
		ck_assert_uint_eq(c.written, g.len);
		ck_assert_int_eq(ta_sv_conn_close(&c), 1);
		ck_assert_uint_eq(ta_sv_conn_events(&c), 20);
		ta_sv_conn_free(&c);

		/* A secret one byte off: refused, nothing of the dump taken. */
		n = client_bytes(buf, secret, klen - 1, &g);
		ta_sv_conn_init(&c, TA_SV_NOWHERE, "h", 0);
		ta_sv_auth_init(&a, secret, klen, nonce);
		ck_assert_int_eq(feed_pieces(&a, &c, buf, n, pieces[k]), TA_SV_REFUSED);
		ck_assert_str_eq(a.why, "wrong token");
		ck_assert_uint_eq(c.written, 0);
		ck_assert_int_eq(c.named, 0);
		ta_sv_conn_free(&c);

		/* No handshake at all (an agent without TRACEAGENT_TOKEN). */
		ta_sv_conn_init(&c, TA_SV_NOWHERE, "h", 0);
		ta_sv_auth_init(&a, secret, klen, nonce);
		ck_assert_int_eq(feed_pieces(&a, &c, g.buf, g.len, pieces[k]), TA_SV_REFUSED);
		ck_assert_ptr_nonnull(strstr(a.why, "no token"));
		ck_assert_uint_eq(c.written, 0);
		ta_sv_conn_free(&c);

		/* A serve without a token: the dump alone taken whole (its
		 * first byte, 'T', is the hello's too), and one that shakes
		 * hands as well. */
		ta_sv_conn_init(&c, TA_SV_NOWHERE, "h", 0);
		ta_sv_auth_init(&a, NULL, 0, nonce);
		ck_assert_int_eq(feed_pieces(&a, &c, g.buf, g.len, pieces[k]), 0);
		ck_assert_int_eq(a.shook, 0);
		ck_assert_uint_eq(c.written, g.len);
		ck_assert_int_eq(ta_sv_conn_close(&c), 1);
		ta_sv_conn_free(&c);
		n = client_bytes(buf, secret, 3, &g);
		ta_sv_conn_init(&c, TA_SV_NOWHERE, "h", 0);
		ta_sv_auth_init(&a, NULL, 0, nonce);
		ck_assert_int_eq(feed_pieces(&a, &c, buf, n, pieces[k]), 0);
		ck_assert_int_eq(a.shook, 1);
		ck_assert_uint_eq(c.written, g.len);
		ck_assert_int_eq(ta_sv_conn_close(&c), 1);
		ta_sv_conn_free(&c);
	}
	free(buf);
	dg_free(&g);
}
END_TEST

/* Random bytes, a hello then random bytes, mutated right answers: never
 * taken without the secret's answer, never a byte of dump before it, and
 * a state that stays one of the four. */
START_TEST(handshake_fuzz)
{
	struct dumpgen g;
	uint8_t buf[4096], good[TA_AUTH_MAC_SIZE];
	size_t klen = sizeof(secret) - 1;
	unsigned seed = 20261202;

	make_dump(&g);
	ta_hmac_sha256(secret, klen, nonce, sizeof(nonce), good);
	for (int iter = 0; iter < 20000; iter++) {
		struct ta_sv_auth a;
		struct ta_sv_conn c;
		size_t n = (size_t)(rand_r(&seed) % sizeof(buf)), at = 0;
		int mode = rand_r(&seed) % 3, r = 0;

		for (size_t i = 0; i < n; i++)
			buf[i] = (uint8_t)rand_r(&seed);
		if (mode >= 1 && n >= TA_AUTH_MAGIC_LEN)
			memcpy(buf, TA_AUTH_HELLO, TA_AUTH_MAGIC_LEN);
		if (mode == 2 && n >= TA_AUTH_MAGIC_LEN + TA_AUTH_MAC_SIZE) {
			memcpy(buf + TA_AUTH_MAGIC_LEN, good, TA_AUTH_MAC_SIZE);
			/* One bit flipped in the answer. */
			buf[TA_AUTH_MAGIC_LEN + (unsigned)rand_r(&seed) % TA_AUTH_MAC_SIZE] ^=
			    (uint8_t)(1u << (rand_r(&seed) % 8));
		}
		ta_sv_conn_init(&c, TA_SV_NOWHERE, "h", 0);
		ta_sv_auth_init(&a, secret, klen, nonce);
		while (at < n && r == 0) {
			size_t k = 1 + (size_t)(rand_r(&seed) % 64);

			if (k > n - at)
				k = n - at;
			r = ta_sv_client_feed(&a, &c, -1, buf + at, k);
			at += k;
		}
		ck_assert(a.state != TA_SV_AUTH_DONE);
		ck_assert_uint_eq(c.written, 0);
		ck_assert(r == 0 || r == TA_SV_REFUSED);
		ck_assert(a.have <= TA_AUTH_MAC_SIZE);
		ta_sv_conn_free(&c);
	}
	dg_free(&g);
}
END_TEST

static Suite *auth_suite(void)
{
	Suite *s = suite_create("auth");
	TCase *tc = tcase_create("auth");

	tcase_add_test(tc, sha256_vectors);
	tcase_add_loop_test(tc, hmac_rfc4231, 0, 7);
	tcase_add_test(tc, handshake);
	tcase_add_test(tc, handshake_fuzz);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return ta_check_run(auth_suite());
}
