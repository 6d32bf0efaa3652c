/* SPDX-License-Identifier: MIT */
/*
 * serve_auth.c - serve's side of the handshake (serve_auth.h, format/
 * auth.h).  A client's first bytes are either the hello or a dump's file
 * header ("TRACEAGT"): they part at the second byte, and the bytes that
 * matched the hello until then go to the dump when it turns out to be one.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "serve_auth.h"

void ta_sv_auth_init(struct ta_sv_auth *a, const uint8_t *token, size_t token_len,
		     const uint8_t nonce[TA_AUTH_NONCE_SIZE])
{
	memset(a, 0, sizeof(*a));
	a->token = token_len ? token : NULL;
	a->token_len = token ? token_len : 0;
	memcpy(a->nonce, nonce, TA_AUTH_NONCE_SIZE);
	a->state = TA_SV_AUTH_HELLO;
}

/* The reply, whole or the client is refused: a fresh connection's send
 * buffer takes 48 bytes at once, so a short write is a client gone. */
static int reply(struct ta_sv_auth *a, int fd, const void *p, size_t n)
{
	errno = 0;
	if (fd < 0 || write(fd, p, n) == (ssize_t)n)
		return 0;
	snprintf(a->why, sizeof(a->why), "cannot answer its handshake: %s",
		 errno ? strerror(errno) : "short write");
	a->state = TA_SV_AUTH_REFUSED;
	return TA_SV_REFUSED;
}

static int refuse(struct ta_sv_auth *a, int fd, const char *why)
{
	snprintf(a->why, sizeof(a->why), "%s", why);
	if (fd >= 0)
		(void)!write(fd, TA_AUTH_NO, TA_AUTH_MAGIC_LEN);
	a->state = TA_SV_AUTH_REFUSED;
	return TA_SV_REFUSED;
}

int ta_sv_client_feed(struct ta_sv_auth *a, struct ta_sv_conn *c, int fd, const uint8_t *p,
		      size_t n)
{
	size_t i = 0;

	while (a->state == TA_SV_AUTH_HELLO && i < n) {
		if (p[i] != (uint8_t)TA_AUTH_HELLO[a->have]) {
			int r;

			if (a->token)
				return refuse(a, fd,
					      "no token: it sends its dump without the handshake "
					      "(TRACEAGENT_TOKEN unset?)");
			a->state = TA_SV_AUTH_DONE;
			/* The bytes held were the dump's first. */
			if (a->have && (r = ta_sv_conn_feed(c, a->got, a->have)) < 0)
				return r;
			break;
		}
		a->got[a->have++] = p[i++];
		if (a->have == TA_AUTH_MAGIC_LEN) {
			uint8_t msg[TA_AUTH_MAGIC_LEN + TA_AUTH_NONCE_SIZE];

			memcpy(msg, TA_AUTH_NONCE, TA_AUTH_MAGIC_LEN);
			memcpy(msg + TA_AUTH_MAGIC_LEN, a->nonce, TA_AUTH_NONCE_SIZE);
			a->state = TA_SV_AUTH_MAC;
			a->have = 0;
			a->shook = 1;
			if (reply(a, fd, msg, sizeof(msg)))
				return TA_SV_REFUSED;
		}
	}
	if (a->state == TA_SV_AUTH_MAC && i < n) {
		size_t k = n - i < TA_AUTH_MAC_SIZE - a->have ? n - i : TA_AUTH_MAC_SIZE - a->have;
		uint8_t mac[TA_AUTH_MAC_SIZE];

		memcpy(a->got + a->have, p + i, k);
		a->have += k;
		i += k;
		if (a->have < TA_AUTH_MAC_SIZE)
			return 0;
		if (a->token) {
			ta_hmac_sha256(a->token, a->token_len, a->nonce, TA_AUTH_NONCE_SIZE, mac);
			if (!ta_mem_equal_ct(mac, a->got, TA_AUTH_MAC_SIZE))
				return refuse(a, fd, "wrong token");
		}
		a->state = TA_SV_AUTH_DONE;
		if (reply(a, fd, TA_AUTH_OK, TA_AUTH_MAGIC_LEN))
			return TA_SV_REFUSED;
	}
	if (a->state == TA_SV_AUTH_REFUSED)
		return TA_SV_REFUSED;
	if (a->state != TA_SV_AUTH_DONE || i == n)
		return 0;
	return ta_sv_conn_feed(c, p + i, n - i) < 0 ? c->cut : 0;
}

int ta_sv_token_load(const char *path, uint8_t *buf, size_t *len)
{
	struct stat st;
	int err = ta_auth_read_token(path, buf, len);

	if (err < 0) {
		fprintf(stderr, "traceagent serve: --token-file %s: %s\n", path,
			err == -EINVAL	? "the file is empty"
			: err == -EFBIG ? "more than 4096 bytes: not a token file"
					: strerror(-err));
		return -1;
	}
	/* Others that can read it can pass for a client: said, not refused
	 * (the file may be shared on purpose through a group). */
	if (stat(path, &st) == 0 && (st.st_mode & 004))
		fprintf(stderr,
			"traceagent serve: warning: --token-file %s can be read by every user "
			"(chmod 600 it)\n",
			path);
	return 0;
}

int ta_sv_listen_is_local(int fd)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0)
		return 0;
	if (ss.ss_family == AF_UNIX)
		return 1;
	if (ss.ss_family == AF_INET)
		return (ntohl(((struct sockaddr_in *)&ss)->sin_addr.s_addr) >> 24) == 127;
	if (ss.ss_family == AF_INET6) {
		const struct in6_addr *a6 = &((struct sockaddr_in6 *)&ss)->sin6_addr;

		return IN6_IS_ADDR_LOOPBACK(a6) ||
		       (IN6_IS_ADDR_V4MAPPED(a6) && a6->s6_addr[12] == 127);
	}
	return 0;
}

int ta_sv_nonce(uint8_t nonce[TA_AUTH_NONCE_SIZE])
{
	size_t got = 0;

	while (got < TA_AUTH_NONCE_SIZE) {
		ssize_t r = getrandom(nonce + got, TA_AUTH_NONCE_SIZE - got, 0);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -1;
		got += (size_t)r;
	}
	return 0;
}
