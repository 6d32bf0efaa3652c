/* SPDX-License-Identifier: MIT */
/*
 * common.h - what every analysis command shares: opening a dump as a
 * session with the standard error messages, naming functions, and the
 * text and JSON formatting of times and strings.
 */
#ifndef TA_COMMON_H
#define TA_COMMON_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "htab.h"
#include "session.h"
#include "symbols.h"

/* A dump opened for a command. */
struct ta_view {
	const char *path;
	struct ta_session *s;
	struct ta_resolver *res;
	/* Set when the file could not be read to its end: the one-line
	 * reason, without the "traceagent: PATH: " prefix. */
	char fatal[256];
	/* The view printed the filters' line itself (on stdout):
	 * ta_view_warnings leaves it out. */
	int filters_shown;
	/* The view counts exits without a recorded entry as partial calls
	 * (report's table): ta_view_warnings says so, not that they were
	 * ignored. */
	int partial_counted;
	/* Exit status so far: 0, 1 (damaged or truncated), 2 (unreadable). */
	int status;
	/* How C++ names are shown: ta_view_set_demangle's, when opened. */
	enum ta_demangle demangle;
	uint64_t events, lost; /* totals over threads and processes */
	/* Of lost: events of threads that never got a ring (drop mode with
	 * the pool empty when they started), which the END chunk counts but
	 * no thread does. */
	uint64_t lost_no_ring;
	/* Of lost, by cause as the processes' END chunks say (format.h's
	 * TA_LOST_*; the last entry: causes of a later format version). */
	uint64_t lost_by[TA_LOST_NCAUSES + 1];
	/* Names made up for addresses outside every module. */
	char **own;
	size_t nown, own_cap;
	/* --section's stretches and clipping visitor (section.h), or NULL. */
	struct ta_section *section;
};

/*
 * Reads the whole dump at path through the visitor vis (may be NULL),
 * finishes the session, and prints each error found on stderr.  Returns 0
 * when there is something to show (check v->status for damage), or -1 when
 * there is not (v->status says the exit code; the message was printed).
 */
int ta_view_open(struct ta_view *v, const char *path, const struct ta_visitor *vis);
/* The same for n dumps read into one session, their processes side by
 * side as those of one dump; label names them in messages (v->path).  A
 * file of several that is not a dump is refused (-1, status 2). */
int ta_view_open_many(struct ta_view *v, const char *const *paths, size_t n, const char *label,
		      const struct ta_visitor *vis);
void ta_view_close(struct ta_view *v);
/* How the views opened from now on name C++ functions: asked, --demangle's
 * mode (symbols.h's enum ta_demangle), or -1 when none was given: then
 * short names in what a reader reads, whole ones where a tool reads the
 * output (tool: JSON, CSV, an export).  TA_DEMANGLE_FULL until set. */
void ta_view_set_demangle(int asked, int tool);
/* Applies it to v and its resolver, for a view opened by other means
 * than ta_view_open. */
void ta_view_naming(struct ta_view *v);

/* Says on stderr what the numbers do not: loss, repairs, guesses, modules
 * without symbols.  Call after naming (it lists symbol failures). */
void ta_view_warnings(struct ta_view *v);

void ta_view_warn(const struct ta_view *v, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* The text of one error, without the "traceagent: FILE: " prefix. */
void ta_error_text(char *buf, size_t n, const struct ta_session_error *e);

/* Why the dump is not whole and finished (a static string), or NULL when
 * it is: the file could not be read to its end, or ta_session_incomplete. */
const char *ta_view_incomplete(const struct ta_view *v);
/* The JSON array of the dump's errors: the fatal one, each one found, and
 * "N more errors" for those not kept. */
void ta_json_errors(FILE *f, const struct ta_view *v);

/*
 * A function or zone: what it is (its module and offset; the name, for an
 * address outside every module) and the names the views show.  The one
 * record of a function: every table and aggregate of functions embeds it
 * (as its member id) or refers to a table of them by index.
 */
struct ta_fn {
	/* demangled (as the view's demangle says), or "module+0xOFFSET", or
	 * "0xADDR" */
	const char *name;
	const char *full;   /* the whole demangled name (name when not C++) */
	const char *module; /* module path, "" when no module holds it */
	uint64_t offset;    /* symbol value (address - bias), or the address */
	const char *where;  /* a zone's "file:line" (its site's), else NULL */
	/* "file:line" from the debug information, for the views that show it
	 * (--srcline) and once they filled it, else NULL */
	const char *srcline;
};

/* The module of a library call's zone (an interposed function, named by
 * the LIBCALLS chunk): the marker every view shows for them.  Its offset
 * is the function's index in the chunk. */
#define TA_LIBCALL_MODULE "[libcall]"
static inline int ta_fn_is_libcall(const struct ta_fn *f)
{
	return f->module[0] == '[' && !strcmp(f->module, TA_LIBCALL_MODULE);
}

/* The module of a zone of the manual API (its offset: the site's id, the
 * same in every process). */
#define TA_ZONE_MODULE "[zone]"
static inline int ta_fn_is_zone(const struct ta_fn *f)
{
	return f->module[0] == '[' && !strcmp(f->module, TA_ZONE_MODULE);
}

/* The module of the agent's own time (TA_WAIT_KEY's frames, named
 * TA_WAIT_NAME): not the program's. */
#define TA_AGENT_MODULE "[traceagent]"
static inline int ta_fn_is_agent(const struct ta_fn *f)
{
	return f->module[0] == '[' && !strcmp(f->module, TA_AGENT_MODULE);
}

/* Names the function at addr in process pid.  Never fails: the strings
 * live as long as the view. */
void ta_view_name(struct ta_view *v, uint32_t pid, uint64_t addr, struct ta_fn *out);
/* Whether --function's glob matches the function: its name as shown, or
 * its whole demangled name (so "*(int)" finds an overload in a view that
 * shows short names). */
int ta_fn_glob(const char *glob, const struct ta_fn *id);

/* A function calling itself more than this many levels deep is shown as
 * one "NAME [xN]" by the views that print call paths (graph, folded,
 * flame, pprof, info's open calls), so that their output stays linear in
 * the events however deep the recursion. */
#define TA_RUN_MAX 64

/* ---- per-function tables (report, diff) ---- */

/* One function's numbers over the activations a table took, in ns. */
struct ta_prof_row {
	struct ta_fn id;
	uint64_t calls, open, total, self, min, max, sum;
	/* Of calls: not open, but with only part of their time known (already
	 * running when the dump began, or where chunks were lost).  Neither
	 * these nor the open ones are in min, max, avg or the percentiles;
	 * their known part is in total and self. */
	uint64_t partial;
	uint64_t unwound; /* activations left by a longjmp or an exception */
	uint64_t shorts;  /* of calls: left out by the agent's minimum duration
			     (no times: min, max, sum and the percentiles are
			     the others') */
	/* Nearest-rank percentiles of the activations' durations, from the
	 * profile's histograms (0 when it kept none). */
	uint64_t p50, p90, p99;
	uint32_t first; /* internal: first ta_fstat taken (index + 1) */
};

/* The calls whose whole time is known: not left out, not open, not
 * partial. */
static inline uint64_t ta_prof_row_timed(const struct ta_prof_row *w)
{
	uint64_t untimed = w->shorts + w->open + w->partial;

	return w->calls > untimed ? w->calls - untimed : 0;
}

/* The mean of the calls whose whole time is known. */
static inline uint64_t ta_prof_row_avg(const struct ta_prof_row *w)
{
	return ta_prof_row_timed(w) ? w->sum / ta_prof_row_timed(w) : 0;
}

struct ta_prof_table {
	struct ta_prof_row *rows;
	size_t n, cap;
	struct ta_htab by_fn; /* rows by function (module, offset) */
	uint32_t *next;	      /* per ta_fstat: the next one of its row (index + 1) */
};

/* Names every function of prof: an array parallel to prof->f (free it), or
 * NULL without memory. */
struct ta_fn *ta_view_name_profile(struct ta_view *v, const struct ta_profile *prof);

/*
 * Merges the per-thread numbers of prof, named by *names (an array parallel
 * to prof->f; named first by ta_view_name_profile when *names is NULL: free
 * it), into one row per function (module and offset, so a function of a
 * forked program is one row), converting ticks to ns with each process's
 * clock.  keep (may be NULL) chooses the ta_fstat entries taken.  Returns
 * 0, or -1 without memory; free t with ta_prof_table_free either way.
 */
int ta_prof_table_build(struct ta_prof_table *t, struct ta_view *v, const struct ta_profile *prof,
			struct ta_fn **names,
			int (*keep)(void *ctx, const struct ta_fstat *f, const struct ta_fn *id),
			void *ctx);
void ta_prof_table_free(struct ta_prof_table *t);

/* Lost events of a thread: what it counted, or what its end said. */
uint64_t ta_thread_lost(const struct ta_sess_thread *t);
/* "nested 72, stopped 3": the nonzero counts of by (TA_LOST_NCAUSES + 1
 * entries, the last "other") into buf; "" when all are 0. */
const char *ta_fmt_lost_by(char *buf, size_t n, const uint64_t *by);
/* The same as a JSON object of every cause, "other" only when nonzero. */
void ta_print_lost_by_json(const uint64_t *by);
/* Events process p lost in threads that never got a ring: its END total
 * less what its threads count. */
uint64_t ta_process_lost_no_ring(const struct ta_session *s, const struct ta_process *p);
/* From the first to the last time seen in any process. */
uint64_t ta_session_duration_ns(const struct ta_session *s);

/* The filters a dump was recorded with (FILTER chunk, since 1.7): the
 * first process's that has one, or NULL for a whole profile. */
const struct ta_filter_info *ta_session_filters(const struct ta_session *s);
/* A KEEP chunk as the views' JSON object "keep". */
void ta_keep_json(FILE *out, const struct ta_keep_info *k);
/* "filter=work,!noise, exclude=hash, depth=3, min-duration=10us" (the
 * settings in force) into buf. */
const char *ta_fmt_filters(char *buf, size_t n, const struct ta_filter_info *f);
/* {"filter": ..., "exclude": ..., "depth": N, "min_duration_ns": N}, or
 * null when f is. */
void ta_print_filters_json(FILE *out, const struct ta_filter_info *f);
/* The line the text views put first for a filtered dump, without a
 * newline: "filtered at record time: ...: this is not a whole profile". */
const char *ta_fmt_filtered_line(char *buf, size_t n, const struct ta_filter_info *f);
/* "999 ns", "1.234 us", "12.345 ms", "1.500 s". */
const char *ta_fmt_time(char *buf, size_t n, uint64_t ns);
/* The last path component, or "?" for an empty path. */
const char *ta_path_base(const char *path);
/* Whether a function's name ends with its parameter list, as a demangled C++
 * name does ("ns::f(int)", "K::get() const", "g(int) [clone .cold]"): 1, or
 * 0 for a C name ("main", "f.part.0"), after which a view writes "()". */
int ta_name_has_params(const char *name);
/* The length of the UTF-8 character at s (1 to 4), 0 when the bytes there
 * are not one (overlong forms and surrogates are not). */
size_t ta_utf8_len(const unsigned char *s);
/* A JSON string: bytes that are not UTF-8 become U+FFFD. */
void ta_json_str(FILE *f, const char *s);
/* A process's identity as JSON members: "pid": P, "pid_nth": N (2 for the
 * second process given pid P in the dump), "boot_start": its start after
 * boot in clock ticks, or null (session.h's ta_process). */
void ta_json_pid(FILE *f, const struct ta_session *s, uint32_t key);

/* ---- options shared by the commands ---- */

/*
 * Parses a duration: a decimal number with an optional unit, "300ns",
 * "200us", "10ms", "1.5s", "2min"; a plain number is nanoseconds.  Returns 0
 * with *ns set, or -1 for anything else (empty, bad unit, overflow, more
 * decimals than nanoseconds can hold).
 */
int ta_parse_time(const char *s, uint64_t *ns);
/*
 * Parses "START-END" with ta_parse_time on each side; either side may be
 * empty ("10ms-", "-2s"): *lo is then 0, *hi UINT64_MAX.  Returns 0, or -1
 * when a side is malformed, the '-' is missing or START > END.
 */
int ta_parse_time_range(const char *s, uint64_t *lo, uint64_t *hi);
/*
 * 1 when name matches the shell-style glob: '*' any run of characters
 * (including none), '?' one character, "[a-z]" one of a set ("[!..]" or
 * "[^..]" negated; a '[' without a closing ']' is literal), '\' quotes the
 * next character, or when name is glob itself.  0 otherwise.
 */
int ta_glob_match(const char *glob, const char *name);

/* Writes all n bytes to fd (again after EINTR and short writes); 0, or -1
 * with errno set. */
int ta_write_all(int fd, const void *p, size_t n);

#endif
