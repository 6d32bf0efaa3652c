/* SPDX-License-Identifier: MIT */
/*
 * stack.c - the shadow stack both sides keep per thread, and the control
 * flow (setjmp, longjmp, catch) applied to it; format.h.
 */
#include "format_int.h"

#include <stdlib.h>

/* ---- the shadow stack -------------------------------------------------------- */

void ta_stack_init(struct ta_stack *s)
{
	s->addr = NULL;
	s->depth = s->cap = 0;
	s->overflow = 0;
}

void ta_stack_free(struct ta_stack *s)
{
	free(s->addr);
	ta_stack_init(s);
}

int ta_stack_grow(struct ta_stack *s, size_t need)
{
	size_t cap = s->cap;
	uint64_t *a = ta_vec_reserve(s->addr, need, &cap, sizeof(*a), 64);

	if (!a)
		return -TA_E_NOMEM;
	s->addr = a;
	s->cap = (uint32_t)cap; /* need <= TA_STACK_MAX (the callers'), and so is 64 doubled */
	return 0;
}

int ta_stack_push(struct ta_stack *s, uint64_t addr)
{
	if (s->depth == TA_STACK_MAX || s->overflow) {
		s->overflow++;
		return 0;
	}
	if (s->depth == s->cap && ta_stack_grow(s, (size_t)s->depth + 1) < 0) {
		s->overflow++;
		return -TA_E_NOMEM;
	}
	s->addr[s->depth++] = addr;
	return 0;
}

uint32_t ta_stack_exit(struct ta_stack *s, uint64_t addr, int *top_match)
{
	*top_match = 0;
	if (s->overflow) {
		/* An exit of a frame the stack could not hold: it pops that
		 * frame, and both sides see it with its address. */
		s->overflow--;
		return 1;
	}
	if (s->depth && s->addr[s->depth - 1] == addr) {
		*top_match = 1;
		s->depth--;
		return 1;
	}
	for (uint32_t i = s->depth; i-- > 0;) {
		if (s->addr[i] == addr) {
			uint32_t popped = s->depth - i;
			s->depth = i;
			return popped;
		}
	}
	return 0;
}

uint64_t ta_stack_unwind(struct ta_stack *s, uint64_t n)
{
	uint64_t from_over = n < s->overflow ? n : s->overflow, rest = n - from_over;

	s->overflow -= from_over;
	if (rest > s->depth)
		rest = s->depth;
	s->depth -= (uint32_t)rest;
	return from_over + rest;
}

/* ---- control flow: setjmp, longjmp, catch (format.h) ----------------------------- */

uint64_t ta_ctl_apply(struct ta_jmptab *j, struct ta_stack *s, uint32_t kind, uint64_t v,
		      uint64_t nth)
{
	/* The encoder's overflow counts real frames: the sum cannot wrap. */
	uint64_t level = s->depth + s->overflow;

	switch (kind) {
	case TA_EXT_SETJMP:
		for (uint32_t i = 0; i < j->used; i++) {
			if (j->env[i] == v) {
				j->level[i] = level;
				return 0;
			}
		}
		if (j->used < TA_JMP_SLOTS) {
			j->env[j->used] = v;
			j->level[j->used++] = level;
			return 0;
		}
		/* Full: the oldest entry goes (a jmp_buf set up long ago is
		 * the least likely to be jumped to). */
		j->env[j->next] = v;
		j->level[j->next] = level;
		j->next = (j->next + 1) % TA_JMP_SLOTS;
		return 0;
	case TA_EXT_LONGJMP:
		for (uint32_t i = 0; i < j->used; i++)
			if (j->env[i] == v)
				return j->level[i] < level ? ta_stack_unwind(s, level - j->level[i])
							   : 0;
		return 0;
	case TA_EXT_CATCH: {
		/* The catcher is the nth activation of its function from the
		 * bottom: the innermost ones may be activations the exception
		 * left (a recursion caught further out).  Frames without an
		 * address (overflow) are above every frame that has one: they
		 * go with the others. */
		uint32_t found = UINT32_MAX;
		uint64_t seen = 0;

		for (uint32_t i = 0; i < s->depth; i++) {
			if (s->addr[i] == v) {
				found = i;
				if (++seen == nth)
					break;
			}
		}
		if (found == UINT32_MAX)
			return 0;
		return ta_stack_unwind(s, s->overflow + (s->depth - 1 - found));
	}
	}
	return 0;
}
