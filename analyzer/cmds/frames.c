/* SPDX-License-Identifier: MIT */
/*
 * frames.c - `traceagent frames`: frame times per frame set (the frame
 * marks of the manual API), their spread, and the hitches with the
 * functions and zones that made them slow.
 *
 * framestat.c reads the dump twice and gives each set's frames and, per
 * function, its self time in every frame.  A hitch is a frame over the
 * budget (--budget), or by default over FACTOR times the median frame;
 * its culprits are what spent more self time in it, on the frame's thread
 * (the one that marked its end), than in its median frame.  Only that
 * thread: threads run side by side, so their self times summed could
 * exceed the frame, and another thread's work made the frame late only
 * through what the frame's thread did meanwhile (waited, say).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmdopts.h"
#include "commands.h"
#include "common.h"
#include "framestat.h"

#define CULPRITS_MAX 5
#define HIST_ROWS    10
#define HIST_WIDTH   40

struct options {
	const char *path;
	int json;
	const char *set;
	int have_budget;
	uint64_t budget_ns;
	double factor;
};

struct culprit {
	const struct ta_fs_row *f;
	uint64_t excess_ns;
};

/* One set's numbers, in ns. */
struct summary {
	uint64_t min, avg, p50, p90, p99, max, sum;
	double fps;
	uint64_t threshold; /* frames above it are hitches */
};

static void usage(FILE *f)
{
	fprintf(
	    f,
	    "usage: traceagent frames [--json] [--set=NAME] [--budget=TIME] [--hitch=FACTOR] DUMP\n"
	    "\n"
	    "Frame times and hitches of the frame sets (TA_FRAME_MARK) in a dump.\n"
	    "\n"
	    "  --json           one JSON object instead of text\n"
	    "  --set=NAME       only the frame set NAME (\"frame\" for TA_FRAME_MARK())\n"
	    "  --budget=TIME    a hitch is a frame longer than TIME (16ms, 500us, ...)\n"
	    "  --hitch=FACTOR   a hitch is a frame longer than FACTOR times the median\n"
	    "                   frame (default 2; --budget replaces it)\n"
	    "  --section=NAME   only the time inside the program's section NAME\n"
	    "  -j N, --jobs=N   N threads read the dump (default: one per CPU\n"
	    "                   it may use, at most 64; N up to 1024)\n"
	    "  --demangle=MODE  culprits' C++ names: simple (default: without\n"
	    "                   parameters and template arguments; full for\n"
	    "                   --json), full, or no (mangled)\n"
	    "  --symfs=DIR      look for each module's file under DIR, at its\n"
	    "                   recorded path (DIR/recorded/path)\n"
	    "  --debug-dir=DIR  look for separate debug files in DIR too\n"
	    "                   (DIR/.build-id/, DIR/recorded/path.debug);\n"
	    "                   repeatable (see traceagent-symbols(7))\n"
	    "  -h, --help       this help\n"
	    "\n"
	    "A frame runs from one mark of its set to the next, the first from the\n"
	    "first event of the thread that marked it.  A frame's thread is the thread\n"
	    "that made the mark ending it.  A hitch's culprits are the functions and\n"
	    "zones whose self time in it on the frame's thread (clipped to the frame)\n"
	    "exceeds their median self time per frame on the frames' threads, largest\n"
	    "excess first; other threads' work is not summed in, so no excess exceeds\n"
	    "the frame.  Each hitch names its thread.  Exit status: 0 for a whole\n"
	    "dump, 1 when it is damaged or incomplete, 2 for usage errors or a file\n"
	    "that cannot be opened.\n");
}

/* ---- numbers ---------------------------------------------------------------------- */

static int summarize(const struct ta_fset *set, const struct options *o, struct summary *m)
{
	uint64_t *d = malloc((set->nframes ? set->nframes : 1) * sizeof(*d));

	if (!d)
		return -1;
	if (!set->nframes) {
		/* A keep dump may hold a set's marks and none of its frames. */
		memset(m, 0, sizeof(*m));
		m->threshold = o->budget_ns;
		free(d);
		return 0;
	}
	memcpy(d, set->dur_ns, set->nframes * sizeof(*d));
	qsort(d, set->nframes, sizeof(*d), ta_fs_u64_cmp);
	memset(m, 0, sizeof(*m));
	for (size_t i = 0; i < set->nframes; i++)
		m->sum += d[i];
	m->min = d[0];
	m->max = d[set->nframes - 1];
	m->avg = m->sum / set->nframes;
	m->p50 = ta_fs_rank(d, set->nframes, 0, 50);
	m->p90 = ta_fs_rank(d, set->nframes, 0, 90);
	m->p99 = ta_fs_rank(d, set->nframes, 0, 99);
	m->fps = m->sum ? (double)set->nframes * 1e9 / (double)m->sum : 0;
	m->threshold = o->have_budget ? o->budget_ns : (uint64_t)((double)m->p50 * o->factor);
	free(d);
	return 0;
}

/* The function's self time in frame i on the frame's thread. */
static uint64_t own_in(const struct ta_fs_row *f, uint32_t i)
{
	size_t lo = 0, hi = f->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (f->v[mid].frame < i)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < f->n && f->v[lo].frame == i ? f->v[lo].own_ns : 0;
}

static int culprit_cmp(const void *a, const void *b)
{
	const struct culprit *x = a, *y = b;
	int c;

	if (x->excess_ns != y->excess_ns)
		return x->excess_ns > y->excess_ns ? -1 : 1;
	c = strcmp(x->f->id.name, y->f->id.name);
	return c ? c : strcmp(x->f->id.module, y->f->id.module);
}

/* The culprits of frame i, largest excess first: how many (at most
 * CULPRITS_MAX) into out. */
static size_t culprits(const struct ta_fset *set, uint32_t i, struct culprit *all,
		       struct culprit *out)
{
	size_t n = 0;

	for (size_t k = 0; k < set->nfns; k++) {
		const struct ta_fs_row *f = &set->fns[k];
		uint64_t self = own_in(f, i);

		if (self > f->own_p50_ns)
			all[n++] = (struct culprit){f, self - f->own_p50_ns};
	}
	if (n)
		qsort(all, n, sizeof(*all), culprit_cmp);
	if (n > CULPRITS_MAX)
		n = CULPRITS_MAX;
	memcpy(out, all, n * sizeof(*out));
	return n;
}

/* The name of thread tid of process pid (NULL: none). */
static const char *thread_name(const struct ta_view *v, uint32_t pid, uint64_t tid)
{
	for (size_t i = 0; v->s && i < v->s->nthreads; i++) {
		const struct ta_sess_thread *t = v->s->threads[i];

		if (t->pid == pid && t->tid == tid && t->name && t->name[0])
			return t->name;
	}
	return NULL;
}

/* ---- text ------------------------------------------------------------------------- */

static void text_hist(const struct ta_fset *set, const struct summary *m)
{
	uint64_t count[HIST_ROWS] = {0}, top = 0;
	uint64_t width = (m->max - m->min) / HIST_ROWS + 1;
	char a[32], b[32];

	for (size_t i = 0; i < set->nframes; i++)
		count[(set->dur_ns[i] - m->min) / width]++;
	for (int r = 0; r < HIST_ROWS; r++)
		if (count[r] > top)
			top = count[r];
	for (int r = 0; r < HIST_ROWS; r++) {
		uint64_t lo = m->min + (uint64_t)r * width;
		int bar = (int)((count[r] * HIST_WIDTH + top - 1) / top);

		if (lo > m->max)
			break;
		printf("  %12s - %-12s %6" PRIu64 "%s%.*s\n", ta_fmt_time(a, sizeof(a), lo),
		       ta_fmt_time(b, sizeof(b), lo + width), count[r], bar ? " " : "", bar,
		       "########################################");
	}
}

static void text_set(const struct ta_fset *set, const struct summary *m, const struct options *o,
		     const struct ta_view *v, struct culprit *all)
{
	char b[8][32];
	size_t nhitch = 0;

	for (size_t i = 0; i < set->nframes; i++)
		nhitch += set->dur_ns[i] > m->threshold;
	printf("frame set \"%s\" of process %" PRIu32 ": %zu frames%s, %.1f fps\n", set->name,
	       set->pid, set->nframes, set->ends ? " with gaps" : "", m->fps);
	if (set->ends && set->unmatched)
		printf("  left out: %" PRIu64 " ENDs without a BEGIN or frames never ended\n",
		       set->unmatched);
	printf("  min %s  avg %s  p50 %s  p90 %s  p99 %s  max %s\n",
	       ta_fmt_time(b[0], sizeof(b[0]), m->min), ta_fmt_time(b[1], sizeof(b[1]), m->avg),
	       ta_fmt_time(b[2], sizeof(b[2]), m->p50), ta_fmt_time(b[3], sizeof(b[3]), m->p90),
	       ta_fmt_time(b[4], sizeof(b[4]), m->p99), ta_fmt_time(b[5], sizeof(b[5]), m->max));
	text_hist(set, m);
	if (o->have_budget)
		printf("  hitches (over the budget of %s): %zu\n",
		       ta_fmt_time(b[0], sizeof(b[0]), m->threshold), nhitch);
	else
		printf("  hitches (over %g x the median, %s): %zu\n", o->factor,
		       ta_fmt_time(b[0], sizeof(b[0]), m->threshold), nhitch);
	for (uint32_t i = 0; i < set->nframes; i++) {
		struct culprit c[CULPRITS_MAX];
		const char *tn = thread_name(v, set->pid, set->tid[i]);
		size_t n;

		if (set->dur_ns[i] <= m->threshold)
			continue;
		printf("    frame %" PRIu32 " at %s: %s, thread %" PRIu64 "%s%s%s\n", i,
		       ta_fmt_time(b[0], sizeof(b[0]),
				   (uint64_t)(set->start_ns[i] > 0 ? set->start_ns[i] : 0)),
		       ta_fmt_time(b[1], sizeof(b[1]), set->dur_ns[i]), set->tid[i], tn ? " (" : "",
		       tn ? tn : "", tn ? ")" : "");
		n = culprits(set, i, all, c);
		for (size_t k = 0; k < n; k++)
			printf("      +%-12s %s  %s\n",
			       ta_fmt_time(b[2], sizeof(b[2]), c[k].excess_ns), c[k].f->id.name,
			       ta_path_base(c[k].f->id.module));
	}
}

/* A keep dump's process (TRACEAGENT_KEEP): its KEEP chunk, else NULL. */
static const struct ta_keep_info *keep_of(const struct ta_view *v, const struct ta_fset *set)
{
	struct ta_process *p = ta_session_process(v->s, set->pid);

	return p && set->keep ? p->keep : NULL;
}

static void text_keep(const struct ta_fset *set, const struct ta_keep_info *k)
{
	char b[32];

	printf("  kept: only the slow frames (TRACEAGENT_KEEP: over %s, %" PRIu64
	       " before each): %" PRIu64 " of %" PRIu64 " frames of set \"%s\" seen, %" PRIu64
	       " slow; the rest let go\n",
	       ta_fmt_time(b, sizeof(b), k->budget_ns), k->before, k->frames_kept, k->frames_seen,
	       k->set, k->frames_slow);
	if (strcmp(k->set, set->name))
		printf("  (this set's frames are those inside the windows kept for \"%s\")\n",
		       k->set);
	if (k->windows_partial || k->windows_lost || k->marks_unjudged)
		printf("  kept in part: %" PRIu64
		       " windows reach back where the ring was over full "
		       "(%" PRIu64 " events let go before being judged); %" PRIu64
		       " windows lost, %" PRIu64 " marks not judged\n",
		       k->windows_partial, k->let_go_early, k->windows_lost, k->marks_unjudged);
}

static void json_keep(const struct ta_keep_info *k)
{
	printf(",\n   \"keep\": ");
	ta_keep_json(stdout, k);
}

/* ---- JSON ------------------------------------------------------------------------- */

static void json_set(const struct ta_fset *set, const struct summary *m, const struct options *o,
		     struct culprit *all, int first)
{
	int any = 0;

	printf("%s\n  {\"name\": ", first ? "" : ",");
	ta_json_str(stdout, set->name);
	printf(", \"pid\": %" PRIu32 ", \"count\": %zu, \"fps\": %.3f, \"min_ns\": %" PRIu64
	       ", \"avg_ns\": %" PRIu64 ", \"p50_ns\": %" PRIu64 ", \"p90_ns\": %" PRIu64
	       ", \"p99_ns\": %" PRIu64 ", \"max_ns\": %" PRIu64 ", \"threshold_ns\": %" PRIu64,
	       set->pid, set->nframes, m->fps, m->min, m->avg, m->p50, m->p90, m->p99, m->max,
	       m->threshold);
	if (o->have_budget)
		printf(", \"budget_ns\": %" PRIu64, o->budget_ns);
	else
		printf(", \"hitch_factor\": %g", o->factor);
	/* TA_FRAME_BEGIN/END's sets only: the marks' keep their keys. */
	if (set->ends)
		printf(", \"gaps\": true, \"unmatched\": %" PRIu64, set->unmatched);
	printf(",\n   \"hitches\": [");
	for (uint32_t i = 0; i < set->nframes; i++) {
		struct culprit c[CULPRITS_MAX];
		size_t n;

		if (set->dur_ns[i] <= m->threshold)
			continue;
		printf("%s\n    {\"index\": %" PRIu32 ", \"start_ns\": %" PRId64
		       ", \"duration_ns\": %" PRIu64 ", \"tid\": %" PRIu64 ", \"culprits\": [",
		       any ? "," : "", i, set->start_ns[i], set->dur_ns[i], set->tid[i]);
		any = 1;
		n = culprits(set, i, all, c);
		for (size_t k = 0; k < n; k++) {
			printf("%s{\"name\": ", k ? ", " : "");
			ta_json_str(stdout, c[k].f->id.name);
			printf(", \"module\": ");
			ta_json_str(stdout, c[k].f->id.module);
			printf(", \"excess_ns\": %" PRIu64 "}", c[k].excess_ns);
		}
		printf("]}");
	}
	printf("%s]", any ? "\n   " : "");
}

static void json_set_end(void)
{
	putchar('}');
}

/* ---- arguments -------------------------------------------------------------------- */

enum { O_SET = TA_OPT_OWN, O_BUDGET, O_HITCH };

static const struct ta_opt frames_opts[] = {
    {"--section", TA_ARG_EITHER, TA_OPT_SECTION},
    {"--json", TA_ARG_NONE, TA_OPT_JSON},
    {"--set", TA_ARG_EQ, O_SET},
    {"--budget", TA_ARG_EQ, O_BUDGET},
    {"--hitch", TA_ARG_EQ, O_HITCH},
    {"--demangle", TA_ARG_EITHER, TA_OPT_DEMANGLE},
    {"--symfs", TA_ARG_EITHER, TA_OPT_SYMFS},
    {"--debug-dir", TA_ARG_EITHER, TA_OPT_DEBUG_DIR},
    {NULL, TA_ARG_NONE, 0},
};

static int parse_args(int argc, char **argv, struct options *o)
{
	struct ta_opts p;
	int demangle = -1;
	int id;
	const struct ta_opts_into into = {
	    .demangle = &demangle, .dump = &o->path, .json = &o->json};

	memset(o, 0, sizeof(*o));
	o->factor = 2;
	ta_opts_init(&p, "frames", frames_opts, usage, argc, argv);
	while ((id = ta_opts_next_into(&p, &into)) != TA_OPT_END) {
		char *end;

		switch (id) {
		case TA_OPT_EXIT:
			return p.status;
		case O_SET:
			if (!p.val[0])
				return ta_opts_bad(&p, "is not a frame set's name");
			o->set = p.val;
			break;
		case O_BUDGET:
			if (ta_parse_time(p.val, &o->budget_ns) < 0)
				return ta_opts_bad(&p, "is not a time (16ms, 500us, ...)");
			o->have_budget = 1;
			break;
		case O_HITCH:
			errno = 0;
			o->factor = strtod(p.val, &end);
			if (errno || end == p.val || *end || !isfinite(o->factor) || o->factor <= 0)
				return ta_opts_bad(&p, "is not a factor above 0");
			break;
		}
	}
	ta_view_set_demangle(demangle, o->json);
	if (ta_opts_need_dump(&p, o->path))
		return 2;
	return -1;
}

int ta_cmd_frames(int argc, char **argv)
{
	struct options o;
	struct ta_view v;
	struct ta_framestat fs;
	struct culprit *all = NULL;
	size_t most = 0;
	int rc, status;

	rc = parse_args(argc, argv, &o);
	if (rc >= 0)
		return rc;
	memset(&v, 0, sizeof(v));
	if (ta_framestat_read(&fs, &v, o.path, o.set) < 0) {
		status = v.status;
		goto out;
	}
	status = v.status;
	ta_view_warnings(&v);
	for (size_t k = 0; k < fs.nsets; k++)
		if (fs.sets[k].nfns > most)
			most = fs.sets[k].nfns;
	if (!(all = malloc((most ? most : 1) * sizeof(*all))))
		goto nomem;
	/* Not an error: a program may mark no frames in a run. */
	if (!fs.nsets && !o.json) {
		if (o.set)
			printf("no frame set \"%s\" in %s\n", o.set, o.path);
		else
			printf("no frame marks in %s\n", o.path);
	}
	if (o.json) {
		printf("{\"dump\": ");
		ta_json_str(stdout, o.path);
		printf(", \"complete\": %s, \"frame_sets\": [",
		       ta_view_incomplete(&v) ? "false" : "true");
	}
	for (size_t k = 0; k < fs.nsets; k++) {
		const struct ta_keep_info *kept = keep_of(&v, &fs.sets[k]);
		struct options so = o;
		struct summary m;

		/* A keep dump's hitches are over its budget unless asked:
		 * the median of the frames kept is no measure of a frame. */
		if (kept && !so.have_budget) {
			so.have_budget = 1;
			so.budget_ns = kept->budget_ns;
		}
		if (summarize(&fs.sets[k], &so, &m) < 0)
			goto nomem;
		if (o.json) {
			json_set(&fs.sets[k], &m, &so, all, !k);
			if (kept)
				json_keep(kept);
			json_set_end();
		} else {
			if (k)
				putchar('\n');
			text_set(&fs.sets[k], &m, &so, &v, all);
			if (kept)
				text_keep(&fs.sets[k], kept);
		}
	}
	if (o.json)
		printf("%s]}\n", fs.nsets ? "\n" : "");
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "traceagent: writing the frames: %s\n", strerror(errno));
		status = 1;
	}
	goto out;
nomem:
	fflush(stdout);
	fprintf(stderr, "traceagent: %s: out of memory\n", o.path);
	status = 1;
out:
	free(all);
	ta_framestat_free(&fs);
	ta_view_close(&v);
	return status;
}
