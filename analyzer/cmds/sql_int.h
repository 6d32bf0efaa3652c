/* SPDX-License-Identifier: MIT */
/*
 * sql_int.h - what sql.c (loading a dump) and sql_out.c (running the
 * statements and printing their results) share.
 */
#ifndef TA_SQL_INT_H
#define TA_SQL_INT_H

#include <sqlite3.h>
#include <stdio.h>

#include "tracerows.h"

enum ta_sql_form { TA_SQL_TABLE, TA_SQL_CSV, TA_SQL_JSON };

/*
 * Runs the statements of text on db in order, printing the result of each
 * that has columns to out in form; stops at the first that fails (its
 * message on stderr).  Returns 0, or 1 after a failure.
 */
int ta_sql_run(sqlite3 *db, const char *text, enum ta_sql_form form, FILE *out);

/*
 * A table of rows kept in columns in memory, which SQLite reads as a
 * virtual table of the table's name (sql_vtab.c): for the big tables of
 * an in-memory load.  Text and integer columns only (an integer's NULL
 * is kept as INT64_MIN).
 */
struct ta_sqlstore;

struct ta_sqlstore *ta_sqlstore_new(const struct ta_rows_table *t);
/* Frees st; after the database that reads it is closed. */
void ta_sqlstore_free(struct ta_sqlstore *st);
/* Adds a row (cells: all the table's columns).  0, or -1 without memory
 * or for a row whose id is not one (the row is then not kept). */
int ta_sqlstore_add(struct ta_sqlstore *st, const struct ta_rows_cell *cells);
/* Makes st the table of its name in db: 0, or -1. */
int ta_sqlstore_attach(sqlite3 *db, struct ta_sqlstore *st);

#endif /* TA_SQL_INT_H */
