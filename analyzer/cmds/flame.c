/* SPDX-License-Identifier: MIT */
/*
 * flame.c - `traceagent flame`: an SVG flame graph of the call tree.
 *
 * Each call path (calltree.c) is a frame as wide as its total time, on top
 * of its caller's; the root at the bottom is the whole run.  The file is
 * plain SVG with a small script for click-to-zoom, search and a details
 * line, and needs nothing else: any browser opens it.  Colours come from a
 * hash of the name, so a function has the same colour in every graph.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmdopts.h"
#include "commands.h"
#include "timeline.h"

/* Geometry, in pixels; the script is given PAD and CHAR_W. */
#define FRAME_H 16
#define FONT_PX 11
#define CHAR_W	6.6 /* of a monospace font at FONT_PX */
#define PAD	10
#define TOP	40
#define BOTTOM	28

struct flame {
	const char *path, *out, *title;
	int threads, width;
	double min_width;
	struct ta_tlopts o; /* --tid */
	struct ta_treeview tv;
	struct ta_calltree *ct;
	FILE *f;
	double scale;  /* pixels per ns */
	uint64_t *cur; /* by depth: where the next frame starts (ns) */
	uint32_t ncur, max_depth;
	uint64_t all; /* the root's total */
	int fail;
};

static void usage(FILE *f)
{
	fprintf(f, "usage: traceagent flame -o FILE.svg [OPTIONS] DUMP\n"
		   "\n"
		   "An SVG flame graph: each call path is a frame as wide as its total time,\n"
		   "on top of its caller's.  Hover for the numbers, click to zoom, Search (or\n"
		   "Ctrl-F) to highlight functions by regular expression, Esc to reset.\n"
		   "\n"
		   "  -o FILE, --output=FILE  where to write ('-' for the standard output)\n"
		   "  --threads           one tower per thread (default: paths merged across\n"
		   "                      threads)\n"
		   "  --tid=TID[,TID...]  only these threads\n"
		   "  --title=TEXT        the title (default: the program and its run time)\n"
		   "  --width=PX          the image width (default 1200)\n"
		   "  --min-width=PX      leave out frames narrower than this (default 0.1)\n"
		   "  --section=NAME      only the time inside the program's section NAME\n"
		   "  -j N, --jobs=N      N threads read the dump (default: one per CPU\n"
		   "                      it may use, at most 64; N up to 1024)\n"
		   "  --demangle=MODE     C++ names: simple (default: without parameters\n"
		   "                      and template arguments), full, or no (mangled)\n"
		   "  --symfs=DIR         look for each module's file under DIR, at its\n"
		   "                      recorded path (DIR/recorded/path)\n"
		   "  --debug-dir=DIR     look for separate debug files in DIR too\n"
		   "                      (DIR/.build-id/, DIR/recorded/path.debug);\n"
		   "                      repeatable (see traceagent-symbols(7))\n"
		   "  -h, --help          this help\n"
		   "\n"
		   "A function calling itself more than 64 levels deep is one frame \"NAME\n"
		   "[xN]\" (the N levels' calls and self time summed, what they called on\n"
		   "top); paths deeper than 1000 levels are cut there, the rest one frame\n"
		   "\"[deeper than 1000 levels]\", said on stderr.\n"
		   "\n"
		   "Exit status: 0 for a whole dump, 1 when it is damaged or incomplete (what\n"
		   "could be read is drawn) or the file cannot be written, 2 for usage errors\n"
		   "or a dump that cannot be opened.\n");
}

/* ---- text ------------------------------------------------------------------------ */

/* Writes s escaped for XML text and attributes; bytes that are not UTF-8
 * and control characters become '?'.  At most max characters when max is
 * not 0, the last two of them "..". */
static void xml_str(FILE *f, const char *str, size_t max)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t chars = 0, len = 0;

	if (max) {
		/* Count characters (UTF-8 lead bytes) to know whether to cut. */
		for (const unsigned char *p = s; *p; p++)
			len += (*p & 0xc0) != 0x80;
		if (len > max)
			max -= 2;
		else
			max = 0;
	}
	for (; *s; s++) {
		if ((*s & 0xc0) != 0x80 && max && chars++ == max)
			break;
		switch (*s) {
		case '&':
			fputs("&amp;", f);
			break;
		case '<':
			fputs("&lt;", f);
			break;
		case '>':
			fputs("&gt;", f);
			break;
		case '"':
			fputs("&quot;", f);
			break;
		default:
			fputc(*s < 0x20 || *s == 0x7f ? '?' : *s, f);
		}
	}
	if (max)
		fputs("..", f);
}

/* ---- colour ------------------------------------------------------------------------ */

static uint32_t name_hash(const char *s)
{
	uint32_t h = 2166136261u;

	while (*s)
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

/* Warm colours from red to yellow, fixed by the name. */
static void frame_colour(const char *name, unsigned rgb[3])
{
	uint32_t h = name_hash(name);
	double hue = (double)(h % 56) / 60.0; /* 0 to 56 degrees, in sixths */
	double s = 0.70 + (double)((h >> 8) % 21) / 100.0;
	double l = 0.56 + (double)((h >> 16) % 13) / 100.0;
	double c = (1 - (2 * l - 1 < 0 ? 1 - 2 * l : 2 * l - 1)) * s;
	double x = c * hue; /* hue < 1: red to yellow, the second sixth never */
	double m = l - c / 2;

	rgb[0] = (unsigned)((c + m) * 255 + 0.5);
	rgb[1] = (unsigned)((x + m) * 255 + 0.5);
	rgb[2] = (unsigned)(m * 255 + 0.5);
}

/* ---- layout ------------------------------------------------------------------------ */

static int cur_room(struct flame *fl, uint32_t depth)
{
	if (depth + 1 >= fl->ncur) {
		size_t n = fl->ncur;
		uint64_t *v = ta_vec_reserve(fl->cur, (size_t)depth + 2, &n, sizeof(*v), 64);

		if (!v) {
			fl->fail = 1;
			return -1;
		}
		fl->cur = v;
		fl->ncur = (uint32_t)n;
	}
	return 0;
}

/* Places node n: its start, and whether it is wide enough to draw. */
static int place(struct flame *fl, uint32_t n, uint32_t depth, uint64_t *x)
{
	const struct ta_ctnode *node = &fl->ct->tree.n[n];

	if (cur_room(fl, depth) < 0)
		return 0;
	if (!depth)
		fl->cur[0] = 0;
	*x = fl->cur[depth];
	fl->cur[depth] += node->total;
	fl->cur[depth + 1] = *x;
	return (double)node->total * fl->scale >= fl->min_width;
}

static int measure_open(void *ctx, uint32_t n, uint32_t depth)
{
	struct flame *fl = ctx;
	uint64_t x;

	if (!place(fl, n, depth, &x))
		return 0;
	if (depth > fl->max_depth)
		fl->max_depth = depth;
	return 1;
}

static int draw_open(void *ctx, uint32_t n, uint32_t depth)
{
	struct flame *fl = ctx;
	const struct ta_ctnode *node = &fl->ct->tree.n[n];
	const struct ta_sess_thread *th = n ? ta_calltree_thread(fl->ct, node->key) : NULL;
	const struct ta_fn *fn = n && !th ? &fl->ct->fns.fn[node->key].id : NULL;
	char buf[128], t[3][32];
	const char *name;
	double px, pw, py;
	unsigned rgb[3];
	uint64_t x;
	size_t fit;

	if (!place(fl, n, depth, &x))
		return 0;
	name = n ? ta_calltree_label(fl->ct, node->key, buf, sizeof(buf)) : "all";
	px = PAD + (double)x * fl->scale;
	pw = (double)node->total * fl->scale;
	py = TOP + (double)(fl->max_depth - depth) * FRAME_H;
	if (fn && !strcmp(fn->module, TA_LIBCALL_MODULE)) {
		/* Library calls (malloc, read...) in blues, apart from the
		 * program's warm colours. */
		uint32_t h = name_hash(name);

		rgb[0] = 70 + h % 40;
		rgb[1] = 150 + (h >> 8) % 40;
		rgb[2] = 210 + (h >> 16) % 40;
	} else if (fn && !strcmp(fn->module, TA_AGENT_MODULE)) {
		/* The agent's waits: grey, not the program's. */
		rgb[0] = rgb[1] = rgb[2] = 160;
	} else if (fn) {
		frame_colour(name, rgb);
	} else {
		rgb[0] = rgb[1] = th ? 190 : 200;
		rgb[2] = th ? 215 : 200;
	}
	fputs("<g class=\"f\"><title>", fl->f);
	xml_str(fl->f, name, 0);
	if (fn && fn->module[0]) {
		fputc('\n', fl->f);
		xml_str(fl->f, fn->module, 0);
	}
	fprintf(fl->f, "\ntotal %s (%.2f%%)", ta_fmt_time(t[0], sizeof(t[0]), node->total),
		fl->all ? 100.0 * (double)node->total / (double)fl->all : 100.0);
	if (fn)
		fprintf(fl->f, ", self %s, %" PRIu64 " call%s",
			ta_fmt_time(t[1], sizeof(t[1]), node->self), node->calls,
			node->calls == 1 ? "" : "s");
	if (fn && fn->srcline) {
		fputc('\n', fl->f);
		xml_str(fl->f, fn->srcline, 0);
	}
	fprintf(fl->f,
		"</title><rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" "
		"fill=\"rgb(%u,%u,%u)\" rx=\"2\"/><text x=\"%.2f\" y=\"%.1f\">",
		px, py, pw, FRAME_H - 1, rgb[0], rgb[1], rgb[2], px + 3, py + FRAME_H - 4.5);
	fit = pw > 6 ? (size_t)((pw - 6) / CHAR_W) : 0;
	if (fit >= 3)
		xml_str(fl->f, name, fit);
	fputs("</text></g>\n", fl->f);
	return 1;
}

/* ---- the file ---------------------------------------------------------------------- */

/*
 * Click-to-zoom, search and details: plain ECMAScript on the SVG DOM.  PAD
 * and CHAR_W are defined in front of it (svg_head).
 */
/* clang-format off */
static const char script[] =
	"var frames = [], W, details, matched, reset, searchBtn, query = null;\n"
	"function init(evt) {\n"
	"  var svg = document.documentElement;\n"
	"  W = +svg.getAttribute('width');\n"
	"  details = document.getElementById('details');\n"
	"  matched = document.getElementById('matched');\n"
	"  reset = document.getElementById('reset');\n"
	"  searchBtn = document.getElementById('search');\n"
	"  var gs = document.getElementsByClassName('f');\n"
	"  for (var i = 0; i < gs.length; i++) {\n"
	"    var g = gs[i], r = g.getElementsByTagName('rect')[0];\n"
	"    var lines = g.getElementsByTagName('title')[0].textContent.split('\\n');\n"
	"    var f = {g: g, r: r, t: g.getElementsByTagName('text')[0],\n"
	"      x: +r.getAttribute('x'), w: +r.getAttribute('width'), y: +r.getAttribute('y'),\n"
	"      fill: r.getAttribute('fill'), name: lines[0], info: lines.join('  |  ')};\n"
	"    g.frame = f;\n"
	"    frames.push(f);\n"
	"    g.addEventListener('click', function () { zoom(this.frame); });\n"
	"    g.addEventListener('mouseover', function () { details.textContent = this.frame.info; });\n"
	"    g.addEventListener('mouseout', function () { details.textContent = ' '; });\n"
	"  }\n"
	"  reset.addEventListener('click', unzoom);\n"
	"  searchBtn.addEventListener('click', function () { query === null ? search() : unsearch(); });\n"
	"  window.addEventListener('keydown', function (e) {\n"
	"    if ((e.ctrlKey || e.metaKey) && e.key === 'f') { e.preventDefault(); search(); }\n"
	"    else if (e.key === 'Escape') { unzoom(); unsearch(); }\n"
	"  });\n"
	"}\n"
	"function label(f, x, w) {\n"
	"  f.r.setAttribute('x', x.toFixed(2));\n"
	"  f.r.setAttribute('width', w.toFixed(2));\n"
	"  f.t.setAttribute('x', (x + 3).toFixed(2));\n"
	"  var n = Math.floor((w - 6) / CHAR_W), s = f.name;\n"
	"  f.t.textContent = n < 3 ? '' : s.length <= n ? s : s.slice(0, n - 2) + '..';\n"
	"}\n"
	"function zoom(z) {\n"
	"  var scale = (W - 2 * PAD) / z.w, eps = z.w * 1e-9;\n"
	"  for (var i = 0; i < frames.length; i++) {\n"
	"    var f = frames[i], inside = f.x >= z.x - eps && f.x + f.w <= z.x + z.w + eps;\n"
	"    var below = f.x <= z.x + eps && f.x + f.w >= z.x + z.w - eps;\n"
	"    if (f.y <= z.y && inside) {\n"
	"      f.g.style.display = ''; f.g.style.opacity = '';\n"
	"      label(f, PAD + (f.x - z.x) * scale, f.w * scale);\n"
	"    } else if (f.y > z.y && below) {\n"
	"      f.g.style.display = ''; f.g.style.opacity = '0.6';\n"
	"      label(f, PAD, W - 2 * PAD);\n"
	"    } else {\n"
	"      f.g.style.display = 'none';\n"
	"    }\n"
	"  }\n"
	"  reset.style.display = '';\n"
	"}\n"
	"function unzoom() {\n"
	"  for (var i = 0; i < frames.length; i++) {\n"
	"    var f = frames[i];\n"
	"    f.g.style.display = ''; f.g.style.opacity = '';\n"
	"    label(f, f.x, f.w);\n"
	"  }\n"
	"  reset.style.display = 'none';\n"
	"}\n"
	"function search() {\n"
	"  var q = window.prompt('Highlight functions matching (regular expression):', query || '');\n"
	"  if (!q) return;\n"
	"  var re;\n"
	"  try { re = new RegExp(q); } catch (e) { re = new RegExp(q.replace(/[.*+?^${}()|[\\]\\\\]/g, '\\\\$&')); }\n"
	"  unsearch();\n"
	"  query = q;\n"
	"  var spans = [];\n"
	"  for (var i = 0; i < frames.length; i++) {\n"
	"    var f = frames[i];\n"
	"    if (f.name === 'all' || !re.test(f.name)) continue;\n"
	"    f.r.setAttribute('fill', 'rgb(225,0,225)');\n"
	"    spans.push([f.x, f.x + f.w]);\n"
	"  }\n"
	"  spans.sort(function (a, b) { return a[0] - b[0]; });\n"
	"  var sum = 0, end = -1;\n"
	"  for (var k = 0; k < spans.length; k++) {\n"
	"    var a = Math.max(spans[k][0], end);\n"
	"    if (spans[k][1] > a) sum += spans[k][1] - a;\n"
	"    end = Math.max(end, spans[k][1]);\n"
	"  }\n"
	"  matched.textContent = 'Matched: ' + (100 * sum / (W - 2 * PAD)).toFixed(1) + '%';\n"
	"  searchBtn.textContent = 'Clear';\n"
	"}\n"
	"function unsearch() {\n"
	"  if (query === null) return;\n"
	"  for (var i = 0; i < frames.length; i++) frames[i].r.setAttribute('fill', frames[i].fill);\n"
	"  query = null;\n"
	"  matched.textContent = ' ';\n"
	"  searchBtn.textContent = 'Search';\n"
	"}\n";
/* clang-format on */

static void svg_head(struct flame *fl, int height)
{
	const struct ta_session *s = fl->tv.v.s;
	const struct ta_process *p = s->nprocs ? s->procs[0] : NULL;
	char t[32];

	fprintf(fl->f,
		"<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<svg xmlns=\"http://www.w3.org/2000/svg\" version=\"1.1\" width=\"%d\" "
		"height=\"%d\" viewBox=\"0 0 %d %d\" onload=\"init(evt)\">\n"
		"<style>\n"
		"text { font-family: 'DejaVu Sans Mono', Menlo, Consolas, monospace; font-size: "
		"%dpx; fill: #000; }\n"
		"g.f text { pointer-events: none; }\n"
		"g.f:hover rect { stroke: #333; stroke-width: 0.5; cursor: pointer; }\n"
		"#title { font-size: 15px; }\n"
		".button { fill: #246; cursor: pointer; }\n"
		"</style>\n"
		"<script type=\"text/ecmascript\"><![CDATA[\n"
		"var PAD = %d, CHAR_W = %.1f;\n%s]]></script>\n"
		"<rect x=\"0\" y=\"0\" width=\"100%%\" height=\"100%%\" fill=\"#fbfaf6\"/>\n"
		"<text id=\"title\" x=\"%d\" y=\"24\" text-anchor=\"middle\">",
		fl->width, height, fl->width, height, FONT_PX, PAD, CHAR_W, script, fl->width / 2);
	if (fl->title) {
		xml_str(fl->f, fl->title, 0);
	} else {
		xml_str(fl->f, p && p->exe ? ta_path_base(p->exe) : fl->path, 0);
		fprintf(fl->f, ": %s in %" PRIu32 " thread%s%s", ta_fmt_time(t, sizeof(t), fl->all),
			fl->ct->threads, fl->ct->threads == 1 ? "" : "s",
			fl->threads || fl->ct->threads < 2 ? "" : " (merged)");
	}
	fprintf(fl->f,
		"</text>\n"
		"<text id=\"reset\" class=\"button\" x=\"%d\" y=\"24\" style=\"display:none\">"
		"Reset zoom</text>\n"
		"<text id=\"search\" class=\"button\" x=\"%d\" y=\"24\" text-anchor=\"end\">"
		"Search</text>\n"
		"<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n"
		"<text id=\"matched\" x=\"%d\" y=\"%d\" text-anchor=\"end\"> </text>\n",
		PAD, fl->width - PAD, PAD, height - 10, fl->width - PAD, height - 10);
}

static int draw(struct flame *fl)
{
	int height;

	fl->all = fl->ct->tree.n[0].total;
	fl->scale = fl->all ? (double)(fl->width - 2 * PAD) / (double)fl->all : 0;
	ta_ctree_walk(&fl->ct->tree, 0, measure_open, NULL, fl);
	height = TOP + (int)(fl->max_depth + 1) * FRAME_H + BOTTOM;
	svg_head(fl, height);
	if (fl->all)
		ta_ctree_walk(&fl->ct->tree, 0, draw_open, NULL, fl);
	fputs("</svg>\n", fl->f);
	return fl->fail ? -1 : 0;
}

/* ---- the command ---------------------------------------------------------------------- */

enum { O_TITLE = TA_OPT_OWN, O_WIDTH, O_MIN_WIDTH };

static const struct ta_opt flame_opts[] = {
    {"--section", TA_ARG_EITHER, TA_OPT_SECTION},
    {"-o", TA_ARG_NEXT, TA_OPT_OUTPUT},
    {"--output", TA_ARG_EQ, TA_OPT_OUTPUT},
    {"--threads", TA_ARG_NONE, TA_OPT_THREADS},
    {"--tid", TA_ARG_EQ, TA_OPT_TID}, /* ta_tlopts_take */
    {"--title", TA_ARG_EQ, O_TITLE},
    {"--width", TA_ARG_EQ, O_WIDTH},
    {"--min-width", TA_ARG_EQ, O_MIN_WIDTH},
    {"--demangle", TA_ARG_EITHER, TA_OPT_DEMANGLE},
    {"--symfs", TA_ARG_EITHER, TA_OPT_SYMFS},
    {"--debug-dir", TA_ARG_EITHER, TA_OPT_DEBUG_DIR},
    {NULL, TA_ARG_NONE, 0},
};

static int parse_args(int argc, char **argv, struct flame *fl)
{
	struct ta_opts p;
	int demangle = -1;
	int id;
	const struct ta_opts_into into = {
	    .demangle = &demangle, .dump = &fl->path, .threads = &fl->threads, .output = &fl->out};

	ta_opts_init(&p, "flame", flame_opts, usage, argc, argv);
	while ((id = ta_opts_next_into(&p, &into)) != TA_OPT_END) {
		char *end;

		switch (id) {
		case TA_OPT_EXIT:
			return p.status;
		case O_TITLE:
			fl->title = p.val;
			break;
		case O_WIDTH: {
			long w = strtol(p.val, &end, 10);

			if (*end || end == p.val || w < 200 || w > 100000)
				return ta_opts_bad(&p,
						   "is not a number of pixels from 200 to 100000");
			fl->width = (int)w;
			break;
		}
		case O_MIN_WIDTH: {
			double w = strtod(p.val, &end);

			if (*end || end == p.val || !(w >= 0 && w <= 1000))
				return ta_opts_bad(&p, "is not a number of pixels");
			fl->min_width = w;
			break;
		}
		case TA_OPT_TID:
			if (ta_tlopts_take(&fl->o, &p))
				return 2;
			break;
		}
	}
	ta_view_set_demangle(demangle, 0);
	if (!fl->out) {
		fprintf(stderr, "traceagent flame: no output file given (-o FILE.svg, or -o - for "
				"the standard output)\n");
		return 2;
	}
	return ta_opts_need_dump(&p, fl->path) ? 2 : -1;
}

int ta_cmd_flame(int argc, char **argv)
{
	struct flame fl;
	int status;

	memset(&fl, 0, sizeof(fl));
	fl.width = 1200;
	fl.min_width = 0.1;
	status = parse_args(argc, argv, &fl);
	if (status >= 0)
		goto out;
	if (ta_treeview_open(&fl.tv, fl.path, &fl.o.tids, fl.threads) < 0) {
		status = fl.tv.v.status;
		goto out;
	}
	status = fl.tv.v.status;
	fl.ct = &fl.tv.ct;
	fl.f = strcmp(fl.out, "-") ? fopen(fl.out, "w") : stdout;
	if (!fl.f) {
		fprintf(stderr, "traceagent: %s: %s\n", fl.out, strerror(errno));
		status = 2;
		goto out;
	}
	if (draw(&fl) < 0) {
		fprintf(stderr, "traceagent: %s: out of memory\n", fl.path);
		status = 1;
	}
	if (fflush(fl.f) != 0 || ferror(fl.f) || (fl.f != stdout && fclose(fl.f) != 0)) {
		fprintf(stderr, "traceagent: %s: %s\n", fl.out, strerror(errno));
		status = status ? status : 1;
	}
out:
	ta_treeview_close(&fl.tv);
	ta_tlopts_free(&fl.o);
	free(fl.cur);
	return status;
}
