/* SPDX-License-Identifier: MIT */
/*
 * main.c - the traceagent command: dispatches to one subcommand per file.
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"
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
};

static void usage(FILE *f)
{
	fprintf(f, "usage: traceagent COMMAND [OPTIONS] ...\n"
		   "       traceagent --help | --version\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\n"
		   "  -h, --help  this list (also 'traceagent help')\n"
		   "  --version   the version of traceagent\n"
		   "\n'traceagent COMMAND --help' tells more.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("traceagent %s\n", TA_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "traceagent: unknown command '%s'\n", argv[1]);
	usage(stderr);
	return 2;
}
