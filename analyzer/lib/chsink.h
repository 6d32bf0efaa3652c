/* SPDX-License-Identifier: MIT */
/*
 * chsink.h - a dump's rows (tracerows.h) inserted into ClickHouse through
 * its HTTP interface (chttp.h), and the tables' definitions (chsink.c).
 *
 * Every table is tracerows' with two columns first: host (where the dump
 * was recorded, or sent from) and recording (which dump), so that the
 * dumps of a fleet live in the same tables.  The rows go as
 * TabSeparated, in batches of at most TA_CH_BATCH bytes a table: memory
 * stays bounded whatever the size of the dump.
 */
#ifndef TA_CHSINK_H
#define TA_CHSINK_H

#include <stddef.h>
#include <stdio.h>

#include "chttp.h"
#include "tracerows.h"

#define TA_CH_BATCH (1u << 20)
/* How long ClickHouse may take to connect or to answer. */
#define TA_CH_TIMEOUT_MS 30000

/* The exit statuses beyond the views' 0, 1, 2 (ta_ch_insert_dump). */
#define TA_CH_EXIT_DOWN	   3 /* ClickHouse could not be reached: nothing lost, retry */
#define TA_CH_EXIT_REFUSED 4 /* ClickHouse refused an insert (no such table...) */

/* A credentials file: "user=NAME" and "password=SECRET" lines ('#'
 * comments, blank lines).  0, or -1 with why. */
int ta_ch_auth_load(const char *path, struct ta_ch_auth *a, char *why, size_t why_size);

/* The CREATE TABLE statements: MergeTree tables, or (cluster non-NULL)
 * NAME_local MergeTree tables for each shard and NAME Distributed tables
 * over them in that cluster. */
void ta_ch_schema(FILE *f, const char *cluster);

/* The dump at path into ClickHouse, its rows with host and recording;
 * counts (may be NULL) gets the rows inserted.  Returns 0 (whole dump), 1
 * (damaged or incomplete dump: its readable rows inserted), 2 (not
 * readable), TA_CH_EXIT_DOWN or TA_CH_EXIT_REFUSED (why says it; some
 * batches may be in when it fails midway). */
int ta_ch_insert_dump(const struct ta_ch_url *u, const struct ta_ch_auth *a, const char *path,
		      const char *host, const char *recording, struct ta_rows_counts *counts,
		      char *why, size_t why_size);

#endif
