/* SPDX-License-Identifier: MIT */
/*
 * cmdopts.h - the one option parser of the traceagent subcommands.
 *
 * Each command declares its options in a table (name, how it takes a
 * value, an id) and reads its arguments with ta_opts_next, one option or
 * positional word at a time, in the order given.  The parser owns what
 * every command says the same way: -h/--help, unknown options, "--",
 * which words are options, and the messages about the values of the
 * options several commands share (--tid, --pid, --top, --sort, a dump
 * given twice or not at all).  What a command does with each option, and
 * the checks between options, stay in the command.
 */
#ifndef TA_CMDOPTS_H
#define TA_CMDOPTS_H

#include <stdint.h>
#include <stdio.h>

/* How an option takes its value.  Every option that takes one takes it
 * as getopt_long does: "--name=VALUE" or "--name VALUE", "-oVALUE" or
 * "-o VALUE" (the next word, whatever it is).  No option's value is
 * optional, so a flag never takes the next word. */
enum ta_opt_arg {
	TA_ARG_NONE,  /* "--name" exactly: "--name=x" is an unknown option */
	TA_ARG_EQ,    /* a value: the same as TA_ARG_EITHER */
	TA_ARG_NEXT,  /* a value: the same, for a short option */
	TA_ARG_EITHER /* a value */
};

struct ta_opt {
	const char *name; /* with its dashes: "--json", "-o"; NULL ends a table */
	enum ta_opt_arg arg;
	int id; /* what ta_opts_next returns for it */
};

/* What ta_opts_next returns besides an option's id. */
#define TA_OPT_END  (-1) /* no more arguments (or, TA_OPTS_LEADING, no more options) */
#define TA_OPT_EXIT (-2) /* stop: the exit status is in status, the message was printed */
#define TA_OPT_ARG  0	 /* a word that is not an option, in val */

/* The ids of the options several commands share; a command numbers its
 * own from TA_OPT_OWN.  TID, TIME_RANGE, MIN_DURATION, DEPTH and FUNCTION
 * are also the filters timeline.h's ta_tlopts_take knows. */
enum {
	TA_OPT_JSON = 1,
	TA_OPT_CSV,
	TA_OPT_THREADS,
	TA_OPT_SRCLINE,
	TA_OPT_OUTPUT,
	TA_OPT_TID,
	TA_OPT_PID,
	TA_OPT_FUNCTION,
	TA_OPT_TOP,
	TA_OPT_SORT,
	TA_OPT_TIME_RANGE,
	TA_OPT_MIN_DURATION,
	TA_OPT_DEPTH,
	TA_OPT_DEMANGLE,
	TA_OPT_SYMFS,
	TA_OPT_DEBUG_DIR,
	/* --section NAME: every view the command opens limited to the time
	 * inside the program's section NAME; taken by ta_opts_next_into. */
	TA_OPT_SECTION = 48,
	TA_OPT_OWN = 64
};

/* Options only before the first word that is not one, as a loader's
 * before the program it runs: there ta_opts_next returns TA_OPT_END with
 * i at that word, or past a "--".  Every word that starts with '-' is an
 * option then, a lone "-" too. */
#define TA_OPTS_LEADING 1u

struct ta_opts {
	const char *cmd; /* messages start "traceagent CMD: " */
	const struct ta_opt *table;
	void (*usage)(FILE *f);
	unsigned flags; /* TA_OPTS_* */
	int argc;
	char **argv;
	int i;		 /* the next word */
	int only_args;	 /* after "--": every word is a positional one */
	int status;	 /* with TA_OPT_EXIT: 0 after --help, 2 after an error */
	const char *arg; /* the word returned: the option as given, or the positional word */
	const char *val; /* its value (NULL when it takes none), or the positional word */
	const struct ta_opt *opt; /* its table entry (NULL for TA_OPT_ARG) */
};

/* argv[0] is the command's name; the arguments start at argv[1]. */
void ta_opts_init(struct ta_opts *p, const char *cmd, const struct ta_opt *table,
		  void (*usage)(FILE *f), int argc, char **argv);
/*
 * The next argument: an option's id (its value in val), TA_OPT_ARG,
 * TA_OPT_END, or TA_OPT_EXIT after -h or --help (the usage on stdout,
 * status 0), an unknown option or one whose value is missing (one line on
 * stderr, ta_usage_error's, status 2).
 */
int ta_opts_next(struct ta_opts *p);

/* A usage error of command cmd: "traceagent CMD: WHAT; try 'traceagent
 * CMD --help'", one line on stderr.  Returns 2, the usage status. */
int ta_usage_error(const char *cmd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- the shared values; each returns 0, or 2 (the usage status) after
 * printing why the value is refused ---- */

/* "traceagent CMD: NAME: 'VALUE' WHY". */
int ta_opts_bad(const struct ta_opts *p, const char *why);
/* A whole decimal number (digits only, no overflow). */
int ta_opts_u64(const struct ta_opts *p, const char *why, uint64_t *n);
/* --top: a whole decimal number above 0. */
int ta_opts_top(const struct ta_opts *p, uint64_t *n);

/* --sort's keys (report, diff). */
enum ta_sort_key { TA_SORT_TOTAL, TA_SORT_SELF, TA_SORT_CALLS, TA_SORT_NAME };
int ta_opts_sort(const struct ta_opts *p, enum ta_sort_key *key);
/* One of keys (NULL ends them): *k is its index; refused as "is not A, B
 * or C". */
int ta_opts_choice(const struct ta_opts *p, const char *const *keys, int *k);

/* --demangle: simple, full or no, *mode its index (symbols.h's enum
 * ta_demangle). */
int ta_opts_demangle(const struct ta_opts *p, int *mode);

/* --symfs=DIR and --debug-dir=DIR (repeatable): where the files with the
 * modules' names and source lines are looked for (symfind.h). */
int ta_opts_symfind(const struct ta_opts *p);

/* The positional word as the dump of a command that takes one: refused
 * ("one dump at a time") when *path is set already. */
int ta_opts_dump(const struct ta_opts *p, const char **path);
/* After the arguments: 0 when path is set, else 2 after "no dump given"
 * (ta_usage_error). */
int ta_opts_need_dump(const struct ta_opts *p, const char *path);

/* ---- the shared options read the same way by every command ---- */

/*
 * Where ta_opts_next_into puts the shared options: a NULL target leaves its
 * option to the command, which gets its id (as replay's --function, a
 * filter of its timeline, or top's --sort, with keys of its own).
 */
struct ta_opts_into {
	int *demangle;			 /* --demangle's mode (ta_opts_demangle) */
	const char **dump;		 /* the positional word, the one dump (ta_opts_dump) */
	int *json, *csv, *threads;	 /* set to 1 */
	int *srcline;			 /* set to 1; refused by a build without source lines */
	const char **output, **function; /* the value */
	uint64_t *top;			 /* ta_opts_top */
	enum ta_sort_key *sort;		 /* ta_opts_sort */
};

/* ta_opts_next, with the options into has a target for stored there
 * instead of returned; TA_OPT_EXIT (status 2) after refusing one's value. */
int ta_opts_next_into(struct ta_opts *p, const struct ta_opts_into *into);

#endif /* TA_CMDOPTS_H */
