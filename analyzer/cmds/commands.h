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

#include <stddef.h>
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

/*
 * report_fibers.c: report's rows per fiber.  Reads them from the dumps
 * paths[0..n) in a pass of their own when a process of the view's session
 * described a fiber's site (else *out is NULL; and for a pipe, which it
 * says on stderr); tid (NULL: all) counts one thread's runs
 * and calls.  0, or -1 without memory; free *out either way.
 */
struct ta_rfibers;
struct ta_session;
int ta_report_fibers_read(const char *const *paths, size_t n, const struct ta_session *view,
			  const uint64_t *tid, struct ta_rfibers **out);
/* The rows as a table under a blank line (nothing without a row), or a
 * JSON array; pid (NULL: all) chooses the fibers of one process. */
void ta_report_fibers_text(const struct ta_rfibers *rf, const uint64_t *pid);
void ta_report_fibers_json(const struct ta_rfibers *rf, const uint64_t *pid);
void ta_report_fibers_free(struct ta_rfibers *rf);

#endif
