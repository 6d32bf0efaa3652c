/* SPDX-License-Identifier: MIT */
/*
 * sinkauth.c - the agent's side of the collector's handshake (format/
 * auth.h): with TRACEAGENT_TOKEN naming a file that holds the shared
 * secret, each connection proves it knows the secret before the first
 * byte of its dump, without sending it.
 *
 * TRACEAGENT_TOKEN is the file's path, not the secret: the environment
 * is seen by every process the program starts and, for its user, in
 * /proc/PID/environ; the file has its own permissions.  It is read once,
 * at the first connection: a forked child answers with the same secret.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "auth.h"
#include "settings.h"
#include "sink.h"

static uint8_t token[TA_AUTH_TOKEN_MAX];
static size_t token_len;
/* 0: not read yet; 1: read (token_len 0: none asked); < 0: -errno. */
static int token_state;
static char token_why[320];

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void load_token(void)
{
	const char *path = ta_settings_value("TRACEAGENT_TOKEN");
	char copy[256];
	int err;

	token_state = 1;
	if (!path || !*path)
		return;
	snprintf(copy, sizeof(copy), "%s", path);
	err = ta_auth_read_token(copy, token, &token_len);
	if (err == 0)
		return;
	token_state = err;
	token_len = 0;
	snprintf(token_why, sizeof(token_why), "TRACEAGENT_TOKEN=%.200s: %s", copy,
		 err == -EINVAL	 ? "the file is empty"
		 : err == -EFBIG ? "more than 4096 bytes: not a token file"
				 : strerror(-err));
}

/* All n bytes from fd by the deadline; 0 or -errno (-EPIPE: closed). */
static int read_by(int fd, uint8_t *p, size_t n, int64_t deadline)
{
	while (n) {
		struct pollfd pf = {fd, POLLIN, 0};
		int64_t left = deadline - now_ms();
		ssize_t r;
		int k;

		if (left <= 0)
			return -ETIMEDOUT;
		k = poll(&pf, 1, (int)left);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			continue;
		r = recv(fd, p, n, MSG_DONTWAIT);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -EPIPE;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

static int send_all(int fd, const void *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		p = (const uint8_t *)p + w;
		n -= (size_t)w;
	}
	return 0;
}

int ta_sink_auth(int fd, int64_t deadline, const char **why)
{
	uint8_t msg[TA_AUTH_MAGIC_LEN + TA_AUTH_NONCE_SIZE], mac[TA_AUTH_MAC_SIZE];
	int err;

	if (!token_state)
		load_token();
	if (token_state < 0) {
		*why = token_why;
		return token_state;
	}
	if (!token_len)
		return 0;
	err = send_all(fd, TA_AUTH_HELLO, TA_AUTH_MAGIC_LEN);
	if (err == 0)
		err = read_by(fd, msg, sizeof(msg), deadline);
	if (err == -EPIPE || err == -ECONNRESET ||
	    (err == 0 && memcmp(msg, TA_AUTH_NONCE, TA_AUTH_MAGIC_LEN))) {
		*why = "the collector does not take TRACEAGENT_TOKEN's handshake (not a "
		       "traceagent serve of 1.10 or later?)";
		return -EPROTO;
	}
	if (err < 0)
		return err;
	ta_hmac_sha256(token, token_len, msg + TA_AUTH_MAGIC_LEN, TA_AUTH_NONCE_SIZE, mac);
	err = send_all(fd, mac, sizeof(mac));
	if (err == 0)
		err = read_by(fd, msg, TA_AUTH_MAGIC_LEN, deadline);
	if (err == 0 && !memcmp(msg, TA_AUTH_OK, TA_AUTH_MAGIC_LEN))
		return 0;
	if (err == 0 || err == -EPIPE || err == -ECONNRESET) {
		*why = "the collector refused TRACEAGENT_TOKEN's secret";
		return -EACCES;
	}
	return err;
}
