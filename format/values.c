/* SPDX-License-Identifier: MIT */
/*
 * values.c - sizes, durations and output patterns as settings and
 * record's options are written (values.h).
 */
#include "values.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int ta_parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	if (!s || !*s || *s == '-' || *s == '+')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	switch (*end) {
	case 'k':
	case 'K':
		shift = 10;
		end++;
		break;
	case 'm':
	case 'M':
		shift = 20;
		end++;
		break;
	case 'g':
	case 'G':
		shift = 30;
		end++;
		break;
	default:
		break;
	}
	if (*end == 'i' && shift) /* KiB, MiB */
		end++;
	if ((*end == 'b' || *end == 'B') && shift)
		end++;
	if (*end)
		return -1;
	if (v > (UINT64_MAX >> shift))
		return -1;
	*out = (uint64_t)v << shift;
	return 0;
}

int ta_parse_duration(const char *s, uint64_t *ns)
{
	static const struct {
		const char *unit;
		uint64_t ns;
	} units[] = {{"", 1}, {"ns", 1}, {"us", 1000}, {"ms", 1000000}, {"s", 1000000000}};
	char *end;
	unsigned long long v;

	if (!s || !*s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
		if (!strcmp(end, units[i].unit)) {
			if (v > UINT64_MAX / units[i].ns)
				return -1;
			*ns = v * units[i].ns;
			return 0;
		}
	return -1;
}

int ta_expand_output(const char *pattern, long pid, char *out, size_t size)
{
	size_t n = 0;

	for (const char *p = pattern; *p; p++) {
		char tmp[24];
		const char *add = tmp;
		size_t len;

		if (p[0] == '%' && p[1] == 'p') {
			snprintf(tmp, sizeof(tmp), "%ld", pid);
			p++;
		} else if (p[0] == '%' && p[1] == '%') {
			tmp[0] = '%';
			tmp[1] = 0;
			p++;
		} else {
			tmp[0] = *p;
			tmp[1] = 0;
		}
		len = strlen(add);
		if (n + len + 1 > size)
			return -1;
		memcpy(out + n, add, len);
		n += len;
	}
	if (n == 0 || n + 1 > size)
		return -1;
	out[n] = 0;
	return 0;
}

int ta_output_path(const char *pattern, long pid, char *out, size_t size)
{
	if (ta_expand_output(pattern, pid, out, size) == 0)
		return 0;
	ta_expand_output(TA_DEFAULT_OUTPUT, pid, out, size);
	return -1;
}
