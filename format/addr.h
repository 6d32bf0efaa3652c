/* SPDX-License-Identifier: MIT */
/*
 * addr.h - where a dump is streamed to (addr.c): the spelling of a
 * collector's address, shared by the agent (TRACEAGENT_OUTPUT, record -o)
 * and `traceagent serve --listen`.
 *
 *   tcp://HOST:PORT   HOST a name, an IPv4 address or [an IPv6 one]
 *   unix:PATH         a stream socket in the file system
 *
 * Parsing only: resolving and connecting are each side's (the agent
 * connects, serve listens).
 */
#ifndef TA_ADDR_H
#define TA_ADDR_H

#include <stddef.h>

enum ta_addr_kind { TA_ADDR_TCP = 1, TA_ADDR_UNIX = 2 };

struct ta_addr {
	enum ta_addr_kind kind;
	char host[256]; /* TCP: without the brackets of an IPv6 address */
	char port[8];	/* TCP: digits, 1 to 65535 */
	char path[108]; /* UNIX: fits sun_path with its NUL */
};

/* 1 if s names a collector (starts with "tcp://" or "unix:"), else 0: a
 * file.  A dump's file name that starts so must be given as ./NAME. */
int ta_addr_is_stream(const char *s);
/* 1 if an output pattern names the pid (%p; %% is a '%'): one dump a
 * process, else 0. */
int ta_addr_names_pid(const char *pattern);
/* Parses s.  listening (serve's --listen): "HOST:PORT" is taken as TCP
 * too, and port 0 (any free one) is allowed.  0, or -1 with *why set to
 * what is wrong. */
int ta_addr_parse(const char *s, int listening, struct ta_addr *a, const char **why);

#endif
