/* SPDX-License-Identifier: MIT */
/*
 * export_int.h - what `traceagent export`'s files share: the command's
 * state, which export.c (options, folded stacks) fills and
 * export_chrome.c (Chrome Trace Event JSON) writes from.
 */
#ifndef TA_EXPORT_INT_H
#define TA_EXPORT_INT_H

#include <stdint.h>
#include <stdio.h>

#include "apimem.h"
#include "export_pb.h"
#include "timeline.h"

enum format { FMT_NONE, FMT_CHROME, FMT_FOLDED, FMT_PERFETTO, FMT_PPROF };

struct export
{
	const char *path, *out;
	enum format fmt;
	int by_calls, threads, srcline;
	int folded_only; /* --by or --threads was given */
	struct ta_tlopts o;
	FILE *f;

	/* chrome */
	struct ta_timeline tl;
	char **jname, **jcat; /* by function id: JSON name and category, once made */
	uint32_t nj;
	uint64_t events, bytes;
	int warned, nomem;

	/* chrome: the manual API's events */
	struct ta_zone_args za; /* texts and values waiting for their zone's slice
				   (JSON strings) */
	struct ta_xframes xf;	/* the frame marks: slices after the run */
	struct ta_xmeta meta;	/* application info, counters' units */
	/* chrome: the pools' live bytes (counter tracks), the fiber each
	 * thread runs (its calls go on the fiber's track) */
	struct ta_pools pools;
	struct ta_fibers fibers;
	/* chrome: the locks' names as JSON strings, by the timeline's lock
	 * row (ta_tlcall.lock_id), made at their first call */
	char **ljson;
	size_t nljson;

	/* chrome: the lines are formatted by jobs (-j: on the workers), the
	 * timeline filling the current one; see chrome_rec. */
	struct ta_opool q;
	struct cjob *jobs;
	size_t njobs;
	struct cjob *job; /* being filled */
	FILE *of;	  /* the output (f is the current job's text during api) */

	/* folded */
	char *buf;
	size_t len, cap;
	size_t *at; /* by depth: where the frame's name starts in buf */
	uint32_t nat;
};

/* export_chrome.c: writes e's dump as Chrome JSON to e->f; the exit status.
 * What it made (jobs, names, zones' args, frame marks) is freed by
 * ta_export_chrome_free, whatever it returned. */
int ta_export_chrome(struct export *e);
void ta_export_chrome_free(struct export *e);

/* export_ch.c: --format=clickhouse, with options of its own (a URL, no
 * -o): 1 when argv asks for it; then the command is ta_export_clickhouse. */
int ta_export_is_clickhouse(int argc, char **argv);
int ta_export_clickhouse(int argc, char **argv);

#endif
