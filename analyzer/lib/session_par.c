/* SPDX-License-Identifier: MIT */
/*
 * session_par.c - ta_session_read on several cores (traceagent -j N).
 *
 * The reader (the calling thread) takes the chunks in order, checks their
 * CRC and copies each into a slot of a window of a few chunks per worker.
 * Workers take the slots that need work in order: they decompress LZ4
 * payloads and, when the session's visitor is the profile (report's), sum
 * each EVENTS chunk on its own from its stack snapshot (session_walk.c's
 * ta_sess_part_build), or build the visitor's part of it when it has
 * ta_chunk_ops (the call-path recorder: calltree.c).  The reader merges the slots strictly in the
 * dump's order, as ta_session_read would take the chunks: metadata chunks
 * and errors as they come, an EVENTS chunk's sums onto its thread's stack
 * and profile (or, when they cannot be used, the chunk walked as before),
 * so every result is the one of a single thread.  When the slot to merge
 * is not done and nobody took it, the reader does its work itself.
 *
 * Nothing is shared but the window, under one mutex taken a few times per
 * chunk (chunks hold 10^4-10^5 events); memory is the window's, whatever
 * the dump's length.
 */
#define _GNU_SOURCE
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "session_int.h"

enum slot_state { SLOT_FREE, SLOT_QUEUED, SLOT_RUNNING, SLOT_DONE };

/* The window's bytes beyond its first chunk, and the largest buffers a
 * slot keeps for the next chunk: memory stays that of a few chunks.
 *
 * A chunk larger than KEEP_BYTES, stored or raw (up to the format's 16
 * MiB), is not copied: it stays in the reader's buffer, which is not read
 * further until the chunk is merged (one such chunk in the window, the
 * last), and is decompressed into the window's one buffer for them, grown
 * by the reader to the largest raw size and kept, as ta_dumpfile_next keeps
 * its own.  Copies freed after each merge stayed in malloc's heap, where
 * whatever the reader and the workers allocated meanwhile (which thread
 * does which chunk's work is timing) could sit beside them, so that the
 * next outsized chunk took fresh memory: the peak grew by 16 MiB at a
 * time, by chance, more often the longer the dump. */
#define WINDOW_BYTES (8u << 20)
#define KEEP_BYTES   (4u << 20)

struct slot {
	enum slot_state state;
	int rc;	      /* ta_dumpfile_next_stored's */
	uint64_t at;  /* the reader's offset after it (for -TA_E_IO) */
	int zrc;      /* ta_chunk_decompress's */
	int summed;   /* part holds the chunk's sums */
	size_t bytes; /* what it adds to par's held (its sizes change as it is decompressed) */
	struct ta_chunk c;
	uint8_t *stored, *raw;
	size_t stored_cap, raw_cap;
	int pinned; /* outsized: its payload is in the reader's buffer */
	struct ta_chunk_part part;
	void *vpart; /* the visitor's (ta_chunk_ops), when it has some */
};

struct par {
	pthread_mutex_t mu;
	pthread_cond_t work; /* a slot was queued, or quit */
	pthread_cond_t done; /* a slot is done */
	struct slot *slots;
	size_t nslots;
	uint64_t head, tail, next; /* merge, fill, and the next to hand out */
	size_t held;		   /* bytes the chunks in [head, tail) take, stored and raw */
	int quit;
	int mode;	  /* ta_sess_part_mode */
	int pinned;	  /* the last slot filled is pinned: read no further */
	uint8_t *big_raw; /* the pinned chunk's raw payload (the reader's) */
	size_t big_raw_cap;
	const struct ta_chunk_ops *ops; /* the visitor's, when mode is 0 */
};

/* The work of a slot, outside the lock. */
static void slot_work(struct par *pp, struct slot *sl)
{
	if (sl->pinned) {
		/* Large enough already (fill): not grown here. */
		uint8_t *buf = pp->big_raw;
		size_t cap = pp->big_raw_cap;

		sl->zrc = ta_chunk_decompress(&sl->c, &buf, &cap);
	} else {
		sl->zrc = ta_chunk_decompress(&sl->c, &sl->raw, &sl->raw_cap);
	}
	sl->summed = 0;
	if (sl->zrc == 0 && pp->mode && sl->c.h.type == TA_CHUNK_EVENTS) {
		ta_sess_part_build(&sl->part, sl->c.payload, sl->c.len, pp->mode == 2);
		sl->summed = 1;
	} else if (sl->zrc == 0 && pp->ops && sl->c.h.type == TA_CHUNK_EVENTS) {
		pp->ops->build(sl->vpart, sl->c.payload, sl->c.len);
		sl->summed = 1;
	}
}

/* The next queued slot to work on, marked running; NULL if none.  Under
 * the lock. */
static struct slot *take(struct par *pp)
{
	while (pp->next < pp->tail) {
		struct slot *sl = &pp->slots[pp->next % pp->nslots];

		pp->next++;
		if (sl->state == SLOT_QUEUED) {
			sl->state = SLOT_RUNNING;
			return sl;
		}
	}
	return NULL;
}

static void *worker(void *arg)
{
	struct par *pp = arg;

	pthread_mutex_lock(&pp->mu);
	for (;;) {
		struct slot *sl = take(pp);

		if (!sl) {
			if (pp->quit)
				break;
			pthread_cond_wait(&pp->work, &pp->mu);
			continue;
		}
		pthread_mutex_unlock(&pp->mu);
		slot_work(pp, sl);
		pthread_mutex_lock(&pp->mu);
		sl->state = SLOT_DONE;
		pthread_cond_broadcast(&pp->done);
	}
	pthread_mutex_unlock(&pp->mu);
	return NULL;
}

/* Reads the next chunk into a free slot: 0 at the end of the dump (or
 * after an error that ends it), 1 otherwise. */
static int fill(struct par *pp, struct ta_dumpfile *d)
{
	struct slot *sl = &pp->slots[pp->tail % pp->nslots];
	int rc = ta_dumpfile_next_stored(d, &sl->c);
	int queue = 0;

	sl->rc = rc;
	sl->at = ta_dumpfile_offset(d);
	sl->bytes =
	    rc == 1 ? sl->c.len + ((sl->c.h.flags & TA_CHUNK_F_LZ4) ? sl->c.h.raw_size : 0) : 0;
	pp->held += sl->bytes;
	sl->zrc = 0;
	sl->summed = 0;
	sl->pinned = 0;
	if (rc == 1 && (sl->c.len > KEEP_BYTES ||
			((sl->c.h.flags & TA_CHUNK_F_LZ4) && sl->c.h.raw_size > KEEP_BYTES))) {
		if ((sl->c.h.flags & TA_CHUNK_F_LZ4) && sl->c.h.raw_size > pp->big_raw_cap) {
			/* Exactly raw_size (max raw_size): a chunk's, not doubled. */
			size_t raw = sl->c.h.raw_size;
			uint8_t *b =
			    ta_vec_reserve_max(pp->big_raw, raw, &pp->big_raw_cap, 1, raw, raw);

			if (!b) {
				sl->rc = rc = -TA_E_NOMEM;
				goto queued;
			}
			pp->big_raw = b;
		}
		sl->pinned = pp->pinned = 1;
		queue = (sl->c.h.flags & TA_CHUNK_F_LZ4) ||
			((pp->mode || pp->ops) && sl->c.h.type == TA_CHUNK_EVENTS);
	} else if (rc == 1) {
		if (sl->c.len > sl->stored_cap) {
			/* Exactly len (max len): a chunk's, not doubled. */
			uint8_t *b = ta_vec_reserve_max(sl->stored, sl->c.len, &sl->stored_cap, 1,
							sl->c.len, sl->c.len);

			if (!b) {
				sl->rc = rc = -TA_E_NOMEM;
				goto queued;
			}
			sl->stored = b;
		}
		memcpy(sl->stored, sl->c.payload, sl->c.len);
		sl->c.payload = sl->stored;
		queue = (sl->c.h.flags & TA_CHUNK_F_LZ4) ||
			((pp->mode || pp->ops) && sl->c.h.type == TA_CHUNK_EVENTS);
	}
queued:
	pthread_mutex_lock(&pp->mu);
	sl->state = queue ? SLOT_QUEUED : SLOT_DONE;
	pp->tail++;
	if (queue)
		pthread_cond_signal(&pp->work);
	pthread_mutex_unlock(&pp->mu);
	return rc != 0 && rc != -TA_E_IO && rc != -TA_E_NOMEM;
}

/* Takes a done slot as ta_session_read takes a chunk: 1 to go on, 0 at
 * the end, or a negative code that ends the reading (*err_offset set). */
static int merge(struct par *pp, struct ta_session *s, struct slot *sl, uint64_t *err_offset)
{
	int rc = sl->rc;

	if (rc == 0)
		return 0;
	if (rc == -TA_E_IO || rc == -TA_E_NOMEM) {
		if (err_offset)
			*err_offset = sl->at;
		return rc;
	}
	if (rc < 0) {
		ta_session_error(s, rc, &sl->c, 0);
		return 1;
	}
	if (sl->zrc == -TA_E_NOMEM) {
		if (err_offset)
			*err_offset = sl->at;
		return sl->zrc;
	}
	if (sl->zrc < 0) {
		ta_session_error(s, sl->zrc, &sl->c, 0);
		return 1;
	}
	if (sl->summed && pp->ops)
		s->vpart = sl->vpart;
	else if (sl->summed)
		s->part = &sl->part;
	rc = ta_session_chunk(s, &sl->c);
	s->part = NULL;
	s->vpart = NULL;
	if (rc < 0) {
		if (err_offset)
			*err_offset = sl->c.offset;
		return rc;
	}
	return 1;
}

int ta_sess_read_par(struct ta_session *s, struct ta_dumpfile *d, unsigned jobs,
		     uint64_t *err_offset)
{
	struct par pp;
	pthread_t *tids;
	unsigned nworkers = 0;
	int rc = 0, more = 1;

	memset(&pp, 0, sizeof(pp));
	pp.mode = ta_sess_part_mode(s);
	/* Enough slots that the workers are not starved while the reader
	 * merges, few enough that memory stays a handful of chunks. */
	pp.nslots = 3 * (size_t)jobs;
	pp.slots = calloc(pp.nslots, sizeof(*pp.slots));
	tids = calloc(jobs, sizeof(*tids));
	if (!pp.slots || !tids) {
		free(pp.slots);
		free(tids);
		return -TA_E_NOMEM;
	}
	for (size_t i = 0; i < pp.nslots; i++)
		ta_sess_part_init(&pp.slots[i].part);
	if (!pp.mode && s->v.chunks) {
		pp.ops = s->v.chunks;
		for (size_t i = 0; i < pp.nslots && pp.ops; i++)
			if (!(pp.slots[i].vpart = pp.ops->make(s->v.ctx))) {
				/* Without memory for them, the chunks are walked. */
				for (size_t k = 0; k < i; k++) {
					pp.ops->drop(pp.slots[k].vpart);
					pp.slots[k].vpart = NULL;
				}
				pp.ops = NULL;
			}
	}
	pthread_mutex_init(&pp.mu, NULL);
	pthread_cond_init(&pp.work, NULL);
	pthread_cond_init(&pp.done, NULL);
	/* The reader works too: jobs - 1 more threads. */
	for (unsigned i = 0; i + 1 < jobs; i++) {
		if (pthread_create(&tids[i], NULL, worker, &pp) != 0)
			break;
		nworkers++;
	}

	for (;;) {
		struct slot *sl;

		/* A window of a few chunks per job, and of WINDOW_BYTES at most
		 * beyond the first: chunks of the agent's size (1 MiB) fill the
		 * slots, the largest a dump may hold (16 MiB) go one at a time,
		 * as without workers. */
		while (more && !pp.pinned && pp.tail - pp.head < pp.nslots &&
		       (pp.tail == pp.head || pp.held < WINDOW_BYTES))
			more = fill(&pp, d);
		if (pp.head == pp.tail)
			break;
		sl = &pp.slots[pp.head % pp.nslots];
		pthread_mutex_lock(&pp.mu);
		while (sl->state != SLOT_DONE) {
			/* While a worker has it, the reader does the next
			 * chunk that nobody took (this one, if queued). */
			struct slot *mine = take(&pp);

			if (!mine) {
				pthread_cond_wait(&pp.done, &pp.mu);
				continue;
			}
			pthread_mutex_unlock(&pp.mu);
			slot_work(&pp, mine);
			pthread_mutex_lock(&pp.mu);
			mine->state = SLOT_DONE;
			pthread_cond_broadcast(&pp.done);
		}
		pthread_mutex_unlock(&pp.mu);
		rc = merge(&pp, s, sl, err_offset);
		/* Under the lock: a worker's take may look at this slot while
		 * next lags behind (nobody took the chunks that needed no work). */
		pthread_mutex_lock(&pp.mu);
		sl->state = SLOT_FREE;
		pthread_mutex_unlock(&pp.mu);
		pp.held -= sl->bytes;
		/* The reader's buffer may be read into again. */
		if (sl->pinned)
			sl->pinned = pp.pinned = 0;
		pp.head++;
		if (rc <= 0)
			break;
	}
	/* Every chunk merged gave back what it held: the window's measure
	 * never drifts (it did, and a wrapped count held the window at one
	 * chunk: the reader did every chunk's work itself). */
	assert(pp.head != pp.tail || pp.held == 0);

	pthread_mutex_lock(&pp.mu);
	pp.quit = 1;
	/* Slots not merged are not wanted any more: the workers finish what
	 * they hold and stop. */
	pp.next = pp.tail;
	pthread_cond_broadcast(&pp.work);
	pthread_mutex_unlock(&pp.mu);
	for (unsigned i = 0; i < nworkers; i++)
		pthread_join(tids[i], NULL);
	for (size_t i = 0; i < pp.nslots; i++) {
		free(pp.slots[i].stored);
		free(pp.slots[i].raw);
		ta_sess_part_free(&pp.slots[i].part);
		if (pp.ops)
			pp.ops->drop(pp.slots[i].vpart);
	}
	free(pp.big_raw);
	free(pp.slots);
	free(tids);
	pthread_mutex_destroy(&pp.mu);
	pthread_cond_destroy(&pp.work);
	pthread_cond_destroy(&pp.done);
	return rc > 0 ? 0 : rc;
}
