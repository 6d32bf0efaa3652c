/* SPDX-License-Identifier: MIT */
/*
 * sql_int.h - what sql.c (loading a dump) and sql_out.c (running the
 * statements and printing their results) share.
 */
#ifndef TA_SQL_INT_H
#define TA_SQL_INT_H

#include <sqlite3.h>
#include <stdio.h>

enum ta_sql_form { TA_SQL_TABLE, TA_SQL_CSV, TA_SQL_JSON };

/*
 * Runs the statements of text on db in order, printing the result of each
 * that has columns to out in form; stops at the first that fails (its
 * message on stderr).  Returns 0, or 1 after a failure.
 */
int ta_sql_run(sqlite3 *db, const char *text, enum ta_sql_form form, FILE *out);

#endif /* TA_SQL_INT_H */
