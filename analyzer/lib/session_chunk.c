/* SPDX-License-Identifier: MIT */
/*
 * session_chunk.c - each chunk to its place (ta_session_chunk): its
 * process found or made, the writer's sequence checked for gaps, then the
 * chunk handed to its decoder: EVENTS to the walk (session_walk.c), the
 * process's metadata to session_meta.c and session_procs.c; the chunks
 * that change the thread table (THREAD_START, THREAD_NAME, THREAD_END)
 * or end an image (END, CUT, a PROCESS chunk after exec) are decoded here.
 */
#include "session_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storedsyms.h"

static int thread_start_chunk(struct ta_session *s, struct ta_process *p, struct ta_reader *r)
{
	uint64_t tid, parent, ticks;
	char *name;
	struct ta_sess_thread *t;
	int rc;

	ta_get_varint(r, &tid);
	ta_get_varint(r, &parent);
	ta_get_varint(r, &ticks);
	if (r->err)
		return -TA_E_PAYLOAD;
	if ((rc = ta_sess_get_str(r, &name)) < 0)
		return rc;
	t = ta_sess_thread_find(s, p->pid, tid);
	if (t && t->has_end) {
		/* The tid was reused: the old thread is over. */
		ta_sess_thread_close(s, t);
		t = NULL;
	}
	if (!t)
		t = ta_sess_thread_new(s, p->pid, tid);
	if (!t) {
		free(name);
		return -TA_E_NOMEM;
	}
	free(t->name);
	t->name = name;
	t->parent_tid = parent;
	t->start_ticks = ticks;
	t->has_start = 1;
	if (r->p < r->end) { /* flags, since 1.1 */
		uint64_t flags;
		if (ta_get_varint(r, &flags) < 0)
			return -TA_E_PAYLOAD;
		t->forked = (flags & TA_THREAD_F_INHERITED) != 0;
	}
	ta_sess_note_ticks(p, ticks);
	return 0;
}

static int thread_name_chunk(struct ta_session *s, struct ta_process *p, struct ta_reader *r)
{
	uint64_t tid, ticks;
	char *name;
	struct ta_sess_thread *t;
	int rc;

	ta_get_varint(r, &tid);
	ta_get_varint(r, &ticks);
	if (r->err)
		return -TA_E_PAYLOAD;
	if ((rc = ta_sess_get_str(r, &name)) < 0)
		return rc;
	t = ta_sess_thread_get(s, p->pid, tid);
	if (!t) {
		free(name);
		return -TA_E_NOMEM;
	}
	free(t->name);
	t->name = name;
	return 0;
}

static int thread_end_chunk(struct ta_session *s, struct ta_process *p, struct ta_reader *r)
{
	uint64_t tid, end, events, lost, wait;
	struct ta_sess_thread *t;

	ta_get_varint(r, &tid);
	ta_get_varint(r, &end);
	ta_get_varint(r, &events);
	ta_get_varint(r, &lost);
	ta_get_varint(r, &wait);
	if (r->err)
		return -TA_E_PAYLOAD;
	t = ta_sess_thread_get(s, p->pid, tid);
	if (!t)
		return -TA_E_NOMEM;
	t->has_end = 1;
	t->end_ticks = end;
	t->end_events = events;
	t->end_lost = lost;
	t->wait_ticks = wait;
	ta_sess_note_ticks(p, end);
	return 0;
}

static int end_chunk(struct ta_process *p, struct ta_reader *r)
{
	uint64_t v[6];

	for (int i = 0; i < 6; i++)
		ta_get_varint(r, &v[i]);
	if (r->err)
		return -TA_E_PAYLOAD;
	p->end_ticks = v[0];
	p->end_ns = v[1];
	/* Paused to the end. */
	ta_sess_pause_close(p, v[0]);
	p->end_events = p->base_events + v[2];
	p->end_lost = p->base_lost + v[3];
	p->end_threads = p->base_threads + v[4];
	p->end_flags = v[5];
	/* 1.4: the lost events by cause; absent in older dumps (all 0). */
	memcpy(p->end_lost_by, p->base_lost_by, sizeof(p->end_lost_by));
	if (r->p < r->end) {
		uint64_t n, c;

		ta_get_varint(r, &n);
		for (uint64_t i = 0; i < n && !r->err; i++) {
			if (ta_get_varint(r, &c) < 0)
				break;
			p->end_lost_by[i < TA_LOST_NCAUSES ? i : TA_LOST_NCAUSES] += c;
		}
		if (r->err)
			return -TA_E_PAYLOAD;
	}
	/* 1.7: blocks taken beyond the memory cap, summed over the images. */
	p->end_reserve_blocks = p->base_reserve_blocks;
	if (r->p < r->end) {
		uint64_t n;

		if (ta_get_varint(r, &n) < 0)
			return -TA_E_PAYLOAD;
		p->end_reserve_blocks += n;
	}
	/* 1.8: the signal the process died of, the failed write. */
	p->end_signal = p->end_failed_at = p->end_failed_errno = 0;
	if (r->p < r->end &&
	    (ta_get_varint(r, &p->end_signal) < 0 || ta_get_varint(r, &p->end_failed_at) < 0 ||
	     ta_get_varint(r, &p->end_failed_errno) < 0))
		return -TA_E_PAYLOAD;
	p->has_end = 1;
	ta_sess_note_ticks(p, p->end_ticks);
	return 0;
}

/*
 * A PROCESS chunk for a pid already described: the program exec'd and the
 * new image's agent took the dump over (or, in a long run, the pid was
 * reused).  The old image is over: its threads are closed where they were
 * (their tids start afresh), its modules unloaded at its end, its totals
 * kept, and the new writer's chunk sequence starts from 0.
 */
static int new_image(struct ta_session *s, struct ta_process *p)
{
	uint64_t at = p->has_end ? p->end_ticks : p->max_ticks;

	for (size_t i = 0; i < s->nthreads; i++) {
		struct ta_sess_thread *t = s->threads[i];

		if (t->pid != p->pid || t->over)
			continue;
		ta_sess_thread_close(s, t);
		t->over = 1;
		ta_sess_thread_unhash(s, t);
	}
	for (size_t i = 0; i < p->nmodules; i++)
		if (p->modules[i].unload_ticks == UINT64_MAX &&
		    ta_sess_module_gone(p, &p->modules[i], at) < 0)
			return -TA_E_NOMEM;
	if (p->has_end) {
		p->base_events = p->end_events;
		p->base_lost = p->end_lost;
		memcpy(p->base_lost_by, p->end_lost_by, sizeof(p->base_lost_by));
		p->base_threads = p->end_threads;
		p->base_reserve_blocks = p->end_reserve_blocks;
	}
	p->has_end = 0;
	p->next_chunk_seq = 0;
	ta_sess_pause_close(p, at);
	return 0;
}

/* CUT: u cause, u value, str why (1.8); the header's pid is the process. */
static int cut_chunk(struct ta_process *p, struct ta_reader *r)
{
	uint64_t cause, value, len;
	const uint8_t *text;

	ta_get_varint(r, &cause);
	ta_get_varint(r, &value);
	ta_get_varint(r, &len);
	if (r->err || len > (uint64_t)(r->end - r->p))
		return -TA_E_PAYLOAD;
	text = r->p;
	r->p += len;
	p->cut_cause = cause;
	p->cut_value = value;
	if (len >= sizeof(p->cut_text))
		len = sizeof(p->cut_text) - 1;
	/* Shown as text: control characters become '?'. */
	for (uint64_t i = 0; i < len; i++)
		p->cut_text[i] = text[i] < 0x20 || text[i] == 0x7f ? '?' : (char)text[i];
	p->cut_text[len] = 0;
	return 0;
}

int ta_session_chunk(struct ta_session *s, const struct ta_chunk *c)
{
	struct ta_process *p = ta_sess_process_get(s, c);
	struct ta_reader r;
	int rc;

	if (!p)
		return -TA_E_NOMEM;
	if (c->h.type == TA_CHUNK_PROCESS && p->has_info && new_image(s, p) < 0)
		return -TA_E_NOMEM;
	s->chunks++;
	s->stored_bytes += c->h.stored_size;
	s->raw_bytes += c->h.raw_size;
	/* The writer numbers its chunks: a gap is chunks we never saw.  The
	 * field has 32 bits and wraps in a writer of more than 2^32 chunks
	 * (128 GiB at least); next_chunk_seq counts on past it, and a seq is
	 * placed by its distance from the one expected, modulo 2^32: ahead
	 * (a gap of that many), or, when it is less than 2^31 behind and not
	 * before the writer's first chunk, behind (out of order, left alone).
	 * Below 2^31 chunks this is the plain comparison.  A CUT chunk is
	 * another program's, not in the sequence. */
	if (c->h.type != TA_CHUNK_CUT) {
		uint32_t ahead = c->h.seq - (uint32_t)p->next_chunk_seq;
		uint64_t back = (1ull << 32) - ahead;

		if (ahead < 0x80000000u || back > p->next_chunk_seq) {
			p->chunks_missing += ahead;
			p->next_chunk_seq += (uint64_t)ahead + 1;
		}
	}
	ta_reader_init(&r, c->payload, c->len);
	switch (c->h.type) {
	case TA_CHUNK_EVENTS:
		return ta_sess_events_chunk(s, c, p);
	case TA_CHUNK_PROCESS:
		rc = ta_sess_process_chunk(p, &r);
		break;
	case TA_CHUNK_CLOCK:
		rc = ta_sess_clock_chunk(p, &r);
		break;
	case TA_CHUNK_MODULE:
		rc = ta_sess_module_chunk(p, &r);
		break;
	case TA_CHUNK_THREAD_START:
		rc = thread_start_chunk(s, p, &r);
		break;
	case TA_CHUNK_THREAD_NAME:
		rc = thread_name_chunk(s, p, &r);
		break;
	case TA_CHUNK_THREAD_END:
		rc = thread_end_chunk(s, p, &r);
		break;
	case TA_CHUNK_END:
		rc = end_chunk(p, &r);
		break;
	case TA_CHUNK_CRASH:
		rc = ta_sess_crash_chunk(p, &r);
		break;
	case TA_CHUNK_MODULE_UNLOAD:
		rc = ta_sess_module_unload_chunk(p, &r);
		break;
	case TA_CHUNK_LIBCALLS:
		rc = ta_sess_libcalls_chunk(p, &r);
		break;
	case TA_CHUNK_PATCH:
		rc = ta_sess_patch_chunk(p, &r);
		break;
	case TA_CHUNK_SITES:
		rc = ta_sess_sites_chunk(p, &r);
		break;
	case TA_CHUNK_CHANNELS:
		rc = ta_sess_channels_chunk(p, &r);
		break;
	case TA_CHUNK_MARK:
		rc = ta_sess_mark_chunk(p, &r);
		break;
	case TA_CHUNK_KEEP:
		rc = ta_sess_keep_chunk(p, &r);
		break;
	case TA_CHUNK_CUT:
		rc = cut_chunk(p, &r);
		break;
	case TA_CHUNK_SYMBOLS:
		rc = ta_symstore_chunk(&s->stored, c->payload, c->len);
		break;
	case TA_CHUNK_FILTER:
		rc = ta_sess_filter_chunk(p, c->payload, c->len);
		/* The report's note names one threshold: the largest (the
		 * processes of a dump share their settings but for exec). */
		if (rc == 0 && p->filter->min_duration_ns > s->min_duration_ns)
			s->min_duration_ns = p->filter->min_duration_ns;
		break;
	default:
		s->unknown_chunks++; /* a later minor version's addition */
		return 0;
	}
	/* Fields after the known ones are a later minor version's
	 * additions, and ignored. */
	if (rc == -TA_E_NOMEM)
		return rc;
	if (rc < 0)
		ta_session_error(s, rc, c, 0);
	return 0;
}
