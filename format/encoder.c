/* SPDX-License-Identifier: MIT */
/*
 * encoder.c - the event encoder: the flusher turns a thread's ring slots
 * (slots.h) into an EVENTS chunk's payload (FORMAT.md).  The agent's
 * flusher calls it, never its hot path; scripts/bench's encbench times it.
 */
#include "format_int.h"
#include "slots.h"

#include <stdlib.h>

/* The encoder reads slots as laid out in this version (slots.h). */
_Static_assert(TA_SLOTS_VERSION == 1, "slots.h changed: check ta_encoder_raw against it");

/* ---- the event encoder (flusher side) -------------------------------------------- */

/* Room for more bytes of payload: 0 or -TA_E_NOMEM.  Each call says for
 * itself: the chunk stays open after a failure and a later, smaller growth
 * may succeed, so the buffer's flag is not kept. */
static inline int enc_reserve(struct ta_encoder *e, size_t more)
{
	if (ta_buf_reserve(&e->out, more) == 0)
		return 0;
	e->out.oom = 0;
	return -TA_E_NOMEM;
}

static void enc_u(struct ta_encoder *e, uint64_t v)
{
	e->out.len = (size_t)(ta_varint_put(e->out.p + e->out.len, v) - e->out.p);
}

void ta_encoder_init(struct ta_encoder *e, uint64_t tid)
{
	memset(e, 0, sizeof(*e));
	ta_stack_init(&e->stack);
	e->tid = tid;
}

void ta_encoder_free(struct ta_encoder *e)
{
	ta_stack_free(&e->stack);
	ta_buf_free(&e->out);
}

/* n_events is written as a fixed 5-byte varint so it can be patched in at
 * the end without moving the events (a chunk holds < 2^35 events). */
#define N_EVENTS_BYTES 5

int ta_encoder_begin(struct ta_encoder *e, uint64_t first_ticks)
{
	uint64_t prev = 0;

	e->out.len = 0;
	if (enc_reserve(e, 5 * TA_VARINT_MAX + N_EVENTS_BYTES +
			       (size_t)e->stack.depth * TA_VARINT_MAX) < 0)
		return -TA_E_NOMEM;
	enc_u(e, e->tid);
	enc_u(e, e->chunk_seq);
	enc_u(e, first_ticks);
	e->n_events_off = e->out.len;
	e->out.len += N_EVENTS_BYTES;
	enc_u(e, e->stack.depth);
	for (uint32_t i = 0; i < e->stack.depth; i++) {
		enc_u(e, ta_zigzag((int64_t)(e->stack.addr[i] - prev)));
		prev = e->stack.addr[i];
	}
	/* Frames beyond TA_STACK_MAX have no address, but their exits pop
	 * them: the decoder must know how many there are. */
	enc_u(e, e->stack.overflow);
	e->first_ticks = e->prev_ticks = first_ticks;
	e->prev_addr = 0;
	e->n_events = 0;
	e->open = 1;
	return 0;
}

/* Records ta_encoder_raw prefetches ahead of the one it encodes; 0: none. */
#ifndef TA_ENC_PREFETCH
#define TA_ENC_PREFETCH 0
#endif

/* The largest dt that fits in an event's first varint beside the kind. */
#define MAX_DT (UINT64_MAX >> 2)

static uint64_t enc_dt(struct ta_encoder *e, uint64_t ticks)
{
	uint64_t dt;

	if (ticks < e->prev_ticks) {
		e->backsteps++;
		return 0;
	}
	dt = ticks - e->prev_ticks;
	/* A clamped delta moves prev_ticks only as far as the decoder will
	 * see it move, so the following deltas stay right. */
	if (dt > MAX_DT)
		dt = MAX_DT;
	e->prev_ticks += dt;
	return dt;
}

int ta_encoder_event(struct ta_encoder *e, uint64_t ticks, uint64_t addr, int is_exit)
{
	uint64_t dt;
	int top;

	if (enc_reserve(e, 2 * TA_VARINT_MAX) < 0)
		return -TA_E_NOMEM;
	dt = enc_dt(e, ticks);
	if (!is_exit) {
		enc_u(e, dt << 2 | TA_EV_ENTER);
		enc_u(e, ta_zigzag((int64_t)(addr - e->prev_addr)));
		e->prev_addr = addr;
		(void)ta_stack_push(&e->stack, addr);
	} else {
		(void)ta_stack_exit(&e->stack, addr, &top);
		if (top) {
			enc_u(e, dt << 2 | TA_EV_EXIT);
		} else {
			enc_u(e, dt << 2 | TA_EV_EXIT_ADDR);
			enc_u(e, ta_zigzag((int64_t)(addr - e->prev_addr)));
			e->prev_addr = addr;
		}
	}
	e->n_events++;
	return 0;
}

/* The flusher's loop: the same encoding as ta_encoder_event, with the
 * buffer reserved once per batch and the common stack cases inline. */
/* The tick delta of a raw event from *prev, clamped as in enc_dt so the
 * decoder keeps up; a tick going backwards gives 0 and is counted. */
static inline __attribute__((always_inline)) uint64_t raw_dt(uint64_t t, uint64_t *prev,
							     uint64_t *backsteps)
{
	uint64_t dt;

	if (TA_UNLIKELY_(t < *prev)) {
		(*backsteps)++;
		return 0;
	}
	dt = t - *prev;
	if (dt > MAX_DT)
		dt = MAX_DT;
	*prev += dt;
	return dt;
}

/* An exit that is not the top frame's (ta_stack_exit's rule): with its
 * address when it matched no frame. */
static inline __attribute__((always_inline)) uint8_t *
put_exit_unmatched(struct ta_stack *st, uint8_t *p, uint64_t dt, uint64_t a, uint64_t *prev_addr)
{
	int top;

	(void)ta_stack_exit(st, a, &top);
	if (top)
		return ta_varint_put(p, dt << 2 | TA_EV_EXIT);
	p = ta_varint_put(p, dt << 2 | TA_EV_EXIT_ADDR);
	p = ta_varint_put(p, ta_zigzag((int64_t)(a - *prev_addr)));
	*prev_addr = a;
	return p;
}

/* Records a run of ta_encoder_raw (enc_run) takes at most: the shadow
 * stack is grown ahead to hold one more frame per record of it. */
#define RUN_MAX 512u

/* v < 2^14 as a varint of one or two bytes, without a branch: both bytes
 * stored (the second is past the end when v < 0x80); returns 1 when it
 * took two.  v = hi << 7 | lo gives lo | 0x80 and hi, or v alone when hi is
 * 0: v + (v & ~0x7f) + 0x80 is lo + 0x80 + hi << 8. */
static inline __attribute__((always_inline)) uint64_t put_small(uint8_t *p, uint64_t v)
{
	/* big: v >= 0x80, without a compare the compiler could make a branch
	 * of (v < 2^14, so v + 0x3f80 < 2^15). */
	uint64_t big = (v + 0x3f80) >> 14, w = v + (v & ~(uint64_t)0x7f) + (big << 7);

	p[0] = (uint8_t)w;
	p[1] = (uint8_t)(w >> 8);
	return big;
}

/* q[-1].ticks, loaded again where it is needed (the slow paths): not kept
 * in a register, so that the common case's t - q[-1].ticks is one sub. */
static inline __attribute__((always_inline)) uint64_t enc_prev_ticks(const struct ta_raw *q)
{
	__asm__("" : "+r"(q));
	return q[-1].ticks;
}

/* Room on the stack for m more frames (grown as ta_stack_push grows it),
 * or 0: frames overflow it, or m more would pass TA_STACK_MAX. */
static int stack_room(struct ta_stack *st, size_t m)
{
	size_t need = (size_t)st->depth + m;

	if (st->overflow || need > TA_STACK_MAX)
		return 0;
	return need <= st->cap || ta_stack_grow(st, need) == 0;
}

struct enc_run {
	const struct ta_raw *q, *rend;
	uint8_t *p;
	uint64_t prev_addr;
	size_t depth;
	uint64_t prev_ticks;
	size_t slow; /* events that took the slow path */
};

/*
 * A run: the records from r->q to before r->rend (r->rend only as a leaf
 * call's exit), with room on the stack for a frame per record
 * (stack_room) and the tick before each record its record before's
 * (prev_ticks = q[-1].ticks on entry; every event leaves it so, or ends
 * the run).  So no room test, and the tick delta is one sub from memory.
 * Returns where it stopped: at or past r->rend, at a LOST or EXT slot
 * (not taken), or past a backstep or a clamp (r->prev_ticks then is not
 * q[-1].ticks).
 *
 * wide = 0: tick deltas below 32 (one byte) in the common case, the
 * others through raw_dt and the varint loops; wide = 1: tick deltas below
 * 2^10 (one or two bytes, put_small) in the common case, without a branch
 * on their length: more instructions, but no misprediction where one- and
 * two-byte deltas mix.  The same bytes either way.
 */
static inline __attribute__((always_inline)) const struct ta_raw *
enc_run_(struct ta_encoder *e, struct enc_run *r, const int wide)
{
	const struct ta_raw *q = r->q, *rend = r->rend;
	uint8_t *p = r->p;
	uint64_t prev_addr = r->prev_addr, prev = 0;
	size_t depth = r->depth, slow = 0;
	struct ta_stack *st = &e->stack;
	uint64_t *sa = st->addr;

	while (q < rend) {
		uint64_t t = q->ticks, h = q->addr, d = t - q[-1].ticks, dt, a;
		/* The tick went forward (no borrow): then d < 32 (or 2^10) is
		 * the delta's size. */
		int fwd = t >= q[-1].ticks, top;

		if (!(h & TA_RAW_EXIT)) {
			uint64_t z = ta_zigzag((int64_t)(h - prev_addr));

			if (TA_UNLIKELY_(h & (TA_RAW_LOST | TA_RAW_EXT))) {
				prev = q[-1].ticks;
				goto out;
			}
			if (wide ? TA_LIKELY_(fwd && (d >> 3 | z) < 0x80)
				 : TA_LIKELY_(fwd && (d | z >> 2) < 0x20)) {
				/* b0: the tick delta took two bytes.  p moves once
				 * an event (or a leaf call), by a length computed
				 * beside it. */
				uint64_t b0 = 0;

				if (wide) {
					b0 = put_small(p, d << 2 | TA_EV_ENTER);
					p[1 + b0] = (uint8_t)z;
				} else {
					p[0] = (uint8_t)(d << 2 | TA_EV_ENTER);
					p[1] = (uint8_t)z;
				}
				/* A leaf call (the next record is this function's
				 * exit): the push and the pop cancel out.  h has bit
				 * 63 clear: h + TA_RAW_EXIT is h | TA_RAW_EXIT (one
				 * lea, the constant in a register). */
				if (q[1].addr == h + TA_RAW_EXIT) {
					uint64_t d1 = q[1].ticks - t;

					if (wide && TA_LIKELY_(q[1].ticks >= t && d1 < 0x400)) {
						uint64_t b1 =
						    put_small(p + 2 + b0, d1 << 2 | TA_EV_EXIT);

						p += 3 + (b0 + b1);
						prev_addr = h;
						q += 2;
						continue;
					}
					if (!wide && TA_LIKELY_(q[1].ticks >= t && d1 < 0x20)) {
						p[2] = (uint8_t)(d1 << 2 | TA_EV_EXIT);
						p += 3;
						prev_addr = h;
						q += 2;
						continue;
					}
				}
				p += 2 + b0;
			} else {
				slow++;
				prev = enc_prev_ticks(q);
				dt = raw_dt(t, &prev, &e->backsteps);
				p = ta_varint_put(p, dt << 2 | TA_EV_ENTER);
				p = ta_varint_put(p, z);
				if (TA_UNLIKELY_(prev != t)) {
					/* A backstep or a clamp: the run ends. */
					prev_addr = h;
					sa[depth++] = h;
					q++;
					goto out;
				}
			}
			prev_addr = h;
			sa[depth++] = h;
			q++;
			continue;
		}
		/* Bit 63 set: h - TA_RAW_EXIT clears it (the leaf test's
		 * constant).  An exit whose address has bit 62 or 61 set is a
		 * function event like any other. */
		a = h - TA_RAW_EXIT;
		top = depth && sa[depth - 1] == a;
		if (TA_LIKELY_(top)) {
			depth--;
			if (wide && TA_LIKELY_(fwd && d < 0x400)) {
				p += 1 + put_small(p, d << 2 | TA_EV_EXIT);
				q++;
				continue;
			}
			if (!wide && TA_LIKELY_(fwd && d < 0x20)) {
				*p++ = (uint8_t)(d << 2 | TA_EV_EXIT);
				q++;
				continue;
			}
		}
		slow++;
		prev = enc_prev_ticks(q);
		dt = raw_dt(t, &prev, &e->backsteps);
		q++;
		if (top) {
			p = ta_varint_put(p, dt << 2 | TA_EV_EXIT);
		} else {
			st->depth = (uint32_t)depth;
			p = put_exit_unmatched(st, p, dt, a, &prev_addr);
			depth = st->depth;
		}
		if (TA_UNLIKELY_(prev != t))
			goto out;
	}
	prev = q[-1].ticks;
out:
	r->p = p, r->prev_addr = prev_addr, r->depth = depth, r->prev_ticks = prev;
	r->slow = slow;
	return q;
}

/* Out of line: their own registers. */
static __attribute__((noinline)) const struct ta_raw *enc_run(struct ta_encoder *e,
							      struct enc_run *r)
{
	return enc_run_(e, r, 0);
}

static __attribute__((noinline)) const struct ta_raw *enc_run_wide(struct ta_encoder *e,
								   struct enc_run *r)
{
	return enc_run_(e, r, 1);
}

/* An EXT group of raw slots at ev[0] (n_slots of them available): encodes
 * it and returns the slots it took, or 0 if the group is cut short (the
 * producer never publishes half a group: a bad ring, skipped whole). */
static size_t enc_raw_ext(struct ta_encoder *e, const struct ta_raw *ev, size_t n_slots)
{
	uint64_t v[TA_EXT_MAX_VALUES];
	uint32_t kind = ta_raw_ext_kind(ev[0].addr), n = ta_raw_ext_n(ev[0].addr);
	size_t slots = 1 + TA_RAW_EXT_SLOTS(n);

	if (n > TA_EXT_MAX_VALUES || slots > n_slots)
		return n_slots;
	for (uint32_t j = 0; j < n; j++)
		v[j] = j & 1 ? ev[1 + j / 2].addr : ev[1 + j / 2].ticks;
	if (kind != 0 && kind != TA_EXT_LOST)
		(void)ta_encoder_ext(e, ev[0].ticks, kind, v, n);
	return slots;
}

_Static_assert(TA_EXT_MAX_VALUES < 0x80 && TA_EXT_SLEEP < 0x80,
	       "a library call's EXT kind and n are one varint byte each");

/* The flusher's loop: the same encoding as ta_encoder_event, with the
 * buffer reserved once per batch and the common cases inline.
 *
 * Most records go through runs (enc_run, out of line): up to RUN_MAX
 * records with room made on the stack ahead, so without the room test,
 * and with the tick before each record its record before's, so the tick
 * delta is one sub from memory.  Per event there, an exit is tested first
 * (an exit is never a rare kind), an enter once for the rare kinds (LOST
 * and EXT both have bit 62 or 61 set, a function's address neither), then
 * one test that the tick went forward and that the deltas fit the common
 * case's varints; a leaf call's enter and exit go in one step.  A run's
 * loop is one of two (e->wide, chosen from the run before): one-byte tick
 * deltas only, or one- and two-byte ones without a branch on their
 * length.  The loop below takes what runs do not: a batch's first record,
 * the records after a LOST or EXT slot, a backstep or a clamp, its last
 * records, and all of them while frames overflow the stack.  Events are
 * counted from the slots walked less those that are not events, not one
 * by one.  The bytes are those of ta_encoder_event
 * (tests/unit/test_format.c compares them). */
size_t ta_encoder_raw(struct ta_encoder *e, const struct ta_raw *ev, size_t n, size_t max_len)
{
	enum { BATCH = 4096, WORST = 2 * TA_VARINT_MAX };
	/* Records read ahead: the lines a producer wrote on another core
	 * arrive while the ones before are encoded (16 records a line pair). */
	enum { AHEAD = TA_ENC_PREFETCH };
	size_t done = 0;

	if (n && !e->open && ta_encoder_begin(e, ev[0].ticks) < 0)
		return 0;
	while (done < n && e->out.len < max_len) {
		size_t k = n - done < BATCH ? n - done : BATCH;
		const struct ta_raw *q = ev + done, *qend = q + k, *gend;
		uint64_t prev_ticks = e->prev_ticks, prev_addr = e->prev_addr;
		/* Slots of this batch that are not counted here as events:
		 * gaps, EXT values, and groups ta_encoder_ext counts itself. */
		size_t skip = 0;
		struct ta_stack *st = &e->stack;
		/* The stack's fields in registers (the byte stores below could
		 * alias them); written back around the out-of-line cases.  lim
		 * is 0 while frames overflow the stack, so one compare sends
		 * every stack operation out of line then. */
		uint64_t *sa = st->addr;
		/* 64 bits wide: no zero extension to index sa with. */
		size_t depth = st->depth, lim = st->overflow ? 0 : st->cap;
		uint8_t *p;
		size_t glen;

		if (enc_reserve(e, k * WORST) < 0)
			break;
		p = e->out.p + e->out.len;
	runs:
		/* Runs (enc_run) first: the common case without the room test,
		 * with the tick delta one sub.  A run stops at a LOST or EXT
		 * slot, or after a backstep or a clamp: the loop below takes
		 * the record after (one, or a run's worth after a short run,
		 * as in a stream of library calls), and the runs go on from
		 * there. */
		glen = RUN_MAX;
		while (qend - q >= 16) {
			size_t m = (size_t)(qend - q) < RUN_MAX ? (size_t)(qend - q) : RUN_MAX;
			/* The last record only as a leaf call's exit. */
			struct enc_run r = {q, q + m - 1, p, prev_addr, depth, 0, 0};
			size_t taken;
			uint8_t *p0 = p;

			if (q == ev || q[-1].ticks != prev_ticks) {
				glen = 1;
				break;
			}
			st->depth = (uint32_t)depth;
			if (!stack_room(st, m))
				break;
			q = e->wide ? enc_run_wide(e, &r) : enc_run(e, &r);
			taken = (size_t)(q - r.q);
			/* Which loop the next run takes: the wide one while more
			 * than 1 event in 16 has a tick delta of 32 or more (the
			 * other loop's slow path, a misprediction each), back
			 * below 1 in 32.  In the wide loop an enter is 2 bytes,
			 * an exit 1, and a two-byte delta 1 more: 2 * bytes - 3 *
			 * records - (enters - exits) is twice the deltas of two
			 * bytes (and of the slow path's longer ones). */
			if (!e->wide)
				e->wide = r.slow * 16 > taken;
			else
				e->wide = (int64_t)(2 * (size_t)(r.p - p0) - 3 * taken) -
					      ((int64_t)r.depth - (int64_t)depth) >=
					  (int64_t)(taken / 16);
			p = r.p, prev_addr = r.prev_addr, depth = r.depth;
			prev_ticks = r.prev_ticks;
			if (q < r.rend) {
				glen = taken < 32 ? RUN_MAX : 1;
				break;
			}
		}
		st->depth = (uint32_t)depth;
		sa = st->addr;
		lim = st->overflow ? 0 : st->cap;
		/* Then glen records one by one: after a run that stopped, or
		 * when none could start (frames overflow the stack: a run's
		 * worth; the batch's last records). */
		gend = (size_t)(qend - q) < glen ? qend : q + glen;
		for (; q < gend; q++) {
			uint64_t t = q->ticks, h = q->addr, a, d, dt;

			if (AHEAD)
				__builtin_prefetch(q + AHEAD);
			/* An exit is never a rare kind (an exit whose address has
			 * bit 62 or 61 set is a function event like any other):
			 * tested first, so exits skip the rare-kind test. */
			if (h & TA_RAW_EXIT)
				goto exit_ev;
			if (TA_UNLIKELY_(h & (TA_RAW_LOST | TA_RAW_EXT))) {
				size_t i = (size_t)(q - ev), end = (size_t)(qend - ev);

				/* Keeps the compiler from computing the EXT
				 * kind ahead for every event. */
				__asm__("" : "+r"(h));
				if ((h >> 62) == 1) {
					/* A gap: where and how many were lost. */
					e->prev_ticks = prev_ticks;
					e->out.len = (size_t)(p - e->out.p);
					(void)ta_encoder_lost(e, t, h & ~TA_RAW_LOST);
					e->marker_slots++;
					skip++;
					prev_ticks = e->prev_ticks;
					p = e->out.p + e->out.len;
					continue;
				}
				if ((h >> 61) == 1) {
					/* An EXT event and its values: a whole
					 * group, which may reach past this batch
					 * (reserved room is per slot, and a group's
					 * bytes are fewer than its slots'). */
					size_t took;
					uint32_t kind = ta_raw_ext_kind(h), nv = ta_raw_ext_n(h);
					size_t slots = 1 + TA_RAW_EXT_SLOTS(nv);

					/* A library call's values (the common
					 * case: the kinds ALLOC..SLEEP, written by
					 * ta_encoder_ext as they are), encoded here
					 * straight from the slots when the group is
					 * whole and the buffer has room for it and
					 * the rest of the batch.  The same bytes as
					 * ta_encoder_ext. */
					if (TA_LIKELY_(kind - TA_EXT_ALLOC <=
							   TA_EXT_SLEEP - TA_EXT_ALLOC &&
						       nv <= TA_EXT_MAX_VALUES && slots <= n - i &&
						       e->out.cap - (size_t)(p - e->out.p) >=
							   (end - i + 3 + TA_EXT_MAX_VALUES) *
							       WORST)) {
						dt = raw_dt(t, &prev_ticks, &e->backsteps);
						p = ta_varint_put(p, dt << 2 | TA_EV_EXT);
						/* kind and n: one byte each (< 0x80). */
						p[0] = (uint8_t)kind;
						p[1] = (uint8_t)nv;
						p += 2;
						for (uint32_t j = 0; j < nv; j++)
							p = ta_varint_put(
							    p, j & 1 ? q[1 + j / 2].addr
								     : q[1 + j / 2].ticks);
						e->marker_slots += slots;
						skip += slots - 1; /* the group is one event */
						i += slots - 1;
						if (i + 1 > end)
							end = i + 1;
						q = ev + i, qend = ev + end;
						continue;
					}
					e->prev_ticks = prev_ticks;
					e->out.len = (size_t)(p - e->out.p);
					/* The control-flow rule (ta_ctl_apply) works
					 * on the stack itself. */
					st->depth = (uint32_t)depth;
					if (enc_reserve(e, (end - i + TA_EXT_MAX_VALUES) * WORST) <
					    0) {
						e->n_events += i - done - skip;
						e->prev_addr = prev_addr;
						return i;
					}
					took = enc_raw_ext(e, q, n - i);
					e->marker_slots += took;
					skip += took;
					sa = st->addr, depth = st->depth;
					lim = st->overflow ? 0 : st->cap;
					prev_ticks = e->prev_ticks;
					p = e->out.p + e->out.len;
					i += took - 1;
					if (i + 1 > end)
						end = i + 1;
					q = ev + i, qend = ev + end;
					continue;
				}
				/* An exit whose address has bit 62 or 61 set:
				 * a function event like any other. */
			}

			/* An enter.  The tick went forward (t >= prev_ticks:
			 * no borrow) by d < 32: then dt is d (no clamp) and
			 * dt << 2 | kind is one varint byte. */
			d = t - prev_ticks;
			{
				uint64_t z = ta_zigzag((int64_t)(h - prev_addr));

				/* Both one byte (a short call of a nearby
				 * function): z >> 2 < 32 is z < 0x80. */
				if (TA_LIKELY_(t >= prev_ticks && (d | z >> 2) < 0x20)) {
					p[0] = (uint8_t)(d << 2 | TA_EV_ENTER);
					p[1] = (uint8_t)z;
					prev_ticks = t;
					/* A leaf call (about half of all calls): the
					 * next record is this function's exit, one
					 * byte too.  With room on the stack (lim),
					 * the push and the exit's top-of-stack pop
					 * cancel out: both in one step. */
					if (q + 1 < qend && q[1].addr == (h | TA_RAW_EXIT) &&
					    depth < lim) {
						uint64_t t1 = q[1].ticks, d1 = t1 - t;

						if (TA_LIKELY_(t1 >= t && d1 < 0x20)) {
							p[2] = (uint8_t)(d1 << 2 | TA_EV_EXIT);
							p += 3;
							prev_ticks = t1;
							prev_addr = h;
							q++;
							continue;
						}
					}
					p += 2;
				} else {
					dt = raw_dt(t, &prev_ticks, &e->backsteps);
					p = ta_varint_put(p, dt << 2 | TA_EV_ENTER);
					p = ta_varint_put(p, z);
				}
				prev_addr = h;
				if (TA_LIKELY_(depth < lim)) {
					sa[depth++] = h;
				} else {
					st->depth = (uint32_t)depth;
					(void)ta_stack_push(st, h);
					sa = st->addr, depth = st->depth;
					lim = st->overflow ? 0 : st->cap;
				}
				continue;
			}
		exit_ev:
			d = t - prev_ticks;
			a = h & ~TA_RAW_EXIT;
			/* depth - 1 wraps when the stack is empty. */
			if (TA_LIKELY_(depth - 1 < lim && sa[depth - 1] == a)) {
				depth--;
				if (TA_LIKELY_(t >= prev_ticks && d < 0x20)) {
					*p++ = (uint8_t)(d << 2 | TA_EV_EXIT);
					prev_ticks = t;
				} else {
					dt = raw_dt(t, &prev_ticks, &e->backsteps);
					p = ta_varint_put(p, dt << 2 | TA_EV_EXIT);
				}
				continue;
			}
			dt = raw_dt(t, &prev_ticks, &e->backsteps);
			st->depth = (uint32_t)depth;
			p = put_exit_unmatched(st, p, dt, a, &prev_addr);
			depth = st->depth, lim = st->overflow ? 0 : st->cap;
		}
		if (q < qend)
			goto runs;
		st->depth = (uint32_t)depth;
		e->out.len = (size_t)(p - e->out.p);
		e->prev_ticks = prev_ticks;
		e->prev_addr = prev_addr;
		e->n_events += (size_t)(q - ev) - done - skip;
		done = (size_t)(q - ev);
	}
	return done;
}

int ta_encoder_lost(struct ta_encoder *e, uint64_t ticks, uint64_t count)
{
	if (enc_reserve(e, 3 * TA_VARINT_MAX) < 0)
		return -TA_E_NOMEM;
	enc_u(e, enc_dt(e, ticks) << 2 | TA_EV_EXT);
	enc_u(e, TA_EXT_LOST);
	enc_u(e, count);
	e->n_events++;
	return 0;
}

int ta_encoder_ext(struct ta_encoder *e, uint64_t ticks, uint32_t subtype, const uint64_t *v,
		   uint32_t n)
{
	uint64_t ctl[3];

	if (enc_reserve(e, (4 + (size_t)n) * TA_VARINT_MAX) < 0)
		return -TA_E_NOMEM;
	if (ta_ext_is_ctl(subtype) && n >= 1) {
		/* The agent knows the jmp_buf or the catcher; only the
		 * encoder knows the stack: it adds the frames popped, so the
		 * decoder needs no table.  SETJMP(env), LONGJMP(env, popped),
		 * CATCH(start, popped[, nth]). */
		uint64_t nth = subtype == TA_EXT_CATCH && n >= 2 ? v[1] : 0;

		ctl[0] = v[0];
		ctl[1] = ta_ctl_apply(&e->jmp, &e->stack, subtype, v[0], nth);
		ctl[2] = nth;
		n = subtype == TA_EXT_SETJMP ? 1 : subtype == TA_EXT_CATCH && n >= 2 ? 3 : 2;
		v = ctl;
	}
	enc_u(e, enc_dt(e, ticks) << 2 | TA_EV_EXT);
	enc_u(e, subtype);
	enc_u(e, n);
	for (uint32_t i = 0; i < n; i++)
		enc_u(e, v[i]);
	e->n_events++;
	return 0;
}

int ta_encoder_end(struct ta_encoder *e, const uint8_t **payload, size_t *len)
{
	uint64_t n = e->n_events;
	uint8_t *p = e->out.p + e->n_events_off;

	for (int i = 0; i < N_EVENTS_BYTES; i++) {
		p[i] = (uint8_t)((n & 0x7f) | (i < N_EVENTS_BYTES - 1 ? 0x80 : 0));
		n >>= 7;
	}
	e->chunk_seq++;
	e->open = 0;
	*payload = e->out.p;
	*len = e->out.len;
	return 0;
}
