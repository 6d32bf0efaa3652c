/* SPDX-License-Identifier: MIT */
/*
 * chttp.c - HTTP/1.1 POSTs to ClickHouse (chttp.h).  One connection per
 * POST ("Connection: close"): the batches are large, so a connection's
 * cost is nothing beside them, and there is no stale keep-alive socket to
 * get wrong.  The answer is read to its end, keeping its first bytes: a
 * status line, headers, and a body plain, with a Content-Length or
 * chunked.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "chttp.h"

/* The bytes of an answer kept: headers and an error's text fit. */
#define ANSWER_MAX (64u << 10)

int ta_ch_url_parse(const char *url, struct ta_ch_url *u, const char **why)
{
	const char *p = url, *host, *hend, *q;
	size_t n;

	memset(u, 0, sizeof(*u));
	if (!strncmp(p, "https://", 8)) {
		*why = "https is not spoken here: use http:// (through a tunnel or a TLS proxy)";
		return -1;
	}
	if (strncmp(p, "http://", 7)) {
		*why = "is not an http:// URL";
		return -1;
	}
	p += 7;
	if (strchr(p, '@')) {
		*why = "has credentials in it: give them in a file (--clickhouse-credentials)";
		return -1;
	}
	if (*p == '[') {
		host = p + 1;
		hend = strchr(host, ']');
		if (!hend) {
			*why = "has an unclosed '[' around its IPv6 address";
			return -1;
		}
		p = hend + 1;
	} else {
		host = p;
		hend = p + strcspn(p, ":/?");
		p = hend;
	}
	n = (size_t)(hend - host);
	if (!n || n >= sizeof(u->host)) {
		*why = "has no host, or one too long";
		return -1;
	}
	memcpy(u->host, host, n);
	for (const char *c = u->host; *c; c++)
		if ((unsigned char)*c <= ' ' || *c == '/' || *c == '[' || *c == ']') {
			*why = "has a space, a control character or a bracket in its host";
			return -1;
		}
	strcpy(u->port, "8123");
	if (*p == ':') {
		p++;
		n = strspn(p, "0123456789");
		if (!n || n > 5 || atoi(p) < 1 || atoi(p) > 65535) {
			*why = "has a port that is not a number from 1 to 65535";
			return -1;
		}
		memcpy(u->port, p, n);
		u->port[n] = 0;
		p += n;
	}
	q = strchr(p, '?');
	n = q ? (size_t)(q - p) : strlen(p);
	if (n >= sizeof(u->path) || (q && strlen(q + 1) >= sizeof(u->query))) {
		*why = "is too long";
		return -1;
	}
	if (n && *p != '/') {
		*why = "has something after its host that is not /PATH or ?QUERY";
		return -1;
	}
	memcpy(u->path, n ? p : "/", n ? n : 1);
	if (q)
		strcpy(u->query, q + 1);
	for (const char *c = u->path; *c; c++)
		if ((unsigned char)*c <= ' ' || *c == '#') {
			*why = "has a space, a control character or '#' in its path";
			return -1;
		}
	for (const char *c = u->query; *c; c++)
		if ((unsigned char)*c <= ' ' || *c == '#') {
			*why = "has a space, a control character or '#' in its query";
			return -1;
		}
	return 0;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Waits for fd to be ready for events within the deadline: 0, or -1 with
 * errno (ETIMEDOUT). */
static int wait_fd(int fd, short events, int64_t deadline)
{
	for (;;) {
		struct pollfd p = {fd, events, 0};
		int64_t left = deadline - now_ms();
		int r;

		if (left <= 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		r = poll(&p, 1, (int)left);
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -1;
	}
}

static int connect_to(const struct ta_ch_url *u, int timeout_ms, char *why, size_t why_size)
{
	struct addrinfo hints, *res, *ai;
	int fd = -1, r, err = ECONNREFUSED;

	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	r = getaddrinfo(u->host, u->port, &hints, &res);
	if (r) {
		snprintf(why, why_size, "%s: %s", u->host,
			 r == EAI_SYSTEM ? strerror(errno) : gai_strerror(r));
		return -1;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		int64_t deadline = now_ms() + timeout_ms;
		socklen_t el = sizeof(err);

		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK,
			    ai->ai_protocol);
		if (fd < 0) {
			err = errno;
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		err = errno;
		if (err == EINPROGRESS && wait_fd(fd, POLLOUT, deadline) == 0 &&
		    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) == 0 && err == 0)
			break;
		if (err == EINPROGRESS)
			err = errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(res);
	if (fd < 0)
		snprintf(why, why_size, "cannot connect to %s:%s: %s", u->host, u->port,
			 strerror(err));
	return fd;
}

static int send_all(int fd, const void *p, size_t n, int64_t deadline)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w < 0 && (errno == EAGAIN || errno == EINTR)) {
			if (wait_fd(fd, POLLOUT, deadline) < 0)
				return -1;
			continue;
		}
		if (w <= 0)
			return -1;
		p = (const char *)p + w;
		n -= (size_t)w;
	}
	return 0;
}

/* %-encoding of a query parameter's value. */
static char *url_encode(const char *s)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = strlen(s);
	char *out = malloc(3 * n + 1), *o = out;

	if (!out)
		return NULL;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '_' || c == '.' || c == '~') {
			*o++ = (char)c;
		} else {
			*o++ = '%';
			*o++ = hex[c >> 4];
			*o++ = hex[c & 15];
		}
	}
	*o = 0;
	return out;
}

static void base64(const char *in, size_t n, char *out)
{
	static const char b64[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t o = 0;

	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)(uint8_t)in[i] << 16;

		if (i + 1 < n)
			v |= (uint32_t)(uint8_t)in[i + 1] << 8;
		if (i + 2 < n)
			v |= (uint8_t)in[i + 2];
		out[o++] = b64[v >> 18];
		out[o++] = b64[(v >> 12) & 63];
		out[o++] = i + 1 < n ? b64[(v >> 6) & 63] : '=';
		out[o++] = i + 2 < n ? b64[v & 63] : '=';
	}
	out[o] = 0;
}

int ta_ch_answer(char *a, size_t len, int *status, char **body, size_t *blen)
{
	char *end = memmem(a, len, "\r\n\r\n", 4), *te;

	a[len] = 0;
	if (sscanf(a, "HTTP/1.%*d %d", status) != 1 || !end)
		return -1;
	*end = 0;
	*body = end + 4;
	*blen = len - (size_t)(*body - a);
	te = strcasestr(a, "\r\nTransfer-Encoding: chunked");
	if (te) {
		char *r = *body, *w = *body, *lim = *body + *blen;

		while (r < lim) {
			char *e;
			unsigned long k = strtoul(r, &e, 16);

			e = memmem(r, (size_t)(lim - r), "\r\n", 2);
			if (!e || k == 0)
				break;
			r = e + 2;
			if (k > (size_t)(lim - r))
				k = (size_t)(lim - r);
			memmove(w, r, k);
			w += k;
			r = (size_t)(lim - r) >= k + 2 ? r + k + 2 : lim;
		}
		*blen = (size_t)(w - *body);
	}
	return 0;
}

int ta_ch_post(const struct ta_ch_url *u, const struct ta_ch_auth *auth, const char *sql,
	       const void *body, size_t n, int timeout_ms, char *out, size_t out_size, char *why,
	       size_t why_size)
{
	char head[2048], cred[600], *q, *ans, *b;
	size_t alen = 0, blen;
	int fd, status, hl, rc = TA_CH_DOWN;
	int64_t deadline;

	if (out && out_size)
		*out = 0;
	q = url_encode(sql);
	ans = malloc(ANSWER_MAX + 1);
	if (!q || !ans) {
		snprintf(why, why_size, "out of memory");
		free(q);
		free(ans);
		return TA_CH_REFUSED;
	}
	fd = connect_to(u, timeout_ms, why, why_size);
	if (fd < 0)
		goto out;
	cred[0] = 0;
	if (auth && auth->user[0]) {
		char up[400], b64[560];
		size_t ul = strlen(auth->user), pl = strlen(auth->password);

		memcpy(up, auth->user, ul);
		up[ul] = ':';
		memcpy(up + ul + 1, auth->password, pl);
		base64(up, ul + 1 + pl, b64);
		snprintf(cred, sizeof(cred), "Authorization: Basic %s\r\n", b64);
		memset(up, 0, sizeof(up));
	}
	hl = snprintf(head, sizeof(head), "POST %s?%s%squery=", u->path, u->query,
		      u->query[0] ? "&" : "");
	deadline = now_ms() + timeout_ms;
	if (send_all(fd, head, (size_t)hl, deadline) < 0 ||
	    send_all(fd, q, strlen(q), deadline) < 0)
		goto broke;
	hl = snprintf(head, sizeof(head),
		      " HTTP/1.1\r\nHost: %s%s%s:%s\r\n%sContent-Length: %zu\r\n"
		      "Content-Type: text/tab-separated-values\r\nConnection: close\r\n\r\n",
		      strchr(u->host, ':') ? "[" : "", u->host, strchr(u->host, ':') ? "]" : "",
		      u->port, cred, n);
	memset(cred, 0, sizeof(cred));
	if (send_all(fd, head, (size_t)hl, deadline) < 0 || send_all(fd, body, n, deadline) < 0)
		goto broke;
	/* The answer, to its end; its first ANSWER_MAX bytes kept. */
	for (;;) {
		char sink[4096];
		ssize_t r;

		if (wait_fd(fd, POLLIN, now_ms() + timeout_ms) < 0)
			goto broke;
		if (alen < ANSWER_MAX)
			r = recv(fd, ans + alen, ANSWER_MAX - alen, 0);
		else
			r = recv(fd, sink, sizeof(sink), 0);
		if (r < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (r < 0)
			goto broke;
		if (r == 0)
			break;
		if (alen < ANSWER_MAX)
			alen += (size_t)r;
	}
	ans[alen] = 0;
	if (ta_ch_answer(ans, alen, &status, &b, &blen) < 0) {
		snprintf(why, why_size, "%s:%s answered what is not HTTP", u->host, u->port);
		goto out;
	}
	b[blen] = 0;
	if (out && out_size)
		snprintf(out, out_size, "%s", b);
	if (status == 200) {
		rc = TA_CH_OK;
		goto out;
	}
	/* ClickHouse's exception, on one line. */
	for (char *c = b; *c; c++)
		if (*c == '\n' || *c == '\r')
			*c = ' ';
	while (blen && b[blen - 1] == ' ')
		b[--blen] = 0;
	snprintf(why, why_size, "HTTP %d: %.400s", status, blen ? b : "(no text)");
	/* 503 and the like: the server is there but cannot take it now. */
	rc = status >= 500 && status != 500 ? TA_CH_DOWN : TA_CH_REFUSED;
	goto out;
broke:
	snprintf(why, why_size, "%s:%s: %s", u->host, u->port,
		 errno == ETIMEDOUT ? "no answer within the time allowed" : strerror(errno));
out:
	if (fd >= 0)
		close(fd);
	free(q);
	free(ans);
	return rc;
}
