/* SPDX-License-Identifier: MIT */
/*
 * optvalues.c - the values of options several commands share (times,
 * time ranges, globs) and writing a whole buffer; see common.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "common.h"

/* ---- options ------------------------------------------------------------------------ */

int ta_parse_time(const char *s, uint64_t *ns)
{
	static const struct {
		const char *name;
		uint64_t ns;
	} units[] = {{"", 1},	      {"ns", 1},	 {"us", 1000},
		     {"ms", 1000000}, {"s", 1000000000}, {"min", 60000000000}};
	uint64_t whole = 0, frac = 0, fscale = 1, unit = 0, r;
	int digits = 0;

	while (*s >= '0' && *s <= '9') {
		uint64_t d = (uint64_t)(*s++ - '0');

		if (whole > (UINT64_MAX - d) / 10)
			return -1;
		whole = whole * 10 + d;
		digits++;
	}
	if (*s == '.') {
		s++;
		/* More than eighteen decimals would overflow the scale
		 * (and mean less than a nanosecond anyway). */
		while (*s >= '0' && *s <= '9') {
			if (fscale >= 1000000000000000000ull)
				return -1;
			frac = frac * 10 + (uint64_t)(*s++ - '0');
			fscale *= 10;
			digits++;
		}
	}
	if (!digits)
		return -1;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(s, units[i].name))
			unit = units[i].ns;
	if (!unit)
		return -1;
	if (whole && unit > UINT64_MAX / whole)
		return -1;
	r = whole * unit;
	/* frac / fscale of a unit must come out as whole nanoseconds:
	 * "1.5ns" is refused rather than rounded.  The product needs more
	 * than 64 bits for long fractions of minutes. */
	if (frac) {
		unsigned __int128 part = (unsigned __int128)frac * unit;

		if (part % fscale)
			return -1;
		part /= fscale;
		if (part > UINT64_MAX - r)
			return -1;
		r += (uint64_t)part;
	}
	*ns = r;
	return 0;
}

int ta_parse_time_range(const char *s, uint64_t *lo, uint64_t *hi)
{
	const char *dash = strchr(s, '-');
	char left[64];
	size_t n;

	if (!dash)
		return -1;
	n = (size_t)(dash - s);
	if (n >= sizeof(left))
		return -1;
	memcpy(left, s, n);
	left[n] = 0;
	*lo = 0;
	*hi = UINT64_MAX;
	if (n && ta_parse_time(left, lo) < 0)
		return -1;
	if (dash[1] && ta_parse_time(dash + 1, hi) < 0)
		return -1;
	return *lo <= *hi ? 0 : -1;
}

/* Matches c against the set at g (just after the '['); returns the
 * position after the closing ']' with *ok set, or NULL when the set is not
 * closed (the '[' is then an ordinary character). */
static const char *glob_set(const char *g, unsigned char c, int *ok)
{
	int neg = 0, in = 0;
	const char *p = g;

	if (*p == '!' || *p == '^')
		neg = 1, p++;
	/* A ']' first in the set is a member, as in the shell. */
	if (*p == ']') {
		in |= c == ']';
		p++;
	}
	while (*p && *p != ']') {
		unsigned char a = (unsigned char)*p, b = a;

		if (p[1] == '-' && p[2] && p[2] != ']') {
			b = (unsigned char)p[2];
			p += 3;
		} else {
			p++;
		}
		in |= c >= a && c <= b;
	}
	if (!*p)
		return NULL;
	*ok = in != neg;
	return p + 1;
}

int ta_glob_match(const char *glob, const char *name)
{
	/* Backtracking to the last '*' only is enough: a later star can
	 * match anything the earlier one would have taken. */
	const char *g = glob, *n = name, *star_g = NULL, *star_n = NULL;

	/* A name given whole is itself, whatever it holds: the agent's
	 * "[traceagent wait]" reads as a set otherwise. */
	if (!strcmp(glob, name))
		return 1;
	while (*n) {
		const char *next = NULL;
		int ok = 0;

		if (*g == '*') {
			while (*g == '*')
				g++;
			star_g = g;
			star_n = n;
			continue;
		}
		if (*g == '?') {
			ok = 1;
			next = g + 1;
		} else if (*g == '[' && (next = glob_set(g + 1, (unsigned char)*n, &ok))) {
			/* a set; ok says whether it holds *n */
		} else if (*g == '\\' && g[1]) {
			ok = g[1] == *n;
			next = g + 2;
		} else if (*g) {
			ok = *g == *n;
			next = g + 1;
		}
		if (ok) {
			g = next;
			n++;
		} else if (star_g) {
			g = star_g;
			n = ++star_n;
		} else {
			return 0;
		}
	}
	while (*g == '*')
		g++;
	return !*g;
}

int ta_write_all(int fd, const void *p, size_t n)
{
	const uint8_t *c = p;

	while (n) {
		ssize_t w = write(fd, c, n);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (w == 0)
				errno = EIO;
			return -1;
		}
		c += w;
		n -= (size_t)w;
	}
	return 0;
}
