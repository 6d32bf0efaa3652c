/* SPDX-License-Identifier: MIT */
/*
 * flusher_drain.c - the drain: a thread's ring read block by block,
 * its records encoded (format.c) into EVENTS chunks, its THREAD_START,
 * THREAD_NAME and THREAD_END chunks, and the totals for END.
 *
 * Apart from the flusher thread (flusher.c), which decides when to drain:
 * a drain runs on the flusher thread, on a producer that helps with its
 * own ring (ta_flusher_help), on the exiting thread and in a crash, so it
 * knows nothing of the thread's schedule; what the two share is
 * flusher_int.h.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base.h"
#include "clock.h"
#include "dump.h"
#include "flusher.h"
#include "flusher_int.h"
#include "format.h"
#include "keep.h"
#include "lazylib.h"
#include "mindur.h"
#include "nextsym.h"
#include "ring.h"
#include "settings.h"

/* Events chunks are cut at about this many raw bytes. */
#define CHUNK_TARGET (1u << 20)

struct ta_flush_state {
	struct ta_encoder enc;
	struct ta_zbuf z;     /* compression scratch */
	uint64_t events;      /* recorded for this thread so far */
	uint64_t in_chunk;    /* of which in the chunk open (ta_dump_events_chunk) */
	uint32_t name_seq;    /* the name version last written */
	int started;	      /* THREAD_START written */
	uint64_t start_flags; /* the flags it carried, for a stream's reader */
	/* Events it had no memory to encode (TA_LOST_NO_MEMORY): the
	 * drainer's count, added to the thread's own in its THREAD_END. */
	uint64_t lost_nomem;
	struct ta_mindur md;  /* TRACEAGENT_MIN_DURATION's pending calls and counts */
	struct ta_keepf keep; /* TRACEAGENT_KEEP's open calls (keep.h) */
};

__thread int ta_in_flusher __attribute__((tls_model("initial-exec")));
pthread_mutex_t ta_drain_lock = PTHREAD_MUTEX_INITIALIZER;
__thread int ta_drain_held __attribute__((tls_model("initial-exec")));
/* 1 while the program keeps every CPU it may run on busy: EVENTS chunks
 * are then stored uncompressed (placement.c's ta_slack_judge says why).  Atomic, relaxed,
 * pairs with nothing: a hint that whoever writes a chunk reads, set by
 * the flusher thread (and cleared before it starts); a stale value only
 * stores one chunk the other way, which every reader takes. */
uint32_t ta_store_raw;

/* Totals (atomic: rings are drained by the flusher and by their threads).
 * The events are dump.c's: counted as their chunks are written. */
static uint64_t total_lost, total_threads;
static uint64_t total_lost_by[TA_LOST_NCAUSES];
/* 1 once something could not be written for want of memory (events, a
 * thread's chunk): the END says the dump is incomplete.  Atomic, relaxed:
 * read when the END is written, after the last drain. */
static uint32_t out_of_memory;

static void note_out_of_memory(void)
{
	/* Said once: the losses are counted, by thread, in the dump. */
	if (!__atomic_exchange_n(&out_of_memory, 1, __ATOMIC_RELAXED))
		ta_warn("out of memory in the flusher of process %d: what it cannot write is "
			"counted lost (no-memory), and the dump is incomplete",
			(int)getpid());
}

int ta_flusher_out_of_memory(void)
{
	return __atomic_load_n(&out_of_memory, __ATOMIC_RELAXED);
}

/*
 * TRACEAGENT_MIN_DURATION in ticks.  The counter's rate is measured from
 * a pair taken when the flusher starts (mindur_t0) and one at least 2 ms
 * later: the flusher thread takes it first thing; a drain that comes
 * sooner (a very short program's end) waits out the 2 ms itself, once.
 * Atomic: set by whichever drainer measures first (relaxed: any drainer
 * that reads 0 measures again, and every measure is good).
 */
static uint64_t mindur_ticks_v;
static uint64_t mindur_t0, mindur_n0;

uint64_t ta_flusher_mindur_ticks(void)
{
	uint64_t v = __atomic_load_n(&mindur_ticks_v, __ATOMIC_RELAXED), t, n;
	double rate;

	if (v || !ta_cfg.min_duration_ns)
		return v;
	if (TA_CLOCK_SOURCE == TA_CLOCK_MONOTONIC) {
		rate = 1.0;
	} else if (ta_clock_nominal_hz()) {
		rate = (double)ta_clock_nominal_hz() / 1e9;
	} else {
		do
			ta_clock_pair(&t, &n);
		while (n - mindur_n0 < 2000000);
		rate = (double)(t - mindur_t0) / (double)(n - mindur_n0);
	}
	v = (uint64_t)((double)ta_cfg.min_duration_ns * rate);
	if (!v)
		v = 1;
	__atomic_store_n(&mindur_ticks_v, v, __ATOMIC_RELAXED);
	return v;
}

/* Seqlock reader of a thread's name (writer: ta_thread_set_name). */
static int read_name(struct ta_thread *t, char out[16], uint32_t *seq)
{
	for (int tries = 0; tries < 1000; tries++) {
		uint32_t s1 = __atomic_load_n(&t->name_seq, __ATOMIC_ACQUIRE);
		uint32_t s2;
		if (s1 & 1)
			continue;
		for (int i = 0; i < 16; i++)
			out[i] = __atomic_load_n(&t->name[i], __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		s2 = __atomic_load_n(&t->name_seq, __ATOMIC_RELAXED);
		if (s1 == s2) {
			*seq = s1;
			return 0;
		}
	}
	return -1;
}

static void write_thread_start(struct ta_thread *t, const char *name, uint64_t flags)
{
	struct ta_buf b = {0};

	ta_buf_u(&b, t->tid);
	ta_buf_u(&b, t->ptid);
	ta_buf_u(&b, t->start_ticks);
	ta_buf_str(&b, name, strnlen(name, 16));
	ta_buf_u(&b, flags);
	if (!b.oom)
		ta_dump_chunk(TA_CHUNK_THREAD_START, b.p, b.len);
	else
		note_out_of_memory();
	ta_buf_free(&b);
}

static void write_thread_name(struct ta_thread *t, const char *name)
{
	struct ta_buf b = {0};

	ta_buf_u(&b, t->tid);
	ta_buf_u(&b, ta_ticks());
	ta_buf_str(&b, name, strnlen(name, 16));
	if (!b.oom)
		ta_dump_chunk(TA_CHUNK_THREAD_NAME, b.p, b.len);
	else
		note_out_of_memory();
	ta_buf_free(&b);
}

static void write_thread_end(struct ta_thread *t, uint64_t end_ticks, uint64_t events)
{
	struct ta_buf b = {0};
	uint64_t nomem = t->fs ? t->fs->lost_nomem : 0;
	uint64_t lost = __atomic_load_n(&t->lost, __ATOMIC_RELAXED) + nomem;

	ta_buf_u(&b, t->tid);
	ta_buf_u(&b, end_ticks);
	ta_buf_u(&b, events);
	ta_buf_u(&b, lost);
	ta_buf_u(&b, __atomic_load_n(&t->wait_ticks, __ATOMIC_RELAXED));
	/* 1.4: the same by cause (format.h), for info and report. */
	ta_buf_u(&b, TA_LOST_NCAUSES);
	for (unsigned c = 0; c < TA_LOST_NCAUSES; c++) {
		uint64_t n = __atomic_load_n(&t->lost_by[c], __ATOMIC_RELAXED) +
			     (c == TA_LOST_NO_MEMORY ? nomem : 0);

		ta_buf_u(&b, n);
		__atomic_add_fetch(&total_lost_by[c], n, __ATOMIC_RELAXED);
	}
	__atomic_add_fetch(&total_lost, lost, __ATOMIC_RELAXED);
	if (!b.oom)
		ta_dump_chunk(TA_CHUNK_THREAD_END, b.p, b.len);
	else
		note_out_of_memory();
	ta_buf_free(&b);
}

/* The flusher thread (never a signal handler): where liblz4 is opened. */

/* The flusher opens liblz4 once a full block was handed over or its
 * encoder holds this much: before, the chunks (a short run's few events,
 * the process's description) are stored raw, and a process that records
 * little never loads it. */
#define LZ4_OPEN_MIN (16u << 10)

static void flush_chunk(struct ta_flush_state *fs)
{
	const uint8_t *p;
	size_t len;

	if (!fs->enc.open)
		return;
	/* The calls left out so far, counted in the chunk they end. */
	if (fs->md.ncnt) {
		fs->md.out_len = 0;
		if (ta_mindur_counts(&fs->md) == 0) {
			(void)ta_encoder_raw(&fs->enc, fs->md.out, fs->md.out_len, SIZE_MAX);
		}
	}
	ta_encoder_end(&fs->enc, &p, &len);
	if (ta_in_flusher && len >= LZ4_OPEN_MIN)
		ta_lazy_open_lz4();
	/* The sites its events name go before it (a view can name them as
	 * the dump goes by). */
	ta_flusher_up.before_events();
	fs->z.store = __atomic_load_n(&ta_store_raw, __ATOMIC_RELAXED);
	ta_dump_events_chunk(p, len, &fs->z, fs->in_chunk);
	fs->in_chunk = 0;
}

#ifdef TA_BENCH_HANDOFF
/* scripts/bench's "handoff" build (never a release's): the flusher reads
 * every record and does nothing else with it, no encoding, compression or
 * writing, so a run measures what handing the events over costs (the
 * rings, the lines going between the cores, the flusher's wake-ups and
 * reads) apart from what is done with them.  Its dumps have no events. */
static volatile uint64_t handoff_sink;
#endif

/* The events among the records [from, to): a function event or an EXT
 * group is one (as the hooks count their losses), a gap (counted where it
 * was dropped), padding or the agent's own wait (not the program's event)
 * none. */
static uint64_t raw_events(const struct ta_rec *rec, size_t from, size_t to)
{
	uint64_t n = 0;

	for (size_t i = from; i < to; i++) {
		uint64_t a = rec[i].addr;

		if (ta_raw_is_ext(a)) {
			n += ta_raw_ext_kind(a) != TA_EXT_WAIT &&
			     (ta_raw_ext_kind(a) || ta_raw_ext_n(a));
			i += TA_RAW_EXT_SLOTS(ta_raw_ext_n(a));
		} else if ((a >> 62) != 1) {
			n++;
		}
	}
	return n;
}

/* Encodes the records [from, to) of a block, in chunks of CHUNK_TARGET.
 * What the encoder has no memory for is lost, counted (TA_LOST_NO_MEMORY),
 * and the dump is then incomplete. */
static void encode_raw(struct ta_flush_state *fs, const struct ta_rec *rec, size_t from, size_t to)
{
	size_t i = from;
	uint64_t markers = fs->enc.marker_slots;

#ifdef TA_BENCH_HANDOFF
	{
		/* Every record read, none encoded: the loop below has nothing
		 * left, and the counts after it are the same. */
		uint64_t sum = 0;

		for (; i < to; i++)
			sum += rec[i].ticks ^ rec[i].addr;
		handoff_sink += sum;
	}
#endif
	while (i < to) {
		uint64_t m0 = fs->enc.marker_slots;
		size_t n = ta_encoder_raw(&fs->enc, rec + i, to - i, CHUNK_TARGET);

		fs->in_chunk += n - (fs->enc.marker_slots - m0);
		if (!n && fs->enc.open && fs->enc.out.len >= CHUNK_TARGET) {
			flush_chunk(fs); /* full, not out of memory */
			continue;
		}
		if (!n) {
			/* Out of memory: the rest is not written.  The stream
			 * goes on after it as after dropped events. */
			fs->lost_nomem += raw_events(rec, i, to);
			note_out_of_memory();
			break;
		}
		i += n;
		if (fs->enc.out.len >= CHUNK_TARGET)
			flush_chunk(fs);
	}
	if (ta_in_flusher && fs->enc.out.len >= LZ4_OPEN_MIN)
		ta_lazy_open_lz4();
	/* Events are function events: gaps, EXT events and their values are not. */
	markers = fs->enc.marker_slots - markers;
	fs->events += i - from - markers;
}

/* The same, through the minimum-duration filter when one is set. */
static void encode(struct ta_flush_state *fs, const struct ta_rec *rec, uint32_t from, uint32_t to)
{
	uint64_t min = ta_flusher_mindur_ticks();

	if (!min) {
		encode_raw(fs, rec, from, to);
		return;
	}
	fs->md.min_ticks = min;
	if (ta_mindur_filter(&fs->md, rec + from, to - from) < 0) {
		/* No memory to filter with: written whole, which loses
		 * nothing (the pending entries stay before them). */
		fs->md.out_len = 0;
		if (ta_mindur_flush(&fs->md) == 0)
			encode_raw(fs, fs->md.out, 0, fs->md.out_len);
		encode_raw(fs, rec, from, to);
		return;
	}
	encode_raw(fs, fs->md.out, 0, fs->md.out_len);
}

/* Keep mode: the records [from, to) judged (keep.h); returns how many
 * were taken, the rest waiting in the ring for the marks to come. */
static uint32_t keep_encode(struct ta_flush_state *fs, const struct ta_rec *rec, uint32_t from,
			    uint32_t to, int force)
{
	long n = ta_keep_filter(&fs->keep, rec + from, to - from, force);

	if (n < 0) {
		/* No memory to filter with: written whole, which loses
		 * nothing. */
		encode_raw(fs, rec, from, to);
		return to - from;
	}
	encode_raw(fs, fs->keep.out, 0, fs->keep.out_len);
	return (uint32_t)n;
}

/* Keep mode: the blocks a thread's ring may hold (its window): the
 * flight recorder's quota per thread, and never so much that the
 * threads together would fill the memory and wait for a mark that
 * cannot come. */
/* The threads recording at the last pass (keep mode; the drainers hold
 * the drain lock). */
static uint32_t keep_threads;

static uint32_t keep_window_blocks(void)
{
	uint64_t q = ta_cfg.flight_bytes / ta_cfg.block_bytes;
	uint64_t share = ta_cfg.memory_cap / ta_cfg.block_bytes / (2u + keep_threads);

	if (share < q)
		q = share;
	return q < 2 ? 2 : (uint32_t)q;
}

/* The calls still pending written (their threads end, fork or exec: the
 * calls are open, their length unknown), and the counts. */
static void mindur_flush(struct ta_flush_state *fs)
{
	if (!fs->md.npend && !fs->md.ncnt)
		return;
	fs->md.out_len = 0;
	if (ta_mindur_flush(&fs->md) == 0)
		encode_raw(fs, fs->md.out, 0, fs->md.out_len);
	/* Counts in a chunk of their own when nothing is open: flush_chunk
	 * writes them into an open one. */
	fs->md.out_len = 0;
	if (!fs->enc.open && fs->md.ncnt && ta_mindur_counts(&fs->md) == 0)
		encode_raw(fs, fs->md.out, 0, fs->md.out_len);
}

/* ta_flusher_test_hold's hook.  The test sets it before the drains it
 * means to hold up; a drain that reads it late only misses one.  Release
 * here, acquire in held_up: the hook reads what the test wrote before
 * setting it (which block, which thread) on the flusher's thread too. */
static void (*test_hold)(const struct ta_block *b);

void ta_flusher_test_hold(void (*hold)(const struct ta_block *b))
{
	__atomic_store_n(&test_hold, hold, __ATOMIC_RELEASE);
}

static inline void held_up(const struct ta_block *b)
{
	void (*hold)(const struct ta_block *) = __atomic_load_n(&test_hold, __ATOMIC_ACQUIRE);

	if (TA_UNLIKELY(hold != NULL))
		hold(b);
}

/* Drains one ring; the caller holds t->consume_lock.  partial: a thread
 * helping with its own ring leaves a small chunk open for the next drain
 * (the flusher's periodic pass writes it), so helping does not turn into a
 * write per block. */
static void drain_thread_held(struct ta_thread *t, int at_end, int partial, int whole,
			      struct ta_thread *held, uint32_t budget);

/*
 * The kernel reuses the tid of a thread that exited, and a new thread gets
 * a new record, ahead of the older ones in the list: a drain pass would
 * write the new thread's THREAD_START before the old one's THREAD_END,
 * and a reader, which tells the two apart by that order, would take them
 * for one thread.  So the exited, older holders of t's tid are drained
 * (to their end) first.  Returns whether they are; when one is being
 * drained elsewhere, t waits for the next pass (at the end, for it).  The
 * older one never waits for a newer one: no cycle.
 */
static int older_holders_drained(struct ta_thread *t, int at_end, struct ta_thread *held)
{
	for (struct ta_thread *u = __atomic_load_n(&ta_threads, __ATOMIC_ACQUIRE); u;
	     u = u->all_next) {
		int got, tries = 0;

		/* held: the newer record whose lock this drain's caller has. */
		if (u == t || u == held ||
		    __atomic_load_n(&u->state, __ATOMIC_RELAXED) != TA_T_EXITED)
			continue;
		/* Its tid is read under its consume lock: only a holder of
		 * the lock frees an exited record, which a new thread may
		 * then claim and rewrite. */
		while (!(got = ta_consume_trylock(u)) && at_end && ++tries < 1000)
			sched_yield();
		if (!got) {
			if (!at_end)
				return 0;
			continue; /* its holder is stuck (a crash): do not hang */
		}
		/* Acquire: pairs with the release store of TA_T_EXITED in
		 * ring.c's ta_thread_exit; tid and start_ticks were set
		 * before it. */
		if (__atomic_load_n(&u->state, __ATOMIC_ACQUIRE) == TA_T_EXITED &&
		    u->tid == t->tid && u->start_ticks < t->start_ticks) {
			drain_thread_held(u, at_end, 0, 0, t, UINT32_MAX);
			/* Not to its end (one of its own elders is busy):
			 * t waits with it. */
			if (__atomic_load_n(&u->state, __ATOMIC_RELAXED) == TA_T_EXITED &&
			    !at_end) {
				ta_consume_unlock(u);
				return 0;
			}
		}
		ta_consume_unlock(u);
	}
	return 1;
}

/* ta_flusher_test_no_state's switch.  Relaxed: set by a test before the
 * drains it means to affect. */
static uint32_t test_no_state;

void ta_flusher_test_no_state(int on)
{
	__atomic_store_n(&test_no_state, (uint32_t)on, __ATOMIC_RELAXED);
}

/* Block b of t's chain read to its end (its next n seen): freed, and the
 * drain goes on at n, which it returns.  The caller holds t's consume lock. */
static struct ta_block *block_done(struct ta_thread *t, struct ta_block *b, struct ta_block *n)
{
	ta_block_put(b);
	__atomic_sub_fetch(&t->chain_blocks, 1, __ATOMIC_RELAXED);
	t->drain = n;
	return n;
}

/*
 * A ring whose thread never had memory for its flush state, at its end or
 * the process's: its events are counted lost (no-memory) and its blocks
 * freed, its own losses added to the totals.  Without a THREAD_START
 * there is no THREAD_END to carry them: they are counted in the END only.
 * A live thread keeps its current block, read to its head.
 */
static void discard_ring(struct ta_thread *t, uint32_t st)
{
	struct ta_block *b = t->drain ? t->drain : __atomic_load_n(&t->first, __ATOMIC_ACQUIRE);
	uint64_t lost = 0;

	while (b) {
		/* Acquire, as in drain_thread_held's (D) and (E). */
		struct ta_block *n = __atomic_load_n(&b->next, __ATOMIC_ACQUIRE);
		uint32_t h = __atomic_load_n(&b->head, __ATOMIC_ACQUIRE);

		if (h > b->consumed) {
			lost += raw_events(b->ev, b->consumed, h);
			b->consumed = h;
		}
		if (!n)
			break;
		b = block_done(t, b, n);
	}
	__atomic_add_fetch(&ta_lost_unowned_by[TA_LOST_NO_MEMORY], lost, __ATOMIC_RELAXED);
	__atomic_add_fetch(&ta_lost_unowned, lost, __ATOMIC_RELAXED);
	for (unsigned c = 0; c < TA_LOST_NCAUSES; c++)
		__atomic_add_fetch(&total_lost_by[c],
				   __atomic_load_n(&t->lost_by[c], __ATOMIC_RELAXED),
				   __ATOMIC_RELAXED);
	__atomic_add_fetch(&total_lost, __atomic_load_n(&t->lost, __ATOMIC_RELAXED),
			   __ATOMIC_RELAXED);
	note_out_of_memory();
	if (st == TA_T_EXITED) {
		if (b)
			ta_block_put(b);
		t->drain = NULL;
		free(t->inherit); /* a forked child's frames, never written */
		t->inherit = NULL;
		/* Release: a new thread claiming the record sees it clean. */
		__atomic_store_n(&t->state, TA_T_FREE, __ATOMIC_RELEASE);
	} else {
		t->drain = b;
	}
}

/* whole: the calls the minimum-duration filter holds back are written too
 * (before a fork or an exec, and when asked to write everything).  budget:
 * how many blocks it may pass before it stops (UINT32_MAX: to the end of
 * the chain). */
static void drain_thread_held(struct ta_thread *t, int at_end, int partial, int whole,
			      struct ta_thread *held, uint32_t budget)
{
	/* Acquire: pairs with the release stores of the state in ring.c, so
	 * the fields set at registration (and the final heads, if EXITED)
	 * are visible. */
	uint32_t st = __atomic_load_n(&t->state, __ATOMIC_ACQUIRE);
	struct ta_flush_state *fs = t->fs;
	struct ta_block *b;
	char name[16];
	uint32_t seq = 0, early = 0;
	int fresh = 0, waiting = 0, keep = __atomic_load_n(&ta_keep_on, __ATOMIC_RELAXED);

	if (st != TA_T_LIVE && st != TA_T_EXITED)
		return;
	/* A thread registered without a ring (drop mode at the cap) is
	 * written once it has one, or when it ends without: its THREAD_START
	 * and THREAD_END then carry its losses.  Acquire: pairs with the
	 * release store of first in ring.c's ringless_get. */
	if (!t->drain && !__atomic_load_n(&t->first, __ATOMIC_ACQUIRE) && st == TA_T_LIVE &&
	    !at_end)
		return;
	if (!fs) {
		fs = __atomic_load_n(&test_no_state, __ATOMIC_RELAXED) ? NULL
								       : calloc(1, sizeof(*fs));
		if (!fs) {
			/* No memory for its encoder: tried again at the next
			 * pass; at its end (or the process's) what it holds
			 * is counted lost rather than left for good. */
			if (st == TA_T_EXITED || at_end)
				discard_ring(t, st);
			return;
		}
		t->fs = fs;
		fresh = 1;
	}
	if (!t->drain || fresh) {
		/* A new thread in this record (or, fresh, one whose events so
		 * far were discarded): start its stream afresh. */
		ta_encoder_free(&fs->enc);
		ta_encoder_init(&fs->enc, t->tid);
		fs->enc.out.max = ta_cfg.test_encoder_max;
		ta_mindur_free(&fs->md);
		ta_mindur_init(&fs->md, 0);
		ta_keepf_reset(&fs->keep);
		fs->events = 0;
		fs->in_chunk = 0;
		fs->lost_nomem = 0;
		fs->started = 0;
		if (!t->drain)
			t->drain = __atomic_load_n(&t->first, __ATOMIC_ACQUIRE);
	}
	if (!fs->started) {
		uint64_t flags = 0;

		if (!older_holders_drained(t, at_end, held))
			return;

		if (t->inherit) {
			/* A forked child's thread starts inside the frames
			 * its parent entered: they open its stack, and the
			 * first snapshot carries them. */
			for (uint32_t i = 0; i < t->inherit_depth; i++)
				(void)ta_stack_push(&fs->enc.stack, t->inherit[i]);
			free(t->inherit);
			t->inherit = NULL;
			flags |= TA_THREAD_F_INHERITED;
		}
		if (t->inherit_jmp) {
			fs->enc.jmp = *t->inherit_jmp;
			t->inherit_jmp = NULL;
		}
		if (read_name(t, name, &seq) < 0)
			memset(name, 0, sizeof(name));
		write_thread_start(t, name, flags);
		fs->start_flags = flags;
		fs->name_seq = seq;
		fs->started = 1;
		__atomic_add_fetch(&total_threads, 1, __ATOMIC_RELAXED);
	} else if (__atomic_load_n(&t->name_seq, __ATOMIC_RELAXED) != fs->name_seq &&
		   read_name(t, name, &seq) == 0 && seq != fs->name_seq) {
		write_thread_name(t, name);
		fs->name_seq = seq;
	}

	if (t->cut) {
		/* Flight mode threw the oldest events away: the stream now
		 * starts inside frames nobody saw entered. */
		fs->enc.stack.depth = 0;
		fs->enc.stack.overflow = 0;
		/* The setjmp depths were of the old stack. */
		memset(&fs->enc.jmp, 0, sizeof(fs->enc.jmp));
		/* The calls held back were in those frames. */
		ta_mindur_forget(&fs->md);
		t->cut = 0;
	}
	b = t->drain;
	if (keep) {
		/* Beyond its window, its oldest blocks are judged now. */
		uint32_t cb = __atomic_load_n(&t->chain_blocks, __ATOMIC_RELAXED);
		uint32_t w = keep_window_blocks();

		early = cb > w ? cb - w : 0;
	}
	for (; b;) {
		/* Whether the block is done is its next, read first, never
		 * its limit: that reads 0 while a handler's events are put
		 * aside (ring.c's nest_push), and a drain that took the 0 for
		 * "full", then was held up (preempted) while the producer
		 * filled the block and linked the next, would free the block
		 * with its last events unread (e2e's sigstorm).
		 * (D) Acquire: pairs with the release store of next in
		 * ring.c's next_block, which comes after the block's last
		 * head store (no event goes into it after), so with next
		 * seen the head read at (E) is final. */
		struct ta_block *n = __atomic_load_n(&b->next, __ATOMIC_ACQUIRE);
		uint32_t h;

		held_up(b);
		/* (E) Acquire: pairs with the release stores of head in
		 * ta_record; slots below it are whole (the one at h may be
		 * being written: not yet ours). */
		h = __atomic_load_n(&b->head, __ATOMIC_ACQUIRE);
		held_up(b);
		if (h > b->consumed && keep) {
			b->consumed += keep_encode(fs, b->ev, b->consumed, h,
						   at_end || whole ? 1
						   : early	   ? 2
								   : 0);
			if (b->consumed < h) {
				waiting = 1;
				break;
			}
		} else if (h > b->consumed) {
			encode(fs, b->ev, b->consumed, h);
			b->consumed = h;
		}
		if (early)
			early--;
		if (!n)
			break;
		b = block_done(t, b, n);
		if (--budget == 0)
			break;
	}
	/* Calls open at the end keep their entries (their length is not
	 * known): nothing the filter holds back is lost. */
	if (whole || at_end || st == TA_T_EXITED)
		mindur_flush(fs);
	/* A thread's last events go out before its THREAD_END. */
	if (!partial || at_end || st == TA_T_EXITED || fs->enc.out.len >= CHUNK_TARGET / 4)
		flush_chunk(fs);

	if (st == TA_T_EXITED && !waiting) {
		write_thread_end(t, __atomic_load_n(&t->end_ticks, __ATOMIC_RELAXED), fs->events);
		if (b)
			ta_block_put(b);
		t->drain = NULL;
		/* Release: a new thread claiming the record sees it clean. */
		__atomic_store_n(&t->state, TA_T_FREE, __ATOMIC_RELEASE);
	} else if (at_end) {
		/* Still running at the end of the process: its end is now. */
		write_thread_end(t, ta_ticks(), fs->events);
	}
}

void ta_flusher_drain_thread(struct ta_thread *t, int at_end, int partial, int whole)
{
	drain_thread_held(t, at_end, partial, whole, NULL, UINT32_MAX);
}

/* One pass over every ring.  partial: the chunks under CHUNK_TARGET / 4
 * stay open for the next pass (drain_thread_held). */
void ta_flusher_drain_all(int at_end, int partial, int whole)
{
	/* A full block handed over: enough events to be worth LZ4 (opened
	 * before the lock, which producers draining their own rings wait
	 * for). */
	if (ta_in_flusher && __atomic_load_n(&ta_pending_blocks, __ATOMIC_RELAXED))
		ta_lazy_open_lz4();
	ta_drain_take();
	__atomic_store_n(&ta_pending_blocks, 0, __ATOMIC_RELAXED);
	if (__atomic_load_n(&ta_keep_on, __ATOMIC_RELAXED)) {
		uint32_t n = 0;

		ta_keep_pass();
		for (struct ta_thread *t = __atomic_load_n(&ta_threads, __ATOMIC_ACQUIRE); t;
		     t = t->all_next)
			n += __atomic_load_n(&t->state, __ATOMIC_RELAXED) == TA_T_LIVE;
		keep_threads = n;
	}
	for (struct ta_thread *t = __atomic_load_n(&ta_threads, __ATOMIC_ACQUIRE); t;
	     t = t->all_next) {
		if (!ta_consume_trylock(t)) {
			/* Its thread is draining it; the next round will do,
			 * except at the end, when nothing may be left. */
			if (!at_end)
				continue;
			while (!ta_consume_trylock(t))
				sched_yield();
		}
		ta_flusher_drain_thread(t, at_end, partial, whole);
		ta_consume_unlock(t);
	}
	ta_drain_give();
}

void ta_flusher_drain(int at_end)
{
	/* Asked for (an exec, ctl flush, a flight dump, the end): the calls
	 * held back by the minimum-duration filter go too. */
	ta_flusher_drain_all(at_end, 0, 1);
}

int ta_flusher_help(struct ta_thread *t)
{
	/* The blocks there now, not those its signal handlers add while it
	 * drains: they append to this ring meanwhile, which nobody else can
	 * drain, and a handler faster than the drain (a timer whose handler
	 * records as fast as the encoder goes, as under emulation) would
	 * keep the thread here until the pool and its reserve ran out.
	 * Relaxed: a count that only bounds the work. */
	uint32_t budget = __atomic_load_n(&t->chain_blocks, __ATOMIC_RELAXED);

	/* Keep mode judges a ring against the windows, which only the
	 * flusher's passes (under the drain lock) read and grow. */
	if (__atomic_load_n(&ta_keep_on, __ATOMIC_RELAXED))
		return 0;
	if (!ta_consume_trylock(t))
		return 0;
	drain_thread_held(t, 0, 1, 0, NULL, budget ? budget : 1);
	ta_consume_unlock(t);
	return 1;
}

void ta_flusher_describe_threads(void)
{
	for (struct ta_thread *t = __atomic_load_n(&ta_threads, __ATOMIC_ACQUIRE); t;
	     t = t->all_next) {
		/* Acquire: pairs with the release stores of the state in
		 * ring.c (the fields set at registration). */
		uint32_t st = __atomic_load_n(&t->state, __ATOMIC_ACQUIRE);
		struct ta_buf b = {0};
		char name[16];
		uint32_t seq;
		int got = 0;

		if (st != TA_T_LIVE && st != TA_T_EXITED)
			continue;
		/* Its THREAD_START and THREAD_END are written under this
		 * lock: with it held, started says whether the dump has the
		 * one and not yet the other.  Its holder (a drain) is short;
		 * one that is not (stopped with it held) is skipped, so the
		 * control thread never waits without bound. */
		for (int i = 0; i < 500 && !(got = ta_consume_trylock(t)); i++) {
			struct timespec ts = {0, 100000};
			nanosleep(&ts, NULL);
		}
		if (!got)
			continue;
		st = __atomic_load_n(&t->state, __ATOMIC_ACQUIRE);
		if ((st == TA_T_LIVE || st == TA_T_EXITED) && t->drain && t->fs && t->fs->started) {
			if (read_name(t, name, &seq) < 0)
				memset(name, 0, sizeof(name));
			ta_buf_u(&b, t->tid);
			ta_buf_u(&b, t->ptid);
			ta_buf_u(&b, t->start_ticks);
			ta_buf_str(&b, name, strnlen(name, 16));
			ta_buf_u(&b, t->fs->start_flags);
			/* Without memory the reader alone misses the thread
			 * (its events still count): the dump is whole. */
			if (!b.oom)
				ta_dump_chunk(TA_CHUNK_THREAD_START, b.p, b.len);
			ta_buf_free(&b);
		}
		ta_consume_unlock(t);
	}
}

void ta_flusher_totals(uint64_t *events, uint64_t *lost, uint64_t *threads)
{
	*events = ta_dump_events();
	*lost = __atomic_load_n(&total_lost, __ATOMIC_RELAXED) +
		__atomic_load_n(&ta_lost_unowned, __ATOMIC_RELAXED);
	*threads = __atomic_load_n(&total_threads, __ATOMIC_RELAXED);
}

void ta_flusher_lost_by(uint64_t by[TA_LOST_NCAUSES])
{
	for (unsigned c = 0; c < TA_LOST_NCAUSES; c++)
		by[c] = __atomic_load_n(&total_lost_by[c], __ATOMIC_RELAXED) +
			__atomic_load_n(&ta_lost_unowned_by[c], __ATOMIC_RELAXED);
}

uint64_t ta_flusher_mindur_known(void)
{
	return __atomic_load_n(&mindur_ticks_v, __ATOMIC_RELAXED);
}

void ta_flusher_mindur_mark(void)
{
	ta_clock_pair(&mindur_t0, &mindur_n0);
}

void ta_flusher_drain_forget(void)
{
	total_lost = total_threads = 0;
	ta_dump_events_forget();
	memset(total_lost_by, 0, sizeof(total_lost_by));
	__atomic_store_n(&out_of_memory, 0, __ATOMIC_RELAXED);
}

void ta_flusher_drain_release(void)
{
	pthread_mutex_lock(&ta_drain_lock);
	for (struct ta_thread *t = __atomic_load_n(&ta_threads, __ATOMIC_ACQUIRE); t;
	     t = t->all_next) {
		struct ta_flush_state *fs = t->fs;

		if (!fs)
			continue;
		/* A thread that was helping with its own ring when the window
		 * ended holds it: wait for it to finish (ring.c's records are
		 * DETACHED by now, so no new drain starts). */
		while (!ta_consume_trylock(t))
			sched_yield();
		t->fs = NULL;
		ta_consume_unlock(t);
		ta_encoder_free(&fs->enc);
		ta_mindur_free(&fs->md);
		ta_keepf_free(&fs->keep);
		ta_zbuf_free(&fs->z);
		free(fs);
	}
	pthread_mutex_unlock(&ta_drain_lock);
	ta_flusher_drain_forget();
	/* The next attach may ask for another threshold. */
	__atomic_store_n(&mindur_ticks_v, 0, __ATOMIC_RELAXED);
}

const struct ta_stack *ta_flusher_stack(struct ta_thread *t)
{
	return t->fs && t->drain ? &t->fs->enc.stack : NULL;
}

const struct ta_jmptab *ta_flusher_jmptab(struct ta_thread *t)
{
	return t->fs && t->drain ? &t->fs->enc.jmp : NULL;
}
