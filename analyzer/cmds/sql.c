/* SPDX-License-Identifier: MIT */
/*
 * sql.c - `traceagent sql DUMP [QUERY]`: a dump loaded into SQLite (in
 * memory, or a file kept with --db) as tracerows.h's tables, and queries
 * run on it, printed as an aligned table, CSV or JSON (sql_out.c).
 *
 * The load is one transaction of prepared inserts with the journal and
 * fsync off: the database is the dump's copy, made again from the dump
 * whenever it is lost.  Hidden columns (tracerows.h) are left out.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cmdopts.h"
#include "commands.h"
#include "common.h"
#include "grow.h"
#include "sql_int.h"
#include "tracerows.h"

struct options {
	const char *dump, *query, *db;
	const char *function;
	uint64_t min_duration;
	int have_min;
	enum ta_sql_form form;
};

struct loader {
	sqlite3 *db;
	const char *path;
	sqlite3_stmt *ins[TA_ROWS_NTABLES];
	/* In memory: the slices in columns, read as a virtual table. */
	int in_memory;
	struct ta_sqlstore *store[TA_ROWS_NTABLES];
	/* Per table: the bind index of each column (0: hidden, left out). */
	int bind[TA_ROWS_NTABLES][32];
	int failed;
	/* Progress on a terminal: when it was last said. */
	int tty;
	struct timespec last;
	uint64_t slices;
};

static void usage(FILE *f)
{
	fprintf(f, "usage: traceagent sql [--db FILE] [--csv | --json] [--function=GLOB]\n"
		   "                      [--min-duration=TIME] DUMP [QUERY]\n"
		   "\n"
		   "Loads a dump into SQLite, in tables shaped like those of Perfetto's trace\n"
		   "processor (process, thread, thread_track, slice, counter, counter_track,\n"
		   "instant, args, track) with function_stats (report's numbers), frame and\n"
		   "trace_bounds, and runs QUERY on it (one or more statements), or the\n"
		   "statements read from standard input.  DUMP may also be a database a\n"
		   "--db load kept: it is then queried as it is.\n"
		   "\n"
		   "  --db FILE          load into FILE (a new file) and keep it, instead\n"
		   "                     of memory\n"
		   "  --csv              each result as a header line and one line per row\n"
		   "                     (RFC 4180 quoting; NULL is an empty field)\n"
		   "  --json             each result as a JSON array of objects, one per row\n"
		   "  --function=GLOB    load only the calls of the functions whose name\n"
		   "                     matches GLOB and their callees\n"
		   "  --min-duration=TIME  load only the calls of at least TIME (such as\n"
		   "                     10us) and their callers\n"
		   "  --demangle=MODE    C++ names: full (default), simple or no\n"
		   "  --symfs=DIR        look for each module's file under DIR\n"
		   "  --debug-dir=DIR    look for separate debug files in DIR too\n"
		   "  -j N, --jobs=N     N threads read the dump\n"
		   "  -h, --help         this help\n"
		   "\n"
		   "Times are ns on the dump's clock (CLOCK_MONOTONIC); trace_bounds.start_ts\n"
		   "is its first event.  The schema: traceagent help sql.  Without --csv or\n"
		   "--json a result is a table, columns aligned, NULL shown as NULL.\n"
		   "Exit status: 0, 1 when the dump is damaged or incomplete (what could be\n"
		   "read is loaded) or a statement failed, 2 for usage errors or a dump that\n"
		   "cannot be read.\n");
}

/* ---- loading ------------------------------------------------------------------------- */

static int exec(struct loader *l, const char *sql)
{
	char *err = NULL;

	if (sqlite3_exec(l->db, sql, NULL, NULL, &err) != SQLITE_OK) {
		fprintf(stderr, "traceagent sql: %s: %s\n", l->path, err ? err : "SQLite failed");
		sqlite3_free(err);
		return -1;
	}
	return 0;
}

static const char *sql_type(enum ta_rows_type t)
{
	return t == TA_ROWS_INT ? "INTEGER" : t == TA_ROWS_DOUBLE ? "REAL" : "TEXT";
}

/* CREATE TABLE and its INSERT, without the hidden columns; the first
 * column, an id, is the rowid. */
static int on_table(void *ctx, const struct ta_rows_table *t)
{
	struct loader *l = ctx;
	char create[2048], insert[1024];
	size_t c = 0, i = 0;
	int n = 0;

	if (l->in_memory && t->id == TA_ROWS_SLICE) {
		if (!(l->store[t->id] = ta_sqlstore_new(t)) ||
		    ta_sqlstore_attach(l->db, l->store[t->id]) < 0) {
			fprintf(stderr, "traceagent sql: %s: making table %s: %s\n", l->path,
				t->name, l->store[t->id] ? sqlite3_errmsg(l->db) : "out of memory");
			return -1;
		}
		return 0;
	}
	c += (size_t)snprintf(create + c, sizeof(create) - c, "CREATE TABLE %s (", t->name);
	i += (size_t)snprintf(insert + i, sizeof(insert) - i, "INSERT INTO %s VALUES (", t->name);
	for (unsigned k = 0; k < t->ncols && k < 32; k++) {
		const struct ta_rows_column *col = &t->cols[k];
		int key = k == 0 && (!strcmp(col->name, "id") || !strcmp(col->name, "upid") ||
				     !strcmp(col->name, "utid"));

		l->bind[t->id][k] = 0;
		if (col->hidden)
			continue;
		l->bind[t->id][k] = ++n;
		c += (size_t)snprintf(create + c, sizeof(create) - c, "%s%s %s%s",
				      n > 1 ? ", " : "", col->name, sql_type(col->type),
				      key	      ? " PRIMARY KEY"
				      : col->nullable ? ""
						      : " NOT NULL");
		i += (size_t)snprintf(insert + i, sizeof(insert) - i, "%s?", n > 1 ? "," : "");
	}
	snprintf(create + c, sizeof(create) - c, ")");
	snprintf(insert + i, sizeof(insert) - i, ")");
	if (exec(l, create) < 0)
		return -1;
	if (sqlite3_prepare_v2(l->db, insert, -1, &l->ins[t->id], NULL) != SQLITE_OK) {
		fprintf(stderr, "traceagent sql: %s: %s\n", l->path, sqlite3_errmsg(l->db));
		return -1;
	}
	return 0;
}

static int on_row(void *ctx, const struct ta_rows_table *t, const struct ta_rows_cell *cells)
{
	struct loader *l = ctx;
	sqlite3_stmt *st = l->ins[t->id];
	const int *bind = l->bind[t->id];

	if (l->store[t->id]) {
		if (ta_sqlstore_add(l->store[t->id], cells) == 0) {
			l->slices++;
			return 0;
		}
		fprintf(stderr, "traceagent sql: %s: loading table %s: out of memory\n", l->path,
			t->name);
		l->failed = 1;
		return -1;
	}
	for (unsigned k = 0; k < t->ncols; k++) {
		const struct ta_rows_cell *x = &cells[k];
		int b = bind[k];

		if (!b)
			continue;
		if (x->null)
			sqlite3_bind_null(st, b);
		else if (t->cols[k].type == TA_ROWS_INT)
			sqlite3_bind_int64(st, b, x->i);
		else if (t->cols[k].type == TA_ROWS_DOUBLE)
			sqlite3_bind_double(st, b, x->d);
		else
			sqlite3_bind_text(st, b, x->s, -1, SQLITE_STATIC);
	}
	if (sqlite3_step(st) != SQLITE_DONE) {
		fprintf(stderr, "traceagent sql: %s: loading table %s: %s\n", l->path, t->name,
			sqlite3_errmsg(l->db));
		sqlite3_reset(st);
		l->failed = 1;
		return -1;
	}
	sqlite3_reset(st);
	if (t->id == TA_ROWS_SLICE)
		l->slices++;
	return 0;
}

/* On a terminal, at most four times a second: how far the load is. */
static void on_progress(void *ctx, uint64_t done, uint64_t total)
{
	struct loader *l = ctx;
	struct timespec now;

	if (!l->tty)
		return;
	if (done == total) {
		fprintf(stderr, "\r\033[K");
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &now);
	if ((now.tv_sec - l->last.tv_sec) * 1000000000L + (now.tv_nsec - l->last.tv_nsec) <
	    250000000L)
		return;
	l->last = now;
	fprintf(stderr, "\rtraceagent sql: loading %s: %" PRIu64 "%%, %" PRIu64 " slices\033[K",
		l->path, total ? done * 100 / total : 0, l->slices);
}

/* Loads the dump into l->db: the exit status of the walk, or 2 when the
 * database refused. */
static int load(struct loader *l, const struct options *o)
{
	struct ta_rows_opts ro = {0};
	struct ta_rows_sink sink = {l, on_table, on_row};
	int status;

	ro.function = o->function;
	ro.min_duration_ns = o->min_duration;
	ro.progress = on_progress;
	ro.progress_ctx = l;
	l->tty = isatty(STDERR_FILENO);
	clock_gettime(CLOCK_MONOTONIC, &l->last);
	if (exec(l,
		 "PRAGMA page_size = 65536; PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; "
		 "PRAGMA locking_mode = EXCLUSIVE; PRAGMA temp_store = MEMORY; "
		 "PRAGMA cache_size = -65536; BEGIN") < 0)
		return 2;
	status = ta_rows_walk(l->path, &ro, &sink, NULL);
	for (unsigned k = 0; k < TA_ROWS_NTABLES; k++)
		sqlite3_finalize(l->ins[k]);
	if (exec(l, "COMMIT") < 0)
		return 2;
	return status;
}

/* ---- arguments ------------------------------------------------------------------------- */

enum { O_DB = TA_OPT_OWN };

static const struct ta_opt sql_opts[] = {
    {"--db", TA_ARG_EITHER, O_DB},
    {"--csv", TA_ARG_NONE, TA_OPT_CSV},
    {"--json", TA_ARG_NONE, TA_OPT_JSON},
    {"--function", TA_ARG_EQ, TA_OPT_FUNCTION},
    {"--min-duration", TA_ARG_EQ, TA_OPT_MIN_DURATION},
    {"--demangle", TA_ARG_EITHER, TA_OPT_DEMANGLE},
    {"--symfs", TA_ARG_EITHER, TA_OPT_SYMFS},
    {"--debug-dir", TA_ARG_EITHER, TA_OPT_DEBUG_DIR},
    {NULL, TA_ARG_NONE, 0},
};

static int parse_args(int argc, char **argv, struct options *o)
{
	struct ta_opts p;
	int demangle = -1, json = 0, csv = 0, id;
	const struct ta_opts_into into = {
	    .demangle = &demangle, .json = &json, .csv = &csv, .function = &o->function};

	memset(o, 0, sizeof(*o));
	ta_opts_init(&p, "sql", sql_opts, usage, argc, argv);
	while ((id = ta_opts_next_into(&p, &into)) != TA_OPT_END) {
		switch (id) {
		case TA_OPT_EXIT:
			return p.status;
		case TA_OPT_ARG:
			if (!o->dump)
				o->dump = p.val;
			else if (!o->query)
				o->query = p.val;
			else
				return ta_usage_error("sql", "one QUERY (several statements go in "
							     "one, separated by ';')");
			break;
		case O_DB:
			if (!p.val[0])
				return ta_opts_bad(&p, "is not a file name");
			o->db = p.val;
			break;
		case TA_OPT_MIN_DURATION:
			if (ta_parse_time(p.val, &o->min_duration) < 0)
				return ta_opts_bad(&p, "is not a time (such as 10us)");
			break;
		}
	}
	/* Full names: what a query compares with is what report --csv shows. */
	ta_view_set_demangle(demangle, 1);
	if (json && csv)
		return ta_usage_error("sql", "--json or --csv, not both");
	o->form = json ? TA_SQL_JSON : csv ? TA_SQL_CSV : TA_SQL_TABLE;
	if (ta_opts_need_dump(&p, o->dump))
		return 2;
	return -1;
}

/* Closes the database, then frees the columns its tables read: 0, or -1
 * when SQLite could not close it. */
static int close_db(struct loader *l)
{
	int rc = sqlite3_close(l->db) == SQLITE_OK ? 0 : -1;

	for (unsigned k = 0; k < TA_ROWS_NTABLES; k++)
		ta_sqlstore_free(l->store[k]);
	return rc;
}

/* Whether path is an SQLite database (its header's magic). */
static int is_database(const char *path)
{
	char magic[16];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, magic, sizeof(magic)) : -1;

	if (fd >= 0)
		close(fd);
	return n == (ssize_t)sizeof(magic) && !memcmp(magic, "SQLite format 3", 16);
}

/* The statements of standard input, or NULL (the message printed). */
static char *read_stdin(void)
{
	size_t len = 0, cap = 0;
	char *s = NULL;

	if (isatty(STDIN_FILENO))
		fprintf(stderr, "traceagent sql: reading statements until end of input (Ctrl-D)\n");
	for (;;) {
		size_t n;

		if (len + 4096 + 1 > cap) {
			char *t = ta_vec_reserve(s, len + 4096 + 1, &cap, 1, 65536);

			if (!t) {
				free(s);
				fprintf(stderr, "traceagent sql: out of memory\n");
				return NULL;
			}
			s = t;
		}
		n = fread(s + len, 1, cap - len - 1, stdin);
		len += n;
		if (n == 0)
			break;
	}
	if (ferror(stdin)) {
		fprintf(stderr, "traceagent sql: reading standard input: %s\n", strerror(errno));
		free(s);
		return NULL;
	}
	s[len] = 0;
	return s;
}

int ta_cmd_sql(int argc, char **argv)
{
	struct options o;
	struct loader l;
	struct stat st;
	char *input = NULL;
	int rc, status = 0, qs;

	rc = parse_args(argc, argv, &o);
	if (rc >= 0)
		return rc;
	memset(&l, 0, sizeof(l));
	l.path = o.dump;
	l.in_memory = !o.db;
	/* One thread uses SQLite here: no mutex around every call, no count
	 * of memory (a global mutex around every allocation). */
	sqlite3_config(SQLITE_CONFIG_SINGLETHREAD);
	sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
	if (is_database(o.dump)) {
		if (o.db || o.function || o.min_duration)
			return ta_usage_error("sql",
					      "%s is a database already: --db, --function "
					      "and --min-duration load a dump",
					      o.dump);
		if (sqlite3_open_v2(o.dump, &l.db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
			fprintf(stderr, "traceagent sql: %s: %s\n", o.dump,
				l.db ? sqlite3_errmsg(l.db) : "out of memory");
			sqlite3_close(l.db);
			return 2;
		}
	} else {
		if (o.db && stat(o.db, &st) == 0) {
			fprintf(
			    stderr,
			    "traceagent sql: %s: exists (remove it, or query it: traceagent sql "
			    "%s)\n",
			    o.db, o.db);
			return 2;
		}
		if (sqlite3_open_v2(o.db ? o.db : ":memory:", &l.db,
				    SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
				    NULL) != SQLITE_OK) {
			fprintf(stderr, "traceagent sql: %s: %s\n", o.db ? o.db : "memory",
				l.db ? sqlite3_errmsg(l.db) : "out of memory");
			sqlite3_close(l.db);
			return 2;
		}
		status = load(&l, &o);
		if (status >= 2) {
			close_db(&l);
			/* Nothing of the dump: no file to keep. */
			if (o.db)
				unlink(o.db);
			return status;
		}
	}
	if (!o.query && !(o.query = input = read_stdin())) {
		close_db(&l);
		return 1;
	}
	qs = ta_sql_run(l.db, o.query, o.form, stdout);
	if (qs > status)
		status = qs;
	free(input);
	if (close_db(&l) < 0 && o.db) {
		fprintf(stderr, "traceagent sql: %s: could not be closed\n", o.db);
		status = 1;
	}
	return status;
}
