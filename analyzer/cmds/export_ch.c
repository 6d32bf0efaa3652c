/* SPDX-License-Identifier: MIT */
/*
 * export_ch.c - `traceagent export --format=clickhouse URL DUMP`: a dump's
 * rows inserted into ClickHouse (analyzer/lib/chsink.c), the same tables
 * `traceagent serve --clickhouse` fills; and `--schema`, the tables'
 * definitions (sql/clickhouse/ ships them).  Its own options: export.c
 * hands it the command line when the format is clickhouse.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chsink.h"
#include "cmdopts.h"
#include "commands.h"
#include "common.h"
#include "export_int.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: traceagent export --format=clickhouse [--host NAME] [--recording ID]\n"
		"                         [--clickhouse-credentials FILE] URL DUMP\n"
		"       traceagent export --format=clickhouse --schema [--cluster NAME]\n"
		"\n"
		"Inserts the dump's rows into ClickHouse's tables (process, thread, slice,\n"
		"function_stats...; docs/clickhouse.md) through its HTTP interface at URL,\n"
		"http://HOST[:PORT][/?SETTINGS] (port 8123 by default; settings such as\n"
		"database=NAME or insert_distributed_sync=1 pass through).\n"
		"\n"
		"  --host NAME           the host column (default: this host's name)\n"
		"  --recording ID        the recording column (default: the dump's file\n"
		"                        name without .trace)\n"
		"  --clickhouse-credentials FILE\n"
		"                        user=NAME and password=SECRET lines (never on the\n"
		"                        command line)\n"
		"  --schema              print the CREATE TABLE statements instead\n"
		"  --cluster NAME        with --schema: NAME_local MergeTree tables for each\n"
		"                        shard and Distributed tables over them in cluster NAME\n"
		"\n"
		"Exit status: 0 for a whole dump, 1 for a damaged or incomplete one (its\n"
		"readable rows inserted), 2 for usage errors or a dump that cannot be read,\n"
		"3 when ClickHouse cannot be reached, 4 when it refuses an insert.\n");
}

enum { O_FORMAT = TA_OPT_OWN, O_HOST, O_RECORDING, O_CREDS, O_SCHEMA, O_CLUSTER };

static const struct ta_opt opts[] = {
    {"--format", TA_ARG_EQ, O_FORMAT},
    {"--host", TA_ARG_EITHER, O_HOST},
    {"--recording", TA_ARG_EITHER, O_RECORDING},
    {"--clickhouse-credentials", TA_ARG_EITHER, O_CREDS},
    {"--schema", TA_ARG_NONE, O_SCHEMA},
    {"--cluster", TA_ARG_EITHER, O_CLUSTER},
    {NULL, TA_ARG_NONE, 0},
};

int ta_export_is_clickhouse(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		if (!strcmp(argv[i], "--format=clickhouse") ||
		    (!strcmp(argv[i], "--format") && i + 1 < argc &&
		     !strcmp(argv[i + 1], "clickhouse")))
			return 1;
	}
	return 0;
}

/* A name for the host and recording columns: what identifies, printable. */
static int check_name(const char *what, const char *s)
{
	if (!*s || strlen(s) > 200) {
		ta_usage_error("export", "%s must be 1 to 200 characters", what);
		return -1;
	}
	for (const char *c = s; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f) {
			ta_usage_error("export", "%s has a control character", what);
			return -1;
		}
	return 0;
}

int ta_export_clickhouse(int argc, char **argv)
{
	const char *url = NULL, *dump = NULL, *host = NULL, *recording = NULL, *creds = NULL;
	const char *cluster = NULL, *why;
	char hostbuf[256], recbuf[256], err[600];
	struct ta_rows_counts counts;
	struct ta_ch_auth auth;
	struct ta_ch_url u;
	struct ta_opts p;
	int id, schema = 0, status;

	ta_opts_init(&p, "export", opts, usage, argc, argv);
	while ((id = ta_opts_next(&p)) != TA_OPT_END) {
		switch (id) {
		case TA_OPT_EXIT:
			return p.status;
		case TA_OPT_ARG:
			if (!url)
				url = p.val;
			else if (!dump)
				dump = p.val;
			else {
				ta_usage_error("export", "unexpected argument '%s'", p.val);
				return 2;
			}
			break;
		case O_FORMAT:
			break;
		case O_HOST:
			host = p.val;
			break;
		case O_RECORDING:
			recording = p.val;
			break;
		case O_CREDS:
			creds = p.val;
			break;
		case O_SCHEMA:
			schema = 1;
			break;
		case O_CLUSTER:
			cluster = p.val;
			break;
		}
	}
	if (cluster &&
	    (!schema || !*cluster ||
	     strspn(cluster, "abcdefghijklmnopqrstuvwxyz"
			     "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_") != strlen(cluster))) {
		ta_usage_error("export", "--cluster takes a name (letters, digits, _) and goes "
					 "with --schema");
		return 2;
	}
	if (schema) {
		if (url) {
			ta_usage_error("export", "--schema takes no URL or dump");
			return 2;
		}
		ta_ch_schema(stdout, cluster);
		return fflush(stdout) ? 1 : 0;
	}
	if (!url || !dump) {
		ta_usage_error("export", "--format=clickhouse needs a URL and a dump");
		return 2;
	}
	if (ta_ch_url_parse(url, &u, &why) < 0) {
		ta_usage_error("export", "'%s' %s", url, why);
		return 2;
	}
	memset(&auth, 0, sizeof(auth));
	if (creds && ta_ch_auth_load(creds, &auth, err, sizeof(err)) < 0) {
		fprintf(stderr, "traceagent export: --clickhouse-credentials %s\n", err);
		return 2;
	}
	if (!host) {
		if (gethostname(hostbuf, sizeof(hostbuf)) < 0)
			strcpy(hostbuf, "localhost");
		hostbuf[sizeof(hostbuf) - 1] = 0;
		host = hostbuf;
	}
	if (!recording) {
		const char *base = strrchr(dump, '/');
		size_t n;

		base = base ? base + 1 : dump;
		n = strlen(base);
		if (n > 6 && !strcmp(base + n - 6, ".trace"))
			n -= 6;
		snprintf(recbuf, sizeof(recbuf), "%.*s", (int)(n < 255 ? n : 255), base);
		recording = recbuf;
	}
	if (check_name("--host", host) < 0 || check_name("--recording", recording) < 0)
		return 2;
	if (access(dump, R_OK) < 0) {
		fprintf(stderr, "traceagent: %s: %s\n", dump, strerror(errno));
		return 2;
	}
	ta_view_set_demangle(-1, 1);
	status = ta_ch_insert_dump(&u, &auth, dump, host, recording, &counts, err, sizeof(err));
	memset(&auth, 0, sizeof(auth));
	if (status == TA_CH_EXIT_DOWN || status == TA_CH_EXIT_REFUSED) {
		fprintf(stderr, "traceagent export: ClickHouse at %s %s: %s\n", url,
			status == TA_CH_EXIT_DOWN ? "cannot be reached" : "refused an insert", err);
		return status;
	}
	if (status < 2)
		printf("traceagent export: %s into ClickHouse at %s (host %s, recording %s): "
		       "%" PRIu64 " slices, %" PRIu64 " functions, %" PRIu64 " thread%s\n",
		       dump, url, host, recording, counts.rows[TA_ROWS_SLICE],
		       counts.rows[TA_ROWS_FUNCTION_STATS], counts.rows[TA_ROWS_THREAD],
		       counts.rows[TA_ROWS_THREAD] == 1 ? "" : "s");
	return status;
}
