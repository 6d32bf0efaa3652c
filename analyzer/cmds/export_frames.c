/* SPDX-License-Identifier: MIT */
/*
 * export_frames.c - the frame marks of an export (export_pb.h's
 * ta_xframes), gathered from the timeline's API events and given out after
 * the run as frames, for the Chrome export (export_chrome.c) and the
 * Perfetto one (perfetto.c).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "export_pb.h"
#include "session.h"

long ta_xframes_add(struct ta_xframes *x, const struct ta_tlapi *a)
{
	struct ta_xfset *set = NULL;
	uint64_t ek = a->e->kind;
	enum ta_xfkind kind = ek == TA_EXT_FRAME				   ? TA_XF_MARKS
			      : ek == TA_EXT_FRAME_BEGIN || ek == TA_EXT_FRAME_END ? TA_XF_GAPS
										   : TA_XF_SECTION;
	int step = ek == TA_EXT_FRAME_BEGIN || ek == TA_EXT_SECTION_ENTER ? 1
		   : ek == TA_EXT_FRAME					  ? 0
									  : -1;
	size_t k;

	for (k = 0; k < x->n; k++)
		if (x->sets[k].pid == a->t->pid && x->sets[k].kind == kind &&
		    !strcmp(x->sets[k].name, a->e->name)) {
			set = &x->sets[k];
			break;
		}
	if (!set) {
		struct ta_xfset *sets =
		    ta_vec_reserve(x->sets, x->n + 1, &x->cap, sizeof(*sets), 8);
		char *name = strdup(a->e->name);

		if (sets)
			x->sets = sets;
		if (!sets || !name) {
			free(name);
			return -1;
		}
		set = &x->sets[x->n++];
		memset(set, 0, sizeof(*set));
		set->pid = a->t->pid;
		set->name = name;
		set->kind = kind;
	}
	if (set->n == set->cap) {
		struct ta_xmark *m =
		    ta_vec_reserve(set->marks, set->n + 1, &set->cap, sizeof(*m), 64);

		if (!m)
			return -1;
		set->marks = m;
	}
	set->marks[set->n++] = (struct ta_xmark){a->ns, a->ticks, a->t->index, step};
	return (long)(set - x->sets);
}

static int xmark_cmp(const void *a, const void *b)
{
	const struct ta_xmark *x = a, *y = b;

	return x->ns < y->ns ? -1 : x->ns > y->ns;
}

int ta_xframes_bounds(struct ta_xframes *x, size_t k, const struct ta_timeline *tl,
		      int64_t **bounds)
{
	struct ta_xfset *set = &x->sets[k];
	int64_t *b = malloc((set->n + 1) * sizeof(*b)), first;

	*bounds = b;
	if (!b)
		return -1;
	/* The threads' marks come thread by thread, not in time order. */
	qsort(set->marks, set->n, sizeof(*set->marks), xmark_cmp);
	b[0] = set->marks[0].ns;
	if (ta_timeline_first_ns(tl, set->marks[0].thread, &first) == 0 && first < b[0])
		b[0] = first;
	/* With --time-range, the marks are those in it: so is the first
	 * frame's start. */
	if (tl->o && tl->o->from && b[0] < (int64_t)tl->o->from)
		b[0] = (int64_t)tl->o->from;
	for (size_t i = 0; i < set->n; i++)
		b[i + 1] = set->marks[i].ns;
	return 0;
}

/* A keep dump's frames: those of s[0..*n) (ticks t[2i], t[2i + 1] on
 * their process's counter) inside one of k's windows, in order. */
static void keep_spans(const struct ta_keep_info *k, struct ta_xspan *s, const uint64_t *t,
		       size_t *n)
{
	size_t kept = 0;

	for (size_t i = 0; i < *n; i++)
		if (ta_keep_kept(k, t[2 * i], t[2 * i + 1]))
			s[kept++] = s[i];
	*n = kept;
}

int ta_xframes_spans(struct ta_xframes *x, size_t k, const struct ta_timeline *tl,
		     struct ta_xspan **spans, size_t *n)
{
	struct ta_xfset *set = &x->sets[k];
	struct ta_xspan *s = malloc((set->n + 1) * sizeof(*s));
	const struct ta_process *p = tl->v.s ? ta_session_process(tl->v.s, set->pid) : NULL;
	const struct ta_keep_info *keep = p && set->kind != TA_XF_SECTION ? p->keep : NULL;
	/* A keep dump's frames' ends in ticks, the windows' unit. */
	uint64_t *t = keep ? malloc((set->n + 1) * 2 * sizeof(*t)) : NULL;
	int64_t *b = NULL;
	int64_t depth = 0;

	*spans = s;
	*n = 0;
	if (!s || (keep && !t)) {
		free(t);
		return -1;
	}
	if (set->kind == TA_XF_MARKS) {
		if (ta_xframes_bounds(x, k, tl, &b) < 0) {
			free(t);
			return -1;
		}
		for (size_t i = 0; i < set->n; i++)
			s[i] = (struct ta_xspan){b[i], b[i + 1]};
		*n = set->n;
		free(b);
		if (keep) {
			/* Frame 0 from the thread's first event, as its ns. */
			if (ta_timeline_first_ticks(tl, set->marks[0].thread, &t[0]) < 0 ||
			    t[0] > set->marks[0].ticks)
				t[0] = set->marks[0].ticks;
			for (size_t i = 0; i < set->n; i++) {
				if (i)
					t[2 * i] = set->marks[i - 1].ticks;
				t[2 * i + 1] = set->marks[i].ticks;
			}
			keep_spans(keep, s, t, n);
			free(t);
		}
		return 0;
	}
	/* Stable: a BEGIN and an END at the same ns keep their order. */
	for (size_t i = 1; i < set->n; i++)
		for (size_t j = i; j > 0 && set->marks[j - 1].ns > set->marks[j].ns; j--) {
			struct ta_xmark m = set->marks[j];

			set->marks[j] = set->marks[j - 1];
			set->marks[j - 1] = m;
		}
	for (size_t i = 0; i < set->n; i++) {
		const struct ta_xmark *m = &set->marks[i];

		if (set->kind == TA_XF_GAPS) {
			if (depth) {
				if (t)
					t[2 * *n + 1] = m->ticks;
				s[(*n)++].end = m->ns;
			}
			if (m->step > 0) {
				if (t)
					t[2 * *n] = m->ticks;
				s[*n].start = m->ns;
			}
			depth = m->step > 0;
		} else if (m->step > 0 && depth++ == 0) {
			s[*n].start = m->ns;
		} else if (m->step < 0 && depth && --depth == 0) {
			s[(*n)++].end = m->ns;
		}
	}
	/* A section never left lasts to its last mark; a frame never ended
	 * is no frame. */
	if (set->kind == TA_XF_SECTION && depth)
		s[(*n)++].end = set->marks[set->n - 1].ns;
	if (keep)
		keep_spans(keep, s, t, n);
	free(t);
	return 0;
}

void ta_xframes_track(const struct ta_xfset *set, char *buf, size_t n)
{
	snprintf(buf, n, "%s: %s", set->kind == TA_XF_SECTION ? "section" : "frames", set->name);
}

void ta_xframes_free(struct ta_xframes *x)
{
	for (size_t k = 0; k < x->n; k++) {
		free(x->sets[k].name);
		free(x->sets[k].marks);
	}
	free(x->sets);
	memset(x, 0, sizeof(*x));
}
