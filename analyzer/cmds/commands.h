/* SPDX-License-Identifier: MIT */
/*
 * commands.h - the subcommands of the traceagent command.
 *
 * Each takes the arguments after its own name (argv[0] is the subcommand)
 * and returns the process exit status.  Only these front ends print
 * messages and choose exit codes; the layers below return TA_E_* codes.
 */
#ifndef TA_COMMANDS_H
#define TA_COMMANDS_H

#include <stdint.h>

int ta_cmd_record(int argc, char **argv);
/* record_args.c: TRACEAGENT_ARGS and TRACEAGENT_RETVAL for the program at
 * prog from --args, --retval and --auto-args (NULL: the environment's);
 * 0, or an exit status. */
int ta_record_args_env(const char *prog, const char *args, const char *retval, const char *autos);
int ta_cmd_attach(int argc, char **argv);
int ta_cmd_report(int argc, char **argv);
int ta_cmd_graph(int argc, char **argv);
int ta_cmd_replay(int argc, char **argv);
int ta_cmd_export(int argc, char **argv);
int ta_cmd_flame(int argc, char **argv);
int ta_cmd_diff(int argc, char **argv);
int ta_cmd_info(int argc, char **argv);
int ta_cmd_counters(int argc, char **argv);
int ta_cmd_frames(int argc, char **argv);
int ta_cmd_ctl(int argc, char **argv);
int ta_cmd_sql(int argc, char **argv);
int ta_cmd_serve(int argc, char **argv);
int ta_cmd_top(int argc, char **argv);

/* `report --frames DUMP` (report_frames.c): path names the dump in
 * messages; set and function (NULL: all) choose, top (0: all) cuts the
 * rows, json for one JSON object. */
/* report_args.c: report --args (an exit status). */
int ta_report_args(const char *dump, const char *function, uint64_t top, int json);
int ta_report_frames(const char *path, const char *dump, const char *set, const char *function,
		     uint64_t top, int json);

#endif
