/* SPDX-License-Identifier: MIT */
/*
 * tracerows.h - a dump as rows of tables shaped like Perfetto's trace
 * processor (process, thread, track, thread_track, counter_track, slice,
 * instant, counter, args) plus function_stats (report's numbers), frame
 * (the frames of each frame set) and trace_bounds, handed to a sink one
 * row at a time.  Every SQL engine the analyzer feeds (`traceagent sql`'s
 * SQLite, ClickHouse) takes the same tables from here, so a query reads
 * the same in each; docs/traceagent-sql.md documents the schema.
 *
 * The rows come from the timeline's walk (timeline.h: each thread's calls
 * in time order, named by the metadata pass) and, for function_stats, from
 * the profile report prints (ta_prof_table_build), so their numbers are
 * report's.  Memory grows with threads, stack depth, counters, frame
 * marks and functions, never with the number of calls: a slice is handed
 * over at its call's end.
 *
 * Times are ns on the dump's clock (CLOCK_MONOTONIC, as the Perfetto
 * export's): trace_bounds.start_ts is the dump's first event.
 */
#ifndef TA_TRACEROWS_H
#define TA_TRACEROWS_H

#include <stddef.h>
#include <stdint.h>

enum ta_rows_type {
	TA_ROWS_INT,	/* int64 */
	TA_ROWS_DOUBLE, /* double */
	TA_ROWS_TEXT	/* UTF-8 as the dump has it (not checked) */
};

struct ta_rows_column {
	const char *name;
	enum ta_rows_type type;
	int nullable; /* its cells may be null */
	/* Not one of Perfetto's columns of the table, for an engine that
	 * orders or shards rows by process (ClickHouse: ORDER BY host, pid,
	 * ts).  The SQLite tables leave it out, so that Perfetto's joins
	 * (slice JOIN thread_track ... JOIN thread USING (utid) JOIN process
	 * USING (upid)) find each column in one table only. */
	int hidden;
};

/* The tables, in the order the sink hears of them; new ones are added at
 * the end, new columns at a table's end. */
enum ta_rows_table_id {
	TA_ROWS_PROCESS,
	TA_ROWS_THREAD,
	TA_ROWS_TRACK,
	TA_ROWS_THREAD_TRACK,
	TA_ROWS_COUNTER_TRACK,
	TA_ROWS_SLICE,
	TA_ROWS_INSTANT,
	TA_ROWS_COUNTER,
	TA_ROWS_ARGS,
	TA_ROWS_FUNCTION_STATS,
	TA_ROWS_FRAME,
	TA_ROWS_TRACE_BOUNDS,
	TA_ROWS_NTABLES
};

struct ta_rows_table {
	enum ta_rows_table_id id;
	const char *name;
	const struct ta_rows_column *cols;
	unsigned ncols;
	const char *about; /* one line: what a row is */
};

/* The tables, by enum ta_rows_table_id. */
extern const struct ta_rows_table ta_rows_tables[TA_ROWS_NTABLES];

/* One value of a row: i for TA_ROWS_INT, d for TA_ROWS_DOUBLE, s for
 * TA_ROWS_TEXT (valid during the row call only), unless null. */
struct ta_rows_cell {
	int null;
	int64_t i;
	double d;
	const char *s;
};

/*
 * Where the rows go.  table is called once for each table, in order,
 * before any row; then row once per row (cells: the table's ncols, hidden
 * columns included), tables interleaved (a slice at its call's end, a
 * thread once the walk is done).  A nonzero return stops the walk: the
 * sink said why itself.
 */
struct ta_rows_sink {
	void *ctx;
	int (*table)(void *ctx, const struct ta_rows_table *t);
	int (*row)(void *ctx, const struct ta_rows_table *t, const struct ta_rows_cell *cells);
};

/* Which part of the dump: all of it when zero. */
struct ta_rows_opts {
	/* Only the calls of functions whose name matches this glob (as
	 * report's --function) and their callees: a match is a slice of
	 * depth 0.  function_stats has only the matching functions. */
	const char *function;
	/* Only the calls lasting at least this long (ns) and their callers;
	 * instants, counters and frames are then left out (they belong to no
	 * call).  function_stats stays whole. */
	uint64_t min_duration_ns;
	/* NULL, or told how far the walk is now and then (bytes of the dump
	 * read of total), and once at the end with done == total. */
	void (*progress)(void *ctx, uint64_t done, uint64_t total);
	void *progress_ctx;
};

/* What a walk handed over. */
struct ta_rows_counts {
	uint64_t rows[TA_ROWS_NTABLES];
};

/*
 * Reads the dump at path and hands its rows to sink.  The dump's errors
 * and warnings go to stderr as every view prints them.  Returns the exit
 * status a command gives: 0 for a whole dump, 1 when it is damaged or
 * incomplete (the rows are what could be read), the sink stopped the walk,
 * or memory ran out, 2 when it could not be read at all.  counts (may be
 * NULL) gets the rows handed over.
 */
int ta_rows_walk(const char *path, const struct ta_rows_opts *o, const struct ta_rows_sink *sink,
		 struct ta_rows_counts *counts);

#endif /* TA_TRACEROWS_H */
