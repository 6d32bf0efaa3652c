/* SPDX-License-Identifier: MIT */
/*
 * argsview.c - recorded arguments and return values for the views
 * (argsview.h): the items of TA_EXT_ARGS and TA_EXT_RETVAL decoded from
 * values that may be anything (a damaged or hostile dump), and shown.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "argsview.h"
#include "common.h"
#include "grow.h"

int ta_args_decode(const uint64_t *v, uint32_t n, struct ta_argval *out, uint32_t max, char *buf,
		   size_t size, size_t *used, const char **why)
{
	uint32_t k = 0, count = 0;

	while (k < n) {
		uint64_t h = v[k];
		struct ta_argval a;
		uint32_t nv;

		memset(&a, 0, sizeof(a));
		a.fmt = TA_ARGI_FMT(h);
		a.size = TA_ARGI_SIZE(h);
		a.reg = TA_ARGI_REG(h);
		a.fp = !!(h & TA_ARGI_FP);
		a.state = TA_ARGI_STATE(h);
		a.cut = !!(h & TA_ARGI_CUT);
		a.len = TA_ARGI_LEN(h);
		if (a.fmt < TA_ARGF_INT || a.fmt > TA_ARGF_ENUM) {
			*why = "an item of an unknown format";
			return -1;
		}
		if (a.size != 1 && a.size != 2 && a.size != 4 && a.size != 8) {
			*why = "an item of a size other than 1, 2, 4 or 8 bytes";
			return -1;
		}
		if (a.state > TA_ARGS_UNCHECKED || (a.fmt != TA_ARGF_STR && (a.state || a.len)) ||
		    (a.state != TA_ARGS_OK && a.len) || a.len > TA_ARGS_STR_MAX) {
			*why = "an item whose string state or length cannot be";
			return -1;
		}
		if (k + 2 > n) {
			*why = "an item without its value";
			return -1;
		}
		a.raw = v[k + 1];
		nv = (a.len + 7) / 8;
		if (nv > n - k - 2) {
			*why = "a string longer than its event";
			return -1;
		}
		if (a.len) {
			if (*used + a.len > size) {
				*why = "more string bytes than a call may carry";
				return -1;
			}
			for (uint32_t b = 0; b < a.len; b++)
				buf[*used + b] = (char)(uint8_t)(v[k + 2 + b / 8] >> (8 * (b % 8)));
			a.str = buf + *used;
			*used += a.len;
		}
		k += 2 + nv;
		if (count < max)
			out[count++] = a;
	}
	return (int)count;
}

/* The value's bits as a signed or unsigned integer of its size. */
int64_t ta_argval_signed(const struct ta_argval *a)
{
	switch (a->size) {
	case 1:
		return (int8_t)a->raw;
	case 2:
		return (int16_t)a->raw;
	case 4:
		return (int32_t)a->raw;
	}
	return (int64_t)a->raw;
}

static uint64_t as_unsigned(const struct ta_argval *a)
{
	return a->size >= 8 ? a->raw : a->raw & ((1ull << (8 * a->size)) - 1);
}

/* One character as C writes it inside quotes q. */
static void put_char(FILE *f, unsigned char ch, char q)
{
	switch (ch) {
	case '\n':
		fputs("\\n", f);
		return;
	case '\t':
		fputs("\\t", f);
		return;
	case '\r':
		fputs("\\r", f);
		return;
	case '\\':
		fputs("\\\\", f);
		return;
	}
	if (ch == (unsigned char)q)
		fprintf(f, "\\%c", q);
	else if (ch < 0x20 || ch == 0x7f)
		fprintf(f, "\\x%02x", ch);
	else
		fputc(ch, f);
}

/* The shortest of %.*g that reads back as v. */
static void put_float(FILE *f, double v, int single)
{
	char buf[48];

	for (int prec = single ? 6 : 15; prec <= 17; prec++) {
		snprintf(buf, sizeof(buf), "%.*g", prec, v);
		if (single ? (float)strtod(buf, NULL) == (float)v : strtod(buf, NULL) == v)
			break;
	}
	fputs(buf, f);
	/* A whole number still reads as a floating-point one. */
	if (!strpbrk(buf, ".eEin"))
		fputs(".0", f);
}

void ta_argval_print(FILE *f, const struct ta_argval *a)
{
	switch (a->fmt) {
	case TA_ARGF_ENUM:
		if (a->name) {
			fputs(a->name, f);
			return;
		}
		/* fall through */
	case TA_ARGF_INT:
		fprintf(f, "%" PRId64, ta_argval_signed(a));
		return;
	case TA_ARGF_UINT:
		fprintf(f, "%" PRIu64, as_unsigned(a));
		return;
	case TA_ARGF_HEX:
		fprintf(f, "%#" PRIx64, as_unsigned(a));
		if (!as_unsigned(a))
			fputs("x0", f); /* %#x writes 0 alone */
		return;
	case TA_ARGF_CHAR:
		fputc('\'', f);
		put_char(f, (unsigned char)a->raw, '\'');
		fputc('\'', f);
		return;
	case TA_ARGF_FLOAT:
		if (a->size == 4) {
			uint32_t bits = (uint32_t)a->raw;
			float x;

			memcpy(&x, &bits, sizeof(x));
			put_float(f, x, 1);
		} else {
			double x;

			memcpy(&x, &a->raw, sizeof(x));
			put_float(f, x, 0);
		}
		return;
	case TA_ARGF_PTR:
		if (!a->raw)
			fputs("NULL", f);
		else
			fprintf(f, "%#" PRIx64, a->raw);
		return;
	case TA_ARGF_STR:
		switch (a->state) {
		case TA_ARGS_NULL:
			fputs("NULL", f);
			return;
		case TA_ARGS_UNREADABLE:
			fprintf(f, "(unreadable %#" PRIx64 ")", a->raw);
			return;
		case TA_ARGS_UNCHECKED:
			fprintf(f, "(not read %#" PRIx64 ")", a->raw);
			return;
		}
		fputc('"', f);
		for (unsigned k = 0; k < a->len; k++)
			put_char(f, (unsigned char)a->str[k], '"');
		fputc('"', f);
		if (a->cut)
			fputs("...", f);
		return;
	}
}

const char *ta_argval_text(const struct ta_argval *a, char *buf, size_t size)
{
	FILE *m = fmemopen(buf, size, "w");

	if (!size)
		return buf;
	buf[0] = 0;
	if (!m)
		return buf;
	/* A full buffer cuts the text. */
	setvbuf(m, NULL, _IONBF, 0);
	ta_argval_print(m, a);
	fclose(m);
	buf[size - 1] = 0;
	return buf;
}

void ta_callargs_print(FILE *f, const struct ta_callargs *ca)
{
	for (uint32_t i = 0; i < ca->nargs; i++) {
		if (i)
			fputs(", ", f);
		ta_argval_print(f, &ca->a[i]);
	}
}

const char *ta_argval_name(const struct ta_argval *a, char *buf, size_t size)
{
	if (a->reg == 0)
		snprintf(buf, size, "retval");
	else
		snprintf(buf, size, "%sarg%u", a->fp ? "fp" : "", a->reg);
	return buf;
}

char *ta_callargs_json(const struct ta_callargs *ca)
{
	char *buf = NULL, name[16], text[TA_ARGS_STR_MAX * 4 + 64];
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);

	if (!m)
		return NULL;
	for (uint32_t i = 0; i <= ca->nargs; i++) {
		const struct ta_argval *a = i < ca->nargs ? &ca->a[i] : &ca->ret;

		if (i == ca->nargs && !ca->has_ret)
			break;
		fprintf(m, "%s\"%s\": ", i ? ", " : "", ta_argval_name(a, name, sizeof(name)));
		ta_json_str(m, ta_argval_text(a, text, sizeof(text)));
	}
	if (fclose(m) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

char *ta_callargs_lines(const struct ta_callargs *ca)
{
	char *buf = NULL, name[16], text[TA_ARGS_STR_MAX * 4 + 64];
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);

	if (!m)
		return NULL;
	for (uint32_t i = 0; i < ca->nargs; i++)
		fprintf(m, "%s\t%s\n", ta_argval_name(&ca->a[i], name, sizeof(name)),
			ta_argval_text(&ca->a[i], text, sizeof(text)));
	if (ca->has_ret)
		fprintf(m, "retval\t%s\n", ta_argval_text(&ca->ret, text, sizeof(text)));
	if (fclose(m) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* ---- the calls open on a thread ---- */

int ta_argstack_put(struct ta_argstack *s, uint32_t depth, uint64_t enter, uint64_t kind,
		    const uint64_t *v, uint32_t n)
{
	struct ta_argframe *f;
	uint64_t **dst;
	uint32_t *dn, *dcap;

	if (depth >= s->n) {
		size_t cap = s->n;
		struct ta_argframe *nf =
		    ta_vec_reserve_max(s->f, (size_t)depth + 1, &cap, sizeof(*nf), 16, UINT32_MAX);

		if (!nf)
			return -1;
		memset(nf + s->n, 0, (cap - s->n) * sizeof(*nf));
		s->f = nf;
		s->n = cap;
	}
	f = &s->f[depth];
	if (f->enter != enter || (!f->has_a && !f->has_r)) {
		f->enter = enter;
		f->has_a = f->has_r = 0;
	}
	if (kind == TA_EXT_ARGS) {
		dst = &f->av;
		dn = &f->an;
		dcap = &f->acap;
		f->has_a = 1;
	} else {
		dst = &f->rv;
		dn = &f->rn;
		dcap = &f->rcap;
		f->has_r = 1;
	}
	if (n > *dcap) {
		uint64_t *p = malloc((size_t)n * sizeof(*p));

		if (!p) {
			f->has_a = f->has_r = 0;
			return -1;
		}
		free(*dst);
		*dst = p;
		*dcap = n;
	}
	if (n)
		memcpy(*dst, v, (size_t)n * sizeof(*v));
	*dn = n;
	return 0;
}

int ta_argstack_get(const struct ta_argstack *s, uint32_t depth, uint64_t enter,
		    struct ta_callargs *out)
{
	const struct ta_argframe *f = depth < s->n ? &s->f[depth] : NULL;
	const char *why;
	size_t used = 0;
	int k;

	out->nargs = 0;
	out->has_ret = 0;
	if (!f || f->enter != enter || (!f->has_a && !f->has_r))
		return 0;
	if (f->has_a) {
		k = ta_args_decode(f->av, f->an, out->a, TA_CALLARGS_MAX, out->bytes,
				   sizeof(out->bytes), &used, &why);
		if (k < 0)
			return 0;
		out->nargs = (uint32_t)k;
	}
	if (f->has_r) {
		k = ta_args_decode(f->rv, f->rn, &out->ret, 1, out->bytes, sizeof(out->bytes),
				   &used, &why);
		out->has_ret = k == 1;
	}
	return out->nargs || out->has_ret;
}

void ta_argstack_free(struct ta_argstack *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->f[i].av);
		free(s->f[i].rv);
	}
	free(s->f);
	s->f = NULL;
	s->n = 0;
}
