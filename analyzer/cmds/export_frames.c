/* SPDX-License-Identifier: MIT */
/*
 * export_frames.c - the frame marks of an export (export_pb.h's
 * ta_xframes), gathered from the timeline's API events and given out after
 * the run as frames, for the Chrome export (export_chrome.c) and the
 * Perfetto one (perfetto.c).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "export_pb.h"

long ta_xframes_add(struct ta_xframes *x, const struct ta_tlapi *a)
{
	struct ta_xfset *set = NULL;
	size_t k;

	for (k = 0; k < x->n; k++)
		if (x->sets[k].pid == a->t->pid && !strcmp(x->sets[k].name, a->e->name)) {
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
	}
	if (set->n == set->cap) {
		struct ta_xmark *m =
		    ta_vec_reserve(set->marks, set->n + 1, &set->cap, sizeof(*m), 64);

		if (!m)
			return -1;
		set->marks = m;
	}
	set->marks[set->n++] = (struct ta_xmark){a->ns, a->t->index};
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

void ta_xframes_free(struct ta_xframes *x)
{
	for (size_t k = 0; k < x->n; k++) {
		free(x->sets[k].name);
		free(x->sets[k].marks);
	}
	free(x->sets);
	memset(x, 0, sizeof(*x));
}
