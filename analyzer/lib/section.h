/* SPDX-License-Identifier: MIT */
/*
 * section.h - `--section NAME`: a view limited to the time inside the
 * program's section NAME (TA_SECTION_ENTER / TA_SECTION_LEAVE).
 *
 * The dump is read once for the section's occurrences, process by
 * process: it is inside from an ENTER of NAME to the LEAVE that brings its
 * ENTERs back to none (occurrences that overlap are one stretch), to the
 * process's end when none does.  The view's own pass then goes through a
 * visitor of this file's in front of the view's: calls are clipped to the
 * stretches (a call running when one begins is visited as entered there,
 * one still running when it ends as left there, each stretch it spans a
 * call of its own), and the API's events, shorts and partial exits
 * outside them are left out, but for those that hold for the whole run
 * (counter units, application info): handed in at the next stretch.
 * Times between stretches are in no call.
 */
#ifndef TA_SECTION_H
#define TA_SECTION_H

#include <stddef.h>

#include "session.h"

/* The command's --section, for every view it opens (NULL: none). */
void ta_section_set(const char *name);
const char *ta_section_get(void);

struct ta_section;

/*
 * With a --section set: reads the dumps paths[0..n) for its stretches and
 * puts into *out a visitor that hands in the calls inside them; *sec (to
 * free with ta_section_free after the view's session) is set.  Without:
 * *out is *in, *sec NULL.  0, or -1 after printing why (a pipe, which
 * cannot be read twice; no memory): *status is the exit status.
 */
int ta_section_wrap(const char *const *paths, size_t n, const struct ta_visitor *in,
		    struct ta_visitor *out, struct ta_section **sec, int *status);
void ta_section_free(struct ta_section *sec);

/* ---- the parts of ta_section_wrap, for a reader of its own (the fuzzer) ---- */

struct ta_section *ta_section_new(void);
/* Into *v, the visitor that finds the stretches of ta_section_get()'s
 * section in session s's walk (s's processes name the sites). */
void ta_section_edges(struct ta_section *sec, struct ta_session *s, struct ta_visitor *v);
/* After that walk: 0, or -1 without memory. */
int ta_section_edges_done(struct ta_section *sec);
/* Into *out, the visitor that hands in's the calls inside the stretches;
 * then, once the view's session s is made, ta_section_session. */
void ta_section_visitor(struct ta_section *sec, const struct ta_visitor *in,
			struct ta_visitor *out);
void ta_section_session(struct ta_section *sec, const struct ta_session *s);

#endif
