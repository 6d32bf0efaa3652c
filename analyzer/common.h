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
	/* Exit status so far: 0, 1 (damaged or truncated), 2 (unreadable). */
	int status;
	uint64_t events, lost; /* totals over threads and processes */
	/* Names made up for addresses outside every module. */
	char **own;
	size_t nown, own_cap;
};

/*
 * Reads the whole dump at path through the visitor vis (may be NULL),
 * finishes the session, and prints each error found on stderr.  Returns 0
 * when there is something to show (check v->status for damage), or -1 when
 * there is not (v->status says the exit code; the message was printed).
 */
int ta_view_open(struct ta_view *v, const char *path, const struct ta_visitor *vis);
void ta_view_close(struct ta_view *v);

/* Says on stderr what the numbers do not: loss, repairs, guesses, modules
 * without symbols.  Call after naming (it lists symbol failures). */
void ta_view_warnings(struct ta_view *v);

void ta_view_warn(const struct ta_view *v, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* The text of one error, without the "traceagent: FILE: " prefix. */
void ta_error_text(char *buf, size_t n, const struct ta_session_error *e);

/* A function's identity and name. */
struct ta_fn_name {
	const char *name;   /* demangled, or "module+0xOFFSET", or "0xADDR" */
	const char *module; /* module path, "" when no module holds it */
	uint64_t offset;    /* symbol value (address - bias), or the address */
};

/* Names the function at addr in process pid.  Never fails: the strings
 * live as long as the view. */
void ta_view_name(struct ta_view *v, uint32_t pid, uint64_t addr, struct ta_fn_name *out);

/* Lost events of a thread: what it counted, or what its end said. */
uint64_t ta_thread_lost(const struct ta_thread *t);
/* From the first to the last time seen in any process. */
uint64_t ta_session_duration_ns(const struct ta_session *s);

/* "999 ns", "1.234 us", "12.345 ms", "1.500 s". */
const char *ta_fmt_time(char *buf, size_t n, uint64_t ns);
/* The last path component, or "?" for an empty path. */
const char *ta_base_name(const char *path);
/* A JSON string: bytes that are not UTF-8 become U+FFFD. */
void ta_json_str(FILE *f, const char *s);

#endif
