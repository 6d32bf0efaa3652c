/* SPDX-License-Identifier: MIT */
/*
 * counters.c - `traceagent counters DUMP`: the manual API's counters
 * (TA_COUNTER, TA_COUNTER_F), one row per name over the whole dump:
 * samples, min, max, average and last value, and with --svg a small plot
 * of each over time with the frame marks along the time axis.
 *
 * One pass of the session.  The numbers need nothing per sample; only
 * --svg keeps the samples (and frame marks), as it must draw them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apiev.h"
#include "cmdopts.h"
#include "commands.h"
#include "common.h"

/* A sample kept for the plot: converted to ns once the clocks are known. */
struct point {
	uint32_t pid;
	uint64_t ticks;
	double value;
	int64_t ns;
};

/* The last finite sample of a counter in one process: "last" compares
 * times only after the walk, when each process's clock converts them. */
struct last {
	uint32_t pid;
	uint64_t ticks;
	int is_int;
	int64_t i;
	double d;
};

struct counter {
	char *name;
	char *channel; /* of its first sample */
	uint64_t samples, non_finite, finite;
	int all_int; /* every sample was TA_COUNTER's */
	int64_t imin, imax;
	double min, max;
	long double sum;
	int decimals;  /* the most decimal places of a sample (DECIMALS_MAX at most) */
	uint32_t unit; /* TA_COUNTER_CONFIG's TA_UNIT_*_ + 1; 0: none given */
	struct last *lasts;
	size_t nlasts, lasts_cap;
	struct point *pts;
	size_t npts, cap;
};

struct counters {
	const char *path, *svg;
	int json;
	struct ta_view v;
	struct counter *c;
	size_t n, cap;
	struct point *frames; /* frame marks, for --svg */
	size_t nframes, frames_cap;
	int nomem;
	char text[TA_TEXT_MAX + 1];
	/* TA_COUNTER_CONFIG's units by counter name, given to the counters
	 * after the walk (a unit may come before the first sample). */
	struct unit_of *units;
	size_t nunits, units_cap;
};

struct unit_of {
	char *name;
	uint32_t unit;
};

static void usage(FILE *f)
{
	fprintf(f, "usage: traceagent counters [--json] [--svg FILE] DUMP\n"
		   "\n"
		   "The counters of the manual API (TA_COUNTER, TA_COUNTER_F), one row per\n"
		   "name over every thread and process: samples, min, max, avg and the last\n"
		   "value in time order (avg to one decimal place more than the most precise\n"
		   "sample; exact in JSON).  Samples that are NaN or infinite are counted in\n"
		   "samples and non_finite, and left out of the other numbers.\n"
		   "\n"
		   "  --json          {\"counters\": [{\"name\", \"channel\", \"samples\",\n"
		   "                  \"non_finite\", \"integer\", \"min\", \"max\", \"avg\",\n"
		   "                  \"last\"}]} (null where a counter has no finite sample;\n"
		   "                  integer: every sample was a TA_COUNTER's)\n"
		   "  --svg FILE      also draw each counter over time in FILE, one plot per\n"
		   "                  counter, with the frame marks as ticks on the time axis\n"
		   "  --section=NAME  only the time inside the program's section NAME\n"
		   "  -j N, --jobs=N  N threads read the dump (default: one per CPU\n"
		   "                  it may use, at most 64; N up to 1024)\n"
		   "  -h, --help      this help\n"
		   "\n"
		   "Exit status: 0 for a whole dump, 1 when it is damaged or incomplete, 2 for\n"
		   "usage errors or a file that cannot be opened.\n");
}

/* ---- the walk ----------------------------------------------------------------------- */

static struct counter *counter_of(struct counters *cs, const char *name, const char *channel)
{
	struct counter *c;

	/* Few names: a dump with thousands of counters is not what this
	 * view is for, and a linear search stays correct for it. */
	for (size_t i = 0; i < cs->n; i++)
		if (!strcmp(cs->c[i].name, name))
			return &cs->c[i];
	c = ta_vec_reserve(cs->c, cs->n + 1, &cs->cap, sizeof(*c), 16);
	if (!c)
		return NULL;
	cs->c = c;
	c = &cs->c[cs->n];
	memset(c, 0, sizeof(*c));
	c->name = strdup(name);
	c->channel = strdup(channel);
	if (!c->name || !c->channel) {
		free(c->name);
		free(c->channel);
		return NULL;
	}
	c->all_int = 1;
	cs->n++;
	return c;
}

static int add_point(struct point **pts, size_t *n, size_t *cap, uint32_t pid, uint64_t ticks,
		     double value)
{
	if (*n == *cap) {
		struct point *p = ta_vec_reserve(*pts, *n + 1, cap, sizeof(*p), 64);

		if (!p)
			return -1;
		*pts = p;
	}
	(*pts)[(*n)++] = (struct point){pid, ticks, value, 0};
	return 0;
}

/* The text's average has one decimal place more than the most precise
 * sample (0..99: 49.5; 2.25 and 0: 1.125), at most DECIMALS_MAX: the
 * precision of the values, not the 17 digits of a double. */
#define DECIMALS_MAX 6

/* The decimal places of v, from at least `from` (DECIMALS_MAX for more). */
static int decimals_of(double v, int from)
{
	double scale = 1;
	int k;

	if (!isfinite(v))
		return from;
	for (k = 0; k < from; k++)
		scale *= 10;
	for (; k < DECIMALS_MAX; k++, scale *= 10) {
		double x = v * scale;

		/* Within a few ulps of an integer: v has k decimals. */
		if (fabs(x - nearbyint(x)) <= fabs(x) * 4 * DBL_EPSILON)
			return k;
	}
	return DECIMALS_MAX;
}

/* The average of c as the text prints it: its decimals (c->decimals + 1,
 * at most DECIMALS_MAX), trailing zeros dropped. */
static const char *fmt_avg(char *buf, size_t n, const struct counter *c, double avg)
{
	int d = c->decimals + 1 > DECIMALS_MAX ? DECIMALS_MAX : c->decimals + 1;
	char *dot, *end;

	snprintf(buf, n, "%.*f", d, avg);
	dot = strchr(buf, '.');
	if (dot) {
		end = buf + strlen(buf);
		while (end > dot + 1 && end[-1] == '0')
			*--end = 0;
		if (end == dot + 1)
			*dot = 0;
	}
	if (!strcmp(buf, "-0"))
		strcpy(buf, "0");
	return buf;
}

static int take_sample(struct counter *c, uint32_t pid, const struct ta_apiev *e)
{
	struct last *l = NULL;

	c->samples++;
	if (e->is_double && !isfinite(e->d)) {
		c->non_finite++;
		c->all_int = 0;
		return 0;
	}
	if (e->is_double)
		c->all_int = 0;
	if (!c->finite || e->d < c->min)
		c->min = e->d;
	if (!c->finite || e->d > c->max)
		c->max = e->d;
	if (!e->is_double) {
		if (!c->finite || e->i < c->imin)
			c->imin = e->i;
		if (!c->finite || e->i > c->imax)
			c->imax = e->i;
	}
	c->finite++;
	c->sum += e->is_double ? (long double)e->d : (long double)e->i;
	if (e->is_double && c->decimals < DECIMALS_MAX)
		c->decimals = decimals_of(e->d, c->decimals);
	for (size_t k = 0; k < c->nlasts; k++)
		if (c->lasts[k].pid == pid)
			l = &c->lasts[k];
	if (!l) {
		l = ta_vec_reserve(c->lasts, c->nlasts + 1, &c->lasts_cap, sizeof(*l), 4);
		if (!l)
			return -1;
		c->lasts = l;
		l = &c->lasts[c->nlasts++];
		l->pid = pid;
		l->ticks = 0;
	} else if (e->ticks < l->ticks) {
		return 0; /* another thread's later sample came first */
	}
	l->ticks = e->ticks;
	l->is_int = !e->is_double;
	l->i = e->i;
	l->d = e->d;
	return 0;
}

/* A counter's unit; the last given holds.  0, or -1 without memory. */
static int unit_set(struct counters *cs, const char *name, uint32_t unit)
{
	struct unit_of *u;

	for (size_t k = 0; k < cs->nunits; k++)
		if (!strcmp(cs->units[k].name, name)) {
			cs->units[k].unit = unit;
			return 0;
		}
	u = ta_vec_reserve(cs->units, cs->nunits + 1, &cs->units_cap, sizeof(*u), 8);
	if (!u)
		return -1;
	cs->units = u;
	if (!(u[cs->nunits].name = strdup(name)))
		return -1;
	u[cs->nunits++].unit = unit;
	return 0;
}

/* After the walk: each counter's unit. */
static void units_apply(struct counters *cs)
{
	for (size_t k = 0; k < cs->nunits; k++)
		for (size_t i = 0; i < cs->n; i++)
			if (!strcmp(cs->c[i].name, cs->units[k].name))
				cs->c[i].unit = cs->units[k].unit + 1;
}

static void on_ext(void *ctx, struct ta_sess_thread *t, uint64_t ticks, uint64_t kind,
		   const uint64_t *values, uint32_t n)
{
	struct counters *cs = ctx;
	struct ta_process *p;
	struct ta_apiev e;
	struct counter *c;
	char chbuf[32];

	if (kind != TA_EXT_COUNTER && kind != TA_EXT_COUNTER_CONFIG &&
	    (kind != TA_EXT_FRAME || !cs->svg))
		return;
	p = ta_session_process(cs->v.s, t->pid);
	if (ta_apiev_decode(p, ticks, kind, values, n, &e, cs->text) <= 0)
		return;
	if (kind == TA_EXT_COUNTER_CONFIG) {
		if (unit_set(cs, e.name[0] ? e.name : "?", e.unit) < 0)
			cs->nomem = 1;
		return;
	}
	if (kind == TA_EXT_FRAME) {
		if (add_point(&cs->frames, &cs->nframes, &cs->frames_cap, t->pid, ticks, 0) < 0)
			cs->nomem = 1;
		return;
	}
	c = counter_of(cs, e.name[0] ? e.name : "?",
		       p ? ta_process_channel_name(p, e.channel, chbuf) : "user");
	if (!c || take_sample(c, t->pid, &e) < 0) {
		cs->nomem = 1;
		return;
	}
	if (cs->svg && (!e.is_double || isfinite(e.d)) &&
	    add_point(&c->pts, &c->npts, &c->cap, t->pid, ticks, e.d) < 0)
		cs->nomem = 1;
}

/* ---- numbers -------------------------------------------------------------------------- */

/* The shortest of %.15g, %.16g and %.17g that reads back as v: 49.5, not
 * 49.500000000000000; 0.4166666666666667, not 0.41666666666666669. */
static const char *fmt_double(char *buf, size_t n, double v)
{
	snprintf(buf, n, "%.15g", v);
	if (strtod(buf, NULL) != v)
		snprintf(buf, n, "%.16g", v);
	if (strtod(buf, NULL) != v)
		snprintf(buf, n, "%.17g", v);
	return buf;
}

static int64_t point_ns(const struct ta_session *s, uint32_t pid, uint64_t ticks)
{
	const struct ta_process *p = ta_session_process(s, pid);

	return p ? ta_process_ticks_ns(p, ticks) : (int64_t)ticks;
}

/* The latest of a counter's per-process last samples, by the clocks. */
static const struct last *last_of(const struct counters *cs, const struct counter *c)
{
	const struct last *best = NULL;
	int64_t best_ns = 0;

	for (size_t k = 0; k < c->nlasts; k++) {
		int64_t ns = point_ns(cs->v.s, c->lasts[k].pid, c->lasts[k].ticks);

		if (!best || ns >= best_ns) {
			best = &c->lasts[k];
			best_ns = ns;
		}
	}
	return best;
}

/* min, max, avg, last of c into four buffers; "" when no finite sample.
 * text: the average to the values' precision (fmt_avg), else exact. */
static void numbers(const struct counters *cs, const struct counter *c, char out[4][40], int text)
{
	const struct last *l = last_of(cs, c);

	if (!c->finite) {
		for (int k = 0; k < 4; k++)
			out[k][0] = 0;
		return;
	}
	if (c->all_int) {
		snprintf(out[0], 40, "%" PRId64, c->imin);
		snprintf(out[1], 40, "%" PRId64, c->imax);
	} else {
		fmt_double(out[0], 40, c->min);
		fmt_double(out[1], 40, c->max);
	}
	if (text)
		fmt_avg(out[2], 40, c, (double)(c->sum / (long double)c->finite));
	else
		fmt_double(out[2], 40, (double)(c->sum / (long double)c->finite));
	if (l && l->is_int && c->all_int)
		snprintf(out[3], 40, "%" PRId64, l->i);
	else if (l)
		fmt_double(out[3], 40, l->d);
	else
		out[3][0] = 0;
}

/* A number of the text as its counter's unit says: bytes in B, KiB,
 * MiB, GiB or TiB with one decimal place past B, a percentage with %. */
static void unit_text(char *buf, size_t n, uint32_t unit)
{
	static const char *const sfx[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	double v, a;
	size_t k = 0;

	if (!buf[0] || unit == 0 || unit == TA_UNIT_NUMBER_ + 1)
		return;
	if (unit == TA_UNIT_PERCENT_ + 1) {
		size_t len = strlen(buf);

		if (len + 1 < n)
			memcpy(buf + len, "%", 2);
		return;
	}
	v = strtod(buf, NULL);
	for (a = fabs(v); a >= 1024 && k + 1 < sizeof(sfx) / sizeof(sfx[0]); k++) {
		a /= 1024;
		v /= 1024;
	}
	if (k == 0) {
		size_t len = strlen(buf);

		if (len + 1 < n)
			memcpy(buf + len, "B", 2);
		return;
	}
	snprintf(buf, n, "%.1f%s", v, sfx[k]);
}

static void print_text(const struct counters *cs)
{
	size_t w = 7;

	for (size_t i = 0; i < cs->n; i++)
		if (strlen(cs->c[i].name) > w)
			w = strlen(cs->c[i].name);
	printf("%-*s %10s %14s %14s %14s %14s\n", (int)w, "counter", "samples", "min", "max", "avg",
	       "last");
	for (size_t i = 0; i < cs->n; i++) {
		const struct counter *c = &cs->c[i];
		char num[4][40];

		numbers(cs, c, num, 1);
		for (int k = 0; k < 4; k++)
			unit_text(num[k], sizeof(num[k]), c->unit);
		printf("%-*s %10" PRIu64 " %14s %14s %14s %14s", (int)w, c->name, c->samples,
		       num[0][0] ? num[0] : "-", num[1][0] ? num[1] : "-", num[2][0] ? num[2] : "-",
		       num[3][0] ? num[3] : "-");
		if (c->non_finite)
			printf("  (%" PRIu64 " not finite)", c->non_finite);
		putchar('\n');
	}
}

static void json_num(const char *s)
{
	/* JSON has no NaN: a counter without a finite sample has null. */
	fputs(s[0] ? s : "null", stdout);
}

static void print_json(const struct counters *cs)
{
	printf("{\"counters\": [");
	for (size_t i = 0; i < cs->n; i++) {
		const struct counter *c = &cs->c[i];
		char num[4][40];

		numbers(cs, c, num, 0);
		printf("%s\n  {\"name\": ", i ? "," : "");
		ta_json_str(stdout, c->name);
		printf(", \"channel\": ");
		ta_json_str(stdout, c->channel);
		printf(", \"samples\": %" PRIu64 ", \"non_finite\": %" PRIu64 ", \"integer\": %s",
		       c->samples, c->non_finite, c->all_int ? "true" : "false");
		printf(", \"min\": ");
		json_num(num[0]);
		printf(", \"max\": ");
		json_num(num[1]);
		printf(", \"avg\": ");
		json_num(num[2]);
		printf(", \"last\": ");
		json_num(num[3]);
		/* Only a counter TA_COUNTER_CONFIG named: the values stay numbers. */
		if (c->unit)
			printf(", \"unit\": \"%s\"", c->unit == TA_UNIT_BYTES_ + 1     ? "bytes"
						     : c->unit == TA_UNIT_PERCENT_ + 1 ? "percent"
										       : "number");
		putchar('}');
	}
	printf("%s]}\n", cs->n ? "\n" : "");
}

/* ---- the SVG ---------------------------------------------------------------------------- */

#define SVG_W	   800.0
#define PLOT_H	   90.0
#define PLOT_GAP   40.0
#define PLOT_LEFT  110.0
#define PLOT_RIGHT 20.0
#define SVG_TOP	   30.0

static void xml_str(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '<')
			fputs("&lt;", f);
		else if (ch == '>')
			fputs("&gt;", f);
		else if (ch == '&')
			fputs("&amp;", f);
		else if (ch == '"')
			fputs("&quot;", f);
		else if (ch < 0x20)
			fputc('?', f); /* XML 1.0 cannot hold most control characters */
		else
			fputc(ch, f);
	}
}

static int by_time(const void *a, const void *b)
{
	const struct point *x = a, *y = b;

	return x->ns < y->ns ? -1 : x->ns > y->ns;
}

static void points_ns(const struct counters *cs, struct point *pts, size_t n)
{
	for (size_t k = 0; k < n; k++)
		pts[k].ns = point_ns(cs->v.s, pts[k].pid, pts[k].ticks);
	qsort(pts, n, sizeof(*pts), by_time);
}

static int write_svg(struct counters *cs, FILE *f)
{
	int64_t t0 = 0, t1 = 0;
	int any = 0;
	double pw = SVG_W - PLOT_LEFT - PLOT_RIGHT, height;
	char b[2][40];

	points_ns(cs, cs->frames, cs->nframes);
	for (size_t i = 0; i < cs->n; i++) {
		struct counter *c = &cs->c[i];

		points_ns(cs, c->pts, c->npts);
		if (c->npts) {
			if (!any || c->pts[0].ns < t0)
				t0 = c->pts[0].ns;
			if (!any || c->pts[c->npts - 1].ns > t1)
				t1 = c->pts[c->npts - 1].ns;
			any = 1;
		}
	}
	for (size_t k = 0; k < cs->nframes; k++) {
		if (!any || cs->frames[k].ns < t0)
			t0 = cs->frames[k].ns;
		if (!any || cs->frames[k].ns > t1)
			t1 = cs->frames[k].ns;
		any = 1;
	}
	height = SVG_TOP + (double)cs->n * (PLOT_H + PLOT_GAP) + 10;
	fprintf(f,
		"<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%.0f\" "
		"height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" "
		"font-size=\"11\">\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
		"<text x=\"10\" y=\"18\" font-size=\"14\">counters of ",
		SVG_W, height, SVG_W, height);
	xml_str(f, cs->path);
	fprintf(f, " (%s, frame marks as ticks)</text>\n",
		ta_fmt_time(b[0], sizeof(b[0]), (uint64_t)(t1 - t0)));
	for (size_t i = 0; i < cs->n; i++) {
		const struct counter *c = &cs->c[i];
		double y0 = SVG_TOP + (double)i * (PLOT_H + PLOT_GAP) + 14, span;
		char num[4][40];

		numbers(cs, c, num, 1);
		for (int k = 0; k < 4; k++)
			unit_text(num[k], sizeof(num[k]), c->unit);
		fprintf(f, "<g class=\"counter\" data-name=\"");
		xml_str(f, c->name);
		fprintf(f, "\">\n<text x=\"%.1f\" y=\"%.1f\" font-weight=\"bold\">", PLOT_LEFT,
			y0 - 4);
		xml_str(f, c->name);
		fprintf(f, " (%" PRIu64 " samples", c->samples);
		if (c->non_finite)
			fprintf(f, ", %" PRIu64 " not finite", c->non_finite);
		fprintf(f,
			")</text>\n<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
			"fill=\"#f4f6fa\" stroke=\"#99a\"/>\n",
			PLOT_LEFT, y0, pw, PLOT_H);
		fprintf(f,
			"<text class=\"max\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n"
			"<text class=\"min\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
			PLOT_LEFT - 4, y0 + 10, num[1][0] ? num[1] : "-", PLOT_LEFT - 4,
			y0 + PLOT_H, num[0][0] ? num[0] : "-");
		/* The frame marks: ticks up from the time axis. */
		for (size_t k = 0; k < cs->nframes; k++) {
			double x = PLOT_LEFT + (t1 > t0 ? (double)(cs->frames[k].ns - t0) /
							      (double)(t1 - t0) * pw
							: 0);

			fprintf(f,
				"<line class=\"frame\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
				"y2=\"%.1f\" stroke=\"#c33\"/>\n",
				x, y0 + PLOT_H, x, y0 + PLOT_H - 6);
		}
		span = c->finite ? c->max - c->min : 0;
		fprintf(f, "<polyline fill=\"none\" stroke=\"#2a5db0\" stroke-width=\"1.2\" "
			   "points=\"");
		for (size_t k = 0; k < c->npts; k++) {
			const struct point *pt = &c->pts[k];
			double x =
			    PLOT_LEFT +
			    (t1 > t0 ? (double)(pt->ns - t0) / (double)(t1 - t0) * pw : pw / 2);
			double y = y0 + PLOT_H -
				   (span > 0 ? (pt->value - c->min) / span * PLOT_H : PLOT_H / 2);

			fprintf(f, "%s%.2f,%.2f", k ? " " : "", x, y);
		}
		fprintf(f, "\"/>\n</g>\n");
	}
	fprintf(f, "</svg>\n");
	return ferror(f) ? -1 : 0;
}

/* ---- the command ------------------------------------------------------------------------- */

enum { O_SVG = TA_OPT_OWN };

static const struct ta_opt counters_opts[] = {
    {"--section", TA_ARG_EITHER, TA_OPT_SECTION},
    {"--json", TA_ARG_NONE, TA_OPT_JSON},
    {"--svg", TA_ARG_EITHER, O_SVG},
    {NULL, TA_ARG_NONE, 0},
};

static int parse_args(int argc, char **argv, struct counters *cs)
{
	struct ta_opts p;
	int id;
	const struct ta_opts_into into = {.dump = &cs->path, .json = &cs->json};

	ta_opts_init(&p, "counters", counters_opts, usage, argc, argv);
	while ((id = ta_opts_next_into(&p, &into)) != TA_OPT_END) {
		switch (id) {
		case TA_OPT_EXIT:
			return p.status;
		case O_SVG:
			if (!*p.val)
				return ta_opts_bad(&p, "is not a file name");
			cs->svg = p.val;
			break;
		}
	}
	return ta_opts_need_dump(&p, cs->path) ? 2 : -1;
}

static void counters_free(struct counters *cs)
{
	for (size_t i = 0; i < cs->n; i++) {
		free(cs->c[i].name);
		free(cs->c[i].channel);
		free(cs->c[i].lasts);
		free(cs->c[i].pts);
	}
	free(cs->c);
	free(cs->frames);
	for (size_t k = 0; k < cs->nunits; k++)
		free(cs->units[k].name);
	free(cs->units);
}

int ta_cmd_counters(int argc, char **argv)
{
	struct counters *cs = calloc(1, sizeof(*cs));
	struct ta_visitor vis;
	int status;

	if (!cs) {
		fprintf(stderr, "traceagent: out of memory\n");
		return 1;
	}
	status = parse_args(argc, argv, cs);
	if (status >= 0)
		goto out;
	memset(&vis, 0, sizeof(vis));
	vis.ctx = cs;
	vis.ext = on_ext;
	/* on_ext looks at the thread's pid only: workers decode the EXT
	 * events (-j). */
	vis.chunks = &ta_session_ext_chunks;
	if (ta_view_open(&cs->v, cs->path, &vis) < 0) {
		status = cs->v.status;
		goto close;
	}
	status = cs->v.status;
	units_apply(cs);
	if (cs->nomem) {
		fprintf(stderr, "traceagent: %s: out of memory: counters are missing samples\n",
			cs->path);
		status = 1;
	}
	if (cs->json)
		print_json(cs);
	else if (!cs->n)
		printf("no counters in %s\n", cs->path);
	else
		print_text(cs);
	if (cs->svg) {
		FILE *f = fopen(cs->svg, "w");
		int bad = !f || write_svg(cs, f) < 0;

		if ((f && fclose(f) != 0) || bad) {
			fprintf(stderr, "traceagent: %s: writing the SVG: %s\n", cs->svg,
				strerror(errno));
			status = status ? status : 1;
		}
	}
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "traceagent: writing the counters: %s\n", strerror(errno));
		status = 1;
	}
	ta_view_warnings(&cs->v);
close:
	ta_view_close(&cs->v);
out:
	counters_free(cs);
	free(cs);
	return status;
}
