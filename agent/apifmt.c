/* SPDX-License-Identifier: MIT */
/*
 * apifmt.c - the text of TA_MESSAGE: printf's formatting of the program's
 * format string, one conversion at a time, each argument fetched by the
 * type its conversion names, into a buffer of the dump's text size.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <wchar.h>

#include "apifmt.h"
#include "format.h"

struct out {
	char *p;
	size_t len, cap; /* cap: bytes the text may take */
	int cut;
};

static void out_put(struct out *o, const char *s, size_t n)
{
	if (n > o->cap - o->len) {
		n = o->cap - o->len;
		o->cut = 1;
	}
	memcpy(o->p + o->len, s, n);
	o->len += n;
}

/* snprintf of one conversion, its result appended (cut at the end). */
#define OUT_CONV(o, spec, arg)                                                                     \
	do {                                                                                       \
		char one_[TA_TEXT_MAX + 1];                                                        \
		int n_ = snprintf(one_, sizeof(one_), spec, arg);                                  \
		if (n_ > 0) {                                                                      \
			if ((size_t)n_ >= sizeof(one_))                                            \
				(o)->cut = 1, n_ = (int)sizeof(one_) - 1;                          \
			out_put(o, one_, (size_t)n_);                                              \
		}                                                                                  \
	} while (0)

/*
 * printf's formatting, one conversion at a time through snprintf, each
 * argument fetched by the type its conversion names: so %n is consumed
 * and writes nothing (a message never writes to the program's memory),
 * and a conversion this does not know ends the formatting there, the rest
 * of the format copied as it is, rather than fetch an argument of a
 * guessed type.
 */
#pragma GCC diagnostic push
/* The conversions are built here from the checked parts of fmt. */
#pragma GCC diagnostic ignored "-Wformat-nonliteral"
static void format_message(struct out *o, const char *fmt, va_list ap)
{
	const char *p = fmt;

	while (*p && !o->cut) {
		char spec[64];
		size_t sl = 0;
		int lng = 0, star;
		const char *start;

		if (*p != '%') {
			const char *e = strchr(p, '%');
			size_t n = e ? (size_t)(e - p) : strlen(p);
			out_put(o, p, n);
			p += n;
			continue;
		}
		start = p++;
		spec[sl++] = '%';
		while (*p && strchr("-+ #0'", *p) && sl < 16)
			spec[sl++] = *p++;
		/* Width and precision; a * takes an int argument. */
		for (int part = 0; part < 2; part++) {
			if (part == 1) {
				if (*p != '.')
					break;
				spec[sl++] = *p++;
			}
			star = *p == '*';
			if (star) {
				int w = va_arg(ap, int);
				sl += (size_t)snprintf(spec + sl, sizeof(spec) - sl, "%d",
						       w > 4096	   ? 4096
						       : w < -4096 ? -4096
								   : w);
				p++;
			} else {
				while (*p >= '0' && *p <= '9' && sl < 40)
					spec[sl++] = *p++;
			}
		}
		if (*p == '$') /* positional arguments: not followed */
			goto verbatim;
		if (*p == 'h') {
			spec[sl++] = *p++;
			if (*p == 'h')
				spec[sl++] = *p++;
		} else if (*p == 'l') {
			spec[sl++] = *p++, lng = 1;
			if (*p == 'l')
				spec[sl++] = *p++, lng = 2;
		} else if (*p == 'L' || *p == 'q') {
			spec[sl++] = 'L', p++, lng = 3;
		} else if (*p == 'j' || *p == 'z' || *p == 't') {
			lng = *p == 'j' ? 4 : *p == 'z' ? 5 : 6;
			spec[sl++] = *p++;
		}
		spec[sl++] = *p;
		spec[sl] = 0;
		switch (*p) {
		case 'd':
		case 'i':
			if (lng == 1)
				OUT_CONV(o, spec, va_arg(ap, long));
			else if (lng == 2 || lng == 3)
				OUT_CONV(o, lng == 3 ? "%lld" : spec, va_arg(ap, long long));
			else if (lng >= 4)
				OUT_CONV(o, spec, va_arg(ap, long long));
			else
				OUT_CONV(o, spec, va_arg(ap, int));
			break;
		case 'u':
		case 'o':
		case 'x':
		case 'X':
			if (lng == 1)
				OUT_CONV(o, spec, va_arg(ap, unsigned long));
			else if (lng >= 2)
				OUT_CONV(o, spec, va_arg(ap, unsigned long long));
			else
				OUT_CONV(o, spec, va_arg(ap, unsigned));
			break;
		case 'c':
			if (lng == 1)
				OUT_CONV(o, spec, va_arg(ap, wint_t));
			else
				OUT_CONV(o, spec, va_arg(ap, int));
			break;
		case 's':
			if (lng == 1)
				OUT_CONV(o, spec, va_arg(ap, const wchar_t *));
			else
				OUT_CONV(o, spec, va_arg(ap, const char *));
			break;
		case 'p':
			OUT_CONV(o, spec, va_arg(ap, void *));
			break;
		case 'f':
		case 'F':
		case 'e':
		case 'E':
		case 'g':
		case 'G':
		case 'a':
		case 'A':
			if (lng == 3)
				OUT_CONV(o, spec, va_arg(ap, long double));
			else
				OUT_CONV(o, spec, va_arg(ap, double));
			break;
		case 'n':
			(void)va_arg(ap, void *); /* written nothing */
			break;
		case '%':
			out_put(o, "%", 1);
			break;
		default:
			goto verbatim;
		}
		p++;
		continue;
	verbatim:
		out_put(o, start, strlen(start));
		return;
	}
}
#pragma GCC diagnostic pop

size_t ta_api_format(char *out, size_t cap, int *cut, const char *fmt, va_list ap)
{
	struct out o = {out, 0, cap, 0};

	format_message(&o, fmt, ap);
	*cut = o.cut;
	return o.len;
}
