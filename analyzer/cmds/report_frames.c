/* SPDX-License-Identifier: MIT */
/*
 * report_frames.c - `traceagent report --frames`: per function of a frame
 * set, its calls and self time per frame (framestat.c's passes instead of
 * the profile's).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "common.h"
#include "framestat.h"

struct frames_opts {
	const char *path; /* what messages name */
	const char *dump;
	const char *set;      /* --set, or NULL */
	const char *function; /* --function, or NULL */
	uint64_t top;	      /* rows, 0 = all */
	int json;
};

static int fs_row_cmp(const void *a, const void *b)
{
	const struct ta_fs_row *x = *(const struct ta_fs_row *const *)a;
	const struct ta_fs_row *y = *(const struct ta_fs_row *const *)b;
	int c;

	if (x->self_sum_ns != y->self_sum_ns)
		return x->self_sum_ns > y->self_sum_ns ? -1 : 1;
	c = strcmp(x->id.name, y->id.name);
	return c ? c : strcmp(x->id.module, y->id.module);
}

static void frames_row(const struct frames_opts *o, const struct ta_fset *set,
		       const struct ta_fs_row *f, int first)
{
	double calls = (double)f->calls / (double)set->nframes;
	uint64_t avg = f->self_sum_ns / set->nframes;
	char b[3][32];

	if (!o->json) {
		printf("%12.2f %10" PRIu64 " %12s %12s %12s  %s  %s\n", calls, f->calls_max,
		       ta_fmt_time(b[0], sizeof(b[0]), avg),
		       ta_fmt_time(b[1], sizeof(b[1]), f->self_p99_ns),
		       ta_fmt_time(b[2], sizeof(b[2]), f->self_max_ns), f->id.name,
		       ta_path_base(f->id.module));
		return;
	}
	printf("%s\n   {\"name\": ", first ? "" : ",");
	ta_json_str(stdout, f->id.name);
	printf(", \"module\": ");
	ta_json_str(stdout, f->id.module);
	printf(", \"calls\": %" PRIu64
	       ", \"calls_per_frame\": %.4f, \"calls_per_frame_max\": %" PRIu64
	       ", \"self_per_frame_avg_ns\": %" PRIu64 ", \"self_per_frame_p99_ns\": %" PRIu64
	       ", \"self_per_frame_max_ns\": %" PRIu64 "}",
	       f->calls, calls, f->calls_max, avg, f->self_p99_ns, f->self_max_ns);
}

/* The functions of the set by their self time per frame; -1 without
 * memory. */
static int frames_print(const struct frames_opts *o, const struct ta_view *v,
			const struct ta_fset *set)
{
	const struct ta_fs_row **rows = NULL;
	size_t n = 0;

	if (set && set->nfns && !(rows = malloc(set->nfns * sizeof(*rows))))
		return -1;
	for (size_t i = 0; set && i < set->nfns; i++)
		if (!o->function || ta_fn_glob(o->function, &set->fns[i].id))
			rows[n++] = &set->fns[i];
	if (n)
		qsort(rows, n, sizeof(*rows), fs_row_cmp);
	if (o->top && n > o->top)
		n = (size_t)o->top;
	if (o->json) {
		printf("{\"dump\": ");
		ta_json_str(stdout, o->path);
		printf(", \"complete\": %s,\n  \"frame_set\": ",
		       ta_view_incomplete(v) ? "false" : "true");
		if (set) {
			printf("{\"name\": ");
			ta_json_str(stdout, set->name);
			printf(", \"pid\": %" PRIu32 ", \"count\": %zu}", set->pid, set->nframes);
		} else
			printf("null");
		printf(",\n  \"functions\": [");
	} else if (!set) {
		if (o->set)
			printf("no frame set \"%s\" in %s\n", o->set, o->path);
		else
			printf("no frame marks in %s\n", o->path);
	} else {
		printf("frame set \"%s\" of process %" PRIu32 ": %zu frames\n", set->name, set->pid,
		       set->nframes);
		printf("%12s %10s %12s %12s %12s  %-s  %s\n", "calls/frame", "max calls",
		       "self/frame", "p99", "max", "function", "module");
	}
	for (size_t i = 0; i < n; i++)
		frames_row(o, set, rows[i], !i);
	if (o->json)
		printf("%s]}\n", n ? "\n  " : "");
	free(rows);
	return 0;
}

int ta_report_frames(const char *path, const char *dump, const char *set, const char *function,
		     uint64_t top, int json)
{
	const struct frames_opts opts = {path, dump, set, function, top, json}, *o = &opts;
	struct ta_view v;
	struct ta_framestat fs;
	int status;

	memset(&v, 0, sizeof(v));
	if (ta_framestat_read(&fs, &v, o->dump, o->set) < 0) {
		status = v.status;
		goto out;
	}
	status = v.status;
	ta_view_warnings(&v);
	if (frames_print(o, &v, ta_framestat_default(&fs)) < 0) {
		fflush(stdout);
		fprintf(stderr, "traceagent: %s: out of memory\n", o->path);
		status = 1;
	} else if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "traceagent: writing the report: %s\n", strerror(errno));
		status = 1;
	}
out:
	ta_framestat_free(&fs);
	ta_view_close(&v);
	return status;
}
