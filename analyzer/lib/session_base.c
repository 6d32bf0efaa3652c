/* SPDX-License-Identifier: MIT */
/*
 * session_base.c - the ground floor of the session, which every other
 * piece uses and which uses none of them: the errors recorded against a
 * chunk, a process's ticks converted to ns, and the payload's strings.
 */
#include "session_int.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- errors -------------------------------------------------------------------- */

void ta_session_error(struct ta_session *s, int code, const struct ta_chunk *c, uint64_t tid)
{
	struct ta_session_error *e;

	s->errors_all++;
	if (s->nerrors == TA_SESSION_MAX_ERRORS)
		return;
	e = &s->errors[s->nerrors++];
	e->code = code;
	e->chunk = c->index;
	e->offset = c->offset;
	e->skipped = c->skipped;
	e->type = c->h.type;
	e->tid = tid;
}

/* ---- time ---------------------------------------------------------------------- */

uint64_t ta_process_dur_ns(const struct ta_process *p, uint64_t ticks)
{
	long double ns = ticks * p->ns_per_tick;

	return ns >= 18446744073709551615.0L ? UINT64_MAX : (uint64_t)llroundl(ns);
}

int64_t ta_process_ticks_ns(const struct ta_process *p, uint64_t ticks)
{
	long double ns = p->ns_at_0 + ticks * p->ns_per_tick;

	if (ns >= 9223372036854775807.0L)
		return INT64_MAX;
	if (ns <= -9223372036854775807.0L)
		return -INT64_MAX;
	return (int64_t)llroundl(ns);
}

/* ---- small helpers ----------------------------------------------------------- */

static char *str_from_bytes(const uint8_t *s, uint64_t len)
{
	char *p = malloc((size_t)len + 1);

	if (!p)
		return NULL;
	memcpy(p, s, (size_t)len);
	p[len] = 0;
	/* A NUL inside would cut the name short silently; make it visible. */
	for (uint64_t i = 0; i < len; i++)
		if (!p[i])
			p[i] = '?';
	return p;
}

int ta_sess_get_str(struct ta_reader *r, char **out)
{
	const uint8_t *s;
	uint64_t len;

	if (ta_get_bytes(r, &s, &len) < 0)
		return -TA_E_PAYLOAD;
	*out = str_from_bytes(s, len);
	return *out ? 0 : -TA_E_NOMEM;
}
