/* SPDX-License-Identifier: MIT */
/*
 * sql_out.c - the statements of `traceagent sql` run one after the other,
 * each result printed as an aligned table (kept whole until its widths are
 * known), CSV (RFC 4180) or a JSON array of objects.
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common.h"
#include "grow.h"
#include "sql_int.h"

/* ---- an aligned table ------------------------------------------------------------------ */

struct table {
	int ncols;
	char **cells; /* row by row, the header first; NULL: a NULL value */
	size_t n, cap;
	size_t *width;
	/* Per column: 1 while its values are numbers (or NULL), 2 once one
	 * was: right-aligned then. */
	int *numeric;
	int nomem;
};

static void table_add(struct table *t, const char *s)
{
	char **c;
	char *d = NULL;

	if (t->nomem)
		return;
	c = ta_vec_reserve(t->cells, t->n + 1, &t->cap, sizeof(*c), 256);
	if (!c || (s && !(d = strdup(s)))) {
		t->nomem = 1;
		return;
	}
	t->cells = c;
	t->cells[t->n++] = d;
}

/* A value as the table shows it: SQLite's text of it, "NULL" for null. */
static const char *shown(const char *s)
{
	return s ? s : "NULL";
}

/* One line of the table: row r of the cells (0: the header). */
static void table_line(const struct table *t, size_t r, FILE *out)
{
	for (int k = 0; k < t->ncols; k++) {
		const char *s = shown(t->cells[r * (size_t)t->ncols + (size_t)k]);
		int w = (int)t->width[k];

		if (k)
			fputs("  ", out);
		/* Numbers to the right; the last column's text without padding. */
		if (t->numeric[k] == 2)
			fprintf(out, "%*s", w, s);
		else if (k < t->ncols - 1)
			fprintf(out, "%-*s", w, s);
		else
			fputs(s, out);
	}
	fputc('\n', out);
}

/* The header, a rule of dashes under it, then the rows. */
static void table_print(struct table *t, FILE *out)
{
	size_t lines = t->n / (size_t)t->ncols;

	for (size_t r = 0; r < lines; r++)
		for (int k = 0; k < t->ncols; k++) {
			size_t w = strlen(shown(t->cells[r * (size_t)t->ncols + (size_t)k]));

			if (w > t->width[k])
				t->width[k] = w;
		}
	table_line(t, 0, out);
	for (int k = 0; k < t->ncols; k++) {
		fputs(k ? "  " : "", out);
		for (size_t i = 0; i < t->width[k]; i++)
			fputc('-', out);
	}
	fputc('\n', out);
	for (size_t r = 1; r < lines; r++)
		table_line(t, r, out);
}

static void table_free(struct table *t)
{
	for (size_t i = 0; i < t->n; i++)
		free(t->cells[i]);
	free(t->cells);
	free(t->width);
	free(t->numeric);
}

/* ---- CSV and JSON --------------------------------------------------------------------- */

static void csv_field(FILE *out, const char *s)
{
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, out);
		return;
	}
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', out);
		fputc(*s, out);
	}
	fputc('"', out);
}

static void json_value(FILE *out, sqlite3_stmt *st, int k)
{
	switch (sqlite3_column_type(st, k)) {
	case SQLITE_INTEGER:
		fprintf(out, "%lld", (long long)sqlite3_column_int64(st, k));
		break;
	case SQLITE_FLOAT: {
		double d = sqlite3_column_double(st, k);

		if (isfinite(d))
			fprintf(out, "%.17g", d);
		else
			fputs("null", out);
		break;
	}
	case SQLITE_NULL:
		fputs("null", out);
		break;
	default:
		/* A blob as SQLite's text of it. */
		ta_json_str(out, (const char *)sqlite3_column_text(st, k));
	}
}

/* ---- running --------------------------------------------------------------------------- */

/* The rows of one statement, printed in form.  0, or -1 when it failed
 * (its message printed). */
static int result(sqlite3 *db, sqlite3_stmt *st, enum ta_sql_form form, FILE *out, int nth,
		  int *printed)
{
	int ncols = sqlite3_column_count(st), rc;
	struct table t = {0};
	size_t rows = 0;

	if (ncols) {
		if (*printed && form != TA_SQL_JSON)
			fputc('\n', out);
		*printed = 1;
	}
	if (form == TA_SQL_TABLE && ncols) {
		t.ncols = ncols;
		t.width = calloc((size_t)ncols, sizeof(*t.width));
		t.numeric = calloc((size_t)ncols, sizeof(*t.numeric));
		if (!t.width || !t.numeric)
			t.nomem = 1;
		for (int k = 0; k < ncols && !t.nomem; k++) {
			table_add(&t, sqlite3_column_name(st, k));
			t.numeric[k] = 1;
		}
	} else if (form == TA_SQL_CSV && ncols) {
		for (int k = 0; k < ncols; k++) {
			if (k)
				fputc(',', out);
			csv_field(out, sqlite3_column_name(st, k));
		}
		fputc('\n', out);
	} else if (ncols) {
		fputc('[', out);
	}
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		for (int k = 0; k < ncols; k++) {
			int type = sqlite3_column_type(st, k);
			const char *s = (const char *)sqlite3_column_text(st, k);

			if (form == TA_SQL_TABLE) {
				if (type == SQLITE_INTEGER || type == SQLITE_FLOAT)
					t.numeric[k] = t.numeric[k] ? 2 : 0;
				else if (type != SQLITE_NULL)
					t.numeric[k] = 0;
				table_add(&t, type == SQLITE_NULL ? NULL : s ? s : "");
			} else if (form == TA_SQL_CSV) {
				if (k)
					fputc(',', out);
				csv_field(out, s ? s : "");
			} else {
				fprintf(out, "%s", k ? ", " : rows ? ",\n {" : "{");
				ta_json_str(out, sqlite3_column_name(st, k));
				fputs(": ", out);
				json_value(out, st, k);
			}
		}
		if (form == TA_SQL_CSV)
			fputc('\n', out);
		else if (form == TA_SQL_JSON && ncols)
			fputc('}', out);
		rows++;
	}
	if (form == TA_SQL_JSON && ncols)
		fputs("]\n", out);
	if (rc == SQLITE_DONE && form == TA_SQL_TABLE && ncols && !t.nomem)
		table_print(&t, out);
	table_free(&t);
	if (rc != SQLITE_DONE) {
		fflush(out);
		fprintf(stderr, "traceagent sql: statement %d: %s\n", nth, sqlite3_errmsg(db));
		return -1;
	}
	if (t.nomem) {
		fflush(out);
		fprintf(stderr, "traceagent sql: statement %d: out of memory\n", nth);
		return -1;
	}
	return 0;
}

int ta_sql_run(sqlite3 *db, const char *text, enum ta_sql_form form, FILE *out)
{
	const char *at = text;
	int nth = 0, printed = 0;

	while (at && *at) {
		sqlite3_stmt *st = NULL;
		const char *tail = NULL;

		if (sqlite3_prepare_v2(db, at, -1, &st, &tail) != SQLITE_OK) {
			fflush(out);
			fprintf(stderr, "traceagent sql: statement %d: %s\n", nth + 1,
				sqlite3_errmsg(db));
			return 1;
		}
		at = tail;
		if (!st) /* only blanks or a comment were left */
			continue;
		nth++;
		if (result(db, st, form, out, nth, &printed) < 0) {
			sqlite3_finalize(st);
			return 1;
		}
		sqlite3_finalize(st);
	}
	if (fflush(out) != 0 || ferror(out)) {
		fprintf(stderr, "traceagent sql: writing the results failed\n");
		return 1;
	}
	return 0;
}
