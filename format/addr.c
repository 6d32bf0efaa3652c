/* SPDX-License-Identifier: MIT */
/*
 * addr.c - a collector's address (addr.h).
 */
#include <string.h>

#include "addr.h"

#define TCP_PREFIX  "tcp://"
#define UNIX_PREFIX "unix:"

int ta_addr_names_pid(const char *pattern)
{
	for (const char *p = pattern; *p; p++) {
		if (p[0] != '%')
			continue;
		if (p[1] == 'p')
			return 1;
		if (p[1] == '%')
			p++;
	}
	return 0;
}

int ta_addr_is_stream(const char *s)
{
	return !strncmp(s, TCP_PREFIX, strlen(TCP_PREFIX)) ||
	       !strncmp(s, UNIX_PREFIX, strlen(UNIX_PREFIX));
}

static int parse_port(const char *p, int any, char *out, size_t size)
{
	unsigned long v = 0;
	size_t n = 0;

	for (; p[n]; n++) {
		if (p[n] < '0' || p[n] > '9' || n >= 5)
			return -1;
		v = v * 10 + (unsigned long)(p[n] - '0');
	}
	if (n == 0 || (v == 0 && !any) || v > 65535 || n >= size)
		return -1;
	memcpy(out, p, n + 1);
	return 0;
}

int ta_addr_parse(const char *s, int listening, struct ta_addr *a, const char **why)
{
	const char *host, *colon, *end;
	size_t hlen;

	memset(a, 0, sizeof(*a));
	if (!strncmp(s, UNIX_PREFIX, strlen(UNIX_PREFIX))) {
		const char *path = s + strlen(UNIX_PREFIX);
		if (!*path) {
			*why = "has no socket path after unix:";
			return -1;
		}
		if (strlen(path) >= sizeof(a->path)) {
			*why = "has a socket path longer than a unix socket's 107 bytes";
			return -1;
		}
		a->kind = TA_ADDR_UNIX;
		strcpy(a->path, path);
		return 0;
	}
	if (!strncmp(s, TCP_PREFIX, strlen(TCP_PREFIX)))
		host = s + strlen(TCP_PREFIX);
	else if (listening)
		host = s;
	else {
		*why = "is neither tcp://HOST:PORT nor unix:PATH";
		return -1;
	}
	if (*host == '[') {
		end = strchr(host, ']');
		if (!end || end[1] != ':') {
			*why = "has an IPv6 address without its closing ']:' before the port";
			return -1;
		}
		host++;
		hlen = (size_t)(end - host);
		colon = end + 1;
	} else {
		colon = strrchr(host, ':');
		if (!colon) {
			*why = "has no :PORT";
			return -1;
		}
		hlen = (size_t)(colon - host);
		if (memchr(host, ':', hlen)) {
			*why = "has an IPv6 address not in brackets ([ADDR]:PORT)";
			return -1;
		}
	}
	if (hlen == 0 || hlen >= sizeof(a->host)) {
		*why = hlen ? "has a host name too long" : "has no host before :PORT";
		return -1;
	}
	if (parse_port(colon + 1, listening, a->port, sizeof(a->port)) < 0) {
		*why = listening ? "has a port that is not a number from 0 to 65535"
				 : "has a port that is not a number from 1 to 65535";
		return -1;
	}
	memcpy(a->host, host, hlen);
	a->host[hlen] = 0;
	a->kind = TA_ADDR_TCP;
	return 0;
}
