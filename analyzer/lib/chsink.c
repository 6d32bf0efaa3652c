/* SPDX-License-Identifier: MIT */
/*
 * chsink.c - tracerows' rows into ClickHouse (chsink.h).
 *
 * Each table's rows are TabSeparated lines in a buffer of their own, sent
 * as one INSERT when it passes TA_CH_BATCH and at the end.  A batch that
 * finds ClickHouse down is tried again twice (0.25 s, then 1 s later),
 * then the walk stops and says so: the caller keeps the dump and tries
 * later.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "chsink.h"
#include "grow.h"

int ta_ch_auth_load(const char *path, struct ta_ch_auth *a, char *why, size_t why_size)
{
	FILE *f = fopen(path, "re");
	char line[512];
	int ln = 0;

	memset(a, 0, sizeof(*a));
	if (!f) {
		snprintf(why, why_size, "%s: %s", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		size_t n = strlen(line);
		char *v;

		ln++;
		while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = 0;
		if (!n || line[0] == '#')
			continue;
		v = strchr(line, '=');
		if (v)
			*v++ = 0;
		if (v && !strcmp(line, "user") && strlen(v) < sizeof(a->user)) {
			strcpy(a->user, v);
		} else if (v && !strcmp(line, "password") && strlen(v) < sizeof(a->password)) {
			strcpy(a->password, v);
		} else {
			snprintf(why, why_size,
				 "%s:%d: not a user=NAME or password=SECRET line (or too long)",
				 path, ln);
			memset(line, 0, sizeof(line));
			memset(a, 0, sizeof(*a));
			fclose(f);
			return -1;
		}
	}
	memset(line, 0, sizeof(line));
	fclose(f);
	if (!a->user[0] && a->password[0]) {
		snprintf(why, why_size, "%s: a password without a user= line", path);
		return -1;
	}
	return 0;
}

/* ---- the tables ---------------------------------------------------------------- */

static int has_col(const struct ta_rows_table *t, const char *name)
{
	for (unsigned i = 0; i < t->ncols; i++)
		if (!strcmp(t->cols[i].name, name))
			return 1;
	return 0;
}

/* ORDER BY: a process's rows together and in time where they have both
 * (host, pid, ts), else by recording and what identifies a row. */
static void order_by(FILE *f, const struct ta_rows_table *t)
{
	if (has_col(t, "pid") && has_col(t, "ts"))
		fputs("(host, pid, ts)", f);
	else if (has_col(t, "pid"))
		fputs("(host, pid)", f);
	else if (has_col(t, "ts"))
		fputs("(host, recording, ts)", f);
	else if (has_col(t, "tid"))
		fputs("(host, recording, tid)", f);
	else if (has_col(t, "id"))
		fputs("(host, recording, id)", f);
	else if (has_col(t, "arg_set_id"))
		fputs("(host, recording, arg_set_id)", f);
	else if (has_col(t, "name"))
		fputs("(host, recording, name)", f);
	else
		fputs("(host, recording)", f);
}

static void columns(FILE *f, const struct ta_rows_table *t)
{
	static const char *const types[] = {"Int64", "Float64", "String"};

	fputs("    host String,\n    recording String", f);
	for (unsigned i = 0; i < t->ncols; i++) {
		const struct ta_rows_column *c = &t->cols[i];

		if (c->nullable)
			fprintf(f, ",\n    `%s` Nullable(%s)", c->name, types[c->type]);
		else
			fprintf(f, ",\n    `%s` %s", c->name, types[c->type]);
	}
}

void ta_ch_schema(FILE *f, const char *cluster)
{
	fprintf(f,
		"-- traceagent's tables in ClickHouse (18.16 and later), as `traceagent export\n"
		"-- --format=clickhouse --schema%s%s` prints them (docs/clickhouse.md).\n",
		cluster ? " --cluster " : "", cluster ? cluster : "");
	if (cluster)
		fprintf(f,
			"-- Run on every shard of the cluster %s (remote_servers in each server's\n"
			"-- config): NAME_local holds the shard's rows, NAME reads and inserts\n"
			"-- through all shards.\n",
			cluster);
	fputs("\n", f);
	for (unsigned k = 0; k < TA_ROWS_NTABLES; k++) {
		const struct ta_rows_table *t = &ta_rows_tables[k];

		fprintf(f, "-- %s: %s.\nCREATE TABLE IF NOT EXISTS %s%s\n(\n", t->name, t->about,
			t->name, cluster ? "_local" : "");
		columns(f, t);
		fputs("\n)\nENGINE = MergeTree\nORDER BY ", f);
		order_by(f, t);
		fputs(";\n\n", f);
		if (!cluster)
			continue;
		/* A recording's rows on one shard: a query of one recording
		 * reads one shard, and its ids stay together. */
		fprintf(f,
			"CREATE TABLE IF NOT EXISTS %s AS %s_local\nENGINE = Distributed(%s, "
			"currentDatabase(), %s_local, cityHash64(host, recording));\n\n",
			t->name, t->name, cluster, t->name);
	}
}

/* ---- the rows ---------------------------------------------------------------- */

struct chs {
	const struct ta_ch_url *u;
	const struct ta_ch_auth *a;
	const char *host, *recording;
	struct ta_buf buf[TA_ROWS_NTABLES];
	uint64_t rows[TA_ROWS_NTABLES]; /* in buf, not sent yet */
	uint64_t sent[TA_ROWS_NTABLES];
	int status; /* 0, or the TA_CH_EXIT_* that stopped it */
	char *why;
	size_t why_size;
};

static void put_text(struct ta_buf *b, const char *s)
{
	for (; *s; s++) {
		char esc = 0;

		switch (*s) {
		case '\\':
			esc = '\\';
			break;
		case '\t':
			esc = 't';
			break;
		case '\n':
			esc = 'n';
			break;
		case '\r':
			esc = 'r';
			break;
		default:
			break;
		}
		if (esc) {
			ta_buf_put(b, "\\", 1);
			ta_buf_put(b, &esc, 1);
		} else {
			ta_buf_put(b, s, 1);
		}
	}
}

static int send_batch(struct chs *c, const struct ta_rows_table *t)
{
	struct ta_buf *b = &c->buf[t->id];
	char *sql;
	size_t cap = 128 + 40 * (size_t)t->ncols + strlen(t->name);
	int r = TA_CH_DOWN;

	if (!c->rows[t->id])
		return 0;
	if (b->oom) {
		snprintf(c->why, c->why_size, "out of memory for a batch of %s", t->name);
		c->status = TA_CH_EXIT_REFUSED;
		return -1;
	}
	sql = malloc(cap);
	if (!sql) {
		snprintf(c->why, c->why_size, "out of memory");
		c->status = TA_CH_EXIT_REFUSED;
		return -1;
	}
	{
		size_t o = (size_t)snprintf(sql, cap, "INSERT INTO %s (host, recording", t->name);

		for (unsigned i = 0; i < t->ncols; i++)
			o += (size_t)snprintf(sql + o, cap - o, ", `%s`", t->cols[i].name);
		snprintf(sql + o, cap - o, ") FORMAT TabSeparated");
	}
	for (int attempt = 0; attempt < 3; attempt++) {
		static const struct timespec wait[] = {{0, 250000000}, {1, 0}};

		if (attempt)
			nanosleep(&wait[attempt - 1], NULL);
		r = ta_ch_post(c->u, c->a, sql, b->p, b->len, TA_CH_TIMEOUT_MS, NULL, 0, c->why,
			       c->why_size);
		if (r != TA_CH_DOWN)
			break;
	}
	free(sql);
	if (r != TA_CH_OK) {
		c->status = r == TA_CH_DOWN ? TA_CH_EXIT_DOWN : TA_CH_EXIT_REFUSED;
		return -1;
	}
	c->sent[t->id] += c->rows[t->id];
	c->rows[t->id] = 0;
	b->len = 0;
	return 0;
}

static int on_table(void *ctx, const struct ta_rows_table *t)
{
	(void)ctx;
	(void)t;
	return 0;
}

static int on_row(void *ctx, const struct ta_rows_table *t, const struct ta_rows_cell *cells)
{
	struct chs *c = ctx;
	struct ta_buf *b = &c->buf[t->id];
	char num[40];

	put_text(b, c->host);
	ta_buf_put(b, "\t", 1);
	put_text(b, c->recording);
	for (unsigned i = 0; i < t->ncols; i++) {
		const struct ta_rows_cell *v = &cells[i];
		int n;

		ta_buf_put(b, "\t", 1);
		if (v->null) {
			ta_buf_put(b, "\\N", 2);
			continue;
		}
		switch (t->cols[i].type) {
		case TA_ROWS_INT:
			n = snprintf(num, sizeof(num), "%" PRId64, v->i);
			ta_buf_put(b, num, (size_t)n);
			break;
		case TA_ROWS_DOUBLE:
			if (isnan(v->d))
				n = snprintf(num, sizeof(num), "nan");
			else if (isinf(v->d))
				n = snprintf(num, sizeof(num), v->d < 0 ? "-inf" : "inf");
			else
				n = snprintf(num, sizeof(num), "%.17g", v->d);
			ta_buf_put(b, num, (size_t)n);
			break;
		case TA_ROWS_TEXT:
			put_text(b, v->s ? v->s : "");
			break;
		}
	}
	ta_buf_put(b, "\n", 1);
	c->rows[t->id]++;
	if (b->len >= TA_CH_BATCH || b->oom)
		return send_batch(c, t) < 0;
	return 0;
}

int ta_ch_insert_dump(const struct ta_ch_url *u, const struct ta_ch_auth *a, const char *path,
		      const char *host, const char *recording, struct ta_rows_counts *counts,
		      char *why, size_t why_size)
{
	struct chs c;
	struct ta_rows_sink sink = {&c, on_table, on_row};
	int status;

	memset(&c, 0, sizeof(c));
	c.u = u;
	c.a = a;
	c.host = host;
	c.recording = recording;
	c.why = why;
	c.why_size = why_size;
	for (unsigned k = 0; k < TA_ROWS_NTABLES; k++)
		c.buf[k].max = 2 * (size_t)TA_CH_BATCH;
	status = ta_rows_walk(path, NULL, &sink, NULL);
	for (unsigned k = 0; !c.status && status < 2 && k < TA_ROWS_NTABLES; k++)
		send_batch(&c, &ta_rows_tables[k]);
	for (unsigned k = 0; k < TA_ROWS_NTABLES; k++) {
		ta_buf_free(&c.buf[k]);
		if (counts)
			counts->rows[k] = c.sent[k];
	}
	return c.status ? c.status : status;
}
