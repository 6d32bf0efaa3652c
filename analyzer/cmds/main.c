/* SPDX-License-Identifier: MIT */
/*
 * main.c - the traceagent command: dispatches to one subcommand per file.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "manpage.h"
#include "ta_config.h"

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
} commands[] = {
    {"record", ta_cmd_record, "run a program with the agent preloaded"},
    {"attach", ta_cmd_attach, "trace a running process for a while, then leave it"},
    {"report", ta_cmd_report, "per-function calls and times of a dump"},
    {"graph", ta_cmd_graph, "the call tree by call path"},
    {"replay", ta_cmd_replay, "the timeline of calls per thread"},
    {"export", ta_cmd_export, "Chrome trace JSON, Perfetto, pprof or folded stacks"},
    {"flame", ta_cmd_flame, "an SVG flame graph"},
    {"diff", ta_cmd_diff, "per-function changes between two dumps"},
    {"info", ta_cmd_info, "what a dump holds: process, threads, modules, clock"},
    {"counters", ta_cmd_counters, "the manual API's counters: numbers and plots"},
    {"frames", ta_cmd_frames, "frame times and hitches of the frame marks"},
    {"serve", ta_cmd_serve, "collect the dumps traced programs stream to it"},
    {"top", ta_cmd_top, "a live view of a running program or a growing dump"},
    {"ctl", ta_cmd_ctl, "control a traced process: pause, resume, flush, status, stream"},
    {"sql", ta_cmd_sql, "questions to a dump in SQL (SQLite)"},
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

/* The pages that are not a command's: `traceagent help settings`. */
static const struct {
	const char *name, *page, *section;
} topics[] = {
    {"settings", "traceagent-settings", "7"},
    {"api", "traceagent-api", "3"},
    {"symbols", "traceagent-symbols", "7"},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: traceagent COMMAND [OPTIONS] ...\n"
		   "       traceagent help [COMMAND]\n"
		   "       traceagent --help | --version\n\ncommands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++)
		fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "  %-8s %s\n", "help",
		"the manual page of traceagent or of COMMAND (also: settings, api)");
	fprintf(f, "\n"
		   "  -h, --help  this list\n"
		   "  --version   the version of traceagent\n"
		   "\n'traceagent COMMAND --help' tells more; 'traceagent help COMMAND' shows its\n"
		   "manual page.\n");
}

/*
 * traceagent help [COMMAND]: the man page of traceagent(1), of
 * traceagent-COMMAND(1), or of a topic.  Without man or the page (a build
 * without pandoc), the command's --help, after one line saying why.
 */
static int help(int argc, char **argv)
{
	char why[PATH_MAX * 2 + 256], page[64];
	const char *name = argc > 1 ? argv[1] : NULL;
	int r;

	if (argc > 2) {
		fprintf(stderr, "traceagent help: one COMMAND at most, not '%s'\n", argv[2]);
		return 2;
	}
	if (!name) {
		r = ta_man_show("traceagent", "1", why, sizeof(why));
		if (r >= 0)
			return r;
		fprintf(stderr, "traceagent help: %s; 'traceagent --help' follows\n", why);
		usage(stdout);
		return 0;
	}
	if (!strcmp(name, "-h") || !strcmp(name, "--help")) {
		printf("usage: traceagent help [COMMAND]\n\n"
		       "The manual page of traceagent, or of COMMAND (record, report, ...),\n"
		       "settings (the TRACEAGENT_* variables) or api (traceagent.h), shown\n"
		       "with man -l.  Without man or the page: the command's --help.\n");
		return 0;
	}
	for (size_t i = 0; i < sizeof(topics) / sizeof(topics[0]); i++) {
		if (strcmp(name, topics[i].name))
			continue;
		r = ta_man_show(topics[i].page, topics[i].section, why, sizeof(why));
		if (r >= 0)
			return r;
		fprintf(stderr, "traceagent help: %s; it is docs/%s.md in the sources\n", why,
			topics[i].page);
		return 1;
	}
	for (size_t i = 0; i < NCOMMANDS; i++) {
		char *args[] = {argv[1], page, NULL};

		if (strcmp(name, commands[i].name))
			continue;
		snprintf(page, sizeof(page), "traceagent-%s", name);
		r = ta_man_show(page, "1", why, sizeof(why));
		if (r >= 0)
			return r;
		fprintf(stderr, "traceagent help: %s; 'traceagent %s --help' follows\n", why, name);
		snprintf(page, sizeof(page), "--help");
		return commands[i].run(2, args);
	}
	fprintf(stderr, "traceagent help: unknown command '%s'; try 'traceagent --help'\n", name);
	return 2;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "help"))
		return help(argc - 1, argv + 1);
	if (!strcmp(argv[1], "--version")) {
		printf("traceagent %s\n", TA_VERSION);
		return 0;
	}
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "traceagent: unknown command '%s'; try 'traceagent --help'\n", argv[1]);
	return 2;
}
